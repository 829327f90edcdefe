//! Run metrics: what gates read, computed from trial summaries alone.
//!
//! Rates count harness errors as failures (a trial that could not run did not succeed) and get
//! Wilson intervals; means get seeded percentile-bootstrap intervals that resample cases (epochs
//! of a case move together; normal cluster-robust intervals past a thousand cases, see
//! [`crate::stats::cluster_mean`]); percentiles use statrs' order statistics. pass@k and pass^k count a trial as a success when its status is `passed`.

use gauntlet_model::names;
use std::collections::{BTreeMap, HashMap};

use gauntlet_model::{
    EvaluatorStats, FlakyCase, Interval, Score, SegmentStats, Severity, TrialStatus, TrialSummary,
};
use statrs::statistics::{Data, OrderStatistics};

use crate::stats::{CONFIDENCE, RESAMPLES, cluster_mean, pass_at_k, pass_hat_k, wilson};

/// Metrics of a run.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Aggregate {
    /// Run-level metrics by name.
    pub metrics: BTreeMap<String, f64>,
    /// Intervals by metric name.
    pub intervals: BTreeMap<String, Interval>,
    /// Per-evaluator aggregates.
    pub evaluators: BTreeMap<String, EvaluatorStats>,
    /// Segments by kind (`tag`, `difficulty`, `tool`, `fault`), then value.
    pub segments: BTreeMap<String, BTreeMap<String, SegmentStats>>,
    /// Cases whose verdict changed across epochs, flakiest first.
    pub flaky_cases: Vec<FlakyCase>,
    /// An imported benchmark's headline by its own rule, when trials carry its reward.
    pub benchmark: Option<gauntlet_model::BenchmarkHeadline>,
}

/// Quantities that get `mean_`, `p50_` and `p95_` metrics (and the `p50()`, `p95()`, `mean()`
/// gate functions).
pub const DISTRIBUTIONS: [&str; 5] = ["tool_calls", "steps", "tokens", "cost_eur", "latency_ms"];

/// pass@k and pass^k are reported for k up to this (and up to the fewest epochs of a case).
pub const MAX_K: u32 = 32;

/// Scalar metrics every run has (besides the distributions and pass@k).
const SCALARS: [(&str, &str); 19] = [
    (names::metric::TRIALS, "number of trials"),
    (
        names::metric::PASSED,
        "trials whose every non-informational evaluator passed",
    ),
    (names::metric::FAILED, "trials with a failed evaluator"),
    (names::metric::ERRORS, "trials the harness could not run"),
    (names::metric::PASS_RATE, "passed / trials"),
    (
        names::metric::TASK_SUCCESS_RATE,
        "trials whose task_success passed / trials",
    ),
    (names::metric::ERROR_RATE, "errors / trials"),
    (
        names::metric::CRITICAL_POLICY_VIOLATIONS,
        "failed critical scores, summed over trials",
    ),
    (
        names::metric::SAFE_TRIAL_RATE,
        "trials with no failed critical score / trials",
    ),
    (
        names::FORBIDDEN_TOOL_USED,
        "trials that called a forbidden tool",
    ),
    (
        names::DUPLICATE_SIDE_EFFECTS,
        "duplicate applications of a write, summed over trials",
    ),
    (
        names::metric::TRACE_ID_COVERAGE,
        "share of trials with a valid W3C trace id",
    ),
    (
        names::metric::FLAKY_CASES,
        "cases whose verdict changed across epochs",
    ),
    (
        names::metric::COST_PER_SUCCESS_EUR,
        "total cost / trials whose task succeeded",
    ),
    (
        names::metric::USER_COST_EUR,
        "what the simulated users' personas cost, summed over trials",
    ),
    (
        names::FAULTS_INJECTED,
        "faults injected, summed over trials",
    ),
    (
        names::CROSS_TENANT_ACCESS,
        "reads or writes of another tenant's records, summed over trials",
    ),
    (
        names::metric::RETRIES_PER_FAULT,
        "retries of a faulted call per injected fault",
    ),
    (
        names::metric::TIME_LOST_TO_FAULTS_MS,
        "time from each fault to the tool's next success (or the end), summed",
    ),
];

/// Every metric name `aggregate` can produce, with what it is; gates may use these.
pub fn metric_names() -> Vec<(String, String)> {
    let mut names: Vec<(String, String)> = SCALARS
        .iter()
        .map(|(n, d)| ((*n).to_owned(), (*d).to_owned()))
        .collect();
    for d in DISTRIBUTIONS {
        for (stat, what) in [
            ("mean", "mean"),
            ("p50", "median"),
            ("p95", "95th percentile"),
        ] {
            names.push((format!("{stat}_{d}"), format!("{what} of {d} per trial")));
        }
    }
    for k in 1..=MAX_K {
        names.push((
            format!("pass_at_{k}"),
            format!("pass@{k}: unbiased chance that one of {k} epochs passes, averaged over cases"),
        ));
        names.push((
            format!("pass_hat_{k}"),
            format!(
                "pass^{k}: chance that all of {k} epochs pass (tau-bench), averaged over cases"
            ),
        ));
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
            .any(|s| s.name == names::TASK_SUCCESS && s.passed)
}

fn critical(t: &TrialSummary) -> bool {
    t.scores
        .iter()
        .any(|s| s.severity == Severity::Critical && !s.passed)
}

fn rate(k: usize, n: usize) -> f64 {
    if n == 0 {
        f64::NAN
    } else {
        k as f64 / n as f64
    }
}

/// pass@k and pass^k averaged over cases, from per-case (trials, passes).
pub fn pass_k_metrics(per_case: &[(u64, u64)]) -> BTreeMap<String, f64> {
    let mut out = BTreeMap::new();
    let Some(min_n) = per_case.iter().map(|(n, _)| *n).min() else {
        return out;
    };
    for k in 1..=min_n.min(u64::from(MAX_K)) {
        let cases = per_case.len() as f64;
        let at: f64 = per_case
            .iter()
            .map(|&(n, c)| pass_at_k(n, c, k))
            .sum::<f64>()
            / cases;
        let hat: f64 = per_case
            .iter()
            .map(|&(n, c)| pass_hat_k(n, c, k))
            .sum::<f64>()
            / cases;
        out.insert(format!("pass_at_{k}"), at);
        out.insert(format!("pass_hat_{k}"), hat);
    }
    out
}

/// Aggregates trials into run metrics, intervals, evaluator statistics, segments and
/// flakiness. `seed` seeds the bootstrap, so the same trials and seed give identical results.
pub fn aggregate(trials: &[TrialSummary], seed: u64) -> Aggregate {
    let n = trials.len();
    let count = |s: TrialStatus| trials.iter().filter(|t| t.status == s).count();
    let (passed, failed, errors) = (
        count(TrialStatus::Passed),
        count(TrialStatus::Failed),
        count(TrialStatus::Error),
    );
    let successes = trials.iter().filter(|t| task_succeeded(t)).count();
    let safe = trials.iter().filter(|t| !critical(t)).count();
    let sum_where = |name: &str| -> f64 {
        trials
            .iter()
            .flat_map(|t| t.scores.iter())
            .filter(|s| s.name == name)
            .map(|s| s.value)
            .sum()
    };
    let mut m = BTreeMap::new();
    let mut intervals = BTreeMap::new();
    m.insert(names::metric::TRIALS.to_owned(), n as f64);
    m.insert(names::metric::PASSED.to_owned(), passed as f64);
    m.insert(names::metric::FAILED.to_owned(), failed as f64);
    m.insert(names::metric::ERRORS.to_owned(), errors as f64);
    for (name, k) in [
        (names::metric::PASS_RATE, passed),
        (names::metric::TASK_SUCCESS_RATE, successes),
        (names::metric::ERROR_RATE, errors),
        (names::metric::SAFE_TRIAL_RATE, safe),
    ] {
        m.insert(name.to_owned(), rate(k, n));
        intervals.insert(name.to_owned(), wilson(k as u64, n as u64, CONFIDENCE));
    }
    m.insert(
        names::metric::CRITICAL_POLICY_VIOLATIONS.to_owned(),
        trials
            .iter()
            .flat_map(|t| t.scores.iter())
            .filter(|s| s.severity == Severity::Critical && !s.passed)
            .count() as f64,
    );
    m.insert(
        names::FORBIDDEN_TOOL_USED.to_owned(),
        sum_where(names::FORBIDDEN_TOOL_USED),
    );
    m.insert(
        names::DUPLICATE_SIDE_EFFECTS.to_owned(),
        sum_where(names::DUPLICATE_SIDE_EFFECTS),
    );
    m.insert(
        names::CROSS_TENANT_ACCESS.to_owned(),
        sum_where(names::CROSS_TENANT_ACCESS),
    );
    let injected = sum_where(names::FAULTS_INJECTED);
    m.insert(names::FAULTS_INJECTED.to_owned(), injected);
    for (i, kind) in crate::attribution::KINDS.iter().enumerate() {
        let n = trials
            .iter()
            .filter(|t| {
                t.scores
                    .iter()
                    .any(|s| s.name == names::ERROR_ATTRIBUTION && s.value == i as f64)
            })
            .count();
        m.insert(format!("failures_{kind}"), n as f64);
    }
    m.insert(
        names::metric::RETRIES_PER_FAULT.to_owned(),
        if injected > 0.0 {
            sum_where(names::FAULT_RETRIES) / injected
        } else {
            f64::NAN
        },
    );
    m.insert(
        names::metric::TIME_LOST_TO_FAULTS_MS.to_owned(),
        sum_where(names::FAULT_TIME_LOST_MS),
    );
    let traced = trials
        .iter()
        .filter(|t| gauntlet_model::is_trace_id(&t.trace_id))
        .count();
    m.insert(names::metric::TRACE_ID_COVERAGE.to_owned(), rate(traced, n));
    let total_cost: f64 = trials.iter().map(|t| t.cost_eur).sum();
    m.insert(
        names::metric::USER_COST_EUR.to_owned(),
        trials.iter().map(|t| t.user_cost_eur).sum(),
    );
    m.insert(
        names::metric::COST_PER_SUCCESS_EUR.to_owned(),
        if successes == 0 {
            f64::NAN
        } else {
            total_cost / successes as f64
        },
    );
    // Each trial's case, as an index in first-seen order: means are resampled by case.
    let mut case_index: HashMap<&str, usize> = HashMap::new();
    let cluster_of: Vec<usize> = trials
        .iter()
        .map(|t| {
            let next = case_index.len();
            *case_index.entry(t.case_id.as_str()).or_insert(next)
        })
        .collect();
    for (i, d) in DISTRIBUTIONS.iter().enumerate() {
        let values: Vec<f64> = trials
            .iter()
            .map(|t| match *d {
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
            let mut clusters = vec![(0.0, 0.0); case_index.len()];
            for (v, &c) in values.iter().zip(&cluster_of) {
                clusters[c].0 += v;
                clusters[c].1 += 1.0;
            }
            intervals.insert(
                format!("mean_{d}"),
                cluster_mean(
                    &clusters,
                    RESAMPLES,
                    seed.wrapping_add(i as u64),
                    CONFIDENCE,
                ),
            );
            let mut data = Data::new(values);
            (mean, data.percentile(50), data.percentile(95))
        };
        m.insert(format!("mean_{d}"), mean);
        m.insert(format!("p50_{d}"), p50);
        m.insert(format!("p95_{d}"), p95);
    }

    // Per case, in first-seen order: trials and passes, for pass@k, pass^k and flakiness.
    let per_case = per_case(
        trials
            .iter()
            .map(|t| (t.case_id.as_str(), t.status == TrialStatus::Passed)),
    );
    let counts: Vec<(u64, u64)> = per_case.iter().map(|(_, n, c)| (*n, *c)).collect();
    m.extend(pass_k_metrics(&counts));
    let mut flaky_cases: Vec<FlakyCase> = per_case
        .iter()
        .filter(|(_, n, c)| *c > 0 && c < n)
        .map(|(id, n, c)| FlakyCase {
            case_id: (*id).to_owned(),
            passed: *c as u32,
            trials: *n as u32,
        })
        .collect();
    // Flakiest first: closest to half passing, then most trials, then by id.
    flaky_cases.sort_by(|a, b| {
        let score = |f: &FlakyCase| (f64::from(f.passed) / f64::from(f.trials) - 0.5).abs();
        score(a)
            .total_cmp(&score(b))
            .then(b.trials.cmp(&a.trials))
            .then(a.case_id.cmp(&b.case_id))
    });
    m.insert(
        names::metric::FLAKY_CASES.to_owned(),
        flaky_cases.len() as f64,
    );

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
                    pass_rate_interval: wilson(u64::from(p), u64::from(n), CONFIDENCE),
                    mean: score / nf,
                    mean_value: value / nf,
                },
            )
        })
        .collect();

    Aggregate {
        metrics: m,
        intervals,
        evaluators,
        segments: segments(trials),
        flaky_cases,
        benchmark: benchmark_headline(trials),
    }
}

/// The benchmark's headline from the trials' `benchmark_reward`: rewarded trials, and pass^k
/// and pass@k over cases by the benchmark's reward (not gauntlet's verdict).
fn benchmark_headline(trials: &[TrialSummary]) -> Option<gauntlet_model::BenchmarkHeadline> {
    let rewards: Vec<(&str, &Score)> = trials
        .iter()
        .filter_map(|t| {
            let s = t
                .scores
                .iter()
                .find(|s| s.name == names::BENCHMARK_REWARD)?;
            Some((t.case_id.as_str(), s))
        })
        .collect();
    let name = rewards.first()?.1.details["benchmark"]
        .as_str()
        .unwrap_or("benchmark")
        .to_owned();
    let counts: Vec<(u64, u64)> = per_case(rewards.iter().map(|(case, s)| (*case, s.value >= 1.0)))
        .into_iter()
        .map(|(_, n, c)| (n, c))
        .collect();
    Some(gauntlet_model::BenchmarkHeadline {
        name,
        trials: rewards.len() as u64,
        passed: counts.iter().map(|(_, c)| c).sum(),
        pass_k: pass_k_metrics(&counts),
    })
}

/// Trials and successes per case, in first-seen order.
fn per_case<'a>(outcomes: impl Iterator<Item = (&'a str, bool)>) -> Vec<(&'a str, u64, u64)> {
    let mut at: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    let mut out: Vec<(&str, u64, u64)> = Vec::new();
    for (case, passed) in outcomes {
        let i = *at.entry(case).or_insert_with(|| {
            out.push((case, 0, 0));
            out.len() - 1
        });
        out[i].1 += 1;
        out[i].2 += u64::from(passed);
    }
    out
}

fn segments(trials: &[TrialSummary]) -> BTreeMap<String, BTreeMap<String, SegmentStats>> {
    // Per segment: trials, passed, task successes, and sums/counts of tool precision and recall.
    #[derive(Default)]
    struct Acc {
        n: u32,
        passed: u32,
        ok: u32,
        precision: (f64, u32),
        recall: (f64, u32),
    }
    let mut acc: BTreeMap<String, BTreeMap<String, Acc>> = BTreeMap::new();
    for t in trials {
        let mut keys: Vec<(&str, String)> = t.tags.iter().map(|g| ("tag", g.clone())).collect();
        keys.extend(t.difficulty.iter().map(|d| ("difficulty", d.clone())));
        keys.extend(t.tools.iter().map(|d| ("tool", d.clone())));
        keys.extend(t.faults.iter().map(|f| {
            let name = serde_json::to_value(f)
                .ok()
                .and_then(|v| v.as_str().map(str::to_owned))
                .unwrap_or_default();
            ("fault", name)
        }));
        let selection = t
            .scores
            .iter()
            .find(|s| s.name == names::TOOL_SELECTION_ACCURACY);
        let detail = |k: &str| {
            selection
                .and_then(|s| s.details.get(k))
                .and_then(serde_json::Value::as_f64)
        };
        for (kind, value) in keys {
            let s = acc
                .entry(kind.to_owned())
                .or_default()
                .entry(value)
                .or_default();
            s.n += 1;
            s.passed += u32::from(t.status == TrialStatus::Passed);
            s.ok += u32::from(task_succeeded(t));
            if let (Some(p), Some(r)) = (detail("precision"), detail("recall")) {
                s.precision.0 += p;
                s.precision.1 += 1;
                s.recall.0 += r;
                s.recall.1 += 1;
            }
        }
    }
    acc.into_iter()
        .map(|(kind, values)| {
            let values = values
                .into_iter()
                .map(|(value, a)| {
                    let mean = |(sum, n): (f64, u32)| (n > 0).then(|| sum / f64::from(n));
                    (
                        value,
                        SegmentStats {
                            trials: a.n,
                            passed: a.passed,
                            pass_rate: f64::from(a.passed) / f64::from(a.n),
                            pass_rate_interval: wilson(
                                u64::from(a.passed),
                                u64::from(a.n),
                                CONFIDENCE,
                            ),
                            task_success_rate: f64::from(a.ok) / f64::from(a.n),
                            tool_precision: mean(a.precision),
                            tool_recall: mean(a.recall),
                        },
                    )
                })
                .collect();
            (kind, values)
        })
        .collect()
}
