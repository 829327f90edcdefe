//! How large states are kept in a run folder: once, with each trial's changes beside it.
//!
//! A trial record's `initial_state` is either the state itself or `{"$state": "states/H.json"}`
//! (a file of the run folder holding it); its `final_state` is either the state or
//! `{"$state": "states/H.json", "$changes": {"/table/id": record or null}}`: the base with each
//! changed top-level entry or record replaced (`null`: removed). Pointers are JSON Pointers of
//! one or two segments.

use serde_json::{Map, Value};

use crate::path::{escape_segment, pointer_segments, same_value};

/// States whose JSON is longer than this are stored once per run folder.
pub const INLINE_STATE_LIMIT: usize = 64 * 1024;

/// Whether `v`'s JSON is longer than [`INLINE_STATE_LIMIT`]: serialised into a counter that
/// stops at the limit, so a small state costs no buffer and a huge one no more than the limit.
pub fn is_large(v: &Value) -> bool {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len();
            if self.0 > INLINE_STATE_LIMIT {
                return Err(std::io::Error::other("over the limit"));
            }
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    serde_json::to_writer(&mut count, v).is_err() && count.0 > INLINE_STATE_LIMIT
}

/// The reference to a stored state, when `v` is one: (file, changes).
pub fn stored_ref(v: &Value) -> Option<(&str, Option<&Map<String, Value>>)> {
    let o = v.as_object()?;
    let file = o.get("$state")?.as_str()?;
    let changes = o.get("$changes").and_then(Value::as_object);
    (o.len() <= 2).then_some((file, changes))
}

/// The changes that turn `before` into `after`, per top-level entry and, inside objects of
/// objects, per record. Numbers compare by value: `46.0` and `46` are no change.
pub fn changes(before: &Value, after: &Value) -> Map<String, Value> {
    let mut out = Map::new();
    let empty = Map::new();
    let a = before.as_object().unwrap_or(&empty);
    let b = after.as_object().unwrap_or(&empty);
    for (k, bv) in b {
        entry_changes(k, a.get(k), bv, &mut out);
    }
    for k in a.keys().filter(|k| !b.contains_key(*k)) {
        out.insert(format!("/{}", escape_segment(k)), Value::Null);
    }
    out
}

/// The changes of one top-level entry `k`, from `before` (absent: added) to `after`, as
/// [`changes`] lists them.
pub(crate) fn entry_changes(
    k: &str,
    before: Option<&Value>,
    after: &Value,
    out: &mut Map<String, Value>,
) {
    let p = format!("/{}", escape_segment(k));
    match (before, after) {
        (Some(av), _) if same_value(av, after) => {}
        (Some(Value::Object(ar)), Value::Object(br)) => {
            for (id, rec) in br {
                if !ar.get(id).is_some_and(|r| same_value(r, rec)) {
                    out.insert(format!("{p}/{}", escape_segment(id)), rec.clone());
                }
            }
            for id in ar.keys().filter(|id| !br.contains_key(*id)) {
                out.insert(format!("{p}/{}", escape_segment(id)), Value::Null);
            }
        }
        _ => {
            out.insert(p, after.clone());
        }
    }
}

/// `base` with `changes` applied (see [`changes`]).
pub fn apply(mut base: Value, changes: &Map<String, Value>) -> Value {
    for (pointer, v) in changes {
        let Some(segs) = pointer_segments(pointer) else {
            continue;
        };
        let Some(root) = base.as_object_mut() else {
            continue;
        };
        match segs.as_slice() {
            [k] => {
                if v.is_null() {
                    root.remove(k);
                } else {
                    root.insert(k.clone(), v.clone());
                }
            }
            [k, id] => {
                let Some(table) = root
                    .entry(k.clone())
                    .or_insert_with(|| Value::Object(Map::new()))
                    .as_object_mut()
                else {
                    continue;
                };
                if v.is_null() {
                    table.remove(id);
                } else {
                    table.insert(id.clone(), v.clone());
                }
            }
            _ => {}
        }
    }
    base
}

/// The entries of `base` that `changes` names (top-level entries, or records inside them), and
/// nothing else: with the changes applied it gives the changed part of the final state.
pub fn restrict(base: &Value, changes: &Map<String, Value>) -> Value {
    let mut out = Map::new();
    for pointer in changes.keys() {
        let Some(segs) = pointer_segments(pointer) else {
            continue;
        };
        match segs.as_slice() {
            [k] => {
                if let Some(v) = base.get(k) {
                    out.insert(k.clone(), v.clone());
                }
            }
            [k, id] => {
                if let Some(v) = base.get(k).and_then(|t| t.get(id)) {
                    out.entry(k.clone())
                        .or_insert_with(|| Value::Object(Map::new()))
                        .as_object_mut()
                        .map(|t| t.insert(id.clone(), v.clone()));
                }
            }
            _ => {}
        }
    }
    Value::Object(out)
}

/// The changed part of a trial's states: (initial, final) restricted to what changed, for views
/// that hold many trials (reports, re-scored runs) and need only the difference.
pub fn lean(initial: &Value, final_state: &Value) -> (Value, Value) {
    let c = changes(initial, final_state);
    let before = restrict(initial, &c);
    let after = apply(before.clone(), &c);
    (before, after)
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_state_is_large_exactly_when_its_json_passes_the_limit() {
        for len in [
            0,
            INLINE_STATE_LIMIT - 2,
            INLINE_STATE_LIMIT - 1,
            INLINE_STATE_LIMIT * 3,
        ] {
            let v = serde_json::Value::String("x".repeat(len));
            let text = serde_json::to_vec(&v).unwrap();
            assert_eq!(
                super::is_large(&v),
                text.len() > INLINE_STATE_LIMIT,
                "{len}"
            );
        }
    }

    use super::*;
    use serde_json::json;

    #[test]
    fn changes_applied_to_the_base_give_the_final_state() {
        let before = json!({"t": {"a": 1, "b": {"x": 2}, "gone": 3}, "flag": true, "old": 1,
                            "odd/key": {"r~1": 1}});
        let after = json!({"t": {"a": 1, "b": {"x": 5}, "new": 4}, "flag": false, "extra": [1],
                           "odd/key": {"r~1": 2}});
        let c = changes(&before, &after);
        assert_eq!(apply(before.clone(), &c), after);
        assert_eq!(c.len(), 7, "{c:?}");
        assert!(changes(&after, &after).is_empty());
        let (b, a) = lean(&before, &after);
        assert_eq!(changes(&b, &a), c);
        assert!(b.get("odd/key").is_some() && b["t"].get("a").is_none());
    }
}
