//! Tools and arguments beyond schema validity: accuracy against the reference, corrections after
//! a validation error, the right tool on the wrong entity, unnecessary calls, BFCL's matcher, and
//! the agentevals trajectory match.

use gauntlet_model::names;
use std::collections::{BTreeMap, BTreeSet};

use gauntlet_model::{
    Case, Dimension, Event, ReferenceStep, Score, Severity, ToolCall, ToolSpec, Trajectory,
};
use serde_json::{Value, json};

use crate::trajectory_match::{CallRef, Message, feedback_key, trajectory_match};

fn score(
    name: &str,
    dimension: Dimension,
    severity: Severity,
    value: f64,
    passed: bool,
    details: Value,
    events: Vec<usize>,
) -> Score {
    Score {
        name: name.to_owned(),
        dimension,
        value,
        score: value.clamp(0.0, 1.0),
        passed,
        severity,
        details,
        events,
        reason: None,
    }
}

fn calls(t: &Trajectory) -> Vec<(usize, &ToolCall)> {
    t.events
        .iter()
        .enumerate()
        .filter_map(|(i, e)| match e {
            Event::ToolCall(c) => Some((i, c.as_ref())),
            _ => None,
        })
        .collect()
}

fn reference_calls(case: &Case) -> Vec<(&str, Value)> {
    case.reference_trajectory
        .iter()
        .filter_map(|s| {
            s.tool.as_deref().map(|t| {
                (
                    t,
                    s.args.clone().unwrap_or(Value::Object(Default::default())),
                )
            })
        })
        .collect()
}

/// `argument_accuracy`: the k-th call of each tool against the k-th reference call of that tool,
/// field by field (informational: a reference is one valid path, not the only one).
pub fn argument_accuracy(case: &Case, t: &Trajectory) -> Option<Score> {
    let reference = reference_calls(case);
    if reference.is_empty() {
        return None;
    }
    let mut by_tool: BTreeMap<&str, Vec<&ToolCall>> = BTreeMap::new();
    for (_, c) in calls(t) {
        by_tool.entry(c.tool.as_str()).or_default().push(c);
    }
    let mut seen: BTreeMap<&str, usize> = BTreeMap::new();
    let (mut right, mut total) = (0usize, 0usize);
    let mut wrong = Vec::new();
    for (tool, args) in &reference {
        let k = seen.entry(tool).or_default();
        let actual = by_tool.get(tool).and_then(|v| v.get(*k));
        *k += 1;
        for (field, want) in args.as_object().into_iter().flatten() {
            total += 1;
            match actual.and_then(|c| c.arguments.get(field)) {
                Some(got) if got == want => right += 1,
                got => wrong
                    .push(json!({"tool": tool, "field": field, "expected": want, "actual": got})),
            }
        }
    }
    if total == 0 {
        return None;
    }
    let ratio = right as f64 / total as f64;
    Some(score(
        names::ARGUMENT_ACCURACY,
        Dimension::Tools,
        Severity::Info,
        ratio,
        wrong.is_empty(),
        json!({"fields": total, "wrong": wrong}),
        Vec::new(),
    ))
}

/// `corrected_after_validation`: of the calls rejected for invalid arguments, the share followed
/// by a valid call of the same tool.
pub fn corrected_after_validation(t: &Trajectory) -> Option<Score> {
    let cs = calls(t);
    let invalid: Vec<(usize, usize)> = cs
        .iter()
        .enumerate()
        .filter(|(_, (_, c))| c.schema_valid == Some(false))
        .map(|(p, (i, _))| (p, *i))
        .collect();
    if invalid.is_empty() {
        return None;
    }
    let mut uncorrected = Vec::new();
    for (pos, idx) in &invalid {
        let tool = &cs[*pos].1.tool;
        if !cs[pos + 1..]
            .iter()
            .any(|(_, c)| &c.tool == tool && c.schema_valid == Some(true))
        {
            uncorrected.push(*idx);
        }
    }
    let ratio = (invalid.len() - uncorrected.len()) as f64 / invalid.len() as f64;
    Some(score(
        names::CORRECTED_AFTER_VALIDATION,
        Dimension::Tools,
        Severity::Info,
        ratio,
        uncorrected.is_empty(),
        json!({"invalid_calls": invalid.len(), "uncorrected": uncorrected.len()}),
        uncorrected,
    ))
}

fn is_entity_key(k: &str) -> bool {
    k == "id"
        || k.ends_with("_id")
        || k.ends_with("Id")
        || k.ends_with("_number")
        || k.ends_with("_no")
}

/// `right_tool_wrong_entity`: a reference call names an entity (`*_id`, `*_number`, ...) and the
/// agent called that tool, but never on that entity.
pub fn right_tool_wrong_entity(case: &Case, t: &Trajectory) -> Option<Score> {
    let reference = reference_calls(case);
    let cs = calls(t);
    let mut checked = 0;
    let mut wrong = Vec::new();
    let mut events = Vec::new();
    for (tool, args) in &reference {
        let same_tool: Vec<&(usize, &ToolCall)> =
            cs.iter().filter(|(_, c)| c.tool == *tool).collect();
        if same_tool.is_empty() {
            continue;
        }
        for (field, want) in args
            .as_object()
            .into_iter()
            .flatten()
            .filter(|(k, _)| is_entity_key(k))
        {
            checked += 1;
            if !same_tool
                .iter()
                .any(|(_, c)| c.arguments.get(field) == Some(want))
            {
                wrong.push(json!({"tool": tool, "field": field, "expected": want,
                    "used": same_tool.iter().filter_map(|(_, c)| c.arguments.get(field).cloned()).collect::<Vec<_>>()}));
                events.extend(same_tool.iter().map(|(i, _)| *i));
            }
        }
    }
    if checked == 0 {
        return None;
    }
    let passed = wrong.is_empty();
    Some(score(
        names::RIGHT_TOOL_WRONG_ENTITY,
        Dimension::Tools,
        Severity::Info,
        wrong.len() as f64,
        passed,
        json!({"entities": checked, "wrong": wrong}),
        events,
    ))
}

/// `unnecessary_calls`: calls of tools outside every set the case expects (required, expected,
/// one-of groups, ordered chains, reference), when the case names any.
pub fn unnecessary_calls(case: &Case, t: &Trajectory) -> Option<Score> {
    let c = &case.trajectory_constraints;
    let mut expected: BTreeSet<&str> = BTreeSet::new();
    expected.extend(c.required_tools.iter().map(String::as_str));
    expected.extend(case.expected_tools.iter().map(String::as_str));
    expected.extend(c.one_of.iter().flatten().map(String::as_str));
    expected.extend(c.order.iter().flatten().map(String::as_str));
    expected.extend(
        case.reference_trajectory
            .iter()
            .filter_map(|s: &ReferenceStep| s.tool.as_deref()),
    );
    if expected.is_empty() {
        return None;
    }
    let cs = calls(t);
    let extra: Vec<(usize, &str)> = cs
        .iter()
        .filter(|(_, c)| !expected.contains(c.tool.as_str()))
        .map(|(i, c)| (*i, c.tool.as_str()))
        .collect();
    let ratio = if cs.is_empty() {
        0.0
    } else {
        extra.len() as f64 / cs.len() as f64
    };
    let mut s = score(
        names::UNNECESSARY_CALLS,
        Dimension::Tools,
        Severity::Info,
        extra.len() as f64,
        extra.is_empty(),
        json!({"tools": extra.iter().map(|(_, t)| *t).collect::<Vec<_>>(), "share": ratio}),
        extra.iter().map(|(i, _)| *i).collect(),
    );
    s.score = 1.0 - ratio;
    Some(s)
}

/// The BFCL type name of a JSON Schema type.
fn bfcl_type(schema: &Value) -> Value {
    let t = schema.get("type").and_then(Value::as_str).unwrap_or("any");
    let mapped = match t {
        "number" => "float",
        "object" => "dict",
        other => other,
    };
    let mut out = json!({"type": mapped});
    if let Some(items) = schema.get("items") {
        out["items"] = bfcl_type(items);
    }
    out
}

/// A world tool as a BFCL function description.
fn bfcl_description(tool: &ToolSpec) -> Value {
    let props: serde_json::Map<String, Value> = tool
        .parameters
        .get("properties")
        .and_then(Value::as_object)
        .map(|p| p.iter().map(|(k, v)| (k.clone(), bfcl_type(v))).collect())
        .unwrap_or_default();
    json!({"name": tool.name, "parameters": {"type": "dict", "properties": props,
        "required": tool.parameters.get("required").cloned().unwrap_or(json!([]))}})
}

/// `bfcl_ast_match`: the trajectory's calls against the case's `expected_calls` with BFCL's rules
/// (one expected call: exactly one call; several: parallel, in any order).
pub fn bfcl_ast_match(case: &Case, t: &Trajectory, tools: &[ToolSpec]) -> Option<Score> {
    if case.expected_calls.is_empty() {
        return None;
    }
    let descriptions: Vec<Value> = tools.iter().map(bfcl_description).collect();
    let made: Vec<Value> = calls(t)
        .iter()
        .map(|(_, c)| json!({ c.tool.clone(): c.arguments }))
        .collect();
    let category = if case.expected_calls.len() == 1 {
        crate::bfcl::Category::Multiple
    } else {
        crate::bfcl::Category::Parallel
    };
    let v = crate::bfcl::check(category, &descriptions, &made, &case.expected_calls);
    let value = f64::from(u8::from(v.valid));
    Some(score(
        names::BFCL_AST_MATCH,
        Dimension::Tools,
        Severity::Error,
        value,
        v.valid,
        if v.valid {
            Value::Null
        } else {
            json!({"error": v.error, "error_type": v.error_type})
        },
        Vec::new(),
    ))
}

/// The trajectory as OpenAI-style messages: the request, each step's tool calls as one assistant
/// message followed by the tool messages, and the final answer. Confirmations, questions and the
/// user's replies are left out, on both sides alike.
pub fn messages_of(t: &Trajectory) -> Vec<Message> {
    let mut out = Vec::new();
    let mut pending_step = None;
    let mut results: Vec<Message> = Vec::new();
    let flush = |out: &mut Vec<Message>, results: &mut Vec<Message>| out.append(results);
    for e in &t.events {
        match e {
            Event::UserMessage { text } if out.is_empty() => out.push(Message {
                role: "user".into(),
                tool_calls: None,
                content: text.clone(),
            }),
            Event::ToolCall(c) => {
                let call = CallRef {
                    name: c.tool.clone(),
                    args: c.arguments.clone(),
                };
                if pending_step == Some(c.step)
                    && let Some(last) = out
                        .last_mut()
                        .filter(|m| m.role == "assistant" && m.tool_calls.is_some())
                {
                    last.tool_calls.get_or_insert_with(Vec::new).push(call);
                } else {
                    flush(&mut out, &mut results);
                    out.push(Message {
                        role: "assistant".into(),
                        tool_calls: Some(vec![call]),
                        content: String::new(),
                    });
                    pending_step = Some(c.step);
                }
                let content = c.result.as_ref().map_or_else(
                    || {
                        c.error
                            .as_ref()
                            .map(|e| e.message.clone())
                            .unwrap_or_default()
                    },
                    |r| r.to_string(),
                );
                results.push(Message {
                    role: "tool".into(),
                    tool_calls: None,
                    content,
                });
            }
            Event::FinalAnswer { text } => {
                flush(&mut out, &mut results);
                out.push(Message {
                    role: "assistant".into(),
                    tool_calls: None,
                    content: text.clone(),
                });
            }
            _ => {}
        }
    }
    flush(&mut out, &mut results);
    out
}

/// The case's reference trajectory as messages (each tool step its own assistant message).
pub fn reference_messages(case: &Case) -> Vec<Message> {
    let mut out = vec![Message {
        role: "user".into(),
        tool_calls: None,
        content: case.user_input.clone(),
    }];
    for s in &case.reference_trajectory {
        if let Some(tool) = &s.tool {
            for _ in 0..s.repeat.unwrap_or(1).max(1) {
                out.push(Message {
                    role: "assistant".into(),
                    tool_calls: Some(vec![CallRef {
                        name: tool.clone(),
                        args: s.args.clone().unwrap_or(Value::Object(Default::default())),
                    }]),
                    content: String::new(),
                });
                out.push(Message {
                    role: "tool".into(),
                    tool_calls: None,
                    content: String::new(),
                });
            }
        } else if let Some(a) = &s.answer {
            out.push(Message {
                role: "assistant".into(),
                tool_calls: None,
                content: a.clone(),
            });
        }
    }
    out
}

/// `trajectory_<mode>_match` (agentevals' feedback keys), when the case asks for it.
pub fn reference_match(case: &Case, t: &Trajectory) -> Option<Score> {
    let cfg = case.trajectory_match.as_ref()?;
    let result = trajectory_match(&messages_of(t), &reference_messages(case), cfg);
    let passed = result.is_ok();
    Some(score(
        feedback_key(cfg.mode),
        Dimension::Trajectory,
        Severity::Error,
        f64::from(u8::from(passed)),
        passed,
        match result {
            Ok(()) => Value::Null,
            Err(reason) => json!({"reason": reason.to_string()}),
        },
        Vec::new(),
    ))
}

/// `replay_agreement`: in a replay, the share of calls whose output today equals the recorded
/// one (an error compares by its message); the differences in details.
pub fn replay_agreement(t: &Trajectory) -> Option<Score> {
    let mut total = 0usize;
    let mut differ = Vec::new();
    let mut events = Vec::new();
    for (i, c) in calls(t) {
        let Some(recorded) = &c.recorded_output else {
            continue;
        };
        total += 1;
        let now = match (&c.result, &c.error) {
            (Some(v), _) => v.clone(),
            (None, Some(e)) => Value::String(e.message.clone()),
            _ => Value::Null,
        };
        let same = now == *recorded
            || matches!((&now, recorded), (Value::String(a), Value::String(b)) if b.contains(a.as_str()) || a.contains(b.as_str()));
        if !same {
            events.push(i);
            if differ.len() < 10 {
                differ
                    .push(json!({"call": c.id, "tool": c.tool, "recorded": recorded, "now": now}));
            }
        }
    }
    if total == 0 {
        return None;
    }
    let ratio = (total - events.len()) as f64 / total as f64;
    Some(score(
        names::REPLAY_AGREEMENT,
        Dimension::Tools,
        Severity::Info,
        ratio,
        events.is_empty(),
        json!({"calls": total, "differences": differ}),
        events,
    ))
}
