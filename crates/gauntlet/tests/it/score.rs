//! `gauntlet score` and custom evaluators: stored trajectories re-scored, the seed formats read.

use crate::common::*;

#[test]
fn trajectories_without_a_trace_id_are_counted_and_the_first_five_named() {
    let tmp = tempfile::tempdir().unwrap();
    let sample: Value = serde_json::from_str(
        &std::fs::read_to_string(repo().join("examples/trajectories/article-sample.json")).unwrap(),
    )
    .unwrap();
    let file = tmp.path().join("seven.jsonl");
    std::fs::write(&file, format!("{sample}\n").repeat(7)).unwrap();
    let o = run(&[
        "score",
        s(&file),
        "--cases",
        s(&repo().join("examples/incident-desk")),
    ]);
    assert!(o.code <= 1, "{}", o.stderr);
    let note = o
        .stderr
        .lines()
        .find(|l| l.starts_with("note: 7 trajectories had no valid trace id"))
        .unwrap_or_else(|| panic!("{}", o.stderr));
    assert_eq!(note.matches('#').count(), 5, "{note}");
    assert!(note.ends_with(", ..."), "{note}");
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
    // The log carries no trace id: the trial gets a deterministic one, so the rubric's
    // observability gate holds and the scored sample passes its gates.
    assert_eq!(o.code, 0, "{}", o.stderr);
    let obs = results["rubric"]["dimensions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["name"] == "Observability")
        .unwrap();
    assert_eq!(obs["passed"], true);
    let id = results["trials"][0]["trace_id"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        id.len() == 32 && id.bytes().all(|b| b.is_ascii_hexdigit()) && id != "0".repeat(32),
        "{id}"
    );
    let again = run(&[
        "score",
        s(&repo().join("examples/trajectories/article-sample.json")),
        "--cases",
        s(&repo().join("examples/incident-desk")),
        "--json",
    ]);
    let again: Value = serde_json::from_str(&again.stdout).unwrap();
    assert_eq!(again["trials"][0]["trace_id"], id.as_str(), "deterministic");
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
    let live: Value = stored_results(&out_dir);
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
fn score_on_a_stored_run_gives_the_live_run_s_scores_and_statuses_trial_by_trial() {
    let (_tmp, suite) = example();
    for agent in [
        "script:reference",
        "script:naive",
        "script:skip-confirmation",
    ] {
        let out_dir = suite.join(format!("out-{}", agent.replace(':', "-")));
        let live = run(&[
            "run",
            s(&suite),
            "--agent",
            agent,
            "--epochs",
            "2",
            "--out",
            s(&out_dir),
            "--quiet",
        ]);
        assert!(live.code == 0 || live.code == 1, "{}", live.stderr);
        let rescored_dir = suite.join(format!("rescored-{}", agent.replace(':', "-")));
        let o = run(&[
            "score",
            s(&out_dir.join("trials.jsonl")),
            "--cases",
            s(&suite),
            "--out",
            s(&rescored_dir),
            "--quiet",
        ]);
        assert!(o.code == 0 || o.code == 1, "{}", o.stderr);
        let records = |dir: &Path| -> Vec<Value> {
            let mut v: Vec<Value> = std::fs::read_to_string(dir.join("trials.jsonl"))
                .unwrap()
                .lines()
                .map(|l| serde_json::from_str(l).unwrap())
                .collect();
            v.sort_by_key(|r| {
                (
                    r["case_id"].as_str().unwrap().to_owned(),
                    r["epoch"].as_u64(),
                )
            });
            v
        };
        let (a, b) = (records(&out_dir), records(&rescored_dir));
        assert_eq!(a.len(), b.len(), "{agent}");
        for (x, y) in a.iter().zip(&b) {
            let what = format!("{agent} {} epoch {}", x["case_id"], x["epoch"]);
            assert_eq!(x["status"], y["status"], "{what}");
            assert_eq!(x["scores"], y["scores"], "{what}");
        }
    }
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
    // An evaluator that cannot judge is the harness's failure, not a verdict on the agent:
    // the trial is an error (its other scores kept), and a run of nothing else exits 3.
    assert_eq!(
        r["trials"][0]["status"], "error",
        "a broken evaluator makes its trial a harness error"
    );
    assert!(
        r["trials"][0]["error"]
            .as_str()
            .unwrap()
            .contains("evaluator `broken` could not judge the trial"),
        "{}",
        r["trials"][0]
    );
    assert_eq!(o.code, 3, "{}", o.stderr);
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
    // The looping evaluator cannot judge any trial: each is a harness error, and exit 3.
    assert_eq!(o.code, 3, "{}", o.stderr);
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

/// Regression: a file of invalid items was read to its end and every problem printed (6.5
/// million lines for 50 MB); now `score` stops after a bounded number and says so.
#[test]
fn a_file_of_bad_items_is_summarised_not_echoed() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("bad.jsonl");
    let line = r#"{"case_id": 1}"#;
    std::fs::write(&file, format!("{line}\n").repeat(10_000)).unwrap();
    let o = run(&[
        "score",
        s(&file),
        "--cases",
        s(&repo().join("examples/incident-desk")),
    ]);
    assert_eq!(o.code, 2, "{}", o.stderr);
    let errors = o.stderr.lines().filter(|l| l.starts_with("error:")).count();
    assert!(errors <= 51, "{errors} error lines");
    assert!(
        o.stderr.contains("stopped after 50 problems"),
        "{}",
        o.stderr
    );
}

/// `score` scores in batches across threads and, when it neither stores nor prints the whole
/// results, keeps only light summaries: it prints the same summary as a stored scoring of the
/// same file, and the trials come out in one order, epochs ascending per case, whatever the
/// file's order.
#[test]
fn batched_light_scoring_judges_as_a_stored_scoring_does() {
    let (tmp, suite) = example();
    let (file, many) = many_trials(tmp.path(), &suite);
    let light = run(&["score", s(&file), "--cases", s(&suite)]);
    let stored_dir = tmp.path().join("stored");
    let stored = run(&[
        "score",
        s(&file),
        "--cases",
        s(&suite),
        "--out",
        s(&stored_dir),
    ]);
    assert_eq!(light.code, stored.code, "{}", light.stderr);
    assert!(
        light.stdout.contains(&format!("trials {many}")),
        "{}",
        light.stdout
    );
    // The same summary, but for the run id in its first line (it holds the time).
    let body = |t: &str| t.lines().skip(1).collect::<Vec<_>>().join("\n");
    assert!(
        light.stdout.starts_with("suite incident-desk"),
        "{}",
        light.stdout
    );
    assert_eq!(body(&light.stdout), body(&stored.stdout));

    let whole = run(&["score", s(&file), "--cases", s(&suite), "--json"]);
    let a: serde_json::Value = serde_json::from_str(&whole.stdout).unwrap();
    let b: serde_json::Value = stored_results(&stored_dir);
    for key in [
        "verdict",
        "metrics",
        "intervals",
        "evaluators",
        "segments",
        "gates",
        "rubric",
    ] {
        assert_eq!(a[key], b[key], "{key}");
    }
    let order = |v: &serde_json::Value| -> Vec<(String, u64)> {
        v["trials"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| {
                (
                    t["case_id"].as_str().unwrap().to_owned(),
                    t["epoch"].as_u64().unwrap(),
                )
            })
            .collect()
    };
    let trials = order(&a);
    assert_eq!(trials.len(), many);
    assert_eq!(trials, order(&b));
    for pair in trials.windows(2) {
        if pair[0].0 == pair[1].0 {
            assert!(pair[0].1 < pair[1].1, "{pair:?}");
        }
    }
}

/// A file of many trials (more than one scoring batch, in reverse order) from a live run of
/// the example suite with three epochs; the file and how many trials it holds.
fn many_trials(dir: &Path, suite: &Path) -> (PathBuf, usize) {
    let live = dir.join("live");
    let o = run(&[
        "run",
        s(suite),
        "--agent",
        "script:naive",
        "--epochs",
        "3",
        "--out",
        s(&live),
        "--quiet",
    ]);
    assert!(o.code <= 1, "{}", o.stderr);
    let lines: Vec<String> = std::fs::read_to_string(live.join("trials.jsonl"))
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect();
    let mut many = Vec::new();
    for round in 0..40 {
        for l in lines.iter().rev() {
            let mut v: serde_json::Value = serde_json::from_str(l).unwrap();
            v["epoch"] = serde_json::json!(v["epoch"].as_u64().unwrap() + 3 * round);
            many.push(v.to_string());
        }
    }
    let file = dir.join("many.jsonl");
    std::fs::write(&file, many.join("\n") + "\n").unwrap();
    (file, many.len())
}

#[test]
fn a_scoring_too_large_to_hold_keeps_its_summaries_on_disk_and_gives_the_same_results() {
    let (tmp, suite) = example();
    let (file, many) = many_trials(tmp.path(), &suite);
    let score = |out: &Path, keep: Option<&str>, json: bool| {
        let mut cmd = gauntlet();
        cmd.args(["score", s(&file), "--cases", s(&suite), "--out", s(out)]);
        if json {
            cmd.arg("--json");
        }
        if let Some(k) = keep {
            cmd.env("GAUNTLET_SCORE_KEEP", k);
        }
        let o = cmd.output().unwrap();
        assert!(o.status.code() == Some(0) || o.status.code() == Some(1));
        (
            String::from_utf8_lossy(&o.stdout).into_owned(),
            stored_results(out),
        )
    };
    let (_, held) = score(&tmp.path().join("held"), None, false);
    let (printed, spilled) = score(&tmp.path().join("spilled"), Some("100"), true);
    assert_eq!(
        serde_json::from_str::<Value>(&printed).unwrap(),
        spilled,
        "--json prints what results.json and summaries.jsonl hold"
    );
    for key in [
        "verdict",
        "metrics",
        "intervals",
        "evaluators",
        "segments",
        "flaky_cases",
        "gates",
        "rubric",
    ] {
        assert_eq!(held[key], spilled[key], "{key}");
    }
    // The same summaries; a spilled scoring keeps them in file order.
    let sorted = |v: &Value| {
        let mut t = v["trials"].as_array().unwrap().clone();
        t.sort_by_key(|t| {
            (
                t["case_id"].as_str().unwrap().to_owned(),
                t["epoch"].as_u64(),
            )
        });
        t
    };
    assert_eq!(sorted(&held).len(), many);
    assert_eq!(sorted(&held), sorted(&spilled));
    // The run folder reads back as any other, and no spill file is left in it.
    let o = run(&["report", s(&tmp.path().join("spilled")), "--format", "md"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let left: Vec<_> = std::fs::read_dir(tmp.path().join("spilled"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(".summaries"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
    // With nothing stored, the terminal summary gives the metrics and says why no table.
    let o = gauntlet()
        .args(["score", s(&file), "--cases", s(&suite)])
        .env("GAUNTLET_SCORE_KEEP", "100")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.contains(&format!("({many} trials: too many to list")),
        "{text}"
    );
    assert!(text.contains(&format!("trials {many}")), "{text}");
}
