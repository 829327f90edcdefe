//! The single-file HTML report: gates, plots, a filterable trial table and a trajectory viewer.
//!
//! Every piece of agent or tool text goes through the template engine's HTML escaping; the page's
//! only script is our own (below, fixed at build time) and a Content-Security-Policy allows that
//! script alone, by hash, so even an escaping mistake could not run injected code.

use std::collections::BTreeMap;

use base64::Engine;
use gauntlet_model::{RunResults, TrialRecord, TrialStatus};
use serde::Serialize;
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::svg::{self, Bar, fmt};

const TEMPLATE: &str = include_str!("templates/report.html");
const SCRIPT: &str = include_str!("templates/report.js");
const STYLE: &str = include_str!("templates/report.css");

/// A report that could not be rendered.
#[derive(Debug, thiserror::Error)]
#[error("failed to render the report: {0}")]
pub struct ReportError(pub(crate) String);

#[derive(Serialize)]
struct TrialView {
    anchor: String,
    /// The trial's item id as calibration names it (`CASE#EPOCH`): what an exported label reads.
    item: String,
    case_id: String,
    epoch: u32,
    status: String,
    trace_id: String,
    tags: String,
    difficulty: String,
    tool_calls: usize,
    duration_ms: String,
    failed: Vec<String>,
    error: Option<String>,
    /// The trial as a person reviews it ([`crate::transcript::Review`]), as JSON the page's
    /// shared renderer draws when the trajectory is opened.
    review: String,
    /// Why it did not pass, in one line: the harness error or the most severe failing reason.
    why: String,
}

fn status_name(s: TrialStatus) -> String {
    match s {
        TrialStatus::Passed => "passed",
        TrialStatus::Failed => "failed",
        TrialStatus::Error => "error",
    }
    .to_owned()
}

fn trial_view(i: usize, t: &TrialRecord) -> TrialView {
    TrialView {
        anchor: format!("trial-{i}"),
        item: gauntlet_model::labels::trial_item(&t.case_id, t.epoch),
        case_id: t.case_id.clone(),
        epoch: t.epoch,
        status: status_name(t.status),
        trace_id: t.trace_id.clone(),
        tags: t.tags.join(" "),
        difficulty: t.difficulty.clone().unwrap_or_default(),
        tool_calls: t.trajectory.tool_calls().count(),
        duration_ms: fmt(t.duration_ms),
        failed: t
            .scores
            .iter()
            .filter(|s| s.fails_trial())
            .map(|s| s.name.clone())
            .collect(),
        error: t.error.clone(),
        review: serde_json::to_string(&crate::transcript::review(t)).unwrap_or_default(),
        why: t.error.clone().unwrap_or_else(|| {
            let mut failing: Vec<_> = t.scores.iter().filter(|s| s.fails_trial()).collect();
            failing.sort_by_key(|s| std::cmp::Reverse(s.severity));
            failing
                .first()
                .map(|s| format!("{}: {}", s.name, s.reason.as_deref().unwrap_or("failed")))
                .unwrap_or_default()
        }),
    }
}

/// What a run's plots need of one trial.
pub struct PlotTrial<'a> {
    /// The evaluators whose verdict failed it.
    pub failed: Vec<&'a str>,
    /// Whether it ended in a harness error.
    pub error: bool,
    /// Tool calls made.
    pub tool_calls: u32,
    /// Wall time in milliseconds.
    pub duration_ms: f64,
    /// The agent's model cost in euros.
    pub cost_eur: f64,
}

/// The plots of a run as `(title, SVG)`: pass rate by segment and by fault kind (from the
/// run's segments), failures by evaluator, tool calls, latency and cost per trial (from its
/// trials, streamed: what is kept is a count per evaluator and three columns of numbers).
pub fn run_plots<'a>(
    segments: &BTreeMap<String, BTreeMap<String, gauntlet_model::SegmentStats>>,
    trials: impl IntoIterator<Item = PlotTrial<'a>>,
) -> Vec<(String, String)> {
    let mut failures: BTreeMap<String, usize> = BTreeMap::new();
    let (mut errors, mut calls, mut latency, mut cost) =
        (0usize, Vec::new(), Vec::new(), Vec::new());
    let (mut run_passed, mut run_trials) = (0usize, 0usize);
    for t in trials {
        run_trials += 1;
        run_passed += usize::from(!t.error && t.failed.is_empty());
        for name in t.failed {
            *failures.entry(name.to_owned()).or_default() += 1;
        }
        errors += usize::from(t.error);
        calls.push(f64::from(t.tool_calls));
        latency.push(t.duration_ms);
        cost.push(t.cost_eur);
    }
    let mut out = Vec::new();
    let mut seg_bars = Vec::new();
    for (kind, values) in segments {
        for (value, s) in values {
            seg_bars.push(Bar {
                label: format!("{kind}: {value}"),
                value: s.pass_rate,
                interval: Some((s.pass_rate_interval.lower, s.pass_rate_interval.upper)),
                note: format!("{}/{}", s.passed, s.trials),
                class: segment_class(s, (run_passed, run_trials)),
            });
        }
    }
    seg_bars.truncate(60);
    if !seg_bars.is_empty() {
        out.push((
            "Pass rate by segment (95% Wilson intervals)".to_owned(),
            svg::bars("pass rate by segment", &seg_bars, 1.0),
        ));
    }
    let mut fail_bars: Vec<Bar> = failures
        .iter()
        .map(|(name, n)| Bar {
            label: name.clone(),
            value: *n as f64,
            interval: None,
            note: n.to_string(),
            class: "bad",
        })
        .collect();
    if errors > 0 {
        fail_bars.push(Bar {
            label: "harness error".into(),
            value: errors as f64,
            interval: None,
            note: errors.to_string(),
            class: "bad",
        });
    }
    fail_bars.sort_by(|a, b| b.value.total_cmp(&a.value));
    if !fail_bars.is_empty() {
        let max = fail_bars[0].value.max(1.0);
        out.push((
            "Failures by evaluator".to_owned(),
            svg::bars("failures by evaluator", &fail_bars, max),
        ));
    }
    if let Some(faults) = segments.get("fault") {
        let bars: Vec<Bar> = faults
            .iter()
            .map(|(k, s)| Bar {
                label: k.clone(),
                value: s.pass_rate,
                interval: Some((s.pass_rate_interval.lower, s.pass_rate_interval.upper)),
                note: format!("{}/{}", s.passed, s.trials),
                class: segment_class(s, (run_passed, run_trials)),
            })
            .collect();
        out.push((
            "Pass rate by injected fault kind".to_owned(),
            svg::bars("pass rate by fault kind", &bars, 1.0),
        ));
    }
    out.push((
        "Tool calls per trial".to_owned(),
        svg::histogram("tool calls per trial", "calls", &calls, 10),
    ));
    out.push((
        "Trial latency".to_owned(),
        svg::histogram("trial latency", "ms", &latency, 12),
    ));
    if cost.iter().any(|c| *c > 0.0) {
        out.push((
            "Cost per trial".to_owned(),
            svg::histogram("cost per trial", "EUR", &cost, 12),
        ));
    }
    out
}

/// How a segment's bar is coloured: as a failure (`bad`) only when its pass rate differs from
/// the rest of the run's, below it beyond its 95% interval (a segment that fails as often as
/// every other is not where the failures are); `ok` when it is above beyond the interval, and
/// `neutral` otherwise.
fn segment_class(
    s: &gauntlet_model::SegmentStats,
    (passed, trials): (usize, usize),
) -> &'static str {
    let rest_trials = trials.saturating_sub(s.trials as usize);
    if rest_trials == 0 {
        return "neutral";
    }
    let rest = passed.saturating_sub(s.passed as usize) as f64 / rest_trials as f64;
    if s.pass_rate_interval.upper < rest {
        "bad"
    } else if s.pass_rate_interval.lower > rest {
        "ok"
    } else {
        "neutral"
    }
}

/// Deltas (B − A) of pass rate and segments, the pass rate with its interval, centred on zero.
fn comparison_chart(c: &gauntlet_model::compare::Comparison) -> String {
    let mut bars = vec![Bar {
        label: "pass rate".into(),
        value: c.pass.diff,
        interval: Some((c.pass.interval.lower, c.pass.interval.upper)),
        note: format!("{:+.0} pts", c.pass.diff * 100.0),
        class: if c.pass.diff < 0.0 { "bad" } else { "ok" },
    }];
    for s in c.segments.iter().filter(|s| s.diff != 0.0).take(20) {
        bars.push(Bar {
            label: format!("{}: {}", s.kind, s.value),
            value: s.diff,
            interval: None,
            note: format!("{:+.0} pts", s.diff * 100.0),
            class: if s.diff < 0.0 { "bad" } else { "ok" },
        });
    }
    svg::diverging("pass-rate change against the baseline", &bars, 1.0)
}

/// Renders the report of a run from its canonical result and the trial records it embeds (all
/// of them, or a part: the report then says how many of the run's trials it shows); with a
/// comparison against a baseline run, the report opens with its deltas.
pub fn render_html(
    results: &RunResults,
    trials: &[TrialRecord],
    comparison: Option<&gauntlet_model::compare::Comparison>,
) -> Result<String, ReportError> {
    let mut env = minijinja::Environment::new();
    // Figures as people read them (0.988, not 0.9880000000000001); the JSON keeps full precision.
    env.add_filter("num", |v: minijinja::Value| -> String {
        match f64::try_from(v.clone()) {
            Ok(x) => fmt(x),
            Err(_) => v.to_string(),
        }
    });
    env.add_template("report.html", TEMPLATE)
        .map_err(|e| ReportError(e.to_string()))?;
    // The trajectory's renderer is the viewer's own (one implementation), then the report's.
    let script = format!("{}\n{SCRIPT}", crate::transcript::TRANSCRIPT_SCRIPT);
    let style = format!("{STYLE}\n{}", crate::transcript::TRANSCRIPT_STYLE);
    let script_hash =
        base64::engine::general_purpose::STANDARD.encode(Sha256::digest(script.as_bytes()));
    let metrics: BTreeMap<&str, String> = results
        .metrics
        .iter()
        .map(|(k, v)| (k.as_str(), v.map_or("n/a".to_owned(), fmt)))
        .collect();
    let intervals: BTreeMap<&str, String> = results
        .intervals
        .iter()
        .map(|(k, i)| (k.as_str(), format!("[{}, {}]", fmt(i.lower), fmt(i.upper))))
        .collect();
    let attacks: Vec<Value> = crate::terminal::attack_groups(results)
        .into_iter()
        .map(|(group, key, rate)| {
            serde_json::json!({"group": group, "rate": fmt(rate),
                               "interval": intervals.get(key).cloned().unwrap_or_default()})
        })
        .collect();
    let gates: Vec<Value> = results
        .gates
        .iter()
        .map(|g| {
            let inputs: Vec<String> = g.inputs.iter().map(|(k, v)| format!("{k} = {}", v.as_f64().map_or(v.to_string(), fmt))).collect();
            serde_json::json!({"name": g.name, "expr": g.expr, "passed": g.passed, "inputs": inputs.join(", ")})
        })
        .collect();
    let plots: Vec<Value> = run_plots(
        &results.segments,
        results.trials.iter().map(|t| PlotTrial {
            failed: t
                .scores
                .iter()
                .filter(|s| s.fails_trial())
                .map(|s| s.name.as_str())
                .collect(),
            error: t.status == TrialStatus::Error,
            tool_calls: t.tool_calls,
            duration_ms: t.duration_ms,
            cost_eur: t.cost_eur,
        }),
    )
    .into_iter()
    .map(|(title, svg)| serde_json::json!({"title": title, "svg": svg}))
    .collect();
    use minijinja::Value as V;
    let trial_views: Vec<TrialView> = trials
        .iter()
        .enumerate()
        .map(|(i, t)| trial_view(i, t))
        .collect();
    let ctx = minijinja::context! {
        results => V::from(minijinja::value::Serde(results)),
        verdict => format!("{:?}", results.verdict).to_lowercase(),
        metrics => V::from(minijinja::value::Serde(&metrics)),
        intervals => V::from(minijinja::value::Serde(&intervals)),
        gates => V::from(minijinja::value::Serde(&gates)),
        attacks => V::from(minijinja::value::Serde(&attacks)),
        plots => plots.iter().map(|p| minijinja::context! {
            title => p["title"].as_str().unwrap_or_default(),
            svg => minijinja::Value::from_safe_string(p["svg"].as_str().unwrap_or_default().to_owned()),
        }).collect::<Vec<_>>(),
        trials => V::from(minijinja::value::Serde(&trial_views)),
        total_trials => results.trials.len(),
        script => minijinja::Value::from_safe_string(script),
        style => minijinja::Value::from_safe_string(style),
        script_hash => script_hash,
        comparison => comparison.map(|c| V::from(minijinja::value::Serde(c))),
        comparison_svg => comparison.map(|c| V::from_safe_string(comparison_chart(c))),
        noise_floor => comparison.map(crate::compare::noise_floor_line),
    };
    env.get_template("report.html")
        .and_then(|t| t.render(ctx))
        .map_err(|e| ReportError(format!("{e:#}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn segment(passed: u32, trials: u32, lower: f64, upper: f64) -> gauntlet_model::SegmentStats {
        serde_json::from_value(serde_json::json!({
            "trials": trials, "passed": passed, "pass_rate": f64::from(passed) / f64::from(trials),
            "pass_rate_interval": {"lower": lower, "upper": upper, "method": "wilson"},
            "task_success_rate": 0.0,
        }))
        .unwrap()
    }

    /// Issue 50: a segment was red because a failing trial fell in it, though it failed no more
    /// often than the rest of the run; red now means below the rest beyond its interval.
    #[test]
    fn a_segment_reads_as_a_failure_only_when_it_differs_from_the_rest_of_the_run() {
        // 15 of 23 passed. `write`: 4 of 12 (Wilson [0.14, 0.61]); the rest 11 of 11.
        assert_eq!(
            segment_class(&segment(4, 12, 0.138, 0.609), (15, 23)),
            "bad"
        );
        // `fault`: 6 of 8 ([0.41, 0.93]); the rest 9 of 15 = 0.6, inside its interval.
        assert_eq!(
            segment_class(&segment(6, 8, 0.409, 0.929), (15, 23)),
            "neutral"
        );
        // `read`: 9 of 9 ([0.70, 1]); the rest 6 of 14 = 0.43, below its interval.
        assert_eq!(segment_class(&segment(9, 9, 0.701, 1.0), (15, 23)), "ok");
        // A segment that is the whole run has no rest to differ from.
        assert_eq!(
            segment_class(&segment(15, 23, 0.45, 0.81), (15, 23)),
            "neutral"
        );
    }
}
