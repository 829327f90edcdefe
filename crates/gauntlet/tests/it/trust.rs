//! Trust on first contact: a broken run never reads green, commands work as printed, and bad
//! input is refused. Each test is named after what it pins and feeds the input that once failed.

use crate::common::*;

/// The example suite with its `gates:` (and rubric) removed, as `import` and `shadow harvest`
/// once wrote suites.
fn without_gates() -> (tempfile::TempDir, PathBuf) {
    let cx = without_gates_cx();
    (cx.tmp, cx.suite)
}

/// The example suite with its `gates:` (and rubric) removed, in a test context.
fn without_gates_cx() -> TestContext {
    let cx = TestContext::new();
    let config = cx.suite.join("gauntlet.yaml");
    let text = std::fs::read_to_string(&config).unwrap();
    let cut = text.find("rubric: release-gates").unwrap();
    std::fs::write(&config, &text[..cut]).unwrap();
    cx
}

/// Regression: `run SUITE --agent cmd:/nonexistent/agent` on a suite without gates printed
/// `verdict: PASSED` and exited 0 with every trial `error`.
#[test]
fn a_dead_agent_never_passes_a_suite_without_gates() {
    let cx = without_gates_cx();
    let o = crate::gauntlet_snapshot!(
        cx,
        [
            "run",
            "[SUITE]",
            "--agent",
            "cmd:/nonexistent/agent",
            "--isolation",
            "none",
            "--out",
            "[TMP]/run",
        ]
    );
    assert_eq!(o.code, 3, "{}\n{}", o.stdout, o.stderr);
    assert!(!o.stdout.contains("PASSED"), "{}", o.stdout);
    let results: Value =
        serde_json::from_str(&std::fs::read_to_string(cx.path("run/results.json")).unwrap())
            .unwrap();
    assert_eq!(failed_gates(&results), ["no harness errors"]);
}

/// Some trials in error fail the run (exit 1) unless `max_error_rate` tolerates them.
#[test]
fn errored_trials_fail_the_run_unless_the_suite_tolerates_them() {
    let (tmp, suite) = without_gates();
    // An agent that dies on one case and plays the reference on the others is not at hand;
    // a filter on two cases with one errored through a broken script does the same.
    let agent = "cmd:case \"$GAUNTLET_CASE_ID\" in close-mitigated) exit 9;; *) echo '{\"final_answer\": \"done\"}';; esac";
    let base = [
        "run",
        s(&suite),
        "--agent",
        agent,
        "--isolation",
        "none",
        "--filter",
        "o",
        "--json",
    ];
    let o = run(&base);
    let results: Value =
        serde_json::from_str(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", o.stderr));
    let errors = results["trials"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["status"] == "error")
        .count();
    let total = results["trials"].as_array().unwrap().len();
    assert!(errors == 1 && total > 2, "{errors} of {total}");
    assert_eq!(o.code, 1, "{}", o.stderr);
    assert!(failed_gates(&results).contains(&"no harness errors".to_owned()));

    let config = suite.join("gauntlet.yaml");
    let mut text = std::fs::read_to_string(&config).unwrap();
    text.push_str("max_error_rate: 0.5\n");
    std::fs::write(&config, text).unwrap();
    let o = run(&base);
    let results: Value = serde_json::from_str(&o.stdout).unwrap();
    assert!(
        !failed_gates(&results).iter().any(|g| g.contains("harness")),
        "{:?}",
        failed_gates(&results)
    );
    let _ = tmp;
}

/// Regression: a custom JS evaluator with a syntax error passed `check`, then failed 23 of 23
/// trials at run time, and the run read PASSED.
#[test]
fn a_broken_javascript_evaluator_is_found_by_check_and_never_passes_a_run() {
    let cx = without_gates_cx();
    std::fs::create_dir(cx.suite.join("ev")).unwrap();
    std::fs::write(
        cx.suite.join("ev/bad.js"),
        "function evaluate(t) { return {score: 1, passed: true \n",
    )
    .unwrap();
    let config = cx.suite.join("gauntlet.yaml");
    let mut text = std::fs::read_to_string(&config).unwrap();
    text.push_str("evaluators:\n  - name: bad\n    script: ev/bad.js\n");
    std::fs::write(&config, &text).unwrap();
    let c = crate::gauntlet_snapshot!("syntax_error", cx, ["check", "[SUITE]"]);
    assert_eq!(c.code, 2, "{}", c.stderr);
    // One that loads but breaks on every trial: `check` finds it when it plays the
    // references (each is a harness error, named at its case); a run's trials are harness
    // errors, and exit 3.
    std::fs::write(
        cx.suite.join("ev/bad.js"),
        "function evaluate(t) { throw new Error('boom') }\n",
    )
    .unwrap();
    let c = cx.run(&["check", "[SUITE]"]);
    assert_eq!(c.code, 2, "{}", c.stderr);
    assert!(
        c.stderr
            .contains("its reference_trajectory does not pass its own checks (error)")
            && c.stderr.contains("boom"),
        "{}",
        c.stderr
    );
    assert_eq!(cx.run(&["check", "[SUITE]", "--no-play"]).code, 0);
    let o = crate::gauntlet_snapshot!("breaks_on_every_trial", cx, ["run", "[SUITE]"]);
    assert_eq!(o.code, 3, "{}\n{}", o.stdout, o.stderr);
    assert!(!o.stdout.contains("PASSED"));
    // A missing function is found too.
    std::fs::write(
        &config,
        text.replace(
            "script: ev/bad.js",
            "script: ev/bad.js\n    function: judge",
        ),
    )
    .unwrap();
    let c = crate::gauntlet_snapshot!("missing_function", cx, ["check", "[SUITE]"]);
    assert_eq!(c.code, 2, "{}", c.stderr);
}

/// Regression: README step 4, `gauntlet gate RUN --gates examples/incident-desk/gauntlet.yaml`,
/// exited 2 ("unknown field `name`").
#[test]
fn gate_reads_the_gates_of_a_suites_configuration() {
    let (tmp, suite) = example();
    let out = tmp.path().join("run");
    assert_eq!(run(&["run", s(&suite), "--out", s(&out), "-q"]).code, 0);
    let config = suite.join("gauntlet.yaml");
    let o = run(&["gate", s(&out), "--gates", s(&config)]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert!(o.stdout.contains("verdict: PASSED"), "{}", o.stdout);
    let text = std::fs::read_to_string(&config).unwrap();
    std::fs::write(
        &config,
        text.replace("task_success_rate >= 0.85", "task_success_rate >= 1.01"),
    )
    .unwrap();
    let o = run(&["gate", s(&out), "--gates", s(&config)]);
    assert_eq!(o.code, 1, "{}", o.stderr);
    assert!(o.stdout.contains("FAIL  task success"), "{}", o.stdout);
}

/// Regression: `run … | head -1`, `report --format json | head`, `schema | head` and
/// `calibrate | head` panicked ("failed printing to stdout: Broken pipe", exit 101). Each runs
/// with its stdout a pipe whose reader is already gone, so every print meets the closed pipe.
#[test]
fn a_closed_pipe_ends_quietly() {
    let (tmp, suite) = example();
    let out = tmp.path().join("run");
    assert_eq!(run(&["run", s(&suite), "--out", s(&out), "-q"]).code, 0);
    for args in [
        vec!["run", s(&suite)],
        vec!["report", s(&out), "--format", "json"],
        vec!["report", s(&out), "--format", "terminal"],
        vec!["schema"],
        vec!["runs", s(&suite)],
        vec!["check", s(&suite)],
    ] {
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let o = std::process::Command::new(gauntlet_bin())
            .args(&args)
            .env("NO_COLOR", "1")
            .stdout(writer)
            .stderr(std::process::Stdio::piped())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&o.stderr);
        // Quietly: the status of a write to a closed pipe (141), or the command's own when
        // nothing it printed failed loudly; never a panic (101).
        assert!(
            matches!(o.status.code(), Some(0 | 141)),
            "{args:?}: {:?} {stderr}",
            o.status
        );
        assert!(stderr.is_empty(), "{args:?}: {stderr}");
    }
}

/// `gauntlet init DIR` writes a suite that checks (exit 0) and runs green (exit 0), as the
/// contract says; a second init into the same folder overwrites nothing.
#[test]
fn init_writes_a_suite_that_checks_and_runs() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("my-suite");
    let o = run(&["init", s(&dir)]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let c = run(&["check", s(&dir)]);
    assert_eq!(c.code, 0, "{}", c.stderr);
    let r = run(&["run", s(&dir)]);
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    assert!(r.stdout.contains("trials 2  passed 2"), "{}", r.stdout);
    // A newcomer's first edit: a flawed agent fails it.
    let r = run(&["run", s(&dir), "--agent", "script:skip-confirmation", "-q"]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    let again = run(&["init", s(&dir)]);
    assert_eq!(again.code, 2);
    assert!(again.stderr.contains("already exists"), "{}", again.stderr);
}

/// Every command takes `-q`; with it, a command that succeeds prints nothing but what was
/// asked for as data.
#[test]
fn every_command_takes_quiet() {
    let (tmp, suite) = example();
    let a = tmp.path().join("a");
    let b = tmp.path().join("b");
    assert_eq!(run(&["run", s(&suite), "--out", s(&a), "-q"]).code, 0);
    assert_eq!(run(&["-q", "run", s(&suite), "--out", s(&b)]).code, 0);
    let config = suite.join("gauntlet.yaml");
    let merged = tmp.path().join("merged");
    let parts = [tmp.path().join("p1"), tmp.path().join("p2")];
    for (i, part) in parts.iter().enumerate() {
        let shard = format!("{}/2", i + 1);
        let o = run(&[
            "run",
            s(&suite),
            "--shard",
            &shard,
            "--run-id",
            "r",
            "--out",
            s(part),
            "-q",
        ]);
        assert_eq!(o.code, 0, "{}", o.stderr);
        assert!(
            o.stdout.is_empty() && o.stderr.is_empty(),
            "{}{}",
            o.stdout,
            o.stderr
        );
    }
    for args in [
        vec!["check", s(&suite), "-q"],
        vec!["gate", s(&a), "-q"],
        vec!["gate", s(&a), "--gates", s(&config), "-q"],
        vec!["compare", s(&a), s(&b), "-q"],
        vec![
            "report",
            s(&a),
            "--format",
            "md",
            "--out",
            s(&tmp.path().join("s.md")),
            "-q",
        ],
        vec!["drift", "--baseline", s(&a), "--current", s(&b), "-q"],
        vec!["runs", s(&suite), "-q"],
        vec![
            "merge",
            s(&parts[0]),
            s(&parts[1]),
            "--out",
            s(&merged),
            "-q",
        ],
        vec!["init", s(&tmp.path().join("new")), "-q"],
        vec![
            "export",
            s(&a),
            "--out",
            s(&tmp.path().join("t.json")),
            "-q",
        ],
    ] {
        let o = run(&args);
        assert!(o.code <= 1, "{args:?}: {}", o.stderr);
        assert!(o.stdout.is_empty(), "{args:?} printed: {}", o.stdout);
        assert!(o.stderr.is_empty(), "{args:?} said: {}", o.stderr);
    }
}

/// `check --json` and `runs --json` give objects scripts can read.
#[test]
fn check_and_runs_speak_json() {
    let (tmp, suite) = example();
    let c = run(&["check", s(&suite), "--json"]);
    assert_eq!(c.code, 0, "{}", c.stderr);
    let v: Value = serde_json::from_str(&c.stdout).unwrap();
    assert_eq!(v["ok"], true);
    assert_eq!(v["cases"], 23);
    let config = suite.join("gauntlet.yaml");
    let text = std::fs::read_to_string(&config).unwrap();
    std::fs::write(&config, text.replace("seed: 42", "seed: forty-two")).unwrap();
    let c = run(&["check", s(&suite), "--json"]);
    assert_eq!(c.code, 2);
    let v: Value = serde_json::from_str(&c.stdout).unwrap();
    assert_eq!(v["ok"], false);
    let p = &v["problems"][0];
    assert!(
        p["file"].as_str().unwrap().ends_with("gauntlet.yaml"),
        "{v}"
    );
    assert!(p["line"].as_u64().unwrap() > 0, "{v}");
    assert!(p["message"].as_str().unwrap().contains("seed"), "{v}");
    std::fs::write(&config, text).unwrap();
    let out = tmp.path().join("run");
    assert_eq!(run(&["run", s(&suite), "--out", s(&out), "-q"]).code, 0);
    let r = run(&["runs", s(&suite), "--json"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let v: Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(v.as_array().unwrap().len(), 1);
    assert_eq!(v[0]["verdict"], "passed");
    assert_eq!(v[0]["trials"], 23);
}

/// What `check` once let through, each found at its line.
#[test]
fn check_catches_what_it_once_let_through() {
    let cases: &[(&str, &str, &str, &str)] = &[
        // An invalid JSON Pointer escape in expected_outcome.
        (
            "cases/desk/04-reassign.yaml",
            "/incidents/INC-004218/assignee:",
            "/incidents/INC~2004218/assignee:",
            "not a valid JSON Pointer",
        ),
        // An unknown primary_metric.
        (
            "cases/desk/01-close-mitigated.yaml",
            "difficulty: easy",
            "difficulty: easy\nprimary_metric: StateVerificaton",
            "unknown primary_metric `StateVerificaton`",
        ),
        // An unknown default_world.
        (
            "gauntlet.yaml",
            "epochs: 1",
            "epochs: 1\ndefault_world: incident-deks",
            "unknown default_world `incident-deks`",
        ),
        // Two gates with one name.
        (
            "gauntlet.yaml",
            "  - name: tool-call budget",
            "  - name: task success",
            "two gates are named `task success`",
        ),
        // A zero-width space in a case id.
        (
            "cases/desk/02-lookup-status.yaml",
            "case_id: lookup-status",
            "case_id: \"lookup\u{200b}-status\"",
            "invisible character U+200B",
        ),
        // A bidi control in a case id.
        (
            "cases/desk/02-lookup-status.yaml",
            "case_id: lookup-status",
            "case_id: \"lookup\u{202e}-status\"",
            "invisible character U+202E",
        ),
        // An NFD twin.
        (
            "cases/desk/02-lookup-status.yaml",
            "case_id: lookup-status",
            "case_id: \"lookup-statu\u{0073}\u{0301}\"",
            "not in Unicode NFC form",
        ),
    ];
    for (file, from, to, expect) in cases {
        let (o, _suite, _tmp) = broken(file, from, to);
        assert!(
            o.stderr.contains(expect) && o.stderr.contains(file.rsplit('/').next().unwrap()),
            "{file}: {to}: {}",
            o.stderr
        );
    }
}

/// Messages never name Rust types (`untagged enum ToolRule`, `RubricConfig`).
#[test]
fn messages_name_no_rust_types() {
    let (o, _suite, _tmp) = broken("gauntlet.yaml", "rubric: release-gates", "rubric: [1, 2]");
    assert!(!o.stderr.contains("RubricConfig"), "{}", o.stderr);
    let (o, _suite, _tmp) = broken(
        "worlds/incident-desk.yaml",
        "      - get: /incidents/{incident_id}",
        "      - 42",
    );
    assert!(
        !o.stderr.contains("enum") && !o.stderr.contains("ToolRule"),
        "{}",
        o.stderr
    );
}

/// Threads that keep cores busy until dropped: a loaded machine, for verdicts that must not
/// depend on load.
struct BusyCores {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    threads: Vec<std::thread::JoinHandle<u64>>,
}

impl BusyCores {
    fn spin(cores: usize) -> BusyCores {
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let threads = (0..cores)
            .map(|_| {
                let stop = stop.clone();
                std::thread::spawn(move || {
                    let mut x = 0u64;
                    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                        x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
                    }
                    x
                })
            })
            .collect();
        BusyCores { stop, threads }
    }
}

impl Drop for BusyCores {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

/// Regression: `drift` between two runs of the same scripted agent flagged `latency_ms` when
/// the machine was busy (sub-millisecond latencies, pure noise). The same comparison with a
/// floor of 0 shows the latency change is significant, so the floor is what stops it.
#[test]
fn drift_between_runs_of_one_scripted_agent_is_not_drift() {
    let (tmp, suite) = example();
    let a = tmp.path().join("a");
    let b = tmp.path().join("b");
    assert_eq!(
        run(&["run", s(&suite), "--out", s(&a), "--epochs", "8", "-q"]).code,
        0
    );
    // Busy: the second run's trials run while both cores spin.
    let busy = BusyCores::spin(2);
    let o = run(&["run", s(&suite), "--out", s(&b), "--epochs", "8", "-q"]);
    drop(busy);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let d = run(&["drift", "--baseline", s(&a), "--current", s(&b), "--json"]);
    assert_eq!(d.code, 0, "{}\n{}", d.stdout, d.stderr);
    let report: Value = serde_json::from_str(&d.stdout).unwrap();
    assert_eq!(report["drift"], false, "{report:#}");
}

/// A Python agent that reads INC-004218, retrying a failed read after each wait of its
/// argument (milliseconds, comma-separated), on the real clock.
const BACKOFF_AGENT: &str = r#"
import asyncio, json, os, sys, time
from mcp import ClientSession
from mcp.client.streamable_http import create_mcp_http_client, streamable_http_client

def failed(r):
    return bool(getattr(r, "is_error", getattr(r, "isError", False)))

async def main():
    json.load(sys.stdin)
    waits = [int(w) for w in sys.argv[1].split(",")]
    url, token = os.environ["GAUNTLET_MCP_URL"], os.environ["GAUNTLET_MCP_TOKEN"]
    client = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
    async with client, streamable_http_client(url, http_client=client, terminate_on_close=False) as (read, write, *_):
        async with ClientSession(read, write) as session:
            await session.initialize()
            for wait in [0] + waits:
                time.sleep(wait / 1000)
                got = await session.call_tool("get_incident", {"incident_id": "INC-004218"})
                if not failed(got):
                    return "INC-004218 is open."
            return "The incident service timed out; try again later."

print(asyncio.run(main()))
"#;

/// Regression: an agent that waits a constant 53 ms between three retries was judged
/// "retried safely with growing waits" in about 2 runs of 5, as the trial clock's jitter made
/// 53.0 < 53.4. Under CPU load, every trial of a constant wait fails its timeout verdict and
/// every trial of a growing one passes.
#[test]
#[cfg_attr(
    not(have_py_mcp),
    ignore = "needs the Python package mcp (pip install mcp)"
)]
fn a_backoff_verdict_does_not_depend_on_machine_load() {
    let (tmp, suite) = example();
    let case = suite.join("cases/faults/01-timeout.yaml");
    let text = std::fs::read_to_string(&case).unwrap();
    std::fs::write(&case, text.replace("calls: [1, 2]", "calls: [1, 2, 3]")).unwrap();
    let agent = tmp.path().join("backoff.py");
    std::fs::write(&agent, BACKOFF_AGENT).unwrap();
    let busy = BusyCores::spin(2);
    let verdicts = |waits: &str| -> Vec<bool> {
        let out = tmp.path().join(format!("run-{}", waits.replace(',', "-")));
        let o = gauntlet()
            .args([
                "run",
                s(&suite),
                "--filter",
                "fault-timeout",
                "--epochs",
                "5",
            ])
            .args(["--agent", &format!("cmd:python3 {} {waits}", s(&agent))])
            .args(["--isolation", "none", "--out", s(&out), "-q"])
            .output()
            .unwrap();
        assert!(
            o.status.code().is_some_and(|c| c <= 1),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
        read_trials(&out)
            .iter()
            .map(|t| {
                t["scores"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .find(|s| s["name"] == "fault_timeout")
                    .unwrap_or_else(|| panic!("no fault_timeout: {t}"))["passed"]
                    .as_bool()
                    .unwrap()
            })
            .collect()
    };
    // A constant 120 ms (the unit test `a_constant_backoff_never_reads_as_growing` pins the
    // reported 53 ms on exact timings): its tolerance, 30 ms, is above what a busy Linux
    // scheduler delays a waking thread, so the verdict cannot flip however loaded CI is.
    let constant = verdicts("120,120,120");
    let growing = verdicts("100,250,600");
    drop(busy);
    assert_eq!(constant, vec![false; 5], "a constant wait never grows");
    assert_eq!(growing, vec![true; 5], "a growing wait always does");
}

/// Regression: a real-service world whose server cannot start (git-desk without
/// `mcp-server-git`) read as a gate failure (exit 1) with "did not complete the MCP
/// handshake". The error names the command, the last lines of its stderr and what to install;
/// every trial a harness error, the run exits 3.
#[test]
fn a_world_server_that_cannot_start_says_why_and_exits_3() {
    let tmp = tempfile::tempdir().unwrap();
    let suite = tmp.path().join("git-desk");
    copy_dir(&repo().join("examples/git-desk"), &suite);
    let o = gauntlet()
        .env("GAUNTLET_MCP_GIT", "python3 -m mcp_server_gitx")
        .env("TMPDIR", tmp.path())
        .args(["run", s(&suite), "--out", s(&tmp.path().join("run"))])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(3), "{stdout}\n{stderr}");
    assert!(!stdout.contains("PASSED"), "{stdout}");
    for want in [
        "no trial could run",
        "the MCP server `${GAUNTLET_MCP_GIT:-python3 -m mcp_server_git} --repository",
        "the last lines of its stderr",
        "No module named mcp_server_gitx",
        "pip install mcp-server-gitx",
    ] {
        assert!(stderr.contains(want), "no `{want}` in: {stderr}");
    }
}
