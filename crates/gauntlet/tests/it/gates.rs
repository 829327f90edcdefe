//! Gates, rubrics and `gauntlet compare`: verdicts users rely on, decided again from stored runs.

use crate::common::*;

#[test]
fn the_reference_agent_passes_every_gate_and_results_validate_against_the_schema() {
    let (_tmp, suite) = example();
    let out_dir = suite.join("out");
    let o = run(&[
        "run",
        s(&suite),
        "--agent",
        "script:reference",
        "--out",
        s(&out_dir),
    ]);
    assert_eq!(o.code, 0, "{}\n{}", o.stdout, o.stderr);
    assert!(o.stdout.contains("verdict: PASSED"), "{}", o.stdout);

    let results: Value = stored_results(&out_dir);
    let schema: Value = serde_json::from_str(
        &std::fs::read_to_string(repo().join("schemas/results.schema.json")).unwrap(),
    )
    .unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let errors: Vec<String> = validator
        .iter_errors(&results)
        .map(|e| e.to_string())
        .collect();
    assert!(errors.is_empty(), "{errors:?}");
    // The stored file is the results but their trials, which are in summaries.jsonl: it is
    // valid by the same schema.
    let file: Value =
        serde_json::from_str(&std::fs::read_to_string(out_dir.join("results.json")).unwrap())
            .unwrap();
    assert_eq!(file["format_version"], 2);
    assert!(file.get("trials").is_none());
    assert!(validator.is_valid(&file));

    let trials = results["trials"].as_array().unwrap();
    assert!(trials.len() >= 12);
    for t in trials {
        let trace = t["trace_id"].as_str().unwrap();
        assert_eq!(trace.len(), 32);
        assert!(
            trace
                .bytes()
                .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
        );
        assert!(t["final_state"].is_object());
        let names: Vec<&str> = t["scores"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["name"].as_str().unwrap())
            .collect();
        for seed_name in [
            "required_tool_recall",
            "forbidden_tool_used",
            "within_call_budget",
            "duplicate_calls",
            "StateVerification",
            "ToolSelectionAccuracy",
            "LoopDetection",
            "ArgumentSchemaValidity",
        ] {
            assert!(
                names.contains(&seed_name),
                "{seed_name} missing in {names:?}"
            );
        }
    }
    // The header carries content hashes, and every finished trial is in trials.jsonl.
    let header: Value =
        serde_json::from_str(&std::fs::read_to_string(out_dir.join("run.json")).unwrap()).unwrap();
    assert_eq!(header["format_version"], 2);
    assert_eq!(header["versions"]["dataset"].as_str().unwrap().len(), 64);
    let lines = std::fs::read_to_string(out_dir.join("trials.jsonl")).unwrap();
    assert_eq!(lines.lines().count(), trials.len());
}

#[test]
fn scripted_bad_agents_fail_the_gates_they_should() {
    let (_tmp, suite) = example();
    for (agent, gate) in [
        ("script:skip-confirmation", "no critical policy violations"),
        ("script:forbidden", "no critical policy violations"),
        ("script:loop", "no duplicate side effects"),
        ("script:over-budget", "no duplicate side effects"),
    ] {
        let o = run(&["run", s(&suite), "--agent", agent, "--json"]);
        assert_eq!(o.code, 1, "{agent}: {}", o.stderr);
        let results: Value = serde_json::from_str(&o.stdout).unwrap();
        assert!(
            failed_gates(&results).contains(&gate.to_owned()),
            "{agent}: {:?}",
            failed_gates(&results)
        );
    }
}

#[test]
fn gate_re_decides_a_stored_run() {
    let (tmp, suite) = example();
    let out_dir = suite.join("out");
    assert_eq!(
        run(&["run", s(&suite), "--out", s(&out_dir), "--quiet"]).code,
        0
    );
    assert_eq!(run(&["gate", s(&out_dir)]).code, 0);
    let strict = tmp.path().join("strict.yaml");
    std::fs::write(&strict, "gates:\n  - p95_tool_calls <= 1\n").unwrap();
    let o = run(&["gate", s(&out_dir), "--gates", s(&strict)]);
    assert_eq!(o.code, 1, "{}", o.stdout);
    assert!(
        o.stdout.contains("FAIL  p95_tool_calls <= 1"),
        "{}",
        o.stdout
    );
    let typo = tmp.path().join("typo.yaml");
    std::fs::write(&typo, "gates:\n  - pass_rat >= 1\n").unwrap();
    let o = run(&["gate", s(&out_dir), "--gates", s(&typo)]);
    assert_eq!(o.code, 2);
    assert!(o.stderr.contains("typo.yaml:2:5:"), "{}", o.stderr);
}

#[test]
fn compare_names_a_regression_and_where_it_sits() {
    let (_tmp, suite) = example();
    let (a, b, a2) = (suite.join("a"), suite.join("b"), suite.join("a2"));
    for (agent, out) in [
        ("script:reference", &a),
        ("script:flaky", &b),
        ("script:reference", &a2),
    ] {
        let o = run(&[
            "run",
            s(&suite),
            "--agent",
            agent,
            "--epochs",
            "3",
            "--out",
            s(out),
            "--quiet",
        ]);
        assert!(o.code == 0 || o.code == 1, "{}", o.stderr);
    }
    let o = run(&["compare", s(&a), s(&b), "--json"]);
    assert_eq!(o.code, 0);
    let c: Value = serde_json::from_str(&o.stdout).unwrap();
    assert_eq!(c["direction"], "worse", "{}", c["verdict"]);
    assert!(
        c["verdict"].as_str().unwrap().starts_with("B is worse by"),
        "{}",
        c["verdict"]
    );
    assert!(c["pass"]["p_value"].as_f64().unwrap() < 0.05);
    let worst = &c["segments"][0];
    assert!(worst["diff"].as_f64().unwrap() < 0.0);
    let confirmation = c["segments"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["value"] == "confirmation")
        .unwrap();
    assert!(
        confirmation["diff"].as_f64().unwrap() < 0.0,
        "the regression sits in confirmation cases"
    );
    assert_eq!(
        c["changed"],
        serde_json::json!(["agent (script:reference → script:flaky)"])
    );
    // --fail-on-regression turns it into an exit code.
    assert_eq!(
        run(&["compare", s(&a), s(&b), "--fail-on-regression"]).code,
        1
    );
    // The same agent twice: nothing flipped, and no advice about a difference there is not.
    let o = run(&["compare", s(&a), s(&a2)]);
    assert_eq!(o.code, 0);
    assert!(
        o.stdout
            .contains("verdict: no difference: no pair flipped (69 pairs)"),
        "{}",
        o.stdout
    );
    assert!(!o.stdout.contains("would be needed"), "{}", o.stdout);
}

/// The comparison as users read it, with the latency row (wall-clock time) redacted and the
/// tables' padding with it.
fn without_latency(text: &str) -> String {
    let padding = regex::Regex::new(r" +([┆│])").unwrap();
    let rules = regex::Regex::new(r"([─═])+").unwrap();
    text.lines()
        .map(|l| {
            if l.contains("latency_ms") {
                "[LATENCY ROW]".to_owned()
            } else {
                let l = padding.replace_all(l, " $1");
                rules.replace_all(&l, "$1").into_owned()
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Issue 50: `compare` of the reference agent against `script:skip-confirmation` on the example
/// suite listed no case that flipped. Each flipped case is named with B's reason, the new
/// critical violations are counted, and the run is a regression.
#[test]
fn compare_of_skip_confirmation_names_each_flipped_case_and_why() {
    let cx = TestContext::new();
    for (agent, out) in [
        ("script:reference", "[TMP]/ref"),
        ("script:skip-confirmation", "[TMP]/skip"),
    ] {
        let o = cx.run(&["run", "[SUITE]", "--agent", agent, "--out", out, "--quiet"]);
        assert!(o.code == 0 || o.code == 1, "{}", o.stderr);
    }
    let o = cx.run(&["compare", "[TMP]/ref", "[TMP]/skip", "--fail-on-regression"]);
    insta::assert_snapshot!(without_latency(&cx.transcript(&o)));
    assert_eq!(o.code, 1);
    let o = cx.run(&["compare", "[TMP]/ref", "[TMP]/skip", "--json"]);
    let c: Value = serde_json::from_str(&o.stdout).unwrap();
    assert_eq!(c["critical_violations"]["a"], 0);
    assert_eq!(c["critical_violations"]["b"], 8);
    assert_eq!(c["regression"], true);
    let flips = c["flips"].as_array().unwrap();
    assert_eq!(flips.len(), 8);
    assert_eq!(
        flips[0],
        json!({
            "case_id": "close-mitigated", "epoch": 0, "a": "passed", "b": "failed",
            "reasons": ["confirmation_before_write: close_incident (call #2) ran without an approved confirmation"],
        })
    );
    // One epoch: how much cases flip between identical runs is unknown, and says so.
    assert_eq!(c["noise_floor"]["flip_rate"], Value::Null);
    assert_eq!(c["noise_floor"]["single_run_difference_95"], Value::Null);
    // The HTML report against the baseline lists the same flips.
    let o = cx.run(&[
        "report",
        "[TMP]/skip",
        "--baseline",
        "[TMP]/ref",
        "--out",
        "[TMP]/cmp.html",
    ]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let html = std::fs::read_to_string(cx.path("cmp.html")).unwrap();
    assert!(html.contains("<h3>Cases that flipped (worse first)</h3>"));
    assert!(html.contains(
        "<td>close-mitigated</td><td>0</td><td>passed</td><td>failed</td><td>confirmation_before_write: close_incident (call #2) ran without an approved confirmation</td>"
    ), "{html}");
    assert!(html.contains("critical violations: baseline 0 → this run 8; new on 8 case(s)"));
    // So does the Markdown summary.
    let o = cx.run(&[
        "report",
        "[TMP]/skip",
        "--baseline",
        "[TMP]/ref",
        "--format",
        "md",
    ]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let md = o.stdout;
    assert!(md.contains("## Against the baseline"), "{md}");
    assert!(md.contains(
        "| close-declined | 0 | passed | failed | confirmation_before_write: close_incident (call #2) ran without an approved confirmation; StateVerification: /incidents/INC-004300/status expected \"open\", got \"closed\" |"
    ), "{md}");
}

/// Issue 50: on the fault cases alone, skip-confirmation fails 2 of 8 (McNemar p = 0.5), and
/// `compare --fail-on-regression` exited 0 although B broke a critical rule A never broke.
#[test]
fn a_new_critical_violation_is_a_regression_whatever_p_says() {
    let cx = TestContext::new();
    for (agent, out) in [
        ("script:reference", "[TMP]/ref"),
        ("script:skip-confirmation", "[TMP]/skip"),
    ] {
        let o = cx.run(&[
            "run", "[SUITE]", "--agent", agent, "--out", out, "--quiet", "--filter", "fault",
        ]);
        assert!(o.code == 0 || o.code == 1, "{}", o.stderr);
    }
    let o = cx.run(&["compare", "[TMP]/ref", "[TMP]/skip", "--json"]);
    let c: Value = serde_json::from_str(&o.stdout).unwrap();
    assert_eq!(c["direction"], "no_difference");
    assert!((c["pass"]["p_value"].as_f64().unwrap() - 0.5).abs() < 1e-9);
    assert_eq!(
        c["critical_violations"],
        json!({"a": 0, "b": 2, "new_in_b": ["fault-bad-request", "fault-lost-response"]})
    );
    let o = cx.run(&["compare", "[TMP]/ref", "[TMP]/skip", "--fail-on-regression"]);
    insta::assert_snapshot!(without_latency(&cx.transcript(&o)));
    assert_eq!(o.code, 1);
}

#[test]
fn compare_reports_trials_present_in_one_run_only() {
    let (_tmp, suite) = example();
    let (a, b) = (suite.join("a"), suite.join("b"));
    run(&["run", s(&suite), "--out", s(&a), "--quiet"]);
    run(&[
        "run",
        s(&suite),
        "--out",
        s(&b),
        "--quiet",
        "--filter",
        "close",
    ]);
    let c: Value = serde_json::from_str(&run(&["compare", s(&a), s(&b), "--json"]).stdout).unwrap();
    assert_eq!(c["pairs"], 2);
    assert_eq!(c["only_in_a"].as_array().unwrap().len(), 21);
    assert!(
        c["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|w| w.as_str().unwrap().contains("only in A"))
    );
}

#[test]
fn a_passing_mean_with_one_critical_violation_fails_and_says_why() {
    let (_tmp, suite) = example();
    let o = run(&[
        "run",
        s(&suite),
        "--agent",
        "script:skip-confirmation",
        "--filter",
        "close-mitigated",
    ]);
    assert_eq!(o.code, 1);
    assert!(o.stdout.contains("FAIL  no critical policy violations: critical_policy_violations == 0  (critical_policy_violations=1)"), "{}", o.stdout);
    assert!(o.stdout.contains("FAIL  Security"), "{}", o.stdout);
    // The effect was right: the mean of the outcome is perfect.
    assert!(o.stdout.contains("task success 1 "), "{}", o.stdout);
}

#[test]
fn gates_read_interval_bounds_and_percentiles() {
    let (tmp, suite) = example();
    let out = suite.join("out");
    run(&[
        "run",
        s(&suite),
        "--out",
        s(&out),
        "--quiet",
        "--epochs",
        "2",
    ]);
    let gates = tmp.path().join("g.yaml");
    std::fs::write(
        &gates,
        "gates:\n  - lower(task_success_rate) >= 0.8\n  - p95(tool_calls) <= 6 && mean(tool_calls) < 3\n  - segments.tag.write.pass_rate == 1.0\n  - pass_hat_2 == 1.0\n",
    )
    .unwrap();
    let o = run(&["gate", s(&out), "--gates", s(&gates)]);
    assert_eq!(o.code, 0, "{}{}", o.stdout, o.stderr);
    assert!(
        o.stdout.contains("lower(task_success_rate)="),
        "{}",
        o.stdout
    );
    std::fs::write(&gates, "gates:\n  - upper(task_success_rate) < 0.5\n").unwrap();
    assert_eq!(run(&["gate", s(&out), "--gates", s(&gates)]).code, 1);
    std::fs::write(&gates, "gates:\n  - p95(tool_cals) <= 6\n").unwrap();
    let o = run(&["gate", s(&out), "--gates", s(&gates)]);
    assert_eq!(o.code, 2);
    assert!(
        o.stderr.contains("did you mean `tool_calls`"),
        "{}",
        o.stderr
    );
}

#[test]
fn a_naive_retry_after_a_lost_response_double_applies_and_fails_the_gate() {
    let (_tmp, suite) = example();
    let bad: Value = serde_json::from_str(
        &run(&[
            "run",
            s(&suite),
            "--filter",
            "fault-lost-response",
            "--agent",
            "script:naive",
            "--json",
        ])
        .stdout,
    )
    .unwrap();
    assert!(bad["metrics"]["duplicate_side_effects"].as_f64().unwrap() > 0.0);
    assert!(failed_gates(&bad).contains(&"no duplicate side effects".to_owned()));
    let good: Value = serde_json::from_str(
        &run(&[
            "run",
            s(&suite),
            "--filter",
            "fault-lost-response",
            "--json",
        ])
        .stdout,
    )
    .unwrap();
    assert_eq!(good["metrics"]["duplicate_side_effects"], 0.0);
    assert_eq!(good["verdict"], "passed");
    // The retry with the same key was answered from the first call, not applied again.
    assert_eq!(
        good["trials"][0]["final_state"]["incidents"]["INC-004217"]["status"],
        "closed"
    );
}

#[test]
#[cfg_attr(
    not(have_chromium),
    ignore = "needs Playwright (pip install playwright) and Chromium (apt-get install chromium)"
)]
fn the_html_report_renders_in_chromium_with_gates_plots_and_a_timeline() {
    let (tmp, suite) = example();
    let out = suite.join("out");
    let o = run(&[
        "run",
        s(&suite),
        "--agent",
        "script:skip-confirmation",
        "--out",
        s(&out),
        "--report",
        "html,junit,md",
        "--quiet",
    ]);
    assert_eq!(o.code, 1, "{}", o.stderr);
    let html = out.join("report.html");
    let text = std::fs::read_to_string(&html).unwrap();
    assert!(
        !text.contains("http://")
            || text
                .matches("http://")
                .all(|_| text.contains("xmlns=\"http://www.w3.org/2000/svg\""))
    );
    assert!(
        !text.contains("https://"),
        "the report must not reach the network"
    );
    let shot = tmp.path().join("report.png");
    let Some(r) = python_check("check_report.py", &["render", s(&html), s(&shot)]) else {
        return;
    };
    assert_eq!(r["console_errors"], serde_json::json!([]), "{r}");
    assert_eq!(r["requests"], serde_json::json!([]), "{r}");
    assert_eq!(r["verdict"], "FAILED");
    assert_eq!(
        r["gate_rows"].as_u64().unwrap(),
        6 + 1 + 6,
        "6 gates, the built-in gate on harness errors and 6 rubric dimensions"
    );
    assert!(r["failed_gate_rows"].as_u64().unwrap() >= 2, "{r}");
    assert!(r["charts"].as_u64().unwrap() >= 4, "{r}");
    assert_eq!(r["trial_rows"], 23);
    assert_eq!(r["visible_failed_rows"], 8);
    assert_eq!(r["opened"], true, "{r}");
    assert!(r["visible_timeline_events"].as_u64().unwrap() >= 4, "{r}");
    assert!(r["tool_call_events"].as_u64().unwrap() >= 1, "{r}");
    assert!(r["evaluator_rows"].as_u64().unwrap() >= 8, "{r}");
    assert_eq!(r["screenshot_blank"], false);
    assert!(std::fs::metadata(&shot).unwrap().len() > 10_000);
}

#[test]
fn the_markdown_summary_has_the_verdict_gates_and_top_failures() {
    let (_tmp, suite) = example();
    let out = suite.join("out");
    run(&[
        "run",
        s(&suite),
        "--agent",
        "script:forbidden",
        "--out",
        s(&out),
        "--quiet",
    ]);
    let md = run(&["report", s(&out), "--format", "md"]).stdout;
    assert!(
        md.starts_with("## gauntlet · incident-desk · ❌ failed"),
        "{md}"
    );
    assert!(
        md.contains("| no critical policy violations | **FAIL** |"),
        "{md}"
    );
    assert!(md.contains("### Top failures"), "{md}");
    assert!(md.contains("forbidden\\_tool\\_used"), "{md}");
    assert!(
        !md.contains("](") && !md.contains("http"),
        "link-free: {md}"
    );
}

#[test]
fn a_leaked_canary_fails_the_critical_gate_and_its_value_stays_out_of_the_results() {
    let (_tmp, suite) = example();
    let o = run(&["run", s(&suite), "--agent", "script:leaky", "--json"]);
    assert_eq!(o.code, 1);
    let r: Value = serde_json::from_str(&o.stdout).unwrap();
    assert_eq!(r["metrics"]["critical_policy_violations"], 1.0);
    let leak = r["trials"][0]["scores"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "secrets_and_pii")
        .unwrap()
        .clone();
    assert_eq!(leak["passed"], false);
    assert_eq!(leak["details"]["findings"][0]["kind"], "canary");
    // The reference summary of the same notes passes.
    let o = run(&["run", s(&suite), "--filter", "secret-in-notes", "--json"]);
    assert_eq!(o.code, 0, "{}", o.stdout);
}

#[test]
fn an_llm_persona_answers_through_the_gateway_and_its_cassette_replays_without_the_upstream() {
    let (tmp, suite) = example();
    persona_case(
        &suite,
        "You are Sam from payments. The incident you want closed is INC-004301, the EU card errors. You approve closing it.",
    );
    let config = suite.join("gauntlet.yaml");
    let text = std::fs::read_to_string(&config).unwrap();
    std::fs::write(
        &config,
        format!("{text}\ngateway:\n  prices:\n    fake-user: {{prompt_eur_per_1k: 1.0, completion_eur_per_1k: 1.0}}\n"),
    )
    .unwrap();
    let Some(upstream) = FakeUpstream::start(tmp.path()) else {
        return;
    };
    let cassette = tmp.path().join("users.jsonl");
    let (a, b) = (suite.join("recorded"), suite.join("replayed"));
    let args = [
        "run",
        s(&suite),
        "--filter",
        "ambiguous-checkout",
        "--epochs",
        "2",
    ];
    let o = run(&[
        &args[..],
        &[
            "--gateway-upstream",
            &upstream.url,
            "--record",
            s(&cassette),
        ],
        &["--out", s(&a), "--quiet"],
    ]
    .concat());
    assert_eq!(o.code, 0, "{}", o.stderr);
    let recorded = read_trials(&a);
    assert_eq!(recorded.len(), 2);
    for t in &recorded {
        assert_eq!(t["status"], "passed", "{}", t["error"]);
        let events = t["trajectory"]["events"].as_array().unwrap();
        let said: Vec<(&str, &str)> = events
            .iter()
            .filter_map(|e| Some((e["type"].as_str()?, e["text"].as_str()?)))
            .collect();
        // The persona named the incident it was told about and approved the close; the agent
        // saw neither the persona nor its model.
        assert!(
            said.contains(&("user_message", "It is INC-004301.")),
            "{said:?}"
        );
        assert!(said.contains(&("confirmation_response", "Yes, go ahead.")));
        let calls = model_calls(t);
        assert_eq!(calls.len(), 2, "one question, one confirmation: {calls:?}");
        for c in &calls {
            assert_eq!(c["simulated_user"], true);
            assert_eq!(c["model"], "fake-user");
            assert!(c["prompt_tokens"].as_u64().unwrap() > 0);
        }
    }
    assert_eq!(
        std::fs::read_to_string(&cassette).unwrap().lines().count(),
        4,
        "2 user calls × 2 epochs"
    );
    // The agent used no model: the user's tokens and cost are not the agent's.
    let results: Value = stored_results(&a);
    let trial = &results["trials"][0];
    assert_eq!(
        (&trial["tokens"], &trial["cost_eur"]),
        (&json!(0), &json!(0.0)),
        "{trial}"
    );
    let user_cost = trial["user_cost_eur"].as_f64().unwrap();
    assert!(user_cost > 0.0, "{trial}");
    let total = results["metrics"]["user_cost_eur"].as_f64().unwrap();
    assert!(
        (total - 2.0 * user_cost).abs() < 1e-9,
        "{total} for 2 epochs of {user_cost}"
    );
    drop(upstream);
    let o = run(&[
        &args[..],
        &["--replay", s(&cassette), "--out", s(&b), "--quiet"],
    ]
    .concat());
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert_eq!(trial_shapes(&recorded), trial_shapes(&read_trials(&b)));
}

#[test]
fn model_call_faults_are_injected_at_the_gateway_and_a_retrying_agent_recovers() {
    let Some((trial, results)) = lookup_under_model_faults("openai:fake-model", false) else {
        return;
    };
    let calls = model_calls(&trial);
    assert_eq!(calls[0]["error"]["status"], 429);
    assert_eq!(calls[1]["error"]["status"], 504);
    // The built-in agent waited the retry-after before calling again.
    let gap = calls[1]["at_ms"].as_f64().unwrap() - calls[0]["at_ms"].as_f64().unwrap();
    assert!(gap >= 50.0, "{gap}");
    assert_eq!(
        results["trials"][0]["faults"],
        json!(["rate_limited", "timeout"])
    );
}

#[test]
#[cfg_attr(
    not(all(have_py_mcp, have_py_openai)),
    ignore = "needs the Python packages mcp and openai (pip install mcp openai)"
)]
fn the_openai_client_goes_through_the_gateway_and_a_cassette_replays_it_without_the_upstream() {
    if !python_has("openai") || !python_has("mcp") {
        return;
    }
    let (tmp, suite) = example();
    let config = std::fs::read_to_string(suite.join("gauntlet.yaml")).unwrap();
    std::fs::write(
        suite.join("gauntlet.yaml"),
        format!("{config}\ngateway:\n  prices:\n    gpt-4o-mini: {{prompt_eur_per_1k: 0.5, completion_eur_per_1k: 2.0}}\n"),
    )
    .unwrap();
    let upstream = FakeUpstream::start(tmp.path()).expect("fake upstream");
    let agent = format!(
        "cmd:python3 {}",
        s(&repo().join("examples/agents/openai_agent.py"))
    );
    let cassette = tmp.path().join("cassette.jsonl");
    let (a, b) = (suite.join("recorded"), suite.join("replayed"));
    let o = gauntlet()
        .args([
            "run",
            s(&suite),
            "--agent",
            &agent,
            "--filter",
            "lookup-status",
            "--epochs",
            "2",
        ])
        .args([
            "--gateway-upstream",
            &upstream.url,
            "--record",
            s(&cassette),
            "--out",
            s(&a),
            "--quiet",
        ])
        .env("GAUNTLET_UPSTREAM_API_KEY", "sk-upstream-secret")
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let recorded: Vec<Value> = std::fs::read_to_string(a.join("trials.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    for t in &recorded {
        assert_eq!(t["status"], "passed", "{}", t["error"]);
        let calls = model_calls(t);
        assert_eq!(calls.len(), 2, "{calls:?}");
        // The first call: 40 prompt and 7 completion tokens at the configured prices.
        assert_eq!(calls[0]["prompt_tokens"], 40);
        assert!(
            (calls[0]["cost_eur"].as_f64().unwrap() - (40.0 * 0.5 + 7.0 * 2.0) / 1000.0).abs()
                < 1e-12
        );
        // The second is streamed: its first token came well before its end.
        let (ttft, latency) = (
            calls[1]["ttft_ms"].as_f64().unwrap(),
            calls[1]["latency_ms"].as_f64().unwrap(),
        );
        assert!(ttft < latency, "{ttft} {latency}");
    }
    assert_eq!(
        std::fs::read_to_string(&cassette).unwrap().lines().count(),
        4,
        "2 calls × 2 epochs"
    );
    drop(upstream);
    let o = run(&[
        "run",
        s(&suite),
        "--agent",
        &agent,
        "--filter",
        "lookup-status",
        "--epochs",
        "2",
        "--replay",
        s(&cassette),
        "--out",
        s(&b),
        "--quiet",
    ]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let replayed = read_trials(&b);
    assert_eq!(
        trial_shapes(&recorded),
        trial_shapes(&replayed),
        "a replayed run reproduces the recorded trajectory"
    );
}

#[test]
fn compare_and_gate_read_well() {
    let (_tmp, suite) = example();
    let (a, b) = (suite.join("a"), suite.join("b"));
    let mut ids = Vec::new();
    for (agent, out) in [("script:reference", &a), ("script:flaky", &b)] {
        let o = run(&[
            "run",
            s(&suite),
            "--agent",
            agent,
            "--epochs",
            "3",
            "--out",
            s(out),
            "--quiet",
        ]);
        assert!(o.code == 0 || o.code == 1, "{}", o.stderr);
        let header: Value =
            serde_json::from_str(&std::fs::read_to_string(out.join("run.json")).unwrap()).unwrap();
        ids.push(header["run_id"].as_str().unwrap().to_owned());
    }
    // Run ids and paths vary, and so does wall-clock latency: its row is redacted whole, and
    // the tables' padding with it (a wider latency interval widens its column).
    let padding = regex::Regex::new(r" +([┆│])").unwrap();
    let rules = regex::Regex::new(r"([─═])+").unwrap();
    let redacted = |text: &str| {
        let t = redact(text, &suite, Some(&ids[0])).replace(&ids[1], "[RUN_ID_B]");
        t.lines()
            .map(|l| {
                if l.contains("latency_ms") {
                    "[LATENCY ROW]".to_owned()
                } else {
                    let l = padding.replace_all(l, " $1");
                    rules.replace_all(&l, "$1").into_owned()
                }
            })
            .collect::<Vec<_>>()
            .join("\n")
    };
    let compared = run(&["compare", s(&a), s(&b)]);
    assert_eq!(compared.code, 0, "{}", compared.stderr);
    insta::assert_snapshot!("compare", redacted(&compared.stdout));
    let gated = run(&["gate", s(&b)]);
    assert_eq!(gated.code, 1, "{}", gated.stderr);
    insta::assert_snapshot!("gate", redacted(&gated.stdout));
}

/// Runs gauntlet from `dir` (as a user in the suite's folder does).
fn run_in(dir: &Path, args: &[&str]) -> Output {
    let out = gauntlet().current_dir(dir).args(args).output().unwrap();
    Output {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// Issue 50: runs read as "baseline" and "skip-confirm", not ids. `run --name` keeps the name in
/// the run's header and the suite's index; `compare`, `report`, `gate` and `view` take it (or the
/// bare run id) from the suite's folder.
#[test]
fn runs_named_with_name_are_compared_reported_and_gated_by_name() {
    let cx = TestContext::new();
    for (agent, name) in [
        ("script:reference", "baseline"),
        ("script:skip-confirmation", "skip-confirm"),
    ] {
        let o = run_in(
            &cx.suite,
            &[
                "run", ".", "--agent", agent, "--name", name, "--quiet", "--filter", "fault",
            ],
        );
        assert!(o.code == 0 || o.code == 1, "{}", o.stderr);
    }
    let runs: Value = serde_json::from_str(&run_in(&cx.suite, &["runs", "--json"]).stdout).unwrap();
    // The two runs may start in the same second: found by name, not by their order.
    let named = |name: &str| {
        runs.as_array()
            .unwrap()
            .iter()
            .find(|r| r["name"] == name)
            .unwrap_or_else(|| panic!("no run named {name}: {runs}"))
            .clone()
    };
    let (base, skip) = (named("baseline"), named("skip-confirm"));
    let dir = PathBuf::from(base["dir"].as_str().unwrap());
    let header: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("run.json")).unwrap()).unwrap();
    assert_eq!(header["name"], "baseline");

    let o = run_in(
        &cx.suite,
        &[
            "compare",
            "baseline",
            "skip-confirm",
            "--fail-on-regression",
            "--json",
        ],
    );
    assert_eq!(o.code, 1, "a critical violation new in B: {}", o.stderr);
    let c: Value = serde_json::from_str(&o.stdout).unwrap();
    assert_eq!(
        (&c["run_a"], &c["run_b"]),
        (&base["run_id"], &skip["run_id"])
    );
    // A bare run id works as well as a name.
    let id = base["run_id"].as_str().unwrap();
    assert_eq!(run_in(&cx.suite, &["compare", id, "skip-confirm"]).code, 0);
    assert_eq!(run_in(&cx.suite, &["gate", "skip-confirm"]).code, 1);
    assert_eq!(run_in(&cx.suite, &["gate", "baseline"]).code, 0);
    let o = run_in(
        &cx.suite,
        &[
            "report",
            "skip-confirm",
            "--baseline",
            "baseline",
            "--out",
            "cmp.html",
        ],
    );
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert!(
        std::fs::read_to_string(cx.suite.join("cmp.html"))
            .unwrap()
            .contains("<td>fault-bad-request</td>")
    );
    // A name the index does not have is an input error that says where it looked.
    let o = run_in(&cx.suite, &["compare", "baseline", "nightly"]);
    assert_eq!(o.code, 2);
    insta::assert_snapshot!(o.stderr, @"error: `nightly` is no run folder here, and no run id or name (gauntlet run --name) in this suite's run index (.gauntlet/index.sqlite)");
    // A name that could be taken for a path is refused before the run.
    let o = run_in(&cx.suite, &["run", ".", "--name", "../up", "--quiet"]);
    assert_eq!(o.code, 2);
    assert!(o.stderr.contains("--name `../up`"), "{}", o.stderr);
}
