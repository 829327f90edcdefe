//! The shared context of the CLI tests: a private copy of the example suite per test, the
//! binary with a clean environment, redaction of what varies between runs (ids, paths), the
//! Python checkers and the fake OpenAI-compatible upstream.

pub use std::path::{Path, PathBuf};

pub use assert_cmd::Command;
pub use serde_json::{Value, json};

/// The fake OpenAI-compatible upstream (`tests/python/fake_openai.py`), killed when dropped.
pub struct FakeUpstream {
    child: std::process::Child,
    /// Its base URL (`http://127.0.0.1:PORT/v1`).
    pub url: String,
}

impl FakeUpstream {
    /// Starts it, writing its port file in `dir`; `None`, saying the test skips, when python3
    /// cannot start it.
    pub fn start(dir: &Path) -> Option<FakeUpstream> {
        let started = Self::spawn(dir);
        if started.is_none() {
            eprintln!("skipped: python3 is not available to run the fake upstream");
        }
        started
    }

    fn spawn(dir: &Path) -> Option<FakeUpstream> {
        let port_file = dir.join("fake.port");
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/fake_openai.py");
        let child = std::process::Command::new("python3")
            .arg(script)
            .arg(&port_file)
            .spawn()
            .ok()?;
        for _ in 0..600 {
            if let Ok(p) = std::fs::read_to_string(&port_file)
                && !p.is_empty()
            {
                return Some(FakeUpstream {
                    child,
                    url: format!("http://127.0.0.1:{p}/v1"),
                });
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        None
    }
}

impl Drop for FakeUpstream {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let name = entry.file_name();
        if name == ".gauntlet" {
            continue;
        }
        let target = to.join(&name);
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// A private copy of the example suite.
pub fn example() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let suite = dir.path().join("incident-desk");
    copy_dir(&repo().join("examples/incident-desk"), &suite);
    (dir, suite)
}

pub fn gauntlet() -> Command {
    let mut c = Command::cargo_bin("gauntlet").unwrap();
    c.env("NO_COLOR", "1").env_remove("COLUMNS");
    c
}

pub struct Output {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

pub fn run(args: &[&str]) -> Output {
    let out = gauntlet().args(args).output().unwrap();
    Output {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

pub fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

pub fn failed_gates(results: &Value) -> Vec<String> {
    results["gates"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|g| g["passed"] == false)
        .map(|g| g["name"].as_str().unwrap().to_owned())
        .collect()
}

/// Breaks one file of a fresh copy; the run must exit 2 naming file:line:col, and write nothing.
pub fn broken(file: &str, from: &str, to: &str) -> (Output, PathBuf, tempfile::TempDir) {
    let cx = TestContext::new();
    cx.edit(file, from, to);
    let TestContext { tmp, suite } = cx;
    let o = run(&["run", s(&suite)]);
    assert_eq!(o.code, 2, "{}\n{}", o.stdout, o.stderr);
    assert!(
        !suite.join(".gauntlet").exists(),
        "a failed run wrote files"
    );
    let c = run(&["check", s(&suite)]);
    assert_eq!(c.code, 2);
    assert_eq!(c.stderr, o.stderr, "check and run report the same problems");
    (o, suite, tmp)
}

pub fn assert_located(stderr: &str, file: &str, line: usize, col: usize, needle: &str) {
    let want = format!("{file}:{line}:{col}: ");
    let hit = stderr.lines().find(|l| l.contains(&want));
    let hit = hit.unwrap_or_else(|| panic!("no `{want}` in:\n{stderr}"));
    assert!(hit.contains(needle), "`{needle}` not in `{hit}`");
}

/// What users read, with run ids and temporary paths redacted.
pub fn redact(text: &str, suite: &Path, run_id: Option<&str>) -> String {
    let mut t = text.replace(s(suite), "[SUITE]");
    if let Some(id) = run_id {
        t = t.replace(id, "[RUN_ID]");
    }
    t
}

/// Starts `gauntlet serve SUITE --case CASE --http 127.0.0.1:0`: the child (its standard error
/// piped), the URL and the bearer token it printed.
pub fn serve_http(suite: &Path, case: &str) -> (std::process::Child, String, String) {
    use std::io::BufRead;
    let mut child = std::process::Command::new(gauntlet_bin())
        .args(["serve", s(suite), "--case", case, "--http", "127.0.0.1:0"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let endpoint: Value = serde_json::from_str(&line).unwrap();
    let field = |k: &str| endpoint[k].as_str().unwrap().to_owned();
    (child, field("url"), field("token"))
}

/// Talks MCP over stdio to `gauntlet serve` for one case: sends `requests` (a call of `None`
/// id is a notification) and returns every message the server sent, until the last request's
/// answer, and what it wrote on standard error once the session ended (the verdict, then the
/// trial record as one JSON line).
pub fn mcp_session(suite: &Path, case: &str, requests: &[Value]) -> (Vec<Value>, String) {
    use std::io::{BufRead, Write};
    let mut child = std::process::Command::new(gauntlet_bin())
        .args(["serve", s(suite), "--case", case, "--stdio"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}});
    writeln!(stdin, "{init}").unwrap();
    let mut seen = Vec::new();
    for line in lines.by_ref() {
        let v: Value = serde_json::from_str(&line.unwrap()).unwrap();
        let done = v["id"] == 0;
        seen.push(v);
        if done {
            break;
        }
    }
    writeln!(
        stdin,
        "{}",
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"})
    )
    .unwrap();
    for r in requests {
        writeln!(stdin, "{r}").unwrap();
        for line in lines.by_ref() {
            let v: Value = serde_json::from_str(&line.unwrap()).unwrap();
            let done = v["id"] == r["id"];
            seen.push(v);
            if done {
                break;
            }
        }
    }
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    (seen, String::from_utf8_lossy(&out.stderr).into_owned())
}

/// Runs a Python checker; `None` (and a note) when its tools are not installed.
pub fn python_check(script: &str, args: &[&str]) -> Option<Value> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/python")
        .join(script);
    let out = std::process::Command::new("python3")
        .arg(path)
        .args(args)
        .output()
        .ok()?;
    match out.status.code() {
        Some(0) => Some(serde_json::from_slice(&out.stdout).unwrap()),
        Some(3) => {
            eprintln!("skipped: {}", String::from_utf8_lossy(&out.stderr).trim());
            None
        }
        _ => panic!("{script} failed: {}", String::from_utf8_lossy(&out.stderr)),
    }
}

pub fn gauntlet_bin() -> PathBuf {
    assert_cmd::cargo::cargo_bin("gauntlet")
}

/// `PATH` with the built `gauntlet` first, to run commands as users paste them.
pub fn path_with_gauntlet() -> std::ffi::OsString {
    let bin = gauntlet_bin();
    let mut paths = vec![bin.parent().unwrap().to_owned()];
    paths.extend(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    ));
    std::env::join_paths(paths).unwrap()
}

pub fn python_has(module: &str) -> bool {
    let ok = std::process::Command::new("python3")
        .args(["-c", &format!("import {module}")])
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        eprintln!("skipped: the Python package `{module}` is not installed (pip install {module})");
    }
    ok
}

pub fn model_calls(trial: &Value) -> Vec<Value> {
    trial["trajectory"]["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["type"] == "model_call")
        .cloned()
        .collect()
}

/// Each trial's case, epoch and events, without what differs between two runs of the same
/// trajectory (stderr, the simulator's own timings, when each call came), sorted.
pub fn trial_shapes(trials: &[Value]) -> Vec<(String, u64, Vec<Value>)> {
    let mut v: Vec<(String, u64, Vec<Value>)> = trials
        .iter()
        .map(|t| {
            let events = t["trajectory"]["events"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|e| e["type"] != "agent_stderr")
                .map(|e| {
                    let mut e = e.clone();
                    if e["type"] == "tool_call" {
                        e.as_object_mut().unwrap().remove("latency_ms");
                    }
                    // When a call came is wall time; a replayed model call keeps its latency.
                    e.as_object_mut().unwrap().remove("at_ms");
                    e
                })
                .collect();
            (
                t["case_id"].as_str().unwrap().to_owned(),
                t["epoch"].as_u64().unwrap(),
                events,
            )
        })
        .collect();
    v.sort_by(|x, y| (&x.0, x.1).cmp(&(&y.0, y.1)));
    v
}

/// A trial record's score of this name.
pub fn score<'a>(trial: &'a Value, name: &str) -> Option<&'a Value> {
    trial["scores"]
        .as_array()?
        .iter()
        .find(|s| s["name"] == name)
}

/// A trial's events of one kind.
pub fn events_of<'a>(trial: &'a Value, kind: &str) -> Vec<&'a Value> {
    trial["trajectory"]["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["type"] == kind)
        .collect()
}

pub fn read_trials(run: &Path) -> Vec<Value> {
    std::fs::read_to_string(run.join("trials.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The example's ambiguous-checkout case with its scripted replies swapped for a persona.
pub fn persona_case(suite: &Path, persona: &str) {
    let file = suite.join("cases/desk/09-ambiguous.yaml");
    let text = std::fs::read_to_string(&file).unwrap().replace(
        "user:\n  replies:\n    - pattern: [which, what incident, incident number]\n      reply: INC-004301, the EU cards one.\n  default: I mean the checkout incident with the EU card errors, INC-004301.\n",
        &format!("user:\n  model: fake-user\n  persona: >-\n    {persona}\n"),
    );
    assert!(text.contains("persona:"), "the example case changed");
    std::fs::write(file, text).unwrap();
}

/// Runs `agent` on the lookup-status case with model-call faults added (a 429 with a 50 ms
/// retry-after on the first model call, a timeout on the second), its model behind the fake
/// upstream, or only a cassette recorded without the faults; the stored trial and the run's
/// results. `None` when python3 cannot start the fake upstream.
pub fn lookup_under_model_faults(agent: &str, from_cassette: bool) -> Option<(Value, Value)> {
    let (tmp, suite) = example();
    let upstream = FakeUpstream::start(tmp.path())?;
    let cassette = tmp.path().join("cassette.jsonl");
    let url = upstream.url.clone();
    let mut model = vec!["--gateway-upstream", url.as_str()];
    if from_cassette {
        let base = [
            "run",
            s(&suite),
            "--agent",
            agent,
            "--filter",
            "lookup-status",
        ];
        let o = run(&[
            &base[..],
            &model[..],
            &["--record", s(&cassette), "--quiet"],
        ]
        .concat());
        assert_eq!(o.code, 0, "{}", o.stderr);
        model = vec!["--replay", s(&cassette)];
    }
    let file = suite.join("cases/desk/02-lookup-status.yaml");
    let text = std::fs::read_to_string(&file).unwrap();
    std::fs::write(
        file,
        format!(
            "{text}faults:\n  - {{model: true, calls: [1], kind: rate_limited, retry_after_s: 0.05}}\n  - {{model: true, calls: [2], kind: timeout}}\n"
        ),
    )
    .unwrap();
    if from_cassette {
        drop(upstream);
    }
    let out = tmp.path().join("run");
    let o = run(&[
        &[
            "run",
            s(&suite),
            "--agent",
            agent,
            "--filter",
            "lookup-status",
        ][..],
        &model[..],
        &["--out", s(&out), "--quiet"],
    ]
    .concat());
    assert_eq!(o.code, 0, "{}", o.stderr);
    let trial = read_trials(&out).remove(0);
    assert_eq!(trial["status"], "passed", "{}", trial["scores"]);
    let verdict = trial["scores"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "model_faults")
        .unwrap_or_else(|| panic!("no model_faults score: {trial}"));
    assert_eq!(verdict["passed"], true, "{verdict}");
    let faults: Vec<String> = model_calls(&trial)
        .iter()
        .map(|c| c["fault"].as_str().unwrap_or("ok").to_owned())
        .collect();
    assert_eq!(faults, ["rate_limited", "timeout", "ok", "ok"]);
    Some((trial, stored_results(&out)))
}

/// A finished run's full results as scripts read them from its folder: `results.json` with
/// its `trials` the lines of `summaries.jsonl` beside it (the file itself, or a run folder).
pub fn stored_results(path: &Path) -> Value {
    let file = if path.is_dir() {
        path.join("results.json")
    } else {
        path.to_owned()
    };
    let mut v: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert!(
        v.get("trials").is_none(),
        "results.json lists no trials: {}",
        file.display()
    );
    let lines = std::fs::read_to_string(file.with_file_name("summaries.jsonl")).unwrap();
    v["trials"] = lines
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect::<Vec<Value>>()
        .into();
    v
}

/// Exports a run as OTLP/JSON and checks it with OpenTelemetry's own Python classes against the
/// run's trials; the checker's counts.
pub fn exported_and_checked(run_dir: &Path) -> Value {
    let traces = run_dir.with_extension("otlp.json");
    let o = run(&["export", s(run_dir), "--out", s(&traces)]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let out = std::process::Command::new("python3")
        .arg(repo().join("crates/gauntlet/tests/python/check_otlp.py"))
        .arg(&traces)
        .arg(run_dir)
        .output()
        .unwrap();
    let report: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|_| {
        panic!("{}", String::from_utf8_lossy(&out.stderr));
    });
    assert_eq!(report["problems"], json!([]), "{report}");
    report["counts"].clone()
}

/// Starts a gauntlet server (`serve --http`, `shadow --http`, `online`), its stderr to a file: the
/// process and the `{url, token}` line it prints first.
pub fn spawn_server(mut cmd: std::process::Command, stderr: &Path) -> (std::process::Child, Value) {
    let mut child = cmd
        .stdout(std::process::Stdio::piped())
        .stderr(std::fs::File::create(stderr).unwrap())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(child.stdout.take().unwrap()),
        &mut line,
    )
    .unwrap();
    let v: Value = serde_json::from_str(&line).unwrap_or_else(|e| {
        panic!(
            "no JSON line ({e}): {line}\n{}",
            std::fs::read_to_string(stderr).unwrap_or_default()
        )
    });
    (child, v)
}

/// One test's world, as uv's tests have one: a private copy of the example suite, the binary
/// with a clean environment, and the filters that make what users read the same from run to
/// run (paths, run ids, times, durations), for [`gauntlet_snapshot!`](crate::gauntlet_snapshot).
pub struct TestContext {
    /// The temporary folder everything lives in (removed when the context is dropped).
    pub tmp: tempfile::TempDir,
    /// The suite's private copy.
    pub suite: PathBuf,
}

impl TestContext {
    /// A fresh copy of `examples/incident-desk`.
    pub fn new() -> TestContext {
        let (tmp, suite) = example();
        TestContext { tmp, suite }
    }

    /// A fresh copy of one of the test suites (`tests/suites/NAME`).
    pub fn suite(name: &str) -> TestContext {
        let tmp = tempfile::tempdir().unwrap();
        let suite = tmp.path().join(name);
        copy_dir(
            &Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests/suites")
                .join(name),
            &suite,
        );
        TestContext { tmp, suite }
    }

    /// A path inside the context's folder.
    pub fn path(&self, name: &str) -> PathBuf {
        self.tmp.path().join(name)
    }

    /// Changes a file of the suite: `from` (which must be there) becomes `to`.
    pub fn edit(&self, file: &str, from: &str, to: &str) {
        let path = self.suite.join(file);
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.contains(from), "`{from}` not in {file}");
        std::fs::write(&path, text.replacen(from, to, 1)).unwrap();
    }

    /// Runs the binary; `[SUITE]` in an argument is the suite's path, `[TMP]` the folder's.
    pub fn run(&self, args: &[&str]) -> Output {
        let (suite, tmp) = (s(&self.suite), s(self.tmp.path()));
        let args: Vec<String> = args
            .iter()
            .map(|a| a.replace("[SUITE]", suite).replace("[TMP]", tmp))
            .collect();
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        run(&args)
    }

    /// What users read, comparable from run to run: the suite's and the folder's paths, run
    /// ids, RFC 3339 times and durations replaced by names.
    pub fn filter(&self, text: &str) -> String {
        let text = text
            .replace(s(&self.suite), "[SUITE]")
            .replace(s(self.tmp.path()), "[TMP]");
        let rules: [(&str, &str); 4] = [
            (r"\b\d{8}T\d{6}Z-[0-9a-f]{6}\b", "[RUN_ID]"),
            (
                r"\b\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})",
                "[TIME]",
            ),
            (r"\b\d+(\.\d+)?\s?(ms|s)\b", "[DURATION]"),
            (r"\b\d+(\.\d+)? trials/s\b", "[RATE]"),
        ];
        rules.iter().fold(text, |t, (pattern, name)| {
            regex::Regex::new(pattern)
                .unwrap()
                .replace_all(&t, *name)
                .into_owned()
        })
    }

    /// A run's outcome as one text: the exit code, then stdout and stderr, filtered.
    pub fn transcript(&self, o: &Output) -> String {
        format!(
            "exit code: {}\n----- stdout -----\n{}\n----- stderr -----\n{}",
            o.code,
            self.filter(&o.stdout),
            self.filter(&o.stderr)
        )
    }
}

/// Runs gauntlet in a [`TestContext`] and snapshots what users read (exit code, stdout and
/// stderr, filtered); the output, back. `gauntlet_snapshot!(cx, ["check", "[SUITE]"])`, or with
/// a snapshot name first.
#[macro_export]
macro_rules! gauntlet_snapshot {
    ($cx:expr, $args:expr) => {{
        let o = $cx.run(&$args);
        insta::assert_snapshot!($cx.transcript(&o));
        o
    }};
    ($name:expr, $cx:expr, $args:expr) => {{
        let o = $cx.run(&$args);
        insta::assert_snapshot!($name, $cx.transcript(&o));
        o
    }};
}

/// Script payloads (each sets `window.__pwned` if it ever runs) and an article-layout trajectory
/// carrying them in every text a report or the viewer shows: the goal, the thought, the tool's
/// name, arguments and observation, the final answer and the final state.
pub fn evil_trajectory() -> ([&'static str; 6], Value) {
    let payloads = [
        "<script>window.__pwned=1</script>",
        "<img src=x onerror=\"window.__pwned=2\">",
        "\"><svg onload=\"window.__pwned=3\">",
        "<a href=\"javascript:window.__pwned=4\">click</a>",
        "</pre></details></section><script>window.__pwned=5</script>",
        "</script><script>window.__pwned=6</script><!--",
    ];
    let all = payloads.join(" ");
    let trajectory = serde_json::json!({
        "task_id": "TC-SQL-FIX-001",
        "goal": all,
        "final_answer": all,
        "final_state": {"max_connections": all, "status": "healthy"},
        "steps": [{
            "step_number": 1,
            "thought": all,
            "tool_calls": [{"tool_name": format!("read_log_file{}", payloads[1]), "arguments": {"file_path": all}, "observation": all}]
        }]
    });
    (payloads, trajectory)
}

/// Metrics (or intervals) without those that read the wall clock (latencies, `_ms`, durations):
/// what two runs of the same plan share.
pub fn timeless(metrics: &Value) -> Value {
    metrics
        .as_object()
        .unwrap()
        .iter()
        .filter(|(k, _)| !k.contains("latency") && !k.contains("_ms") && !k.contains("duration"))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}
