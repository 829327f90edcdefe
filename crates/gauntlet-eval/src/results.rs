//! The canonical result of a run from its trial summaries: metrics, gates, rubric, verdict.
//! Pure: the caller gives the time the run finished.

use crate::{CompiledGate, CompiledRubric, aggregate, decide_all};
use gauntlet_model::{
    FORMAT_VERSION, JudgeHeader, JudgeReport, JudgeStatus, RunHeader, RunResults, TrialSummary,
    Verdict,
};

/// The result of a run, and the gate evaluation errors (which make the input invalid).
pub fn build_results(
    header: RunHeader,
    finished_at: String,
    trials: Vec<TrialSummary>,
    gates: &[CompiledGate],
    rubric: Option<&CompiledRubric>,
) -> (RunResults, Vec<String>) {
    let agg = aggregate(&trials, header.seed);
    let header_judges = header.judges.clone();
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
            judges: judge_reports(&header_judges, &trials),
            trials,
        },
        errors,
    )
}

/// Each judge over the run, from the trials' briefs.
fn judge_reports(judges: &[JudgeHeader], trials: &[TrialSummary]) -> Vec<JudgeReport> {
    judges
        .iter()
        .map(|h| {
            let mut r = JudgeReport {
                header: h.clone(),
                scored: 0,
                skipped: 0,
                invalid: 0,
                passed: 0,
                calls: 0,
                cache_hits: 0,
                tokens: 0,
                cost_eur: 0.0,
                agreement_alpha: None,
                split_trials: Vec::new(),
            };
            // Units for the agreement: one per judged trial, a rater per model and sample.
            let mut units: Vec<Vec<Option<usize>>> = Vec::new();
            for t in trials {
                for b in t.judges.iter().filter(|b| b.judge == h.name) {
                    match b.status {
                        JudgeStatus::Scored => r.scored += 1,
                        JudgeStatus::Skipped => r.skipped += 1,
                        JudgeStatus::Invalid => r.invalid += 1,
                    }
                    r.passed += u64::from(b.passed == Some(true));
                    r.calls += u64::from(b.calls);
                    r.cache_hits += u64::from(b.cached);
                    r.tokens += b.tokens;
                    r.cost_eur += b.cost_eur;
                    if b.status == JudgeStatus::Scored && !b.votes.is_empty() {
                        units.push(b.votes.iter().map(|v| v.map(usize::from)).collect());
                    }
                    if b.split {
                        r.split_trials
                            .push(gauntlet_model::labels::trial_item(&t.case_id, t.epoch));
                    }
                }
            }
            let alpha = crate::agreement::krippendorff_alpha(
                &units,
                &[0.0, 1.0],
                gauntlet_model::labels::Level::Nominal,
            );
            r.agreement_alpha = alpha.is_finite().then_some(alpha);
            r
        })
        .collect()
}
