//! tau2-bench's mock and retail domains through the importer, on tau2-bench's own data
//! (`../shared/peers/tau2-bench`, and tau-bench's retail tables for tau2's retail database).

use std::path::PathBuf;

use gauntlet_import::{replay, tau2};
use serde_json::{Value, json};

fn peers() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/peers")
}

fn options(domain: &str, out: PathBuf) -> tau2::Options {
    tau2::Options {
        data_dir: peers().join("tau2-bench"),
        domain: domain.into(),
        split: None,
        tau_bench_data: Some(peers().join("tau-bench")),
        out,
        persona: false,
    }
}

fn cases(out: &std::path::Path, domain: &str) -> Vec<Value> {
    std::fs::read_to_string(out.join(format!("cases/{domain}.jsonl")))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
#[cfg_attr(not(have_tau2_bench), ignore = "needs ../shared/peers/tau2-bench")]
fn mock_gold_actions_meet_every_assertion_they_can_reach() {
    let dir = tempfile::tempdir().unwrap();
    let summary = tau2::import(&options("mock", dir.path().to_owned())).unwrap();
    assert_eq!(summary.cases, 10);
    assert_eq!(summary.env_assertions, 3);
    // tau2's own data: one task asserts a status its (absent) gold actions never set, one
    // asserts on the user's inbox, which only the user's tools change. Every other is met.
    assert_eq!(
        summary.unmet_env_assertions.len(),
        2,
        "{:#?}",
        summary.unmet_env_assertions
    );
    assert!(
        summary.unmet_env_assertions[0]
            .starts_with("mock-update_task_with_history_and_env_assertions: assert_task_status")
    );
    assert!(summary.unmet_env_assertions[0].ends_with("the task has no gold actions"));
    assert!(summary.unmet_env_assertions[1].starts_with("mock-update_task_with_user_tools"));
    assert!(summary.refused_gold_actions.is_empty());

    let cases = cases(dir.path(), "mock");
    let by_id = |id: &str| cases.iter().find(|c| c["case_id"] == id).unwrap();
    // DB: the record the gold action creates, as tau2's create_task makes it, and nothing else.
    let created = by_id("mock-create_task_1_with_env_assertions");
    assert_eq!(
        created["expected_outcome"]["/tasks/task_2"],
        json!({"task_id": "task_2", "title": "Important Meeting", "description": null, "status": "pending"})
    );
    assert_eq!(
        created["expected_outcome"]["/tasks/task_2/status"],
        "pending"
    );
    assert_eq!(
        created["expected_outcome"]["state_unchanged_elsewhere"],
        true
    );
    // Initialization data, initialization actions and a message history all start the case
    // from a state holding task_2; the history is given to the agent as text.
    for id in [
        "mock-update_task_with_initialization_data",
        "mock-update_task_with_initialization_actions",
        "mock-update_task_with_message_history",
    ] {
        let c = by_id(id);
        assert_eq!(
            c["initial_state"]["tasks"]["task_2"]["status"], "pending",
            "{id}"
        );
        assert_eq!(
            c["initial_state"]["users"]["user_1"]["tasks"],
            json!(["task_1", "task_2"]),
            "{id}"
        );
        assert_eq!(
            c["expected_outcome"]["/tasks/task_2"]["status"], "completed",
            "{id}"
        );
    }
    assert!(
        by_id("mock-update_task_with_message_history")["user_input"]
            .as_str()
            .unwrap()
            .starts_with("Earlier in this conversation:\nuser: I need to create a task")
    );
    // ACTION with compare_args []: the call is required, its arguments are not compared.
    let transfer = by_id("mock-impossible_task_1");
    assert_eq!(
        transfer["trajectory_match"],
        json!({"mode": "superset", "args": "superset", "overrides": {"transfer_to_human_agents": "ignore"}})
    );
    // A task with neither gold actions nor assertions is rewarded on any state, as in tau2.
    assert!(
        by_id("mock-create_task_1_nl_eval")["expected_outcome"]
            .as_object()
            .unwrap()
            .is_empty()
    );
}

#[test]
#[cfg_attr(not(have_tau2_bench), ignore = "needs ../shared/peers/tau2-bench")]
fn a_wrong_write_misses_the_expected_state() {
    let dir = tempfile::tempdir().unwrap();
    let opts = options("mock", dir.path().to_owned());
    tau2::import(&opts).unwrap();
    let domain = tau2::load(&opts).unwrap();
    let case = cases(dir.path(), "mock")
        .into_iter()
        .find(|c| c["case_id"] == "mock-update_task_1")
        .unwrap();
    let expected = &case["expected_outcome"]["/tasks/task_1"];
    let initial = std::sync::Arc::new(domain.initial.clone());
    let (right, _) = replay(
        &domain.world,
        &initial,
        [(
            "update_task_status",
            &json!({"task_id": "task_1", "status": "completed"}),
        )],
    );
    assert_eq!(&right["tasks"]["task_1"], expected);
    let (wrong, refused) = replay(
        &domain.world,
        &initial,
        [(
            "update_task_status",
            &json!({"task_id": "task_1", "status": "done"}),
        )],
    );
    assert_eq!(
        refused.len(),
        1,
        "tau2's TaskStatus is pending or completed"
    );
    assert_ne!(&wrong["tasks"]["task_1"], expected);
}

#[test]
#[cfg_attr(
    not(all(have_tau2_bench, have_tau_bench)),
    ignore = "needs ../shared/peers/tau2-bench and ../shared/peers/tau-bench"
)]
fn retail_builds_tau2s_database_from_tau_bench_tables() {
    let dir = tempfile::tempdir().unwrap();
    let summary = tau2::import(&options("retail", dir.path().to_owned())).unwrap();
    assert_eq!(summary.cases, 114);
    assert_eq!(summary.nl_assertion_cases, 112);
    assert!(summary.unmet_env_assertions.is_empty());
    let state: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join("worlds/retail-state.json")).unwrap(),
    )
    .unwrap();
    let users = state["users"].as_object().unwrap();
    assert_eq!(users.len(), 500);
    assert!(users.iter().all(|(id, u)| u["user_id"] == json!(id)));

    let cases = cases(dir.path(), "retail");
    let first = &cases[0];
    assert_eq!(first["case_id"], "retail-0");
    // Task 0 exchanges two items of #W2378156: the order as tau2's tool leaves it.
    let expected = first["expected_outcome"].as_object().unwrap();
    let keys: Vec<&str> = expected.keys().map(String::as_str).collect();
    assert_eq!(keys, ["/orders/#W2378156", "state_unchanged_elsewhere"]);
    let order = &expected["/orders/#W2378156"];
    assert_eq!(order["status"], "exchange requested");
    assert_eq!(order["exchange_items"], json!(["1151293680", "4983901480"]));
    assert!(
        first["user_input"]
            .as_str()
            .unwrap()
            .contains("You are Yusuf Rossi in zip code 19122.")
    );

    // Without db.json and without tau-bench's tables the import says what to pass.
    let mut bare = options("retail", dir.path().join("x"));
    bare.tau_bench_data = None;
    let err = tau2::import(&bare).unwrap_err().to_string();
    assert!(
        err.contains("db.json: not found") && err.contains("--tau-bench-data"),
        "{err}"
    );
}
