//! Script handlers: tool behaviour in JavaScript, run by QuickJS (rquickjs) over the trial's
//! state.
//!
//! The sandbox has no filesystem, network, clock or unseeded randomness (QuickJS has none of the
//! first two without its std module; `sandbox.js`, shared with custom evaluators, replaces `Date`
//! and `Math.random` by errors).
//! Handlers get `(args, ctx)`: `ctx.state` (live, watched), `ctx.user`, `ctx.tenant`,
//! `ctx.roles`, `ctx.scopes`, `ctx.now` (the case's clock), `ctx.random()` (seeded per trial),
//! `ctx.error(status, message)` to throw a tool error, `ctx.sideEffect(text)` and
//! `ctx.access(collection, key)`. Each call has a time limit (an interrupt) and the runtime a
//! memory limit; exceeding either fails that call, not the run. A call that throws leaves the
//! state as it found it.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use gauntlet_model::{ChangedState, Context, StateChange, ToolError};
use rquickjs::{CatchResultExt, Function, Persistent};
use serde_json::Value;

const PRELUDE: &str = include_str!("prelude.js");
/// How deeply a world's state may nest (serde_json's recursion limit).
pub const MAX_STATE_DEPTH: usize = 128;
/// What every sandbox takes away (the clock, unseeded randomness), before any other script.
const SANDBOX: &str = include_str!("sandbox.js");

/// Per-call time limit.
pub const CALL_TIME_LIMIT: Duration = Duration::from_secs(2);

/// Time limit of loading a world's script with its state (top-level code included).
pub const LOAD_TIME_LIMIT: Duration = Duration::from_secs(10);
/// Memory limit of a trial's script runtime.
pub const MEMORY_LIMIT: usize = 512 << 20;

/// Why a world's script or a standalone script (a custom evaluator) cannot load, run or give its
/// state back. What the user wrote (the script, its state, its function) is the user's input;
/// a QuickJS runtime that cannot be made, or the harness's own JavaScript failing or running
/// out of time, is the harness's.
#[derive(Debug, thiserror::Error)]
pub enum ScriptError {
    /// QuickJS could not make a runtime or a context.
    #[error("cannot start QuickJS: {0}")]
    Start(#[source] rquickjs::Error),
    /// The harness's sandbox script failed.
    #[error("gauntlet-sandbox.js: {0}")]
    Sandbox(String),
    /// The harness's prelude failed.
    #[error("gauntlet-prelude.js: {0}")]
    Prelude(String),
    /// The harness's realm script failed to evaluate.
    #[error("gauntlet-realm.js: {0}")]
    Realm(String),
    /// The harness could not reach a value it loaded into the runtime.
    #[error("{0}")]
    Runtime(#[source] rquickjs::Error),
    /// The world's state could not be loaded into the runtime.
    #[error("the state does not load: {0}")]
    StateDoesNotLoad(String),
    /// Loading the world's state ran out of time: only the harness's code runs then.
    #[error("loading the world's state exceeded its time limit of {LOAD_TIME_LIMIT:?}")]
    StateLoadTimedOut,
    /// A script file threw or does not parse.
    #[error("{file}: {message}")]
    Script {
        /// The file, as errors name it.
        file: String,
        /// What QuickJS said.
        message: String,
    },
    /// The world script's top-level code ran out of time.
    #[error("{file}: loading the world script exceeded its time limit of {LOAD_TIME_LIMIT:?}")]
    ScriptLoadTimedOut {
        /// The file.
        file: String,
    },
    /// The state does not come back as JSON from the script runtime.
    #[error(
        "the world's state does not serialise as JSON (a value that throws or loops in \
         toJSON or a getter, or a cycle)"
    )]
    StateNotSerialisable,
    /// The state nests deeper than [`MAX_STATE_DEPTH`].
    #[error("the world's state is nested more than {MAX_STATE_DEPTH} levels deep")]
    StateTooDeep,
    /// The state the runtime wrote out is not JSON that serde reads.
    #[error("the world's state is not valid JSON: {0}")]
    StateNotJson(#[source] serde_json::Error),
    /// The function named is not a JavaScript identifier.
    #[error("`{function}` is not a JavaScript function name")]
    NotAFunctionName {
        /// The name given.
        function: String,
    },
    /// The script defines no global function of that name.
    #[error("{file} defines no function `{function}`")]
    NoFunction {
        /// The file.
        file: String,
        /// The function looked for.
        function: String,
    },
    /// A standalone script's function ran past its time limit.
    #[error("{file}: `{function}` ran past its time limit of {limit:?}")]
    FunctionTimedOut {
        /// The file.
        file: String,
        /// The function.
        function: String,
        /// Its time limit.
        limit: Duration,
    },
    /// A standalone script's function returned `undefined`.
    #[error("{file}: `{function}` returned nothing")]
    ReturnedNothing {
        /// The file.
        file: String,
        /// The function.
        function: String,
    },
    /// A standalone script's function returned what is not JSON.
    #[error("{file}: `{function}` returned no JSON: {source}")]
    ReturnedNoJson {
        /// The file.
        file: String,
        /// The function.
        function: String,
        /// The cause.
        source: serde_json::Error,
    },
}

impl ScriptError {
    /// Whether QuickJS interrupted the code (its time limit), as its message says.
    fn interrupted(&self) -> bool {
        self.to_string().contains("interrupted")
    }
}

impl gauntlet_model::Classified for ScriptError {
    fn kind(&self) -> gauntlet_model::ErrorKind {
        use gauntlet_model::ErrorKind::{Harness, InvalidInput};
        match self {
            ScriptError::Start(_)
            | ScriptError::Sandbox(_)
            | ScriptError::Prelude(_)
            | ScriptError::Realm(_)
            | ScriptError::Runtime(_)
            | ScriptError::StateLoadTimedOut => Harness,
            ScriptError::StateDoesNotLoad(_)
            | ScriptError::Script { .. }
            | ScriptError::ScriptLoadTimedOut { .. }
            | ScriptError::StateNotSerialisable
            | ScriptError::StateTooDeep
            | ScriptError::StateNotJson(_)
            | ScriptError::NotAFunctionName { .. }
            | ScriptError::NoFunction { .. }
            | ScriptError::FunctionTimedOut { .. }
            | ScriptError::ReturnedNothing { .. }
            | ScriptError::ReturnedNoJson { .. } => InvalidInput,
        }
    }
}

/// What a script call did besides its result.
#[derive(Debug, Default)]
pub struct ScriptEffects {
    /// Records whose JSON changed (whole records: `/collection/key`).
    pub changes: Vec<StateChange>,
    /// Records read or written, as (collection, key).
    pub accesses: Vec<(String, String)>,
    /// Side effects the handler declared.
    pub declared: Vec<String>,
}

/// What the realm script hands back: the root of the state and the keys' order.
const REALM: &str = include_str!("realm.js");

/// A JavaScript value of a loaded state, kept between trials.
struct Held(Persistent<rquickjs::Value<'static>>);

// SAFETY: a `Held` value is only used with the runtime it came from, and that runtime moves
// with it: both sit in one `Loaded`, which one trial owns at a time (or the pool keeps idle), so
// no two threads ever touch the runtime at once.
unsafe impl Send for Held {}

/// A world's state loaded once into its own runtime, in a realm of its own: records frozen, the
/// realm's intrinsics locked down. Trials borrow it one at a time, each in a fresh realm (its own
/// globals, so nothing a script keeps at the top level outlives its trial), and roll back what
/// they changed.
struct Loaded {
    /// The prelude's `openTrial`, bound to the loaded state.
    opener: Held,
    _realm: rquickjs::Context,
    runtime: rquickjs::Runtime,
    deadline: Arc<AtomicU64>,
    origin: Instant,
    /// The state it holds between trials (the pool's key: the same `Arc`).
    state: Arc<Value>,
    /// Trials it has served.
    trials: u64,
    /// When the garbage collector runs: the loaded heap plus [`Loaded::GC_SLACK`].
    gc_threshold: usize,
}

impl Loaded {
    fn new(state: Arc<Value>) -> Result<Loaded, ScriptError> {
        let runtime = rquickjs::Runtime::new().map_err(ScriptError::Start)?;
        runtime.set_memory_limit(MEMORY_LIMIT);
        runtime.set_max_stack_size(1 << 20);
        let deadline = Arc::new(AtomicU64::new(u64::MAX));
        let origin = Instant::now();
        let d = Arc::clone(&deadline);
        runtime.set_interrupt_handler(Some(Box::new(move || {
            let limit = d.load(Ordering::Relaxed);
            limit != u64::MAX && origin.elapsed().as_micros() as u64 > limit
        })));
        let realm = rquickjs::Context::full(&runtime).map_err(ScriptError::Start)?;
        deadline.store(
            (origin.elapsed() + LOAD_TIME_LIMIT).as_micros() as u64,
            Ordering::Relaxed,
        );
        let held = realm.with(|ctx| -> Result<Held, ScriptError> {
            // The realm is sandboxed too: a trial reaches its `Function` through a record's
            // prototype chain.
            eval_sandbox(&ctx)?;
            let root = ctx
                .json_parse(state.to_string())
                .catch(&ctx)
                .map_err(|e| ScriptError::StateDoesNotLoad(e.to_string()))?;
            let prelude: Function = ctx
                .eval(PRELUDE)
                .catch(&ctx)
                .map_err(|e| ScriptError::Prelude(e.to_string()))?;
            let harden: Function = ctx
                .eval(REALM)
                .catch(&ctx)
                .map_err(|e| ScriptError::Realm(e.to_string()))?;
            let keys: rquickjs::Value = harden
                .call((root.clone(),))
                .catch(&ctx)
                .map_err(|e| ScriptError::StateDoesNotLoad(e.to_string()))?;
            let opener: rquickjs::Value = prelude
                .call((root, keys))
                .catch(&ctx)
                .map_err(|e| ScriptError::Prelude(e.to_string()))?;
            Ok(Held(Persistent::save(&ctx, opener)))
        });
        deadline.store(u64::MAX, Ordering::Relaxed);
        let opener = held.map_err(|e| {
            if e.interrupted() {
                ScriptError::StateLoadTimedOut
            } else {
                e
            }
        })?;
        // A trial's realm is garbage once it ends (its cycles wait for the collector), and a
        // collection walks the whole loaded state: collect after some trials, not after every
        // few hundred kilobytes as QuickJS would with a heap this size.
        let gc_threshold =
            usize::try_from(runtime.memory_usage().malloc_size).unwrap_or(0) + Loaded::GC_SLACK;
        runtime.set_gc_threshold(gc_threshold);
        Ok(Loaded {
            opener,
            _realm: realm,
            runtime,
            deadline,
            origin,
            state,
            trials: 0,
            gc_threshold,
        })
    }

    /// Garbage allowed on top of the loaded heap before the collector runs.
    const GC_SLACK: usize = 64 << 20;
    /// Trials between two collections made by the pool (which puts the threshold back).
    const GC_EVERY: u64 = 128;

    /// Counts a trial served; every [`Loaded::GC_EVERY`] trials, collects the garbage and puts
    /// the collector's threshold back where the load set it.
    fn served(&mut self) {
        self.trials += 1;
        if self.trials.is_multiple_of(Loaded::GC_EVERY) {
            self.runtime.run_gc();
            self.runtime.set_gc_threshold(self.gc_threshold);
        }
    }
}

/// Loaded states kept for the next trial that starts from the same state: one per trial
/// running at once, at most [`Pool::MAX_IDLE`] idle.
#[derive(Default)]
pub struct Pool {
    idle: std::sync::Mutex<Vec<Loaded>>,
}

impl Pool {
    /// How many loaded states a pool keeps idle.
    pub const MAX_IDLE: usize = 8;

    fn take(&self, state: &Arc<Value>) -> Option<Loaded> {
        let mut idle = self.idle.lock().unwrap_or_else(|p| p.into_inner());
        let at = idle.iter().rposition(|l| Arc::ptr_eq(&l.state, state))?;
        Some(idle.swap_remove(at))
    }

    fn give_back(&self, loaded: Loaded) {
        // A state no one else holds cannot be asked for again.
        if Arc::strong_count(&loaded.state) == 1 {
            return;
        }
        let mut idle = self.idle.lock().unwrap_or_else(|p| p.into_inner());
        // The oldest goes first: it serves a state fewer trials start from now.
        if idle.len() >= Self::MAX_IDLE {
            idle.remove(0);
        }
        idle.push(loaded);
    }

    /// How many loaded states wait for a trial.
    pub fn idle(&self) -> usize {
        self.idle.lock().unwrap_or_else(|p| p.into_inner()).len()
    }
}

/// One trial's script runtime: the trial's own realm (the world's script, the sandbox and the
/// `ctx` its handlers get) over a loaded state it borrows for the trial.
pub struct ScriptEngine {
    context: Option<rquickjs::Context>,
    loaded: Option<Loaded>,
    /// Where the loaded state goes back to when the trial ends (none: it is dropped).
    home: Option<Arc<Pool>>,
    /// A call ran out of time or memory: the loaded state is not lent again.
    spoiled: bool,
    file: String,
}

fn internal(message: String) -> ToolError {
    ToolError {
        status: 500,
        message,
        retry_after_s: None,
    }
}

impl ScriptEngine {
    /// Loads the state and the world's script (`file` names it in errors), for one trial.
    pub fn new(
        file: &str,
        source: &str,
        state: &Value,
        context: &Context,
        seed: u64,
        now: &str,
    ) -> Result<ScriptEngine, ScriptError> {
        let loaded = Loaded::new(Arc::new(state.clone()))?;
        ScriptEngine::open(loaded, None, file, source, context, seed, now)
    }

    /// A trial over `state` that borrows a loaded copy of it from `pool` (loading one when none
    /// is idle) and gives it back, rolled back, when the trial ends. Trials that start from the
    /// same `Arc` share loaded states.
    pub fn lend(
        pool: &Arc<Pool>,
        file: &str,
        source: &str,
        state: &Arc<Value>,
        context: &Context,
        seed: u64,
        now: &str,
    ) -> Result<ScriptEngine, ScriptError> {
        let loaded = match pool.take(state) {
            Some(l) => l,
            None => Loaded::new(Arc::clone(state))?,
        };
        ScriptEngine::open(
            loaded,
            Some(Arc::clone(pool)),
            file,
            source,
            context,
            seed,
            now,
        )
    }

    fn open(
        loaded: Loaded,
        home: Option<Arc<Pool>>,
        file: &str,
        source: &str,
        context: &Context,
        seed: u64,
        now: &str,
    ) -> Result<ScriptEngine, ScriptError> {
        let ctx = rquickjs::Context::full(&loaded.runtime).map_err(ScriptError::Start)?;
        let info = serde_json::json!({
            "user": context.user, "tenant": context.tenant, "roles": context.roles,
            "scopes": context.scopes, "seed": seed & 0xffff_ffff, "now": now,
        });
        let mut engine = ScriptEngine {
            context: None,
            loaded: None,
            home,
            spoiled: false,
            file: file.to_owned(),
        };
        // Every entry into the sandbox is bounded, loading included (a top-level loop).
        let deadline = Arc::clone(&loaded.deadline);
        deadline.store(
            (loaded.origin.elapsed() + LOAD_TIME_LIMIT).as_micros() as u64,
            Ordering::Relaxed,
        );
        let opened = ctx.with(|ctx| -> Result<(), ScriptError> {
            eval_sandbox(&ctx)?;
            let open: Function = loaded
                .opener
                .0
                .clone()
                .restore(&ctx)
                .and_then(|v| v.get())
                .map_err(ScriptError::Runtime)?;
            open.call::<_, ()>((ctx.globals(), info.to_string()))
                .catch(&ctx)
                .map_err(|e| ScriptError::Prelude(e.to_string()))?;
            eval_file(&ctx, file, source)
        });
        deadline.store(u64::MAX, Ordering::Relaxed);
        engine.context = Some(ctx);
        engine.loaded = Some(loaded);
        if let Err(e) = opened {
            // What a failed load did to the state is unknown: it is not lent again.
            engine.spoiled = true;
            return Err(if e.interrupted() {
                ScriptError::ScriptLoadTimedOut {
                    file: file.to_owned(),
                }
            } else {
                e
            });
        }
        Ok(engine)
    }

    /// Whether the script defines a global function of this name.
    pub fn defines(&self, function: &str) -> bool {
        self.context()
            .with(|ctx| ctx.globals().get::<_, Function>(function).is_ok())
    }

    fn context(&self) -> &rquickjs::Context {
        self.context
            .as_ref()
            .expect("a trial's realm lives as long as its engine")
    }

    fn loaded(&self) -> &Loaded {
        self.loaded
            .as_ref()
            .expect("a trial's state lives as long as its engine")
    }

    /// Calls the handler named `function` with the arguments. A `read_only` call (a read tool)
    /// notes the records it touches but takes no snapshots of them; it sees the state as it
    /// is, read-only (a record no write of this trial has touched is frozen: writing to it fails
    /// in strict code and does nothing in sloppy code).
    pub fn call(
        &mut self,
        function: &str,
        args: &Value,
        read_only: bool,
    ) -> (Result<Value, ToolError>, ScriptEffects) {
        let file = self.file.clone();
        let out = self.bounded(|| self.context().with(|ctx| -> Result<String, ToolError> {
            let call: Function = ctx.globals().get("__gauntlet_call").map_err(|e| internal(e.to_string()))?;
            call.call::<_, String>((function, args.to_string(), read_only)).catch(&ctx).map_err(|e| {
                let text = e.to_string();
                if text.contains("interrupted") {
                    internal(format!("handler `{function}` ({file}) exceeded its time limit of {CALL_TIME_LIMIT:?}"))
                } else if text.contains("out of memory") {
                    internal(format!("handler `{function}` ({file}) exceeded the memory limit"))
                } else {
                    internal(format!("handler `{function}` ({file}) failed: {text}"))
                }
            })
        }));
        let out = match out {
            Ok(s) => s,
            Err(e) => {
                if e.message.contains("exceeded") {
                    self.spoiled = true;
                }
                return (Err(e), ScriptEffects::default());
            }
        };
        let v: Value = serde_json::from_str(&out).unwrap_or(Value::Null);
        let mut fx = ScriptEffects::default();
        for c in v["changes"].as_array().into_iter().flatten() {
            let coll = c[0].as_str().unwrap_or_default();
            let key = c[1].as_str().unwrap_or_default();
            let parse = |x: &Value| x.as_str().and_then(|s| serde_json::from_str(s).ok());
            let esc = gauntlet_model::path::escape_segment;
            let path = if coll.is_empty() {
                format!("/{}", esc(key))
            } else {
                format!("/{}/{}", esc(coll), esc(key))
            };
            fx.changes.push(StateChange {
                path,
                before: parse(&c[2]),
                after: parse(&c[3]),
            });
        }
        for a in v["accesses"].as_array().into_iter().flatten() {
            fx.accesses.push((
                a[0].as_str().unwrap_or_default().to_owned(),
                a[1].as_str().unwrap_or_default().to_owned(),
            ));
        }
        fx.declared = v["effects"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|e| e.as_str().map(str::to_owned))
            .collect();
        let result = match (&v.get("ok"), v.get("err")) {
            (_, Some(err)) => Err(ToolError {
                status: err["status"].as_u64().unwrap_or(500) as u16,
                message: err["message"].as_str().unwrap_or_default().to_owned(),
                retry_after_s: None,
            }),
            (Some(ok), None) => Ok((*ok).clone()),
            _ => Err(internal(format!(
                "handler `{function}` ({file}) returned nothing readable"
            ))),
        };
        (result, fx)
    }

    /// Runs `f` with the per-call time limit armed: a world that loops (a `toJSON` or getter
    /// that never returns) is interrupted instead of hanging the run.
    fn bounded<T>(&self, f: impl FnOnce() -> T) -> T {
        let loaded = self.loaded();
        let limit = loaded.origin.elapsed() + CALL_TIME_LIMIT;
        loaded
            .deadline
            .store(limit.as_micros() as u64, Ordering::Relaxed);
        let out = f();
        loaded.deadline.store(u64::MAX, Ordering::Relaxed);
        out
    }

    /// The tenant of a record (`field` of `state[coll][key]`), if it has one (none when the
    /// lookup fails or runs out of time).
    pub fn tenant_of(&self, coll: &str, key: &str, field: &str) -> Option<String> {
        self.bounded(|| {
            self.context().with(|ctx| {
                let f: Result<Function, _> = ctx.globals().get("__gauntlet_tenant");
                f.and_then(|f| f.call::<_, String>((coll, key, field)))
                    .ok()
                    .filter(|t| !t.is_empty())
            })
        })
    }

    /// The current state; `null` when the world cannot write it out in time (a looping
    /// `toJSON` or getter), which fails the trial's state checks rather than hanging the run.
    pub fn state(&self) -> Value {
        self.read_state().unwrap_or(Value::Null)
    }

    /// The current state, or why it cannot be read back (a value that does not serialise in
    /// time, a state nested deeper than [`MAX_STATE_DEPTH`]).
    pub fn read_state(&self) -> Result<Value, ScriptError> {
        let text = self.harness_string("__gauntlet_state")?;
        parse_state(&text, 0)
    }

    /// The current state, built from the state the trial started from and what it changed
    /// (only those records are read out of the script runtime); or why it cannot be read back,
    /// as [`ScriptEngine::read_state`] says.
    pub fn changed_state(&self) -> Result<Value, ScriptError> {
        self.changes().map(|c| c.to_value())
    }

    /// The current state as the state the trial started from (shared, not copied) and the
    /// records it changed, read out of the script runtime; or why they cannot be read back, as
    /// [`ScriptEngine::read_state`] says.
    pub fn changes(&self) -> Result<ChangedState, ScriptError> {
        let text = self.harness_string("__gauntlet_changed")?;
        let changed: Vec<(String, String, bool, Option<String>)> =
            serde_json::from_str(&text).map_err(ScriptError::StateNotJson)?;
        let mut state = ChangedState::new(Arc::clone(&self.loaded().state));
        // The root's keys first: a record's entry reads its collection as it is now.
        let (root, records): (Vec<_>, Vec<_>) =
            changed.into_iter().partition(|(coll, ..)| coll.is_empty());
        for (coll, key, present, json) in root.into_iter().chain(records) {
            // A record of what is no collection now is not read, as the whole state has no place
            // for it.
            if !coll.is_empty() && !state.has_collection(&coll) {
                continue;
            }
            let depth = if coll.is_empty() { 1 } else { 2 };
            let value = match json.filter(|_| present) {
                Some(json) => Some(parse_state(&json, depth)?),
                None => None,
            };
            if coll.is_empty() {
                state.set_entry(key, value);
            } else {
                state.set_record(&coll, key, value);
            }
        }
        Ok(state)
    }

    /// Calls a harness entry point that returns a JSON text, within the call time limit.
    fn harness_string(&self, entry: &str) -> Result<String, ScriptError> {
        let text = self.bounded(|| {
            self.context().with(|ctx| {
                let f: Result<Function, _> = ctx.globals().get(entry);
                f.and_then(|f| f.call::<_, String>(())).ok()
            })
        });
        text.ok_or(ScriptError::StateNotSerialisable)
    }

    /// Puts the loaded state back as the trial found it; false when that cannot be vouched for.
    fn roll_back(&self) -> bool {
        self.bounded(|| {
            self.context().with(|ctx| {
                let f: Result<Function, _> = ctx.globals().get("__gauntlet_reset");
                f.and_then(|f| f.call::<_, bool>(())).unwrap_or(false)
            })
        })
    }
}

impl Drop for ScriptEngine {
    /// Gives the loaded state back to its pool, rolled back, unless the trial spoiled it (a call
    /// out of time or memory, a rollback that failed): then it is dropped with the trial.
    fn drop(&mut self) {
        let whole = match &self.home {
            Some(_) if !self.spoiled && self.loaded.is_some() => self.roll_back(),
            _ => false,
        };
        // The trial's realm goes first: its objects are freed while the runtime lives.
        self.context = None;
        let (Some(home), Some(loaded)) = (self.home.take(), self.loaded.take()) else {
            return;
        };
        if whole {
            let mut loaded = loaded;
            loaded.served();
            home.give_back(loaded);
        }
    }
}

/// Parses a state (or a part of one found at `depth`), refusing one nested deeper than
/// [`MAX_STATE_DEPTH`] in all.
fn parse_state(text: &str, depth: usize) -> Result<Value, ScriptError> {
    let value: Value = serde_json::from_str(text).map_err(|e| {
        if e.to_string().contains("recursion limit") {
            ScriptError::StateTooDeep
        } else {
            ScriptError::StateNotJson(e)
        }
    })?;
    if depth + nesting(&value) > MAX_STATE_DEPTH {
        return Err(ScriptError::StateTooDeep);
    }
    Ok(value)
}

/// How deeply a value nests (a scalar: 0).
fn nesting(value: &Value) -> usize {
    match value {
        Value::Array(a) => 1 + a.iter().map(nesting).max().unwrap_or(0),
        Value::Object(o) => 1 + o.values().map(nesting).max().unwrap_or(0),
        _ => 0,
    }
}

/// Evaluates a script file's source (sloppy mode, as handler files are written); an error names
/// the file.
fn eval_file(ctx: &rquickjs::Ctx<'_>, file: &str, source: &str) -> Result<(), ScriptError> {
    eval_named(ctx, file, source, |message| ScriptError::Script {
        file: file.to_owned(),
        message,
    })
}

/// Evaluates the harness's sandbox script.
fn eval_sandbox(ctx: &rquickjs::Ctx<'_>) -> Result<(), ScriptError> {
    eval_named(ctx, "gauntlet-sandbox.js", SANDBOX, ScriptError::Sandbox)
}

/// Evaluates a source under a file name; when it throws, `error` makes the error from the
/// exception's text (a caught exception borrows the runtime, so only its text leaves it).
fn eval_named(
    ctx: &rquickjs::Ctx<'_>,
    file: &str,
    source: &str,
    error: impl FnOnce(String) -> ScriptError,
) -> Result<(), ScriptError> {
    let mut opts = rquickjs::context::EvalOptions::default();
    opts.filename = Some(file.to_owned());
    opts.strict = false;
    ctx.eval_with_options::<(), _>(source, opts)
        .catch(ctx)
        .map_err(|e| error(e.to_string()))
}

/// Loads a standalone script (a custom evaluator) in a fresh sandbox, as [`call_function`]
/// does, and checks that it defines `function`: a syntax error or a missing function is found
/// before any trial runs. The function is not called.
pub fn check_function(file: &str, source: &str, function: &str) -> Result<(), ScriptError> {
    let (_runtime, ctx) = standalone(Duration::from_secs(2))?;
    ctx.with(|ctx| load_standalone(&ctx, file, source, function))
}

/// A fresh sandbox for a standalone script, its time limit counted from now.
fn standalone(time_limit: Duration) -> Result<(rquickjs::Runtime, rquickjs::Context), ScriptError> {
    let runtime = rquickjs::Runtime::new().map_err(ScriptError::Start)?;
    runtime.set_memory_limit(MEMORY_LIMIT);
    runtime.set_max_stack_size(1 << 20);
    let started = Instant::now();
    runtime.set_interrupt_handler(Some(Box::new(move || started.elapsed() > time_limit)));
    let ctx = rquickjs::Context::full(&runtime).map_err(ScriptError::Start)?;
    Ok((runtime, ctx))
}

/// Evaluates the sandbox and the script, and finds `function` among its globals.
fn load_standalone(
    ctx: &rquickjs::Ctx<'_>,
    file: &str,
    source: &str,
    function: &str,
) -> Result<(), ScriptError> {
    if function.is_empty()
        || !function
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$')
    {
        return Err(ScriptError::NotAFunctionName {
            function: function.to_owned(),
        });
    }
    eval_sandbox(ctx)?;
    eval_file(ctx, file, source)?;
    if ctx.globals().get::<_, Function>(function).is_err() {
        return Err(ScriptError::NoFunction {
            file: file.to_owned(),
            function: function.to_owned(),
        });
    }
    Ok(())
}

/// A script error as its author wrote the script: the stack frames of the harness's own call
/// (`at <eval> (eval_script:…)`) and trailing blank lines left out.
fn without_harness_frames(message: &str) -> String {
    message
        .lines()
        .filter(|l| !(l.trim_start().starts_with("at ") && l.contains("(eval_script:")))
        .collect::<Vec<_>>()
        .join("\n")
        .trim_end()
        .to_owned()
}

/// Calls `function(input)` of a standalone script (a custom evaluator) in a fresh sandbox: no
/// filesystem, network, clock or randomness, [`MEMORY_LIMIT`] of memory and `time_limit` for
/// loading the script and the call together. The JSON value the function returns; an error
/// names `file` and says what went wrong.
pub fn call_function(
    file: &str,
    source: &str,
    function: &str,
    input: &Value,
    time_limit: Duration,
) -> Result<Value, ScriptError> {
    let started = Instant::now();
    let (_runtime, ctx) = standalone(time_limit)?;
    let out: String = ctx.with(|ctx| -> Result<String, ScriptError> {
        load_standalone(&ctx, file, source, function)?;
        ctx.globals()
            .set("__gauntlet_input", input.to_string())
            .map_err(ScriptError::Runtime)?;
        let call = format!("JSON.stringify({function}(JSON.parse(__gauntlet_input)))");
        ctx.eval::<Option<String>, _>(call)
            .catch(&ctx)
            .map_err(|e| {
                if started.elapsed() > time_limit {
                    ScriptError::FunctionTimedOut {
                        file: file.to_owned(),
                        function: function.to_owned(),
                        limit: time_limit,
                    }
                } else {
                    ScriptError::Script {
                        file: file.to_owned(),
                        message: without_harness_frames(&e.to_string()),
                    }
                }
            })?
            .ok_or_else(|| ScriptError::ReturnedNothing {
                file: file.to_owned(),
                function: function.to_owned(),
            })
    })?;
    serde_json::from_str(&out).map_err(|source| ScriptError::ReturnedNoJson {
        file: file.to_owned(),
        function: function.to_owned(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Regression: a custom evaluator that threw showed QuickJS's frame for the harness's own
    /// call (`at <eval> (eval_script:1:36)`) and a blank line under its message.
    #[test]
    fn a_throwing_function_says_where_in_its_own_file() {
        let source = "function evaluate(t) {\n  throw new Error('boom')\n}\n";
        let e = call_function(
            "ev/bad.js",
            source,
            "evaluate",
            &serde_json::json!({}),
            Duration::from_secs(5),
        )
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "ev/bad.js: Error: boom\n    at evaluate (ev/bad.js:2:13)"
        );
    }
}
