//! The verdict on a run: metrics from trials' scores, gates over the metrics, and pass^k against
//! tau-bench's published figures.

use gauntlet_eval::{evaluate, trial_status};
use gauntlet_model::trajectory::ToolCall;
use gauntlet_model::{Case, Event, ToolKind, Trajectory};
use gauntlet_verdict::aggregate;
use serde_json::{Value, json};

fn call(i: usize, tool: &str, args: Value) -> Event {
    Event::ToolCall(Box::new(ToolCall {
        id: format!("call-{i}"),
        step: i as u32,
        tool: tool.to_owned(),
        arguments: args,
        kind: Some(ToolKind::Read),
        schema_valid: Some(true),
        result: Some(json!({})),
        error: None,
        fault: None,
        idempotency_key: None,
        state_changes: Vec::new(),
        idempotent_replay: false,
        recorded_output: None,
        at_ms: 0.0,
        latency_ms: 0.0,
    }))
}

fn case_with(required: &[String], forbidden: &[String], max_calls: u32) -> Case {
    serde_json::from_value(json!({
        "case_id": "p",
        "user_input": "x",
        "trajectory_constraints": {
            "required_tools": required,
            "forbidden_tools": forbidden,
            "max_tool_calls": max_calls,
        }
    }))
    .unwrap()
}

#[test]
fn aggregate_counts_critical_violations_and_task_success() {
    let case = case_with(&[], &["x".to_owned()], 5);
    let bad = Trajectory {
        events: vec![call(1, "x", json!({}))],
        ..Default::default()
    };
    let good = Trajectory::default();
    let summaries: Vec<_> = [bad, good]
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let scores = evaluate(&case, t, &json!({}));
            gauntlet_model::TrialSummary {
                case_id: format!("c{i}"),
                epoch: 0,
                trace_id: "0af7651916cd43dd8448eb211c80319c".into(),
                status: trial_status(&scores),
                error: None,
                tags: vec!["t".into()],
                difficulty: None,
                tools: Vec::new(),
                faults: Vec::new(),
                tool_calls: t.tool_calls().count() as u32,
                steps: t.steps() as u32,
                tokens: 0,
                cost_eur: 0.0,
                user_cost_eur: 0.0,
                duration_ms: 1.0,
                final_state: json!({}),
                scores,
                judges: Vec::new(),
            }
        })
        .collect();
    let agg = aggregate(&summaries, 0);
    assert_eq!(agg.metrics["critical_policy_violations"], 1.0);
    assert_eq!(agg.metrics["forbidden_tool_used"], 1.0);
    assert_eq!(agg.metrics["pass_rate"], 0.5);
    assert_eq!(agg.metrics["task_success_rate"], 1.0);
    assert_eq!(agg.metrics["trace_id_coverage"], 1.0);
    assert_eq!(agg.segments["tag"]["t"].passed, 1);
}

mod gates {
    use gauntlet_verdict::{Aggregate, CompiledGate, GateError, GateSpec};

    fn agg(pairs: &[(&str, f64)]) -> Aggregate {
        Aggregate {
            metrics: pairs.iter().map(|(k, v)| ((*k).to_owned(), *v)).collect(),
            ..Default::default()
        }
    }

    #[test]
    fn an_unknown_metric_is_an_input_error_with_a_suggestion() {
        let err =
            CompiledGate::compile(&GateSpec::Expr("task_sucess_rate >= 0.8".into())).unwrap_err();
        match &err {
            GateError::UnknownMetric { name, hint, .. } => {
                assert_eq!(name, "task_sucess_rate");
                assert!(hint.contains("task_success_rate"), "{err}");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_syntax_error_is_an_input_error() {
        assert!(matches!(
            CompiledGate::compile(&GateSpec::Expr("pass_rate >=".into())),
            Err(GateError::Syntax { .. })
        ));
    }

    #[test]
    fn gates_decide_on_metrics_and_report_their_inputs() {
        let g = CompiledGate::compile(&GateSpec::Named {
            name: "safety".into(),
            expr: "critical_policy_violations == 0.0 && task_success_rate >= 0.85".into(),
        })
        .unwrap();
        let (ok, err) = g.decide(&agg(&[
            ("critical_policy_violations", 0.0),
            ("task_success_rate", 0.9),
        ]));
        assert!(ok.passed && err.is_none());
        assert_eq!(ok.inputs.len(), 2);
        let (bad, _) = g.decide(&agg(&[
            ("critical_policy_violations", 1.0),
            ("task_success_rate", 0.9),
        ]));
        assert!(!bad.passed);
    }

    #[test]
    fn integer_literals_compare_with_metrics() {
        let g = CompiledGate::compile(&GateSpec::Expr(
            "critical_policy_violations == 0 && p95_tool_calls <= 6".into(),
        ))
        .unwrap();
        let (o, err) = g.decide(&agg(&[
            ("critical_policy_violations", 0.0),
            ("p95_tool_calls", 6.0),
        ]));
        assert!(err.is_none(), "{err:?}");
        assert!(o.passed);
    }

    #[test]
    fn a_missing_evaluator_fails_the_gate_with_an_error() {
        let g = CompiledGate::compile(&GateSpec::Expr("evaluators.Nope.pass_rate == 1.0".into()))
            .unwrap();
        let (o, err) = g.decide(&agg(&[]));
        assert!(!o.passed);
        assert!(err.is_some());
    }
}

mod statistics {
    use std::path::Path;

    use gauntlet_verdict::pass_k_metrics;
    use serde_json::Value;

    /// tau-bench's published pass^k for GPT-4o on airline, from the log's own rewards.
    #[test]
    #[cfg_attr(
        not(have_tau_bench),
        ignore = "needs tau-bench data in ../shared/peers/tau-bench"
    )]
    fn pass_hat_k_of_tau_bench_gpt4o_airline_matches_the_published_figures() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../../shared/peers/tau-bench/historical_trajectories/gpt-4o-airline.json");
        let Ok(text) = std::fs::read_to_string(&path) else {
            eprintln!(
                "skipped: {} is absent (it comes with the shared peer data; see docs/statistics.md)",
                path.display()
            );
            return;
        };
        let log: Vec<Value> = serde_json::from_str(&text).unwrap();
        let mut per_task: std::collections::BTreeMap<u64, (u64, u64)> = Default::default();
        for r in &log {
            let e = per_task.entry(r["task_id"].as_u64().unwrap()).or_default();
            e.0 += 1;
            e.1 += u64::from(r["reward"].as_f64().unwrap() == 1.0);
        }
        assert_eq!(per_task.len(), 50);
        let counts: Vec<(u64, u64)> = per_task.values().copied().collect();
        let m = pass_k_metrics(&counts);
        let got: Vec<String> = (1..=4)
            .map(|k| format!("{:.3}", m[&format!("pass_hat_{k}")]))
            .collect();
        assert_eq!(got, ["0.420", "0.273", "0.220", "0.200"]);
    }
}

/// A stored run re-gated from its metrics alone decides as re-gating its trial summaries does:
/// the same metrics, intervals, gate outcomes, rubric and verdict.
#[test]
fn regating_from_the_stored_metrics_matches_regating_from_the_trials() {
    use gauntlet_model::{RunHeader, TrialStatus};
    use gauntlet_verdict::{CompiledGate, GateSpec, build_results, regate};
    let header: RunHeader = serde_json::from_value(json!({
        "format_version": gauntlet_model::FORMAT_VERSION, "run_id": "r", "suite": "s",
        "agent": "a", "seed": 3, "epochs": 2, "started_at": "2026-12-01T10:00:00Z",
        "versions": {"harness": "0", "worlds": {}, "dataset": "", "agent": "", "config": ""}
    }))
    .unwrap();
    let case = case_with(&[], &["x".to_owned()], 5);
    let summaries: Vec<_> = (0..40usize)
        .map(|i| {
            let t = Trajectory {
                events: if i % 3 == 0 {
                    vec![call(1, "x", json!({}))]
                } else {
                    vec![]
                },
                ..Default::default()
            };
            let scores = evaluate(&case, &t, &json!({}));
            gauntlet_model::TrialSummary {
                case_id: format!("c{}", i / 2),
                epoch: (i % 2) as u32,
                trace_id: "0af7651916cd43dd8448eb211c80319c".into(),
                status: trial_status(&scores),
                error: None,
                tags: vec![format!("t{}", i % 4)],
                difficulty: None,
                tools: Vec::new(),
                faults: Vec::new(),
                tool_calls: t.tool_calls().count() as u32,
                steps: t.steps() as u32,
                tokens: 10 * i as u64,
                cost_eur: 0.001 * i as f64,
                user_cost_eur: 0.0,
                duration_ms: 1.0 + i as f64,
                final_state: json!({}),
                scores,
                judges: Vec::new(),
            }
        })
        .collect();
    assert!(summaries.iter().any(|t| t.status == TrialStatus::Failed));
    let gates: Vec<CompiledGate> = [
        "pass_rate >= 0.5",
        "lower(pass_rate) > 0.4",
        "p95(tokens) < 1000",
        "segments.tag.t1.passed >= 1",
    ]
    .iter()
    .map(|e| CompiledGate::compile(&GateSpec::Expr((*e).to_owned())).unwrap())
    .collect();
    let (live, _) = build_results(
        header.clone(),
        "2026-12-01T10:01:00Z".into(),
        summaries.clone(),
        &gates,
        None,
    );
    // What results.json holds, read back without its trials.
    let stored: gauntlet_model::RunResults =
        serde_json::from_str(&serde_json::to_string(&live.without_trials()).unwrap()).unwrap();
    let (from_trials, errors_a) =
        build_results(header, stored.finished_at.clone(), summaries, &gates, None);
    let (from_metrics, errors_b) = regate(stored, &gates, None);
    assert_eq!(errors_a, errors_b);
    // Equal but for the last bit of a float: serde_json (without `float_roundtrip`) may read a
    // stored float back one unit in the last place off.
    close(
        &serde_json::to_value(from_trials.without_trials()).unwrap(),
        &serde_json::to_value(&from_metrics).unwrap(),
        "",
    );
    assert_eq!(from_metrics.gates.len(), 4);
}

fn close(a: &Value, b: &Value, at: &str) {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            let (x, y) = (x.as_f64().unwrap(), y.as_f64().unwrap());
            assert!(
                (x - y).abs() <= 1e-12 * x.abs().max(1.0),
                "{at}: {x} vs {y}"
            );
        }
        (Value::Array(x), Value::Array(y)) => {
            assert_eq!(x.len(), y.len(), "{at}");
            for (i, (x, y)) in x.iter().zip(y).enumerate() {
                close(x, y, &format!("{at}/{i}"));
            }
        }
        (Value::Object(x), Value::Object(y)) => {
            assert_eq!(
                x.keys().collect::<Vec<_>>(),
                y.keys().collect::<Vec<_>>(),
                "{at}"
            );
            for (k, x) in x {
                close(x, &y[k], &format!("{at}/{k}"));
            }
        }
        _ => assert_eq!(a, b, "{at}"),
    }
}
