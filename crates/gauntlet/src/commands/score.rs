//! `gauntlet score FILE --cases SUITE`: score recorded trajectories without running anything.

use std::collections::HashMap;

use gauntlet_model::digest::sha256_hex;
use gauntlet_model::{FORMAT_VERSION, RunHeader, TrialRecord, TrialSummary};
use gauntlet_store::{ImportedTrial, RunWriter, SpilledSummaries, read_trajectories};

use crate::cli::ScoreArgs;
use crate::commands::shared::{load_suite, print_results, verdict_code};
use crate::exit::ExpectedError;
use crate::results::now;
use gauntlet_eval::{Accumulator, results_of};
use gauntlet_runner::{TrialEvidence, evaluate_batch};

/// How many problems `score` reports before it stops reading the file.
const MAX_PROBLEMS: usize = 50;
/// Trajectories read before a batch is scored across the cores.
const BATCH: usize = 512;
/// Threads that score a batch, at most.
const MAX_WORKERS: usize = 8;
/// Trial summaries held in memory, at most, unless `GAUNTLET_SCORE_KEEP` says otherwise: past
/// this, they wait on disk for `results.json` (or, when nothing needs them whole, are not
/// kept), so memory stays flat.
const KEPT_SUMMARIES: usize = 10_000;

fn kept_summaries() -> usize {
    std::env::var("GAUNTLET_SCORE_KEEP")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(KEPT_SUMMARIES)
}

/// The evidence of a read trajectory, for the trial-scoring entry point.
fn evidence<'a>(
    t: &'a ImportedTrial,
    loaded: &'a gauntlet_suite::LoadedCase,
    suite: &'a gauntlet_suite::Suite,
) -> TrialEvidence<'a> {
    TrialEvidence {
        case_id: &t.case_id,
        case: Some(&loaded.case),
        epoch: t.epoch,
        trajectory: &t.trajectory,
        initial_state: Some(&t.initial_state),
        final_state: &t.final_state,
        world: Some(suite.world_of(loaded).world.spec()),
        benchmark: suite.config.benchmark.as_ref(),
        // A trial the harness failed stays the harness's failure.
        harness_failed: t.error.is_some(),
        policy: None,
    }
}

/// A scored trial on its way to the sink.
type Scored<'a> = (
    ImportedTrial,
    &'a gauntlet_suite::LoadedCase,
    gauntlet_runner::Evaluation,
);

/// Where scored trials go, in file order: the run folder, the tally, and the summaries kept for
/// `results.json` (in memory up to `keep`, then on disk).
struct Sink {
    writer: Option<RunWriter>,
    tally: Accumulator,
    summaries: Vec<TrialSummary>,
    spill: Option<SpilledSummaries>,
    summaries_needed: bool,
    keep: usize,
    listing: bool,
    /// Trials whose trace id was made up, as `CASE#EPOCH`.
    derived: Vec<String>,
    epochs: u32,
    /// The file's name, for derived trace ids.
    source: String,
}

impl Sink {
    fn take(
        &mut self,
        t: ImportedTrial,
        loaded: &gauntlet_suite::LoadedCase,
        evaluation: gauntlet_runner::Evaluation,
    ) -> Result<(), ExpectedError> {
        let case = &loaded.case;
        // Many trials of a large world are kept by what changed, not whole.
        let (initial_state, final_state) =
            if gauntlet_model::stored_state::is_large(&t.initial_state) {
                gauntlet_model::stored_state::lean(&t.initial_state, &t.final_state)
            } else {
                (t.initial_state, t.final_state)
            };
        let record = TrialRecord {
            trace_id: match t.trace_id.filter(|id| gauntlet_model::is_trace_id(id)) {
                Some(id) => id,
                None => {
                    self.derived.push(format!("{}#{}", t.case_id, t.epoch));
                    // Deterministic: the same file scores to the same ids.
                    gauntlet_runner::trace_id(
                        &format!("{}:{}", self.source, t.line),
                        &t.case_id,
                        t.epoch,
                    )
                }
            },
            case_id: t.case_id,
            epoch: t.epoch,
            seed: 0,
            status: evaluation.status,
            error: t.error,
            tags: case.tags.clone(),
            difficulty: case.difficulty.clone(),
            initial_state,
            final_state,
            trajectory: t.trajectory,
            scores: evaluation.scores,
            duration_ms: t.duration_ms,
            started_at: None,
            not_applicable: evaluation.not_applicable,
            judges: evaluation.judges,
        };
        self.epochs = self.epochs.max(record.epoch + 1);
        let stored = match &mut self.writer {
            Some(w) => w
                .append(&record)
                .map_err(|e| ExpectedError::harness(format!("failed to record a trial: {e}")))?,
            None => None,
        };
        let mut summary = TrialSummary::of_owned(record);
        // A large final state is summarised as stored: its reference and changes.
        if let Some(stored) = stored {
            summary.final_state = stored;
        }
        if !self.summaries_needed {
            // Nothing is stored or printed whole: keep what the verdict and summary read.
            summary.lighten();
        }
        self.tally.push(&summary);
        match &mut self.spill {
            Some(spill) => spill.push(&summary).map_err(spill_error)?,
            None if !self.listing => {}
            None if self.summaries.len() < self.keep => self.summaries.push(summary),
            None if self.summaries_needed => {
                let mut s = SpilledSummaries::create(self.writer.as_ref().map(RunWriter::dir))
                    .map_err(spill_error)?;
                for kept in self.summaries.drain(..).chain(std::iter::once(summary)) {
                    s.push(&kept).map_err(spill_error)?;
                }
                self.spill = Some(s);
            }
            // Only the terminal summary reads them, and it does not list this many.
            None => {
                self.summaries = Vec::new();
                self.listing = false;
            }
        }
        Ok(())
    }
}

fn spill_error(e: gauntlet_store::StoreError) -> ExpectedError {
    ExpectedError::harness(format!("failed to keep trial summaries on disk: {e}"))
}

pub fn score(args: ScoreArgs) -> Result<i32, ExpectedError> {
    let suite = load_suite(&args.cases)?;
    let by_id: HashMap<&str, &gauntlet_suite::LoadedCase> = suite
        .cases
        .iter()
        .map(|c| (c.case.case_id.as_str(), c))
        .collect();
    let items = read_trajectories(&args.trajectories)
        .map_err(|e| ExpectedError::input(format!("failed to read trajectories: {e}")))?;
    let file = args.trajectories.display().to_string();
    let custom = gauntlet_runner::plan::custom_evaluators(&suite)?;
    // Judges ask through a gateway of their own (on a runtime that serves it while the scoring
    // threads call it), or answer from the judge cache only.
    let offline = crate::commands::shared::offline_judges(&suite, args.gateway_upstream.clone())?;
    let judges = offline.as_ref().map(|(_runtime, panel)| panel);
    let mut problems = Vec::new();
    let source = args
        .trajectories
        .file_name()
        .map_or_else(|| file.clone(), |n| n.to_string_lossy().into_owned());
    // Records are written as they are scored and only their summaries are kept, so memory does
    // not grow with the file; the header's epoch count is settled when the file is read.
    let mut header = RunHeader {
        format_version: FORMAT_VERSION,
        run_id: format!(
            "score-{}",
            &sha256_hex(format!("{file}{}", now()).as_bytes())[..12]
        ),
        suite: suite.config.name.clone(),
        agent: format!("offline:{file}"),
        seed: 0,
        epochs: 1,
        started_at: now(),
        versions: gauntlet_runner::plan::versions(&suite, String::new()),
        fault_profile: None,
        attack: None,
        rubric: suite.rubric.as_ref().map(|r| r.def().clone()),
        filter: None,
        shard: None,
        judges: judges.map(|j| j.headers()).unwrap_or_default(),
    };
    let writer = match &args.out {
        Some(out) => Some(RunWriter::create(out, &header).map_err(|e| {
            ExpectedError::harness(format!("failed to create the run folder: {e}"))
        })?),
        None => None,
    };
    let summaries_needed = writer.is_some() || args.json;
    let sink = Sink {
        tally: Accumulator::with_judges(&header.judges),
        writer,
        summaries: Vec::new(),
        spill: None,
        summaries_needed,
        keep: kept_summaries(),
        listing: true,
        derived: Vec::new(),
        epochs: header.epochs,
        source,
    };
    // Three stages overlap, with a few batches between them at most (memory stays bounded): a
    // reader thread parses the file, this thread checks each item and scores a batch on every
    // core, and a sink thread writes and tallies the scored trials in file order. Each stage
    // stops when the next one stops taking.
    let (sender, receiver) = std::sync::mpsc::sync_channel::<Vec<_>>(2);
    std::thread::spawn(move || {
        let mut items = items.peekable();
        while items.peek().is_some() {
            let chunk: Vec<_> = items.by_ref().take(BATCH / 2).collect();
            if sender.send(chunk).is_err() {
                break;
            }
        }
    });
    let mut items = receiver.into_iter().flatten();
    let workers = std::thread::available_parallelism().map_or(1, |n| n.get().min(MAX_WORKERS));
    let sink = std::thread::scope(|scope| {
        let (scored, to_sink) = std::sync::mpsc::sync_channel::<Vec<Scored<'_>>>(1);
        let sink = scope.spawn(move || {
            let mut sink = sink;
            for batch in to_sink {
                for (t, loaded, evaluation) in batch {
                    sink.take(t, loaded, evaluation)?;
                }
            }
            Ok::<Sink, ExpectedError>(sink)
        });
        let mut stop = false;
        while !stop {
            // A batch is read (and checked) in file order, then scored on every core.
            let mut batch: Vec<(ImportedTrial, &gauntlet_suite::LoadedCase)> = Vec::new();
            while batch.len() < BATCH {
                // A file of bad items is summarised, not echoed line by line (nor read to its
                // end).
                if problems.len() >= MAX_PROBLEMS {
                    problems.push(format!(
                        "{file}: stopped after {MAX_PROBLEMS} problems; fix these and score again"
                    ));
                    stop = true;
                    break;
                }
                let Some(item) = items.next() else {
                    stop = true;
                    break;
                };
                let t = match item {
                    Ok(t) => t,
                    Err(e) => {
                        problems.push(e.to_string());
                        continue;
                    }
                };
                let Some(loaded) = by_id.get(t.case_id.as_str()) else {
                    problems.push(format!(
                        "{file}:{}:1: no case `{}` in suite `{}`",
                        t.line, t.case_id, suite.config.name
                    ));
                    continue;
                };
                if !args.quiet && !args.json {
                    for w in &t.warnings {
                        eprintln!("warning: {file}:{}: {w}", t.line);
                    }
                }
                batch.push((t, loaded));
            }
            let evidence: Vec<TrialEvidence<'_>> = batch
                .iter()
                .map(|(t, loaded)| evidence(t, loaded, &suite))
                .collect();
            let evaluations = evaluate_batch(&evidence, &custom, judges.map(|j| &**j), workers);
            drop(evidence);
            let done: Vec<Scored<'_>> = batch
                .into_iter()
                .zip(evaluations)
                .map(|((t, loaded), e)| (t, loaded, e))
                .collect();
            if scored.send(done).is_err() {
                // The sink stopped on an error, which its join gives.
                break;
            }
        }
        drop(scored);
        sink.join().unwrap_or_else(|_| {
            Err(ExpectedError::harness(
                "the scoring sink panicked".to_owned(),
            ))
        })
    })?;
    let Sink {
        tally,
        writer,
        mut summaries,
        mut spill,
        derived,
        epochs,
        ..
    } = sink;
    header.epochs = epochs;
    // Report in the suite's case order, as a live run does, whatever order the log has (a
    // large scoring's summaries stay in file order on disk).
    let order: HashMap<&str, usize> = suite
        .cases
        .iter()
        .enumerate()
        .map(|(i, c)| (c.case.case_id.as_str(), i))
        .collect();
    summaries.sort_by_key(|r| (order.get(r.case_id.as_str()).copied(), r.epoch));
    if tally.trials() == 0 && problems.is_empty() {
        problems.push(format!("{file}: no trajectories found"));
    }
    // Judged once: the stored result and the printed one are the same.
    let seed = header.seed;
    let (results, gate_errors) = results_of(
        header,
        now(),
        tally.finish(seed, Some(&order)),
        summaries,
        &suite.gates,
        suite.rubric.as_ref(),
    );
    match (writer, &mut spill) {
        (Some(w), Some(spill)) => w.finish_spilled(&results, spill),
        (Some(w), None) => w.finish(&results),
        (None, _) => Ok(()),
    }
    .map_err(|e| ExpectedError::harness(format!("failed to write results: {e}")))?;
    if !derived.is_empty() && !args.quiet && !args.json {
        let shown: Vec<&str> = derived.iter().take(5).map(String::as_str).collect();
        eprintln!(
            "note: {} trajectories had no valid trace id and got a deterministic one (from the file name, line, case and epoch): {}{}",
            derived.len(),
            shown.join(", "),
            if derived.len() > shown.len() {
                ", ..."
            } else {
                ""
            }
        );
    }
    match &mut spill {
        Some(spill) if args.json => spill
            .write_results(&results, std::io::stdout().lock())
            .map_err(|e| ExpectedError::harness(format!("failed to print results: {e}")))?,
        _ => print_results(&results, args.json, args.quiet),
    }
    if !problems.is_empty() {
        return Err(ExpectedError::inputs(problems));
    }
    verdict_code(&results, gate_errors)
}
