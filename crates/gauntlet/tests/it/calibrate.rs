//! `gauntlet calibrate`: a judge's agreement with human labels, checked against Online-Mind2Web's
//! published WebJudge precision, golden values from scikit-learn, statsmodels and krippendorff,
//! Krippendorff's worked example, and the reference libraries on random label sets.

use super::common::*;

fn judges_dir() -> PathBuf {
    repo().join("../shared/peers/judges")
}

fn webjudge(variant: &str) -> PathBuf {
    judges_dir().join(format!(
        "online-mind2web/agent_reward_bench_evaluation_results/webjudge_{variant}.results.json"
    ))
}

fn calibrate_json(args: &[&str]) -> Value {
    let mut all = vec!["calibrate", "--json"];
    all.extend_from_slice(args);
    let o = run(&all);
    assert_eq!(o.code, 0, "{}\n{}", o.stdout, o.stderr);
    serde_json::from_str(&o.stdout).unwrap()
}

fn arb(variant: &str) -> Value {
    let f = webjudge(variant);
    calibrate_json(&[
        "--labels",
        s(&f),
        "--verdicts",
        s(&f),
        "--judge",
        "webjudge",
        "--category",
        "trajectory_success",
    ])
}

fn pct(x: &Value) -> f64 {
    (x.as_f64().unwrap() * 1000.0).round() / 10.0
}

/// Online-Mind2Web's README: WebJudge's precision against the experts on AgentRewardBench,
/// overall / AssistantBench / VisualWebArena / WebArena / WorkArena / WorkArena++.
#[test]
#[cfg_attr(not(have_judges_data), ignore = "needs ../shared/peers/judges")]
fn reproduces_online_mind2webs_published_webjudge_precision() {
    let published = [
        ("o4_mini", [82.0, 100.0, 74.5, 81.2, 100.0, 90.0]),
        ("gpt4o", [73.7, 66.7, 69.8, 72.6, 92.3, 75.0]),
        ("7B", [75.7, 80.0, 66.7, 77.5, 100.0, 70.0]),
    ];
    let benchmarks = [
        "assistantbench",
        "visualwebarena",
        "webarena",
        "workarena",
        "workarena++",
    ];
    for (variant, precision) in published {
        let r = arb(variant);
        assert_eq!(r["n"], 1106, "{variant}");
        assert_eq!(pct(&r["precision"]), precision[0], "{variant} overall");
        for (b, want) in benchmarks.iter().zip(&precision[1..]) {
            let got = pct(&r["segments"]["benchmark"][b]["precision"]);
            assert!((got - want).abs() <= 0.1, "{variant} {b}: {got} vs {want}");
        }
    }
}

/// Confusion, kappa with statsmodels' standard error and interval, and alpha equal the golden
/// values computed with the reference libraries, to 1e-4.
#[test]
#[cfg_attr(not(have_judges_data), ignore = "needs ../shared/peers/judges")]
fn kappa_and_alpha_equal_the_golden_values() {
    let golden: Value = serde_json::from_str(
        &std::fs::read_to_string(judges_dir().join("derived/golden_agreement.json")).unwrap(),
    )
    .unwrap();
    for (variant, key) in [
        ("o4_mini", "webjudge_o4mini"),
        ("gpt4o", "webjudge_gpt4o"),
        ("7B", "webjudge_7b"),
    ] {
        let g = &golden["arb_webjudge"][key];
        let r = arb(variant);
        for k in ["n", "tp", "fp", "fn", "tn"] {
            assert_eq!(r[k], g[k], "{variant} {k}");
        }
        let close = |a: &Value, b: &Value, what: &str| {
            let (a, b) = (a.as_f64().unwrap(), b.as_f64().unwrap());
            assert!((a - b).abs() < 1e-4, "{variant} {what}: {a} vs {b}");
        };
        close(&r["cohen_kappa"], &g["cohen_kappa"], "kappa");
        close(&r["kappa_se"], &g["kappa_se_statsmodels"], "kappa se");
        close(&r["kappa_ci95"][0], &g["kappa_ci95"][0], "kappa lower");
        close(&r["kappa_ci95"][1], &g["kappa_ci95"][1], "kappa upper");
        close(&r["krippendorff_alpha"], &g["kripp_alpha_nominal"], "alpha");
        // The contract's figures are all there, as proportions.
        for k in [
            "accuracy",
            "precision",
            "recall",
            "f1",
            "npv",
            "tnr",
            "judge_positive_rate",
            "human_positive_rate",
            "mcnemar_p",
        ] {
            let v = r[k].as_f64().unwrap_or_else(|| panic!("{k} missing"));
            assert!((0.0..=1.0).contains(&v), "{k} = {v}");
        }
    }
}

fn write_jsonl(path: &Path, rows: &[Value]) {
    let text: String = rows.iter().map(|r| format!("{r}\n")).collect();
    std::fs::write(path, text).unwrap();
}

/// Krippendorff (2011)'s worked example, four raters with missing values, read as human labels
/// with a `rater` each: the human-human alpha is the published 0.743 / 0.815 / 0.849 / 0.797.
#[test]
fn krippendorffs_worked_example_through_the_cli() {
    let dir = tempfile::tempdir().unwrap();
    let data: [[Option<u8>; 12]; 4] = [
        [
            Some(1),
            Some(2),
            Some(3),
            Some(3),
            Some(2),
            Some(1),
            Some(4),
            Some(1),
            Some(2),
            None,
            None,
            None,
        ],
        [
            Some(1),
            Some(2),
            Some(3),
            Some(3),
            Some(2),
            Some(2),
            Some(4),
            Some(1),
            Some(2),
            Some(5),
            None,
            Some(3),
        ],
        [
            None,
            Some(3),
            Some(3),
            Some(3),
            Some(2),
            Some(3),
            Some(4),
            Some(2),
            Some(2),
            Some(5),
            Some(1),
            None,
        ],
        [
            Some(1),
            Some(2),
            Some(3),
            Some(3),
            Some(2),
            Some(4),
            Some(4),
            Some(1),
            Some(2),
            Some(5),
            Some(1),
            None,
        ],
    ];
    let mut labels = Vec::new();
    for (r, row) in data.iter().enumerate() {
        for (u, v) in row.iter().enumerate() {
            if let Some(v) = v {
                labels.push(json!({"item": format!("u{u}"), "label": v, "rater": format!("r{r}")}));
            }
        }
    }
    let verdicts: Vec<Value> = (0..12)
        .map(|u| json!({"item": format!("u{u}"), "label": 3}))
        .collect();
    let (l, v) = (dir.path().join("l.jsonl"), dir.path().join("v.jsonl"));
    write_jsonl(&l, &labels);
    write_jsonl(&v, &verdicts);
    for (level, want) in [
        ("nominal", 0.743),
        ("ordinal", 0.815),
        ("interval", 0.849),
        ("ratio", 0.797),
    ] {
        let r = calibrate_json(&["--labels", s(&l), "--verdicts", s(&v), "--level", level]);
        let alpha = r["human_agreement"]["krippendorff_alpha"].as_f64().unwrap();
        assert_eq!((alpha * 1000.0).round() / 1000.0, want, "{level}");
    }
}

/// On random label sets (2 to 5 ordinal categories, 5 to 200 items, skewed or not), kappa,
/// its standard error and interval, weighted kappa and alpha at every level equal scikit-learn,
/// statsmodels and krippendorff.
#[test]
#[cfg_attr(
    not(have_py_agreement),
    ignore = "needs python3 with scikit-learn, statsmodels and krippendorff"
)]
fn agree_with_the_reference_libraries_on_random_label_sets() {
    use rand::{RngExt, SeedableRng};
    let dir = tempfile::tempdir().unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/agreement_reference.py");
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(20261201);
    for round in 0..12 {
        let k = rng.random_range(2..=5u32);
        let n = rng.random_range(5..=200usize);
        let agree = rng.random_range(0.0..0.9);
        let (mut human, mut judge) = (Vec::new(), Vec::new());
        for _ in 0..n {
            let h = rng.random_range(1..=k);
            let j = if rng.random_bool(agree) {
                h
            } else {
                rng.random_range(1..=k)
            };
            human.push(h);
            judge.push(j);
        }
        let rows = |side: &[u32]| -> Vec<Value> {
            side.iter()
                .enumerate()
                .map(|(i, v)| json!({"item": format!("i{i}"), "label": v}))
                .collect()
        };
        let (l, v) = (dir.path().join("l.jsonl"), dir.path().join("v.jsonl"));
        write_jsonl(&l, &rows(&human));
        write_jsonl(&v, &rows(&judge));
        let input = json!({"human": human, "judge": judge, "units": [human, judge]});
        let reference = std::process::Command::new("python3")
            .arg(&script)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .and_then(|mut child| {
                use std::io::Write;
                child
                    .stdin
                    .take()
                    .unwrap()
                    .write_all(input.to_string().as_bytes())?;
                child.wait_with_output()
            })
            .unwrap();
        assert!(reference.status.success());
        let want: Value = serde_json::from_slice(&reference.stdout).unwrap();
        let close = |got: &Value, want: &Value, what: &str| {
            match (got.as_f64(), want.as_f64()) {
                (Some(a), Some(b)) => {
                    assert!(
                        (a - b).abs() < 1e-9,
                        "round {round} (k={k}, n={n}) {what}: {a} vs {b}"
                    )
                }
                // Both undefined (no variation to agree on).
                (None, None) => {}
                (a, b) => panic!("round {round} {what}: {a:?} vs {b:?}"),
            }
        };
        for (weights, key) in [("linear", "linear"), ("quadratic", "quadratic")] {
            let r = calibrate_json(&["--labels", s(&l), "--verdicts", s(&v), "--weights", weights]);
            close(&r["weighted_kappa"], &want[key], key);
            close(&r["cohen_kappa"], &want["kappa"], "kappa");
            close(&r["kappa_se"], &want["kappa_se"], "kappa se");
            close(&r["kappa_ci95"][0], &want["kappa_ci95"][0], "kappa lower");
            close(&r["kappa_ci95"][1], &want["kappa_ci95"][1], "kappa upper");
        }
        for level in ["nominal", "ordinal", "interval", "ratio"] {
            let r = calibrate_json(&["--labels", s(&l), "--verdicts", s(&v), "--level", level]);
            close(
                &r["krippendorff_alpha"],
                &want[format!("alpha_{level}")],
                level,
            );
        }
    }
}

#[test]
fn bad_input_names_the_file_and_line_and_unmatched_items_are_listed() {
    let dir = tempfile::tempdir().unwrap();
    let (l, v) = (dir.path().join("l.jsonl"), dir.path().join("v.jsonl"));
    std::fs::write(
        &l,
        "{\"item\": \"a\", \"label\": true}\n{\"item\": \"b\", \"lable\": true}\n",
    )
    .unwrap();
    write_jsonl(&v, &[json!({"item": "a", "label": "success"})]);
    let o = run(&["calibrate", "--labels", s(&l), "--verdicts", s(&v)]);
    assert_eq!(o.code, 2);
    assert!(o.stderr.contains("l.jsonl:2:"), "{}", o.stderr);
    assert!(o.stderr.contains("lable"), "{}", o.stderr);

    write_jsonl(
        &l,
        &[
            json!({"item": "a", "label": true}),
            json!({"item": "b", "label": false}),
        ],
    );
    write_jsonl(
        &v,
        &[
            json!({"item": "a", "label": "success"}),
            json!({"item": "c", "label": "failure"}),
        ],
    );
    let r = calibrate_json(&["--labels", s(&l), "--verdicts", s(&v)]);
    assert_eq!(r["n"], 1);
    assert_eq!(r["unmatched"]["labels_only"], 1);
    assert_eq!(r["unmatched"]["verdicts_only"], 1);
    assert_eq!(r["unmatched"]["items"], json!(["b", "c"]));

    let f = dir.path().join("results.json");
    std::fs::write(&f, "{}").unwrap();
    let o = run(&["calibrate", "--labels", s(&f), "--verdicts", s(&f)]);
    assert_eq!(o.code, 2);
    assert!(
        o.stderr.contains("--judge NAME --category NAME"),
        "{}",
        o.stderr
    );
}
