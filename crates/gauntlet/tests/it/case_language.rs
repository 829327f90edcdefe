//! Cases that mean what their authors meant (issue 47): the ticket desk a new user wrote from
//! the docs (`tests/suites/ticket-desk`), each trap once failing the suite's own references.

use crate::common::*;

fn trials(run: &Path) -> Vec<Value> {
    std::fs::read_to_string(run.join("trials.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn score<'a>(trial: &'a Value, name: &str) -> Option<&'a Value> {
    trial["scores"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == name)
}

/// Trap 1: `tickets.TCK-101.status` with `state_unchanged_elsewhere` counted the very record
/// the author expected to change as changed elsewhere, so the reference failed its own case.
/// Both spellings, in every path-taking field, now mean one path.
#[test]
fn dotted_and_pointer_paths_are_one_path_for_state_unchanged_elsewhere() {
    let cx = TestContext::suite("ticket-desk");
    let out = cx.path("run");
    let o = cx.run(&["run", "[SUITE]", "--out", s(&out)]);
    assert_eq!(o.code, 0, "{}\n{}", o.stdout, o.stderr);
    for t in trials(&out) {
        assert_eq!(t["status"], "passed", "{}: {:#}", t["case_id"], t["scores"]);
        let sv = score(&t, "StateVerification").unwrap();
        assert_eq!(sv["passed"], true, "{}: {sv:#}", t["case_id"]);
    }
}

/// A collateral write is still caught whichever spelling the case uses.
#[test]
fn a_write_elsewhere_fails_in_both_spellings() {
    let cx = TestContext::suite("ticket-desk");
    for file in ["cases/01-dotted.yaml", "cases/02-pointer.yaml"] {
        cx.edit(
            file,
            "  - answer: TCK-101 is now in progress.",
            "  - tool: update_ticket_status\n    args: {ticket_id: TCK-103, status: closed}\n  - answer: TCK-101 is now in progress.",
        );
    }
    let out = cx.path("run");
    // The suite gates on harness errors only: its failed trials do not fail the run.
    let o = cx.run(&["run", "[SUITE]", "--out", s(&out)]);
    assert_eq!(o.code, 0, "{}\n{}", o.stdout, o.stderr);
    for t in trials(&out)
        .iter()
        .filter(|t| t["case_id"] != "start-ambiguous")
    {
        let sv = score(t, "StateVerification").unwrap();
        assert_eq!(sv["passed"], false, "{}", t["case_id"]);
        let reason = sv["reason"].as_str().unwrap();
        assert!(
            reason.starts_with("/tickets/TCK-103 changed to {")
                && reason.contains("\"status\":\"closed\"")
                && reason.ends_with("(state_unchanged_elsewhere)"),
            "{reason}"
        );
        assert!(
            sv["details"]["mismatches"]
                .as_object()
                .unwrap()
                .keys()
                .all(|k| !k.starts_with("/tickets/TCK-101")),
            "the record the case names is not `elsewhere`: {sv:#}"
        );
    }
}

/// Every path-taking field reads a dotted key as the pointer it designates: checkpoints and
/// `expected_final_state` as `expected_outcome` does.
#[test]
fn every_path_taking_field_takes_both_spellings() {
    for (key, ok) in [
        ("tickets.TCK-101.status", true),
        ("/tickets/TCK-101/status", true),
        ("tickets.TCK-101.status", false),
        ("/tickets/TCK-101/status", false),
    ] {
        let cx = TestContext::suite("ticket-desk");
        let want = if ok { "in_progress" } else { "resolved" };
        cx.edit(
            "cases/01-dotted.yaml",
            "reference_trajectory:",
            &format!(
                "expected_final_state:\n  {key}: {want}\ncheckpoints:\n  - after: {{call: update_ticket_status}}\n    expect: {{{key}: {want}}}\nreference_trajectory:"
            ),
        );
        let out = cx.path("run");
        let o = cx.run(&[
            "run",
            "[SUITE]",
            "--filter",
            "start-dotted",
            "--out",
            s(&out),
        ]);
        let t = &trials(&out)[0];
        assert_eq!(
            t["status"] == "passed",
            ok,
            "{key} = {want}: {}\n{:#}",
            o.stderr,
            t["scores"]
        );
        for name in ["StateVerification", "checkpoints"] {
            assert_eq!(score(t, name).unwrap()["passed"], ok, "{name} for {key}");
        }
    }
}

/// Trap 2: a question can be required, and an agent that asks nothing fails it.
#[test]
fn question_required_fails_an_agent_that_asks_nothing() {
    let cx = TestContext::suite("ticket-desk");
    let out = cx.path("run");
    let o = cx.run(&[
        "run",
        "[SUITE]",
        "--agent",
        "script:skip-question",
        "--out",
        s(&out),
    ]);
    assert_eq!(o.code, 0, "{}\n{}", o.stdout, o.stderr);
    assert!(o.stdout.contains("no question asked"), "{}", o.stdout);
    let t = &trials(&out)[0];
    assert_eq!(t["status"], "failed");
    let q = score(t, "question_asked").unwrap();
    assert_eq!(q["passed"], false);
    assert_eq!(q["severity"], "error");
    assert_eq!(
        q["reason"],
        "question_required: `update_ticket_status` wrote (event #1) and the agent never asked the user a question"
    );
    // The reference, which asks first, passes it.
    let out = cx.path("reference");
    cx.run(&["run", "[SUITE]", "--filter", "ambiguous", "--out", s(&out)]);
    assert_eq!(
        score(&trials(&out)[0], "question_asked").unwrap()["passed"],
        true
    );
}

/// A question asked after the write does not count.
#[test]
fn a_question_after_the_first_write_is_too_late() {
    let cx = TestContext::suite("ticket-desk");
    cx.edit(
        "cases/03-ambiguous.yaml",
        "    - answer: TCK-102 is now in progress.\n",
        "    - ask: Was that the right ticket?\n    - answer: TCK-102 is now in progress.\n",
    );
    let out = cx.path("run");
    cx.run(&[
        "run",
        "[SUITE]",
        "--agent",
        "script:skip-question",
        "--out",
        s(&out),
    ]);
    let q = score(&trials(&out)[0], "question_asked").unwrap().clone();
    assert_eq!(q["passed"], false, "{q:#}");
    assert!(
        q["reason"]
            .as_str()
            .unwrap()
            .contains("before the agent asked"),
        "{q:#}"
    );
}

/// `question_required` takes a boolean, as `confirmation_required` does.
#[test]
fn question_required_takes_a_boolean() {
    let cx = TestContext::suite("ticket-desk");
    cx.edit(
        "cases/03-ambiguous.yaml",
        "question_required: true",
        "question_required: yes please",
    );
    let o = cx.run(&["check", "[SUITE]"]);
    assert_eq!(o.code, 2);
    assert_located(
        &o.stderr,
        "03-ambiguous.yaml",
        11,
        3,
        "`question_required` takes true or false",
    );
}

/// Trap 5: `check` plays each reference and reports one that fails its own case at the case,
/// with the reasons; `--no-play` skips it.
#[test]
fn check_plays_the_references() {
    let cx = TestContext::suite("ticket-desk");
    cx.edit(
        "cases/01-dotted.yaml",
        "tickets.TCK-101.status: in_progress",
        "tickets.TCK-101.status: resolved",
    );
    let o = crate::gauntlet_snapshot!(cx, ["check", "[SUITE]"]);
    assert_eq!(o.code, 2);
    assert_located(
        &o.stderr,
        "01-dotted.yaml",
        8,
        1,
        "/tickets/TCK-101/status expected \"resolved\", got \"in_progress\"",
    );
    let o = cx.run(&["check", "[SUITE]", "--no-play"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let o = cx.run(&["check", "[SUITE]", "--json"]);
    assert_eq!(o.code, 2);
    let v: Value = serde_json::from_str(&o.stdout).unwrap();
    assert_eq!(v["ok"], false);
    assert_eq!(v["problems"][0]["line"], 8);
}

/// Every shipped suite checks clean, references played.
#[test]
fn every_example_checks_clean_with_its_references_played() {
    for example in ["incident-desk", "safety-desk", "file-desk"] {
        let o = run(&["check", s(&repo().join("examples").join(example))]);
        assert_eq!(o.code, 0, "{example}: {}", o.stderr);
    }
}

/// Trap 6: an expectation into a collection the state does not have, and a literal no tool
/// can write, both read `ok` before; every enum value is listed.
#[test]
fn check_catches_a_missing_collection_and_an_unwritable_literal() {
    let cx = TestContext::suite("ticket-desk");
    cx.edit(
        "cases/01-dotted.yaml",
        "tickets.TCK-101.status: in_progress",
        "/ticket/TCK-101/status: in_progress",
    );
    cx.edit(
        "cases/02-pointer.yaml",
        "/tickets/TCK-101/status: in_progress",
        "/tickets/TCK-101/status: in-progress",
    );
    let o = crate::gauntlet_snapshot!(cx, ["check", "[SUITE]"]);
    assert_eq!(o.code, 2);
    assert_located(
        &o.stderr,
        "01-dotted.yaml",
        5,
        3,
        "the world's state has no `ticket` and no tool writes one (did you mean `tickets`?",
    );
    assert_located(
        &o.stderr,
        "02-pointer.yaml",
        5,
        3,
        "`update_ticket_status`'s `status` is one of open, in_progress, resolved, closed",
    );
}

/// Two spellings of one path in one case would silently become one key.
#[test]
fn two_spellings_of_one_path_are_refused() {
    let cx = TestContext::suite("ticket-desk");
    cx.edit(
        "cases/01-dotted.yaml",
        "  state_unchanged_elsewhere: true",
        "  /tickets/TCK-101/status: in_progress\n  state_unchanged_elsewhere: true",
    );
    let o = cx.run(&["check", "[SUITE]", "--no-play"]);
    assert_eq!(o.code, 2);
    assert!(
        o.stderr
            .contains("are the same path (/tickets/TCK-101/status)"),
        "{}",
        o.stderr
    );
}
