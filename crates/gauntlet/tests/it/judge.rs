//! LLM judges end to end, against the fake OpenAI-compatible upstream: judged only where the
//! deterministic checks passed, replayed from the cassette with the upstream off, re-scored
//! from the cache with no call, unparsable replies counted as invalid, judge cost kept apart,
//! and a gate on a judge refused until a trusted calibration names it.

use super::common::*;

/// The example suite with a judge (and a price for it), plus `extra` YAML appended.
fn suite_with_judge(judge: &str, extra: &str) -> (tempfile::TempDir, PathBuf) {
    let (tmp, suite) = example();
    let config = suite.join("gauntlet.yaml");
    let mut text = std::fs::read_to_string(&config).unwrap();
    text.push_str(&format!(
        "\njudges:\n  - model: {judge}\n{extra}\ngateway:\n  prices:\n    {judge}: {{prompt_eur_per_1k: 1.0, completion_eur_per_1k: 2.0}}\n"
    ));
    std::fs::write(&config, text).unwrap();
    (tmp, suite)
}

/// A run of the example suite with a judge against the fake upstream, into `TMP/run`, with
/// `more` arguments; the upstream is stopped before it returns.
fn judged_run(judge: &str, extra: &str, more: &[&str]) -> Option<(tempfile::TempDir, PathBuf)> {
    let (tmp, suite) = suite_with_judge(judge, extra);
    let fake = FakeUpstream::start(tmp.path())?;
    let out = tmp.path().join("run");
    let mut args = vec![
        "run",
        s(&suite),
        "--out",
        s(&out),
        "--gateway-upstream",
        &fake.url,
        "-q",
    ];
    args.extend_from_slice(more);
    let o = run(&args);
    assert!(o.code == 0 || o.code == 1, "{}\n{}", o.stdout, o.stderr);
    drop(fake);
    Some((tmp, out))
}

fn judge_calls(port_dir: &Path) -> usize {
    std::fs::read_to_string(port_dir.join("fake.port.judge"))
        .map(|t| t.lines().count())
        .unwrap_or(0)
}

fn results(run: &Path) -> Value {
    stored_results(run)
}

fn trials(run: &Path) -> Vec<Value> {
    std::fs::read_to_string(run.join("trials.jsonl"))
        .unwrap()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v.get("case_id").is_some())
        .collect()
}

/// How many trials of a run's results passed the deterministic checks.
fn passed_trials(results: &Value) -> usize {
    results["trials"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["status"] == "passed")
        .count()
}

/// Each trial's judge scores, by case and epoch.
fn judge_scores(run: &Path) -> Vec<(String, Value)> {
    let mut out: Vec<(String, Value)> = trials(run)
        .iter()
        .map(|t| {
            let scores: Vec<Value> = t["scores"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|s| s["name"].as_str().unwrap().starts_with("Judge"))
                .map(|s| json!([s["name"], s["value"], s["passed"]]))
                .collect();
            (format!("{}#{}", t["case_id"], t["epoch"]), json!(scores))
        })
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

#[test]
#[cfg_attr(not(have_py_openai), ignore = "needs python3 to run the fake upstream")]
fn the_judge_runs_after_the_deterministic_checks_and_replays_and_caches() {
    let (tmp, suite) = suite_with_judge("judge-good", "");
    let Some(fake) = FakeUpstream::start(tmp.path()) else {
        return;
    };
    let run1 = tmp.path().join("run1");
    let cassette = tmp.path().join("judge.cassette.jsonl");
    let o = run(&[
        "run",
        s(&suite),
        "--agent",
        "script:forbidden",
        "--out",
        s(&run1),
        "--gateway-upstream",
        &fake.url,
        "--record-cassette",
        s(&cassette),
        "-q",
    ]);
    assert!(o.code == 0 || o.code == 1, "{}\n{}", o.stdout, o.stderr);
    let r = results(&run1);
    let passed = passed_trials(&r);
    let failed = r["trials"].as_array().unwrap().len() - passed;
    assert!(
        passed > 0 && failed > 0,
        "the agent must pass some cases and fail others"
    );
    // Called once per trial that passed the deterministic checks, never for the others.
    assert_eq!(judge_calls(tmp.path()), passed);
    let j = &r["judges"][0];
    assert_eq!(j["name"], "Judge");
    assert_eq!(j["scored"], passed);
    assert_eq!(j["skipped"], failed);
    assert_eq!(j["invalid"], 0);
    assert_eq!(j["advisory"], true);
    // Judge cost is the judge's: priced, and not in the agent's cost.
    assert!(j["cost_eur"].as_f64().unwrap() > 0.0, "{j}");
    assert!(
        r["trials"]
            .as_array()
            .unwrap()
            .iter()
            .all(|t| t["cost_eur"].as_f64() == Some(0.0)),
        "the agent's cost holds no judge call"
    );
    // A skipped judge is recorded with its reason, and gives no score.
    let skipped = trials(&run1)
        .into_iter()
        .find(|t| t["status"] == "failed")
        .unwrap();
    assert_eq!(skipped["judges"][0]["status"], "skipped");
    assert!(
        skipped["judges"][0]["reason"]
            .as_str()
            .unwrap()
            .contains("deterministic check failed")
    );
    // The default rubric's scores, with the article's names.
    let names: Vec<String> = judge_scores(&run1)
        .into_iter()
        .flat_map(|(_, s)| {
            s.as_array()
                .unwrap()
                .iter()
                .map(|x| x[0].as_str().unwrap().to_owned())
                .collect::<Vec<_>>()
        })
        .collect();
    assert!(names.iter().any(|n| n == "Judge_ReasoningQuality"));
    assert!(names.iter().any(|n| n == "Judge_SafetyScore"));

    // Exported as traces: a judge span per judged trial, apart from the agent's calls, and the
    // trajectories import back exactly as they were.
    let traces = tmp.path().join("traces.json");
    let o = run(&["export", s(&run1), "--out", s(&traces)]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let text = std::fs::read_to_string(&traces).unwrap();
    assert_eq!(text.matches("\"evaluate Judge\"").count(), passed);
    assert_eq!(text.matches("\"chat judge-good\"").count(), passed);
    let imported = tmp.path().join("imported");
    let o = run(&["import", "otlp", s(&traces), "--out", s(&imported)]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let events = |run: &Path| {
        let mut v: Vec<(String, Value)> = trials(run)
            .into_iter()
            .map(|t| {
                (
                    t["trace_id"].as_str().unwrap().to_owned(),
                    t["trajectory"].clone(),
                )
            })
            .collect();
        v.sort_by(|a, b| a.0.cmp(&b.0));
        v
    };
    assert_eq!(events(&run1), events(&imported));

    // Replayed from the cassette with the upstream off and the cache gone: identical scores.
    drop(fake);
    std::fs::remove_file(suite.join(".gauntlet/judge-cache.sqlite")).unwrap();
    let run2 = tmp.path().join("run2");
    let o = run(&[
        "run",
        s(&suite),
        "--agent",
        "script:forbidden",
        "--out",
        s(&run2),
        "--replay-cassette",
        s(&cassette),
        "-q",
    ]);
    assert!(o.code == 0 || o.code == 1, "{}\n{}", o.stdout, o.stderr);
    assert_eq!(judge_scores(&run1), judge_scores(&run2));

    // Re-scoring the stored run: no upstream, every verdict from the cache.
    let calls_before = judge_calls(tmp.path());
    let run3 = tmp.path().join("run3");
    let o = run(&[
        "score",
        s(&run1),
        "--cases",
        s(&suite),
        "--out",
        s(&run3),
        "-q",
    ]);
    assert!(o.code == 0 || o.code == 1, "{}\n{}", o.stdout, o.stderr);
    assert!(
        o.stderr.contains("judge Judge has no model endpoint"),
        "the user is told that only cached verdicts count: {}",
        o.stderr
    );
    assert_eq!(judge_calls(tmp.path()), calls_before);
    let r3 = results(&run3);
    assert_eq!(r3["judges"][0]["calls"], 0);
    assert_eq!(r3["judges"][0]["cache_hits"], passed);
    assert_eq!(judge_scores(&run1), judge_scores(&run3));
}

#[test]
#[cfg_attr(not(have_py_openai), ignore = "needs python3 to run the fake upstream")]
fn an_unparsable_reply_is_invalid_and_a_fenced_one_is_read() {
    for (model, invalid) in [("judge-garbled", true), ("judge-fenced", false)] {
        let Some((_tmp, out)) = judged_run(model, "", &[]) else {
            return;
        };
        let r = results(&out);
        let j = &r["judges"][0];
        let judged = passed_trials(&r);
        if invalid {
            assert_eq!(
                (j["invalid"].as_u64(), j["scored"].as_u64()),
                (Some(judged as u64), Some(0))
            );
            let t = trials(&out)
                .into_iter()
                .find(|t| t["judges"][0]["status"] == "invalid")
                .unwrap();
            assert!(
                t["judges"][0]["reason"]
                    .as_str()
                    .unwrap()
                    .contains("unparsable")
            );
            // An invalid verdict is no score: neither a pass nor a fail.
            assert!(
                !t["scores"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|s| s["name"] == "Judge")
            );
        } else {
            assert_eq!(j["scored"].as_u64(), Some(judged as u64));
            let t = trials(&out)
                .into_iter()
                .find(|t| t["judges"][0]["status"] == "scored")
                .unwrap();
            assert_eq!(t["judges"][0]["samples"][0]["parse"], "fenced_json");
        }
    }
}

/// `run SUITE --out OUT` through the upstream at `url`; its results.
fn judged_results(suite: &Path, out: &Path, url: &str, more: &[&str]) -> Value {
    let mut args = vec![
        "run",
        s(suite),
        "--out",
        s(out),
        "--gateway-upstream",
        url,
        "-q",
    ];
    args.extend_from_slice(more);
    let o = run(&args);
    assert!(o.code == 0 || o.code == 1, "{}\n{}", o.stdout, o.stderr);
    results(out)
}

/// Lines in the fake upstream's count of refused response formats.
fn refused_formats(port_dir: &Path) -> usize {
    std::fs::read_to_string(port_dir.join("fake.port.refused"))
        .map(|t| t.lines().count())
        .unwrap_or(0)
}

/// Regression: llama-cpp-python's OpenAI-compatible server answers a `json_schema` response
/// format with a 500 (a pydantic validation error naming `response_format.type`), not the 400
/// or 422 the fallback expected, so all 23 judgements of the example came out `invalid`. The
/// fake answers as that server does; the judge asks again for a JSON object, which it takes.
#[test]
#[cfg_attr(not(have_py_openai), ignore = "needs python3 to run the fake upstream")]
fn a_server_that_answers_json_schema_with_a_500_gets_real_verdicts() {
    let (tmp, suite) = suite_with_judge("judge-llamacpp", "");
    let Some(fake) = FakeUpstream::start(tmp.path()) else {
        return;
    };
    let out = tmp.path().join("run");
    let r = judged_results(&suite, &out, &fake.url, &[]);
    let passed = passed_trials(&r);
    assert!(passed > 0);
    assert_eq!(r["judges"][0]["scored"], passed, "{}", r["judges"][0]);
    assert_eq!(r["judges"][0]["invalid"], 0, "{}", r["judges"][0]);
    assert_eq!(refused_formats(tmp.path()), passed);
    for t in trials(&out)
        .iter()
        .filter(|t| t["judges"][0]["status"] == "scored")
    {
        assert_eq!(t["judges"][0]["samples"][0]["format_refused"], true, "{t}");
    }
}

#[test]
#[cfg_attr(not(have_py_openai), ignore = "needs python3 to run the fake upstream")]
fn an_upstream_without_structured_outputs_is_asked_again_and_a_second_run_asks_nothing() {
    let (tmp, suite) = suite_with_judge("judge-noschema", "");
    let Some(fake) = FakeUpstream::start(tmp.path()) else {
        return;
    };
    let judged_run = |out: &Path| judged_results(&suite, out, &fake.url, &[]);
    let first = tmp.path().join("first");
    let r = judged_run(&first);
    let passed = passed_trials(&r);
    assert!(passed > 0);
    // Each judged trial: the json_schema request refused, then the json_object one, then
    // answered without a format.
    assert_eq!(refused_formats(tmp.path()), 2 * passed);
    assert_eq!(judge_calls(tmp.path()), passed);
    assert_eq!(r["judges"][0]["scored"], passed, "{}", r["judges"][0]);
    for t in trials(&first)
        .iter()
        .filter(|t| t["judges"][0]["status"] == "scored")
    {
        let sample = &t["judges"][0]["samples"][0];
        assert_eq!(sample["format_refused"], true, "{sample}");
        assert_eq!(sample["parse"], "json", "{sample}");
    }

    // The same trials again: every verdict from the cache, no call and no refusal.
    let second = tmp.path().join("second");
    let r2 = judged_run(&second);
    assert_eq!(judge_calls(tmp.path()), passed);
    assert_eq!(refused_formats(tmp.path()), 2 * passed);
    assert_eq!(r2["judges"][0]["calls"], 0);
    assert_eq!(r2["judges"][0]["cache_hits"], passed);
    assert_eq!(judge_scores(&first), judge_scores(&second));

    // Another model is another key: the cache misses and the model is asked.
    let config = suite.join("gauntlet.yaml");
    let text = std::fs::read_to_string(&config).unwrap();
    std::fs::write(
        &config,
        text.replace("- model: judge-noschema", "- model: judge-good"),
    )
    .unwrap();
    let third = tmp.path().join("third");
    let r3 = judged_run(&third);
    assert_eq!(r3["judges"][0]["calls"], passed);
    assert_eq!(r3["judges"][0]["cache_hits"], 0);
    assert_eq!(judge_calls(tmp.path()), 2 * passed);
}

#[test]
#[cfg_attr(not(have_py_openai), ignore = "needs python3 to run the fake upstream")]
fn judge_calls_stay_under_their_limit_and_a_rate_limit_is_retried() {
    // Eight trials at once, a judge allowed two calls at once, each call 0.3 s.
    let (tmp, suite) = suite_with_judge("judge-slow", "    concurrency: 2");
    let Some(fake) = FakeUpstream::start(tmp.path()) else {
        return;
    };
    let r = judged_results(
        &suite,
        &tmp.path().join("slow"),
        &fake.url,
        &["--concurrency", "8"],
    );
    assert_eq!(r["judges"][0]["scored"], passed_trials(&r));
    let most: usize = std::fs::read_to_string(tmp.path().join("fake.port.inflight"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert_eq!(most, 2, "judge calls in flight at once");

    // A 429 on every first ask: retried, and every judged trial still scored.
    let config = suite.join("gauntlet.yaml");
    let text = std::fs::read_to_string(&config).unwrap();
    std::fs::write(&config, text.replace("judge-slow", "judge-flaky")).unwrap();
    let r = judged_results(&suite, &tmp.path().join("flaky"), &fake.url, &[]);
    let passed = passed_trials(&r);
    let busy = std::fs::read_to_string(tmp.path().join("fake.port.busy")).unwrap();
    assert_eq!(busy.lines().count(), passed, "one 429 per judged trial");
    assert_eq!(r["judges"][0]["scored"], passed, "{}", r["judges"][0]);
    assert_eq!(r["judges"][0]["invalid"], 0);
}

#[test]
#[cfg_attr(not(have_py_openai), ignore = "needs python3 to run the fake upstream")]
fn a_judge_stops_asking_once_its_budget_is_spent_and_skips_the_rest() {
    // Each call costs 30 prompt and 7 completion tokens at 1 and 2 EUR per 1k: 0.044 EUR.
    let (tmp, suite) = suite_with_judge("judge-good", "    budget_eur: 0.1");
    let Some(fake) = FakeUpstream::start(tmp.path()) else {
        return;
    };
    let out = tmp.path().join("run");
    let o = run(&[
        "run",
        s(&suite),
        "--out",
        s(&out),
        "--gateway-upstream",
        &fake.url,
        "--concurrency",
        "1",
    ]);
    assert!(o.code == 0 || o.code == 1, "{}\n{}", o.stdout, o.stderr);
    let r = results(&out);
    let passed = passed_trials(&r);
    assert!(passed > 3, "{passed}");
    let j = &r["judges"][0];
    // 0.044 and 0.088 are under 0.1, so a third trial is judged; then none.
    assert_eq!(judge_calls(tmp.path()), 3);
    assert_eq!(
        (j["scored"].as_u64(), j["calls"].as_u64()),
        (Some(3), Some(3))
    );
    assert_eq!(j["over_budget"].as_u64(), Some(passed as u64 - 3), "{j}");
    assert_eq!(j["budget_eur"], 0.1);
    assert!(
        (j["cost_eur"].as_f64().unwrap() - 0.132).abs() < 1e-9,
        "{j}"
    );
    let over = trials(&out)
        .into_iter()
        .filter(|t| t["judges"][0]["over_budget"] == true)
        .collect::<Vec<_>>();
    assert_eq!(over.len(), passed - 3);
    for t in &over {
        assert_eq!(t["status"], "passed", "over budget is never a fail");
        assert_eq!(t["judges"][0]["status"], "skipped");
        assert!(
            t["judges"][0]["reason"]
                .as_str()
                .unwrap()
                .contains("budget of €0.1 is spent"),
            "{}",
            t["judges"][0]
        );
    }
    assert!(o.stdout.contains("of €0.100 budget"), "{}", o.stdout);
    assert!(o.stdout.contains("skipped over budget"), "{}", o.stdout);

    // A budget needs a price for every model it pays for.
    let config = suite.join("gauntlet.yaml");
    let text = std::fs::read_to_string(&config).unwrap();
    std::fs::write(
        &config,
        text.replace(
            "    budget_eur: 0.1",
            "    budget_eur: 0.1\n    also: [judge-unpriced]",
        ),
    )
    .unwrap();
    let o = run(&["run", s(&suite), "--gateway-upstream", &fake.url, "-q"]);
    assert_eq!(o.code, 2, "{}\n{}", o.stdout, o.stderr);
    assert!(
        o.stderr.contains("model `judge-unpriced` has no price"),
        "{}",
        o.stderr
    );
}

#[test]
#[cfg_attr(not(have_py_openai), ignore = "needs python3 to run the fake upstream")]
fn a_gate_on_the_judge_is_refused_until_a_trusted_calibration_names_it() {
    let gate =
        "gates:\n  - name: judged safe\n    expr: evaluators.Judge_SafetyScore.pass_rate >= 0.0\n";
    let (tmp, suite) = suite_with_judge(
        "judge-good",
        "    run_on: all\n    calibration: judge.calibration.json",
    );
    let config = suite.join("gauntlet.yaml");
    let text = std::fs::read_to_string(&config).unwrap();
    // The suite's own gates, plus one on the judge.
    std::fs::write(&config, text.replacen("gates:\n", gate, 1)).unwrap();
    let Some(fake) = FakeUpstream::start(tmp.path()) else {
        return;
    };
    let o = run(&["run", s(&suite), "--gateway-upstream", &fake.url, "-q"]);
    assert_eq!(o.code, 2, "{}\n{}", o.stdout, o.stderr);
    assert!(
        o.stderr.contains("reads judge `Judge`, which may not gate"),
        "{}",
        o.stderr
    );
    assert!(o.stderr.contains("judge.calibration.json"), "{}", o.stderr);
    // The article's composite reads the judge too: refused as well.
    let composite = text.replace("rubric: release-gates", "rubric: composite-score");
    std::fs::write(&config, &composite).unwrap();
    let o = run(&["run", s(&suite), "--gateway-upstream", &fake.url, "-q"]);
    assert_eq!(o.code, 2, "{}\n{}", o.stdout, o.stderr);
    assert!(
        o.stderr
            .contains("rubric `composite-score` dimension `Judge` reads judge `Judge`"),
        "{}",
        o.stderr
    );

    // Produce verdicts without the gate, label them as a human would (agreeing), calibrate.
    std::fs::write(&config, text.clone()).unwrap();
    let verdict_run = tmp.path().join("verdicts");
    let o = run(&[
        "run",
        s(&suite),
        "--out",
        s(&verdict_run),
        "--epochs",
        "3",
        "--gateway-upstream",
        &fake.url,
        "-q",
    ]);
    assert!(o.code == 0 || o.code == 1, "{}\n{}", o.stdout, o.stderr);
    let labels: String = trials(&verdict_run)
        .iter()
        .filter(|t| t["judges"][0]["status"] == "scored")
        .map(|t| {
            format!(
                "{}\n",
                json!({"item": format!("{}#{}", t["case_id"].as_str().unwrap(), t["epoch"]),
                       "label": t["judges"][0]["passed"]})
            )
        })
        .collect();
    let label_file = tmp.path().join("human.jsonl");
    std::fs::write(&label_file, labels).unwrap();
    let calibration = suite.join("judge.calibration.json");
    let o = run(&[
        "calibrate",
        "--labels",
        s(&label_file),
        "--verdicts",
        s(&verdict_run),
        "--out",
        s(&calibration),
        "--min-items",
        "5",
    ]);
    assert_eq!(o.code, 0, "{}\n{}", o.stdout, o.stderr);
    let file: Value =
        serde_json::from_str(&std::fs::read_to_string(&calibration).unwrap()).unwrap();
    assert_eq!(file["trusted"], true, "{file}");
    assert_eq!(file["judge"]["model"], "judge-good");
    // Figures per case, tag (an item counts in each of its tags) and agent.
    let o = run(&[
        "calibrate",
        "--labels",
        s(&label_file),
        "--verdicts",
        s(&verdict_run),
        "--json",
    ]);
    assert_eq!(o.code, 0, "{}\n{}", o.stdout, o.stderr);
    let c: Value = serde_json::from_str(&o.stdout).unwrap();
    let judged = trials(&verdict_run)
        .into_iter()
        .filter(|t| t["judges"][0]["status"] == "scored")
        .collect::<Vec<_>>();
    for tag in ["write", "safety"] {
        let expected = judged
            .iter()
            .filter(|t| t["tags"].as_array().unwrap().iter().any(|x| x == tag))
            .count();
        assert!(expected > 0, "no judged trial is tagged {tag}");
        assert_eq!(
            c["segments"]["tag"][tag]["n"], expected,
            "{}",
            c["segments"]
        );
    }
    let agents = c["segments"]["agent"].as_object().unwrap();
    assert_eq!(agents.len(), 1, "{agents:?}");
    assert_eq!(agents.values().next().unwrap()["n"], judged.len());

    // Now the gate is accepted and the judge gates.
    std::fs::write(&config, text.replacen("gates:\n", gate, 1)).unwrap();
    let r = judged_results(
        &suite,
        &tmp.path().join("gated"),
        &fake.url,
        &["--agent", "script:forbidden"],
    );
    assert_eq!(r["header"]["judges"][0]["advisory"], false);
    assert!(
        r["gates"]
            .as_array()
            .unwrap()
            .iter()
            .any(|g| g["name"] == "judged safe")
    );
    // A trusted judge's fail fails a trial the rules passed; its pass never passes a trial the
    // rules failed (it judges every trial here: `run_on: all`; this agent breaks some rules).
    let (mut failed_by_judge, mut kept_failed) = (0, 0);
    for t in trials(&tmp.path().join("gated")) {
        let rules_passed = t["scores"].as_array().unwrap().iter().all(|s| {
            s["name"].as_str().unwrap().starts_with("Judge")
                || s["passed"] == true
                || !(s["severity"] == "error" || s["severity"] == "critical")
        });
        let judge_passed = t["judges"][0]["passed"] == true;
        assert_eq!(t["judges"][0]["status"], "scored", "{}", t["judges"][0]);
        assert_eq!(
            t["status"] == "passed",
            rules_passed && judge_passed,
            "{} {}: rules {rules_passed}, judge {judge_passed}",
            t["case_id"],
            t["status"]
        );
        failed_by_judge += usize::from(rules_passed && !judge_passed);
        kept_failed += usize::from(!rules_passed && judge_passed);
    }
    assert!(
        failed_by_judge > 0 && kept_failed > 0,
        "{failed_by_judge} {kept_failed}"
    );

    // The composite now weighs the real judge score: its Judge dimension is the mean of the
    // trials' Judge scores.
    std::fs::write(&config, &composite).unwrap();
    let out = tmp.path().join("composite");
    let r = judged_results(&suite, &out, &fake.url, &[]);
    let judge_values: Vec<f64> = trials(&out)
        .iter()
        .flat_map(|t| t["scores"].as_array().unwrap().clone())
        .filter(|s| s["name"] == "Judge")
        .map(|s| s["value"].as_f64().unwrap())
        .collect();
    assert!(!judge_values.is_empty());
    let mean = judge_values.iter().sum::<f64>() / judge_values.len() as f64;
    let dimension = r["rubric"]["dimensions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["name"] == "Judge")
        .unwrap()
        .clone();
    assert!(
        (dimension["value"].as_f64().unwrap() - mean).abs() < 1e-9,
        "{dimension} vs mean {mean}"
    );
    assert!(
        r["rubric"]["unmeasured"]
            .as_array()
            .is_none_or(|u| !u.iter().any(|d| d == "Judge")),
        "{}",
        r["rubric"]
    );

    // A changed rubric voids the calibration: advisory again, and the gate refused.
    let changed = text.replacen("gates:\n", gate, 1).replace(
        "    run_on: all\n",
        "    run_on: all\n    temperature: 0.0\n    rubric:\n      name: strict\n      version: '2'\n      criteria:\n        - {id: SafetyScore, text: Was it safe?, scale: continuous, pass: 0.95}\n",
    );
    std::fs::write(&config, changed).unwrap();
    let o = run(&["run", s(&suite), "--gateway-upstream", &fake.url, "-q"]);
    assert_eq!(o.code, 2, "{}\n{}", o.stdout, o.stderr);
    assert!(o.stderr.contains("another rubric"), "{}", o.stderr);
}

#[test]
#[cfg_attr(
    any(not(have_py_openai), not(have_chromium)),
    ignore = "needs python3 (the fake upstream), Playwright and Chromium"
)]
fn labels_given_in_the_html_report_round_trip_into_calibrate() {
    let Some((tmp, out)) = judged_run(
        "judge-good",
        "",
        &["--agent", "script:forbidden", "--report", "html"],
    ) else {
        return;
    };
    // The person agrees with the judge on every judged trial but the first, and also labels a
    // trial the judge skipped (it failed a deterministic check): that one has no verdict.
    let mut plan = serde_json::Map::new();
    let mut expected = (0, 0, 0, 0); // tp, fp, fn, tn
    let mut skipped_item = None;
    let mut flipped = false;
    for t in trials(&out) {
        let item = format!("{}#{}", t["case_id"].as_str().unwrap(), t["epoch"]);
        match t["judges"][0]["passed"].as_bool() {
            Some(judge) => {
                let human = if flipped { judge } else { !judge };
                match (judge, human) {
                    (true, true) => expected.0 += 1,
                    (true, false) => expected.1 += 1,
                    (false, true) => expected.2 += 1,
                    (false, false) => expected.3 += 1,
                }
                let note = if flipped {
                    ""
                } else {
                    "the judge missed the <b>unsafe</b> step"
                };
                flipped = true;
                plan.insert(item, json!([if human { "pass" } else { "fail" }, note]));
            }
            None if skipped_item.is_none() => {
                plan.insert(item.clone(), json!(["fail", ""]));
                skipped_item = Some(item);
            }
            None => {}
        }
    }
    let skipped_item = skipped_item.expect("a trial the judge skipped");
    let plan_file = tmp.path().join("plan.json");
    std::fs::write(&plan_file, Value::Object(plan.clone()).to_string()).unwrap();
    let labels = tmp.path().join("labels.jsonl");
    let shot = tmp.path().join("label.png");
    let Some(r) = python_check(
        "check_report.py",
        &[
            "label",
            s(&out.join("report.html")),
            s(&shot),
            s(&plan_file),
            s(&labels),
        ],
    ) else {
        return;
    };
    assert_eq!(r["console_errors"], json!([]), "{r}");
    assert_eq!(r["requests"], json!([]), "no network: {r}");
    assert_eq!(r["labelled_text"], format!("{} labelled", plan.len()));
    assert_eq!(
        r["table_labels"],
        plan.len(),
        "the trial table shows each label"
    );
    assert_eq!(r["restored"], plan.len(), "labels survive a reload: {r}");
    assert!(r["download_name"].as_str().unwrap().ends_with(".jsonl"));
    let text = std::fs::read_to_string(&labels).unwrap();
    assert_eq!(
        text,
        r["textarea"].as_str().unwrap(),
        "the download is what the page shows"
    );
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), plan.len());
    assert!(lines.iter().all(|l| l["rater"] == "alice"));
    assert!(
        lines
            .iter()
            .any(|l| l["note"] == "the judge missed the <b>unsafe</b> step"),
        "notes are kept as typed: {text}"
    );

    let o = run(&[
        "calibrate",
        "--labels",
        s(&labels),
        "--verdicts",
        s(&out),
        "--json",
        "--min-items",
        "1",
    ]);
    assert!(o.code == 0 || o.code == 1, "{}\n{}", o.stdout, o.stderr);
    let c: Value = serde_json::from_str(&o.stdout).unwrap();
    assert_eq!(
        (
            c["tp"].as_u64(),
            c["fp"].as_u64(),
            c["fn"].as_u64(),
            c["tn"].as_u64()
        ),
        (
            Some(expected.0),
            Some(expected.1),
            Some(expected.2),
            Some(expected.3)
        ),
        "{c}"
    );
    assert_eq!(c["n"].as_u64(), Some(plan.len() as u64 - 1));
    assert_eq!(c["unmatched"]["labels_only"], 1, "{c}");
    assert!(
        c["unmatched"]["items"]
            .as_array()
            .unwrap()
            .iter()
            .any(|i| i.as_str() == Some(&skipped_item)),
        "{c}"
    );
}

#[test]
#[cfg_attr(
    any(not(have_py_openai), not(have_py_agreement)),
    ignore = "needs python3 (the fake upstream) and the Python package krippendorff"
)]
fn two_judge_models_report_their_agreement_and_where_they_split() {
    let Some((_tmp, out)) = judged_run("judge-good", "    also: [judge-contrary]", &[]) else {
        return;
    };
    let r = results(&out);
    let j = &r["judges"][0];
    // Each sample's own pass/fail, per judged trial, as the raters' votes.
    let mut units = Vec::new();
    let mut split = Vec::new();
    for t in trials(&out) {
        let o = &t["judges"][0];
        if o["status"] != "scored" {
            continue;
        }
        let votes: Vec<bool> = o["samples"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["passed"].as_bool().unwrap())
            .collect();
        assert_eq!(votes.len(), 2, "one verdict per model: {o}");
        if votes[0] != votes[1] {
            split.push(format!("{}#{}", t["case_id"].as_str().unwrap(), t["epoch"]));
        }
        units.push(votes);
    }
    assert!(
        !split.is_empty() && split.len() < units.len(),
        "the models agree on some trials and split on others"
    );
    split.sort();
    let mut listed: Vec<String> = j["split_trials"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_owned())
        .collect();
    listed.sort();
    assert_eq!(listed, split, "the split trials are listed");
    // The run's alpha is krippendorff's own on the same votes (raters × units).
    let rows: Vec<Vec<u8>> = (0..2)
        .map(|m| units.iter().map(|u| u8::from(u[m])).collect())
        .collect();
    let py = std::process::Command::new("python3")
        .args([
            "-c",
            "import json, sys, krippendorff; print(krippendorff.alpha(reliability_data=json.loads(sys.argv[1]), level_of_measurement='nominal'))",
            &serde_json::to_string(&rows).unwrap(),
        ])
        .output()
        .unwrap();
    let reference: f64 = String::from_utf8_lossy(&py.stdout).trim().parse().unwrap();
    let alpha = j["agreement_alpha"].as_f64().expect("alpha reported");
    assert!((alpha - reference).abs() < 1e-9, "{alpha} vs {reference}");
}

#[test]
#[cfg_attr(not(have_py_openai), ignore = "needs python3 to run the fake upstream")]
fn compare_pairwise_asks_both_orders_and_a_flip_is_a_tie() {
    let (tmp, suite) = suite_with_judge("judge-good", "    run_on: all");
    let Some(fake) = FakeUpstream::start(tmp.path()) else {
        return;
    };
    let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
    for (agent, out) in [("script:reference", &a), ("script:forbidden", &b)] {
        let o = run(&["run", s(&suite), "--agent", agent, "--out", s(out), "-q"]);
        assert!(o.code == 0 || o.code == 1, "{}\n{}", o.stdout, o.stderr);
    }
    let compare = |model: Option<&str>| {
        if let Some(m) = model {
            let config = suite.join("gauntlet.yaml");
            let text = std::fs::read_to_string(&config)
                .unwrap()
                .replace("model: judge-good", &format!("model: {m}"));
            std::fs::write(&config, text).unwrap();
        }
        let o = run(&[
            "compare",
            s(&a),
            s(&b),
            "--pairwise",
            s(&suite),
            "--gateway-upstream",
            &fake.url,
            "--json",
        ]);
        assert_eq!(o.code, 0, "{}\n{}", o.stdout, o.stderr);
        serde_json::from_str::<Value>(&o.stdout).unwrap()["pairwise"].clone()
    };
    let p = compare(None);
    let pairs = trials(&a).len();
    assert_eq!(p["judged"], pairs, "{p}");
    // Both orders asked, no prompt twice: where the two trajectories read the same, both orders
    // are one prompt, asked once and then answered from the cache (and that pair is a tie).
    let log = std::fs::read_to_string(tmp.path().join("fake.port.judge")).unwrap();
    let asked: std::collections::BTreeSet<&str> = log.lines().collect();
    assert_eq!(asked.len(), log.lines().count(), "no prompt asked twice");
    let ties = p["ties"].as_u64().unwrap() as usize;
    assert!(
        asked.len() <= 2 * pairs && asked.len() + ties >= 2 * pairs,
        "{} calls for {pairs} pairs ({ties} ties)",
        asked.len()
    );
    // The fake prefers the trajectory with fewer tool calls whichever side it is shown on.
    let calls = |run: &Path| -> std::collections::HashMap<String, usize> {
        trials(run)
            .iter()
            .map(|t| {
                let calls = t["trajectory"]["events"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .filter(|e| e["type"] == "tool_call")
                    .count();
                (
                    format!("{}#{}", t["case_id"].as_str().unwrap(), t["epoch"]),
                    calls,
                )
            })
            .collect()
    };
    let (la, lb) = (calls(&a), calls(&b));
    let mut seen = std::collections::BTreeSet::new();
    for item in p["items"].as_array().unwrap() {
        let id = item["item"].as_str().unwrap();
        let want = match la[id].cmp(&lb[id]) {
            std::cmp::Ordering::Less => "a",
            std::cmp::Ordering::Greater => "b",
            std::cmp::Ordering::Equal => "tie",
        };
        assert_eq!(item["preference"], want, "{item}");
        assert!(item.get("flipped").is_none(), "{item}");
        seen.insert(want);
    }
    assert!(seen.len() >= 2, "the runs differ somewhere: {p}");
    assert_eq!(p["position_bias"], 0);
    assert_eq!(
        p["a_wins"].as_u64().unwrap() + p["b_wins"].as_u64().unwrap() + p["ties"].as_u64().unwrap(),
        pairs as u64
    );
    // Asked again: every verdict from the judge cache.
    let before = judge_calls(tmp.path());
    let mut again = compare(None);
    assert_eq!(again["cost_eur"], 0.0, "cached answers cost nothing");
    assert!(p["cost_eur"].as_f64().unwrap() > 0.0);
    again["cost_eur"] = p["cost_eur"].clone();
    assert_eq!(again, p);
    assert_eq!(judge_calls(tmp.path()), before);

    // With a budget, pairs go in batches of the judge's concurrency (2 here): the first batch
    // (4 calls at 0.044 EUR) spends 0.1 EUR, and the rest are skipped, over budget.
    let config = suite.join("gauntlet.yaml");
    let text = std::fs::read_to_string(&config).unwrap();
    std::fs::write(
        &config,
        text.replace(
            "    run_on: all",
            "    run_on: all\n    budget_eur: 0.1\n    concurrency: 2\n    seed: 1",
        ),
    )
    .unwrap();
    let budgeted = compare(None);
    assert_eq!(budgeted["judged"], 2, "{budgeted}");
    assert_eq!(budgeted["over_budget"], pairs - 2, "{budgeted}");
    assert_eq!(budgeted["skipped"], pairs - 2, "{budgeted}");
    std::fs::write(&config, text).unwrap();

    // A judge that always prefers whatever it is shown first: every pair flips, a tie.
    let p = compare(Some("judge-first"));
    assert_eq!(p["position_bias"], pairs, "{p}");
    assert_eq!(p["ties"], pairs);
    assert_eq!(
        (p["a_wins"].as_u64(), p["b_wins"].as_u64()),
        (Some(0), Some(0))
    );
    assert!(
        p["items"]
            .as_array()
            .unwrap()
            .iter()
            .all(|i| i["flipped"] == true)
    );
}
