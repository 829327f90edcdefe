//! The reports a stored run is rendered as (`gauntlet report`, and the `--report` files `run`
//! and `merge` write), and how the terminal summary is drawn here.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};

use gauntlet_model::{RunResults, TrialRecord};
use gauntlet_report::{SummaryOptions, TerminalReporter};
use gauntlet_store::read_trials_lean;

use crate::exit::ExpectedError;

/// A report format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// A single self-contained HTML file.
    Html,
    /// JUnit XML for CI systems.
    Junit,
    /// A Markdown summary for a pull-request comment.
    Md,
    /// The canonical results, whole: results.json with its trial summaries.
    Json,
    /// The summary a live run prints, from the stored run replayed as its event stream.
    Terminal,
    /// The run's event stream as NDJSON, as `gauntlet run --events` wrote it live (in-trial
    /// events included), replayed from the stored run.
    Events,
}

impl Format {
    /// The file name a run folder keeps this format under.
    pub fn file_name(self) -> &'static str {
        match self {
            Format::Html => "report.html",
            Format::Junit => "junit.xml",
            Format::Md => "summary.md",
            Format::Json => "results.json",
            Format::Terminal => "summary.txt",
            Format::Events => "events.jsonl",
        }
    }

    /// Whether it lists every trial's summary (the terminal summary and the event stream are
    /// replayed from the run folder instead).
    pub fn lists_trials(self) -> bool {
        !matches!(self, Format::Terminal | Format::Events)
    }
}

/// How many trajectories an HTML report embeds at most: a report stays a file people open in a
/// browser, whatever the run's size (`gauntlet view` shows every trial of any run).
pub const EMBEDDED_TRAJECTORIES: usize = 500;

/// The trial records an HTML report embeds, in the order of the results (the log is in
/// completion order): the failed and errored ones first, then passed ones, at most `limit`.
/// The records are streamed; only those embedded are kept.
fn embedded_trials(
    dir: &Path,
    results: &RunResults,
    limit: usize,
) -> Result<Vec<TrialRecord>, ExpectedError> {
    use gauntlet_model::TrialStatus;
    let failing = results
        .trials
        .iter()
        .filter(|t| t.status != TrialStatus::Passed);
    let passing = results
        .trials
        .iter()
        .filter(|t| t.status == TrialStatus::Passed);
    let mut chosen: std::collections::HashSet<(String, u32)> = failing
        .chain(passing)
        .take(limit)
        .map(|t| (t.case_id.clone(), t.epoch))
        .collect();
    let mut records = Vec::with_capacity(chosen.len());
    // Reports show what changed; large states are read as their changed part.
    for r in read_trials_lean(dir)
        .map_err(|e| ExpectedError::input(format!("failed to read the trials: {e}")))?
    {
        let r = r.map_err(|e| ExpectedError::input(format!("failed to read the trials: {e}")))?;
        // A record written twice (a resumed run) is embedded once.
        if chosen.remove(&(r.case_id.clone(), r.epoch)) {
            records.push(r);
        }
    }
    let order: std::collections::HashMap<(&str, u32), usize> = results
        .trials
        .iter()
        .enumerate()
        .map(|(i, t)| ((t.case_id.as_str(), t.epoch), i))
        .collect();
    records.sort_by_key(|r| {
        order
            .get(&(r.case_id.as_str(), r.epoch))
            .copied()
            .unwrap_or(usize::MAX)
    });
    Ok(records)
}

/// Renders one format of a stored run.
pub fn render(
    dir: &Path,
    results: &RunResults,
    format: Format,
    baseline: Option<&RunResults>,
) -> Result<String, ExpectedError> {
    let harness = |e: gauntlet_report::ReportError| ExpectedError::harness(e.to_string());
    let comparison = baseline.map(|a| {
        gauntlet_verdict::compare(
            a,
            results,
            a.header.seed ^ results.header.seed.rotate_left(32),
        )
    });
    Ok(match format {
        Format::Html => gauntlet_report::render_html(
            results,
            &embedded_trials(dir, results, EMBEDDED_TRAJECTORIES)?,
            comparison.as_ref(),
        )
        .map_err(harness)?,
        Format::Junit => gauntlet_report::render_junit(results).map_err(harness)?,
        Format::Md => {
            let mut text = gauntlet_report::render_markdown(results);
            if let Some(c) = &comparison {
                text.push_str(&gauntlet_report::render_markdown_comparison(c));
            }
            text
        }
        Format::Json => serde_json::to_string_pretty(results)
            .map_err(|e| ExpectedError::harness(format!("failed to serialize results: {e}")))?,
        Format::Terminal => replay_summary(dir)?,
        Format::Events => {
            let mut lines = Vec::new();
            crate::events::replay(dir, &mut lines)?;
            String::from_utf8_lossy(&lines).into_owned()
        }
    })
}

/// A stored run replayed through the terminal reporter, as its live run printed it.
fn replay_summary(dir: &Path) -> Result<String, ExpectedError> {
    let read = |e: gauntlet_store::StoreError| {
        ExpectedError::input(format!("failed to read the run: {e}"))
    };
    let mut reporter = TerminalReporter::new(summary_options());
    let mut text = String::new();
    for event in
        gauntlet_store::replay_kept(dir, gauntlet_runner::offline::KEPT_SUMMARIES).map_err(read)?
    {
        if let Some(out) = reporter.report(&event.map_err(read)?) {
            text.push_str(&out);
        }
    }
    Ok(text)
}

/// Writes the given formats into a run folder; the paths written.
pub fn write_reports(
    dir: &Path,
    results: &RunResults,
    formats: &[Format],
) -> Result<Vec<PathBuf>, ExpectedError> {
    let mut written = Vec::new();
    for f in formats {
        if *f == Format::Json {
            continue; // results.json is always there.
        }
        let path = dir.join(f.file_name());
        if *f == Format::Events {
            crate::events::replay_to(dir, &path)?;
        } else {
            let text = render(dir, results, *f, None)?;
            std::fs::write(&path, text).map_err(|e| {
                ExpectedError::harness(format!("failed to write {}: {e}", path.display()))
            })?;
        }
        written.push(path);
    }
    Ok(written)
}

/// How the summary is drawn on this terminal: colour when stdout is a terminal (and `NO_COLOR`
/// is unset), width from `COLUMNS`.
pub fn summary_options() -> SummaryOptions {
    let color = std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none();
    SummaryOptions {
        color,
        width: terminal_width(),
        explain: EXPLAIN.load(std::sync::atomic::Ordering::Relaxed),
    }
}

/// `--explain` (on `run` and `report`), read wherever the summary is drawn, as `--quiet` is.
static EXPLAIN: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Sets `--explain` for the summaries this process draws.
pub fn set_explain(explain: bool) {
    EXPLAIN.store(explain, std::sync::atomic::Ordering::Relaxed);
}

fn terminal_width() -> Option<u16> {
    std::env::var("COLUMNS").ok().and_then(|c| c.parse().ok())
}
