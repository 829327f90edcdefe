//! Paired comparison of two runs: McNemar's exact test on pass/fail, paired bootstrap intervals
//! of each quantity's difference, effect sizes, per-segment deltas, and a verdict in words.

use gauntlet_model::names;
use std::collections::{BTreeMap, HashMap};

use gauntlet_model::compare::{Comparison, Direction, MetricDelta, PassComparison, SegmentDelta};
use gauntlet_model::{RunResults, TrialStatus, TrialSummary};

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
    let ci = format!(
        "[{}, {}]",
        points(pass.interval.lower),
        points(pass.interval.upper)
    );
    let verdict = match direction {
        Direction::Better | Direction::Worse => {
            let word = if direction == Direction::Better {
                "better"
            } else {
                "worse"
            };
            let mut v = format!(
                "B is {word} by {} points {ci}, p={:.3} (McNemar exact, {n} pairs)",
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
        Direction::NoDifference => format!(
            "no significant difference: B − A = {} points {ci}, p={:.3} ({n} pairs); about {} pairs would be needed to see 5 points",
            points(pass.diff),
            p_value,
            pass.pairs_for_5_points
        ),
    };
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
        verdict,
        pairwise: None,
    }
}
