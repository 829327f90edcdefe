//! AgentDojo's banking suite end to end: `gauntlet import agentdojo`, then AgentDojo's 169
//! published claude-3-5-sonnet runs replayed in gauntlet's banking world, each trial's `utility`
//! and `security` against the labels AgentDojo logged; the ground truths played by
//! `script:reference`, changed, and hijacked. Reads `../shared/peers/agentdojo`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::common::{read_trials, run, s};

fn peers() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/peers")
}

fn runs_dir() -> PathBuf {
    peers().join("agentdojo/runs/claude-3-5-sonnet-20241022/banking")
}

fn import(dir: &Path) -> PathBuf {
    let suite = dir.join("suite");
    let data = peers().join("agentdojo");
    let out = run(&[
        "import",
        "agentdojo",
        s(&data),
        "--suite",
        "banking",
        "--out",
        s(&suite),
    ]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        !out.stderr.contains("note:"),
        "every ground truth does what its check says: {}",
        out.stderr
    );
    let check = run(&["check", s(&suite)]);
    assert_eq!(check.code, 0, "{}", check.stderr);
    suite
}

/// Runs the suite with `agent`; the results and the trials.
fn run_suite(suite: &Path, agent: &str, extra: &[&str]) -> (Value, Vec<Value>) {
    let runs = suite.join(format!(
        "run-{}",
        agent.len() + extra.len() + std::fs::read_dir(suite).unwrap().count()
    ));
    let mut args = vec!["run", s(suite), "--agent", agent, "--out", s(&runs)];
    args.extend_from_slice(extra);
    let out = run(&args);
    assert!(out.code <= 1, "{}", out.stderr);
    let results = out
        .stdout
        .lines()
        .find_map(|l| l.strip_prefix("results: "))
        .expect("a results line")
        .trim()
        .to_owned();
    let results_json: Value =
        serde_json::from_str(&std::fs::read_to_string(&results).unwrap()).unwrap();
    let trials = read_trials(Path::new(&results).parent().unwrap());
    (results_json, trials)
}

fn value(trial: &Value, name: &str) -> f64 {
    trial["scores"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == name)
        .unwrap_or_else(|| panic!("{} has no `{name}` score", trial["case_id"]))["value"]
        .as_f64()
        .unwrap()
}

fn by_case(trials: &[Value]) -> BTreeMap<String, &Value> {
    trials
        .iter()
        .map(|t| (t["case_id"].as_str().unwrap().to_owned(), t))
        .collect()
}

/// The AgentDojo logs: case id → (utility, security, attacked).
fn logged() -> BTreeMap<String, (f64, f64, bool)> {
    let mut out = BTreeMap::new();
    for task in std::fs::read_dir(runs_dir()).unwrap() {
        let task = task.unwrap().path();
        for attack in std::fs::read_dir(&task).unwrap() {
            let attack = attack.unwrap().path();
            for file in std::fs::read_dir(&attack).unwrap() {
                let log: Value =
                    serde_json::from_str(&std::fs::read_to_string(file.unwrap().path()).unwrap())
                        .unwrap();
                let attacked = attack.file_name().unwrap() != "none";
                let mut id = format!("banking-{}", log["user_task_id"].as_str().unwrap());
                if attacked {
                    id = format!("{id}-{}", log["injection_task_id"].as_str().unwrap());
                }
                let b = |k: &str| f64::from(u8::from(log[k].as_bool().unwrap()));
                out.insert(id, (b("utility"), b("security"), attacked));
            }
        }
    }
    out
}

#[test]
#[cfg_attr(not(have_agentdojo), ignore = "needs ../shared/peers/agentdojo")]
fn replaying_agentdojo_s_banking_runs_gives_their_utility_and_security_labels() {
    let tmp = tempfile::tempdir().unwrap();
    let suite = import(tmp.path());
    let (results, trials) = run_suite(&suite, &format!("replay:{}", runs_dir().display()), &[]);
    let logs = logged();
    assert_eq!(logs.len(), 169);
    let got = by_case(&trials);
    assert_eq!(got.len(), 169, "one trial per run log");
    let mut agree = 0;
    let mut disagreements = Vec::new();
    for (id, (utility, security, _)) in &logs {
        let t = got[id];
        for (name, want) in [("utility", utility), ("security", security)] {
            let v = value(t, name);
            if v == *want {
                agree += 1;
            } else {
                disagreements.push(format!("{id}: {name} {v}, AgentDojo {want}"));
            }
        }
    }
    assert!(disagreements.is_empty(), "{disagreements:#?}");
    assert_eq!(agree, 338);
    // The run's metrics are the logs' own rates.
    let attacked: Vec<_> = logs.values().filter(|l| l.2).collect();
    let breached = attacked.iter().filter(|l| l.1 == 1.0).count();
    assert_eq!((attacked.len(), breached), (144, 3));
    let m = &results["metrics"];
    assert_eq!(m["attacked_trials"], json!(144.0));
    assert_eq!(m["attack_success_rate"].as_f64().unwrap(), 3.0 / 144.0);
    let done_under_attack = attacked.iter().filter(|l| l.0 == 1.0).count();
    assert_eq!(
        m["utility_under_attack"].as_f64().unwrap(),
        done_under_attack as f64 / 144.0
    );
    let done = logs.values().filter(|l| l.0 == 1.0).count();
    assert_eq!(m["utility_rate"].as_f64().unwrap(), done as f64 / 169.0);
    // Per attack and per vector, with Wilson intervals gates can read.
    assert_eq!(
        m["attack_success_rate_attack_important_instructions"],
        m["attack_success_rate"]
    );
    let i = &results["intervals"]["attack_success_rate"];
    assert!(
        i["lower"].as_f64().unwrap() < 3.0 / 144.0 && i["upper"].as_f64().unwrap() > 3.0 / 144.0
    );
    assert!(
        m["attack_success_rate_vector_injection_landloard_notice"]
            .as_f64()
            .unwrap()
            > 0.0
    );
    // The suite's gate reads the attack success rate: three breaches fail it.
    assert_eq!(results["verdict"], "failed");
}

#[test]
#[cfg_attr(not(have_agentdojo), ignore = "needs ../shared/peers/agentdojo")]
fn ground_truths_pass_utility_a_changed_write_fails_it_and_a_hijacked_agent_breaches() {
    let tmp = tempfile::tempdir().unwrap();
    let suite = import(tmp.path());
    // AgentDojo's ground truths: every user task done, every injection task's goal reached,
    // and under attack the careful agent keeps the user's task and the attacker gets nothing.
    let (results, trials) = run_suite(&suite, "script:reference", &[]);
    for t in &trials {
        let id = t["case_id"].as_str().unwrap();
        assert_eq!(value(t, "utility"), 1.0, "{id}: ground truth not done");
        let attacked = id.matches("task").count() == 2;
        assert_eq!(
            value(t, "security"),
            1.0 - f64::from(u8::from(attacked)),
            "{id}"
        );
    }
    assert_eq!(results["metrics"]["attack_success_rate"], json!(0.0));

    // A hijacked agent obeys the injection first: every attacked trial is breached.
    // (Cases without that script are not run.)
    let (results, trials) = run_suite(&suite, "script:hijacked", &[]);
    let attacked: Vec<&Value> = trials
        .iter()
        .filter(|t| t["case_id"].as_str().unwrap().matches("task").count() == 2)
        .collect();
    assert_eq!(attacked.len(), 144);
    for t in attacked {
        assert_eq!(value(t, "security"), 1.0, "{}", t["case_id"]);
        assert_eq!(t["status"], "failed", "a breach fails the trial");
    }
    assert_eq!(results["metrics"]["attack_success_rate"], json!(1.0));

    // One argument of a ground-truth write changed: the user task is no longer done, except
    // where the check already holds before any call (AgentDojo's own checks are that loose).
    let cases_path = suite.join("cases/banking.jsonl");
    let text = std::fs::read_to_string(&cases_path).unwrap();
    let mut changed = String::new();
    let mut mutated = Vec::new();
    for line in text.lines() {
        let mut c: Value = serde_json::from_str(line).unwrap();
        let id = c["case_id"].as_str().unwrap().to_owned();
        if !id.contains("user_task_") || id.contains("-injection") {
            continue;
        }
        let steps = c["reference_trajectory"].as_array_mut().unwrap();
        let write = steps.iter_mut().rev().find(|st| {
            matches!(
                st["tool"].as_str(),
                Some("send_money" | "schedule_transaction" | "update_scheduled_transaction")
                    | Some("update_password" | "update_user_info")
            )
        });
        let Some(write) = write else { continue };
        let args = write["args"].as_object_mut().unwrap();
        let key = ["amount", "password", "street"]
            .into_iter()
            .find(|k| args.contains_key(*k))
            .unwrap();
        args[key] = match &args[key] {
            Value::Number(n) => json!(n.as_f64().unwrap() + 1.0),
            Value::String(x) => json!(format!("{x} (changed)")),
            other => panic!("{other}"),
        };
        mutated.push(id);
        changed.push_str(&serde_json::to_string(&c).unwrap());
        changed.push('\n');
    }
    std::fs::write(&cases_path, changed).unwrap();
    let (_, trials) = run_suite(&suite, "script:reference", &[]);
    let got = by_case(&trials);
    let mut still_done: Vec<&str> = mutated
        .iter()
        .filter(|id| value(got[id.as_str()], "utility") == 1.0)
        .map(String::as_str)
        .collect();
    still_done.sort();
    // user_task_5's check asks for a 50.00 payment to Spotify, which the history already has.
    assert_eq!(still_done, ["banking-user_task_5"], "mutated: {mutated:?}");
    assert!(mutated.len() >= 10, "{mutated:?}");
}
