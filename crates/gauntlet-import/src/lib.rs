//! Importing peer benchmarks as gauntlet suites.
//!
//! Today: tau-bench's airline and retail domains ([`tau_bench`]), tau2-bench's mock and
//! retail domains ([`tau2`]) and AgentDojo's banking suite ([`agentdojo`]). An importer reads the peer's data as it is
//! published, runs its gold actions in gauntlet's own re-implementation of the domain, and writes
//! a suite folder (config, world, state, cases) that `gauntlet run` takes as it is.

pub mod agentdojo;
pub mod labels;
pub mod tau2;
pub mod tau_bench;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use gauntlet_model::Context;
use gauntlet_world::{FaultPlan, Simulator, World};
use serde_json::Value;

/// The gold actions as a reference trajectory's tool steps. A read repeated with the same
/// arguments is played once: a benchmark's gold sometimes reads a record again, which changes
/// nothing (a read has no effect) yet would fail the case's own `LoopDetection`, so that the
/// reference could not pass its own case. Every write is kept, in order.
pub fn reference_steps<'a>(
    world: &World,
    calls: impl IntoIterator<Item = (&'a str, &'a Value)>,
) -> Vec<Value> {
    let mut reads = std::collections::HashSet::new();
    calls
        .into_iter()
        .filter(|(tool, args)| {
            let read = world
                .spec()
                .tool(tool)
                .is_some_and(|t| t.kind == gauntlet_model::ToolKind::Read);
            !read || reads.insert((*tool, gauntlet_model::path::canonical_json(args)))
        })
        .map(|(tool, args)| serde_json::json!({"tool": tool, "args": args}))
        .collect()
}

/// Why an import failed; every variant names the file it concerns.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    /// A file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// A file is not the JSON it should be.
    #[error("{path}:{line}:{column}: {message}")]
    Json {
        /// The file.
        path: PathBuf,
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
        /// What is wrong.
        message: String,
    },
    /// The data is readable but not what the importer expects.
    #[error("{path}: {message}")]
    Invalid {
        /// The file (or folder).
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
}

pub(crate) fn read_json(path: &Path) -> Result<serde_json::Value, ImportError> {
    let text = std::fs::read_to_string(path).map_err(|source| ImportError::Io {
        path: path.to_owned(),
        source,
    })?;
    serde_json::from_str(&text).map_err(|e| ImportError::Json {
        path: path.to_owned(),
        line: e.line(),
        column: e.column(),
        message: e.to_string(),
    })
}

pub(crate) fn write(path: &Path, text: &str) -> Result<(), ImportError> {
    let io = |source| ImportError::Io {
        path: path.to_owned(),
        source,
    };
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(io)?;
    }
    std::fs::write(path, text).map_err(io)
}

pub(crate) fn invalid(path: &Path, message: &str) -> ImportError {
    ImportError::Invalid {
        path: path.to_owned(),
        message: message.to_owned(),
    }
}

/// The state after calling the tools in order from `initial`, and the calls the world refused
/// (tool, error).
pub fn replay<'a>(
    world: &Arc<World>,
    initial: &Arc<Value>,
    calls: impl IntoIterator<Item = (&'a str, &'a Value)>,
) -> (Value, Vec<(String, String)>) {
    let mut sim = Simulator::start(
        world.clone(),
        Arc::clone(initial),
        Context::default(),
        FaultPlan::default(),
    );
    let mut refused = Vec::new();
    for (i, (tool, args)) in calls.into_iter().enumerate() {
        if let Err(e) = sim.call_tool(i as u32 + 1, tool, args.clone(), None) {
            refused.push((tool.to_owned(), e.message));
        }
    }
    (sim.finish(None).1, refused)
}

/// Compiles an imported domain's world with its shipped script; errors name `path`, the file the
/// world was made from.
pub(crate) fn compile_world(
    path: &Path,
    world_json: &Value,
    script_file: String,
    script: &str,
) -> Result<Arc<World>, ImportError> {
    let spec: gauntlet_model::WorldSpec = serde_json::from_value(world_json.clone())
        .map_err(|e| invalid(path, &format!("cannot make a world of these tools: {e}")))?;
    let world = World::compile_with(
        spec,
        Some(gauntlet_world::ScriptSource {
            file: script_file,
            source: script.to_owned(),
        }),
    )
    .map_err(|errors| {
        let all: Vec<String> = errors.iter().map(ToString::to_string).collect();
        invalid(path, &all.join("; "))
    })?;
    Ok(Arc::new(world))
}
