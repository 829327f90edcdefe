//! Agents built with the frameworks people use, each a `cmd:` agent that reaches the world
//! through the framework's own MCP client and its model through gauntlet's gateway: the OpenAI
//! Agents SDK (`examples/agents/openai_agents_sdk.py`) and LangGraph with langchain's MCP
//! adapters (`examples/agents/langgraph_agent.py`). Their model calls replay from cassettes
//! recorded from llama-cpp-python's server (SmolLM2-135M-Instruct), with no server and no key.

use super::common::*;

/// Runs the `close` cases with `agent` replaying `cassette`; the trials, after checking that
/// the run gave a verdict and that each trial read, through the framework's MCP client, the
/// incident its request names, after a model call the cassette answered.
fn replayed(agent: &str, cassette: &str) -> Vec<Value> {
    let (_tmp, suite) = example();
    let out = suite.join("out");
    let o = run(&[
        "run",
        s(&suite),
        "--agent",
        agent,
        "--filter",
        "close",
        "--replay-cassette",
        s(&repo().join(cassette)),
        "--out",
        s(&out),
        "--quiet",
    ]);
    // The model is tiny: its answers fail the task, but the harness ran every trial.
    assert!(o.code == 0 || o.code == 1, "exit {}: {}", o.code, o.stderr);
    let trials = read_trials(&out);
    assert_eq!(trials.len(), 2);
    for t in &trials {
        assert_ne!(t["status"], "error", "{}", t["error"]);
        let events = t["trajectory"]["events"].as_array().unwrap();
        let of =
            |kind: &str| -> Vec<&Value> { events.iter().filter(|e| e["type"] == kind).collect() };
        let models = of("model_call");
        assert!(!models.is_empty(), "{events:?}");
        for m in &models {
            assert!(m.get("error").is_none(), "{m}");
            assert!(m["completion_tokens"].as_u64().unwrap() > 0, "{m}");
        }
        let request = events[0]["text"].as_str().unwrap();
        let named = request
            .split(|c: char| !c.is_alphanumeric() && c != '-')
            .find(|w| w.starts_with("INC-"))
            .unwrap();
        let calls = of("tool_call");
        assert_eq!(calls.len(), 1, "{calls:?}");
        assert_eq!(calls[0]["tool"], "get_incident");
        assert_eq!(calls[0]["arguments"]["incident_id"], named);
        assert!(calls[0].get("error").is_none(), "{}", calls[0]);
        assert!(!of("final_answer").is_empty(), "{events:?}");
    }
    trials
}

#[test]
#[cfg_attr(
    not(have_py_openai_agents),
    ignore = "needs the Python package openai-agents"
)]
fn an_openai_agents_sdk_agent_runs_on_its_cassette() {
    let agent = format!(
        "cmd:python3 {}",
        s(&repo().join("examples/agents/openai_agents_sdk.py"))
    );
    replayed(
        &agent,
        "examples/incident-desk/cassettes/openai-agents.jsonl",
    );
}

#[test]
#[cfg_attr(
    not(have_langgraph_venv),
    ignore = "needs .venvs/langgraph (LangGraph, langchain-mcp-adapters, langchain-openai; .ci/run makes it)"
)]
fn a_langgraph_agent_runs_on_its_cassette() {
    let agent = format!(
        "cmd:{} {}",
        s(&repo().join(".venvs/langgraph/bin/python")),
        s(&repo().join("examples/agents/langgraph_agent.py"))
    );
    let trials = replayed(&agent, "examples/incident-desk/cassettes/langgraph.jsonl");
    // The graph's second node answers from the record: two model calls a trial.
    for t in &trials {
        assert_eq!(events_of(t, "model_call").len(), 2, "{}", t["case_id"]);
    }
}
