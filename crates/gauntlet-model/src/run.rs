//! The run log: a header, one record per trial, and the canonical `results.json`.
//!
//! [`FORMAT_VERSION`] is written into every header and result; a reader refuses a version it
//! does not know (it reads every one from [`OLDEST_READABLE_FORMAT`]). A new field is added
//! together with its reader, with a default for old logs.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::fault::FaultKind;
use crate::score::Score;
use crate::trajectory::Trajectory;

/// Version of the on-disk run format (`run.json`, `trials.jsonl`, `results.json`).
/// Version 2 keeps the trial summaries out of `results.json`, one per line of `summaries.jsonl`
/// in plan order, so that `results.json` is the same size whatever the trial count; version 1
/// listed them in its `trials`.
pub const FORMAT_VERSION: u32 = 2;

/// The oldest run format this release still reads.
pub const OLDEST_READABLE_FORMAT: u32 = 1;

/// The file beside `results.json` with a run's trial summaries (format 2 on).
pub const SUMMARIES_FILE: &str = "summaries.jsonl";

/// Content hashes of everything that determines a run's behaviour.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Versions {
    /// The harness version (crate version).
    pub harness: String,
    /// Hash of each world definition used, by world name.
    pub worlds: BTreeMap<String, String>,
    /// Hash of the dataset (all cases, in order).
    pub dataset: String,
    /// Hash of the agent specification.
    pub agent: String,
    /// Hash of the suite configuration (gates, defaults).
    pub config: String,
}

/// What a run was: written first, before any trial.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RunHeader {
    /// The run-log format version.
    pub format_version: u32,
    /// Unique id of the run.
    pub run_id: String,
    /// The suite's name.
    pub suite: String,
    /// The agent specification (`script:reference`, `cmd:...`).
    pub agent: String,
    /// The run's seed; each trial's seed derives from it.
    pub seed: u64,
    /// Repetitions of each case.
    pub epochs: u32,
    /// When the run started (RFC 3339).
    pub started_at: String,
    /// Content hashes of the harness, worlds, dataset, agent and config.
    pub versions: Versions,
    /// The suite-wide fault profile applied, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fault_profile: Option<String>,
    /// The suite-wide attack every case ran under (`--attack`), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attack: Option<String>,
    /// The suite's rubric, kept so that a stored run can be re-decided.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rubric: Option<crate::rubric::RubricDef>,
    /// The case filter (`--filter`), kept so that a resumed run plans the same trials.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filter: Option<String>,
    /// The part of the run this is (`--shard I/N`): the trials whose position in the plan,
    /// counted from 0, leaves I-1 when divided by N. `gauntlet merge` makes the whole run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<Shard>,
    /// The suite's LLM judges, and whether each may gate.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub judges: Vec<crate::JudgeHeader>,
    /// The name the user gave the run (`--name`, Python's `name=`), by which `compare`,
    /// `report`, `gate` and `view` find it in the suite's index as well as by its id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

impl RunHeader {
    /// The one way a run header is made: run `run_id` of `suite` by `agent`, started at
    /// `started_at`, in this format version by this harness; one epoch, seed 0 and nothing
    /// else until the caller says more.
    pub fn new(
        run_id: impl Into<String>,
        suite: impl Into<String>,
        agent: impl Into<String>,
        started_at: impl Into<String>,
    ) -> RunHeader {
        RunHeader {
            format_version: FORMAT_VERSION,
            run_id: run_id.into(),
            suite: suite.into(),
            agent: agent.into(),
            seed: 0,
            epochs: 1,
            started_at: started_at.into(),
            versions: Versions {
                harness: env!("CARGO_PKG_VERSION").to_owned(),
                ..Versions::default()
            },
            fault_profile: None,
            attack: None,
            rubric: None,
            filter: None,
            shard: None,
            judges: Vec::new(),
            name: None,
        }
    }
}

/// Whether `name` may name a run (`--name`): one word of letters, digits, `.`, `_` and `-`,
/// starting with a letter or digit, at most 100 characters, so that it is never taken for a
/// path and reads the same in every shell.
pub fn is_run_name(name: &str) -> bool {
    name.len() <= 100
        && name
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphanumeric())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
}

/// One part of a sharded run: the `index`-th (from 1) of `count`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Shard {
    /// Which part, from 1.
    pub index: u32,
    /// How many parts.
    pub count: u32,
}

impl Shard {
    /// Whether the trial at this position of the plan (from 0) belongs to this part.
    pub fn holds(&self, position: usize) -> bool {
        position % self.count as usize == (self.index - 1) as usize
    }

    /// The plan position (from 0) of this part's `k`-th trial (from 0): the inverse of
    /// [`Shard::holds`], by which `merge` puts the parts' trials back in plan order.
    pub fn position(&self, k: usize) -> usize {
        (self.index - 1) as usize + k * self.count as usize
    }

    /// How many of a `total`-trial plan's trials this part holds.
    pub fn share(&self, total: usize) -> usize {
        let first = (self.index - 1) as usize;
        if total <= first {
            0
        } else {
            (total - first).div_ceil(self.count as usize)
        }
    }
}

/// A `--shard` that is not `I/N` with 1 <= I <= N: the user's input.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{0}` is not a shard: write I/N, with 1 <= I <= N (such as 2/4)")]
pub struct ShardSyntaxError(pub String);

impl crate::Classified for ShardSyntaxError {
    fn kind(&self) -> crate::ErrorKind {
        crate::ErrorKind::InvalidInput
    }
}

impl std::str::FromStr for Shard {
    type Err = ShardSyntaxError;

    /// Parses `I/N` with 1 <= I <= N.
    fn from_str(s: &str) -> Result<Shard, ShardSyntaxError> {
        let bad = || ShardSyntaxError(s.to_owned());
        let (i, n) = s.split_once('/').ok_or_else(bad)?;
        let (index, count) = (
            i.trim().parse::<u32>().map_err(|_| bad())?,
            n.trim().parse::<u32>().map_err(|_| bad())?,
        );
        if index == 0 || index > count {
            return Err(bad());
        }
        Ok(Shard { index, count })
    }
}

impl std::fmt::Display for Shard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

/// The outcome of one trial.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TrialStatus {
    /// Every non-informational evaluator passed.
    Passed,
    /// At least one evaluator failed.
    Failed,
    /// The harness could not run the trial (the agent could not start or hung, the world or an
    /// evaluator failed, the model upstream failed); an agent that crashed once started failed.
    Error,
}

impl TrialStatus {
    /// Its name as stored: `passed`, `failed` or `error`.
    pub fn as_str(self) -> &'static str {
        match self {
            TrialStatus::Passed => "passed",
            TrialStatus::Failed => "failed",
            TrialStatus::Error => "error",
        }
    }
}

/// One trial as stored in `trials.jsonl`: everything needed to re-score it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TrialRecord {
    /// The case.
    pub case_id: String,
    /// The repetition, from 0.
    pub epoch: u32,
    /// The trial's seed.
    pub seed: u64,
    /// W3C trace id (32 lowercase hex digits).
    pub trace_id: String,
    /// Passed, failed or error.
    pub status: TrialStatus,
    /// Why the harness failed, when the status is `error`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The case's tags, for segments.
    #[serde(default)]
    pub tags: Vec<String>,
    /// The case's difficulty, for segments.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub difficulty: Option<String>,
    /// The state the trial started from.
    pub initial_state: Value,
    /// The state the trial ended in.
    pub final_state: Value,
    /// The events.
    pub trajectory: Trajectory,
    /// Every evaluator's verdict.
    pub scores: Vec<Score>,
    /// Wall time of the trial in milliseconds.
    pub duration_ms: f64,
    /// When the trial started (RFC 3339; absent in runs of older versions and offline scores).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at: Option<String>,
    /// Evaluators that could not judge this trial and what they lacked (a trial scored without
    /// a case); empty for a trial of a suite.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub not_applicable: Vec<crate::NotApplicable>,
    /// What each LLM judge said (scored, skipped with the reason, or invalid), with its calls.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub judges: Vec<crate::JudgeOutcome>,
    /// The harness errors of earlier attempts at this trial, replayed under `--retry-errors`,
    /// oldest first (absent when it ran once).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub retried_errors: Vec<String>,
}

/// One trial as observed, before it is judged: which trial it was and what happened.
#[derive(Debug, Clone, Default)]
pub struct Observed {
    /// The case (a production trace's own name when there is no case).
    pub case_id: String,
    /// The repetition, from 0.
    pub epoch: u32,
    /// The trial's seed.
    pub seed: u64,
    /// W3C trace id (32 lowercase hex digits).
    pub trace_id: String,
    /// The case's tags.
    pub tags: Vec<String>,
    /// The case's difficulty.
    pub difficulty: Option<String>,
    /// The state the trial started from (`null` where trials share it).
    pub initial_state: Value,
    /// The state the trial ended in.
    pub final_state: Value,
    /// The events.
    pub trajectory: Trajectory,
    /// Wall time of the trial in milliseconds.
    pub duration_ms: f64,
    /// When the trial started, RFC 3339.
    pub started_at: Option<String>,
    /// Why the harness failed the trial, when it did: it outranks the evaluation's own.
    pub error: Option<String>,
}

/// A trial's verdicts.
#[derive(Debug, Clone)]
pub struct Evaluation {
    /// Every score: built-in, custom, then `error_attribution` for a trial that did not pass.
    pub scores: Vec<Score>,
    /// Evaluators that could not judge the trial (it had no case), and what each lacked.
    pub not_applicable: Vec<crate::NotApplicable>,
    /// Passed, failed or error.
    pub status: TrialStatus,
    /// What each LLM judge said (scored, skipped or invalid).
    pub judges: Vec<crate::JudgeOutcome>,
    /// Why the harness could not judge the trial (a custom evaluator broke), making its status
    /// `error`; the trial's own harness failure, when it had one, comes first.
    pub harness_error: Option<String>,
}

impl Evaluation {
    /// No evaluator ran: the trial is what `status` says (a harvested trace's own status, a
    /// trial the harness could not run).
    pub fn unjudged(status: TrialStatus) -> Evaluation {
        Evaluation {
            scores: Vec::new(),
            not_applicable: Vec::new(),
            status,
            judges: Vec::new(),
            harness_error: None,
        }
    }
}

impl TrialRecord {
    /// The one way a trial record is made: what was observed of the trial, and its verdicts.
    /// A harness failure makes the trial an `error` whatever its verdicts say.
    pub fn new(observed: Observed, evaluation: Evaluation) -> TrialRecord {
        let error = observed.error.or(evaluation.harness_error);
        TrialRecord {
            case_id: observed.case_id,
            epoch: observed.epoch,
            seed: observed.seed,
            trace_id: observed.trace_id,
            status: if error.is_some() {
                TrialStatus::Error
            } else {
                evaluation.status
            },
            error,
            tags: observed.tags,
            difficulty: observed.difficulty,
            initial_state: observed.initial_state,
            final_state: observed.final_state,
            trajectory: observed.trajectory,
            scores: evaluation.scores,
            duration_ms: observed.duration_ms,
            started_at: observed.started_at,
            not_applicable: evaluation.not_applicable,
            judges: evaluation.judges,
            retried_errors: Vec::new(),
        }
    }
}

/// One trial as summarised in `results.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TrialSummary {
    /// The case.
    pub case_id: String,
    /// The repetition, from 0.
    pub epoch: u32,
    /// W3C trace id.
    pub trace_id: String,
    /// Passed, failed or error.
    pub status: TrialStatus,
    /// Why the harness failed, when the status is `error`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The case's tags.
    #[serde(default)]
    pub tags: Vec<String>,
    /// The case's difficulty.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub difficulty: Option<String>,
    /// Distinct tools called, sorted.
    #[serde(default)]
    pub tools: Vec<String>,
    /// Distinct kinds of injected faults, sorted.
    #[serde(default)]
    pub faults: Vec<FaultKind>,
    /// Tool calls made.
    pub tool_calls: u32,
    /// Agent steps before the final answer.
    pub steps: u32,
    /// Model tokens.
    pub tokens: u64,
    /// The agent's model cost in euros.
    pub cost_eur: f64,
    /// What the simulated user's persona cost, in euros (absent when nothing).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub user_cost_eur: f64,
    /// Wall time in milliseconds.
    pub duration_ms: f64,
    /// The final state.
    pub final_state: Value,
    /// Every evaluator's verdict.
    pub scores: Vec<Score>,
    /// What each LLM judge said, briefly.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub judges: Vec<crate::JudgeBrief>,
}

fn is_zero(x: &f64) -> bool {
    *x == 0.0
}

fn is_zero_count(n: &u32) -> bool {
    *n == 0
}

impl TrialSummary {
    /// Summarises a full record.
    pub fn of(record: &TrialRecord) -> Self {
        let mut summary = Self::measures(record);
        summary.case_id = record.case_id.clone();
        summary.trace_id = record.trace_id.clone();
        summary.error = record.error.clone();
        summary.tags = record.tags.clone();
        summary.difficulty = record.difficulty.clone();
        summary.final_state = record.final_state.clone();
        summary.scores = record.scores.clone();
        summary
    }

    /// Summarises a record it no longer needs, moving its parts instead of copying them.
    pub fn of_owned(record: TrialRecord) -> Self {
        let mut summary = Self::measures(&record);
        summary.case_id = record.case_id;
        summary.trace_id = record.trace_id;
        summary.error = record.error;
        summary.tags = record.tags;
        summary.difficulty = record.difficulty;
        summary.final_state = record.final_state;
        summary.scores = record.scores;
        summary
    }

    /// Drops what only a stored run's readers need (the final state, the scores' details and
    /// event indexes), keeping what metrics, gates and the terminal summary read (the details
    /// of [`crate::names::DETAILS_AGGREGATED`]).
    pub fn lighten(&mut self) {
        self.final_state = Value::Null;
        for s in &mut self.scores {
            if !crate::names::DETAILS_AGGREGATED.contains(&s.name.as_str()) {
                s.details = Value::Null;
            }
            s.events = Vec::new();
        }
    }

    /// What the trajectory measures (tools, faults, counts, cost), the rest left empty.
    fn measures(record: &TrialRecord) -> Self {
        TrialSummary {
            case_id: String::new(),
            epoch: record.epoch,
            trace_id: String::new(),
            status: record.status,
            error: None,
            tags: Vec::new(),
            difficulty: None,
            judges: record.judges.iter().map(crate::JudgeBrief::of).collect(),
            tools: {
                let mut t: Vec<String> = record
                    .trajectory
                    .tool_calls()
                    .map(|c| c.tool.clone())
                    .collect();
                t.sort();
                t.dedup();
                t
            },
            faults: {
                let mut f: Vec<FaultKind> = record
                    .trajectory
                    .events
                    .iter()
                    .filter_map(|e| match e {
                        crate::Event::ToolCall(c) => c.fault,
                        crate::Event::ModelCall { fault, .. } => *fault,
                        _ => None,
                    })
                    .collect();
                f.sort_by_key(|k| format!("{k:?}"));
                f.dedup();
                f
            },
            tool_calls: record.trajectory.tool_calls().count() as u32,
            steps: record.trajectory.steps() as u32,
            tokens: record.trajectory.tokens(),
            cost_eur: record.trajectory.cost_eur(),
            user_cost_eur: record.trajectory.user_cost_eur(),
            duration_ms: record.duration_ms,
            final_state: Value::Null,
            scores: Vec::new(),
        }
    }
}

/// A confidence interval and how it was computed.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Interval {
    /// Lower bound.
    pub lower: f64,
    /// Upper bound.
    pub upper: f64,
    /// `wilson` or `bootstrap`.
    pub method: IntervalMethod,
}

/// How an interval was computed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum IntervalMethod {
    /// Wilson score interval for a proportion.
    Wilson,
    /// Percentile bootstrap of the mean (seeded; see the statistics reference).
    Bootstrap,
    /// Normal interval of the mean with the cluster-robust standard error (cases as clusters),
    /// used past a thousand cases.
    Normal,
}

/// A case whose verdict changed across epochs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FlakyCase {
    /// The case.
    pub case_id: String,
    /// Epochs that passed.
    pub passed: u32,
    /// Epochs run.
    pub trials: u32,
}

/// One dimension of a rubric, as decided on a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RubricDimensionOutcome {
    /// The dimension.
    pub name: String,
    /// Its weight as configured.
    pub weight: f64,
    /// Its value in [0, 1]; absent when the run could not measure it.
    pub value: Option<f64>,
    /// Its gate expression, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gate: Option<String>,
    /// Whether the gate held (absent without a gate).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub passed: Option<bool>,
}

/// A rubric decided on a run: the weighted score and each dimension.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RubricOutcome {
    /// The rubric's name (`lesson`, `article`, or the suite's own).
    pub name: String,
    /// Weighted score over the measured dimensions (weights renormalised over them).
    pub score: Option<f64>,
    /// The dimensions.
    pub dimensions: Vec<RubricDimensionOutcome>,
    /// Dimensions the run could not measure (their weight is left out of the score).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unmeasured: Vec<String>,
}

/// One gate's decision.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GateOutcome {
    /// The gate's name (its expression when unnamed).
    pub name: String,
    /// The expression.
    pub expr: String,
    /// Whether it held.
    pub passed: bool,
    /// The metrics the expression read, with their values, to show by how much it failed.
    #[serde(default)]
    pub inputs: BTreeMap<String, Value>,
}

/// Per-evaluator aggregate over the trials that produced it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EvaluatorStats {
    /// Trials that produced this score.
    pub trials: u32,
    /// Trials in which it passed.
    pub passed: u32,
    /// `passed / trials`.
    pub pass_rate: f64,
    /// Wilson interval of the pass rate.
    pub pass_rate_interval: Interval,
    /// Mean normalised score.
    pub mean: f64,
    /// Mean raw value.
    pub mean_value: f64,
}

/// Pass counts of one segment (a tag).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SegmentStats {
    /// Trials in the segment.
    pub trials: u32,
    /// Trials that passed.
    pub passed: u32,
    /// `passed / trials`.
    pub pass_rate: f64,
    /// Wilson interval of the pass rate.
    pub pass_rate_interval: Interval,
    /// Share of trials whose task succeeded.
    pub task_success_rate: f64,
    /// Mean tool-selection precision (`ToolSelectionAccuracy`) of the segment's trials, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_precision: Option<f64>,
    /// Mean tool-selection recall of the segment's trials, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_recall: Option<f64>,
}

/// The canonical result of a run; every report is a projection of it (plus the trial records).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RunResults {
    /// The run-log format version.
    pub format_version: u32,
    /// The run's header.
    pub header: RunHeader,
    /// When the run finished (RFC 3339).
    pub finished_at: String,
    /// `passed` when every gate held, `failed` otherwise.
    pub verdict: Verdict,
    /// Run-level metrics by name (what gates read); `null` where undefined (a rate of no trials).
    /// A suite imported from a benchmark also has the benchmark's own headline, `benchmark`.
    pub metrics: crate::benchmark::Metrics,
    /// Confidence intervals of metrics, by metric name (Wilson for rates, bootstrap for means).
    pub intervals: BTreeMap<String, Interval>,
    /// Per-evaluator aggregates by evaluator name.
    pub evaluators: BTreeMap<String, EvaluatorStats>,
    /// Segments by kind (`tag`, `difficulty`, `tool`, `fault`), then by value.
    pub segments: BTreeMap<String, BTreeMap<String, SegmentStats>>,
    /// Cases whose verdict changed across epochs, flakiest first.
    #[serde(default)]
    pub flaky_cases: Vec<FlakyCase>,
    /// Per case with glass-box checkpoints that failed: the agent step where trajectories first
    /// went wrong, as a distribution over its trials (step → trials).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub first_wrong_steps: BTreeMap<String, BTreeMap<String, u32>>,
    /// The rubric's weighted score and dimensions, when the suite has a rubric.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rubric: Option<RubricOutcome>,
    /// Gate decisions, in the order of the configuration (rubric gates last).
    pub gates: Vec<GateOutcome>,
    /// Each LLM judge over the run: outcomes, cost (apart from the agent's), splits.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub judges: Vec<crate::JudgeReport>,
    /// Trials replayed after a harness error (`--retry-errors`), whatever their last attempt
    /// gave (absent when none was).
    #[serde(default, skip_serializing_if = "is_zero_count")]
    pub retried: u32,
    /// One summary per trial, in case then epoch order. The full view has them (`--json`,
    /// `gauntlet report RUN --format json`, the library); the stored `results.json` (format 2
    /// on) does not: they are the lines of `summaries.jsonl` beside it.
    #[serde(default)]
    pub trials: Vec<TrialSummary>,
}

impl RunResults {
    /// Everything but the trial summaries: what the stored `results.json` holds.
    pub fn without_trials(&self) -> RunResults {
        RunResults {
            format_version: self.format_version,
            header: self.header.clone(),
            finished_at: self.finished_at.clone(),
            verdict: self.verdict,
            metrics: self.metrics.clone(),
            intervals: self.intervals.clone(),
            evaluators: self.evaluators.clone(),
            segments: self.segments.clone(),
            flaky_cases: self.flaky_cases.clone(),
            first_wrong_steps: self.first_wrong_steps.clone(),
            rubric: self.rubric.clone(),
            gates: self.gates.clone(),
            judges: self.judges.clone(),
            retried: self.retried,
            trials: Vec::new(),
        }
    }

    /// Why no trial could run, when every trial ended in a harness error: the harness's
    /// failure, not a verdict on the agent. The message names how many trials there were and
    /// the first one's reason (one indented line per line of it).
    pub fn nothing_ran(&self) -> Option<String> {
        let trials = &self.trials;
        if trials.is_empty() {
            // Too many to list here (they are in `results.json`): the counts tell.
            let count = |name| self.metrics.get(name).copied().flatten().unwrap_or(0.0);
            let n = count(crate::names::metric::TRIALS);
            return (n > 0.0 && count(crate::names::metric::ERRORS) == n).then(|| {
                format!(
                    "no trial could run: all {n} ended in a harness error; each one's reason is in the run folder's trials.jsonl"
                )
            });
        }
        if !trials.iter().all(|t| t.status == TrialStatus::Error) {
            return None;
        }
        let first = &trials[0];
        let mut message = format!(
            "no trial could run: all {} ended in a harness error; the first ({} epoch {}):",
            trials.len(),
            first.case_id,
            first.epoch
        );
        for line in first
            .error
            .as_deref()
            .unwrap_or("no reason recorded")
            .lines()
        {
            message.push_str("\n  ");
            message.push_str(line);
        }
        Some(message)
    }
}

/// The run's verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Every gate held.
    Passed,
    /// A gate failed.
    Failed,
}

/// Prices of a model, in euros per 1,000 tokens.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Price {
    /// Per 1,000 prompt tokens.
    pub prompt_eur_per_1k: f64,
    /// Per 1,000 completion tokens.
    pub completion_eur_per_1k: f64,
}

#[cfg(test)]
mod tests {
    use super::Shard;
    use proptest::prelude::*;

    proptest! {
        /// `merge` puts parts back with `position` and checks them with `share`: together they
        /// must give back exactly the positions `holds` sends to each part, in order.
        #[test]
        fn position_and_share_invert_the_plan_rule(count in 1u32..12, total in 0usize..200) {
            let mut seen = vec![false; total];
            for index in 1..=count {
                let shard = Shard { index, count };
                let held: Vec<usize> = (0..total).filter(|p| shard.holds(*p)).collect();
                prop_assert_eq!(shard.share(total), held.len());
                let placed: Vec<usize> = (0..held.len()).map(|k| shard.position(k)).collect();
                prop_assert_eq!(&placed, &held);
                for p in placed {
                    prop_assert!(!seen[p]);
                    seen[p] = true;
                }
            }
            prop_assert!(seen.into_iter().all(|s| s));
        }
    }
}
