//! A world: the tools an agent may call, what they do, and the state they start from.
//!
//! Tool behaviour is declared as a list of [`HandlerOp`]s over the JSON state (read, list, set,
//! merge, append, delete, require), which covers CRUD worlds without code. The world crate runs
//! them behind a handler trait, so script handlers (JavaScript) slot in beside them.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::context::Context;

/// A world definition, as written in a suite's `worlds/NAME.yaml`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WorldSpec {
    /// The name cases refer to.
    pub name: String,
    /// Free text for people reading the suite.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Context used when a case gives none.
    #[serde(default)]
    pub default_context: Context,
    /// The default state; each trial gets its own copy, with the case's `initial_state` merged over.
    #[serde(default)]
    pub state: Map<String, Value>,
    /// A JSON file (relative to the world file) holding the state as one object (for large
    /// states, such as a benchmark's database); top-level keys of inline `state` win over it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state_file: Option<String>,
    /// The tools, in the order they are listed to agents.
    pub tools: Vec<ToolSpec>,
    /// A JavaScript file (relative to the world file) defining a handler function per tool
    /// without a declarative `handler`, named like the tool.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub script: Option<String>,
    /// The world clock handlers see as `ctx.now` (never the wall clock).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub now: Option<String>,
    /// The field that carries a record's tenant (records are the values of top-level
    /// collections); reading or writing a record of another tenant is a cross-tenant access.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant_field: Option<String>,
    /// Secret values planted in the state (API keys, passwords) that must never leak into the
    /// agent's answer, messages or tool arguments.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub canaries: Vec<String>,
    /// Where attacker text can enter a trial, by name: a `{NAME}` placeholder in the state's
    /// strings, a field of a tool's output, or a tool's description.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub injection_vectors: std::collections::BTreeMap<String, crate::attack::InjectionVector>,
    /// A real service behind the tools (a directory, a git repository, any service behind
    /// commands), made fresh for every trial; its state is read back from it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service: Option<crate::service::ServiceSpec>,
    /// What an agent's final answer can claim it did, and the state that makes each claim true:
    /// scored as `claims_supported` on every trial in this world.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub claims: Vec<ClaimRule>,
}

impl WorldSpec {
    /// The tool with this name.
    pub fn tool(&self, name: &str) -> Option<&ToolSpec> {
        self.tools.iter().find(|t| t.name == name)
    }
}

/// Whether a tool only reads the state or changes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ToolKind {
    /// Reads only; safe to retry.
    Read,
    /// Has side effects: logged in the side-effect log, needs confirmation where the case says so.
    Write,
}

/// A claim an agent's final answer can make about its effect (`closed INC-004217`), and what
/// must hold in the final state for it to be true. Each match of `pattern` in the answer is one
/// claim.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ClaimRule {
    /// A regular expression over the final answer (`(?i)` to ignore case); its groups name what
    /// the claim is about.
    pub pattern: String,
    /// The final state that makes the claim true: paths and what they must hold, as in a case's
    /// `expected_outcome` (values or matchers); `$1`, `$2`... in paths and string values stand
    /// for the match's groups.
    pub holds: Map<String, Value>,
    /// Whether the claim says a write happened (`closed`, `reassigned`): an unsupported one is
    /// a critical finding, the user was told something false. Default true.
    #[serde(default = "claim_is_write")]
    pub write: bool,
}

fn claim_is_write() -> bool {
    true
}

/// One tool of a world.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ToolSpec {
    /// The name agents call.
    pub name: String,
    /// What the tool does, shown to agents.
    #[serde(default)]
    pub description: String,
    /// Read or write.
    pub kind: ToolKind,
    /// Scopes the context must hold; the call answers 403 otherwise.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scopes: Vec<String>,
    /// JSON Schema (draft 2020-12) of the arguments object.
    #[serde(default = "empty_object_schema")]
    pub parameters: Value,
    /// The declarative behaviour, run in order.
    #[serde(default)]
    pub handler: Vec<HandlerOp>,
}

fn empty_object_schema() -> Value {
    serde_json::json!({"type": "object"})
}

/// One declarative step of a tool's behaviour. Paths are JSON Pointers in which `{arg}` is
/// replaced by the escaped value of argument `arg` (and `{context.user}`, `{context.tenant}` by
/// the context); string values equal to `"{arg}"` are replaced by the argument's JSON value.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum HandlerOp {
    /// Fail unless the path exists (and equals `equals`, when given).
    Require {
        /// The path that must exist.
        path: String,
        /// The value it must have.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        equals: Option<Value>,
        /// The error status when it does not (404 when absent, 409 when different by default).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        status: Option<u16>,
        /// The error message the agent sees.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message: Option<String>,
    },
    /// The result is the value at the path (404 when absent).
    Get(String),
    /// The result is the list of values under the path (an object's values or an array's items),
    /// keeping those whose fields equal the templates of `filter`; filters naming an absent
    /// argument are skipped.
    List {
        /// The collection.
        path: String,
        /// Field → template; all must match.
        #[serde(default, skip_serializing_if = "Map::is_empty")]
        filter: Map<String, Value>,
    },
    /// Write a value at the path (creating missing objects on the way).
    Set {
        /// Where.
        path: String,
        /// What (a template).
        value: Value,
    },
    /// Merge an object into the object at the path.
    Merge {
        /// Where.
        path: String,
        /// The fields to merge (a template).
        value: Value,
    },
    /// Append a value to the array at the path (created when absent).
    Append {
        /// The array.
        path: String,
        /// The element (a template).
        value: Value,
    },
    /// Remove the value at the path (404 when absent).
    Delete(String),
    /// The result the agent sees (a template); by default the last read value or the written value.
    Return(Value),
}

impl HandlerOp {
    /// The op's path template, when it has one.
    pub fn path(&self) -> Option<&str> {
        match self {
            HandlerOp::Require { path, .. }
            | HandlerOp::List { path, .. }
            | HandlerOp::Set { path, .. }
            | HandlerOp::Merge { path, .. }
            | HandlerOp::Append { path, .. } => Some(path),
            HandlerOp::Get(path) | HandlerOp::Delete(path) => Some(path),
            HandlerOp::Return(_) => None,
        }
    }
}
