//! `gauntlet import otlp`: traces back into runs that re-score the same.

use crate::common::*;

/// Each trial's status and scores, by case and epoch.
fn verdicts(run: &Path) -> std::collections::BTreeMap<(String, u64), Value> {
    read_trials(run)
        .into_iter()
        .map(|t| {
            (
                (
                    t["case_id"].as_str().unwrap().to_owned(),
                    t["epoch"].as_u64().unwrap(),
                ),
                json!({"status": t["status"], "scores": t["scores"]}),
            )
        })
        .collect()
}

#[test]
fn an_exported_run_imports_back_and_re_scores_identically() {
    let (tmp, suite) = example();
    let original = tmp.path().join("original");
    let o = run(&[
        "run",
        s(&suite),
        "--epochs",
        "2",
        "--out",
        s(&original),
        "--quiet",
    ]);
    assert!(o.code <= 1, "{}", o.stderr);
    let traces = tmp.path().join("traces.json");
    let o = run(&["export", s(&original), "--out", s(&traces)]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let imported = tmp.path().join("imported");
    let o = run(&["import", "otlp", s(&traces), "--out", s(&imported)]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let trials = read_trials(&original);
    assert_eq!(read_trials(&imported).len(), trials.len());
    assert!(imported.join("results.json").is_file());
    // Re-scoring both against the suite gives the same verdicts, trial by trial.
    let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
    for (from, to) in [(&original, &a), (&imported, &b)] {
        let o = run(&[
            "score",
            s(&from.join("trials.jsonl")),
            "--cases",
            s(&suite),
            "--out",
            s(to),
            "--quiet",
        ]);
        assert!(o.code <= 1, "{}", o.stderr);
    }
    let (va, vb) = (verdicts(&a), verdicts(&b));
    assert_eq!(va.len(), trials.len());
    assert_eq!(va, vb);
    // The trace ids are the run's.
    let ids = |run: &Path| -> Vec<String> {
        let mut v: Vec<String> = read_trials(run)
            .iter()
            .map(|t| t["trace_id"].as_str().unwrap().to_owned())
            .collect();
        v.sort();
        v
    };
    assert_eq!(ids(&original), ids(&imported));
    // Importing into a folder that holds a run is refused.
    let o = run(&["import", "otlp", s(&traces), "--out", s(&imported)]);
    assert_eq!(o.code, 2, "{}", o.stderr);

    // OTLP/JSON Lines by 7 traces a line, in files of 20 traces: every file imports back, and
    // together they are the run's trials, each once.
    let n = trials.len();
    let parts = tmp.path().join("parts.jsonl");
    let o = run(&[
        "export",
        s(&original),
        "--out",
        s(&parts),
        "--batch",
        "7",
        "--split",
        "20",
    ]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let files: Vec<PathBuf> = (1..=n.div_ceil(20))
        .map(|i| tmp.path().join(format!("parts-{i:05}.jsonl")))
        .collect();
    assert!(
        !tmp.path()
            .join(format!("parts-{:05}.jsonl", files.len() + 1))
            .exists()
    );
    let mut lines = 0;
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap();
        lines += text.lines().count();
        assert!(
            text.lines().all(|l| l.starts_with("{\"resourceSpans\"")),
            "{text}"
        );
    }
    // 20 traces a file are lines of 7, 7 and 6.
    assert_eq!(lines, (n / 20) * 3 + (n % 20).div_ceil(7));
    let back = tmp.path().join("back");
    let mut args = vec!["import", "otlp"];
    args.extend(files.iter().map(|f| s(f)));
    args.extend(["--out", s(&back)]);
    let o = run(&args);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert_eq!(ids(&back), ids(&original));
    assert_eq!(verdicts(&back).len(), n);
    // The single document of before, when asked for.
    let single = tmp.path().join("single.json");
    let o = run(&[
        "export",
        s(&original),
        "--out",
        s(&single),
        "--format",
        "json",
    ]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert_eq!(std::fs::read_to_string(&single).unwrap().lines().count(), 1);
}

#[test]
fn a_file_that_is_not_otlp_is_named_with_its_line() {
    let tmp = tempfile::tempdir().unwrap();
    let bad = tmp.path().join("bad.json");
    std::fs::write(&bad, "{\"resourceSpans\": []}\n{\"resourceSpans\": 7}\n").unwrap();
    let o = run(&[
        "import",
        "otlp",
        s(&bad),
        "--out",
        s(&tmp.path().join("out")),
    ]);
    assert_eq!(o.code, 2, "{}", o.stderr);
    assert!(o.stderr.contains("bad.json: line 2"), "{}", o.stderr);
    // A benchmark import still takes one folder.
    let o = run(&[
        "import",
        "tau-bench",
        s(tmp.path()),
        s(tmp.path()),
        "--out",
        "x",
    ]);
    assert_eq!(o.code, 2, "{}", o.stderr);
}

/// Regression: `gauntlet import otlp /dev/zero` read the file whole before decoding it and grew
/// to 7.3 GB in 6 s. Each request is read up to a limit, and an endless file is refused by name.
/// (Run under a 2 GiB address-space limit, so that the old behaviour fails fast.)
#[test]
fn an_endless_file_is_refused_by_name_not_read_whole() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let started = std::time::Instant::now();
    let o = std::process::Command::new("bash")
        .arg("-c")
        .arg(r#"ulimit -v 2097152 && exec "$0" import otlp /dev/zero --out "$1""#)
        .arg(gauntlet_bin())
        .arg(&out)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("/dev/zero") && stderr.contains("64 MiB"),
        "{stderr}"
    );
    assert!(
        started.elapsed() < std::time::Duration::from_secs(60),
        "{:?}",
        started.elapsed()
    );
    assert!(!out.join("trials.jsonl").exists());
}
