//! `checkpoints` and `first_wrong_step`: a case's glass-box assertions, judged on the state at
//! each checkpoint's point (the initial state with the recorded changes of the calls before it).

use gauntlet_model::checkpoint::{Checkpoint, CheckpointFailed, state_at};
use gauntlet_model::{Case, Dimension, Matcher, Score, Severity, ToolCall, Trajectory, names};
use serde_json::{Map, Value, json};

use crate::matching::matches;

/// What does not hold of `expect` in `state`: path → {expected, actual}.
pub fn mismatches(expect: &Map<String, Value>, state: &Value) -> Map<String, Value> {
    let mut out = Map::new();
    for (path, want) in expect {
        let actual = gauntlet_model::path::resolve(state, path);
        let ok = Matcher::from_json(want).is_ok_and(|m| matches(&m, actual));
        if !ok {
            out.insert(path.clone(), json!({"expected": want, "actual": actual}));
        }
    }
    out
}

/// Whether a checkpoint holds on a state: `Err` with what did not hold (a verdict, not an
/// error of the input or the harness: see [`CheckpointFailed`]).
pub fn check(c: &Checkpoint, state: &Value) -> Result<(), CheckpointFailed> {
    let mismatches = mismatches(&c.expect, state);
    if mismatches.is_empty() {
        Ok(())
    } else {
        Err(CheckpointFailed { mismatches })
    }
}

/// The case's checkpoint scores (none without checkpoints or an initial state).
pub fn checkpoint_scores(
    case: &Case,
    trajectory: &Trajectory,
    initial: Option<&Value>,
) -> Vec<Score> {
    let (false, Some(initial)) = (case.checkpoints.is_empty(), initial) else {
        return Vec::new();
    };
    let calls: Vec<&ToolCall> = trajectory.tool_calls().collect();
    let mut details = Vec::new();
    let mut held = 0;
    let mut first_wrong: Option<u32> = None;
    for c in &case.checkpoints {
        match c.after.locate(&calls) {
            None => {
                // Never reached: the final state's checks judge what happened instead.
                held += 1;
                details.push(json!({"checkpoint": c.label(), "reached": false, "passed": true}));
            }
            Some((n, step)) => {
                let m = mismatches(&c.expect, &state_at(initial, &calls[..n]));
                let passed = m.is_empty();
                held += usize::from(passed);
                if !passed {
                    first_wrong = Some(first_wrong.map_or(step, |s| s.min(step)));
                }
                details.push(
                    json!({"checkpoint": c.label(), "reached": true, "step": step,
                                    "passed": passed, "trap": c.trap, "mismatches": m}),
                );
            }
        }
    }
    let total = case.checkpoints.len();
    let share = held as f64 / total as f64;
    let mut scores = vec![Score {
        name: names::CHECKPOINTS.to_owned(),
        dimension: Dimension::Trajectory,
        value: share,
        score: share,
        passed: held == total,
        severity: Severity::Error,
        details: json!({"checkpoints": details}),
        events: Vec::new(),
        reason: None,
    }];
    if let Some(step) = first_wrong {
        scores.push(Score {
            name: names::FIRST_WRONG_STEP.to_owned(),
            dimension: Dimension::Trajectory,
            value: f64::from(step),
            score: 0.0,
            passed: false,
            severity: Severity::Info,
            details: json!({"info": "the agent step of the earliest failed checkpoint"}),
            events: Vec::new(),
            reason: None,
        });
    }
    scores
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wrong_first_step_is_caught_at_its_step_even_when_the_end_is_right() {
        let case: Case = serde_json::from_value(json!({
            "case_id": "c", "user_input": "x",
            "checkpoints": [
                {"name": "a first", "after": {"first_write": true}, "expect": {"/items/a/n": 2}},
                {"after": {"step": 2}, "expect": {"/items/b": {"$absent": true}}}
            ]
        }))
        .unwrap();
        let trajectory: Trajectory = serde_json::from_value(json!({"events": [
            {"type": "tool_call", "id": "call-1", "step": 1, "tool": "set", "arguments": {}, "kind": "write",
             "result": {}, "state_changes": [{"path": "/items/b", "after": {"n": 9}}]},
            {"type": "tool_call", "id": "call-2", "step": 2, "tool": "set", "arguments": {}, "kind": "write",
             "result": {}, "state_changes": [{"path": "/items/a", "after": {"n": 2}}, {"path": "/items/b", "after": null}]}
        ]}))
        .unwrap();
        let initial = json!({"items": {"a": {"n": 1}}});
        let s = checkpoint_scores(&case, &trajectory, Some(&initial));
        assert_eq!(
            (s[0].name.as_str(), s[0].value, s[0].passed),
            ("checkpoints", 0.5, false)
        );
        assert_eq!(s[0].details["checkpoints"][0]["step"], 1);
        assert_eq!(s[0].details["checkpoints"][1]["passed"], true);
        assert_eq!((s[1].name.as_str(), s[1].value), ("first_wrong_step", 1.0));
        assert!(checkpoint_scores(&case, &trajectory, None).is_empty());
    }
}
