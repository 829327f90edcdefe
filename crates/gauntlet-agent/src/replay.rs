//! The replay agent: re-executes, in today's world, the tool calls of recorded trajectories, so
//! old runs are re-scored against current worlds and evaluators, and a changed world shows.
//!
//! It reads gauntlet's `trials.jsonl` (or a run folder), OpenAI-messages logs (`{"case_id",
//! "epoch"?, "messages": [...]}` per line or in an array) and tau-bench's historical trajectory
//! files (`[{"task_id", "trial", "traj": [...]}]`, matched to cases `PREFIX + task_id`, PREFIX
//! `airline-test-` unless `replay:FILE#PREFIX` says otherwise), and folders of AgentDojo run
//! logs (see [`agentdojo_runs`]). Each call's recorded output is
//! kept beside today's (`recorded_output`); the recorded final answer is given again.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::agent::{Agent, AgentError, AgentInput, AgentOutput, BoxFuture};
use crate::environment::{SharedEnv, lock};

/// One recorded action of the agent.
#[derive(Debug, Clone)]
enum Action {
    Call {
        step: u32,
        tool: String,
        args: Value,
        key: Option<String>,
        recorded: Option<Value>,
    },
    Confirm {
        step: u32,
        text: String,
    },
    Ask {
        step: u32,
        text: String,
    },
    Say {
        step: u32,
        text: String,
    },
    Wait {
        step: u32,
        ms: f64,
    },
}

#[derive(Debug, Clone, Default)]
struct Recorded {
    actions: Vec<Action>,
    answer: Option<String>,
    /// Why the recorded episode never ended, when it did not: the replay then fails the same way.
    unfinished: Option<String>,
}

/// Whether a tau-bench episode ended: the user said `###STOP###` or the agent transferred to a
/// human. Otherwise tau-bench's step limit cut it off, and tau-bench scored it 0 unjudged.
fn tau_episode_ended(traj: &[Value]) -> bool {
    traj.iter().any(|m| {
        (m["role"] == "user"
            && m["content"]
                .as_str()
                .is_some_and(|c| c.contains("###STOP###")))
            || m["tool_calls"].as_array().is_some_and(|calls| {
                calls
                    .iter()
                    .any(|c| c["function"]["name"] == "transfer_to_human_agents")
            })
    })
}

/// Replays recorded tool calls.
pub struct ReplayAgent {
    trials: HashMap<(String, u32), Recorded>,
}

/// Reads an OpenAI-messages log. A tool message answers the earliest unanswered call with its
/// `tool_call_id` (logs reuse ids, so ids alone do not pair them).
fn from_messages(messages: &[Value]) -> Recorded {
    let mut rec = Recorded::default();
    let mut pending: Vec<(usize, String)> = Vec::new();
    let mut step = 0;
    for m in messages {
        match m["role"].as_str() {
            Some("assistant") => {
                let joined = content_text(&m["content"]);
                let text = joined.as_deref().filter(|t| !t.trim().is_empty());
                let calls = m["tool_calls"].as_array().filter(|c| !c.is_empty());
                if text.is_some() || calls.is_some() {
                    step += 1;
                }
                if let Some(text) = text {
                    rec.actions.push(Action::Say {
                        step,
                        text: text.to_owned(),
                    });
                }
                for c in calls.into_iter().flatten() {
                    // AgentDojo writes `{"function": NAME, "args": {...}}`; OpenAI
                    // `{"function": {"name", "arguments"}}`.
                    let f = match &c["function"] {
                        Value::String(name) => &json!({"name": name, "arguments": c["args"]}),
                        Value::Object(_) => &c["function"],
                        _ => c,
                    };
                    let name = f["name"].as_str().unwrap_or_default().to_owned();
                    let args = match &f["arguments"] {
                        Value::String(s) => {
                            serde_json::from_str(s).unwrap_or(Value::Object(Default::default()))
                        }
                        Value::Null => Value::Object(Default::default()),
                        other => other.clone(),
                    };
                    pending.push((
                        rec.actions.len(),
                        c["id"].as_str().unwrap_or_default().to_owned(),
                    ));
                    rec.actions.push(Action::Call {
                        step,
                        tool: name,
                        args,
                        key: None,
                        recorded: None,
                    });
                }
            }
            Some("tool") => {
                let id = m["tool_call_id"].as_str().unwrap_or_default();
                let Some(at) = pending
                    .iter()
                    .position(|(_, p)| p == id)
                    .or((!pending.is_empty()).then_some(0))
                else {
                    continue;
                };
                let (index, _) = pending.remove(at);
                let content = m["content"].clone();
                let parsed = content
                    .as_str()
                    .and_then(|s| serde_json::from_str(s).ok())
                    .unwrap_or(content);
                if let Some(Action::Call { recorded, .. }) = rec.actions.get_mut(index) {
                    *recorded = Some(parsed);
                }
            }
            _ => {}
        }
    }
    // The last message is the final answer when nothing follows it; earlier ones were turns.
    if let Some(Action::Say { text, .. }) = rec.actions.last() {
        rec.answer = Some(text.clone());
        rec.actions.pop();
    }
    rec
}

/// A message's text: a string, or the text parts of a list of content blocks.
fn content_text(content: &Value) -> Option<String> {
    match content {
        Value::String(s) => Some(s.clone()),
        Value::Array(parts) => {
            let texts: Vec<&str> = parts
                .iter()
                .filter_map(|p| p["text"].as_str().or(p["content"].as_str()))
                .collect();
            (!texts.is_empty()).then(|| texts.join("\n"))
        }
        _ => None,
    }
}

/// A `replay:` log that cannot be read as one: the user's input (a file they named).
#[derive(Debug, thiserror::Error)]
pub enum ReplayLogError {
    /// The file or folder cannot be read.
    #[error("{}: {source}", .path.display())]
    Read {
        /// The file or folder.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A document that is not JSON.
    #[error("{}: {source}", .path.display())]
    Json {
        /// The file.
        path: PathBuf,
        /// Why.
        source: serde_json::Error,
    },
    /// A line of a JSON Lines log that is not JSON.
    #[error("{}:{line}: {source}", .path.display())]
    JsonLine {
        /// The file.
        path: PathBuf,
        /// 1-based.
        line: usize,
        /// Why.
        source: serde_json::Error,
    },
    /// A JSON file in an AgentDojo folder that is no run log.
    #[error("{}: not an AgentDojo run log (no suite_name or messages)", .0.display())]
    NotAnAgentDojoLog(PathBuf),
    /// A tau-bench trajectory without its task.
    #[error("{}: item {item} has no task_id", .path.display())]
    NoTaskId {
        /// The file.
        path: PathBuf,
        /// 1-based.
        item: usize,
    },
    /// An OpenAI-messages log without its case.
    #[error("{}: item {item} has messages but no case_id", .path.display())]
    NoCaseId {
        /// The file.
        path: PathBuf,
        /// 1-based.
        item: usize,
    },
    /// An item of no format the replay agent reads.
    #[error(
        "{}: item {item} is neither a trial record, an OpenAI-messages log nor a tau-bench trajectory",
        .path.display()
    )]
    UnknownItem {
        /// The file.
        path: PathBuf,
        /// 1-based.
        item: usize,
    },
    /// A folder with neither a run nor AgentDojo logs.
    #[error(
        "{}: no trials.jsonl and no AgentDojo run logs (user_task_N/none/none.json, ...)",
        .0.display()
    )]
    NoTrials(PathBuf),
}

impl gauntlet_model::Classified for ReplayLogError {
    /// Even a file that cannot be read: it is the one the user named (most often not there).
    fn kind(&self) -> gauntlet_model::ErrorKind {
        gauntlet_model::ErrorKind::InvalidInput
    }
}

/// Reads a folder of AgentDojo run logs, laid out as AgentDojo writes them:
/// `user_task_N/none/none.json`, `user_task_N/important_instructions/injection_task_M.json` and
/// `injection_task_M/none/none.json`, matched to the cases `SUITE-user_task_N`,
/// `SUITE-user_task_N-injection_task_M` and `SUITE-injection_task_M` (SUITE from each log's
/// `suite_name`). Logs of other attacks are left out: the import names only this one's cases.
fn agentdojo_runs(dir: &Path) -> Result<HashMap<(String, u32), Recorded>, ReplayLogError> {
    let mut trials = HashMap::new();
    let mut tasks: Vec<_> = std::fs::read_dir(dir)
        .map_err(|source| ReplayLogError::Read {
            path: dir.to_owned(),
            source,
        })?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    tasks.sort();
    for task in tasks {
        for (attack, file) in [("none", "none.json"), ("important_instructions", "")] {
            let folder = task.join(attack);
            let files: Vec<std::path::PathBuf> = if file.is_empty() {
                let Ok(entries) = std::fs::read_dir(&folder) else {
                    continue;
                };
                let mut f: Vec<_> = entries
                    .filter_map(Result::ok)
                    .map(|e| e.path())
                    .filter(|p| p.extension().is_some_and(|x| x == "json"))
                    .collect();
                f.sort();
                f
            } else {
                vec![folder.join(file)]
            };
            for path in files.into_iter().filter(|p| p.is_file()) {
                let text =
                    std::fs::read_to_string(&path).map_err(|source| ReplayLogError::Read {
                        path: path.clone(),
                        source,
                    })?;
                let log: Value =
                    serde_json::from_str(&text).map_err(|source| ReplayLogError::Json {
                        path: path.clone(),
                        source,
                    })?;
                let (Some(suite), Some(messages)) =
                    (log["suite_name"].as_str(), log["messages"].as_array())
                else {
                    return Err(ReplayLogError::NotAnAgentDojoLog(path));
                };
                let user = log["user_task_id"].as_str().unwrap_or_default();
                let case = match log["injection_task_id"].as_str() {
                    Some(inj) if attack != "none" => format!("{suite}-{user}-{inj}"),
                    _ => format!("{suite}-{user}"),
                };
                let mut rec = from_messages(messages);
                if let Some(e) = log["error"].as_str() {
                    rec.unfinished = Some(format!("the recorded run ended in an error: {e}"));
                }
                trials.insert((case, 0), rec);
            }
        }
    }
    if trials.is_empty() {
        return Err(ReplayLogError::NoTrials(dir.to_owned()));
    }
    Ok(trials)
}

fn from_record(r: &Value) -> Recorded {
    let mut rec = Recorded::default();
    for e in r["trajectory"]["events"].as_array().into_iter().flatten() {
        let step = e["step"].as_u64().unwrap_or(0) as u32;
        let text = e["text"].as_str().unwrap_or_default().to_owned();
        match e["type"].as_str() {
            Some("tool_call") => {
                let recorded = e
                    .get("result")
                    .cloned()
                    .or_else(|| e["error"].get("message").cloned());
                let key = e["idempotency_key"].as_str().map(str::to_owned);
                rec.actions.push(Action::Call {
                    step,
                    tool: e["tool"].as_str().unwrap_or_default().to_owned(),
                    args: e["arguments"].clone(),
                    key,
                    recorded,
                });
            }
            Some("confirmation_request") => rec.actions.push(Action::Confirm { step, text }),
            Some("question") => rec.actions.push(Action::Ask { step, text }),
            Some("agent_message") => rec.actions.push(Action::Say { step, text }),
            Some("wait") => rec.actions.push(Action::Wait {
                step,
                ms: e["ms"].as_f64().unwrap_or(0.0),
            }),
            _ => {}
        }
    }
    rec.answer = r["trajectory"]["final_answer"].as_str().map(str::to_owned);
    rec
}

impl ReplayAgent {
    /// Loads a log (`FILE` or `FILE#PREFIX` for tau-bench task ids).
    pub fn load(spec: &str) -> Result<ReplayAgent, ReplayLogError> {
        let (file, prefix) = spec.split_once('#').unwrap_or((spec, "airline-test-"));
        let path = Path::new(file);
        if path.is_dir() && !path.join("trials.jsonl").exists() {
            return Ok(ReplayAgent {
                trials: agentdojo_runs(path)?,
            });
        }
        let path = if path.is_dir() {
            path.join("trials.jsonl")
        } else {
            path.to_owned()
        };
        let text = std::fs::read_to_string(&path).map_err(|source| ReplayLogError::Read {
            path: path.clone(),
            source,
        })?;
        let items: Vec<Value> = if text.trim_start().starts_with('[') {
            serde_json::from_str(&text).map_err(|source| ReplayLogError::Json {
                path: path.clone(),
                source,
            })?
        } else {
            text.lines()
                .enumerate()
                .filter(|(_, l)| !l.trim().is_empty())
                .map(|(i, l)| {
                    serde_json::from_str(l).map_err(|source| ReplayLogError::JsonLine {
                        path: path.clone(),
                        line: i + 1,
                        source,
                    })
                })
                .collect::<Result<_, _>>()?
        };
        let mut trials = HashMap::new();
        for (i, item) in items.iter().enumerate() {
            let (key, rec) = if item.get("trajectory").is_some() {
                (
                    (
                        item["case_id"].as_str().unwrap_or_default().to_owned(),
                        item["epoch"].as_u64().unwrap_or(0) as u32,
                    ),
                    from_record(item),
                )
            } else if let Some(traj) = item["traj"].as_array() {
                let task = item["task_id"]
                    .as_u64()
                    .ok_or_else(|| ReplayLogError::NoTaskId {
                        path: path.clone(),
                        item: i + 1,
                    })?;
                let mut rec = from_messages(traj);
                if !tau_episode_ended(traj) {
                    rec.unfinished = Some(
                        "the recorded episode never ended (tau-bench's step limit cut it off; \
                         tau-bench scores such a trial 0)"
                            .to_owned(),
                    );
                }
                (
                    (
                        format!("{prefix}{task}"),
                        item["trial"].as_u64().unwrap_or(0) as u32,
                    ),
                    rec,
                )
            } else if let Some(messages) = item["messages"].as_array() {
                let case = item["case_id"]
                    .as_str()
                    .ok_or_else(|| ReplayLogError::NoCaseId {
                        path: path.clone(),
                        item: i + 1,
                    })?;
                (
                    (case.to_owned(), item["epoch"].as_u64().unwrap_or(0) as u32),
                    from_messages(messages),
                )
            } else {
                return Err(ReplayLogError::UnknownItem { path, item: i + 1 });
            };
            trials.insert(key, rec);
        }
        Ok(ReplayAgent { trials })
    }

    /// Whether the log has a trajectory for this case (any epoch).
    pub fn has_case(&self, case_id: &str) -> bool {
        self.trials.keys().any(|(c, _)| c == case_id)
    }
}

impl Agent for ReplayAgent {
    fn run<'a>(
        &'a self,
        input: &'a AgentInput,
        env: SharedEnv,
    ) -> BoxFuture<'a, Result<AgentOutput, AgentError>> {
        Box::pin(async move {
            let Some(rec) = self.trials.get(&(input.case_id.clone(), input.epoch)) else {
                return Err(AgentError(format!(
                    "the log has no trajectory for case `{}` epoch {}",
                    input.case_id, input.epoch
                )));
            };
            for action in &rec.actions {
                match action {
                    Action::Call {
                        step,
                        tool,
                        args,
                        key,
                        recorded,
                    } => {
                        let mut env = lock(&env);
                        let _ = env.call_tool(*step, tool, args.clone(), key.clone());
                        if let Some(r) = recorded {
                            env.note_recorded_output(r.clone());
                        }
                    }
                    // Today's user answers; a refusal ends the replay as the agent would stop.
                    Action::Confirm { step, text } => {
                        if !crate::conversation::confirm(&env, *step, text).await.0 {
                            return Ok(AgentOutput {
                                final_answer: rec.answer.clone(),
                                unfinished: None,
                                crashed: None,
                            });
                        }
                    }
                    Action::Ask { step, text } => {
                        crate::conversation::ask(&env, *step, text).await;
                    }
                    Action::Say { step, text } => lock(&env).say(*step, text),
                    Action::Wait { step, ms } => lock(&env).wait(*step, *ms),
                }
            }
            Ok(AgentOutput {
                final_answer: rec.answer.clone(),
                unfinished: rec.unfinished.clone(),
                crashed: None,
            })
        })
    }
}
