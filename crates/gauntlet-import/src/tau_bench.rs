//! tau-bench (Sierra Research) as a gauntlet suite.
//!
//! Reads a folder laid out like the tau-bench repository, with the task lists exported as JSON
//! under `derived/`:
//!
//! ```text
//! DATA_DIR/derived/airline_tools.json            the tools, in OpenAI function format
//! DATA_DIR/derived/airline_tasks_test.json       [{user_id, instruction, actions, outputs}]
//! DATA_DIR/tau_bench/envs/airline/data/{flights,reservations,users}.json
//! DATA_DIR/tau_bench/envs/retail/data/{orders,products,users}.json   (and retail_* above)
//! ```
//!
//! and writes (for airline; retail alike) `SUITE_DIR/gauntlet.yaml`, `worlds/tau-bench-airline.json` (tools, schemas),
//! `worlds/airline.js` (the domain's behaviour, shipped with gauntlet), `worlds/airline-state.json`
//! (the three tables, exactly as in the data) and `cases/airline-test.jsonl`: one case per task,
//! `airline-test-{index}`, with the instruction as input, the gold actions as reference
//! trajectory, and tau-bench's reward rule as expected outcome: every record the gold actions
//! change equals what they make of it, every other record is unchanged
//! (`state_unchanged_elsewhere`), and each of the task's `outputs` is said in some message
//! (`said_contains`).

use std::path::{Path, PathBuf};

use gauntlet_model::ToolKind;
use gauntlet_world::World;
use serde_json::{Map, Value, json};

use crate::{ImportError, compile_world, invalid, read_json, write};

/// A tau-bench domain that gauntlet re-implements.
#[derive(Debug)]
pub struct DomainSpec {
    /// Its name, as in tau-bench (`airline`).
    pub name: &'static str,
    /// Its behaviour, re-implemented in JavaScript from tau-bench's semantics.
    pub script: &'static str,
    /// The tables of its state, as tau-bench hashes them.
    pub tables: &'static [&'static str],
    /// The tools that change the state.
    pub writes: &'static [&'static str],
}

/// tau-bench's airline domain.
pub const AIRLINE: DomainSpec = DomainSpec {
    name: "airline",
    script: include_str!("../../../worlds/tau-bench/airline.js"),
    tables: &["flights", "reservations", "users"],
    writes: &[
        "book_reservation",
        "cancel_reservation",
        "send_certificate",
        "update_reservation_baggages",
        "update_reservation_flights",
        "update_reservation_passengers",
    ],
};

/// tau-bench's retail domain.
pub const RETAIL: DomainSpec = DomainSpec {
    name: "retail",
    script: include_str!("../../../worlds/tau-bench/retail.js"),
    tables: &["orders", "products", "users"],
    writes: &[
        "cancel_pending_order",
        "exchange_delivered_order_items",
        "modify_pending_order_address",
        "modify_pending_order_items",
        "modify_pending_order_payment",
        "modify_user_address",
        "return_delivered_order_items",
    ],
};

/// The domains gauntlet imports.
pub const DOMAINS: [&DomainSpec; 2] = [&AIRLINE, &RETAIL];

/// The domain of this name.
pub fn domain(name: &str) -> Option<&'static DomainSpec> {
    DOMAINS.into_iter().find(|d| d.name == name)
}

/// What to import.
#[derive(Debug, Clone)]
pub struct Options {
    /// The tau-bench data folder.
    pub data_dir: PathBuf,
    /// The domain (`airline`).
    pub domain: String,
    /// The task split (`test`).
    pub split: String,
    /// Another users table (tau-bench's historical logs were made with an older one).
    pub users: Option<PathBuf>,
    /// The suite folder to write.
    pub out: PathBuf,
    /// Give each case an LLM persona playing the instruction, which opens the conversation
    /// (tau-bench's own setting), instead of handing the instruction to the agent as its input.
    pub persona: bool,
}

/// What an import wrote.
#[derive(Debug, Clone, Default)]
pub struct Summary {
    /// Cases written.
    pub cases: usize,
    /// Cases with `said_contains` (tasks with outputs).
    pub with_outputs: usize,
    /// Gold actions the world refused, as `case: tool: error` (tau-bench refuses them too).
    pub refused_gold_actions: Vec<String>,
    /// Files written.
    pub files: Vec<PathBuf>,
    /// The policy made the agents' system prompt (the domain's `wiki.md`), when DATA_DIR has it.
    pub policy: Option<PathBuf>,
}

/// A domain as read from the data: its world, initial state and tasks.
pub struct Domain {
    /// What gauntlet knows of the domain.
    pub spec: &'static DomainSpec,
    /// The world, compiled with the shipped script.
    pub world: std::sync::Arc<World>,
    /// The world file's JSON.
    pub world_json: Value,
    /// The state: the three tables (shared by every trial that starts from it).
    pub initial: std::sync::Arc<Value>,
    /// The tasks, as in the task list.
    pub tasks: Vec<Value>,
    /// The task list file.
    pub tasks_path: PathBuf,
}

/// Reads a domain from the data folder.
pub fn load(opts: &Options) -> Result<Domain, ImportError> {
    let Some(spec) = domain(&opts.domain) else {
        let known: Vec<&str> = DOMAINS.iter().map(|d| d.name).collect();
        return Err(ImportError::Invalid {
            path: opts.data_dir.clone(),
            message: format!(
                "domain `{}` is not supported (supported: {})",
                opts.domain,
                known.join(", ")
            ),
        });
    };
    let derived = opts.data_dir.join("derived");
    let data = opts
        .data_dir
        .join("tau_bench/envs")
        .join(&opts.domain)
        .join("data");
    let mut state = Map::new();
    for &table in spec.tables {
        let path = match (&opts.users, table) {
            (Some(users), "users") => users.clone(),
            _ => data.join(format!("{table}.json")),
        };
        let value = read_json(&path)?;
        if !value.is_object() {
            return Err(invalid(&path, "expected a JSON object keyed by id"));
        }
        state.insert(table.to_owned(), value);
    }
    let tools_path = derived.join(format!("{}_tools.json", opts.domain));
    let tools = tools_from_openai(&tools_path, &read_json(&tools_path)?, spec.writes)?;
    let tasks_path = derived.join(format!("{}_tasks_{}.json", opts.domain, opts.split));
    let tasks = read_json(&tasks_path)?;
    let Some(tasks) = tasks.as_array() else {
        return Err(invalid(&tasks_path, "expected a JSON array of tasks"));
    };

    let world_name = format!("tau-bench-{}", opts.domain);
    let world_json = json!({
        "name": world_name,
        "description": format!(
            "tau-bench's {} domain: tools and data from tau-bench, behaviour re-implemented in {}.js",
            opts.domain, opts.domain
        ),
        "state_file": format!("{}-state.json", opts.domain),
        "script": format!("{}.js", opts.domain),
        "tools": tools,
    });
    let world = compile_world(
        &tools_path,
        &world_json,
        format!("{}.js", opts.domain),
        spec.script,
    )?;
    Ok(Domain {
        spec,
        world,
        world_json,
        initial: std::sync::Arc::new(Value::Object(state)),
        tasks: tasks.clone(),
        tasks_path,
    })
}

/// Imports one domain's split as a suite.
pub fn import(opts: &Options) -> Result<Summary, ImportError> {
    let Domain {
        spec,
        world,
        world_json,
        initial,
        tasks,
        tasks_path,
    } = load(opts)?;
    let world_name = world_json["name"].as_str().unwrap_or_default().to_owned();

    let mut summary = Summary::default();
    let mut lines = String::new();
    for (index, task) in tasks.iter().enumerate() {
        let case_id = format!("{}-{}-{index}", opts.domain, opts.split);
        let at = format!("{}: task {index}", tasks_path.display());
        let (mut case, refused) = case_of(&case_id, spec.name, task, &world, &initial)
            .map_err(|e| invalid(&tasks_path, &format!("{at}: {e}")))?;
        if opts.persona
            && let Some(instruction) = case.as_object_mut().and_then(|c| c.remove("user_input"))
        {
            case["user"] = json!({"persona": instruction});
        }
        summary.refused_gold_actions.extend(refused);
        if case["expected_outcome"].get("said_contains").is_some() {
            summary.with_outputs += 1;
        }
        lines.push_str(&serde_json::to_string(&case).expect("JSON values serialise"));
        lines.push('\n');
        summary.cases += 1;
    }

    let out = &opts.out;
    // tau-bench's agents get the domain's policy as their system prompt; so does `openai:MODEL`.
    let wiki = opts
        .data_dir
        .join("tau_bench/envs")
        .join(&opts.domain)
        .join("wiki.md");
    let policy = match std::fs::read_to_string(&wiki) {
        Ok(text) => {
            summary.policy = Some(wiki.clone());
            format!(
                "# The domain's policy (tau-bench's wiki.md): the system prompt of `--agent openai:MODEL`.\n\
                 system_prompt: {}\n",
                serde_json::to_string(&text).expect("a string serialises")
            )
        }
        Err(_) => format!(
            "# tau-bench's agents read the domain's policy, tau_bench/envs/{}/wiki.md; with it in\n\
             # DATA_DIR the import makes it the system_prompt of `--agent openai:MODEL`.\n",
            opts.domain
        ),
    };
    let config = format!(
        "# tau-bench's {domain} domain ({split} split), imported by `gauntlet import tau-bench`.\n\
         # Replay tau-bench's GPT-4o log: gauntlet run {out} --agent replay:gpt-4o-{domain}.json --epochs 4\n\
         name: tau-bench-{domain}-{split}\n\
         description: >\n  {n} tasks of tau-bench's {domain} domain; expected outcome = tau-bench's reward rule.\n\
         agent: script:reference\n\
         epochs: 1\n\
         worlds:\n  - worlds/{world_name}.json\n\
         datasets:\n  - path: cases/{domain}-{split}.jsonl\n    world: {world_name}\n\
         # tau-bench's reward: the state as the gold actions leave it, the outputs said, and an\n\
         # episode that ended; its pass^k is reported beside gauntlet's stricter verdicts.\n\
         benchmark:\n  name: tau-bench\n  reward: [StateVerification, output_assertions, agent_finished]\n\
         # Gates decide the exit code. The benchmark's own headline is its reward's pass rate\n\
         # (pass^1): raise the bar to what your agent must clear (0 only reports it). A run with\n\
         # harness errors (an agent that could not start) never passes: max_error_rate tolerates some.\n\
         max_error_rate: 0\n\
         gates:\n  - name: tau-bench reward\n    expr: evaluators.benchmark_reward.pass_rate >= 0.0\n\
         {policy}",
        domain = opts.domain,
        split = opts.split,
        out = out.display(),
        n = summary.cases,
    );
    let files: [(PathBuf, String); 5] = [
        (out.join("gauntlet.yaml"), config),
        (
            out.join(format!("worlds/{world_name}.json")),
            serde_json::to_string_pretty(&world_json).expect("serialises"),
        ),
        (
            out.join(format!("worlds/{}.js", opts.domain)),
            spec.script.to_owned(),
        ),
        (
            out.join(format!("worlds/{}-state.json", opts.domain)),
            serde_json::to_string(&*initial).expect("serialises"),
        ),
        (
            out.join(format!("cases/{}-{}.jsonl", opts.domain, opts.split)),
            lines,
        ),
    ];
    for (path, text) in &files {
        write(path, text)?;
        summary.files.push(path.clone());
    }
    Ok(summary)
}

/// Tool specs from OpenAI function definitions (`[{type: function, function: {...}}]`).
fn tools_from_openai(
    path: &Path,
    tools: &Value,
    writes: &[&str],
) -> Result<Vec<Value>, ImportError> {
    let Some(list) = tools.as_array() else {
        return Err(invalid(path, "expected a JSON array of tool definitions"));
    };
    list.iter()
        .enumerate()
        .map(|(i, t)| {
            let f = t.get("function").unwrap_or(t);
            let name = f["name"]
                .as_str()
                .ok_or_else(|| invalid(path, &format!("tool {i} has no function.name")))?;
            let kind = if writes.contains(&name) {
                ToolKind::Write
            } else {
                ToolKind::Read
            };
            Ok(json!({
                "name": name,
                "description": f["description"].as_str().unwrap_or_default(),
                "kind": kind,
                "parameters": f.get("parameters").cloned().unwrap_or(json!({"type": "object"})),
            }))
        })
        .collect()
}

/// The state after the gold actions, and the refusals met on the way.
pub fn run_gold(
    world: &std::sync::Arc<World>,
    initial: &std::sync::Arc<Value>,
    actions: &[Value],
) -> (Value, Vec<(String, String)>) {
    crate::replay(
        world,
        initial,
        actions
            .iter()
            .map(|a| (a["name"].as_str().unwrap_or_default(), &a["kwargs"])),
    )
}

/// Why a tau-bench task cannot be made a case: the published data is not what the importer
/// reads (the user's input, every time).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TaskError {
    /// The task has no instruction.
    #[error("no `instruction` (a string)")]
    NoInstruction,
    /// The task has no gold actions.
    #[error("no `actions` (an array)")]
    NoActions,
    /// A gold action without its name or arguments.
    #[error("actions[{0}] needs `name` (a string) and `kwargs` (an object)")]
    BadAction(usize),
}

impl gauntlet_model::Classified for TaskError {
    fn kind(&self) -> gauntlet_model::ErrorKind {
        gauntlet_model::ErrorKind::InvalidInput
    }
}

/// One task as a case (JSON), with the gold actions the world refused.
fn case_of(
    case_id: &str,
    domain: &str,
    task: &Value,
    world: &std::sync::Arc<World>,
    initial: &std::sync::Arc<Value>,
) -> Result<(Value, Vec<String>), TaskError> {
    let instruction = task["instruction"]
        .as_str()
        .ok_or(TaskError::NoInstruction)?;
    let actions = task["actions"].as_array().ok_or(TaskError::NoActions)?;
    for (i, a) in actions.iter().enumerate() {
        if !a["name"].is_string() || !a["kwargs"].is_object() {
            return Err(TaskError::BadAction(i));
        }
    }
    let (after, refused) = run_gold(world, initial, actions);
    let mut expected = Map::new();
    for (path, record) in gauntlet_model::stored_state::changes(initial, &after) {
        let want = if record.is_null() {
            json!({"$absent": true})
        } else {
            record
        };
        expected.insert(path, want);
    }
    expected.insert("state_unchanged_elsewhere".into(), json!(true));
    let outputs: Vec<&str> = task["outputs"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    if !outputs.is_empty() {
        expected.insert("said_contains".into(), json!(outputs));
    }
    let mut reference = crate::reference_steps(
        world,
        actions
            .iter()
            .map(|a| (a["name"].as_str().unwrap_or_default(), &a["kwargs"])),
    );
    // The gold path ends by telling the user what the task asks to be told.
    let answer = if outputs.is_empty() {
        "Done.".to_owned()
    } else {
        outputs.join("; ")
    };
    reference.push(json!({"answer": answer}));
    let mut case = json!({
        "case_id": case_id,
        "description": format!("tau-bench task for user {}", task["user_id"].as_str().unwrap_or("?")),
        "user_input": instruction,
        "expected_outcome": expected,
        "reference_trajectory": reference,
        "tags": ["tau-bench", domain],
    });
    if let Some(a) = task["annotator"].as_str() {
        case["tags"]
            .as_array_mut()
            .expect("an array")
            .push(json!(format!("annotator-{a}")));
    }
    let refused = refused
        .into_iter()
        .map(|(tool, e)| format!("{case_id}: {tool}: {e}"))
        .collect();
    Ok((case, refused))
}
