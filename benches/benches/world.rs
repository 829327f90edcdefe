//! World costs against state size: starting a trial (a fresh state; for a script world, the
//! state parsed into QuickJS) and one handler call (read a record, change it, return it), for a
//! declarative world and a JavaScript world. Run: cargo bench -p gauntlet-bench --bench world

use std::sync::Arc;
use std::time::Instant;

use gauntlet_model::{Context, WorldSpec};
use gauntlet_world::{FaultPlan, ScriptSource, Simulator, World};
use serde_json::{Value, json};

const SCRIPT: &str =
    "function bump(args, ctx) { const r = ctx.state.records[args.id]; r.count += 1; return r; }";

fn state(records: usize) -> Value {
    let mut m = serde_json::Map::new();
    for i in 0..records {
        m.insert(format!("r{i}"), json!({"id": format!("r{i}"), "count": 0, "name": "x".repeat(40), "tags": ["a", "b", "c"], "price": 12.5}));
    }
    json!({ "records": m })
}

fn world(script: bool, st: &Value) -> Arc<World> {
    let handler = if script {
        json!([])
    } else {
        json!([{"get": "/records/{id}"}, {"set": {"path": "/records/{id}/count", "value": 1}}, {"get": "/records/{id}"}])
    };
    let spec: WorldSpec = serde_json::from_value(json!({
        "name": "bench", "script": if script { json!("bench.js") } else { Value::Null },
        "state": st,
        "tools": [{"name": "bump", "kind": "write", "parameters": {"type": "object", "properties": {"id": {"type": "string"}}}, "handler": handler}]
    }))
    .expect("spec");
    let src = script.then(|| ScriptSource {
        file: "bench.js".into(),
        source: SCRIPT.into(),
    });
    Arc::new(World::compile_with(spec, src).expect("world"))
}

fn main() {
    for records in [200usize, 2_000, 20_000] {
        let st = state(records);
        let mb = st.to_string().len() as f64 / 1e6;
        for script in [false, true] {
            let w = world(script, &st);
            let shared = Arc::new(st.clone());
            let start = || {
                Simulator::start(
                    Arc::clone(&w),
                    Arc::clone(&shared),
                    Context::default(),
                    FaultPlan::default(),
                )
            };
            let (load_us, start_us) = trial_starts(start);
            let mut sim = start();
            let calls = 2_000;
            let t = Instant::now();
            for i in 0..calls {
                sim.call_tool(1, "bump", json!({"id": format!("r{}", i % records)}), None)
                    .expect("call");
            }
            let call_us = t.elapsed().as_secs_f64() * 1e6 / calls as f64;
            println!(
                "{:>11} world, {records:>6} records ({mb:.2} MB): first trial start {load_us:>9.0} µs, \
                 next trial start {start_us:>7.0} µs, handler call {call_us:>6.1} µs",
                if script { "JavaScript" } else { "declarative" }
            );
        }
    }
    airline();
}

/// tau-bench's airline world on its real 3 MB state, when the data is beside the checkout.
fn airline() {
    let data =
        std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/peers/tau-bench");
    if !data.join("derived/airline_tools.json").exists() {
        println!("airline: skipped (no tau-bench data at {})", data.display());
        return;
    }
    let domain = gauntlet_import::tau_bench::load(&gauntlet_import::tau_bench::Options {
        data_dir: data,
        domain: "airline".into(),
        split: "test".into(),
        users: None,
        out: Default::default(),
        persona: false,
    })
    .expect("airline data");
    let mb = domain.initial.to_string().len() as f64 / 1e6;
    let start = || {
        Simulator::start(
            Arc::clone(&domain.world),
            Arc::clone(&domain.initial),
            Context::default(),
            FaultPlan::default(),
        )
    };
    let (load_us, start_us) = trial_starts(start);
    let mut sim = start();
    let probes = [
        (
            "get_reservation_details",
            json!({"reservation_id": "4WQ150"}),
        ),
        ("get_user_details", json!({"user_id": "mia_li_3668"})),
        (
            "search_direct_flight",
            json!({"origin": "JFK", "destination": "SEA", "date": "2024-05-20"}),
        ),
        (
            "search_onestop_flight",
            json!({"origin": "JFK", "destination": "SEA", "date": "2024-05-20"}),
        ),
    ];
    println!(
        "   airline world ({mb:.2} MB state): first trial start {load_us:>9.0} µs (loads the state), \
         next trial start {start_us:>7.0} µs (a loaded state, rolled back)"
    );
    for (tool, args) in probes {
        let calls = 200;
        let t = Instant::now();
        for _ in 0..calls {
            let _ = sim.call_tool(1, tool, args.clone(), None);
        }
        let call_us = t.elapsed().as_secs_f64() * 1e6 / calls as f64;
        println!("   airline {tool:<24} {call_us:>8.1} µs per call");
    }
    trial_ends(&domain);
}

/// A trial's end on the airline world, per trial of the test split's gold actions: its final
/// state read back and its changes found (what the store writes and `state_unchanged_elsewhere`
/// reads), as the shared initial state plus the changed records, and as a whole copy diffed
/// whole (the way before).
fn trial_ends(domain: &gauntlet_import::tau_bench::Domain) {
    let trial = |task: &Value| {
        let mut sim = Simulator::start(
            Arc::clone(&domain.world),
            Arc::clone(&domain.initial),
            Context::default(),
            FaultPlan::default(),
        );
        for a in task["actions"].as_array().into_iter().flatten() {
            let tool = a["name"].as_str().unwrap_or_default();
            let _ = sim.call_tool(1, tool, a["kwargs"].clone(), None);
        }
        sim
    };
    let (mut changed_us, mut whole_us) = (0.0, 0.0);
    let mut found = (0, 0);
    for task in &domain.tasks {
        let sim = trial(task);
        let t = Instant::now();
        let (_, state) = sim.finish_changed(None);
        let state = state.expect("final state");
        found.0 += state.as_ref().changes_from(&domain.initial).len();
        drop(state);
        changed_us += t.elapsed().as_secs_f64() * 1e6;
        let sim = trial(task);
        let t = Instant::now();
        let (_, state) = sim.finish_checked(None);
        let state = state.expect("final state");
        found.1 += gauntlet_model::stored_state::changes(&domain.initial, &state).len();
        drop(state);
        whole_us += t.elapsed().as_secs_f64() * 1e6;
    }
    assert_eq!(found.0, found.1, "the same changes both ways");
    let n = domain.tasks.len() as f64;
    println!(
        "   airline trial end, {n} gold trials: final state and its changes {:>7.0} µs per trial \
         (initial state plus changed records), {:>7.0} µs (a whole copy, diffed whole)",
        changed_us / n,
        whole_us / n
    );
}

/// The first trial's start (the state loaded) and the mean start of the trials after it (each
/// ended, so its loaded state is rolled back and lent to the next), in µs.
fn trial_starts(start: impl Fn() -> Simulator) -> (f64, f64) {
    let t = Instant::now();
    let first = start();
    let load_us = t.elapsed().as_secs_f64() * 1e6;
    drop(first.finish(None));
    let starts = 50;
    let t = Instant::now();
    for _ in 0..starts {
        drop(start());
    }
    (load_us, t.elapsed().as_secs_f64() * 1e6 / starts as f64)
}
