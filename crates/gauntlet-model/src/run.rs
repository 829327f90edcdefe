//! The run log: a header, one record per trial, and the canonical `results.json`.
//!
//! [`FORMAT_VERSION`] is written into every header and result; a reader refuses a version it
//! does not know. A new field is added together with its reader, with a default for old logs.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::score::Score;
use crate::trajectory::Trajectory;

/// Version of the on-disk run format (`run.json`, `trials.jsonl`, `results.json`).
pub const FORMAT_VERSION: u32 = 1;

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
}

/// The outcome of one trial.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TrialStatus {
    /// Every non-informational evaluator passed.
    Passed,
    /// At least one evaluator failed.
    Failed,
    /// The harness could not run the trial (the agent crashed, hung, or the world failed).
    Error,
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
    /// Tool calls made.
    pub tool_calls: u32,
    /// Agent steps before the final answer.
    pub steps: u32,
    /// Model tokens.
    pub tokens: u64,
    /// Model cost in euros.
    pub cost_eur: f64,
    /// Wall time in milliseconds.
    pub duration_ms: f64,
    /// The final state.
    pub final_state: Value,
    /// Every evaluator's verdict.
    pub scores: Vec<Score>,
}

impl TrialSummary {
    /// Summarises a full record.
    pub fn of(record: &TrialRecord) -> Self {
        TrialSummary {
            case_id: record.case_id.clone(),
            epoch: record.epoch,
            trace_id: record.trace_id.clone(),
            status: record.status,
            error: record.error.clone(),
            tags: record.tags.clone(),
            tool_calls: record.trajectory.tool_calls().count() as u32,
            steps: record.trajectory.steps() as u32,
            tokens: record.trajectory.tokens(),
            cost_eur: record.trajectory.cost_eur(),
            duration_ms: record.duration_ms,
            final_state: record.final_state.clone(),
            scores: record.scores.clone(),
        }
    }
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
    /// Trials whose task succeeded.
    pub task_success_rate: f64,
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
    pub metrics: BTreeMap<String, Option<f64>>,
    /// Per-evaluator aggregates by evaluator name.
    pub evaluators: BTreeMap<String, EvaluatorStats>,
    /// Per-tag aggregates.
    pub segments: BTreeMap<String, SegmentStats>,
    /// Gate decisions, in the order of the configuration.
    pub gates: Vec<GateOutcome>,
    /// One summary per trial, in case then epoch order.
    pub trials: Vec<TrialSummary>,
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
