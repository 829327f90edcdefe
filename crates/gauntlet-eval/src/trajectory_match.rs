//! Trajectory match against a reference, with LangChain agentevals' semantics.
//!
//! Modes (`trajectory_match_mode`): `strict` (same messages, same roles, same tool calls per
//! message, in order), `unordered` (the same multiset of tool calls in any order), `subset` (the
//! agent's calls are all in the reference), `superset` (the reference's calls are all in the
//! agent's). Argument modes (`tool_args_match_mode`): `exact`, `ignore`, `subset` (the agent's
//! arguments are a subset of the reference's), `superset`; overrides per tool name give another
//! mode, or a list of key paths (`time.start`) that must be equal.
//!
//! agentevals pairs calls greedily (each reference call takes the first unused matching call),
//! which can miss a pairing that exists when argument modes are partial. `matching: optimal`
//! finds a maximum bipartite matching instead; `greedy` is the default, for agentevals parity.

use gauntlet_model::path::json_eq;
use serde_json::Value;

pub use gauntlet_model::matching::{ArgsMode, ArgsOverride, MatchConfig, MatchMode, Matching};

/// A tool call inside a message.
#[derive(Debug, Clone, PartialEq)]
pub struct CallRef {
    /// Tool name.
    pub name: String,
    /// Arguments (parsed JSON).
    pub args: Value,
}

/// A message of an OpenAI-style trajectory.
#[derive(Debug, Clone, PartialEq)]
pub struct Message {
    /// `user`, `assistant`, `tool` or `system`.
    pub role: String,
    /// The tool calls of an assistant message (`None` when it has none).
    pub tool_calls: Option<Vec<CallRef>>,
    /// The text.
    pub content: String,
}

/// An OpenAI-messages list that cannot be read: the user's input (a reference or a
/// trajectory written in that form).
#[derive(Debug, thiserror::Error)]
pub enum MessagesError {
    /// Neither a list, `{messages: [...]}` nor one message.
    #[error("expected a list of messages")]
    NotAList,
    /// A message without a role.
    #[error("message {message} has no role")]
    NoRole {
        /// The message's index.
        message: usize,
    },
    /// A tool call without a name.
    #[error("message {message} call {call} has no name")]
    NoName {
        /// The message's index.
        message: usize,
        /// The call's index in the message.
        call: usize,
    },
    /// A tool call whose `arguments` string is not JSON.
    #[error("message {message} call {call}: arguments are not JSON: {source}")]
    ArgumentsNotJson {
        /// The message's index.
        message: usize,
        /// The call's index in the message.
        call: usize,
        /// Why.
        source: serde_json::Error,
    },
}

impl gauntlet_model::Classified for MessagesError {
    fn kind(&self) -> gauntlet_model::ErrorKind {
        gauntlet_model::ErrorKind::InvalidInput
    }
}

/// How a trajectory does not match its reference.
///
/// A verdict on the agent's trial (it fails the `trajectory_*_match` score, with this as its
/// reason), not a failure of the user's input or of the harness: so it has no
/// [`gauntlet_model::ErrorKind`] and does not implement [`gauntlet_model::Classified`].
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Mismatch {
    /// Strict: a different number of messages.
    #[error("{got} messages, the reference has {reference}")]
    MessageCount {
        /// The trajectory's.
        got: usize,
        /// The reference's.
        reference: usize,
    },
    /// Strict: a message from another role.
    #[error("message {message} is from {got}, the reference's from {reference}")]
    Role {
        /// The message's index.
        message: usize,
        /// The trajectory's role.
        got: String,
        /// The reference's role.
        reference: String,
    },
    /// Strict: a message with another number of tool calls.
    #[error("message {message} has {got} tool calls, the reference's {reference}")]
    CallCount {
        /// The message's index.
        message: usize,
        /// The trajectory's.
        got: usize,
        /// The reference's.
        reference: usize,
    },
    /// Strict: a tool call the reference's message does not have.
    #[error("message {message}: unexpected tool call `{tool}` with arguments {arguments}")]
    UnexpectedCall {
        /// The message's index.
        message: usize,
        /// The tool.
        tool: String,
        /// Its arguments.
        arguments: Value,
    },
    /// Strict: one message has tool calls, the other none.
    #[error("message {message}: one side has tool calls, the other none")]
    OneSided {
        /// The message's index.
        message: usize,
    },
    /// A call of one side with no distinct partner on the other.
    #[error("missing tool call: expected `{tool}` with arguments {arguments}")]
    MissingCall {
        /// The tool.
        tool: String,
        /// Its arguments.
        arguments: Value,
    },
}

/// Reads an OpenAI-messages list (`[{role, content, tool_calls: [{function: {name, arguments}}]}]`,
/// or `{messages: [...]}`); `arguments` may be a JSON string or an object. Roles `ai` and
/// `human` are read as `assistant` and `user`.
pub fn messages_from_openai(v: &Value) -> Result<Vec<Message>, MessagesError> {
    let list = match v {
        Value::Array(a) => a,
        Value::Object(o) if o.contains_key("messages") => {
            return messages_from_openai(&o["messages"]);
        }
        Value::Object(o) if o.contains_key("role") => {
            return messages_from_openai(&Value::Array(vec![v.clone()]));
        }
        _ => return Err(MessagesError::NotAList),
    };
    list.iter()
        .enumerate()
        .map(|(i, m)| {
            let role = match m.get("role").and_then(Value::as_str) {
                Some("ai") => "assistant",
                Some("human") => "user",
                Some(r) => r,
                None => return Err(MessagesError::NoRole { message: i }),
            }
            .to_owned();
            let content = match m.get("content") {
                Some(Value::String(s)) => s.clone(),
                None | Some(Value::Null) => String::new(),
                Some(other) => other.to_string(),
            };
            let tool_calls = match m.get("tool_calls") {
                Some(Value::Array(calls)) if !calls.is_empty() => Some(
                    calls
                        .iter()
                        .enumerate()
                        .map(|(j, c)| {
                            let f = c.get("function").unwrap_or(c);
                            let name = f.get("name").and_then(Value::as_str).ok_or(
                                MessagesError::NoName {
                                    message: i,
                                    call: j,
                                },
                            )?;
                            let args = match f.get("arguments").or_else(|| f.get("args")) {
                                Some(Value::String(s)) => {
                                    serde_json::from_str(s).map_err(|source| {
                                        MessagesError::ArgumentsNotJson {
                                            message: i,
                                            call: j,
                                            source,
                                        }
                                    })?
                                }
                                Some(v) => v.clone(),
                                None => Value::Object(Default::default()),
                            };
                            Ok(CallRef {
                                name: name.to_owned(),
                                args,
                            })
                        })
                        .collect::<Result<Vec<_>, MessagesError>>()?,
                ),
                _ => None,
            };
            Ok(Message {
                role,
                tool_calls,
                content,
            })
        })
        .collect()
}

fn nested<'a>(v: &'a Value, path: &str) -> Option<&'a Value> {
    path.split('.')
        .try_fold(v, |cur, part| cur.as_object()?.get(part))
        .filter(|v| !v.is_null())
}

/// Arguments compared as the reference compares Python dicts: numbers by value (`20 == 20.0`).
fn args_match(mode: ArgsMode, actual: &Value, reference: &Value) -> bool {
    let contained = |small: &Value, big: &Value| match (small.as_object(), big.as_object()) {
        (Some(s), Some(b)) => s
            .iter()
            .all(|(k, v)| b.get(k).is_some_and(|w| json_eq(v, w))),
        _ => json_eq(small, big),
    };
    match mode {
        ArgsMode::Exact => json_eq(actual, reference),
        ArgsMode::Ignore => true,
        ArgsMode::Subset => contained(actual, reference),
        ArgsMode::Superset => contained(reference, actual),
    }
}

/// Whether two calls of `tool` match under a configuration (argument order as agentevals'
/// matcher: the first is the "output" call, the second the "reference" call).
fn calls_match(cfg: &MatchConfig, tool: &str, first: &Value, second: &Value) -> bool {
    match cfg.overrides.get(tool) {
        Some(ArgsOverride::Mode(m)) => args_match(*m, first, second),
        Some(ArgsOverride::Keys(keys)) => {
            keys.iter()
                .all(|k| match (nested(first, k), nested(second, k)) {
                    (Some(a), Some(b)) => json_eq(a, b),
                    (a, b) => a.is_none() && b.is_none(),
                })
        }
        None => args_match(cfg.args, first, second),
    }
}

fn all_calls(messages: &[Message]) -> Vec<&CallRef> {
    messages
        .iter()
        .filter_map(|m| m.tool_calls.as_ref())
        .flatten()
        .collect()
}

/// Pairs every left item with a distinct right item where `edge(l, r)` holds; the first left
/// item that cannot be paired, if any. Greedy takes the first free right item (agentevals);
/// optimal finds a maximum bipartite matching (Kuhn's augmenting paths).
fn pair_all(
    matching: Matching,
    left: usize,
    right: usize,
    edge: &dyn Fn(usize, usize) -> bool,
) -> Option<usize> {
    match matching {
        Matching::Greedy => {
            let mut used = vec![false; right];
            for l in 0..left {
                match (0..right).find(|&r| !used[r] && edge(l, r)) {
                    Some(r) => used[r] = true,
                    None => return Some(l),
                }
            }
            None
        }
        Matching::Optimal => {
            fn augment(
                l: usize,
                seen: &mut [bool],
                owner: &mut [Option<usize>],
                edge: &dyn Fn(usize, usize) -> bool,
            ) -> bool {
                for r in 0..owner.len() {
                    if edge(l, r) && !seen[r] {
                        seen[r] = true;
                        if owner[r].is_none_or(|o| augment(o, seen, owner, edge)) {
                            owner[r] = Some(l);
                            return true;
                        }
                    }
                }
                false
            }
            let mut owner = vec![None; right];
            (0..left).find(|&l| !augment(l, &mut vec![false; right], &mut owner, edge))
        }
    }
}

/// Whether every call of `reference` pairs with a distinct call of `outputs` (agentevals'
/// `_is_trajectory_superset`); the missing reference call when not.
fn is_superset(
    cfg: &MatchConfig,
    outputs: &[&CallRef],
    reference: &[&CallRef],
) -> Result<(), Mismatch> {
    let edge = |l: usize, o: usize| {
        let (r, o) = (reference[l], outputs[o]);
        r.name == o.name && calls_match(cfg, &r.name, &o.args, &r.args)
    };
    match pair_all(cfg.matching, reference.len(), outputs.len(), &edge) {
        None => Ok(()),
        Some(l) => Err(Mismatch::MissingCall {
            tool: reference[l].name.clone(),
            arguments: reference[l].args.clone(),
        }),
    }
}

/// Compares a trajectory with a reference; `Err` with how when they do not match.
pub fn trajectory_match(
    outputs: &[Message],
    reference: &[Message],
    cfg: &MatchConfig,
) -> Result<(), Mismatch> {
    match cfg.mode {
        MatchMode::Strict => {
            if outputs.len() != reference.len() {
                return Err(Mismatch::MessageCount {
                    got: outputs.len(),
                    reference: reference.len(),
                });
            }
            for (i, (o, r)) in outputs.iter().zip(reference).enumerate() {
                if o.role != r.role {
                    return Err(Mismatch::Role {
                        message: i,
                        got: o.role.clone(),
                        reference: r.role.clone(),
                    });
                }
                match (&o.tool_calls, &r.tool_calls) {
                    (None, None) => {}
                    (Some(oc), Some(rc)) => {
                        if oc.len() != rc.len() {
                            return Err(Mismatch::CallCount {
                                message: i,
                                got: oc.len(),
                                reference: rc.len(),
                            });
                        }
                        // Within one message, each output call takes a remaining reference call
                        // (agentevals compares the arguments output-first here).
                        let o_refs: Vec<&CallRef> = oc.iter().collect();
                        let r_refs: Vec<&CallRef> = rc.iter().collect();
                        let edge = |l: usize, r: usize| {
                            o_refs[l].name == r_refs[r].name
                                && calls_match(
                                    cfg,
                                    &o_refs[l].name,
                                    &o_refs[l].args,
                                    &r_refs[r].args,
                                )
                        };
                        if let Some(l) = pair_all(cfg.matching, o_refs.len(), r_refs.len(), &edge) {
                            return Err(Mismatch::UnexpectedCall {
                                message: i,
                                tool: o_refs[l].name.clone(),
                                arguments: o_refs[l].args.clone(),
                            });
                        }
                    }
                    _ => {
                        return Err(Mismatch::OneSided { message: i });
                    }
                }
            }
            Ok(())
        }
        MatchMode::Unordered => {
            let (o, r) = (all_calls(outputs), all_calls(reference));
            is_superset(cfg, &o, &r)?;
            is_superset(cfg, &r, &o)
        }
        MatchMode::Superset => is_superset(cfg, &all_calls(outputs), &all_calls(reference)),
        MatchMode::Subset => is_superset(cfg, &all_calls(reference), &all_calls(outputs)),
    }
}

/// The feedback key agentevals reports for a mode (`trajectory_strict_match`, ...).
pub fn feedback_key(mode: MatchMode) -> &'static str {
    match mode {
        MatchMode::Strict => "trajectory_strict_match",
        MatchMode::Unordered => "trajectory_unordered_match",
        MatchMode::Subset => "trajectory_subset_match",
        MatchMode::Superset => "trajectory_superset_match",
    }
}

#[cfg(test)]
mod tests {
    use gauntlet_model::matching::{ArgsMode, ArgsOverride, MatchMode};
    use serde_json::json;

    use super::*;

    fn messages(args: Value) -> Vec<Message> {
        messages_from_openai(&json!([
            {"role": "user", "content": "book it"},
            {"role": "assistant", "content": "", "tool_calls": [
                {"function": {"name": "book", "arguments": args.to_string()}}
            ]}
        ]))
        .unwrap()
    }

    /// Regression: `20` and `20.0` were different arguments, unlike the reference, which
    /// compares Python values.
    #[test]
    fn numbers_compare_by_value_in_every_mode_and_override() {
        let ints = messages(json!({"seats": 20, "fare": {"eur": 100}}));
        let floats = messages(json!({"seats": 20.0, "fare": {"eur": 100.0}}));
        for mode in [
            MatchMode::Strict,
            MatchMode::Unordered,
            MatchMode::Subset,
            MatchMode::Superset,
        ] {
            for args in [ArgsMode::Exact, ArgsMode::Subset, ArgsMode::Superset] {
                let cfg: MatchConfig = serde_json::from_value(json!({})).unwrap();
                let cfg = MatchConfig { mode, args, ..cfg };
                assert_eq!(
                    trajectory_match(&ints, &floats, &cfg),
                    Ok(()),
                    "{mode:?} {args:?}"
                );
            }
            let mut cfg: MatchConfig = serde_json::from_value(json!({})).unwrap();
            cfg.mode = mode;
            cfg.overrides
                .insert("book".into(), ArgsOverride::Keys(vec!["fare.eur".into()]));
            assert_eq!(
                trajectory_match(&ints, &floats, &cfg),
                Ok(()),
                "{mode:?} keys"
            );
            let other = messages(json!({"seats": 21, "fare": {"eur": 100}}));
            let mut exact: MatchConfig = serde_json::from_value(json!({})).unwrap();
            exact.mode = mode;
            assert!(
                trajectory_match(&ints, &other, &exact).is_err(),
                "{mode:?}: 20 is not 21"
            );
        }
    }
}
