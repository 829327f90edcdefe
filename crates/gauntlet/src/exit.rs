//! Exit codes, in one place (SPEC §8), and the error that carries one.

use owo_colors::OwoColorize;

/// Every gate passed.
pub const GATES_PASSED: i32 = 0;
/// A gate failed.
pub const GATE_FAILED: i32 = 1;
/// Invalid input: cases, worlds, configuration, arguments.
pub const INVALID_INPUT: i32 = 2;
/// The harness itself could not run.
pub const HARNESS_FAILURE: i32 = 3;

/// An error that ends the command with a documented exit code.
#[derive(Debug)]
pub struct ExpectedError {
    /// The exit code.
    pub code: i32,
    /// Lines to print on stderr.
    pub lines: Vec<String>,
}

impl ExpectedError {
    /// Invalid input, one message.
    pub fn input(message: impl Into<String>) -> Self {
        ExpectedError {
            code: INVALID_INPUT,
            lines: vec![message.into()],
        }
    }

    /// Invalid input, one line per problem.
    pub fn inputs(lines: Vec<String>) -> Self {
        ExpectedError {
            code: INVALID_INPUT,
            lines,
        }
    }

    /// A harness failure.
    pub fn harness(message: impl Into<String>) -> Self {
        ExpectedError {
            code: HARNESS_FAILURE,
            lines: vec![message.into()],
        }
    }

    /// Prints the lines, prefixed with `error:`.
    pub fn print(&self) {
        let color =
            anstream::AutoStream::choice(&std::io::stderr()) != anstream::ColorChoice::Never;
        for line in &self.lines {
            if color {
                anstream::eprintln!("{} {line}", "error:".red().bold());
            } else {
                anstream::eprintln!("error: {line}");
            }
        }
        if self.lines.len() > 1 {
            anstream::eprintln!("{} problems found", self.lines.len());
        }
    }
}
