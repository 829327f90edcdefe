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
            claimed += c["details"]["count"].as_u64().unwrap();
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

fn kinds_in(c: &Value, list: &str) -> Vec<String> {
    c[list]
        .as_array()
        .unwrap_or_else(|| panic!("no {list} in {c}"))
        .iter()
        .map(|s| s["kind"].as_str().unwrap().to_owned())
        .collect()
}

/// The ambiguous case of issue 47 as it was shipped, without `question_required`, and with its
/// confirmation not required either: the scripted mutant that skips the question (or the
/// confirmation) already knows the answer and ends where the reference ends, and was reported
/// `equivalent`. Acting without asking is a hole: it is a survivor, the case is hackable, and the
/// terminal names it (and the equivalent mutants too).
#[test]
fn a_skipped_question_or_confirmation_is_a_hole_not_equivalent() {
    let cx = TestContext::new();
    std::fs::write(
        cx.suite.join("cases/desk/91-loose-ambiguous.yaml"),
        "case_id: loose-ambiguous\n\
         user_input: Close the checkout incident.\n\
         user:\n  replies:\n    - pattern: which\n      reply: INC-004301, the EU cards one.\n\
         expected_outcome:\n  incidents.INC-004301.status: closed\n  incidents.INC-004300.status: open\n\
         reference_trajectory:\n  - tool: list_incidents\n    args: {status: open}\n\
         \x20 - ask: Which checkout incident, INC-004300 (latency) or INC-004301 (EU card errors)?\n\
         \x20 - confirm: Close INC-004301 (Checkout errors for EU cards)?\n\
         \x20 - tool: close_incident\n    args: {incident_id: INC-004301, resolution: Card issuer fixed}\n\
         \x20 - answer: INC-004301 is closed; INC-004300 stays open.\n",
    )
    .unwrap();
    let (code, report) = audit_json(&cx.suite, &["--filter", "loose-ambiguous"]);
    assert_eq!(code, 1, "{report}");
    let c = case(&report, "loose-ambiguous");
    let alive = kinds_in(c, "survivors");
    assert!(alive.contains(&"skip_question".to_owned()), "{c}");
    assert!(alive.contains(&"skip_confirmation".to_owned()), "{c}");
    let equivalent = kinds_in(c, "equivalent");
    assert!(
        !equivalent
            .iter()
            .any(|k| k == "skip_question" || k == "skip_confirmation"),
        "{c}"
    );
    // The resolution is not kept by the world: changing it changes nothing observable.
    assert!(equivalent.contains(&"change_argument".to_owned()), "{c}");
    assert_eq!(c["hackable"], true);
    crate::gauntlet_snapshot!(cx, ["audit", "[SUITE]", "--filter", "loose-ambiguous"]);
}

/// Adds entries to `audit.accept` in the suite's `gauntlet.yaml` (the example's own list, if it
/// has one).
fn accept(suite: &Path, entries: &str) {
    let config = suite.join("gauntlet.yaml");
    let text = std::fs::read_to_string(&config).unwrap();
    let list = "\naudit:\n  accept:\n";
    let text = match text.find(list) {
        Some(at) => format!(
            "{}{entries}{}",
            &text[..at + list.len()],
            &text[at + list.len()..]
        ),
        None => format!("{text}{}{entries}", &list[1..]),
    };
    std::fs::write(&config, text).unwrap();
}

/// A deliberately loose check (`$contains` on free text) made `audit` exit 1 forever: its
/// survivors are accepted by `audit.accept` in `gauntlet.yaml`, reported as accepted with the
/// reason (terminal and JSON), and the audit exits 0 when every survivor is accepted.
#[test]
fn accepted_survivors_are_reported_with_their_reason_and_pass_the_audit() {
    let cx = TestContext::new();
    std::fs::write(
        cx.suite.join("cases/desk/90-loose-note.yaml"),
        "case_id: loose-note\n\
         user_input: Add a note to INC-004217 that the rollback finished at 14:05.\n\
         expected_outcome:\n  /incidents/INC-004217/notes/0/text: {$contains: Rollback}\n\
         \x20 state_unchanged_elsewhere: true\n\
         reference_trajectory:\n  - tool: add_note\n    args: {incident_id: INC-004217, text: Rollback finished at 14:05.}\n\
         \x20 - answer: Noted on INC-004217.\n",
    )
    .unwrap();
    let (code, report) = audit_json(&cx.suite, &["--filter", "loose-note"]);
    assert_eq!(code, 1, "{report}");
    let c = case(&report, "loose-note");
    let before = survivors(c);
    let text = "write 1 (add_note): text \"Rollback finished at 14:05.\" -> \"Rollback finished at 14:05. (altered)\"";
    assert!(before.contains(&text.to_owned()), "{c}");
    // The text by its name, any other survivor by its kind.
    let mut entries = format!(
        "    - case: loose-note\n      mutation: {}\n      why: the note is free text\n",
        serde_json::to_string(text).unwrap()
    );
    for s in c["survivors"].as_array().unwrap() {
        if s["mutation"] != text {
            entries.push_str(&format!(
                "    - case: loose-note\n      mutation: {}\n      why: the note is free text\n",
                s["kind"].as_str().unwrap()
            ));
        }
    }
    accept(&cx.suite, &entries);
    let (code, report) = audit_json(&cx.suite, &["--filter", "loose-note"]);
    let c = case(&report, "loose-note");
    assert_eq!(code, 0, "{report}");
    assert_eq!(c["hackable"], false, "{c}");
    assert!(survivors(c).is_empty(), "{c}");
    let accepted: Vec<&str> = c["accepted"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["mutation"].as_str().unwrap())
        .collect();
    assert_eq!(
        accepted,
        before.iter().map(String::as_str).collect::<Vec<_>>()
    );
    assert!(
        c["accepted"]
            .as_array()
            .unwrap()
            .iter()
            .all(|a| a["why"] == "the note is free text"),
        "{c}"
    );
    assert_eq!(report["unmatched_accepts"], serde_json::json!([]));
    crate::gauntlet_snapshot!(cx, ["audit", "[SUITE]", "--filter", "loose-note"]);
    // An entry that matches no survivor is noted; it changes nothing else.
    accept(
        &cx.suite,
        "    - {case: loose-note, mutation: do_nothing, why: stale}\n",
    );
    let (code, report) = audit_json(&cx.suite, &["--filter", "loose-note"]);
    assert_eq!(code, 0, "{report}");
    assert_eq!(
        report["unmatched_accepts"],
        serde_json::json!([{"case": "loose-note", "mutation": "do_nothing"}])
    );
}

/// `audit.accept` is checked with the rest of the configuration, each problem at its line: a
/// `why` that is empty, a case the suite does not have, an unknown field, a missing `why`.
#[test]
fn audit_accept_entries_are_checked_at_their_line() {
    let cx = TestContext::new();
    let config = cx.suite.join("gauntlet.yaml");
    let head = "name: accepts\nworlds: [worlds/incident-desk.yaml]\n\
                datasets: [{path: cases/desk, world: incident-desk}]\naudit:\n  accept:\n";
    std::fs::write(
        &config,
        format!(
            "{head}    - {{case: close-mitigated, mutation: do_nothing, why: \"\"}}\n    \
             - {{case: close-mitigate, mutation: do_nothing, why: typo}}\n"
        ),
    )
    .unwrap();
    let o = crate::gauntlet_snapshot!("accept_problems", cx, ["check", "[SUITE]"]);
    assert_eq!(o.code, 2);
    for (entry, problem) in [
        (
            "{case: close-mitigated, mutation: do_nothing, reason: loose}",
            "unknown field `reason`",
        ),
        (
            "{case: close-mitigated, mutation: do_nothing}",
            "missing field `why`",
        ),
    ] {
        std::fs::write(&config, format!("{head}    - {entry}\n")).unwrap();
        let o = cx.run(&["check", "[SUITE]"]);
        assert_eq!(o.code, 2, "{}", o.stderr);
        assert!(o.stderr.contains("gauntlet.yaml:6:"), "{}", o.stderr);
        assert!(o.stderr.contains(problem), "{}", o.stderr);
    }
}

/// A suite in which no case could be audited (no reference, or none that passes its own checks)
/// said "0 of 0 cases hackable" and exited 0, so `check --audit` in CI passed vacuously: it exits
/// 1 and says "nothing audited".
#[test]
fn an_audit_of_nothing_fails() {
    let cx = TestContext::new();
    std::fs::write(
        cx.suite.join("gauntlet.yaml"),
        "name: vacuous\nworlds: [worlds/incident-desk.yaml]\ndatasets: [{path: vacuous}]\n",
    )
    .unwrap();
    std::fs::create_dir(cx.suite.join("vacuous")).unwrap();
    std::fs::write(
        cx.suite.join("vacuous/no-reference.yaml"),
        "case_id: no-reference\nuser_input: Close INC-004217.\n\
         expected_outcome:\n  /incidents/INC-004217/status: closed\n",
    )
    .unwrap();
    crate::gauntlet_snapshot!(cx, ["audit", "[SUITE]"]);
    let (code, report) = audit_json(&cx.suite, &[]);
    assert_eq!(code, 1, "{report}");
    assert_eq!(report["audited_cases"], 0);
    let o = cx.run(&["check", "[SUITE]", "--audit"]);
    assert_eq!(o.code, 1, "{}", o.stdout);
    assert!(o.stdout.contains("nothing audited"), "{}", o.stdout);
}
