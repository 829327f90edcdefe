//! Paired comparison of two runs: McNemar's exact test on pass/fail, paired bootstrap intervals
//! of each quantity's difference, effect sizes, per-segment deltas, the pairs that flipped and
//! why, critical violations new in B, the suite's noise floor, and a verdict in words.

use gauntlet_model::names;
use std::collections::{BTreeMap, HashMap};

use gauntlet_model::compare::{
    Comparison, CriticalViolations, Direction, Flip, MetricDelta, NoiseFloor, PassComparison,
    SegmentDelta,
};
use gauntlet_model::{RunResults, Severity, TrialStatus, TrialSummary};

use gauntlet_model::Interval;
use gauntlet_stats::{
    CONFIDENCE, RESAMPLES, cluster_mean, cohens_dz, cohens_h, mcnemar_exact, paired_bootstrap_diff,
    pairs_needed,
};

/// Significance level of the verdict.
pub const ALPHA: f64 = 0.05;

fn quantity(t: &TrialSummary, name: &str) -> f64 {
    match name {
        names::TASK_SUCCESS => f64::from(u8::from(
            t.status != TrialStatus::Error
                && t.scores
                    .iter()
                    .any(|s| s.name == names::TASK_SUCCESS && s.passed),
        )),
        "tool_calls" => f64::from(t.tool_calls),
        "steps" => f64::from(t.steps),
        "tokens" => t.tokens as f64,
        "cost_eur" => t.cost_eur,
        _ => t.duration_ms,
    }
}

const QUANTITIES: [&str; 6] = [
    names::TASK_SUCCESS,
    "tool_calls",
    "steps",
    "tokens",
    "cost_eur",
    "latency_ms",
];

fn points(x: f64) -> String {
    format!("{:.0}", x * 100.0)
}

/// Up to this many pairs, each quantity's interval is the paired bootstrap over the pairs (one
/// row of 7 pairs of numbers kept per pair); past it, the rows are dropped and the intervals
/// resample the cases from their per-case sums ([`cluster_mean`], as a run's own metrics do),
/// so memory holds the cases, not the trials.
pub const MAX_PAIR_BOOTSTRAP: usize = 10_000;

/// What a comparison keeps of one trial while it waits for its pair: no state, no scores.
#[derive(Debug, Clone)]
struct Side {
    index: usize,
    case_id: String,
    epoch: u32,
    status: TrialStatus,
    quantities: [f64; 6],
    critical: u64,
    tags: Vec<String>,
    difficulty: Option<String>,
    tools: Vec<String>,
    /// Why it did not pass (kept for B's side, where a flip names them).
    reasons: Vec<String>,
}

impl Side {
    fn of(index: usize, t: &TrialSummary, with_reasons: bool) -> Side {
        Side {
            index,
            case_id: t.case_id.clone(),
            epoch: t.epoch,
            status: t.status,
            quantities: QUANTITIES.map(|q| quantity(t, q)),
            critical: critical_count(t),
            tags: t.tags.clone(),
            difficulty: t.difficulty.clone(),
            tools: t.tools.clone(),
            reasons: if with_reasons { reasons(t) } else { Vec::new() },
        }
    }

    fn passed(&self) -> f64 {
        f64::from(u8::from(self.status == TrialStatus::Passed))
    }
}

/// One pair's numbers, in A's order once sorted: pass and the quantities, A's then B's.
#[derive(Debug, Clone, Copy)]
struct Row {
    a_index: usize,
    values: [(f64, f64); 7],
}

/// A case's tallies over its pairs.
#[derive(Debug, Clone, Default)]
struct CaseTally {
    first_a_index: usize,
    pairs: usize,
    a_passes: usize,
    b_passes: usize,
    a_critical: bool,
    b_critical: bool,
    /// Σ (B − A) of pass and each quantity, for the per-case bootstrap.
    diffs: [f64; 7],
}

/// A segment's tallies over its pairs.
#[derive(Debug, Clone, Default)]
struct SegmentTally {
    pairs: usize,
    a_passes: usize,
    b_passes: usize,
    a_only: u64,
    b_only: u64,
}

/// Running mean and variance (Welford) of a pair difference, for Cohen's d_z past the rows.
#[derive(Debug, Clone, Copy, Default)]
struct Moments {
    n: f64,
    mean: f64,
    m2: f64,
}

impl Moments {
    fn push(&mut self, x: f64) {
        self.n += 1.0;
        let d = x - self.mean;
        self.mean += d / self.n;
        self.m2 += d * (x - self.mean);
    }

    fn cohens_dz(&self) -> f64 {
        if self.n < 2.0 {
            return f64::NAN;
        }
        let var = self.m2 / (self.n - 1.0);
        if var <= 0.0 {
            return if self.mean == 0.0 {
                0.0
            } else {
                f64::INFINITY.copysign(self.mean)
            };
        }
        self.mean / var.sqrt()
    }
}

/// Two runs compared as their trials stream by, one at a time, in any order (each side's
/// trials in its own plan order): a trial waits only until its pair from the other run arrives,
/// so two runs in the same plan order are paired as a merge join, holding a few trials. What is
/// kept: the flips, per-case and per-segment tallies, per-case sums for the intervals (and each
/// pair's numbers up to [`MAX_PAIR_BOOTSTRAP`] pairs). [`compare`] is this over two runs held
/// whole, with the same result.
#[derive(Debug)]
pub struct Comparer {
    a_seen: usize,
    b_seen: usize,
    waiting_a: HashMap<(String, u32), Side>,
    waiting_b: HashMap<(String, u32), Side>,
    pairs: usize,
    a_only: u64,
    b_only: u64,
    sums: [(f64, f64); 7],
    moments: [Moments; 7],
    rows: Option<Vec<Row>>,
    cases: HashMap<String, CaseTally>,
    segments: BTreeMap<(String, String), SegmentTally>,
    flips: Vec<(u8, usize, Flip)>,
    critical: (u64, u64),
}

impl Default for Comparer {
    fn default() -> Self {
        Self::new()
    }
}

impl Comparer {
    /// An empty comparison.
    pub fn new() -> Comparer {
        Comparer {
            a_seen: 0,
            b_seen: 0,
            waiting_a: HashMap::new(),
            waiting_b: HashMap::new(),
            pairs: 0,
            a_only: 0,
            b_only: 0,
            sums: [(0.0, 0.0); 7],
            moments: [Moments::default(); 7],
            rows: Some(Vec::new()),
            cases: HashMap::new(),
            segments: BTreeMap::new(),
            flips: Vec::new(),
            critical: (0, 0),
        }
    }

    /// The next trial of run A (in its plan order).
    pub fn push_a(&mut self, t: &TrialSummary) {
        let side = Side::of(self.a_seen, t, false);
        self.a_seen += 1;
        let key = (side.case_id.clone(), side.epoch);
        match self.waiting_b.remove(&key) {
            Some(b) => self.pair(side, b),
            None => {
                self.waiting_a.entry(key).or_insert(side);
            }
        }
    }

    /// The next trial of run B (in its plan order).
    pub fn push_b(&mut self, t: &TrialSummary) {
        let side = Side::of(self.b_seen, t, t.status != TrialStatus::Passed);
        self.b_seen += 1;
        let key = (side.case_id.clone(), side.epoch);
        match self.waiting_a.remove(&key) {
            Some(a) => self.pair(a, side),
            None => {
                self.waiting_b.entry(key).or_insert(side);
            }
        }
    }

    fn pair(&mut self, x: Side, y: Side) {
        self.pairs += 1;
        let (pa, pb) = (x.passed(), y.passed());
        match (pa > 0.0, pb > 0.0) {
            (true, false) => self.a_only += 1,
            (false, true) => self.b_only += 1,
            _ => {}
        }
        let mut values = [(pa, pb); 7];
        for (i, v) in values.iter_mut().enumerate().skip(1) {
            *v = (x.quantities[i - 1], y.quantities[i - 1]);
        }
        for (i, (va, vb)) in values.iter().enumerate() {
            self.sums[i].0 += va;
            self.sums[i].1 += vb;
            self.moments[i].push(vb - va);
        }
        if let Some(rows) = &mut self.rows {
            if rows.len() < MAX_PAIR_BOOTSTRAP {
                rows.push(Row {
                    a_index: x.index,
                    values,
                });
            } else {
                self.rows = None;
            }
        }
        let case = self
            .cases
            .entry(x.case_id.clone())
            .or_insert_with(|| CaseTally {
                first_a_index: x.index,
                ..Default::default()
            });
        case.first_a_index = case.first_a_index.min(x.index);
        case.pairs += 1;
        case.a_passes += usize::from(pa > 0.0);
        case.b_passes += usize::from(pb > 0.0);
        case.a_critical |= x.critical > 0;
        case.b_critical |= y.critical > 0;
        for (d, (va, vb)) in case.diffs.iter_mut().zip(values) {
            *d += vb - va;
        }
        self.critical.0 += x.critical;
        self.critical.1 += y.critical;

        let mut keys: Vec<(String, String)> = x
            .tags
            .iter()
            .map(|t| ("tag".to_owned(), t.clone()))
            .collect();
        keys.extend(
            x.difficulty
                .iter()
                .map(|d| ("difficulty".to_owned(), d.clone())),
        );
        let mut tools: Vec<&String> = x.tools.iter().chain(&y.tools).collect();
        tools.sort();
        tools.dedup();
        keys.extend(tools.into_iter().map(|t| ("tool".to_owned(), t.clone())));
        for k in keys {
            let s = self.segments.entry(k).or_default();
            s.pairs += 1;
            s.a_passes += usize::from(pa > 0.0);
            s.b_passes += usize::from(pb > 0.0);
            match (pa > 0.0, pb > 0.0) {
                (true, false) => s.a_only += 1,
                (false, true) => s.b_only += 1,
                _ => {}
            }
        }

        if x.status != y.status || (y.critical > 0 && x.critical == 0) {
            let order = match (
                x.status == TrialStatus::Passed,
                y.status == TrialStatus::Passed,
            ) {
                (true, false) => 0,
                (false, true) => 2,
                _ => 1,
            };
            self.flips.push((
                order,
                x.index,
                Flip {
                    case_id: x.case_id,
                    epoch: x.epoch,
                    a: x.status,
                    b: y.status,
                    reasons: y.reasons,
                },
            ));
        }
    }

    /// The comparison of B (`b`, its header) against A, once both runs' trials are pushed.
    /// `seed` seeds the bootstrap.
    pub fn finish(self, a: &RunResults, b: &RunResults, seed: u64) -> Comparison {
        let mut only_a: Vec<Side> = self.waiting_a.into_values().collect();
        only_a.sort_by_key(|s| s.index);
        let mut only_b: Vec<Side> = self.waiting_b.into_values().collect();
        only_b.sort_by_key(|s| s.index);
        let only_in_a: Vec<String> = only_a
            .iter()
            .map(|t| format!("{}#{}", t.case_id, t.epoch))
            .collect();
        let only_in_b: Vec<String> = only_b
            .iter()
            .map(|t| format!("{}#{}", t.case_id, t.epoch))
            .collect();
        let n = self.pairs;
        let mut cases: Vec<(String, CaseTally)> = self.cases.into_iter().collect();
        cases.sort_by_key(|(_, c)| c.first_a_index);
        let rows = self.rows.map(|mut rows| {
            rows.sort_by_key(|r| r.a_index);
            rows
        });
        let mean = |v: &[f64]| {
            if v.is_empty() {
                f64::NAN
            } else {
                v.iter().sum::<f64>() / v.len() as f64
            }
        };
        // Each quantity: A's mean, B's mean, the interval of B − A, Cohen's d_z.
        let quantity = |i: usize, seed: u64| -> (f64, f64, Interval, f64) {
            match &rows {
                Some(rows) => {
                    let x: Vec<f64> = rows.iter().map(|r| r.values[i].0).collect();
                    let y: Vec<f64> = rows.iter().map(|r| r.values[i].1).collect();
                    (
                        mean(&x),
                        mean(&y),
                        paired_bootstrap_diff(&x, &y, RESAMPLES, seed, CONFIDENCE),
                        cohens_dz(&x, &y),
                    )
                }
                None => {
                    let clusters: Vec<(f64, f64)> = cases
                        .iter()
                        .map(|(_, c)| (c.diffs[i], c.pairs as f64))
                        .collect();
                    (
                        self.sums[i].0 / n as f64,
                        self.sums[i].1 / n as f64,
                        cluster_mean(&clusters, RESAMPLES, seed, CONFIDENCE),
                        self.moments[i].cohens_dz(),
                    )
                }
            }
        };
        let (a_only, b_only) = (self.a_only, self.b_only);
        let p_value = mcnemar_exact(a_only, b_only);
        let (a_rate, b_rate, interval, _) = quantity(0, seed);
        let discordant_share = if n == 0 {
            0.0
        } else {
            (a_only + b_only) as f64 / n as f64
        };
        let pass = PassComparison {
            a_rate,
            b_rate,
            diff: b_rate - a_rate,
            interval,
            a_only,
            b_only,
            p_value,
            cohens_h: cohens_h(a_rate, b_rate),
            pairs_for_5_points: pairs_needed(discordant_share, 0.05, ALPHA, 0.8).ceil(),
        };

        let metrics = QUANTITIES
            .iter()
            .enumerate()
            .map(|(i, name)| {
                let (a_mean, b_mean, interval, effect_size) =
                    quantity(i + 1, seed.wrapping_add(1 + i as u64));
                MetricDelta {
                    name: (*name).to_owned(),
                    a_mean,
                    b_mean,
                    diff: b_mean - a_mean,
                    interval,
                    effect_size,
                }
            })
            .collect();

        let mut segments: Vec<SegmentDelta> = self
            .segments
            .into_iter()
            .map(|((kind, value), s)| {
                let ar = s.a_passes as f64 / s.pairs as f64;
                let br = s.b_passes as f64 / s.pairs as f64;
                SegmentDelta {
                    kind,
                    value,
                    pairs: s.pairs,
                    a_rate: ar,
                    b_rate: br,
                    diff: br - ar,
                    p_value: mcnemar_exact(s.a_only, s.b_only),
                }
            })
            .collect();
        segments.sort_by(|x, y| {
            x.diff
                .total_cmp(&y.diff)
                .then(x.kind.cmp(&y.kind))
                .then(x.value.cmp(&y.value))
        });

        let mut flips = self.flips;
        flips.sort_by_key(|(order, index, _)| (*order, *index));
        let flips: Vec<Flip> = flips.into_iter().map(|(_, _, f)| f).collect();
        let critical_violations = CriticalViolations {
            a: self.critical.0,
            b: self.critical.1,
            new_in_b: cases
                .iter()
                .filter(|(_, c)| !c.a_critical && c.b_critical)
                .map(|(id, _)| id.clone())
                .collect(),
        };
        let noise_floor = noise_floor(&cases, n);
        let worse = cases
            .iter()
            .filter(|(_, c)| c.b_passes < c.a_passes)
            .count();
        let better = cases
            .iter()
            .filter(|(_, c)| c.b_passes > c.a_passes)
            .count();
        let moved = Moved {
            worse,
            better,
            cases: cases.len(),
        };
        conclude(
            a,
            b,
            Concluded {
                n,
                only_in_a,
                only_in_b,
                pass,
                metrics,
                segments,
                flips,
                critical_violations,
                noise_floor,
                moved,
                discordant_share,
            },
        )
    }
}

/// Cases whose passes over their paired epochs went down, went up, and all cases.
struct Moved {
    worse: usize,
    better: usize,
    cases: usize,
}

/// What the trials gave, before the verdict is put in words.
struct Concluded {
    n: usize,
    only_in_a: Vec<String>,
    only_in_b: Vec<String>,
    pass: PassComparison,
    metrics: Vec<MetricDelta>,
    segments: Vec<SegmentDelta>,
    flips: Vec<Flip>,
    critical_violations: CriticalViolations,
    noise_floor: NoiseFloor,
    moved: Moved,
    discordant_share: f64,
}

/// Compares run B against run A. `seed` seeds the bootstrap. Both runs' trial summaries are
/// read from memory; [`Comparer`] takes them one at a time.
pub fn compare(a: &RunResults, b: &RunResults, seed: u64) -> Comparison {
    let mut c = Comparer::new();
    for t in &a.trials {
        c.push_a(t);
    }
    for t in &b.trials {
        c.push_b(t);
    }
    c.finish(a, b, seed)
}

/// Compares run B against run A as their trial summaries stream by (`a` and `b` are the runs
/// without their trials, `a_trials` and `b_trials` their summaries in plan order), walking both
/// together: runs in the same order are paired holding a few trials at a time. The first error
/// of either stream stops it.
pub fn compare_streams<E>(
    a: &RunResults,
    b: &RunResults,
    a_trials: impl IntoIterator<Item = Result<TrialSummary, E>>,
    b_trials: impl IntoIterator<Item = Result<TrialSummary, E>>,
    seed: u64,
) -> Result<Comparison, E> {
    let mut c = Comparer::new();
    let (mut xs, mut ys) = (a_trials.into_iter(), b_trials.into_iter());
    loop {
        let x = xs.next().transpose()?;
        let y = ys.next().transpose()?;
        if x.is_none() && y.is_none() {
            break;
        }
        if let Some(x) = &x {
            c.push_a(x);
        }
        if let Some(y) = &y {
            c.push_b(y);
        }
    }
    Ok(c.finish(a, b, seed))
}

fn conclude(a: &RunResults, b: &RunResults, r: Concluded) -> Comparison {
    let Concluded {
        n,
        only_in_a,
        only_in_b,
        pass,
        metrics,
        segments,
        flips,
        critical_violations,
        noise_floor,
        moved: Moved {
            worse,
            better,
            cases,
        },
        discordant_share,
    } = r;
    let (a_only, b_only, p_value) = (pass.a_only, pass.b_only, pass.p_value);
    let (va, vb) = (&a.header.versions, &b.header.versions);
    let mut changed = Vec::new();
    if va.harness != vb.harness {
        changed.push(format!("harness ({} → {})", va.harness, vb.harness));
    }
    if a.header.agent != b.header.agent || va.agent != vb.agent {
        changed.push(format!("agent ({} → {})", a.header.agent, b.header.agent));
    }
    let worlds: Vec<&String> = va
        .worlds
        .keys()
        .chain(vb.worlds.keys())
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    let changed_worlds: Vec<&str> = worlds
        .into_iter()
        .filter(|w| va.worlds.get(*w) != vb.worlds.get(*w))
        .map(String::as_str)
        .collect();
    if !changed_worlds.is_empty() {
        changed.push(format!("worlds ({})", changed_worlds.join(", ")));
    }
    if va.dataset != vb.dataset {
        changed.push("dataset".to_owned());
    }
    if va.config != vb.config {
        changed.push("suite configuration".to_owned());
    }

    let mut warnings = Vec::new();
    if changed.len() > 1 {
        warnings.push(format!(
            "{} things changed at once ({}): a difference cannot be attributed to one of them",
            changed.len(),
            changed.join(", ")
        ));
    }
    if !only_in_a.is_empty() || !only_in_b.is_empty() {
        warnings.push(format!(
            "{} trial(s) only in A and {} only in B are not compared",
            only_in_a.len(),
            only_in_b.len()
        ));
    }
    if n == 0 {
        warnings.push("the runs share no (case, epoch) pair: nothing to compare".to_owned());
    }

    let significant = n > 0 && p_value < ALPHA;
    let direction = match (significant, pass.diff.total_cmp(&0.0)) {
        (true, std::cmp::Ordering::Greater) => Direction::Better,
        (true, std::cmp::Ordering::Less) => Direction::Worse,
        _ => Direction::NoDifference,
    };
    let moved = format!("{worse} of {cases} cases got worse, {better} better");
    let ci = format!(
        "[{}, {}]",
        points(pass.interval.lower),
        points(pass.interval.upper)
    );
    let mut verdict = match direction {
        Direction::Better | Direction::Worse => {
            let word = if direction == Direction::Better {
                "better"
            } else {
                "worse"
            };
            let mut v = format!(
                "B is {word} by {} points {ci}, p={:.3} (McNemar exact, {n} pairs): {moved}",
                points(pass.diff.abs()),
                p_value
            );
            let hurt: Vec<String> = segments
                .iter()
                .filter(|s| {
                    (direction == Direction::Worse && s.diff < 0.0)
                        || (direction == Direction::Better && s.diff > 0.0)
                })
                .take(3)
                .map(|s| {
                    format!(
                        "{} {} ({:+} points)",
                        s.kind,
                        s.value,
                        (s.diff * 100.0).round()
                    )
                })
                .collect();
            if !hurt.is_empty() {
                v.push_str(&format!("; mostly in {}", hurt.join(", ")));
            }
            v
        }
        Direction::NoDifference if a_only + b_only == 0 => format!(
            "no difference: no pair flipped ({n} pairs), B − A = {} points",
            points(pass.diff)
        ),
        Direction::NoDifference => {
            let mut v = format!(
                "B − A = {} points {ci}: {moved}; with {n} pairs chance cannot be ruled out (McNemar p = {})",
                points(pass.diff),
                short(p_value)
            );
            // Only a difference there is can be settled; the epochs are for one this size.
            if pass.diff != 0.0 && cases > 0 {
                let needed = pairs_needed(discordant_share, pass.diff.abs(), ALPHA, 0.8);
                let epochs = (needed / cases as f64).ceil().max(2.0);
                v.push_str(&format!(
                    "; about {epochs} epochs would settle a difference this size"
                ));
            }
            v
        }
    };
    if !critical_violations.new_in_b.is_empty() {
        verdict.push_str(&format!(
            "; B has critical violations on {} case(s) where A had none ({}): a regression whatever p says",
            critical_violations.new_in_b.len(),
            critical_violations.new_in_b.join(", ")
        ));
    }
    let regression = direction == Direction::Worse || !critical_violations.new_in_b.is_empty();
    Comparison {
        run_a: a.header.run_id.clone(),
        run_b: b.header.run_id.clone(),
        pairs: n,
        only_in_a,
        only_in_b,
        pass,
        metrics,
        segments,
        changed,
        warnings,
        direction,
        flips,
        critical_violations,
        noise_floor,
        regression,
        verdict,
        pairwise: None,
    }
}

/// A p-value as a person reads it: two digits, three below 0.01.
fn short(p: f64) -> String {
    if p < 0.01 {
        format!("{p:.3}")
    } else {
        format!("{p:.2}")
    }
}

fn critical_count(t: &TrialSummary) -> u64 {
    t.scores
        .iter()
        .filter(|s| s.severity == Severity::Critical && !s.passed)
        .count() as u64
}

/// Why a trial did not pass: its harness error, or its failing scores, critical first.
fn reasons(t: &TrialSummary) -> Vec<String> {
    if t.status == TrialStatus::Passed {
        return Vec::new();
    }
    let mut out: Vec<String> = t
        .error
        .iter()
        .map(|e| format!("harness error: {e}"))
        .collect();
    let mut failing: Vec<_> = t.scores.iter().filter(|s| s.fails_trial()).collect();
    failing.sort_by_key(|s| s.severity != Severity::Critical);
    out.extend(
        failing
            .into_iter()
            .map(|s| format!("{}: {}", s.name, s.reason.as_deref().unwrap_or("failed"))),
    );
    out
}

/// The suite's noise floor (docs/statistics.md). Each case's pass probability p is its pass
/// rate over A's and B's paired epochs together; two identical single runs disagree on it with
/// probability 2p(1−p), and their pass rates differ by a sum of such disagreements over n cases.
fn noise_floor(cases: &[(String, CaseTally)], pairs: usize) -> NoiseFloor {
    let n = cases.len();
    let epochs = cases.iter().map(|(_, c)| c.pairs).max().unwrap_or(0);
    let variance: Vec<f64> = cases
        .iter()
        .map(|(_, c)| {
            let k = (c.a_passes + c.b_passes) as f64;
            let p = k / (2 * c.pairs) as f64;
            2.0 * p * (1.0 - p)
        })
        .collect();
    let (flip_rate, single_run_difference_95) = if epochs > 1 {
        let sum: f64 = variance.iter().sum();
        (
            Some(sum / n as f64),
            Some(1.96 * sum.sqrt() / n as f64 * 100.0),
        )
    } else {
        (None, None)
    };
    let detectable_difference = (pairs > 0).then(|| {
        // Without epochs the chance disagreement is unknown: none is assumed, a lower bound.
        detectable(flip_rate.unwrap_or(0.0), pairs as f64) * 100.0
    });
    NoiseFloor {
        cases: n,
        flip_rate,
        single_run_difference_95,
        detectable_difference,
    }
}

/// The smallest difference in pass rate `pairs` pairs detect with 80 % power at level
/// [`ALPHA`] (McNemar's test, normal approximation, as [`pairs_needed`]), when pairs disagree by
/// chance with probability `noise`: a difference δ makes at least δ of the pairs disagree, so
/// the discordance is max(noise, δ). Found by bisection (the pairs needed fall as δ grows); 1
/// when even δ = 1 needs more pairs.
fn detectable(noise: f64, pairs: f64) -> f64 {
    // z of 1 − α/2 and of the power.
    const Z_ALPHA: f64 = 1.959_963_984_540_054;
    const Z_POWER: f64 = 0.841_621_233_572_914_3;
    let needed = |d: f64| {
        let pd = noise.max(d).min(1.0);
        ((Z_ALPHA * pd.sqrt() + Z_POWER * (pd - d * d).max(0.0).sqrt()) / d).powi(2)
    };
    let (mut lo, mut hi) = (0.0_f64, 1.0_f64);
    if needed(hi) > pairs {
        return 1.0;
    }
    for _ in 0..60 {
        let mid = (lo + hi) / 2.0;
        if needed(mid) <= pairs {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    hi
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::path::Path;

    use gauntlet_model::{RunHeader, RunResults, TrialSummary};
    use serde_json::{Value, json};

    use super::*;

    /// One trial as a summary: `case` at `epoch`, passed or failed, nothing else.
    fn trial(case: &str, epoch: u32, passed: bool) -> TrialSummary {
        serde_json::from_value(json!({
            "case_id": case, "epoch": epoch, "trace_id": "0af7651916cd43dd8448eb211c80319c",
            "status": if passed { "passed" } else { "failed" },
            "tool_calls": 0, "steps": 0, "tokens": 0, "cost_eur": 0.0, "duration_ms": 0.0,
            "final_state": null, "scores": [],
        }))
        .unwrap()
    }

    fn run(id: &str, trials: Vec<TrialSummary>) -> RunResults {
        let mut r: RunResults = serde_json::from_value(json!({
            "format_version": gauntlet_model::FORMAT_VERSION,
            "header": RunHeader::new(id, "s", "script:reference", "2026-12-01T10:00:00Z"),
            "finished_at": "2026-12-01T10:00:09Z",
            "verdict": "passed", "metrics": {}, "intervals": {}, "evaluators": {},
            "segments": {}, "gates": [],
        }))
        .unwrap();
        r.trials = trials;
        r
    }

    /// Two runs of 12 cases by 3 epochs with tags, tools and critical violations, B in another
    /// order than A and each with trials the other lacks.
    fn runs_to_compare() -> (RunResults, RunResults) {
        let mut critical: TrialSummary = serde_json::from_value(json!({
            "case_id": "x", "epoch": 0, "trace_id": "0af7651916cd43dd8448eb211c80319c",
            "status": "failed", "tool_calls": 3, "steps": 2, "tokens": 40, "cost_eur": 0.5,
            "duration_ms": 12.5, "final_state": null, "tags": ["refunds"],
            "tools": ["refund"],
            "scores": [{"name": "forbidden_tool_used", "dimension": "safety", "value": 1.0,
                        "score": 0.0, "passed": false,
                        "severity": "critical", "reason": "called refund"}],
        }))
        .unwrap();
        let mut a = Vec::new();
        let mut b = Vec::new();
        for case in 0..12 {
            for epoch in 0..3u32 {
                let id = format!("c{case}");
                let mut x = trial(&id, epoch, !(case + epoch as usize).is_multiple_of(3));
                x.tags = vec![format!("t{}", case % 3)];
                x.tokens = (case * 10 + epoch as usize) as u64;
                x.duration_ms = 1.5 * case as f64 + f64::from(epoch);
                let y = if case % 4 == 1 {
                    critical.case_id = id.clone();
                    critical.epoch = epoch;
                    critical.clone()
                } else {
                    let mut y = trial(&id, epoch, !(case * 7 + epoch as usize).is_multiple_of(4));
                    y.tags = x.tags.clone();
                    y.tokens = x.tokens + case as u64;
                    y.cost_eur = 0.01 * epoch as f64;
                    y
                };
                if !(case == 11 && epoch == 2) {
                    a.push(x);
                }
                if !(case == 0 && epoch == 1) {
                    b.push(y);
                }
            }
        }
        b.push(trial("only-b", 0, true));
        // B in its own order: epochs first.
        b.sort_by_key(|t| (t.epoch, t.case_id.clone()));
        (run("a", a), run("b", b))
    }

    #[test]
    fn two_runs_streamed_in_any_order_compare_as_when_held_whole() {
        let (a, b) = runs_to_compare();
        let whole = compare(&a, &b, 5);
        assert!(whole.flips.len() > 5, "{:?}", whole.flips);
        assert_eq!(whole.only_in_a, vec!["c0#1"]);
        assert_eq!(whole.only_in_b, vec!["only-b#0", "c11#2"], "in B's order");
        assert_eq!(whole.critical_violations.new_in_b, vec!["c1", "c5", "c9"]);
        let ok = |v: &[TrialSummary]| v.iter().cloned().map(Ok::<_, ()>).collect::<Vec<_>>();
        let streamed = compare_streams(
            &a.without_trials(),
            &b.without_trials(),
            ok(&a.trials),
            ok(&b.trials),
            5,
        )
        .unwrap();
        assert_eq!(
            serde_json::to_value(&whole).unwrap(),
            serde_json::to_value(&streamed).unwrap()
        );
        // B's side first: the same.
        let mut c = Comparer::new();
        for t in &b.trials {
            c.push_b(t);
        }
        for t in &a.trials {
            c.push_a(t);
        }
        assert_eq!(
            serde_json::to_value(&whole).unwrap(),
            serde_json::to_value(c.finish(&a, &b, 5)).unwrap()
        );
        // An error in a stream stops the comparison with it.
        let mut broken = ok(&b.trials);
        broken[3] = Err(());
        assert!(compare_streams(&a, &b, ok(&a.trials), broken, 5).is_err());
    }

    /// Past the pairs whose numbers are kept, the intervals resample the cases from their sums:
    /// the same means and counts, an interval around the difference.
    #[test]
    fn past_the_kept_pairs_the_intervals_come_from_per_case_sums() {
        let (mut a, mut b) = (Vec::new(), Vec::new());
        let epochs = (MAX_PAIR_BOOTSTRAP / 40 + 1) as u32;
        for case in 0..40 {
            for epoch in 0..epochs {
                let id = format!("c{case}");
                a.push(trial(&id, epoch, (case + epoch as usize).is_multiple_of(2)));
                b.push(trial(
                    &id,
                    epoch,
                    !(case + epoch as usize).is_multiple_of(5),
                ));
            }
        }
        let (a, b) = (run("a", a), run("b", b));
        let c = compare(&a, &b, 3);
        assert!(c.pairs > MAX_PAIR_BOOTSTRAP);
        assert!((c.pass.a_rate - 0.5).abs() < 0.01, "{}", c.pass.a_rate);
        assert!((c.pass.b_rate - 0.8).abs() < 0.01, "{}", c.pass.b_rate);
        let i = c.pass.interval;
        assert!(i.lower < c.pass.diff && c.pass.diff < i.upper, "{i:?}");
        assert!(i.upper - i.lower < 0.2, "{i:?}");
        assert_eq!(c.direction, Direction::Better);
    }

    #[test]
    fn the_noise_floor_needs_epochs_and_small_samples_are_told_so() {
        let a = run(
            "a",
            (0..5).map(|i| trial(&format!("c{i}"), 0, true)).collect(),
        );
        let b = run(
            "b",
            (0..5).map(|i| trial(&format!("c{i}"), 0, i >= 3)).collect(),
        );
        let c = compare(&a, &b, 1);
        assert_eq!(c.noise_floor.flip_rate, None);
        assert_eq!(c.noise_floor.single_run_difference_95, None);
        assert_eq!(c.flips.len(), 3);
        assert!(!c.regression, "no critical violation, p = 0.25");
        assert!(
            c.verdict.starts_with(
                "B − A = -60 points [-100, -20]: 3 of 5 cases got worse, 0 better; with 5 pairs chance cannot be ruled out (McNemar p = 0.25); about "
            ),
            "{}",
            c.verdict
        );
    }

    /// tau-bench's GPT-4o airline logs: 50 tasks, 4 trials each. Trials 0 and 1 are run A's
    /// two epochs, trials 2 and 3 run B's. The figures are computed again here from the raw
    /// log, and were computed by a Python script (scipy for the normal quantiles, brentq for
    /// the inversion) as 0.22, 13.001169178193168 and 12.986281043536621.
    #[test]
    #[cfg_attr(
        not(have_tau_bench),
        ignore = "needs tau-bench data in ../shared/peers/tau-bench"
    )]
    fn the_noise_floor_of_tau_bench_gpt4o_airline_matches_an_independent_computation() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../../shared/peers/tau-bench/historical_trajectories/gpt-4o-airline.json");
        let log: Vec<Value> =
            serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        let mut by_task: BTreeMap<u64, BTreeMap<u64, bool>> = BTreeMap::new();
        for t in &log {
            by_task
                .entry(t["task_id"].as_u64().unwrap())
                .or_default()
                .insert(
                    t["trial"].as_u64().unwrap(),
                    t["reward"].as_f64().unwrap() >= 1.0 - 1e-6,
                );
        }
        assert_eq!(by_task.len(), 50);
        let of = |trials: [u64; 2]| {
            let mut out = Vec::new();
            for (task, r) in &by_task {
                for (epoch, k) in trials.iter().enumerate() {
                    out.push(trial(&task.to_string(), epoch as u32, r[k]));
                }
            }
            out
        };
        let c = compare(&run("a", of([0, 1])), &run("b", of([2, 3])), 7);
        let nf = &c.noise_floor;

        // By hand, from the raw log: each task's share of passed trials p, then 2p(1−p).
        let variances: Vec<f64> = by_task
            .values()
            .map(|r| {
                let p = r.values().filter(|x| **x).count() as f64 / r.len() as f64;
                2.0 * p * (1.0 - p)
            })
            .collect();
        let sum: f64 = variances.iter().sum();
        let n = variances.len() as f64;
        let close = |x: f64, y: f64| (x - y).abs() < 1e-9;
        assert!(close(nf.flip_rate.unwrap(), sum / n), "{nf:?}");
        assert!(close(nf.flip_rate.unwrap(), 0.22), "{nf:?}");
        assert!(close(
            nf.single_run_difference_95.unwrap(),
            1.96 * sum.sqrt() / n * 100.0
        ));
        assert!(close(
            nf.single_run_difference_95.unwrap(),
            13.001169178193168
        ));
        assert!((nf.detectable_difference.unwrap() - 12.986281043536621).abs() < 1e-6);

        // What the flip rate means: over every pair of the 4 trials of a task, the share of
        // tasks whose verdicts differ. It is 2p(1−p) · m/(m−1) with m = 4 trials (the plug-in
        // p makes 2p(1−p) low by (m−1)/m): 0.2933 observed, 0.22 · 4/3 expected.
        let mut disagree = 0.0;
        for r in by_task.values() {
            let v: Vec<bool> = r.values().copied().collect();
            let (mut d, mut pairs) = (0, 0);
            for i in 0..v.len() {
                for j in i + 1..v.len() {
                    d += usize::from(v[i] != v[j]);
                    pairs += 1;
                }
            }
            disagree += d as f64 / pairs as f64;
        }
        assert!(close(disagree / n, 0.22 * 4.0 / 3.0));
        // And two single runs of the 4 differ by at most 4 points: within the 13-point floor.
        let rates: Vec<f64> = (0..4)
            .map(|k| by_task.values().filter(|r| r[&k]).count() as f64 / n * 100.0)
            .collect();
        assert!(
            rates
                .iter()
                .all(|x| rates.iter().all(|y| (x - y).abs() <= 13.0))
        );
        assert_eq!(c.direction, Direction::NoDifference);
        assert_eq!((c.pass.a_only, c.pass.b_only), (15, 13));
    }
}
