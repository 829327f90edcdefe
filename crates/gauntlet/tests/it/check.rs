//! `gauntlet check`: every problem of a suite at its file, line and column.

use crate::common::*;

#[test]
fn check_accepts_the_example() {
    let cx = TestContext::new();
    let o = crate::gauntlet_snapshot!(cx, ["check", "[SUITE]"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
}

#[test]
fn a_yaml_syntax_error_is_located() {
    let (o, _, _t) = broken(
        "cases/desk/02-lookup-status.yaml",
        "  max_tool_calls: 2\n",
        "  max_tool_calls: [2\n",
    );
    assert_located(&o.stderr, "02-lookup-status.yaml", 10, 19, "");
}

#[test]
fn an_unknown_field_is_located_and_named() {
    let (o, _, _t) = broken(
        "cases/desk/02-lookup-status.yaml",
        "  forbidden_tools:",
        "  forbiden_tools:",
    );
    assert_located(
        &o.stderr,
        "02-lookup-status.yaml",
        9,
        3,
        "unknown field `forbiden_tools`, expected one of",
    );
}

#[test]
fn a_wrong_type_is_located() {
    let (o, _, _t) = broken(
        "cases/desk/02-lookup-status.yaml",
        "max_tool_calls: 2",
        "max_tool_calls: two",
    );
    assert_located(&o.stderr, "02-lookup-status.yaml", 10, 19, "");
}

#[test]
fn a_constraint_naming_a_missing_tool_is_located() {
    let (o, _, _t) = broken(
        "cases/desk/02-lookup-status.yaml",
        "required_tools: [get_incident]",
        "required_tools: [get_incidnet]",
    );
    assert_located(&o.stderr, "02-lookup-status.yaml", 8, 20, "get_incidnet");
}

#[test]
fn a_reference_calling_an_unknown_tool_is_located() {
    let (o, _, _t) = broken(
        "cases/desk/02-lookup-status.yaml",
        "  - tool: get_incident",
        "  - tool: fetch_incident",
    );
    assert_located(&o.stderr, "02-lookup-status.yaml", 19, 5, "fetch_incident");
}

#[test]
fn a_gate_with_an_unknown_metric_is_located() {
    let cx = TestContext::new();
    cx.edit(
        "gauntlet.yaml",
        "expr: task_success_rate >= 0.85",
        "expr: task_sucess_rate >= 0.85",
    );
    let o = crate::gauntlet_snapshot!(cx, ["check", "[SUITE]"]);
    assert_eq!(o.code, 2);
}

#[test]
fn every_problem_is_reported_at_once() {
    let cx = TestContext::new();
    cx.edit(
        "cases/desk/02-lookup-status.yaml",
        "forbidden_tools:",
        "forbiden_tools:",
    );
    cx.edit(
        "cases/desk/03-list-open.yaml",
        "- tool: list_incidents",
        "- tool: list_all",
    );
    let o = crate::gauntlet_snapshot!(cx, ["check", "[SUITE]"]);
    assert_eq!(o.code, 2);
}

#[test]
fn check_reports_read_well() {
    let (_tmp, suite) = example();
    for (file, from, to) in [
        (
            "cases/desk/02-lookup-status.yaml",
            "forbidden_tools:",
            "forbiden_tools:",
        ),
        (
            "cases/desk/03-list-open.yaml",
            "- tool: list_incidents",
            "- tool: list_all",
        ),
        ("cases/desk/06-add-note.yaml", "{$count: 1}", "{$cnt: 1}"),
        ("worlds/db-ops.yaml", "kind: write", "kind: writes"),
    ] {
        let p = suite.join(file);
        let text = std::fs::read_to_string(&p).unwrap();
        std::fs::write(&p, text.replacen(from, to, 1)).unwrap();
    }
    let o = run(&["check", s(&suite)]);
    assert_eq!(o.code, 2);
    insta::assert_snapshot!(redact(&o.stderr, &suite, None));
}

#[test]
fn check_refuses_model_faults_that_cannot_happen_to_a_model_call() {
    let (_tmp, suite) = example();
    let file = suite.join("cases/desk/02-lookup-status.yaml");
    let text = std::fs::read_to_string(&file).unwrap();
    let lines = text.lines().count();
    std::fs::write(
        &file,
        format!("{text}faults:\n  - {{model: true, tool: get_incident, kind: timeout}}\n  - {{model: true, kind: lost_response}}\n"),
    )
    .unwrap();
    let o = run(&["check", s(&suite)]);
    assert_eq!(o.code, 2, "{}", o.stderr);
    let at = |line: usize| format!("02-lookup-status.yaml:{line}:");
    assert!(
        o.stderr.contains(&at(lines + 2)) && o.stderr.contains("names no `tool` and no `on`"),
        "{}",
        o.stderr
    );
    assert!(
        o.stderr.contains(&at(lines + 3))
            && o.stderr
                .contains("can only time out, be rate limited or be unavailable"),
        "{}",
        o.stderr
    );
}

/// Regression: `epochs: 0` passed `check` and failed only when the run started.
#[test]
fn zero_epochs_in_the_suite_is_located_by_check() {
    let (o, _suite, _tmp) = broken("gauntlet.yaml", "epochs: 1", "epochs: 0");
    assert_located(
        &o.stderr,
        "gauntlet.yaml",
        10,
        1,
        "`epochs` must be at least 1",
    );
}

/// A judge's mistakes are found by `check` at their field, not when the run starts.
#[test]
fn a_judges_mistakes_are_located_by_check() {
    let judges = "epochs: 1
judges:
  - model: m
    budget_eur: -1
  - model: m
    samples: 0
    rubric:
      name: r
      version: '1'
      criteria:
        - id: bad id
          text: t
          scale: {ordinal: {max: 1}}
          pass: 2
  - name: Priced
    model: unpriced-model
    budget_eur: 1.0";
    let (o, _suite, _tmp) = broken("gauntlet.yaml", "epochs: 1", judges);
    for (line, col, needle) in [
        (
            13,
            5,
            "`budget_eur` must be a positive number of euros, not -1",
        ),
        (14, 5, "two judges are named `Judge`"),
        (15, 5, "`samples` must be at least 1"),
        (20, 11, "criterion id `bad id` is not made of letters"),
        (22, 11, "an ordinal scale needs `max` of 2 or more, not 1"),
        (23, 11, "`pass` is a normalised verdict from 0 to 1, not 2"),
        (26, 5, "model `unpriced-model` has no price"),
    ] {
        assert_located(&o.stderr, "gauntlet.yaml", line, col, needle);
    }
}

/// Regression: an invalid `output_regex` passed `check` and then failed every agent's trial.
#[test]
fn an_invalid_output_regex_is_located_by_check() {
    let (o, _suite, _tmp) = broken(
        "cases/desk/02-lookup-status.yaml",
        "  output_contains: open",
        "  output_contains: open\n  output_regex: \"(unclosed\"",
    );
    assert_located(
        &o.stderr,
        "02-lookup-status.yaml",
        7,
        3,
        "invalid regular expression `(unclosed`",
    );
}

/// Regression: a handler path naming an argument the tool does not declare made every call
/// answer 400, blamed on the agent; a malformed JSON Pointer escape did the same. Both are
/// found by `check` (and `run`) at the handler's line, before anything runs.
#[test]
fn a_handler_placeholder_missing_from_the_schema_is_located() {
    let (o, _, _t) = broken(
        "worlds/incident-desk.yaml",
        r#"- append: {path: "/incidents/{incident_id}/notes""#,
        r#"- append: {path: "/incidents/{incident}/notes""#,
    );
    assert!(o.stderr.contains("incident-desk.yaml:116:"), "{}", o.stderr);
    assert!(
        o.stderr
            .contains("uses `{incident}`, which is not a parameter of tool `add_note`"),
        "{}",
        o.stderr
    );
}

#[test]
fn a_malformed_pointer_escape_in_a_handler_is_located() {
    let (o, _, _t) = broken(
        "worlds/incident-desk.yaml",
        r#"- append: {path: "/incidents/{incident_id}/notes""#,
        r#"- append: {path: "/incidents/{incident_id}/no~2tes""#,
    );
    assert!(o.stderr.contains("incident-desk.yaml:116:"), "{}", o.stderr);
    assert!(
        o.stderr.contains("not a valid JSON Pointer"),
        "{}",
        o.stderr
    );
}

/// Regression: a gate with a type error was reported (exit 2) only after every trial ran.
#[test]
fn a_gate_with_a_type_error_is_located_before_any_trial() {
    let (o, _, _t) = broken(
        "gauntlet.yaml",
        "expr: task_success_rate >= 0.85",
        "expr: task_success_rate >= \"high\"",
    );
    assert!(o.stderr.contains("gauntlet.yaml:"), "{}", o.stderr);
    assert!(o.stderr.contains("could not be evaluated"), "{}", o.stderr);
}

/// Regression: an empty folder named `x.yaml` among the cases was passed silently, and a
/// symlink loop gave a thousand "used twice" errors without naming the loop.
#[test]
fn a_folder_named_like_a_case_file_and_a_symlink_loop_are_named() {
    let (_tmp, suite) = example();
    std::fs::create_dir(suite.join("cases/desk/x.yaml")).unwrap();
    std::os::unix::fs::symlink(suite.join("cases/desk"), suite.join("cases/desk/again")).unwrap();
    let c = run(&["check", s(&suite)]);
    assert_eq!(c.code, 2, "{}", c.stderr);
    assert!(
        c.stderr.contains("x.yaml") && c.stderr.contains("is a folder named like a case file"),
        "{}",
        c.stderr
    );
    assert!(c.stderr.contains("a symlink loop"), "{}", c.stderr);
    assert!(c.stderr.lines().count() < 10, "{}", c.stderr);
}

/// Regression: wrong types were reported as `invalid u32` and a duplicate key with advice about
/// the YAML library's options; both now say the field and what to do.
#[test]
fn wrong_types_and_duplicate_keys_are_said_plainly() {
    let (o, _, _t) = broken(
        "cases/desk/02-lookup-status.yaml",
        "max_tool_calls: 2",
        "max_tool_calls: two",
    );
    assert_located(
        &o.stderr,
        "02-lookup-status.yaml",
        10,
        19,
        "`max_tool_calls` (at /trajectory_constraints/max_tool_calls) must be a whole number of 0 or more, not `two`",
    );
    let (o, _, _t) = broken("gauntlet.yaml", "epochs: 1\n", "epochs: 1\nepochs: 2\n");
    assert!(
        o.stderr
            .contains("duplicate mapping key: epochs (the key appears twice; keep one)"),
        "{}",
        o.stderr
    );
    assert!(!o.stderr.contains("DuplicateKeyPolicy"), "{}", o.stderr);
}

/// Regression: an unclosed `[` was reported as "expected string scalar" (or an illegal `:` on
/// the next line), and a UTF-8 byte-order mark at the start of a JSON case as "expected value".
#[test]
fn an_unclosed_bracket_is_named_and_a_byte_order_mark_is_accepted() {
    let (o, _, _t) = broken(
        "cases/desk/02-lookup-status.yaml",
        "required_tools: [get_incident]",
        "required_tools: [get_incident",
    );
    assert!(
        o.stderr
            .contains("`[` is opened on line 8 and not closed with `]`"),
        "{}",
        o.stderr
    );
    let (_tmp, suite) = example();
    let case = suite.join("cases/seeds/tc-sql-fix-001.json");
    let text = std::fs::read_to_string(&case).unwrap();
    std::fs::write(&case, format!("\u{feff}{text}")).unwrap();
    let c = run(&["check", s(&suite)]);
    assert_eq!(c.code, 0, "{}", c.stderr);
}
