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
    // A UTF-8 byte-order mark (some editors write one) is not content.
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let value = if json {
        serde_json::from_str::<T>(text).map_err(|e| {
            let msg = e.to_string();
            // serde_json appends " at line L column C"; the position goes in front instead.
            let msg = gauntlet_model::without_rust_types(
                msg.rsplit_once(" at line ")
                    .map_or(msg.as_str(), |(m, _)| m),
            );
            Diagnostic::at(file, e.line() + line_offset, e.column(), msg)
        })?
    } else {
        serde_saphyr::from_str::<T>(text).map_err(|e| {
            let (line, col) = e
                .location()
                .map_or((0, 0), |l| (l.line() as usize, l.column() as usize));
            let message = wrong_type(text, line, col, &yaml_message(&e))
                .or_else(|| unclosed(text, line))
                .unwrap_or_else(|| plain(yaml_message(&e)));
            Diagnostic::at(file, line + line_offset, col, message)
        })?
    };
    let mut spans = SpanIndex::build(text);
    if line_offset > 0 {
        spans.shift_lines(line_offset);
    }
    Ok(Document { value, spans })
}

/// A parser's terse "invalid u32" at a value, said as a person would: the field, what it
/// takes, and what it got (`max_tool_calls` must be a whole number of 0 or more, not `two`).
fn wrong_type(text: &str, line: usize, col: usize, message: &str) -> Option<String> {
    let wanted = match message.strip_prefix("invalid ")? {
        "u8" | "u16" | "u32" | "u64" | "usize" => "a whole number of 0 or more",
        "i8" | "i16" | "i32" | "i64" | "isize" => "a whole number",
        "f32" | "f64" => "a number",
        "bool" | "boolean" => "true or false",
        _ => return None,
    };
    let spans = SpanIndex::build(text);
    let pointer = spans.pointer_at(line, col)?;
    let field = pointer
        .rsplit('/')
        .next()
        .unwrap_or(pointer)
        .replace("~1", "/")
        .replace("~0", "~");
    let got = text
        .lines()
        .nth(line.checked_sub(1)?)
        .and_then(|l| l.get(col.saturating_sub(1)..))
        .map(|v| {
            v.split(" #")
                .next()
                .unwrap_or(v)
                .trim()
                .trim_end_matches(',')
        })
        .filter(|v| !v.is_empty())?;
    let place = if pointer.matches('/').count() > 1 {
        format!(" (at {pointer})")
    } else {
        String::new()
    };
    Some(format!("`{field}`{place} must be {wanted}, not `{got}`"))
}

/// A flow list or map opened on the error's line (or just before it) and never closed on its
/// line: the usual cause of the parser's "expected string scalar" or "illegal placement".
fn unclosed(text: &str, line: usize) -> Option<String> {
    let lines: Vec<&str> = text.lines().collect();
    for at in (line.saturating_sub(2).max(1)..=line).rev() {
        let l = lines.get(at - 1)?;
        let code = l.split(" #").next().unwrap_or(l);
        let count = |c: char| code.chars().filter(|x| *x == c).count();
        for (open, close) in [('[', ']'), ('{', '}')] {
            if count(open) > count(close) && !code.trim_end().ends_with(open) {
                let place = if at == line {
                    "on this line".to_owned()
                } else {
                    format!("on line {at}")
                };
                return Some(format!(
                    "`{open}` is opened {place} and not closed with `{close}` (a flow {} on \
                     one line needs both)",
                    if open == '[' { "list" } else { "map" }
                ));
            }
        }
    }
    None
}

/// A parser message without advice meant for programmers (the parser library's options).
fn plain(message: String) -> String {
    // The reader's guard against documents that would take all memory, in its own debug text
    // (`budget breached: Nodes { nodes: 250001 }`): said in words, with the way out.
    if message.starts_with("budget breached") {
        let limit = message
            .split(|c: char| !c.is_ascii_digit())
            .find_map(|n| n.parse::<u64>().ok())
            .map_or_else(String::new, |n| {
                format!(" ({} values)", n.saturating_sub(1))
            });
        return format!(
            "this file is larger than the YAML reader takes{limit}: put a large world `state:` \
             in a JSON file beside the world and name it with `state_file:`"
        );
    }
    match message.split_once(", set DuplicateKeyPolicy") {
        Some((m, _)) => format!("{m} (the key appears twice; keep one)"),
        None => gauntlet_model::without_rust_types(&message),
    }
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

#[cfg(test)]
mod tests {
    /// Issue 48: a world `state:` of 25,000 records failed with the YAML library's debug text
    /// (`budget breached: Nodes { nodes: 250001 }`).
    #[test]
    fn a_state_too_large_for_yaml_says_the_limit_in_words_and_points_to_state_file() {
        let mut text = String::from("state:\n  records:\n");
        for i in 0..25_000 {
            text.push_str(&format!(
                "    r{i}: {{a: 1, b: 2, c: 3, d: 4, e: 5, f: 6, g: 7, h: 8, i: 9}}\n"
            ));
        }
        let e = super::parse::<serde_json::Value>(
            std::path::Path::new("worlds/big.yaml"),
            &text,
            false,
            0,
        )
        .err()
        .expect("too large");
        let shown = e.to_string();
        assert!(!shown.contains("budget breached"), "{shown}");
        assert!(shown.contains("state_file"), "{shown}");
        assert!(shown.contains("250000 values"), "{shown}");
    }
}
