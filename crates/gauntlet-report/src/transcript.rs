//! A trial as a person reviews it ([`Review`]): the conversation (the request, the agent's
//! messages, each tool call as one card with its arguments, result or error, the fault that hit
//! it and the state it changed), each verdict beside the entries it points at, failing verdicts
//! first, and the state diff (changed paths only, before → after).
//!
//! Computed once, here, and rendered by one script (`templates/transcript.js`) in both the
//! viewer's trajectory page and the HTML report, so the two never tell a trial differently.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use gauntlet_model::{Case, Event, FaultKind, Score, Severity, TrialRecord, TrialStatus};
use serde::Serialize;
use serde_json::Value;

/// The script that renders a [`Review`] (`GauntletReview.render(review)`), shared by the viewer
/// and the HTML report.
pub const TRANSCRIPT_SCRIPT: &str = include_str!("templates/transcript.js");
/// Its style.
pub const TRANSCRIPT_STYLE: &str = include_str!("templates/transcript.css");

/// One trial, ready to be read.
#[derive(Debug, Clone, Serialize)]
pub struct Review {
    /// The case.
    pub case_id: String,
    /// The epoch.
    pub epoch: u32,
    /// `passed`, `failed` or `error`.
    pub status: &'static str,
    /// The harness error, when the status is `error`.
    pub error: Option<String>,
    /// What the user asked first.
    pub request: Option<String>,
    /// The conversation, in order.
    pub transcript: Vec<Entry>,
    /// Every verdict, failing first (critical, then error), then passing, then notes.
    pub verdicts: Vec<Verdict>,
    /// What changed between the initial and the final state, one row per changed path.
    pub diff: Vec<Change>,
    /// Paths the case expected a value at that the final state does not hold.
    pub mismatches: Vec<Mismatch>,
    /// What each LLM judge said (`judge_verdicts`: a trial record's `judges` are the judges'
    /// outcomes as stored).
    pub judge_verdicts: Vec<Judge>,
}

/// What an LLM judge said of the trial, as read beside its verdicts.
#[derive(Debug, Clone, Serialize)]
pub struct Judge {
    /// The judge.
    pub judge: String,
    /// `scored`, `skipped` or `invalid`.
    pub status: String,
    /// `pass`, `FAIL`, `pass (advisory)`, `fail (advisory)` or the status.
    pub verdict: String,
    /// Its score, when it gave one.
    pub score: String,
    /// Each criterion's score, in words.
    pub criteria: String,
    /// Why, as the judge said it.
    pub reason: String,
    /// Whether it may not gate.
    pub advisory: bool,
    /// Whether its samples disagreed.
    pub split: bool,
    /// The models asked, how each reply parsed, cached or not.
    pub samples: String,
}

fn judge(o: &gauntlet_model::JudgeOutcome) -> Judge {
    let status = serde_json::to_value(o.status)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default();
    Judge {
        judge: o.judge.clone(),
        verdict: match (o.passed, o.advisory) {
            (Some(true), false) => "pass".to_owned(),
            (Some(false), false) => "FAIL".to_owned(),
            (Some(true), true) => "pass (advisory)".to_owned(),
            (Some(false), true) => "fail (advisory)".to_owned(),
            (None, _) => status.clone(),
        },
        status,
        score: o.score.map(crate::svg::fmt).unwrap_or_default(),
        criteria: o
            .criteria
            .iter()
            .map(|(k, v)| format!("{k} {}", crate::svg::fmt(*v)))
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

/// One entry of the conversation. Every entry carries the indexes of the trajectory events it
/// shows (`events`) and of the verdicts that point at them (`verdicts`, into
/// [`Review::verdicts`]).
#[derive(Debug, Clone, Serialize)]
pub struct Entry {
    /// What it is: `user`, `agent`, `reasoning`, `question`, `confirmation_request`,
    /// `confirmation`, `tool_call`, `model_call`, `note` or `final_answer`.
    pub kind: &'static str,
    /// The events it shows.
    pub events: Vec<usize>,
    /// The verdicts pointing at them.
    pub verdicts: Vec<usize>,
    /// The agent's step, where there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub step: Option<u32>,
    /// The words (a message, a question, a note's body).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// A note's or a model call's title.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// `bad`, `warn`, `ok` or empty: how a note or a confirmation reads.
    #[serde(skip_serializing_if = "str::is_empty")]
    pub tone: &'static str,
    /// A confirmation's answer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub approved: Option<bool>,
    /// A tool call's card.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub call: Option<Card>,
}

/// A tool call as one card.
#[derive(Debug, Clone, Serialize)]
pub struct Card {
    /// The call's id.
    pub id: String,
    /// The tool.
    pub tool: String,
    /// `read` or `write`, when the world says.
    pub access: Option<String>,
    /// The arguments as sent.
    pub arguments: Value,
    /// The result, when it succeeded.
    pub result: Option<Value>,
    /// The error the agent saw (`status`, `message`).
    pub error: Option<Value>,
    /// The fault that hit it (`timeout`, `rate_limited`, ...).
    pub fault: Option<String>,
    /// Where the fault came from (the case, a profile), when an event says.
    pub fault_source: Option<String>,
    /// What it changed in the world.
    pub changes: Vec<Change>,
    /// Small facts: invalid arguments, its idempotency key, an idempotent replay.
    pub badges: Vec<String>,
    /// How long it took.
    pub latency_ms: f64,
}

/// A changed path: before → after. An absent side is `null` with `op` saying which.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Change {
    /// JSON Pointer of the value.
    pub path: String,
    /// `added`, `removed` or `changed`.
    pub op: &'static str,
    /// The value before.
    pub before: Value,
    /// The value after.
    pub after: Value,
}

/// An expected value the final state does not hold.
#[derive(Debug, Clone, Serialize)]
pub struct Mismatch {
    /// JSON Pointer of the value.
    pub path: String,
    /// What the case expected (a literal or a matcher).
    pub expected: Value,
    /// What the final state holds.
    pub actual: Value,
}

/// An evaluator's verdict, as read beside the conversation (its details stay on the score: the
/// reason says them in words, and the report carries each trial's review in its page).
#[derive(Debug, Clone, Serialize)]
pub struct Verdict {
    /// The evaluator.
    pub name: String,
    /// `failed`, `passed` or `note` (an info score: a measurement, never a failure).
    pub status: &'static str,
    /// `info`, `error` or `critical`.
    pub severity: &'static str,
    /// The quality layer.
    pub dimension: Value,
    /// The raw measurement.
    pub value: f64,
    /// Why it failed, in words.
    pub reason: Option<String>,
    /// The events it points at.
    pub events: Vec<usize>,
    /// The transcript entries showing those events.
    pub entries: Vec<usize>,
}

/// The case as its author wrote it, beside its trial.
#[derive(Debug, Clone, Serialize)]
pub struct CasePanel {
    /// The case file, as found.
    pub file: String,
    /// What the user asks.
    pub request: String,
    /// The author's description.
    pub description: Option<String>,
    /// What the final state must hold, and the behaviour expected.
    pub expected_outcome: Value,
    /// Constraints on the trajectory.
    pub constraints: Value,
    /// Tools that must be used.
    pub expected_tools: Vec<String>,
    /// Faults the case injects.
    pub faults: Value,
    /// Its tags.
    pub tags: Vec<String>,
}

impl CasePanel {
    /// The panel of `case`, read from `file`.
    pub fn new(case: &Case, file: &std::path::Path) -> CasePanel {
        let mut expected = serde_json::Map::new();
        expected.extend(case.expected_outcome.clone());
        expected.extend(case.expected_final_state.clone());
        CasePanel {
            file: file.display().to_string(),
            request: case.user_input.clone(),
            description: case.description.clone(),
            expected_outcome: Value::Object(expected),
            constraints: serde_json::to_value(&case.trajectory_constraints).unwrap_or_default(),
            expected_tools: case.expected_tools.clone(),
            faults: serde_json::to_value(&case.faults).unwrap_or_default(),
            tags: case.tags.clone(),
        }
    }
}

fn kind_name(kind: FaultKind) -> String {
    serde_json::to_value(kind)
        .ok()
        .and_then(|k| k.as_str().map(str::to_owned))
        .unwrap_or_default()
}

fn severity_name(s: Severity) -> &'static str {
    match s {
        Severity::Info => "info",
        Severity::Error => "error",
        Severity::Critical => "critical",
    }
}

/// Failing critical, failing error, passing, then notes; the run's order within each.
fn rank(s: &Score) -> u8 {
    match (s.passed, s.severity) {
        (false, Severity::Critical) => 0,
        (false, Severity::Error) => 1,
        (true, Severity::Critical | Severity::Error) => 2,
        (true, Severity::Info) => 3,
        (false, Severity::Info) => 4,
    }
}

fn verdict(s: &Score) -> Verdict {
    Verdict {
        name: s.name.clone(),
        status: match (s.passed, s.severity) {
            (_, Severity::Info) => "note",
            (true, _) => "passed",
            (false, _) => "failed",
        },
        severity: severity_name(s.severity),
        dimension: serde_json::to_value(s.dimension).unwrap_or_default(),
        value: s.value,
        reason: s.reason.clone(),
        events: s.events.clone(),
        entries: Vec::new(),
    }
}

fn entry(kind: &'static str, event: usize) -> Entry {
    Entry {
        kind,
        events: vec![event],
        verdicts: Vec::new(),
        step: None,
        text: None,
        title: None,
        tone: "",
        approved: None,
        call: None,
    }
}

fn note(event: usize, title: String, text: String, tone: &'static str) -> Entry {
    Entry {
        title: Some(title),
        text: Some(text),
        tone,
        ..entry("note", event)
    }
}

fn change(path: String, before: Option<&Value>, after: Option<&Value>) -> Change {
    Change {
        path,
        op: match (before, after) {
            (None, _) => "added",
            (_, None) => "removed",
            _ => "changed",
        },
        before: before.cloned().unwrap_or(Value::Null),
        after: after.cloned().unwrap_or(Value::Null),
    }
}

/// The conversation of a trajectory's events.
fn transcript(events: &[Event], final_answer: Option<&str>) -> Vec<Entry> {
    let mut out: Vec<Entry> = Vec::new();
    // A fault is shown on the card of the call it hit, whichever event came first.
    let mut card_of: HashMap<&str, usize> = HashMap::new();
    let mut faults: Vec<(usize, &str, String, &str)> = Vec::new();
    for (i, e) in events.iter().enumerate() {
        let next = match e {
            Event::UserMessage { text } => Entry {
                text: Some(text.clone()),
                ..entry("user", i)
            },
            Event::AgentMessage { step, text } => Entry {
                step: Some(*step),
                text: Some(text.clone()),
                ..entry("agent", i)
            },
            Event::Reasoning { step, text } => Entry {
                step: Some(*step),
                text: Some(text.clone()),
                ..entry("reasoning", i)
            },
            Event::Question { step, text } => Entry {
                step: Some(*step),
                text: Some(text.clone()),
                ..entry("question", i)
            },
            Event::ConfirmationRequest { step, text } => Entry {
                step: Some(*step),
                text: Some(text.clone()),
                ..entry("confirmation_request", i)
            },
            Event::ConfirmationResponse { text, approved } => Entry {
                text: Some(text.clone()),
                approved: Some(*approved),
                tone: if *approved { "ok" } else { "bad" },
                ..entry("confirmation", i)
            },
            Event::FaultInjected {
                call_id,
                tool,
                kind,
                source,
            } => {
                faults.push((i, call_id, kind_name(*kind), source));
                // Placed where it happened unless a card takes it (below).
                note(
                    i,
                    format!("fault injected: {}", kind_name(*kind)),
                    format!("on {tool} ({call_id}), from {source}"),
                    "warn",
                )
            }
            Event::CrossTenantAccess {
                call_id,
                tool,
                record,
                tenant,
            } => note(
                i,
                "cross-tenant access".into(),
                format!("{tool} ({call_id}) touched {record} of tenant {tenant}"),
                "bad",
            ),
            Event::Wait { step, ms } => Entry {
                step: Some(*step),
                ..note(
                    i,
                    format!("waits {} ms", crate::svg::fmt(*ms)),
                    String::new(),
                    "",
                )
            },
            Event::ToolCall(c) => {
                let mut badges = Vec::new();
                if c.schema_valid == Some(false) {
                    badges.push("invalid arguments".to_owned());
                }
                if let Some(k) = &c.idempotency_key {
                    badges.push(format!("key {k}"));
                }
                if c.idempotent_replay {
                    badges.push("idempotent replay".to_owned());
                }
                card_of.insert(c.id.as_str(), out.len());
                Entry {
                    step: Some(c.step),
                    tone: if c.error.is_some() { "bad" } else { "" },
                    call: Some(Card {
                        id: c.id.clone(),
                        tool: c.tool.clone(),
                        access: c
                            .kind
                            .and_then(|k| serde_json::to_value(k).ok())
                            .and_then(|k| k.as_str().map(str::to_owned)),
                        arguments: c.arguments.clone(),
                        result: c.result.clone(),
                        error: c.error.as_ref().map(|e| {
                            serde_json::json!({"status": e.status, "message": e.message,
                                               "retry_after_s": e.retry_after_s})
                        }),
                        fault: c.fault.map(kind_name),
                        fault_source: None,
                        changes: c
                            .state_changes
                            .iter()
                            .map(|ch| {
                                change(ch.path.clone(), ch.before.as_ref(), ch.after.as_ref())
                            })
                            .collect(),
                        badges,
                        latency_ms: c.latency_ms,
                    }),
                    ..entry("tool_call", i)
                }
            }
            Event::ModelCall {
                model,
                prompt_tokens,
                completion_tokens,
                cost_eur,
                latency_ms,
                simulated_user,
                error,
                fault,
                ..
            } => Entry {
                title: Some(if *simulated_user {
                    format!("simulated user's model call: {model}")
                } else {
                    format!("model call: {model}")
                }),
                text: Some(match error {
                    Some(e) => format!("error {}: {}", e.status, e.message),
                    None => format!(
                        "{prompt_tokens} prompt + {completion_tokens} completion tokens, {} EUR, {} ms{}",
                        crate::svg::fmt(*cost_eur),
                        crate::svg::fmt(*latency_ms),
                        fault
                            .map(|f| format!(", fault {}", kind_name(f)))
                            .unwrap_or_default()
                    ),
                }),
                tone: if error.is_some() { "bad" } else { "" },
                ..entry("model_call", i)
            },
            Event::AgentStderr { text } => note(i, "agent stderr".into(), text.clone(), ""),
            Event::ToolsChanged { tools, after_calls } => note(
                i,
                "tools changed".into(),
                format!(
                    "after {after_calls} calls the descriptions of {} changed (a rug pull)",
                    tools.join(", ")
                ),
                "warn",
            ),
            Event::Trapped {
                checkpoint,
                step,
                reason,
            } => Entry {
                step: Some(*step),
                ..note(
                    i,
                    format!("trap `{checkpoint}`: the trial ended"),
                    reason.clone(),
                    "bad",
                )
            },
            Event::Unfinished { reason } => {
                note(i, "the agent did not finish".into(), reason.clone(), "bad")
            }
            Event::AgentCrashed { reason } => {
                note(i, "the agent crashed".into(), reason.clone(), "bad")
            }
            Event::FinalAnswer { text } => Entry {
                text: Some(text.clone()),
                ..entry("final_answer", i)
            },
        };
        out.push(next);
    }
    // Faults onto their calls' cards; the standalone note is dropped.
    let mut dropped = BTreeSet::new();
    for (event, call_id, kind, source) in faults {
        let Some(&at) = card_of.get(call_id) else {
            continue;
        };
        let card = &mut out[at];
        card.events.push(event);
        if let Some(call) = card.call.as_mut() {
            call.fault.get_or_insert(kind);
            call.fault_source = Some(source.to_owned());
        }
        dropped.insert(event);
    }
    out.retain(|e| !(e.kind == "note" && e.events.iter().all(|i| dropped.contains(i))));
    if !out.iter().any(|e| e.kind == "final_answer")
        && let Some(text) = final_answer
    {
        out.push(Entry {
            events: Vec::new(),
            text: Some(text.to_owned()),
            ..entry("final_answer", 0)
        });
    }
    out
}

/// Every leaf that differs between two JSON values, as changed paths; a record added or
/// removed whole is one row.
pub fn diff(before: &Value, after: &Value) -> Vec<Change> {
    fn walk(before: &Value, after: &Value, path: &mut String, out: &mut Vec<Change>) {
        match (before, after) {
            (Value::Object(a), Value::Object(b)) => {
                let keys: BTreeSet<&String> = a.keys().chain(b.keys()).collect();
                for k in keys {
                    let len = path.len();
                    path.push('/');
                    path.push_str(&gauntlet_model::path::escape_segment(k));
                    match (a.get(k), b.get(k)) {
                        (Some(x), Some(y)) => walk(x, y, path, out),
                        (x, y) => out.push(change(path.clone(), x, y)),
                    }
                    path.truncate(len);
                }
            }
            (x, y) if x != y => out.push(change(path.clone(), Some(x), Some(y))),
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk(before, after, &mut String::new(), &mut out);
    out
}

/// The review of a trial record (its states as stored: whole, or the parts that changed).
pub fn review(t: &TrialRecord) -> Review {
    let mut transcript = transcript(&t.trajectory.events, t.trajectory.final_answer.as_deref());
    let mut order: Vec<&Score> = t.scores.iter().collect();
    order.sort_by_key(|s| rank(s));
    let mut verdicts: Vec<Verdict> = order.into_iter().map(verdict).collect();
    let entry_of: BTreeMap<usize, usize> = transcript
        .iter()
        .enumerate()
        .flat_map(|(n, e)| e.events.iter().map(move |&i| (i, n)))
        .collect();
    for (v, verdict) in verdicts.iter_mut().enumerate() {
        let mut entries: Vec<usize> = verdict
            .events
            .iter()
            .filter_map(|i| entry_of.get(i).copied())
            .collect();
        entries.dedup();
        for &n in &entries {
            if transcript[n].verdicts.last() != Some(&v) {
                transcript[n].verdicts.push(v);
            }
        }
        verdict.entries = entries;
    }
    let mismatches = t
        .scores
        .iter()
        .filter(|s| s.name == gauntlet_model::names::STATE_VERIFICATION)
        .filter_map(|s| s.details.get("mismatches").and_then(Value::as_object))
        .flatten()
        .map(|(path, v)| Mismatch {
            path: path.clone(),
            expected: v.get("expected").cloned().unwrap_or(Value::Null),
            actual: v.get("actual").cloned().unwrap_or(Value::Null),
        })
        .collect();
    Review {
        case_id: t.case_id.clone(),
        epoch: t.epoch,
        status: match t.status {
            TrialStatus::Passed => "passed",
            TrialStatus::Failed => "failed",
            TrialStatus::Error => "error",
        },
        error: t.error.clone(),
        request: t.trajectory.events.iter().find_map(|e| match e {
            Event::UserMessage { text } => Some(text.clone()),
            _ => None,
        }),
        transcript,
        verdicts,
        diff: diff(&t.initial_state, &t.final_state),
        mismatches,
        judge_verdicts: t.judges.iter().map(judge).collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn record(events: Value, scores: Value, initial: Value, final_state: Value) -> TrialRecord {
        serde_json::from_value(json!({
            "case_id": "c", "epoch": 0, "seed": 1, "trace_id": "0".repeat(32),
            "status": "failed", "tags": [], "initial_state": initial, "final_state": final_state,
            "trajectory": {"events": events}, "scores": scores, "duration_ms": 1.0,
        }))
        .unwrap()
    }

    fn score(name: &str, passed: bool, severity: &str, events: Value) -> Value {
        json!({"name": name, "dimension": "outcome", "value": 0.0, "score": 0.0,
               "passed": passed, "severity": severity, "events": events,
               "reason": if passed { Value::Null } else { json!(format!("{name} failed")) }})
    }

    #[test]
    fn a_call_is_one_card_with_its_fault_and_changes_and_failing_verdicts_come_first() {
        let t = record(
            json!([
                {"type": "user_message", "text": "close INC-1"},
                {"type": "fault_injected", "call_id": "c1", "tool": "close", "kind": "timeout", "source": "case"},
                {"type": "tool_call", "id": "c1", "step": 1, "tool": "close", "arguments": {"id": "INC-1"},
                 "error": {"status": 504, "message": "timed out"}, "at_ms": 0.0, "latency_ms": 1.0},
                {"type": "tool_call", "id": "c2", "step": 2, "tool": "close", "arguments": {"id": "INC-1"},
                 "result": {"ok": true}, "at_ms": 1.0, "latency_ms": 1.0,
                 "state_changes": [{"path": "/incidents/INC-1/status", "before": "open", "after": "closed"}]},
                {"type": "final_answer", "text": "done"}
            ]),
            json!([
                score("a_pass", true, "error", json!([])),
                score("a_note", false, "info", json!([2])),
                score("an_error", false, "error", json!([3])),
                score("a_critical", false, "critical", json!([1, 2])),
            ]),
            json!({"incidents": {"INC-1": {"status": "open", "owner": "x"}}}),
            json!({"incidents": {"INC-1": {"status": "closed", "owner": "x"}, "INC-2": {"status": "new"}}}),
        );
        let r = review(&t);
        let kinds: Vec<&str> = r.transcript.iter().map(|e| e.kind).collect();
        assert_eq!(kinds, ["user", "tool_call", "tool_call", "final_answer"]);
        let first = r.transcript[1].call.as_ref().unwrap();
        assert_eq!(first.fault.as_deref(), Some("timeout"));
        assert_eq!(first.fault_source.as_deref(), Some("case"));
        assert_eq!(r.transcript[1].events, [2, 1]);
        assert_eq!(
            r.transcript[2].call.as_ref().unwrap().changes[0].after,
            "closed"
        );
        let names: Vec<&str> = r.verdicts.iter().map(|v| v.name.as_str()).collect();
        assert_eq!(names, ["a_critical", "an_error", "a_pass", "a_note"]);
        assert_eq!(r.verdicts[3].status, "note");
        // The critical verdict points at the fault and the call: one card.
        assert_eq!(r.verdicts[0].entries, [1]);
        assert_eq!(r.transcript[1].verdicts, [0, 3]);
        assert_eq!(r.transcript[2].verdicts, [1]);
        assert_eq!(r.request.as_deref(), Some("close INC-1"));
        assert_eq!(
            r.diff,
            [
                change(
                    "/incidents/INC-1/status".into(),
                    Some(&json!("open")),
                    Some(&json!("closed"))
                ),
                change(
                    "/incidents/INC-2".into(),
                    None,
                    Some(&json!({"status": "new"}))
                ),
            ]
        );
        assert_eq!(r.diff[1].op, "added");
        let json = serde_json::to_value(&r).unwrap();
        for key in [
            "transcript",
            "verdicts",
            "diff",
            "mismatches",
            "request",
            "judge_verdicts",
        ] {
            assert!(json.get(key).is_some(), "{key} missing from {json}");
        }
    }
}
