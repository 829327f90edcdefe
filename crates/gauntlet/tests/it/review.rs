//! Reviewing a trial, as a person does in `gauntlet view` and the HTML report (issue 50): the
//! trajectory page shows the request, a card per tool call and a diff row per changed path with
//! the failing verdicts above the passing ones; the compare page lists the flipped cases first;
//! the report draws the same trajectory. Read in Chromium (Playwright); the four pages are saved
//! as screenshots in the candidate run's folder (`review-screens/`).

use crate::common::*;

/// Stops a child on drop (a failed assertion must not leave a server behind).
struct Killed(std::process::Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The folder of the run named `name` under the suite's runs.
fn run_dir(suite: &Path, name: &str) -> PathBuf {
    std::fs::read_dir(suite.join(".gauntlet/runs"))
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|d| {
            std::fs::read_to_string(d.join("run.json"))
                .ok()
                .and_then(|t| serde_json::from_str::<Value>(&t).ok())
                .is_some_and(|h| h["name"] == name)
        })
        .unwrap_or_else(|| panic!("no run named {name}"))
}

#[test]
#[cfg_attr(
    not(have_chromium),
    ignore = "needs Playwright (pip install playwright) and Chromium (apt-get install chromium)"
)]
fn a_trial_reads_as_a_conversation_with_its_verdicts_and_diff_and_flipped_cases_come_first() {
    let (tmp, suite) = example();
    for (agent, name) in [
        ("script:reference", "baseline"),
        ("script:skip-confirmation", "skip-confirm"),
    ] {
        let o = run(&[
            "run",
            s(&suite),
            "--agent",
            agent,
            "--name",
            name,
            "--quiet",
        ]);
        assert!(o.code <= 1, "{}", o.stderr);
    }
    let candidate = run_dir(&suite, "skip-confirm");
    let html = candidate.join("report.html");
    // The report against the baseline, both found by name from the suite's folder.
    let o = gauntlet()
        .current_dir(&suite)
        .args([
            "report",
            "skip-confirm",
            "--format",
            "html",
            "--baseline",
            "baseline",
        ])
        .args(["--out", s(&html)])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let mut cmd = std::process::Command::new(gauntlet_bin());
    cmd.args(["view", s(&suite), "--listen", "127.0.0.1:0"]);
    let (child, line) = spawn_server(cmd, &tmp.path().join("view.stderr"));
    let _viewer = Killed(child);
    let shots = candidate.join("review-screens");
    std::fs::create_dir_all(&shots).unwrap();
    let plan = serde_json::json!({
        "a": "baseline", "b": "skip-confirm", "report": html, "shots": shots,
    });
    let plan_file = tmp.path().join("plan.json");
    std::fs::write(&plan_file, plan.to_string()).unwrap();
    let Some(r) = python_check(
        "check_review.py",
        &[line["url"].as_str().unwrap(), s(&plan_file)],
    ) else {
        return;
    };
    if let Ok(dir) = std::env::var("GAUNTLET_REVIEW_SCREENS") {
        for f in [
            "run",
            "trajectory",
            "trajectory-full",
            "compare",
            "report",
            "report-full",
        ] {
            let _ = std::fs::copy(
                shots.join(format!("{f}.png")),
                Path::new(&dir).join(format!("{f}.png")),
            );
        }
    }
    assert_eq!(r["console_errors"], serde_json::json!([]), "{r}");

    // The API's contract: `/api/compare` has flips, the trial has `diff` and `transcript`.
    let flips = r["flips"].as_array().unwrap();
    assert!(!flips.is_empty(), "skip-confirmation flips no case: {r}");
    let api = &r["api_trial"];
    let diff = api["diff"].as_array().unwrap();
    assert!(!diff.is_empty(), "{api}");
    for d in diff {
        assert!(d["path"].as_str().unwrap().starts_with('/'), "{d}");
        assert!(d.get("before").is_some() && d.get("after").is_some(), "{d}");
    }
    let transcript = api["transcript"].as_array().unwrap();
    assert!(transcript.iter().all(|e| e["kind"].is_string()), "{api}");
    assert_eq!(transcript[0]["kind"], "user");

    // The matrix: the flipped cases, in the comparison's order, then the rest.
    let matrix = r["matrix"].as_array().unwrap();
    let flipped = matrix.iter().take_while(|m| m["flipped"] == true).count();
    assert_eq!(flipped, flips.len(), "{r}");
    assert!(matrix[flipped..].iter().all(|m| m["flipped"] == false));
    for (m, f) in matrix.iter().zip(flips) {
        assert_eq!((&m["case_id"], &m["epoch"]), (&f["case_id"], &f["epoch"]));
    }
    // ...as the page lists them, each flipped cell saying why on hover.
    let page = r["page_matrix"].as_array().unwrap();
    assert_eq!(page.len(), matrix.len());
    for (row, m) in page.iter().zip(matrix) {
        assert_eq!(row[0], m["case_id"]);
        assert_eq!(row[1], m["flipped"]);
    }
    assert!(
        r["cell_titles"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t.as_str().unwrap().contains("confirmation_before_write")),
        "{r}"
    );
    assert_eq!(r["side_by_side"], 2);

    // The trajectory page: the request, one card per tool call, one row per changed path.
    let request = api["request"].as_str().unwrap();
    assert!(r["request"].as_str().unwrap().contains(request), "{r}");
    let calls: Vec<&Value> = transcript
        .iter()
        .filter(|e| e["kind"] == "tool_call")
        .map(|e| &e["call"]["tool"])
        .collect();
    assert!(!calls.is_empty());
    assert_eq!(r["cards"], calls.len(), "{r}");
    let tools: Vec<&Value> = r["card_tools"].as_array().unwrap().iter().collect();
    assert_eq!(tools, calls);
    let rows: Vec<&Value> = r["diff_rows"].as_array().unwrap().iter().collect();
    let paths: Vec<&Value> = diff.iter().map(|d| &d["path"]).collect();
    assert_eq!(rows, paths);
    // A failing verdict above every passing one, the first of them in sight.
    let order = r["verdict_order"].as_array().unwrap();
    let status = |i: usize| order[i][1].as_str().unwrap();
    assert_eq!(status(0), "failed", "{r}");
    let last_failed = (0..order.len()).rfind(|&i| status(i) == "failed").unwrap();
    let first_passed = (0..order.len()).find(|&i| status(i) == "passed").unwrap();
    assert!(last_failed < first_passed, "{order:?}");
    assert_eq!(r["first_verdict_visible"], true);
    assert!(
        r["flagged"].as_u64().unwrap() >= 1,
        "no entry carries its failing verdict: {r}"
    );
    // `j` opens the next failing trial.
    assert!(
        r["failed_position"].as_str().unwrap().contains(" failed"),
        "{r}"
    );
    let next = r["after_j"].as_str().unwrap();
    assert!(
        flips.iter().any(|f| next.starts_with(&format!(
            "{}#{}",
            f["case_id"].as_str().unwrap(),
            f["epoch"]
        ))),
        "{next} is not another failing trial"
    );
    // The case beside it, with the file it came from.
    assert!(
        r["case_file"].as_str().unwrap().ends_with(".yaml"),
        "{}",
        r["case_file"]
    );
    assert!(api["case"]["expected_outcome"].is_object());
    assert_eq!(
        api["case"]["changed_since_run"], false,
        "the suite is as it ran"
    );

    // The run page: trials above the plots.
    assert!(r["run_title"].as_str().unwrap().contains("skip-confirm"));
    assert_eq!(r["table_before_plots"], true);

    // The report draws the same trajectory from the same review.
    assert!(r["report_anchor"].is_string(), "{r}");
    assert_eq!(r["report_cards"], calls.len());
    assert_eq!(r["report_diff_rows"], diff.len());
    assert_eq!(r["report_verdict_order"], r["verdict_order"]);
    assert_eq!(r["report_flips"], flips.len());
    for f in ["run", "trajectory", "compare", "report"] {
        let png = shots.join(format!("{f}.png"));
        assert!(
            std::fs::metadata(&png).is_ok_and(|m| m.len() > 10_000),
            "{} was not saved",
            png.display()
        );
    }
}
