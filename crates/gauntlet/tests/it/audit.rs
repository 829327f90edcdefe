//! `gauntlet audit`: mutants of each case's reference that its checks fail to kill, on the
//! example suite, a deliberately weak case and its strengthened version, and the tau-bench
//! airline and tau2 retail imports. Also `claims_supported` end to end.

use crate::common::*;

fn audit_json(suite: &Path, extra: &[&str]) -> (i32, Value) {
    let mut args = vec!["audit", s(suite), "--json"];
    args.extend_from_slice(extra);
    let o = run(&args);
    assert!(o.code <= 1, "{}", o.stderr);
    (o.code, serde_json::from_str(&o.stdout).unwrap())
}

fn case<'a>(report: &'a Value, id: &str) -> &'a Value {
    report["cases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["case_id"] == id)
        .unwrap_or_else(|| panic!("no case {id} in {report}"))
}

fn survivors(c: &Value) -> Vec<String> {
    c["survivors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["mutation"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn the_example_suite_is_audited_deterministically_with_its_exit_code() {
    let (_tmp, suite) = example();
    let (code, report) = audit_json(&suite, &["--seed", "3"]);
    let hackable = report["hackable_cases"].as_u64().unwrap();
    assert_eq!(code, i32::from(hackable > 0), "{report}");
    let cases = report["cases"].as_array().unwrap();
    assert_eq!(cases.len(), 23);
    for c in cases.iter().filter(|c| c["skipped"].is_null()) {
        assert!(c["mutants"].as_u64().unwrap() >= 2, "{c}");
        assert_eq!(c["hackable"], !survivors(c).is_empty(), "{c}");
    }
    let rate = report["kill_rate"].as_f64().unwrap();
    assert!((0.0..=1.0).contains(&rate), "{rate}");
    // The same seed gives the same audit; the write cases have their write mutants.
    let (_, again) = audit_json(&suite, &["--seed", "3"]);
    assert_eq!(report, again);
    let close = case(&report, "close-mitigated");
    assert!(close["killed"].as_u64().unwrap() >= 5, "{close}");
    // The terminal view names each case and the verdict line.
    let o = run(&["audit", s(&suite), "--seed", "3"]);
    assert!(o.stdout.contains("close-mitigated"), "{}", o.stdout);
    assert!(o.stdout.contains(&format!("{hackable} of")), "{}", o.stdout);
    // `check --audit` runs it before the suite is trusted.
    let o = run(&["check", s(&suite), "--audit"]);
    assert_eq!(o.code, code, "{}", o.stderr);
    assert!(o.stdout.contains("kill rate"), "{}", o.stdout);
}

/// A case whose expected outcome checks nothing the task changes is hackable, the surviving
/// mutant named; checking the effect makes it pass the audit.
#[test]
fn a_weak_case_is_hackable_and_strengthening_it_passes_the_audit() {
    let (_tmp, suite) = example();
    let weak = suite.join("cases/desk/90-weak-close.yaml");
    let write_case = |expected: &str| {
        std::fs::write(
            &weak,
            format!(
                "case_id: weak-close\nuser_input: Close INC-004217, it is resolved.\n\
                 expected_outcome:\n{expected}\
                 reference_trajectory:\n  - tool: get_incident\n    args: {{incident_id: INC-004217}}\n\
                 \x20 - confirm: Close INC-004217?\n\
                 \x20 - tool: close_incident\n    args: {{incident_id: INC-004217, resolution: Fixed by rollback}}\n\
                 \x20 - answer: INC-004217 is closed.\n"
            ),
        )
        .unwrap();
    };
    // Checks a record the task never touches.
    write_case("  incidents.INC-004218.status: open\n");
    let (code, report) = audit_json(&suite, &["--filter", "weak-close"]);
    assert_eq!(code, 1, "{report}");
    let c = case(&report, "weak-close");
    assert_eq!(c["hackable"], true);
    let alive = survivors(c);
    assert!(alive.contains(&"do nothing".to_owned()), "{alive:?}");
    assert_eq!(report["hackable_cases"], 1);
    // The effect, the confirmation and the rest of the state checked: nothing survives.
    write_case(
        "  /incidents/INC-004217/status: closed\n  confirmation_required: true\n  \
         state_unchanged_elsewhere: true\n  output_contains: closed\n",
    );
    let (code, report) = audit_json(&suite, &["--filter", "weak-close"]);
    let c = case(&report, "weak-close");
    assert_eq!(code, 0, "{c}");
    assert_eq!(c["hackable"], false, "{c}");
    assert!(c["killed"].as_u64().unwrap() >= 5, "{c}");
}

#[test]
fn an_audit_of_a_suite_that_does_not_load_exits_2() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("gauntlet.yaml"), "name: [unclosed\n").unwrap();
    let o = run(&["audit", s(tmp.path())]);
    assert_eq!(o.code, 2, "{}", o.stderr);
    assert!(o.stderr.contains("gauntlet.yaml"), "{}", o.stderr);
}

/// An answer that claims a write that did not happen is a critical finding; the reference's
/// claims all hold.
#[test]
fn claims_in_the_answer_are_checked_against_the_world() {
    let (_tmp, suite) = example();
    let script = |name: &str, steps: &str| {
        let path = suite.join("cases/desk/01-close-mitigated.yaml");
        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::write(&path, format!("{text}scripts:\n  {name}:\n{steps}")).unwrap();
    };
    script(
        "liar",
        "    - tool: get_incident\n      args: {incident_id: INC-004217}\n    - answer: INC-004217 is closed.\n",
    );
    let out = suite.join(".gauntlet/liar");
    let o = run(&[
        "run",
        s(&suite),
        "--agent",
        "script:liar",
        "--filter",
        "close-mitigated",
        "--out",
        s(&out),
        "--quiet",
    ]);
    assert_eq!(o.code, 1, "{}", o.stderr);
    let trials = read_trials(&out);
    let score = trials[0]["scores"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "claims_supported")
        .cloned()
        .expect("claims_supported is scored");
    assert_eq!(score["passed"], false, "{score}");
    assert_eq!(score["severity"], "critical");
    assert_eq!(
        score["details"]["unsupported"][0]["claim"],
        "INC-004217 is closed"
    );
    // The reference agent's claims all hold, in every case of the example suite.
    let out = suite.join(".gauntlet/reference");
    let o = run(&["run", s(&suite), "--out", s(&out), "--quiet"]);
    assert!(o.code <= 1, "{}", o.stderr);
    let mut claimed = 0;
    for t in read_trials(&out) {
        if let Some(c) = t["scores"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["name"] == "claims_supported")
        {
            assert_eq!(c["passed"], true, "{}: {c}", t["case_id"]);
            claimed += c["details"]["claims"].as_u64().unwrap();
        }
    }
    assert!(claimed >= 8, "{claimed}");
}

#[test]
#[cfg_attr(
    not(have_tau_bench),
    ignore = "needs tau-bench data in ../shared/peers/tau-bench"
)]
fn the_tau_bench_airline_import_is_audited() {
    let data = repo().join("../shared/peers/tau-bench");
    let tmp = tempfile::tempdir().unwrap();
    let suite = tmp.path().join("airline");
    let users = data.join("at-7362a17/tau_bench/envs/airline/data/users.json");
    let o = run(&[
        "import",
        "tau-bench",
        s(&data),
        "--domain",
        "airline",
        "--users",
        s(&users),
        "--out",
        s(&suite),
    ]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    // Eleven of the fifty cases (test-1, test-10 to test-19): every trial copies a 3 MB state,
    // and all fifty take two minutes in a debug build; benches/peers/audit.sh audits all fifty
    // with the release build.
    let (code, report) = audit_json(&suite, &["--filter", "airline-test-1"]);
    let cases = report["cases"].as_array().unwrap();
    assert_eq!(cases.len(), 11);
    // Every gold trajectory passes its own checks, so every case is audited; the tasks that
    // change nothing pass with nothing done (tau-bench's reward compares the database only).
    assert_eq!(report["audited_cases"], 11, "{report}");
    assert_eq!(code, i32::from(report["hackable_cases"] != 0));
    for c in cases.iter().filter(|c| c["hackable"] == true) {
        assert!(survivors(c).iter().any(|m| m == "do nothing"), "{c}");
    }
}

#[test]
#[cfg_attr(
    not(all(have_tau2_bench, have_tau_bench)),
    ignore = "needs ../shared/peers/tau2-bench and ../shared/peers/tau-bench"
)]
fn the_tau2_retail_import_is_audited() {
    let peers = repo().join("../shared/peers");
    let tmp = tempfile::tempdir().unwrap();
    let suite = tmp.path().join("retail");
    let o = run(&[
        "import",
        "tau2-bench",
        s(&peers.join("tau2-bench")),
        "--domain",
        "retail",
        "--tau-bench-data",
        s(&peers.join("tau-bench")),
        "--out",
        s(&suite),
    ]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    // Eleven tasks (retail-2, retail-20 to retail-29); benches/peers/audit.sh audits all.
    let (code, report) = audit_json(&suite, &["--filter", "retail-2"]);
    let n = report["cases"].as_array().unwrap().len();
    assert_eq!(n, 11, "{report}");
    // Gold trajectories that fail one of gauntlet's own checks (LoopDetection: tau2's gold
    // actions repeat a call) are not audited, and say why.
    let audited = report["audited_cases"].as_u64().unwrap() as usize;
    assert!(audited >= 5, "{report}");
    let skipped: Vec<&Value> = report["cases"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| !c["skipped"].is_null())
        .collect();
    assert_eq!(audited + skipped.len(), n);
    assert!(
        skipped.iter().all(|c| c["skipped"]
            .as_str()
            .unwrap()
            .contains("does not pass its own checks")),
        "{skipped:?}"
    );
    assert_eq!(code, i32::from(report["hackable_cases"] != 0));
}
