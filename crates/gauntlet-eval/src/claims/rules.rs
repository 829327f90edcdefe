//! A world's hand-written claim rules ([`ClaimRule`]): for what derivation cannot see. Each
//! match of a rule's pattern is one claim whose `holds` must be true in the final state;
//! [`rule_problems`] refuses rules that would mislead (a group the pattern lacks, a pattern
//! that matches empty text).

use gauntlet_model::matcher::state_expectations;
use gauntlet_model::{ClaimRule, Event, StateRef, Trajectory};
use regex::{Captures, Regex};
use serde_json::{Map, Value, json};

use super::grammar::MAX_CLAIMS;
use super::verify::Failure;
use crate::matching::matches;

/// What is wrong with a rule, and where: `pattern` or `holds`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuleProblem {
    /// The rule's field at fault.
    pub field: &'static str,
    /// The problem, in words.
    pub message: String,
}

/// The problems of one claim rule: a pattern the engine does not take or that matches empty
/// text (every position of an answer would be a claim), a `$n`/`${name}` in `holds` naming a
/// group the pattern lacks.
pub fn rule_problems(rule: &ClaimRule) -> Vec<RuleProblem> {
    let mut out = Vec::new();
    let re = match Regex::new(&rule.pattern) {
        Ok(re) => re,
        Err(e) => {
            out.push(RuleProblem {
                field: "pattern",
                message: format!("invalid regular expression `{}`: {e}", rule.pattern),
            });
            return out;
        }
    };
    let empty = regex_syntax::ParserBuilder::new()
        .build()
        .parse(&rule.pattern)
        .map(|hir| hir.properties().minimum_len() == Some(0))
        .unwrap_or(false);
    if empty {
        out.push(RuleProblem {
            field: "pattern",
            message: format!(
                "the pattern `{}` matches empty text, so every position of an answer would be a claim; make what it captures required",
                rule.pattern
            ),
        });
    }
    let names: Vec<&str> = re.capture_names().flatten().collect();
    let groups = re.captures_len();
    let mut refs = Vec::new();
    for (k, v) in &rule.holds {
        references(k, &mut refs);
        value_references(v, &mut refs);
    }
    for r in refs {
        let known = match r.parse::<usize>() {
            Ok(n) => n < groups,
            Err(_) => names.contains(&r.as_str()),
        };
        if !known {
            let hint = match r.find(|c: char| !c.is_ascii_digit()) {
                Some(i) if i > 0 => format!(
                    " (write `${{{}}}{}` for group {} followed by text)",
                    &r[..i],
                    &r[i..],
                    &r[..i]
                ),
                _ => String::new(),
            };
            out.push(RuleProblem {
                field: "holds",
                message: format!(
                    "`${r}` names no group of the pattern `{}`, which has {} group{}{hint}",
                    rule.pattern,
                    groups - 1,
                    if groups == 2 { "" } else { "s" }
                ),
            });
        }
    }
    out
}

/// The group references in a template, as the regex crate's `expand` reads them: `$name` takes
/// the longest run of letters, digits and `_`; `${name}` is braced; `$$` is a dollar.
fn references(text: &str, out: &mut Vec<String>) {
    let b = text.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] != b'$' {
            i += 1;
            continue;
        }
        if b.get(i + 1) == Some(&b'$') {
            i += 2;
            continue;
        }
        if b.get(i + 1) == Some(&b'{') {
            if let Some(end) = text[i + 2..].find('}') {
                out.push(text[i + 2..i + 2 + end].to_owned());
                i += end + 3;
                continue;
            }
            i += 1;
            continue;
        }
        let start = i + 1;
        let mut j = start;
        while j < b.len() && (b[j].is_ascii_alphanumeric() || b[j] == b'_') {
            j += 1;
        }
        if j > start {
            out.push(text[start..j].to_owned());
        }
        i = j.max(i + 1);
    }
}

fn value_references(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::String(s) => references(s, out),
        Value::Array(items) => items.iter().for_each(|i| value_references(i, out)),
        Value::Object(m) => m.iter().for_each(|(k, v)| {
            references(k, out);
            value_references(v, out)
        }),
        _ => {}
    }
}

/// `$1`, `${name}`... replaced by the match's groups, read as [`references`] reads them; in a
/// path (`pointer`) each group is escaped as a JSON Pointer segment, as a handler's `{arg}` is.
fn substitute(text: &str, caps: &Captures<'_>, pointer: bool) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        let (name, used) = if let Some(r) = after.strip_prefix('$') {
            out.push('$');
            rest = r;
            continue;
        } else if let Some(braced) = after.strip_prefix('{') {
            match braced.find('}') {
                Some(end) => (&braced[..end], end + 2),
                None => ("", 0),
            }
        } else {
            let end = after
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(after.len());
            (&after[..end], end)
        };
        if used == 0 || name.is_empty() {
            out.push('$');
            rest = after;
            continue;
        }
        let group = match name.parse::<usize>() {
            Ok(n) => caps.get(n),
            Err(_) => caps.name(name),
        };
        let g = group.map_or("", |m| m.as_str());
        if pointer {
            out.push_str(&gauntlet_model::path::escape_segment(g));
        } else {
            out.push_str(g);
        }
        rest = &after[used..];
    }
    out.push_str(rest);
    out
}

fn substitute_value(v: &Value, caps: &Captures<'_>) -> Value {
    match v {
        Value::String(s) => Value::String(substitute(s, caps, false)),
        Value::Array(items) => {
            Value::Array(items.iter().map(|i| substitute_value(i, caps)).collect())
        }
        Value::Object(m) => Value::Object(
            m.iter()
                .map(|(k, v)| (k.clone(), substitute_value(v, caps)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// A claim a rule matched, judged.
#[derive(Debug, Clone)]
pub struct RuleClaim {
    /// The matched text.
    pub text: String,
    /// Whether it claims a write.
    pub write: bool,
    /// Why it does not hold.
    pub failed: Option<Failure>,
    /// The state paths that did not hold.
    pub unmet: Vec<Value>,
    /// The calls on what the claim names.
    pub events: Vec<usize>,
}

/// The claims the rules find in the answer (at most `limit`), each judged against the final
/// state; an unmet write claim is `no_effect` when a call names what it captured, `absent`
/// otherwise.
pub fn rule_claims(
    answer: &str,
    trajectory: &Trajectory,
    final_state: StateRef<'_>,
    rules: &[ClaimRule],
) -> Vec<RuleClaim> {
    let mut out = Vec::new();
    for rule in rules {
        // Patterns are checked when the suite loads; a bad one claims nothing here.
        let Ok(re) = Regex::new(&rule.pattern) else {
            continue;
        };
        for caps in re.captures_iter(answer) {
            let Some(m) = caps.get(0).filter(|m| !m.is_empty()) else {
                continue;
            };
            if out.len() >= MAX_CLAIMS {
                return out;
            }
            let expected: Map<String, Value> = rule
                .holds
                .iter()
                .map(|(k, v)| (substitute(k, &caps, true), substitute_value(v, &caps)))
                .collect();
            let Ok(expectations) = state_expectations(&Map::new(), &expected) else {
                continue;
            };
            let unmet: Vec<Value> = expectations
                .iter()
                .filter_map(|e| {
                    let actual = final_state.resolve(&e.path);
                    let actual = actual.as_deref();
                    (!matches(&e.matcher, actual))
                        .then(|| json!({"path": e.path, "expected": e.matcher, "actual": actual}))
                })
                .collect();
            let about: Vec<&str> = caps
                .iter()
                .skip(1)
                .flatten()
                .map(|m| m.as_str())
                .filter(|s| !s.is_empty())
                .collect();
            let events: Vec<usize> = trajectory
                .events
                .iter()
                .enumerate()
                .filter_map(|(i, e)| {
                    let Event::ToolCall(c) = e else { return None };
                    let args = c.arguments.to_string();
                    about.iter().any(|a| args.contains(a)).then_some(i)
                })
                .collect();
            let failed = match (unmet.is_empty(), rule.write, events.is_empty()) {
                (true, _, _) => None,
                (false, false, _) => Some(Failure::State),
                (false, true, true) => Some(Failure::Absent),
                (false, true, false) => Some(Failure::NoEffect),
            };
            out.push(RuleClaim {
                text: m.as_str().to_owned(),
                write: rule.write,
                failed,
                unmet,
                events,
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(pattern: &str, holds: Value) -> ClaimRule {
        serde_json::from_value(json!({"pattern": pattern, "holds": holds})).unwrap()
    }

    #[test]
    fn a_holds_naming_a_group_the_pattern_lacks_is_refused() {
        for (pattern, path) in [
            (r"(INC-\d+) is closed", "/incidents/$9/status"),
            (r"(INC-\d+) is closed", "/incidents/$2/status"),
            (r"(INC-\d+) is closed", "/incidents/$1x/status"),
            (r"(?P<id>INC-\d+) is closed", "/incidents/${name}/status"),
        ] {
            let p = rule_problems(&rule(pattern, json!({path: "closed"})));
            assert_eq!(p.len(), 1, "{pattern} {path}: {p:?}");
            assert_eq!(p[0].field, "holds");
        }
        let p = rule_problems(&rule(
            r"(INC-\d+) is closed",
            json!({"/incidents/$1x/status": "closed"}),
        ));
        assert!(p[0].message.contains("${1}x"), "{}", p[0].message);
        for (pattern, path) in [
            (r"(INC-\d+) is closed", "/incidents/$1/status"),
            (r"(INC-\d+) is closed", "/incidents/${1}/status"),
            (r"(?P<id>INC-\d+) is closed", "/incidents/$id/status"),
            (r"(INC-\d+) costs \$5", "/incidents/$1/cost$$"),
        ] {
            assert_eq!(
                rule_problems(&rule(pattern, json!({path: "closed"}))),
                vec![],
                "{pattern} {path}"
            );
        }
        // In a value too.
        let p = rule_problems(&rule(
            r"(INC-\d+) is now assigned",
            json!({"/incidents/$1/assignee": "$2"}),
        ));
        assert_eq!(p.len(), 1);
    }

    #[test]
    fn a_pattern_that_matches_empty_text_is_refused() {
        for pattern in [r"(INC-\d+)?", r"x*", r"\b", r"(?m)^", r"a|"] {
            let p = rule_problems(&rule(pattern, json!({"/a": 1})));
            assert!(p.iter().any(|p| p.field == "pattern"), "{pattern}: {p:?}");
        }
        assert_eq!(
            rule_problems(&rule(
                r"(INC-\d+) is closed",
                json!({"/incidents/$1/status": "closed"})
            )),
            vec![]
        );
    }
}
