//! The single-file HTML report: gates, plots, a filterable trial table and a trajectory viewer.
//!
//! Every piece of agent or tool text goes through the template engine's HTML escaping; the page's
//! only script is our own (below, fixed at build time) and a Content-Security-Policy allows that
//! script alone, by hash, so even an escaping mistake could not run injected code.

use gauntlet_model::names;
use std::collections::BTreeMap;

use base64::Engine;
use gauntlet_model::{Event, RunResults, TrialRecord, TrialStatus};
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
struct EventView {
    idx: usize,
    kind: &'static str,
    step: Option<u32>,
    at: String,
    title: String,
    body: String,
    badges: Vec<String>,
    class: &'static str,
}

#[derive(Serialize)]
struct ScoreView {
    name: String,
    passed: bool,
    severity: String,
    value: String,
    details: String,
    events: Vec<usize>,
}

#[derive(Serialize)]
struct DiffView {
    path: String,
    before: String,
    after: String,
}

#[derive(Serialize)]
struct JudgeView {
    judge: String,
    status: String,
    verdict: String,
    score: String,
    criteria: String,
    reason: String,
    advisory: bool,
    split: bool,
    samples: String,
}

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
    events: Vec<EventView>,
    scores: Vec<ScoreView>,
    mismatches: Vec<DiffView>,
    changes: Vec<DiffView>,
    final_answer: Option<String>,
    judges: Vec<JudgeView>,
}

fn json_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => serde_json::to_string_pretty(other).unwrap_or_default(),
    }
}

fn event_view(idx: usize, e: &Event) -> EventView {
    let mut v = EventView {
        idx,
        kind: "",
        step: None,
        at: String::new(),
        title: String::new(),
        body: String::new(),
        badges: Vec::new(),
        class: "",
    };
    match e {
        Event::UserMessage { text } => {
            v.kind = "user";
            v.title = "user".into();
            v.body = text.clone();
        }
        Event::AgentMessage { step, text } => {
            v.kind = "agent";
            v.step = Some(*step);
            v.title = "agent".into();
            v.body = text.clone();
        }
        Event::Reasoning { step, text } => {
            v.kind = "reasoning";
            v.step = Some(*step);
            v.title = "reasoning".into();
            v.body = text.clone();
        }
        Event::Question { step, text } => {
            v.kind = "question";
            v.step = Some(*step);
            v.title = "agent asks".into();
            v.body = text.clone();
        }
        Event::ConfirmationRequest { step, text } => {
            v.kind = "confirm";
            v.step = Some(*step);
            v.title = "confirmation requested".into();
            v.body = text.clone();
        }
        Event::ConfirmationResponse { text, approved } => {
            v.kind = "confirm";
            v.title = if *approved {
                "user approves".into()
            } else {
                "user declines".into()
            };
            v.body = text.clone();
            v.class = if *approved { "ok" } else { "bad" };
        }
        Event::FaultInjected {
            call_id,
            tool,
            kind,
            source,
        } => {
            v.kind = "fault";
            v.title = format!(
                "fault injected: {}",
                serde_json::to_value(kind)
                    .ok()
                    .and_then(|k| k.as_str().map(str::to_owned))
                    .unwrap_or_default()
            );
            v.body = format!("{tool} ({call_id}), from {source}");
            v.class = "warn";
        }
        Event::CrossTenantAccess {
            call_id,
            tool,
            record,
            tenant,
        } => {
            v.kind = "tenant";
            v.title = "cross-tenant access".into();
            v.body = format!("{tool} ({call_id}) touched {record} of tenant {tenant}");
            v.class = "bad";
        }
        Event::Wait { step, ms } => {
            v.kind = "wait";
            v.step = Some(*step);
            v.title = format!("waits {} ms", fmt(*ms));
        }
        Event::ToolCall(c) => {
            v.kind = "tool";
            v.step = Some(c.step);
            v.at = format!("{:.1} ms", c.at_ms);
            v.title = format!("{} ({})", c.tool, c.id);
            let mut body = format!("arguments: {}", json_text(&c.arguments));
            match (&c.result, &c.error) {
                (_, Some(err)) => {
                    body.push_str(&format!("\nerror {}: {}", err.status, err.message));
                    v.class = "bad";
                }
                (Some(r), None) => body.push_str(&format!("\nresult: {}", json_text(r))),
                _ => {}
            }
            for ch in &c.state_changes {
                body.push_str(&format!(
                    "\nstate {}: {} → {}",
                    ch.path,
                    ch.before
                        .as_ref()
                        .map_or("(absent)".into(), |b| b.to_string()),
                    ch.after
                        .as_ref()
                        .map_or("(absent)".into(), |a| a.to_string())
                ));
            }
            v.body = body;
            if let Some(k) = &c.kind {
                v.badges.push(format!("{k:?}").to_lowercase());
            }
            if let Some(f) = c.fault {
                v.badges.push(fault_badge(f));
            }
            if c.schema_valid == Some(false) {
                v.badges.push("invalid arguments".into());
            }
            if let Some(k) = &c.idempotency_key {
                v.badges.push(format!("key {k}"));
            }
            if c.idempotent_replay {
                v.badges.push("idempotent replay".into());
            }
            v.badges.push(format!("{:.2} ms", c.latency_ms));
        }
        Event::ModelCall {
            model,
            prompt_tokens,
            completion_tokens,
            cost_eur,
            latency_ms,
            ttft_ms,
            simulated_user,
            error,
            fault,
            ..
        } => {
            v.kind = "model";
            v.title = if *simulated_user {
                format!("simulated user's model call: {model}")
            } else {
                format!("model call: {model}")
            };
            v.body = match error {
                Some(e) => format!("error {}: {}", e.status, e.message),
                None => format!(
                    "{prompt_tokens} prompt + {completion_tokens} completion tokens, {} EUR, {} ms{}",
                    fmt(*cost_eur),
                    fmt(*latency_ms),
                    ttft_ms
                        .map(|t| format!(", first token after {} ms", fmt(t)))
                        .unwrap_or_default()
                ),
            };
            if let Some(f) = fault {
                v.badges.push(fault_badge(*f));
            }
        }
        Event::AgentStderr { text } => {
            v.kind = "stderr";
            v.title = "agent stderr".into();
            v.body = text.clone();
        }
        Event::ToolsChanged { tools, after_calls } => {
            v.kind = "fault";
            v.title = "tools changed".into();
            v.body = format!(
                "after {after_calls} calls the descriptions of {} changed (a rug pull)",
                tools.join(", ")
            );
        }
        Event::Trapped {
            checkpoint,
            step,
            reason,
        } => {
            v.kind = "fault";
            v.title = format!("trap `{checkpoint}` at step {step}: the trial ended");
            v.body = reason.clone();
        }
        Event::Unfinished { reason } => {
            v.kind = "stderr";
            v.title = "agent did not finish".into();
            v.body = reason.clone();
        }
        Event::AgentCrashed { reason } => {
            v.kind = "stderr";
            v.title = "agent crashed".into();
            v.body = reason.clone();
        }
        Event::FinalAnswer { text } => {
            v.kind = "answer";
            v.title = "final answer".into();
            v.body = text.clone();
        }
    }
    v
}

/// Every leaf that differs between two JSON values, as (JSON Pointer, before, after).
fn diff(before: &Value, after: &Value, path: &mut String, out: &mut Vec<DiffView>) {
    match (before, after) {
        (Value::Object(a), Value::Object(b)) => {
            let keys: std::collections::BTreeSet<&String> = a.keys().chain(b.keys()).collect();
            for k in keys {
                let len = path.len();
                path.push('/');
                path.push_str(&gauntlet_model::path::escape_segment(k));
                match (a.get(k), b.get(k)) {
                    (Some(x), Some(y)) => diff(x, y, path, out),
                    (x, y) => out.push(DiffView {
                        path: path.clone(),
                        before: x.map_or("(absent)".into(), |v| v.to_string()),
                        after: y.map_or("(absent)".into(), |v| v.to_string()),
                    }),
                }
                path.truncate(len);
            }
        }
        (x, y) if x != y => out.push(DiffView {
            path: path.clone(),
            before: x.to_string(),
            after: y.to_string(),
        }),
        _ => {}
    }
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
    let mut changes = Vec::new();
    diff(
        &t.initial_state,
        &t.final_state,
        &mut String::new(),
        &mut changes,
    );
    let mismatches = t
        .scores
        .iter()
        .find(|s| s.name == names::STATE_VERIFICATION)
        .and_then(|s| s.details.get("mismatches"))
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .map(|(path, v)| DiffView {
                    path: path.clone(),
                    before: v["expected"].to_string(),
                    after: v["actual"].to_string(),
                })
                .collect()
        })
        .unwrap_or_default();
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
        events: t
            .trajectory
            .events
            .iter()
            .enumerate()
            .map(|(i, e)| event_view(i, e))
            .collect(),
        scores: t
            .scores
            .iter()
            .map(|s| ScoreView {
                name: s.name.clone(),
                passed: s.passed,
                severity: format!("{:?}", s.severity).to_lowercase(),
                value: fmt(s.value),
                details: if s.details.is_null() {
                    String::new()
                } else {
                    serde_json::to_string(&s.details).unwrap_or_default()
                },
                events: s.events.clone(),
            })
            .collect(),
        mismatches,
        changes,
        final_answer: t.trajectory.final_answer.clone(),
        judges: t.judges.iter().map(judge_view).collect(),
    }
}

fn judge_view(o: &gauntlet_model::JudgeOutcome) -> JudgeView {
    let status = serde_json::to_value(o.status)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default();
    JudgeView {
        judge: o.judge.clone(),
        verdict: match (o.passed, o.advisory) {
            (Some(true), false) => "pass".to_owned(),
            (Some(false), false) => "FAIL".to_owned(),
            (Some(true), true) => "pass (advisory)".to_owned(),
            (Some(false), true) => "fail (advisory)".to_owned(),
            (None, _) => status.clone(),
        },
        status,
        score: o.score.map(fmt).unwrap_or_default(),
        criteria: o
            .criteria
            .iter()
            .map(|(k, v)| format!("{k} {}", fmt(*v)))
            .collect::<Vec<_>>()
            .join(", "),
        reason: o
            .reason
            .clone()
            .or_else(|| o.samples.iter().find_map(|s| s.reason.clone()))
            .unwrap_or_default(),
        advisory: o.advisory,
        split: o.split,
        samples: o
            .samples
            .iter()
            .map(|s| {
                format!(
                    "{} ({}{})",
                    s.model,
                    s.parse,
                    if s.cached { ", cached" } else { "" }
                )
            })
            .collect::<Vec<_>>()
            .join("; "),
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
    for t in trials {
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
                class: if s.passed == s.trials { "ok" } else { "bad" },
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
                class: if s.passed == s.trials { "ok" } else { "bad" },
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
    let script_hash =
        base64::engine::general_purpose::STANDARD.encode(Sha256::digest(SCRIPT.as_bytes()));
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
        script => minijinja::Value::from_safe_string(SCRIPT.to_owned()),
        style => minijinja::Value::from_safe_string(STYLE.to_owned()),
        script_hash => script_hash,
        comparison => comparison.map(|c| V::from(minijinja::value::Serde(c))),
        comparison_svg => comparison.map(|c| V::from_safe_string(comparison_chart(c))),
        noise_floor => comparison.map(crate::compare::noise_floor_line),
    };
    env.get_template("report.html")
        .and_then(|t| t.render(ctx))
        .map_err(|e| ReportError(format!("{e:#}")))
}

/// The badge of an injected fault: `fault KIND`, the kind as users write it.
fn fault_badge(kind: gauntlet_model::FaultKind) -> String {
    let name = serde_json::to_value(kind)
        .ok()
        .and_then(|k| k.as_str().map(str::to_owned))
        .unwrap_or_default();
    format!("fault {name}")
}
