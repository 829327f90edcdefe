//! A score: one evaluator's verdict on one trial.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// How much a failed score matters.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    /// A measurement; never fails a trial by itself.
    Info,
    /// Fails the trial.
    Error,
    /// Fails the trial and counts as a critical policy violation (a safety gate).
    Critical,
}

/// The quality layer a score belongs to, used by rubrics and segments.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Dimension {
    /// Achieved the verifiable outcome.
    Outcome,
    /// Reasonable steps and order.
    Trajectory,
    /// Tool selection and arguments.
    Tools,
    /// Latency, tokens, cost, steps.
    Efficiency,
    /// Behaviour under faults.
    Robustness,
    /// Permissions, confirmations, privacy, limits.
    Safety,
}

/// One evaluator's verdict.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Score {
    /// The evaluator's name, as the seeds name it (`required_tool_recall`, `StateVerification`).
    pub name: String,
    /// The quality layer.
    pub dimension: Dimension,
    /// The raw measurement (a count, a ratio, 1/0 for booleans), as the seeds return it.
    pub value: f64,
    /// Normalised score in [0, 1], higher is better.
    pub score: f64,
    /// Whether the check passed.
    pub passed: bool,
    /// How much a failure matters.
    pub severity: Severity,
    /// Evaluator-specific details (mismatches, offending calls, ...).
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub details: Value,
    /// Indexes of the trajectory events the verdict points at.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub events: Vec<usize>,
    /// Why it failed, in one line a person reads without context (expected and actual where
    /// there are any); absent on a passing score.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// What an evaluator needs besides the trajectory. A trial without it (a production trace has
/// no case) reports the evaluator as not applicable, never as passed.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Needs {
    /// Nothing: the trajectory (and the states it left) suffice.
    Nothing,
    /// A case: its constraints, budgets or assertions.
    Case,
    /// A case with an expected final state or outcome.
    ExpectedState,
    /// A case with a reference: expected tools, optimal steps or a reference trajectory.
    Reference,
}

/// An evaluator that did not run on a trial, and what it lacked.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NotApplicable {
    /// The evaluator's name.
    pub evaluator: String,
    /// What it needed.
    pub needs: Needs,
}

impl Score {
    /// Whether this score fails its trial.
    pub fn fails_trial(&self) -> bool {
        !self.passed && self.severity != Severity::Info
    }
}
