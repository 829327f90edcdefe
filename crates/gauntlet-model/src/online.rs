//! The online receiver's policy: what production traces are judged against and how they are
//! kept.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::case::Constraints;
use crate::world::ToolSpec;

/// A policy file (`gauntlet online --policy FILE`, YAML or JSON).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Policy {
    /// The agent's tools: their kind (read or write) and argument schema, checked on every
    /// call. Tools a trace declares to its model are checked against their declared schema too.
    #[serde(default)]
    pub tools: Vec<ToolSpec>,
    /// What every trace must respect: forbidden tools, call, retry, token, cost and latency
    /// budgets (the fields of a case's `trajectory_constraints`).
    #[serde(default)]
    pub constraints: Constraints,
    /// Values that must never appear in what an agent says or sends, nor on disk.
    #[serde(default)]
    pub canaries: Vec<String>,
    /// How secrets and personal data are removed before anything is written.
    #[serde(default)]
    pub redaction: Redaction,
    /// Days of data kept in the lake; older partitions are deleted.
    #[serde(default = "default_retention_days")]
    pub retention_days: u32,
    /// Seconds without a new span after which a trace whose root never came is judged as is.
    #[serde(default = "default_idle_timeout_s")]
    pub idle_timeout_s: f64,
}

fn default_retention_days() -> u32 {
    30
}

fn default_idle_timeout_s() -> f64 {
    30.0
}

/// Redaction on ingest.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Redaction {
    /// `redact` (default): a finding becomes `[REDACTED:rule]`. `hash`: `[rule:HASH]`, the same
    /// value always the same hash (keyed by `GAUNTLET_REDACTION_KEY`), so traces can still be
    /// grouped by it.
    #[serde(default)]
    pub mode: RedactionMode,
    /// Patterns of your own, beside the built-in secret and personal-data rules.
    #[serde(default)]
    pub patterns: Vec<Pattern>,
}

/// What a finding becomes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RedactionMode {
    /// `[REDACTED:rule]`.
    #[default]
    Redact,
    /// `[rule:HASH]`.
    Hash,
}

/// A named regular expression.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Pattern {
    /// The rule's name, shown in place of what it found.
    pub name: String,
    /// The expression (Rust `regex` syntax).
    pub regex: String,
}
