//! Where each value of a YAML or JSON document is, by JSON Pointer.
//!
//! serde reports where a document fails to deserialize; checks made after deserializing (a tool
//! the world lacks, a bad matcher) need the position of a field too. This walks the YAML parser's
//! events (JSON is read by the same parser) and records the position of every key and item.

use std::collections::HashMap;

use serde_saphyr::granit_parser::{Event, Parser};

/// Positions (1-based line and column) by JSON Pointer.
#[derive(Debug, Default)]
pub struct SpanIndex {
    positions: HashMap<String, (usize, usize)>,
}

enum Frame {
    Map { path: String, key: Option<String> },
    Seq { path: String, index: usize },
}

impl SpanIndex {
    /// Indexes a document; an unparsable document gives an empty index.
    pub fn build(text: &str) -> SpanIndex {
        let mut positions = HashMap::new();
        let mut stack: Vec<Frame> = Vec::new();
        positions.insert(String::new(), (1, 1));
        for item in Parser::new_from_str(text) {
            let Ok((event, span)) = item else { break };
            let pos = (span.start.line(), span.start.col() + 1);
            let is_start = matches!(event, Event::MappingStart(..) | Event::SequenceStart(..));
            let is_node = is_start || matches!(event, Event::Scalar(..) | Event::Alias(..));
            if matches!(event, Event::MappingEnd | Event::SequenceEnd) {
                stack.pop();
                advance(&mut stack);
                continue;
            }
            if !is_node {
                continue;
            }
            // A scalar in key position names the next value.
            if let (Some(Frame::Map { path, key }), Event::Scalar(text, ..)) =
                (stack.last_mut(), &event)
                && key.is_none()
            {
                let child = format!("{path}/{}", escape(text));
                positions.entry(child).or_insert(pos);
                *key = Some(text.to_string());
                continue;
            }
            let path = match stack.last() {
                None => String::new(),
                Some(Frame::Map { path, key }) => {
                    format!("{path}/{}", escape(key.as_deref().unwrap_or("")))
                }
                Some(Frame::Seq { path, index }) => format!("{path}/{index}"),
            };
            positions.entry(path.clone()).or_insert(pos);
            match event {
                Event::MappingStart(..) => stack.push(Frame::Map { path, key: None }),
                Event::SequenceStart(..) => stack.push(Frame::Seq { path, index: 0 }),
                _ => advance(&mut stack),
            }
        }
        SpanIndex { positions }
    }

    /// The pointer whose key or value starts last on `line` at or before `col`: what a parser
    /// error at that position is about.
    pub fn pointer_at(&self, line: usize, col: usize) -> Option<&str> {
        self.positions
            .iter()
            .filter(|(p, (l, c))| *l == line && *c <= col && !p.is_empty())
            .max_by_key(|(p, (_, c))| (*c, p.len()))
            .map(|(p, _)| p.as_str())
    }

    /// The position of the value at a pointer, or of its nearest indexed ancestor.
    pub fn locate(&self, pointer: &str) -> (usize, usize) {
        let mut p = pointer;
        loop {
            if let Some(pos) = self.positions.get(p) {
                return *pos;
            }
            match p.rfind('/') {
                Some(i) => p = &p[..i],
                None => return (1, 1),
            }
        }
    }
}

/// After a complete value: a map waits for its next key, a sequence moves to its next item.
fn advance(stack: &mut [Frame]) {
    match stack.last_mut() {
        Some(Frame::Map { key, .. }) => *key = None,
        Some(Frame::Seq { index, .. }) => *index += 1,
        None => {}
    }
}

fn escape(s: &str) -> String {
    gauntlet_model::path::escape_segment(s)
}

/// Turns a dotted field path (`trajectory_constraints.required_tools[0]`) into a JSON Pointer.
pub fn dotted_to_pointer(dotted: &str) -> String {
    let mut out = String::new();
    for part in dotted.split('.') {
        let (name, rest) = part.split_once('[').map_or((part, ""), |(n, r)| (n, r));
        out.push('/');
        out.push_str(&escape(name));
        for idx in rest.split('[') {
            let idx = idx.trim_end_matches(']');
            if !idx.is_empty() {
                out.push('/');
                out.push_str(idx);
            }
        }
    }
    out
}

impl SpanIndex {
    /// Moves every position down by `lines` (documents embedded further down a file).
    pub fn shift_lines(&mut self, lines: usize) {
        for pos in self.positions.values_mut() {
            pos.0 += lines;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn yaml_keys_and_items_are_located() {
        let text = "a: 1\nb:\n  c: [x, y]\n  d:\n    - e: 2\n";
        let idx = SpanIndex::build(text);
        assert_eq!(idx.locate("/a"), (1, 1));
        assert_eq!(idx.locate("/b/c"), (3, 3));
        assert_eq!(idx.locate("/b/c/1"), (3, 10));
        assert_eq!(idx.locate("/b/d/0/e"), (5, 7));
        assert_eq!(idx.locate("/b/d/0/zzz"), (5, 7));
    }

    #[test]
    fn json_is_located_too() {
        let text = "{\n  \"case_id\": \"x\",\n  \"tools\": [\"a\", \"b\"]\n}";
        let idx = SpanIndex::build(text);
        assert_eq!(idx.locate("/case_id"), (2, 3));
        assert_eq!(idx.locate("/tools/1"), (3, 18));
    }

    #[test]
    fn dotted_paths_become_pointers() {
        assert_eq!(dotted_to_pointer("a.b[0].c"), "/a/b/0/c");
        assert_eq!(dotted_to_pointer("one_of[1][2]"), "/one_of/1/2");
    }
}
