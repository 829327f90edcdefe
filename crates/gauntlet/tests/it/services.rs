//! Worlds that are real services: a folder served by npm's server-filesystem, a git repository
//! served by mcp-server-git (PyPI), and a command service; each trial gets its own, starting from
//! the same state, and nothing is left behind.

use crate::common::*;

fn npm_filesystem() -> String {
    format!(
        "node {}",
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/npm/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js")
            .display()
    )
}

/// Runs gauntlet with its own temporary folder (where trial folders go): the run's JSON
/// results, its exit code and its stderr.
fn run_in(tmp: &Path, args: &[&str]) -> (i32, Value, String) {
    let out = gauntlet()
        .args(args)
        .arg("--json")
        .env("TMPDIR", tmp)
        .env("GAUNTLET_MCP_FILESYSTEM", npm_filesystem())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let results = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("no results ({e}): {stderr}"));
    (out.status.code().unwrap_or(-1), results, stderr)
}

fn trials_of(suite: &Path, results: &Value) -> Vec<Value> {
    read_trials(
        &suite
            .join(".gauntlet/runs")
            .join(results["header"]["run_id"].as_str().unwrap()),
    )
}

/// Nothing of the trials remains: no folder under the temporary folder's `gauntlet-trials`,
/// no process whose command line names the temporary folder.
fn nothing_left(tmp: &Path) {
    let left: Vec<_> = std::fs::read_dir(tmp.join("gauntlet-trials"))
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    assert!(left.is_empty(), "trial folders left behind: {left:?}");
    let mut procs = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        if let Ok(raw) = std::fs::read(e.path().join("cmdline")) {
            let cmd = String::from_utf8_lossy(&raw).replace('\0', " ");
            if cmd.contains(s(tmp)) {
                procs.push(cmd);
            }
        }
    }
    assert!(procs.is_empty(), "server processes left behind: {procs:?}");
}

/// A one-world suite under `tmp/suite`: the world (JSON, named by its `name`) and its cases.
fn one_world_suite(tmp: &Path, world: &Value, cases: &[&Value]) -> PathBuf {
    let suite = tmp.join("suite");
    for d in ["worlds", "cases", "fixtures"] {
        std::fs::create_dir_all(suite.join(d)).unwrap();
    }
    let name = world["name"].as_str().unwrap();
    std::fs::write(
        suite.join("gauntlet.yaml"),
        format!("name: {name}\nworlds: [worlds/{name}.json]\ndatasets:\n  - {{path: cases, world: {name}}}\n"),
    )
    .unwrap();
    std::fs::write(suite.join(format!("worlds/{name}.json")), world.to_string()).unwrap();
    for (i, case) in cases.iter().enumerate() {
        std::fs::write(suite.join(format!("cases/{i}.json")), case.to_string()).unwrap();
    }
    suite
}

/// A server of this crate's Python test servers.
fn python_server(file: &str) -> String {
    format!(
        "python3 {}",
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/python")
            .join(file)
            .display()
    )
}

fn example(name: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let suite = dir.path().join(name);
    copy_dir(&repo().join("examples").join(name), &suite);
    (dir, suite)
}

fn status_of<'a>(trials: &'a [Value], case: &str) -> &'a Value {
    &trials.iter().find(|t| t["case_id"] == case).unwrap()["status"]
}

#[test]
#[cfg_attr(
    not(have_npm_mcp_servers),
    ignore = "needs node and the npm MCP servers (npm ci --prefix crates/gauntlet/tests/npm)"
)]
fn a_real_file_tree_judges_edits_by_what_is_on_disk() {
    let (tmp, suite) = example("file-desk");
    let (code, results, stderr) = run_in(tmp.path(), &["run", s(&suite)]);
    assert_eq!(code, 0, "{stderr}");
    let trials = trials_of(&suite, &results);
    assert!(trials.iter().all(|t| t["status"] == "passed"), "{trials:?}");
    // The state is the disk's: the edited README as the server wrote it.
    let fixed = trials
        .iter()
        .find(|t| t["case_id"] == "fix-readme-typo")
        .unwrap();
    assert_eq!(
        fixed["final_state"]["files"]["README.md"],
        "# Payments API\n\nThe service handles refunds and chargebacks.\n"
    );
    let (code, results, _) = run_in(
        tmp.path(),
        &["run", s(&suite), "--agent", "script:wrong-file"],
    );
    assert_eq!(code, 1);
    let trials = trials_of(&suite, &results);
    for t in &trials {
        assert_eq!(t["status"], "failed");
        assert_eq!(
            score(t, "StateVerification").unwrap()["passed"],
            false,
            "{t}"
        );
    }
    // The wrong first edit trips the trap: the trial ends there, the README edit never runs.
    let typo = trials
        .iter()
        .find(|t| t["case_id"] == "fix-readme-typo")
        .unwrap();
    let events = typo["trajectory"]["events"].as_array().unwrap();
    let trapped = events
        .iter()
        .find(|e| e["type"] == "trapped")
        .expect("a trapped event");
    assert_eq!(trapped["step"], 2);
    assert_eq!(
        events.iter().filter(|e| e["type"] == "tool_call").count(),
        2
    );
    assert_eq!(
        typo["final_state"]["files"]["README.md"],
        "# Payments API\n\nThe servise handles refunds and chargebacks.\n"
    );
    nothing_left(tmp.path());
}

#[test]
#[cfg_attr(
    not(have_npm_mcp_servers),
    ignore = "needs node and the npm MCP servers (npm ci --prefix crates/gauntlet/tests/npm)"
)]
fn a_hundred_trials_start_from_one_state_and_leave_nothing_behind() {
    let (tmp, suite) = example("file-desk");
    let (code, results, stderr) = run_in(
        tmp.path(),
        &[
            "run",
            s(&suite),
            "--filter",
            "fix-readme-typo",
            "--epochs",
            "100",
        ],
    );
    assert_eq!(code, 0, "{stderr}");
    let trials = trials_of(&suite, &results);
    assert_eq!(trials.len(), 100);
    // A trial whose service started elsewhere would be a harness error.
    assert!(trials.iter().all(|t| t["status"] == "passed"), "{stderr}");
    nothing_left(tmp.path());
}

#[test]
#[cfg_attr(
    not(have_py_mcp),
    ignore = "needs the Python package mcp (pip install mcp)"
)]
fn a_service_that_starts_differently_is_a_harness_error() {
    let tmp = tempfile::tempdir().unwrap();
    let world = json!({
        "name": "clock",
        "service": {
            "kind": "command",
            "setup": "date +%s%N > stamp",
            "snapshot": "printf '{\"stamp\": \"%s\"}' \"$(cat stamp)\"",
            "server": python_server("flaky_mcp_server.py"),
        },
        "tools": [{"name": "echo", "kind": "read"}],
    });
    let case = json!({"case_id": "c", "user_input": "say hi",
        "reference_trajectory": [{"tool": "echo", "args": {"text": "hi"}}, {"answer": "hi"}]});
    let suite = one_world_suite(tmp.path(), &world, &[&case]);
    let (_, results, stderr) = run_in(
        tmp.path(),
        &[
            "run",
            s(&suite),
            "--epochs",
            "2",
            "--agent",
            "script:reference",
        ],
    );
    let trials = trials_of(&suite, &results);
    let errors: Vec<&Value> = trials.iter().filter(|t| t["status"] == "error").collect();
    assert_eq!(errors.len(), 1, "{stderr}\n{trials:?}");
    assert!(
        errors[0]["error"]
            .as_str()
            .unwrap()
            .contains("not deterministic"),
        "{}",
        errors[0]
    );
    nothing_left(tmp.path());
}

#[test]
#[cfg_attr(
    not(have_py_mcp_git),
    ignore = "needs the Python package mcp-server-git (pip install mcp-server-git)"
)]
fn a_real_repository_judges_commits_branches_and_the_first_wrong_step() {
    let (tmp, suite) = example("git-desk");
    let (code, results, stderr) = run_in(tmp.path(), &["run", s(&suite)]);
    assert_eq!(code, 0, "{stderr}");
    let t = &trials_of(&suite, &results)[0];
    assert_eq!(t["status"], "passed", "{t}");
    assert_eq!(t["final_state"]["head"], "release");
    assert_eq!(
        t["final_state"]["branches"]["release"]["log"][0]["subject"],
        "Add changelog"
    );
    for (agent, calls, trapped) in [
        ("script:forget-commit", 2, false),
        ("script:wrong-branch", 1, true),
    ] {
        let (code, results, stderr) = run_in(tmp.path(), &["run", s(&suite), "--agent", agent]);
        assert_eq!(code, 1, "{agent}: {stderr}");
        let trials = trials_of(&suite, &results);
        assert_eq!(status_of(&trials, "commit-changelog"), "failed");
        let t = &trials[0];
        assert_eq!(
            score(t, "StateVerification").unwrap()["passed"],
            false,
            "{agent}"
        );
        let events = t["trajectory"]["events"].as_array().unwrap();
        assert_eq!(
            events.iter().filter(|e| e["type"] == "tool_call").count(),
            calls,
            "{agent}"
        );
        assert_eq!(
            events.iter().any(|e| e["type"] == "trapped"),
            trapped,
            "{agent}"
        );
    }
    nothing_left(tmp.path());
}

#[test]
fn a_case_cannot_set_the_state_of_a_real_service() {
    let (_tmp, suite) = example("file-desk");
    let case = suite.join("cases/fix-readme-typo.yaml");
    let text = std::fs::read_to_string(&case).unwrap();
    std::fs::write(&case, format!("{text}initial_state:\n  files: {{}}\n")).unwrap();
    let o = run(&["check", s(&suite)]);
    assert_eq!(o.code, 2, "{}", o.stderr);
    assert!(o.stderr.contains("fix-readme-typo.yaml:"), "{}", o.stderr);
    assert!(o.stderr.contains("is a real service"), "{}", o.stderr);
}

#[test]
#[cfg_attr(
    not(all(have_py_mcp, have_bwrap)),
    ignore = "needs the Python package mcp and a working bubblewrap (apt-get install bubblewrap)"
)]
fn a_services_server_runs_in_the_sandbox_and_writes_only_its_folder() {
    let tmp = tempfile::tempdir().unwrap();
    let world = json!({
        "name": "box",
        "service": {
            "kind": "command",
            "snapshot": "printf '{\"files\": \"%s\"}' \"$(ls | tr '\\n' ' ')\"",
            "server": python_server("flaky_mcp_server.py"),
        },
        "tools": [{"name": "touch", "kind": "write"}],
    });
    let escape = tmp.path().join("escape.txt");
    let case = json!({
        "case_id": "c",
        "user_input": "write two files",
        "reference_trajectory": [
            {"tool": "touch", "args": {"path": "inside.txt"}},
            {"tool": "touch", "args": {"path": escape}},
            {"answer": "done"},
        ],
    });
    let suite = one_world_suite(tmp.path(), &world, &[&case]);
    let (_, results, stderr) = run_in(tmp.path(), &["run", s(&suite), "--isolation", "bubblewrap"]);
    let t = &trials_of(&suite, &results)[0];
    let results: Vec<&Value> = t["trajectory"]["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["type"] == "tool_call")
        .map(|e| &e["result"]["result"])
        .collect();
    assert_eq!(results[0], "written", "{stderr}\n{t}");
    assert!(results[1].as_str().unwrap().starts_with("refused"), "{t}");
    assert!(!escape.exists(), "the server wrote outside its folder");
    assert_eq!(t["final_state"]["files"], "inside.txt ");
    nothing_left(tmp.path());
}

#[test]
#[cfg_attr(
    not(have_py_mcp),
    ignore = "needs the Python package mcp (pip install mcp)"
)]
fn a_real_database_is_judged_by_its_tables() {
    let tmp = tempfile::tempdir().unwrap();
    let world = json!({
        "name": "shop",
        "service": {"kind": "sqlite", "fixture": "../fixtures/shop.sql",
                    "server": format!("{} --db-path {{db}}", python_server("sqlite_mcp_server.py"))},
        "tools": [{"name": "read_query", "kind": "read"}, {"name": "write_query", "kind": "write"}],
    });
    let case = json!({
        "case_id": "ship-order-2",
        "user_input": "Mark order 2 as shipped.",
        "expected_outcome": {
            "/tables/orders": {"$equals": [
                {"id": 1, "item": "ink", "status": "paid"},
                {"id": 2, "item": "pen", "status": "shipped"}
            ]}
        },
        "checkpoints": [{"name": "order 2 is the one written", "after": {"first_write": true},
                         "expect": {"/tables/orders/0/status": "paid"}, "trap": true}],
        "reference_trajectory": [
            {"tool": "read_query", "args": {"query": "SELECT * FROM orders WHERE id = 2"}},
            {"tool": "write_query", "args": {"query": "UPDATE orders SET status = 'shipped' WHERE id = 2"}},
            {"answer": "Order 2 is shipped."}
        ],
        "scripts": {"every-order": [
            {"tool": "write_query", "args": {"query": "UPDATE orders SET status = 'shipped'"}},
            {"tool": "read_query", "args": {"query": "SELECT * FROM orders"}},
            {"answer": "Shipped."}
        ]}
    });
    let suite = one_world_suite(tmp.path(), &world, &[&case]);
    std::fs::write(
        suite.join("fixtures/shop.sql"),
        "CREATE TABLE orders (id INTEGER PRIMARY KEY, item TEXT, status TEXT);\n\
         INSERT INTO orders VALUES (1, 'ink', 'paid'), (2, 'pen', 'paid');\n",
    )
    .unwrap();
    let (code, results, stderr) = run_in(tmp.path(), &["run", s(&suite)]);
    assert_eq!(code, 0, "{stderr}");
    let t = &trials_of(&suite, &results)[0];
    assert_eq!(t["status"], "passed", "{t}");
    assert_eq!(
        t["initial_state"]["tables"]["orders"][1]["status"], "paid",
        "{t}"
    );
    let (_, results, _) = run_in(
        tmp.path(),
        &["run", s(&suite), "--agent", "script:every-order"],
    );
    let t = &trials_of(&suite, &results)[0];
    assert_eq!(t["status"], "failed");
    assert_eq!(score(t, "StateVerification").unwrap()["passed"], false);
    let events = t["trajectory"]["events"].as_array().unwrap();
    assert!(events.iter().any(|e| e["type"] == "trapped"), "{t}");
    assert_eq!(
        events.iter().filter(|e| e["type"] == "tool_call").count(),
        1
    );
    nothing_left(tmp.path());
}

#[test]
#[cfg_attr(
    not(have_npm_mcp_servers),
    ignore = "needs node and the npm MCP servers (npm ci --prefix crates/gauntlet/tests/npm)"
)]
fn a_run_stopped_midway_leaves_no_folder_and_no_server() {
    let (tmp, suite) = example("file-desk");
    let mut child = std::process::Command::new(gauntlet_bin())
        .args(["run", s(&suite), "--epochs", "200", "--quiet"])
        .env("TMPDIR", tmp.path())
        .env("GAUNTLET_MCP_FILESYSTEM", npm_filesystem())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Stop it while trials run: once a trial's folder exists.
    let trials = tmp.path().join("gauntlet-trials");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while std::fs::read_dir(&trials).map_or(true, |mut d| d.next().is_none()) {
        assert!(std::time::Instant::now() < deadline, "no trial started");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130));
    // The servers die with gauntlet; give the kernel a moment to reap them.
    std::thread::sleep(std::time::Duration::from_millis(500));
    nothing_left(tmp.path());
}
