//! What `expected_outcome` and `expected_final_state` mean: a literal or a matcher per path.
//!
//! Matchers are objects with one `$`-prefixed key, so a literal object value can never be read
//! as a matcher by accident: `{$equals: v}`, `{$absent: true}`, `{$present: true}`,
//! `{$contains: v}`, `{$regex: "..."}`, `{$range: {min, max}}`, `{$count: n | {min, max}}`,
//! `{$one_of: [v, ...]}`. A few keys are reserved for behaviour, not state: see [`ReservedKey`].

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// A check on one value of the final state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Matcher {
    /// Equal to the literal (JSON equality; `1` equals `1.0`).
    Equals(Value),
    /// The path does not exist.
    Absent,
    /// The path exists, whatever its value.
    Present,
    /// A string contains the text, an array contains the element, an object contains the key.
    Contains(Value),
    /// A string matches the regular expression.
    Regex(String),
    /// A number within the inclusive bounds.
    Range {
        /// Lower bound, if any.
        min: Option<f64>,
        /// Upper bound, if any.
        max: Option<f64>,
    },
    /// The number of elements of an array or entries of an object, within the bounds.
    Count {
        /// Lower bound, if any.
        min: Option<f64>,
        /// Upper bound, if any.
        max: Option<f64>,
    },
    /// Equal to one of the literals.
    OneOf(Vec<Value>),
}

/// The behavioural keys `expected_outcome` reserves; they are not paths into the state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReservedKey {
    /// `confirmation_required: true`: the agent asked for, and got, confirmation before each write.
    ConfirmationRequired,
    /// `question_required: true`: the agent asked the user a question before its first write
    /// (or at all, when it writes nothing): the request is ambiguous and must be clarified.
    QuestionRequired,
    /// `output_contains: text | [text]`: the final answer contains each text (case-insensitive).
    OutputContains,
    /// `output_not_contains: text | [text]`: the final answer contains none of the texts.
    OutputNotContains,
    /// `output_regex: pattern`: the final answer matches the regular expression.
    OutputRegex,
    /// `state_unchanged_elsewhere: true`: records no expectation names must not change.
    StateUnchangedElsewhere,
    /// `said_contains: text or [texts]`: each text appears in some message the agent sent the
    /// user (any turn or the final answer), ignoring case and commas (tau-bench's outputs rule).
    SaidContains,
}

impl ReservedKey {
    /// The reserved key a name designates, if any.
    pub fn parse(key: &str) -> Option<Self> {
        Some(match key {
            "confirmation_required" => Self::ConfirmationRequired,
            "question_required" => Self::QuestionRequired,
            "output_contains" => Self::OutputContains,
            "output_not_contains" => Self::OutputNotContains,
            "output_regex" => Self::OutputRegex,
            "state_unchanged_elsewhere" => Self::StateUnchangedElsewhere,
            "said_contains" => Self::SaidContains,
            _ => return None,
        })
    }
}

/// One parsed expectation on the final state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Expectation {
    /// The path, as written in the case.
    pub path: String,
    /// What must hold there.
    pub matcher: Matcher,
}

/// A matcher that cannot be understood; names the path and what is wrong.
#[derive(Debug, Clone, PartialEq)]
pub struct MatcherError {
    /// The expected_outcome key at fault.
    pub path: String,
    /// What is wrong, as a lowercase fragment.
    pub message: String,
}

/// Why a `$`-matcher cannot be read: the case's input, always.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum MatcherSyntaxError {
    /// A `$`-key shares its object with other keys.
    #[error("matcher `{0}` must be the only key of its object")]
    NotAlone(String),
    /// A bound other than `min` or `max`.
    #[error("unknown bound `{bound}` in `{matcher}` (expected min, max)")]
    UnknownBound {
        /// The bound written.
        bound: String,
        /// The matcher (`$range`, `$count`).
        matcher: String,
    },
    /// `min` or `max` that is not a number.
    #[error("`{matcher}.{bound}` must be a number, not {value}")]
    BoundNotANumber {
        /// The matcher (`$range`, `$count`).
        matcher: String,
        /// `min` or `max`.
        bound: String,
        /// What was written.
        value: Value,
    },
    /// Bounds that are neither a number nor `{min, max}`.
    #[error("`{matcher}` takes a number or {{min, max}}, not {value}")]
    BadBounds {
        /// The matcher (`$range`, `$count`).
        matcher: String,
        /// What was written.
        value: Value,
    },
    /// `$absent` or `$present` with something other than `true`.
    #[error("`{0}` takes `true`")]
    NotTrue(String),
    /// `$regex` with something other than a string.
    #[error("`$regex` takes a string, not {0}")]
    RegexNotAString(Value),
    /// `$one_of` with something other than a list.
    #[error("`$one_of` takes a list, not {0}")]
    OneOfNotAList(Value),
    /// A `$`-key that is no matcher.
    #[error(
        "unknown matcher `{0}` (expected $equals, $absent, $present, $contains, $regex, $range, $count, $one_of)"
    )]
    Unknown(String),
}

impl crate::Classified for MatcherSyntaxError {
    fn kind(&self) -> crate::ErrorKind {
        crate::ErrorKind::InvalidInput
    }
}

impl Matcher {
    /// Reads a literal or a `$`-matcher.
    pub fn from_json(value: &Value) -> Result<Matcher, MatcherSyntaxError> {
        let Value::Object(map) = value else {
            return Ok(Matcher::Equals(value.clone()));
        };
        let Some((key, arg)) = map.iter().next().filter(|(k, _)| k.starts_with('$')) else {
            if let Some(k) = map.keys().find(|k| k.starts_with('$')) {
                return Err(MatcherSyntaxError::NotAlone(k.clone()));
            }
            return Ok(Matcher::Equals(value.clone()));
        };
        if map.len() != 1 {
            return Err(MatcherSyntaxError::NotAlone(key.clone()));
        }
        let bounds = |arg: &Value| -> Result<(Option<f64>, Option<f64>), MatcherSyntaxError> {
            match arg {
                Value::Number(n) => Ok((n.as_f64(), n.as_f64())),
                Value::Object(b) => {
                    if let Some(k) = b.keys().find(|k| *k != "min" && *k != "max") {
                        return Err(MatcherSyntaxError::UnknownBound {
                            bound: k.clone(),
                            matcher: key.clone(),
                        });
                    }
                    let num = |name: &str| match b.get(name) {
                        None | Some(Value::Null) => Ok(None),
                        Some(Value::Number(n)) => Ok(n.as_f64()),
                        Some(other) => Err(MatcherSyntaxError::BoundNotANumber {
                            matcher: key.clone(),
                            bound: name.to_owned(),
                            value: other.clone(),
                        }),
                    };
                    Ok((num("min")?, num("max")?))
                }
                other => Err(MatcherSyntaxError::BadBounds {
                    matcher: key.clone(),
                    value: other.clone(),
                }),
            }
        };
        Ok(match key.as_str() {
            "$equals" => Matcher::Equals(arg.clone()),
            "$absent" | "$present" => {
                if arg != &Value::Bool(true) {
                    return Err(MatcherSyntaxError::NotTrue(key.clone()));
                }
                if key == "$absent" {
                    Matcher::Absent
                } else {
                    Matcher::Present
                }
            }
            "$contains" => Matcher::Contains(arg.clone()),
            "$regex" => match arg {
                Value::String(s) => Matcher::Regex(s.clone()),
                other => return Err(MatcherSyntaxError::RegexNotAString(other.clone())),
            },
            "$range" => {
                let (min, max) = bounds(arg)?;
                Matcher::Range { min, max }
            }
            "$count" => {
                let (min, max) = bounds(arg)?;
                Matcher::Count { min, max }
            }
            "$one_of" => match arg {
                Value::Array(items) => Matcher::OneOf(items.clone()),
                other => return Err(MatcherSyntaxError::OneOfNotAList(other.clone())),
            },
            other => {
                return Err(MatcherSyntaxError::Unknown(other.to_owned()));
            }
        })
    }
}

/// The state expectations of a case: `expected_final_state` (literals) then the non-reserved keys
/// of `expected_outcome` (literals or matchers).
pub fn state_expectations(
    expected_final_state: &Map<String, Value>,
    expected_outcome: &Map<String, Value>,
) -> Result<Vec<Expectation>, Vec<MatcherError>> {
    let mut out = Vec::new();
    let mut errors = Vec::new();
    for (k, v) in expected_final_state {
        out.push(Expectation {
            path: k.clone(),
            matcher: Matcher::Equals(v.clone()),
        });
    }
    for (k, v) in expected_outcome {
        if ReservedKey::parse(k).is_some() {
            continue;
        }
        if k.starts_with('/')
            && let Some(message) = crate::path::pointer_problem(k)
        {
            errors.push(MatcherError {
                path: k.clone(),
                message,
            });
            continue;
        }
        match Matcher::from_json(v) {
            Ok(matcher) => out.push(Expectation {
                path: k.clone(),
                matcher,
            }),
            Err(e) => errors.push(MatcherError {
                path: k.clone(),
                message: e.to_string(),
            }),
        }
    }
    if errors.is_empty() {
        Ok(out)
    } else {
        Err(errors)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn literals_and_plain_objects_are_equality() {
        assert_eq!(
            Matcher::from_json(&json!("closed")),
            Ok(Matcher::Equals(json!("closed")))
        );
        assert_eq!(
            Matcher::from_json(&json!({"status": "closed"})),
            Ok(Matcher::Equals(json!({"status": "closed"})))
        );
    }

    #[test]
    fn dollar_matchers_parse() {
        assert_eq!(
            Matcher::from_json(&json!({"$absent": true})),
            Ok(Matcher::Absent)
        );
        assert_eq!(
            Matcher::from_json(&json!({"$range": {"min": 1}})),
            Ok(Matcher::Range {
                min: Some(1.0),
                max: None
            })
        );
        assert_eq!(
            Matcher::from_json(&json!({"$count": 2})),
            Ok(Matcher::Count {
                min: Some(2.0),
                max: Some(2.0)
            })
        );
    }

    #[test]
    fn unknown_matcher_is_an_error() {
        let err = Matcher::from_json(&json!({"$equal": 1})).unwrap_err();
        assert!(
            err.to_string().contains("unknown matcher `$equal`"),
            "{err}"
        );
        let err = Matcher::from_json(&json!({"$equals": 1, "x": 2})).unwrap_err();
        assert!(err.to_string().contains("only key"), "{err}");
    }
}
