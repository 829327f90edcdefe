//! Worlds that are real services: a directory, a git repository, or any service behind
//! commands, made fresh for every trial, reached by the agent through a real MCP server, and
//! read back as JSON for the same expectations as simulated worlds.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A world's real service (`service:` in a world file). The world still declares its tools
/// (names, kinds, and optionally schemas); the MCP server answers them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ServiceSpec {
    /// What the service is.
    pub kind: ServiceKind,
    /// The fixture, relative to the world file: a folder copied for each trial (`directory`),
    /// made a repository with one commit on `main` (`git`), or handed to `setup` as
    /// `$GAUNTLET_FIXTURE` (`command`); for `sqlite`, a database file copied, or an SQL
    /// script (`.sql`) run into a fresh database.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fixture: Option<String>,
    /// The MCP server (stdio) started for each trial, run with `sh -c` in the trial's folder;
    /// `{dir}` is that folder (also `$GAUNTLET_DIR`), `{db}` a `sqlite` world's database.
    pub server: String,
    /// `git`: branches made at the fixture's commit besides `main`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub branches: Vec<String>,
    /// `git`: fixture files left out of the initial commit (untracked in every trial's work
    /// tree: the pending change a task is about).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub uncommitted: Vec<String>,
    /// `command`: prepares the trial's folder (`$GAUNTLET_DIR`, `$GAUNTLET_FIXTURE`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub setup: Option<String>,
    /// `command`: prints the service's state as one JSON object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub snapshot: Option<String>,
    /// `command`: runs after the trial, whatever happened.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub teardown: Option<String>,
    /// `directory` and `git`: files in the state as their text (`text`, the default; binary
    /// files as `sha256:HEX`) or always as `sha256:HEX` (`hash`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<ContentMode>,
    /// Seconds the server may take to start (60 when absent) and to answer a call (30).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_s: Option<f64>,
}

/// The kinds of real service.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ServiceKind {
    /// A file tree: state `{files: {PATH: TEXT}, dirs: [PATH]}`.
    Directory,
    /// A git repository: the file tree of its work tree plus `head`, `branches` (each with its
    /// `log` of `{subject, files}`, newest first) and `status` (`staged`, `unstaged`,
    /// `untracked`).
    Git,
    /// A SQLite database: state `{tables: {NAME: [ROW, ...]}}`, rows as objects ordered by
    /// their first column (blobs as `sha256:HEX`).
    Sqlite,
    /// Anything: `setup`, `snapshot` and `teardown` commands.
    Command,
}

/// How file contents appear in a directory's or repository's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ContentMode {
    /// The text (binary files as `sha256:HEX`).
    Text,
    /// `sha256:HEX` of the bytes.
    Hash,
}
