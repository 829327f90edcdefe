//! The failure kinds gauntlet injects (the fault table): shared by cases, trajectories and
//! run records.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The failure kinds of the fault table (docs/reference.md, "Faults").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum FaultKind {
    /// Transient timeout: the call did not complete.
    Timeout,
    /// 429 with a retry-after.
    RateLimited,
    /// 400: the arguments were rejected.
    BadRequest,
    /// 403: not allowed.
    Forbidden,
    /// 404: the entity does not exist.
    NotFound,
    /// The call succeeded with an empty result.
    Empty,
    /// The write was applied but its response was lost (the agent sees a timeout).
    LostResponse,
    /// The tool is unavailable (503).
    Unavailable,
}
