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
