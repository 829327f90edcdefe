//! The canonical result of a run from its trial summaries: metrics, gates, rubric, verdict.
//! Pure: the caller gives the time the run finished.

use crate::{CompiledGate, CompiledRubric, aggregate, decide_all};
use gauntlet_model::{FORMAT_VERSION, RunHeader, RunResults, TrialSummary, Verdict};

/// The result of a run, and the gate evaluation errors (which make the input invalid).
pub fn build_results(
    header: RunHeader,
    finished_at: String,
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
            finished_at,
            verdict,
            metrics: gauntlet_model::Metrics {
                benchmark: agg.benchmark,
                values: agg
                    .metrics
                    .into_iter()
                    .map(|(k, v)| (k, (!v.is_nan()).then_some(v)))
                    .collect(),
            },
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
