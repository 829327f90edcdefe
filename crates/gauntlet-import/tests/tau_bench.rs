//! tau-bench's airline domain through the importer, on tau-bench's own data
//! (`../shared/peers/tau-bench`; these tests say so and skip where it is absent).

use std::path::PathBuf;

use gauntlet_import::tau_bench::{self, AIRLINE_TABLES, Options};
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

fn tables(state: &Value) -> Vec<&Value> {
    AIRLINE_TABLES.iter().map(|t| &state[*t]).collect()
}

#[test]
fn changing_one_argument_of_any_gold_write_action_breaks_the_reward() {
    let Some(data) = data() else { return };
    let domain = tau_bench::load(&options(data, PathBuf::new())).unwrap();
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
        assert!(
            refused.is_empty(),
            "task {index}: gold refused: {refused:?}"
        );
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
        "{mutated} write actions mutated, {} survived",
        survived.len()
    );
    assert!(mutated >= 40, "only {mutated} write actions");
    assert!(
        survived.is_empty(),
        "mutations that kept the reward: {survived:?}"
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
