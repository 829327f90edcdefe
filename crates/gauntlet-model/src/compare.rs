//! A paired comparison of two runs (`gauntlet compare A B`).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::run::{Interval, TrialStatus};

/// Two runs compared trial by trial (paired by case and epoch).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Comparison {
    /// Run id of the baseline.
    pub run_a: String,
    /// Run id of the candidate.
    pub run_b: String,
    /// Number of (case, epoch) pairs present in both runs.
    pub pairs: usize,
    /// Trials only in the baseline, as `case_id#epoch`.
    pub only_in_a: Vec<String>,
    /// Trials only in the candidate.
    pub only_in_b: Vec<String>,
    /// Pass/fail, paired.
    pub pass: PassComparison,
    /// Paired differences of per-trial quantities (B − A).
    pub metrics: Vec<MetricDelta>,
    /// Pass-rate deltas per segment, worst first.
    pub segments: Vec<SegmentDelta>,
    /// What differs between the run headers (harness, worlds, dataset, agent, config).
    pub changed: Vec<String>,
    /// Warnings (attribution impossible, unpaired trials, ...).
    pub warnings: Vec<String>,
    /// `better`, `worse` or `no_difference` (for B against A, at p < 0.05).
    pub direction: Direction,
    /// The pairs whose status changed (or that gained a critical violation in B), those that
    /// got worse first.
    #[serde(default)]
    pub flips: Vec<Flip>,
    /// Critical violations in each run's paired trials, and the cases where only B has any.
    #[serde(default)]
    pub critical_violations: CriticalViolations,
    /// What differences this suite can tell from chance, at its number of cases and epochs.
    #[serde(default)]
    pub noise_floor: NoiseFloor,
    /// Whether B regressed: significantly worse (`direction` is `worse`), or a critical
    /// violation on a case where A had none, whatever the p-value says.
    #[serde(default)]
    pub regression: bool,
    /// The verdict in words.
    pub verdict: String,
    /// An LLM judge's preferences between the paired trajectories (`compare --pairwise`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pairwise: Option<PairwiseReport>,
}

/// One (case, epoch) pair whose status differs between the runs, or that has a critical
/// violation in B and none in A.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Flip {
    /// The case.
    pub case_id: String,
    /// The epoch.
    pub epoch: u32,
    /// The trial's status in A.
    pub a: TrialStatus,
    /// The trial's status in B.
    pub b: TrialStatus,
    /// Why B's trial did not pass, most severe first, each `evaluator: reason` (or the harness
    /// error); empty when it passed.
    pub reasons: Vec<String>,
}

/// Critical violations (failing scores of severity critical) over the paired trials.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CriticalViolations {
    /// In A.
    pub a: u64,
    /// In B.
    pub b: u64,
    /// The cases with a critical violation in B and none in A (over their paired epochs): each
    /// is a regression whatever the p-value says.
    #[serde(default)]
    pub new_in_b: Vec<String>,
}

/// What a difference between runs of this suite must exceed to mean anything
/// (docs/statistics.md).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct NoiseFloor {
    /// Cases paired.
    pub cases: usize,
    /// The expected share of cases whose verdict differs between two identical single-epoch
    /// runs: the mean over cases of 2p(1−p), p a case's pass rate over A's and B's epochs
    /// together. `null` when no case has more than one epoch.
    pub flip_rate: Option<f64>,
    /// The pass-rate difference, in points, two single runs of this suite need before it
    /// means anything (95 %): 1.96 · √(Σ 2p(1−p)) / cases · 100. `null` when no case has more
    /// than one epoch.
    pub single_run_difference_95: Option<f64>,
    /// The smallest pass-rate difference, in points, these pairs detect with 80 % power at the
    /// 5 % level (McNemar), pairs disagreeing by chance at `flip_rate` (none assumed without
    /// epochs: a lower bound). `null` without pairs.
    pub detectable_difference: Option<f64>,
}

/// Which trajectory of a pair a judge prefers, both orders considered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PairPreference {
    /// The baseline's.
    A,
    /// The candidate's.
    B,
    /// Neither: the judge called it even, or its verdict flipped with the order.
    Tie,
    /// No usable verdict in one order or both.
    Invalid,
}

/// One pair as the pairwise judge saw it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PairwiseItem {
    /// `CASE#EPOCH`.
    pub item: String,
    /// The preference, both orders considered.
    pub preference: PairPreference,
    /// Whether the verdict followed the position (each order preferred the one shown first, or
    /// each the one shown second): a tie by position bias.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub flipped: bool,
    /// The judge's reasons, A-first order then B-first order, or why there is no verdict.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reasons: Vec<String>,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// An LLM judge's pairwise preferences over two runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PairwiseReport {
    /// The judge (from the suite's `judges:`).
    pub judge: String,
    /// The model that judged.
    pub model: String,
    /// Pairs judged (both orders asked).
    pub judged: usize,
    /// Pairs not judged: a deterministic check failed in either run (the judge runs only where
    /// they all passed, unless the judge says `run_on: all`), or a harness error.
    pub skipped: usize,
    /// Pairs not judged because the judge's `budget_eur` was spent (counted in `skipped` too).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub over_budget: usize,
    /// Pairs where A's trajectory is preferred in both orders.
    pub a_wins: u64,
    /// Pairs where B's is.
    pub b_wins: u64,
    /// Ties, including flips.
    pub ties: u64,
    /// Pairs with no usable verdict.
    pub invalid: u64,
    /// Pairs whose verdict flipped with the order (counted among the ties).
    pub position_bias: u64,
    /// B's share of the judged pairs with a verdict, a tie counting half (none when there is
    /// no verdict).
    pub b_win_rate: Option<f64>,
    /// Exact two-sided sign test of B's wins against A's (ties left out).
    pub sign_test_p: f64,
    /// What the judge's calls cost, in euros (cached answers cost nothing).
    pub cost_eur: f64,
    /// Each pair.
    pub items: Vec<PairwiseItem>,
}

/// Which way B moved against A.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    /// B passes significantly more often.
    Better,
    /// B passes significantly less often.
    Worse,
    /// No significant difference.
    NoDifference,
}

/// Paired pass/fail.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PassComparison {
    /// Pass rate of A over the pairs.
    pub a_rate: f64,
    /// Pass rate of B over the pairs.
    pub b_rate: f64,
    /// `b_rate - a_rate`.
    pub diff: f64,
    /// Paired bootstrap interval of the difference.
    pub interval: Interval,
    /// Pairs where A passed and B failed.
    pub a_only: u64,
    /// Pairs where B passed and A failed.
    pub b_only: u64,
    /// McNemar's exact two-sided p-value.
    pub p_value: f64,
    /// Cohen's h (B against A).
    pub cohens_h: f64,
    /// Pairs needed to detect 5 points at this discordance (α = 0.05, power 0.8).
    pub pairs_for_5_points: f64,
}

/// A paired difference of one per-trial quantity.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct MetricDelta {
    /// The quantity (`task_success`, `tool_calls`, `latency_ms`, ...).
    pub name: String,
    /// Mean in A.
    pub a_mean: f64,
    /// Mean in B.
    pub b_mean: f64,
    /// `b_mean - a_mean`.
    pub diff: f64,
    /// Paired bootstrap interval of the difference.
    pub interval: Interval,
    /// Cohen's d_z of the paired differences.
    pub effect_size: f64,
}

/// A segment's pass rate in both runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SegmentDelta {
    /// `tag`, `difficulty`, `tool` or `fault`.
    pub kind: String,
    /// The segment's value.
    pub value: String,
    /// Pairs in the segment.
    pub pairs: usize,
    /// Pass rate in A.
    pub a_rate: f64,
    /// Pass rate in B.
    pub b_rate: f64,
    /// `b_rate - a_rate`.
    pub diff: f64,
    /// McNemar's exact p-value within the segment.
    pub p_value: f64,
}
