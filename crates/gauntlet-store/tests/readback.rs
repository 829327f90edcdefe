//! Whatever a trial recorded, the run folder it is written into reads back with every reader
//! (issue 48: H2, M1, M2, M8): adversarial trajectories written through the store's writer,
//! then read by `read_results`, `read_summaries`, `read_results_brief`, `read_trials`,
//! `read_trials_lean`, `StoredTrials`, `read_trajectories` and `replay`.

use std::path::Path;

use gauntlet_model::{Event, RunEvent, RunResults, Score, Trajectory, TrialRecord, TrialSummary};
use gauntlet_store::{
    RunWriter, SpilledSummaries, StoredTrials, read_header, read_results, read_results_brief,
    read_summaries, read_trajectories, read_trials, read_trials_lean, replay,
};
use proptest::prelude::*;
use serde_json::{Value, json};

fn header() -> gauntlet_model::RunHeader {
    gauntlet_model::RunHeader::new("r1", "s", "script:reference", "2026-12-01T10:00:00Z")
}

fn results(trials: Vec<TrialSummary>) -> RunResults {
    let mut r: RunResults = serde_json::from_value(json!({
        "format_version": gauntlet_model::FORMAT_VERSION,
        "header": header(),
        "finished_at": "2026-12-01T10:00:09Z",
        "verdict": "passed",
        "metrics": {},
        "intervals": {},
        "evaluators": {},
        "segments": {},
        "gates": [],
    }))
    .unwrap();
    r.trials = trials;
    r
}

fn record(case: &str, initial: Value, final_state: Value, trajectory: Trajectory) -> TrialRecord {
    let mut r: TrialRecord = serde_json::from_value(json!({
        "case_id": case, "epoch": 0, "seed": 1,
        "trace_id": "0af7651916cd43dd8448eb211c80319c", "status": "passed",
        "initial_state": initial, "final_state": final_state,
        "trajectory": {"events": []}, "scores": [], "duration_ms": 1.0,
    }))
    .unwrap();
    r.trajectory = trajectory;
    r
}

/// A value nested `depth` levels, arrays and objects in turn.
fn nested(depth: usize, leaf: Value) -> Value {
    let mut v = leaf;
    for level in 0..depth {
        v = if level % 2 == 0 {
            json!([v])
        } else {
            json!({ "k": v })
        };
    }
    v
}

/// Writes `records` as a run (summaries spilled or not), then reads it with every reader.
fn write_then_read_all(dir: &Path, records: &[TrialRecord], spill: bool) {
    let mut writer = RunWriter::create(dir, &header()).unwrap();
    let mut summaries = Vec::new();
    let mut spilled = SpilledSummaries::create(Some(dir)).unwrap();
    for r in records {
        writer.append(r).unwrap();
        let s = TrialSummary::of(r);
        spilled.push(&s).unwrap();
        summaries.push(s);
    }
    if spill {
        writer
            .finish_spilled(&results(vec![]), &mut spilled)
            .unwrap();
    } else {
        writer.finish(&results(summaries)).unwrap();
    }
    read_header(dir).unwrap();
    assert_eq!(read_results(dir).unwrap().trials.len(), records.len());
    assert_eq!(
        read_summaries(dir)
            .unwrap()
            .collect::<Result<Vec<_>, _>>()
            .unwrap()
            .len(),
        records.len()
    );
    assert_eq!(read_results_brief(dir).unwrap().trials.len(), records.len());
    for trials in [
        read_trials(dir)
            .unwrap()
            .collect::<Result<Vec<_>, _>>()
            .unwrap(),
        read_trials_lean(dir)
            .unwrap()
            .collect::<Result<Vec<_>, _>>()
            .unwrap(),
    ] {
        assert_eq!(trials.len(), records.len());
        for t in trials {
            // What is read back writes and reads again the same: nothing lost on the way.
            let text = serde_json::to_string(&t).unwrap();
            assert_eq!(serde_json::from_str::<TrialRecord>(&text).unwrap(), t);
        }
    }
    let mut stored = StoredTrials::open(dir).unwrap();
    for r in records {
        assert!(stored.get(&r.case_id, r.epoch).unwrap().is_some());
    }
    assert_eq!(
        read_trajectories(dir)
            .unwrap()
            .collect::<Result<Vec<_>, _>>()
            .unwrap()
            .len(),
        records.len()
    );
    for event in replay(dir).unwrap() {
        if let RunEvent::TrialEvent { event, .. } = event.unwrap() {
            let text = serde_json::to_string(&event).unwrap();
            serde_json::from_str::<Event>(&text).unwrap();
        }
    }
}

fn number() -> impl Strategy<Value = f64> {
    prop_oneof![
        Just(f64::NAN),
        Just(f64::INFINITY),
        Just(f64::NEG_INFINITY),
        Just(1e308),
        Just(-1e308),
        any::<f64>(),
    ]
}

fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        8 => ".{0,40}",
        1 => Just("é".repeat((1 << 20) / 2 + 7)),
    ]
}

prop_compose! {
    fn adversarial_trajectory()(
        arg_depth in 0usize..400,
        result_depth in 0usize..400,
        wait in number(),
        cost in number(),
        at in number(),
        answer in text(),
        said in text(),
    ) -> Trajectory {
        let call: gauntlet_model::ToolCall = serde_json::from_value(json!({
            "id": "call-1", "step": 1, "tool": "get_incident",
            "arguments": {}, "result": {},
        }))
        .unwrap();
        let mut call = Box::new(call);
        call.arguments = nested(arg_depth, json!(said.clone()));
        call.result = Some(nested(result_depth, json!(1e308)));
        call.at_ms = at;
        call.latency_ms = wait;
        let model: Event = serde_json::from_value(json!({
            "type": "model_call", "model": "m", "prompt_tokens": 1, "completion_tokens": 1,
            "cost_eur": 0.0, "latency_ms": 0.0,
        }))
        .unwrap();
        let model = match model {
            Event::ModelCall { model, prompt_tokens, completion_tokens, latency_ms, ttft_ms,
                simulated_user, error, fault, .. } => Event::ModelCall {
                model, prompt_tokens, completion_tokens, cost_eur: cost, latency_ms, ttft_ms,
                simulated_user, at_ms: Some(at), error, fault,
            },
            other => other,
        };
        Trajectory {
            events: vec![
                Event::AgentMessage { step: 1, text: said },
                Event::Wait { step: 1, ms: wait },
                Event::ToolCall(call),
                model,
                Event::FinalAnswer { text: answer.clone() },
            ],
            final_answer: Some(answer),
            side_effects: vec![],
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// H2: whatever a trial recorded (nesting past serde_json's 128 levels, numbers that are
    /// not finite, texts past the limit), every reader reads the run folder back.
    #[test]
    fn whatever_a_trial_recorded_every_reader_reads_it_back(
        trajectory in adversarial_trajectory(),
        state_depth in 0usize..300,
        score_value in number(),
        details_depth in 0usize..300,
        duration in number(),
        spill in any::<bool>(),
    ) {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("run");
        let mut r = record(
            "deep",
            json!({"db": nested(state_depth, json!(0))}),
            json!({"db": nested(state_depth, json!(1))}),
            trajectory,
        );
        let mut score: Score = serde_json::from_value(json!({
            "name": "output_assertions", "dimension": "outcome", "value": 0.0, "score": 0.0,
            "passed": false, "severity": "error",
        }))
        .unwrap();
        score.value = score_value;
        score.score = score_value;
        score.details = nested(details_depth, json!("x"));
        r.scores.push(score);
        r.duration_ms = duration;
        write_then_read_all(&dir, &[r, record("plain", json!({}), json!({}), Trajectory::default())], spill);
    }
}

/// H2: the probe's own inputs, an argument nested 3,000 deep and `tools.sleep(1e308)`.
#[test]
fn an_argument_nested_3000_deep_and_a_wait_of_1e308_s_read_back() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("run");
    let mut call: gauntlet_model::ToolCall = serde_json::from_value(json!({
        "id": "call-1", "step": 1, "tool": "get_incident", "arguments": {},
    }))
    .unwrap();
    call.arguments = json!({"incident_id": nested(3000, json!("INC-1"))});
    let trajectory = Trajectory {
        events: vec![
            Event::ToolCall(Box::new(call)),
            Event::Wait {
                step: 2,
                ms: 1e308 * 1000.0,
            },
        ],
        ..Trajectory::default()
    };
    let r = record("deep", json!({}), json!({}), trajectory);
    write_then_read_all(&dir, &[r], false);
    let back = read_trials(&dir).unwrap().next().unwrap().unwrap();
    let text = serde_json::to_string(&back.trajectory).unwrap();
    assert!(text.contains("nested deeper than 64 levels"), "{text:.300}");
    assert!(text.contains("\"ms\":86400000"), "{text:.300}");
}

/// Runs `read` on another thread: a reader that blocks on a FIFO fails the test, not hangs it.
fn within_seconds<T: Send + 'static>(read: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || tx.send(read()));
    rx.recv_timeout(std::time::Duration::from_secs(10))
        .expect("the reader blocked")
}

fn small_run(dir: &Path) {
    let r = record("a", json!({}), json!({"done": true}), Trajectory::default());
    write_then_read_all(dir, &[r], false);
}

/// M1: a FIFO planted as a run file, or `summaries.jsonl -> /dev/zero`, is an error naming the
/// file, at once.
#[cfg(unix)]
#[test]
fn a_fifo_or_dev_zero_planted_in_a_run_folder_fails_cleanly() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("run");
    small_run(&dir);
    let summaries = dir.join("summaries.jsonl");
    std::fs::remove_file(&summaries).unwrap();
    std::os::unix::fs::symlink("/dev/zero", &summaries).unwrap();
    let d = dir.clone();
    let e = within_seconds(move || read_results(&d).map(|_| ()).unwrap_err().to_string());
    assert!(
        e.contains("summaries.jsonl") && e.contains("regular files only"),
        "{e}"
    );
    std::fs::remove_file(&summaries).unwrap();
    let c = std::ffi::CString::new(summaries.to_str().unwrap()).unwrap();
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
    for read in [
        |d: &Path| read_results(d).map(|_| ()),
        |d: &Path| read_summaries(d).map(|_| ()),
        |d: &Path| read_results_brief(d).map(|_| ()),
    ] {
        let d = dir.clone();
        assert!(within_seconds(move || read(&d).is_err()));
    }
    let trials = dir.join("trials.jsonl");
    std::fs::remove_file(&trials).unwrap();
    let c = std::ffi::CString::new(trials.to_str().unwrap()).unwrap();
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
    let d = dir.clone();
    assert!(within_seconds(move || read_trials(&d).is_err()));
    let d = dir.clone();
    assert!(within_seconds(move || StoredTrials::open(&d).is_err()));
}

/// M2: a run folder whose `states` is a symlink to another folder does not publish what lies
/// there, as `../x` is refused.
#[cfg(unix)]
#[test]
fn a_stored_state_behind_a_symlinked_states_folder_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let secrets = tmp.path().join("elsewhere");
    std::fs::create_dir_all(&secrets).unwrap();
    std::fs::write(
        secrets.join("config.json"),
        r#"{"aws_secret_access_key": "planted"}"#,
    )
    .unwrap();
    let dir = tmp.path().join("run");
    let r = record(
        "a",
        json!({"$state": "states/config.json"}),
        json!({"$state": "states/config.json"}),
        Trajectory::default(),
    );
    let mut writer = RunWriter::create(&dir, &header()).unwrap();
    writer.append(&r).unwrap();
    writer.finish(&results(vec![TrialSummary::of(&r)])).unwrap();
    std::os::unix::fs::symlink(&secrets, dir.join("states")).unwrap();
    let e = read_trials(&dir)
        .unwrap()
        .next()
        .unwrap()
        .unwrap_err()
        .to_string();
    assert!(e.contains("outside the run folder"), "{e}");
    assert!(!e.contains("planted"));
}

/// M8: past the summaries kept in memory, `summaries.jsonl` is a spill file renamed into place;
/// it gets the mode every other file of the folder gets (the umask's), not 0600.
#[cfg(unix)]
#[test]
fn a_spilled_summaries_file_gets_the_folders_mode() {
    use std::os::unix::fs::PermissionsExt;
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("run");
    let r = record("a", json!({}), json!({}), Trajectory::default());
    write_then_read_all(&dir, &[r], true);
    let mode = |f: &str| std::fs::metadata(dir.join(f)).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode("summaries.jsonl"), mode("trials.jsonl"));
    assert_eq!(mode("summaries.jsonl"), mode("results.json"));
}
