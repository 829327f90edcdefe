//! `gauntlet score FILE --cases SUITE`: score recorded trajectories without running anything.

use std::collections::HashMap;
use std::ops::ControlFlow;

use gauntlet_model::digest::sha256_hex;
use gauntlet_model::{FORMAT_VERSION, RunHeader, TrialRecord, TrialSummary};
use gauntlet_store::{
    EncodedRecord, ImportedTrial, ItemParser, RawItem, RunWriter, SpilledSummaries, read_items,
};

use crate::cli::ScoreArgs;
use crate::commands::shared::{load_suite, print_results, verdict_code};
use crate::exit::ExpectedError;
use crate::results::now;
use gauntlet_eval::{Accumulator, results_of};
use gauntlet_runner::{TrialEvidence, evaluate_trial, ordered_map};

/// How many problems `score` reports before it stops reading the file.
const MAX_PROBLEMS: usize = 50;
/// Items a scoring thread takes at a time.
const CHUNK: usize = 64;
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

/// What a scoring thread hands on for one item of the file, in file order.
enum Outcome {
    Trial {
        line: usize,
        warnings: Vec<String>,
        /// `CASE#EPOCH` when the trial's trace id was made up.
        derived: Option<String>,
        ready: Ready,
    },
    Problem(String),
}

/// A scored trial as the scoring thread leaves it: its summary, with its record serialised when
/// a run folder is written; or, for a record of a large world that the writer must store, the
/// record itself (the sink stores it, then summarises it).
enum Ready {
    Record(Box<TrialRecord>),
    Summary(Box<TrialSummary>, Option<EncodedRecord>),
}

/// What every scoring thread shares.
struct Scoring<'a> {
    suite: &'a gauntlet_suite::Suite,
    by_id: HashMap<&'a str, &'a gauntlet_suite::LoadedCase>,
    custom: &'a gauntlet_runner::CustomEvaluators,
    judges: Option<&'a gauntlet_runner::JudgePanel>,
    file: &'a str,
    /// The file's name, for derived trace ids.
    source: &'a str,
    /// Whether records go to a run folder (else the scoring threads summarise them).
    writing: bool,
    /// Whether summaries are needed whole (else they are lightened).
    summaries_needed: bool,
}

impl Scoring<'_> {
    /// Parses, scores and records one item of the file.
    fn item(
        &self,
        parser: &mut ItemParser,
        runtime: &tokio::runtime::Runtime,
        item: Result<RawItem, gauntlet_store::StoreError>,
    ) -> Outcome {
        let t = match item.and_then(|raw| parser.parse(raw)) {
            Ok(t) => t,
            Err(e) => return Outcome::Problem(e.to_string()),
        };
        let Some(loaded) = self.by_id.get(t.case_id.as_str()).copied() else {
            return Outcome::Problem(format!(
                "{}:{}:1: no case `{}` in suite `{}`",
                self.file, t.line, t.case_id, self.suite.config.name
            ));
        };
        let evaluation = runtime.block_on(evaluate_trial(
            &evidence(&t, loaded, self.suite),
            self.custom,
            self.judges,
        ));
        let (line, warnings) = (t.line, t.warnings.clone());
        let (record, derived) = self.record(t, loaded, evaluation);
        // A record the writer must store itself (or cannot serialise: it says why) goes whole.
        let encoded = match self.writing.then(|| RunWriter::encode(&record)) {
            None => None,
            Some(Some(Ok(e))) => Some(e),
            Some(_) => {
                return Outcome::Trial {
                    line,
                    warnings,
                    derived,
                    ready: Ready::Record(Box::new(record)),
                };
            }
        };
        let mut summary = TrialSummary::of_owned(record);
        if !self.summaries_needed {
            // Nothing is stored or printed whole: keep what the verdict and summary read.
            summary.lighten();
        }
        let ready = Ready::Summary(Box::new(summary), encoded);
        Outcome::Trial {
            line,
            warnings,
            derived,
            ready,
        }
    }

    /// The trial's record, and `CASE#EPOCH` when its trace id had to be made up.
    fn record(
        &self,
        t: ImportedTrial,
        loaded: &gauntlet_suite::LoadedCase,
        evaluation: gauntlet_runner::Evaluation,
    ) -> (TrialRecord, Option<String>) {
        let case = &loaded.case;
        // Many trials of a large world are kept by what changed, not whole.
        let (initial_state, final_state) =
            if gauntlet_model::stored_state::is_large(&t.initial_state) {
                gauntlet_model::stored_state::lean(&t.initial_state, &t.final_state)
            } else {
                (t.initial_state, t.final_state)
            };
        let mut derived = None;
        let record = TrialRecord {
            trace_id: match t.trace_id.filter(|id| gauntlet_model::is_trace_id(id)) {
                Some(id) => id,
                None => {
                    derived = Some(format!("{}#{}", t.case_id, t.epoch));
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
        (record, derived)
    }
}

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
}

impl Sink {
    fn take(&mut self, ready: Ready) -> Result<(), ExpectedError> {
        let summary = match (ready, &mut self.writer) {
            (Ready::Summary(summary, Some(encoded)), Some(w)) => {
                w.append_encoded(&encoded).map_err(record_error)?;
                *summary
            }
            (Ready::Summary(summary, _), _) => *summary,
            (Ready::Record(record), _) => self.store(*record)?,
        };
        self.epochs = self.epochs.max(summary.epoch + 1);
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

    /// Writes a record to the run folder; its summary.
    fn store(&mut self, record: TrialRecord) -> Result<TrialSummary, ExpectedError> {
        let stored = match &mut self.writer {
            Some(w) => w.append(&record).map_err(record_error)?,
            None => None,
        };
        let mut summary = TrialSummary::of_owned(record);
        // A large final state is summarised as stored: its reference and changes.
        if let Some(stored) = stored {
            summary.final_state = stored;
        }
        Ok(summary)
    }
}

fn record_error(e: gauntlet_store::StoreError) -> ExpectedError {
    ExpectedError::harness(format!("failed to record a trial: {e}"))
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
    let (items, parser) = read_items(&args.trajectories)
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
    let scoring = Scoring {
        suite: &suite,
        by_id,
        custom: &custom,
        judges: judges.map(|j| &**j),
        file: &file,
        source: &source,
        writing: writer.is_some(),
        summaries_needed,
    };
    let mut sink = Sink {
        tally: Accumulator::with_judges(&header.judges),
        writer,
        summaries: Vec::new(),
        spill: None,
        summaries_needed,
        keep: kept_summaries(),
        listing: true,
        derived: Vec::new(),
        epochs: header.epochs,
    };
    // The file is read in order on this thread; its items are parsed, scored and (unless a run
    // folder is written) summarised on every core; the sink writes and tallies them in file
    // order. A bounded number of items is in flight, so memory does not grow with the file.
    let workers = std::thread::available_parallelism().map_or(1, |n| n.get().min(MAX_WORKERS));
    let mut failure = None;
    let quiet = args.quiet || args.json;
    ordered_map(
        items,
        CHUNK,
        workers,
        || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("a single-threaded runtime starts");
            (parser.clone(), runtime)
        },
        |(parser, runtime), item| scoring.item(parser, runtime, item),
        |outcome| {
            // A file of bad items is summarised, not echoed line by line (nor read to its end).
            if problems.len() >= MAX_PROBLEMS {
                problems.push(format!(
                    "{file}: stopped after {MAX_PROBLEMS} problems; fix these and score again"
                ));
                return ControlFlow::Break(());
            }
            match outcome {
                Outcome::Problem(p) => problems.push(p),
                Outcome::Trial {
                    line,
                    warnings,
                    derived,
                    ready,
                } => {
                    if !quiet {
                        for w in &warnings {
                            eprintln!("warning: {file}:{line}: {w}");
                        }
                    }
                    sink.derived.extend(derived);
                    if let Err(e) = sink.take(ready) {
                        failure = Some(e);
                        return ControlFlow::Break(());
                    }
                }
            }
            ControlFlow::Continue(())
        },
    )
    .map_err(|p| ExpectedError::harness(format!("a scoring thread panicked: {}", p.0)))?;
    if let Some(e) = failure {
        return Err(e);
    }
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
