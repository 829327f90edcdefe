//! Benchmark support: a generated corpus of recorded trials for offline-scoring benchmarks.

use gauntlet_model::trajectory::ToolCall;
use gauntlet_model::{Case, Event, ToolKind, Trajectory, TrialRecord, TrialStatus};
use serde_json::json;

/// The cases the corpus is scored against.
pub fn cases() -> Vec<Case> {
    (0..10)
        .map(|i| {
            serde_json::from_value(json!({
                "case_id": format!("case-{i}"),
                "user_input": "Close the incident after checking it.",
                "expected_outcome": {
                    "incidents.INC-1.status": "closed",
                    "confirmation_required": true,
                    "output_contains": "closed"
                },
                "trajectory_constraints": {
                    "required_tools": ["get_incident", "close_incident"],
                    "forbidden_tools": ["delete_incident"],
                    "order": [["get_incident", "close_incident"]],
                    "max_tool_calls": 6,
                    "optimal_steps": 3
                },
                "tags": ["write"],
                "canaries": ["CANARY-SECRET-1"],
                "expected_calls": [{"get_incident": {"incident_id": ["INC-1"], "attempt": [0, 1, 2, ""]}},
                                   {"close_incident": {"incident_id": ["INC-1"], "attempt": [0, 1, 2, ""]}}],
                "trajectory_match": {"mode": "superset", "args": "subset"},
                "reference_trajectory": [
                    {"tool": "get_incident", "args": {"incident_id": "INC-1"}},
                    {"confirm": "Close INC-1?"},
                    {"tool": "close_incident", "args": {"incident_id": "INC-1"}},
                    {"answer": "INC-1 is closed."}
                ]
            }))
            .expect("valid case")
        })
        .collect()
}

/// One recorded trial with `n` tool calls (deterministic in `i`).
pub fn record(i: usize) -> TrialRecord {
    let n = 2 + i % 7;
    let mut events = vec![Event::UserMessage {
        text: "Close INC-1, it is resolved.".into(),
    }];
    for k in 0..n {
        let write = k + 1 == n;
        if write {
            events.push(Event::ConfirmationRequest {
                step: k as u32 + 1,
                text: "Close INC-1?".into(),
            });
            events.push(Event::ConfirmationResponse {
                text: "yes".into(),
                approved: true,
            });
        }
        events.push(Event::ToolCall(Box::new(ToolCall {
            id: format!("call-{k}"),
            step: k as u32 + 1,
            tool: if write { "close_incident".into() } else { "get_incident".into() },
            arguments: json!({"incident_id": "INC-1", "attempt": k % 3}),
            kind: Some(if write { ToolKind::Write } else { ToolKind::Read }),
            schema_valid: Some(true),
            result: Some(json!({"id": "INC-1", "title": "Payment API 5xx after deploy", "status": "mitigated", "severity": "sev2"})),
            error: None,
            fault: None,
            idempotency_key: None,
            state_changes: Vec::new(),
            idempotent_replay: false,
            recorded_output: None,
            at_ms: 0.0,
            latency_ms: 0.2,
        })));
    }
    events.push(Event::FinalAnswer {
        text: "INC-1 is closed.".into(),
    });
    TrialRecord {
        case_id: format!("case-{}", i % 10),
        epoch: (i / 10) as u32,
        seed: i as u64,
        trace_id: format!("{:032x}", i + 1),
        status: TrialStatus::Passed,
        error: None,
        tags: vec!["write".into()],
        difficulty: None,
        initial_state: json!({"incidents": {"INC-1": {"status": "mitigated"}}}),
        final_state: json!({"incidents": {"INC-1": {"status": if i.is_multiple_of(5) { "open" } else { "closed" }}}}),
        trajectory: Trajectory {
            final_answer: Some("INC-1 is closed.".into()),
            events,
            side_effects: Vec::new(),
        },
        scores: Vec::new(),
        retried_errors: Vec::new(),
        duration_ms: 1.0,
        started_at: None,
        not_applicable: Vec::new(),
        judges: Vec::new(),
    }
}

/// `count` records as JSON Lines.
pub fn corpus(count: usize) -> Vec<u8> {
    let mut out = Vec::new();
    for i in 0..count {
        serde_json::to_writer(&mut out, &record(i)).expect("serializable");
        out.push(b'\n');
    }
    out
}

/// The header of a run of [`record`]s.
pub fn header() -> gauntlet_model::RunHeader {
    gauntlet_model::RunHeader::new("bench", "bench", "script:reference", "2026-12-01T10:00:00Z")
}

/// The example suite (`examples/incident-desk`).
pub fn example_suite() -> gauntlet_suite::Suite {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/incident-desk");
    gauntlet_suite::Suite::load(&root).unwrap_or_else(|p| panic!("{p:?}"))
}

/// Traces in the GenAI conventions (gauntlet's export without its own attributes): an
/// `invoke_agent` root and 2 to 8 `execute_tool` spans each, a user message with an address.
pub fn online_payloads(traces: usize, per_payload: usize) -> (Vec<Vec<u8>>, usize) {
    let header = header();
    let mut spans = 0;
    let mut out = Vec::new();
    let records: Vec<_> = (0..traces)
        .map(|i| {
            let mut r = record(i);
            r.trace_id = format!("{:032x}", i as u128 + 1);
            r.trajectory.events[0] = gauntlet_model::Event::UserMessage {
                text: format!("Close INC-{i}, mail me at ann{i}@example.com"),
            };
            r
        })
        .collect();
    for chunk in records.chunks(per_payload) {
        let mut all = Vec::new();
        for r in chunk {
            let mut s = gauntlet_otel::trial_spans(&header, r);
            for span in &mut s {
                span.attributes
                    .retain(|kv| !kv.key.starts_with("gauntlet."));
                span.events.retain(|e| e.name != "gauntlet.event");
            }
            spans += s.len();
            all.extend(s);
        }
        out.push(prost::Message::encode_to_vec(
            &gauntlet_otel::export_request(&header, all),
        ));
    }
    (out, spans)
}

pub fn online_policy_check() -> gauntlet_online::policy::PolicyCheck {
    let policy: gauntlet_model::online::Policy = serde_json::from_value(serde_json::json!({
        "tools": [
            {"name": "get_incident", "kind": "read", "parameters": {"type": "object", "properties": {"incident_id": {"type": "string"}}}},
            {"name": "close_incident", "kind": "write", "parameters": {"type": "object", "properties": {"incident_id": {"type": "string"}}}}
        ],
        "constraints": {"forbidden_tools": ["delete_incident"], "max_tool_calls": 20},
        "canaries": ["CANARY-1"]
    }))
    .expect("a policy");
    gauntlet_online::policy::PolicyCheck::new(policy, "bench").expect("a policy check")
}
