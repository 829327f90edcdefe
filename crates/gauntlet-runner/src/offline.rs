//! Scoring a file of recorded trajectories against a suite, without running anything: the file
//! is read in order on the calling thread; its items are parsed, scored and (unless a run
//! folder is written) summarised on every core; one thread writes and tallies them in file
//! order. A bounded number of items is in flight and only summaries are kept (on disk past a
//! limit), so memory does not grow with the file.

use std::collections::HashMap;
use std::ops::ControlFlow;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

use gauntlet_model::{Classified, ErrorKind, RunHeader, RunResults, TrialRecord, TrialSummary};
use gauntlet_store::{
    EncodedRecord, EncodedSummary, ImportedTrial, ItemParser, RawItem, RunWriter, SpilledSummaries,
    StoreError, read_items,
};
use gauntlet_suite::{LoadedCase, Suite};
use gauntlet_verdict::{Accumulator, results_of};

use crate::ordered::ordered_map;
use gauntlet_scoring::JudgePanel;
use gauntlet_scoring::{CustomEvaluators, TrialEvidence, evaluate_trial};

/// How many problems are reported before the file is no longer read.
pub const MAX_PROBLEMS: usize = 50;
/// Items a scoring thread takes at a time.
const CHUNK: usize = 64;

/// Trials with a made-up trace id named in [`OfflineScore::derived`], at most.
pub const DERIVED_NAMED: usize = 5;

/// Summaries held in memory by default; past this they wait on disk.
pub const KEPT_SUMMARIES: usize = 1_000;

/// Scoring threads by default: one a core, at most 8.
pub fn default_workers() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get().min(8))
}

/// The header of a run that scores `trajectories` against `suite` with its `judges`: a fresh
/// `score` run id, the agent `offline:FILE`, the suite's versions and rubric (its epoch count
/// is settled when the file is read).
pub fn offline_header(
    suite: &Suite,
    trajectories: &Path,
    judges: Option<&JudgePanel>,
) -> RunHeader {
    let mut header = RunHeader::new(
        crate::new_run_id_for("score"),
        &suite.config.name,
        format!("offline:{}", trajectories.display()),
        crate::stamp(),
    );
    header.versions = crate::plan::versions(suite, String::new());
    header.rubric = suite.rubric.as_ref().map(|r| r.def().clone());
    header.judges = judges.map(|j| j.headers()).unwrap_or_default();
    header
}

/// What to score and where the results go.
pub struct OfflineScoring<'a> {
    /// The suite whose cases the trajectories played.
    pub suite: &'a Suite,
    /// The file (or run folder) of recorded trajectories.
    pub trajectories: &'a Path,
    /// The suite's custom evaluators.
    pub custom: &'a CustomEvaluators,
    /// The suite's LLM judges, when it has some.
    pub judges: Option<&'a JudgePanel>,
    /// The run's header (its epoch count is settled from the file).
    pub header: RunHeader,
    /// The run folder to write, if any (created once the file opens).
    pub out: Option<&'a Path>,
    /// Whether every trial's summary is wanted whole (to print it), even with no run folder.
    pub summaries_needed: bool,
    /// Summaries held in memory at most; past this they wait on disk.
    pub keep: usize,
    /// Scoring threads.
    pub workers: usize,
    /// The time the results are stamped with, when the scoring ends.
    pub clock: fn() -> String,
}

/// What a file scored to.
pub struct OfflineScore {
    /// The run's results. With `spill`, their trials are on disk instead.
    pub results: RunResults,
    /// Gates that could not be decided.
    pub gate_errors: Vec<String>,
    /// Items that could not be scored, each naming the file and line (at most
    /// [`MAX_PROBLEMS`], then a line saying the file was not read further).
    pub problems: Vec<String>,
    /// How many trials had their trace id made up, and the first [`DERIVED_NAMED`] of them as
    /// `CASE#EPOCH` (a file of a million such trials must not keep a million names).
    pub derived: (usize, Vec<String>),
    /// The trial summaries kept on disk, when there were too many for memory.
    pub spill: Option<SpilledSummaries>,
}

/// Why a file could not be scored (as opposed to items of it, which are `problems`).
#[derive(Debug, thiserror::Error)]
pub enum OfflineError {
    /// The file cannot be opened or its layout read.
    #[error("failed to read trajectories: {0}")]
    Read(StoreError),
    /// The run folder cannot be created.
    #[error("failed to create the run folder: {0}")]
    CreateRun(StoreError),
    /// A trial could not be written to the run folder.
    #[error("failed to record a trial: {0}")]
    Record(StoreError),
    /// Trial summaries could not be kept on disk.
    #[error("failed to keep trial summaries on disk: {0}")]
    Spill(StoreError),
    /// The results could not be written to the run folder.
    #[error("failed to write results: {0}")]
    Results(StoreError),
    /// A scoring thread panicked.
    #[error("a scoring thread panicked: {0}")]
    Panicked(String),
}

impl Classified for OfflineError {
    fn kind(&self) -> ErrorKind {
        match self {
            OfflineError::Read(_) => ErrorKind::InvalidInput,
            _ => ErrorKind::Harness,
        }
    }
}

/// Scores every trajectory of the file; `warn` gets what is odd about an item but changes no
/// score, as `FILE:LINE: WARNING`, in file order; `progress` gets the bytes of each item handed
/// on (the file's size in all, for JSON Lines).
pub fn score_file(
    s: OfflineScoring<'_>,
    mut warn: impl FnMut(String) + Send,
    mut progress: impl FnMut(u64) + Send,
) -> Result<OfflineScore, OfflineError> {
    let OfflineScoring {
        suite,
        trajectories,
        custom,
        judges,
        mut header,
        out,
        summaries_needed,
        keep,
        workers,
        clock,
    } = s;
    let (items, parser) = read_items(trajectories).map_err(OfflineError::Read)?;
    let writer = match out {
        Some(out) => Some(RunWriter::create(out, &header).map_err(OfflineError::CreateRun)?),
        None => None,
    };
    let file = trajectories.display().to_string();
    let source = trajectories
        .file_name()
        .map_or_else(|| file.clone(), |n| n.to_string_lossy().into_owned());
    let scoring = Scoring {
        suite,
        by_id: suite
            .cases
            .iter()
            .map(|c| (c.case.case_id.as_str(), c))
            .collect(),
        custom,
        judges,
        file: &file,
        source: &source,
        writing: writer.is_some(),
        summaries_needed: summaries_needed || writer.is_some(),
        spilling: AtomicBool::new(false),
    };
    let mut sink = Sink {
        spilling: &scoring.spilling,
        tally: Accumulator::with_judges(&header.judges),
        summaries_needed: scoring.summaries_needed,
        writer,
        summaries: Vec::new(),
        spill: None,
        keep,
        listing: true,
        derived: (0, Vec::new()),
        epochs: header.epochs,
    };
    let mut problems = Vec::new();
    let mut failure = None;
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
        |(parser, runtime), item| {
            // The line and its end.
            let bytes = item.as_ref().map_or(0, |raw| raw.len() as u64 + 1);
            (bytes, scoring.item(parser, runtime, item))
        },
        |(bytes, outcome)| {
            progress(bytes);
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
                    for w in warnings {
                        warn(format!("{file}:{line}: {w}"));
                    }
                    if let Some(d) = derived {
                        sink.derived.0 += 1;
                        if sink.derived.1.len() < DERIVED_NAMED {
                            sink.derived.1.push(d);
                        }
                    }
                    if let Err(e) = sink.take(ready) {
                        failure = Some(e);
                        return ControlFlow::Break(());
                    }
                }
            }
            ControlFlow::Continue(())
        },
    )
    .map_err(|p| OfflineError::Panicked(p.0))?;
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
        clock(),
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
    .map_err(OfflineError::Results)?;
    Ok(OfflineScore {
        results,
        gate_errors,
        problems,
        derived,
        spill,
    })
}

/// The evidence of a read trajectory, for the trial-scoring entry point.
fn evidence<'a>(
    t: &'a ImportedTrial,
    loaded: &'a LoadedCase,
    suite: &'a Suite,
) -> TrialEvidence<'a> {
    TrialEvidence {
        case_id: &t.case_id,
        case: Some(&loaded.case),
        epoch: t.epoch,
        trajectory: &t.trajectory,
        initial_state: Some(&t.initial_state),
        final_state: (&t.final_state).into(),
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
    Summary {
        summary: Box<TrialSummary>,
        record: Option<EncodedRecord>,
        /// The summary serialised for the spill file, once summaries are spilled (the summary
        /// itself is then lightened: only the tally reads it).
        spilled: Option<EncodedSummary>,
    },
}

/// What every scoring thread shares.
struct Scoring<'a> {
    suite: &'a Suite,
    by_id: HashMap<&'a str, &'a LoadedCase>,
    custom: &'a CustomEvaluators,
    judges: Option<&'a JudgePanel>,
    file: &'a str,
    /// The file's name, for derived trace ids.
    source: &'a str,
    /// Whether records go to a run folder (else the scoring threads summarise them).
    writing: bool,
    /// Whether summaries are needed whole (else they are lightened).
    summaries_needed: bool,
    /// Set by the sink once summaries wait on disk: the scoring threads serialise them then.
    spilling: AtomicBool,
}

impl Scoring<'_> {
    /// Parses, scores and records one item of the file.
    fn item(
        &self,
        parser: &mut ItemParser,
        runtime: &tokio::runtime::Runtime,
        item: Result<RawItem, StoreError>,
    ) -> Outcome {
        let mut t = match item.and_then(|raw| parser.parse(raw)) {
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
        let (line, warnings) = (t.line, std::mem::take(&mut t.warnings));
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
        let spilled = if self.spilling.load(Ordering::Relaxed) {
            SpilledSummaries::encode(&summary).ok()
        } else {
            None
        };
        if !self.summaries_needed || spilled.is_some() {
            // Nothing needs it whole: keep what the verdict and summary read.
            summary.lighten();
        }
        let ready = Ready::Summary {
            summary: Box::new(summary),
            record: encoded,
            spilled,
        };
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
        loaded: &LoadedCase,
        evaluation: gauntlet_scoring::Evaluation,
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
        let trace_id = match t.trace_id.filter(|id| gauntlet_model::is_trace_id(id)) {
            Some(id) => id,
            None => {
                derived = Some(format!("{}#{}", t.case_id, t.epoch));
                // Deterministic: the same file scores to the same ids.
                crate::trace_id(&format!("{}:{}", self.source, t.line), &t.case_id, t.epoch)
            }
        };
        let record = TrialRecord::new(
            gauntlet_model::Observed {
                case_id: t.case_id,
                epoch: t.epoch,
                seed: 0,
                trace_id,
                tags: case.tags.clone(),
                difficulty: case.difficulty.clone(),
                initial_state,
                final_state,
                trajectory: t.trajectory,
                duration_ms: t.duration_ms,
                started_at: None,
                error: t.error,
            },
            evaluation,
        );
        (record, derived)
    }
}

/// Where scored trials go, in file order: the run folder, the tally, and the summaries kept for
/// `results.json` (in memory up to `keep`, then on disk).
struct Sink<'a> {
    /// Tells the scoring threads that summaries are spilled.
    spilling: &'a AtomicBool,
    writer: Option<RunWriter>,
    tally: Accumulator,
    summaries: Vec<TrialSummary>,
    spill: Option<SpilledSummaries>,
    summaries_needed: bool,
    keep: usize,
    listing: bool,
    /// Trials whose trace id was made up: how many, the first named.
    derived: (usize, Vec<String>),
    epochs: u32,
}

impl Sink<'_> {
    fn take(&mut self, ready: Ready) -> Result<(), OfflineError> {
        let (summary, spilled) = match (ready, &mut self.writer) {
            (
                Ready::Summary {
                    summary,
                    record,
                    spilled,
                },
                w,
            ) => {
                if let (Some(record), Some(w)) = (record, w) {
                    w.append_encoded(&record).map_err(OfflineError::Record)?;
                }
                (*summary, spilled)
            }
            (Ready::Record(record), _) => (self.store(*record)?, None),
        };
        self.epochs = self.epochs.max(summary.epoch + 1);
        self.tally.push(&summary);
        match &mut self.spill {
            Some(spill) => match spilled {
                Some(bytes) => spill.push_encoded(&bytes),
                None => spill.push(&summary),
            }
            .map_err(OfflineError::Spill)?,
            None if !self.listing => {}
            None if self.summaries.len() < self.keep => self.summaries.push(summary),
            None if self.summaries_needed => {
                let mut s = SpilledSummaries::create(self.writer.as_ref().map(RunWriter::dir))
                    .map_err(OfflineError::Spill)?;
                for kept in self.summaries.drain(..).chain(std::iter::once(summary)) {
                    s.push(&kept).map_err(OfflineError::Spill)?;
                }
                self.spill = Some(s);
                self.spilling.store(true, Ordering::Relaxed);
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
    fn store(&mut self, record: TrialRecord) -> Result<TrialSummary, OfflineError> {
        let stored = match &mut self.writer {
            Some(w) => w.append(&record).map_err(OfflineError::Record)?,
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

/// The suite's LLM judges outside a live run (`score`, `compare --pairwise`): a runtime that
/// serves their gateway while the caller works, and the panel with the suite's judge cache in
/// front (calls go to `upstream`, or the suite's `gateway.upstream`). `None` when the suite has
/// no judges.
pub struct OfflineJudges {
    /// The runtime the gateway is served on; keep it while judging.
    pub runtime: tokio::runtime::Runtime,
    /// The judges.
    pub panel: std::sync::Arc<JudgePanel>,
    /// Something the user must know about the judges' endpoint, if anything.
    pub warning: Option<String>,
}

/// Why the suite's judges cannot judge outside a run.
#[derive(Debug, thiserror::Error)]
pub enum JudgesError {
    /// No async runtime for the gateway.
    #[error("failed to start the async runtime: {0}")]
    Runtime(#[source] std::io::Error),
    /// The gateway did not start.
    #[error("cannot start the LLM gateway: {0}")]
    Gateway(#[source] gauntlet_agent::gateway::GatewayError),
    /// The judges are not configured as they can be used.
    #[error(transparent)]
    Judge(#[from] gauntlet_scoring::JudgeError),
}

impl Classified for JudgesError {
    fn kind(&self) -> ErrorKind {
        match self {
            JudgesError::Runtime(_) => ErrorKind::Harness,
            JudgesError::Gateway(e) => e.kind(),
            JudgesError::Judge(e) => e.kind(),
        }
    }
}

/// The suite's judges outside a live run (see [`OfflineJudges`]).
pub fn offline_judges(
    suite: &Suite,
    upstream: Option<String>,
) -> Result<Option<OfflineJudges>, JudgesError> {
    if suite.config.judges.is_empty() {
        return Ok(None);
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .map_err(JudgesError::Runtime)?;
    let options = crate::agents::GatewayOptions {
        upstream,
        api_key: crate::agents::upstream_key(),
        ..Default::default()
    };
    let gateway = runtime
        .block_on(crate::agents::start_gateway(options, suite))
        .map_err(JudgesError::Gateway)?;
    let panel = gauntlet_scoring::judge::judge_panel(
        suite,
        gateway.as_ref(),
        &suite.state_dir().join("judge-cache.sqlite"),
        false,
    )?;
    Ok(panel.map(|panel| OfflineJudges {
        warning: panel.endpoint_warning(),
        runtime,
        panel,
    }))
}
