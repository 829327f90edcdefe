//! `gauntlet score FILE --cases SUITE`: score recorded trajectories without running anything.

use gauntlet_runner::offline::{
    KEPT_SUMMARIES, OfflineScore, OfflineScoring, default_workers, offline_header, score_file,
};

use crate::cli::ScoreArgs;
use crate::commands::shared::{load_suite, print_results, verdict_code};
use crate::exit::ExpectedError;
use gauntlet_runner::stamp;

/// Trial summaries `score` and `merge` hold in memory, at most ([`KEPT_SUMMARIES`] unless
/// `GAUNTLET_SCORE_KEEP` says otherwise): past this, they go to the run folder's `summaries.jsonl` (or,
/// when nothing needs them whole, are not kept), so memory stays flat.
pub fn kept_summaries() -> usize {
    std::env::var("GAUNTLET_SCORE_KEEP")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(KEPT_SUMMARIES)
}

pub fn score(args: ScoreArgs) -> Result<i32, ExpectedError> {
    let suite = load_suite(&args.cases)?;
    let custom = gauntlet_runner::plan::custom_evaluators(&suite)?;
    // Judges ask through a gateway of their own (on a runtime that serves it while the scoring
    // threads call it), or answer from the judge cache only.
    let offline = crate::commands::shared::offline_judges(&suite, args.gateway_upstream.clone())?;
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
            keep: kept_summaries(),
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
