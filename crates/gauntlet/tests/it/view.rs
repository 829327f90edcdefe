//! `gauntlet view`: the JSON API as scripts read it and the pages as people use them, in
//! Chromium (Playwright): runs and a suite's trend, a run filtered, a trajectory, a live run,
//! two runs compared, two raters labelling, then `calibrate` on the label file they wrote.

use std::time::{Duration, Instant};

use crate::common::*;

fn run_id(dir: &Path) -> String {
    let header: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("run.json")).unwrap()).unwrap();
    header["run_id"].as_str().unwrap().to_owned()
}

/// Stops a child on drop (a failed assertion must not leave a server or a run behind).
struct Killed(std::process::Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn sigterm(child: &std::process::Child) {
    let sent = std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
}

#[test]
#[cfg_attr(
    not(have_chromium),
    ignore = "needs Playwright (pip install playwright) and Chromium (apt-get install chromium)"
)]
fn the_viewer_serves_runs_trials_a_live_run_comparisons_and_labels() {
    let (tmp, suite) = example();
    let good = suite.join("good");
    let bad = suite.join("bad");
    for (agent, out) in [("script:reference", &good), ("script:naive", &bad)] {
        let o = run(&[
            "run",
            s(&suite),
            "--agent",
            agent,
            "--out",
            s(out),
            "--quiet",
        ]);
        assert!(o.code <= 1, "{}", o.stderr);
    }
    let (_, trajectory) = evil_trajectory();
    let evil_file = tmp.path().join("evil.json");
    std::fs::write(&evil_file, trajectory.to_string()).unwrap();
    let evil = suite.join("evil");
    let o = run(&[
        "score",
        s(&evil_file),
        "--cases",
        s(&suite),
        "--out",
        s(&evil),
        "--quiet",
    ]);
    assert_eq!(o.code, 1, "{}", o.stderr);
    // A run still going while the viewer shows it: an agent that takes half a second a trial.
    let live = suite.join("live");
    let live_run = Killed(
        std::process::Command::new(gauntlet_bin())
            .args([
                "run",
                s(&suite),
                "--concurrency",
                "1",
                "--quiet",
                "--out",
                s(&live),
            ])
            .args(["--agent", "cmd:sh -c \"sleep 0.5; echo I could not help\""])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap(),
    );
    let started = Instant::now();
    while std::fs::metadata(live.join("trials.jsonl")).map_or(0, |m| m.len()) == 0 {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the live run wrote no trial"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let labels = tmp.path().join("labels.jsonl");
    let mut cmd = std::process::Command::new(gauntlet_bin());
    cmd.args([
        "view",
        s(&suite),
        "--listen",
        "127.0.0.1:0",
        "--labels",
        s(&labels),
    ]);
    let (child, line) = spawn_server(cmd, &tmp.path().join("view.stderr"));
    let mut viewer = Killed(child);
    let url = line["url"].as_str().unwrap();
    let token = line["token"].as_str().unwrap();
    assert!(url.starts_with("http://127.0.0.1:") && url.ends_with(&format!("/?token={token}")));
    let (good_id, bad_id) = (run_id(&good), run_id(&bad));
    let plan = serde_json::json!({
        "suite": "incident-desk",
        "run": bad_id,
        "other": good_id,
        "live": run_id(&live),
        "evil": run_id(&evil),
        "label": [
            ["fault-timeout#0", "alice", "fail", "timed out, said nothing useful"],
            ["fault-forbidden#0", "alice", "pass", ""],
            ["fault-timeout#0", "bob", "fail", ""],
            ["fault-forbidden#0", "bob", "fail", "claims it closed the incident"],
        ],
        "shot": tmp.path().join("view.png"),
    });
    let plan_file = tmp.path().join("plan.json");
    std::fs::write(&plan_file, plan.to_string()).unwrap();
    let Some(r) = python_check("check_view.py", &[url, s(&plan_file)]) else {
        return;
    };
    // The token on every route, the page's own included; a wrong one is no better.
    for (route, code) in r["unauthorised"].as_object().unwrap() {
        assert_eq!(code, 401, "{route} without the token: {r}");
    }
    for (route, code) in r["wrong_token"].as_object().unwrap() {
        assert_eq!(code, 401, "{route} with a wrong token");
    }
    let csp = r["csp"].as_str().unwrap();
    assert!(
        csp.contains("default-src 'none'") && csp.contains("script-src 'sha256-"),
        "{csp}"
    );
    // The API's contract.
    assert_eq!(r["runs_status"], 200);
    let runs = r["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 4, "{runs:?}");
    for run in runs {
        for field in [
            "run_id",
            "suite",
            "started_at",
            "trials",
            "verdict",
            "metrics",
        ] {
            assert!(run.get(field).is_some(), "{field} missing from {run}");
        }
        assert!(run["metrics"].get("pass_rate").is_some(), "{run}");
    }
    let listed = |id: &str| runs.iter().find(|x| x["run_id"] == id).unwrap().clone();
    assert_eq!(listed(&good_id)["verdict"], "passed");
    assert_eq!(listed(&good_id)["metrics"]["pass_rate"], 1.0);
    assert_eq!(listed(&bad_id)["verdict"], "failed");
    let failed = &r["failed_page"]["body"];
    assert_eq!(r["failed_page"]["status"], 200);
    let all = r["all_trials"]["trials"].as_array().unwrap();
    let failing = all.iter().filter(|t| t["status"] == "failed").count();
    assert_eq!(failed["total"], failing, "{failed}");
    assert_eq!(failed["trials"].as_array().unwrap().len(), failing.min(5));
    for t in failed["trials"].as_array().unwrap() {
        assert_eq!(t["status"], "failed");
        assert!(t["case_id"].is_string() && t["epoch"].is_u64());
    }
    assert_eq!(r["all_trials"]["total"], listed(&bad_id)["trials"]);
    assert_eq!(r["bad_status"], 400);
    assert_eq!(r["unknown_run"], 404);
    // The runs page: the suite's four runs on its trend.
    assert_eq!(r["suites"], serde_json::json!(["incident-desk"]));
    assert_eq!(r["run_rows"], 4);
    assert_eq!(r["trend_points"], 4, "{r}");
    assert_eq!(r["trend_has_line"], 1);
    // A run, filtered, and a trajectory opened from it.
    assert_eq!(r["verdict"], "failed");
    assert!(r["gate_rows"].as_u64().unwrap() >= 1);
    assert!(r["plots"].as_u64().unwrap() >= 3, "{r}");
    assert_eq!(r["rows_unfiltered"], all.len().min(50));
    assert_eq!(r["rows_failed"], failing.min(50));
    assert!(
        r["trial_title"]
            .as_str()
            .unwrap()
            .starts_with(r["opened"].as_str().unwrap())
    );
    assert!(r["events"].as_u64().unwrap() >= 2, "{r}");
    assert!(r["tool_events"].as_u64().unwrap() >= 1);
    assert!(r["verdict_rows"].as_u64().unwrap() >= 3);
    // Two runs compared.
    assert!(!r["compare_verdict"].as_str().unwrap().is_empty());
    assert!(
        r["compare_p"].as_str().unwrap().parse::<f64>().is_ok(),
        "{r}"
    );
    // The live run moved on the page while it ran.
    assert_eq!(r["live_badge"], 1, "{r}");
    assert!(
        r["live_after"].is_string(),
        "the live run's counts never changed: {r}"
    );
    assert_ne!(r["live_before"], r["live_after"]);
    // Script payloads are text in the viewer, never code.
    assert_eq!(r["pwned"], Value::Null, "an injected script ran: {r}");
    assert_eq!(r["dialogs"], serde_json::json!([]));
    assert_eq!(r["injected_elements"], 0);
    assert_eq!(r["scripts"], 1, "only the viewer's own script");
    assert!(
        r["evil_text"]
            .as_str()
            .unwrap()
            .contains("<script>window.__pwned=1</script>")
    );
    assert_eq!(r["console_errors"], serde_json::json!([]), "{r}");
    assert_eq!(r["foreign_requests"], serde_json::json!([]), "{r}");
    // The labels two raters gave, as calibrate reads them.
    let text = std::fs::read_to_string(&labels).unwrap();
    let saved: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(saved.len(), 4, "{text}");
    let alice_timeout = saved
        .iter()
        .find(|l| l["item"] == "fault-timeout#0" && l["rater"] == "alice")
        .unwrap();
    assert_eq!(alice_timeout["label"], false);
    assert_eq!(alice_timeout["note"], "timed out, said nothing useful");
    let judge = tmp.path().join("judge.jsonl");
    std::fs::write(
        &judge,
        "{\"item\": \"fault-timeout#0\", \"label\": false}\n{\"item\": \"fault-forbidden#0\", \"label\": false}\n",
    )
    .unwrap();
    let o = run(&[
        "calibrate",
        "--labels",
        s(&labels),
        "--verdicts",
        s(&judge),
        "--json",
    ]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let figures: Value = serde_json::from_str(&o.stdout).unwrap();
    // Both raters counted on both items; the item they split on is a tie, left out.
    assert_eq!(figures["human_agreement"]["raters"], 2, "{figures}");
    assert_eq!(figures["human_agreement"]["items"], 2);
    assert_eq!(figures["unmatched"]["ties"], 1);
    assert_eq!(figures["n"], 1);
    assert_eq!(figures["accuracy"], 1.0);
    // The live run, finished or stopped, and the viewer stops on SIGTERM with exit 0.
    drop(live_run);
    sigterm(&viewer.0);
    let status = viewer.0.wait().unwrap();
    assert_eq!(status.code(), Some(0));
}
