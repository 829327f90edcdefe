//! Pieces several commands share: loading a suite, printing results, the verdict's exit code.

use std::path::Path;

use gauntlet_model::{RunEvent, RunResults, Verdict};
use gauntlet_report::{TerminalReporter, render_summary};

use crate::reports::summary_options;
use gauntlet_store::Index;
use gauntlet_suite::Suite;

use crate::exit::{ExpectedError, GATE_FAILED, GATES_PASSED};

/// Loads and checks a suite; every problem as `file:line:col: message`.
pub fn load_suite(path: &Path) -> Result<Suite, ExpectedError> {
    Suite::load(path).map_err(|problems| {
        ExpectedError::inputs(problems.iter().map(ToString::to_string).collect())
    })
}

/// Prints results as the user asked: JSON, nothing, or the summary.
pub fn print_results(results: &RunResults, json: bool, quiet: bool) {
    if json {
        match serde_json::to_string_pretty(results) {
            Ok(text) => println!("{text}"),
            Err(e) => eprintln!("error: cannot serialize results: {e}"),
        }
    } else if !quiet && !crate::say::quiet() {
        anstream::print!("{}", render_summary(results, summary_options()));
    }
}

/// The exit code a finished run earns; gate evaluation errors make the input invalid.
pub fn verdict_code(results: &RunResults, gate_errors: Vec<String>) -> Result<i32, ExpectedError> {
    // A run in which nothing ran is the harness's failure, whatever its gates could read.
    if let Some(why) = results.nothing_ran() {
        return Err(ExpectedError::harness(why));
    }
    if !gate_errors.is_empty() {
        return Err(ExpectedError::inputs(gate_errors));
    }
    Ok(match results.verdict {
        Verdict::Passed => GATES_PASSED,
        Verdict::Failed => GATE_FAILED,
    })
}

/// Hands the finished run to the terminal reporter (or prints its JSON, or nothing), as the
/// last event of the run's stream; the results, back.
pub fn report_finished(results: RunResults, json: bool, quiet: bool) -> RunResults {
    if json {
        print_results(&results, true, false);
        return results;
    }
    let event = RunEvent::RunFinished {
        results: Box::new(results),
        at: gauntlet_runner::stamp(),
    };
    if !quiet
        && !crate::say::quiet()
        && let Some(text) = TerminalReporter::new(summary_options()).report(&event)
    {
        anstream::print!("{text}");
    }
    match event {
        RunEvent::RunFinished { results, .. } => *results,
        _ => unreachable!("built above"),
    }
}

/// The results with every trial listed, for what lists them (`json`, or a report in
/// `reports` that does): a run too large to hold returned its results without them (`spilled`),
/// so they are read back from the run folder; otherwise `results` as they are.
pub fn listing_trials(
    results: RunResults,
    spilled: bool,
    json: bool,
    reports: &[crate::reports::Format],
    dir: &Path,
) -> Result<RunResults, ExpectedError> {
    if !spilled || !(json || reports.iter().any(|f| f.lists_trials())) {
        return Ok(results);
    }
    gauntlet_store::read_results(dir)
        .map_err(|e| ExpectedError::harness(format!("failed to read the run: {e}")))
}

/// Lists a stored run in its suite's index. The index only makes past runs listable: a failure
/// to update it loses no result, and is a warning.
pub fn index_run(state: &Path, results: &RunResults, out: &Path) {
    if let Err(e) = Index::record_run(state, results, out) {
        eprintln!("warning: {e}");
    }
}

/// The suite's LLM judges outside a live run ([`gauntlet_runner::offline::offline_judges`]),
/// with their endpoint's warning printed.
pub fn offline_judges(
    suite: &Suite,
    upstream: Option<String>,
) -> Result<
    Option<(
        tokio::runtime::Runtime,
        std::sync::Arc<gauntlet_scoring::judge::JudgePanel>,
    )>,
    ExpectedError,
> {
    let Some(judges) = gauntlet_runner::offline::offline_judges(suite, upstream)? else {
        return Ok(None);
    };
    if let Some(w) = &judges.warning {
        eprintln!("warning: {w}");
    }
    Ok(Some((judges.runtime, judges.panel)))
}

/// Writes files under `out` (paths relative to it), creating folders as needed.
pub fn write_files(
    out: &Path,
    files: &[(std::path::PathBuf, String)],
) -> Result<(), ExpectedError> {
    for (rel, text) in files {
        let path = out.join(rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|e| {
                ExpectedError::harness(format!("cannot create {}: {e}", parent.display()))
            })?;
        }
        std::fs::write(&path, text)
            .map_err(|e| ExpectedError::harness(format!("cannot write {}: {e}", path.display())))?;
    }
    Ok(())
}

/// 16 random bytes as hex, from the kernel: tokens and keys.
pub fn random_hex() -> Result<String, ExpectedError> {
    let mut bytes = [0u8; 16];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut bytes))
        .map_err(|e| ExpectedError::harness(format!("cannot read /dev/urandom: {e}")))?;
    Ok(gauntlet_model::digest::hex(&bytes))
}

/// The runtime a command that runs trials (`run`, `check`, `audit`) drives them on.
pub fn runtime() -> Result<tokio::runtime::Runtime, ExpectedError> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| ExpectedError::harness(format!("failed to start the async runtime: {e}")))
}

/// The runtime a server command (`online`, `view`) serves on, with its stop signal watched.
pub fn server_runtime() -> Result<tokio::runtime::Runtime, ExpectedError> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| ExpectedError::harness(format!("failed to start a runtime: {e}")))
}

/// What a server command does once it listens on `addr`: warns when that is not loopback, prints
/// `line` (its one JSON line) and flushes it, then waits for Ctrl-C or SIGTERM. Call it inside
/// the server runtime; the signal handler is installed before the line is printed, so a client
/// that reads the line and stops the server at once is heard.
pub async fn announce_and_wait(
    command: &str,
    addr: std::net::SocketAddr,
    line: &serde_json::Value,
) -> Result<(), ExpectedError> {
    use std::io::Write;
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .map_err(|e| ExpectedError::harness(format!("cannot watch signals: {e}")))?;
    if !addr.ip().is_loopback() {
        eprintln!(
            "gauntlet {command}: listening on {addr} (not loopback): anyone who can reach it needs the token"
        );
    }
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
    drop(out);
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
    }
    Ok(())
}

/// A run as the user named it: a folder (or its `results.json`) that exists, else a bare run id
/// or run name (`gauntlet run --name`) found in the index of the suite in the current folder
/// (`.gauntlet/index.sqlite`), the newest run of that name when several have it.
pub fn run_folder(arg: &Path) -> Result<std::path::PathBuf, ExpectedError> {
    if arg.exists() {
        return Ok(arg.to_owned());
    }
    let key = arg.to_str().unwrap_or_default();
    let bare = arg.components().count() == 1 && gauntlet_model::run::is_run_name(key);
    let db = Path::new(".gauntlet").join("index.sqlite");
    if bare && db.is_file() {
        let index = Index::open(&db)
            .map_err(|e| ExpectedError::harness(format!("failed to open the run index: {e}")))?;
        if let Some(dir) = index
            .find(key)
            .map_err(|e| ExpectedError::harness(format!("failed to read the run index: {e}")))?
        {
            return Ok(dir);
        }
    }
    Err(ExpectedError::input(if bare {
        format!(
            "`{key}` is no run folder here, and no run id or name (gauntlet run --name) in {}",
            if db.is_file() {
                "this suite's run index (.gauntlet/index.sqlite)"
            } else {
                "a run index: this folder has no .gauntlet/index.sqlite (run from the suite's folder)"
            }
        )
    } else {
        format!("{}: no such run folder", arg.display())
    }))
}

/// Trial summaries `score` and `merge` hold in memory, at most ([`KEPT_SUMMARIES`] unless
/// `GAUNTLET_SCORE_KEEP` says otherwise): past this, they go to the run folder's `summaries.jsonl` (or,
/// when nothing needs them whole, are not kept), so memory stays flat.
pub fn kept_summaries() -> usize {
    std::env::var("GAUNTLET_SCORE_KEEP")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(gauntlet_runner::offline::KEPT_SUMMARIES)
}

/// A policy file, or the empty policy.
pub fn load_policy(path: Option<&Path>) -> Result<gauntlet_model::online::Policy, ExpectedError> {
    match path {
        Some(path) => gauntlet_suite::load_document(path).map_err(|problems| {
            ExpectedError::inputs(problems.iter().map(ToString::to_string).collect())
        }),
        None => Ok(gauntlet_model::online::Policy::default()),
    }
}
