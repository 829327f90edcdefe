//! Why a score failed, in one line a person reads without context: the expected and the actual
//! where there are any. Evaluators that know more write their own `reason`
//! (`StateVerification`, `question_asked`); every other failing score gets one here from its
//! details and the events it points at, once every score is in (custom evaluators and judges
//! included), so no failing score is ever without one.

use gauntlet_model::{Event, Score, Trajectory, names};
use serde_json::Value;

/// Gives every failing score without a reason one made from its details.
pub fn fill_reasons(scores: &mut [Score], trajectory: &Trajectory) {
    for s in scores.iter_mut().filter(|s| !s.passed) {
        if s.reason.as_deref().is_none_or(|r| r.trim().is_empty()) {
            s.reason = Some(reason_for(s, trajectory));
        }
    }
}

/// The tool call at event `i`, as `tool (call #n)`, `n` counting tool calls from 1.
fn call_at(t: &Trajectory, i: usize) -> Option<String> {
    let Event::ToolCall(c) = t.events.get(i)? else {
        return None;
    };
    let n = t.events[..=i]
        .iter()
        .filter(|e| matches!(e, Event::ToolCall(_)))
        .count();
    Some(format!("{} (call #{n})", c.tool))
}

fn calls_at(s: &Score, t: &Trajectory) -> Vec<String> {
    s.events.iter().filter_map(|&i| call_at(t, i)).collect()
}

/// A list of names or values, as `a, b and 2 more`.
fn list(v: &Value) -> String {
    let items: Vec<String> = match v {
        Value::Array(a) => a
            .iter()
            .map(|x| x.as_str().map_or_else(|| x.to_string(), str::to_owned))
            .collect(),
        Value::Null => Vec::new(),
        other => vec![
            other
                .as_str()
                .map_or_else(|| other.to_string(), str::to_owned),
        ],
    };
    match items.len() {
        0 => "none".to_owned(),
        n if n > 4 => format!("{} and {} more", items[..4].join(", "), n - 4),
        _ => items.join(", "),
    }
}

fn num(v: &Value) -> String {
    match v.as_f64() {
        Some(x) if x.fract() == 0.0 && x.abs() < 1e15 => format!("{}", x as i64),
        Some(x) => format!("{x:.3}"),
        None => v.to_string(),
    }
}

/// A failing score's reason, from what its evaluator recorded.
pub fn reason_for(s: &Score, t: &Trajectory) -> String {
    let d = &s.details;
    let calls = calls_at(s, t);
    let text = match s.name.as_str() {
        names::CONFIRMATION_BEFORE_WRITE => match d.get("reason").and_then(Value::as_str) {
            Some(r) => r.to_owned(),
            None if !calls.is_empty() => {
                format!("{} ran without an approved confirmation", calls.join(", "))
            }
            None => "a write ran without an approved confirmation".to_owned(),
        },
        names::REQUIRED_TOOL_RECALL => format!("never called {}", list(&d["missing"])),
        names::FORBIDDEN_TOOL_USED => {
            format!("called forbidden {}", list(&d["forbidden_called"]))
        }
        names::WITHIN_CALL_BUDGET => format!(
            "{} tool calls; the budget is {}",
            num(&d["tool_calls"]),
            num(&d["max_tool_calls"])
        ),
        names::LOOP_DETECTION => format!(
            "{} of {} calls repeated an earlier successful call with the same arguments{}",
            num(&d["duplicate_actions"]),
            num(&d["total_actions"]),
            if calls.is_empty() {
                String::new()
            } else {
                format!(": {}", calls.join(", "))
            }
        ),
        names::DUPLICATE_SIDE_EFFECTS => format!(
            "the same write was applied more than once: {}",
            list(&d["duplicated"])
        ),
        names::ARGUMENT_SCHEMA_VALIDITY => format!(
            "{} of {} calls had arguments that do not match the tool's schema{}",
            num(&d["invalid_calls"]),
            num(&d["checked_calls"]),
            if calls.is_empty() {
                String::new()
            } else {
                format!(": {}", calls.join(", "))
            }
        ),
        names::TOOL_SELECTION_ACCURACY => format!(
            "expected tools {}; used {}",
            list(&d["expected_tools"]),
            list(&d["used_tools"])
        ),
        names::STEP_EFFICIENCY => format!(
            "{} steps; the optimal is {}",
            num(&d["actual_steps"]),
            num(&d["optimal_steps"])
        ),
        names::ONE_OF => format!("no tool of {} was called", list(&d["unsatisfied_groups"])),
        names::TOOL_ORDER => format!("out of order: {}", compact(&d["violations"])),
        names::MAX_RETRIES_PER_TOOL => format!(
            "retried {} (at most {} allowed)",
            compact(&d["retries"]),
            num(&d["max_retries_per_tool"])
        ),
        names::WITHIN_BUDGET => format!("over budget: {}", compact(&d["exceeded"])),
        names::OUTPUT_ASSERTIONS => list(&d["failures"]),
        names::AGENT_FINISHED => format!(
            "the agent stopped before finishing: {}",
            d["reason"].as_str().unwrap_or("unfinished")
        ),
        names::CLAIMS_SUPPORTED => {
            let unsupported: Vec<String> = d["unsupported"]
                .as_array()
                .into_iter()
                .flatten()
                .take(3)
                .map(|c| {
                    let unmet: Vec<String> = c["unmet"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .take(2)
                        .map(|u| {
                            format!(
                                "{} expected {}, got {}",
                                u["path"].as_str().unwrap_or("?"),
                                matcher_words(&u["expected"]),
                                compact(&u["actual"])
                            )
                        })
                        .collect();
                    let kind = if c["write"] == true {
                        "claimed"
                    } else {
                        "said"
                    };
                    let on = c["entity"]
                        .as_str()
                        .map(|e| format!(" on {e}"))
                        .unwrap_or_default();
                    // Why, from the trace: no call, a call on something else, a call without
                    // effect (a hand-written rule's claim names no tool).
                    let why = match (c["failed"].as_str(), c["tool"].as_str()) {
                        (Some("absent"), Some(tool)) => format!("no {tool} call{on} was made"),
                        (Some("absent"), None) => "no call names it".to_owned(),
                        (Some("mismatch"), Some(tool)) => {
                            format!("{tool} was called on another record or value")
                        }
                        (Some("no_effect"), Some(tool)) => {
                            format!("the {tool} call{on} had no effect")
                        }
                        (Some("no_effect"), None) => "the call on it had no effect".to_owned(),
                        _ => String::new(),
                    };
                    let claim = compact(&c["claim"]);
                    match (unmet.is_empty(), why.is_empty()) {
                        (true, true) => {
                            format!("{kind} {claim} but the final state does not show it")
                        }
                        (true, false) => format!("{kind} {claim} but {why}"),
                        (false, true) => format!("{kind} {claim} but {}", unmet.join(", ")),
                        (false, false) => {
                            format!("{kind} {claim} but {} ({why})", unmet.join(", "))
                        }
                    }
                })
                .collect();
            if unsupported.is_empty() {
                generic(s, &calls)
            } else {
                unsupported.join("; ")
            }
        }
        names::ERROR_ATTRIBUTION => format!(
            "a note: the failure reads as {} ({})",
            d["kind"].as_str().unwrap_or("other"),
            list(&d["reasons"])
        ),
        names::TASK_SUCCESS => format!(
            "the task was not done (decided by {})",
            d["decided_by"].as_str().unwrap_or("the outcome scores")
        ),
        name if name.starts_with(names::FAULT_PREFIX) || name == names::MODEL_FAULTS => {
            let failed: Vec<String> = d["faults"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|f| f["passed"] == false)
                .map(|f| {
                    let r = f["reason"].as_str().unwrap_or("mishandled");
                    match f["call_id"].as_str() {
                        Some(id) => format!("{id}: {r}"),
                        None => r.to_owned(),
                    }
                })
                .collect();
            if failed.is_empty() {
                format!("{name} mishandled")
            } else {
                failed.join("; ")
            }
        }
        _ => generic(s, &calls),
    };
    if text.trim().is_empty() {
        generic(s, &calls)
    } else {
        text
    }
}

/// A score of no known shape: its own `reason` or `info` detail, else its value and details.
fn generic(s: &Score, calls: &[String]) -> String {
    let d = &s.details;
    if let Some(r) = ["reason", "info", "error"]
        .iter()
        .find_map(|k| d.get(*k).and_then(Value::as_str))
        .filter(|r| !r.trim().is_empty())
    {
        return r.to_owned();
    }
    let mut line = format!(
        "scored {} (value {})",
        num(&s.score.into()),
        num(&s.value.into())
    );
    if !calls.is_empty() {
        line.push_str(&format!(" at {}", calls.join(", ")));
    }
    if !d.is_null() {
        line.push_str(&format!(": {}", compact(d)));
    }
    line
}

/// What a matcher wants, in words: `"in_progress"`, `absent`, `one of "a", "b"`.
pub(crate) fn expected_words(m: &gauntlet_model::Matcher) -> String {
    use gauntlet_model::Matcher as M;
    let bound = |min: &Option<f64>, max: &Option<f64>| match (min, max) {
        (Some(a), Some(b)) => format!("between {a} and {b}"),
        (Some(a), None) => format!("at least {a}"),
        (None, Some(b)) => format!("at most {b}"),
        (None, None) => "anything".to_owned(),
    };
    let short = |v: &Value| cut_json(v, 80);
    match m {
        M::Equals(v) => short(v),
        M::Absent => "absent".to_owned(),
        M::Present => "present".to_owned(),
        M::Contains(v) => format!("to contain {}", short(v)),
        M::Regex(r) => format!("to match /{r}/"),
        M::Range { min, max } => bound(min, max),
        M::Count { min, max } => format!("a count {}", bound(min, max)),
        M::OneOf(vs) => format!(
            "one of {}",
            vs.iter().map(short).collect::<Vec<_>>().join(", ")
        ),
    }
}

/// A matcher as a score's details store it (`{"equals": "closed"}`), in words.
fn matcher_words(m: &Value) -> String {
    serde_json::from_value::<gauntlet_model::Matcher>(m.clone())
        .map_or_else(|_| compact(m), |m| expected_words(&m))
}

/// A value as JSON, cut at `max` characters.
pub(crate) fn cut_json(v: &Value, max: usize) -> String {
    let text = v.to_string();
    match text.char_indices().nth(max) {
        Some((i, _)) => format!("{}…", &text[..i]),
        None => text,
    }
}

/// A value as JSON, cut at 160 characters.
fn compact(v: &Value) -> String {
    cut_json(v, 160)
}
