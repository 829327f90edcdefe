//! `gauntlet schema`: the JSON Schema of results.json (published as schemas/results.schema.json).

use crate::exit::{ExpectedError, GATES_PASSED};

/// Print the JSON Schema of results.json.
#[derive(Debug, clap::Args)]
pub struct Args {}

pub fn schema() -> Result<i32, ExpectedError> {
    let schema = schemars::schema_for!(gauntlet_model::RunResults);
    let text = serde_json::to_string_pretty(&schema)
        .map_err(|e| ExpectedError::harness(format!("failed to serialize the schema: {e}")))?;
    println!("{text}");
    Ok(GATES_PASSED)
}

impl Args {
    /// Runs the command; the exit code, or an error carrying one.
    pub fn exec(self) -> Result<i32, ExpectedError> {
        schema()
    }
}
