//! Sequential drift detection on the live stream, chosen per metric: a Bernoulli (binomial)
//! CUSUM for rates (trace failures, tool errors per call), an EWMA chart on the log scale for
//! continuous values (trace duration, tokens). Each learns its baseline from the first traces
//! it sees (at least 200, and for a rate at least 100 events), then watches for a sustained
//! shift.
//!
//! After an alarm a detector is in alarm: it raises no other while the shift lasts. It leaves
//! the alarm either when the metric is back at its baseline (for a rate, a CUSUM the other way
//! crosses the same interval; for a value, the EWMA is back within half its control limit), and
//! then watches from the same baseline; or, when the shift lasts as long as a baseline takes to
//! learn (the same rule as the first), by taking the new level as its baseline, and then
//! watches for a shift from there. So a lasting change raises one alarm, not one every few dozen
//! traces for as long as it lasts, a false alarm does not cost the baseline, and a further
//! change from a new level raises another alarm. A rate whose baseline is at the top (99 % or
//! more: every trace failing, say) has nothing to rise to and raises none.

use std::collections::BTreeMap;

use crate::lake::TraceRow;

/// Traces that set a detector's baseline.
pub const WARM_UP: u64 = 200;
/// Events (or trials, for rare events) a rate's baseline is learnt from, at least.
const RATE_EVENTS: f64 = 100.0;
const RATE_TRIALS: f64 = 20_000.0;
/// CUSUM decision interval (log-likelihood ratio): with a doubled rate as the alternative, a
/// false alarm takes thousands of traces on average.
const CUSUM_H: f64 = 8.0;
/// The highest rate a baseline or its alternative takes.
const P_MAX: f64 = 0.99;
/// EWMA weight and control-limit width in standard deviations.
const EWMA_LAMBDA: f64 = 0.1;
const EWMA_L: f64 = 4.0;

/// Events out of trials over a number of traces: what a rate's baseline is learnt from.
#[derive(Debug, Clone, Default)]
struct Counts {
    traces: u64,
    events: f64,
    trials: f64,
}

impl Counts {
    fn add(&mut self, x: f64, n: f64) {
        self.traces += 1;
        self.events += x;
        self.trials += n;
    }

    fn rate(&self) -> f64 {
        self.events / self.trials.max(1.0)
    }

    /// The rate, once there is enough to learn a baseline from: enough events for it to be
    /// within about 10 % of the true rate (an underestimate would make the steady stream drift
    /// towards an alarm).
    fn baseline(&self) -> Option<f64> {
        (self.traces >= WARM_UP && (self.events >= RATE_EVENTS || self.trials >= RATE_TRIALS))
            .then(|| self.rate().clamp(0.0005, P_MAX))
    }
}

/// A rate watched for an increase: events out of trials per trace.
#[derive(Debug, Clone, Default)]
struct Cusum {
    /// The baseline, once learnt.
    p0: Option<f64>,
    /// What the baseline is being learnt from (at first, and while in alarm).
    learning: Counts,
    /// Since the baseline (or the end of the last alarm), for the rate an alarm reports.
    watched: Counts,
    /// The CUSUM for a rise.
    s: f64,
    /// In alarm: the CUSUM for a return to the baseline.
    back: Option<f64>,
}

impl Cusum {
    /// Adds `x` events out of `n`; the baseline and the current rate when it alarms.
    fn observe(&mut self, x: f64, n: f64) -> Option<(f64, f64)> {
        let Some(p0) = self.p0 else {
            self.learning.add(x, n);
            self.p0 = self.learning.baseline();
            if self.p0.is_some() {
                self.learning = Counts::default();
            }
            return None;
        };
        let p1 = (2.0 * p0).min(p0 + 0.2).min(P_MAX);
        if p1 <= p0 {
            // At the top already: no rise to watch for.
            return None;
        }
        let rise = x * (p1 / p0).ln() + (n - x) * ((1.0 - p1) / (1.0 - p0)).ln();
        if let Some(back) = self.back {
            let back = (back - rise).max(0.0);
            self.learning.add(x, n);
            if back > CUSUM_H {
                // Back at the baseline: watch from it again.
                self.rest(p0);
            } else if let Some(p) = self.learning.baseline() {
                // The shift lasted: its level is the new baseline.
                self.rest(p);
            } else {
                self.back = Some(back);
            }
            return None;
        }
        self.s = (self.s + rise).max(0.0);
        self.watched.add(x, n);
        if self.s > CUSUM_H {
            let current = self.watched.rate();
            self.s = 0.0;
            self.back = Some(0.0);
            self.learning = Counts::default();
            return Some((p0, current));
        }
        None
    }

    /// Out of alarm (or never in it), watching from `p0`.
    fn rest(&mut self, p0: f64) {
        *self = Cusum {
            p0: Some(p0),
            ..Cusum::default()
        };
    }
}

/// Values on the log scale: what a value's baseline is learnt from.
#[derive(Debug, Clone, Default)]
struct Moments {
    n: u64,
    sum: f64,
    sum_sq: f64,
}

impl Moments {
    fn add(&mut self, x: f64) {
        self.n += 1;
        self.sum += x;
        self.sum_sq += x * x;
    }

    /// The mean and standard deviation, once there are enough values.
    fn baseline(&self) -> Option<(f64, f64)> {
        (self.n >= WARM_UP).then(|| {
            let n = self.n as f64;
            let mean = self.sum / n;
            let sd = ((self.sum_sq / n - mean * mean).max(0.0) * n / (n - 1.0))
                .sqrt()
                .max(1e-3);
            (mean, sd)
        })
    }
}

/// A positive value watched on the log scale for a shift either way.
#[derive(Debug, Clone, Default)]
struct Ewma {
    /// The baseline's mean and standard deviation, once learnt.
    baseline: Option<(f64, f64)>,
    /// What the baseline is being learnt from (at first, and while in alarm).
    learning: Moments,
    z: f64,
    alarmed: bool,
}

impl Ewma {
    fn observe(&mut self, value: f64) -> Option<(f64, f64)> {
        let x = value.max(0.0).ln_1p();
        let Some((mean, sd)) = self.baseline else {
            self.learning.add(x);
            if let Some((mean, sd)) = self.learning.baseline() {
                self.rest(mean, sd);
            }
            return None;
        };
        self.z = EWMA_LAMBDA * x + (1.0 - EWMA_LAMBDA) * self.z;
        let limit = EWMA_L * sd * (EWMA_LAMBDA / (2.0 - EWMA_LAMBDA)).sqrt();
        let off = (self.z - mean).abs();
        if self.alarmed {
            self.learning.add(x);
            if off <= limit / 2.0 {
                // Back at the baseline: watch from it again.
                self.alarmed = false;
                self.learning = Moments::default();
            } else if let Some((mean, sd)) = self.learning.baseline() {
                // The shift lasted: its level is the new baseline.
                self.rest(mean, sd);
            }
            return None;
        }
        if off > limit {
            self.alarmed = true;
            self.learning = Moments::default();
            return Some((mean.exp_m1(), self.z.exp_m1()));
        }
        None
    }

    /// Out of alarm (or never in it), watching from this baseline.
    fn rest(&mut self, mean: f64, sd: f64) {
        *self = Ewma {
            baseline: Some((mean, sd)),
            z: mean,
            ..Ewma::default()
        };
    }
}

/// One alarm.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Alarm {
    pub metric: &'static str,
    pub detector: &'static str,
    /// The trace count when it fired.
    pub at_trace: u64,
    pub baseline: f64,
    pub current: f64,
}

impl std::fmt::Display for Alarm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} moved from {:.4} to {:.4} ({} after {} traces)",
            self.metric, self.baseline, self.current, self.detector, self.at_trace
        )
    }
}

/// The receiver's detectors.
#[derive(Debug, Clone, Default)]
pub struct Monitor {
    traces: u64,
    failures: Cusum,
    tool_errors: Cusum,
    duration: Ewma,
    tokens: Ewma,
    recent: Vec<Alarm>,
    counts: BTreeMap<&'static str, u64>,
}

/// Alarms kept for `/v1/status`.
const RECENT: usize = 50;

impl Monitor {
    /// Feeds one judged trace; the alarms it raised.
    pub fn observe(&mut self, row: &TraceRow) -> Vec<Alarm> {
        self.traces += 1;
        let mut out = Vec::new();
        let mut alarm = |metric, detector, hit: Option<(f64, f64)>| {
            if let Some((baseline, current)) = hit {
                out.push(Alarm {
                    metric,
                    detector,
                    at_trace: self.traces,
                    baseline,
                    current,
                });
            }
        };
        let failed = if row.status == "passed" { 0.0 } else { 1.0 };
        alarm("failure_rate", "cusum", self.failures.observe(failed, 1.0));
        if row.tool_calls > 0 {
            alarm(
                "tool_error_rate",
                "cusum",
                self.tool_errors
                    .observe(row.tool_errors as f64, row.tool_calls as f64),
            );
        }
        alarm(
            "duration_ms",
            "ewma",
            self.duration.observe(row.duration_ms),
        );
        alarm(
            "tokens",
            "ewma",
            self.tokens
                .observe((row.input_tokens + row.output_tokens) as f64),
        );
        for a in &out {
            *self.counts.entry(a.metric).or_default() += 1;
            self.recent.push(a.clone());
        }
        if self.recent.len() > RECENT {
            let excess = self.recent.len() - RECENT;
            self.recent.drain(..excess);
        }
        out
    }

    /// The latest alarms, as JSON.
    pub fn alarms(&self) -> serde_json::Value {
        serde_json::to_value(&self.recent).unwrap_or_default()
    }

    /// Alarms so far, by metric.
    pub fn alarm_counts(&self) -> impl Iterator<Item = (&'static str, u64)> + '_ {
        self.counts.iter().map(|(k, v)| (*k, *v))
    }
}

#[cfg(test)]
mod tests {
    use rand::{RngExt, SeedableRng};

    use super::*;

    fn row(rng: &mut rand_chacha::ChaCha8Rng, error_rate: f64) -> TraceRow {
        let calls = 3;
        let errors = (0..calls)
            .filter(|_| rng.random::<f64>() < error_rate)
            .count();
        TraceRow {
            trace_id: String::new(),
            received_at_ms: 0,
            started_at: None,
            service: None,
            agent: String::new(),
            status: "passed".into(),
            complete: true,
            duration_ms: 100.0 + rng.random::<f64>() * 20.0,
            tool_calls: calls,
            tool_errors: errors as i64,
            model_calls: 1,
            input_tokens: 100,
            output_tokens: 10,
            cost_eur: 0.0,
            tools: vec![],
            failed_evaluators: vec![],
            user_input: None,
            final_answer: None,
            scores: String::new(),
            trajectory: String::new(),
            feedback: String::new(),
            rating: None,
        }
    }

    #[test]
    fn a_tool_error_rate_that_triples_alarms_and_a_steady_one_rarely_does() {
        // Ten streams of 3,000 steady traces: at most one false alarm in all 30,000.
        let false_alarms: Vec<String> = (0..10).flat_map(stream).collect();
        assert!(false_alarms.len() <= 1, "{false_alarms:?}");
    }

    /// Regression: a steady 100 % failure rate raised a failure-rate alarm every 84 traces, for
    /// as long as it lasted (the baseline was capped at 90 % and an alarm only reset the sum).
    #[test]
    fn a_steady_failure_rate_raises_one_alarm_not_an_endless_series() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        let count =
            |alarms: Vec<Alarm>, metric: &str| alarms.iter().filter(|a| a.metric == metric).count();
        // Every trace failing from the first: that is the baseline, nothing to alarm about.
        let mut m = Monitor::default();
        let alarms: Vec<Alarm> = (0..5_000)
            .flat_map(|_| {
                let mut r = row(&mut rng, 0.02);
                r.status = "failed".into();
                m.observe(&r)
            })
            .collect();
        assert_eq!(count(alarms, "failure_rate"), 0);
        // 5 % failing, then every trace failing for good: one alarm, then a new baseline.
        let mut m = Monitor::default();
        let at = |rate: f64, rng: &mut rand_chacha::ChaCha8Rng, m: &mut Monitor| {
            let mut r = row(rng, 0.02);
            if rng.random::<f64>() < rate {
                r.status = "failed".into();
            }
            m.observe(&r)
        };
        let steady: Vec<Alarm> = (0..2_000)
            .flat_map(|_| at(0.05, &mut rng, &mut m))
            .collect();
        assert_eq!(count(steady, "failure_rate"), 0);
        let failing: Vec<Alarm> = (0..10_000)
            .flat_map(|_| at(1.0, &mut rng, &mut m))
            .collect();
        assert_eq!(count(failing, "failure_rate"), 1);
        // 5 %, then 30 % for good (one alarm, a new baseline), then 80 % (another).
        let mut m = Monitor::default();
        let steady: Vec<Alarm> = (0..2_000)
            .flat_map(|_| at(0.05, &mut rng, &mut m))
            .collect();
        assert_eq!(count(steady, "failure_rate"), 0);
        let worse: Vec<Alarm> = (0..5_000).flat_map(|_| at(0.3, &mut rng, &mut m)).collect();
        assert_eq!(count(worse, "failure_rate"), 1);
        let worst: Vec<Alarm> = (0..5_000).flat_map(|_| at(0.8, &mut rng, &mut m)).collect();
        assert_eq!(count(worst, "failure_rate"), 1);
        // The same for a continuous value: durations ten times longer for good, one alarm.
        let mut m = Monitor::default();
        let slow = |factor: f64, rng: &mut rand_chacha::ChaCha8Rng, m: &mut Monitor| {
            let mut r = row(rng, 0.02);
            r.duration_ms *= factor;
            m.observe(&r)
        };
        let steady: Vec<Alarm> = (0..1_000)
            .flat_map(|_| slow(1.0, &mut rng, &mut m))
            .collect();
        assert_eq!(count(steady, "duration_ms"), 0);
        let slower: Vec<Alarm> = (0..10_000)
            .flat_map(|_| slow(10.0, &mut rng, &mut m))
            .collect();
        assert_eq!(count(slower, "duration_ms"), 1);
    }

    /// A steady stream, then a tripled tool-error rate that must alarm within 400 traces; the
    /// false alarms of the steady part.
    fn stream(seed: u64) -> Vec<String> {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        let mut m = Monitor::default();
        let steady: Vec<String> = (0..3000)
            .flat_map(|_| m.observe(&row(&mut rng, 0.02)))
            .map(|a| format!("seed {seed}: {a}"))
            .collect();
        let first = (0..1000).find(|_| {
            m.observe(&row(&mut rng, 0.06))
                .iter()
                .any(|a| a.metric == "tool_error_rate")
        });
        assert!(
            first.is_some_and(|n| n < 400),
            "seed {seed}: alarm after {first:?} traces"
        );
        steady
    }
}
