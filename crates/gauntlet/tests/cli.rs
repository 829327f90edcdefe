//! End-to-end: the CLI on the example suite (copied to a temporary folder per test), driven by
//! the scripted agents.

use std::path::{Path, PathBuf};

use assert_cmd::Command;
use common::FakeUpstream;
use serde_json::{Value, json};

mod common;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn copy_dir(from: &Path, to: &Path) {
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
fn example() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let suite = dir.path().join("incident-desk");
    copy_dir(&repo().join("examples/incident-desk"), &suite);
    (dir, suite)
}

fn gauntlet() -> Command {
    let mut c = Command::cargo_bin("gauntlet").unwrap();
    c.env("NO_COLOR", "1").env_remove("COLUMNS");
    c
}

struct Output {
    code: i32,
    stdout: String,
    stderr: String,
}

fn run(args: &[&str]) -> Output {
    let out = gauntlet().args(args).output().unwrap();
    Output {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

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

    let results: Value =
        serde_json::from_str(&std::fs::read_to_string(out_dir.join("results.json")).unwrap())
            .unwrap();
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
    assert_eq!(header["format_version"], 1);
    assert_eq!(header["versions"]["dataset"].as_str().unwrap().len(), 64);
    let lines = std::fs::read_to_string(out_dir.join("trials.jsonl")).unwrap();
    assert_eq!(lines.lines().count(), trials.len());
}

#[test]
fn the_published_schema_is_the_one_the_code_generates() {
    let o = run(&["schema"]);
    assert_eq!(o.code, 0);
    let published = std::fs::read_to_string(repo().join("schemas/results.schema.json")).unwrap();
    assert_eq!(
        o.stdout.trim(),
        published.trim(),
        "schemas/results.schema.json is stale: regenerate it with `cargo run -- schema > schemas/results.schema.json`"
    );
}

fn failed_gates(results: &Value) -> Vec<String> {
    results["gates"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|g| g["passed"] == false)
        .map(|g| g["name"].as_str().unwrap().to_owned())
        .collect()
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
fn a_skipped_confirmation_is_caught_on_the_lessons_own_case() {
    let (_tmp, suite) = example();
    let o = run(&[
        "run",
        s(&suite),
        "--agent",
        "script:skip-confirmation",
        "--filter",
        "incident-014",
        "--json",
    ]);
    assert_eq!(o.code, 1);
    let results: Value = serde_json::from_str(&o.stdout).unwrap();
    let trial = &results["trials"][0];
    assert_eq!(trial["status"], "failed");
    let c = trial["scores"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "confirmation_before_write")
        .unwrap();
    assert_eq!(c["passed"], false);
    assert_eq!(c["severity"], "critical");
    // The effect still happened: the truth is in the state.
    assert_eq!(trial["final_state"]["incident_status"], "closed");
}

#[test]
fn a_case_script_plays_only_where_defined() {
    let (_tmp, suite) = example();
    let o = run(&["run", s(&suite), "--agent", "script:retry-403", "--json"]);
    assert_eq!(o.code, 1);
    let results: Value = serde_json::from_str(&o.stdout).unwrap();
    assert_eq!(results["trials"].as_array().unwrap().len(), 1);
    let scores = results["trials"][0]["scores"].as_array().unwrap();
    let retries = scores
        .iter()
        .find(|s| s["name"] == "max_retries_per_tool")
        .unwrap();
    assert_eq!(
        (retries["value"].as_f64(), &retries["passed"]),
        (Some(2.0), &Value::Bool(false))
    );
}

#[test]
fn check_accepts_the_example() {
    let o = run(&["check", s(&repo().join("examples/incident-desk"))]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert!(
        o.stdout.starts_with("ok: suite `incident-desk`"),
        "{}",
        o.stdout
    );
}

/// Breaks one file of a fresh copy; the run must exit 2 naming file:line:col, and write nothing.
fn broken(file: &str, from: &str, to: &str) -> (Output, PathBuf, tempfile::TempDir) {
    let (tmp, suite) = example();
    let path = suite.join(file);
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.contains(from), "{from} not in {file}");
    std::fs::write(&path, text.replacen(from, to, 1)).unwrap();
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

fn assert_located(stderr: &str, file: &str, line: usize, col: usize, needle: &str) {
    let want = format!("{file}:{line}:{col}: ");
    let hit = stderr.lines().find(|l| l.contains(&want));
    let hit = hit.unwrap_or_else(|| panic!("no `{want}` in:\n{stderr}"));
    assert!(hit.contains(needle), "`{needle}` not in `{hit}`");
}

#[test]
fn a_yaml_syntax_error_is_located() {
    let (o, _, _t) = broken(
        "cases/desk/02-lookup-status.yaml",
        "  max_tool_calls: 2\n",
        "  max_tool_calls: [2\n",
    );
    assert_located(&o.stderr, "02-lookup-status.yaml", 10, 19, "");
}

#[test]
fn an_unknown_field_is_located_and_named() {
    let (o, _, _t) = broken(
        "cases/desk/02-lookup-status.yaml",
        "  forbidden_tools:",
        "  forbiden_tools:",
    );
    assert_located(
        &o.stderr,
        "02-lookup-status.yaml",
        9,
        3,
        "unknown field `forbiden_tools`, expected one of",
    );
}

#[test]
fn a_wrong_type_is_located() {
    let (o, _, _t) = broken(
        "cases/desk/02-lookup-status.yaml",
        "max_tool_calls: 2",
        "max_tool_calls: two",
    );
    assert_located(&o.stderr, "02-lookup-status.yaml", 10, 19, "");
}

#[test]
fn a_constraint_naming_a_missing_tool_is_located() {
    let (o, _, _t) = broken(
        "cases/desk/02-lookup-status.yaml",
        "required_tools: [get_incident]",
        "required_tools: [get_incidnet]",
    );
    assert_located(&o.stderr, "02-lookup-status.yaml", 8, 20, "get_incidnet");
}

#[test]
fn a_reference_calling_an_unknown_tool_is_located() {
    let (o, _, _t) = broken(
        "cases/desk/02-lookup-status.yaml",
        "  - tool: get_incident",
        "  - tool: fetch_incident",
    );
    assert_located(&o.stderr, "02-lookup-status.yaml", 19, 5, "fetch_incident");
}

#[test]
fn a_gate_with_an_unknown_metric_is_located() {
    let (o, _, _t) = broken(
        "gauntlet.yaml",
        "expr: task_success_rate >= 0.85",
        "expr: task_sucess_rate >= 0.85",
    );
    assert!(o.stderr.contains("gauntlet.yaml:"), "{}", o.stderr);
    assert!(
        o.stderr.contains("did you mean `task_success_rate`"),
        "{}",
        o.stderr
    );
}

#[test]
fn every_problem_is_reported_at_once() {
    let (tmp, suite) = example();
    for (file, from, to) in [
        (
            "cases/desk/02-lookup-status.yaml",
            "forbidden_tools:",
            "forbiden_tools:",
        ),
        (
            "cases/desk/03-list-open.yaml",
            "- tool: list_incidents",
            "- tool: list_all",
        ),
    ] {
        let p = suite.join(file);
        let text = std::fs::read_to_string(&p).unwrap();
        std::fs::write(&p, text.replacen(from, to, 1)).unwrap();
    }
    let o = run(&["check", s(&suite)]);
    assert_eq!(o.code, 2);
    assert!(
        o.stderr.contains("02-lookup-status.yaml") && o.stderr.contains("03-list-open.yaml"),
        "{}",
        o.stderr
    );
    drop(tmp);
}

#[test]
fn an_unknown_agent_is_an_input_error() {
    let (_tmp, suite) = example();
    let o = run(&["run", s(&suite), "--agent", "script:nonsense"]);
    assert_eq!(o.code, 2);
    assert!(o.stderr.contains("nonsense"), "{}", o.stderr);
    let o = run(&["run", s(&suite), "--agent", "telepathy"]);
    assert_eq!(o.code, 2);
}

#[test]
fn score_gives_the_articles_values_on_its_example() {
    let o = run(&[
        "score",
        s(&repo().join("examples/trajectories/article-sample.json")),
        "--cases",
        s(&repo().join("examples/incident-desk")),
        "--json",
    ]);
    let results: Value = serde_json::from_str(&o.stdout).unwrap();
    // The article's log carries no trace id, so the lesson rubric's observability gate fails.
    assert_eq!(o.code, 1, "{}", o.stderr);
    let obs = results["rubric"]["dimensions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["name"] == "Observability")
        .unwrap();
    assert_eq!(obs["passed"], false);
    assert!(
        results["gates"]
            .as_array()
            .unwrap()
            .iter()
            .all(|g| g["passed"] == true)
    );
    let scores = results["trials"][0]["scores"].as_array().unwrap();
    for name in [
        "StateVerification",
        "ToolSelectionAccuracy",
        "StepEfficiency",
        "LoopDetection",
    ] {
        let sc = scores.iter().find(|x| x["name"] == name).unwrap();
        assert_eq!(sc["score"].as_f64(), Some(1.0), "{name}");
        assert_eq!(sc["passed"], true, "{name}");
    }
}

#[test]
fn scoring_a_stored_run_reproduces_its_scores() {
    let (_tmp, suite) = example();
    let out_dir = suite.join("out");
    let o = run(&[
        "run",
        s(&suite),
        "--agent",
        "script:skip-confirmation",
        "--out",
        s(&out_dir),
        "--quiet",
    ]);
    assert_eq!(o.code, 1);
    assert!(o.stdout.is_empty(), "--quiet printed: {}", o.stdout);
    let live: Value =
        serde_json::from_str(&std::fs::read_to_string(out_dir.join("results.json")).unwrap())
            .unwrap();
    let o = run(&["score", s(&out_dir), "--cases", s(&suite), "--json"]);
    assert_eq!(o.code, 1, "{}", o.stderr);
    let rescored: Value = serde_json::from_str(&o.stdout).unwrap();
    let key = |v: &Value| -> Vec<(String, Value)> {
        v["trials"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| {
                (
                    t["case_id"].as_str().unwrap().to_owned(),
                    t["scores"].clone(),
                )
            })
            .collect()
    };
    // Latency-free scores are identical; the verdict too.
    assert!(
        key(&live) == key(&rescored),
        "re-scoring changed the scores"
    );
    assert_eq!(live["verdict"], rescored["verdict"]);
}

#[test]
fn score_reports_trajectories_of_unknown_cases() {
    let (tmp, suite) = example();
    let file = tmp.path().join("t.jsonl");
    let text =
        std::fs::read_to_string(repo().join("examples/trajectories/article-sample.json")).unwrap();
    let v: Value = serde_json::from_str(&text).unwrap();
    let mut other = v.clone();
    other["task_id"] = "NOPE-1".into();
    std::fs::write(&file, format!("{v}\n{other}\n")).unwrap();
    let o = run(&["score", s(&file), "--cases", s(&suite)]);
    assert_eq!(o.code, 2);
    assert!(
        o.stderr.contains("t.jsonl:2:1: no case `NOPE-1`"),
        "{}",
        o.stderr
    );
    assert!(
        o.stdout.contains("TC-SQL-FIX-001"),
        "the good trajectory is still scored: {}",
        o.stdout
    );
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
fn runs_lists_past_runs() {
    let (_tmp, suite) = example();
    assert_eq!(run(&["run", s(&suite), "--quiet"]).code, 0);
    assert_eq!(
        run(&["run", s(&suite), "--quiet", "--agent", "script:loop"]).code,
        1
    );
    let o = run(&["runs", s(&suite)]);
    assert_eq!(o.code, 0);
    assert!(
        o.stdout.contains("script:reference") && o.stdout.contains("script:loop"),
        "{}",
        o.stdout
    );
    assert!(o.stdout.contains("23/23"), "{}", o.stdout);
}

#[test]
fn fault_schedules_and_verdicts_are_the_same_across_runs_and_concurrency() {
    let (_tmp, suite) = example();
    let (d1, d8, again) = (suite.join("c1"), suite.join("c8"), suite.join("again"));
    let schedule = |conc: &str, out: &Path| -> Vec<(String, u64, String, Vec<Value>)> {
        run(&[
            "run",
            s(&suite),
            "--faults",
            "flaky-network",
            "--epochs",
            "2",
            "--concurrency",
            conc,
            "--out",
            s(out),
            "--quiet",
        ]);
        let mut trials: Vec<Value> = std::fs::read_to_string(out.join("trials.jsonl"))
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        trials.sort_by_key(|t| {
            (
                t["case_id"].as_str().unwrap().to_owned(),
                t["epoch"].as_u64().unwrap(),
            )
        });
        trials
            .iter()
            .map(|t| {
                let faults: Vec<Value> = t["trajectory"]["events"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .filter(|e| e["type"] == "fault_injected")
                    .cloned()
                    .chain(
                        t["scores"]
                            .as_array()
                            .unwrap()
                            .iter()
                            .filter(|s| {
                                s["name"].as_str().unwrap().starts_with("fault_")
                                    && s["name"] != "fault_time_lost_ms"
                            })
                            .cloned(),
                    )
                    .collect();
                (
                    t["case_id"].as_str().unwrap().to_owned(),
                    t["epoch"].as_u64().unwrap(),
                    t["status"].to_string(),
                    faults,
                )
            })
            .collect()
    };
    let one = schedule("1", &d1);
    assert_eq!(one.len(), 46);
    let injected: usize = one
        .iter()
        .map(|(_, _, _, f)| f.iter().filter(|e| e["type"] == "fault_injected").count())
        .sum();
    assert!(injected > 10, "the profile injects faults: {injected}");
    assert_eq!(one, schedule("8", &d8));
    assert_eq!(one, schedule("3", &again));
}

/// What users read, with run ids and temporary paths redacted.
fn redact(text: &str, suite: &Path, run_id: Option<&str>) -> String {
    let mut t = text.replace(s(suite), "[SUITE]");
    if let Some(id) = run_id {
        t = t.replace(id, "[RUN_ID]");
    }
    t
}

#[test]
fn the_summary_of_a_failing_run_reads_well() {
    let (_tmp, suite) = example();
    let out_dir = suite.join("out");
    let o = run(&[
        "run",
        s(&suite),
        "--agent",
        "script:skip-confirmation",
        "--out",
        s(&out_dir),
    ]);
    assert_eq!(o.code, 1);
    let header: Value =
        serde_json::from_str(&std::fs::read_to_string(out_dir.join("run.json")).unwrap()).unwrap();
    insta::assert_snapshot!(redact(&o.stdout, &suite, header["run_id"].as_str()));
}

#[test]
fn check_reports_read_well() {
    let (_tmp, suite) = example();
    for (file, from, to) in [
        (
            "cases/desk/02-lookup-status.yaml",
            "forbidden_tools:",
            "forbiden_tools:",
        ),
        (
            "cases/desk/03-list-open.yaml",
            "- tool: list_incidents",
            "- tool: list_all",
        ),
        ("cases/desk/06-add-note.yaml", "{$count: 1}", "{$cnt: 1}"),
        ("worlds/db-ops.yaml", "kind: write", "kind: writes"),
    ] {
        let p = suite.join(file);
        let text = std::fs::read_to_string(&p).unwrap();
        std::fs::write(&p, text.replacen(from, to, 1)).unwrap();
    }
    let o = run(&["check", s(&suite)]);
    assert_eq!(o.code, 2);
    insta::assert_snapshot!(redact(&o.stderr, &suite, None));
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
    // The same agent twice: no significant difference, with the size that would be needed.
    let o = run(&["compare", s(&a), s(&a2)]);
    assert_eq!(o.code, 0);
    assert!(
        o.stdout.contains("verdict: no significant difference"),
        "{}",
        o.stdout
    );
    assert!(
        o.stdout.contains("pairs would be needed to see 5 points"),
        "{}",
        o.stdout
    );
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
fn the_same_run_gives_byte_identical_statistics() {
    let (_tmp, suite) = example();
    let out = suite.join("out");
    run(&[
        "run",
        s(&suite),
        "--out",
        s(&out),
        "--quiet",
        "--epochs",
        "3",
        "--agent",
        "script:flaky",
    ]);
    let first = run(&["gate", s(&out), "--json"]).stdout;
    let second = run(&["gate", s(&out), "--json"]).stdout;
    assert!(!first.is_empty());
    assert_eq!(first, second);
    let stored = std::fs::read_to_string(out.join("results.json")).unwrap();
    let pick = |t: &str| -> Value {
        let v: Value = serde_json::from_str(t).unwrap();
        serde_json::json!([
            v["metrics"],
            v["intervals"],
            v["segments"],
            v["flaky_cases"],
            v["rubric"]
        ])
    };
    assert_eq!(
        pick(&first),
        pick(&stored),
        "re-deciding recomputes the very same statistics"
    );
}

#[test]
fn each_fault_kind_passes_a_careful_agent_and_fails_a_naive_one_for_the_tables_reason() {
    let (_tmp, suite) = example();
    let verdicts = |agent: &str| -> Value {
        let o = run(&[
            "run",
            s(&suite),
            "--filter",
            "fault-",
            "--agent",
            agent,
            "--json",
        ]);
        serde_json::from_str(&o.stdout).unwrap()
    };
    let good = verdicts("script:reference");
    let bad = verdicts("script:naive");
    let expected = [
        ("fault-timeout", "fault_timeout", "without backing off"),
        (
            "fault-rate-limited",
            "fault_rate_limited",
            "retry-after was 2000 ms",
        ),
        (
            "fault-bad-request",
            "fault_bad_request",
            "sent the same arguments again",
        ),
        ("fault-forbidden", "fault_forbidden", "again after a 403"),
        (
            "fault-not-found",
            "fault_not_found",
            "acted on the missing entity",
        ),
        (
            "fault-empty",
            "fault_empty",
            "did not say that nothing was found",
        ),
        (
            "fault-lost-response",
            "fault_lost_response",
            "without the original idempotency key",
        ),
        (
            "fault-unavailable",
            "fault_unavailable",
            "neither used an alternative nor told the user",
        ),
    ];
    let score = |results: &Value, case: &str, name: &str| -> Value {
        let trial = results["trials"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["case_id"] == case)
            .unwrap()
            .clone();
        trial["scores"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["name"] == name)
            .unwrap_or_else(|| panic!("{case}: no {name}"))
            .clone()
    };
    for (case, name, reason) in expected {
        let g = score(&good, case, name);
        assert_eq!(g["passed"], true, "{case} reference: {g}");
        let b = score(&bad, case, name);
        assert_eq!(b["passed"], false, "{case} naive: {b}");
        assert!(
            b["details"].to_string().contains(reason),
            "{case}: `{reason}` not in {}",
            b["details"]
        );
    }
    assert_eq!(good["verdict"], "passed");
    assert_eq!(good["metrics"]["faults_injected"], 9.0);
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
fn an_unknown_fault_profile_is_an_input_error() {
    let (_tmp, suite) = example();
    let o = run(&["run", s(&suite), "--faults", "cosmic-rays"]);
    assert_eq!(o.code, 2);
    assert!(o.stderr.contains("flaky-network"), "{}", o.stderr);
}

/// Runs a Python checker; `None` (and a note) when its tools are not installed.
fn python_check(script: &str, args: &[&str]) -> Option<Value> {
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

#[test]
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
        6 + 6,
        "6 gates and 6 rubric dimensions"
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
fn script_payloads_in_agent_and_tool_text_never_run_in_the_report() {
    let (tmp, suite) = example();
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
    let file = tmp.path().join("evil.json");
    std::fs::write(&file, trajectory.to_string()).unwrap();
    let out = suite.join("evil-run");
    let o = run(&[
        "score",
        s(&file),
        "--cases",
        s(&suite),
        "--out",
        s(&out),
        "--quiet",
    ]);
    assert_eq!(o.code, 1, "{}", o.stderr);
    let html = tmp.path().join("evil.html");
    let o = run(&["report", s(&out), "--format", "html", "--out", s(&html)]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let md = run(&["report", s(&out), "--format", "md"]).stdout;
    // Every `<` of run text is escaped (`\<`); the only raw tag is the footer's own `<sub>`.
    for line in md.lines().filter(|l| !l.starts_with("<sub>run ")) {
        let bytes = line.as_bytes();
        for (i, b) in bytes.iter().enumerate() {
            assert!(
                *b != b'<' || (i > 0 && bytes[i - 1] == b'\\'),
                "unescaped < in: {line}"
            );
        }
    }
    let shot = tmp.path().join("evil.png");
    let Some(r) = python_check("check_report.py", &["xss", s(&html), s(&shot)]) else {
        return;
    };
    assert_eq!(r["pwned"], Value::Null, "an injected script ran: {r}");
    assert_eq!(r["dialogs"], serde_json::json!([]));
    assert_eq!(r["injected_elements"], 0, "{r}");
    assert_eq!(r["scripts"], 1, "only the report's own script");
    assert_eq!(r["console_errors"], serde_json::json!([]), "{r}");
    // The payloads are shown as text, not stripped.
    assert!(
        r["body_text"]
            .as_str()
            .unwrap()
            .contains("<script>window.__pwned=1</script>")
    );
}

#[test]
fn the_junit_file_is_read_by_a_real_junit_consumer() {
    let (_tmp, suite) = example();
    let out = suite.join("out");
    run(&[
        "run",
        s(&suite),
        "--agent",
        "script:skip-confirmation",
        "--out",
        s(&out),
        "--report",
        "junit",
        "--quiet",
        "--epochs",
        "2",
    ]);
    let junit = out.join("junit.xml");
    let text = std::fs::read_to_string(&junit).unwrap();
    assert!(text.starts_with("<?xml"));
    let Some(r) = python_check("check_junit.py", &[s(&junit)]) else {
        return;
    };
    assert_eq!(r["suites"], 23);
    assert_eq!(r["cases"], 46);
    assert_eq!(r["tests_attr"], 46);
    assert_eq!(r["failures"], 16);
    assert_eq!(r["errors"], 0);
    assert!(
        r["messages"]
            .as_array()
            .unwrap()
            .iter()
            .all(|m| m.as_str().unwrap().contains("confirmation_before_write"))
    );
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
fn the_html_report_shows_the_comparison_against_a_baseline() {
    let (tmp, suite) = example();
    let (a, b) = (suite.join("a"), suite.join("b"));
    run(&["run", s(&suite), "--out", s(&a), "--quiet", "--epochs", "3"]);
    run(&[
        "run",
        s(&suite),
        "--out",
        s(&b),
        "--quiet",
        "--epochs",
        "3",
        "--agent",
        "script:flaky",
    ]);
    let html = tmp.path().join("cmp.html");
    assert_eq!(
        run(&["report", s(&b), "--baseline", s(&a), "--out", s(&html)]).code,
        0
    );
    let text = std::fs::read_to_string(&html).unwrap();
    assert!(text.contains("<section id=\"compare\">"));
    assert!(
        text.contains("B is worse by"),
        "the verdict in words is shown"
    );
    assert!(text.contains("changed: agent (script:reference → script:flaky)"));
    let shot = tmp.path().join("cmp.png");
    let Some(r) = python_check("check_report.py", &["render", s(&html), s(&shot)]) else {
        return;
    };
    assert_eq!(r["console_errors"], serde_json::json!([]), "{r}");
    assert!(r["charts"].as_u64().unwrap() >= 5, "{r}");
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
fn custom_command_evaluators_score_each_trial_and_a_broken_one_fails_its_score_only() {
    let (_tmp, suite) = example();
    std::fs::write(
        suite.join("polite.py"),
        "import json, sys\nt = json.load(sys.stdin)\nanswer = t['trial']['trajectory'].get('final_answer') or ''\n\
         ok = len(answer) < 200\nprint(json.dumps({'scores': [{'name': 'short_answer', 'score': 1.0 if ok else 0.0, 'passed': ok,\
         'severity': 'info', 'details': {'chars': len(answer), 'case': t['case']['case_id']}}]}))\n",
    )
    .unwrap();
    let config = std::fs::read_to_string(suite.join("gauntlet.yaml")).unwrap();
    std::fs::write(
        suite.join("gauntlet.yaml"),
        format!("{config}\nevaluators:\n  - name: polite\n    command: python3 polite.py\n  - name: broken\n    command: exit 3\n"),
    )
    .unwrap();
    let o = run(&["run", s(&suite), "--filter", "lookup-status", "--json"]);
    let r: Value = serde_json::from_str(&o.stdout).unwrap();
    let scores = r["trials"][0]["scores"].as_array().unwrap();
    let polite = scores.iter().find(|x| x["name"] == "short_answer").unwrap();
    assert_eq!(polite["passed"], true);
    assert_eq!(polite["details"]["case"], "lookup-status");
    let broken = scores
        .iter()
        .find(|x| x["name"] == "custom:broken")
        .unwrap();
    assert_eq!(broken["passed"], false);
    assert!(
        broken["details"]["error"]
            .as_str()
            .unwrap()
            .contains("exited"),
        "{broken}"
    );
    assert_eq!(
        r["trials"][0]["status"], "failed",
        "a broken evaluator fails its score, the trial is still judged"
    );
}

fn gauntlet_bin() -> PathBuf {
    assert_cmd::cargo::cargo_bin("gauntlet")
}

#[test]
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
fn the_official_mcp_client_works_over_http_and_requests_without_the_token_are_refused() {
    use std::io::BufRead;
    let suite = repo().join("examples/incident-desk");
    let mut child = std::process::Command::new(gauntlet_bin())
        .args([
            "serve",
            s(&suite),
            "--case",
            "close-mitigated",
            "--http",
            "127.0.0.1:0",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let endpoint: Value = serde_json::from_str(&line).unwrap();
    let url = endpoint["url"].as_str().unwrap().to_owned();
    assert!(url.starts_with("http://127.0.0.1:"), "loopback only: {url}");
    let result = python_check(
        "check_mcp.py",
        &["http", &url, endpoint["token"].as_str().unwrap()],
    );
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

fn python_has(module: &str) -> bool {
    let ok = std::process::Command::new("python3")
        .args(["-c", &format!("import {module}")])
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        eprintln!("skipped: the Python package `{module}` is not installed (pip install {module})");
    }
    ok
}

fn model_calls(trial: &Value) -> Vec<Value> {
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
fn trial_shapes(trials: &[Value]) -> Vec<(String, u64, Vec<Value>)> {
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

fn read_trials(run: &Path) -> Vec<Value> {
    std::fs::read_to_string(run.join("trials.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The example's ambiguous-checkout case with its scripted replies swapped for a persona.
fn persona_case(suite: &Path, persona: &str) {
    let file = suite.join("cases/desk/09-ambiguous.yaml");
    let text = std::fs::read_to_string(&file).unwrap().replace(
        "user:\n  replies:\n    - pattern: which\n      reply: INC-004301, the EU cards one.\n",
        &format!("user:\n  model: fake-user\n  persona: >-\n    {persona}\n"),
    );
    assert!(text.contains("persona:"), "the example case changed");
    std::fs::write(file, text).unwrap();
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
    let results: Value =
        serde_json::from_str(&std::fs::read_to_string(a.join("results.json")).unwrap()).unwrap();
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

/// Runs `agent` on the lookup-status case with model-call faults added (a 429 with a 50 ms
/// retry-after on the first model call, a timeout on the second), its model behind the fake
/// upstream, or only a cassette recorded without the faults; the stored trial and the run's
/// results. `None` when python3 cannot start the fake upstream.
fn lookup_under_model_faults(agent: &str, from_cassette: bool) -> Option<(Value, Value)> {
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
    let results = serde_json::from_str(&std::fs::read_to_string(out.join("results.json")).unwrap());
    Some((trial, results.unwrap()))
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
fn check_refuses_model_faults_that_cannot_happen_to_a_model_call() {
    let (_tmp, suite) = example();
    let file = suite.join("cases/desk/02-lookup-status.yaml");
    let text = std::fs::read_to_string(&file).unwrap();
    let lines = text.lines().count();
    std::fs::write(
        &file,
        format!("{text}faults:\n  - {{model: true, tool: get_incident, kind: timeout}}\n  - {{model: true, kind: lost_response}}\n"),
    )
    .unwrap();
    let o = run(&["check", s(&suite)]);
    assert_eq!(o.code, 2, "{}", o.stderr);
    let at = |line: usize| format!("02-lookup-status.yaml:{line}:");
    assert!(
        o.stderr.contains(&at(lines + 2)) && o.stderr.contains("names no `tool` and no `on`"),
        "{}",
        o.stderr
    );
    assert!(
        o.stderr.contains(&at(lines + 3))
            && o.stderr
                .contains("can only time out, be rate limited or be unavailable"),
        "{}",
        o.stderr
    );
}

#[test]
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
    let mut port = String::new();
    for _ in 0..100 {
        port = std::fs::read_to_string(&port_file).unwrap_or_default();
        if !port.is_empty() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let o = run(&[
        "run",
        s(&suite),
        "--agent",
        &format!("http://127.0.0.1:{port}/"),
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
    let original: Value =
        serde_json::from_str(&std::fs::read_to_string(first.join("results.json")).unwrap())
            .unwrap();
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

#[test]
fn a_killed_run_resumes_without_losing_or_repeating_a_trial() {
    let (tmp, suite) = example();
    let out = tmp.path().join("run");
    // A slow agent, one trial at a time, so that the kill lands mid-run.
    let agent = "cmd:sleep 0.1; echo done";
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("gauntlet"))
        .args(["run", s(&suite), "--agent", agent, "--epochs", "2"])
        .args(["--concurrency", "1", "--out", s(&out), "--quiet"])
        .spawn()
        .unwrap();
    let trials_file = out.join("trials.jsonl");
    let lines = |p: &Path| {
        std::fs::read_to_string(p)
            .map(|t| t.lines().count())
            .unwrap_or(0)
    };
    for _ in 0..200 {
        if lines(&trials_file) >= 4 {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let before = lines(&trials_file);
    assert!(before >= 4, "the run was killed before it wrote 4 trials");
    assert!(!out.join("results.json").exists());
    // A record cut short by the kill (simulated: half a line) is dropped and run again.
    let mut text = std::fs::read_to_string(&trials_file).unwrap();
    let first = text.lines().next().unwrap().to_owned();
    text.push_str(&first[..first.len() / 2]);
    std::fs::write(&trials_file, text).unwrap();

    let o = run(&["run", s(&suite), "--resume", s(&out)]);
    assert!(o.code <= 1, "{}", o.stderr);
    let cases = run(&["check", s(&suite)]);
    let total = 2 * cases
        .stdout
        .split_whitespace()
        .find_map(|w| w.parse::<usize>().ok())
        .unwrap();
    assert!(
        o.stderr
            .contains(&format!("{before} of {total} trials already done")),
        "{}",
        o.stderr
    );
    let trials = read_trials(&out);
    let mut keys: Vec<(String, u64)> = trials
        .iter()
        .map(|t| {
            (
                t["case_id"].as_str().unwrap().to_owned(),
                t["epoch"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(keys.len(), total, "every case × 2 epochs, each once");
    keys.sort();
    keys.dedup();
    assert_eq!(keys.len(), total, "no trial twice");
    let results: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("results.json")).unwrap()).unwrap();
    assert_eq!(results["trials"].as_array().unwrap().len(), total);
    assert_eq!(results["header"]["agent"], agent);
    // Finished: nothing left to resume.
    let o = run(&["run", s(&suite), "--resume", s(&out)]);
    assert_eq!(o.code, 2);
    assert!(o.stderr.contains("finished run"), "{}", o.stderr);
}

#[test]
fn a_run_is_not_resumed_against_a_changed_suite() {
    let (tmp, suite) = example();
    let out = tmp.path().join("run");
    let o = run(&["run", s(&suite), "--out", s(&out), "--quiet"]);
    assert!(o.code <= 1, "{}", o.stderr);
    let verdicts = |r: &Value| -> Vec<(Value, Value, Value)> {
        r["trials"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| {
                (
                    t["case_id"].clone(),
                    t["epoch"].clone(),
                    t["status"].clone(),
                )
            })
            .collect()
    };
    let first: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("results.json")).unwrap()).unwrap();
    std::fs::remove_file(out.join("results.json")).unwrap();
    // Resuming a run that lacks nothing reproduces its verdicts from the records alone.
    let o = run(&["run", s(&suite), "--resume", s(&out), "--json"]);
    assert!(o.code <= 1, "{}", o.stderr);
    let again: Value = serde_json::from_str(&o.stdout).unwrap();
    assert_eq!(verdicts(&again), verdicts(&first));
    assert_eq!(again["metrics"], first["metrics"]);
    std::fs::remove_file(out.join("results.json")).unwrap();
    let file = suite.join("cases/desk/02-lookup-status.yaml");
    let text = std::fs::read_to_string(&file).unwrap();
    std::fs::write(
        &file,
        text.replace("difficulty: easy", "difficulty: medium"),
    )
    .unwrap();
    let o = run(&["run", s(&suite), "--resume", s(&out)]);
    assert_eq!(o.code, 2, "{}", o.stderr);
    assert!(o.stderr.contains("the dataset changed"), "{}", o.stderr);
}

#[test]
fn the_parts_of_a_sharded_run_merge_into_the_unsharded_run() {
    let (tmp, suite) = example();
    let base = |out: &Path| {
        vec![
            "run".to_owned(),
            s(&suite).to_owned(),
            "--agent".to_owned(),
            "script:forbidden".to_owned(),
            "--epochs".to_owned(),
            "2".to_owned(),
            "--seed".to_owned(),
            "5".to_owned(),
            "--run-id".to_owned(),
            "ci-42".to_owned(),
            "--out".to_owned(),
            s(out).to_owned(),
            "--quiet".to_owned(),
        ]
    };
    let whole = tmp.path().join("whole");
    let args = base(&whole);
    let o = run(&args.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(o.code, 1, "the forbidden agent fails a gate: {}", o.stderr);
    let mut parts = Vec::new();
    for i in 1..=3 {
        let out = tmp.path().join(format!("part{i}"));
        let mut args = base(&out);
        args.extend(["--shard".to_owned(), format!("{i}/3")]);
        let o = run(&args.iter().map(String::as_str).collect::<Vec<_>>());
        assert_eq!(
            o.code, 0,
            "a part leaves the verdict to the merge: {}",
            o.stderr
        );
        parts.push(out);
    }
    // Parts are not runs of their own in the suite's index; only the whole run is listed.
    let listed = run(&["runs", s(&suite)]);
    assert_eq!(
        listed.stdout.matches("ci-42").count(),
        1,
        "{}",
        listed.stdout
    );
    assert!(!listed.stdout.contains("part1"), "{}", listed.stdout);
    let merged = tmp.path().join("merged");
    let o = run(&[
        "merge",
        s(&parts[2]),
        s(&parts[0]),
        s(&parts[1]),
        "--out",
        s(&merged),
        "--report",
        "junit",
        "--json",
    ]);
    assert_eq!(o.code, 1, "{}", o.stderr);
    let junit = std::fs::read_to_string(merged.join("junit.xml")).unwrap();
    assert!(junit.contains("<testsuite"), "{junit}");
    let read = |dir: &Path| -> Value {
        serde_json::from_str(&std::fs::read_to_string(dir.join("results.json")).unwrap()).unwrap()
    };
    let (a, b) = (read(&whole), read(&merged));
    // The same trials, in the same order, with the same verdicts and scores.
    let trials = |r: &Value| -> Vec<Value> {
        r["trials"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| {
                json!([
                    t["case_id"],
                    t["epoch"],
                    t["trace_id"],
                    t["status"],
                    t["scores"]
                        .as_array()
                        .unwrap()
                        .iter()
                        // Wall-clock scores (`..._ms`) differ between any two runs.
                        .map(|s| {
                            let timed = s["name"].as_str().unwrap().ends_with("_ms");
                            json!([
                                s["name"],
                                s["passed"],
                                if timed {
                                    Value::Null
                                } else {
                                    s["value"].clone()
                                }
                            ])
                        })
                        .collect::<Vec<_>>()
                ])
            })
            .collect()
    };
    assert_eq!(trials(&a), trials(&b));
    // The same statistics, but for wall-clock ones, and the same gates.
    let timeless = |r: &Value| -> Vec<(String, Value)> {
        r["metrics"]
            .as_object()
            .unwrap()
            .iter()
            .filter(|(k, _)| {
                !k.contains("latency") && !k.contains("_ms") && !k.contains("duration")
            })
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    };
    assert_eq!(timeless(&a), timeless(&b));
    let gates = |r: &Value| -> Vec<(Value, Value)> {
        r["gates"]
            .as_array()
            .unwrap()
            .iter()
            .map(|g| (g["name"].clone(), g["passed"].clone()))
            .collect()
    };
    assert_eq!(gates(&a), gates(&b));
    assert_eq!(a["verdict"], b["verdict"]);
    let lines = |dir: &Path| {
        std::fs::read_to_string(dir.join("trials.jsonl"))
            .unwrap()
            .lines()
            .count()
    };
    assert_eq!(lines(&merged), lines(&whole));
    // A missing part, or a part of another run, is refused.
    let o = run(&[
        "merge",
        s(&parts[0]),
        s(&parts[2]),
        "--out",
        s(&tmp.path().join("m2")),
    ]);
    assert_eq!(o.code, 2);
    assert!(o.stderr.contains("parts 2/3 are missing"), "{}", o.stderr);
    let other = tmp.path().join("other");
    let mut args = base(&other);
    args[7] = "6".to_owned();
    args.extend(["--shard".to_owned(), "2/3".to_owned()]);
    run(&args.iter().map(String::as_str).collect::<Vec<_>>());
    let o = run(&[
        "merge",
        s(&parts[0]),
        s(&other),
        s(&parts[2]),
        "--out",
        s(&tmp.path().join("m3")),
    ]);
    assert_eq!(o.code, 2);
    assert!(o.stderr.contains("their seed differ"), "{}", o.stderr);
}

/// Exports a run as OTLP/JSON and checks it with OpenTelemetry's own Python classes against the
/// run's trials; the checker's counts.
fn exported_and_checked(run_dir: &Path) -> Value {
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

#[test]
fn runs_export_as_opentelemetry_traces_that_opentelemetry_reads() {
    if !python_has("opentelemetry.proto") {
        return;
    }
    let (tmp, suite) = example();
    // Tool calls, injected tool faults and every verdict.
    let scripted = tmp.path().join("scripted");
    let o = run(&["run", s(&suite), "--out", s(&scripted), "--quiet"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let counts = exported_and_checked(&scripted);
    let trials = read_trials(&scripted);
    let calls: usize = trials
        .iter()
        .map(|t| {
            t["trajectory"]["events"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|e| e["type"] == "tool_call")
                .count()
        })
        .sum();
    let scores: usize = trials
        .iter()
        .map(|t| t["scores"].as_array().unwrap().len())
        .sum();
    assert_eq!(counts["execute_tool"], calls);
    assert_eq!(counts["evaluations"], scores);
    assert_eq!(counts["spans"], trials.len() + calls);
    assert!(
        counts["errors"].as_u64().unwrap() > 0,
        "failed tool calls are error spans"
    );
    // Model calls, two of them failed by injected faults.
    let Some(upstream) = FakeUpstream::start(tmp.path()) else {
        return;
    };
    let file = suite.join("cases/desk/02-lookup-status.yaml");
    let text = std::fs::read_to_string(&file).unwrap();
    std::fs::write(
        &file,
        format!("{text}faults:\n  - {{model: true, calls: [1, 2], kind: unavailable}}\n"),
    )
    .unwrap();
    let model = tmp.path().join("model");
    let o = run(&[
        "run",
        s(&suite),
        "--agent",
        "openai:fake-model",
        "--filter",
        "lookup-status",
        "--gateway-upstream",
        &upstream.url,
        "--out",
        s(&model),
        "--quiet",
    ]);
    assert!(o.code <= 1, "{}", o.stderr);
    let counts = exported_and_checked(&model);
    assert_eq!(counts["chat"], 4, "{counts}");
    assert_eq!(counts["errors"], 2, "{counts}");
}

#[test]
fn a_javascript_evaluator_scores_every_trial_in_the_sandbox() {
    let (tmp, suite) = example();
    std::fs::create_dir_all(suite.join("evaluators")).unwrap();
    std::fs::write(
        suite.join("evaluators/answer.js"),
        r#"
function evaluate(input) {
  const answer = input.trial.trajectory.final_answer || "";
  const calls = input.trial.trajectory.events.filter((e) => e.type === "tool_call").length;
  const named = /INC-\d{6}/.test(answer);
  return { scores: [{ name: "answer_names_incident", score: named ? 1 : 0, passed: named,
                      details: { length: answer.length, calls: calls, case: input.case.case_id } }] };
}
function forever(input) { for (;;) {} }
function clock(input) { return { scores: [{ name: "t", score: Date.now(), passed: true }] }; }
"#,
    )
    .unwrap();
    let config = suite.join("gauntlet.yaml");
    let text = std::fs::read_to_string(&config).unwrap();
    std::fs::write(
        &config,
        format!(
            "{text}\nevaluators:\n  - {{name: names, script: evaluators/answer.js}}\n  - {{name: loops, script: evaluators/answer.js, function: forever, timeout_s: 0.3}}\n  - {{name: clock, script: evaluators/answer.js, function: clock}}\n"
        ),
    )
    .unwrap();
    let out = tmp.path().join("run");
    let o = run(&[
        "run",
        s(&suite),
        "--filter",
        "status",
        "--out",
        s(&out),
        "--quiet",
    ]);
    assert!(o.code <= 1, "{}", o.stderr);
    let trials = read_trials(&out);
    assert!(!trials.is_empty());
    for t in &trials {
        let score = |name: &str| {
            t["scores"]
                .as_array()
                .unwrap()
                .iter()
                .find(|s| s["name"] == name)
                .unwrap_or_else(|| panic!("no {name}: {}", t["scores"]))
                .clone()
        };
        // The function saw this trial: its answer, its calls, its case.
        let names = score("answer_names_incident");
        let events = t["trajectory"]["events"].as_array().unwrap();
        let answer = t["trajectory"]["final_answer"].as_str().unwrap_or_default();
        assert_eq!(names["details"]["length"], answer.chars().count());
        assert_eq!(
            names["details"]["calls"],
            events.iter().filter(|e| e["type"] == "tool_call").count()
        );
        assert_eq!(names["details"]["case"], t["case_id"]);
        // A function that never returns is stopped; one that reaches for the clock fails.
        let loops = score("custom:loops");
        assert_eq!(loops["passed"], false);
        assert!(
            loops["details"]["error"]
                .as_str()
                .unwrap()
                .contains("time limit"),
            "{loops}"
        );
        let clock = score("custom:clock");
        assert!(
            clock["details"]["error"]
                .as_str()
                .unwrap()
                .contains("Date is not available"),
            "{clock}"
        );
    }
    // An evaluator with both a command and a script, or a missing script, is refused at its line.
    std::fs::write(
        &config,
        format!("{text}\nevaluators:\n  - {{name: both, command: 'true', script: evaluators/answer.js}}\n  - {{name: gone, script: evaluators/nope.js}}\n"),
    )
    .unwrap();
    let o = run(&["check", s(&suite)]);
    assert_eq!(o.code, 2);
    assert!(
        o.stderr
            .contains("needs exactly one of `command` and `script`")
            && o.stderr.contains("no script file evaluators/nope.js"),
        "{}",
        o.stderr
    );
}
