//! Pieces several commands share: loading a suite, printing results, the verdict's exit code.

use std::io::IsTerminal;
use std::path::Path;

use gauntlet_model::{RunResults, Verdict};
use gauntlet_report::{SummaryOptions, render_summary};
use gauntlet_suite::Suite;

use crate::exit::{ExpectedError, GATE_FAILED, GATES_PASSED};

/// Loads and checks a suite; every problem as `file:line:col: message`.
pub fn load_suite(path: &Path) -> Result<Suite, ExpectedError> {
    Suite::load(path).map_err(|problems| {
        ExpectedError::inputs(problems.iter().map(ToString::to_string).collect())
    })
}

/// The state folder of a suite (`SUITE/.gauntlet`).
pub fn state_dir(suite: &Suite) -> std::path::PathBuf {
    suite.root.join(".gauntlet")
}

/// Prints results as the user asked: JSON, nothing, or the summary.
pub fn print_results(results: &RunResults, json: bool, quiet: bool) {
    if json {
        match serde_json::to_string_pretty(results) {
            Ok(text) => println!("{text}"),
            Err(e) => eprintln!("error: cannot serialize results: {e}"),
        }
    } else if !quiet {
        let stdout = std::io::stdout();
        let color = stdout.is_terminal() && std::env::var_os("NO_COLOR").is_none();
        let width = terminal_width();
        anstream::print!(
            "{}",
            render_summary(results, SummaryOptions { color, width })
        );
    }
}

fn terminal_width() -> Option<u16> {
    std::env::var("COLUMNS").ok().and_then(|c| c.parse().ok())
}

/// The exit code a finished run earns; gate evaluation errors make the input invalid.
pub fn verdict_code(results: &RunResults, gate_errors: Vec<String>) -> Result<i32, ExpectedError> {
    if !gate_errors.is_empty() {
        return Err(ExpectedError::inputs(gate_errors));
    }
    Ok(match results.verdict {
        Verdict::Passed => GATES_PASSED,
        Verdict::Failed => GATE_FAILED,
    })
}
