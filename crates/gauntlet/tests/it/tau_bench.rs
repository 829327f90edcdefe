//! tau-bench's airline domain end to end: import, gold replay proven by tau-bench's own state
//! hashes, and the replay of tau-bench's 200 logged GPT-4o trajectories, checked by a Python
//! script that computes the hash as tau-bench does. Reads `../shared/peers/tau-bench`; skips,
//! saying so, where it is absent.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::{FakeUpstream, stored_results};
use serde_json::Value;

fn data() -> Option<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/peers/tau-bench");
    if dir
        .join("historical_trajectories/gpt-4o-airline.json")
        .exists()
    {
        Some(dir)
    } else {
        eprintln!(
            "skipped: tau-bench data not found at {} (see docs/reference.md, \"Importing tau-bench\")",
            dir.display()
        );
        None
    }
}

fn gauntlet(args: &[&str]) -> std::process::Output {
    let out = Command::new(env!("CARGO_BIN_EXE_gauntlet"))
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.code().is_some_and(|c| c <= 1),
        "gauntlet {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// The run folder a `gauntlet run` printed.
fn run_dir(out: &std::process::Output) -> PathBuf {
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text
        .lines()
        .find_map(|l| l.strip_prefix("results: "))
        .expect("a results line");
    Path::new(line.trim()).parent().unwrap().to_owned()
}

fn check(run: &Path, log: &Path) -> Value {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/check_tau.py");
    let out = Command::new("python3")
        .arg(script)
        .arg(run)
        .arg(log)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
#[cfg_attr(
    not(have_tau_bench),
    ignore = "needs tau-bench data in ../shared/peers/tau-bench"
)]
fn tau_bench_airline_gold_replay_and_gpt4o_replay_reproduce_tau_bench() {
    let Some(data) = data() else { return };
    let log = data.join("historical_trajectories/gpt-4o-airline.json");
    let dir = tempfile::tempdir().unwrap();
    let suite = dir.path().join("airline");
    let users = data.join("at-7362a17/tau_bench/envs/airline/data/users.json");
    let s = |p: &Path| p.to_str().unwrap().to_owned();
    let out = gauntlet(&[
        "import",
        "tau-bench",
        &s(&data),
        "--domain",
        "airline",
        "--users",
        &s(&users),
        "--out",
        &s(&suite),
    ]);
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("wrote 50 cases (4 with outputs)"), "{said}");

    // Gold: the reference trajectory is the gold actions; every final state hashes as
    // tau-bench's logged gt_data_hash, and every case (outputs included) passes.
    let gold = gauntlet(&["run", &s(&suite), "--agent", "script:reference"]);
    let report = check(&run_dir(&gold), &log);
    let trials = report["trials"].as_array().unwrap();
    assert_eq!(trials.len(), 50);
    let hashed: Vec<&Value> = trials
        .iter()
        .filter(|t| !t["logged_hash"].is_null())
        .collect();
    assert_eq!(hashed.len(), 46);
    let wrong: Vec<&Value> = hashed
        .iter()
        .filter(|t| t["hash"] != t["logged_hash"])
        .copied()
        .collect();
    assert!(
        wrong.is_empty(),
        "final states unlike tau-bench's: {wrong:?}"
    );
    let failed: Vec<&Value> = trials.iter().filter(|t| t["reward"] != 1.0).collect();
    assert!(failed.is_empty(), "gold trials without reward: {failed:?}");

    // GPT-4o: the 200 logged trajectories replayed give the logged rewards, and today's tool
    // outputs equal the logged ones.
    let replay = gauntlet(&[
        "run",
        &s(&suite),
        "--agent",
        &format!("replay:{}", s(&log)),
        "--epochs",
        "4",
    ]);
    let report = check(&run_dir(&replay), &log);
    let trials = report["trials"].as_array().unwrap();
    assert_eq!(trials.len(), 200);
    let disagree: Vec<&Value> = trials
        .iter()
        .filter(|t| t["reward"] != t["logged_reward"])
        .collect();
    assert!(
        disagree.is_empty(),
        "rewards unlike the log's: {disagree:?}"
    );
    let ones = trials.iter().filter(|t| t["reward"] == 1.0).count();
    assert_eq!(ones, 84);
    // The benchmark's own headline, by its own rule, as tau-bench's log gives it; the episodes
    // its step limit cut off are failures of the agent, not errors of the harness.
    let results: Value = stored_results(&run_dir(&replay));
    let headline = &results["metrics"]["benchmark"];
    assert_eq!(headline["name"], "tau-bench");
    assert_eq!(
        (headline["passed"].as_u64(), headline["trials"].as_u64()),
        (Some(84), Some(200))
    );
    for (k, want) in [(1, 0.420), (2, 0.273), (3, 0.220), (4, 0.200)] {
        let got = headline[format!("pass_hat_{k}")].as_f64().unwrap();
        assert!(
            (got - want).abs() < 5e-4,
            "pass^{k} {got}, tau-bench {want}"
        );
    }
    assert_eq!(results["metrics"]["errors"], 0.0);
    let live = results["trials"].as_array().unwrap();
    for t in trials {
        let stored = live
            .iter()
            .find(|l| l["case_id"] == t["case_id"] && l["epoch"] == t["trial"])
            .unwrap();
        let reward = stored["scores"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["name"] == "benchmark_reward")
            .unwrap();
        assert_eq!(
            reward["value"].as_f64(),
            t["logged_reward"].as_f64(),
            "{} {}",
            t["case_id"],
            t["trial"]
        );
    }
    let cut_off = live
        .iter()
        .filter(|l| {
            l["scores"]
                .as_array()
                .unwrap()
                .iter()
                .any(|s| s["name"] == "agent_finished")
        })
        .collect::<Vec<_>>();
    assert_eq!(cut_off.len(), 5);
    assert!(cut_off.iter().all(|l| l["status"] == "failed"));
    let calls = report["calls"].as_u64().unwrap();
    let differences = report["differences"].as_array().unwrap();
    eprintln!(
        "{calls} tool calls replayed, {} outputs differ",
        differences.len()
    );
    assert!(calls > 1000);
    assert!(
        differences.len() as f64 <= calls as f64 * 0.01,
        "{differences:?}"
    );

    // The stored run (states kept once, trials by their changes) re-scores to the same scores
    // and statuses, trial by trial, and renders as a report.
    let run = run_dir(&replay);
    let rescored = gauntlet(&["score", &s(&run), "--cases", &s(&suite), "--json"]);
    let rescored: Value = serde_json::from_slice(&rescored.stdout).unwrap();
    let state_passed = |t: &Value| {
        t["scores"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["name"] == "StateVerification")
            .map(|s| s["passed"].clone())
    };
    let live: Value = stored_results(&run);
    let live_trials = live["trials"].as_array().unwrap();
    let again = rescored["trials"].as_array().unwrap();
    assert_eq!(again.len(), 200);
    for t in again {
        let l = live_trials
            .iter()
            .find(|l| l["case_id"] == t["case_id"] && l["epoch"] == t["epoch"])
            .unwrap();
        assert_eq!(state_passed(t), state_passed(l), "{}", t["case_id"]);
        assert_eq!(t["status"], l["status"], "{} {}", t["case_id"], t["epoch"]);
        assert_eq!(t["scores"], l["scores"], "{} {}", t["case_id"], t["epoch"]);
    }
    let html = run.join("report.html");
    gauntlet(&["report", &s(&run), "--format", "html", "--out", &s(&html)]);
    let text = std::fs::read_to_string(&html).unwrap();
    assert!(text.contains("airline-test-49"));
    assert!(text.len() < 20_000_000, "report of {} bytes", text.len());
}

#[test]
#[cfg_attr(
    not(have_tau_bench),
    ignore = "needs tau-bench data in ../shared/peers/tau-bench"
)]
fn tau_bench_users_can_be_llm_personas_that_open_the_conversation() {
    let Some(data) = data() else { return };
    let dir = tempfile::tempdir().unwrap();
    let suite = dir.path().join("airline");
    let s = |p: &Path| p.to_str().unwrap().to_owned();
    gauntlet(&[
        "import",
        "tau-bench",
        &s(&data),
        "--persona",
        "--out",
        &s(&suite),
    ]);
    let tasks: Vec<Value> = serde_json::from_str(
        &std::fs::read_to_string(data.join("derived/airline_tasks_test.json")).unwrap(),
    )
    .unwrap();
    let cases: Vec<Value> = std::fs::read_to_string(suite.join("cases/airline-test.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(cases.len(), tasks.len());
    for (case, task) in cases.iter().zip(&tasks) {
        assert_eq!(case["user"]["persona"], task["instruction"]);
        assert!(case.get("user_input").is_none(), "{case}");
    }
    let Some(upstream) = FakeUpstream::start(dir.path()) else {
        return;
    };
    // The gold path, with the persona opening each conversation in its own words.
    let out = dir.path().join("run");
    gauntlet(&[
        "run",
        &s(&suite),
        "--filter",
        "airline-test-1",
        "--gateway-upstream",
        &upstream.url,
        "--user-model",
        "fake-user",
        "--out",
        &s(&out),
        "--quiet",
    ]);
    let trials: Vec<Value> = std::fs::read_to_string(out.join("trials.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    // airline-test-1 and airline-test-10 to 19.
    assert_eq!(trials.len(), 11);
    for t in &trials {
        assert_eq!(t["status"], "passed", "{}", t["case_id"]);
        let opening = t["trajectory"]["events"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["type"] == "user_message")
            .unwrap()["text"]
            .as_str()
            .unwrap();
        assert!(opening.starts_with("Your user id is "), "{opening}");
    }
}

#[test]
#[cfg_attr(
    not(have_tau_bench),
    ignore = "needs tau-bench data in ../shared/peers/tau-bench"
)]
fn tau_bench_retail_gold_paths_succeed_and_only_their_repeated_calls_are_flagged() {
    let Some(data) = data() else { return };
    let dir = tempfile::tempdir().unwrap();
    let suite = dir.path().join("retail");
    let s = |p: &Path| p.to_str().unwrap().to_owned();
    gauntlet(&[
        "import",
        "tau-bench",
        &s(&data),
        "--domain",
        "retail",
        "--out",
        &s(&suite),
    ]);
    let out = dir.path().join("run");
    gauntlet(&["run", &s(&suite), "--out", &s(&out), "--quiet"]);
    let tasks: Vec<Value> = serde_json::from_str(
        &std::fs::read_to_string(data.join("derived/retail_tasks_test.json")).unwrap(),
    )
    .unwrap();
    let trials: Vec<Value> = std::fs::read_to_string(out.join("trials.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(trials.len(), 115);
    let mut flagged = 0;
    for t in &trials {
        let failing: Vec<&str> = t["scores"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|s| s["passed"] == false && s["severity"] != "info")
            .map(|s| s["name"].as_str().unwrap())
            .collect();
        // tau-bench's reward: the gold path reaches the expected state and says the outputs.
        assert!(
            !failing.contains(&"task_success") && !failing.contains(&"StateVerification"),
            "{}: {failing:?}",
            t["case_id"]
        );
        if failing.is_empty() {
            continue;
        }
        // Anything else flagged is a gold path that repeats an identical call.
        assert_eq!(failing, ["LoopDetection"], "{}", t["case_id"]);
        let index: usize = t["case_id"].as_str().unwrap()["retail-test-".len()..]
            .parse()
            .unwrap();
        let actions = tasks[index]["actions"].as_array().unwrap();
        let repeats = actions
            .iter()
            .enumerate()
            .any(|(i, a)| actions[..i].contains(a));
        assert!(repeats, "{} flagged without a repeated call", t["case_id"]);
        flagged += 1;
    }
    eprintln!("retail gold: 115 trials, {flagged} flagged for repeated calls");
}
