//! The shadow proxy's configuration (`gauntlet shadow --config FILE`): which upstream tools read
//! and which write, how a write that is not executed is answered, the canary's allowance and
//! budgets, and faults on proxied tools.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::case::FaultSpec;
use crate::world::ToolKind;

/// `gauntlet shadow --config FILE`. Every field is optional: without a file, annotated tools
/// are classified by their MCP annotations, unannotated ones count as writes, and writes are
/// answered with a success shaped by the tool's output schema.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ShadowConfig {
    /// What a tool without `readOnlyHint` counts as (`write` when absent: the safe side).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unannotated: Option<ToolKind>,
    /// Per tool (by the name the agent sees): its kind, or its kind and responder.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub tools: BTreeMap<String, ToolRule>,
    /// How writes are answered when no tool rule says otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub respond: Option<Responder>,
    /// Canary mode (`--canary`): which writes reach the upstream, and the budgets.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub canary: Option<CanaryConfig>,
    /// Faults injected into proxied calls, as in a case (`tool`, `on: read|write`, `calls`,
    /// `probability`, `kind`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub faults: Vec<FaultSpec>,
    /// The seed of probabilistic faults (each session draws from it and its number).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    /// Seconds an upstream may take to answer one call before the session ends with an error
    /// (30 when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_s: Option<f64>,
    /// Seconds an upstream may take to start and list its tools (60 when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_timeout_s: Option<f64>,
}

/// One tool's rule: `read`, `write`, or `{kind, respond}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum ToolRule {
    /// Just the kind.
    Kind(ToolKind),
    /// The kind (else from the annotations) and how its writes are answered.
    Full {
        /// Read or write.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        kind: Option<ToolKind>,
        /// How a write of this tool is answered.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        respond: Option<Responder>,
    },
}

impl ToolRule {
    /// The kind the rule sets, if any.
    pub fn kind(&self) -> Option<ToolKind> {
        match self {
            ToolRule::Kind(k) => Some(*k),
            ToolRule::Full { kind, .. } => *kind,
        }
    }

    /// The responder the rule sets, if any.
    pub fn responder(&self) -> Option<&Responder> {
        match self {
            ToolRule::Kind(_) => None,
            ToolRule::Full { respond, .. } => respond.as_ref(),
        }
    }
}

/// How a write that is recorded, not executed, is answered.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Responder {
    /// A plain success shaped by the tool's output schema (its required fields, filled from
    /// same-named arguments where they fit), or a short text when it declares none.
    Schema,
    /// This value, its strings rendered as templates with `tool` and `args` (`{{ args.path }}`).
    Template(Value),
    /// A gauntlet world applies the write to a shadow copy of its state: the world file (YAML
    /// or JSON, relative to the configuration file), whose tool of the same name handles it.
    /// The copy's state at the session's end is in the trial's final state, under `worlds`.
    World(String),
}

/// Canary mode: writes of allowed tools are executed, within budgets; all else is refused.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CanaryConfig {
    /// Tools whose writes reach the upstream.
    #[serde(default)]
    pub allow: Vec<String>,
    /// Executed writes per session, at most; later writes are refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_writes: Option<u32>,
    /// Calls per session, at most; later calls are refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_calls: Option<u32>,
}
