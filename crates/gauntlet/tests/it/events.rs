//! `gauntlet run --events PATH|-`: the run's event stream as NDJSON, as scripts read it.

use crate::common::*;

fn lines(text: &str) -> Vec<Value> {
    text.lines()
        .map(|l| {
            serde_json::from_str(l).unwrap_or_else(|e| panic!("not one JSON object: {e}: {l}"))
        })
        .collect()
}

#[test]
fn events_on_stdout_are_one_json_object_a_line_and_nothing_else() {
    let (tmp, suite) = example();
    let o = run(&[
        "run",
        s(&suite),
        "--events",
        "-",
        "--out",
        s(&tmp.path().join("run")),
    ]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let events = lines(&o.stdout);
    let kind = |e: &Value| e["type"].as_str().unwrap().to_owned();
    assert_eq!(kind(&events[0]), "run_started");
    assert_eq!(kind(events.last().unwrap()), "run_finished");
    assert_eq!(events.last().unwrap()["verdict"], "passed");
    let started = events.iter().filter(|e| kind(e) == "trial_started").count();
    let finished: Vec<&Value> = events
        .iter()
        .filter(|e| kind(e) == "trial_finished")
        .collect();
    assert_eq!(started, 23);
    assert_eq!(finished.len(), 23);
    for e in &events {
        let at = e["at"].as_str().unwrap();
        assert!(at.parse::<jiff::Timestamp>().is_ok(), "not RFC 3339: {at}");
    }
    for f in &finished {
        assert!(f["case_id"].is_string() && f["epoch"].is_u64(), "{f}");
        assert_eq!(f["status"], "passed", "{f}");
    }
    // Each trial starts before it finishes.
    for f in &finished {
        let pos = |t: &str| {
            events
                .iter()
                .position(|e| kind(e) == t && e["case_id"] == f["case_id"])
                .unwrap()
        };
        assert!(pos("trial_started") < pos("trial_finished"));
    }
}

#[test]
fn events_to_a_file_leave_the_summary_on_stdout() {
    let (tmp, suite) = example();
    let file = tmp.path().join("events.ndjson");
    let o = run(&[
        "run",
        s(&suite),
        "--agent",
        "script:skip-confirmation",
        "--events",
        s(&file),
    ]);
    assert_eq!(o.code, 1, "{}", o.stderr);
    assert!(o.stdout.contains("verdict: FAILED"), "{}", o.stdout);
    let events = lines(&std::fs::read_to_string(&file).unwrap());
    let last = events.last().unwrap();
    assert_eq!(last["type"], "run_finished");
    assert_eq!(last["verdict"], "failed");
    let failed: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "trial_finished" && e["status"] == "failed")
        .collect();
    assert!(!failed.is_empty());
    assert!(
        failed.iter().all(|e| e["failed"]
            .as_array()
            .unwrap()
            .iter()
            .any(|n| n == "confirmation_before_write" || n == "StateVerification")),
        "{failed:?}"
    );
}

/// The lines of one trial, without their times (a replay reconstructs them).
fn without_times(events: &[Value]) -> Vec<Value> {
    events
        .iter()
        .map(|e| {
            let mut e = e.clone();
            e.as_object_mut().unwrap().remove("at");
            // Wall-clock figures differ from run to run of the same trial.
            for field in ["duration_ms", "latency_ms", "at_ms"] {
                if let Some(v) = e.get_mut(field) {
                    *v = Value::Null;
                }
            }
            e
        })
        .collect()
}

#[test]
fn inside_each_trial_the_stream_tells_tool_calls_faults_answers_and_verdicts_as_they_happen() {
    let (tmp, suite) = example();
    let o = run(&[
        "run",
        s(&suite),
        "--events",
        "-",
        "--concurrency",
        "1",
        "--out",
        s(&tmp.path().join("run")),
    ]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let events = lines(&o.stdout);
    let kinds: std::collections::BTreeSet<&str> =
        events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    for kind in [
        "user_message",
        "tool_call",
        "fault_injected",
        "confirmation_request",
        "confirmation_response",
        "final_answer",
        "verdict",
    ] {
        assert!(kinds.contains(kind), "no {kind} line in {kinds:?}");
    }
    // One trial at a time: each in-trial line sits between its trial's start and finish, and
    // names the trial.
    let mut current: Option<(Value, Value)> = None;
    for e in &events {
        let id = (e["case_id"].clone(), e["epoch"].clone());
        match e["type"].as_str().unwrap() {
            "trial_started" => current = Some(id),
            "trial_finished" => {
                assert_eq!(current.take(), Some(id));
            }
            "run_started" | "run_finished" => assert!(current.is_none()),
            _ => assert_eq!(current.as_ref(), Some(&id), "{e}"),
        }
        let at = e["at"].as_str().unwrap();
        assert!(at.parse::<jiff::Timestamp>().is_ok(), "not RFC 3339: {at}");
    }
    // A tool call carries what the trajectory stores; a verdict names its evaluator.
    let call = events.iter().find(|e| e["type"] == "tool_call").unwrap();
    for field in ["id", "tool", "arguments", "step"] {
        assert!(call.get(field).is_some(), "{call}");
    }
    let verdict = events.iter().find(|e| e["type"] == "verdict").unwrap();
    for field in ["evaluator", "passed", "value", "severity", "dimension"] {
        assert!(verdict.get(field).is_some(), "{verdict}");
    }
    // The stored run replays as the same stream, line for line.
    let replayed = run(&["report", s(&tmp.path().join("run")), "--format", "events"]);
    assert_eq!(replayed.code, 0, "{}", replayed.stderr);
    let replayed = lines(&replayed.stdout);
    for e in &replayed {
        let at = e["at"].as_str().unwrap();
        assert!(at.parse::<jiff::Timestamp>().is_ok(), "not RFC 3339: {at}");
    }
    assert_eq!(replayed.len(), events.len());
    for (r, e) in without_times(&replayed).iter().zip(without_times(&events)) {
        assert_eq!(*r, e, "the replayed line differs from the live one");
    }
}

#[test]
fn without_events_a_run_does_not_copy_its_trials_events_and_its_folder_is_unchanged() {
    // The run folder is the same whether or not someone follows the trials live.
    let (tmp, suite) = example();
    let followed = tmp.path().join("followed");
    let plain = tmp.path().join("plain");
    for (out, events) in [(&followed, true), (&plain, false)] {
        let mut args = vec!["run", s(&suite), "--concurrency", "1", "--out", s(out)];
        if events {
            args.extend(["--events", "/dev/null"]);
        }
        let o = run(&args);
        assert_eq!(o.code, 0, "{}", o.stderr);
    }
    let trajectories = |dir: &std::path::Path| -> Vec<Value> {
        std::fs::read_to_string(dir.join("trials.jsonl"))
            .unwrap()
            .lines()
            .map(|l| {
                let r: Value = serde_json::from_str(l).unwrap();
                json!({"case": r["case_id"], "events": without_times(r["trajectory"]["events"].as_array().unwrap()), "scores": r["scores"].as_array().unwrap().len()})
            })
            .collect()
    };
    // Trials finish in any order; compare them case by case.
    let sorted = |mut t: Vec<Value>| {
        t.sort_by_key(|t| t["case"].to_string());
        t
    };
    let (followed, plain) = (
        sorted(trajectories(&followed)),
        sorted(trajectories(&plain)),
    );
    assert_eq!(followed.len(), plain.len());
    for (f, p) in followed.iter().zip(&plain) {
        assert_eq!(f, p, "a trial's trajectory differs when followed live");
    }
}

/// Issue 48: `--events /dev/full` dropped the whole stream with exit 0 and no word; now one
/// warning, and exit 3 at the end (the run itself is kept).
#[cfg(target_os = "linux")]
#[test]
fn events_to_a_full_disk_warn_once_and_exit_3() {
    let (tmp, suite) = example();
    let out = tmp.path().join("run");
    let o = run(&[
        "run",
        s(&suite),
        "--events",
        "/dev/full",
        "--out",
        s(&out),
        "--quiet",
    ]);
    assert_eq!(o.code, 3, "{}", o.stderr);
    assert_eq!(
        o.stderr.matches("warning: --events /dev/full").count(),
        1,
        "{}",
        o.stderr
    );
    assert!(
        o.stderr.contains("failed to write the events"),
        "{}",
        o.stderr
    );
    assert!(out.join("results.json").is_file());
}

/// Issue 48: `--events RUN/trials.jsonl` truncated the run's own records (1,958 finished
/// trials destroyed on a resume); any path inside the run folder is refused.
#[test]
fn events_inside_the_run_folder_are_refused() {
    let (tmp, suite) = example();
    let out = tmp.path().join("run");
    std::fs::create_dir_all(&out).unwrap();
    for events in [
        out.join("trials.jsonl"),
        out.join("..").join("run").join("x.ndjson"),
    ] {
        let o = run(&[
            "run",
            s(&suite),
            "--events",
            s(&events),
            "--out",
            s(&out),
            "--quiet",
        ]);
        assert_eq!(o.code, 2, "{}", o.stderr);
        assert!(o.stderr.contains("inside the run folder"), "{}", o.stderr);
    }
}
