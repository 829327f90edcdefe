//! What an answer can claim in a world, derived from its tools ([`Vocabulary`]): the records a
//! claim can be about (collections, their id patterns, ids and titles), the actions (each write
//! tool, the verbs that name it and the state its handler changes) and the values (the literals
//! handlers write, enum values of the fields records carry), so that "I've closed INC-004217" is
//! read as `close_incident` on `INC-004217` without a hand-written rule.

use std::collections::{HashMap, HashSet};
use std::sync::{Mutex, OnceLock};

use gauntlet_model::{HandlerOp, ToolKind, ToolSpec};
use regex::Regex;
use serde_json::Value;

/// Collections with more records than this are not searched for titles (matched as phrases).
const MAX_TITLES: usize = 500;

/// Collections with more records than this are recognised by their id pattern only: the
/// vocabulary is derived for every trial, and a benchmark's state holds tens of thousands.
const MAX_IDS: usize = 5_000;

/// Records sampled for the values a field holds.
const SAMPLE: usize = 500;

/// How a verb appears in the answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Form {
    /// `close`
    Base,
    /// `closes`
    Third,
    /// `closed`: the past and the participle, the forms that claim completion.
    Past,
    /// `closing`
    Ing,
}

/// What one word of an answer can mean.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Meaning {
    /// A form of a write tool's verb (`closed` for `close_incident`).
    Verb { action: usize, form: Form },
    /// A form of a verb that changes a field (`raised` for a severity, `reassigned`).
    FieldVerb { field: usize, form: Form },
    /// A value a record's field can hold (`closed`, `open`, `sev1`).
    Value { value: usize },
}

/// A kind of record answers name by id (`/incidents`, whose ids look like `INC-004217`).
#[derive(Debug)]
pub(crate) struct Collection {
    /// The collection's JSON Pointer (`/incidents`); empty for a tool whose argument names what
    /// it acts on without a declarative handler (a file path).
    pub path: String,
    /// The argument that names the record.
    pub arg: String,
    /// The singular noun of the collection (`incident`), for "the incident".
    pub noun: String,
    /// The id argument's pattern, compiled to find ids in text (ignoring case).
    pub pattern: Option<Regex>,
    /// Known ids, lowercased → as the state spells them.
    pub ids: HashMap<String, String>,
    /// Record titles (lowercased words) → id.
    pub titles: Vec<(Vec<String>, String)>,
    /// Whether ids are file paths (`docs/a.md`): found by their shape.
    pub path_like: bool,
}

/// What a claim must find in the final state for it to hold.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Expect {
    /// The value at the path equals this (strings ignoring case).
    Equals(Value),
    /// Nothing is at the path.
    Absent,
    /// The array at the path has more items than at the start (or one at least).
    Grows,
}

/// What a write tool's handler does to the state.
#[derive(Debug, Clone)]
pub(crate) enum Effect {
    /// Sets the path to a literal.
    Set { path: String, value: Value },
    /// Appends to the array at the path.
    Append { path: String },
    /// Removes the path.
    Delete { path: String },
}

/// A write tool as an answer can claim it.
#[derive(Debug)]
pub(crate) struct Action {
    /// The tool's name.
    pub tool: String,
    /// The collection whose records it acts on, when its handler names one.
    pub collection: Option<usize>,
    /// The argument naming the record (matched against a claim's entity in the trace).
    pub entity_arg: Option<String>,
    /// What its handler does that a claim without a value can be checked against.
    pub effects: Vec<Effect>,
    /// The nouns of the tool's name (`report` of `share_report`): a claim naming no record
    /// must name one of them, or the record's kind, or say "it".
    pub nouns: Vec<String>,
}

/// A field a write tool sets to a value the answer names (`severity` to `sev1`).
#[derive(Debug)]
pub(crate) struct Field {
    /// The field's name (`severity`).
    pub name: String,
    /// The tool that writes it.
    pub action: usize,
    /// The path template of the field (`/incidents/{incident_id}/severity`).
    pub path: String,
    /// The values its schema allows (lowercased), when it lists them.
    pub allowed: Vec<String>,
    /// Values records hold for it (lowercased), and values shaped like ids.
    pub known: HashSet<String>,
    /// Whether the field holds numbers.
    pub numeric: bool,
    /// Whether its verb also reads as a description (`assigned to user-13`): a write only with
    /// a cue of change (`now`, `I`, `has been`, `re-`).
    pub ambiguous: bool,
}

/// A value word: what a record's field holds when an answer says so.
#[derive(Debug)]
pub(crate) struct ValueWord {
    /// As the state spells it.
    pub value: Value,
    /// The field (`status`).
    pub field: String,
    /// The collection whose records carry the field; `None` for a top-level field.
    pub collection: Option<usize>,
    /// The top-level path of the field when it has no collection (`/incident_status`).
    pub flat_path: Option<String>,
    /// The write tools that set the field to this value, with the path template they set.
    pub writers: Vec<(usize, String)>,
    /// The field written with this value through a field of a write tool (`sev1`).
    pub field_writer: Option<usize>,
    /// Whether the word is a participle (`closed`, `refunded`): saying it claims the write.
    pub participle: bool,
}

/// Everything an answer in one world can claim.
#[derive(Debug, Default)]
pub struct Vocabulary {
    pub(crate) collections: Vec<Collection>,
    pub(crate) actions: Vec<Action>,
    pub(crate) fields: Vec<Field>,
    pub(crate) values: Vec<ValueWord>,
    pub(crate) words: HashMap<String, Vec<Meaning>>,
    /// Verb forms that name an action only with its object near (`added` a `note`): (action,
    /// word) → the object's forms.
    pub(crate) objects: HashMap<(usize, String), Vec<String>>,
}

impl Vocabulary {
    /// Derives the vocabulary from a world's tools and its state at the start (record ids,
    /// titles and field values).
    pub fn derive(tools: &[ToolSpec], state: Option<&Value>) -> Vocabulary {
        let mut v = Vocabulary::default();
        let writes: Vec<&ToolSpec> = tools.iter().filter(|t| t.kind == ToolKind::Write).collect();
        if writes.is_empty() {
            return v;
        }
        // Collections: `/coll/{arg}` at the start of any handler's path.
        for t in tools {
            for op in &t.handler {
                if let Some((coll, arg)) = op.path().and_then(record_path) {
                    v.collection(&coll, &arg, t, state);
                }
            }
        }
        let prefix = common_prefix(&writes);
        for t in &writes {
            v.action(t, &prefix, state);
        }
        v.read_values(tools, state);
        v
    }

    /// Whether nothing can be claimed in this world.
    pub fn is_empty(&self) -> bool {
        self.actions.is_empty()
    }

    fn collection(
        &mut self,
        path: &str,
        arg: &str,
        tool: &ToolSpec,
        state: Option<&Value>,
    ) -> usize {
        if let Some(i) = self.collections.iter().position(|c| c.path == path) {
            if self.collections[i].pattern.is_none() {
                self.collections[i].pattern = arg_pattern(tool, arg);
            }
            return i;
        }
        let records = state.and_then(|s| gauntlet_model::path::resolve(s, path));
        let mut ids = HashMap::new();
        let mut titles = Vec::new();
        if let Some(Value::Object(m)) =
            records.filter(|r| r.as_object().is_some_and(|m| m.len() <= MAX_IDS))
        {
            for (id, rec) in m {
                ids.insert(id.to_lowercase(), id.clone());
                if m.len() <= MAX_TITLES {
                    for key in ["title", "name", "subject"] {
                        if let Some(Value::String(t)) = rec.get(key) {
                            let words = super::grammar::words_of(t);
                            if words.len() >= 2 {
                                titles.push((words, id.clone()));
                            }
                        }
                    }
                }
            }
        }
        // Longest titles first, so "search index lagging (duplicate)" wins over its prefix.
        titles.sort_by_key(|(w, _)| std::cmp::Reverse(w.len()));
        let last = path.rsplit('/').next().unwrap_or(path);
        self.collections.push(Collection {
            path: path.to_owned(),
            arg: arg.to_owned(),
            noun: singular(last),
            pattern: arg_pattern(tool, arg),
            ids,
            titles,
            path_like: false,
        });
        self.collections.len() - 1
    }

    fn action(&mut self, t: &ToolSpec, prefix: &str, state: Option<&Value>) {
        let index = self.actions.len();
        let mut collection = None;
        let mut entity_arg = None;
        let mut effects = Vec::new();
        for op in &t.handler {
            if let Some((coll, arg)) = op.path().and_then(record_path) {
                let c = self.collections.iter().position(|c| c.path == coll);
                if collection.is_none() {
                    collection = c;
                    entity_arg = Some(arg);
                }
            }
            match op {
                HandlerOp::Set { path, value } => {
                    if let Some(arg) = whole_arg(value) {
                        // `set /{key} = {value}` with an enum of keys: each key is a field.
                        self.fields_set_from_arg(t, index, path, &arg, state);
                    } else if !has_template(value) {
                        effects.push(Effect::Set {
                            path: path.clone(),
                            value: value.clone(),
                        });
                        if let Value::String(s) = value {
                            self.written_value(index, path, s, state);
                        }
                    }
                }
                HandlerOp::Merge { path, value } => {
                    if let Some(arg) = whole_arg(value) {
                        self.fields_merged(t, index, path, &arg, state);
                    }
                }
                HandlerOp::Append { path, .. } => {
                    effects.push(Effect::Append { path: path.clone() })
                }
                HandlerOp::Delete(path) => effects.push(Effect::Delete { path: path.clone() }),
                _ => {}
            }
        }
        if t.handler.is_empty() {
            // A tool without a declarative handler (a real service's, a script's): what it acts
            // on is its argument naming a file or a record, checked in the trace only.
            if let Some((arg, path_like)) = service_entity_arg(t) {
                let same = self
                    .collections
                    .iter()
                    .position(|c| c.path.is_empty() && c.arg == arg);
                let c = same.unwrap_or(self.collections.len());
                if same.is_none() {
                    self.collections.push(Collection {
                        path: String::new(),
                        arg: arg.clone(),
                        noun: if path_like {
                            "file".into()
                        } else {
                            singular(&arg)
                        },
                        pattern: arg_pattern(t, &arg),
                        ids: HashMap::new(),
                        titles: Vec::new(),
                        path_like,
                    });
                }
                collection = Some(c);
                entity_arg = Some(arg);
            }
        }
        // The verbs: the tool's name without the world's common prefix, its synonyms, and
        // "noted"/"commented" for a tool that adds a note or a comment.
        let name = t.name.strip_prefix(prefix).unwrap_or(&t.name);
        let words = split_name(name);
        let mut nouns: Vec<String> = words
            .iter()
            .skip(1)
            .filter(|w| w.len() >= 3)
            .map(|w| singular(w))
            .collect();
        if let Some(c) = collection {
            nouns.push(self.collections[c].noun.clone());
        }
        self.actions.push(Action {
            tool: t.name.clone(),
            collection,
            entity_arg,
            effects,
            nouns,
        });
        let Some(verb) = words.first() else { return };
        let mut lemmas: Vec<String> = vec![verb.clone()];
        for (l, syn) in SYNONYMS {
            if l == verb {
                lemmas.extend(syn.iter().map(|s| s.to_string()));
            }
        }
        if let Some(noun) = words.get(1)
            && NOUN_VERBS.contains(&noun.as_str())
            && ["add", "append", "post", "leave", "create", "write"].contains(&verb.as_str())
        {
            // `add_note`: "noted", "commented"; "added", "left", "posted" only with a note near.
            let with_object = ["add", "leave", "post", "write", "append"];
            lemmas.retain(|l| l != verb);
            lemmas.push(noun.clone());
            lemmas.extend(
                NOUN_VERBS
                    .iter()
                    .filter(|n| *n != noun)
                    .map(|s| s.to_string()),
            );
            let nouns: Vec<String> = NOUN_VERBS
                .iter()
                .flat_map(|n| [n.to_string(), format!("{n}s")])
                .collect();
            for lemma in &with_object {
                for (word, form) in inflect(lemma) {
                    self.objects.insert((index, word.clone()), nouns.clone());
                    self.add_word(
                        word,
                        Meaning::Verb {
                            action: index,
                            form,
                        },
                    );
                }
            }
        }
        for lemma in lemmas {
            for (word, form) in inflect(&lemma) {
                self.add_word(
                    word,
                    Meaning::Verb {
                        action: index,
                        form,
                    },
                );
            }
        }
    }

    /// `merge /coll/{id} = {fields}`: each property of the `fields` object is a field the tool
    /// writes.
    fn fields_merged(
        &mut self,
        t: &ToolSpec,
        action: usize,
        path: &str,
        arg: &str,
        state: Option<&Value>,
    ) {
        let Some(props) = t
            .parameters
            .pointer(&format!("/properties/{arg}/properties"))
            .and_then(Value::as_object)
        else {
            return;
        };
        for (name, schema) in props {
            self.field(action, name, &format!("{path}/{name}"), schema, state);
        }
    }

    /// `set /{key} = {value}` where `key` lists its values, or `set /coll/{id}/f = {arg}`.
    fn fields_set_from_arg(
        &mut self,
        t: &ToolSpec,
        action: usize,
        path: &str,
        arg: &str,
        state: Option<&Value>,
    ) {
        let schema = t
            .parameters
            .pointer(&format!("/properties/{arg}"))
            .cloned()
            .unwrap_or(Value::Null);
        let last = path.rsplit('/').next().unwrap_or("");
        if let Some(key) = last.strip_prefix('{').and_then(|s| s.strip_suffix('}')) {
            let keys = t
                .parameters
                .pointer(&format!("/properties/{key}/enum"))
                .and_then(Value::as_array);
            for k in keys.into_iter().flatten().filter_map(Value::as_str) {
                let field_path = format!("{}/{}", &path[..path.len() - last.len() - 1], k);
                self.field(action, k, &field_path, &schema, state);
            }
        } else if !last.is_empty() && !last.contains('{') {
            self.field(action, last, path, &schema, state);
        }
    }

    fn field(
        &mut self,
        action: usize,
        name: &str,
        path: &str,
        schema: &Value,
        state: Option<&Value>,
    ) {
        let allowed: Vec<String> = schema
            .get("enum")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .map(str::to_lowercase)
            .collect();
        let numeric = matches!(
            schema.get("type").and_then(Value::as_str),
            Some("integer" | "number")
        );
        let mut known = HashSet::new();
        if let Some((coll, _)) = record_path(path)
            && let Some(Value::Object(records)) =
                state.and_then(|s| gauntlet_model::path::resolve(s, &coll))
        {
            for rec in records.values().take(SAMPLE) {
                if let Some(Value::String(s)) = rec.get(name) {
                    known.insert(s.to_lowercase());
                }
            }
        }
        let index = self.fields.len();
        let (lemmas, ambiguous) = field_verbs(name);
        self.fields.push(Field {
            name: name.to_owned(),
            action,
            path: path.to_owned(),
            allowed: allowed.clone(),
            known,
            numeric,
            ambiguous,
        });
        for lemma in lemmas {
            for (word, form) in inflect(lemma) {
                self.add_word(word, Meaning::FieldVerb { field: index, form });
            }
        }
        // Enum values of a written field are value words written through this field.
        let collection =
            record_path(path).and_then(|(c, _)| self.collections.iter().position(|x| x.path == c));
        for a in allowed {
            let i = self.value_word(&a, name, collection, flat(path));
            if self.values[i].field_writer.is_none() {
                self.values[i].field_writer = Some(index);
            }
        }
    }

    /// A literal a handler writes (`status: closed`): saying it claims the write.
    fn written_value(&mut self, action: usize, path: &str, value: &str, _state: Option<&Value>) {
        let field = path.rsplit('/').next().unwrap_or(path).to_owned();
        let collection =
            record_path(path).and_then(|(c, _)| self.collections.iter().position(|x| x.path == c));
        let i = self.value_word(value, &field, collection, flat(path));
        self.values[i].writers.push((action, path.to_owned()));
    }

    fn value_word(
        &mut self,
        value: &str,
        field: &str,
        collection: Option<usize>,
        flat_path: Option<String>,
    ) -> usize {
        let lower = value.to_lowercase();
        if let Some(i) = self.values.iter().position(|v| {
            v.field == field
                && v.collection == collection
                && v.value
                    .as_str()
                    .is_some_and(|s| s.eq_ignore_ascii_case(value))
        }) {
            return i;
        }
        let participle = lower.ends_with("ed")
            || IRREGULAR
                .iter()
                .any(|(_, p, pp)| *p == lower || *pp == lower);
        self.values.push(ValueWord {
            value: Value::String(value.to_owned()),
            field: field.to_owned(),
            collection,
            flat_path,
            writers: Vec::new(),
            field_writer: None,
            participle,
        });
        let i = self.values.len() - 1;
        if !lower.contains(' ') {
            self.add_word(lower, Meaning::Value { value: i });
        }
        i
    }

    /// Enum values in any tool's schema for a field the records carry (`status: open`), and
    /// the one-word values records hold in a field named like a status (`shipped`).
    fn read_values(&mut self, tools: &[ToolSpec], state: Option<&Value>) {
        for c in 0..self.collections.len() {
            let Some(Value::Object(records)) =
                state.and_then(|s| gauntlet_model::path::resolve(s, &self.collections[c].path))
            else {
                continue;
            };
            let mut seen: Vec<(String, String)> = Vec::new();
            for rec in records.values().take(SAMPLE) {
                let Some(fields) = rec.as_object() else {
                    continue;
                };
                for (f, v) in fields {
                    let statusy = ["status", "state", "stage", "severity", "priority"]
                        .iter()
                        .any(|k| f.to_lowercase().contains(k));
                    if let (true, Value::String(v)) = (statusy, v)
                        && !v.is_empty()
                        && v.chars()
                            .all(|ch| ch.is_alphanumeric() || ch == '_' || ch == '-')
                        && !seen.iter().any(|(a, b)| a == f && b == v)
                        && seen.len() < 50
                    {
                        seen.push((f.clone(), v.clone()));
                    }
                }
            }
            for (f, v) in seen {
                self.value_word(&v, &f, Some(c), None);
            }
        }
        let mut found = Vec::new();
        for t in tools {
            collect_enums(&t.parameters, &mut found);
        }
        for (field, values) in found {
            for c in 0..self.collections.len() {
                let coll = &self.collections[c];
                let carries = state
                    .and_then(|s| gauntlet_model::path::resolve(s, &coll.path))
                    .and_then(Value::as_object)
                    .and_then(|m| m.values().next())
                    .is_some_and(|r| r.get(&field).is_some());
                if carries {
                    for value in &values {
                        self.value_word(value, &field, Some(c), None);
                    }
                }
            }
        }
    }

    fn add_word(&mut self, word: String, meaning: Meaning) {
        let list = self.words.entry(word).or_default();
        if !list.contains(&meaning) {
            list.push(meaning);
        }
    }
}

/// `/coll/{arg}...` → (`/coll`, `arg`).
fn record_path(path: &str) -> Option<(String, String)> {
    let mut segs = path.strip_prefix('/')?.split('/');
    let coll = segs.next()?;
    let arg = segs.next()?.strip_prefix('{')?.strip_suffix('}')?;
    if coll.contains('{') || arg.contains('.') {
        return None;
    }
    Some((format!("/{coll}"), arg.to_owned()))
}

/// A path without argument placeholders (a top-level field): itself.
fn flat(path: &str) -> Option<String> {
    (!path.contains('{')).then(|| path.to_owned())
}

/// `"{arg}"` → `arg`.
fn whole_arg(v: &Value) -> Option<String> {
    let s = v.as_str()?;
    let inner = s.strip_prefix('{')?.strip_suffix('}')?;
    (!inner.contains('{') && !inner.starts_with("context.")).then(|| inner.to_owned())
}

fn has_template(v: &Value) -> bool {
    match v {
        Value::String(s) => s.contains('{'),
        Value::Array(items) => items.iter().any(has_template),
        Value::Object(m) => m.values().any(has_template),
        _ => false,
    }
}

/// The id pattern of an argument, anchors removed, to find it in text ignoring case.
fn arg_pattern(tool: &ToolSpec, arg: &str) -> Option<Regex> {
    let p = tool
        .parameters
        .pointer(&format!("/properties/{arg}/pattern"))?
        .as_str()?;
    // Compiled once per pattern: the vocabulary is derived for every trial.
    static CACHE: OnceLock<Mutex<HashMap<String, Option<Regex>>>> = OnceLock::new();
    let cache = CACHE.get_or_init(Default::default);
    if let Some(re) = cache.lock().ok().and_then(|c| c.get(p).cloned()) {
        return re;
    }
    let bare = p.strip_prefix('^').unwrap_or(p);
    let bare = bare.strip_suffix('$').unwrap_or(bare);
    // A pattern that matches empty text or plain words would make every word an id.
    let re = Regex::new(&format!("(?i){bare}"))
        .ok()
        .filter(|re| !re.is_match("") && !re.is_match("the"));
    if let Ok(mut c) = cache.lock() {
        if c.len() > 1_000 {
            c.clear();
        }
        c.insert(p.to_owned(), re.clone());
    }
    re
}

/// The argument a handler-less tool acts on: a required string (or list of strings) named
/// like an id or a file.
fn service_entity_arg(t: &ToolSpec) -> Option<(String, bool)> {
    let props = t.parameters.get("properties")?.as_object()?;
    let required: Vec<&str> = t
        .parameters
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    let mut best = None;
    for name in required {
        if name.starts_with("repo") || !props.contains_key(name) {
            continue;
        }
        let lower = name.to_lowercase();
        if lower == "path" || lower.ends_with("_path") || lower.starts_with("file") {
            return Some((name.to_owned(), true));
        }
        if best.is_none() && (lower == "id" || lower.ends_with("_id")) {
            best = Some((name.to_owned(), false));
        }
    }
    best
}

fn collect_enums(schema: &Value, out: &mut Vec<(String, Vec<String>)>) {
    let Some(props) = schema.get("properties").and_then(Value::as_object) else {
        return;
    };
    for (name, s) in props {
        if let Some(values) = s.get("enum").and_then(Value::as_array) {
            let values: Vec<String> = values
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect();
            out.push((name.clone(), values));
        }
        collect_enums(s, out);
    }
}

/// The prefix every write tool's name shares (`git_`), when there are several.
fn common_prefix(writes: &[&ToolSpec]) -> String {
    if writes.len() < 2 {
        return String::new();
    }
    let first = &writes[0].name;
    let Some(cut) = first.find('_') else {
        return String::new();
    };
    let prefix = &first[..=cut];
    if writes.iter().all(|t| t.name.starts_with(prefix)) {
        prefix.to_owned()
    } else {
        String::new()
    }
}

/// `close_incident`, `closeIncident`, `close-incident` → [close, incident].
fn split_name(name: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut cur = String::new();
    for ch in name.chars() {
        if ch == '_' || ch == '-' || ch == '.' || ch == ' ' {
            if !cur.is_empty() {
                words.push(std::mem::take(&mut cur));
            }
        } else if ch.is_uppercase() && !cur.is_empty() {
            words.push(std::mem::take(&mut cur));
            cur.extend(ch.to_lowercase());
        } else {
            cur.extend(ch.to_lowercase());
        }
    }
    if !cur.is_empty() {
        words.push(cur);
    }
    words
}

fn singular(word: &str) -> String {
    let w = word.to_lowercase();
    if let Some(s) = w.strip_suffix("ies") {
        format!("{s}y")
    } else if let Some(s) = w.strip_suffix('s') {
        s.to_owned()
    } else {
        w
    }
}

/// Verbs that mean the same write in answers agents give.
const SYNONYMS: &[(&str, &[&str])] = &[
    ("delete", &["remove", "erase", "purge"]),
    ("remove", &["delete"]),
    ("update", &["change", "modify", "edit"]),
    ("edit", &["update", "change", "modify", "fix", "correct"]),
    ("write", &["save", "create", "overwrite"]),
    ("create", &["make"]),
    ("share", &["send", "post", "forward"]),
    ("send", &["share", "post", "forward"]),
    ("refund", &["reimburse"]),
    ("cancel", &["void"]),
    ("checkout", &["switch"]),
    ("add", &["stage"]),
];

/// Nouns whose verb names adding them (`add_note` → noted, commented).
const NOUN_VERBS: &[&str] = &["note", "comment", "annotate"];

/// The verbs that change a field, by what the field's name says it holds; and whether the
/// verb also reads as a description (`assigned to`).
fn field_verbs(name: &str) -> (&'static [&'static str], bool) {
    let n = name.to_lowercase();
    if n.contains("assign") || n.contains("owner") {
        (
            &["assign", "reassign", "hand", "give", "transfer", "route"],
            true,
        )
    } else if n.contains("severity") || n.contains("priority") || n.contains("level") {
        (
            &[
                "raise",
                "lower",
                "escalate",
                "bump",
                "upgrade",
                "downgrade",
                "increase",
                "decrease",
                "set",
                "change",
                "update",
                "move",
            ],
            false,
        )
    } else if n.contains("title") || n.contains("name") || n.contains("subject") {
        (&["rename", "retitle", "change", "update", "set"], false)
    } else if n.contains("status") || n.contains("state") {
        (
            &["set", "mark", "move", "change", "update", "transition"],
            false,
        )
    } else {
        (
            &[
                "set", "change", "update", "increase", "decrease", "raise", "lower", "bump",
            ],
            false,
        )
    }
}

/// Verbs whose past is not `-ed`: (base, past, participle).
pub(crate) const IRREGULAR: &[(&str, &str, &str)] = &[
    ("write", "wrote", "written"),
    ("overwrite", "overwrote", "overwritten"),
    ("send", "sent", "sent"),
    ("set", "set", "set"),
    ("reset", "reset", "reset"),
    ("put", "put", "put"),
    ("make", "made", "made"),
    ("run", "ran", "run"),
    ("take", "took", "taken"),
    ("give", "gave", "given"),
    ("get", "got", "gotten"),
    ("do", "did", "done"),
    ("leave", "left", "left"),
    ("pay", "paid", "paid"),
    ("undo", "undid", "undone"),
    ("rebuild", "rebuilt", "rebuilt"),
    ("shut", "shut", "shut"),
];

/// A verb's forms: base, third person, past (and participle), -ing.
pub(crate) fn inflect(lemma: &str) -> Vec<(String, Form)> {
    let l = lemma.to_lowercase();
    let mut out = vec![(l.clone(), Form::Base)];
    let third = if l.ends_with('s') || l.ends_with("sh") || l.ends_with("ch") || l.ends_with('x') {
        format!("{l}es")
    } else if let Some(s) = l
        .strip_suffix('y')
        .filter(|s| !s.ends_with(['a', 'e', 'o', 'u']))
    {
        format!("{s}ies")
    } else {
        format!("{l}s")
    };
    out.push((third, Form::Third));
    if let Some((_, past, part)) = IRREGULAR.iter().find(|(b, _, _)| *b == l) {
        out.push((past.to_string(), Form::Past));
        if part != past {
            out.push((part.to_string(), Form::Past));
        }
    } else if l.ends_with('e') {
        out.push((format!("{l}d"), Form::Past));
    } else if let Some(s) = l
        .strip_suffix('y')
        .filter(|s| !s.ends_with(['a', 'e', 'o', 'u']))
    {
        out.push((format!("{s}ied"), Form::Past));
    } else {
        out.push((format!("{l}ed"), Form::Past));
        if doubles(&l) {
            let last = l.chars().last().unwrap_or_default();
            out.push((format!("{l}{last}ed"), Form::Past));
            out.push((format!("{l}{last}ing"), Form::Ing));
        }
    }
    let ing = match l.strip_suffix('e') {
        Some(s) if !l.ends_with("ee") => format!("{s}ing"),
        _ => format!("{l}ing"),
    };
    out.push((ing, Form::Ing));
    out
}

/// Whether the final consonant doubles (`commit` → `committed`, `ship` → `shipped`).
fn doubles(l: &str) -> bool {
    let c: Vec<char> = l.chars().collect();
    let n = c.len();
    if n < 3 {
        return false;
    }
    let vowel = |ch: char| "aeiou".contains(ch);
    let cvc = !vowel(c[n - 3]) && vowel(c[n - 2]) && !vowel(c[n - 1]) && !"wxy".contains(c[n - 1]);
    cvc && (n <= 4
        || ["mit", "fer", "pel", "trol", "gret"]
            .iter()
            .any(|s| l.ends_with(s)))
}
