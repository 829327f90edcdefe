//! Error attribution: why a failed trial failed, as the evaluation guide puts it: "An overlapping
//! description causes a selection error; a lax schema causes an argument error; a bug in code
//! causes an execution error." A harness failure is its own kind; failures none of these explain
//! (a wrong answer, a missing confirmation, a fault handled badly) are `other`.

use gauntlet_model::names;
use gauntlet_model::{Dimension, Event, Score, Severity, Trajectory, TrialStatus};
use serde_json::json;

/// The attribution kinds, in the order they are tried.
pub const KINDS: [&str; 5] = ["harness", "execution", "selection", "argument", "other"];

const SELECTION: &[&str] = &[
    names::REQUIRED_TOOL_RECALL,
    names::FORBIDDEN_TOOL_USED,
    names::TOOL_SELECTION_ACCURACY,
    names::ONE_OF,
    names::TOOL_ORDER,
];
const ARGUMENT: &[&str] = &[names::ARGUMENT_SCHEMA_VALIDITY, names::BFCL_AST_MATCH];

/// `error_attribution` for a trial (informational; `None` for a passed trial).
pub fn error_attribution(status: TrialStatus, t: &Trajectory, scores: &[Score]) -> Option<Score> {
    if status == TrialStatus::Passed {
        return None;
    }
    let failed = |names: &[&str]| -> Vec<String> {
        scores
            .iter()
            .filter(|s| !s.passed && names.contains(&s.name.as_str()))
            .map(|s| s.name.clone())
            .collect()
    };
    let world_errors: Vec<usize> = t
        .events
        .iter()
        .enumerate()
        .filter(|(_, e)| matches!(e, Event::ToolCall(c) if c.fault.is_none() && c.error.as_ref().is_some_and(|e| e.status >= 500)))
        .map(|(i, _)| i)
        .collect();
    let unknown_tools: Vec<usize> = t
        .events
        .iter()
        .enumerate()
        .filter(|(_, e)| matches!(e, Event::ToolCall(c) if c.kind.is_none() && c.error.as_ref().is_some_and(|e| e.status == 404)))
        .map(|(i, _)| i)
        .collect();
    let wrong_entity = scores
        .iter()
        .any(|s| s.name == names::RIGHT_TOOL_WRONG_ENTITY && !s.passed);
    let (kind, reasons, events) = if status == TrialStatus::Error {
        (
            "harness",
            vec!["the harness could not run the trial".to_owned()],
            Vec::new(),
        )
    } else if !world_errors.is_empty() {
        (
            "execution",
            vec![format!(
                "{} tool call(s) failed inside the world (5xx, not injected)",
                world_errors.len()
            )],
            world_errors,
        )
    } else if !failed(SELECTION).is_empty() || !unknown_tools.is_empty() {
        let mut r = failed(SELECTION);
        if !unknown_tools.is_empty() {
            r.push("called a tool the world does not have".to_owned());
        }
        ("selection", r, unknown_tools)
    } else if !failed(ARGUMENT).is_empty() || wrong_entity {
        let mut r = failed(ARGUMENT);
        if wrong_entity {
            r.push("right tool, wrong entity".to_owned());
        }
        ("argument", r, Vec::new())
    } else {
        let r = scores
            .iter()
            .filter(|s| s.fails_trial())
            .map(|s| s.name.clone())
            .collect();
        ("other", r, Vec::new())
    };
    Some(Score {
        name: names::ERROR_ATTRIBUTION.to_owned(),
        dimension: Dimension::Tools,
        value: KINDS.iter().position(|k| *k == kind).unwrap_or(4) as f64,
        score: 0.0,
        passed: false,
        severity: Severity::Info,
        details: json!({"kind": kind, "reasons": reasons}),
        events,
        reason: None,
    })
}
