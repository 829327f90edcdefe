//! tau-bench's airline and retail domains through the importer, on tau-bench's own data
//! (`../shared/peers/tau-bench`; these tests say so and skip where it is absent).

use std::path::PathBuf;

use gauntlet_import::tau_bench::{self, Options};
use serde_json::Value;

fn data() -> Option<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/peers/tau-bench");
    if dir.join("derived/airline_tasks_test.json").exists() {
        Some(dir)
    } else {
        eprintln!(
            "skipped: tau-bench data not found at {} (see docs/reference.md, \"Importing tau-bench\")",
            dir.display()
        );
        None
    }
}

fn options(data: PathBuf, out: PathBuf) -> Options {
    Options {
        users: Some(data.join("at-7362a17/tau_bench/envs/airline/data/users.json")),
        data_dir: data,
        domain: "airline".into(),
        split: "test".into(),
        out,
        persona: false,
    }
}

fn retail(data: PathBuf, out: PathBuf) -> Options {
    Options {
        users: None,
        domain: "retail".into(),
        ..options(data, out)
    }
}

/// Changes one value so that it means something else.
fn mutate(v: &Value) -> Value {
    match v {
        Value::String(s) => Value::String(format!("{s}X")),
        Value::Number(n) => serde_json::json!(n.as_f64().unwrap_or(0.0) + 1.0),
        Value::Bool(b) => Value::Bool(!b),
        Value::Array(items) => match items.split_first() {
            Some((first, rest)) => {
                let mut out = vec![mutate(first)];
                out.extend(rest.iter().cloned());
                Value::Array(out)
            }
            None => Value::Array(vec![Value::Null]),
        },
        Value::Object(m) => {
            let mut m = m.clone();
            if let Some((k, first)) = m.iter().next().map(|(k, v)| (k.clone(), v.clone())) {
                m.insert(k, mutate(&first));
            }
            Value::Object(m)
        }
        Value::Null => Value::String("X".into()),
    }
}

/// Mutates one argument of every gold write action (rotating through the arguments across
/// tasks) and lists the mutations that leave the final state as the gold one: the mutated
/// count and the survivors. Tasks whose gold path has a write refused are left out.
fn mutations(opts: &Options) -> (usize, Vec<String>) {
    let domain = tau_bench::load(opts).unwrap();
    let tables = |state: &Value| -> Vec<Value> {
        domain
            .spec
            .tables
            .iter()
            .map(|t| state[*t].clone())
            .collect()
    };
    let writes: Vec<&str> = domain.world_json["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["kind"] == "write")
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    let (mut mutated, mut survived) = (0, Vec::new());
    for (index, task) in domain.tasks.iter().enumerate() {
        let actions = task["actions"].as_array().unwrap();
        let (gold, refused) = tau_bench::run_gold(&domain.world, &domain.initial, actions);
        if refused
            .iter()
            .any(|(tool, _)| writes.contains(&tool.as_str()))
        {
            continue;
        }
        for (i, a) in actions.iter().enumerate() {
            if !writes.contains(&a["name"].as_str().unwrap()) {
                continue;
            }
            // Each write action's arguments, one at a time, in turn across tasks.
            let keys: Vec<&String> = a["kwargs"].as_object().unwrap().keys().collect();
            let key = keys[(index + i) % keys.len()];
            let mut changed = actions.clone();
            changed[i]["kwargs"][key.as_str()] = mutate(&a["kwargs"][key.as_str()]);
            let (after, _) = tau_bench::run_gold(&domain.world, &domain.initial, &changed);
            mutated += 1;
            if tables(&after) == tables(&gold) {
                survived.push(format!("task {index} action {i} {}.{key}", a["name"]));
            }
        }
    }
    eprintln!(
        "{}: {mutated} write actions mutated, {} survived",
        opts.domain,
        survived.len()
    );
    (mutated, survived)
}

#[test]
#[cfg_attr(
    not(have_tau_bench),
    ignore = "needs tau-bench data in ../shared/peers/tau-bench"
)]
fn changing_one_argument_of_any_gold_write_action_breaks_the_reward() {
    let Some(data) = data() else { return };
    let (mutated, survived) = mutations(&options(data.clone(), PathBuf::new()));
    assert!(mutated >= 40, "only {mutated} write actions");
    assert!(
        survived.is_empty(),
        "mutations that kept the reward: {survived:?}"
    );
    let (mutated, survived) = mutations(&retail(data, PathBuf::new()));
    assert!(mutated >= 100, "only {mutated} retail write actions");
    // Two retail writes cannot matter, in tau-bench either: task 22 changes the user's address
    // and later changes it back; task 111 sets the user's address to the one already on file.
    assert_eq!(
        survived,
        [
            "task 22 action 1 \"modify_user_address\".address2",
            "task 111 action 1 \"modify_user_address\".user_id"
        ],
        "retail mutations that kept the reward"
    );
}

#[test]
#[cfg_attr(
    not(have_tau_bench),
    ignore = "needs tau-bench data in ../shared/peers/tau-bench"
)]
fn retail_gold_writes_apply_except_four_that_tau_bench_refuses_too() {
    let Some(data) = data() else { return };
    let out = tempfile::tempdir().unwrap();
    let summary = tau_bench::import(&retail(data, out.path().to_owned())).unwrap();
    assert_eq!((summary.cases, summary.with_outputs), (115, 37));
    // Checked by hand against the data and tau-bench's rules: tasks 12 and 13 ask for a refund
    // to PayPal, which is neither the original payment method nor a gift card (their gold path
    // then transfers to a human); task 64 exchanges items of an order that is still pending;
    // task 106's price difference (21.10) exceeds the gift card's balance (17).
    let writes: Vec<&String> = summary
        .refused_gold_actions
        .iter()
        .filter(|r| {
            [
                "return_delivered",
                "exchange_delivered",
                "modify_",
                "cancel_",
            ]
            .iter()
            .any(|w| r.contains(&format!(": {w}")))
        })
        .collect();
    assert_eq!(
        writes,
        [
            "retail-test-12: return_delivered_order_items: Error: payment method should be either the original payment method or a gift card",
            "retail-test-13: return_delivered_order_items: Error: payment method should be either the original payment method or a gift card",
            "retail-test-64: exchange_delivered_order_items: Error: non-delivered order cannot be exchanged",
            "retail-test-106: exchange_delivered_order_items: Error: insufficient gift card balance to pay for the price difference",
        ]
    );
    let cases = std::fs::read_to_string(out.path().join("cases/retail-test.jsonl")).unwrap();
    let first: Value = serde_json::from_str(cases.lines().next().unwrap()).unwrap();
    assert_eq!(
        first["tags"],
        serde_json::json!(["tau-bench", "retail", "annotator-0"])
    );
}

#[test]
fn a_missing_data_folder_is_named_in_the_error() {
    let dir = tempfile::tempdir().unwrap();
    let err = tau_bench::import(&options(dir.path().join("nowhere"), dir.path().join("out")))
        .err()
        .unwrap()
        .to_string();
    assert!(err.contains("nowhere"), "{err}");
}

#[test]
#[cfg_attr(
    not(have_tau_bench),
    ignore = "needs tau-bench data in ../shared/peers/tau-bench"
)]
fn the_domains_policy_becomes_the_agents_system_prompt() {
    let Some(data) = data() else { return };
    // A data folder like tau-bench's repository, with the airline policy beside the data.
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("tau-bench");
    let envs = root.join("tau_bench/envs/airline");
    std::fs::create_dir_all(&envs).unwrap();
    std::os::unix::fs::symlink(data.join("derived"), root.join("derived")).unwrap();
    std::os::unix::fs::symlink(data.join("tau_bench/envs/airline/data"), envs.join("data"))
        .unwrap();
    let policy = "# Airline Agent Policy\n\nThe current time is 2024-05-15 15:00:00 EST.\n\n- Before taking any action that updates the booking database, you must obtain \"yes\" from the user.\n";
    std::fs::write(envs.join("wiki.md"), policy).unwrap();
    let out = dir.path().join("suite");
    let summary = tau_bench::import(&Options {
        users: None,
        ..options(root, out.clone())
    })
    .unwrap();
    assert_eq!(summary.policy, Some(envs.join("wiki.md")));
    let suite = gauntlet_suite::Suite::load(&out).unwrap_or_else(|p| panic!("{p:?}"));
    assert_eq!(suite.config.system_prompt.as_deref(), Some(policy));
    // Without it, the suite says where the policy would come from.
    let out = dir.path().join("plain");
    tau_bench::import(&options(data, out.clone())).unwrap();
    let config = std::fs::read_to_string(out.join("gauntlet.yaml")).unwrap();
    assert!(
        config.contains("tau_bench/envs/airline/wiki.md"),
        "{config}"
    );
    let suite = gauntlet_suite::Suite::load(&out).unwrap_or_else(|p| panic!("{p:?}"));
    assert_eq!(suite.config.system_prompt, None);
}
