//! Reading one YAML or JSON file into a typed value, with located errors.

use std::path::Path;

use serde::de::DeserializeOwned;

use crate::diagnostic::Diagnostic;
use crate::spans::SpanIndex;

/// A parsed document and the positions of its values.
pub struct Document<T> {
    /// The typed value.
    pub value: T,
    /// Positions by JSON Pointer.
    pub spans: SpanIndex,
}

/// Whether a path names a JSON file (`.json`); anything else is read as YAML.
pub fn is_json(path: &Path) -> bool {
    path.extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("json"))
}

/// Parses a whole file's text as YAML or JSON (by extension). `line_offset` shifts positions
/// (a JSONL line is a document that starts further down its file).
pub fn parse<T: DeserializeOwned>(
    file: &Path,
    text: &str,
    json: bool,
    line_offset: usize,
) -> Result<Document<T>, Diagnostic> {
    let value = if json {
        serde_json::from_str::<T>(text).map_err(|e| {
            let msg = e.to_string();
            // serde_json appends " at line L column C"; the position goes in front instead.
            let msg = msg
                .rsplit_once(" at line ")
                .map_or(msg.as_str(), |(m, _)| m)
                .to_owned();
            Diagnostic::at(file, e.line() + line_offset, e.column(), msg)
        })?
    } else {
        serde_saphyr::from_str::<T>(text).map_err(|e| {
            let (line, col) = e
                .location()
                .map_or((0, 0), |l| (l.line() as usize, l.column() as usize));
            Diagnostic::at(file, line + line_offset, col, yaml_message(&e))
        })?
    };
    let mut spans = SpanIndex::build(text);
    if line_offset > 0 {
        spans.shift_lines(line_offset);
    }
    Ok(Document { value, spans })
}

/// serde-saphyr's message without its source snippet and position (we print those ourselves).
fn yaml_message(e: &serde_saphyr::Error) -> String {
    let full = e.without_snippet().to_string();
    let first = full.lines().next().unwrap_or_default().trim();
    let first = first
        .rsplit_once(" at line ")
        .map_or(first, |(m, _)| m)
        .trim_end_matches(',');
    first.to_owned()
}
