//! The simulator: every call recorded, schema errors as 400s, scopes as 403s, failed handlers
//! rolled back, writes in the side-effect log, faults injected where scheduled.

use std::sync::Arc;

use gauntlet_model::{Context, Event, FaultKind, FaultSpec, WorldSpec};
use gauntlet_world::{FaultPlan, FaultRule, Simulator, World};
use serde_json::{Value, json};

fn world() -> Arc<World> {
    let spec: WorldSpec = serde_json::from_value(json!({
        "name": "t",
        "state": {"items": {"a": {"id": "a", "n": 1}}},
        "tools": [
            {"name": "get", "kind": "read", "scopes": ["r"],
             "parameters": {"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]},
             "handler": [{"get": "/items/{id}"}]},
            {"name": "bump", "kind": "write", "scopes": ["w"],
             "parameters": {"type": "object", "properties": {"id": {"type": "string"}, "n": {"type": "integer"}}, "required": ["id", "n"]},
             "handler": [
                {"set": {"path": "/items/{id}/n", "value": "{n}"}},
                {"require": {"path": "/items/{id}/id", "message": "no item {id}"}}
             ]},
            {"name": "list", "kind": "read",
             "parameters": {"type": "object", "properties": {"n": {"type": "integer"}}},
             "handler": [{"list": {"path": "/items", "filter": {"n": "{n}"}}}]}
        ]
    }))
    .unwrap();
    Arc::new(World::compile(spec).unwrap())
}

fn sim(scopes: &[&str], faults: Vec<FaultSpec>) -> Simulator {
    let w = world();
    let state = Value::Object(w.spec().state.clone());
    let context = Context {
        scopes: scopes.iter().map(|s| (*s).to_owned()).collect(),
        ..Default::default()
    };
    let rules = faults
        .into_iter()
        .map(|spec| FaultRule {
            spec,
            source: "case".into(),
        })
        .collect();
    Simulator::new(w, state, context, FaultPlan { rules, seed: 7 })
}

fn calls(events: &[Event]) -> Vec<&gauntlet_model::ToolCall> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::ToolCall(c) => Some(c.as_ref()),
            _ => None,
        })
        .collect()
}

#[test]
fn invalid_arguments_are_a_recorded_400() {
    let mut s = sim(&["r"], vec![]);
    let err = s.call_tool(1, "get", json!({"id": 7}), None).unwrap_err();
    assert_eq!(err.status, 400);
    assert!(err.message.contains("invalid arguments"), "{}", err.message);
    let (t, _) = s.finish(None);
    let c = calls(&t.events);
    assert_eq!(c[0].schema_valid, Some(false));
    assert_eq!(c[0].error.as_ref().unwrap().status, 400);
}

#[test]
fn a_missing_scope_is_a_403_and_changes_nothing() {
    let mut s = sim(&["r"], vec![]);
    let err = s
        .call_tool(1, "bump", json!({"id": "a", "n": 5}), None)
        .unwrap_err();
    assert_eq!(err.status, 403);
    let (t, state) = s.finish(None);
    assert_eq!(state["items"]["a"]["n"], 1);
    assert!(t.side_effects.is_empty());
}

#[test]
fn a_handler_that_fails_half_way_is_rolled_back() {
    let mut s = sim(&["w"], vec![]);
    // `set` creates /items/zz/n, then `require` fails: nothing may remain.
    let err = s
        .call_tool(1, "bump", json!({"id": "zz", "n": 5}), None)
        .unwrap_err();
    assert_eq!((err.status, err.message.as_str()), (404, "no item zz"));
    let (_, state) = s.finish(None);
    assert_eq!(state, json!({"items": {"a": {"id": "a", "n": 1}}}));
}

#[test]
fn writes_record_state_changes_and_side_effects() {
    let mut s = sim(&["w"], vec![]);
    s.call_tool(1, "bump", json!({"id": "a", "n": 2}), None)
        .unwrap();
    s.call_tool(2, "bump", json!({"n": 2, "id": "a"}), None)
        .unwrap();
    s.call_tool(3, "bump", json!({"id": "a", "n": 3}), Some("k1".into()))
        .unwrap();
    let (t, state) = s.finish(Some("done".into()));
    assert_eq!(state["items"]["a"]["n"], 3);
    let c = calls(&t.events);
    assert_eq!(c[0].state_changes[0].path, "/items/a/n");
    assert_eq!(c[0].state_changes[0].before, Some(json!(1)));
    // The same arguments in another key order are the same operation, applied twice.
    assert_eq!(t.side_effects.len(), 2);
    assert_eq!(t.side_effects[0].count, 2);
    assert_eq!(t.duplicate_side_effects(), 1);
    assert_eq!(t.side_effects[1].idempotency_key.as_deref(), Some("k1"));
}

#[test]
fn list_filters_skip_absent_arguments() {
    let mut s = sim(&[], vec![]);
    assert_eq!(
        s.call_tool(1, "list", json!({}), None)
            .unwrap()
            .as_array()
            .unwrap()
            .len(),
        1
    );
    assert_eq!(
        s.call_tool(2, "list", json!({"n": 9}), None).unwrap(),
        json!([])
    );
}

#[test]
fn scheduled_faults_hit_the_named_calls_only() {
    let faults = vec![
        FaultSpec {
            tool: Some("get".into()),
            on: None,
            probability: None,
            calls: vec![2],
            kind: FaultKind::RateLimited,
            retry_after_s: Some(3.0),
        },
        FaultSpec {
            tool: Some("bump".into()),
            on: None,
            probability: None,
            calls: vec![],
            kind: FaultKind::LostResponse,
            retry_after_s: None,
        },
    ];
    let mut s = sim(&["r", "w"], faults);
    assert!(s.call_tool(1, "get", json!({"id": "a"}), None).is_ok());
    let e = s.call_tool(2, "get", json!({"id": "a"}), None).unwrap_err();
    assert_eq!((e.status, e.retry_after_s), (429, Some(3.0)));
    // A lost response: the agent sees a timeout, but the effect happened.
    let e = s
        .call_tool(3, "bump", json!({"id": "a", "n": 9}), None)
        .unwrap_err();
    assert_eq!(e.status, 504);
    let (t, state) = s.finish(None);
    assert_eq!(state["items"]["a"]["n"], 9);
    assert_eq!(t.side_effects[0].count, 1);
    assert_eq!(calls(&t.events)[2].fault, Some(FaultKind::LostResponse));
}

#[test]
fn an_unknown_tool_is_recorded_too() {
    let mut s = sim(&[], vec![]);
    assert_eq!(
        s.call_tool(1, "nope", json!({}), None).unwrap_err().status,
        404
    );
    let (t, _) = s.finish(None);
    assert_eq!(calls(&t.events)[0].kind, None);
}

#[test]
fn a_bad_schema_is_reported_by_field() {
    let spec: WorldSpec = serde_json::from_value(json!({
        "name": "b",
        "tools": [{"name": "x", "kind": "read", "parameters": {"type": "objekt"}}]
    }))
    .unwrap();
    let errs = World::compile(spec).err().unwrap();
    assert_eq!(errs[0].field, "/tools/0/parameters");
}
