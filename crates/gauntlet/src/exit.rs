//! Exit codes, in one place, and the error that carries one. Library errors know their kind
//! ([`gauntlet_model::Classified`]); the code follows from the kind here and nowhere else.

use gauntlet_model::{Classified, ErrorKind};
use owo_colors::OwoColorize;

/// Every gate passed.
pub const GATES_PASSED: i32 = 0;
/// A gate failed.
pub const GATE_FAILED: i32 = 1;
/// Invalid input: cases, worlds, configuration, arguments.
pub const INVALID_INPUT: i32 = 2;
/// The harness itself could not run.
pub const HARNESS_FAILURE: i32 = 3;

/// The exit code of an error of this kind.
pub fn code_of(kind: ErrorKind) -> i32 {
    match kind {
        ErrorKind::InvalidInput => INVALID_INPUT,
        ErrorKind::Harness => HARNESS_FAILURE,
    }
}

/// An error that ends the command with a documented exit code.
#[derive(Debug)]
pub struct ExpectedError {
    /// Whose failure it is.
    pub kind: ErrorKind,
    /// Lines to print on stderr.
    pub lines: Vec<String>,
}

impl<E: Classified> From<E> for ExpectedError {
    fn from(e: E) -> Self {
        ExpectedError {
            kind: e.kind(),
            lines: vec![e.to_string()],
        }
    }
}

impl ExpectedError {
    /// Invalid input, one message.
    pub fn input(message: impl Into<String>) -> Self {
        ExpectedError {
            kind: ErrorKind::InvalidInput,
            lines: vec![message.into()],
        }
    }

    /// Invalid input, one line per problem.
    pub fn inputs(lines: Vec<String>) -> Self {
        ExpectedError {
            kind: ErrorKind::InvalidInput,
            lines,
        }
    }

    /// A harness failure.
    pub fn harness(message: impl Into<String>) -> Self {
        ExpectedError {
            kind: ErrorKind::Harness,
            lines: vec![message.into()],
        }
    }

    /// The exit code.
    pub fn code(&self) -> i32 {
        code_of(self.kind)
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

/// The exit status of a process that wrote to a closed pipe (128 + SIGPIPE), as `yes | head`.
pub const CLOSED_PIPE: i32 = 141;

/// `gauntlet … | head` ends quietly when the reader goes away, for every command. Rust ignores
/// SIGPIPE (it must: a hostile agent that closes its stdin must not kill the harness), so a
/// print to a closed stdout panics; that one panic ends the process without a word. Everything
/// a run stores is written before its summary is printed.
pub fn quiet_on_closed_pipe() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let message = info
            .payload()
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| info.payload().downcast_ref::<&str>().copied())
            .unwrap_or_default();
        if message.starts_with("failed printing to stdout") && message.contains("Broken pipe") {
            std::process::exit(CLOSED_PIPE);
        }
        default(info);
    }));
}

/// Ends the process quietly if `e` is a write to a closed pipe (stdout read by `head`).
pub fn exit_if_closed_pipe(e: &(dyn std::error::Error + 'static)) {
    let mut cause = Some(e);
    while let Some(c) = cause {
        if c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
        {
            std::process::exit(CLOSED_PIPE);
        }
        cause = c.source();
    }
}
