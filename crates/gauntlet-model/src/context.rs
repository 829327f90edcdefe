//! [`Context`]: who the agent acts for (user, tenant, roles, scopes), given by a case or by its
//! world's default.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Who the agent acts for: checked against each tool's required scopes.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Context {
    /// The authenticated user's id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user: Option<String>,
    /// The tenant the user belongs to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
    /// Role names, for reports and handlers.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub roles: Vec<String>,
    /// Granted scopes; a tool whose required scopes are not all here answers 403.
    #[serde(default)]
    pub scopes: Vec<String>,
}
