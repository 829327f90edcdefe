//! The statistics against their reference implementations: Wilson, McNemar and the bootstrap
//! against SciPy, the drift tests against SciPy and statsmodels, on random inputs.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

use gauntlet_stats::{CONFIDENCE, RESAMPLES, bootstrap_mean, mcnemar_exact, wilson};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::{Value, json};

fn scipy(problems: &Value) -> Option<Vec<Value>> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/reference/stats_reference.py");
    let mut child = Command::new("python3")
        .arg(script)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .ok()?;
    child
        .stdin
        .take()?
        .write_all(problems.to_string().as_bytes())
        .ok()?;
    let out = child.wait_with_output().ok()?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        if err.contains("No module named") {
            eprintln!("skipped: SciPy is not installed (pip install scipy): {err}");
            return None;
        }
        panic!("reference script failed: {err}");
    }
    Some(serde_json::from_slice(&out.stdout).unwrap())
}

/// Wilson, McNemar exact and bootstrap against SciPy on generated data. Tolerances: 1e-9 for
/// the closed forms; 0.02 (on values of spread about 1) for the bootstrap, whose resamples differ.
#[test]
#[cfg_attr(not(have_py_scipy), ignore = "needs SciPy (pip install scipy)")]
fn statistics_agree_with_scipy() {
    let mut rng = ChaCha8Rng::seed_from_u64(2026);
    let mut problems = Vec::new();
    for _ in 0..40 {
        let n: u64 = rng.random_range(1..300);
        problems.push(json!({"wilson": [rng.random_range(0..=n), n]}));
        problems.push(json!({"mcnemar": [rng.random_range(0..40u64), rng.random_range(0..40u64)]}));
    }
    let mut samples = Vec::new();
    for i in 0..5 {
        let v: Vec<f64> = (0..400)
            .map(|_| rng.random_range(0.0..1.0f64).powi(2) * 3.0)
            .collect();
        problems.push(json!({"bootstrap": [v.clone(), i]}));
        samples.push(v);
    }
    let problems = Value::Array(problems);
    let Some(answers) = scipy(&problems) else {
        return;
    };
    let mut bootstraps = samples.iter();
    for (p, a) in problems.as_array().unwrap().iter().zip(answers) {
        if let Some(kn) = p.get("wilson") {
            let i = wilson(kn[0].as_u64().unwrap(), kn[1].as_u64().unwrap(), CONFIDENCE);
            assert!(
                (i.lower - a[0].as_f64().unwrap()).abs() < 1e-9,
                "{p}: {i:?} vs {a}"
            );
            assert!(
                (i.upper - a[1].as_f64().unwrap()).abs() < 1e-9,
                "{p}: {i:?} vs {a}"
            );
        } else if let Some(bc) = p.get("mcnemar") {
            let ours = mcnemar_exact(bc[0].as_u64().unwrap(), bc[1].as_u64().unwrap());
            assert!(
                (ours - a.as_f64().unwrap()).abs() < 1e-9,
                "{p}: {ours} vs {a}"
            );
        } else {
            let v = bootstraps.next().unwrap();
            let i = bootstrap_mean(v, RESAMPLES, 1, CONFIDENCE);
            assert!(
                (i.lower - a[0].as_f64().unwrap()).abs() < 0.02,
                "{i:?} vs {a}"
            );
            assert!(
                (i.upper - a[1].as_f64().unwrap()).abs() < 0.02,
                "{i:?} vs {a}"
            );
        }
    }
}

/// The drift tests against SciPy and statsmodels, on random samples of several shapes
/// (ties, unequal sizes, small and large counts): within 1e-9 (p-values within 1e-9 relative
/// where they are tiny).
#[test]
#[cfg_attr(
    not(all(have_py_scipy, have_py_statsmodels)),
    ignore = "needs SciPy and statsmodels (pip install scipy statsmodels)"
)]
fn drift_tests_agree_with_scipy_and_statsmodels() {
    use gauntlet_stats::drift::{
        benjamini_hochberg, chi_square, fisher_exact, kolmogorov_smirnov, mann_whitney_u,
        two_proportion_z,
    };
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    let mut problems = Vec::new();
    for i in 0..30 {
        let (n1, n2) = (rng.random_range(3..400usize), rng.random_range(3..400usize));
        // Half the samples are small integers (many ties), half continuous.
        let draw = |rng: &mut ChaCha8Rng, n: usize, shift: f64| -> Vec<f64> {
            (0..n)
                .map(|_| {
                    let v = rng.random_range(0.0..10.0f64) + shift;
                    if i % 2 == 0 { v.floor() } else { v }
                })
                .collect()
        };
        let shift = rng.random_range(0.0..1.5f64);
        let x = draw(&mut rng, n1, 0.0);
        let y = draw(&mut rng, n2, shift);
        problems.push(json!({"mann_whitney": [x.clone(), y.clone()]}));
        problems.push(json!({"ks": [x, y]}));
        let (a, b, c, d) = (
            rng.random_range(0..30u64),
            rng.random_range(0..300u64),
            rng.random_range(0..30u64),
            rng.random_range(0..300u64),
        );
        problems.push(json!({"fisher": [a, b, c, d]}));
        let (m1, m2) = (rng.random_range(50..5000u64), rng.random_range(50..5000u64));
        problems
            .push(json!({"z": [rng.random_range(5..m1 / 2), m1, rng.random_range(5..m2 / 2), m2]}));
        let k = rng.random_range(2..6usize);
        let row = |rng: &mut ChaCha8Rng| -> Vec<u64> {
            (0..k).map(|_| rng.random_range(0..200u64)).collect()
        };
        problems.push(json!({"chi2": [row(&mut rng), row(&mut rng)]}));
        let ps: Vec<f64> = (0..rng.random_range(1..12))
            .map(|_| rng.random_range(0.0..1.0f64).powi(3))
            .collect();
        problems.push(json!({"bh": ps}));
    }
    let problems = Value::Array(problems);
    let Some(answers) = scipy(&problems) else {
        return;
    };
    let close = |ours: f64, theirs: &Value, what: &Value| {
        let t = theirs.as_f64().unwrap();
        assert!(
            (ours - t).abs() <= 1e-9 + 1e-9 * t.abs(),
            "{what}: ours {ours} vs {t}"
        );
    };
    let floats = |v: &Value| -> Vec<f64> {
        v.as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_f64().unwrap())
            .collect()
    };
    for (p, a) in problems.as_array().unwrap().iter().zip(answers) {
        if let Some(xy) = p.get("mann_whitney") {
            let (u, pv, _) = mann_whitney_u(&floats(&xy[0]), &floats(&xy[1]));
            close(u, &a[0], p);
            close(pv, &a[1], p);
        } else if let Some(xy) = p.get("ks") {
            let (d, pv) = kolmogorov_smirnov(&floats(&xy[0]), &floats(&xy[1]));
            close(d, &a[0], p);
            close(pv, &a[1], p);
        } else if let Some(t) = p.get("fisher") {
            let v: Vec<u64> = t
                .as_array()
                .unwrap()
                .iter()
                .map(|x| x.as_u64().unwrap())
                .collect();
            close(fisher_exact(v[0], v[1], v[2], v[3]), &a, p);
        } else if let Some(t) = p.get("z") {
            let v: Vec<u64> = t
                .as_array()
                .unwrap()
                .iter()
                .map(|x| x.as_u64().unwrap())
                .collect();
            let (z, pv) = two_proportion_z(v[0], v[1], v[2], v[3]);
            close(z, &a[0], p);
            close(pv, &a[1], p);
        } else if let Some(t) = p.get("chi2") {
            let rows: Vec<Vec<u64>> = t
                .as_array()
                .unwrap()
                .iter()
                .map(|r| {
                    r.as_array()
                        .unwrap()
                        .iter()
                        .map(|x| x.as_u64().unwrap())
                        .collect()
                })
                .collect();
            let (stat, pv, _) = chi_square([&rows[0], &rows[1]]);
            close(stat, &a[0], p);
            close(pv, &a[1], p);
        } else if let Some(ps) = p.get("bh") {
            for (ours, theirs) in benjamini_hochberg(&floats(ps))
                .iter()
                .zip(a.as_array().unwrap())
            {
                close(*ours, theirs, p);
            }
        }
    }
}
