//! What the latency benchmarks share: the example suite, a trial environment, percentiles.

use gauntlet_agent::{SimulatedEnvironment, SimulatedUser};
use gauntlet_model::FaultSpec;
use gauntlet_suite::Suite;
use gauntlet_world::{FaultPlan, FaultRule, Simulator};
use statrs::statistics::{Data, OrderStatistics};

pub use gauntlet_bench::example_suite;

/// A fresh trial environment of the `lookup-status` case, with these fault rules.
pub fn lookup_env(suite: &Suite, faults: Vec<FaultSpec>) -> gauntlet_agent::SharedEnv {
    let lc = suite
        .cases
        .iter()
        .find(|c| c.case.case_id == "lookup-status")
        .expect("case");
    let w = suite.world_of(lc);
    let rules = faults
        .into_iter()
        .map(|spec| FaultRule {
            spec,
            source: "bench".into(),
        })
        .collect();
    let sim = Simulator::new(
        w.world.clone(),
        suite.initial_state(lc),
        w.world.spec().default_context.clone(),
        FaultPlan { rules, seed: 1 },
    );
    SimulatedEnvironment::new(sim, SimulatedUser::scripted(None), &lc.case.user_input).shared()
}

/// The 50th and 99th percentiles.
pub fn percentiles(mut v: Vec<f64>) -> (f64, f64) {
    v.sort_by(f64::total_cmp);
    let mut d = Data::new(v);
    (d.percentile(50), d.percentile(99))
}

/// A runtime with one worker, as an agent's machine would give the harness.
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("runtime")
}
