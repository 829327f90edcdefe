//! `gauntlet gate RUN`: re-decide a stored run's gates from its stored metrics.

use std::path::{Path, PathBuf};

use gauntlet_model::{GateOutcome, RunHeader};
use gauntlet_store::{read_results, read_results_kept};
use gauntlet_suite::load_gates_file;
use gauntlet_verdict::{CompiledGate, CompiledRubric};

use crate::exit::ExpectedError;
use crate::shared::{print_results, verdict_code};
use gauntlet_verdict::regate;

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
    // Gates and the rubric read the run's metrics, which results.json keeps: no trial is read
    // but the summaries the terminal lists (a run's first thousand, as a live run prints them),
    // and with --json every summary, streamed to the output.
    let failed = |e: gauntlet_store::StoreError| {
        ExpectedError::input(format!("failed to read the run: {e}"))
    };
    let keep = if json {
        0
    } else {
        gauntlet_runner::offline::KEPT_SUMMARIES
    };
    let (mut stored, _) = read_results_kept(run, keep).map_err(failed)?;
    if stored.format_version < 2 && json {
        stored = read_results(run).map_err(failed)?;
    }
    let gates: Vec<CompiledGate> = match gates_file {
        Some(path) => load_gates_file(path).map_err(|problems| {
            ExpectedError::inputs(problems.iter().map(ToString::to_string).collect())
        })?,
        None => stored_gates(&stored.gates)?,
    };
    let rubric = stored_rubric(&stored.header)?;
    let stream_json = json && stored.format_version >= 2;
    let (results, gate_errors) = regate(stored, &gates, rubric.as_ref());
    if stream_json {
        let dir = if run.is_dir() {
            run.to_owned()
        } else {
            run.parent().unwrap_or(Path::new(".")).to_owned()
        };
        let failed = |e: &(dyn std::error::Error + 'static)| {
            crate::exit::exit_if_closed_pipe(e);
            ExpectedError::harness(format!("failed to write the results: {e}"))
        };
        let mut out = std::io::stdout().lock();
        gauntlet_store::write_full_results(
            &results,
            &dir.join(gauntlet_model::SUMMARIES_FILE),
            &mut out,
        )
        .map_err(|e| failed(&e))?;
        std::io::Write::flush(&mut out).map_err(|e| failed(&e))?;
    } else {
        print_results(&results, json, false);
    }
    verdict_code(&results, gate_errors)
}

impl Args {
    /// Runs the command; the exit code, or an error carrying one.
    pub fn exec(self) -> Result<i32, ExpectedError> {
        gate(&self.run, self.gates.as_deref(), self.json)
    }
}
