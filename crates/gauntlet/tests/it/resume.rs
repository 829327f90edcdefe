//! Durability: a killed run resumes, a sharded run merges into the unsharded one.

use crate::common::*;

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
    let results: Value = stored_results(&out);
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
    let first: Value = stored_results(&out);
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
    let read = |dir: &Path| -> Value { stored_results(dir) };
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
    let timeless = |r: &Value| timeless(&r["metrics"]);
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
    // A run too large to hold its summaries (here: more than 5) merges through the disk into
    // the same results, reports included.
    let spilled = tmp.path().join("spilled");
    let o = gauntlet()
        .env("GAUNTLET_SCORE_KEEP", "5")
        .args(["merge", s(&parts[1]), s(&parts[0]), s(&parts[2]), "--out"])
        .arg(&spilled)
        .args(["--report", "md"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1), "{o:?}");
    let c = read(&spilled);
    assert_eq!(trials(&c), trials(&a));
    assert_eq!(timeless(&c), timeless(&a));
    assert!(
        std::fs::read_to_string(spilled.join("summary.md"))
            .unwrap()
            .contains("ci-42")
    );
    assert!(
        std::fs::read_dir(&spilled).unwrap().all(|e| !e
            .unwrap()
            .file_name()
            .to_string_lossy()
            .starts_with(".summaries")),
        "the spill file is gone"
    );
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

/// Regression: a corrupt line in the middle of trials.jsonl made a run impossible to resume.
/// `--resume` still refuses it by default, naming the line and the way forward;
/// `--set-aside-corrupt` keeps the line in trials.corrupt.jsonl and runs that trial again.
#[test]
fn a_corrupt_middle_line_is_set_aside_and_its_trial_runs_again() {
    let (tmp, suite) = example();
    let out = tmp.path().join("run");
    let o = run(&["run", s(&suite), "--out", s(&out), "--quiet"]);
    assert!(o.code <= 1, "{}", o.stderr);
    let total = std::fs::read_to_string(out.join("trials.jsonl"))
        .unwrap()
        .lines()
        .count();
    // The run stopped before it finished, and a record in the middle went bad.
    std::fs::remove_file(out.join("results.json")).unwrap();
    let trials = out.join("trials.jsonl");
    let mut lines: Vec<String> = std::fs::read_to_string(&trials)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect();
    let lost: serde_json::Value = serde_json::from_str(&lines[2]).unwrap();
    lines[2] = "{\"case_id\": \"garbled".to_owned();
    std::fs::write(&trials, lines.join("\n") + "\n").unwrap();

    let refused = run(&["run", s(&suite), "--resume", s(&out), "--quiet"]);
    assert_eq!(refused.code, 2, "{}", refused.stderr);
    assert!(
        refused.stderr.contains("trials.jsonl:3"),
        "{}",
        refused.stderr
    );
    assert!(
        refused.stderr.contains("--set-aside-corrupt"),
        "{}",
        refused.stderr
    );

    let resumed = run(&[
        "run",
        s(&suite),
        "--resume",
        s(&out),
        "--set-aside-corrupt",
        "--quiet",
    ]);
    assert!(resumed.code <= 1, "{}", resumed.stderr);
    assert!(out.join("results.json").exists());
    let aside = std::fs::read_to_string(out.join("trials.corrupt.jsonl")).unwrap();
    assert_eq!(aside, "{\"case_id\": \"garbled\n");
    let records = read_trials(&out);
    assert_eq!(records.len(), total);
    let mut keys: Vec<(String, u64)> = records
        .iter()
        .map(|r| {
            (
                r["case_id"].as_str().unwrap().to_owned(),
                r["epoch"].as_u64().unwrap(),
            )
        })
        .collect();
    keys.sort();
    keys.dedup();
    assert_eq!(keys.len(), total, "every trial once");
    assert!(keys.contains(&(lost["case_id"].as_str().unwrap().to_owned(), 0)));
}

/// `--shard auto` takes the part from a CI matrix (GAUNTLET_SHARD=I/N) or a Kubernetes Indexed
/// Job (JOB_COMPLETION_INDEX from 0, with --shard-count), and runs the trials `--shard I/N`
/// runs; with neither it says what to set.
#[test]
fn shard_auto_takes_the_part_from_the_environment() {
    let cx = TestContext::new();
    let trials = |out: &str| -> Vec<(String, u64)> {
        read_trials(&cx.path(out))
            .iter()
            .map(|t| {
                (
                    t["case_id"].as_str().unwrap().to_owned(),
                    t["epoch"].as_u64().unwrap(),
                )
            })
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect()
    };
    let part = |args: &[&str], env: &[(&str, &str)]| {
        let mut c = gauntlet();
        c.env_remove("GAUNTLET_SHARD")
            .env_remove("JOB_COMPLETION_INDEX");
        for (k, v) in env {
            c.env(k, v);
        }
        let o = c
            .args(["run", s(&cx.suite), "--epochs", "2", "--run-id", "ci-7"])
            .args(args)
            .output()
            .unwrap();
        (
            o.status.code(),
            String::from_utf8_lossy(&o.stderr).into_owned(),
        )
    };
    let out = |name: &str| s(&cx.path(name)).to_owned();
    for (name, shard) in [("given-1", "1/3"), ("given-2", "2/3")] {
        let (code, err) = part(&["--shard", shard, "--out", &out(name)], &[]);
        assert_eq!(code, Some(0), "{err}");
    }
    let (code, err) = part(
        &["--shard", "auto", "--out", &out("matrix")],
        &[("GAUNTLET_SHARD", "1/3")],
    );
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(trials("matrix"), trials("given-1"));
    let (code, err) = part(
        &[
            "--shard",
            "auto",
            "--shard-count",
            "3",
            "--out",
            &out("job"),
        ],
        &[("JOB_COMPLETION_INDEX", "1")],
    );
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(trials("job"), trials("given-2"));
    assert!(!trials("job").is_empty());
    // Without a part to take, or with one that does not fit, it says what to set (exit 2).
    for (count, env, says) in [
        (None, vec![], "set GAUNTLET_SHARD=I/N"),
        (
            None,
            vec![("GAUNTLET_SHARD", "4/3")],
            "GAUNTLET_SHARD=`4/3`",
        ),
        (
            None,
            vec![("JOB_COMPLETION_INDEX", "0")],
            "needs `shard_count` N",
        ),
        (
            Some("3"),
            vec![("JOB_COMPLETION_INDEX", "3")],
            "not one of `shard_count` 3 parts",
        ),
    ] {
        let refused = out("refused");
        let mut args = vec!["--shard", "auto", "--out", &refused];
        if let Some(n) = count {
            args.extend(["--shard-count", n]);
        }
        let (code, err) = part(&args, &env);
        assert_eq!(code, Some(2), "{err}");
        assert!(err.contains(says), "{err}");
    }
}

/// The documented Kubernetes recipe (`deploy/kubernetes/indexed-job.yaml`) works as written: each
/// pod's command, run with the JOB_COMPLETION_INDEX the Job gives it, then the merge Job's
/// command, leave the run an unsharded `gauntlet run` with the same seed and run id leaves.
#[test]
fn the_kubernetes_indexed_job_recipe_merges_into_the_unsharded_run() {
    let cx = TestContext::new();
    let text = std::fs::read_to_string(repo().join("deploy/kubernetes/indexed-job.yaml")).unwrap();
    let jobs: Vec<Value> = text
        .split("\n---\n")
        .map(|doc| serde_saphyr::from_str(doc).unwrap())
        .collect();
    let container = |job: &Value| job["spec"]["template"]["spec"]["containers"][0].clone();
    let argv = |job: &Value| -> Vec<String> {
        let c = container(job);
        c["command"]
            .as_array()
            .unwrap()
            .iter()
            .chain(c["args"].as_array().unwrap())
            .map(|a| a.as_str().unwrap().replace("/suite", s(&cx.suite)))
            .collect()
    };
    let (parts, merge) = (&jobs[0], &jobs[1]);
    assert_eq!(parts["spec"]["completionMode"], "Indexed");
    let completions = parts["spec"]["completions"].as_u64().unwrap();
    for index in 0..completions {
        let argv = argv(parts);
        let o = std::process::Command::new(&argv[0])
            .args(&argv[1..])
            .env("PATH", path_with_gauntlet())
            .env("JOB_COMPLETION_INDEX", index.to_string())
            .env_remove("GAUNTLET_SHARD")
            .env("NO_COLOR", "1")
            .output()
            .unwrap();
        assert_eq!(
            o.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
    let argv = argv(merge);
    let merged = std::process::Command::new(&argv[0])
        .args(&argv[1..])
        .env("PATH", path_with_gauntlet())
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    let merged_code = merged.status.code();
    assert!(
        matches!(merged_code, Some(0 | 1)),
        "{}",
        String::from_utf8_lossy(&merged.stderr)
    );
    // The same run, unsharded, with the manifest's own settings.
    let whole = cx.path("whole");
    let o = run(&[
        "run",
        s(&cx.suite),
        "--run-id",
        "nightly-1",
        "--seed",
        "7",
        "--epochs",
        "2",
        "--out",
        s(&whole),
        "--json",
    ]);
    assert_eq!(o.code, merged_code.unwrap(), "{}", o.stderr);
    assert_same_run(&cx.suite.join(".gauntlet/runs/nightly-1"), &whole);
    assert!(cx.suite.join(".gauntlet/runs/nightly-1/junit.xml").exists());
}

/// The documented GitHub Actions matrix (`deploy/github-actions/sharded-run.yml`) works as
/// written: each matrix job's run step with its GAUNTLET_SHARD, then the merge job's, in one
/// checkout (the artifacts' round trip put aside), give the unsharded run's verdict and trials.
#[test]
fn the_github_actions_matrix_recipe_merges_into_the_unsharded_run() {
    let cx = TestContext::new();
    let text =
        std::fs::read_to_string(repo().join("deploy/github-actions/sharded-run.yml")).unwrap();
    let workflow: Value = serde_saphyr::from_str(&text).unwrap();
    // The checkout: the suite at examples/incident-desk.
    let checkout = cx.path("checkout");
    std::fs::create_dir_all(checkout.join("examples")).unwrap();
    std::os::unix::fs::symlink(&cx.suite, checkout.join("examples/incident-desk")).unwrap();
    let gauntlet_steps = |job: &Value| -> Vec<String> {
        job["steps"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|s| s["run"].as_str())
            .filter(|r| r.starts_with("gauntlet "))
            .map(str::to_owned)
            .collect()
    };
    let sh = |script: &str, env: &[(&str, String)]| {
        let mut c = std::process::Command::new("sh");
        c.arg("-c")
            .arg(script)
            .current_dir(&checkout)
            .env("PATH", path_with_gauntlet())
            .env("GITHUB_RUN_ID", "4242")
            .env("NO_COLOR", "1")
            .env_remove("JOB_COMPLETION_INDEX");
        for (k, v) in env {
            c.env(k, v);
        }
        c.output().unwrap()
    };
    let parts = &workflow["jobs"]["parts"];
    for shard in parts["strategy"]["matrix"]["shard"].as_array().unwrap() {
        let shard = shard.to_string();
        let env = parts["env"]["GAUNTLET_SHARD"]
            .as_str()
            .unwrap()
            .replace("${{ matrix.shard }}", &shard);
        for step in gauntlet_steps(parts) {
            let o = sh(
                &step.replace("${{ matrix.shard }}", &shard),
                &[("GAUNTLET_SHARD", env.clone())],
            );
            assert_eq!(
                o.status.code(),
                Some(0),
                "{}",
                String::from_utf8_lossy(&o.stderr)
            );
        }
    }
    let merge = gauntlet_steps(&workflow["jobs"]["merge"]);
    assert_eq!(merge.len(), 1, "{merge:?}");
    let merged = sh(&merge[0], &[]);
    let code = merged.status.code();
    assert!(
        matches!(code, Some(0 | 1)),
        "{}",
        String::from_utf8_lossy(&merged.stderr)
    );
    let o = run(&[
        "run",
        s(&cx.suite),
        "--run-id",
        "4242",
        "--seed",
        "7",
        "--epochs",
        "2",
        "--out",
        s(&cx.path("whole")),
    ]);
    assert_eq!(Some(o.code), code, "{}", o.stderr);
    assert_same_run(&checkout.join("merged"), &cx.path("whole"));
    assert!(checkout.join("merged/summary.md").exists());
}

/// A run merged from parts is the unsharded run: its verdict, gates, trial count and every
/// trial's case, epoch, status and trace id.
fn assert_same_run(merged: &Path, whole: &Path) {
    let read = |dir: &Path| -> Value { stored_results(dir) };
    let (merged, whole) = (read(merged), read(whole));
    assert_eq!(merged["verdict"], whole["verdict"]);
    assert_eq!(merged["gates"], whole["gates"]);
    assert_eq!(merged["metrics"]["trials"], whole["metrics"]["trials"]);
    let ids = |r: &Value| -> Vec<Value> {
        r["trials"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| json!([t["case_id"], t["epoch"], t["status"], t["trace_id"]]))
            .collect()
    };
    assert_eq!(ids(&merged), ids(&whole));
}

/// Issue 48 (M9): a part with no trials (`--shard 50/100` on 23 trials) exited 2 with a CEL
/// type error on a null rate; a part exits 0 whatever its gates, and gates over no trials say
/// so in words.
#[test]
fn an_empty_part_exits_0_and_its_gates_say_no_trials() {
    let (tmp, suite) = example();
    let out = tmp.path().join("part");
    let o = run(&[
        "run",
        s(&suite),
        "--shard",
        "50/100",
        "--out",
        s(&out),
        "--quiet",
    ]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert!(!o.stderr.contains("no matching overload"), "{}", o.stderr);
    let o = run(&["gate", s(&out)]);
    assert!(!o.stderr.contains("no matching overload"), "{}", o.stderr);
    assert!(o.stderr.contains("no trials"), "{}\n{}", o.code, o.stderr);
}
