//! tau2-bench's mock and retail domains end to end: `gauntlet import tau2-bench`, then the gold
//! actions played by `script:reference`, judged by tau2's reward basis (`metrics.benchmark`,
//! `benchmark_reward`) beside gauntlet's own verdicts. Reads `../shared/peers/tau2-bench` (and
//! tau-bench's retail tables, from which tau2's retail database is built).

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::common::{read_trials, run, s};

fn peers() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/peers")
}

/// Imports a domain, runs its gold actions and returns the results and the trials.
fn import_and_replay(domain: &str, extra: &[&str]) -> (Value, Vec<Value>) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let suite = dir.join("suite");
    let data = peers().join("tau2-bench");
    let mut args = vec![
        "import",
        "tau2-bench",
        s(&data),
        "--domain",
        domain,
        "--out",
        s(&suite),
    ];
    args.extend_from_slice(extra);
    let out = run(&args);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let check = run(&["check", s(&suite)]);
    assert_eq!(check.code, 0, "{}", check.stderr);
    let runs = dir.join("runs");
    let out = run(&["run", s(&suite), "--out", s(&runs)]);
    assert!(out.code <= 1, "{}", out.stderr);
    let results_line = out
        .stdout
        .lines()
        .find_map(|l| l.strip_prefix("results: "))
        .expect("a results line")
        .trim()
        .to_owned();
    let results: Value =
        serde_json::from_str(&std::fs::read_to_string(&results_line).unwrap()).unwrap();
    let trials = read_trials(Path::new(&results_line).parent().unwrap());
    (results, trials)
}

fn reward(trial: &Value) -> f64 {
    trial["scores"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "benchmark_reward")
        .expect("every trial of an imported benchmark has benchmark_reward")["value"]
        .as_f64()
        .unwrap()
}

#[test]
#[cfg_attr(not(have_tau2_bench), ignore = "needs ../shared/peers/tau2-bench")]
fn mock_gold_actions_earn_tau2s_reward_where_they_can() {
    let (results, trials) = import_and_replay("mock", &[]);
    let headline = &results["metrics"]["benchmark"];
    assert_eq!(headline["name"], "tau2-bench");
    // The two tasks whose environment assertions the gold actions cannot meet (tau2's data:
    // no gold action, and an assertion on the user's own inbox) carry no reference: playing
    // their gold would fail their own case. The reference agent plays the other eight, each
    // rewarded.
    assert_eq!(headline["trials"], 8);
    assert_eq!(headline["passed"], 8);
    assert!(trials.iter().all(|t| reward(t) == 1.0));
    let played: Vec<&str> = trials
        .iter()
        .map(|t| t["case_id"].as_str().unwrap())
        .collect();
    for unreachable in [
        "mock-update_task_with_history_and_env_assertions",
        "mock-update_task_with_user_tools",
    ] {
        assert!(!played.contains(&unreachable), "{unreachable} was played");
    }
}

#[test]
#[cfg_attr(
    not(all(have_tau2_bench, have_tau_bench)),
    ignore = "needs ../shared/peers/tau2-bench and ../shared/peers/tau-bench"
)]
fn retail_gold_actions_earn_tau2s_reward_on_every_task() {
    let tau_bench = peers().join("tau-bench");
    let (results, trials) = import_and_replay("retail", &["--tau-bench-data", s(&tau_bench)]);
    let headline = &results["metrics"]["benchmark"];
    assert_eq!(headline["trials"], 114);
    assert_eq!(headline["passed"], 114);
    assert_eq!(headline["pass_hat_1"], 1.0);
    assert!(trials.iter().all(|t| reward(t) == 1.0));
}

#[test]
fn a_tau2_import_without_a_domain_says_which() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(&[
        "import",
        "tau2-bench",
        s(dir.path()),
        "--out",
        s(&dir.path().join("o")),
    ]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(
        out.stderr
            .contains("needs --domain mock or --domain retail"),
        "{}",
        out.stderr
    );
}
