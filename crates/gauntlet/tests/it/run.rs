//! `gauntlet run` on the example suite: the scripted agents, schemas and determinism.

use crate::common::*;

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
fn an_unknown_agent_is_an_input_error() {
    let (_tmp, suite) = example();
    let o = run(&["run", s(&suite), "--agent", "script:nonsense"]);
    assert_eq!(o.code, 2);
    assert!(o.stderr.contains("nonsense"), "{}", o.stderr);
    let o = run(&["run", s(&suite), "--agent", "telepathy"]);
    assert_eq!(o.code, 2);
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

/// Regression: the run index copied every trial and score (364 MB after 118k trials) though
/// only the run list is read. It holds a row per run, and `--prune` forgets deleted runs.
#[test]
fn the_index_holds_a_row_per_run_and_prunes_deleted_ones() {
    let (tmp, suite) = example();
    let kept = tmp.path().join("kept");
    let gone = tmp.path().join("gone");
    for out in [&kept, &gone] {
        assert_eq!(run(&["run", s(&suite), "--quiet", "--out", s(out)]).code, 0);
    }
    let db = suite.join(".gauntlet/index.sqlite");
    let tables = std::process::Command::new("python3")
        .args([
            "-c",
            "import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); \
             print(sorted(r[0] for r in c.execute(\"select name from sqlite_master where type='table'\")), \
             c.execute('select count(*) from runs').fetchone()[0])",
            s(&db),
        ])
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&tables.stdout).trim(), "['runs'] 2");
    std::fs::remove_dir_all(&gone).unwrap();
    let o = run(&["runs", s(&suite), "--prune"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert!(o.stderr.contains("pruned 1 run(s)"), "{}", o.stderr);
    assert!(
        o.stdout.contains(s(&std::fs::canonicalize(&kept).unwrap())),
        "{}",
        o.stdout
    );
    assert!(!o.stdout.contains("/gone"), "{}", o.stdout);
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
fn a_run_too_large_to_hold_keeps_its_summaries_on_disk_and_gives_the_same_results() {
    let (_tmp, suite) = example();
    let (held, spilled, resumed) = (
        suite.join("held"),
        suite.join("spilled"),
        suite.join("resumed"),
    );
    let with_agent = |out: &Path, concurrency: &str, agent: &str| -> Vec<String> {
        [
            "run",
            s(&suite),
            "--out",
            s(out),
            "--epochs",
            "3",
            "--agent",
            agent,
        ]
        .iter()
        .map(|a| a.to_string())
        .chain(
            [
                "--seed",
                "9",
                "--run-id",
                "r-9",
                "--concurrency",
                concurrency,
            ]
            .map(String::from),
        )
        .collect()
    };
    let args = |out: &Path, concurrency: &str| with_agent(out, concurrency, "script:flaky");
    let o = gauntlet().args(args(&held, "1")).output().unwrap();
    assert!(o.status.code().unwrap() <= 1, "{o:?}");
    // More than 5 summaries wait on disk; trials end in any order at concurrency 8.
    let o = gauntlet()
        .env("GAUNTLET_SCORE_KEEP", "5")
        .args(args(&spilled, "8"))
        .output()
        .unwrap();
    assert!(o.status.code().unwrap() <= 1, "{o:?}");
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        stdout.contains("69 trials: too many to list here"),
        "{stdout}"
    );
    let results = |dir: &Path| -> Value { stored_results(dir) };
    // What does not read the wall clock is the same, trial by trial and in plan order.
    let timeless = |r: &Value| -> Value {
        let trials: Vec<Value> = r["trials"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| {
                serde_json::json!([
                    t["case_id"],
                    t["epoch"],
                    t["trace_id"],
                    t["status"],
                    t["tool_calls"]
                ])
            })
            .collect();
        serde_json::json!([
            timeless(&r["metrics"]),
            timeless(&r["intervals"]),
            r["segments"],
            r["flaky_cases"],
            r["verdict"],
            r["gates"],
            trials
        ])
    };
    let (a, b) = (results(&held), results(&spilled));
    assert_eq!(b["trials"].as_array().unwrap().len(), 69);
    assert_eq!(timeless(&a), timeless(&b));
    let left = |dir: &Path| -> Vec<String> {
        std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with(".summaries"))
            .collect()
    };
    assert_eq!(
        left(&spilled),
        Vec::<String>::new(),
        "the spill file is gone"
    );
    // `--json` prints every trial, read back from the run folder.
    let o = gauntlet()
        .env("GAUNTLET_SCORE_KEEP", "5")
        .args(args(&suite.join("json"), "4"))
        .arg("--json")
        .output()
        .unwrap();
    let printed: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(timeless(&printed), timeless(&a));
    // A resumed run feeds its stored trials and the new ones through the same order.
    let mut child = std::process::Command::new(gauntlet_bin())
        .env("GAUNTLET_SCORE_KEEP", "5")
        .args(with_agent(&resumed, "1", "cmd:sleep 0.05; echo done"))
        .arg("--quiet")
        .spawn()
        .unwrap();
    let lines = || {
        std::fs::read_to_string(resumed.join("trials.jsonl"))
            .map(|t| t.lines().count())
            .unwrap_or(0)
    };
    while lines() < 10 && child.try_wait().unwrap().is_none() {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let o = gauntlet()
        .env("GAUNTLET_SCORE_KEEP", "5")
        .args(["run", "--resume", s(&resumed), s(&suite), "--quiet"])
        .output()
        .unwrap();
    assert!(o.status.code().unwrap() <= 1, "{o:?}");
    let o = gauntlet()
        .args(with_agent(&suite.join("whole"), "3", "cmd:echo done"))
        .output()
        .unwrap();
    assert!(o.status.code().unwrap() <= 1, "{o:?}");
    let (c, d) = (results(&resumed), results(&suite.join("whole")));
    assert_eq!(c["trials"].as_array().unwrap().len(), 69);
    assert_eq!(
        timeless(&c)[6],
        timeless(&d)[6],
        "every trial once, in plan order"
    );
    assert_eq!(left(&resumed), Vec::<String>::new());
}

#[test]
fn help_reads_well() {
    for (name, args) in [
        ("help", vec!["--help"]),
        ("run_help", vec!["run", "--help"]),
        ("score_help", vec!["score", "--help"]),
        ("report_help", vec!["report", "--help"]),
    ] {
        let o = run(&args);
        assert_eq!(o.code, 0, "{}", o.stderr);
        insta::assert_snapshot!(name, o.stdout);
    }
}

/// Regression: `--concurrency 0` was taken as 1 and an absurd `--epochs` allocated gigabytes
/// before anything ran; both are refused up front, saying what to change.
#[test]
fn absurd_run_options_are_refused_before_anything_runs() {
    let (_tmp, suite) = example();
    let o = run(&["run", s(&suite), "--concurrency", "0"]);
    assert_eq!(o.code, 2, "{}", o.stderr);
    assert!(
        o.stderr.contains("`concurrency` must be at least 1"),
        "{}",
        o.stderr
    );
    let o = run(&["run", s(&suite), "--epochs", "4000000000"]);
    assert_eq!(o.code, 2, "{}", o.stderr);
    assert!(o.stderr.contains("lower --epochs"), "{}", o.stderr);
    assert!(
        !suite.join(".gauntlet/runs").exists(),
        "nothing was written"
    );
}

/// Regression: a world script whose state could not be read back (nested 200 deep) gave
/// `final_state: null` silently, and its trial was judged as the agent's. Now the trial is an
/// error that says why, and the run goes on.
#[test]
fn a_world_state_that_cannot_be_read_back_fails_its_trial_with_the_reason() {
    let tmp = tempfile::tempdir().unwrap();
    let suite = tmp.path();
    let write = |name: &str, text: &str| {
        let p = suite.join(name);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    };
    write(
        "gauntlet.yaml",
        "name: deep\nagent: script:reference\nworlds: [worlds/w.yaml]\ndatasets:\n  - path: cases\n    world: w\n",
    );
    write(
        "worlds/w.yaml",
        "name: w\nscript: w.js\nstate: {t: {}}\ntools:\n  - name: nest\n    kind: write\n    parameters: {type: object}\n",
    );
    write(
        "worlds/w.js",
        "function nest(args, ctx) { let o = {}; const top = o; for (let i = 0; i < 200; i++) { o.x = {}; o = o.x; } ctx.state.t.deep = top; return 'ok'; }\n",
    );
    write(
        "cases/c.yaml",
        "case_id: deep-state\nuser_input: nest it\nexpected_outcome: {t.deep: {$present: true}}\nreference_trajectory:\n  - tool: nest\n    args: {}\n  - answer: done\n",
    );
    let out = suite.join("run");
    // No gates of its own; its one trial is a harness error, so no trial could run: exit 3.
    let o = run(&["run", s(suite), "--out", s(&out), "--quiet"]);
    assert_eq!(o.code, 3, "{}", o.stderr);
    let trials = read_trials(&out);
    assert_eq!(trials[0]["status"], "error");
    assert!(
        trials[0]["error"]
            .as_str()
            .unwrap()
            .contains("nested more than 128 levels deep"),
        "{}",
        trials[0]
    );
}
