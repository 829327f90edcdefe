//! Fault injection: schedules, per-kind verdicts and profiles.

use crate::common::*;

#[test]
fn fault_schedules_and_verdicts_are_the_same_across_runs_and_concurrency() {
    let (_tmp, suite) = example();
    let (d1, d8, again) = (suite.join("c1"), suite.join("c8"), suite.join("again"));
    let schedule = |conc: &str, out: &Path| -> Vec<(String, u64, String, Vec<Value>)> {
        run(&[
            "run",
            s(&suite),
            "--faults",
            "flaky-network",
            "--epochs",
            "2",
            "--concurrency",
            conc,
            "--out",
            s(out),
            "--quiet",
        ]);
        let mut trials: Vec<Value> = std::fs::read_to_string(out.join("trials.jsonl"))
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        trials.sort_by_key(|t| {
            (
                t["case_id"].as_str().unwrap().to_owned(),
                t["epoch"].as_u64().unwrap(),
            )
        });
        trials
            .iter()
            .map(|t| {
                let faults: Vec<Value> = t["trajectory"]["events"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .filter(|e| e["type"] == "fault_injected")
                    .cloned()
                    .chain(
                        t["scores"]
                            .as_array()
                            .unwrap()
                            .iter()
                            .filter(|s| {
                                s["name"].as_str().unwrap().starts_with("fault_")
                                    && s["name"] != "fault_time_lost_ms"
                            })
                            .map(redact_measured_waits),
                    )
                    .collect();
                (
                    t["case_id"].as_str().unwrap().to_owned(),
                    t["epoch"].as_u64().unwrap(),
                    t["status"].to_string(),
                    faults,
                )
            })
            .collect()
    };
    let one = schedule("1", &d1);
    assert_eq!(one.len(), 46);
    let injected: usize = one
        .iter()
        .map(|(_, _, _, f)| f.iter().filter(|e| e["type"] == "fault_injected").count())
        .sum();
    assert!(injected > 10, "the profile injects faults: {injected}");
    assert_eq!(one, schedule("8", &d8));
    assert_eq!(one, schedule("3", &again));
}

/// A rate-limit verdict's reason says how long the agent waited, measured on the trial clock:
/// the scripted wait plus the wall time between the calls, which a loaded machine stretches by a
/// millisecond or more. The verdict and the retry-after stay compared; the measured wait is
/// checked to be at least the retry-after and then redacted.
fn redact_measured_waits(score: &Value) -> Value {
    let waited = regex::Regex::new(r"^waited (\d+) ms \(retry-after (\d+) ms\)").unwrap();
    let mut score = score.clone();
    if let Some(faults) = score["details"]["faults"].as_array_mut() {
        for f in faults {
            let Some(reason) = f["reason"].as_str() else {
                continue;
            };
            if let Some(c) = waited.captures(reason) {
                let (w, r): (u64, u64) = (c[1].parse().unwrap(), c[2].parse().unwrap());
                assert!(w >= r, "waited {w} ms, less than the retry-after {r} ms");
                f["reason"] = waited
                    .replace(reason, "waited ≥ $2 ms (retry-after $2 ms)")
                    .into();
            }
        }
    }
    score
}

#[test]
fn each_fault_kind_passes_a_careful_agent_and_fails_a_naive_one_for_the_tables_reason() {
    let (_tmp, suite) = example();
    let verdicts = |agent: &str| -> Value {
        let o = run(&[
            "run",
            s(&suite),
            "--filter",
            "fault-",
            "--agent",
            agent,
            "--json",
        ]);
        serde_json::from_str(&o.stdout).unwrap()
    };
    let good = verdicts("script:reference");
    let bad = verdicts("script:naive");
    let expected = [
        ("fault-timeout", "fault_timeout", "without backing off"),
        (
            "fault-rate-limited",
            "fault_rate_limited",
            "retry-after was 2000 ms",
        ),
        (
            "fault-bad-request",
            "fault_bad_request",
            "sent the same arguments again",
        ),
        ("fault-forbidden", "fault_forbidden", "again after a 403"),
        (
            "fault-not-found",
            "fault_not_found",
            "acted on the missing entity",
        ),
        (
            "fault-empty",
            "fault_empty",
            "did not say that nothing was found",
        ),
        (
            "fault-lost-response",
            "fault_lost_response",
            "without the original idempotency key",
        ),
        (
            "fault-unavailable",
            "fault_unavailable",
            "neither used an alternative nor told the user",
        ),
    ];
    let score = |results: &Value, case: &str, name: &str| -> Value {
        let trial = results["trials"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["case_id"] == case)
            .unwrap()
            .clone();
        trial["scores"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["name"] == name)
            .unwrap_or_else(|| panic!("{case}: no {name}"))
            .clone()
    };
    for (case, name, reason) in expected {
        let g = score(&good, case, name);
        assert_eq!(g["passed"], true, "{case} reference: {g}");
        let b = score(&bad, case, name);
        assert_eq!(b["passed"], false, "{case} naive: {b}");
        assert!(
            b["details"].to_string().contains(reason),
            "{case}: `{reason}` not in {}",
            b["details"]
        );
    }
    assert_eq!(good["verdict"], "passed");
    assert_eq!(good["metrics"]["faults_injected"], 9.0);
}

#[test]
fn an_unknown_fault_profile_is_an_input_error() {
    let (_tmp, suite) = example();
    let o = run(&["run", s(&suite), "--faults", "cosmic-rays"]);
    assert_eq!(o.code, 2);
    assert!(o.stderr.contains("flaky-network"), "{}", o.stderr);
}

/// Regression: exactly-once was judged by idempotency key, so a blind retry after a keyed call,
/// or a retry under a new key, applied the write twice with `duplicate_side_effects` at 0.
#[test]
fn a_write_applied_twice_is_a_duplicate_whatever_keys_its_calls_carried() {
    let (_tmp, suite) = example();
    let file = suite.join("cases/faults/07-lost-response.yaml");
    let mut text = std::fs::read_to_string(&file).unwrap();
    let close = |key: Option<&str>| {
        let key = key
            .map(|k| format!("\n      idempotency_key: {k}"))
            .unwrap_or_default();
        format!("    - tool: close_incident\n      args: {{incident_id: INC-004217}}{key}\n")
    };
    for (name, first, second) in [
        ("keyed-then-blind", Some("k1"), None),
        ("two-keys", Some("k1"), Some("k2")),
        ("blind-twice", None, None),
        ("same-key", Some("k1"), Some("k1")),
    ] {
        text.push_str(&format!(
            "  {name}:\n    - tool: get_incident\n      args: {{incident_id: INC-004217}}\n    - confirm: Close INC-004217?\n{}    - wait_ms: 500\n{}    - answer: INC-004217 is closed.\n",
            close(first),
            close(second)
        ));
    }
    std::fs::write(&file, text).unwrap();
    for (name, duplicated) in [
        ("keyed-then-blind", true),
        ("two-keys", true),
        ("blind-twice", true),
        ("same-key", false),
    ] {
        let o = run(&[
            "run",
            s(&suite),
            "--filter",
            "fault-lost-response",
            "--agent",
            &format!("script:{name}"),
            "--json",
        ]);
        let r: Value = serde_json::from_str(&o.stdout).unwrap_or_else(|_| panic!("{}", o.stderr));
        let score = r["trials"][0]["scores"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["name"] == "duplicate_side_effects")
            .unwrap()
            .clone();
        if duplicated {
            assert!(score["value"].as_f64().unwrap() >= 1.0, "{name}: {score}");
            let calls = &score["details"]["calls"][0]["call_ids"];
            assert_eq!(calls.as_array().map(Vec::len), Some(2), "{name}: {score}");
            assert_eq!(score["events"].as_array().map(Vec::len), Some(2), "{name}");
            assert!(
                failed_gates(&r).contains(&"no duplicate side effects".to_owned()),
                "{name}"
            );
            assert_eq!(o.code, 1, "{name}");
        } else {
            assert_eq!(score["value"], 0.0, "{name}: {score}");
            assert!(!failed_gates(&r).contains(&"no duplicate side effects".to_owned()));
        }
    }
}

/// Regression (issue 47, item 7): a retry under the lost call's idempotency key with other
/// arguments was answered with the first call's result, so `gauntlet audit` called the mutant
/// `incident_id "INC-004217" -> ...` of the retried write equivalent. The world refuses the
/// call with 409, as a real API does, the agent sees it, `fault_lost_response` fails it, and the
/// audit kills the mutant.
#[test]
fn a_retry_under_the_lost_calls_key_with_other_arguments_is_a_409_and_the_audit_kills_it() {
    let (tmp, suite) = example();
    let file = suite.join("cases/faults/07-lost-response.yaml");
    let mut text = std::fs::read_to_string(&file).unwrap();
    text.push_str(
        "  other-incident:\n    - tool: get_incident\n      args: {incident_id: INC-004217}\n    - confirm: Close INC-004217?\n\
         \x20   - tool: close_incident\n      args: {incident_id: INC-004217}\n      idempotency_key: k1\n    - wait_ms: 500\n\
         \x20   - tool: close_incident\n      args: {incident_id: INC-004218}\n      idempotency_key: k1\n    - answer: INC-004217 is closed.\n",
    );
    std::fs::write(&file, text).unwrap();
    let out = tmp.path().join("other");
    let o = run(&[
        "run",
        s(&suite),
        "--filter",
        "fault-lost-response",
        "--agent",
        "script:other-incident",
        "--out",
        s(&out),
    ]);
    assert!(o.code <= 1, "{}", o.stderr);
    let trial = &read_trials(&out)[0];
    assert_eq!(trial["status"], "failed", "{trial}");
    let retry = trial["trajectory"]["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["type"] == "tool_call" && e["tool"] == "close_incident")
        .nth(1)
        .unwrap()
        .clone();
    assert_eq!(retry["error"]["status"], 409, "{retry}");
    assert_eq!(
        retry["error"]["message"],
        r#"idempotency key `k1` reused with different arguments (first used by call-2: `close_incident` {"incident_id":"INC-004217"})"#
    );
    assert!(retry.get("state_changes").is_none(), "{retry}");
    let verdict = trial["scores"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "fault_lost_response")
        .unwrap()
        .clone();
    assert_eq!(verdict["passed"], false, "{verdict}");
    assert!(
        verdict["details"]
            .to_string()
            .contains("under the lost call's idempotency key with other arguments"),
        "{verdict}"
    );
    let o = run(&[
        "audit",
        s(&suite),
        "--filter",
        "fault-lost-response",
        "--json",
    ]);
    let report: Value = serde_json::from_str(&o.stdout).unwrap_or_else(|_| panic!("{}", o.stderr));
    let case = &report["cases"][0];
    let passed: Vec<&str> = ["survivors", "equivalent"]
        .iter()
        .flat_map(|list| case[list].as_array().unwrap())
        .map(|s| s["mutation"].as_str().unwrap())
        .collect();
    assert!(
        !passed
            .iter()
            .any(|m| m.starts_with("write 2 (close_incident): incident_id")),
        "{case}"
    );
}
