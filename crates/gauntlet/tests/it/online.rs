//! `gauntlet online`: traces from real producers (OpenTelemetry's SDK with the GenAI OpenAI
//! instrumentation, OpenInference's OpenAI instrumentation, both over the OTLP/HTTP exporter)
//! judged, anonymised and kept in a lake that DuckDB reads.

use std::time::{Duration, Instant};

use crate::common::*;

const CANARY: &str = "CANARY-5d1e9b";
const EMAIL: &str = "ann.lee@example.com";

struct Receiver {
    child: std::process::Child,
    url: String,
    token: String,
    stderr: PathBuf,
}

impl Receiver {
    fn start(dir: &Path, lake: &Path, policy: &Path) -> Receiver {
        Receiver::start_with(dir, lake, &["--policy", s(policy)])
    }

    fn start_with(dir: &Path, lake: &Path, args: &[&str]) -> Receiver {
        let stderr = dir.join(format!(
            "{}.stderr",
            lake.file_name().unwrap().to_string_lossy()
        ));
        let mut cmd = std::process::Command::new(gauntlet_bin());
        cmd.args(["online", "--listen", "127.0.0.1:0", "--lake", s(lake)])
            .args(["--flush-every", "0.2"])
            .args(args);
        let (child, v) = spawn_server(cmd, &stderr);
        Receiver {
            child,
            url: v["url"].as_str().unwrap().to_owned(),
            token: v["token"].as_str().unwrap().to_owned(),
            stderr,
        }
    }

    fn client(&self, args: &[&str]) -> Value {
        python_check("online_client.py", args).expect("the client runs")
    }

    fn status(&self) -> Value {
        self.client(&["status", &self.url, &self.token])
    }

    /// Waits until `n` traces are in the lake.
    fn wait_written(&self, n: u64) -> Value {
        let started = Instant::now();
        loop {
            let st = self.status();
            if st["traces_written"].as_u64() >= Some(n) {
                return st;
            }
            assert!(
                started.elapsed() < Duration::from_secs(60),
                "{n} traces not written: {st}\n{}",
                std::fs::read_to_string(&self.stderr).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// SIGTERM: the exit code, how long it took, its stderr.
    fn stop(mut self) -> (i32, Duration, String) {
        let started = Instant::now();
        std::process::Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .unwrap();
        let code = loop {
            if let Some(st) = self.child.try_wait().unwrap() {
                break st.code().unwrap_or(-1);
            }
            assert!(started.elapsed() < Duration::from_secs(30), "no stop");
            std::thread::sleep(Duration::from_millis(50));
        };
        let stderr = std::fs::read_to_string(&self.stderr).unwrap_or_default();
        (code, started.elapsed(), stderr)
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        if self.child.try_wait().ok().flatten().is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// The policy: the order tool's schema and kind, a canary, the agent's budget.
fn policy(dir: &Path) -> PathBuf {
    let p = dir.join("policy.yaml");
    std::fs::write(
        &p,
        format!(
            "tools:\n  - name: get_order\n    kind: read\n    parameters:\n      type: object\n      properties: {{order_id: {{type: string, pattern: '^A-'}}}}\n      required: [order_id]\n\
             constraints:\n  forbidden_tools: [refund]\n  max_tool_calls: 5\n\
             canaries: [{CANARY}]\nretention_days: 30\nidle_timeout_s: 5\n"
        ),
    )
    .unwrap();
    p
}

/// Runs a producer against the receiver: what it produced, per trace.
fn produce(r: &Receiver, dir: &Path, convention: &str) -> Vec<Value> {
    let expected = dir.join(format!("{convention}.json"));
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/otel_producer.py");
    let out = std::process::Command::new("python3")
        .arg(script)
        .args([convention, &format!("{}/v1/traces", r.url), &r.token])
        .arg(&expected)
        .args(["--traces", "3", "--secret", &format!("{CANARY} {EMAIL}")])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{convention} producer: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_str::<Value>(&std::fs::read_to_string(expected).unwrap())
        .unwrap()
        .as_array()
        .unwrap()
        .clone()
}

#[test]
#[cfg_attr(
    not(have_py_otel_producers),
    ignore = "needs opentelemetry-sdk, opentelemetry-exporter-otlp-proto-http, opentelemetry-instrumentation-openai-v2, openinference-instrumentation-openai and duckdb (pip install them, see .ci/run)"
)]
fn real_producers_traces_are_judged_anonymised_and_kept_in_a_lake_duckdb_reads() {
    let tmp = tempfile::tempdir().unwrap();
    let lake = tmp.path().join("lake");
    // A partition older than the retention: deleted once the receiver runs.
    let old = lake.join("traces/day=2020-01-01");
    std::fs::create_dir_all(&old).unwrap();
    std::fs::write(old.join("part-0.parquet"), b"old").unwrap();
    let r = Receiver::start(tmp.path(), &lake, &policy(tmp.path()));

    let mut produced = produce(&r, tmp.path(), "genai");
    produced.extend(produce(&r, tmp.path(), "openinference"));

    // gauntlet's own export, as gzip-compressed OTLP/JSON: 23 more traces.
    let (_suite_tmp, suite) = example();
    let run_dir = tmp.path().join("run");
    let o = run(&["run", s(&suite), "--out", s(&run_dir), "--quiet"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let exported = tmp.path().join("traces.json");
    assert_eq!(run(&["export", s(&run_dir), "--out", s(&exported)]).code, 0);
    let posted = r.client(&[
        "post",
        &r.url,
        &r.token,
        s(&exported),
        "application/json",
        "gzip",
    ]);
    assert_eq!(posted["status"], 200, "{posted}");

    // Refused, and nothing else lost: a malformed payload, a wrong token, bad feedback.
    let junk = tmp.path().join("junk.bin");
    std::fs::write(&junk, b"\xff\xfe not a protobuf").unwrap();
    let bad = r.client(&["post", &r.url, &r.token, s(&junk), "application/x-protobuf"]);
    assert_eq!(bad["status"], 400, "{bad}");
    let wrong = r.client(&["post", &r.url, "nope", s(&exported), "application/json"]);
    assert_eq!(wrong["status"], 401, "{wrong}");
    let first = produced[0]["trace_id"].as_str().unwrap();
    let fb = json!({"trace_id": first, "rating": -1, "comment": format!("wrong! mail {EMAIL}")});
    let ok = r.client(&["feedback", &r.url, &r.token, &fb.to_string()]);
    assert_eq!(ok["status"], 202, "{ok}");
    let bad_fb = r.client(&["feedback", &r.url, &r.token, r#"{"trace_id": "xyz"}"#]);
    assert_eq!(bad_fb["status"], 400, "{bad_fb}");

    let total = produced.len() as u64 + 23;
    let status = r.wait_written(total);
    assert_eq!(
        status["rejected_payloads"], 2,
        "the junk payload and the bad feedback: {status}"
    );
    assert!(!old.exists(), "the old partition outlived the retention");
    let (code, took, stderr) = r.stop();
    assert_eq!(code, 0, "{stderr}");
    assert!(took < Duration::from_secs(15), "stopping took {took:?}");

    let Some(lake_view) = python_check("online_client.py", &["lake", s(&lake), CANARY, EMAIL])
    else {
        return;
    };
    // DuckDB counts what the receiver says it wrote; nothing planted reached the disk.
    assert_eq!(
        lake_view["count"].as_u64(),
        Some(total),
        "{}",
        lake_view["count"]
    );
    assert_eq!(lake_view["leaks"], json!([]), "{}", lake_view["leaks"]);
    let feedback = &lake_view["feedback"][0];
    assert_eq!(feedback["trace_id"], first);
    assert_eq!(feedback["rating"], -1.0);
    assert!(
        feedback["comment"]
            .as_str()
            .unwrap()
            .contains("[REDACTED:email_address]")
    );
    assert!(
        feedback["status"].is_string(),
        "feedback joins its trace: {feedback}"
    );
    // Each produced trace became a trajectory with the calls, arguments, results and tokens
    // that were produced.
    let rows = lake_view["rows"].as_array().unwrap();
    for p in &produced {
        let row = rows
            .iter()
            .find(|r| r["trace_id"] == p["trace_id"])
            .unwrap_or_else(|| panic!("trace {} not in the lake", p["trace_id"]));
        let calls: Vec<Value> = row["trajectory"]["events"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["type"] == "tool_call")
            .map(|c| json!({"tool": c["tool"], "id": c["id"], "arguments": c["arguments"], "result": c["result"]}))
            .collect();
        assert_eq!(calls, p["calls"].as_array().unwrap().clone(), "{row}");
        assert_eq!(row["input_tokens"], p["input_tokens"], "{row}");
        assert_eq!(row["output_tokens"], p["output_tokens"], "{row}");
        assert_eq!(row["trajectory"]["final_answer"], p["answer"], "{row}");
        // The user's words arrived, with the planted values redacted.
        let said = row["trajectory"]["events"][0]["text"].as_str().unwrap();
        assert!(
            said.contains("[REDACTED:canary]") && said.contains("Where is my order?"),
            "{said}"
        );
        // Judged against the policy: the argument schema held, within budget, nothing forbidden.
        assert_eq!(row["status"], "passed", "{row}");
        assert_eq!(row["tools"], json!(["get_order"]));
    }
    // gauntlet's own traces came through too, their verdicts re-judged without a case.
    let ours = rows
        .iter()
        .filter(|r| r["agent"] == "script:reference")
        .count();
    assert_eq!(ours, 23);

    // The flywheel: the negatively rated trace (and any that failed) become candidate cases
    // that `gauntlet check` accepts and that hold nothing planted.
    let harvested = tmp.path().join("harvested");
    let o = run(&[
        "harvest",
        s(&lake),
        "--out",
        s(&harvested),
        "--where",
        "service == \"orders-agent\"",
    ]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let cases: Vec<Value> = std::fs::read_to_string(harvested.join("cases/harvested.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let rated = cases
        .iter()
        .find(|c| c["case_id"] == format!("prod-{}", &first[..16]))
        .unwrap_or_else(|| panic!("the rated trace is not a case: {cases:?}"));
    let tags = rated["tags"].as_array().unwrap();
    for tag in [
        "harvested",
        "needs-review",
        "origin:production",
        "rated:-1.0",
    ] {
        assert!(tags.contains(&json!(tag)), "{tag} not in {tags:?}");
    }
    assert!(
        rated["description"]
            .as_str()
            .unwrap()
            .contains("[REDACTED:email_address]")
    );
    let o = run(&["check", s(&harvested)]);
    assert_eq!(o.code, 0, "{}{}", o.stdout, o.stderr);
    for f in walk(&harvested) {
        let text = std::fs::read_to_string(&f).unwrap();
        assert!(
            !text.contains(CANARY) && !text.contains(EMAIL),
            "{} leaks",
            f.display()
        );
    }
    // The counter-examples read back against the suite.
    let o = run(&[
        "score",
        s(&harvested.join("counterexamples.jsonl")),
        "--cases",
        s(&harvested),
        "--json",
    ]);
    assert!(o.code <= 1, "{}", o.stderr);
    // --all takes every trajectory (production's requests, for a candidate agent to replay),
    // and a lake compared with itself has not drifted.
    let everything = tmp.path().join("everything");
    let o = run(&["harvest", s(&lake), "--out", s(&everything), "--all"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let all_cases = std::fs::read_to_string(everything.join("cases/harvested.jsonl"))
        .unwrap()
        .lines()
        .count();
    assert!(all_cases > cases.len(), "{all_cases} vs {}", cases.len());
    let o = run(&["drift", "--baseline", s(&lake), "--current", s(&lake)]);
    assert_eq!(o.code, 0, "{}{}", o.stdout, o.stderr);
    // A filter that keeps nothing is said so.
    let none = tmp.path().join("none");
    let o = run(&[
        "harvest",
        s(&lake),
        "--out",
        s(&none),
        "--where",
        "tool_calls > 100",
    ]);
    assert_eq!(o.code, 2, "{}", o.stderr);
    assert!(o.stderr.contains("no candidates"), "{}", o.stderr);
}

/// Every file under a folder.
fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

/// With --export-to, each trace's verdicts reach an upstream OTLP endpoint (here another
/// receiver) as an `evaluate` span of the same trace.
#[test]
fn verdicts_are_sent_to_an_upstream_otlp_endpoint() {
    let tmp = tempfile::tempdir().unwrap();
    let upstream = Receiver::start_with(tmp.path(), &tmp.path().join("upstream"), &[]);
    let header = format!("authorization=Bearer {}", upstream.token);
    let endpoint = format!("{}/v1/traces", upstream.url);
    let r = Receiver::start_with(
        tmp.path(),
        &tmp.path().join("lake"),
        &["--export-to", &endpoint, "--export-header", &header],
    );
    let (_suite_tmp, suite) = example();
    let run_dir = tmp.path().join("run");
    assert_eq!(
        run(&["run", s(&suite), "--out", s(&run_dir), "--quiet"]).code,
        0
    );
    let exported = tmp.path().join("traces.json");
    assert_eq!(run(&["export", s(&run_dir), "--out", s(&exported)]).code, 0);
    let posted = r.client(&["post", &r.url, &r.token, s(&exported), "application/json"]);
    assert_eq!(posted["status"], 200, "{posted}");
    r.wait_written(23);
    let started = Instant::now();
    loop {
        let st = r.status();
        if st["verdicts_exported"] == 23 {
            break;
        }
        assert!(st["export_errors"] == 0, "{st}");
        assert!(started.elapsed() < Duration::from_secs(30), "{st}");
        std::thread::sleep(Duration::from_millis(100));
    }
    // The upstream got one evaluate span per trace, with every verdict on it.
    let st = upstream.status();
    assert_eq!(st["spans"], 23, "{st}");
    let (code, _, stderr) = r.stop();
    assert_eq!(code, 0, "{stderr}");
    let (code, _, stderr) = upstream.stop();
    assert_eq!(code, 0, "{stderr}");
    // A bad endpoint or header is refused at start.
    let o = run(&[
        "online",
        "--lake",
        s(&tmp.path().join("x")),
        "--export-to",
        "ftp://x",
    ]);
    assert_eq!(o.code, 2, "{}", o.stderr);
}

/// A lake of two seeded days of 2,000 traces each (three calls per trace, each failing with the
/// day's rate).
fn seeded_lake(dir: &Path, seed: u64, rates: [f64; 2]) {
    use gauntlet_online::lake::{LakeWriter, TraceRow};
    use rand::{RngExt, SeedableRng};
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let mut w = LakeWriter::new(dir);
    let day0 = 20_400 * 86_400_000i64;
    for (d, rate) in rates.iter().enumerate() {
        for i in 0..2000 {
            let errors = (0..3).filter(|_| rng.random::<f64>() < *rate).count() as i64;
            w.push_trace(TraceRow {
                trace_id: format!("{:032x}", (d * 10_000 + i + 1) as u128),
                received_at_ms: day0 + d as i64 * 86_400_000 + i as i64,
                started_at: None,
                service: Some("orders".into()),
                agent: "orders".into(),
                status: if errors == 0 { "passed" } else { "failed" }.into(),
                complete: true,
                duration_ms: 900.0 + rng.random::<f64>() * 300.0,
                tool_calls: 3,
                tool_errors: errors,
                model_calls: 2,
                input_tokens: 120,
                output_tokens: 15,
                cost_eur: 0.0,
                tools: vec!["get_order".into(), "refund".into(), "get_order".into()],
                failed_evaluators: vec![],
                user_input: None,
                final_answer: None,
                scores: "[]".into(),
                trajectory: "{\"events\":[]}".into(),
                feedback: "[]".into(),
                rating: None,
            });
        }
    }
    w.flush(day0).unwrap();
}

#[test]
fn drift_flags_a_tool_error_rate_from_two_to_six_percent_and_exits_1() {
    let tmp = tempfile::tempdir().unwrap();
    let lake = tmp.path().join("lake");
    seeded_lake(&lake, 11, [0.02, 0.06]);
    let (d0, d1) = ("2025-11-08", "2025-11-09");
    let window = |d: &str| format!("{}@{d}..{d}", lake.display());
    let o = run(&[
        "drift",
        "--baseline",
        &window(d0),
        "--current",
        &window(d1),
        "--json",
    ]);
    assert_eq!(o.code, 1, "{}", o.stderr);
    let report: Value = serde_json::from_str(&o.stdout).unwrap();
    assert_eq!(report["baseline_trajectories"], 2000);
    let t = report["tests"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["metric"] == "tool_error_rate")
        .unwrap();
    assert!(t["p_value"].as_f64().unwrap() < 0.01, "{t}");
    assert_eq!(t["drift"], true, "{t}");
    for field in ["test", "p_value", "p_adjusted", "effect", "drift"] {
        assert!(t.get(field).is_some(), "no {field} in {t}");
    }
    // The same rate both days: no drift, exit 0; the table names what it compared.
    let same = tmp.path().join("same");
    seeded_lake(&same, 12, [0.02, 0.02]);
    let w = |d: &str| format!("{}@{d}..{d}", same.display());
    let o = run(&["drift", "--baseline", &w(d0), "--current", &w(d1)]);
    assert_eq!(o.code, 0, "{}\n{}", o.stdout, o.stderr);
    assert!(
        o.stdout.contains("tool_error_rate") && o.stdout.contains("no drift"),
        "{}",
        o.stdout
    );
    // A window with nothing in it, or a bad day, is refused.
    let o = run(&["drift", "--baseline", &w("2020-01-01"), "--current", &w(d1)]);
    assert_eq!(o.code, 2, "{}", o.stderr);
    assert!(o.stderr.contains("no traces"), "{}", o.stderr);
    let o = run(&[
        "drift",
        "--baseline",
        &format!("{}@2025-13-01..", same.display()),
        "--current",
        &w(d1),
    ]);
    assert_eq!(o.code, 2, "{}", o.stderr);
}

/// Regression: `drift` and `harvest` panicked (exit 101) on a lake file that DuckDB had rewritten
/// (`received_at` stored as TIMESTAMP_MICROS, not what the receiver writes). They read it; a
/// column that cannot be read is refused by file and column.
#[test]
#[cfg_attr(
    not(have_py_duckdb),
    ignore = "needs the Python package duckdb (pip install duckdb)"
)]
fn drift_and_harvest_read_a_lake_file_that_duckdb_rewrote() {
    let tmp = tempfile::tempdir().unwrap();
    let lake = tmp.path().join("lake");
    seeded_lake(&lake, 11, [0.02, 0.06]);
    // A third day: failed traces with a request in them, for harvest.
    let mut w = gauntlet_online::lake::LakeWriter::new(&lake);
    let day2 = 20_402 * 86_400_000i64;
    let requests = [
        "Where is my order?",
        "Cancel my subscription.",
        "Refund my last payment.",
    ];
    for (i, request) in requests.iter().enumerate() {
        let mut row =
            gauntlet_online::lake::read_trace_file(&walk(&lake.join("traces/day=2025-11-08"))[0])
                .unwrap()
                .remove(0);
        row.trace_id = format!("{:016x}{:016x}", 0xa000 + i, 1);
        row.received_at_ms = day2 + i as i64;
        row.status = "failed".into();
        row.trajectory = json!({"events": [
            {"type": "user_message", "text": request}
        ]})
        .to_string();
        w.push_trace(row);
    }
    w.flush(day2).unwrap();
    // Each file rewritten by DuckDB, in place, with `received_at` as TIMESTAMP (microseconds).
    let rewrite = |select: &str| {
        for f in walk(&lake.join("traces")) {
            let out = f.with_extension("duckdb");
            let sql = format!(
                "COPY (SELECT {select} FROM read_parquet('{}')) TO '{}' (FORMAT parquet)",
                f.display(),
                out.display()
            );
            let o = std::process::Command::new("python3")
                .args(["-c", "import duckdb, sys; duckdb.sql(sys.argv[1])", &sql])
                .output()
                .unwrap();
            assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
            std::fs::rename(&out, &f).unwrap();
        }
    };
    rewrite("* REPLACE (CAST(received_at AS TIMESTAMP) AS received_at)");
    let (d0, d1) = ("2025-11-08", "2025-11-09");
    let window = |d: &str| format!("{}@{d}..{d}", lake.display());
    let o = run(&[
        "drift",
        "--baseline",
        &window(d0),
        "--current",
        &window(d1),
        "--json",
    ]);
    assert_eq!(o.code, 1, "{}", o.stderr);
    let report: Value = serde_json::from_str(&o.stdout).unwrap();
    assert_eq!(report["baseline_trajectories"], 2000);
    assert_eq!(report["current_trajectories"], 2000);
    let harvested = tmp.path().join("harvested");
    let o = run(&["harvest", s(&lake), "--out", s(&harvested)]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let cases = std::fs::read_to_string(harvested.join("cases/harvested.jsonl")).unwrap();
    assert_eq!(cases.lines().count(), 3, "{cases}");
    // A column no reader could take as ours: refused, naming the file and the column.
    rewrite("* REPLACE (received_at > TIMESTAMP '2000-01-01' AS received_at)");
    for args in [
        vec!["drift", "--baseline", s(&lake), "--current", s(&lake)],
        vec!["harvest", s(&lake), "--out", s(&tmp.path().join("again"))],
    ] {
        let o = run(&args);
        assert_eq!(o.code, 2, "{}", o.stderr);
        assert!(
            o.stderr.contains(".parquet") && o.stderr.contains("`received_at`"),
            "{}",
            o.stderr
        );
    }
}

/// Two receivers on one lake, fed at once as the OpenTelemetry Collector's load-balancing
/// exporter feeds them (a trace's spans to one receiver, by trace id): every accepted trace is
/// in the lake exactly once, every file is one DuckDB reads, the two writers never chose the
/// same file name, and `drift` reads the union.
#[test]
#[cfg_attr(
    not(have_py_duckdb),
    ignore = "needs the Python package duckdb (pip install duckdb)"
)]
fn two_receivers_write_one_lake_without_clashing() {
    let tmp = tempfile::tempdir().unwrap();
    let lake = tmp.path().join("lake");
    let (_suite_tmp, suite) = example();
    let run_dir = tmp.path().join("run");
    assert_eq!(
        run(&["run", s(&suite), "--out", s(&run_dir), "--quiet"]).code,
        0
    );
    let exported = tmp.path().join("traces.json");
    assert_eq!(run(&["export", s(&run_dir), "--out", s(&exported)]).code, 0);
    let (dir_a, dir_b) = (tmp.path().join("a"), tmp.path().join("b"));
    std::fs::create_dir_all(&dir_a).unwrap();
    std::fs::create_dir_all(&dir_b).unwrap();
    let a = Receiver::start_with(&dir_a, &lake, &[]);
    let b = Receiver::start_with(&dir_b, &lake, &[]);
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/two_receivers.py");
    let two_receivers = |args: &[&str]| -> Value {
        let out = std::process::Command::new("python3")
            .arg(&script)
            .args(args)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{stderr}");
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let fed = two_receivers(&[
        "feed",
        s(&exported),
        "600",
        &a.url,
        &a.token,
        &b.url,
        &b.token,
    ]);
    assert_eq!(fed["refused"], 0, "bounded load: nothing refused");
    let accepted: Vec<String> = serde_json::from_value(fed["accepted"].clone()).unwrap();
    assert_eq!(accepted.len(), 600);
    let (wa, wb) = (a.status(), b.status());
    // Both took a share (by trace id), then flushed everything on SIGTERM.
    assert!(
        wa["payloads"].as_u64() > Some(200) && wb["payloads"].as_u64() > Some(200),
        "{wa} {wb}"
    );
    for r in [a, b] {
        let (code, _, stderr) = r.stop();
        assert_eq!(code, 0, "{stderr}");
    }
    let lake_view = two_receivers(&["lake", s(&lake)]);
    assert_eq!(lake_view["rows"], 600, "every accepted trace once");
    assert_eq!(lake_view["distinct"], 600);
    let ids: Vec<String> = serde_json::from_value(lake_view["ids"].clone()).unwrap();
    assert_eq!(ids, accepted);
    // Every file is a finished Parquet file, named by its writer: two writers here.
    let files: Vec<String> = serde_json::from_value(lake_view["files"].clone()).unwrap();
    assert!(
        files
            .iter()
            .all(|f| f.starts_with("part-") && f.ends_with(".parquet")),
        "{files:?}"
    );
    let writers: std::collections::BTreeSet<&str> =
        files.iter().map(|f| f.split('-').nth(2).unwrap()).collect();
    assert_eq!(writers.len(), 2, "{files:?}");
    // gauntlet's own readers see the union too.
    let o = run(&[
        "drift",
        "--baseline",
        s(&lake),
        "--current",
        s(&lake),
        "--json",
    ]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert!(o.stdout.contains("600"), "{}", o.stdout);
}

/// The documented deployment of several receivers (`deploy/otel-collector/`) says what the
/// receiver does: the gateway routes by trace id to at least two receivers, and each sidecar
/// hands traces to `gauntlet online`'s default address with the token variable it reads.
#[test]
fn the_several_receivers_recipe_matches_the_receiver() {
    let read = |name: &str| -> Value {
        let path = repo().join("deploy/otel-collector").join(name);
        serde_saphyr::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
    };
    let gateway = read("gateway.yaml");
    let lb = &gateway["exporters"]["loadbalancing"];
    assert_eq!(lb["routing_key"], "traceID");
    assert!(
        lb["resolver"]["static"]["hostnames"]
            .as_array()
            .unwrap()
            .len()
            >= 2
    );
    assert_eq!(
        gateway["service"]["pipelines"]["traces"]["exporters"][0],
        "loadbalancing"
    );
    let sidecar = read("receiver-sidecar.yaml");
    let exporter = &sidecar["exporters"]["otlphttp"];
    let help = run(&["online", "--help"]).stdout;
    let endpoint = exporter["endpoint"].as_str().unwrap();
    let listen = endpoint.trim_start_matches("http://");
    assert!(help.contains(&format!("[default: {listen}]")), "{help}");
    assert_eq!(
        exporter["headers"]["authorization"],
        "Bearer ${env:GAUNTLET_ONLINE_TOKEN}"
    );
    assert!(help.contains("GAUNTLET_ONLINE_TOKEN"), "{help}");
}
