//! Imported benchmarks: the rule by which a benchmark rewards a trial, and the headline it
//! reports, computed by that rule beside gauntlet's own, stricter verdicts.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A suite's benchmark: its name and which scores make its reward (all of them passed, where
/// present). `gauntlet import` writes it into `gauntlet.yaml`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BenchmarkSpec {
    /// The benchmark's name (`tau-bench`).
    pub name: String,
    /// The scores whose passing is the benchmark's reward of 1 (a score a trial lacks is not
    /// required).
    pub reward: Vec<String>,
}

/// A benchmark's headline, by its own rule: what its own harness would print. (Its `pass_*`
/// keys are flattened, so it cannot deny unknown fields.)
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct BenchmarkHeadline {
    /// The benchmark's name.
    pub name: String,
    /// Trials judged.
    pub trials: u64,
    /// Trials the benchmark rewards (reward 1).
    pub passed: u64,
    /// `pass_hat_k` (tau-bench's pass^k) and `pass_at_k`, averaged over cases.
    #[serde(flatten)]
    pub pass_k: BTreeMap<String, f64>,
}

/// Run-level metrics by name (what gates read; `null` where undefined), and an imported
/// benchmark's headline under `benchmark`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Metrics {
    /// The benchmark's own headline, for a suite imported from one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub benchmark: Option<BenchmarkHeadline>,
    /// The metrics by name.
    #[serde(flatten)]
    pub values: BTreeMap<String, Option<f64>>,
}

impl std::ops::Deref for Metrics {
    type Target = BTreeMap<String, Option<f64>>;

    fn deref(&self) -> &Self::Target {
        &self.values
    }
}
