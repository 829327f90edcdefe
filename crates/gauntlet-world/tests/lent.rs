//! A script world's loaded state is lent to one trial after another and rolled back between
//! them: every trial must see what a trial on a freshly loaded state sees, whatever the trials
//! before it did, hostile ones included; and the final state built from what a trial changed
//! must equal the whole state read back.

use std::sync::Arc;

use gauntlet_model::Context;
use gauntlet_world::{Pool, ScriptEngine};
use proptest::prelude::*;
use serde_json::{Value, json};

const SCRIPT: &str = r#"
let calls = 0;
var seen = [];
function put(a, ctx) { ctx.state[a.coll][a.key] = a.value; return null; }
function patch(a, ctx) {
  const r = ctx.state[a.coll][a.key];
  if (r === undefined || r === null || typeof r !== "object") throw ctx.error(404, "no " + a.key);
  r.n = a.n; (r.tags = r.tags || []).push("p" + a.n); return r;
}
function remove(a, ctx) { delete ctx.state[a.coll][a.key]; return null; }
function push(a, ctx) { ctx.state.log.push(a.value); return ctx.state.log.length; }
function replace(a, ctx) { ctx.state[a.coll] = {fresh: {n: a.n}}; return null; }
function half(a, ctx) { ctx.state.items.a.n = -1; ctx.state.items.zz = {n: 0}; throw ctx.error(409, "half way"); }
function peek(a, ctx) { const r = ctx.state[a.coll][a.key]; if (r && typeof r === "object") { r.n = 999; } return r === undefined ? null : r; }
function count(a, ctx) { calls += 1; seen.push(a.key); return [calls, seen.length]; }
function poison(a, ctx) {
  const r = ctx.state.items.a;
  const tries = [
    () => { Object.getPrototypeOf(r).polluted = 1; },
    () => { Object.getPrototypeOf(ctx.state.items).polluted = 1; },
    () => { r.constructor.constructor("return this")().leak = 1; },
    () => { ctx.state.items[Symbol.for("stash")] = {n: 1}; },
    () => { Object.defineProperty(ctx.state.items, "nc", {value: {n: 1}, configurable: false}); },
    () => { Object.defineProperty(ctx.state.items, "quiet", {value: {n: 2}}); },
    () => { Object.freeze(ctx.state.items); },
    () => { Object.setPrototypeOf(ctx.state.items, null); },
    () => { Object.defineProperty(ctx.state.items, "b", {get() { return {n: "getter"}; }, enumerable: true}); },
    () => { globalThis.leftover = 1; },
  ];
  let refused = 0;
  for (const t of tries) { try { t(); } catch (e) { refused += 1; } }
  return refused;
}
function probe(a, ctx) {
  const r = ctx.state.items.a;
  return {
    polluted: ({}).polluted === undefined && r === undefined ? null : (Object.getPrototypeOf(r || {}).polluted || null),
    leak: typeof leak === "undefined" ? null : leak,
    leftover: typeof leftover === "undefined" ? null : leftover,
    stash: ctx.state.items[Symbol.for("stash")] === undefined ? null : "stash",
    keys: Object.keys(ctx.state.items),
    frozen: Object.isFrozen(ctx.state.items),
  };
}
"#;

fn initial() -> Value {
    json!({
        "items": {"a": {"n": 1, "tags": ["x"]}, "b": {"n": 2}, "c": {"n": 3, "deep": {"list": [1, 2]}}},
        "users": {"u1": {"name": "Ann", "tenant": "acme"}},
        "log": ["start"],
        "version": 1
    })
}

/// One call of a trial: (function, arguments, read only).
type Op = (&'static str, Value, bool);

fn op() -> impl Strategy<Value = Op> {
    let coll = prop::sample::select(vec!["items", "users"]);
    let key = prop::sample::select(vec!["a", "b", "c", "u1", "new"]);
    (0..9u8, coll, key, -3i64..50).prop_map(|(kind, coll, key, n)| match kind {
        0 => (
            "put",
            json!({"coll": coll, "key": key, "value": {"n": n}}),
            false,
        ),
        1 => ("patch", json!({"coll": coll, "key": key, "n": n}), false),
        2 => ("remove", json!({"coll": coll, "key": key}), false),
        3 => ("push", json!({"value": n}), false),
        4 => ("replace", json!({"coll": coll, "n": n}), false),
        5 => ("half", json!({}), false),
        6 => ("peek", json!({"coll": coll, "key": key}), true),
        7 => ("count", json!({"key": key}), false),
        _ => ("poison", json!({}), false),
    })
}

/// What a trial shows: each call's result or error and state changes, then the final state
/// (as built from the changes) and the probe of leftovers.
fn trial(mut engine: ScriptEngine, ops: &[Op]) -> Vec<Value> {
    let mut seen = Vec::new();
    for (function, args, read_only) in ops {
        let (out, fx) = engine.call(function, args, *read_only);
        let changes: Vec<Value> = fx
            .changes
            .iter()
            .map(|c| json!([c.path, c.before, c.after]))
            .collect();
        seen.push(json!({
            "call": function,
            "out": out.as_ref().ok(),
            "err": out.as_ref().err().map(|e| (e.status, e.message.clone())),
            "changes": changes,
        }));
    }
    let built = engine.changed_state().expect("the final state");
    let whole = engine.read_state().expect("the whole state");
    assert_eq!(
        built, whole,
        "the state built from the changes is the whole state"
    );
    seen.push(built);
    seen.push(engine.call("probe", &json!({}), true).0.expect("probe"));
    seen.push(
        engine
            .call("count", &json!({"key": "end"}), false)
            .0
            .expect("count"),
    );
    seen
}

fn open(pool: Option<&Arc<Pool>>, state: &Arc<Value>, seed: u64) -> ScriptEngine {
    let context = Context::default();
    match pool {
        Some(pool) => ScriptEngine::lend(pool, "w.js", SCRIPT, state, &context, seed, "now"),
        None => ScriptEngine::new("w.js", SCRIPT, state, &context, seed, "now"),
    }
    .expect("the world loads")
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 32, ..ProptestConfig::default() })]

    /// Trials on one lent state, one after another, see what trials on fresh states see.
    #[test]
    fn a_lent_state_gives_every_trial_what_a_fresh_one_does(
        trials in prop::collection::vec(prop::collection::vec(op(), 0..12), 1..6)
    ) {
        let state = Arc::new(initial());
        let pool = Arc::new(Pool::default());
        for (i, ops) in trials.iter().enumerate() {
            let lent = trial(open(Some(&pool), &state, i as u64), ops);
            let fresh = trial(open(None, &state, i as u64), ops);
            prop_assert_eq!(&lent, &fresh, "trial {} differs", i);
            // One loaded state served every trial so far.
            prop_assert_eq!(pool.idle(), 1);
        }
    }
}

/// A hostile trial's every attempt to leave something behind is refused or rolled back: the
/// next trial on the same loaded state sees the initial state, a fresh script and no leftovers.
#[test]
fn a_hostile_trial_leaves_nothing_for_the_next() {
    let state = Arc::new(initial());
    let pool = Arc::new(Pool::default());
    let mut hostile = open(Some(&pool), &state, 1);
    // Sloppy code's writes to frozen objects fail quietly, the proxies' refusals throw: either
    // way nothing may reach the next trial.
    let (refused, _) = hostile.call("poison", &json!({}), false);
    assert!(refused.unwrap().as_u64().unwrap() >= 3);
    for (f, args) in [
        ("remove", json!({"coll": "items", "key": "a"})),
        (
            "put",
            json!({"coll": "items", "key": "a", "value": {"n": 7}}),
        ),
        ("push", json!({"value": 5})),
        ("replace", json!({"coll": "users", "n": 1})),
        ("count", json!({"key": "x"})),
    ] {
        hostile.call(f, &args, false).0.expect(f);
    }
    drop(hostile);
    assert_eq!(pool.idle(), 1, "the loaded state was rolled back and kept");
    let mut next = open(Some(&pool), &state, 2);
    assert_eq!(next.changed_state().unwrap(), initial());
    assert_eq!(next.read_state().unwrap(), initial());
    let probe = next.call("probe", &json!({}), true).0.unwrap();
    assert_eq!(
        probe,
        json!({"polluted": null, "leak": null, "leftover": null, "stash": null,
               "keys": ["a", "b", "c"], "frozen": false})
    );
    assert_eq!(
        next.call("count", &json!({"key": "y"}), false).0.unwrap(),
        json!([1, 1])
    );
}

/// A read tool sees the state read-only: its write to a record no write has touched does not
/// stick (sloppy code) and is not a state change.
#[test]
fn a_read_tool_cannot_change_the_shared_state() {
    let state = Arc::new(initial());
    let pool = Arc::new(Pool::default());
    let mut engine = open(Some(&pool), &state, 1);
    let (out, fx) = engine.call("peek", &json!({"coll": "items", "key": "b"}), true);
    assert_eq!(out.unwrap(), json!({"n": 2}));
    assert!(fx.changes.is_empty());
    assert_eq!(engine.changed_state().unwrap(), initial());
}

/// A trial whose call runs out of time does not lend its loaded state again.
#[test]
fn a_spoiled_trial_does_not_give_its_state_back() {
    let state = Arc::new(initial());
    let pool = Arc::new(Pool::default());
    let context = Context::default();
    let mut engine = ScriptEngine::lend(
        &pool,
        "loop.js",
        "function spin(a, ctx) { ctx.state.items.a.n = 5; while (true) {} }",
        &state,
        &context,
        1,
        "now",
    )
    .unwrap();
    let (out, _) = engine.call("spin", &json!({}), false);
    assert!(out.unwrap_err().message.contains("time limit"));
    drop(engine);
    assert_eq!(pool.idle(), 0);
}

/// A world with declarative tools beside its script: the declarative ones still read the state
/// the trial started from (the script's tools hold theirs in the script runtime).
#[test]
fn declarative_tools_beside_a_script_read_the_trial_state() {
    use gauntlet_model::WorldSpec;
    use gauntlet_world::{FaultPlan, ScriptSource, Simulator, World};
    let spec: WorldSpec = serde_json::from_value(json!({
        "name": "mixed", "script": "w.js",
        "state": {"items": {"a": {"n": 1}}},
        "tools": [
            {"name": "get", "kind": "read",
             "parameters": {"type": "object", "properties": {"id": {"type": "string"}}},
             "handler": [{"get": "/items/{id}"}]},
            {"name": "peek", "kind": "read", "parameters": {"type": "object"}}
        ]
    }))
    .unwrap();
    let state = Arc::new(Value::Object(spec.state.clone()));
    let world = Arc::new(
        World::compile_with(
            spec,
            Some(ScriptSource {
                file: "w.js".into(),
                source: "function peek(a, ctx) { return ctx.state.items.a; }".into(),
            }),
        )
        .unwrap(),
    );
    let mut sim = Simulator::start(world, state, Context::default(), FaultPlan::default());
    assert_eq!(
        sim.call_tool(1, "get", json!({"id": "a"}), None).unwrap(),
        json!({"n": 1})
    );
    assert_eq!(
        sim.call_tool(2, "peek", json!({}), None).unwrap(),
        json!({"n": 1})
    );
}
