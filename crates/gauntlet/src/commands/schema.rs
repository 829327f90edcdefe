//! `gauntlet schema`: the JSON Schema of results.json (published as schemas/results.schema.json).

use crate::exit::{ExpectedError, GATES_PASSED};

pub fn schema() -> Result<i32, ExpectedError> {
    let schema = schemars::schema_for!(gauntlet_model::RunResults);
    let text = serde_json::to_string_pretty(&schema)
        .map_err(|e| ExpectedError::harness(format!("failed to serialize the schema: {e}")))?;
    println!("{text}");
    Ok(GATES_PASSED)
}
