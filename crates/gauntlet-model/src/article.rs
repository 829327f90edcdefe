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
    /// one model-call event carrying the totals.
    pub fn to_trajectory(&self) -> Trajectory {
        let mut events = vec![Event::UserMessage {
            text: self.goal.clone(),
        }];
        let mut n = 0;
        for step in &self.steps {
            events.push(Event::Reasoning {
                step: step.step_number,
                text: step.thought.clone(),
            });
            for tc in &step.tool_calls {
                n += 1;
                let observation = tc.observation.clone().map(Value::String);
                events.push(Event::ToolCall(Box::new(ToolCall {
                    id: format!("call-{n}"),
                    step: step.step_number,
                    tool: tc.tool_name.clone(),
                    arguments: Value::Object(tc.arguments.clone()),
                    kind: None,
                    schema_valid: None,
                    result: if tc.is_error {
                        None
                    } else {
                        observation.clone()
                    },
                    error: tc.is_error.then(|| ToolError {
                        status: 500,
                        message: tc.observation.clone().unwrap_or_default(),
                        retry_after_s: None,
                    }),
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
        if let Some(answer) = &self.final_answer {
            events.push(Event::FinalAnswer {
                text: answer.clone(),
            });
        }
        Trajectory {
            events,
            final_answer: self.final_answer.clone(),
            side_effects: Vec::new(),
        }
    }
}
