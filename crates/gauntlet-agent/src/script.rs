//! The scripted agent: replays a fixed plan, for tests, demos and reports with something to catch.
//!
//! `script:NAME` plays, for each case, the case's own `scripts.NAME` when it has one, and else
//! the built-in behaviour NAME applied to the case's `reference_trajectory`.

use std::collections::HashMap;

use gauntlet_model::{Case, ReferenceStep};
use serde_json::Value;

use crate::agent::{Agent, AgentError, AgentInput, AgentOutput, BoxFuture};
use crate::environment::{SharedEnv, lock};

/// Built-in behaviours, each a transformation of the reference trajectory, with what it shows.
pub const BUILTIN_BEHAVIOURS: [(&str, &str); 6] = [
    ("reference", "replays the reference trajectory as written"),
    (
        "skip-confirmation",
        "the reference without its confirmation requests",
    ),
    (
        "forbidden",
        "the reference plus a call of the case's first forbidden tool",
    ),
    (
        "loop",
        "repeats the reference's first tool call four more times",
    ),
    (
        "over-budget",
        "pads the reference with reads until it exceeds max_tool_calls",
    ),
    (
        "flaky",
        "skip-confirmation in about half of the trials (chosen by the trial's seed), else reference",
    ),
];

/// `script:NAME` naming no case's script and no built-in behaviour: the user's input.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "no case defines script `{behaviour}` and it is not a built-in behaviour ({})",
    .builtin.join(", ")
)]
pub struct UnknownScriptError {
    /// The name asked for.
    pub behaviour: String,
    /// The built-in behaviours.
    pub builtin: Vec<String>,
}

impl gauntlet_model::Classified for UnknownScriptError {
    fn kind(&self) -> gauntlet_model::ErrorKind {
        gauntlet_model::ErrorKind::InvalidInput
    }
}

/// Plays one plan per case.
pub struct ScriptAgent {
    behaviour: String,
    plans: HashMap<String, Vec<ReferenceStep>>,
    /// Second plans, played instead of the first on trials whose seed is odd (`flaky`).
    alternates: HashMap<String, Vec<ReferenceStep>>,
}

impl ScriptAgent {
    /// The plans of a behaviour for these cases. Cases with no plan (no reference and no script
    /// of that name) are left out and fail with a harness error when run.
    pub fn new<'a>(
        behaviour: &str,
        cases: impl IntoIterator<Item = &'a Case>,
    ) -> Result<Self, UnknownScriptError> {
        let builtin = BUILTIN_BEHAVIOURS.iter().any(|(n, _)| *n == behaviour);
        let mut plans = HashMap::new();
        let mut alternates = HashMap::new();
        let mut any = false;
        for case in cases {
            if let Some(steps) = case.scripts.get(behaviour) {
                any = true;
                plans.insert(case.case_id.clone(), steps.clone());
            } else if builtin && !case.reference_trajectory.is_empty() {
                if behaviour == "flaky" {
                    plans.insert(case.case_id.clone(), case.reference_trajectory.clone());
                    alternates.insert(case.case_id.clone(), apply("skip-confirmation", case));
                } else {
                    plans.insert(case.case_id.clone(), apply(behaviour, case));
                }
            }
        }
        if !builtin && !any {
            return Err(UnknownScriptError {
                behaviour: behaviour.to_owned(),
                builtin: BUILTIN_BEHAVIOURS
                    .iter()
                    .map(|(n, _)| (*n).to_owned())
                    .collect(),
            });
        }
        Ok(ScriptAgent {
            behaviour: behaviour.to_owned(),
            plans,
            alternates,
        })
    }
}

fn first_call(case: &Case) -> Option<&ReferenceStep> {
    case.reference_trajectory.iter().find(|s| s.tool.is_some())
}

fn insert_before_answer(steps: &mut Vec<ReferenceStep>, extra: Vec<ReferenceStep>) {
    let at = steps
        .iter()
        .position(|s| s.answer.is_some())
        .unwrap_or(steps.len());
    steps.splice(at..at, extra);
}

/// A built-in behaviour applied to a case's reference trajectory.
fn apply(behaviour: &str, case: &Case) -> Vec<ReferenceStep> {
    let mut steps = case.reference_trajectory.clone();
    match behaviour {
        "skip-confirmation" => steps.retain(|s| s.confirm.is_none()),
        "forbidden" => {
            if let Some(tool) = case.trajectory_constraints.forbidden_tools.first() {
                let args = first_call(case)
                    .and_then(|s| s.args.clone())
                    .unwrap_or(Value::Object(Default::default()));
                insert_before_answer(&mut steps, vec![ReferenceStep::call(tool, args)]);
            }
        }
        "loop" => {
            if let Some(first) = first_call(case).cloned() {
                let at = steps.iter().position(|s| s.tool.is_some()).unwrap_or(0);
                steps.splice(at..at, std::iter::repeat_n(first, 4));
            }
        }
        "over-budget" => {
            if let Some(first) = first_call(case).cloned() {
                let calls = steps.iter().filter(|s| s.tool.is_some()).count();
                let budget = case
                    .trajectory_constraints
                    .max_tool_calls
                    .map_or(calls + 2, |m| m as usize);
                let extra = (budget + 1).saturating_sub(calls);
                insert_before_answer(&mut steps, std::iter::repeat_n(first, extra).collect());
            }
        }
        _ => {}
    }
    steps
}

impl ScriptAgent {
    /// Whether this script has a plan for a case.
    pub fn has_plan(&self, case_id: &str) -> bool {
        self.plans.contains_key(case_id)
    }
}

impl Agent for ScriptAgent {
    fn run<'a>(
        &'a self,
        input: &'a AgentInput,
        env: SharedEnv,
    ) -> BoxFuture<'a, Result<AgentOutput, AgentError>> {
        Box::pin(async move {
            let alternate = (input.seed % 2 == 1)
                .then(|| self.alternates.get(&input.case_id))
                .flatten();
            let Some(plan) = alternate.or_else(|| self.plans.get(&input.case_id)) else {
                return Err(AgentError(format!(
                    "script `{}` has no plan for case `{}` (give the case a reference_trajectory or scripts.{})",
                    self.behaviour, input.case_id, self.behaviour
                )));
            };
            play(plan, env).await
        })
    }
}

/// Plays a plan of steps in a trial's environment, as the scripted agent does: each tool call
/// (its errors are data in the trajectory: a plan does not react to them), confirmation (a
/// refusal ends the plan), question, message, wait, and the answer, which ends it.
pub async fn play(plan: &[ReferenceStep], env: SharedEnv) -> Result<AgentOutput, AgentError> {
    let mut step = 0;
    for s in plan {
        for _ in 0..s.repeat.unwrap_or(1).max(1) {
            step += 1;
            if let Some(tool) = &s.tool {
                let args = s.args.clone().unwrap_or(Value::Object(Default::default()));
                // Errors are data in the trajectory; a script does not react to them.
                let _ = lock(&env).call_tool(step, tool, args, s.idempotency_key.clone());
            } else if let Some(text) = &s.confirm {
                if !crate::conversation::confirm(&env, step, text).await.0 {
                    return Ok(AgentOutput {
                        final_answer: Some("Understood, I will not do it.".to_owned()),
                        unfinished: None,
                        crashed: None,
                    });
                }
            } else if let Some(text) = &s.ask {
                crate::conversation::ask(&env, step, text).await;
            } else if let Some(text) = &s.say {
                lock(&env).say(step, text);
            } else if let Some(ms) = s.wait_ms {
                lock(&env).wait(step, ms);
            } else if let Some(text) = &s.answer {
                return Ok(AgentOutput {
                    final_answer: Some(text.clone()),
                    unfinished: None,
                    crashed: None,
                });
            }
        }
    }
    Ok(AgentOutput {
        final_answer: None,
        unfinished: None,
        crashed: None,
    })
}
