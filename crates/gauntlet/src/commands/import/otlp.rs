//! `gauntlet import otlp FILE... --out RUN_DIR`: OpenTelemetry traces as a run folder.

use std::path::{Path, PathBuf};

use gauntlet_model::RunHeader;
use gauntlet_model::digest::sha256_hex;
use gauntlet_online::policy::PolicyCheck;

use crate::exit::{ExpectedError, GATES_PASSED};
use gauntlet_runner::{new_run_id_for, stamp};

pub(super) fn import(
    files: &[PathBuf],
    policy: Option<&Path>,
    out: &Path,
) -> Result<i32, ExpectedError> {
    if out.join("trials.jsonl").exists() {
        return Err(ExpectedError::input(format!(
            "{} already holds a run; import into a new folder",
            out.display()
        )));
    }
    let loaded = crate::shared::load_policy(policy)?;
    let policy_hash = sha256_hex(
        serde_json::to_string(&loaded)
            .unwrap_or_default()
            .as_bytes(),
    );
    let judge = PolicyCheck::new(loaded, "").map_err(|e| {
        ExpectedError::input(format!(
            "{}: {e}",
            policy.map(|p| p.display().to_string()).unwrap_or_default()
        ))
    })?;
    // Every file is read before any trace is judged (a trace's spans may be spread over
    // several), streamed a request at a time, none larger than the limit: an endless or huge
    // file is refused by name after that much, not read into memory whole.
    let mut grouper = gauntlet_otel::Grouper::default();
    for f in files {
        let file = std::fs::File::open(f)
            .map_err(|e| ExpectedError::input(format!("{}: {e}", f.display())))?;
        gauntlet_otel::read_requests(file, gauntlet_otel::MAX_DOCUMENT_BYTES, |r| grouper.add(r))
            .map_err(|e| ExpectedError::input(format!("{}: {e}", f.display())))?;
    }
    let (refused, duplicates) = (grouper.refused_spans, grouper.duplicate_spans);
    let traces = grouper.finish();
    if traces.is_empty() {
        return Err(ExpectedError::input(format!(
            "no spans{} in {}",
            if refused > 0 {
                " with a valid trace id"
            } else {
                ""
            },
            files
                .iter()
                .map(|f| f.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        )));
    }
    let spans: usize = traces.iter().map(|t| t.spans.len()).sum();
    let imported: Vec<_> = traces.iter().map(gauntlet_otel::imported_trace).collect();
    let mut agents: Vec<&str> = imported.iter().map(|t| t.agent.as_str()).collect();
    agents.sort_unstable();
    agents.dedup();
    let mut header = RunHeader::new(
        new_run_id_for("otlp"),
        "otlp",
        if agents.is_empty() {
            "otlp".to_owned()
        } else {
            agents.join(",")
        },
        stamp(),
    );
    header.versions.config = policy_hash;
    let (mut recorder, _started) = gauntlet_runner::Recorder::start(out, header)?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| ExpectedError::harness(format!("failed to start a runtime: {e}")))?;
    let incomplete = imported.iter().filter(|t| !t.complete).count();
    for t in imported {
        let judged = runtime.block_on(judge.judge(t));
        recorder.trial(judged.record)?;
    }
    let n = recorder.trials();
    recorder.finish()?;
    crate::note!(
        "wrote {n} trials ({spans} spans from {} files) to {}",
        files.len(),
        out.display()
    );
    if incomplete > 0 {
        crate::note!("  note: {incomplete} traces have no root span (judged with what arrived)");
    }
    if refused > 0 {
        crate::note!(
            "  note: {refused} spans left out: {}",
            gauntlet_otel::TRACE_ID_RULE
        );
    }
    if duplicates > 0 {
        crate::note!("  note: {duplicates} spans sent twice (same trace and span id) kept once");
    }
    Ok(GATES_PASSED)
}
