//! The judge cache: a judge's reply per request, so that re-scoring a stored run, or a second
//! run of unchanged trials, asks the model nothing.
//!
//! The key is the SHA-256 of the request's canonical JSON (model, rendered prompt, which holds
//! the rubric and the template, and parameters) and the sample's number; a changed rubric,
//! model, template or parameter is another key. One SQLite file per suite
//! (`SUITE/.gauntlet/judge-cache.sqlite`), safe for several processes at once.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use rusqlite::{Connection, OptionalExtension, params};

use crate::StoreError;

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS judge_replies (
  key TEXT PRIMARY KEY, model TEXT NOT NULL, content TEXT NOT NULL,
  prompt_tokens INTEGER NOT NULL, completion_tokens INTEGER NOT NULL, created_at TEXT NOT NULL);
";

/// A reply as cached.
#[derive(Debug, Clone, PartialEq)]
pub struct CachedReply {
    /// The reply's text.
    pub content: String,
    /// Its prompt tokens when it was made.
    pub prompt_tokens: u64,
    /// Its completion tokens when it was made.
    pub completion_tokens: u64,
}

/// The cache of one suite.
pub struct JudgeCache {
    path: PathBuf,
    conn: Mutex<Connection>,
}

impl JudgeCache {
    /// Opens (or creates) the cache file.
    pub fn open(path: &Path) -> Result<JudgeCache, StoreError> {
        let bad = |e: rusqlite::Error| StoreError::Format {
            path: path.to_owned(),
            line: 0,
            message: format!("judge cache: {e}"),
        };
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|source| StoreError::Io {
                path: dir.to_owned(),
                source,
            })?;
        }
        let conn = Connection::open(path).map_err(bad)?;
        conn.busy_timeout(std::time::Duration::from_secs(10))
            .map_err(bad)?;
        conn.execute_batch(SCHEMA).map_err(bad)?;
        Ok(JudgeCache {
            path: path.to_owned(),
            conn: Mutex::new(conn),
        })
    }

    /// The key of sample `sample` of a request: SHA-256 of its number and the request's
    /// canonical JSON.
    pub fn key(request: &serde_json::Value, sample: u32) -> String {
        gauntlet_model::digest::sha256_hex(
            format!(
                "{sample}\n{}",
                gauntlet_model::path::canonical_json(request)
            )
            .as_bytes(),
        )
    }

    /// Where it is.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The reply cached under `key`.
    pub fn get(&self, key: &str) -> Option<CachedReply> {
        let conn = self.conn.lock().ok()?;
        conn.query_row(
            "SELECT content, prompt_tokens, completion_tokens FROM judge_replies WHERE key = ?1",
            params![key],
            |r| {
                Ok(CachedReply {
                    content: r.get(0)?,
                    prompt_tokens: r.get::<_, i64>(1)? as u64,
                    completion_tokens: r.get::<_, i64>(2)? as u64,
                })
            },
        )
        .optional()
        .ok()
        .flatten()
    }

    /// Keeps a reply under `key` (a failure to write only costs a later call).
    pub fn put(&self, key: &str, model: &str, reply: &CachedReply, now: &str) {
        if let Ok(conn) = self.conn.lock() {
            let _ = conn.execute(
                "INSERT OR REPLACE INTO judge_replies VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                params![
                    key,
                    model,
                    reply.content,
                    reply.prompt_tokens as i64,
                    reply.completion_tokens as i64,
                    now
                ],
            );
        }
    }
}
