//! The scripted simulated user: replies that hear several ways of asking, the `user_unanswered`
//! note on a trial whose user had no reply, and `check`'s warning at a case without `default`.

use crate::common::*;

/// The example's ambiguous case with the user of issue 47 (`pattern: which`, no `default`) and
/// an agent that asks for the number in other words, hears "I have nothing to add." and gives up.
fn deaf_user(cx: &TestContext) {
    cx.edit(
        "cases/desk/09-ambiguous.yaml",
        "    - pattern: [which, what incident, incident number]\n      reply: INC-004301, the EU cards one.\n  default: I mean the checkout incident with the EU card errors, INC-004301.\n",
        "    - pattern: which\n      reply: INC-004301, the EU cards one.\n",
    );
    let path = cx.suite.join("cases/desk/09-ambiguous.yaml");
    let mut text = std::fs::read_to_string(&path).unwrap();
    text.push_str(
        "scripts:\n  ticket-number:\n    - tool: list_incidents\n      args: {status: open}\n\
         \x20   - ask: Could you tell me the ticket number?\n\
         \x20   - answer: I need the incident's number to close it.\n",
    );
    std::fs::write(path, text).unwrap();
}

/// Regression (issue 47, item 4): "Could you tell me the ticket number?" against `pattern:
/// which` got "I have nothing to add.", and the failure read as the agent's alone. The trial now
/// carries a `user_unanswered` note naming the question, in the terminal beside the failure and
/// in `trials.jsonl`.
#[test]
fn a_question_the_user_had_no_reply_for_is_noted_beside_the_failure() {
    let cx = TestContext::new();
    deaf_user(&cx);
    let o = crate::gauntlet_snapshot!(
        cx,
        [
            "run",
            "[SUITE]",
            "--filter",
            "ambiguous-checkout",
            "--agent",
            "script:ticket-number",
            "--out",
            "[TMP]/run",
        ]
    );
    assert_eq!(o.code, 1, "{}", o.stderr);
    let trial = &read_trials(&cx.path("run"))[0];
    let note = score(trial, "user_unanswered").unwrap_or_else(|| panic!("{trial}"));
    assert_eq!(
        (&note["passed"], &note["severity"], &note["dimension"]),
        (
            &Value::from(false),
            &Value::from("info"),
            &Value::from("trajectory")
        )
    );
    assert_eq!(
        note["details"]["questions"],
        serde_json::json!(["Could you tell me the ticket number?"])
    );
    assert!(
        note["reason"]
            .as_str()
            .unwrap()
            .contains(r#"no reply for "Could you tell me the ticket number?""#),
        "{note}"
    );
    // A list of patterns hears the question, and the case's reference still passes.
    cx.edit(
        "cases/desk/09-ambiguous.yaml",
        "    - pattern: which\n",
        "    - pattern: [which, Ticket Number]\n",
    );
    let o = cx.run(&[
        "run",
        "[SUITE]",
        "--filter",
        "ambiguous-checkout",
        "--agent",
        "script:ticket-number",
        "--out",
        "[TMP]/heard",
    ]);
    let trial = &read_trials(&cx.path("heard"))[0];
    assert!(score(trial, "user_unanswered").is_none(), "{trial}");
    let events = events_of(trial, "user_message");
    assert_eq!(
        events.last().unwrap()["text"],
        "INC-004301, the EU cards one.",
        "{}",
        o.stderr
    );
    let o = cx.run(&["run", "[SUITE]", "--filter", "ambiguous-checkout"]);
    assert_eq!(o.code, 0, "{}{}", o.stdout, o.stderr);
}

/// `check` warns at a case whose user has `replies` but no `default`; the exit code stays 0,
/// and `--json` lists the warning.
#[test]
fn check_warns_at_replies_without_a_default() {
    let cx = TestContext::new();
    deaf_user(&cx);
    let o = crate::gauntlet_snapshot!(cx, ["check", "[SUITE]"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let o = cx.run(&["check", "[SUITE]", "--json"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let v: Value = serde_json::from_str(&o.stdout).unwrap();
    let warnings = v["warnings"].as_array().unwrap();
    assert_eq!(warnings.len(), 1, "{v}");
    assert_eq!(warnings[0]["line"], 5, "{v}");
}
