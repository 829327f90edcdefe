//! Drift between two windows of trajectories: per metric, the two-sample test that fits it,
//! an effect size, and Benjamini–Hochberg across all tests.
//!
//! - rates (tool errors per call, trace pass rate, each evaluator's pass rate): the
//!   two-proportion z-test, or Fisher's exact test when an expected cell is under 5; effect:
//!   the difference of the rates (current − baseline);
//! - continuous values (trajectory length, cost, latency, tokens): Mann–Whitney U (normal
//!   approximation with tie and continuity corrections, as SciPy's `asymptotic` method; effect:
//!   rank-biserial correlation) and Kolmogorov–Smirnov (the asymptotic Kolmogorov
//!   distribution; effect: D);
//! - the tool mix: Pearson's chi-square on the tools × window table (effect: Cramér's V).
//!
//! The distributions come from `statrs`; the tests are checked against SciPy and statsmodels.
//!
//! A significant test drifts only when the change is also one users would care about
//! ([`Floors`], each settable on `gauntlet drift`): a rate that moved by at least 2 points, a
//! mean that moved by at least 10 % (latency also by at least 10 ms: sub-millisecond
//! latencies of scripted agents are the machine's noise), a tool mix with Cramér's V of at
//! least 0.1. Under the floor, the test says `below_floor` instead of drifting.

use std::collections::BTreeMap;

use serde::Serialize;
use statrs::distribution::{ChiSquared, ContinuousCDF, Discrete, Hypergeometric, Normal};

/// One window's observations.
#[derive(Debug, Clone, Default)]
pub struct Sample {
    /// Tool calls per trajectory.
    pub lengths: Vec<f64>,
    /// Trajectory durations in milliseconds.
    pub latencies: Vec<f64>,
    /// Cost per trajectory.
    pub costs: Vec<f64>,
    /// Tokens per trajectory.
    pub tokens: Vec<f64>,
    /// Tool calls, over all trajectories.
    pub calls: u64,
    /// Failed tool calls.
    pub call_errors: u64,
    /// Trajectories.
    pub trajectories: u64,
    /// Trajectories that passed.
    pub passed: u64,
    /// Per evaluator: (passed, judged).
    pub evaluators: BTreeMap<String, (u64, u64)>,
    /// Calls per tool.
    pub tools: BTreeMap<String, u64>,
}

/// What one trajectory contributes to a window.
#[derive(Debug, Clone, Default)]
pub struct Observation<'a> {
    /// The tools called, in order (their errors counted apart).
    pub tools: Vec<&'a str>,
    /// Failed tool calls.
    pub tool_errors: u64,
    /// Wall time in milliseconds.
    pub duration_ms: f64,
    /// Cost in euros.
    pub cost_eur: f64,
    /// Input and output tokens.
    pub tokens: u64,
    /// Whether the trajectory passed.
    pub passed: bool,
    /// Each evaluator's verdict: (name, passed).
    pub verdicts: Vec<(&'a str, bool)>,
}

impl Sample {
    /// Adds one trajectory.
    pub fn add(&mut self, o: Observation<'_>) {
        self.lengths.push(o.tools.len() as f64);
        self.latencies.push(o.duration_ms);
        self.costs.push(o.cost_eur);
        self.tokens.push(o.tokens as f64);
        self.calls += o.tools.len() as u64;
        self.call_errors += o.tool_errors;
        self.trajectories += 1;
        self.passed += u64::from(o.passed);
        for (name, passed) in o.verdicts {
            let e = self.evaluators.entry(name.to_owned()).or_default();
            e.0 += u64::from(passed);
            e.1 += 1;
        }
        for t in o.tools {
            *self.tools.entry(t.to_owned()).or_default() += 1;
        }
    }
}

/// One test of one metric.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct DriftTest {
    /// What is compared (`tool_error_rate`, `pass_rate:EVALUATOR`, `latency_ms`, ...).
    pub metric: String,
    /// `two_proportion_z`, `fisher_exact`, `mann_whitney_u`, `kolmogorov_smirnov`, `chi_square`.
    pub test: &'static str,
    /// The baseline's rate or mean (for the tool mix, the number of tools).
    pub baseline: f64,
    /// The current window's.
    pub current: f64,
    /// The test's statistic (z, U, D or chi-square; 0 for Fisher's exact test).
    pub statistic: f64,
    /// Two-sided p.
    pub p_value: f64,
    /// Benjamini–Hochberg across every test of the report.
    pub p_adjusted: f64,
    /// The effect size, of the kind below.
    pub effect: f64,
    /// `difference`, `rank_biserial`, `ks_d`, `cramers_v`.
    pub effect_kind: &'static str,
    /// Whether the adjusted p is under alpha and the change is at least the practical floor.
    pub drift: bool,
    /// Significant, but smaller than the practical floor ([`Floors`]): not a drift.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub below_floor: bool,
}

/// The smallest changes that count as drift, however significant a smaller one is.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Floors {
    /// A rate's absolute change (0.02: two percentage points).
    pub rate: f64,
    /// A continuous metric's mean, relative to the baseline's (0.1: ten per cent).
    pub relative: f64,
    /// Latency's mean, in milliseconds (10).
    pub latency_ms: f64,
    /// The tool mix's Cramér's V (0.1, a small effect).
    pub cramers_v: f64,
}

impl Default for Floors {
    fn default() -> Self {
        Floors {
            rate: 0.02,
            relative: 0.1,
            latency_ms: 10.0,
            cramers_v: 0.1,
        }
    }
}

impl Floors {
    /// Whether a test's change reaches the floor of its kind.
    fn reached(&self, t: &DriftTest) -> bool {
        let change = (t.current - t.baseline).abs();
        match t.effect_kind {
            "difference" => change >= self.rate,
            "cramers_v" => t.effect >= self.cramers_v,
            _ => {
                let relative = if t.baseline == 0.0 {
                    change > 0.0
                } else {
                    change / t.baseline.abs() >= self.relative
                };
                relative && (t.metric != "latency_ms" || change >= self.latency_ms)
            }
        }
    }
}

/// The report.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct DriftReport {
    /// The false-discovery rate the adjusted p-values are held to.
    pub alpha: f64,
    /// Trajectories in the baseline.
    pub baseline_trajectories: u64,
    /// Trajectories in the current window.
    pub current_trajectories: u64,
    /// Every test.
    pub tests: Vec<DriftTest>,
    /// Whether any test drifted.
    pub drift: bool,
}

fn normal_sf(z: f64) -> f64 {
    let n = Normal::standard();
    n.cdf(-z.abs()).min(1.0)
}

/// Two-sided p of the pooled two-proportion z-test, and z.
pub fn two_proportion_z(x1: u64, n1: u64, x2: u64, n2: u64) -> (f64, f64) {
    let (x1, n1, x2, n2) = (x1 as f64, n1 as f64, x2 as f64, n2 as f64);
    let p = (x1 + x2) / (n1 + n2);
    let se = (p * (1.0 - p) * (1.0 / n1 + 1.0 / n2)).sqrt();
    if se == 0.0 {
        return (0.0, 1.0);
    }
    let z = (x1 / n1 - x2 / n2) / se;
    (z, 2.0 * normal_sf(z))
}

/// Two-sided p of Fisher's exact test on `[[a, b], [c, d]]` (SciPy's definition: the tables at
/// most as likely as the observed one).
pub fn fisher_exact(a: u64, b: u64, c: u64, d: u64) -> f64 {
    let n = a + b + c + d;
    let (row1, col1) = (a + b, a + c);
    if n == 0 || row1 == 0 || col1 == 0 || row1 == n || col1 == n {
        return 1.0;
    }
    let h = Hypergeometric::new(n, col1, row1).expect("valid margins");
    let lo = row1.saturating_sub(n - col1);
    let hi = row1.min(col1);
    let observed = h.ln_pmf(a);
    let eps = 1e-7;
    let p: f64 = (lo..=hi)
        .map(|k| h.ln_pmf(k))
        .filter(|l| *l <= observed + eps)
        .map(f64::exp)
        .sum();
    p.min(1.0)
}

/// Average ranks (1-based) of the pooled values; the tie term Σ(t³ − t).
fn ranks(pooled: &[(f64, bool)]) -> (Vec<f64>, f64) {
    let mut order: Vec<usize> = (0..pooled.len()).collect();
    order.sort_by(|&i, &j| pooled[i].0.total_cmp(&pooled[j].0));
    let mut r = vec![0.0; pooled.len()];
    let mut ties = 0.0;
    let mut i = 0;
    while i < order.len() {
        let mut j = i;
        while j + 1 < order.len() && pooled[order[j + 1]].0 == pooled[order[i]].0 {
            j += 1;
        }
        let avg = (i + j) as f64 / 2.0 + 1.0;
        for &k in &order[i..=j] {
            r[k] = avg;
        }
        let t = (j - i + 1) as f64;
        ties += t * t * t - t;
        i = j + 1;
    }
    (r, ties)
}

/// Mann–Whitney U of `x` against `y`: (U of x, two-sided p, rank-biserial correlation).
pub fn mann_whitney_u(x: &[f64], y: &[f64]) -> (f64, f64, f64) {
    let (n1, n2) = (x.len() as f64, y.len() as f64);
    if x.is_empty() || y.is_empty() {
        return (0.0, 1.0, 0.0);
    }
    let pooled: Vec<(f64, bool)> = x
        .iter()
        .map(|v| (*v, true))
        .chain(y.iter().map(|v| (*v, false)))
        .collect();
    let (r, ties) = ranks(&pooled);
    let r1: f64 = r
        .iter()
        .zip(&pooled)
        .filter(|(_, p)| p.1)
        .map(|(r, _)| r)
        .sum();
    let u1 = r1 - n1 * (n1 + 1.0) / 2.0;
    let n = n1 + n2;
    let mu = n1 * n2 / 2.0;
    let var = n1 * n2 / 12.0 * ((n + 1.0) - ties / (n * (n - 1.0)));
    let u = u1.max(n1 * n2 - u1);
    let p = if var <= 0.0 {
        1.0
    } else {
        let z = (u - mu - 0.5) / var.sqrt();
        (2.0 * Normal::standard().sf(z)).min(1.0)
    };
    // Rank-biserial: positive when x tends to be larger.
    (u1, p, 2.0 * u1 / (n1 * n2) - 1.0)
}

/// The survival function of the Kolmogorov distribution (SciPy's `kstwobign.sf`).
fn kolmogorov_sf(t: f64) -> f64 {
    if t <= 0.0 {
        return 1.0;
    }
    if t < 1.0 {
        // The theta-function form converges fast for small t.
        let c = std::f64::consts::PI.powi(2) / (8.0 * t * t);
        let s: f64 = (1..=50)
            .map(|k| (-(((2 * k - 1) as f64).powi(2)) * c).exp())
            .sum();
        return (1.0 - (2.0 * std::f64::consts::PI).sqrt() / t * s).clamp(0.0, 1.0);
    }
    let s: f64 = (1..=100)
        .map(|k| {
            let k = k as f64;
            let sign = if k as u64 % 2 == 1 { 1.0 } else { -1.0 };
            sign * (-2.0 * k * k * t * t).exp()
        })
        .sum();
    (2.0 * s).clamp(0.0, 1.0)
}

/// Two-sample Kolmogorov–Smirnov: (D, asymptotic two-sided p).
pub fn kolmogorov_smirnov(x: &[f64], y: &[f64]) -> (f64, f64) {
    if x.is_empty() || y.is_empty() {
        return (0.0, 1.0);
    }
    let mut a = x.to_vec();
    let mut b = y.to_vec();
    a.sort_by(f64::total_cmp);
    b.sort_by(f64::total_cmp);
    let (n1, n2) = (a.len(), b.len());
    let (mut i, mut j, mut d) = (0, 0, 0.0f64);
    while i < n1 && j < n2 {
        let v = a[i].min(b[j]);
        while i < n1 && a[i] <= v {
            i += 1;
        }
        while j < n2 && b[j] <= v {
            j += 1;
        }
        d = d.max((i as f64 / n1 as f64 - j as f64 / n2 as f64).abs());
    }
    let en = (n1 * n2) as f64 / (n1 + n2) as f64;
    (d, kolmogorov_sf(d * en.sqrt()))
}

/// Pearson's chi-square on a 2 × k table of counts: (statistic, p, Cramér's V). Columns with
/// no count are left out.
pub fn chi_square(rows: [&[u64]; 2]) -> (f64, f64, f64) {
    let cols: Vec<(f64, f64)> = rows[0]
        .iter()
        .zip(rows[1])
        .map(|(a, b)| (*a as f64, *b as f64))
        .filter(|(a, b)| a + b > 0.0)
        .collect();
    let (r0, r1): (f64, f64) = cols.iter().fold((0.0, 0.0), |s, c| (s.0 + c.0, s.1 + c.1));
    let n = r0 + r1;
    if cols.len() < 2 || r0 == 0.0 || r1 == 0.0 {
        return (0.0, 1.0, 0.0);
    }
    let stat: f64 = cols
        .iter()
        .map(|(a, b)| {
            let t = a + b;
            let (e0, e1) = (r0 * t / n, r1 * t / n);
            (a - e0).powi(2) / e0 + (b - e1).powi(2) / e1
        })
        .sum();
    let df = (cols.len() - 1) as f64;
    let p = ChiSquared::new(df).expect("df > 0").sf(stat);
    (stat, p, (stat / n).sqrt())
}

/// Benjamini–Hochberg adjusted p-values, in the input's order.
pub fn benjamini_hochberg(p: &[f64]) -> Vec<f64> {
    let m = p.len();
    let mut order: Vec<usize> = (0..m).collect();
    order.sort_by(|&i, &j| p[i].total_cmp(&p[j]));
    let mut adjusted = vec![0.0; m];
    let mut running = 1.0f64;
    for (rank, &i) in order.iter().enumerate().rev() {
        running = running.min(p[i] * m as f64 / (rank + 1) as f64);
        adjusted[i] = running.min(1.0);
    }
    adjusted
}

fn mean(v: &[f64]) -> f64 {
    if v.is_empty() {
        0.0
    } else {
        v.iter().sum::<f64>() / v.len() as f64
    }
}

fn rate(x: u64, n: u64) -> f64 {
    if n == 0 { 0.0 } else { x as f64 / n as f64 }
}

/// A rate's test: z when every expected cell is at least 5, else Fisher.
fn proportion(metric: String, x1: u64, n1: u64, x2: u64, n2: u64) -> Option<DriftTest> {
    // A rate that is 0 or 1 in both windows tells nothing (and would only dilute the others).
    if n1 == 0 || n2 == 0 || x1 + x2 == 0 || x1 + x2 == n1 + n2 {
        return None;
    }
    let n = (n1 + n2) as f64;
    let x = (x1 + x2) as f64;
    let smallest = [x, n - x]
        .iter()
        .flat_map(|col| [col * n1 as f64 / n, col * n2 as f64 / n])
        .fold(f64::INFINITY, f64::min);
    let (test, statistic, p) = if smallest >= 5.0 {
        let (z, p) = two_proportion_z(x2, n2, x1, n1);
        ("two_proportion_z", z, p)
    } else {
        ("fisher_exact", 0.0, fisher_exact(x1, n1 - x1, x2, n2 - x2))
    };
    Some(DriftTest {
        metric,
        test,
        baseline: rate(x1, n1),
        current: rate(x2, n2),
        statistic,
        p_value: p,
        p_adjusted: p,
        effect: rate(x2, n2) - rate(x1, n1),
        effect_kind: "difference",
        drift: false,
        below_floor: false,
    })
}

fn continuous(metric: &str, a: &[f64], b: &[f64]) -> Vec<DriftTest> {
    if a.is_empty() || b.is_empty() {
        return Vec::new();
    }
    let (u, p, r) = mann_whitney_u(b, a);
    let (d, pk) = kolmogorov_smirnov(a, b);
    vec![
        DriftTest {
            metric: metric.to_owned(),
            test: "mann_whitney_u",
            baseline: mean(a),
            current: mean(b),
            statistic: u,
            p_value: p,
            p_adjusted: p,
            effect: r,
            effect_kind: "rank_biserial",
            drift: false,
            below_floor: false,
        },
        DriftTest {
            metric: metric.to_owned(),
            test: "kolmogorov_smirnov",
            baseline: mean(a),
            current: mean(b),
            statistic: d,
            p_value: pk,
            p_adjusted: pk,
            effect: d,
            effect_kind: "ks_d",
            drift: false,
            below_floor: false,
        },
    ]
}

/// Every test between the windows, adjusted together; drift where the adjusted p is under
/// `alpha` and the change reaches the default [`Floors`].
pub fn drift(baseline: &Sample, current: &Sample, alpha: f64) -> DriftReport {
    drift_with(baseline, current, alpha, &Floors::default())
}

/// [`drift`] with floors of the caller's.
pub fn drift_with(baseline: &Sample, current: &Sample, alpha: f64, floors: &Floors) -> DriftReport {
    let (a, b) = (baseline, current);
    let mut tests = Vec::new();
    tests.extend(proportion(
        "tool_error_rate".into(),
        a.call_errors,
        a.calls,
        b.call_errors,
        b.calls,
    ));
    tests.extend(proportion(
        "pass_rate".into(),
        a.passed,
        a.trajectories,
        b.passed,
        b.trajectories,
    ));
    for (name, (p1, n1)) in &a.evaluators {
        if let Some((p2, n2)) = b.evaluators.get(name) {
            tests.extend(proportion(format!("pass_rate:{name}"), *p1, *n1, *p2, *n2));
        }
    }
    tests.extend(continuous("trajectory_length", &a.lengths, &b.lengths));
    tests.extend(continuous("latency_ms", &a.latencies, &b.latencies));
    if a.costs.iter().chain(&b.costs).any(|c| *c != 0.0) {
        tests.extend(continuous("cost_eur", &a.costs, &b.costs));
    }
    if a.tokens.iter().chain(&b.tokens).any(|c| *c != 0.0) {
        tests.extend(continuous("tokens", &a.tokens, &b.tokens));
    }
    let tools: Vec<&String> = a.tools.keys().chain(b.tools.keys()).collect();
    let mut tools: Vec<&String> = tools;
    tools.sort();
    tools.dedup();
    if tools.len() >= 2 {
        let row = |s: &Sample| -> Vec<u64> {
            tools
                .iter()
                .map(|t| s.tools.get(*t).copied().unwrap_or(0))
                .collect()
        };
        let (ra, rb) = (row(a), row(b));
        let (stat, p, v) = chi_square([&ra, &rb]);
        if ra.iter().sum::<u64>() > 0 && rb.iter().sum::<u64>() > 0 {
            tests.push(DriftTest {
                metric: "tool_mix".into(),
                test: "chi_square",
                baseline: tools.len() as f64,
                current: tools.len() as f64,
                statistic: stat,
                p_value: p,
                p_adjusted: p,
                effect: v,
                effect_kind: "cramers_v",
                drift: false,
                below_floor: false,
            });
        }
    }
    let adjusted = benjamini_hochberg(&tests.iter().map(|t| t.p_value).collect::<Vec<_>>());
    for (t, p) in tests.iter_mut().zip(adjusted) {
        t.p_adjusted = p;
        let significant = p < alpha;
        let reached = floors.reached(t);
        t.drift = significant && reached;
        t.below_floor = significant && !reached;
    }
    DriftReport {
        alpha,
        baseline_trajectories: a.trajectories,
        current_trajectories: b.trajectories,
        drift: tests.iter().any(|t| t.drift),
        tests,
    }
}

#[cfg(test)]
mod tests {
    use rand::{RngExt, SeedableRng};

    use super::*;

    /// A window of `n` seeded trajectories of three calls, each failing with `error_rate`.
    pub(crate) fn window(seed: u64, n: usize, error_rate: f64) -> Sample {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        let mut s = Sample::default();
        for _ in 0..n {
            let calls = 3;
            let errors = (0..calls)
                .filter(|_| rng.random::<f64>() < error_rate)
                .count() as u64;
            s.calls += calls;
            s.call_errors += errors;
            s.trajectories += 1;
            s.passed += u64::from(errors == 0);
            s.lengths.push(calls as f64);
            s.latencies.push(800.0 + rng.random::<f64>() * 400.0);
            for t in ["get_order", "refund", "get_order"] {
                *s.tools.entry(t.to_owned()).or_default() += 1;
            }
        }
        s
    }

    #[test]
    fn a_tool_error_rate_from_two_to_six_percent_is_drift() {
        let report = drift(&window(1, 2000, 0.02), &window(2, 2000, 0.06), 0.01);
        let t = report
            .tests
            .iter()
            .find(|t| t.metric == "tool_error_rate")
            .unwrap();
        assert!(t.drift && t.p_value < 0.01, "{t:?}");
        assert!((t.effect - 0.04).abs() < 0.01, "{t:?}");
        assert!(report.drift);
    }

    /// Two windows of one distribution, 100 seeded repetitions: the false-alarm rate.
    #[test]
    fn one_distribution_twice_is_rarely_drift() {
        let alarms = (0..100)
            .filter(|i| {
                drift(
                    &window(2 * i, 2000, 0.02),
                    &window(2 * i + 1, 2000, 0.02),
                    0.01,
                )
                .drift
            })
            .count();
        eprintln!("false alarms: {alarms} in 100 repetitions");
        assert!(alarms <= 5, "{alarms} false alarms in 100");
    }

    #[test]
    fn benjamini_hochberg_matches_its_definition() {
        let p = [0.01, 0.04, 0.03, 0.20];
        let adj = benjamini_hochberg(&p);
        // Sorted: 0.01*4/1 = 0.04, 0.03*4/2 = 0.06, 0.04*4/3 = 0.0533 -> min from the top.
        assert!((adj[0] - 0.04).abs() < 1e-12);
        assert!((adj[2] - 0.0533333333).abs() < 1e-9);
        assert!((adj[1] - 0.0533333333).abs() < 1e-9);
        assert!((adj[3] - 0.20).abs() < 1e-12);
    }
}
