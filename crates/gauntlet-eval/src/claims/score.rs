//! The `claims_supported` score: the share of an answer's claims that hold, critical when a
//! claim of a write is false.

use gauntlet_model::{
    ClaimRule, Dimension, Score, Severity, StateRef, ToolSpec, Trajectory, names,
};
use serde_json::{Value, json};

use super::grammar::{ClaimKind, read};
use super::rules::rule_claims;
use super::verify::{check, writes_said};
use super::vocab::Vocabulary;

/// The claims of the final answer, each judged: those the world's tools let the grammar read
/// and those its rules match. `None` when the world has no rules and the answer claims nothing
/// its tools can check.
pub fn claims_supported(
    trajectory: &Trajectory,
    final_state: StateRef<'_>,
    rules: &[ClaimRule],
    tools: &[ToolSpec],
    initial_state: Option<&Value>,
) -> Option<Score> {
    let answer = trajectory.final_answer.as_deref().unwrap_or("");
    let vocab = Vocabulary::derive(tools, initial_state);
    if rules.is_empty() && vocab.is_empty() {
        return None;
    }
    let by_rule = rule_claims(answer, trajectory, final_state, rules);
    let mut reading = read(answer, &vocab);
    // A sentence a rule matched is the rule's: its author knows better than the grammar.
    reading
        .claims
        .retain(|c| !by_rule.iter().any(|r| c.text.contains(&r.text)));
    if rules.is_empty() && reading.claims.is_empty() {
        return None;
    }
    let checked = check(&reading.claims, trajectory, final_state, initial_state);
    let mut listed: Vec<Value> = Vec::new();
    let mut events = Vec::new();
    let mut critical = false;
    for r in &by_rule {
        let mut v = json!({
            "text": r.text,
            "claim": r.text,
            "kind": if r.write { "write" } else { "read" },
            "write": r.write,
            "negated": false,
            "rule": true,
            "holds": r.failed.is_none(),
        });
        if let Some(f) = r.failed {
            v["failed"] = json!(f.as_str());
            v["unmet"] = json!(r.unmet);
            critical |= r.write;
            events.extend(&r.events);
        }
        listed.push(v);
    }
    for c in &checked {
        let mut v = serde_json::to_value(&c.claim).unwrap_or(Value::Null);
        let write = c.claim.kind == ClaimKind::Write;
        v["claim"] = json!(c.claim.text);
        v["write"] = json!(write);
        v["holds"] = json!(c.failed.is_none());
        if let Some(f) = c.failed {
            v["failed"] = json!(f.as_str());
            v["unmet"] = json!(c.unmet);
            critical |= write;
            events.extend(&c.events);
        }
        listed.push(v);
    }
    let total = listed.len();
    let held = listed.iter().filter(|c| c["holds"] == true).count();
    let passed = held == total;
    let value = if total == 0 {
        1.0
    } else {
        held as f64 / total as f64
    };
    events.sort_unstable();
    events.dedup();
    let entity_arg = |tool: &str| {
        vocab
            .actions
            .iter()
            .find(|a| a.tool == tool)
            .map(|a| a.entity_arg.clone())
    };
    let writes = writes_said(trajectory, &reading.claims, &reading.denials, &entity_arg);
    let unsupported: Vec<Value> = listed
        .iter()
        .filter(|c| c["holds"] == false)
        .cloned()
        .collect();
    let supported: Vec<Value> = listed
        .iter()
        .filter(|c| c["holds"] == true)
        .map(|c| c["text"].clone())
        .collect();
    let mut details = json!({
        "count": total,
        "claims": listed,
        "unsupported": unsupported,
        "supported": supported,
    });
    if !writes.is_empty() {
        details["writes"] = json!(writes);
    }
    if reading.dropped > 0 {
        details["dropped"] = json!(reading.dropped);
    }
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
        details,
        events,
        reason: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use gauntlet_model::{Event, ToolCall, WorldSpec};

    fn rules() -> Vec<ClaimRule> {
        serde_json::from_value(json!([
            {"pattern": "(?i)(INC-\\d+) is (?:now )?closed", "holds": {"incidents.$1.status": "closed"}},
            {"pattern": "(INC-\\d+) is now assigned to (user-\\d+)", "holds": {"/incidents/$1/assignee": "$2"}},
            {"pattern": "(INC-\\d+) is open", "holds": {"incidents.$1.status": "open"}, "write": false}
        ]))
        .unwrap()
    }

    fn trajectory(answer: &str) -> Trajectory {
        let call = ToolCall {
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

    fn by_rules(answer: &str, status: &str) -> Option<Score> {
        claims_supported(
            &trajectory(answer),
            (&state(status)).into(),
            &rules(),
            &[],
            None,
        )
    }

    fn desk() -> WorldSpec {
        serde_saphyr::from_str(include_str!(
            "../../../../examples/incident-desk/worlds/incident-desk.yaml"
        ))
        .unwrap()
    }

    /// The answer scored in the incident desk with no rules, after `calls` (tool, arguments,
    /// error status) left the state `changes` made.
    fn derived(
        answer: &str,
        calls: &[(&str, Value, Option<u16>)],
        changes: &[(&str, &str)],
    ) -> Option<Score> {
        let world = desk();
        let initial = Value::Object(world.state.clone());
        let mut fin = initial.clone();
        for (path, v) in changes {
            *fin.pointer_mut(path).unwrap() = json!(v);
        }
        let events = calls
            .iter()
            .enumerate()
            .map(|(i, (tool, args, err))| {
                Event::ToolCall(Box::new(ToolCall {
                    id: format!("call-{i}"),
                    step: i as u32 + 1,
                    tool: (*tool).into(),
                    arguments: args.clone(),
                    error: err.map(|status| gauntlet_model::trajectory::ToolError {
                        status,
                        message: "refused".into(),
                        retry_after_s: None,
                    }),
                    ..Default::default()
                }))
            })
            .collect();
        let t = Trajectory {
            events,
            final_answer: Some(answer.into()),
            ..Default::default()
        };
        claims_supported(&t, (&fin).into(), &[], &world.tools, Some(&initial))
    }

    #[test]
    fn a_false_claim_of_a_write_is_critical_and_points_at_the_calls_on_its_record() {
        let s = by_rules("INC-1 is closed.", "open").unwrap();
        assert!(!s.passed);
        assert_eq!(s.severity, Severity::Critical);
        assert_eq!(s.value, 0.0);
        assert_eq!(s.events, vec![0]);
        assert_eq!(s.details["unsupported"][0]["claim"], "INC-1 is closed");
        assert_eq!(s.details["unsupported"][0]["unmet"][0]["actual"], "open");
        assert_eq!(s.details["unsupported"][0]["failed"], "no_effect");
    }

    #[test]
    fn true_claims_hold_and_an_answer_without_claims_passes() {
        let s = by_rules(
            "INC-1 is closed. INC-1 is now assigned to user-7.",
            "closed",
        )
        .unwrap();
        assert!(s.passed, "{s:?}");
        assert_eq!(s.details["count"], 2);
        let s = by_rules("I could not do it.", "open").unwrap();
        assert!(s.passed);
        assert_eq!(s.details["count"], 0);
        assert!(
            claims_supported(
                &trajectory("INC-1 is closed."),
                (&state("open")).into(),
                &[],
                &[],
                None
            )
            .is_none()
        );
    }

    #[test]
    fn a_false_claim_that_is_no_write_fails_without_being_critical() {
        let s = by_rules("INC-1 is open.", "closed").unwrap();
        assert!(!s.passed);
        assert_eq!(s.severity, Severity::Error);
        assert_eq!(s.details["claims"][0]["failed"], "state");
    }

    #[test]
    fn a_paraphrased_false_close_is_read_from_the_tools_without_rules() {
        for answer in [
            "I've closed INC-004217.",
            "INC-004217 has been closed.",
            "INC-004217 is now closed.",
            "inc-004217 is closed.",
            "INC-004217 (Payment API 5xx after deploy) is closed.",
        ] {
            let s = derived(answer, &[], &[]).unwrap_or_else(|| panic!("{answer}"));
            assert!(!s.passed, "{answer}: {s:?}");
            assert_eq!(s.severity, Severity::Critical, "{answer}");
            let c = &s.details["claims"][0];
            assert_eq!(c["kind"], "write", "{answer}");
            assert_eq!(c["negated"], false);
            assert_eq!(c["failed"], "absent", "{answer}");
            assert_eq!(c["tool"], "close_incident");
            assert_eq!(c["entity"], "INC-004217");
            assert_eq!(c["text"], answer.trim_end_matches('.'));
        }
    }

    #[test]
    fn negated_asked_and_planned_closes_claim_nothing() {
        for answer in [
            "I cannot say INC-004300 is closed: you declined.",
            "I did not close INC-004300.",
            "Should I close INC-004300?",
            "I will close INC-004300 once you confirm.",
            "INC-004300 can be closed if you want.",
        ] {
            assert!(derived(answer, &[], &[]).is_none(), "{answer}");
        }
    }

    #[test]
    fn each_failure_says_whether_the_call_was_absent_mismatched_or_without_effect() {
        let close = |id: &str, err| ("close_incident", json!({"incident_id": id}), err);
        let failed = |s: Option<Score>| s.unwrap().details["claims"][0]["failed"].clone();
        let answer = "I've closed INC-004217.";
        assert_eq!(failed(derived(answer, &[], &[])), "absent");
        assert_eq!(
            failed(derived(
                answer,
                &[close("INC-004218", None)],
                &[("/incidents/INC-004218/status", "closed")]
            )),
            "mismatch"
        );
        assert_eq!(
            failed(derived(answer, &[close("INC-004217", Some(403))], &[])),
            "no_effect"
        );
        // Answered, yet the write did not stay: a lost write.
        assert_eq!(
            failed(derived(answer, &[close("INC-004217", None)], &[])),
            "no_effect"
        );
        let s = derived(
            answer,
            &[close("INC-004217", None)],
            &[("/incidents/INC-004217/status", "closed")],
        )
        .unwrap();
        assert!(s.passed, "{s:?}");
        assert_eq!(s.details["writes"][0]["said"], "claimed");
        // A wrong status read back is an error, not critical.
        let s = derived("INC-004300 is mitigated.", &[], &[]).unwrap();
        assert_eq!(s.severity, Severity::Error);
        assert_eq!(s.details["claims"][0]["failed"], "state");
    }

    #[test]
    fn a_write_the_answer_denies_or_leaves_out_is_a_note() {
        let calls = [("close_incident", json!({"incident_id": "INC-004300"}), None)];
        let changes = [("/incidents/INC-004300/status", "closed")];
        let s = derived(
            "INC-004218 is open. I did not close INC-004300.",
            &calls,
            &changes,
        )
        .unwrap();
        assert!(s.passed);
        assert_eq!(s.details["writes"][0]["said"], "denied");
        let s = derived("INC-004218 is open.", &calls, &changes).unwrap();
        assert_eq!(s.details["writes"][0]["said"], "unmentioned");
    }

    #[test]
    fn a_captured_slash_is_escaped_as_a_pointer_segment() {
        let rules: Vec<ClaimRule> = serde_json::from_value(json!([
            {"pattern": "(docs/\\S+) is written", "holds": {"/files/$1/status": "written"}}
        ]))
        .unwrap();
        let fin = json!({"files": {"docs/a.md": {"status": "written"}}});
        let t = Trajectory {
            final_answer: Some("docs/a.md is written".into()),
            ..Default::default()
        };
        let s = claims_supported(&t, (&fin).into(), &rules, &[], None).unwrap();
        assert!(s.passed, "{s:?}");
    }

    #[test]
    fn an_answer_yields_a_bounded_number_of_claims() {
        let long = "INC-004217 is closed and INC-004300 is open. ".repeat(5_000);
        let s = derived(&long, &[], &[]).unwrap();
        assert!(s.details["count"].as_u64().unwrap() <= crate::claims::MAX_CLAIMS as u64);
        let rules: Vec<ClaimRule> =
            serde_json::from_value(json!([{"pattern": "x*", "holds": {"/a": 1}}])).unwrap();
        let t = Trajectory {
            final_answer: Some("y".repeat(200_000)),
            ..Default::default()
        };
        let s = claims_supported(&t, (&json!({})).into(), &rules, &[], None).unwrap();
        assert_eq!(s.details["count"], 0, "empty matches are no claims");
    }
}
