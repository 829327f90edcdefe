//! Run metrics: what gates read, computed from trial summaries alone.
//!
//! Rates count harness errors as failures (a trial that could not run did not succeed).
//! Percentiles use statrs' order statistics over the trials' values.

use std::collections::BTreeMap;

use gauntlet_model::{EvaluatorStats, Score, SegmentStats, Severity, TrialStatus, TrialSummary};
use statrs::statistics::{Data, OrderStatistics};

/// Metrics of a run.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Aggregate {
    /// Run-level metrics by name.
    pub metrics: BTreeMap<String, f64>,
    /// Per-evaluator aggregates.
    pub evaluators: BTreeMap<String, EvaluatorStats>,
    /// Per-tag aggregates.
    pub segments: BTreeMap<String, SegmentStats>,
}

/// Quantities that get `mean_`, `p50_` and `p95_` metrics.
const DISTRIBUTIONS: [&str; 5] = ["tool_calls", "steps", "tokens", "cost_eur", "latency_ms"];

/// Scalar metrics every run has (besides the distributions).
const SCALARS: [(&str, &str); 11] = [
    ("trials", "number of trials"),
    (
        "passed",
        "trials whose every non-informational evaluator passed",
    ),
    ("failed", "trials with a failed evaluator"),
    ("errors", "trials the harness could not run"),
    ("pass_rate", "passed / trials"),
    (
        "task_success_rate",
        "trials whose task_success passed / trials",
    ),
    ("error_rate", "errors / trials"),
    (
        "critical_policy_violations",
        "failed critical scores, summed over trials",
    ),
    ("forbidden_tool_used", "trials that called a forbidden tool"),
    (
        "duplicate_side_effects",
        "duplicate applications of a write, summed over trials",
    ),
    (
        "trace_id_coverage",
        "share of trials with a valid W3C trace id",
    ),
];

/// Every metric name `aggregate` produces, with a line saying what it is; gates may use these.
pub fn metric_names() -> Vec<(String, String)> {
    let mut names: Vec<(String, String)> = SCALARS
        .iter()
        .map(|(n, d)| ((*n).to_owned(), (*d).to_owned()))
        .collect();
    names.push((
        "cost_per_success_eur".to_owned(),
        "total cost / trials whose task succeeded".to_owned(),
    ));
    for d in DISTRIBUTIONS {
        for (stat, what) in [
            ("mean", "mean"),
            ("p50", "median"),
            ("p95", "95th percentile"),
        ] {
            names.push((format!("{stat}_{d}"), format!("{what} of {d} per trial")));
        }
    }
    names
}

/// A trial's status from its scores.
pub fn trial_status(scores: &[Score]) -> TrialStatus {
    if scores.iter().any(Score::fails_trial) {
        TrialStatus::Failed
    } else {
        TrialStatus::Passed
    }
}

fn task_succeeded(t: &TrialSummary) -> bool {
    t.status != TrialStatus::Error
        && t.scores
            .iter()
            .any(|s| s.name == "task_success" && s.passed)
}

fn rate(k: usize, n: usize) -> f64 {
    if n == 0 {
        f64::NAN
    } else {
        k as f64 / n as f64
    }
}

/// Aggregates trials into run metrics, evaluator statistics and tag segments.
pub fn aggregate(trials: &[TrialSummary]) -> Aggregate {
    let n = trials.len();
    let count = |s: TrialStatus| trials.iter().filter(|t| t.status == s).count();
    let (passed, failed, errors) = (
        count(TrialStatus::Passed),
        count(TrialStatus::Failed),
        count(TrialStatus::Error),
    );
    let successes = trials.iter().filter(|t| task_succeeded(t)).count();
    let sum_where = |name: &str| -> f64 {
        trials
            .iter()
            .flat_map(|t| t.scores.iter())
            .filter(|s| s.name == name)
            .map(|s| s.value)
            .sum()
    };
    let mut m = BTreeMap::new();
    m.insert("trials".to_owned(), n as f64);
    m.insert("passed".to_owned(), passed as f64);
    m.insert("failed".to_owned(), failed as f64);
    m.insert("errors".to_owned(), errors as f64);
    m.insert("pass_rate".to_owned(), rate(passed, n));
    m.insert("task_success_rate".to_owned(), rate(successes, n));
    m.insert("error_rate".to_owned(), rate(errors, n));
    m.insert(
        "critical_policy_violations".to_owned(),
        trials
            .iter()
            .flat_map(|t| t.scores.iter())
            .filter(|s| s.severity == Severity::Critical && !s.passed)
            .count() as f64,
    );
    m.insert(
        "forbidden_tool_used".to_owned(),
        sum_where("forbidden_tool_used"),
    );
    m.insert(
        "duplicate_side_effects".to_owned(),
        sum_where("duplicate_side_effects"),
    );
    let traced = trials.iter().filter(|t| is_trace_id(&t.trace_id)).count();
    m.insert("trace_id_coverage".to_owned(), rate(traced, n));
    let total_cost: f64 = trials.iter().map(|t| t.cost_eur).sum();
    m.insert(
        "cost_per_success_eur".to_owned(),
        if successes == 0 {
            f64::NAN
        } else {
            total_cost / successes as f64
        },
    );
    for d in DISTRIBUTIONS {
        let values: Vec<f64> = trials
            .iter()
            .map(|t| match d {
                "tool_calls" => f64::from(t.tool_calls),
                "steps" => f64::from(t.steps),
                "tokens" => t.tokens as f64,
                "cost_eur" => t.cost_eur,
                _ => t.duration_ms,
            })
            .collect();
        let (mean, p50, p95) = if values.is_empty() {
            (f64::NAN, f64::NAN, f64::NAN)
        } else {
            let mean = values.iter().sum::<f64>() / values.len() as f64;
            let mut data = Data::new(values);
            (mean, data.percentile(50), data.percentile(95))
        };
        m.insert(format!("mean_{d}"), mean);
        m.insert(format!("p50_{d}"), p50);
        m.insert(format!("p95_{d}"), p95);
    }

    let mut evaluators: BTreeMap<String, (u32, u32, f64, f64)> = BTreeMap::new();
    for s in trials.iter().flat_map(|t| t.scores.iter()) {
        let e = evaluators.entry(s.name.clone()).or_default();
        e.0 += 1;
        e.1 += u32::from(s.passed);
        e.2 += s.score;
        e.3 += s.value;
    }
    let evaluators = evaluators
        .into_iter()
        .map(|(name, (n, p, score, value))| {
            let nf = f64::from(n);
            (
                name,
                EvaluatorStats {
                    trials: n,
                    passed: p,
                    pass_rate: f64::from(p) / nf,
                    mean: score / nf,
                    mean_value: value / nf,
                },
            )
        })
        .collect();

    let mut segments: BTreeMap<String, (u32, u32, u32)> = BTreeMap::new();
    for t in trials {
        for tag in &t.tags {
            let s = segments.entry(tag.clone()).or_default();
            s.0 += 1;
            s.1 += u32::from(t.status == TrialStatus::Passed);
            s.2 += u32::from(task_succeeded(t));
        }
    }
    let segments = segments
        .into_iter()
        .map(|(tag, (n, p, ok))| {
            (
                tag,
                SegmentStats {
                    trials: n,
                    passed: p,
                    pass_rate: f64::from(p) / f64::from(n),
                    task_success_rate: f64::from(ok) / f64::from(n),
                },
            )
        })
        .collect();
    Aggregate {
        metrics: m,
        evaluators,
        segments,
    }
}

/// Whether a string is a valid W3C trace id: 32 lowercase hex digits, not all zero.
pub(crate) fn is_trace_id(s: &str) -> bool {
    s.len() == 32
        && s.bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        && s.bytes().any(|b| b != b'0')
}
