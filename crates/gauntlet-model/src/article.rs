//! The `AgentTrajectory` JSON (a widespread Pydantic trajectory log), read as a [`Trajectory`].
//!
//! Field names and defaults follow its Pydantic models; like Pydantic, unknown fields
//! are ignored. Costs are taken as given (its examples are in USD; gauntlet converts nothing).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::trajectory::{Event, ToolCall, ToolError, Trajectory};

/// An `AgentTrajectory`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct AgentTrajectory {
    /// Test case id.
    pub task_id: String,
    /// The goal given to the agent.
    pub goal: String,
    /// All execution steps.
    #[serde(default)]
    pub steps: Vec<TrajectoryStep>,
    /// The final answer.
    #[serde(default)]
    pub final_answer: Option<String>,
    /// State before execution.
    #[serde(default)]
    pub initial_state: Map<String, Value>,
    /// State after execution.
    #[serde(default)]
    pub final_state: Map<String, Value>,
    /// Total tokens consumed.
    #[serde(default)]
    pub total_tokens_used: u64,
    /// Total cost (as logged; often USD).
    #[serde(default)]
    pub total_cost_usd: f64,
    /// Total elapsed seconds.
    #[serde(default)]
    pub total_latency_seconds: f64,
}

/// A `TrajectoryStep`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TrajectoryStep {
    /// 1-based step number.
    pub step_number: u32,
    /// The agent's reasoning.
    #[serde(default)]
    pub thought: String,
    /// Tool calls made in the step.
    #[serde(default)]
    pub tool_calls: Vec<ToolCallLog>,
    /// Record timestamp.
    #[serde(default)]
    pub timestamp: Option<f64>,
}

/// A `ToolCallLog`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ToolCallLog {
    /// Called tool name.
    pub tool_name: String,
    /// Passed arguments.
    #[serde(default)]
    pub arguments: Map<String, Value>,
    /// The observation.
    #[serde(default)]
    pub observation: Option<String>,
    /// Whether the call failed.
    #[serde(default)]
    pub is_error: bool,
    /// Latency in milliseconds.
    #[serde(default)]
    pub execution_time_ms: f64,
}

impl AgentTrajectory {
    /// Our trajectory for it: a reasoning event per step, its tool calls, the final answer, and
    /// one model-call event carrying the totals. The `steps` list is authoritative: steps are
    /// numbered by their place in it, whatever their `step_number` says (see
    /// [`AgentTrajectory::step_number_warnings`]).
    pub fn to_trajectory(&self) -> Trajectory {
        self.trajectory_of(
            self.steps.clone(),
            self.goal.clone(),
            self.final_answer.clone(),
        )
    }

    /// Like [`AgentTrajectory::to_trajectory`], moving the steps' text instead of copying it;
    /// the states and the rest are left in `self`.
    pub fn take_trajectory(&mut self) -> Trajectory {
        let steps = std::mem::take(&mut self.steps);
        let goal = std::mem::take(&mut self.goal);
        let answer = self.final_answer.take();
        self.trajectory_of(steps, goal, answer)
    }

    fn trajectory_of(
        &self,
        steps: Vec<TrajectoryStep>,
        goal: String,
        final_answer: Option<String>,
    ) -> Trajectory {
        let mut events = vec![Event::UserMessage { text: goal }];
        let mut n = 0;
        for (position, step) in steps.into_iter().enumerate() {
            let number = u32::try_from(position + 1).unwrap_or(u32::MAX);
            events.push(Event::Reasoning {
                step: number,
                text: step.thought,
            });
            for tc in step.tool_calls {
                n += 1;
                let (result, error) = if tc.is_error {
                    (
                        None,
                        Some(ToolError {
                            status: 500,
                            message: tc.observation.unwrap_or_default(),
                            retry_after_s: None,
                        }),
                    )
                } else {
                    (tc.observation.map(Value::String), None)
                };
                events.push(Event::ToolCall(Box::new(ToolCall {
                    id: format!("call-{n}"),
                    step: number,
                    tool: tc.tool_name,
                    arguments: Value::Object(tc.arguments),
                    kind: None,
                    schema_valid: None,
                    result,
                    error,
                    fault: None,
                    idempotency_key: None,
                    state_changes: Vec::new(),
                    idempotent_replay: false,
                    recorded_output: None,
                    at_ms: 0.0,
                    latency_ms: tc.execution_time_ms,
                })));
            }
        }
        if self.total_tokens_used > 0 || self.total_cost_usd > 0.0 {
            events.push(Event::ModelCall {
                model: "unknown (article totals)".to_owned(),
                prompt_tokens: self.total_tokens_used,
                completion_tokens: 0,
                cost_eur: self.total_cost_usd,
                latency_ms: self.total_latency_seconds * 1000.0,
                ttft_ms: None,
                simulated_user: false,
                at_ms: None,
                error: None,
                fault: None,
            });
        }
        if let Some(answer) = &final_answer {
            events.push(Event::FinalAnswer {
                text: answer.clone(),
            });
        }
        Trajectory {
            events,
            final_answer,
            side_effects: Vec::new(),
        }
    }

    /// What is odd about the steps' `step_number`s (repeated, or not in order): they change no
    /// score, since steps are read in list order, but the log's reader should hear of them.
    pub fn step_number_warnings(&self) -> Vec<String> {
        let mut warnings = Vec::new();
        let mut seen = std::collections::BTreeSet::new();
        let mut last = None;
        for (i, step) in self.steps.iter().enumerate() {
            if !seen.insert(step.step_number) {
                warnings.push(format!(
                    "step {} repeats step_number {}",
                    i + 1,
                    step.step_number
                ));
            } else if last.is_some_and(|l| step.step_number < l) {
                warnings.push(format!(
                    "step {} has step_number {} after {}",
                    i + 1,
                    step.step_number,
                    last.unwrap_or_default()
                ));
            }
            last = Some(step.step_number);
        }
        if !warnings.is_empty() {
            warnings.push("steps are read in list order".to_owned());
        }
        warnings
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Regression: steps were merged by `step_number`, so two steps sharing one counted as one.
    #[test]
    fn steps_are_read_in_list_order_whatever_their_numbers_say() {
        let log: AgentTrajectory = serde_json::from_value(serde_json::json!({
            "task_id": "t", "goal": "g",
            "steps": [
                {"step_number": 1, "thought": "a", "tool_calls": [{"tool_name": "x", "arguments": {"n": 1}}]},
                {"step_number": 1, "thought": "b", "tool_calls": [{"tool_name": "y", "arguments": {}}]},
                {"step_number": 5, "thought": "c"},
                {"step_number": 3, "thought": "d"}
            ]
        }))
        .unwrap();
        let t = log.to_trajectory();
        assert_eq!(t.steps(), 4, "as len(steps) counts them");
        let steps: Vec<u32> = t.tool_calls().map(|c| c.step).collect();
        assert_eq!(steps, [1, 2], "each step's calls stay its own");
        let warnings = log.step_number_warnings();
        assert!(
            warnings
                .iter()
                .any(|w| w.contains("step 2 repeats step_number 1")),
            "{warnings:?}"
        );
        assert!(
            warnings
                .iter()
                .any(|w| w.contains("step 4 has step_number 3 after 5")),
            "{warnings:?}"
        );
    }
}
