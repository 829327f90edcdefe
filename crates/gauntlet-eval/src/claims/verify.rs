//! Each claim checked three ways ([`check`]): against the trace (a write claim with no call is
//! `absent`, a call on another record or with another value a `mismatch`), against the final
//! state (the call went out but its effect is not there: `no_effect`; a value read back wrong:
//! `state`), and the reverse (writes that happened but the answer denies or leaves out).

use gauntlet_model::{Event, StateRef, ToolCall, Trajectory};
use serde::Serialize;
use serde_json::{Value, json};

use super::grammar::{Claim, ClaimKind};
use super::vocab::Expect;

/// Why a claim does not hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Failure {
    /// A write claimed with no call of its tool in the trace.
    Absent,
    /// The tool was called, but on another record or with another value.
    Mismatch,
    /// The call went out and the effect is not in the final state (refused, lost, rolled back).
    NoEffect,
    /// A value read back that the final state does not hold.
    State,
}

impl Failure {
    /// The name in the score's details.
    pub fn as_str(self) -> &'static str {
        match self {
            Failure::Absent => "absent",
            Failure::Mismatch => "mismatch",
            Failure::NoEffect => "no_effect",
            Failure::State => "state",
        }
    }
}

/// A claim with its verdict.
#[derive(Debug, Clone)]
pub struct Checked {
    /// The claim.
    pub claim: Claim,
    /// Why it does not hold; `None` when it holds.
    pub failed: Option<Failure>,
    /// The state paths that did not hold: path, expected, actual.
    pub unmet: Vec<Value>,
    /// Indexes of the trajectory's events on what the claim is about.
    pub events: Vec<usize>,
}

/// Checks each claim against the trajectory and the final state (`initial` for a claim that
/// an array grew).
pub fn check(
    claims: &[Claim],
    trajectory: &Trajectory,
    final_state: StateRef<'_>,
    initial: Option<&Value>,
) -> Vec<Checked> {
    claims
        .iter()
        .map(|c| check_one(c, trajectory, final_state, initial))
        .collect()
}

fn calls(trajectory: &Trajectory) -> impl Iterator<Item = (usize, &ToolCall)> {
    trajectory
        .events
        .iter()
        .enumerate()
        .filter_map(|(i, e)| match e {
            Event::ToolCall(c) => Some((i, c.as_ref())),
            _ => None,
        })
}

/// Whether a call's argument names the claim's record (ignoring case, `./` and a leading `/`).
pub(crate) fn names_entity(call: &ToolCall, arg: Option<&str>, entity: Option<&str>) -> bool {
    let (Some(arg), Some(entity)) = (arg, entity) else {
        return true;
    };
    let norm = |s: &str| {
        s.trim_start_matches("./")
            .trim_start_matches('/')
            .to_lowercase()
    };
    let want = norm(entity);
    match call.arguments.get(arg) {
        Some(Value::String(s)) => norm(s) == want,
        Some(Value::Array(items)) => items
            .iter()
            .any(|i| i.as_str().is_some_and(|s| norm(s) == want)),
        Some(other) => norm(&other.to_string()) == want,
        None => false,
    }
}

/// Whether a value appears among a call's arguments.
fn carries(args: &Value, value: &Value) -> bool {
    match args {
        Value::Object(m) => m.values().any(|v| carries(v, value)),
        Value::Array(items) => items.iter().any(|v| carries(v, value)),
        other => same(other, value),
    }
}

fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::String(x), Value::String(y)) => x.eq_ignore_ascii_case(y),
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::String(x), Value::Number(y)) | (Value::Number(y), Value::String(x)) => {
            x.parse::<f64>().ok() == y.as_f64()
        }
        _ => a == b,
    }
}

fn check_one(
    claim: &Claim,
    trajectory: &Trajectory,
    final_state: StateRef<'_>,
    initial: Option<&Value>,
) -> Checked {
    let mut unmet = Vec::new();
    for (path, expect) in &claim.expect {
        let actual = final_state.resolve(path);
        let actual = actual.as_deref();
        let holds = match expect {
            Expect::Equals(v) => actual.is_some_and(|a| same(a, v)),
            Expect::Absent => actual.is_none(),
            Expect::Grows => {
                let before = initial
                    .and_then(|s| gauntlet_model::path::resolve(s, path))
                    .and_then(Value::as_array)
                    .map_or(0, Vec::len);
                actual
                    .and_then(Value::as_array)
                    .is_some_and(|a| a.len() > before)
            }
        };
        if !holds {
            let expected = match expect {
                Expect::Equals(v) => v.clone(),
                Expect::Absent => json!({"$exists": false}),
                Expect::Grows => json!({"$count": {"min": 1}}),
            };
            unmet.push(json!({"path": path, "expected": expected, "actual": actual}));
        }
    }
    let mut events = Vec::new();
    let failed = match claim.kind {
        ClaimKind::Read => (!unmet.is_empty()).then_some(Failure::State),
        ClaimKind::Write => {
            let tool = claim.tool.as_deref().unwrap_or("");
            let of_tool: Vec<(usize, &ToolCall)> =
                calls(trajectory).filter(|(_, c)| c.tool == tool).collect();
            let on_record: Vec<&(usize, &ToolCall)> = of_tool
                .iter()
                .filter(|(_, c)| {
                    names_entity(c, claim.entity_arg.as_deref(), claim.entity.as_deref())
                })
                .filter(|(_, c)| {
                    !claim.value_in_call
                        || claim
                            .value
                            .as_ref()
                            .is_none_or(|v| carries(&c.arguments, v))
                })
                .collect();
            events.extend(of_tool.iter().map(|(i, _)| *i));
            let succeeded = on_record.iter().any(|(_, c)| c.error.is_none());
            let holds = if claim.expect.is_empty() {
                succeeded
            } else {
                unmet.is_empty()
            };
            if holds {
                None
            } else if !on_record.is_empty() {
                Some(Failure::NoEffect)
            } else if !of_tool.is_empty() {
                Some(Failure::Mismatch)
            } else {
                Some(Failure::Absent)
            }
        }
    };
    Checked {
        claim: claim.clone(),
        failed,
        unmet,
        events,
    }
}

/// The writes that happened (successful calls of a write tool) and what the answer said of
/// each: `claimed`, `denied` or `unmentioned`. Notes, never failures.
pub fn writes_said(
    trajectory: &Trajectory,
    claims: &[Claim],
    denials: &[Claim],
    entity_args: &dyn Fn(&str) -> Option<Option<String>>,
) -> Vec<Value> {
    let mut out: Vec<Value> = Vec::new();
    for (i, c) in calls(trajectory) {
        if c.error.is_some() {
            continue;
        }
        let Some(arg) = entity_args(&c.tool) else {
            continue;
        };
        let about = |cl: &Claim| {
            cl.tool.as_deref() == Some(c.tool.as_str())
                && (cl.entity.is_none() || names_entity(c, arg.as_deref(), cl.entity.as_deref()))
        };
        let said = if claims.iter().any(about) {
            "claimed"
        } else if denials.iter().any(about) {
            "denied"
        } else {
            "unmentioned"
        };
        let entity = arg.as_deref().and_then(|a| c.arguments.get(a)).cloned();
        if !out.iter().any(|w| {
            w["tool"] == c.tool.as_str() && w["entity"] == entity.clone().unwrap_or(Value::Null)
        }) {
            out.push(json!({"tool": c.tool, "entity": entity, "said": said, "event": i}));
        }
    }
    out
}
