//! The trace lake as the viewer shows it: traces by day, and a day's failed traces, the
//! candidates `gauntlet harvest` would turn into cases.

use std::collections::BTreeMap;
use std::path::Path;

use gauntlet_online::lake::{files, read_trace_file};
use serde_json::{Value, json};

use crate::ViewError;

fn lake_error(e: impl std::fmt::Display) -> ViewError {
    ViewError::Io(e.to_string())
}

fn day_of(file: &Path) -> String {
    file.parent()
        .and_then(|d| d.file_name())
        .map(|n| n.to_string_lossy().trim_start_matches("day=").to_owned())
        .unwrap_or_default()
}

/// Per day: traces, and how many passed, failed and ended in an error, with the pass rate.
pub fn days(root: &Path) -> Result<Vec<Value>, ViewError> {
    let mut by_day: BTreeMap<String, [u64; 3]> = BTreeMap::new();
    for file in files(root, "traces", None, None).map_err(lake_error)? {
        let counts = by_day.entry(day_of(&file)).or_default();
        for row in read_trace_file(&file).map_err(lake_error)? {
            match row.status.as_str() {
                "passed" => counts[0] += 1,
                "failed" => counts[1] += 1,
                _ => counts[2] += 1,
            }
        }
    }
    Ok(by_day
        .into_iter()
        .map(|(day, [p, f, e])| {
            let n = p + f + e;
            json!({"day": day, "traces": n, "passed": p, "failed": f, "errors": e,
                   "pass_rate": (n > 0).then(|| p as f64 / n as f64)})
        })
        .collect())
}

/// The failed traces of `day` (at most `limit`): what the harvest would offer as cases.
pub fn candidates(root: &Path, day: &str, limit: usize) -> Result<Vec<Value>, ViewError> {
    let mut out = Vec::new();
    for file in files(root, "traces", Some(day), Some(day)).map_err(lake_error)? {
        for row in read_trace_file(&file).map_err(lake_error)? {
            if row.status == "passed" {
                continue;
            }
            if out.len() >= limit {
                return Ok(out);
            }
            out.push(json!({
                "trace_id": row.trace_id,
                "received_at_ms": row.received_at_ms,
                "service": row.service,
                "agent": row.agent,
                "status": row.status,
                "failed_evaluators": row.failed_evaluators,
                "tools": row.tools,
                "user_input": row.user_input,
                "final_answer": row.final_answer,
            }));
        }
    }
    Ok(out)
}
