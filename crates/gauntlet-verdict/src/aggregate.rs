//! Run metrics: what gates read, computed from trial summaries alone.
//!
//! Rates count harness errors as failures (a trial that could not run did not succeed) and get
//! Wilson intervals; means get seeded percentile-bootstrap intervals that resample cases (epochs
//! of a case move together; normal cluster-robust intervals past a thousand cases, see
//! [`gauntlet_stats::cluster_mean`]); percentiles use statrs' order statistics. pass@k and pass^k count a trial as a success when its status is `passed`.

use gauntlet_model::names;
use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};

use gauntlet_model::labels::trial_item;
use gauntlet_model::{
    EvaluatorStats, FlakyCase, Interval, JudgeHeader, JudgeReport, JudgeStatus, Score,
    SegmentStats, Severity, TrialStatus, TrialSummary,
};
use statrs::statistics::{Data, OrderStatistics};

use gauntlet_stats::{CONFIDENCE, RESAMPLES, cluster_mean, pass_at_k, pass_hat_k, wilson};

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
    /// Per case, the step of the earliest failed checkpoint: step → trials.
    pub first_wrong_steps: BTreeMap<String, BTreeMap<String, u32>>,
    /// An imported benchmark's headline by its own rule, when trials carry its reward.
    pub benchmark: Option<gauntlet_model::BenchmarkHeadline>,
    /// Each LLM judge over the run (when the accumulator was given the run's judges).
    pub judges: Vec<JudgeReport>,
}

/// Quantities that get `mean_`, `p50_` and `p95_` metrics (and the `p50()`, `p95()`, `mean()`
/// gate functions).
pub const DISTRIBUTIONS: [&str; 5] = ["tool_calls", "steps", "tokens", "cost_eur", "latency_ms"];

/// pass@k and pass^k are reported for k up to this (and up to the fewest epochs of a case).
pub const MAX_K: u32 = 32;

/// Scalar metrics every run has (besides the distributions and pass@k).
const SCALARS: [(&str, &str); 23] = [
    (
        names::metric::UTILITY_RATE,
        "trials whose user task was done (`utility` 1) / trials with a utility score",
    ),
    (names::metric::ATTACKED_TRIALS, "trials run under an attack"),
    (
        names::metric::UTILITY_UNDER_ATTACK,
        "attacked trials whose user task was still done / attacked trials",
    ),
    (
        names::metric::ATTACK_SUCCESS_RATE,
        "attacked trials whose attacker's goal was reached (`security` 1) / attacked trials",
    ),
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
    let mut acc = Accumulator::default();
    for t in trials {
        acc.push(t);
    }
    acc.finish(seed, None)
}

/// Values of one distribution: kept exactly (statrs' order statistics) up to
/// [`EXACT_QUANTILE_VALUES`], then folded into a t-digest, so memory stays bounded whatever
/// the number of trials.
#[derive(Debug, Clone, Default)]
struct Quantiles {
    exact: Vec<f64>,
    digest: Option<tdigest::TDigest>,
}

/// Up to this many values per distribution, p50 and p95 are exact; past it they are t-digest
/// estimates (200 centroids).
pub const EXACT_QUANTILE_VALUES: usize = 1 << 20;

impl Quantiles {
    fn push(&mut self, v: f64) {
        if let Some(d) = &mut self.digest {
            if v.is_finite() {
                d.push(v);
            }
            return;
        }
        self.exact.push(v);
        if self.exact.len() > EXACT_QUANTILE_VALUES {
            let mut d = tdigest::TDigest::new_with_size(200);
            d.extend_values(
                std::mem::take(&mut self.exact)
                    .into_iter()
                    .filter(|v| v.is_finite()),
            );
            self.digest = Some(d);
        }
    }

    /// p50 and p95 (NaN when empty).
    fn p50_p95(self) -> (f64, f64) {
        match self.digest {
            Some(mut d) => {
                d.flush();
                let q = |p| d.estimate_quantile(p).unwrap_or(f64::NAN);
                (q(0.5), q(0.95))
            }
            None if self.exact.is_empty() => (f64::NAN, f64::NAN),
            None => {
                let mut data = Data::new(self.exact);
                (data.percentile(50), data.percentile(95))
            }
        }
    }
}

/// One case's tallies: trials, passes, sums of the distributions (for intervals by case), and
/// the benchmark's own reward.
#[derive(Debug, Clone, Default)]
struct CaseTally {
    id: String,
    trials: u64,
    passed: u64,
    sums: [f64; DISTRIBUTIONS.len()],
    rewarded: (u64, u64),
}

/// Per segment: trials, passed, task successes, and sums/counts of tool precision and recall.
#[derive(Debug, Clone, Default)]
struct SegmentTally {
    n: u32,
    passed: u32,
    ok: u32,
    precision: (f64, u32),
    recall: (f64, u32),
}

/// Run metrics tallied one trial at a time: memory grows with the cases, evaluators and
/// segments, never with the trials (distributions are exact up to [`EXACT_QUANTILE_VALUES`]).
/// What a streaming `score` and the online receiver use; [`aggregate`] is this over a slice.
#[derive(Debug, Clone, Default)]
pub struct Accumulator {
    n: usize,
    passed: usize,
    failed: usize,
    errors: usize,
    successes: usize,
    safe: usize,
    critical: usize,
    traced: usize,
    cost: f64,
    user_cost: f64,
    /// Each distribution's total, summed in trial order.
    totals: [f64; DISTRIBUTIONS.len()],
    sums: BTreeMap<&'static str, f64>,
    attribution: [usize; gauntlet_eval::attribution::KINDS.len()],
    case_at: HashMap<String, usize>,
    cases: Vec<CaseTally>,
    distributions: [Quantiles; DISTRIBUTIONS.len()],
    evaluators: BTreeMap<String, (u32, u32, f64, f64)>,
    segments: BTreeMap<&'static str, BTreeMap<String, SegmentTally>>,
    benchmark: Option<String>,
    /// Per judge: its report so far, and the coincidences of its samples' pass/fail votes.
    judges: Vec<(JudgeReport, [Vec<f64>; 2])>,
    /// Utility and attacks: over all trials with a `utility` score, over attacked trials, and
    /// per attack (`attack:NAME`) and per vector (`vector:NAME`).
    attacks: AttackTally,
    /// Per case, the step of each trial's earliest failed checkpoint: step → trials.
    first_wrong: BTreeMap<String, BTreeMap<u32, u32>>,
}

/// Trials, tasks done and attacker goals reached, per group of trials.
#[derive(Debug, Clone, Default)]
struct AttackTally {
    utility: (usize, usize),
    groups: BTreeMap<String, (usize, usize, usize)>,
}

impl AttackTally {
    fn push(&mut self, t: &TrialSummary) {
        let find = |name: &str| t.scores.iter().find(|s| s.name == name);
        let Some(u) = find(names::UTILITY) else {
            return;
        };
        let done = u.value >= 1.0;
        self.utility.0 += 1;
        self.utility.1 += usize::from(done);
        let Some(s) = find(names::SECURITY).filter(|s| s.details["attacked"] == true) else {
            return;
        };
        let reached = s.value >= 1.0;
        let mut groups = vec![String::new()];
        if let Some(a) = s.details["attack"].as_str() {
            groups.push(format!("attack:{a}"));
        }
        for v in s.details["vectors"].as_array().into_iter().flatten() {
            if let Some(v) = v.as_str() {
                groups.push(format!("vector:{v}"));
            }
        }
        for g in groups {
            let e = self.groups.entry(g).or_default();
            e.0 += 1;
            e.1 += usize::from(done);
            e.2 += usize::from(reached);
        }
    }

    /// `utility_rate` (NaN without utility scores), then for attacked trials `utility_under_attack` and `attack_success_rate`,
    /// overall and suffixed `_attack_NAME` / `_vector_NAME` (names made CEL identifiers).
    fn finish(&self, m: &mut BTreeMap<String, f64>, intervals: &mut BTreeMap<String, Interval>) {
        let attacked = self.groups.get("").map_or(0, |g| g.0);
        m.insert(names::metric::ATTACKED_TRIALS.to_owned(), attacked as f64);
        let mut put = |name: String, k: usize, n: usize| {
            m.insert(name.clone(), rate(k, n));
            if n > 0 {
                intervals.insert(name, wilson(k as u64, n as u64, CONFIDENCE));
            }
        };
        if attacked == 0 {
            for name in [
                names::metric::UTILITY_UNDER_ATTACK,
                names::metric::ATTACK_SUCCESS_RATE,
            ] {
                put(name.to_owned(), 0, 0);
            }
        }
        put(
            names::metric::UTILITY_RATE.to_owned(),
            self.utility.1,
            self.utility.0,
        );
        for (group, (n, done, reached)) in &self.groups {
            let suffix = match group.split_once(':') {
                Some((kind, name)) => format!("_{kind}_{}", identifier(name)),
                None => String::new(),
            };
            put(
                format!("{}{suffix}", names::metric::UTILITY_UNDER_ATTACK),
                *done,
                *n,
            );
            put(
                format!("{}{suffix}", names::metric::ATTACK_SUCCESS_RATE),
                *reached,
                *n,
            );
        }
    }
}

/// A name as a CEL identifier: letters, digits and `_`, others replaced by `_`.
fn identifier(name: &str) -> String {
    name.chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect()
}

/// Scores whose values are summed over trials into a metric of the same name.
const SUMMED: [&str; 6] = [
    names::FORBIDDEN_TOOL_USED,
    names::DUPLICATE_SIDE_EFFECTS,
    names::CROSS_TENANT_ACCESS,
    names::FAULTS_INJECTED,
    names::FAULT_RETRIES,
    names::FAULT_TIME_LOST_MS,
];

impl Accumulator {
    /// An accumulator that also reports on the run's LLM judges.
    pub fn with_judges(judges: &[JudgeHeader]) -> Accumulator {
        Accumulator {
            judges: judges
                .iter()
                .map(|h| {
                    let report = JudgeReport {
                        header: h.clone(),
                        scored: 0,
                        skipped: 0,
                        invalid: 0,
                        over_budget: 0,
                        passed: 0,
                        calls: 0,
                        cache_hits: 0,
                        tokens: 0,
                        cost_eur: 0.0,
                        agreement_alpha: None,
                        split_trials: Vec::new(),
                    };
                    (report, [vec![0.0; 2], vec![0.0; 2]])
                })
                .collect(),
            ..Accumulator::default()
        }
    }

    /// Trials tallied so far.
    pub fn trials(&self) -> usize {
        self.n
    }

    fn judge(&mut self, t: &TrialSummary) {
        for (r, coincidences) in &mut self.judges {
            for b in t.judges.iter().filter(|b| b.judge == r.header.name) {
                match b.status {
                    JudgeStatus::Scored => r.scored += 1,
                    JudgeStatus::Skipped => r.skipped += 1,
                    JudgeStatus::Invalid => r.invalid += 1,
                }
                r.over_budget += u64::from(b.over_budget);
                r.passed += u64::from(b.passed == Some(true));
                r.calls += u64::from(b.calls);
                r.cache_hits += u64::from(b.cached);
                r.tokens += b.tokens;
                r.cost_eur += b.cost_eur;
                // A unit per judged trial, a rater per model and sample.
                if b.status == JudgeStatus::Scored && !b.votes.is_empty() {
                    let unit: Vec<Option<usize>> =
                        b.votes.iter().map(|v| v.map(usize::from)).collect();
                    gauntlet_stats::agreement::add_coincidences(coincidences, &unit);
                }
                if b.split {
                    r.split_trials.push(trial_item(&t.case_id, t.epoch));
                }
            }
        }
    }

    /// Tallies one trial.
    pub fn push(&mut self, t: &TrialSummary) {
        self.n += 1;
        match t.status {
            TrialStatus::Passed => self.passed += 1,
            TrialStatus::Failed => self.failed += 1,
            TrialStatus::Error => self.errors += 1,
        }
        let succeeded = task_succeeded(t);
        self.successes += usize::from(succeeded);
        self.safe += usize::from(!critical(t));
        self.traced += usize::from(gauntlet_model::is_trace_id(&t.trace_id));
        self.cost += t.cost_eur;
        self.user_cost += t.user_cost_eur;
        let mut selection = None;
        let mut reward = None;
        let mut attributed = [false; gauntlet_eval::attribution::KINDS.len()];
        for s in &t.scores {
            self.critical += usize::from(s.severity == Severity::Critical && !s.passed);
            if let Some(name) = SUMMED.iter().find(|n| **n == s.name) {
                *self.sums.entry(name).or_default() += s.value;
            }
            if s.name == names::ERROR_ATTRIBUTION
                && s.value >= 0.0
                && (s.value as usize) < attributed.len()
                && s.value.fract() == 0.0
            {
                attributed[s.value as usize] = true;
            }
            if s.name == names::TOOL_SELECTION_ACCURACY && selection.is_none() {
                selection = Some(s);
            }
            if s.name == names::BENCHMARK_REWARD && reward.is_none() {
                reward = Some(s);
            }
            match self.evaluators.get_mut(&s.name) {
                Some(e) => {
                    e.0 += 1;
                    e.1 += u32::from(s.passed);
                    e.2 += s.score;
                    e.3 += s.value;
                }
                None => {
                    self.evaluators
                        .insert(s.name.clone(), (1, u32::from(s.passed), s.score, s.value));
                }
            }
        }
        for (count, hit) in self.attribution.iter_mut().zip(attributed) {
            *count += usize::from(hit);
        }
        let values = [
            f64::from(t.tool_calls),
            f64::from(t.steps),
            t.tokens as f64,
            t.cost_eur,
            t.duration_ms,
        ];
        let next = self.cases.len();
        let at = match self.case_at.get(t.case_id.as_str()) {
            Some(&i) => i,
            None => {
                self.case_at.insert(t.case_id.clone(), next);
                self.cases.push(CaseTally {
                    id: t.case_id.clone(),
                    ..CaseTally::default()
                });
                next
            }
        };
        let case = &mut self.cases[at];
        case.trials += 1;
        case.passed += u64::from(t.status == TrialStatus::Passed);
        for (((sum, total), q), v) in case
            .sums
            .iter_mut()
            .zip(self.totals.iter_mut())
            .zip(self.distributions.iter_mut())
            .zip(values)
        {
            *sum += v;
            *total += v;
            q.push(v);
        }
        if let Some(r) = reward {
            case.rewarded.0 += 1;
            case.rewarded.1 += u64::from(r.value >= 1.0);
            if self.benchmark.is_none() {
                self.benchmark = Some(
                    r.details["benchmark"]
                        .as_str()
                        .unwrap_or("benchmark")
                        .to_owned(),
                );
            }
        }
        self.segment(t, selection, succeeded);
        self.attacks.push(t);
        if let Some(s) = t.scores.iter().find(|s| s.name == names::FIRST_WRONG_STEP) {
            *self
                .first_wrong
                .entry(t.case_id.clone())
                .or_default()
                .entry(s.value as u32)
                .or_default() += 1;
        }
        if !self.judges.is_empty() {
            self.judge(t);
        }
    }

    fn segment(&mut self, t: &TrialSummary, selection: Option<&Score>, succeeded: bool) {
        let detail = |k: &str| {
            selection
                .and_then(|s| s.details.get(k))
                .and_then(serde_json::Value::as_f64)
        };
        let tool = (detail("precision"), detail("recall"));
        let faults = t.faults.iter().map(|f| {
            serde_json::to_value(f)
                .ok()
                .and_then(|v| v.as_str().map(str::to_owned))
                .unwrap_or_default()
        });
        let keys = t
            .tags
            .iter()
            .map(|g| ("tag", Cow::Borrowed(g.as_str())))
            .chain(
                t.difficulty
                    .iter()
                    .map(|d| ("difficulty", Cow::Borrowed(d.as_str()))),
            )
            .chain(t.tools.iter().map(|d| ("tool", Cow::Borrowed(d.as_str()))))
            .chain(faults.map(|f| ("fault", Cow::Owned(f))));
        for (kind, value) in keys {
            let values = self.segments.entry(kind).or_default();
            // A segment seen before is found by reference; only a new one stores its name.
            if !values.contains_key(value.as_ref()) {
                values.insert(value.to_string(), SegmentTally::default());
            }
            let Some(s) = values.get_mut(value.as_ref()) else {
                continue;
            };
            s.n += 1;
            s.passed += u32::from(t.status == TrialStatus::Passed);
            s.ok += u32::from(succeeded);
            if let (Some(p), Some(r)) = tool {
                s.precision.0 += p;
                s.precision.1 += 1;
                s.recall.0 += r;
                s.recall.1 += 1;
            }
        }
    }

    /// The run's metrics. `seed` seeds the bootstrap; `order`, when given, is the cases' order
    /// for it (the suite's), so a file scored in any order gives the live run's intervals;
    /// otherwise cases are taken in the order they were first seen.
    pub fn finish(mut self, seed: u64, order: Option<&HashMap<&str, usize>>) -> Aggregate {
        if let Some(order) = order {
            // A stable sort: cases the order does not know keep their first-seen order, last.
            self.cases
                .sort_by_key(|c| order.get(c.id.as_str()).copied().unwrap_or(usize::MAX));
        }
        let n = self.n;
        let sum = |name: &str| self.sums.get(name).copied().unwrap_or(0.0);
        let mut m = BTreeMap::new();
        let mut intervals = BTreeMap::new();
        m.insert(names::metric::TRIALS.to_owned(), n as f64);
        m.insert(names::metric::PASSED.to_owned(), self.passed as f64);
        m.insert(names::metric::FAILED.to_owned(), self.failed as f64);
        m.insert(names::metric::ERRORS.to_owned(), self.errors as f64);
        for (name, k) in [
            (names::metric::PASS_RATE, self.passed),
            (names::metric::TASK_SUCCESS_RATE, self.successes),
            (names::metric::ERROR_RATE, self.errors),
            (names::metric::SAFE_TRIAL_RATE, self.safe),
        ] {
            m.insert(name.to_owned(), rate(k, n));
            intervals.insert(name.to_owned(), wilson(k as u64, n as u64, CONFIDENCE));
        }
        m.insert(
            names::metric::CRITICAL_POLICY_VIOLATIONS.to_owned(),
            self.critical as f64,
        );
        self.attacks.finish(&mut m, &mut intervals);
        for name in [
            names::FORBIDDEN_TOOL_USED,
            names::DUPLICATE_SIDE_EFFECTS,
            names::CROSS_TENANT_ACCESS,
        ] {
            m.insert(name.to_owned(), sum(name));
        }
        let injected = sum(names::FAULTS_INJECTED);
        m.insert(names::FAULTS_INJECTED.to_owned(), injected);
        for (kind, count) in gauntlet_eval::attribution::KINDS
            .iter()
            .zip(self.attribution)
        {
            m.insert(format!("failures_{kind}"), count as f64);
        }
        m.insert(
            names::metric::RETRIES_PER_FAULT.to_owned(),
            if injected > 0.0 {
                sum(names::FAULT_RETRIES) / injected
            } else {
                f64::NAN
            },
        );
        m.insert(
            names::metric::TIME_LOST_TO_FAULTS_MS.to_owned(),
            sum(names::FAULT_TIME_LOST_MS),
        );
        m.insert(
            names::metric::TRACE_ID_COVERAGE.to_owned(),
            rate(self.traced, n),
        );
        m.insert(names::metric::USER_COST_EUR.to_owned(), self.user_cost);
        m.insert(
            names::metric::COST_PER_SUCCESS_EUR.to_owned(),
            if self.successes == 0 {
                f64::NAN
            } else {
                self.cost / self.successes as f64
            },
        );
        let distributions = std::mem::take(&mut self.distributions);
        for (i, (d, q)) in DISTRIBUTIONS.iter().zip(distributions).enumerate() {
            let (mean, p50, p95) = if n == 0 {
                (f64::NAN, f64::NAN, f64::NAN)
            } else {
                let clusters: Vec<(f64, f64)> = self
                    .cases
                    .iter()
                    .map(|c| (c.sums[i], c.trials as f64))
                    .collect();
                intervals.insert(
                    format!("mean_{d}"),
                    cluster_mean(
                        &clusters,
                        RESAMPLES,
                        seed.wrapping_add(i as u64),
                        CONFIDENCE,
                    ),
                );
                let (p50, p95) = q.p50_p95();
                (self.totals[i] / n as f64, p50, p95)
            };
            m.insert(format!("mean_{d}"), mean);
            m.insert(format!("p50_{d}"), p50);
            m.insert(format!("p95_{d}"), p95);
        }

        let counts: Vec<(u64, u64)> = self.cases.iter().map(|c| (c.trials, c.passed)).collect();
        m.extend(pass_k_metrics(&counts));
        let mut flaky_cases: Vec<FlakyCase> = self
            .cases
            .iter()
            .filter(|c| c.passed > 0 && c.passed < c.trials)
            .map(|c| FlakyCase {
                case_id: c.id.clone(),
                passed: c.passed as u32,
                trials: c.trials as u32,
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

        let evaluators = std::mem::take(&mut self.evaluators)
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
        let benchmark = self.benchmark.take().map(|name| {
            let counts: Vec<(u64, u64)> = self
                .cases
                .iter()
                .filter(|c| c.rewarded.0 > 0)
                .map(|c| c.rewarded)
                .collect();
            gauntlet_model::BenchmarkHeadline {
                name,
                trials: counts.iter().map(|(n, _)| n).sum(),
                passed: counts.iter().map(|(_, c)| c).sum(),
                pass_k: pass_k_metrics(&counts),
            }
        });
        let judges = self
            .judges
            .into_iter()
            .map(|(mut r, coincidences)| {
                let alpha = gauntlet_stats::agreement::alpha_from_coincidences(
                    &coincidences,
                    &[0.0, 1.0],
                    gauntlet_model::labels::Level::Nominal,
                );
                r.agreement_alpha = alpha.is_finite().then_some(alpha);
                r
            })
            .collect();
        Aggregate {
            metrics: m,
            intervals,
            evaluators,
            segments: segments(std::mem::take(&mut self.segments)),
            flaky_cases,
            first_wrong_steps: std::mem::take(&mut self.first_wrong)
                .into_iter()
                .map(|(case, steps)| {
                    let steps = steps.into_iter().map(|(k, v)| (k.to_string(), v)).collect();
                    (case, steps)
                })
                .collect(),
            benchmark,
            judges,
        }
    }
}

fn segments(
    tallies: BTreeMap<&'static str, BTreeMap<String, SegmentTally>>,
) -> BTreeMap<String, BTreeMap<String, SegmentStats>> {
    tallies
        .into_iter()
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
            (kind.to_owned(), values)
        })
        .collect()
}
