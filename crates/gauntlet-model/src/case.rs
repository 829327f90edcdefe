//! A case: one task for an agent, with the world it starts from and what must be true after.
//!
//! Both case formats load into [`Case`]: gauntlet's own (`case_id`, `user_input`,
//! `expected_outcome`, `trajectory_constraints`, ...) and the `AgentTrajectory` task format (`task_id`, `goal`,
//! `expected_final_state`, `expected_tools`, `optimal_step_count`), the latter through serde
//! aliases. Unknown fields are rejected so that a typo never drops a constraint silently.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

pub use crate::context::Context;
pub use crate::fault::FaultKind;

/// One evaluation case.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Case {
    /// Unique id of the case within its suite (`task_id` in the `AgentTrajectory` task format).
    #[serde(alias = "task_id")]
    pub case_id: String,
    /// What the user asks the agent (`goal` in the `AgentTrajectory` task format). May be left out when the
    /// user has a `persona`: the persona then opens the conversation in its own words.
    #[serde(alias = "goal", default, skip_serializing_if = "String::is_empty")]
    pub user_input: String,
    /// Free text for people reading the suite.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Name of the world the case runs in; the suite's default when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub world: Option<String>,
    /// Authenticated user, tenant and scopes; the world's default context when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<Context>,
    /// State merged over the world's default state before the trial starts.
    #[serde(default)]
    pub initial_state: Map<String, Value>,
    /// Paths into the final state with a literal or a matcher, plus reserved behavioural keys.
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub expected_outcome: Map<String, Value>,
    /// The flat expected state (`AgentTrajectory` task format): every key must equal its value in the final state.
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub expected_final_state: Map<String, Value>,
    /// The set of tools that must be used (precision/recall/F1 against the calls).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub expected_tools: Vec<String>,
    /// The theoretical optimal step count (`AgentTrajectory` task format).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub optimal_step_count: Option<u32>,
    /// Partial constraints on the trajectory.
    #[serde(default)]
    pub trajectory_constraints: Constraints,
    /// Failures the simulator injects during the trial.
    #[serde(default)]
    pub faults: Vec<FaultSpec>,
    /// The simulated user for multi-turn cases.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user: Option<UserSpec>,
    /// One known-good path: documentation, and the plan of the `script:reference` agent.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reference_trajectory: Vec<ReferenceStep>,
    /// Named scripted behaviours for this case, played by `--agent script:NAME`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub scripts: BTreeMap<String, Vec<ReferenceStep>>,
    /// Compare the trajectory with `reference_trajectory` the agentevals way (mode, argument
    /// mode, per-tool overrides, greedy or optimal pairing).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trajectory_match: Option<crate::matching::MatchConfig>,
    /// Expected calls in BFCL's form, `[{tool: {param: [acceptable values]}}]` (`""` marks an
    /// optional parameter), checked with BFCL's rules against the world's tool schemas.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub expected_calls: Vec<Value>,
    /// Secret values planted in the state or prompt that must never appear in the agent's
    /// answer, messages or tool arguments.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub canaries: Vec<String>,
    /// Labels used to segment results.
    #[serde(default)]
    pub tags: Vec<String>,
    /// Difficulty label used to segment results.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub difficulty: Option<String>,
    /// The evaluator that decides this case's task success, when not the state verification.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub primary_metric: Option<String>,
    /// The attack the case runs under: attacker text at some of the world's injection vectors
    /// and the attacker's goal, judged by its effect (`security`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attack: Option<crate::attack::Attack>,
    /// When the user's task counts as done (`utility`), judged by its effect; reported beside
    /// `security` for every case that has either. Without it, a case with an attack counts its
    /// task done when its deterministic outcome checks pass.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub utility: Option<crate::attack::Predicate>,
    /// Assertions on the state inside the trajectory (after step N, after the k-th call of a
    /// tool, after the first write); one marked `trap` ends the trial where it fails.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub checkpoints: Vec<crate::checkpoint::Checkpoint>,
}

impl Case {
    /// Writes every path of the case as the JSON Pointer it designates in the states the trial
    /// starts from (the case's `initial_state` over `world_state`): the keys of
    /// `expected_outcome` (reserved keys aside), `expected_final_state`, each checkpoint's
    /// `expect`, and the `state` of `utility` and of the attack's `success`. Done once, when the
    /// suite loads, so no evaluator sees two spellings of one path. See
    /// [`crate::path::to_pointer`].
    pub fn normalize_paths(&mut self, world_state: &Value) {
        let case_state = Value::Object(self.initial_state.clone());
        let layers = [&case_state, world_state];
        let norm = |map: &mut Map<String, Value>, reserved: bool| {
            if map
                .keys()
                .all(|k| k.starts_with('/') || (reserved && crate::ReservedKey::parse(k).is_some()))
            {
                return;
            }
            *map = std::mem::take(map)
                .into_iter()
                .map(|(k, v)| {
                    if reserved && crate::ReservedKey::parse(&k).is_some() {
                        (k, v)
                    } else {
                        (crate::path::to_pointer(&layers, &k), v)
                    }
                })
                .collect();
        };
        norm(&mut self.expected_outcome, true);
        norm(&mut self.expected_final_state, false);
        for c in &mut self.checkpoints {
            norm(&mut c.expect, false);
        }
        if let Some(u) = &mut self.utility {
            norm(&mut u.state, false);
        }
        if let Some(a) = &mut self.attack {
            norm(&mut a.success.state, false);
        }
    }

    /// The optimal step count from the constraints, or `optimal_step_count`.
    pub fn optimal_steps(&self) -> Option<u32> {
        self.trajectory_constraints
            .optimal_steps
            .or(self.optimal_step_count)
    }

    /// Every tool name the case mentions, with the field that mentions it, for validation.
    pub fn mentioned_tools(&self) -> Vec<(String, &str)> {
        let c = &self.trajectory_constraints;
        let mut out = Vec::new();
        for (i, t) in c.required_tools.iter().enumerate() {
            out.push((
                format!("trajectory_constraints.required_tools[{i}]"),
                t.as_str(),
            ));
        }
        for (i, t) in c.forbidden_tools.iter().enumerate() {
            out.push((
                format!("trajectory_constraints.forbidden_tools[{i}]"),
                t.as_str(),
            ));
        }
        for (i, t) in c.repeatable_tools.iter().enumerate() {
            out.push((
                format!("trajectory_constraints.repeatable_tools[{i}]"),
                t.as_str(),
            ));
        }
        for (i, group) in c.one_of.iter().enumerate() {
            for (j, t) in group.iter().enumerate() {
                out.push((
                    format!("trajectory_constraints.one_of[{i}][{j}]"),
                    t.as_str(),
                ));
            }
        }
        for (i, chain) in c.order.iter().enumerate() {
            for (j, t) in chain.iter().enumerate() {
                out.push((
                    format!("trajectory_constraints.order[{i}][{j}]"),
                    t.as_str(),
                ));
            }
        }
        for (i, call) in self.expected_calls.iter().enumerate() {
            if let Some(name) = call.as_object().and_then(|o| o.keys().next()) {
                out.push((format!("expected_calls[{i}]"), name.as_str()));
            }
        }
        for (i, t) in self.expected_tools.iter().enumerate() {
            out.push((format!("expected_tools[{i}]"), t.as_str()));
        }
        for (i, f) in self.faults.iter().enumerate() {
            if let Some(t) = &f.tool {
                out.push((format!("faults[{i}].tool"), t.as_str()));
            }
        }
        let predicates = [
            ("utility", self.utility.as_ref()),
            ("attack.success", self.attack.as_ref().map(|a| &a.success)),
        ];
        for (at, pred) in predicates {
            for (i, c) in pred.iter().flat_map(|p| p.calls.iter().enumerate()) {
                out.push((format!("{at}.calls[{i}].tool"), c.tool.as_str()));
            }
        }
        for (i, c) in self.checkpoints.iter().enumerate() {
            if let Some(t) = &c.after.call {
                out.push((format!("checkpoints[{i}].after.call"), t.as_str()));
            }
        }
        for (i, s) in self.reference_trajectory.iter().enumerate() {
            if let Some(t) = &s.tool {
                out.push((format!("reference_trajectory[{i}].tool"), t.as_str()));
            }
        }
        for (name, steps) in &self.scripts {
            for (i, s) in steps.iter().enumerate() {
                if let Some(t) = &s.tool {
                    out.push((format!("scripts.{name}[{i}].tool"), t.as_str()));
                }
            }
        }
        out
    }
}

/// Partial constraints on the path: invariants, never one exact sequence.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Constraints {
    /// Tools that must each be called at least once (`required_tool_recall`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub required_tools: Vec<String>,
    /// Tools that must never be called (`forbidden_tool_used`, critical).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub forbidden_tools: Vec<String>,
    /// Tools the user asks to call more than once with the same arguments (three transfers of
    /// $10,000 each): their repeats are the task, so `LoopDetection` and
    /// `duplicate_side_effects` do not count them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub repeatable_tools: Vec<String>,
    /// Groups of alternatives: at least one tool of each group must be called.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub one_of: Vec<Vec<String>>,
    /// Chains `[a, b, c]`: every call of a later tool must come after some call of each earlier one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub order: Vec<Vec<String>>,
    /// Upper bound on the number of tool calls (`within_call_budget`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tool_calls: Option<u32>,
    /// Upper bound on retries of one tool (a call right after a failed call of the same tool).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_retries_per_tool: Option<u32>,
    /// Every write must be preceded by a confirmation the user approved.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub confirmation_before_write: bool,
    /// Upper bound on agent steps.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_steps: Option<u32>,
    /// Upper bound on model tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u64>,
    /// Upper bound on model cost, in euros.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_cost_eur: Option<f64>,
    /// Upper bound on the trial's wall time, in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_latency_ms: Option<f64>,
    /// Upper bound on any model call's time to first token, in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_ttft_ms: Option<f64>,
    /// Optimal step count for `StepEfficiency` (overrides `optimal_step_count`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub optimal_steps: Option<u32>,
}

/// One fault rule: which calls fail (by tool, by kind of tool, by call number, by chance) and how.
///
/// In a case, a rule usually names its `tool`; in a suite-wide profile it may name `on: read` or
/// `on: write` instead. With `probability`, each matching call fails with that chance, drawn from
/// the trial's seed, so the same seed always gives the same schedule.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FaultSpec {
    /// The tool whose calls fail (any tool when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    /// Only tools of this kind (`read` or `write`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on: Option<crate::world::ToolKind>,
    /// Which calls of the tool fail, 1-based; every call when empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub calls: Vec<u32>,
    /// The chance that a matching call fails (1 when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probability: Option<f64>,
    /// What failure is injected.
    pub kind: FaultKind,
    /// Seconds the agent is told to wait (429 only; 1 when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_after_s: Option<f64>,
    /// Fault the agent's model calls at the LLM gateway instead of tool calls: `timeout`,
    /// `rate_limited` or `unavailable`, and `calls` counts the trial's model calls.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub model: bool,
}

/// The scripted simulated user: answers the agent's questions and confirmation requests.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UserSpec {
    /// Replies tried in order: the first with a pattern the agent's question contains answers.
    #[serde(default)]
    pub replies: Vec<UserReply>,
    /// Answer to a confirmation request no reply matched (`yes` when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confirm: Option<String>,
    /// Answer to any other question no reply matched ([`NOTHING_TO_ADD`] when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<String>,
    /// An LLM persona that answers what no reply matched, through the LLM gateway: who the
    /// user is and what they want (tau-bench's user `instruction`). The agent never sees it.
    /// Excludes `confirm` and `default`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub persona: Option<String>,
    /// The model that plays the persona (else the suite's `user_model`, else `--user-model`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
}

/// What the scripted user says to a question no reply matched when its case gives no
/// `default` (and no persona): the question then went unanswered (`user_unanswered`).
pub const NOTHING_TO_ADD: &str = "I have nothing to add.";

impl UserSpec {
    /// The reply that answers `question`: the first any of whose patterns the question
    /// contains, ignoring case.
    pub fn reply_to(&self, question: &str) -> Option<&UserReply> {
        let question = question.to_lowercase();
        self.replies.iter().find(|r| {
            r.pattern
                .texts()
                .iter()
                .any(|p| question.contains(&p.to_lowercase()))
        })
    }

    /// Whether a question no reply matches still gets an answer the case's author chose: a
    /// `default`, or the persona's.
    pub fn answers_unmatched_questions(&self) -> bool {
        self.default.is_some() || self.persona.is_some()
    }
}

/// One scripted reply of the simulated user.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UserReply {
    /// Case-insensitive text that the agent's question must contain, or a list of such texts
    /// of which it must contain one (the ways of asking for the same thing).
    pub pattern: ReplyPattern,
    /// What the user answers.
    pub reply: String,
}

/// A reply's pattern: one text, or several of which any may match.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum ReplyPattern {
    /// One text.
    One(String),
    /// Several texts; the question contains any.
    Any(Vec<String>),
}

impl ReplyPattern {
    /// The texts, one or several.
    pub fn texts(&self) -> &[String] {
        match self {
            ReplyPattern::One(text) => std::slice::from_ref(text),
            ReplyPattern::Any(texts) => texts,
        }
    }
}

impl From<&str> for ReplyPattern {
    fn from(text: &str) -> Self {
        ReplyPattern::One(text.to_owned())
    }
}

/// One step of a reference trajectory or named script: exactly one of `tool`, `confirm`, `ask`,
/// `say`, `wait_ms` or `answer`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReferenceStep {
    /// Call this tool.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    /// Arguments of the tool call (an object).
    #[serde(default, alias = "arguments", skip_serializing_if = "Option::is_none")]
    pub args: Option<Value>,
    /// Idempotency key sent with the tool call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotency_key: Option<String>,
    /// Ask the user to confirm an action (a confirmation request event).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confirm: Option<String>,
    /// Ask the user a question.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ask: Option<String>,
    /// Say something to the user without ending the trial.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub say: Option<String>,
    /// The final answer; ends the trial.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer: Option<String>,
    /// Wait this many milliseconds (scripted backoff; the trial clock advances without sleeping).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wait_ms: Option<f64>,
    /// Repeat this step this many times (scripted loops); 1 when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repeat: Option<u32>,
}

impl ReferenceStep {
    /// How many of the exclusive actions this step names; a valid step names exactly one.
    pub fn action_count(&self) -> usize {
        [
            self.tool.is_some(),
            self.confirm.is_some(),
            self.ask.is_some(),
            self.say.is_some(),
            self.answer.is_some(),
            self.wait_ms.is_some(),
        ]
        .into_iter()
        .filter(|b| *b)
        .count()
    }

    /// A tool-call step.
    pub fn call(tool: &str, args: Value) -> Self {
        ReferenceStep {
            tool: Some(tool.to_owned()),
            args: Some(args),
            ..Default::default()
        }
    }
}
