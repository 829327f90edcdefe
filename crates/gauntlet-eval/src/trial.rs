//! Judging one trial with the built-in evaluators, with or without a case, and concluding it.
//!
//! [`evaluate_builtin`] runs what applies; a trial without a case (a production trace, a proxied
//! session) gets only the evaluators that need nothing but the trajectory, and every other one is
//! reported in [`BuiltinEvaluation::not_applicable`] with what it lacked. [`conclude`] decides
//! the trial's status once every score is in (custom evaluators included) and adds
//! `error_attribution`.

use gauntlet_model::{Case, Needs, NotApplicable, Score, StateRef, Trajectory, TrialStatus, names};
use serde_json::Value;

use crate::evaluators::{EvalContext, builtin_scores};

/// What the built-in evaluators see of one trial.
#[derive(Debug, Clone, Copy)]
pub struct TrialInput<'a> {
    /// The case, when the trial played one (`None` for a production trace).
    pub case: Option<&'a Case>,
    /// Everything that happened.
    pub trajectory: &'a Trajectory,
    /// The world's state at the end.
    pub final_state: StateRef<'a>,
    /// What is known of the world.
    pub cx: EvalContext<'a>,
}

/// The built-in evaluators' verdicts on one trial.
#[derive(Debug, Clone, Default)]
pub struct BuiltinEvaluation {
    /// The scores, in the evaluators' fixed order.
    pub scores: Vec<Score>,
    /// Evaluators that could not judge the trial, and what each lacked.
    pub not_applicable: Vec<NotApplicable>,
}

/// Every score for one trial, without world knowledge. See [`evaluate_in`].
pub fn evaluate(case: &Case, trajectory: &Trajectory, final_state: &Value) -> Vec<Score> {
    evaluate_in(case, trajectory, final_state, &EvalContext::default())
}

/// Every score for one trial. Scores not applicable to the case are left out, not passed.
pub fn evaluate_in(
    case: &Case,
    trajectory: &Trajectory,
    final_state: &Value,
    cx: &EvalContext<'_>,
) -> Vec<Score> {
    let mut scores = builtin_scores(case, trajectory, final_state.into(), cx);
    conclude(&mut scores, trajectory, false);
    scores
}

/// Every built-in evaluator that needs more than the trajectory, and what it needs.
pub const NEEDS: &[(&str, Needs)] = &[
    (names::STATE_VERIFICATION, Needs::ExpectedState),
    (names::OUTPUT_ASSERTIONS, Needs::Case),
    (names::CONFIRMATION_BEFORE_WRITE, Needs::Case),
    (names::QUESTION_ASKED, Needs::Case),
    (names::REQUIRED_TOOL_RECALL, Needs::Case),
    (names::FORBIDDEN_TOOL_USED, Needs::Case),
    (names::WITHIN_CALL_BUDGET, Needs::Case),
    (names::TOOL_SELECTION_ACCURACY, Needs::Reference),
    (names::STEP_EFFICIENCY, Needs::Reference),
    (names::ONE_OF, Needs::Case),
    (names::TOOL_ORDER, Needs::Case),
    (names::MAX_RETRIES_PER_TOOL, Needs::Case),
    (names::WITHIN_BUDGET, Needs::Case),
    (names::ARGUMENT_ACCURACY, Needs::Reference),
    (names::RIGHT_TOOL_WRONG_ENTITY, Needs::Reference),
    (names::UNNECESSARY_CALLS, Needs::Reference),
    (names::BFCL_AST_MATCH, Needs::Reference),
    (names::TASK_SUCCESS, Needs::Case),
    (names::BENCHMARK_REWARD, Needs::Case),
    (names::CHECKPOINTS, Needs::Case),
    (names::USER_UNANSWERED, Needs::Case),
];

/// What a built-in evaluator needs besides the trajectory ([`Needs::Nothing`] for the
/// evaluators a production trace can be judged by: loops, schema validity, duplicate side
/// effects, faults, secrets and PII, tenancy, corrections after validation errors).
pub fn needs(evaluator: &str) -> Needs {
    NEEDS
        .iter()
        .find(|(name, _)| *name == evaluator)
        .map_or(Needs::Nothing, |(_, n)| *n)
}

/// Runs the built-in evaluators that apply to the trial (without `error_attribution`, which
/// [`conclude`] adds once every score is in).
pub fn evaluate_builtin(input: &TrialInput<'_>) -> BuiltinEvaluation {
    match input.case {
        Some(case) => BuiltinEvaluation {
            scores: builtin_scores(case, input.trajectory, input.final_state, &input.cx),
            not_applicable: Vec::new(),
        },
        None => {
            // An empty case asks nothing of the trial; what needs one is left out, not passed,
            // unless a policy sets what it reads.
            let policy = input.cx.policy.cloned().unwrap_or_default();
            let set = policy_evaluators(&policy);
            let empty = Case {
                trajectory_constraints: policy,
                ..Case::default()
            };
            let mut scores = builtin_scores(&empty, input.trajectory, input.final_state, &input.cx);
            scores.retain(|s| needs(&s.name) == Needs::Nothing || set.contains(&s.name.as_str()));
            BuiltinEvaluation {
                scores,
                not_applicable: NEEDS
                    .iter()
                    .filter(|(name, _)| !set.contains(name))
                    .map(|(name, needs)| NotApplicable {
                        evaluator: (*name).to_owned(),
                        needs: *needs,
                    })
                    .collect(),
            }
        }
    }
}

/// The evaluators a policy's constraints give something to judge.
fn policy_evaluators(c: &gauntlet_model::case::Constraints) -> Vec<&'static str> {
    let mut out = Vec::new();
    if !c.forbidden_tools.is_empty() {
        out.push(names::FORBIDDEN_TOOL_USED);
    }
    if c.max_tool_calls.is_some() || c.max_steps.is_some() {
        out.push(names::WITHIN_CALL_BUDGET);
    }
    if c.max_retries_per_tool.is_some() {
        out.push(names::MAX_RETRIES_PER_TOOL);
    }
    if c.max_tokens.is_some()
        || c.max_cost_eur.is_some()
        || c.max_latency_ms.is_some()
        || c.max_ttft_ms.is_some()
    {
        out.push(names::WITHIN_BUDGET);
    }
    out
}

/// Decides a trial's status from all its scores and appends its `error_attribution`. A harness
/// failure makes the trial an error whatever the scores say, and is attributed to the harness.
pub fn conclude(
    scores: &mut Vec<Score>,
    trajectory: &Trajectory,
    harness_failed: bool,
) -> TrialStatus {
    let status = if harness_failed {
        TrialStatus::Error
    } else {
        trial_status(scores)
    };
    scores.extend(crate::attribution::error_attribution(
        status, trajectory, scores,
    ));
    crate::reasons::fill_reasons(scores, trajectory);
    status
}

/// A trial's status from its scores.
pub fn trial_status(scores: &[Score]) -> TrialStatus {
    if scores.iter().any(Score::fails_trial) {
        TrialStatus::Failed
    } else {
        TrialStatus::Passed
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// A production trace has no case: what needs one is reported, never passed.
    #[test]
    fn without_a_case_only_trajectory_evaluators_run_and_the_rest_say_what_they_lack() {
        let trajectory: Trajectory = serde_json::from_value(json!({"events": [
            {"type": "tool_call", "id": "call-1", "step": 1, "tool": "close", "arguments": {"id": 1}, "kind": "write", "result": {}},
            {"type": "tool_call", "id": "call-2", "step": 2, "tool": "close", "arguments": {"id": 1}, "kind": "write", "result": {}}
        ]}))
        .unwrap();
        let out = evaluate_builtin(&TrialInput {
            case: None,
            trajectory: &trajectory,
            final_state: (&json!({})).into(),
            cx: EvalContext::default(),
        });
        let names: Vec<&str> = out.scores.iter().map(|s| s.name.as_str()).collect();
        assert!(names.contains(&names::LOOP_DETECTION), "{names:?}");
        for (name, _) in NEEDS {
            assert!(!names.contains(name), "{name} judged without a case");
            assert!(
                out.not_applicable.iter().any(|n| n.evaluator == *name),
                "{name} not reported"
            );
        }
        assert_eq!(
            out.not_applicable
                .iter()
                .find(|n| n.evaluator == names::STATE_VERIFICATION)
                .map(|n| n.needs),
            Some(Needs::ExpectedState)
        );
        // A policy's constraints are judged; what it does not set stays not applicable.
        let policy = gauntlet_model::case::Constraints {
            forbidden_tools: vec!["close".into()],
            max_tool_calls: Some(1),
            ..Default::default()
        };
        let judged = evaluate_builtin(&TrialInput {
            case: None,
            trajectory: &trajectory,
            final_state: (&json!({})).into(),
            cx: EvalContext {
                policy: Some(&policy),
                ..EvalContext::default()
            },
        });
        for name in [names::FORBIDDEN_TOOL_USED, names::WITHIN_CALL_BUDGET] {
            let s = judged.scores.iter().find(|s| s.name == name).expect(name);
            assert!(!s.passed, "{name} passed a trace over the policy");
            assert!(!judged.not_applicable.iter().any(|n| n.evaluator == name));
        }
        assert!(!judged.scores.iter().any(|s| s.name == names::WITHIN_BUDGET));
        // The loop still fails the trial: a trace is judged, not waved through.
        let mut scores = out.scores;
        assert_eq!(
            conclude(&mut scores, &trajectory, false),
            TrialStatus::Failed
        );
    }
}
