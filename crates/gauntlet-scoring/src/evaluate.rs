//! Scoring one trial: the one entry point that `run`, `score` and `serve` share (and that a
//! judge or a receiver of production traces calls). Built-in evaluators first, then the
//! suite's custom evaluators, then the trial's status.

use std::path::PathBuf;

use gauntlet_eval::{EvalContext, TrialInput, conclude, evaluate_builtin};
use gauntlet_model::{Case, Score, StateRef, Trajectory, TrialStatus, WorldSpec};
use serde_json::{Value, json};

use crate::custom::{CustomEvaluator, failure, run_custom};
use crate::judge::JudgePanel;

/// A suite's custom evaluators and the folder they run in.
#[derive(Debug, Clone, Default)]
pub struct CustomEvaluators {
    /// The evaluators, in the configuration's order.
    pub evaluators: Vec<CustomEvaluator>,
    /// Where their commands run and their scripts are found (the suite folder).
    pub dir: PathBuf,
}

/// What is known of one finished trial.
#[derive(Debug, Clone, Copy)]
pub struct TrialEvidence<'a> {
    /// The case id (a production trace's own name when there is no case).
    pub case_id: &'a str,
    /// The case, when the trial played one.
    pub case: Option<&'a Case>,
    /// The repetition.
    pub epoch: u32,
    /// Everything that happened.
    pub trajectory: &'a Trajectory,
    /// The world's state at the start, when known.
    pub initial_state: Option<&'a Value>,
    /// The world's state at the end.
    pub final_state: StateRef<'a>,
    /// The world's declaration (its tools and canaries), when known.
    pub world: Option<&'a WorldSpec>,
    /// The suite's benchmark, whose reward is scored beside gauntlet's verdicts.
    pub benchmark: Option<&'a gauntlet_model::BenchmarkSpec>,
    /// Whether the harness failed the trial (the agent could not be run to its end by no fault
    /// of its own): the trial is an error whatever its scores.
    pub harness_failed: bool,
    /// For a trial without a case: the constraints a policy sets (see `EvalContext::policy`).
    pub policy: Option<&'a gauntlet_model::case::Constraints>,
}

pub use gauntlet_model::Evaluation;

/// Scores one trial with the built-in evaluators and `custom`, decides its status, then runs the
/// LLM judges (on trials that passed, unless a judge says otherwise). A judge never turns a
/// deterministic fail into a pass; a calibrated judge's fail fails a trial that passed.
pub async fn evaluate_trial(
    t: &TrialEvidence<'_>,
    custom: &CustomEvaluators,
    judges: Option<&JudgePanel>,
) -> Evaluation {
    let cx = EvalContext {
        tools: t.world.map_or(&[], |w| &w.tools),
        canaries: t.world.map_or(&[], |w| &w.canaries),
        claims: t.world.map_or(&[], |w| &w.claims),
        initial_state: t.initial_state,
        benchmark: t.benchmark,
        policy: t.policy,
    };
    let builtin = evaluate_builtin(&TrialInput {
        case: t.case,
        trajectory: t.trajectory,
        final_state: t.final_state,
        cx,
    });
    let mut scores = builtin.scores;
    let mut harness_error = None;
    if !custom.evaluators.is_empty() {
        let input = json!({
            "case": t.case,
            "trial": {"case_id": t.case_id, "epoch": t.epoch, "trajectory": t.trajectory,
                      "initial_state": t.initial_state, "final_state": t.final_state},
            "scores": &scores,
        });
        for ev in &custom.evaluators {
            match run_custom(ev, &custom.dir, &input).await {
                Ok(s) => scores.extend(s),
                Err(why) => {
                    harness_error.get_or_insert_with(|| {
                        format!("evaluator `{}` could not judge the trial: {why}", ev.name)
                    });
                    scores.push(failure(&ev.name, why.to_string()));
                }
            }
        }
    }
    let mut status = conclude(
        &mut scores,
        t.trajectory,
        t.harness_failed || harness_error.is_some(),
    );
    let mut outcomes = Vec::new();
    if let Some(panel) = judges {
        let goal = t.case.map(|c| c.user_input.as_str()).or_else(|| {
            t.trajectory.events.iter().find_map(|e| match e {
                gauntlet_model::Event::UserMessage { text } => Some(text.as_str()),
                _ => None,
            })
        });
        let (o, judged) = panel
            .judge(
                t.case_id,
                t.epoch,
                goal.unwrap_or_default(),
                t.trajectory,
                status,
            )
            .await;
        if status == TrialStatus::Passed && judged.iter().any(Score::fails_trial) {
            status = TrialStatus::Failed;
        }
        scores.extend(judged);
        outcomes = o;
    }
    Evaluation {
        scores,
        not_applicable: builtin.not_applicable,
        status,
        judges: outcomes,
        harness_error,
    }
}
