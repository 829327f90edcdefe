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

    /// Redacts every string in the value, keys included.
    pub fn value(&self, v: &mut Value) {
        match v {
            Value::String(s) => {
                if let Cow::Owned(r) = self.text(s) {
                    *s = r;
                }
            }
            Value::Array(items) => items.iter_mut().for_each(|i| self.value(i)),
            Value::Object(map) => {
                let redacted_keys = map.keys().any(|k| matches!(self.text(k), Cow::Owned(_)));
                if redacted_keys {
                    let old = std::mem::take(map);
                    for (k, mut item) in old {
                        self.value(&mut item);
                        map.insert(self.text(&k).into_owned(), item);
                    }
                } else {
                    map.values_mut().for_each(|i| self.value(i));
                }
            }
            _ => {}
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
