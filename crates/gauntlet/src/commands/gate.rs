//! `gauntlet gate RUN`: re-decide a stored run's gates from its stored trials.

use std::path::Path;

use gauntlet_verdict::{CompiledGate, CompiledRubric};
use gauntlet_model::{GateOutcome, RunHeader};
use gauntlet_store::read_results;
use gauntlet_suite::load_gates_file;

use crate::commands::shared::{print_results, verdict_code};
use crate::exit::ExpectedError;
use gauntlet_verdict::build_results;

/// A stored run's gates, compiled again.
pub fn stored_gates(outcomes: &[GateOutcome]) -> Result<Vec<CompiledGate>, ExpectedError> {
    CompiledGate::recompile(outcomes).map_err(|problems| {
        ExpectedError::inputs(problems.iter().map(ToString::to_string).collect())
    })
}

/// A stored run's rubric, compiled again.
pub fn stored_rubric(header: &RunHeader) -> Result<Option<CompiledRubric>, ExpectedError> {
    header
        .rubric
        .as_ref()
        .map(|def| {
            CompiledRubric::compile(def)
                .map_err(|e| ExpectedError::input(format!("the run's rubric: {e}")))
        })
        .transpose()
}

pub fn gate(run: &Path, gates_file: Option<&Path>, json: bool) -> Result<i32, ExpectedError> {
    let run = &crate::commands::shared::run_folder(run)?;
    let stored = read_results(run)
        .map_err(|e| ExpectedError::input(format!("failed to read the run: {e}")))?;
    let gates: Vec<CompiledGate> = match gates_file {
        Some(path) => load_gates_file(path).map_err(|problems| {
            ExpectedError::inputs(problems.iter().map(ToString::to_string).collect())
        })?,
        None => stored_gates(&stored.gates)?,
    };
    let rubric = stored_rubric(&stored.header)?;
    let (results, gate_errors) = build_results(
        stored.header.clone(),
        stored.finished_at.clone(),
        stored.trials,
        &gates,
        rubric.as_ref(),
    );
    print_results(&results, json, false);
    verdict_code(&results, gate_errors)
}
