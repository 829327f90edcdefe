//! A trial's final state without a copy of the state it started from: the shared initial state
//! and the entries the trial changed ([`ChangedState`]), and what evaluators read of a final
//! state, whole or so ([`StateRef`]).
//!
//! A world of megabytes whose trial changes a few records would otherwise be copied whole into
//! each trial's final state, then compared whole with its initial state (by the store and by
//! `state_unchanged_elsewhere`); kept this way, a trial costs what it changed. Every answer is
//! the one the whole state would give: [`ChangedState::to_value`] is that state, key order
//! included, and [`ChangedState::changes`] is `stored_state::changes` of it.

use std::borrow::Cow;
use std::collections::HashMap;
use std::collections::hash_map::Entry as Slot;
use std::sync::Arc;

use serde::{Serialize, Serializer};
use serde_json::{Map, Value};

use crate::path::{escape_segment, same_value, walk_dotted};
use crate::stored_state::entry_changes;

/// A final state as the state the trial started from (shared, never copied) and the top-level
/// entries and records it changed, applied as `Map::insert` and `Map::shift_remove` apply them
/// to the whole state: a key set again keeps its place, a key added (or removed and added again)
/// goes last.
#[derive(Debug, Clone)]
pub struct ChangedState {
    initial: Arc<Value>,
    entries: Layer<Entry>,
}

/// A changed top-level entry.
#[derive(Debug, Clone)]
enum Entry {
    /// Set whole.
    Whole(Value),
    /// A collection (an object) of the initial state with some of its records changed.
    Records(Layer<Value>),
}

/// Changes to one JSON object, kept apart from it: per changed key, its value now (`None`:
/// removed) and, for a key that went last (added, or removed and added again), its turn among
/// those.
#[derive(Debug, Clone)]
struct Layer<T> {
    changed: HashMap<String, Changed<T>>,
    added: u64,
}

#[derive(Debug, Clone)]
struct Changed<T> {
    value: Option<T>,
    last: Option<u64>,
}

impl<T> Default for Layer<T> {
    fn default() -> Self {
        Layer {
            changed: HashMap::new(),
            added: 0,
        }
    }
}

/// A key's value now, seen through a layer.
enum Now<'a, T> {
    /// The object's own.
    Base(&'a Value),
    /// Set by the layer.
    Set(&'a T),
}

impl<T> Layer<T> {
    /// Whether `key` is there now (`in_base`: it is in the object).
    fn present(&self, key: &str, in_base: bool) -> bool {
        self.changed.get(key).map_or(in_base, |c| c.value.is_some())
    }

    /// The slot of a key there now, to change its value in place; `None` when it is not there.
    fn get_mut(&mut self, key: &str) -> Option<&mut T> {
        self.changed.get_mut(key).and_then(|c| c.value.as_mut())
    }

    /// Sets `key` as `Map::insert` does.
    fn insert(&mut self, key: String, value: T, in_base: bool) {
        let turn = &mut self.added;
        let mut next = || {
            *turn += 1;
            Some(*turn)
        };
        match self.changed.entry(key) {
            Slot::Occupied(mut o) => {
                let c = o.get_mut();
                if c.value.is_none() {
                    c.last = next();
                }
                c.value = Some(value);
            }
            Slot::Vacant(v) => {
                let last = if in_base { None } else { next() };
                v.insert(Changed {
                    value: Some(value),
                    last,
                });
            }
        }
    }

    /// Removes `key` as `Map::shift_remove` does.
    fn remove(&mut self, key: String, in_base: bool) {
        match self.changed.entry(key) {
            Slot::Occupied(mut o) => {
                let c = o.get_mut();
                c.value = None;
                c.last = None;
            }
            Slot::Vacant(v) => {
                if in_base {
                    v.insert(Changed {
                        value: None,
                        last: None,
                    });
                }
            }
        }
    }

    /// The value of `key` now: `None` when it is not there.
    fn get<'a>(&'a self, base: &'a Map<String, Value>, key: &str) -> Option<Now<'a, T>> {
        match self.changed.get(key) {
            Some(c) => c.value.as_ref().map(Now::Set),
            None => base.get(key).map(Now::Base),
        }
    }

    /// The object's entries now, in order: its own keys still in place, then those gone last.
    fn entries<'a>(
        &'a self,
        base: &'a Map<String, Value>,
    ) -> impl Iterator<Item = (&'a str, Now<'a, T>)> {
        let in_place = base.iter().filter_map(|(k, v)| match self.changed.get(k) {
            None => Some((k.as_str(), Now::Base(v))),
            Some(Changed {
                value: Some(t),
                last: None,
            }) => Some((k.as_str(), Now::Set(t))),
            Some(_) => None,
        });
        in_place.chain(self.last())
    }

    /// The keys gone last, in their turn.
    fn last(&self) -> impl Iterator<Item = (&str, Now<'_, T>)> {
        let mut last: Vec<(u64, &str, &T)> = self
            .changed
            .iter()
            .filter_map(|(k, c)| Some((c.last?, k.as_str(), c.value.as_ref()?)))
            .collect();
        last.sort_unstable_by_key(|(turn, ..)| *turn);
        last.into_iter().map(|(_, k, t)| (k, Now::Set(t)))
    }

    /// Keys of the object that are not there now, in its order.
    fn removed<'a>(&'a self, base: &'a Map<String, Value>) -> impl Iterator<Item = &'a str> {
        let any = self.changed.values().any(|c| c.value.is_none());
        base.keys()
            .filter(move |k| any && self.changed.get(*k).is_some_and(|c| c.value.is_none()))
            .map(String::as_str)
    }
}

/// A top-level entry now, as reads see it.
enum Top<'a> {
    /// A value, whole.
    Plain(&'a Value),
    /// A collection of the initial state seen through its changed records.
    Records(&'a Map<String, Value>, &'a Layer<Value>),
}

impl<'a> Top<'a> {
    fn to_value(&self) -> Cow<'a, Value> {
        match self {
            Top::Plain(v) => Cow::Borrowed(*v),
            Top::Records(base, layer) => Cow::Owned(records_value(base, layer)),
        }
    }
}

/// A collection with its changed records applied.
fn records_value(base: &Map<String, Value>, layer: &Layer<Value>) -> Value {
    Value::Object(
        layer
            .entries(base)
            .map(|(k, now)| {
                let v = match now {
                    Now::Base(v) | Now::Set(v) => v.clone(),
                };
                (k.to_owned(), v)
            })
            .collect(),
    )
}

fn unescape(segment: &str) -> Cow<'_, str> {
    if segment.contains('~') {
        Cow::Owned(segment.replace("~1", "/").replace("~0", "~"))
    } else {
        Cow::Borrowed(segment)
    }
}

impl ChangedState {
    /// The state `initial`, unchanged yet.
    pub fn new(initial: Arc<Value>) -> ChangedState {
        ChangedState {
            initial,
            entries: Layer::default(),
        }
    }

    /// The state the trial started from.
    pub fn initial(&self) -> &Arc<Value> {
        &self.initial
    }

    /// Whether nothing was set or removed.
    pub fn is_unchanged(&self) -> bool {
        self.entries.changed.is_empty()
    }

    fn base(&self) -> Option<&Map<String, Value>> {
        self.initial.as_object()
    }

    /// Sets the top-level entry `key` (`None`: removes it). Nothing happens when the state is
    /// not an object, as nothing can be set in it.
    pub fn set_entry(&mut self, key: String, value: Option<Value>) {
        let Some(base) = self.initial.as_object() else {
            return;
        };
        let in_base = base.contains_key(&key);
        match value {
            Some(v) => self.entries.insert(key, Entry::Whole(v), in_base),
            None => self.entries.remove(key, in_base),
        }
    }

    /// Sets record `key` of the collection `coll` as it is now (`None`: removes it). Nothing
    /// happens when the collection is not an object now, as nothing can be set in it.
    pub fn set_record(&mut self, coll: &str, key: String, value: Option<Value>) {
        let Some(base) = self.initial.as_object() else {
            return;
        };
        if let Some(entry) = self.entries.get_mut(coll) {
            match entry {
                Entry::Whole(Value::Object(records)) => match value {
                    Some(v) => {
                        records.insert(key, v);
                    }
                    None => {
                        records.shift_remove(&key);
                    }
                },
                Entry::Whole(_) => {}
                Entry::Records(layer) => set_in(layer, base.get(coll), key, value),
            }
            return;
        }
        if !self.entries.present(coll, base.contains_key(coll)) {
            return;
        }
        let Some(Value::Object(_)) = base.get(coll) else {
            return;
        };
        let mut layer = Layer::default();
        set_in(&mut layer, base.get(coll), key, value);
        self.entries
            .insert(coll.to_owned(), Entry::Records(layer), true);
    }

    /// Whether the top-level entry `coll` is an object now: a collection whose records can be
    /// set.
    pub fn has_collection(&self, coll: &str) -> bool {
        matches!(
            self.top(coll),
            Some(Top::Records(..) | Top::Plain(Value::Object(_)))
        )
    }

    fn top(&self, key: &str) -> Option<Top<'_>> {
        let base = self.base()?;
        Some(match self.entries.get(base, key)? {
            Now::Base(v) | Now::Set(Entry::Whole(v)) => Top::Plain(v),
            Now::Set(Entry::Records(layer)) => Top::Records(base.get(key)?.as_object()?, layer),
        })
    }

    /// The whole state: a copy of the initial state with the changes applied.
    pub fn to_value(&self) -> Value {
        let Some(base) = self.base() else {
            return (*self.initial).clone();
        };
        Value::Object(
            self.entries
                .entries(base)
                .map(|(k, now)| {
                    let v = match now {
                        Now::Base(v) | Now::Set(Entry::Whole(v)) => v.clone(),
                        Now::Set(Entry::Records(layer)) => base
                            .get(k)
                            .and_then(Value::as_object)
                            .map_or(Value::Null, |b| records_value(b, layer)),
                    };
                    (k.to_owned(), v)
                })
                .collect(),
        )
    }

    /// What `path::resolve` finds at `key` in the whole state, reading only what it needs (a
    /// whole collection a trial changed, or the whole state, is built when asked for).
    pub fn resolve(&self, key: &str) -> Option<Cow<'_, Value>> {
        if self.is_unchanged() || self.base().is_none() {
            return crate::path::resolve(&self.initial, key).map(Cow::Borrowed);
        }
        if key.is_empty() {
            return Some(Cow::Owned(self.to_value()));
        }
        if let Some(rest) = key.strip_prefix('/') {
            let (first, after) = match rest.find('/') {
                Some(at) => (&rest[..at], Some(&rest[at..])),
                None => (rest, None),
            };
            let top = self.top(&unescape(first))?;
            let Some(after) = after else {
                return Some(top.to_value());
            };
            return match top {
                Top::Plain(v) => v.pointer(after).map(Cow::Borrowed),
                Top::Records(base, layer) => {
                    let after = &after[1..];
                    let (id, deeper) = match after.find('/') {
                        Some(at) => (&after[..at], &after[at..]),
                        None => (after, ""),
                    };
                    record(base, layer, &unescape(id))?
                        .pointer(deeper)
                        .map(Cow::Borrowed)
                }
            };
        }
        if let Some(top) = self.top(key) {
            return Some(top.to_value());
        }
        let mut segs = key.split('.');
        let top = self.top(segs.next()?)?;
        match top {
            Top::Plain(v) => walk_dotted(v, segs).map(Cow::Borrowed),
            Top::Records(base, layer) => match segs.next() {
                None => Some(top.to_value()),
                Some(id) => walk_dotted(record(base, layer, id)?, segs).map(Cow::Borrowed),
            },
        }
    }

    /// The changes that turn the initial state into this one: `stored_state::changes(initial,
    /// whole)`, entry for entry and in its order, found by looking at the changed entries only.
    pub fn changes(&self) -> Map<String, Value> {
        let mut out = Map::new();
        let Some(base) = self.base() else {
            return out;
        };
        for (k, now) in self.entries.entries(base) {
            let entry = match now {
                Now::Base(_) => continue,
                Now::Set(entry) => entry,
            };
            let before = base.get(k);
            match entry {
                Entry::Whole(after) => entry_changes(k, before, after, &mut out),
                Entry::Records(layer) => {
                    let Some(Value::Object(records)) = before else {
                        continue;
                    };
                    let p = escape_segment(k);
                    for (id, now) in layer.entries(records) {
                        let Now::Set(rec) = now else { continue };
                        if !records.get(id).is_some_and(|r| same_value(r, rec)) {
                            out.insert(format!("/{p}/{}", escape_segment(id)), rec.clone());
                        }
                    }
                    for id in layer.removed(records) {
                        out.insert(format!("/{p}/{}", escape_segment(id)), Value::Null);
                    }
                }
            }
        }
        for k in self.entries.removed(base) {
            out.insert(format!("/{}", escape_segment(k)), Value::Null);
        }
        out
    }
}

/// Sets a record in a layer over the collection `base` (an object).
fn set_in(layer: &mut Layer<Value>, base: Option<&Value>, key: String, value: Option<Value>) {
    let in_base = base
        .and_then(Value::as_object)
        .is_some_and(|b| b.contains_key(&key));
    match value {
        Some(v) => layer.insert(key, v, in_base),
        None => layer.remove(key, in_base),
    }
}

/// A record now, through a layer.
fn record<'a>(
    base: &'a Map<String, Value>,
    layer: &'a Layer<Value>,
    id: &str,
) -> Option<&'a Value> {
    match layer.get(base, id)? {
        Now::Base(v) | Now::Set(v) => Some(v),
    }
}

/// A final state as evaluators read it: whole, or as its initial state and what changed.
#[derive(Debug, Clone, Copy)]
pub enum StateRef<'a> {
    /// The state itself.
    Whole(&'a Value),
    /// The initial state and the trial's changes.
    Changed(&'a ChangedState),
}

impl<'a> From<&'a Value> for StateRef<'a> {
    fn from(v: &'a Value) -> Self {
        StateRef::Whole(v)
    }
}

impl<'a> StateRef<'a> {
    /// What `path::resolve` finds at `key` in the whole state.
    pub fn resolve(self, key: &str) -> Option<Cow<'a, Value>> {
        match self {
            StateRef::Whole(v) => crate::path::resolve(v, key).map(Cow::Borrowed),
            StateRef::Changed(c) => c.resolve(key),
        }
    }

    /// `stored_state::changes(initial, whole)`; without a look at what did not change when
    /// `initial` is the very state this one was changed from.
    pub fn changes_from(self, initial: &Value) -> Map<String, Value> {
        match self {
            StateRef::Changed(c) if std::ptr::eq(initial, &**c.initial()) => c.changes(),
            _ => crate::stored_state::changes(initial, &self.to_value()),
        }
    }

    /// The whole state (built, for a changed one).
    pub fn to_value(self) -> Cow<'a, Value> {
        match self {
            StateRef::Whole(v) => Cow::Borrowed(v),
            StateRef::Changed(c) => Cow::Owned(c.to_value()),
        }
    }
}

impl Serialize for StateRef<'_> {
    /// As the whole state.
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.to_value().serialize(s)
    }
}

/// A trial's final state as its world gives it back.
#[derive(Debug, Clone)]
pub enum FinalState {
    /// The state itself.
    Whole(Value),
    /// The initial state and the trial's changes.
    Changed(ChangedState),
}

impl FinalState {
    /// The state to read.
    pub fn as_ref(&self) -> StateRef<'_> {
        match self {
            FinalState::Whole(v) => StateRef::Whole(v),
            FinalState::Changed(c) => StateRef::Changed(c),
        }
    }

    /// The whole state.
    pub fn into_value(self) -> Value {
        match self {
            FinalState::Whole(v) => v,
            FinalState::Changed(c) => c.to_value(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    /// A change, as a script world reports it: a top-level entry (`coll` empty) or a record.
    #[derive(Debug, Clone)]
    struct Change {
        coll: String,
        key: String,
        value: Option<Value>,
    }

    /// The changes applied to a copy of the whole state, as a script world's final state was
    /// built before: `insert` and `shift_remove` on the root, then on the collection now there.
    fn applied_whole(initial: &Value, changes: &[Change]) -> Value {
        let mut state = initial.clone();
        for c in changes {
            let target = if c.coll.is_empty() {
                Some(&mut state)
            } else {
                state.get_mut(&c.coll)
            };
            let Some(Value::Object(target)) = target else {
                continue;
            };
            match &c.value {
                Some(v) => {
                    target.insert(c.key.clone(), v.clone());
                }
                None => {
                    target.shift_remove(&c.key);
                }
            }
        }
        state
    }

    fn applied(initial: &Arc<Value>, changes: &[Change]) -> ChangedState {
        let mut state = ChangedState::new(Arc::clone(initial));
        for c in changes {
            if c.coll.is_empty() {
                state.set_entry(c.key.clone(), c.value.clone());
            } else {
                state.set_record(&c.coll, c.key.clone(), c.value.clone());
            }
        }
        state
    }

    /// Paths an evaluator might read: pointers and dotted paths one to three levels deep, to
    /// what is there and what is not.
    fn paths(whole: &Value, initial: &Value) -> Vec<String> {
        let mut out = vec![String::new(), "/".into(), "/nope".into(), "a.b".into()];
        for state in [whole, initial] {
            for (k, v) in state.as_object().into_iter().flatten() {
                let p = escape_segment(k);
                out.extend([
                    format!("/{p}"),
                    k.clone(),
                    format!("/{p}/x"),
                    format!("{k}.x"),
                ]);
                for (id, r) in v.as_object().into_iter().flatten() {
                    let q = escape_segment(id);
                    out.extend([format!("/{p}/{q}"), format!("{k}.{id}")]);
                    out.extend([
                        format!("/{p}/{q}/n"),
                        format!("{k}.{id}.n"),
                        format!("/{p}/{q}/0"),
                    ]);
                    if r.is_array() {
                        out.push(format!("{k}.{id}.0"));
                    }
                }
                if v.is_array() {
                    out.extend([format!("/{p}/0"), format!("{k}.1")]);
                }
            }
        }
        out
    }

    fn check(initial: Value, changes: &[Change]) -> Result<(), TestCaseError> {
        let initial = Arc::new(initial);
        let whole = applied_whole(&initial, changes);
        let state = applied(&initial, changes);
        // The same state, key order included.
        prop_assert_eq!(
            serde_json::to_string(&state.to_value()).unwrap(),
            serde_json::to_string(&whole).unwrap()
        );
        // The same changes, in the same order.
        let full = crate::stored_state::changes(&initial, &whole);
        prop_assert_eq!(
            serde_json::to_string(&state.changes()).unwrap(),
            serde_json::to_string(&full).unwrap()
        );
        let r = StateRef::Changed(&state);
        prop_assert_eq!(r.changes_from(&initial), full.clone());
        prop_assert_eq!(
            r.changes_from(&json!({"other": 1})),
            crate::stored_state::changes(&json!({"other": 1}), &whole)
        );
        for p in paths(&whole, &initial) {
            let want = crate::path::resolve(&whole, &p);
            let got = state.resolve(&p);
            prop_assert_eq!(got.as_deref(), want, "path {:?}", p);
        }
        Ok(())
    }

    /// Keys that collide often, `/` and `~` among them, so pointers need escapes.
    fn key() -> impl Strategy<Value = String> {
        prop::sample::select(vec!["u", "r", "f", "a/b", "t~1", "n", "0"]).prop_map(str::to_owned)
    }

    fn leaf() -> impl Strategy<Value = Value> {
        prop_oneof![
            Just(Value::Null),
            (0i64..3).prop_map(|n| json!(n)),
            (0i64..3).prop_map(|n| json!(n as f64)),
            Just(json!("s")),
            Just(json!([1, {"n": 2}])),
        ]
    }

    fn record() -> impl Strategy<Value = Value> {
        prop_oneof![
            leaf(),
            prop::collection::vec((key(), leaf()), 0..3)
                .prop_map(|e| Value::Object(e.into_iter().collect())),
        ]
    }

    fn collection() -> impl Strategy<Value = Value> {
        prop_oneof![
            1 => leaf(),
            4 => prop::collection::vec((key(), record()), 0..5)
                .prop_map(|e| Value::Object(e.into_iter().collect())),
        ]
    }

    fn state() -> impl Strategy<Value = Value> {
        prop_oneof![
            1 => leaf(),
            8 => prop::collection::vec((key(), collection()), 0..5)
                .prop_map(|e| Value::Object(e.into_iter().collect())),
        ]
    }

    fn change() -> impl Strategy<Value = Change> {
        let value = prop_oneof![1 => Just(None), 3 => collection().prop_map(Some)];
        (
            prop_oneof![1 => Just(String::new()), 3 => key()],
            key(),
            value,
        )
            .prop_map(|(coll, key, value)| Change { coll, key, value })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]
        /// Whatever a trial changes, in whatever order (a key set twice, removed and added
        /// again, a collection replaced and then changed record by record), the changed state
        /// reads as the whole state would.
        #[test]
        fn a_changed_state_reads_as_the_whole_state_would(
            initial in state(),
            changes in prop::collection::vec(change(), 0..8),
        ) {
            check(initial, &changes)?;
        }
    }

    #[test]
    fn a_record_removed_and_added_again_goes_last_as_in_the_whole_state() {
        let initial = json!({"t": {"a": 1, "b": 2, "c": 3}, "s": 1, "z": {"q": 1}});
        let change = |coll: &str, key: &str, value: Option<Value>| Change {
            coll: coll.into(),
            key: key.into(),
            value,
        };
        let changes = [
            change("t", "a", None),
            change("t", "a", Some(json!(1))),
            change("t", "b", Some(json!(2.0))),
            change("", "s", None),
            change("", "s", Some(json!(1))),
            change("t", "d", Some(json!(4))),
            change("z", "q", None),
        ];
        check(initial.clone(), &changes).unwrap();
        let state = applied(&Arc::new(initial), &changes);
        assert_eq!(
            serde_json::to_string(&state.to_value()).unwrap(),
            r#"{"t":{"b":2.0,"c":3,"a":1,"d":4},"z":{},"s":1}"#
        );
        // `2.0` is `2`, and `a` and `s` are back as they were: only `d` and `q` changed.
        assert_eq!(
            serde_json::to_string(&state.changes()).unwrap(),
            r#"{"/t/d":4,"/z/q":null}"#
        );
    }
}
