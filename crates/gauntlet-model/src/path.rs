//! Paths into a JSON state: the keys of `expected_outcome` and the paths of world handlers.
//!
//! A key that starts with `/` is a JSON Pointer (RFC 6901). Any other key is first looked up as a
//! literal top-level key (the seeds' flat keys, which may contain dots), then as a dotted path
//! (`incidents.INC-1.status`, numeric segments index arrays).

use serde_json::Value;

/// Finds the value a key designates in `state`.
pub fn resolve<'a>(state: &'a Value, key: &str) -> Option<&'a Value> {
    if key.starts_with('/') || key.is_empty() {
        return state.pointer(key);
    }
    if let Some(v) = state.get(key) {
        return Some(v);
    }
    walk_dotted(state, key.split('.'))
}

/// Follows the segments of a dotted path down from `node`: keys of objects, indexes of arrays.
pub(crate) fn walk_dotted<'a, 's>(
    node: &'a Value,
    mut segments: impl Iterator<Item = &'s str>,
) -> Option<&'a Value> {
    segments.try_fold(node, |node, seg| match node {
        Value::Object(map) => map.get(seg),
        Value::Array(items) => seg.parse::<usize>().ok().and_then(|i| items.get(i)),
        _ => None,
    })
}

/// The JSON Pointer a case's key designates, read against the states the trial starts from
/// (`layers`, the first one that has a key winning: a case's `initial_state` over its world's).
///
/// A pointer stays as written. A key that is a top-level key of a layer is that key
/// (`"a.b"` → `/a.b`). Any other key is a dotted path, followed a segment at a time: where a run
/// of dot-joined segments names a key of the state (a record id with a dot, `v1.2`), the
/// longest such run is one segment; where the state has nothing yet (a record the trial
/// creates), every dot separates. So `tickets.TCK-101.status` and `/tickets/TCK-101/status`
/// are one path, and every evaluator sees only the pointer.
pub fn to_pointer(layers: &[&Value], key: &str) -> String {
    if key.starts_with('/') || key.is_empty() {
        return key.to_owned();
    }
    if layers.iter().any(|l| l.get(key).is_some()) {
        return format!("/{}", escape_segment(key));
    }
    let segments: Vec<&str> = key.split('.').collect();
    let mut nodes: Vec<&Value> = layers.to_vec();
    let mut out = String::with_capacity(key.len() + 1);
    let mut i = 0;
    while i < segments.len() {
        // The longest run of segments, joined by dots, that some layer has here.
        let found = (i + 1..=segments.len()).rev().find_map(|j| {
            let name = segments[i..j].join(".");
            let next: Vec<&Value> = nodes.iter().filter_map(|n| child(n, &name)).collect();
            (!next.is_empty()).then_some((j, name, next))
        });
        let (j, name, next) = found.unwrap_or_else(|| (i + 1, segments[i].to_owned(), Vec::new()));
        out.push('/');
        out.push_str(&escape_segment(&name));
        nodes = next;
        i = j;
    }
    out
}

fn child<'a>(node: &'a Value, name: &str) -> Option<&'a Value> {
    match node {
        Value::Object(map) => map.get(name),
        Value::Array(items) => name.parse::<usize>().ok().and_then(|i| items.get(i)),
        _ => None,
    }
}

/// Escapes one segment for use in a JSON Pointer (`~` → `~0`, `/` → `~1`).
pub fn escape_segment(segment: &str) -> String {
    segment.replace('~', "~0").replace('/', "~1")
}

/// Why `pointer` is not a JSON Pointer (RFC 6901): a `~` not followed by `0` or `1`.
pub fn pointer_problem(pointer: &str) -> Option<String> {
    let bytes = pointer.as_bytes();
    let bad = bytes
        .iter()
        .enumerate()
        .any(|(i, b)| *b == b'~' && !matches!(bytes.get(i + 1), Some(b'0' | b'1')));
    bad.then(|| {
        format!(
            "`{pointer}` is not a valid JSON Pointer: `~` must be followed by 0 or 1 (write `~0` for a `~` and `~1` for a `/` inside a key)"
        )
    })
}

/// Splits a JSON Pointer into unescaped segments; `None` when it does not start with `/`.
pub fn pointer_segments(pointer: &str) -> Option<Vec<String>> {
    if pointer.is_empty() {
        return Some(Vec::new());
    }
    let rest = pointer.strip_prefix('/')?;
    Some(
        rest.split('/')
            .map(|s| s.replace("~1", "/").replace("~0", "~"))
            .collect(),
    )
}

/// Compact JSON with object keys sorted at every depth, so equal values give equal text
/// (side-effect keys, cassette keys, duplicate calls; Python's `json.dumps(sort_keys=True)` up
/// to spacing). Written straight out, without building a sorted copy of the value.
pub fn canonical_json(v: &Value) -> String {
    // Keys and scalars are serialised straight into the buffer (no string per key or number).
    fn write(v: &Value, out: &mut Vec<u8>) {
        match v {
            Value::Object(m) => {
                let mut entries: Vec<(&String, &Value)> = m.iter().collect();
                entries.sort_unstable_by(|a, b| a.0.cmp(b.0));
                out.push(b'{');
                for (i, (k, x)) in entries.into_iter().enumerate() {
                    if i > 0 {
                        out.push(b',');
                    }
                    let _ = serde_json::to_writer(&mut *out, k);
                    out.push(b':');
                    write(x, out);
                }
                out.push(b'}');
            }
            Value::Array(a) => {
                out.push(b'[');
                for (i, x) in a.iter().enumerate() {
                    if i > 0 {
                        out.push(b',');
                    }
                    write(x, out);
                }
                out.push(b']');
            }
            other => {
                let _ = serde_json::to_writer(&mut *out, other);
            }
        }
    }
    let mut out = Vec::with_capacity(64);
    write(v, &mut out);
    // serde_json writes UTF-8 only.
    String::from_utf8(out).unwrap_or_default()
}

/// A JSON value compared and hashed as its [`canonical_json`] text would be (objects by key
/// whatever their order, numbers as written: `20` and `20.0` differ), without writing it out.
#[derive(Debug, Clone, Copy)]
pub struct Canonical<'a>(pub &'a Value);

impl PartialEq for Canonical<'_> {
    fn eq(&self, other: &Self) -> bool {
        fn eq(a: &Value, b: &Value) -> bool {
            match (a, b) {
                (Value::Null, Value::Null) => true,
                (Value::Bool(x), Value::Bool(y)) => x == y,
                (Value::Number(x), Value::Number(y)) => {
                    match (x.as_f64(), x.is_f64(), y.is_f64()) {
                        // Written alike only when the same kind and, for floats, the same bits
                        // (`0.0` and `-0.0` are written apart).
                        (Some(fx), true, true) => {
                            y.as_f64().is_some_and(|fy| fx.to_bits() == fy.to_bits())
                        }
                        (_, false, false) => x == y,
                        _ => false,
                    }
                }
                (Value::String(x), Value::String(y)) => x == y,
                (Value::Array(x), Value::Array(y)) => {
                    x.len() == y.len() && x.iter().zip(y).all(|(a, b)| eq(a, b))
                }
                (Value::Object(x), Value::Object(y)) => {
                    x.len() == y.len() && x.iter().all(|(k, a)| y.get(k).is_some_and(|b| eq(a, b)))
                }
                _ => false,
            }
        }
        eq(self.0, other.0)
    }
}

impl Eq for Canonical<'_> {}

impl std::hash::Hash for Canonical<'_> {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        state.write_u64(canonical_hash(self.0));
    }
}

/// A hash of the value consistent with [`Canonical`]'s equality: an object's entries are
/// combined whatever their order.
fn canonical_hash(v: &Value) -> u64 {
    use std::hash::{Hash, Hasher};
    // Not keyed: these hashes only group a trial's own calls.
    let mut h = rustc_hash::FxHasher::default();
    match v {
        Value::Null => 0u8.hash(&mut h),
        Value::Bool(b) => (1u8, b).hash(&mut h),
        Value::Number(n) if n.is_f64() => (2u8, n.as_f64().map(f64::to_bits)).hash(&mut h),
        Value::Number(n) => (3u8, n.as_u64(), n.as_i64()).hash(&mut h),
        Value::String(s) => (5u8, s).hash(&mut h),
        Value::Array(a) => {
            (6u8, a.len()).hash(&mut h);
            for x in a {
                canonical_hash(x).hash(&mut h);
            }
        }
        Value::Object(m) => {
            let entries = m.iter().fold(0u64, |acc, (k, x)| {
                let mut e = rustc_hash::FxHasher::default();
                (k, canonical_hash(x)).hash(&mut e);
                acc.wrapping_add(e.finish())
            });
            (7u8, m.len(), entries).hash(&mut h);
        }
    }
    h.finish()
}

/// Equality of parsed JSON as Python's `==` sees it (the reference evaluators compare parsed
/// JSON in Python): numbers by value (`20 == 20.0`), booleans as the numbers 1 and 0
/// (`True == 1`), arrays in order, objects by their keys whatever the order.
pub fn json_eq(a: &Value, b: &Value) -> bool {
    eq_with(a, b, true)
}

/// The same value: numbers by value (`46 == 46.0`, which a script world's round trip through
/// JavaScript turns one into the other), everything else as written (`true != 1`).
pub fn same_value(a: &Value, b: &Value) -> bool {
    eq_with(a, b, false)
}

fn eq_with(a: &Value, b: &Value, bools_are_numbers: bool) -> bool {
    let as_number = |v: &Value| match v {
        Value::Number(n) => n.as_f64(),
        Value::Bool(b) if bools_are_numbers => Some(f64::from(u8::from(*b))),
        _ => None,
    };
    match (a, b) {
        (Value::Number(_) | Value::Bool(_), Value::Number(_) | Value::Bool(_)) => {
            as_number(a).is_some_and(|x| as_number(b) == Some(x)) || a == b
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len()
                && x.iter()
                    .zip(y)
                    .all(|(a, b)| eq_with(a, b, bools_are_numbers))
        }
        (Value::Object(x), Value::Object(y)) => {
            if x.len() != y.len() {
                return false;
            }
            // Objects written in the same key order (nearly always: a state and its copy) are
            // compared side by side, without a lookup per key; the first key out of order falls
            // back to lookups.
            for ((k, v), (l, w)) in x.iter().zip(y) {
                if k != l {
                    return x
                        .iter()
                        .all(|(k, v)| y.get(k).is_some_and(|w| eq_with(v, w, bools_are_numbers)));
                }
                if !eq_with(v, w, bools_are_numbers) {
                    return false;
                }
            }
            true
        }
        _ => a == b,
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn canonical_json_sorts_keys_at_every_depth_as_python_does() {
        // json.dumps(v, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        let v = serde_json::json!({"b": [1, 2.5, {"z": null, "a": "é\"\n\\"}], "a": true,
                                   "c": -0.001, "é": {"y": 1}});
        assert_eq!(
            super::canonical_json(&v),
            r#"{"a":true,"b":[1,2.5,{"a":"é\"\n\\","z":null}],"c":-0.001,"é":{"y":1}}"#
        );
    }

    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    /// Small JSON values whose leaves collide often: the same keys in other orders, `1` and
    /// `1.0`, `0.0` and `-0.0`.
    fn small_json() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            (0i64..3).prop_map(|n| json!(n)),
            (-1i64..1).prop_map(|n| json!(n as f64)),
            Just(json!(-0.0)),
            prop::sample::select(vec!["a", "b", "é\"", ""]).prop_map(|s| json!(s)),
        ];
        leaf.prop_recursive(3, 24, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..3).prop_map(Value::Array),
                prop::collection::vec((prop::sample::select(vec!["x", "y", "z"]), inner), 0..4)
                    .prop_map(|entries| {
                        Value::Object(
                            entries
                                .into_iter()
                                .map(|(k, v)| (k.to_owned(), v))
                                .collect(),
                        )
                    }),
            ]
        })
    }

    fn hash_of(v: &Value) -> u64 {
        use std::hash::{BuildHasher, BuildHasherDefault};
        BuildHasherDefault::<std::hash::DefaultHasher>::default().hash_one(Canonical(v))
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]
        /// `Canonical` equality is equality of the canonical texts, and equal values hash alike.
        #[test]
        fn canonical_compares_as_the_canonical_text_does(a in small_json(), b in small_json()) {
            let same_text = canonical_json(&a) == canonical_json(&b);
            prop_assert_eq!(Canonical(&a) == Canonical(&b), same_text);
            if same_text {
                prop_assert_eq!(hash_of(&a), hash_of(&b));
            }
            // The same value with its objects' keys reversed is the same canonical value.
            let reversed = reverse_keys(&a);
            prop_assert!(Canonical(&a) == Canonical(&reversed));
            prop_assert_eq!(hash_of(&a), hash_of(&reversed));
        }
    }

    fn reverse_keys(v: &Value) -> Value {
        match v {
            Value::Object(m) => Value::Object(
                m.iter()
                    .rev()
                    .map(|(k, x)| (k.clone(), reverse_keys(x)))
                    .collect(),
            ),
            Value::Array(a) => Value::Array(a.iter().map(reverse_keys).collect()),
            other => other.clone(),
        }
    }

    #[test]
    fn same_value_compares_numbers_by_value_but_not_booleans() {
        assert!(same_value(&json!({"p": [46.0]}), &json!({"p": [46]})));
        assert!(!same_value(&json!(true), &json!(1)));
        assert!(json_eq(&json!(true), &json!(1)));
        assert!(same_value(&json!(false), &json!(false)));
        assert!(!same_value(&json!(0.5), &json!(1)));
    }

    #[test]
    fn flat_keys_win_over_dotted_paths() {
        let state = json!({"a.b": 1, "a": {"b": 2}});
        assert_eq!(resolve(&state, "a.b"), Some(&json!(1)));
        assert_eq!(resolve(&state, "/a/b"), Some(&json!(2)));
    }

    #[test]
    fn keys_become_pointers_as_resolve_reads_them() {
        let world = json!({"tickets": {"TCK-101": {"status": "open"}, "v1.2": {"n": 1}}, "a.b": 1});
        let case = json!({"extra": {"x": 1}});
        let layers = [&case, &world];
        for (key, want) in [
            ("/tickets/TCK-101/status", "/tickets/TCK-101/status"),
            ("tickets.TCK-101.status", "/tickets/TCK-101/status"),
            ("tickets.v1.2.n", "/tickets/v1.2/n"),
            ("a.b", "/a.b"),
            ("extra.x", "/extra/x"),
            ("tickets.TCK-999.status", "/tickets/TCK-999/status"),
            ("logs./var/log", "/logs/~1var~1log"),
        ] {
            assert_eq!(to_pointer(&layers, key), want, "{key}");
        }
        // Wherever `resolve` finds a value by the dotted key, the pointer finds the same one.
        for key in ["tickets.TCK-101.status", "a.b", "tickets.TCK-101"] {
            let p = to_pointer(&[&world], key);
            assert_eq!(resolve(&world, &p), resolve(&world, key), "{key}");
        }
    }

    #[test]
    fn dotted_paths_index_arrays() {
        let state = json!({"items": [{"id": "x"}]});
        assert_eq!(resolve(&state, "items.0.id"), Some(&json!("x")));
        assert_eq!(resolve(&state, "items.1.id"), None);
    }

    #[test]
    fn pointer_segments_unescape() {
        assert_eq!(
            pointer_segments("/logs/~1var~1log"),
            Some(vec!["logs".to_owned(), "/var/log".to_owned()])
        );
        assert_eq!(escape_segment("/var/log~"), "~1var~1log~0");
    }
}
