//! tau2-bench (Sierra Research) as a gauntlet suite: the mock and retail domains.
//!
//! Reads a folder laid out like the tau2-bench repository:
//!
//! ```text
//! DATA_DIR/data/tau2/domains/<domain>/tasks.json         the tasks
//! DATA_DIR/data/tau2/domains/<domain>/split_tasks.json   named splits of task ids (optional)
//! DATA_DIR/data/tau2/domains/<domain>/db.json            the agent side's database
//! DATA_DIR/data/tau2/domains/<domain>/user_db.json       the user side's database (mock)
//! DATA_DIR/data/tau2/domains/<domain>/policy.md          the agent's policy (optional)
//! ```
//!
//! tau2's retail `db.json` is tau-bench's three retail tables with a `user_id` in every user;
//! without it, `--tau-bench-data` points at tau-bench's tables and the import builds it.
//!
//! One case per task, `{domain}-{id}`. The state is the agent side's database, plus the user
//! side's under `user_db` where the domain has one; a task's initial state (initialization data,
//! initialization actions and the tool calls of its message history) becomes the case's
//! `initial_state`. tau2's reward basis maps onto gauntlet's expectations:
//!
//! | tau2 | gauntlet |
//! |---|---|
//! | `DB`: the database equals the gold actions' | every record they change, as they leave it, and `state_unchanged_elsewhere` |
//! | `ENV_ASSERTION` | a path and value per assertion (`assert_task_status` → `tasks.ID.status`) |
//! | `COMMUNICATE`: `communicate_info` said | `said_contains` |
//! | `ACTION`: each gold call made | `trajectory_match` superset, on `compare_args` |
//! | `NL_ASSERTION` | kept in the case's description: it needs an LLM judge, not scored here |
//!
//! The import replays every task's gold actions and reports each environment assertion they do
//! not meet, with the reason.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use gauntlet_world::World;
use serde_json::{Map, Value, json};

use crate::{ImportError, compile_world, invalid, read_json, replay, write};

/// A tau2-bench domain that gauntlet re-implements.
#[derive(Debug)]
pub struct DomainSpec {
    /// Its name, as in tau2-bench (`mock`).
    pub name: &'static str,
    /// Its world file: the tools, generated from tau2's toolkit source.
    pub world: &'static str,
    /// Its behaviour, re-implemented in JavaScript from tau2's tools.
    pub script: &'static str,
    /// Whether the user side has a database (`user_db.json`).
    pub user_db: bool,
}

/// tau2-bench's mock domain: a task list per user.
pub const MOCK: DomainSpec = DomainSpec {
    name: "mock",
    world: include_str!("../../../worlds/tau2/mock.json"),
    script: include_str!("../../../worlds/tau2/mock.js"),
    user_db: true,
};

/// tau2-bench's retail domain: tau-bench's, with `get_item_details`.
pub const RETAIL: DomainSpec = DomainSpec {
    name: "retail",
    world: include_str!("../../../worlds/tau2/retail.json"),
    script: include_str!("../../../worlds/tau-bench/retail.js"),
    user_db: false,
};

/// The domains gauntlet imports.
pub const DOMAINS: [&DomainSpec; 2] = [&MOCK, &RETAIL];

/// What to import.
#[derive(Debug, Clone)]
pub struct Options {
    /// The tau2-bench repository (or a folder laid out like it).
    pub data_dir: PathBuf,
    /// The domain (`mock`, `retail`).
    pub domain: String,
    /// A split of `split_tasks.json` (`base`, `train`, `test`); every task when absent.
    pub split: Option<String>,
    /// tau-bench's data (its repository, or the folder of its retail tables), to build
    /// tau2's retail database when DATA_DIR lacks `db.json`.
    pub tau_bench_data: Option<PathBuf>,
    /// The suite folder to write.
    pub out: PathBuf,
    /// Give each case an LLM persona playing the user's instructions, which opens the
    /// conversation (tau2's own setting), instead of handing them to the agent as its input.
    pub persona: bool,
}

/// What an import wrote and found.
#[derive(Debug, Clone, Default)]
pub struct Summary {
    /// Cases written.
    pub cases: usize,
    /// Environment assertions checked against the gold actions' state.
    pub env_assertions: usize,
    /// Assertions the gold actions do not meet, as `case: assertion: why`.
    pub unmet_env_assertions: Vec<String>,
    /// Gold actions the world refused, as `case: tool: error`.
    pub refused_gold_actions: Vec<String>,
    /// Cases whose reward basis has `NL_ASSERTION` (kept, not scored: they need an LLM judge).
    pub nl_assertion_cases: usize,
    /// Cases with a message history, given to the agent as text before the instructions.
    pub with_history: usize,
    /// Files written.
    pub files: Vec<PathBuf>,
    /// The policy made the agents' system prompt, when DATA_DIR has it.
    pub policy: Option<PathBuf>,
}

/// A domain as read from the data: its world, initial state and tasks.
pub struct Domain {
    /// What gauntlet knows of the domain.
    pub spec: &'static DomainSpec,
    /// The world, compiled with the shipped script.
    pub world: Arc<World>,
    /// The world file's JSON.
    pub world_json: Value,
    /// The state: the agent side's tables, and the user side's under `user_db`.
    pub initial: Value,
    /// The tasks, in file order, restricted to the split.
    pub tasks: Vec<Value>,
    /// The task list file.
    pub tasks_path: PathBuf,
}

fn domain_dir(opts: &Options) -> PathBuf {
    opts.data_dir.join("data/tau2/domains").join(&opts.domain)
}

/// Reads a domain from the data folder.
pub fn load(opts: &Options) -> Result<Domain, ImportError> {
    let Some(spec) = DOMAINS.into_iter().find(|d| d.name == opts.domain) else {
        let known: Vec<&str> = DOMAINS.iter().map(|d| d.name).collect();
        return Err(invalid(
            &opts.data_dir,
            &format!(
                "domain `{}` is not supported (supported: {})",
                opts.domain,
                known.join(", ")
            ),
        ));
    };
    let dir = domain_dir(opts);
    let tasks_path = dir.join("tasks.json");
    let all = read_json(&tasks_path)?;
    let Some(all) = all.as_array() else {
        return Err(invalid(&tasks_path, "expected a JSON array of tasks"));
    };
    let tasks = match &opts.split {
        None => all.clone(),
        Some(split) => {
            let split_path = dir.join("split_tasks.json");
            let splits = read_json(&split_path)?;
            let Some(ids) = splits.get(split).and_then(Value::as_array) else {
                let known: Vec<&String> = splits
                    .as_object()
                    .into_iter()
                    .flatten()
                    .map(|(k, _)| k)
                    .collect();
                return Err(invalid(
                    &split_path,
                    &format!("no split `{split}` (splits: {known:?})"),
                ));
            };
            let ids: Vec<&str> = ids.iter().filter_map(Value::as_str).collect();
            all.iter()
                .filter(|t| task_id(t).is_some_and(|id| ids.contains(&id.as_str())))
                .cloned()
                .collect()
        }
    };

    let mut state = agent_db(opts, &dir)?;
    if spec.user_db {
        let path = dir.join("user_db.json");
        let user = read_json(&path)?;
        if !user.is_object() {
            return Err(invalid(&path, "expected a JSON object of tables"));
        }
        state.insert("user_db".into(), user);
    }

    let mut world_json: Value =
        serde_json::from_str(spec.world).expect("the shipped tau2 world file is JSON");
    world_json["state_file"] = json!(format!("{}-state.json", spec.name));
    world_json["script"] = json!(format!("{}.js", spec.name));
    let world = compile_world(
        &tasks_path,
        &world_json,
        format!("{}.js", spec.name),
        spec.script,
    )?;
    Ok(Domain {
        spec,
        world,
        world_json,
        initial: Value::Object(state),
        tasks,
        tasks_path,
    })
}

/// The agent side's database: `db.json`, or for retail tau-bench's tables with `user_id` added.
fn agent_db(opts: &Options, dir: &Path) -> Result<Map<String, Value>, ImportError> {
    let path = dir.join("db.json");
    if path.exists() || opts.domain != "retail" {
        return match read_json(&path)? {
            Value::Object(tables) => Ok(tables),
            _ => Err(invalid(&path, "expected a JSON object of tables")),
        };
    }
    let Some(tau_bench) = &opts.tau_bench_data else {
        return Err(invalid(
            &path,
            "not found; tau2's retail database is tau-bench's retail tables with a user_id per \
             user: pass --tau-bench-data with tau-bench's repository (or its retail data folder)",
        ));
    };
    let nested = tau_bench.join("tau_bench/envs/retail/data");
    let tables_dir = if nested.is_dir() {
        nested
    } else {
        tau_bench.clone()
    };
    let mut tables = Map::new();
    for table in ["orders", "products", "users"] {
        let path = tables_dir.join(format!("{table}.json"));
        let Value::Object(mut records) = read_json(&path)? else {
            return Err(invalid(&path, "expected a JSON object keyed by id"));
        };
        if table == "users" {
            for (id, user) in &mut records {
                if let Some(user) = user.as_object_mut() {
                    user.entry("user_id").or_insert_with(|| json!(id));
                }
            }
        }
        tables.insert(table.into(), Value::Object(records));
    }
    Ok(tables)
}

fn task_id(task: &Value) -> Option<String> {
    match &task["id"] {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// Imports one domain (or one split of it) as a suite.
pub fn import(opts: &Options) -> Result<Summary, ImportError> {
    let domain = load(opts)?;
    let world_name = domain.world_json["name"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let mut summary = Summary::default();
    let mut lines = String::new();
    for (index, task) in domain.tasks.iter().enumerate() {
        let at = |e: TaskError| {
            invalid(
                &domain.tasks_path,
                &format!("task {index} ({}): {e}", task_id(task).unwrap_or_default()),
            )
        };
        let mut case = case_of(&domain, task, &mut summary).map_err(at)?;
        if opts.persona
            && let Some(instructions) = case.as_object_mut().and_then(|c| c.remove("user_input"))
        {
            case["user"] = json!({"persona": instructions});
        }
        lines.push_str(&serde_json::to_string(&case).expect("JSON values serialise"));
        lines.push('\n');
        summary.cases += 1;
    }

    let dir = domain_dir(opts);
    let policy_path = dir.join("policy.md");
    let policy = match std::fs::read_to_string(&policy_path) {
        Ok(text) => {
            summary.policy = Some(policy_path);
            format!(
                "# The domain's policy (tau2's policy.md): the system prompt of `--agent openai:MODEL`.\n\
                 system_prompt: {}\n",
                serde_json::to_string(&text).expect("a string serialises")
            )
        }
        Err(_) => format!(
            "# tau2's agents read the domain's policy, data/tau2/domains/{}/policy.md; with it in\n\
             # DATA_DIR the import makes it the system_prompt of `--agent openai:MODEL`.\n",
            opts.domain
        ),
    };
    let split = opts.split.as_deref().unwrap_or("all");
    let config = format!(
        "# tau2-bench's {domain} domain ({split} tasks), imported by `gauntlet import tau2-bench`.\n\
         name: tau2-bench-{domain}-{split}\n\
         description: >\n  {n} tasks of tau2-bench's {domain} domain; expected outcome = tau2's reward basis\n  \
         (DB, ENV_ASSERTION, COMMUNICATE, ACTION; NL_ASSERTION needs an LLM judge and is not scored).\n\
         agent: script:reference\n\
         epochs: 1\n\
         worlds:\n  - worlds/{world_name}.json\n\
         datasets:\n  - path: cases/{domain}.jsonl\n    world: {world_name}\n\
         # tau2's reward: its reward basis met and an episode the agent or user ended; its pass^k\n\
         # is reported beside gauntlet's stricter verdicts.\n\
         benchmark:\n  name: tau2-bench\n  reward: [StateVerification, output_assertions, trajectory_match, agent_finished]\n\
         # Gates decide the exit code. The benchmark's own headline is its reward's pass rate\n\
         # (pass^1): raise the bar to what your agent must clear (0 only reports it). A run with\n\
         # harness errors (an agent that could not start) never passes: max_error_rate tolerates some.\n\
         max_error_rate: 0\n\
         gates:\n  - name: tau2-bench reward\n    expr: evaluators.benchmark_reward.pass_rate >= 0.0\n\
         {policy}",
        domain = opts.domain,
        n = summary.cases,
    );
    let out = &opts.out;
    let files: [(PathBuf, String); 5] = [
        (out.join("gauntlet.yaml"), config),
        (
            out.join(format!("worlds/{world_name}.json")),
            serde_json::to_string_pretty(&domain.world_json).expect("serialises"),
        ),
        (
            out.join(format!("worlds/{}.js", opts.domain)),
            domain.spec.script.to_owned(),
        ),
        (
            out.join(format!("worlds/{}-state.json", opts.domain)),
            serde_json::to_string(&domain.initial).expect("serialises"),
        ),
        (out.join(format!("cases/{}.jsonl", opts.domain)), lines),
    ];
    for (path, text) in &files {
        write(path, text)?;
        summary.files.push(path.clone());
    }
    Ok(summary)
}

/// Why a tau2 task cannot be made a case: the published data is not what the importer reads
/// (the user's input, every time).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum TaskError {
    /// The task has no id.
    #[error("no `id` (a string)")]
    NoId,
    /// The task has no user instructions.
    #[error("no user_scenario.instructions (a string or an object)")]
    NoInstructions,
    /// Structured instructions with none of the parts the importer reads.
    #[error(
        "user_scenario.instructions has none of reason_for_call, known_info, unknown_info, task_instructions"
    )]
    EmptyInstructions,
    /// An action with no name.
    #[error("{action} has no name (a string)")]
    NoName {
        /// Which action (`actions[2]`).
        action: String,
    },
    /// An action whose arguments are not an object.
    #[error("{action}: arguments is not an object")]
    ArgumentsNotAnObject {
        /// Which action (`actions[2]`).
        action: String,
    },
    /// `add_notification` without its id.
    #[error("add_notification needs notification_id")]
    NoNotificationId,
    /// A user-side function the importer does not apply.
    #[error("user-side function `{0}` is not supported (supported: add_notification)")]
    UnsupportedUserFunction(String),
    /// An environment assertion without a string argument it needs.
    #[error("{assertion} needs {argument} (a string)")]
    MissingAssertionArgument {
        /// The assertion.
        assertion: String,
        /// The argument.
        argument: String,
    },
    /// `assert_number_of_tasks` without its count.
    #[error("assert_number_of_tasks needs expected_number (a count)")]
    NoExpectedNumber,
    /// An environment assertion the importer cannot express.
    #[error(
        "environment assertion `{0}` is not supported (supported: assert_task_status, assert_number_of_tasks, assert_notification_status)"
    )]
    UnsupportedAssertion(String),
    /// The world refused an initialization action.
    #[error("initialization_actions[{index}]: {tool} refused: {message}")]
    InitializationRefused {
        /// Its position.
        index: usize,
        /// The tool.
        tool: String,
        /// The world's refusal.
        message: String,
    },
    /// The world refused a tool call of the message history.
    #[error("message_history: {tool} refused: {message}")]
    HistoryRefused {
        /// The tool.
        tool: String,
        /// The world's refusal.
        message: String,
    },
    /// `evaluation_criteria.actions` that is not a list.
    #[error("evaluation_criteria.actions is not an array")]
    ActionsNotAnArray,
    /// A gold action of the user's side.
    #[error("actions[{index}] ({name}) is the {side}'s: gauntlet's simulated user has no tools")]
    NotTheAssistants {
        /// Its position.
        index: usize,
        /// The function.
        name: String,
        /// Whose it is.
        side: String,
    },
    /// `evaluation_criteria.env_assertions` that is not a list.
    #[error("evaluation_criteria.env_assertions is not an array")]
    AssertionsNotAnArray,
    /// An assertion that must not hold.
    #[error("env_assertions[{index}] ({name}): `assert_value: false` is not supported")]
    NegatedAssertion {
        /// Its position.
        index: usize,
        /// The assertion.
        name: String,
    },
    /// `compare_args` that is not a list.
    #[error("compare_args of {tool} is not a list: {value}")]
    CompareArgsNotAList {
        /// The tool.
        tool: String,
        /// What was written.
        value: Value,
    },
    /// Gold calls of one tool that compare different arguments.
    #[error(
        "{0}'s gold calls compare different arguments; gauntlet compares a tool's arguments one way per case"
    )]
    CompareArgsDiffer(String),
}

impl gauntlet_model::Classified for TaskError {
    fn kind(&self) -> gauntlet_model::ErrorKind {
        gauntlet_model::ErrorKind::InvalidInput
    }
}

/// A task's user instructions as one text: tau2 gives a string, or a structure (reason for
/// the call, what the user knows and does not know, how to behave).
fn instructions_text(scenario: &Value) -> Result<String, TaskError> {
    match &scenario["instructions"] {
        Value::String(s) => Ok(s.clone()),
        Value::Object(parts) => {
            let mut text = Vec::new();
            for key in [
                "reason_for_call",
                "known_info",
                "unknown_info",
                "task_instructions",
            ] {
                if let Some(s) = parts.get(key).and_then(Value::as_str) {
                    text.push(s.trim().to_owned());
                }
            }
            if text.is_empty() {
                return Err(TaskError::EmptyInstructions);
            }
            Ok(text.join("\n"))
        }
        _ => Err(TaskError::NoInstructions),
    }
}

/// A call of an action: `{name, arguments}` (gold actions) or `{func_name, arguments}`
/// (initialization actions), on the side that makes it.
fn call_of(action: &Value, what: &str) -> Result<(String, Value, String), TaskError> {
    let name = action["name"]
        .as_str()
        .or_else(|| action["func_name"].as_str())
        .ok_or_else(|| TaskError::NoName {
            action: what.to_owned(),
        })?;
    let args = match &action["arguments"] {
        Value::Null => json!({}),
        v @ Value::Object(_) => v.clone(),
        _ => {
            return Err(TaskError::ArgumentsNotAnObject {
                action: what.to_owned(),
            });
        }
    };
    let side = action["requestor"]
        .as_str()
        .or_else(|| action["env_type"].as_str())
        .unwrap_or("assistant")
        .to_owned();
    Ok((name.to_owned(), args, side))
}

/// Applies a user-side function to the user database (the mock user's notifications).
fn user_call(state: &mut Value, name: &str, args: &Value) -> Result<(), TaskError> {
    match name {
        "add_notification" => {
            let id = args["notification_id"]
                .as_str()
                .ok_or(TaskError::NoNotificationId)?;
            state["user_db"]["notifications"][id] = json!({
                "notification_id": id,
                "message": args["message"],
                "status": "unread",
                "task_id": args.get("task_id").cloned().unwrap_or(Value::Null),
            });
            Ok(())
        }
        other => Err(TaskError::UnsupportedUserFunction(other.to_owned())),
    }
}

/// An environment assertion as a JSON Pointer into the state and the value it must have there.
fn assertion_path(name: &str, args: &Value) -> Result<(String, Value), TaskError> {
    let arg = |k: &str| {
        args[k]
            .as_str()
            .map(gauntlet_model::path::escape_segment)
            .ok_or_else(|| TaskError::MissingAssertionArgument {
                assertion: name.to_owned(),
                argument: k.to_owned(),
            })
    };
    Ok(match name {
        "assert_task_status" => (
            format!("/tasks/{}/status", arg("task_id")?),
            args["expected_status"].clone(),
        ),
        "assert_number_of_tasks" => {
            let n = args["expected_number"]
                .as_u64()
                .ok_or(TaskError::NoExpectedNumber)?;
            (
                format!("/users/{}/tasks", arg("user_id")?),
                json!({"$count": n}),
            )
        }
        "assert_notification_status" => (
            format!("/user_db/notifications/{}/status", arg("notification_id")?),
            args["expected_status"].clone(),
        ),
        other => {
            return Err(TaskError::UnsupportedAssertion(other.to_owned()));
        }
    })
}

/// Whether the state meets an assertion, the way tau2's assertion functions decide.
fn assertion_met(state: &Value, path: &str, want: &Value) -> bool {
    let got = gauntlet_model::path::resolve(state, path);
    match (want.get("$count").and_then(Value::as_u64), got) {
        (Some(n), Some(Value::Array(items))) => items.len() as u64 == n,
        (Some(_), _) => false,
        (None, Some(v)) => gauntlet_model::path::json_eq(v, want),
        (None, None) => false,
    }
}

/// The message history as text the agent reads before the instructions, and its tool calls.
fn history(messages: &[Value]) -> (String, Vec<(String, Value)>) {
    let mut text = String::from("Earlier in this conversation:\n");
    let mut calls = Vec::new();
    for m in messages {
        let role = m["role"].as_str().unwrap_or("?");
        if let Some(content) = m["content"].as_str() {
            text.push_str(&format!("{role}: {content}\n"));
        }
        for call in m["tool_calls"].as_array().into_iter().flatten() {
            let name = call["name"].as_str().unwrap_or_default().to_owned();
            let args = call["arguments"].clone();
            text.push_str(&format!(
                "{role} called {name}({})\n",
                serde_json::to_string(&args).expect("JSON serialises")
            ));
            if role == "assistant" {
                calls.push((name, args));
            }
        }
    }
    (text, calls)
}

/// One task as a case (JSON).
fn case_of(domain: &Domain, task: &Value, summary: &mut Summary) -> Result<Value, TaskError> {
    let id = task_id(task).ok_or(TaskError::NoId)?;
    let case_id = format!("{}-{id}", domain.spec.name);
    let mut input = instructions_text(&task["user_scenario"])?;
    let criteria = &task["evaluation_criteria"];

    // The task's starting state: initialization data, initialization actions, then the tool
    // calls of its message history, in tau2's order.
    let init = &task["initial_state"];
    let mut start = domain.initial.clone();
    if let Some(data) = init["initialization_data"].as_object() {
        if let Some(agent) = data.get("agent_data").filter(|v| !v.is_null()) {
            gauntlet_world::merge_state(&mut start, agent);
        }
        if let Some(user) = data.get("user_data").filter(|v| !v.is_null()) {
            gauntlet_world::merge_state(&mut start["user_db"], user);
        }
    }
    for (i, action) in init["initialization_actions"]
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
    {
        let (name, args, side) = call_of(action, &format!("initialization_actions[{i}]"))?;
        if side == "user" {
            user_call(&mut start, &name, &args)?;
        } else {
            let (after, refused) = replay(
                &domain.world,
                &Arc::new(start.clone()),
                [(name.as_str(), &args)],
            );
            if let Some((tool, e)) = refused.first() {
                return Err(TaskError::InitializationRefused {
                    index: i,
                    tool: tool.clone(),
                    message: e.clone(),
                });
            }
            start = after;
        }
    }
    if let Some(messages) = init["message_history"].as_array().filter(|m| !m.is_empty()) {
        let (text, calls) = history(messages);
        let (after, refused) = replay(
            &domain.world,
            &Arc::new(start.clone()),
            calls.iter().map(|(n, a)| (n.as_str(), a)),
        );
        if let Some((tool, e)) = refused.first() {
            return Err(TaskError::HistoryRefused {
                tool: tool.clone(),
                message: e.clone(),
            });
        }
        start = after;
        input = format!("{text}\nNow:\n{input}");
        summary.with_history += 1;
    }

    // The gold actions, replayed from the starting state.
    let actions = match &criteria["actions"] {
        Value::Null => None,
        Value::Array(a) => Some(a.as_slice()),
        _ => return Err(TaskError::ActionsNotAnArray),
    };
    let mut gold_calls = Vec::new();
    for (i, action) in actions.into_iter().flatten().enumerate() {
        let (name, args, side) = call_of(action, &format!("actions[{i}]"))?;
        if side != "assistant" {
            return Err(TaskError::NotTheAssistants {
                index: i,
                name,
                side,
            });
        }
        gold_calls.push((name, args, action["compare_args"].clone()));
    }
    let (gold, refused) = replay(
        &domain.world,
        &Arc::new(start.clone()),
        gold_calls.iter().map(|(n, a, _)| (n.as_str(), a)),
    );
    summary.refused_gold_actions.extend(
        refused
            .into_iter()
            .map(|(t, e)| format!("{case_id}: {t}: {e}")),
    );

    let basis: Vec<&str> = match criteria["reward_basis"].as_array() {
        Some(b) => b.iter().filter_map(Value::as_str).collect(),
        None => vec!["DB", "COMMUNICATE"],
    };
    let assertions = match &criteria["env_assertions"] {
        Value::Null => None,
        Value::Array(a) => Some(a.as_slice()),
        _ => return Err(TaskError::AssertionsNotAnArray),
    };
    let mut expected = Map::new();
    // tau2 rewards 1 on the environment when a task has neither gold actions nor assertions.
    if basis.contains(&"DB") && (actions.is_some() || assertions.is_some()) {
        for (path, record) in gauntlet_model::stored_state::changes(&start, &gold) {
            let want = if record.is_null() {
                json!({"$absent": true})
            } else {
                record
            };
            expected.insert(path, want);
        }
        expected.insert("state_unchanged_elsewhere".into(), json!(true));
    }
    // Whether the gold actions cannot meet an assertion the reward counts: then they are no
    // reference for the case (playing them would fail it), and the case has none.
    let mut unreachable = false;
    for (i, a) in assertions.into_iter().flatten().enumerate() {
        let (name, args, _) = call_of(a, &format!("env_assertions[{i}]"))?;
        if a["assert_value"] == json!(false) {
            return Err(TaskError::NegatedAssertion { index: i, name });
        }
        let (path, want) = assertion_path(&name, &args)?;
        summary.env_assertions += 1;
        if !assertion_met(&gold, &path, &want) {
            unreachable |= basis.contains(&"ENV_ASSERTION");
            let why = if gold_calls.is_empty() {
                "the task has no gold actions".to_owned()
            } else if path.starts_with("/user_db/") {
                "it asserts on the user side's state, which only the user's own tools change"
                    .to_owned()
            } else {
                format!(
                    "after the gold actions {path} is {}",
                    gauntlet_model::path::resolve(&gold, &path)
                        .map_or("absent".to_owned(), ToString::to_string)
                )
            };
            summary
                .unmet_env_assertions
                .push(format!("{case_id}: {name}({args}): {why}"));
        }
        if basis.contains(&"ENV_ASSERTION") {
            expected.insert(path, want);
        }
    }
    let communicate: Vec<&str> = criteria["communicate_info"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    if basis.contains(&"COMMUNICATE") && !communicate.is_empty() {
        expected.insert("said_contains".into(), json!(communicate));
    }

    let mut reference = crate::reference_steps(
        &domain.world,
        gold_calls
            .iter()
            .map(|(tool, args, _)| (tool.as_str(), args)),
    );
    reference.push(json!({"answer": if communicate.is_empty() {
        "Done.".to_owned()
    } else {
        communicate.join("; ")
    }}));

    let nl: Vec<&str> = criteria["nl_assertions"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    let mut description = format!("tau2-bench {} task {id}", domain.spec.name);
    if let Some(purpose) = task["description"]["purpose"].as_str() {
        description.push_str(&format!(": {purpose}"));
    }
    if !nl.is_empty() {
        description.push_str(&format!(
            ". Natural-language assertions (an LLM judge's, not scored here): {}",
            nl.join(" | ")
        ));
    }
    if basis.contains(&"NL_ASSERTION") {
        summary.nl_assertion_cases += 1;
    }
    let mut tags = vec![json!("tau2-bench"), json!(domain.spec.name)];
    tags.extend(
        basis
            .iter()
            .map(|b| json!(format!("basis-{}", b.to_lowercase()))),
    );
    if unreachable {
        description.push_str(
            ". No reference trajectory: the gold actions do not meet the task's environment assertions",
        );
        reference.clear();
    }
    let mut case = json!({
        "case_id": case_id,
        "description": description,
        "user_input": input,
        "expected_outcome": expected,
        "reference_trajectory": reference,
        "tags": tags,
    });
    // Whole tables, for those the task's initialization changed: the case's state is merged
    // over the world's key by key.
    let overlay: Map<String, Value> = start
        .as_object()
        .into_iter()
        .flatten()
        .filter(|(table, value)| {
            !domain
                .initial
                .get(*table)
                .is_some_and(|v| gauntlet_model::path::same_value(v, value))
        })
        .map(|(t, v)| (t.clone(), v.clone()))
        .collect();
    if !overlay.is_empty() {
        case["initial_state"] = Value::Object(overlay);
    }
    if basis.contains(&"ACTION") && !gold_calls.is_empty() {
        case["trajectory_match"] = action_match(&gold_calls)?;
    }
    Ok(case)
}

/// tau2's action check as a trajectory match: every gold call made (superset), its arguments
/// compared on `compare_args` (all the gold call's arguments when absent; none when empty).
fn action_match(calls: &[(String, Value, Value)]) -> Result<Value, TaskError> {
    let mut overrides: BTreeMap<&str, Value> = BTreeMap::new();
    for (tool, _, compare) in calls {
        let o = match compare {
            Value::Null => continue,
            Value::Array(keys) if keys.is_empty() => json!("ignore"),
            Value::Array(keys) => json!(keys),
            other => {
                return Err(TaskError::CompareArgsNotAList {
                    tool: tool.clone(),
                    value: other.clone(),
                });
            }
        };
        if overrides
            .insert(tool, o.clone())
            .is_some_and(|prev| prev != o)
        {
            return Err(TaskError::CompareArgsDiffer(tool.clone()));
        }
    }
    Ok(json!({"mode": "superset", "args": "superset", "overrides": overrides}))
}
