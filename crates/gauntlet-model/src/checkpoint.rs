//! Glass-box checkpoints: assertions on the state at a point inside a trajectory (after step
//! N, after the k-th call of a tool, after the first write), so a case sees where errors began
//! to compound; a checkpoint marked `trap` ends its trial there.
//!
//! The state at a point is the initial state with the recorded state changes of the calls made
//! up to it ([`state_at`]): no world is needed to judge a stored trajectory.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::trajectory::ToolCall;
use crate::world::ToolKind;

/// One checkpoint of a case.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Checkpoint {
    /// Its name in reports (`after step 2` and the like when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Where in the trajectory it is taken.
    pub after: At,
    /// Paths into the state at that point, each a literal or a matcher (as `expected_outcome`).
    pub expect: Map<String, Value>,
    /// End the trial at this point when the checkpoint fails (an immediate trap), instead of
    /// running the rest.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub trap: bool,
}

/// A checkpoint that does not hold on a state: what did not, path by path (`{expected,
/// actual}`), written out as JSON.
///
/// It is a verdict on the agent's trial (it scores the trial, or ends it at a trap), not a
/// failure of the user's input or of the harness: so it has no [`crate::ErrorKind`] and does not
/// implement [`crate::Classified`], and no exit code can be made from it by mistake.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{}", Value::Object(.mismatches.clone()))]
pub struct CheckpointFailed {
    /// Path → `{expected, actual}`, for each path that does not hold.
    pub mismatches: Map<String, Value>,
}

/// A point in a trajectory: exactly one of `step`, `call` (with `nth`), `first_write`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct At {
    /// After every call of agent steps up to this one (1-based).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<u32>,
    /// After the `nth` call of this tool.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call: Option<String>,
    /// With `call`: which call of the tool (1 when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nth: Option<u32>,
    /// After the first write that succeeded.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub first_write: bool,
}

impl At {
    /// Why the point is not well defined, if it is not.
    pub fn problem(&self) -> Option<&'static str> {
        let given = usize::from(self.step.is_some())
            + usize::from(self.call.is_some())
            + usize::from(self.first_write);
        if given != 1 {
            return Some("`after` needs exactly one of `step`, `call` (with `nth`), `first_write`");
        }
        if self.nth.is_some() && self.call.is_none() {
            return Some("`after.nth` counts calls of `after.call`: give `call` too");
        }
        if self.nth == Some(0) || self.step == Some(0) {
            return Some("`after.step` and `after.nth` count from 1");
        }
        None
    }

    /// Whether the point falls right after `calls[i]` (calls so far, in order), for the kinds
    /// known as soon as the call is made (a tool's n-th call, the first write).
    pub fn is_right_after(&self, calls: &[&ToolCall], i: usize) -> bool {
        let c = calls[i];
        if let Some(tool) = &self.call {
            let nth = self.nth.unwrap_or(1) as usize;
            return c.tool == *tool
                && calls[..=i].iter().filter(|x| x.tool == *tool).count() == nth;
        }
        if self.first_write {
            let wrote = |x: &&ToolCall| x.kind == Some(ToolKind::Write) && x.error.is_none();
            return wrote(&c) && !calls[..i].iter().any(wrote);
        }
        false
    }

    /// The point in a whole trajectory: how many of its calls come before it, and the agent
    /// step it closes; `None` when the trajectory never reaches it.
    pub fn locate(&self, calls: &[&ToolCall]) -> Option<(usize, u32)> {
        if let Some(step) = self.step {
            let n = calls.iter().take_while(|c| c.step <= step).count();
            let reached =
                calls.iter().any(|c| c.step > step) || calls.iter().any(|c| c.step == step);
            return reached.then_some((n, step));
        }
        (0..calls.len())
            .find(|&i| self.is_right_after(calls, i))
            .map(|i| (i + 1, calls[i].step))
    }
}

impl Checkpoint {
    /// Its name, or a description of its point.
    pub fn label(&self) -> String {
        if let Some(n) = &self.name {
            return n.clone();
        }
        match (&self.after.step, &self.after.call) {
            (Some(s), _) => format!("after step {s}"),
            (_, Some(t)) => format!("after call {} of {t}", self.after.nth.unwrap_or(1)),
            _ => "after the first write".to_owned(),
        }
    }
}

/// The state after `calls`, from `initial` and each successful call's recorded changes.
pub fn state_at(initial: &Value, calls: &[&ToolCall]) -> Value {
    let mut state = initial.clone();
    for c in calls {
        for change in &c.state_changes {
            set_pointer(&mut state, &change.path, change.after.clone());
        }
    }
    state
}

/// Sets (or with `None` removes) the value at a JSON Pointer, creating objects on the way.
fn set_pointer(root: &mut Value, pointer: &str, value: Option<Value>) {
    let segments: Vec<String> = pointer
        .split('/')
        .skip(1)
        .map(|s| s.replace("~1", "/").replace("~0", "~"))
        .collect();
    let Some((last, parents)) = segments.split_last() else {
        if let Some(v) = value {
            *root = v;
        }
        return;
    };
    let mut at = root;
    for s in parents {
        if !at.is_object() && !at.is_array() {
            *at = Value::Object(Map::new());
        }
        at = match at {
            Value::Array(a) => match s.parse::<usize>().ok().and_then(|i| a.get_mut(i)) {
                Some(x) => x,
                None => return,
            },
            Value::Object(o) => o.entry(s.clone()).or_insert(Value::Object(Map::new())),
            _ => return,
        };
    }
    match (at, value) {
        (Value::Object(o), Some(v)) => {
            o.insert(last.clone(), v);
        }
        (Value::Object(o), None) => {
            o.shift_remove(last);
        }
        (Value::Array(a), v) => {
            if let Ok(i) = last.parse::<usize>() {
                match v {
                    Some(v) if i < a.len() => a[i] = v,
                    Some(v) if i == a.len() => a.push(v),
                    None if i < a.len() => {
                        a.remove(i);
                    }
                    _ => {}
                }
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn calls(v: Value) -> Vec<ToolCall> {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn points_and_states_are_found_from_the_trajectory() {
        let cs = calls(json!([
            {"id": "call-1", "step": 1, "tool": "get", "arguments": {}, "kind": "read", "result": {}},
            {"id": "call-2", "step": 2, "tool": "set", "arguments": {}, "kind": "write", "result": {},
             "state_changes": [{"path": "/items/a", "after": {"n": 2}}]},
            {"id": "call-3", "step": 3, "tool": "set", "arguments": {}, "kind": "write", "result": {},
             "state_changes": [{"path": "/items/b", "after": null}, {"path": "/log", "after": ["x"]}]}
        ]));
        let refs: Vec<&ToolCall> = cs.iter().collect();
        let at = |v: Value| -> At { serde_json::from_value(v).unwrap() };
        assert_eq!(at(json!({"step": 1})).locate(&refs), Some((1, 1)));
        assert_eq!(at(json!({"step": 3})).locate(&refs), Some((3, 3)));
        assert_eq!(at(json!({"step": 9})).locate(&refs), None);
        assert_eq!(
            at(json!({"call": "set", "nth": 2})).locate(&refs),
            Some((3, 3))
        );
        assert_eq!(at(json!({"call": "set", "nth": 3})).locate(&refs), None);
        assert_eq!(at(json!({"first_write": true})).locate(&refs), Some((2, 2)));
        let initial = json!({"items": {"a": {"n": 1}, "b": {"n": 5}}});
        assert_eq!(
            state_at(&initial, &refs[..2]),
            json!({"items": {"a": {"n": 2}, "b": {"n": 5}}})
        );
        assert_eq!(
            state_at(&initial, &refs),
            json!({"items": {"a": {"n": 2}}, "log": ["x"]})
        );
        assert!(
            at(json!({"step": 1, "first_write": true}))
                .problem()
                .is_some()
        );
        assert!(at(json!({"nth": 2})).problem().is_some());
    }
}
