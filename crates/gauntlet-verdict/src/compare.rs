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

use gauntlet_stats::{
    CONFIDENCE, RESAMPLES, cohens_dz, cohens_h, mcnemar_exact, paired_bootstrap_diff, pairs_needed,
};

/// Significance level of the verdict.
pub const ALPHA: f64 = 0.05;

fn passed(t: &TrialSummary) -> f64 {
    f64::from(u8::from(t.status == TrialStatus::Passed))
}

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

fn discordance(pairs: &[(&TrialSummary, &TrialSummary)]) -> (u64, u64) {
    let mut a_only = 0;
    let mut b_only = 0;
    for (a, b) in pairs {
        match (passed(a) > 0.0, passed(b) > 0.0) {
            (true, false) => a_only += 1,
            (false, true) => b_only += 1,
            _ => {}
        }
    }
    (a_only, b_only)
}

fn points(x: f64) -> String {
    format!("{:.0}", x * 100.0)
}

/// Compares run B against run A. `seed` seeds the bootstrap.
pub fn compare(a: &RunResults, b: &RunResults, seed: u64) -> Comparison {
    let key = |t: &TrialSummary| (t.case_id.clone(), t.epoch);
    let b_index: HashMap<(String, u32), &TrialSummary> =
        b.trials.iter().map(|t| (key(t), t)).collect();
    let a_keys: std::collections::HashSet<(String, u32)> = a.trials.iter().map(key).collect();
    let pairs: Vec<(&TrialSummary, &TrialSummary)> = a
        .trials
        .iter()
        .filter_map(|t| b_index.get(&key(t)).map(|u| (t, *u)))
        .collect();
    let only_in_a: Vec<String> = a
        .trials
        .iter()
        .filter(|t| !b_index.contains_key(&key(t)))
        .map(|t| format!("{}#{}", t.case_id, t.epoch))
        .collect();
    let only_in_b: Vec<String> = b
        .trials
        .iter()
        .filter(|t| !a_keys.contains(&key(t)))
        .map(|t| format!("{}#{}", t.case_id, t.epoch))
        .collect();

    let n = pairs.len();
    let av: Vec<f64> = pairs.iter().map(|(x, _)| passed(x)).collect();
    let bv: Vec<f64> = pairs.iter().map(|(_, y)| passed(y)).collect();
    let mean = |v: &[f64]| {
        if v.is_empty() {
            f64::NAN
        } else {
            v.iter().sum::<f64>() / v.len() as f64
        }
    };
    let (a_only, b_only) = discordance(&pairs);
    let p_value = mcnemar_exact(a_only, b_only);
    let (a_rate, b_rate) = (mean(&av), mean(&bv));
    let discordant_share = if n == 0 {
        0.0
    } else {
        (a_only + b_only) as f64 / n as f64
    };
    let pass = PassComparison {
        a_rate,
        b_rate,
        diff: b_rate - a_rate,
        interval: paired_bootstrap_diff(&av, &bv, RESAMPLES, seed, CONFIDENCE),
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
            let x: Vec<f64> = pairs.iter().map(|(t, _)| quantity(t, name)).collect();
            let y: Vec<f64> = pairs.iter().map(|(_, t)| quantity(t, name)).collect();
            MetricDelta {
                name: (*name).to_owned(),
                a_mean: mean(&x),
                b_mean: mean(&y),
                diff: mean(&y) - mean(&x),
                interval: paired_bootstrap_diff(
                    &x,
                    &y,
                    RESAMPLES,
                    seed.wrapping_add(1 + i as u64),
                    CONFIDENCE,
                ),
                effect_size: cohens_dz(&x, &y),
            }
        })
        .collect();

    let mut groups: BTreeMap<(String, String), Vec<(&TrialSummary, &TrialSummary)>> =
        BTreeMap::new();
    for &(x, y) in &pairs {
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
            groups.entry(k).or_default().push((x, y));
        }
    }
    let mut segments: Vec<SegmentDelta> = groups
        .into_iter()
        .map(|((kind, value), ps)| {
            let ar = ps.iter().map(|(x, _)| passed(x)).sum::<f64>() / ps.len() as f64;
            let br = ps.iter().map(|(_, y)| passed(y)).sum::<f64>() / ps.len() as f64;
            let (ao, bo) = discordance(&ps);
            SegmentDelta {
                kind,
                value,
                pairs: ps.len(),
                a_rate: ar,
                b_rate: br,
                diff: br - ar,
                p_value: mcnemar_exact(ao, bo),
            }
        })
        .collect();
    segments.sort_by(|x, y| {
        x.diff
            .total_cmp(&y.diff)
            .then(x.kind.cmp(&y.kind))
            .then(x.value.cmp(&y.value))
    });

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
    let flips = flips(&pairs);
    let critical_violations = critical_violations(&pairs);
    let noise_floor = noise_floor(&pairs);
    let (worse, better, cases) = cases_moved(&pairs);
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

/// The pairs whose status changed, or that gained a critical violation: those that got worse
/// (A passed, B did not) first, those that got better last, each group in A's order.
fn flips(pairs: &[(&TrialSummary, &TrialSummary)]) -> Vec<Flip> {
    let mut out: Vec<(u8, Flip)> = pairs
        .iter()
        .filter(|(x, y)| x.status != y.status || (critical_count(y) > 0 && critical_count(x) == 0))
        .map(|(x, y)| {
            let order = match (
                x.status == TrialStatus::Passed,
                y.status == TrialStatus::Passed,
            ) {
                (true, false) => 0,
                (false, true) => 2,
                _ => 1,
            };
            let flip = Flip {
                case_id: x.case_id.clone(),
                epoch: x.epoch,
                a: x.status,
                b: y.status,
                reasons: reasons(y),
            };
            (order, flip)
        })
        .collect();
    out.sort_by_key(|(order, _)| *order);
    out.into_iter().map(|(_, f)| f).collect()
}

/// The pairs grouped by case, in A's order.
fn by_case<'a>(
    pairs: &[(&'a TrialSummary, &'a TrialSummary)],
) -> Vec<Vec<(&'a TrialSummary, &'a TrialSummary)>> {
    let mut order: Vec<&str> = Vec::new();
    let mut groups: HashMap<&str, Vec<(&TrialSummary, &TrialSummary)>> = HashMap::new();
    for &(x, y) in pairs {
        let g = groups.entry(x.case_id.as_str()).or_default();
        if g.is_empty() {
            order.push(x.case_id.as_str());
        }
        g.push((x, y));
    }
    order.into_iter().filter_map(|c| groups.remove(c)).collect()
}

fn critical_violations(pairs: &[(&TrialSummary, &TrialSummary)]) -> CriticalViolations {
    let new_in_b = by_case(pairs)
        .into_iter()
        .filter(|g| {
            g.iter().all(|(x, _)| critical_count(x) == 0)
                && g.iter().any(|(_, y)| critical_count(y) > 0)
        })
        .map(|g| g[0].0.case_id.clone())
        .collect();
    CriticalViolations {
        a: pairs.iter().map(|(x, _)| critical_count(x)).sum(),
        b: pairs.iter().map(|(_, y)| critical_count(y)).sum(),
        new_in_b,
    }
}

/// Cases whose passes over their paired epochs went down, went up, and all cases.
fn cases_moved(pairs: &[(&TrialSummary, &TrialSummary)]) -> (usize, usize, usize) {
    let groups = by_case(pairs);
    let passes = |g: &[(&TrialSummary, &TrialSummary)], b: bool| {
        g.iter()
            .filter(|(x, y)| if b { *y } else { *x }.status == TrialStatus::Passed)
            .count()
    };
    let worse = groups
        .iter()
        .filter(|g| passes(g, true) < passes(g, false))
        .count();
    let better = groups
        .iter()
        .filter(|g| passes(g, true) > passes(g, false))
        .count();
    (worse, better, groups.len())
}

/// The suite's noise floor (docs/statistics.md). Each case's pass probability p is its pass
/// rate over A's and B's paired epochs together; two identical single runs disagree on it with
/// probability 2p(1−p), and their pass rates differ by a sum of such disagreements over n cases.
fn noise_floor(pairs: &[(&TrialSummary, &TrialSummary)]) -> NoiseFloor {
    let groups = by_case(pairs);
    let n = groups.len();
    let epochs = groups.iter().map(Vec::len).max().unwrap_or(0);
    let variance: Vec<f64> = groups
        .iter()
        .map(|g| {
            let k = g.iter().map(|(x, y)| passed(x) + passed(y)).sum::<f64>();
            let p = k / (2 * g.len()) as f64;
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
    let detectable_difference = (!pairs.is_empty()).then(|| {
        // Without epochs the chance disagreement is unknown: none is assumed, a lower bound.
        detectable(flip_rate.unwrap_or(0.0), pairs.len() as f64) * 100.0
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
