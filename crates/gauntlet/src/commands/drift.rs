//! `gauntlet drift --baseline WINDOW --current WINDOW`: two windows compared, metric by metric.

use gauntlet_online::window::{Source, sample};

use crate::exit::{ExpectedError, GATE_FAILED, GATES_PASSED};

/// Compare two windows of trajectories: has anything drifted?
///
/// Examples:
///   gauntlet drift --baseline lake/@2026-11-01..2026-11-07 --current lake/@2026-11-08..
///   gauntlet drift --baseline runs/last-week --current runs/today --json
///
/// A window is a run folder, or a lake (`gauntlet online --lake`) with an optional day range
/// LAKE@FROM..TO (either side may be left open). Per metric, the test that fits it: rates
/// (tool errors per call, pass rate, each evaluator's pass rate) by the two-proportion
/// z-test (Fisher's exact test when an expected count is under 5); trajectory length,
/// latency, cost and tokens by Mann-Whitney U and Kolmogorov-Smirnov; the tool mix by
/// chi-square. Each has an effect size; p-values are adjusted together
/// (Benjamini-Hochberg) and a test drifts when its adjusted p is under --alpha.
/// Exit code 1 when anything drifted (for cron and CI), 0 when not, 2 on bad input.
#[derive(Debug, clap::Args)]
#[command(verbatim_doc_comment)]
pub struct Args {
    /// The reference window.
    #[arg(long)]
    pub baseline: String,
    /// The window to check.
    #[arg(long)]
    pub current: String,
    /// The false-discovery rate across all tests.
    #[arg(long, default_value_t = 0.01)]
    pub alpha: f64,
    /// The smallest change of a rate that counts as drift (absolute: 0.02 is two points);
    /// a smaller significant change is reported as below the floor.
    #[arg(long, default_value_t = 0.02)]
    pub min_rate_change: f64,
    /// The smallest change of a mean (trajectory length, latency, cost, tokens) that counts,
    /// relative to the baseline's (0.1 is ten per cent).
    #[arg(long, default_value_t = 0.1)]
    pub min_relative_change: f64,
    /// The smallest change of the mean latency that counts, in milliseconds (sub-millisecond
    /// latencies move with the machine's load).
    #[arg(long, default_value_t = 10.0)]
    pub min_latency_ms: f64,
    /// Print the report as JSON: {alpha, drift, tests: [{metric, test, baseline, current,
    /// statistic, p_value, p_adjusted, effect, effect_kind, drift, below_floor?}]}.
    #[arg(long)]
    pub json: bool,
}

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

impl Args {
    /// Runs the command; the exit code, or an error carrying one.
    pub fn exec(self) -> Result<i32, ExpectedError> {
        drift(
            &self.baseline,
            &self.current,
            self.alpha,
            gauntlet_stats::drift::Floors {
                rate: self.min_rate_change,
                relative: self.min_relative_change,
                latency_ms: self.min_latency_ms,
                ..Default::default()
            },
            self.json,
        )
    }
}
