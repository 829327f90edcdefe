//! `gauntlet export RUN --out FILE`: a stored run's trials as OpenTelemetry traces (OTLP/JSON).

use std::path::{Path, PathBuf};

use gauntlet_store::{read_header, read_trials_lean};

use crate::exit::{ExpectedError, GATES_PASSED};

/// Export a stored run's trials as OpenTelemetry traces (OTLP/JSON), GenAI conventions.
///
/// Example:
///   gauntlet export RUN_DIR --out traces.json
///
/// One trace per trial (its trace id): an `invoke_agent` span, a `chat` span per model call
/// and an `execute_tool` span per tool call under it, every verdict a
/// `gen_ai.evaluation.result` event. The file is an ExportTraceServiceRequest, as OTLP/HTTP
/// posts it (`curl -H 'content-type: application/json' --data @traces.json COLLECTOR/v1/traces`).
#[derive(Debug, clap::Args)]
#[command(verbatim_doc_comment)]
pub struct Args {
    /// The run folder (or its results.json).
    pub run: PathBuf,
    /// The file to write (`-` for standard output).
    #[arg(long)]
    pub out: PathBuf,
}

pub fn export(run: &Path, out: &Path) -> Result<i32, ExpectedError> {
    let dir = if run.is_dir() {
        run.to_owned()
    } else {
        run.parent().unwrap_or(Path::new(".")).to_owned()
    };
    // The header is all the trials need (results.json, with every summary, is not read).
    let header = read_header(&dir)
        .map_err(|e| ExpectedError::input(format!("failed to read the run: {e}")))?;
    // Trials stream in; only their spans are kept (states are not needed).
    let mut spans = Vec::new();
    let mut trials = 0;
    for t in read_trials_lean(&dir)
        .map_err(|e| ExpectedError::input(format!("failed to read the trials: {e}")))?
    {
        let t = t.map_err(|e| ExpectedError::input(format!("failed to read a trial: {e}")))?;
        spans.extend(gauntlet_otel::trial_spans(&header, &t));
        trials += 1;
    }
    let n = spans.len();
    let request = gauntlet_otel::export_request(&header, spans);
    let text = serde_json::to_string(&request)
        .map_err(|e| ExpectedError::harness(format!("failed to encode the traces: {e}")))?;
    if out == Path::new("-") {
        println!("{text}");
    } else {
        std::fs::write(out, text + "\n")
            .map_err(|e| ExpectedError::harness(format!("{}: {e}", out.display())))?;
        crate::note!(
            "wrote {n} spans of {trials} trials to {} (OTLP/JSON)",
            out.display()
        );
    }
    Ok(GATES_PASSED)
}

impl Args {
    /// Runs the command; the exit code, or an error carrying one.
    pub fn exec(self) -> Result<i32, ExpectedError> {
        export(&self.run, &self.out)
    }
}
