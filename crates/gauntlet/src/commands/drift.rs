//! `gauntlet drift --baseline WINDOW --current WINDOW`: two windows compared, metric by metric.

use gauntlet_online::window::{Source, sample};

use crate::exit::{ExpectedError, GATE_FAILED, GATES_PASSED};

pub fn drift(
    baseline: &str,
    current: &str,
    alpha: f64,
    floors: gauntlet_stats::drift::Floors,
    json: bool,
) -> Result<i32, ExpectedError> {
    if !(alpha > 0.0 && alpha < 1.0) {
        return Err(ExpectedError::input("--alpha must be between 0 and 1"));
    }
    for (flag, v) in [
        ("--min-rate-change", floors.rate),
        ("--min-relative-change", floors.relative),
        ("--min-latency-ms", floors.latency_ms),
    ] {
        if !(v >= 0.0 && v.is_finite()) {
            return Err(ExpectedError::input(format!(
                "{flag} must be a number of 0 or more (0 counts every significant change)"
            )));
        }
    }
    let window = |flag: &str, text: &str| {
        Source::parse(text)
            .and_then(|s| sample(&s))
            .map_err(|e| ExpectedError::input(format!("--{flag}: {e}")))
    };
    let a = window("baseline", baseline)?;
    let b = window("current", current)?;
    let report = gauntlet_stats::drift::drift_with(&a, &b, alpha, &floors);
    if json {
        println!(
            "{}",
            serde_json::to_string_pretty(&report).expect("reports serialise")
        );
    } else {
        crate::say!(
            "drift: {} baseline and {} current trajectories, alpha {} (Benjamini-Hochberg)",
            report.baseline_trajectories,
            report.current_trajectories,
            report.alpha
        );
        let mut table = comfy_table::Table::new();
        table
            .load_preset(comfy_table::presets::NOTHING)
            .set_header([
                "metric",
                "test",
                "baseline",
                "current",
                "effect",
                "p",
                "p adjusted",
                "",
            ]);
        for t in &report.tests {
            table.add_row([
                t.metric.clone(),
                t.test.to_owned(),
                format!("{:.4}", t.baseline),
                format!("{:.4}", t.current),
                format!("{:+.4} ({})", t.effect, t.effect_kind),
                format!("{:.3e}", t.p_value),
                format!("{:.3e}", t.p_adjusted),
                if t.drift {
                    "DRIFT"
                } else if t.below_floor {
                    "below floor"
                } else {
                    ""
                }
                .to_owned(),
            ]);
        }
        crate::say!("{table}");
        crate::say!(
            "{}",
            if report.drift {
                "drifted: see the rows marked DRIFT"
            } else {
                "no drift"
            }
        );
    }
    Ok(if report.drift {
        GATE_FAILED
    } else {
        GATES_PASSED
    })
}
