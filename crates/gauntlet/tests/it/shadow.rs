//! Shadow and canary: `gauntlet shadow` in front of real MCP servers from npm (server-filesystem,
//! server-memory) and a misbehaving one, driven by the official Python MCP client; sessions
//! harvested into suites that replay offline.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use crate::common::*;

/// The npm servers (`npm ci --prefix crates/gauntlet/tests/npm`).
fn npm_server(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/npm/node_modules/@modelcontextprotocol")
        .join(name)
        .join("dist/index.js")
}

/// A running `gauntlet shadow --http`: its URL and token, stopped with SIGTERM.
struct Shadow {
    child: std::process::Child,
    url: String,
    token: String,
    run: PathBuf,
    stderr: PathBuf,
}

impl Shadow {
    fn start(dir: &Path, args: &[&str]) -> Shadow {
        let run = dir.join("run");
        let stderr = dir.join("shadow.stderr");
        let mut cmd = std::process::Command::new(gauntlet_bin());
        cmd.arg("shadow")
            .args(args)
            .args(["--http", "127.0.0.1:0", "--out", s(&run)])
            .env("NO_COLOR", "1");
        let (child, v) = spawn_server(cmd, &stderr);
        assert!(v["url"].as_str().unwrap().ends_with("/mcp"), "{v}");
        Shadow {
            child,
            url: v["url"].as_str().unwrap().to_owned(),
            token: v["token"].as_str().unwrap().to_owned(),
            run,
            stderr,
        }
    }

    /// One MCP session of the official Python client: what each operation got.
    fn session(&self, ops: Value) -> Vec<Value> {
        let r = python_check(
            "shadow_client.py",
            &["http", &self.url, &self.token, &ops.to_string()],
        )
        .expect("the mcp package is installed (the test is ignored otherwise)");
        r.as_array().unwrap().clone()
    }

    /// SIGTERM; the exit code and how long it took to stop.
    fn stop(mut self) -> (i32, Duration, String) {
        self.signal("-TERM")
    }

    /// SIGINT (Ctrl-C), likewise.
    fn interrupt(mut self) -> (i32, Duration, String) {
        self.signal("-INT")
    }

    fn signal(&mut self, signal: &str) -> (i32, Duration, String) {
        let started = Instant::now();
        std::process::Command::new("kill")
            .args([signal, &self.child.id().to_string()])
            .status()
            .unwrap();
        let status = loop {
            if let Some(st) = self.child.try_wait().unwrap() {
                break st;
            }
            if started.elapsed() > Duration::from_secs(30) {
                let _ = self.child.kill();
                panic!("gauntlet shadow did not stop within 30 s of SIGTERM");
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        let stderr = std::fs::read_to_string(&self.stderr).unwrap_or_default();
        (status.code().unwrap_or(-1), started.elapsed(), stderr)
    }
}

impl Drop for Shadow {
    /// A failing test leaves no proxy behind.
    fn drop(&mut self) {
        if self.child.try_wait().ok().flatten().is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Processes whose command line mentions `marker` (a test's own temporary path).
fn processes_with(marker: &str) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        if !entry
            .file_name()
            .to_string_lossy()
            .bytes()
            .all(|b| b.is_ascii_digit())
        {
            continue;
        }
        if let Ok(raw) = std::fs::read(entry.path().join("cmdline")) {
            let cmd = String::from_utf8_lossy(&raw).replace('\0', " ");
            if cmd.contains(marker) {
                found.push(cmd);
            }
        }
    }
    found
}

/// Every file under `dir` with its content (directories as `DIR/`).
fn tree(dir: &Path) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            let rel = p.strip_prefix(dir).unwrap().display().to_string();
            if p.is_dir() {
                out.insert(format!("{rel}/"), String::new());
                stack.push(p);
            } else {
                out.insert(rel, std::fs::read_to_string(&p).unwrap_or_default());
            }
        }
    }
    out
}

fn tool_results(trial: &Value) -> Vec<(String, Value, Value)> {
    trial["trajectory"]["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["type"] == "tool_call")
        .map(|c| {
            (
                c["tool"].as_str().unwrap().to_owned(),
                c["result"].clone(),
                c["error"].clone(),
            )
        })
        .collect()
}

/// A file tree and a memory graph behind one shadow proxy (two upstreams, so tools are
/// prefixed).
struct Fixture {
    _tmp: tempfile::TempDir,
    dir: PathBuf,
    docs: PathBuf,
    memory: PathBuf,
}

impl Fixture {
    fn new() -> Fixture {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().to_path_buf();
        let docs = dir.join("docs");
        std::fs::create_dir_all(docs.join("sub")).unwrap();
        std::fs::write(docs.join("a.txt"), "hello\n").unwrap();
        std::fs::write(docs.join("sub/b.md"), "# notes\n").unwrap();
        let memory = dir.join("memory.jsonl");
        std::fs::write(
            &memory,
            "{\"type\":\"entity\",\"name\":\"Ada\",\"entityType\":\"person\",\"observations\":[\"writes programs\"]}\n",
        )
        .unwrap();
        Fixture {
            _tmp: tmp,
            dir,
            docs,
            memory,
        }
    }

    fn fs_upstream(&self, name: Option<&str>) -> String {
        format!(
            "{}cmd:node {} {}",
            name.map(|n| format!("{n}=")).unwrap_or_default(),
            npm_server("server-filesystem").display(),
            self.docs.display()
        )
    }

    fn memory_upstream(&self) -> String {
        format!(
            "mem=cmd:env MEMORY_FILE_PATH={} node {}",
            self.memory.display(),
            npm_server("server-memory").display()
        )
    }
}

#[test]
#[cfg_attr(
    not(have_npm_mcp_servers),
    ignore = "needs node, the Python package mcp and the npm MCP servers (npm ci --prefix crates/gauntlet/tests/npm)"
)]
fn shadow_forwards_reads_never_executes_writes_and_replays_offline() {
    let fx = Fixture::new();
    let before_tree = tree(&fx.docs);
    let before_memory = std::fs::read(&fx.memory).unwrap();
    let shadow = Shadow::start(
        &fx.dir,
        &[
            "--upstream",
            &fx.fs_upstream(Some("fs")),
            "--upstream",
            &fx.memory_upstream(),
        ],
    );
    let a = fx.docs.join("a.txt");
    let a = s(&a);
    let got = shadow.session(json!([
        {"list": true},
        {"tool": "fs__read_text_file", "args": {"path": a}, "meta": {"gauntlet/user_input": "Say goodbye in a.txt and forget Ada"}},
        {"tool": "mem__read_graph", "args": {}},
        {"tool": "fs__write_file", "args": {"path": a, "content": "bye\n"}},
        {"tool": "fs__move_file", "args": {"source": a, "destination": fx.docs.join("c.txt")}},
        {"tool": "fs__create_directory", "args": {"path": fx.docs.join("new")}},
        {"tool": "mem__create_entities", "args": {"entities": [{"name": "Bob", "entityType": "person", "observations": []}]}},
        {"tool": "mem__delete_entities", "args": {"entityNames": ["Ada"]}},
        {"tool": "fs__read_text_file", "args": {"path": a}},
        {"tool": "mem__read_graph", "args": {}},
    ]));
    // The tools are the upstreams' own, prefixed, with their annotations.
    let tools = got[0].as_array().unwrap();
    let find = |n: &str| tools.iter().find(|t| t["name"] == n).cloned();
    assert_eq!(find("fs__read_text_file").unwrap()["read_only"], true);
    assert_eq!(find("fs__write_file").unwrap()["read_only"], false);
    assert_eq!(find("mem__read_graph").unwrap()["read_only"], true);
    assert!(
        find("read_text_file").is_none(),
        "several upstreams: names are prefixed"
    );
    // Reads return the real content.
    assert_eq!(got[1]["structured"]["content"], "hello\n", "{:?}", got[1]);
    assert!(
        got[2]["text"].as_str().unwrap().contains("writes programs"),
        "{:?}",
        got[2]
    );
    // Writes are answered (the client checked each answer against the tool's output schema).
    for w in &got[3..8] {
        assert!(w.get("rpc_error").is_none(), "{w}");
        assert_eq!(w["error"], false, "{w}");
    }
    assert_eq!(
        got[6]["structured"]["entities"][0]["name"], "Bob",
        "a fitting argument fills the answer"
    );
    // ...and none reached the upstreams.
    assert_eq!(got[8]["structured"]["content"], "hello\n");
    let graph = got[9]["text"].as_str().unwrap();
    assert!(graph.contains("Ada") && !graph.contains("Bob"), "{graph}");
    assert_eq!(tree(&fx.docs), before_tree, "the file tree changed");
    assert_eq!(
        std::fs::read(&fx.memory).unwrap(),
        before_memory,
        "the memory graph changed"
    );

    let run_dir = shadow.run.clone();
    let (code, took, stderr) = shadow.stop();
    assert_eq!(code, 0, "{stderr}");
    assert!(took < Duration::from_secs(15), "took {took:?} to stop");
    assert!(stderr.contains("session-0001"), "{stderr}");
    let left = processes_with(s(&fx.dir));
    assert!(
        left.is_empty(),
        "upstream processes outlived the proxy: {left:?}"
    );

    // The session is a trial: its calls, reads with real results, writes as its final state.
    let trials = read_trials(&run_dir);
    assert_eq!(trials.len(), 1);
    let t = &trials[0];
    assert_eq!(t["case_id"], "session-0001");
    let writes = t["final_state"]["writes"].as_array().unwrap();
    let written: Vec<&str> = writes.iter().map(|w| w["tool"].as_str().unwrap()).collect();
    assert_eq!(
        written,
        [
            "fs__write_file",
            "fs__move_file",
            "fs__create_directory",
            "mem__create_entities",
            "mem__delete_entities"
        ]
    );
    assert_eq!(writes[0]["arguments"]["content"], "bye\n");
    assert_eq!(t["trajectory"]["events"][0]["type"], "user_message");
    let recorded = tool_results(t);
    assert_eq!(recorded.len(), 9);
    assert_eq!(recorded[0].1, json!({"content": "hello\n"}));
    assert!(
        score(t, "ArgumentSchemaValidity").is_some(),
        "judged with the world's schemas"
    );
    let results: Value = stored_results(&run_dir);
    assert_eq!(results["trials"].as_array().unwrap().len(), 1);

    // Harvested, the session is a case that replays offline with identical read results.
    let suite = fx.dir.join("harvested");
    let h = run(&["shadow", "harvest", s(&run_dir), "--out", s(&suite)]);
    assert_eq!(h.code, 0, "{}", h.stderr);
    let c = run(&["check", s(&suite)]);
    assert_eq!(c.code, 0, "{}", c.stderr);
    let agent = format!("replay:{}", run_dir.display());
    for args in [
        vec!["run", s(&suite), "--agent", &agent, "--json"],
        vec!["run", s(&suite), "--json"],
    ] {
        let r = run(&args);
        assert_eq!(r.code, 0, "{}", r.stderr);
        let replayed = read_trials(&run_of(&suite, &r.stdout)).remove(0);
        assert_eq!(tool_results(&replayed), recorded, "{args:?}");
        assert_eq!(
            score(&replayed, "StateVerification").map(|s| s["passed"].clone()),
            Some(json!(true)),
            "the replayed writes are the recorded ones"
        );
    }
    // A call the session never made is a clear tool error offline.
    let cases = suite.join("cases/sessions.jsonl");
    let mut case: Value =
        serde_json::from_str(std::fs::read_to_string(&cases).unwrap().trim()).unwrap();
    case["reference_trajectory"].as_array_mut().unwrap().insert(
        0,
        json!({"tool": "fs__read_text_file", "args": {"path": "/elsewhere.txt"}}),
    );
    std::fs::write(&cases, format!("{case}\n")).unwrap();
    let r = run(&["run", s(&suite), "--json"]);
    let first = &tool_results(&read_trials(&run_of(&suite, &r.stdout))[0])[0];
    assert_eq!(first.2["status"], 404, "{first:?}");
    assert!(
        first.2["message"]
            .as_str()
            .unwrap()
            .contains("no recorded answer"),
        "{first:?}"
    );
}

/// The run folder of a `gauntlet run SUITE --json`.
fn run_of(suite: &Path, stdout: &str) -> PathBuf {
    let res: Value = serde_json::from_str(stdout).unwrap();
    suite
        .join(".gauntlet/runs")
        .join(res["header"]["run_id"].as_str().unwrap())
}

#[test]
#[cfg_attr(
    not(have_npm_mcp_servers),
    ignore = "needs node, the Python package mcp and the npm MCP servers (npm ci --prefix crates/gauntlet/tests/npm)"
)]
fn a_canary_executes_allowed_writes_within_its_budget_and_refuses_the_rest() {
    let fx = Fixture::new();
    let config = fx.dir.join("shadow.yaml");
    std::fs::write(&config, "canary:\n  allow: [write_file]\n  max_writes: 1\n").unwrap();
    let shadow = Shadow::start(
        &fx.dir,
        &[
            "--upstream",
            &fx.fs_upstream(None),
            "--canary",
            "--config",
            s(&config),
        ],
    );
    let a = fx.docs.join("a.txt");
    let b = fx.docs.join("b.txt");
    let got = shadow.session(json!([
        {"list": true},
        {"tool": "write_file", "args": {"path": a, "content": "canary\n"}},
        {"tool": "write_file", "args": {"path": b, "content": "second\n"}},
        {"tool": "create_directory", "args": {"path": fx.docs.join("new")}},
        {"tool": "read_text_file", "args": {"path": a}},
    ]));
    assert!(
        got[0]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["name"] == "write_file"),
        "one upstream: names are kept"
    );
    assert_eq!(got[1]["error"], false, "{}", got[1]);
    assert_eq!(got[2]["error"], true, "{}", got[2]);
    assert!(
        got[2]["text"].as_str().unwrap().contains("budget"),
        "{}",
        got[2]
    );
    assert_eq!(got[3]["error"], true);
    assert!(
        got[3]["text"].as_str().unwrap().contains("canary.allow"),
        "{}",
        got[3]
    );
    assert_eq!(
        got[4]["structured"]["content"], "canary\n",
        "the allowed write happened"
    );
    assert_eq!(std::fs::read_to_string(&a).unwrap(), "canary\n");
    assert!(!b.exists(), "the write over budget happened");
    assert!(
        !fx.docs.join("new").exists(),
        "the disallowed write happened"
    );
    let run = shadow.run.clone();
    // Ctrl-C stops it as SIGTERM does: the session stored, the upstream gone.
    let (code, took, stderr) = shadow.interrupt();
    assert!(took < Duration::from_secs(15), "took {took:?} to stop");
    assert_eq!(code, 0, "{stderr}");
    let t = &read_trials(&run)[0];
    assert_eq!(t["final_state"]["executed_writes"], 1);
    assert!(processes_with(s(&fx.dir)).is_empty());
}

/// A temporary folder holding the misbehaving server (copied there so that its processes can
/// be found by path) and a configuration: the folder, the configuration file, the upstream.
fn flaky(config: &str) -> (tempfile::TempDir, PathBuf, String) {
    let tmp = tempfile::tempdir().unwrap();
    let server = tmp.path().join("flaky_mcp_server.py");
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/flaky_mcp_server.py"),
        &server,
    )
    .unwrap();
    let file = tmp.path().join("shadow.yaml");
    std::fs::write(&file, config).unwrap();
    let upstream = format!("cmd:python3 {}", server.display());
    (tmp, file, upstream)
}

#[test]
#[cfg_attr(
    not(have_py_mcp),
    ignore = "needs the Python package mcp (pip install mcp)"
)]
fn a_crashing_or_hanging_upstream_ends_its_session_and_the_proxy_serves_on() {
    let (tmp, config, upstream) = flaky("timeout_s: 2\n");
    let shadow = Shadow::start(
        tmp.path(),
        &["--upstream", &upstream, "--config", s(&config)],
    );
    let crashed = shadow.session(json!([
        {"tool": "echo", "args": {"text": "hi"}},
        {"tool": "crash", "args": {}},
        {"tool": "echo", "args": {"text": "after"}},
    ]));
    assert_eq!(crashed[0]["text"], "hi");
    let err = crashed[1]["rpc_error"].as_str().unwrap_or_default();
    assert!(
        err.contains("stopped (crashed or exited)") && err.contains("`crash`"),
        "{crashed:?}"
    );
    assert!(
        crashed[2]["rpc_error"]
            .as_str()
            .unwrap_or_default()
            .contains("session has ended")
    );
    let started = Instant::now();
    let hung = shadow.session(json!([{"tool": "hang", "args": {}}]));
    assert!(
        hung[0]["rpc_error"]
            .as_str()
            .unwrap_or_default()
            .contains("did not answer `hang` within 2s"),
        "{hung:?}"
    );
    assert!(started.elapsed() < Duration::from_secs(20));
    let fine = shadow.session(json!([{"tool": "echo", "args": {"text": "still here"}}]));
    assert_eq!(
        fine[0]["text"], "still here",
        "the proxy serves other sessions"
    );
    let run = shadow.run.clone();
    let (code, took, stderr) = shadow.stop();
    assert_eq!(code, 0, "{stderr}");
    assert!(took < Duration::from_secs(15));
    let trials = read_trials(&run);
    let statuses: Vec<(&str, &str)> = trials
        .iter()
        .map(|t| {
            (
                t["case_id"].as_str().unwrap(),
                t["status"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        statuses,
        [
            ("session-0001", "error"),
            ("session-0002", "error"),
            ("session-0003", "passed")
        ]
    );
    assert!(trials[0]["error"].as_str().unwrap().contains("crash"));
    assert!(
        processes_with(s(tmp.path())).is_empty(),
        "{:?}",
        processes_with(s(tmp.path()))
    );
}

#[test]
#[cfg_attr(
    not(have_py_mcp),
    ignore = "needs the Python package mcp (pip install mcp)"
)]
fn over_stdio_one_session_is_recorded_with_the_faults_of_the_config() {
    let (tmp, config, upstream) =
        flaky("faults:\n  - {tool: echo, kind: rate_limited, calls: [1]}\n");
    let run = tmp.path().join("run");
    let bin = gauntlet_bin();
    let ops = json!([
        {"tool": "echo", "args": {"text": "one"}},
        {"tool": "echo", "args": {"text": "two"}},
    ]);
    let got = python_check(
        "shadow_client.py",
        &[
            "stdio",
            &ops.to_string(),
            "--",
            s(&bin),
            "shadow",
            "--upstream",
            &upstream,
            "--config",
            s(&config),
            "--stdio",
            "--out",
            s(&run),
        ],
    )
    .unwrap();
    assert_eq!(got[0]["error"], true, "{got:?}");
    assert!(
        got[0]["text"].as_str().unwrap().starts_with("error 429"),
        "{got:?}"
    );
    assert_eq!(got[1]["text"], "two");
    // The proxy wrote the session when the client went away.
    let deadline = Instant::now() + Duration::from_secs(15);
    while !run.join("results.json").exists() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    let trials = read_trials(&run);
    assert_eq!(trials.len(), 1);
    let events = trials[0]["trajectory"]["events"].as_array().unwrap();
    assert!(
        events
            .iter()
            .any(|e| e["type"] == "fault_injected" && e["kind"] == "rate_limited")
    );
    assert!(processes_with(s(tmp.path())).is_empty());
}

#[test]
fn shadow_refuses_what_it_cannot_run() {
    let o = run(&["shadow", "--http", "127.0.0.1:0"]);
    assert_eq!(o.code, 2);
    assert!(o.stderr.contains("--upstream"), "{}", o.stderr);
    let o = run(&["shadow", "--upstream", "ftp://x", "--stdio"]);
    assert_eq!(o.code, 2);
    assert!(o.stderr.contains("is not an upstream"), "{}", o.stderr);
    let o = run(&["shadow", "--upstream", "cmd:true"]);
    assert_eq!(o.code, 2);
    assert!(o.stderr.contains("--stdio"), "{}", o.stderr);
    // A command that is no MCP server fails at start, before any agent connects.
    let o = run(&["shadow", "--upstream", "cmd:true", "--stdio"]);
    assert_eq!(o.code, 2, "{}", o.stderr);
    assert!(o.stderr.contains("MCP handshake"), "{}", o.stderr);
    let tmp = tempfile::tempdir().unwrap();
    let config = tmp.path().join("shadow.yaml");
    std::fs::write(
        &config,
        "canary:\n  allow: [write_file]\n  max_writes: two\n",
    )
    .unwrap();
    let o = run(&[
        "shadow",
        "--upstream",
        "cmd:true",
        "--config",
        s(&config),
        "--stdio",
    ]);
    assert_eq!(o.code, 2);
    assert!(o.stderr.contains("shadow.yaml:3:"), "{}", o.stderr);
    assert!(o.stderr.contains("max_writes"), "{}", o.stderr);
}

#[test]
#[cfg_attr(
    not(have_py_mcp),
    ignore = "needs the Python package mcp (pip install mcp)"
)]
fn a_config_rule_for_a_tool_no_upstream_has_is_refused_with_the_tools_there_are() {
    let (tmp, config, upstream) = flaky("tools:\n  ecko: read\n");
    let o = run(&[
        "shadow",
        "--upstream",
        &upstream,
        "--config",
        s(&config),
        "--stdio",
    ]);
    assert_eq!(o.code, 2, "{}", o.stderr);
    assert!(
        o.stderr.contains("`ecko`") && o.stderr.contains("echo, crash, hang"),
        "{}",
        o.stderr
    );
    assert!(processes_with(s(tmp.path())).is_empty());
}

#[test]
#[cfg_attr(
    not(have_py_mcp),
    ignore = "needs the Python package mcp (pip install mcp)"
)]
fn an_http_upstream_gets_the_reads_and_never_a_write() {
    // The upstream is gauntlet's own MCP server over streamable HTTP, behind its bearer token.
    let tmp = tempfile::tempdir().unwrap();
    let serve_err = tmp.path().join("serve.stderr");
    let mut cmd = std::process::Command::new(gauntlet_bin());
    cmd.args(["serve", s(&repo().join("examples/incident-desk"))])
        .args(["--case", "close-mitigated", "--http", "127.0.0.1:0"]);
    let (mut serve, up) = spawn_server(cmd, &serve_err);
    let upstream = format!(
        "desk={}#bearer={}",
        up["url"].as_str().unwrap(),
        up["token"].as_str().unwrap()
    );
    let shadow = Shadow::start(tmp.path(), &["--upstream", &upstream]);
    let got = shadow.session(json!([
        {"list": true},
        {"tool": "get_incident", "args": {"incident_id": "INC-004217"}},
        {"tool": "close_incident", "args": {"incident_id": "INC-004217"}},
        {"tool": "get_incident", "args": {"incident_id": "INC-004217"}},
    ]));
    let tools = got[0].as_array().unwrap();
    let read_only = |n: &str| tools.iter().find(|t| t["name"] == n).unwrap()["read_only"].clone();
    assert_eq!(
        read_only("get_incident"),
        true,
        "the world's kinds are MCP annotations"
    );
    assert_eq!(read_only("close_incident"), false);
    assert!(
        got[1]["text"].as_str().unwrap().contains("Payment API"),
        "{got:?}"
    );
    assert_eq!(got[2]["error"], false, "{got:?}");
    assert_eq!(
        got[1]["structured"], got[3]["structured"],
        "the close never happened"
    );
    let (code, _, stderr) = shadow.stop();
    assert_eq!(code, 0, "{stderr}");
    std::process::Command::new("kill")
        .args(["-TERM", &serve.id().to_string()])
        .status()
        .unwrap();
    serve.wait().unwrap();
    // The upstream's own record of its session: reads only.
    let text = std::fs::read_to_string(&serve_err).unwrap();
    let record: Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
    let called: Vec<&str> = record["trajectory"]["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["type"] == "tool_call")
        .map(|e| e["tool"].as_str().unwrap())
        .collect();
    assert_eq!(called, ["get_incident", "get_incident"], "{text}");
}

#[test]
#[cfg_attr(
    not(have_npm_mcp_servers),
    ignore = "needs node, the Python package mcp and the npm MCP servers (npm ci --prefix crates/gauntlet/tests/npm)"
)]
fn a_world_responder_applies_writes_to_a_shadow_copy_of_its_state() {
    let fx = Fixture::new();
    let before = tree(&fx.docs);
    std::fs::write(
        fx.dir.join("files.yaml"),
        "name: files\nstate: {files: {}}\ntools:\n  - name: write_file\n    kind: write\n    parameters:\n      type: object\n      properties: {path: {type: string}, content: {type: string}}\n      required: [path, content]\n    handler:\n      - set: {path: \"/files/{path}\", value: \"{content}\"}\n      - return: {content: \"{path}\"}\n",
    )
    .unwrap();
    let config = fx.dir.join("shadow.yaml");
    std::fs::write(
        &config,
        "tools:\n  write_file:\n    respond: {world: files.yaml}\n",
    )
    .unwrap();
    let shadow = Shadow::start(
        &fx.dir,
        &["--upstream", &fx.fs_upstream(None), "--config", s(&config)],
    );
    let a = fx.docs.join("a.txt");
    let got = shadow.session(json!([
        {"list": true},
        {"tool": "write_file", "args": {"path": a, "content": "bye\n"}},
        {"tool": "write_file", "args": {"path": a, "content": 7}},
    ]));
    assert_eq!(got[1]["structured"]["content"], s(&a), "{got:?}");
    assert_eq!(
        got[2]["error"], true,
        "the world checks its own schema: {got:?}"
    );
    assert_eq!(tree(&fx.docs), before, "the write reached the disk");
    let run = shadow.run.clone();
    let (code, _, stderr) = shadow.stop();
    assert_eq!(code, 0, "{stderr}");
    let t = &read_trials(&run)[0];
    assert_eq!(
        t["final_state"]["worlds"]["files"]["files"][s(&a)],
        "bye\n",
        "{t}"
    );
    assert_eq!(t["final_state"]["writes"].as_array().unwrap().len(), 1);
}

/// Opens an MCP session over plain HTTP (initialize, then list the tools) and leaves it open.
const OPEN_SESSION: &str = r#"
import json, sys, urllib.request
url, token = sys.argv[1], sys.argv[2]
def post(body, session=None):
    h = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream", "Authorization": "Bearer " + token}
    if session:
        h["mcp-session-id"] = session
        h["mcp-protocol-version"] = "2025-06-18"
    r = urllib.request.urlopen(urllib.request.Request(url, data=json.dumps(body).encode(), headers=h), timeout=60)
    return r.headers.get("mcp-session-id"), r.read().decode()
sid, _ = post({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}})
post({"jsonrpc": "2.0", "method": "notifications/initialized"}, sid)
_, listed = post({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, sid)
print("echo" in listed)
"#;

#[test]
#[cfg_attr(
    not(have_py_mcp),
    ignore = "needs the Python package mcp (pip install mcp)"
)]
fn a_killed_proxy_takes_its_upstreams_with_it() {
    let (tmp, config, upstream) = flaky("timeout_s: 5\n");
    // A server that does not go away when its stdin closes: the shell waits on.
    let upstream = format!(
        "cmd:sh -c '{}; sleep 30'",
        upstream.trim_start_matches("cmd:")
    );
    let shadow = Shadow::start(
        tmp.path(),
        &["--upstream", &upstream, "--config", s(&config)],
    );
    // The server's own path: the proxy's command line names the folder too.
    let server = tmp.path().join("flaky_mcp_server.py");
    let server = s(&server);
    let out = std::process::Command::new("python3")
        .args(["-c", OPEN_SESSION, &shadow.url, &shadow.token])
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "True",
        "{out:?}"
    );
    assert!(
        !processes_with(server).is_empty(),
        "the open session's upstream runs"
    );
    let mut shadow = shadow;
    shadow.child.kill().unwrap(); // SIGKILL: no clean-up code runs
    shadow.child.wait().unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while !processes_with(server).is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(
        processes_with(server).is_empty(),
        "{:?}",
        processes_with(server)
    );
}

/// Regression: `shadow --upstream 'cmd:FOO=1 python3 server.py'` and `'cmd:cd dir && …'`
/// failed: the command was `exec`'d whole, not run by `sh -c` as documented. Both now serve.
#[test]
#[cfg_attr(
    not(have_py_mcp),
    ignore = "needs the Python package mcp (pip install mcp)"
)]
fn upstream_commands_with_assignments_and_operators_run_as_sh_reads_them() {
    let (tmp, _config, _) = flaky("");
    let bin = gauntlet_bin();
    for (i, upstream) in [
        "cmd:GAUNTLET_TEST_FLAG=1 python3 flaky_mcp_server.py".to_owned(),
        format!("cmd:cd {} && python3 flaky_mcp_server.py", s(tmp.path())),
    ]
    .iter()
    .enumerate()
    {
        let run = tmp.path().join(format!("run-{i}"));
        let ops_text = json!([{"tool": "echo", "args": {"text": "one"}}]).to_string();
        let got = std::process::Command::new("python3")
            .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/shadow_client.py"))
            .args([
                "stdio",
                &ops_text,
                "--",
                s(&bin),
                "shadow",
                "--upstream",
                upstream,
            ])
            .args(["--stdio", "--out", s(&run)])
            .current_dir(tmp.path())
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&got.stdout);
        let got: Value = serde_json::from_str(stdout.trim()).unwrap_or_else(|e| {
            panic!(
                "{upstream}: {e}: {stdout}{}",
                String::from_utf8_lossy(&got.stderr)
            )
        });
        assert_eq!(got[0]["text"], "one", "{upstream}: {got}");
    }
}

/// One session of the Python client over `gauntlet shadow --stdio` (forwarded reads take the
/// byte relay there): what each operation got, and the session's trial.
fn stdio_session(dir: &Path, args: &[&str], ops: Value) -> (Vec<Value>, Value) {
    let run = dir.join("stdio-run");
    let bin = gauntlet_bin();
    let ops = ops.to_string();
    let mut argv = vec!["stdio", &ops, "--", s(&bin), "shadow"];
    argv.extend_from_slice(args);
    argv.extend(["--stdio", "--out", s(&run)]);
    let got = python_check("shadow_client.py", &argv)
        .expect("the mcp package is installed (the test is ignored otherwise)");
    // The proxy writes the session when the client goes away.
    let deadline = Instant::now() + Duration::from_secs(15);
    while !run.join("results.json").exists() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    let mut trials = read_trials(&run);
    assert_eq!(trials.len(), 1);
    (got.as_array().unwrap().clone(), trials.remove(0))
}

/// A trajectory's events without their times.
fn timeless_events(trial: &Value) -> Vec<Value> {
    let mut events = trial["trajectory"]["events"].as_array().unwrap().clone();
    for e in &mut events {
        if let Some(o) = e.as_object_mut() {
            o.remove("at_ms");
            o.remove("latency_ms");
        }
    }
    events
}

#[test]
#[cfg_attr(
    not(have_npm_mcp_servers),
    ignore = "needs node, the Python package mcp and the npm MCP servers (npm ci --prefix crates/gauntlet/tests/npm)"
)]
fn reads_relayed_over_stdio_answer_and_record_as_the_typed_path_over_http() {
    let fx = Fixture::new();
    let a = fx.docs.join("a.txt");
    let a = s(&a);
    let ops = json!([
        {"list": true},
        {"tool": "fs__read_text_file", "args": {"path": a}, "meta": {"gauntlet/user_input": "Read a.txt", "idempotency_key": "k1"}},
        {"tool": "fs__read_text_file", "args": {"path": fx.docs.join("missing.txt")}},
        {"tool": "fs__list_directory", "args": {"path": fx.docs}},
        {"tool": "fs__read_multiple_files", "args": {"paths": [a, fx.docs.join("sub/b.md")]}},
        {"tool": "fs__write_file", "args": {"path": a, "content": "bye\n"}},
        {"tool": "mem__read_graph", "args": {}},
        {"tool": "no_such_tool", "args": {}},
        {"concurrent": [
            {"tool": "fs__read_text_file", "args": {"path": a}},
            {"tool": "mem__read_graph", "args": {}},
            {"tool": "fs__directory_tree", "args": {"path": fx.docs}},
        ]},
    ]);
    let upstreams = [
        "--upstream",
        &fx.fs_upstream(Some("fs")),
        "--upstream",
        &fx.memory_upstream(),
    ];
    let (over_stdio, relayed) = stdio_session(&fx.dir, &upstreams, ops.clone());
    let shadow = Shadow::start(&fx.dir, &upstreams);
    let over_http = shadow.session(ops);
    let run = shadow.run.clone();
    let (code, _, stderr) = shadow.stop();
    assert_eq!(code, 0, "{stderr}");
    let typed = read_trials(&run).remove(0);

    assert_eq!(over_stdio, over_http, "the agent gets the same answers");
    assert_eq!(over_stdio[1]["structured"]["content"], "hello\n");
    assert_eq!(over_stdio[2]["error"], true, "{:?}", over_stdio[2]);
    // The concurrent calls were counted in the order they came, which may differ: compare
    // each call by its tool and arguments. Before them: the user's message and seven calls.
    let mut relayed_events = timeless_events(&relayed);
    let mut typed_events = timeless_events(&typed);
    let key = |e: &Value| (e["tool"].to_string(), e["arguments"].to_string());
    let (relayed_tail, typed_tail) = (relayed_events.split_off(8), typed_events.split_off(8));
    assert_eq!(relayed_events, typed_events, "the same trajectory");
    let strip = |mut events: Vec<Value>| {
        for e in &mut events {
            let o = e.as_object_mut().unwrap();
            o.remove("id");
            o.remove("step");
        }
        events.sort_by_key(key);
        events
    };
    assert_eq!(strip(relayed_tail), strip(typed_tail));
    assert_eq!(relayed["final_state"], typed["final_state"]);
    assert_eq!(relayed["status"], typed["status"]);
    assert!(processes_with(s(&fx.dir)).is_empty());
}

#[test]
#[cfg_attr(
    not(have_py_mcp),
    ignore = "needs the Python package mcp (pip install mcp)"
)]
fn concurrent_calls_over_stdio_each_get_their_own_answer() {
    let (tmp, config, upstream) = flaky("timeout_s: 20\n");
    let calls: Vec<Value> = (0..24)
        .map(|i| {
            if i % 3 == 2 {
                json!({"tool": "touch", "args": {"path": tmp.path().join(format!("w{i}"))}})
            } else {
                json!({"tool": "echo", "args": {"text": format!("call {i}")}})
            }
        })
        .collect();
    let (got, trial) = stdio_session(
        tmp.path(),
        &["--upstream", &upstream, "--config", s(&config)],
        json!([{"list": true}, {"concurrent": calls}]),
    );
    let answers = got[1].as_array().unwrap();
    for (i, a) in answers.iter().enumerate() {
        assert_eq!(a["error"], false, "{a}");
        if i % 3 != 2 {
            assert_eq!(a["text"], format!("call {i}"), "{answers:?}");
        }
    }
    assert_eq!(tool_results(&trial).len(), 24);
    let echoed: std::collections::BTreeSet<String> = trial["trajectory"]["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["tool"] == "echo")
        .map(|e| {
            // The server's structured answer, `{"result": TEXT}`, or its text.
            let r = &e["result"];
            let text = r.get("result").unwrap_or(r);
            assert_eq!(*text, e["arguments"]["text"], "{e}");
            text.as_str().unwrap().to_owned()
        })
        .collect();
    assert_eq!(
        echoed.len(),
        16,
        "each echo recorded once with its own answer"
    );
    assert!(
        (0..24).all(|i| !tmp.path().join(format!("w{i}")).exists()),
        "no write reached the upstream"
    );
}

#[test]
#[cfg_attr(
    not(have_py_mcp),
    ignore = "needs the Python package mcp (pip install mcp)"
)]
fn an_upstream_that_dies_or_hangs_mid_call_over_stdio_ends_the_session() {
    let (tmp, config, upstream) = flaky("timeout_s: 2\n");
    let args = ["--upstream", &upstream, "--config", s(&config)];
    let (crashed, trial) = stdio_session(
        tmp.path(),
        &args,
        json!([
            {"list": true},
            {"tool": "echo", "args": {"text": "hi"}},
            {"tool": "crash", "args": {}},
            {"tool": "echo", "args": {"text": "after"}},
        ]),
    );
    assert_eq!(crashed[1]["text"], "hi");
    let err = crashed[2]["rpc_error"].as_str().unwrap_or_default();
    assert!(
        err.contains("stopped (crashed or exited)") && err.contains("`crash`"),
        "{crashed:?}"
    );
    assert!(
        crashed[3]["rpc_error"]
            .as_str()
            .unwrap_or_default()
            .contains("session has ended"),
        "{crashed:?}"
    );
    assert_eq!(trial["status"], "error");
    assert!(trial["error"].as_str().unwrap().contains("`crash`"));
    let recorded = tool_results(&trial);
    assert_eq!(recorded.len(), 2, "{recorded:?}");
    assert_eq!(recorded[1].2["status"], 502);

    let hung_dir = tmp.path().join("hung");
    std::fs::create_dir(&hung_dir).unwrap();
    let started = Instant::now();
    let (hung, trial) = stdio_session(
        &hung_dir,
        &args,
        json!([{"list": true}, {"tool": "hang", "args": {}}]),
    );
    assert!(
        hung[1]["rpc_error"]
            .as_str()
            .unwrap_or_default()
            .contains("did not answer `hang` within 2s"),
        "{hung:?}"
    );
    assert!(started.elapsed() < Duration::from_secs(20));
    assert_eq!(trial["status"], "error");
    assert!(processes_with(s(tmp.path())).is_empty());
}
