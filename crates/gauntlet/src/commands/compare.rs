//! `gauntlet compare RUN_A RUN_B`: paired comparison of two stored runs.

use std::io::IsTerminal;
use std::path::Path;

use gauntlet_model::compare::Direction;
use gauntlet_report::{SummaryOptions, render_comparison};
use gauntlet_store::read_results;

use crate::exit::{ExpectedError, GATE_FAILED, GATES_PASSED};

pub fn compare(
    a: &Path,
    b: &Path,
    json: bool,
    fail_on_regression: bool,
) -> Result<i32, ExpectedError> {
    let read = |p: &Path| {
        read_results(p).map_err(|e| ExpectedError::input(format!("failed to read the run: {e}")))
    };
    let (ra, rb) = (read(a)?, read(b)?);
    // The bootstrap seed comes from the runs, so the same two runs always compare identically.
    let seed = ra.header.seed ^ rb.header.seed.rotate_left(32);
    let c = gauntlet_eval::compare(&ra, &rb, seed);
    if json {
        let text = serde_json::to_string_pretty(&c).map_err(|e| {
            ExpectedError::harness(format!("failed to serialize the comparison: {e}"))
        })?;
        println!("{text}");
    } else {
        let color = std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none();
        anstream::print!(
            "{}",
            render_comparison(&c, SummaryOptions { color, width: None })
        );
    }
    Ok(if fail_on_regression && c.direction == Direction::Worse {
        GATE_FAILED
    } else {
        GATES_PASSED
    })
}
