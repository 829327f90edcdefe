//! `gauntlet export RUN --out FILE`: a stored run's trials as OpenTelemetry traces (OTLP/JSON).

use std::path::Path;

use gauntlet_store::{read_header, read_trials_lean};

use crate::exit::{ExpectedError, GATES_PASSED};

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
