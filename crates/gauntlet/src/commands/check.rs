//! `gauntlet check SUITE`.

use std::path::Path;

use crate::commands::shared::load_suite;
use crate::exit::{ExpectedError, GATES_PASSED};

pub fn check(path: &Path) -> Result<i32, ExpectedError> {
    let suite = load_suite(path)?;
    println!(
        "ok: suite `{}`: {} cases, {} worlds, {} gates",
        suite.config.name,
        suite.cases.len(),
        suite.worlds.len(),
        suite.gates.len()
    );
    Ok(GATES_PASSED)
}
