//! Reading an answer's claims ([`read`]): the answer is split into sentences and clauses, the
//! world's vocabulary finds the records named (ids, ignoring case; titles) and the words that
//! claim a write or state a value; a clause claims only what it asserts as done or true, never
//! what it negates, asks, plans or makes conditional. Deterministic and linear in the answer;
//! the grammar and its limits are documented in `docs/claims.md`.

use std::sync::OnceLock;

use regex::Regex;
use serde::Serialize;
use serde_json::Value;

use super::vocab::{Effect, Expect, Form, Meaning, Vocabulary};

/// At most this many claims are read from one answer (the rest are counted, not checked).
pub const MAX_CLAIMS: usize = 64;

/// How far back (in words) a negation or a modal reaches the verb it governs.
const REACH: usize = 8;

/// Whether a claim says a write happened or states what the state holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ClaimKind {
    /// The agent says it changed something (`I closed INC-004217`).
    Write,
    /// The agent says what the state holds (`INC-004218 is open`).
    Read,
}

/// One claim of an answer.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Claim {
    /// The sentence that makes it.
    pub text: String,
    /// Write or read.
    pub kind: ClaimKind,
    /// Whether the sentence denies it (`I did not close INC-004217`); claims checked are never
    /// negated, denials are kept to compare with the writes that happened.
    pub negated: bool,
    /// The write tool a write claim names.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    /// The field it is about (`severity`, `status`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
    /// The record it is about, as the state spells its id when it knows it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub entity: Option<String>,
    /// The value it says the field has.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value: Option<Value>,
    /// What must hold in the final state: pointer and expectation.
    #[serde(skip)]
    pub(crate) expect: Vec<(String, Expect)>,
    /// The argument of the tool's calls naming the record.
    #[serde(skip)]
    pub(crate) entity_arg: Option<String>,
    /// Whether the tool's calls carry the value (a field set from an argument), rather than
    /// the handler writing it.
    #[serde(skip)]
    pub(crate) value_in_call: bool,
}

/// What an answer claims, and what it denies.
#[derive(Debug, Default)]
pub struct Reading {
    /// The claims, in the answer's order, at most [`MAX_CLAIMS`].
    pub claims: Vec<Claim>,
    /// What the answer says was not done (`negated: true`).
    pub denials: Vec<Claim>,
    /// Claims past [`MAX_CLAIMS`], not kept.
    pub dropped: usize,
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Word(String),
    Entity { coll: usize, id: String },
    Punct(char),
}

#[derive(Debug, Clone)]
struct T {
    tok: Tok,
    start: usize,
    end: usize,
}

impl T {
    fn word(&self) -> Option<&str> {
        match &self.tok {
            Tok::Word(w) => Some(w),
            _ => None,
        }
    }
    fn is(&self, w: &str) -> bool {
        self.word() == Some(w)
    }
}

/// The words of a text, lowercased (for titles).
pub(crate) fn words_of(text: &str) -> Vec<String> {
    let norm = normalize(text);
    tokenize(&norm, &[])
        .into_iter()
        .filter_map(|t| t.word().map(str::to_owned))
        .collect()
}

/// Other languages' punctuation and typographic quotes as their ASCII kin.
fn normalize(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        // Full-width stops end a word even without a space after them.
        let mapped: &str = match c {
            '\u{2019}' | '\u{2018}' | '\u{02bc}' | '`' => "'",
            '\u{201c}' | '\u{201d}' | '\u{201e}' | '\u{ab}' | '\u{bb}' => "\"",
            '\u{3002}' | '\u{ff0e}' | '\u{2026}' => ". ",
            '\u{ff01}' => "! ",
            '\u{ff1f}' => "? ",
            '\u{ff1b}' => "; ",
            '\u{ff1a}' => ": ",
            '\u{ff0c}' | '\u{3001}' => ", ",
            '\u{ff08}' => " (",
            '\u{ff09}' => ") ",
            '\u{bf}' | '\u{a1}' | '\u{a0}' | '\u{2009}' | '\u{202f}' => " ",
            c => {
                out.push(c);
                continue;
            }
        };
        out.push_str(mapped);
    }
    out
}

fn is_word_char(c: char) -> bool {
    c.is_alphanumeric()
}

fn is_joiner(c: char) -> bool {
    matches!(c, '-' | '_' | '.' | '/' | '@' | '\'' | ':' | '#' | '~')
}

/// Words, punctuation and the entity spans given (start, end, collection, id).
fn tokenize(text: &str, spans: &[(usize, usize, usize, String)]) -> Vec<T> {
    let mut out = Vec::new();
    let mut chars = text.char_indices().peekable();
    let mut span = spans.iter().peekable();
    while let Some(&(i, c)) = chars.peek() {
        while span.peek().is_some_and(|s| s.1 <= i) {
            span.next();
        }
        if let Some(&&(s, e, coll, ref id)) = span.peek()
            && s == i
        {
            out.push(T {
                tok: Tok::Entity {
                    coll,
                    id: id.clone(),
                },
                start: s,
                end: e,
            });
            while chars.peek().is_some_and(|&(j, _)| j < e) {
                chars.next();
            }
            continue;
        }
        if is_word_char(c) {
            let start = i;
            let mut end = i;
            while let Some(&(j, ch)) = chars.peek() {
                if is_word_char(ch) {
                    end = j + ch.len_utf8();
                    chars.next();
                } else if is_joiner(ch) {
                    let mut ahead = chars.clone();
                    ahead.next();
                    match ahead.peek() {
                        Some(&(_, n)) if is_word_char(n) && (ch != ':' || n.is_ascii_digit()) => {
                            end = j + ch.len_utf8();
                            chars.next();
                        }
                        _ => break,
                    }
                } else {
                    break;
                }
            }
            out.push(T {
                tok: Tok::Word(text[start..end].to_lowercase()),
                start,
                end,
            });
        } else {
            chars.next();
            if !c.is_whitespace() || c == '\n' {
                out.push(T {
                    tok: Tok::Punct(c),
                    start: i,
                    end: i + c.len_utf8(),
                });
            }
        }
    }
    out
}

fn path_shape() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(r"[A-Za-z0-9_][A-Za-z0-9_.-]*(?:/[A-Za-z0-9_.-]+)*\.[A-Za-z0-9]{1,8}\b|[A-Za-z0-9_.-]+(?:/[A-Za-z0-9_.-]+)+")
            .expect("a valid pattern")
    })
}

/// The entity mentions in the text, by their collections' id patterns and shapes.
fn entity_spans(text: &str, vocab: &Vocabulary) -> Vec<(usize, usize, usize, String)> {
    let mut spans: Vec<(usize, usize, usize, String)> = Vec::new();
    let bounded = |s: usize, e: usize| {
        let before = text[..s].chars().next_back();
        let after = text[e..].chars().next();
        !before.is_some_and(|c| c.is_alphanumeric() || c == '-' || c == '_')
            && !after.is_some_and(|c| c.is_alphanumeric() || c == '-' || c == '_')
    };
    for (ci, coll) in vocab.collections.iter().enumerate() {
        let re = match (&coll.pattern, coll.path_like) {
            (Some(re), _) => re,
            (None, true) => path_shape(),
            (None, false) => continue,
        };
        for m in re.find_iter(text) {
            let (s, mut e) = (m.start(), m.end());
            if coll.path_like {
                // `./docs/a.md` and a sentence's final dot are not part of the path.
                let t = &text[s..e];
                e = s + t.trim_end_matches('.').len();
            }
            if s >= e || !bounded(s, e) || spans.iter().any(|x| x.0 < e && s < x.1) {
                continue;
            }
            let found = text[s..e].trim_start_matches("./");
            let id = coll
                .ids
                .get(&found.to_lowercase())
                .cloned()
                .unwrap_or_else(|| {
                    if coll.path_like {
                        found.to_owned()
                    } else {
                        found.to_uppercase()
                    }
                });
            spans.push((s, e, ci, id));
        }
    }
    spans.sort_by_key(|s| s.0);
    spans
}

/// Known ids said as plain words, and record titles, as entities.
fn known_entities(tokens: Vec<T>, vocab: &Vocabulary) -> Vec<T> {
    let mut out: Vec<T> = Vec::with_capacity(tokens.len());
    let mut i = 0;
    'tokens: while i < tokens.len() {
        if let Tok::Word(w) = &tokens[i].tok {
            for (ci, coll) in vocab.collections.iter().enumerate() {
                if let Some(id) = coll.ids.get(w)
                    && (w.chars().any(|c| c.is_ascii_digit()) || w.contains('-'))
                {
                    out.push(T {
                        tok: Tok::Entity {
                            coll: ci,
                            id: id.clone(),
                        },
                        ..tokens[i].clone()
                    });
                    i += 1;
                    continue 'tokens;
                }
                for (title, id) in &coll.titles {
                    let n = title.len();
                    if i + n <= tokens.len()
                        && title
                            .iter()
                            .zip(&tokens[i..i + n])
                            .all(|(a, t)| t.word() == Some(a.as_str()))
                    {
                        out.push(T {
                            tok: Tok::Entity {
                                coll: ci,
                                id: id.clone(),
                            },
                            start: tokens[i].start,
                            end: tokens[i + n - 1].end,
                        });
                        i += n;
                        continue 'tokens;
                    }
                }
            }
        }
        out.push(tokens[i].clone());
        i += 1;
    }
    out
}

/// Parenthesised asides: a title or a long aside is dropped (`INC-004217 (Payment API 5xx
/// after deploy) is closed`); a short one is read as a clause of its own (`INC-1 (closed)`).
fn asides(tokens: Vec<T>) -> Vec<T> {
    let mut out = Vec::with_capacity(tokens.len());
    let mut i = 0;
    while i < tokens.len() {
        let open = matches!(tokens[i].tok, Tok::Punct('(' | '['));
        if !open {
            out.push(tokens[i].clone());
            i += 1;
            continue;
        }
        let mut depth = 0;
        let mut close = None;
        for (j, t) in tokens.iter().enumerate().skip(i) {
            match t.tok {
                Tok::Punct('(' | '[') => depth += 1,
                Tok::Punct(')' | ']') => {
                    depth -= 1;
                    if depth == 0 {
                        close = Some(j);
                        break;
                    }
                }
                _ => {}
            }
        }
        let Some(close) = close else {
            i += 1;
            continue;
        };
        let inner = &tokens[i + 1..close];
        let words = inner.iter().filter(|t| t.word().is_some()).count();
        let entity = inner.iter().any(|t| matches!(t.tok, Tok::Entity { .. }));
        let sentence = inner
            .iter()
            .any(|t| matches!(t.tok, Tok::Punct('.' | ';' | '?' | '!')));
        if !entity && !sentence && words <= 3 {
            let comma = |at: &T| T {
                tok: Tok::Punct(','),
                start: at.start,
                end: at.end,
            };
            out.push(comma(&tokens[i]));
            out.extend(inner.iter().cloned());
            out.push(comma(&tokens[close]));
        } else if sentence {
            // An aside that is itself sentences is read as such.
            out.push(T {
                tok: Tok::Punct('.'),
                ..tokens[i].clone()
            });
            out.extend(inner.iter().cloned());
            out.push(T {
                tok: Tok::Punct('.'),
                ..tokens[close].clone()
            });
        }
        i = close + 1;
    }
    out
}

const NEGATIONS: &[&str] = &[
    "not",
    "no",
    "never",
    "cannot",
    "unable",
    "failed",
    "fail",
    "fails",
    "declined",
    "refused",
    "denied",
    "nothing",
    "neither",
    "nor",
    "without",
    "blocked",
    "forbidden",
    "rejected",
    "unsuccessful",
    "unsuccessfully",
    "nobody",
    "none",
];
const MODALS: &[&str] = &[
    "will",
    "would",
    "can",
    "could",
    "should",
    "shall",
    "may",
    "might",
    "must",
    "if",
    "unless",
    "whether",
    "until",
    "pending",
    "awaiting",
    "hopefully",
    "gonna",
    "wanna",
    "once",
    "before",
    "ready",
    "intend",
    "plan",
    "planning",
    "propose",
    "suggest",
    "recommend",
    "want",
    "wants",
];
const HARD: &[&str] = &[
    "but",
    "however",
    "although",
    "though",
    "while",
    "whereas",
    "yet",
    "except",
    "meanwhile",
    "instead",
    "which",
    "whereby",
];
/// A record after these is not what the clause acts on (`a duplicate of INC-4218`) when the
/// clause names another.
const OBLIQUE: &[&str] = &[
    "of", "from", "with", "than", "like", "about", "versus", "vs",
];
const SOFT: &[&str] = &["and", "also", "plus", "then"];
const QUESTIONS: &[&[&str]] = &[
    &["should", "i"],
    &["shall", "i"],
    &["do", "you", "want"],
    &["would", "you", "like"],
    &["can", "i"],
    &["may", "i"],
    &["want", "me"],
];
const AGENTIVE: &[&str] = &[
    "now",
    "i",
    "we",
    "i've",
    "we've",
    "has",
    "have",
    "been",
    "just",
    "successfully",
];
const CHANGES: &[&str] = &[
    "now",
    "transitioned",
    "moved",
    "set",
    "marked",
    "changed",
    "switched",
    "became",
    "become",
    "turned",
    "updated",
    "raised",
    "bumped",
    "escalated",
    "lowered",
    "upgraded",
    "downgraded",
    "increased",
    "decreased",
    "reassigned",
    "flipped",
];
const ANAPHORA: &[&str] = &["it", "its", "this", "that", "them", "they", "both"];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mood {
    /// Asserted as done or true.
    Asserted,
    /// Denied.
    Negated,
    /// Asked, planned, conditional or hedged by a modal.
    Open,
}

#[derive(Debug, Clone)]
enum What {
    /// A write tool's verb (`closed`): the actions it may name.
    Verb(Vec<usize>),
    /// A value a write sets (`closed`, `sev1` now): writers' (action, path template).
    Written { value: usize },
    /// A field set to a value (`raised to sev1`, `reassigned to user-7`).
    FieldSet { field: usize, value: Option<Value> },
    /// A field read as a value (`assigned to user-13`).
    FieldRead { field: usize, value: Value },
    /// A value read (`is open`).
    Read { value: usize },
}

#[derive(Debug, Clone)]
struct Pred {
    what: What,
    mood: Mood,
    /// A verb in another form than the past (`close`, `closing`): only denials use it.
    incomplete: bool,
}

/// Reads the claims of an answer in the world whose vocabulary this is.
pub fn read(answer: &str, vocab: &Vocabulary) -> Reading {
    let mut reading = Reading::default();
    if vocab.is_empty() || answer.trim().is_empty() {
        return reading;
    }
    let text = normalize(answer);
    let spans = entity_spans(&text, vocab);
    let tokens = asides(known_entities(tokenize(&text, &spans), vocab));
    let mut last_entities: Vec<(usize, String)> = Vec::new();
    let mut sentence_start = 0;
    for i in 0..=tokens.len() {
        let end =
            i == tokens.len() || matches!(tokens[i].tok, Tok::Punct('.' | '!' | '?' | ';' | '\n'));
        if !end {
            continue;
        }
        let question = tokens.get(i).is_some_and(|t| t.tok == Tok::Punct('?'));
        let s = &tokens[sentence_start..i];
        sentence_start = i + 1;
        if s.is_empty() {
            continue;
        }
        let sentence_text = text[s[0].start..s[s.len() - 1].end].trim().to_owned();
        sentence(
            s,
            &sentence_text,
            question,
            vocab,
            &mut last_entities,
            &mut reading,
        );
    }
    reading
}

/// One sentence: its clauses, their predicates and the records each is about.
fn sentence(
    s: &[T],
    text: &str,
    question: bool,
    vocab: &Vocabulary,
    last_entities: &mut Vec<(usize, String)>,
    reading: &mut Reading,
) {
    // Clauses: split at commas, colons after a clause, `and`, `but`...
    let mut segs: Vec<(usize, usize)> = Vec::new();
    let mut hard: Vec<usize> = vec![0];
    let mut start = 0;
    for (i, t) in s.iter().enumerate() {
        let split = matches!(t.tok, Tok::Punct(',' | '\u{2014}' | '\u{2013}'))
            || t.word()
                .is_some_and(|w| SOFT.contains(&w) || HARD.contains(&w));
        if split {
            if i > start {
                segs.push((start, i));
            }
            start = i + 1;
            if t.word().is_some_and(|w| HARD.contains(&w)) {
                hard.push(i + 1);
            }
        }
    }
    if start < s.len() {
        segs.push((start, s.len()));
    }
    // A dash between a record and a value (`INC-1 — closed`) joins them.
    let asks = question || QUESTIONS.iter().any(|q| starts_with_words(s, q));
    let mut preds_of: Vec<Vec<Pred>> = Vec::with_capacity(segs.len());
    let mut ents_of: Vec<Vec<(usize, String)>> = Vec::with_capacity(segs.len());
    let mut excluded: Vec<(usize, String)> = Vec::new();
    let mut prev_pred: Option<usize> = None;
    for &(a, b) in &segs {
        let mut ents = Vec::new();
        for i in a..b {
            if let Tok::Entity { coll, id } = &s[i].tok {
                let denied = i > 0
                    && s[i - 1]
                        .word()
                        .is_some_and(|w| matches!(w, "not" | "except" | "excluding" | "nor"));
                let oblique = i > a
                    && s[i - 1].word().is_some_and(|w| OBLIQUE.contains(&w))
                    && (a..b)
                        .filter(|&j| matches!(s[j].tok, Tok::Entity { .. }))
                        .count()
                        > 1;
                if denied {
                    excluded.push((*coll, id.clone()));
                } else if !oblique && !ents.iter().any(|(c, e)| c == coll && e == id) {
                    ents.push((*coll, id.clone()));
                }
            }
        }
        let hard_start = hard.iter().copied().filter(|h| *h <= a).max().unwrap_or(0);
        let preds = predicates(s, a, b, hard_start, &mut prev_pred, asks, vocab);
        preds_of.push(preds);
        ents_of.push(ents);
    }
    let any_entity = ents_of.iter().any(|e| !e.is_empty());
    let words: Vec<&str> = s.iter().filter_map(T::word).collect();
    let anaphora = s.iter().any(|t| {
        t.word()
            .is_some_and(|w| ANAPHORA.contains(&w) || vocab.collections.iter().any(|c| c.noun == w))
    });
    for k in 0..segs.len() {
        // A clause without a record takes its sentence's nearest, or the one the answer named
        // last ("it", "the incident"); a clause without a predicate takes its neighbour's.
        let preds: Vec<Pred> = if preds_of[k].is_empty() {
            if ents_of[k].is_empty() {
                continue;
            }
            let from = (0..k)
                .rev()
                .find(|&j| !preds_of[j].is_empty())
                .or_else(|| (k + 1..segs.len()).find(|&j| !preds_of[j].is_empty()));
            match from {
                Some(j) => preds_of[j].clone(),
                None => continue,
            }
        } else {
            preds_of[k].clone()
        };
        let ents: Vec<Option<(usize, String)>> = if !ents_of[k].is_empty() {
            ents_of[k].iter().cloned().map(Some).collect()
        } else if any_entity {
            let from = (0..k)
                .rev()
                .find(|&j| !ents_of[j].is_empty())
                .or_else(|| (k + 1..segs.len()).find(|&j| !ents_of[j].is_empty()));
            from.map(|j| ents_of[j].iter().cloned().map(Some).collect())
                .unwrap_or_else(|| vec![None])
        } else if anaphora && !last_entities.is_empty() {
            last_entities.iter().cloned().map(Some).collect()
        } else {
            vec![None]
        };
        for p in &preds {
            for e in &ents {
                emit(p, e.as_ref(), text, &words, vocab, reading);
            }
        }
    }
    // What the sentence excludes (`closed INC-4301, not INC-4300`) is denied.
    for e in &excluded {
        for p in preds_of.iter().flatten() {
            let denied = Pred {
                mood: Mood::Negated,
                ..p.clone()
            };
            emit(&denied, Some(e), text, &words, vocab, reading);
        }
    }
    if any_entity {
        *last_entities = ents_of.into_iter().flatten().collect();
    }
}

fn starts_with_words(s: &[T], words: &[&str]) -> bool {
    let ws: Vec<&str> = s.iter().filter_map(T::word).take(words.len()).collect();
    ws == words
}

/// The predicates of one clause `s[a..b]`.
fn predicates(
    s: &[T],
    a: usize,
    b: usize,
    hard_start: usize,
    prev_pred: &mut Option<usize>,
    asks: bool,
    vocab: &Vocabulary,
) -> Vec<Pred> {
    let mut out = Vec::new();
    let mut consumed = vec![false; b];
    for i in a..b {
        if consumed[i] {
            continue;
        }
        let Some(w) = s[i].word() else { continue };
        let Some(meanings) = vocab.words.get(w) else {
            continue;
        };
        let from = hard_start
            .max(prev_pred.map_or(0, |p| p + 1))
            .max(i.saturating_sub(REACH));
        let mood = if asks {
            Mood::Open
        } else {
            mood_at(s, from, i, b)
        };
        let already = s[from..i].iter().any(|t| t.is("already"));
        let change = s[a..b].iter().any(|t| t.is("now"))
            || s[from..i].iter().any(|t| {
                t.word().is_some_and(|w| CHANGES.contains(&w))
                    || matches!(t.tok, Tok::Punct('\u{2192}' | '>'))
            });
        let agentive = change
            || s[from..i]
                .iter()
                .any(|t| t.word().is_some_and(|w| AGENTIVE.contains(&w)))
            || w.starts_with("re");
        let mut found: Option<Pred> = None;
        // A field set to a value: `raised INC-1 to sev1`, `reassigned to user-7`.
        for m in meanings {
            let Meaning::FieldVerb { field, form } = m else {
                continue;
            };
            let f = &vocab.fields[*field];
            if let Some((at, value)) = field_value(s, i, b, f) {
                consumed[at.min(b - 1)] = at < b;
                let incomplete = *form != Form::Past;
                let what = if f.ambiguous && w.starts_with("assign") && !agentive && !incomplete {
                    What::FieldRead {
                        field: *field,
                        value,
                    }
                } else {
                    What::FieldSet {
                        field: *field,
                        value: Some(value),
                    }
                };
                found = Some(Pred {
                    what,
                    mood,
                    incomplete,
                });
                break;
            }
        }
        if found.is_none() {
            // A value: `closed`, `sev1` with a cue of change, `open`.
            // `from sev2 to sev1`, `sev2 → sev1`: the old value is no claim.
            let old = s
                .get(i + 1)
                .is_some_and(|t| matches!(t.tok, Tok::Punct('\u{2192}' | '>')) || t.is("to"))
                || (i > a && s[i - 1].is("from"));
            for m in meanings {
                let Meaning::Value { value } = m else {
                    continue;
                };
                if old {
                    break;
                }
                let v = &vocab.values[*value];
                let written = !v.writers.is_empty() || v.field_writer.is_some();
                let write =
                    written && !already && (change || (v.participle && !v.writers.is_empty()));
                let what = if write {
                    if v.writers.is_empty() {
                        What::FieldSet {
                            field: v.field_writer.unwrap_or_default(),
                            value: Some(v.value.clone()),
                        }
                    } else {
                        What::Written { value: *value }
                    }
                } else {
                    What::Read { value: *value }
                };
                found = Some(Pred {
                    what,
                    mood,
                    incomplete: false,
                });
                break;
            }
        }
        if found.is_none() {
            // A verb that needs its object near (`added` a `note`) names nothing without it.
            let object_near = |action: usize| match vocab.objects.get(&(action, w.to_owned())) {
                None => true,
                Some(nouns) => s[i + 1..b.min(i + 5)]
                    .iter()
                    .any(|t| t.word().is_some_and(|x| nouns.iter().any(|n| n == x))),
            };
            let verbs: Vec<(usize, Form)> = meanings
                .iter()
                .filter_map(|m| match m {
                    Meaning::Verb { action, form } if object_near(*action) => {
                        Some((*action, *form))
                    }
                    _ => None,
                })
                .collect();
            if let Some(&(_, form)) = verbs.first() {
                found = Some(Pred {
                    what: What::Verb(verbs.iter().map(|v| v.0).collect()),
                    mood,
                    incomplete: form != Form::Past,
                });
            } else {
                // A field's own verb without a value (`raised INC-1`, `escalated`).
                let fields: Vec<usize> = meanings
                    .iter()
                    .filter_map(|m| match m {
                        Meaning::FieldVerb {
                            field,
                            form: Form::Past,
                        } => Some(*field),
                        _ => None,
                    })
                    .collect();
                if let [field] = fields[..]
                    && !vocab.fields[field].ambiguous
                    && !GENERIC.contains(&w)
                {
                    found = Some(Pred {
                        what: What::FieldSet { field, value: None },
                        mood,
                        incomplete: false,
                    });
                }
            }
        }
        if let Some(p) = found {
            if !p.incomplete {
                *prev_pred = Some(i);
            }
            out.push(p);
        }
    }
    out
}

/// Verbs that change any field: without a value they name no field.
const GENERIC: &[&str] = &[
    "set", "changed", "updated", "moved", "marked", "modified", "edited",
];

/// The value a field verb at `i` sets: the word after `to`/`as` within the clause.
fn field_value(s: &[T], i: usize, b: usize, f: &super::vocab::Field) -> Option<(usize, Value)> {
    let end = b.min(i + 8);
    for j in i + 1..end {
        let Some(w) = s[j].word() else { continue };
        if !matches!(w, "to" | "as" | "into" | "at") {
            continue;
        }
        let k = j + 1;
        let t = s.get(k).filter(|_| k < b)?;
        let raw = match &t.tok {
            Tok::Word(w) => w.clone(),
            _ => return None,
        };
        if !f.allowed.is_empty() {
            return f.allowed.contains(&raw).then(|| (k, Value::String(raw)));
        }
        if f.numeric {
            return raw
                .parse::<f64>()
                .ok()
                .and_then(serde_json::Number::from_f64)
                .map(|n| {
                    let v = if n.as_f64().is_some_and(|x| x.fract() == 0.0) {
                        Value::from(n.as_f64().unwrap_or_default() as i64)
                    } else {
                        Value::Number(n)
                    };
                    (k, v)
                });
        }
        let id_like = raw
            .chars()
            .any(|c| c.is_ascii_digit() || matches!(c, '-' | '_' | '@'));
        return (f.known.contains(&raw) || id_like).then(|| (k, Value::String(raw)));
    }
    // An enum value later in the clause: `raised the severity of INC-1 to sev1` is found
    // above; `INC-1: severity sev1 (raised)` here.
    for (k, t) in s.iter().enumerate().take(end).skip(i + 1) {
        if let Some(w) = t.word()
            && f.allowed.iter().any(|a| a == w)
        {
            return Some((k, Value::String(w.to_owned())));
        }
    }
    None
}

/// Whether the words before `i` (from `from`) or just after it deny, ask, plan or hedge it.
fn mood_at(s: &[T], from: usize, i: usize, b: usize) -> Mood {
    let mut mood = Mood::Asserted;
    for k in from..i {
        match &s[k].tok {
            Tok::Word(w) => {
                let w = w.as_str();
                if NEGATIONS.contains(&w)
                    || w.ends_with("n't")
                    || w == "cant"
                    || w == "dont"
                    || w == "didnt"
                {
                    // `not only`, `no problem`: no denial.
                    let next = s.get(k + 1).and_then(T::word);
                    let only = w == "not" && next == Some("only");
                    let idiom = w == "no"
                        && matches!(
                            next,
                            Some("problem" | "worries" | "issue" | "issues" | "longer")
                        );
                    if !only && !idiom {
                        return Mood::Negated;
                    }
                }
                let next = s.get(k + 1).and_then(T::word);
                // `as far as I can tell`, `as I could see`: no modal.
                let tell = matches!(w, "can" | "could") && matches!(next, Some("tell" | "see"));
                if (MODALS.contains(&w) || w.ends_with("'ll") || w.ends_with("'d")) && !tell {
                    mood = Mood::Open;
                }
                // `to be closed` plans; `seems to be mitigated` reads.
                let seems = k > 0
                    && s[k - 1].word().is_some_and(|p| {
                        matches!(
                            p,
                            "seems" | "seem" | "appears" | "appear" | "proved" | "turned"
                        )
                    });
                if w == "to" && next == Some("be") && !seems {
                    mood = Mood::Open;
                }
            }
            Tok::Punct('\u{274c}' | '\u{1f6ab}' | '\u{26d4}') => return Mood::Negated,
            Tok::Punct('\u{23f3}' | '\u{231b}') => mood = Mood::Open,
            _ => {}
        }
    }
    // After the verb: `closed once you confirm`, `close failed`.
    let ahead: Vec<&T> = s[i + 1..b.min(i + 5)].iter().collect();
    for (k, t) in ahead.iter().enumerate() {
        let next = ahead.get(k + 1).and_then(|t| t.word());
        match &t.tok {
            Tok::Word(w) if matches!(w.as_str(), "failed" | "unsuccessfully" | "fails") => {
                return Mood::Negated;
            }
            Tok::Word(w) if k < 2 && matches!(w.as_str(), "nothing" | "none" | "no") => {
                return Mood::Negated;
            }
            Tok::Word(w)
                if matches!(w.as_str(), "once" | "if" | "when" | "after")
                    && next == Some("you") =>
            {
                mood = Mood::Open
            }
            Tok::Word(w) if matches!(w.as_str(), "pending" | "awaiting") => mood = Mood::Open,
            Tok::Punct('\u{274c}' | '\u{1f6ab}') => return Mood::Negated,
            Tok::Punct('\u{23f3}') => mood = Mood::Open,
            _ => {}
        }
    }
    mood
}

/// Turns a predicate about a record into a claim (or a denial).
fn emit(
    p: &Pred,
    entity: Option<&(usize, String)>,
    text: &str,
    words: &[&str],
    vocab: &Vocabulary,
    reading: &mut Reading,
) {
    if p.mood == Mood::Open || (p.incomplete && p.mood != Mood::Negated) {
        return;
    }
    let negated = p.mood == Mood::Negated;
    let coll_of = |action: usize| vocab.actions[action].collection;
    let fits = |coll: Option<usize>| match (entity, coll) {
        (Some((c, _)), Some(ac)) => *c == ac,
        (Some(_), None) => true,
        (None, _) => true,
    };
    let id = entity.map(|(_, id)| id.as_str());
    let mut claim = Claim {
        text: text.to_owned(),
        kind: ClaimKind::Write,
        negated,
        tool: None,
        field: None,
        entity: id.map(str::to_owned),
        value: None,
        expect: Vec::new(),
        entity_arg: None,
        value_in_call: false,
    };
    match &p.what {
        What::Verb(actions) => {
            let Some(&action) = actions.iter().find(|&&a| fits(coll_of(a))) else {
                return;
            };
            let a = &vocab.actions[action];
            claim.tool = Some(a.tool.clone());
            claim.entity_arg = a.entity_arg.clone();
            if a.entity_arg.is_none() {
                claim.entity = None;
            }
            if entity.is_none()
                && a.collection.is_some()
                && vocab.collections[a.collection.unwrap_or_default()]
                    .path
                    .is_empty()
            {
                // A file tool's claim without a file is too vague to check.
                return;
            }
            // A verb alone ("the search returned nothing", "I sent you the details") claims
            // no write: a claim naming no record names what the tool acts on, or says "it".
            let named = a.nouns.is_empty()
                || vocab.collections.is_empty()
                || words.iter().any(|w| {
                    ANAPHORA.contains(w) || a.nouns.iter().any(|n| w.starts_with(n.as_str()))
                });
            if entity.is_none() && !named {
                return;
            }
            for e in &a.effects {
                let (path, expect) = match e {
                    Effect::Set { path, value } => (path, Expect::Equals(value.clone())),
                    Effect::Append { path } => (path, Expect::Grows),
                    Effect::Delete { path } => (path, Expect::Absent),
                };
                if let Some(p) = fill(path, a.entity_arg.as_deref(), id) {
                    claim.expect.push((p, expect));
                }
            }
        }
        What::Written { value } => {
            let v = &vocab.values[*value];
            let Some((action, path)) = v.writers.iter().find(|(a, _)| fits(coll_of(*a))) else {
                return;
            };
            let a = &vocab.actions[*action];
            claim.tool = Some(a.tool.clone());
            claim.entity_arg = a.entity_arg.clone();
            claim.field = Some(v.field.clone());
            claim.value = Some(v.value.clone());
            if let Some(p) = fill(path, a.entity_arg.as_deref(), id) {
                claim.expect.push((p, Expect::Equals(v.value.clone())));
            } else if entity.is_none() && a.collection.is_some() {
                return;
            }
        }
        What::FieldSet { field, value } => {
            let f = &vocab.fields[*field];
            let a = &vocab.actions[f.action];
            if !fits(a.collection) {
                return;
            }
            claim.tool = Some(a.tool.clone());
            claim.entity_arg = a.entity_arg.clone();
            claim.field = Some(f.name.clone());
            claim.value = value.clone();
            claim.value_in_call = true;
            if let (Some(v), Some(p)) = (value, fill(&f.path, a.entity_arg.as_deref(), id)) {
                claim.expect.push((p, Expect::Equals(v.clone())));
            }
            if entity.is_none()
                && a.collection.is_some()
                && claim.expect.is_empty()
                && value.is_none()
            {
                return;
            }
        }
        What::FieldRead { field, value } => {
            let f = &vocab.fields[*field];
            let a = &vocab.actions[f.action];
            if !fits(a.collection) {
                return;
            }
            let Some(p) = fill(&f.path, a.entity_arg.as_deref(), id) else {
                return;
            };
            claim.kind = ClaimKind::Read;
            claim.field = Some(f.name.clone());
            claim.value = Some(value.clone());
            claim.expect.push((p, Expect::Equals(value.clone())));
        }
        What::Read { value } => {
            let v = &vocab.values[*value];
            let path = match (v.collection, entity, &v.flat_path) {
                (Some(c), Some((ec, id)), _) if *ec == c => format!(
                    "{}/{}/{}",
                    vocab.collections[c].path,
                    gauntlet_model::path::escape_segment(id),
                    gauntlet_model::path::escape_segment(&v.field)
                ),
                (None, _, Some(flat)) => flat.clone(),
                _ => return,
            };
            claim.kind = ClaimKind::Read;
            claim.field = Some(v.field.clone());
            claim.value = Some(v.value.clone());
            claim.expect.push((path, Expect::Equals(v.value.clone())));
        }
    }
    let list = if negated {
        &mut reading.denials
    } else {
        &mut reading.claims
    };
    let same = |c: &Claim| {
        c.kind == claim.kind
            && c.tool == claim.tool
            && c.field == claim.field
            && c.value == claim.value
            && c.entity.as_deref().map(str::to_lowercase)
                == claim.entity.as_deref().map(str::to_lowercase)
    };
    if list.iter().any(same) {
        return;
    }
    if !negated && list.len() >= MAX_CLAIMS {
        reading.dropped += 1;
        return;
    }
    list.push(claim);
}

/// A handler path with the record's argument filled in (escaped as a pointer segment); `None`
/// when it needs an argument the claim does not give.
fn fill(path: &str, arg: Option<&str>, id: Option<&str>) -> Option<String> {
    let mut out = path.to_owned();
    if let (Some(arg), Some(id)) = (arg, id) {
        out = out.replace(
            &format!("{{{arg}}}"),
            &gauntlet_model::path::escape_segment(id),
        );
    }
    (!out.contains('{')).then_some(out)
}
