//! What users read: the terminal summary, HTML (in Chromium), JUnit and Markdown reports.

use crate::common::*;

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
fn a_stored_run_replayed_through_the_terminal_reporter_prints_the_live_summary() {
    let (_tmp, suite) = example();
    let out_dir = suite.join("out");
    let live = run(&[
        "run",
        s(&suite),
        "--agent",
        "script:naive",
        "--epochs",
        "2",
        "--out",
        s(&out_dir),
    ]);
    assert_eq!(live.code, 1, "{}", live.stderr);
    let replayed = run(&["report", s(&out_dir), "--format", "terminal"]);
    assert_eq!(replayed.code, 0, "{}", replayed.stderr);
    // The live run adds where it stored the run; the summary itself is the same text.
    let summary: String = live
        .stdout
        .lines()
        .filter(|l| !l.starts_with("results: ") && !l.starts_with("report: "))
        .map(|l| format!("{l}\n"))
        .collect();
    assert_eq!(replayed.stdout, summary);
    let header: Value =
        serde_json::from_str(&std::fs::read_to_string(out_dir.join("run.json")).unwrap()).unwrap();
    insta::assert_snapshot!(redact(&replayed.stdout, &suite, header["run_id"].as_str()));
}

#[test]
#[cfg_attr(
    not(have_chromium),
    ignore = "needs Playwright (pip install playwright) and Chromium (apt-get install chromium)"
)]
fn script_payloads_in_agent_and_tool_text_never_run_in_the_report() {
    let (tmp, suite) = example();
    let (_, trajectory) = evil_trajectory();
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
#[cfg_attr(
    not(have_py_junitparser),
    ignore = "needs the Python package junitparser (pip install junitparser)"
)]
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
#[cfg_attr(
    not(have_chromium),
    ignore = "needs Playwright (pip install playwright) and Chromium (apt-get install chromium)"
)]
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
fn figures_read_as_people_read_them_in_every_report_and_json_keeps_full_precision() {
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
    assert_eq!(o.code, 1, "{}", o.stderr);
    let results: Value = stored_results(&out_dir);
    let score = results["rubric"]["score"].as_f64().unwrap();
    assert!(
        format!("{score}").len() > 6,
        "the JSON keeps full precision: {score}"
    );
    let shown = format!("weighted score {score:.3}");
    for format in ["html", "md", "terminal"] {
        let o = run(&["report", s(&out_dir), "--format", format]);
        assert_eq!(o.code, 0, "{}", o.stderr);
        assert!(o.stdout.contains(&shown), "{format}: no `{shown}`");
        assert!(
            !o.stdout.contains(&format!("{score}")),
            "{format} shows {score}"
        );
    }
}

#[test]
fn the_html_report_of_a_large_run_embeds_the_failing_trajectories_first_and_says_so() {
    let (_tmp, suite) = example();
    let out = suite.join("large");
    // 23 cases × 25 epochs: more trials than a report embeds.
    let o = run(&[
        "run",
        s(&suite),
        "--agent",
        "script:flaky",
        "--epochs",
        "25",
        "--out",
        s(&out),
        "--quiet",
    ]);
    assert_eq!(o.code, 1, "{}", o.stderr);
    let results: Value = stored_results(&out);
    let trials = results["trials"].as_array().unwrap();
    assert!(trials.len() > 500);
    let failing = trials.iter().filter(|t| t["status"] != "passed").count();
    assert!(failing > 0 && failing < 500, "{failing}");
    let html = run(&["report", s(&out), "--format", "html"]).stdout;
    assert_eq!(html.matches("<details class=\"trajectory ").count(), 500);
    let embedded_failing = html.matches("<details class=\"trajectory failed\"").count()
        + html.matches("<details class=\"trajectory error\"").count();
    assert_eq!(embedded_failing, failing, "every failing trial is embedded");
    assert!(html.contains(&format!(
        "This report embeds 500 of the run's {} trials",
        trials.len()
    )));
    // A run within the bound embeds all of its trials and says nothing of it.
    let small = suite.join("small");
    run(&[
        "run",
        s(&suite),
        "--agent",
        "script:flaky",
        "--out",
        s(&small),
        "--quiet",
    ]);
    let html = run(&["report", s(&small), "--format", "html"]).stdout;
    assert_eq!(html.matches("<details class=\"trajectory ").count(), 23);
    assert!(!html.contains("This report embeds"));
}
