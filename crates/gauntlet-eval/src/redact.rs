//! Redaction: secrets and personal data taken out of text before it is written anywhere.
//!
//! The same rules as the `secrets_and_pii` evaluator (`safety::RULES`, card numbers confirmed by
//! issuer and Luhn), widened (`WIDER`: a secret token glued to a word, an e-mail address with
//! letters beyond ASCII), the planted canaries, and a policy's own patterns. Unlike the
//! evaluator, nothing is exempt: what the user typed is redacted too.

use std::borrow::Cow;
use std::sync::LazyLock;

use gauntlet_model::digest::sha256_hex;
use gauntlet_model::online::{Redaction, RedactionMode};
use gauntlet_model::trajectory::{TextsMut, Trajectory};
use regex::Regex;
use serde_json::Value;

use crate::safety::{EACH, RULES, SET, card_number};

/// What redaction finds beyond the evaluator's rules, named as the rule each widens:
/// - secret tokens without the word boundary before them, so a token glued to a word
///   (`key_sk-proj-…`, `token=ghp_…` is already apart) is found too;
/// - e-mail addresses whose local part or domain has letters beyond ASCII (IDN:
///   `josé@exämple.de`, `用户@例子.广告`), the domain's last label letters or punycode.
const WIDER: &[(&str, &str)] = &[
    ("aws_access_key_id", r"(?:AKIA|ASIA)[0-9A-Z]{16}"),
    ("github_token", r"gh[pousr]_[A-Za-z0-9]{36,}"),
    ("slack_token", r"xox[baprs]-[A-Za-z0-9-]{10,}"),
    ("openai_api_key", r"sk-(?:proj-)?[A-Za-z0-9_-]{20,}"),
    (
        "email_address",
        r"[\p{L}\p{M}\p{N}._%+-]+@[\p{L}\p{M}\p{N}-]+(?:\.[\p{L}\p{M}\p{N}-]+)*\.(?:xn--[A-Za-z0-9-]+|[\p{L}\p{M}]{2,})",
    ),
];

static WIDER_SET: LazyLock<regex::RegexSet> =
    LazyLock::new(|| regex::RegexSet::new(WIDER.iter().map(|(_, r)| *r)).expect("valid rules"));
static WIDER_EACH: LazyLock<Vec<Regex>> = LazyLock::new(|| {
    WIDER
        .iter()
        .map(|(_, r)| Regex::new(r).expect("valid rule"))
        .collect()
});

/// Every rule of the evaluator's (without its word boundaries) and every wider one, as one
/// expression. A finding of any rule is a match of this one, since taking an assertion out of a
/// pattern only lets it match more; so a string this does not match, which is most strings,
/// has nothing to redact by those rules and costs one pass.
static ANY: LazyLock<Regex> = LazyLock::new(|| {
    let loosened = RULES.iter().map(|(_, r)| r.replace(r"\b", ""));
    let wider = WIDER.iter().map(|(_, r)| (*r).to_owned());
    let any: Vec<String> = loosened.chain(wider).map(|r| format!("(?:{r})")).collect();
    Regex::new(&any.join("|")).expect("valid rules")
});

/// Whether an `sk-` token found without a word boundary before it looks like a key rather than
/// the end of a hyphenated word (`risk-assessment-for-the-board-2024`): a run of at least 16
/// letters and digits that mixes both.
fn key_like(found: &str) -> bool {
    found.split(['-', '_']).any(|run| {
        run.len() >= 16
            && run.bytes().any(|b| b.is_ascii_digit())
            && run.bytes().any(|b| b.is_ascii_alphabetic())
    })
}

/// Redaction settings that do not compile: the policy's input.
#[derive(Debug, thiserror::Error)]
pub enum RedactionError {
    /// One extra pattern is not a regular expression.
    #[error("redaction pattern `{name}`: {source}")]
    Pattern {
        /// The pattern's name.
        name: String,
        /// Why.
        source: regex::Error,
    },
    /// The extra patterns do not compile as one set (together they are too big).
    #[error("redaction patterns: {0}")]
    Patterns(#[source] regex::Error),
}

impl gauntlet_model::Classified for RedactionError {
    fn kind(&self) -> gauntlet_model::ErrorKind {
        gauntlet_model::ErrorKind::InvalidInput
    }
}

/// Redacts text and JSON values.
pub struct Redactor {
    mode: RedactionMode,
    key: String,
    canaries: Vec<String>,
    extra: Vec<(String, Regex)>,
    /// The extra patterns as one set: most text matches nothing, found in one pass.
    extra_set: regex::RegexSet,
}

impl Redactor {
    /// A redactor for a policy's settings and canaries; `key` keys the hashes of `hash` mode.
    /// An invalid pattern is named in the error.
    pub fn new(
        settings: &Redaction,
        canaries: &[String],
        key: &str,
    ) -> Result<Self, RedactionError> {
        let extra = settings
            .patterns
            .iter()
            .map(|p| {
                Regex::new(&p.regex)
                    .map(|r| (p.name.clone(), r))
                    .map_err(|source| RedactionError::Pattern {
                        name: p.name.clone(),
                        source,
                    })
            })
            .collect::<Result<Vec<_>, _>>()?;
        let extra_set = regex::RegexSet::new(extra.iter().map(|(_, r)| r.as_str()))
            .map_err(RedactionError::Patterns)?;
        Ok(Redactor {
            mode: settings.mode,
            key: key.to_owned(),
            canaries: canaries.iter().filter(|c| !c.is_empty()).cloned().collect(),
            extra,
            extra_set,
        })
    }

    fn replacement(&self, rule: &str, found: &str) -> String {
        match self.mode {
            RedactionMode::Redact => format!("[REDACTED:{rule}]"),
            RedactionMode::Hash => {
                let h = sha256_hex(format!("{}\u{0}{found}", self.key).as_bytes());
                format!("[{rule}:{}]", &h[..16])
            }
        }
    }

    /// The text with every finding replaced.
    pub fn text<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let canary = self.canaries.iter().any(|c| text.contains(c.as_str()));
        let extra = !self.extra.is_empty() && self.extra_set.is_match(text);
        if !canary && !extra && !ANY.is_match(text) {
            return Cow::Borrowed(text);
        }
        self.replaced(text, self.findings(text))
    }

    /// Where each rule, canary and own pattern is found in the text: (start, end, rule).
    fn findings<'r>(&'r self, text: &str) -> Vec<(usize, usize, &'r str)> {
        let mut found: Vec<(usize, usize, &str)> = Vec::new();
        for c in &self.canaries {
            found.extend(
                text.match_indices(c.as_str())
                    .map(|(i, m)| (i, i + m.len(), "canary")),
            );
        }
        // One pass over the text finds which rules match at all; only those are run for where.
        for i in SET.matches(text).iter() {
            let name = RULES[i].0;
            for m in EACH[i].find_iter(text) {
                if name == "credit_card" && !card_number(m.as_str()) {
                    continue;
                }
                found.push((m.start(), m.end(), name));
            }
        }
        for i in WIDER_SET.matches(text).iter() {
            let name = WIDER[i].0;
            for m in WIDER_EACH[i].find_iter(text) {
                if name == "openai_api_key" && !key_like(m.as_str()) {
                    continue;
                }
                found.push((m.start(), m.end(), name));
            }
        }
        for i in self.extra_set.matches(text).iter() {
            let (name, r) = &self.extra[i];
            found.extend(
                r.find_iter(text)
                    .map(|m| (m.start(), m.end(), name.as_str())),
            );
        }
        found
    }

    /// The text with its findings replaced.
    fn replaced<'a>(&self, text: &'a str, mut found: Vec<(usize, usize, &str)>) -> Cow<'a, str> {
        if found.is_empty() {
            return Cow::Borrowed(text);
        }
        // Overlapping findings merge into one, named by the first.
        found.sort_by_key(|&(start, end, _)| (start, std::cmp::Reverse(end)));
        let mut out = String::with_capacity(text.len());
        let mut at = 0;
        let mut iter = found.into_iter().peekable();
        while let Some((start, mut end, rule)) = iter.next() {
            if start < at {
                continue;
            }
            while let Some(&(s, e, _)) = iter.peek() {
                if s >= end {
                    break;
                }
                end = end.max(e);
                iter.next();
            }
            out.push_str(&text[at..start]);
            out.push_str(&self.replacement(rule, &text[start..end]));
            at = end;
        }
        out.push_str(&text[at..]);
        Cow::Owned(out)
    }

    /// Redacts every text and JSON value of a trajectory in place: what redacting its JSON form
    /// would do, without making it.
    pub fn trajectory(&self, t: &mut Trajectory) {
        struct Redacting<'r>(&'r Redactor);
        impl TextsMut for Redacting<'_> {
            fn text(&mut self, text: &mut String) {
                if let Cow::Owned(r) = self.0.text(text) {
                    *text = r;
                }
            }
            fn value(&mut self, value: &mut Value) {
                self.0.value(value);
            }
        }
        t.texts_mut(&mut Redacting(self));
    }

    /// Redacts every string in the value, keys included; whether anything was redacted.
    pub fn value(&self, v: &mut Value) -> bool {
        match v {
            Value::String(s) => match self.text(s) {
                Cow::Owned(r) => {
                    *s = r;
                    true
                }
                Cow::Borrowed(_) => false,
            },
            // Every item is redacted, whatever an earlier one gave.
            Value::Array(items) => items.iter_mut().fold(false, |any, i| self.value(i) | any),
            Value::Object(map) => {
                let redacted_keys = map.keys().any(|k| matches!(self.text(k), Cow::Owned(_)));
                if redacted_keys {
                    let old = std::mem::take(map);
                    for (k, mut item) in old {
                        self.value(&mut item);
                        map.insert(self.text(&k).into_owned(), item);
                    }
                    true
                } else {
                    map.values_mut().fold(false, |any, i| self.value(i) | any)
                }
            }
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use gauntlet_model::online::Pattern;
    use serde_json::json;

    use super::*;

    fn redactor(mode: RedactionMode) -> Redactor {
        Redactor::new(
            &Redaction {
                mode,
                patterns: vec![Pattern {
                    name: "employee_id".into(),
                    regex: r"EMP-\d{6}".into(),
                }],
            },
            &["CANARY-7f3a".to_owned()],
            "k",
        )
        .unwrap()
    }

    #[test]
    fn secrets_personal_data_canaries_and_own_patterns_are_taken_out() {
        let r = redactor(RedactionMode::Redact);
        let text = "mail ann@example.com, card 4111 1111 1111 1111, key AKIAABCDEFGHIJKLMNOP, \
                    CANARY-7f3a and EMP-123456; order 1234 5678 stays";
        let out = r.text(text);
        for gone in [
            "ann@example.com",
            "4111 1111 1111 1111",
            "AKIAABCDEFGHIJKLMNOP",
            "CANARY-7f3a",
            "EMP-123456",
        ] {
            assert!(!out.contains(gone), "{gone} in {out}");
        }
        assert!(out.contains("[REDACTED:email_address]"), "{out}");
        assert!(out.contains("[REDACTED:canary]"), "{out}");
        assert!(out.contains("order 1234 5678 stays"), "{out}");
        assert!(matches!(r.text("nothing here"), Cow::Borrowed(_)));
    }

    /// Regression: a key glued to a word character (`key_sk-proj-…`: the rule wanted a word
    /// boundary before `sk-`) and e-mail addresses with letters beyond ASCII (`josé@exämple.de`,
    /// `用户@例子.广告`) went through unredacted.
    #[test]
    fn a_glued_key_and_international_email_addresses_are_taken_out() {
        let r = redactor(RedactionMode::Redact);
        let key = "sk-proj-abc123def456ghi789jkl012mno345pqr";
        for (text, gone, rule) in [
            (format!("key_{key}"), key, "openai_api_key"),
            (format!("export KEY={key}x"), key, "openai_api_key"),
            (
                "token:ghp_abcdefghijklmnopqrstuvwxyz0123456789AB".to_owned(),
                "ghp_abcdefghijklmnopqrstuvwxyz0123456789AB",
                "github_token",
            ),
            (
                "mail josé@exämple.de today".to_owned(),
                "josé@exämple.de",
                "email_address",
            ),
            (
                "联系 用户@例子.广告 谢谢".to_owned(),
                "用户@例子.广告",
                "email_address",
            ),
            (
                "ann@bücher.example and ivan@пример.рф".to_owned(),
                "@bücher.example",
                "email_address",
            ),
            (
                "to иван@пример.xn--p1ai.".to_owned(),
                "иван@пример.xn--p1ai",
                "email_address",
            ),
        ] {
            let out = r.text(&text);
            assert!(!out.contains(gone), "{gone} in {out}");
            assert!(out.contains(&format!("[REDACTED:{rule}]")), "{out}");
        }
        let out = r.text("ann@bücher.example and ivan@пример.рф");
        assert!(!out.contains("ivan@пример.рф"), "{out}");
        assert_eq!(
            r.text("to иван@пример.xn--p1ai."),
            "to [REDACTED:email_address]."
        );
        // Hyphenated words ending in `sk` are not keys.
        for text in [
            "the risk-assessment-for-the-quarter-2024 is due",
            "a task-force-of-twenty-five-people",
        ] {
            assert!(matches!(r.text(text), Cow::Borrowed(_)), "{text}");
        }
    }

    proptest::proptest! {
        /// The one-pass check lets through only text in which the rules find nothing: on
        /// random text built from near-misses and real findings of every rule, glued to words,
        /// digits, punctuation and letters beyond ASCII.
        #[test]
        fn text_the_single_pass_lets_through_has_no_findings(
            parts in proptest::collection::vec(proptest::sample::select(vec![
                "ann@example.com", "josé@exämple.de", "用户@例子.广告", "a@b", "x@y.z", "@", "a@.b.cd",
                "AKIAABCDEFGHIJKLMNOP", "ASIA", "AKIA0123", "-----BEGIN RSA PRIVATE KEY-----",
                "-----BEGIN", "ghp_abcdefghijklmnopqrstuvwxyz0123456789", "gho_", "xoxb-1234567890ab",
                "xox", "sk-proj-abc123def456ghi789jkl0", "sk-", "risk-assessment-for-the-board",
                "eyJhbGciOiJI.eyJzdWIiOiIx.SflKxwRJSMeK", "eyJ", "123-45-6789", "123-45",
                "4111 1111 1111 1111", "4111-1111", "0123456789012", "EMP-123456", "EMP-12",
                "CANARY-7f3a", "CANARY", " ", "-", "_", ".", "\n", "\"", "word", "ünï", "к", "7",
                "+", "%",
            ]), 0..12)
        ) {
            let r = redactor(RedactionMode::Redact);
            let text = parts.concat();
            if matches!(r.text(&text), Cow::Borrowed(_)) {
                proptest::prop_assert!(r.findings(&text).is_empty(), "{text}");
            }
        }
    }

    #[test]
    fn hashes_are_stable_per_value_and_keyed() {
        let r = redactor(RedactionMode::Hash);
        let a = r.text("ann@example.com");
        assert_eq!(a, r.text("ann@example.com"));
        assert_ne!(a, r.text("bob@example.com"));
        assert!(a.starts_with("[email_address:"), "{a}");
        let other = Redactor::new(&Redaction::default(), &[], "other").unwrap();
        assert_ne!(
            Redactor::new(
                &Redaction {
                    mode: RedactionMode::Hash,
                    patterns: vec![]
                },
                &[],
                "other"
            )
            .unwrap()
            .text("ann@example.com"),
            a
        );
        assert_eq!(other.text("x@y.io"), "[REDACTED:email_address]");
    }

    #[test]
    fn json_values_are_redacted_everywhere_keys_included() {
        let r = redactor(RedactionMode::Redact);
        let mut v =
            json!({"to": ["ann@example.com"], "ann@example.com": {"note": "CANARY-7f3a"}, "n": 3});
        r.value(&mut v);
        let text = v.to_string();
        assert!(
            !text.contains("ann@example.com") && !text.contains("CANARY-7f3a"),
            "{text}"
        );
        assert_eq!(v["n"], 3);
    }

    /// Redacting a trajectory in place gives what redacting its JSON form gives, on a
    /// trajectory with every kind of event whose every text holds personal data.
    #[test]
    fn a_trajectory_redacted_in_place_is_its_json_form_redacted() {
        let pii = "ann@example.com CANARY-7f3a EMP-123456";
        let mut texts = 0;
        let mut text = || {
            texts += 1;
            format!("t{texts} {pii}")
        };
        let call = json!({"type": "tool_call", "id": text(), "step": 1, "tool": text(),
            "arguments": {text(): [text(), 4111_1111_1111_1111u64, {"k": text()}]},
            "kind": "write", "schema_valid": true, "result": {"r": text()},
            "error": {"status": 500, "message": text(), "retry_after_s": 1.0},
            "fault": "timeout", "idempotency_key": text(),
            "state_changes": [{"path": text(), "before": text(), "after": {"a": text()}}],
            "idempotent_replay": true, "at_ms": 1.0, "recorded_output": [text()],
            "latency_ms": 2.0});
        let events = json!([
            {"type": "user_message", "text": text()},
            {"type": "agent_message", "step": 1, "text": text()},
            {"type": "reasoning", "step": 1, "text": text()},
            {"type": "question", "step": 1, "text": text()},
            {"type": "confirmation_request", "step": 1, "text": text()},
            {"type": "confirmation_response", "text": text(), "approved": true},
            {"type": "fault_injected", "call_id": text(), "tool": text(), "kind": "timeout",
             "source": text()},
            {"type": "cross_tenant_access", "call_id": text(), "tool": text(),
             "record": text(), "tenant": text()},
            {"type": "wait", "step": 1, "ms": 5.0},
            call,
            {"type": "model_call", "model": text(), "prompt_tokens": 1, "completion_tokens": 2,
             "cost_eur": 0.1, "latency_ms": 3.0, "ttft_ms": 1.0, "simulated_user": true,
             "at_ms": 1.0, "error": {"status": 429, "message": text()}, "fault": "timeout"},
            {"type": "agent_stderr", "text": text()},
            {"type": "tools_changed", "tools": [text(), text()], "after_calls": 2},
            {"type": "trapped", "checkpoint": text(), "step": 2, "reason": text()},
            {"type": "unfinished", "reason": text()},
            {"type": "final_answer", "text": text()},
        ]);
        let json = json!({"events": events, "final_answer": text(), "side_effects": [
            {"tool": text(), "idempotency_key": text(), "effect": text(), "count": 2,
             "call_ids": [text(), text()]}]});
        let mut typed: Trajectory = serde_json::from_value(json.clone()).expect("a trajectory");
        assert_eq!(
            serde_json::to_value(&typed).unwrap(),
            json,
            "the fixture reads back whole"
        );
        let r = redactor(RedactionMode::Redact);
        let mut as_json = json;
        assert!(r.value(&mut as_json));
        r.trajectory(&mut typed);
        let typed = serde_json::to_value(&typed).unwrap();
        assert_eq!(typed, as_json);
        let written = typed.to_string();
        for gone in ["ann@example.com", "CANARY-7f3a", "EMP-123456"] {
            assert!(!written.contains(gone), "{gone} in {written}");
        }
        for i in 1..=texts {
            assert!(
                written.contains(&format!("t{i} [REDACTED")),
                "text {i} of {texts}"
            );
        }
    }

    #[test]
    fn a_bad_pattern_is_named() {
        let err = Redactor::new(
            &Redaction {
                mode: RedactionMode::Redact,
                patterns: vec![Pattern {
                    name: "broken".into(),
                    regex: "(".into(),
                }],
            },
            &[],
            "k",
        )
        .err()
        .unwrap();
        assert!(err.to_string().contains("broken"), "{err}");
        assert!(matches!(err, RedactionError::Pattern { .. }), "{err:?}");
    }
}
