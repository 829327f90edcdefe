//! `gauntlet harvest LAKE --out SUITE_DIR [--where EXPR]`: the flywheel.

use std::path::{Path, PathBuf};

use gauntlet_online::harvest::{Feedback, Filter, Harvester};
use gauntlet_online::lake::{files, read_feedback_file, read_trace_file};
use gauntlet_online::window::Source;

use crate::exit::{ExpectedError, GATES_PASSED};

/// Turn failed and negatively rated production trajectories into candidate cases.
///
/// Examples:
///   gauntlet harvest lake/ --out suites/from-production
///   gauntlet harvest lake/@2026-11-01.. --out suites/refunds --where 'service == "orders" && "refund" in tools'
///
/// Reads a lake written by `gauntlet online` (LAKE, or LAKE@FROM..TO for a day range). A
/// trajectory is a candidate when it did not pass, was rated below zero, or was abandoned
/// (feedback posted or carried on its spans), and when --where holds: a CEL expression over
/// trace_id, day, status, service, agent, complete, duration_ms, tool_calls, tool_errors,
/// input_tokens, output_tokens, cost_eur, tools, failed_evaluators, rated, rating,
/// abandoned and user_input. Candidates with the same request (normalised) and tool
/// sequence become one case. Cases replay the trace's tool answers in a recorded world,
/// are tagged harvested, needs-review and origin:production, and their observed
/// trajectories are written to counterexamples.jsonl. The suite passes `gauntlet check`.
/// With --all, every trajectory is taken: a shadow comparison replays production's requests
/// on a candidate agent and compares the runs with `gauntlet drift`.
#[derive(Debug, clap::Args)]
#[command(verbatim_doc_comment)]
pub struct Args {
    /// The lake, optionally with a day range (LAKE@FROM..TO).
    pub lake: String,
    /// The suite folder to write (it must not hold a suite yet).
    #[arg(long)]
    pub out: PathBuf,
    /// Keep only candidates for which this CEL expression is true.
    #[arg(long = "where", value_name = "EXPR")]
    pub filter: Option<String>,
    /// Take every trajectory, not only the failed, rated below zero or abandoned: production's
    /// requests to replay on a candidate agent (`gauntlet run OUT --agent ...`) and compare
    /// with `gauntlet drift --baseline LAKE --current RUN`.
    #[arg(long)]
    pub all: bool,
}

pub fn harvest(
    lake: &str,
    out: &Path,
    filter: Option<&str>,
    all: bool,
) -> Result<i32, ExpectedError> {
    let (dir, from, to) = match Source::parse(lake).map_err(ExpectedError::from)? {
        Source::Lake { dir, from, to } => (dir, from, to),
        Source::Run(p) => {
            return Err(ExpectedError::input(format!(
                "{}: not a lake (a folder with traces/, written by `gauntlet online`)",
                p.display()
            )));
        }
    };
    if out.join("gauntlet.yaml").exists() {
        return Err(ExpectedError::input(format!(
            "{} already holds a suite; harvest into a new folder",
            out.display()
        )));
    }
    let filter = filter
        .map(Filter::compile)
        .transpose()
        .map_err(ExpectedError::from)?;
    let lake_err = |e: gauntlet_online::lake::LakeError| ExpectedError::input(e.to_string());
    // Posted feedback is small: read it whole (all days: feedback may come after its trace).
    let mut posted = Vec::new();
    if dir.join("feedback").is_dir() {
        for f in files(&dir, "feedback", None, None).map_err(lake_err)? {
            posted.extend(read_feedback_file(&f).map_err(lake_err)?);
        }
    }
    let feedback = Feedback::by_trace(posted);
    // Traces stream, one file at a time.
    let mut h = Harvester::default();
    h.all = all;
    for f in files(&dir, "traces", from.as_deref(), to.as_deref()).map_err(lake_err)? {
        for row in read_trace_file(&f).map_err(lake_err)? {
            h.offer(&row, feedback.get(&row.trace_id), filter.as_ref())
                .map_err(ExpectedError::from)?;
        }
    }
    let harvested = h.finish(lake);
    if harvested.cases == 0 {
        return Err(ExpectedError::input(format!(
            "no candidates among {} traces of {lake} (none failed, was rated below zero or abandoned{})",
            harvested.examined,
            if filter.is_some() {
                ", or --where kept none"
            } else {
                ""
            }
        )));
    }
    crate::shared::write_files(out, &harvested.files)?;
    // What was written must load.
    crate::shared::load_suite(out)?;
    crate::note!(
        "wrote {} candidate cases to {} ({} traces examined, {} repeats folded in); each is tagged needs-review",
        harvested.cases,
        out.display(),
        harvested.examined,
        harvested.duplicates
    );
    for s in &harvested.skipped {
        crate::note!("  left out: {s}");
    }
    Ok(GATES_PASSED)
}

impl Args {
    /// Runs the command; the exit code, or an error carrying one.
    pub fn exec(self) -> Result<i32, ExpectedError> {
        harvest(&self.lake, &self.out, self.filter.as_deref(), self.all)
    }
}
