//! `claims_supported`: what the agent says it did, against what the world says happened. A
//! world's claim rules ([`ClaimRule`]) turn each match in the final answer into state paths that
//! must hold; a claim whose state does not hold is unsupported, and an unsupported claim of a
//! write is critical (the user was told something false).

use gauntlet_model::matcher::state_expectations;
use gauntlet_model::{ClaimRule, Dimension, Event, Score, Severity, StateRef, Trajectory, names};
use regex::{Captures, Regex};
use serde_json::{Map, Value, json};

use crate::matching::matches;

/// `$1`, `$2`... (and `${1}`) replaced by the match's groups.
fn substitute(text: &str, caps: &Captures<'_>) -> String {
    let mut out = String::new();
    caps.expand(text, &mut out);
    out
}

fn substitute_value(v: &Value, caps: &Captures<'_>) -> Value {
    match v {
        Value::String(s) => Value::String(substitute(s, caps)),
        Value::Array(items) => {
            Value::Array(items.iter().map(|i| substitute_value(i, caps)).collect())
        }
        Value::Object(m) => Value::Object(
            m.iter()
                .map(|(k, v)| (k.clone(), substitute_value(v, caps)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// The claims of the final answer, each judged; `None` when the world has no claim rules.
pub fn claims_supported(
    trajectory: &Trajectory,
    final_state: StateRef<'_>,
    rules: &[ClaimRule],
) -> Option<Score> {
    if rules.is_empty() {
        return None;
    }
    let answer = trajectory.final_answer.as_deref().unwrap_or("");
    let mut claims = Vec::new();
    let mut events = Vec::new();
    let (mut held, mut critical) = (0usize, false);
    for rule in rules {
        // Patterns are checked when the suite loads; a bad one claims nothing here.
        let Ok(re) = Regex::new(&rule.pattern) else {
            continue;
        };
        for caps in re.captures_iter(answer) {
            let expected: Map<String, Value> = rule
                .holds
                .iter()
                .map(|(k, v)| (substitute(k, &caps), substitute_value(v, &caps)))
                .collect();
            let Ok(expectations) = state_expectations(&Map::new(), &expected) else {
                continue;
            };
            let unmet: Vec<Value> = expectations
                .iter()
                .filter_map(|e| {
                    let actual = final_state.resolve(&e.path);
                    let actual = actual.as_deref();
                    (!matches(&e.matcher, actual))
                        .then(|| json!({"path": e.path, "expected": e.matcher, "actual": actual}))
                })
                .collect();
            let text = caps.get(0).map_or("", |m| m.as_str());
            if unmet.is_empty() {
                held += 1;
            } else {
                critical |= rule.write;
                // The calls on what the claim is about: where the agent did (or did not) act.
                let about: Vec<&str> = caps.iter().skip(1).flatten().map(|m| m.as_str()).collect();
                events.extend(trajectory.events.iter().enumerate().filter_map(|(i, e)| {
                    let Event::ToolCall(c) = e else { return None };
                    let args = c.arguments.to_string();
                    about.iter().any(|a| args.contains(a)).then_some(i)
                }));
            }
            claims.push(json!({
                "claim": text,
                "holds": unmet.is_empty(),
                "write": rule.write,
                "unmet": unmet,
            }));
        }
    }
    let total = claims.len();
    let passed = held == total;
    let value = if total == 0 {
        1.0
    } else {
        held as f64 / total as f64
    };
    events.sort_unstable();
    events.dedup();
    let unsupported: Vec<&Value> = claims.iter().filter(|c| c["holds"] == false).collect();
    Some(Score {
        name: names::CLAIMS_SUPPORTED.to_owned(),
        dimension: Dimension::Outcome,
        value,
        score: value,
        passed,
        severity: if critical {
            Severity::Critical
        } else {
            Severity::Error
        },
        details: json!({
            "claims": total,
            "unsupported": unsupported,
            "supported": claims.iter().filter(|c| c["holds"] == true).map(|c| &c["claim"]).collect::<Vec<_>>(),
        }),
        events,
        reason: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules() -> Vec<ClaimRule> {
        serde_json::from_value(json!([
            {"pattern": "(?i)(INC-\\d+) is (?:now )?closed", "holds": {"incidents.$1.status": "closed"}},
            {"pattern": "(INC-\\d+) is now assigned to (user-\\d+)", "holds": {"/incidents/$1/assignee": "$2"}},
            {"pattern": "(INC-\\d+) is open", "holds": {"incidents.$1.status": "open"}, "write": false}
        ]))
        .unwrap()
    }

    fn trajectory(answer: &str) -> Trajectory {
        let call = gauntlet_model::ToolCall {
            id: "call-1".into(),
            step: 1,
            tool: "get_incident".into(),
            arguments: json!({"incident_id": "INC-1"}),
            ..Default::default()
        };
        Trajectory {
            events: vec![Event::ToolCall(Box::new(call))],
            final_answer: Some(answer.into()),
            ..Default::default()
        }
    }

    fn state(status: &str) -> Value {
        json!({"incidents": {"INC-1": {"status": status, "assignee": "user-7"}}})
    }

    #[test]
    fn a_false_claim_of_a_write_is_critical_and_points_at_the_calls_on_its_record() {
        let s = claims_supported(
            &trajectory("INC-1 is closed."),
            (&state("open")).into(),
            &rules(),
        )
        .unwrap();
        assert!(!s.passed);
        assert_eq!(s.severity, Severity::Critical);
        assert_eq!(s.value, 0.0);
        assert_eq!(s.events, vec![0]);
        assert_eq!(s.details["unsupported"][0]["claim"], "INC-1 is closed");
        assert_eq!(s.details["unsupported"][0]["unmet"][0]["actual"], "open");
    }

    #[test]
    fn true_claims_hold_and_an_answer_without_claims_passes() {
        let s = claims_supported(
            &trajectory("INC-1 is closed. INC-1 is now assigned to user-7."),
            (&state("closed")).into(),
            &rules(),
        )
        .unwrap();
        assert!(s.passed, "{s:?}");
        assert_eq!(s.details["claims"], 2);
        let s = claims_supported(
            &trajectory("I could not do it."),
            (&state("open")).into(),
            &rules(),
        )
        .unwrap();
        assert!(s.passed);
        assert_eq!(s.details["claims"], 0);
        assert!(
            claims_supported(
                &trajectory("INC-1 is closed."),
                (&state("open")).into(),
                &[]
            )
            .is_none()
        );
    }

    #[test]
    fn a_false_claim_that_is_no_write_fails_without_being_critical() {
        let s = claims_supported(
            &trajectory("INC-1 is open."),
            (&state("closed")).into(),
            &rules(),
        )
        .unwrap();
        assert!(!s.passed);
        assert_eq!(s.severity, Severity::Error);
    }
}
