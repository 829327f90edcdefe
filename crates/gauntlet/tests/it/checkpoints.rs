//! Glass-box checkpoints: assertions on the state inside a trajectory, the step where it first
//! went wrong per case, and traps that end a trial at the failing step.

use crate::common::*;

/// The example suite with one more case: reassign INC-004300, then raise its severity, with a
/// checkpoint after the first write and one after step 3; `trap` on the first.
fn suite_with_checkpoints(trap: bool) -> (tempfile::TempDir, PathBuf) {
    let (tmp, suite) = example();
    let case = json!({
        "case_id": "reassign-then-raise",
        "user_input": "Give INC-004300 to user-13, then raise it to sev1.",
        "expected_outcome": {"/incidents/INC-004300/severity": "sev1"},
        "checkpoints": [
            {"name": "the right incident reassigned first", "after": {"first_write": true},
             "expect": {"/incidents/INC-004300/assignee": "user-13",
                        "/incidents/INC-004301/assignee": "user-7"},
             "trap": trap},
            {"after": {"step": 3}, "expect": {"/incidents/INC-004300/severity": "sev1"}}
        ],
        "reference_trajectory": [
            {"tool": "update_incident", "args": {"incident_id": "INC-004300", "fields": {"assignee": "user-13"}}},
            {"tool": "get_incident", "args": {"incident_id": "INC-004300"}},
            {"tool": "update_incident", "args": {"incident_id": "INC-004300", "fields": {"severity": "sev1"}}},
            {"answer": "Done."}
        ],
        "scripts": {"wrong-first": [
            {"tool": "update_incident", "args": {"incident_id": "INC-004301", "fields": {"assignee": "user-13"}}},
            {"tool": "update_incident", "args": {"incident_id": "INC-004300", "fields": {"assignee": "user-13"}}},
            {"tool": "update_incident", "args": {"incident_id": "INC-004300", "fields": {"severity": "sev1"}}},
            {"answer": "Done."}
        ]}
    });
    std::fs::write(
        suite.join("cases/desk/20-reassign-then-raise.json"),
        case.to_string(),
    )
    .unwrap();
    (tmp, suite)
}

fn run_case(suite: &Path, agent: &str) -> (Output, Value) {
    let out_dir = suite.join(format!("out-{}", agent.replace(':', "-")));
    let out = run(&[
        "run",
        s(suite),
        "--filter",
        "reassign-then-raise",
        "--agent",
        agent,
        "--epochs",
        "3",
        "--out",
        s(&out_dir),
    ]);
    let trials = read_trials(&out_dir);
    assert_eq!(trials.len(), 3, "{}", out.stderr);
    (out, trials[0].clone())
}

#[test]
fn checkpoints_pass_on_the_right_path_and_name_the_step_where_a_wrong_one_began() {
    let (_tmp, suite) = suite_with_checkpoints(false);
    let (_, good) = run_case(&suite, "script:reference");
    assert_eq!(good["status"], "passed", "{:#}", good["scores"]);
    assert_eq!(score(&good, "checkpoints").unwrap()["value"], 1.0);
    assert!(score(&good, "first_wrong_step").is_none());

    // The wrong first write is repaired later: the final state passes, the checkpoint does not.
    let (out, wrong) = run_case(&suite, "script:wrong-first");
    assert_eq!(wrong["status"], "failed");
    assert_eq!(score(&wrong, "StateVerification").unwrap()["passed"], true);
    let cp = score(&wrong, "checkpoints").unwrap();
    assert_eq!(cp["value"], 0.5);
    assert_eq!(cp["details"]["checkpoints"][0]["step"], 1);
    assert_eq!(
        cp["details"]["checkpoints"][0]["mismatches"]["/incidents/INC-004301/assignee"]["actual"],
        "user-13"
    );
    assert_eq!(score(&wrong, "first_wrong_step").unwrap()["value"], 1.0);
    // Every call ran: no trap.
    assert_eq!(
        wrong["trajectory"]["events"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["type"] == "tool_call")
            .count(),
        3
    );
    // The run reports where the case's trajectories first went wrong, over its epochs.
    let results_path = out
        .stdout
        .lines()
        .find_map(|l| l.strip_prefix("results: "))
        .unwrap()
        .trim()
        .to_owned();
    let results: Value =
        serde_json::from_str(&std::fs::read_to_string(results_path).unwrap()).unwrap();
    assert_eq!(
        results["first_wrong_steps"]["reassign-then-raise"],
        json!({"1": 3})
    );
    assert!(
        out.stdout
            .contains("first wrong step: reassign-then-raise: step 1 ×3"),
        "{}",
        out.stdout
    );
}

#[test]
fn a_trap_ends_the_trial_at_the_failing_step() {
    let (_tmp, suite) = suite_with_checkpoints(true);
    let (_, good) = run_case(&suite, "script:reference");
    assert_eq!(good["status"], "passed");
    let (_, wrong) = run_case(&suite, "script:wrong-first");
    assert_eq!(wrong["status"], "failed");
    let events = wrong["trajectory"]["events"].as_array().unwrap();
    // One call ran; the trap ended the trial there, so nothing after it reached the world.
    let calls: Vec<&Value> = events.iter().filter(|e| e["type"] == "tool_call").collect();
    assert_eq!(calls.len(), 1, "{events:#?}");
    let trapped: Vec<&Value> = events.iter().filter(|e| e["type"] == "trapped").collect();
    assert_eq!(trapped.len(), 1);
    assert_eq!(
        trapped[0]["checkpoint"],
        "the right incident reassigned first"
    );
    assert_eq!(trapped[0]["step"], 1);
    assert_eq!(
        wrong["final_state"]["incidents"]["INC-004300"]["severity"],
        "sev2"
    );
    assert_eq!(score(&wrong, "first_wrong_step").unwrap()["value"], 1.0);
}

#[test]
fn a_checkpoint_without_one_point_is_located_by_check() {
    let (_tmp, suite) = example();
    std::fs::write(
        suite.join("cases/desk/21-bad.yaml"),
        "case_id: bad-checkpoint\nuser_input: hi\ncheckpoints:\n  - after: {step: 1, first_write: true}\n    expect: {/a: 1}\n",
    )
    .unwrap();
    let out = run(&["check", s(&suite)]);
    assert_eq!(out.code, 2);
    assert!(
        out.stderr.contains("21-bad.yaml:4:") && out.stderr.contains("exactly one of"),
        "{}",
        out.stderr
    );
}
