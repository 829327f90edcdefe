//! How a trajectory is matched against a reference (LangChain agentevals' modes); the matching
//! itself lives in the evaluators.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// How whole trajectories are compared.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum MatchMode {
    /// Same messages, roles and tool calls, in order.
    Strict,
    /// Same tool calls in any order.
    Unordered,
    /// Every call of the agent is in the reference.
    Subset,
    /// Every call of the reference is in the agent's.
    Superset,
}

/// How the arguments of two calls of the same tool are compared.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ArgsMode {
    /// Equal.
    Exact,
    /// Not compared.
    Ignore,
    /// Every agent argument is in the reference with the same value.
    Subset,
    /// Every reference argument is in the agent's with the same value.
    Superset,
}

/// A per-tool override: another mode, or key paths that must be equal.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum ArgsOverride {
    /// Compare this tool's arguments with another mode.
    Mode(ArgsMode),
    /// Compare only these dotted key paths.
    Keys(Vec<String>),
}

/// How pairs of calls are found.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Matching {
    /// agentevals' first-fit pairing.
    #[default]
    Greedy,
    /// A maximum bipartite matching.
    Optimal,
}

/// A trajectory-match configuration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MatchConfig {
    /// The trajectory mode (`strict` by default).
    #[serde(default = "strict", rename = "mode")]
    pub mode: MatchMode,
    /// The argument mode (`exact` by default).
    #[serde(default = "exact", rename = "args")]
    pub args: ArgsMode,
    /// Per-tool overrides.
    #[serde(default)]
    pub overrides: BTreeMap<String, ArgsOverride>,
    /// Greedy (agentevals) or optimal pairing.
    #[serde(default)]
    pub matching: Matching,
}

fn strict() -> MatchMode {
    MatchMode::Strict
}
fn exact() -> ArgsMode {
    ArgsMode::Exact
}

impl Default for MatchConfig {
    fn default() -> Self {
        MatchConfig {
            mode: MatchMode::Strict,
            args: ArgsMode::Exact,
            overrides: BTreeMap::new(),
            matching: Matching::Greedy,
        }
    }
}
