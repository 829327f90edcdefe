//! `gauntlet score FILE --cases SUITE`: score recorded trajectories without running anything.

use std::path::PathBuf;

use gauntlet_runner::offline::{
    OfflineScore, OfflineScoring, default_workers, offline_header, score_file,
};

use crate::exit::ExpectedError;
use crate::shared::{load_suite, print_results, verdict_code};
use gauntlet_runner::stamp;

/// Score recorded trajectories against a suite's cases, without running anything.
///
/// Reads gauntlet's trials.jsonl (or a run folder) and AgentTrajectory JSON
/// (one document, JSON Lines, or an array); each trajectory is matched to its case by
/// case_id / task_id.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The trajectories: a file (JSON, JSON Lines) or a run folder.
    pub trajectories: PathBuf,
    /// The suite whose cases (and gates) apply.
    #[arg(long)]
    pub cases: PathBuf,
    /// Write a run folder with the new scores.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// The global `--quiet`, set by dispatch.
    #[arg(skip)]
    pub quiet: bool,
    /// Print the results as JSON instead of the summary.
    #[arg(long)]
    pub json: bool,
    /// Where the suite's LLM judges ask for verdicts the judge cache does not have (an
    /// OpenAI-compatible base URL; the key from GAUNTLET_UPSTREAM_API_KEY or OPENAI_API_KEY).
    /// Without it only cached verdicts are used, and the rest are invalid.
    #[arg(long)]
    pub gateway_upstream: Option<String>,
}

pub fn score(args: Args) -> Result<i32, ExpectedError> {
    let suite = load_suite(&args.cases)?;
    let custom = gauntlet_runner::plan::custom_evaluators(&suite)?;
    // Judges ask through a gateway of their own (on a runtime that serves it while the scoring
    // threads call it), or answer from the judge cache only.
    let offline = crate::shared::offline_judges(&suite, args.gateway_upstream.clone())?;
    let judges = offline.as_ref().map(|(_runtime, panel)| panel);
    // Records are written as they are scored and only their summaries are kept, so memory does
    // not grow with the file; the header's epoch count is settled when the file is read.
    let header = offline_header(&suite, &args.trajectories, judges.map(|j| &**j));
    let quiet = args.quiet || args.json;
    // Bytes scored of the file's size, on stderr when it is a terminal.
    let bar = match std::fs::metadata(&args.trajectories) {
        Ok(m) if m.is_file() => crate::progress::Progress::bytes(!quiet, m.len()),
        _ => crate::progress::Progress::bytes(false, 0),
    };
    let scored = score_file(
        OfflineScoring {
            suite: &suite,
            trajectories: &args.trajectories,
            custom: &custom,
            judges: judges.map(|j| &**j),
            header,
            out: args.out.as_deref(),
            summaries_needed: args.json,
            keep: crate::shared::kept_summaries(),
            workers: default_workers(),
            clock: stamp,
        },
        |warning| {
            if !quiet {
                bar.suspend(|| eprintln!("warning: {warning}"));
            }
        },
        |bytes| bar.inc(bytes),
    );
    bar.finish_and_clear();
    let OfflineScore {
        results,
        gate_errors,
        problems,
        derived,
        mut spill,
    } = scored?;
    let (derived, named) = derived;
    if derived > 0 && !args.quiet && !args.json {
        eprintln!(
            "note: {derived} trajectories had no valid trace id and got a deterministic one (from the file name, line, case and epoch): {}{}",
            named.join(", "),
            if derived > named.len() { ", ..." } else { "" }
        );
    }
    match &mut spill {
        Some(spill) if args.json => spill
            .write_results(&results, std::io::stdout().lock())
            .map_err(|e| {
                crate::exit::exit_if_closed_pipe(&e);
                ExpectedError::harness(format!("failed to print results: {e}"))
            })?,
        _ => print_results(&results, args.json, args.quiet),
    }
    if !problems.is_empty() {
        return Err(ExpectedError::inputs(problems));
    }
    verdict_code(&results, gate_errors)
}

impl Args {
    /// Runs the command; the exit code, or an error carrying one.
    pub fn exec(mut self) -> Result<i32, ExpectedError> {
        self.quiet = crate::say::quiet();
        score(self)
    }
}
