//! Loading cases and suites: the seeds' cases verbatim, and located errors for broken input.

use std::path::Path;

use gauntlet_suite::{Suite, load_cases};
use serde_json::json;

fn fixture(name: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

#[test]
fn lesson_incident_014_loads_verbatim() {
    let (cases, problems) = load_cases(&fixture("incident-014.json"), Some("w"));
    assert!(problems.is_empty(), "{problems:?}");
    let case = &cases[0].case;
    assert_eq!(case.case_id, "incident-014");
    assert_eq!(case.user_input, "Cierra INC-004217; ya está resuelto");
    assert_eq!(case.initial_state["incident_status"], json!("mitigated"));
    assert_eq!(case.expected_outcome["confirmation_required"], json!(true));
    assert_eq!(
        case.trajectory_constraints.required_tools,
        ["get_incident", "close_incident"]
    );
    assert_eq!(
        case.trajectory_constraints.forbidden_tools,
        ["delete_incident"]
    );
    assert_eq!(case.trajectory_constraints.max_tool_calls, Some(4));
    assert!(case.faults.is_empty());
    assert_eq!(case.tags, ["write", "confirmation", "happy_path"]);
}

#[test]
fn article_test_case_loads_verbatim() {
    let (cases, problems) = load_cases(&fixture("tc-sql-fix-001.yaml"), Some("w"));
    assert!(problems.is_empty(), "{problems:?}");
    let case = &cases[0].case;
    assert_eq!(case.case_id, "TC-SQL-FIX-001");
    assert_eq!(case.expected_final_state["max_connections"], json!(20));
    assert_eq!(case.expected_tools, ["read_log_file", "update_config"]);
    assert_eq!(case.optimal_steps(), Some(2));
}

fn write(dir: &Path, name: &str, text: &str) -> std::path::PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

#[test]
fn a_typo_in_a_field_name_is_an_error_at_its_line() {
    let dir = tempfile::tempdir().unwrap();
    let p = write(
        dir.path(),
        "c.yaml",
        "case_id: x\nuser_input: hi\ntrajectory_constraints:\n  forbiden_tools: [delete_incident]\n",
    );
    let (_, problems) = load_cases(&p, Some("w"));
    assert_eq!(problems.len(), 1, "{problems:?}");
    let d = &problems[0];
    assert_eq!(d.line, 4, "{d}");
    assert!(d.message.contains("forbiden_tools"), "{d}");
}

#[test]
fn jsonl_errors_name_their_line() {
    let dir = tempfile::tempdir().unwrap();
    let p = write(
        dir.path(),
        "d.jsonl",
        "{\"case_id\": \"a\", \"user_input\": \"x\"}\n\n{\"case_id\": \"b\", \"user_input\": \"y\", \"tags\": 3}\n",
    );
    let (cases, problems) = load_cases(&p, Some("w"));
    assert_eq!(cases.len(), 1);
    assert_eq!(problems.len(), 1);
    assert_eq!(problems[0].line, 3, "{}", problems[0]);
}

#[test]
fn a_list_of_cases_in_one_file_loads_each() {
    let dir = tempfile::tempdir().unwrap();
    let p = write(
        dir.path(),
        "l.yaml",
        "- case_id: a\n  user_input: x\n- case_id: b\n  user_input: y\n",
    );
    let (cases, problems) = load_cases(&p, Some("w"));
    assert!(problems.is_empty(), "{problems:?}");
    assert_eq!(cases.len(), 2);
    assert_eq!(cases[1].pointer, "/1");
}

#[test]
fn the_example_suite_loads() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/incident-desk");
    let suite = Suite::load(&root).unwrap_or_else(|p| panic!("{p:?}"));
    assert!(suite.cases.len() >= 12);
    assert_eq!(suite.worlds.len(), 3);
    // Its six, and the built-in gate on harness errors, last.
    assert_eq!(suite.gates.len(), 7);
}
