//! `gauntlet gate RUN`: re-decide a stored run's gates from its stored trials.

use std::path::{Path, PathBuf};

use gauntlet_model::{GateOutcome, RunHeader};
use gauntlet_store::read_results;
use gauntlet_suite::load_gates_file;
use gauntlet_verdict::{CompiledGate, CompiledRubric};

use crate::exit::ExpectedError;
use crate::shared::{print_results, verdict_code};
use gauntlet_verdict::build_results;

/// Re-decide the gates of a stored run without re-running it.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The run folder (or its results.json), or a run id or name in the index of the suite in
    /// the current folder.
    pub run: PathBuf,
    /// A YAML or JSON file with a `gates:` list to use instead of the run's own gates.
    #[arg(long)]
    pub gates: Option<PathBuf>,
    /// Print the re-decided results as JSON.
    #[arg(long)]
    pub json: bool,
}

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
    let run = &crate::shared::run_folder(run)?;
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

impl Args {
    /// Runs the command; the exit code, or an error carrying one.
    pub fn exec(self) -> Result<i32, ExpectedError> {
        gate(&self.run, self.gates.as_deref(), self.json)
    }
}
