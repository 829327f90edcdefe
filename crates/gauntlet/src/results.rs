//! Building the canonical result from trial summaries: metrics, gates, verdict.

use gauntlet_eval::{CompiledGate, CompiledRubric, aggregate, decide_all};
use gauntlet_model::{FORMAT_VERSION, RunHeader, RunResults, TrialSummary, Verdict};

/// The result of a run, and the gate evaluation errors (which make the input invalid).
pub fn build_results(
    header: RunHeader,
    trials: Vec<TrialSummary>,
    gates: &[CompiledGate],
    rubric: Option<&CompiledRubric>,
) -> (RunResults, Vec<String>) {
    let agg = aggregate(&trials, header.seed);
    let (outcomes, errors) = decide_all(gates, &agg);
    let (rubric, rubric_passed) = match rubric {
        Some(r) => {
            let (o, ok) = r.decide(&agg);
            (Some(o), ok)
        }
        None => (None, true),
    };
    let verdict = if outcomes.iter().all(|g| g.passed) && rubric_passed {
        Verdict::Passed
    } else {
        Verdict::Failed
    };
    (
        RunResults {
            format_version: FORMAT_VERSION,
            header,
            finished_at: now(),
            verdict,
            metrics: agg
                .metrics
                .into_iter()
                .map(|(k, v)| (k, (!v.is_nan()).then_some(v)))
                .collect(),
            intervals: agg.intervals,
            evaluators: agg.evaluators,
            segments: agg.segments,
            flaky_cases: agg.flaky_cases,
            rubric,
            gates: outcomes,
            trials,
        },
        errors,
    )
}

/// The current time, RFC 3339 in UTC, to the second.
pub fn now() -> String {
    jiff::Timestamp::now()
        .round(jiff::Unit::Second)
        .map_or_else(|_| jiff::Timestamp::now().to_string(), |t| t.to_string())
}
