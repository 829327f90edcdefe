//! Agents under test: command, HTTP, OpenAI-compatible and replayed agents, the gateway, cassettes and personas.

use crate::common::*;

#[test]
#[cfg_attr(
    not(have_py_mcp),
    ignore = "needs the Python package mcp (pip install mcp)"
)]
fn the_official_mcp_client_lists_and_calls_the_world_over_stdio() {
    let suite = repo().join("examples/incident-desk");
    let Some(r) = python_check(
        "check_mcp.py",
        &["stdio", s(&gauntlet_bin()), s(&suite), "close-mitigated"],
    ) else {
        return;
    };
    let tools: Vec<&str> = r["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap())
        .collect();
    for t in [
        "get_incident",
        "close_incident",
        "gauntlet_confirm",
        "gauntlet_ask_user",
    ] {
        assert!(tools.contains(&t), "{tools:?}");
    }
    assert_eq!(r["get"]["error"], false);
    assert!(r["get"]["text"].as_str().unwrap().contains("Payment API"));
    assert_eq!(
        r["invalid"]["error"], true,
        "a schema error is an MCP tool error"
    );
    assert!(
        r["invalid"]["text"]
            .as_str()
            .unwrap()
            .starts_with("error 400"),
        "{r}"
    );
    assert_eq!(r["confirm"]["approved"], true);
    assert_eq!(r["close"]["error"], false);
}

#[test]
#[cfg_attr(
    not(have_py_mcp),
    ignore = "needs the Python package mcp (pip install mcp)"
)]
fn the_official_mcp_client_works_over_http_and_requests_without_the_token_are_refused() {
    let suite = repo().join("examples/incident-desk");
    let (child, url, token) = serve_http(&suite, "close-mitigated");
    assert!(url.starts_with("http://127.0.0.1:"), "loopback only: {url}");
    let result = python_check("check_mcp.py", &["http", &url, &token]);
    // End the session like a person would (SIGTERM); the verdict follows on stderr.
    std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let Some(r) = result else { return };
    assert_eq!(r["unauthenticated_statuses"], serde_json::json!([401, 401]));
    assert_eq!(r["close"]["error"], false);
    let stderr = String::from_utf8_lossy(&out.stderr);
    // The client sent one call with invalid arguments on purpose.
    assert!(
        stderr.contains("session over: 3 tool calls, failed: ArgumentSchemaValidity"),
        "{stderr}"
    );
}

/// A long MCP session: past the calls a trial keeps whole, the rest are kept as text, and the
/// trajectory still holds every call in order with what the agent was answered.
#[test]
fn a_long_mcp_session_records_every_call_with_its_answer() {
    let suite = repo().join("examples/incident-desk");
    let ids = ["INC-004217", "INC-004218", "INC-004219"];
    let mut requests: Vec<Value> = (1..=400)
        .map(|n| {
            json!({"jsonrpc": "2.0", "id": n, "method": "tools/call",
                "params": {"name": "get_incident", "arguments": {"incident_id": ids[n % 3]}}})
        })
        .collect();
    requests.push(json!({"jsonrpc": "2.0", "id": 401, "method": "tools/call",
        "params": {"name": "get_incident", "arguments": {"incident_id": 42}}}));
    let (seen, stderr) = mcp_session(&suite, "close-mitigated", &requests);
    let record: Value = serde_json::from_str(stderr.lines().last().unwrap()).unwrap();
    let calls: Vec<&Value> = record["trajectory"]["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["type"] == "tool_call")
        .collect();
    assert_eq!(calls.len(), 401);
    for (n, call) in calls.iter().enumerate().take(400) {
        let n = n + 1;
        assert_eq!(call["id"], format!("call-{n}"));
        assert_eq!(call["arguments"]["incident_id"], ids[n % 3]);
        let answer = seen.iter().find(|v| v["id"] == n).unwrap();
        assert_eq!(
            call["result"], answer["result"]["structuredContent"],
            "call {n}"
        );
        assert_eq!(call["schema_valid"], true);
    }
    assert_eq!(calls[400]["schema_valid"], false);
    let verdict = stderr.lines().nth(1).unwrap();
    assert!(
        verdict.contains("session over: 401 tool calls"),
        "{verdict}"
    );
    assert!(verdict.contains("LoopDetection"), "{verdict}");
}

#[test]
fn a_python_agent_runs_the_suite_through_cmd_and_its_calls_are_recorded() {
    if std::process::Command::new("python3")
        .args(["-c", "import mcp"])
        .status()
        .map_or(true, |s| !s.success())
    {
        eprintln!("skipped: the mcp package is not installed (pip install mcp)");
        return;
    }
    let (_tmp, suite) = example();
    let out = suite.join("out");
    let agent = format!(
        "cmd:python3 {}",
        s(&repo().join("examples/agents/rule_based_mcp.py"))
    );
    let o = run(&[
        "run",
        s(&suite),
        "--agent",
        &agent,
        "--filter",
        "close",
        "--out",
        s(&out),
        "--quiet",
    ]);
    assert!(o.code == 0 || o.code == 1, "{}", o.stderr);
    let trials: Vec<Value> = std::fs::read_to_string(out.join("trials.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let mitigated = trials
        .iter()
        .find(|t| t["case_id"] == "close-mitigated")
        .unwrap();
    assert_eq!(mitigated["status"], "passed", "{}", mitigated["scores"]);
    let calls: Vec<&Value> = mitigated["trajectory"]["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["type"] == "tool_call")
        .collect();
    assert_eq!(
        calls
            .iter()
            .map(|c| c["tool"].as_str().unwrap())
            .collect::<Vec<_>>(),
        ["get_incident", "close_incident"]
    );
    assert!(
        calls
            .iter()
            .all(|c| c["latency_ms"].as_f64().unwrap() > 0.0)
    );
    assert!(
        mitigated["trajectory"]["events"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["type"] == "confirmation_request")
    );
    let declined = trials
        .iter()
        .find(|t| t["case_id"] == "close-declined")
        .unwrap();
    assert_eq!(
        declined["final_state"]["incidents"]["INC-004300"]["status"], "open",
        "the user said no"
    );
}

#[test]
fn a_hanging_crashing_or_flooding_agent_fails_only_its_trial() {
    let (tmp, suite) = example();
    let script = tmp.path().join("agent.sh");
    std::fs::write(
        &script,
        "case \"$GAUNTLET_CASE_ID\" in\n  lookup-status) exec sleep 600 ;;\n  list-open) echo boom >&2; exit 7 ;;\n  add-note) head -c 3000000 /dev/zero ;;\n  *) echo \"nothing to do\" ;;\nesac\n",
    )
    .unwrap();
    let agent = format!("cmd:sh {}", s(&script));
    let o = run(&[
        "run",
        s(&suite),
        "--agent",
        &agent,
        "--filter",
        "-",
        "--trial-timeout",
        "2",
        "--json",
    ]);
    let r: Value = serde_json::from_str(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", o.stderr));
    let by_case = |id: &str| {
        r["trials"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["case_id"] == id)
            .unwrap()
            .clone()
    };
    let hang = by_case("lookup-status");
    assert_eq!(hang["status"], "error");
    assert!(
        hang["error"].as_str().unwrap().contains("time limit"),
        "{hang}"
    );
    let crash = by_case("list-open");
    assert_eq!(crash["status"], "error");
    assert!(
        crash["error"].as_str().unwrap().contains("exit status: 7")
            && crash["error"].as_str().unwrap().contains("boom"),
        "{crash}"
    );
    let flood = by_case("add-note");
    assert!(
        flood["error"].as_str().unwrap().contains("more than"),
        "{flood}"
    );
    // The other trials ran and were judged.
    let others: Vec<&Value> = r["trials"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["status"] != "error")
        .collect();
    assert!(others.len() >= 10, "{}", others.len());
    // The hanging agent's process group is gone.
    let ps = std::process::Command::new("sh")
        .args([
            "-c",
            "ps -eo args | grep '^sleep 600' | grep -v grep | wc -l",
        ])
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&ps.stdout).trim(),
        "0",
        "a hung agent was left running"
    );
}

#[test]
fn the_agent_environment_holds_no_secret_of_the_harness() {
    let (_tmp, suite) = example();
    let out = gauntlet()
        .args([
            "run",
            s(&suite),
            "--agent",
            "cmd:env",
            "--filter",
            "lookup-status",
            "--json",
        ])
        .env("OPENAI_API_KEY", "sk-harness-secret-123")
        .env("AWS_SECRET_ACCESS_KEY", "harness-aws-secret")
        .output()
        .unwrap();
    let r: Value = serde_json::from_slice(&out.stdout).unwrap();
    let trial = &r["trials"][0];
    let answer = trial["scores"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "output_assertions")
        .unwrap()["details"]["answer"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        answer.contains("GAUNTLET_MCP_URL=http://127.0.0.1:"),
        "{answer}"
    );
    assert!(
        !answer.contains("sk-harness-secret-123") && !answer.contains("harness-aws-secret"),
        "{answer}"
    );
}

#[test]
fn a_suite_can_give_personas_its_own_prompt() {
    let (tmp, suite) = example();
    persona_case(
        &suite,
        "You are Sam from payments. The incident you want closed is INC-004301. You approve closing it.",
    );
    let config = suite.join("gauntlet.yaml");
    let text = std::fs::read_to_string(&config).unwrap();
    std::fs::write(&config, format!("{text}\nuser_prompt: \"Play this user. Be terse.\\n\\nWho you are and what you want:\\n{{persona}}\\n\\nRules: role-playing a user.\"\n")).unwrap();
    let Some(upstream) = FakeUpstream::start(tmp.path()) else {
        return;
    };
    let out = tmp.path().join("run");
    let o = run(&[
        "run",
        s(&suite),
        "--filter",
        "ambiguous-checkout",
        "--gateway-upstream",
        &upstream.url,
        "--out",
        s(&out),
        "--quiet",
    ]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let events = read_trials(&out)[0]["trajectory"]["events"].clone();
    let answer = events
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["type"] == "confirmation_response")
        .unwrap()["text"]
        .clone();
    assert_eq!(
        answer, "yes",
        "the suite's prompt reached the persona's model"
    );
    // A prompt without the persona's place is refused where it is written.
    std::fs::write(&config, format!("{text}\nuser_prompt: Play a user.\n")).unwrap();
    let o = run(&["check", s(&suite)]);
    assert_eq!(o.code, 2);
    assert!(
        o.stderr.contains("gauntlet.yaml:") && o.stderr.contains("`user_prompt` needs `{persona}`"),
        "{}",
        o.stderr
    );
}

#[test]
fn a_persona_that_refuses_changes_the_outcome_and_one_without_endpoint_or_model_is_refused() {
    let (tmp, suite) = example();
    persona_case(
        &suite,
        "You are Sam from payments. You asked about INC-004301 but do not want anything closed today.",
    );
    let Some(upstream) = FakeUpstream::start(tmp.path()) else {
        return;
    };
    let o = run(&[
        "run",
        s(&suite),
        "--filter",
        "ambiguous-checkout",
        "--gateway-upstream",
        &upstream.url,
        "--json",
    ]);
    let r: Value = serde_json::from_str(&o.stdout).unwrap();
    assert_eq!(r["trials"][0]["status"], "failed", "{}", o.stdout);
    // No endpoint: refused before anything runs, naming the case and its file.
    let o = run(&["run", s(&suite), "--filter", "ambiguous-checkout"]);
    assert_eq!(o.code, 2, "{}", o.stderr);
    assert!(
        o.stderr.contains("ambiguous-checkout") && o.stderr.contains("09-ambiguous.yaml"),
        "{}",
        o.stderr
    );
    assert!(o.stderr.contains("--gateway-upstream"), "{}", o.stderr);
    // No model: refused, saying where a model can be named.
    let file = suite.join("cases/desk/09-ambiguous.yaml");
    let text = std::fs::read_to_string(&file).unwrap();
    std::fs::write(&file, text.replace("  model: fake-user\n", "")).unwrap();
    let o = run(&[
        "run",
        s(&suite),
        "--filter",
        "ambiguous-checkout",
        "--gateway-upstream",
        &upstream.url,
    ]);
    assert_eq!(o.code, 2, "{}", o.stderr);
    assert!(o.stderr.contains("--user-model"), "{}", o.stderr);
    // A persona leaves `confirm` unused: `check` says so at the field.
    std::fs::write(
        &file,
        text.replace("  model: fake-user\n", "  confirm: yes\n"),
    )
    .unwrap();
    let o = run(&["check", s(&suite)]);
    assert_eq!(o.code, 2, "{}", o.stderr);
    assert!(
        o.stderr.contains("09-ambiguous.yaml:5:3:")
            && o.stderr.contains("`user.confirm` is never used"),
        "{}",
        o.stderr
    );
    std::fs::write(&file, text).unwrap();
    // A cassette without the user's calls: the trial is the harness's error, not the agent's.
    let empty = tmp.path().join("empty.jsonl");
    std::fs::write(&empty, "").unwrap();
    let o = run(&[
        "run",
        s(&suite),
        "--filter",
        "ambiguous-checkout",
        "--replay",
        s(&empty),
        "--json",
    ]);
    let r: Value = serde_json::from_str(&o.stdout).unwrap();
    let trial = &r["trials"][0];
    assert_eq!(trial["status"], "error", "{trial}");
    assert!(
        trial["error"]
            .as_str()
            .unwrap()
            .contains("no cassette entry"),
        "{trial}"
    );
}

#[test]
fn a_persona_without_user_input_opens_the_conversation_and_the_agent_gets_its_words() {
    let (tmp, suite) = example();
    persona_case(
        &suite,
        "Close the checkout incident. You are Sam from payments; the one you mean is INC-004301. You approve closing it.",
    );
    let file = suite.join("cases/desk/09-ambiguous.yaml");
    let text = std::fs::read_to_string(&file).unwrap();
    std::fs::write(
        &file,
        text.replace("user_input: Close the checkout incident.\n", ""),
    )
    .unwrap();
    let Some(upstream) = FakeUpstream::start(tmp.path()) else {
        return;
    };
    let base = ["run", s(&suite), "--filter", "ambiguous-checkout"];
    let up = ["--gateway-upstream", upstream.url.as_str()];
    let o = run(&[&base[..], &up[..], &["--json"]].concat());
    assert_eq!(o.code, 0, "{}{}", o.stderr, o.stdout);
    let r: Value = serde_json::from_str(&o.stdout).unwrap();
    assert_eq!(r["trials"][0]["status"], "passed");
    // A command agent gets the persona's opening as its input.
    let out = tmp.path().join("env-run");
    let o = run(&[
        &base[..],
        &up[..],
        &["--agent", "cmd:env", "--out", s(&out)],
    ]
    .concat());
    assert_eq!(o.code, 1, "the case fails, the run completes: {}", o.stderr);
    let events = read_trials(&out)[0]["trajectory"]["events"].clone();
    let answer = events
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["type"] == "final_answer")
        .unwrap()["text"]
        .as_str()
        .unwrap()
        .to_owned();
    // The persona's call, then its words, open the trajectory.
    assert_eq!(events[0]["type"], "model_call");
    assert_eq!(events[0]["simulated_user"], true);
    assert_eq!(events[1]["type"], "user_message");
    assert_eq!(events[1]["text"], "Close the checkout incident.");
    assert!(
        answer.contains("GAUNTLET_USER_INPUT=Close the checkout incident.\n"),
        "{answer}"
    );
    // Without a persona, a case needs its user_input.
    std::fs::write(
        &file,
        text.replace("user_input: Close the checkout incident.\n", "")
            .replace("  persona: >-\n", "  default: >-\n"),
    )
    .unwrap();
    let o = run(&["check", s(&suite)]);
    assert_eq!(o.code, 2);
    assert!(o.stderr.contains("no `user_input`"), "{}", o.stderr);
}

#[test]
fn the_built_in_agent_and_a_persona_take_turns_until_the_persona_stops() {
    let (tmp, suite) = example();
    let file = suite.join("cases/desk/02-lookup-status.yaml");
    // The persona holds back the incident id, so the conversation takes three agent turns.
    let text = std::fs::read_to_string(&file)
        .unwrap()
        .replace(
            "user_input: What is the status of INC-004218?\n",
            "user:\n  persona: >-\n    Ask what the status of your incident is. It is INC-004218.\n",
        )
        .replace("optimal_steps: 1", "optimal_steps: 3");
    std::fs::write(&file, text).unwrap();
    let Some(upstream) = FakeUpstream::start(tmp.path()) else {
        return;
    };
    let out = tmp.path().join("run");
    let o = run(&[
        "run",
        s(&suite),
        "--agent",
        "openai:fake-model",
        "--user-model",
        "fake-user",
        "--filter",
        "lookup-status",
        "--gateway-upstream",
        &upstream.url,
        "--out",
        s(&out),
        "--quiet",
    ]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let trial = &read_trials(&out)[0];
    let failed: Vec<&Value> = trial["scores"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["passed"] == false)
        .collect();
    assert_eq!(trial["status"], "passed", "{failed:?}");
    let turns: Vec<(String, String)> = trial["trajectory"]["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| {
            let who = match (e["type"].as_str()?, e["simulated_user"].as_bool()) {
                ("model_call", Some(true)) => "user model",
                ("model_call", _) => "agent model",
                (t, _) => t,
            };
            Some((
                who.to_owned(),
                e["text"].as_str().unwrap_or_default().to_owned(),
            ))
        })
        .collect();
    let expected: Vec<(String, String)> = [
        ("user model", ""),
        ("user_message", "Ask what the status of your incident is."),
        ("agent model", ""),
        ("agent_message", "I cannot help with that."),
        ("user model", ""),
        ("user_message", "It is INC-004218."),
        ("agent model", ""),
        ("tool_call", ""),
        ("agent model", ""),
        ("agent_message", "INC-004218 is open."),
        ("user model", ""),
        ("user_message", "###STOP###"),
        ("final_answer", "INC-004218 is open."),
    ]
    .iter()
    .map(|(a, b)| (a.to_string(), b.to_string()))
    .collect();
    assert_eq!(turns, expected);
}

#[test]
#[cfg_attr(
    not(all(have_py_mcp, have_py_openai)),
    ignore = "needs the Python packages mcp and openai (pip install mcp openai)"
)]
fn the_official_openai_client_rides_out_model_call_faults_by_its_own_retries() {
    if !python_has("openai") || !python_has("mcp") {
        return;
    }
    let agent = format!(
        "cmd:python3 {}",
        s(&repo().join("examples/agents/openai_agent.py"))
    );
    lookup_under_model_faults(&agent, false).expect("fake upstream");
}

#[test]
fn a_cassette_recorded_without_faults_replays_under_model_call_faults() {
    // Skips, saying so, when python3 cannot run the fake upstream.
    let _ = lookup_under_model_faults("openai:fake-model", true);
}

#[test]
#[cfg_attr(
    not(have_py_mcp),
    ignore = "needs the Python package mcp (pip install mcp)"
)]
fn an_agent_over_mcp_gets_the_persona_s_answer_to_its_confirmation_request() {
    if !python_has("mcp") {
        return;
    }
    let (tmp, suite) = example();
    let Some(upstream) = FakeUpstream::start(tmp.path()) else {
        return;
    };
    let file = suite.join("cases/desk/01-close-mitigated.yaml");
    let text = std::fs::read_to_string(&file).unwrap();
    let agent = format!(
        "cmd:python3 {}",
        s(&repo().join("examples/agents/rule_based_mcp.py"))
    );
    let mut statuses = Vec::new();
    for persona in [
        "You are Ana. You approve closing INC-004217.",
        "You are Ana. You changed your mind: INC-004217 must stay open.",
    ] {
        std::fs::write(
            &file,
            format!("{text}user:\n  persona: >-\n    {persona}\n"),
        )
        .unwrap();
        let o = run(&[
            "run",
            s(&suite),
            "--agent",
            &agent,
            "--filter",
            "close-mitigated",
            "--gateway-upstream",
            &upstream.url,
            "--user-model",
            "fake-user",
            "--json",
        ]);
        let r: Value = serde_json::from_str(&o.stdout).expect(&o.stderr);
        let trial = &r["trials"][0];
        statuses.push((
            trial["status"].as_str().unwrap().to_owned(),
            trial["final_state"]["incidents"]["INC-004217"]["status"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
        ));
    }
    assert_eq!(
        statuses,
        [
            ("passed".to_owned(), "closed".to_owned()),
            ("failed".to_owned(), "mitigated".to_owned())
        ]
    );
}

#[test]
fn the_agent_never_sees_the_upstream_key() {
    let (tmp, suite) = example();
    let cassette = tmp.path().join("empty.jsonl");
    std::fs::write(&cassette, "").unwrap();
    let out = gauntlet()
        .args([
            "run",
            s(&suite),
            "--agent",
            "cmd:env",
            "--filter",
            "lookup-status",
            "--replay",
            s(&cassette),
            "--json",
        ])
        .env("OPENAI_API_KEY", "sk-upstream-secret")
        .env("GAUNTLET_UPSTREAM_API_KEY", "sk-upstream-secret-2")
        .output()
        .unwrap();
    let r: Value = serde_json::from_slice(&out.stdout).unwrap();
    let answer = r["trials"][0]["scores"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "output_assertions")
        .unwrap()["details"]["answer"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        answer.contains("OPENAI_BASE_URL=http://127.0.0.1:"),
        "{answer}"
    );
    assert!(!answer.contains("sk-upstream-secret"), "{answer}");
}

#[test]
fn the_built_in_agent_evaluates_a_model_directly() {
    let (tmp, suite) = example();
    let Some(upstream) = FakeUpstream::start(tmp.path()) else {
        return;
    };
    let o = run(&[
        "run",
        s(&suite),
        "--agent",
        "openai:fake-model",
        "--filter",
        "lookup-status",
        "--gateway-upstream",
        &upstream.url,
        "--json",
    ]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let r: Value = serde_json::from_str(&o.stdout).unwrap();
    assert_eq!(r["trials"][0]["status"], "passed");
    assert!(r["trials"][0]["tokens"].as_u64().unwrap() > 0);
    let o = run(&["run", s(&suite), "--agent", "openai:fake-model"]);
    assert_eq!(o.code, 2, "no endpoint is an input error");
}

#[test]
#[cfg_attr(
    not(have_py_mcp),
    ignore = "needs the Python package mcp (pip install mcp)"
)]
fn an_http_agent_service_receives_each_trial_and_works_the_world_over_mcp() {
    if !python_has("mcp") {
        return;
    }
    let (tmp, suite) = example();
    let port_file = tmp.path().join("agent.port");
    let mut child = std::process::Command::new("python3")
        .arg(repo().join("crates/gauntlet/tests/python/http_agent.py"))
        .arg(&port_file)
        .spawn()
        .unwrap();
    // Python starting the service on a busy machine can take seconds: wait up to 60.
    let mut port = String::new();
    for _ in 0..1200 {
        port = std::fs::read_to_string(&port_file).unwrap_or_default();
        if !port.trim().is_empty() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert!(
        !port.trim().is_empty(),
        "the agent service never said its port"
    );
    let o = run(&[
        "run",
        s(&suite),
        "--agent",
        &format!("http://127.0.0.1:{}/", port.trim()),
        "--filter",
        "lookup-status",
        "--json",
    ]);
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(o.code, 0, "{}", o.stderr);
    let r: Value = serde_json::from_str(&o.stdout).unwrap();
    assert_eq!(r["trials"][0]["status"], "passed");
    assert_eq!(r["trials"][0]["tool_calls"], 1);
}

#[test]
fn replaying_a_run_reproduces_it_and_a_changed_world_shows() {
    let (_tmp, suite) = example();
    let first = suite.join("first");
    assert_eq!(
        run(&["run", s(&suite), "--out", s(&first), "--quiet"]).code,
        0
    );
    let o = run(&[
        "run",
        s(&suite),
        "--agent",
        &format!("replay:{}", s(&first)),
        "--json",
    ]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let replayed: Value = serde_json::from_str(&o.stdout).unwrap();
    let original: Value = stored_results(&first);
    let states = |r: &Value| -> Vec<(String, Value)> {
        r["trials"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| {
                (
                    t["case_id"].as_str().unwrap().to_owned(),
                    t["final_state"].clone(),
                )
            })
            .collect()
    };
    assert_eq!(states(&replayed), states(&original));
    for t in replayed["trials"].as_array().unwrap() {
        if let Some(a) = t["scores"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["name"] == "replay_agreement")
        {
            assert_eq!(a["value"], 1.0, "{}", t["case_id"]);
        }
    }
    // Today's world renamed an incident: the replay still runs, and the difference is shown.
    let world = suite.join("worlds/incident-desk.yaml");
    let text = std::fs::read_to_string(&world).unwrap();
    std::fs::write(
        &world,
        text.replacen(
            "title: Search index lagging\n",
            "title: Search index stalled\n",
            1,
        ),
    )
    .unwrap();
    let o = run(&[
        "run",
        s(&suite),
        "--agent",
        &format!("replay:{}", s(&first)),
        "--filter",
        "lookup-status",
        "--json",
    ]);
    let r: Value = serde_json::from_str(&o.stdout).unwrap();
    let a = r["trials"][0]["scores"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "replay_agreement")
        .unwrap()
        .clone();
    assert_eq!(a["value"], 0.0);
    assert!(
        a["details"]["differences"][0]["now"]["title"] == "Search index stalled",
        "{a}"
    );
}

#[test]
fn an_openai_messages_log_replays_in_the_world() {
    let (tmp, suite) = example();
    let log = tmp.path().join("log.jsonl");
    let messages = serde_json::json!({"case_id": "lookup-status", "messages": [
        {"role": "user", "content": "What is the status of INC-004218?"},
        {"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "type": "function",
            "function": {"name": "get_incident", "arguments": "{\"incident_id\": \"INC-004218\"}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "{\"status\": \"open\"}"},
        {"role": "assistant", "content": "INC-004218 is open."}
    ]});
    std::fs::write(&log, format!("{messages}\n")).unwrap();
    let o = run(&[
        "run",
        s(&suite),
        "--agent",
        &format!("replay:{}", s(&log)),
        "--json",
    ]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let r: Value = serde_json::from_str(&o.stdout).unwrap();
    assert_eq!(
        r["trials"].as_array().unwrap().len(),
        1,
        "only the logged case runs"
    );
    assert_eq!(r["trials"][0]["status"], "passed");
    let a = r["trials"][0]["scores"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "replay_agreement")
        .unwrap()
        .clone();
    assert_eq!(
        a["value"], 0.0,
        "the log recorded only the status, today's world returns the whole incident"
    );
}

/// Regression: an agent that wrote more than 64 KiB on stderr was killed by the closed pipe
/// although it answered correctly, and the first 64 KiB were kept instead of the last.
#[test]
fn a_chatty_agent_is_drained_and_its_last_words_are_kept() {
    let (tmp, suite) = example();
    let script = tmp.path().join("agent.sh");
    std::fs::write(
        &script,
        "head -c 400000 /dev/zero | tr '\\0' 'x' >&2; echo >&2; echo 'the end of the log' >&2; echo 'nothing to do'\n",
    )
    .unwrap();
    let o = run(&[
        "run",
        s(&suite),
        "--agent",
        &format!("cmd:sh {}", s(&script)),
        "--filter",
        "lookup-status",
        "--json",
    ]);
    let r: Value = serde_json::from_str(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", o.stderr));
    let trial = &r["trials"][0];
    assert_ne!(trial["status"], "error", "{trial}");
    let out = suite.join(".gauntlet/runs");
    let run_dir = std::fs::read_dir(&out)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let record: Value = serde_json::from_str(
        std::fs::read_to_string(run_dir.join("trials.jsonl"))
            .unwrap()
            .lines()
            .next()
            .unwrap(),
    )
    .unwrap();
    let stderr = record["trajectory"]["events"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["type"] == "agent_stderr")
        .and_then(|e| e["text"].as_str())
        .unwrap()
        .to_owned();
    assert!(
        stderr.trim_end().ends_with("the end of the log"),
        "kept the end"
    );
    assert!(
        stderr.len() <= 64 << 10,
        "kept at most 64 KiB: {}",
        stderr.len()
    );
}

/// A `cmd:` agent that calls one tool over MCP (plain HTTP, no SDK) and then exits 3.
const CALL_THEN_EXIT_3: &str = r#"
import json, os, sys, urllib.request
url, token = os.environ["GAUNTLET_MCP_URL"], os.environ["GAUNTLET_MCP_TOKEN"]
def post(body):
    h = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream", "Authorization": "Bearer " + token}
    return urllib.request.urlopen(urllib.request.Request(url, data=json.dumps(body).encode(), headers=h), timeout=60).read()
post({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}})
post({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "get_incident", "arguments": {"incident_id": "INC-004217"}}})
print("something broke", file=sys.stderr)
sys.exit(3)
"#;

/// Issue 47, item 8: an agent that started and then crashed was a harness `error`, the status of
/// a world that could not start. The crash is the agent's failure now; only an agent that
/// cannot start is the harness's.
#[test]
fn an_agent_that_crashes_once_started_fails_its_trial_and_one_that_cannot_start_errs() {
    let (tmp, suite) = example();
    let script = tmp.path().join("agent.py");
    std::fs::write(&script, CALL_THEN_EXIT_3).unwrap();
    let trial_of = |agent: &str| -> Value {
        let o = run(&[
            "run",
            s(&suite),
            "--agent",
            agent,
            "--filter",
            "lookup-status",
            "--json",
        ]);
        let r: Value =
            serde_json::from_str(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", o.stderr));
        r["trials"][0].clone()
    };
    let crashed = trial_of(&format!("cmd:python3 {}", s(&script)));
    assert_eq!(crashed["status"], "failed", "{crashed}");
    assert!(crashed.get("error").is_none(), "{crashed}");
    let score = crashed["scores"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "agent_completed")
        .unwrap_or_else(|| panic!("no agent_completed: {crashed}"));
    assert_eq!(score["passed"], false);
    assert_eq!(score["severity"], "error");
    let reason = score["reason"].as_str().unwrap();
    assert!(
        reason.contains("exit status: 3") && reason.contains("something broke"),
        "{reason}"
    );
    assert_eq!(score["details"]["crash"], reason);
    // A program that is not there never reached the world: the harness could not start it.
    let missing = trial_of("cmd:/nonexistent/agent");
    assert_eq!(missing["status"], "error", "{missing}");
    assert!(
        missing["error"]
            .as_str()
            .unwrap()
            .contains("exit status: 127"),
        "{missing}"
    );
}

/// Issue 47, item 8: `--retry-errors N` plays an errored trial again before its error counts.
#[test]
fn retry_errors_replays_an_errored_trial_and_the_run_says_so() {
    let (tmp, suite) = example();
    let marker = tmp.path().join("tried");
    // The first attempt dies before it reaches the world (a harness error); the second answers.
    let agent = format!(
        "cmd:[ -e {m} ] || {{ touch {m}; echo 'no connection' >&2; exit 1; }}; echo done",
        m = s(&marker)
    );
    let args = |extra: &[&'static str]| -> Vec<String> {
        let mut a: Vec<String> = [
            "run",
            s(&suite),
            "--agent",
            &agent,
            "--filter",
            "lookup-status",
            // The marker is a file outside the agent's sandbox (where the host is read-only):
            // the agent runs as a plain process here.
            "--isolation",
            "none",
        ]
        .iter()
        .map(|x| x.to_string())
        .collect();
        a.extend(extra.iter().map(|x| x.to_string()));
        a
    };
    let argv = args(&["--retry-errors", "2", "--json"]);
    let o = run(&argv.iter().map(String::as_str).collect::<Vec<_>>());
    let r: Value = serde_json::from_str(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", o.stderr));
    assert_eq!(r["retried"], 1, "{}", o.stdout);
    let trial = &r["trials"][0];
    assert_ne!(trial["status"], "error", "{trial}");
    assert_eq!(r["metrics"]["errors"], 0.0);
    let run_dir = std::fs::read_dir(suite.join(".gauntlet/runs"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let record: Value = serde_json::from_str(
        std::fs::read_to_string(run_dir.join("trials.jsonl"))
            .unwrap()
            .lines()
            .next()
            .unwrap(),
    )
    .unwrap();
    let retried = record["retried_errors"].as_array().unwrap();
    assert_eq!(retried.len(), 1, "{record}");
    assert!(
        retried[0].as_str().unwrap().contains("no connection"),
        "{record}"
    );
    // The terminal says it too; without the flag the same error counts at once.
    std::fs::remove_file(&marker).unwrap();
    let argv = args(&["--retry-errors", "1"]);
    let o = run(&argv.iter().map(String::as_str).collect::<Vec<_>>());
    assert!(
        o.stdout
            .contains("retried 1 trial(s) after a harness error"),
        "{}",
        o.stdout
    );
    std::fs::remove_file(&marker).unwrap();
    let argv = args(&["--json"]);
    let o = run(&argv.iter().map(String::as_str).collect::<Vec<_>>());
    let r: Value = serde_json::from_str(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", o.stderr));
    assert_eq!(r["trials"][0]["status"], "error");
    assert!(r.get("retried").is_none());
}

/// Issue 47, item 10: `--agent python:MODULE:FUNCTION` is the spelling pytest and run records
/// use; this binary has no Python in it and says which command has.
#[test]
fn a_python_agent_from_the_cargo_binary_names_the_command_that_runs_it() {
    let (_tmp, suite) = example();
    let o = run(&["run", s(&suite), "--agent", "python:ticket_agent:agent"]);
    assert_eq!(o.code, 2, "{}", o.stderr);
    assert!(
        o.stderr.contains("python:ticket_agent:agent")
            && o.stderr.contains("pip install gauntlet-harness"),
        "{}",
        o.stderr
    );
}
