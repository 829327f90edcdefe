//! A trajectory: the ordered, typed events of one trial, from the user's request to the answer.
//!
//! Tool errors and injected faults are data here (the agent saw them); a harness failure is
//! never an event but the trial's status.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::fault::FaultKind;
use crate::world::ToolKind;

/// Everything that happened in one trial, in order.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Trajectory {
    /// The events, in the order they happened.
    pub events: Vec<Event>,
    /// The agent's final answer, if it gave one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub final_answer: Option<String>,
    /// The side-effect log: one entry per logical write operation, with how often it was applied.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub side_effects: Vec<SideEffect>,
}

/// One event of a trajectory.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum Event {
    /// The user said something (the request, or an answer to the agent).
    UserMessage {
        /// What the user said.
        text: String,
    },
    /// The agent said something to the user without ending the trial.
    AgentMessage {
        /// The agent step it belongs to.
        step: u32,
        /// What the agent said.
        text: String,
    },
    /// The agent's reasoning for a step (imported logs keep it; it is not shown to the user).
    Reasoning {
        /// The agent step it belongs to.
        step: u32,
        /// The thought.
        text: String,
    },
    /// The agent asked the user a question.
    Question {
        /// The agent step it belongs to.
        step: u32,
        /// The question.
        text: String,
    },
    /// The agent asked the user to confirm an action.
    ConfirmationRequest {
        /// The agent step it belongs to.
        step: u32,
        /// What the agent asked to confirm.
        text: String,
    },
    /// The user's answer to a confirmation request.
    ConfirmationResponse {
        /// What the user said.
        text: String,
        /// Whether the answer approves the action.
        approved: bool,
    },
    /// The simulator injected a fault into the tool call that follows.
    FaultInjected {
        /// The call it hit.
        call_id: String,
        /// The tool.
        tool: String,
        /// The failure.
        kind: FaultKind,
        /// Where the rule came from: `case`, or `profile:NAME`.
        source: String,
    },
    /// A tool call read or wrote a record of another tenant than the context's.
    CrossTenantAccess {
        /// The call.
        call_id: String,
        /// The tool.
        tool: String,
        /// JSON Pointer of the record.
        record: String,
        /// The record's tenant.
        tenant: String,
    },
    /// The agent waited (a scripted backoff advances the trial clock without sleeping).
    Wait {
        /// The agent step it belongs to.
        step: u32,
        /// Milliseconds waited.
        ms: f64,
    },
    /// A call of a world tool, with its result or error.
    ToolCall(Box<ToolCall>),
    /// One model call made through the gateway.
    ModelCall {
        /// The model name.
        model: String,
        /// Prompt tokens.
        prompt_tokens: u64,
        /// Completion tokens.
        completion_tokens: u64,
        /// Cost in euros from the price table.
        cost_eur: f64,
        /// Latency in milliseconds.
        latency_ms: f64,
        /// Time to first token in milliseconds, for streamed calls.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        ttft_ms: Option<f64>,
        /// Made by the simulated user's persona, not by the agent: left out of the agent's
        /// tokens, cost and latency.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        simulated_user: bool,
        /// When the call started, in milliseconds on the trial clock.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        at_ms: Option<f64>,
        /// The error the caller received (an injected fault, or the upstream's error status).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<ToolError>,
        /// The fault injected into this call, if its error was injected.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        fault: Option<FaultKind>,
    },
    /// What an out-of-process agent wrote on its standard error (kept for debugging).
    AgentStderr {
        /// The text (truncated to a bounded size).
        text: String,
    },
    /// The tools the agent is offered changed mid-session (a rug pull: a description rewritten
    /// after the agent first listed the tools); MCP clients are told with
    /// `notifications/tools/list_changed`.
    ToolsChanged {
        /// The tools whose description changed.
        tools: Vec<String>,
        /// Tool calls made before the change.
        after_calls: u32,
    },
    /// A checkpoint marked `trap` failed: the trial ended here, with no further calls run.
    Trapped {
        /// The checkpoint's name.
        checkpoint: String,
        /// The agent step it closed.
        step: u32,
        /// What did not hold.
        reason: String,
    },
    /// The agent stopped before finishing its task (it ran out of steps): the agent's failure,
    /// judged by `agent_finished`.
    Unfinished {
        /// Why.
        reason: String,
    },
    /// The agent crashed after it started (it raised, or exited non-zero or on a signal, once
    /// it had reached the world, the user or the gateway): the agent's failure, judged by
    /// `agent_completed`, never the harness's.
    AgentCrashed {
        /// The exception or exit status, in one line.
        reason: String,
    },
    /// The agent's final answer.
    FinalAnswer {
        /// The answer text.
        text: String,
    },
}

/// A tool call as the simulator saw it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ToolCall {
    /// Call id, unique within the trial (`call-1`, `call-2`, ...).
    pub id: String,
    /// The agent step the call belongs to (parallel calls share a step).
    pub step: u32,
    /// The tool name, as the agent called it.
    pub tool: String,
    /// The arguments, as the agent sent them.
    pub arguments: Value,
    /// Read or write, when the world knows the tool.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<ToolKind>,
    /// Whether the arguments validated against the tool's schema (unknown for imported logs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schema_valid: Option<bool>,
    /// What the agent received on success.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
    /// What the agent received on failure.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ToolError>,
    /// The injected fault, if this call's failure was injected.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fault: Option<FaultKind>,
    /// The idempotency key the agent sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotency_key: Option<String>,
    /// State transitions this call caused.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub state_changes: Vec<StateChange>,
    /// Whether the call was answered from an earlier call with the same idempotency key,
    /// without applying its effect again.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub idempotent_replay: bool,
    /// When the call started, in milliseconds on the trial clock (0 at the user's request).
    #[serde(default)]
    pub at_ms: f64,
    /// In a replay: the output the recorded trajectory had for this call, beside today's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recorded_output: Option<Value>,
    /// Time spent in the simulator, in milliseconds.
    #[serde(default)]
    pub latency_ms: f64,
}

/// The error a tool call returned to the agent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ToolError {
    /// HTTP-like status: 400 invalid arguments, 403 forbidden, 404 not found, 429, 503, 504.
    pub status: u16,
    /// The message the agent sees.
    pub message: String,
    /// Seconds to wait before retrying (429).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_after_s: Option<f64>,
}

/// One change of the world state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StateChange {
    /// JSON Pointer of the changed value.
    pub path: String,
    /// The value before (absent when created).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub before: Option<Value>,
    /// The value after (absent when deleted).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after: Option<Value>,
}

/// One logical write operation and how many times its effect was applied.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SideEffect {
    /// The write tool.
    pub tool: String,
    /// The idempotency key, when the agent sent one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotency_key: Option<String>,
    /// What the operation is: the tool and its canonical arguments (whatever the key).
    pub effect: String,
    /// How many times the effect was applied; more than one is a duplicate side effect.
    pub count: u32,
    /// The calls that applied it.
    pub call_ids: Vec<String>,
}

impl SideEffect {
    /// Logs an applied write. The effect is the operation itself (the tool and its
    /// arguments), whatever idempotency key the call carried: a retry under the same key is
    /// answered without applying it again and never gets here, while a blind retry, or one
    /// under a new key, applies the same effect twice, which is a duplicate side effect.
    pub fn log(effects: &mut Vec<SideEffect>, call: &ToolCall) {
        let effect = format!(
            "{}{}",
            call.tool,
            crate::path::canonical_json(&call.arguments)
        );
        match effects.iter_mut().find(|s| s.effect == effect) {
            Some(s) => {
                s.count += 1;
                s.call_ids.push(call.id.clone());
            }
            None => effects.push(SideEffect {
                tool: call.tool.clone(),
                idempotency_key: call.idempotency_key.clone(),
                effect,
                count: 1,
                call_ids: vec![call.id.clone()],
            }),
        }
    }
}

impl Event {
    /// Gives every text and JSON value of the event to `to` (see [`TextsMut`]).
    pub fn texts_mut(&mut self, to: &mut impl TextsMut) {
        match self {
            Event::UserMessage { text }
            | Event::AgentMessage { step: _, text }
            | Event::Reasoning { step: _, text }
            | Event::Question { step: _, text }
            | Event::ConfirmationRequest { step: _, text }
            | Event::ConfirmationResponse { text, approved: _ }
            | Event::AgentStderr { text }
            | Event::FinalAnswer { text }
            | Event::Unfinished { reason: text }
            | Event::AgentCrashed { reason: text } => to.text(text),
            Event::FaultInjected {
                call_id,
                tool,
                kind: _,
                source,
            } => [call_id, tool, source].into_iter().for_each(|t| to.text(t)),
            Event::CrossTenantAccess {
                call_id,
                tool,
                record,
                tenant,
            } => [call_id, tool, record, tenant]
                .into_iter()
                .for_each(|t| to.text(t)),
            Event::Wait { step: _, ms: _ } => {}
            Event::ToolCall(call) => call.texts_mut(to),
            Event::ModelCall {
                model,
                prompt_tokens: _,
                completion_tokens: _,
                cost_eur: _,
                latency_ms: _,
                ttft_ms: _,
                simulated_user: _,
                at_ms: _,
                error,
                fault: _,
            } => {
                to.text(model);
                error.iter_mut().for_each(|e| e.texts_mut(to));
            }
            Event::ToolsChanged {
                tools,
                after_calls: _,
            } => tools.iter_mut().for_each(|t| to.text(t)),
            Event::Trapped {
                checkpoint,
                step: _,
                reason,
            } => {
                to.text(checkpoint);
                to.text(reason);
            }
        }
    }
}

impl ToolCall {
    /// Gives every text and JSON value of the call to `to` (see [`TextsMut`]).
    pub fn texts_mut(&mut self, to: &mut impl TextsMut) {
        let ToolCall {
            id,
            step: _,
            tool,
            arguments,
            kind: _,
            schema_valid: _,
            result,
            error,
            fault: _,
            idempotency_key,
            state_changes,
            idempotent_replay: _,
            at_ms: _,
            recorded_output,
            latency_ms: _,
        } = self;
        to.text(id);
        to.text(tool);
        to.value(arguments);
        result.iter_mut().for_each(|r| to.value(r));
        error.iter_mut().for_each(|e| e.texts_mut(to));
        idempotency_key.iter_mut().for_each(|k| to.text(k));
        for c in state_changes {
            let StateChange {
                path,
                before,
                after,
            } = c;
            to.text(path);
            before.iter_mut().chain(after).for_each(|v| to.value(v));
        }
        recorded_output.iter_mut().for_each(|o| to.value(o));
    }
}

impl ToolError {
    /// Gives the error's message to `to` (see [`TextsMut`]).
    pub fn texts_mut(&mut self, to: &mut impl TextsMut) {
        let ToolError {
            status: _,
            message,
            retry_after_s: _,
        } = self;
        to.text(message);
    }
}

/// Every text of a trajectory, given to `text` to change in place, and every JSON value in it
/// (a call's arguments, result, recorded output and state changes), given to `value`: what a
/// redaction must see. The patterns name every field (no `..`), so a field or event added to
/// the model does not compile until it is placed here.
pub trait TextsMut {
    /// A text.
    fn text(&mut self, text: &mut String);
    /// A JSON value, keys and all.
    fn value(&mut self, value: &mut Value);
}

impl Trajectory {
    /// Gives every text and JSON value of the trajectory to `to` (see [`TextsMut`]).
    pub fn texts_mut(&mut self, to: &mut impl TextsMut) {
        let Trajectory {
            events,
            final_answer,
            side_effects,
        } = self;
        for e in events {
            e.texts_mut(to);
        }
        final_answer.iter_mut().for_each(|a| to.text(a));
        for s in side_effects {
            let SideEffect {
                tool,
                idempotency_key,
                effect,
                count: _,
                call_ids,
            } = s;
            to.text(tool);
            idempotency_key.iter_mut().for_each(|k| to.text(k));
            to.text(effect);
            call_ids.iter_mut().for_each(|c| to.text(c));
        }
    }
    /// The tool calls, in order.
    pub fn tool_calls(&self) -> impl Iterator<Item = &ToolCall> {
        self.events.iter().filter_map(|e| match e {
            Event::ToolCall(c) => Some(c.as_ref()),
            _ => None,
        })
    }

    /// The number of agent steps before the final answer: distinct step numbers of reasoning,
    /// messages, questions, confirmation requests and tool calls (`len(steps)` of an `AgentTrajectory`).
    pub fn steps(&self) -> usize {
        let mut steps: Vec<u32> = self
            .events
            .iter()
            .filter_map(|e| match e {
                Event::Reasoning { step, .. }
                | Event::AgentMessage { step, .. }
                | Event::Question { step, .. }
                | Event::ConfirmationRequest { step, .. } => Some(*step),
                Event::ToolCall(c) => Some(c.step),
                _ => None,
            })
            .collect();
        steps.sort_unstable();
        steps.dedup();
        steps.len()
    }

    /// Model tokens the agent used (prompt plus completion; the simulated user's are not the
    /// agent's).
    pub fn tokens(&self) -> u64 {
        self.events
            .iter()
            .map(|e| match e {
                Event::ModelCall {
                    prompt_tokens,
                    completion_tokens,
                    simulated_user: false,
                    ..
                } => prompt_tokens + completion_tokens,
                _ => 0,
            })
            .sum()
    }

    /// The agent's model cost in euros.
    pub fn cost_eur(&self) -> f64 {
        self.model_cost(false)
    }

    /// What the simulated user's persona cost, in euros.
    pub fn user_cost_eur(&self) -> f64 {
        self.model_cost(true)
    }

    fn model_cost(&self, by_user: bool) -> f64 {
        self.events
            .iter()
            .map(|e| match e {
                Event::ModelCall {
                    cost_eur,
                    simulated_user,
                    ..
                } if *simulated_user == by_user => *cost_eur,
                _ => 0.0,
            })
            .sum()
    }

    /// Duplicate applications of side effects (sum of `count - 1`).
    pub fn duplicate_side_effects(&self) -> u32 {
        self.side_effects
            .iter()
            .map(|s| s.count.saturating_sub(1))
            .sum()
    }
}
