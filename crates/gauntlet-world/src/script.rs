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

use gauntlet_model::{Context, StateChange, ToolError};
use rquickjs::{CatchResultExt, Function};
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

/// One trial's script runtime, holding the trial's state.
pub struct ScriptEngine {
    _runtime: rquickjs::Runtime,
    context: rquickjs::Context,
    deadline: Arc<AtomicU64>,
    origin: Instant,
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
    /// Loads the state and the world's script (`file` names it in errors).
    pub fn new(
        file: &str,
        source: &str,
        state: &Value,
        context: &Context,
        seed: u64,
        now: &str,
    ) -> Result<ScriptEngine, String> {
        let runtime = rquickjs::Runtime::new().map_err(|e| format!("cannot start QuickJS: {e}"))?;
        runtime.set_memory_limit(MEMORY_LIMIT);
        runtime.set_max_stack_size(1 << 20);
        let deadline = Arc::new(AtomicU64::new(u64::MAX));
        let origin = Instant::now();
        let d = Arc::clone(&deadline);
        runtime.set_interrupt_handler(Some(Box::new(move || {
            let limit = d.load(Ordering::Relaxed);
            limit != u64::MAX && origin.elapsed().as_micros() as u64 > limit
        })));
        let ctx =
            rquickjs::Context::full(&runtime).map_err(|e| format!("cannot start QuickJS: {e}"))?;
        let info = serde_json::json!({
            "user": context.user, "tenant": context.tenant, "roles": context.roles,
            "scopes": context.scopes, "seed": seed & 0xffff_ffff, "now": now,
        });
        // Every entry into the sandbox is bounded, loading included (a top-level loop).
        deadline.store(
            (origin.elapsed() + LOAD_TIME_LIMIT).as_micros() as u64,
            Ordering::Relaxed,
        );
        let loaded = ctx.with(|ctx| -> Result<(), String> {
            let globals = ctx.globals();
            globals
                .set("__state_json", state.to_string())
                .map_err(|e| e.to_string())?;
            globals
                .set("__info_json", info.to_string())
                .map_err(|e| e.to_string())?;
            eval_file(&ctx, "gauntlet-sandbox.js", SANDBOX)?;
            eval_file(&ctx, "gauntlet-prelude.js", PRELUDE)?;
            eval_file(&ctx, file, source)
        });
        deadline.store(u64::MAX, Ordering::Relaxed);
        loaded.map_err(|e| {
            if e.contains("interrupted") {
                format!("{file}: loading the world script exceeded its time limit of {LOAD_TIME_LIMIT:?}")
            } else {
                e
            }
        })?;
        Ok(ScriptEngine {
            _runtime: runtime,
            context: ctx,
            deadline,
            origin,
            file: file.to_owned(),
        })
    }

    /// Calls the handler named `function` with the arguments. A `read_only` call (a read tool)
    /// notes the records it touches but takes no snapshots of them, so its writes, if any, are
    /// not listed as state changes nor rolled back.
    pub fn call(
        &mut self,
        function: &str,
        args: &Value,
        read_only: bool,
    ) -> (Result<Value, ToolError>, ScriptEffects) {
        let limit = self.origin.elapsed() + CALL_TIME_LIMIT;
        self.deadline
            .store(limit.as_micros() as u64, Ordering::Relaxed);
        let file = self.file.clone();
        let out = self.context.with(|ctx| -> Result<String, ToolError> {
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
        });
        self.deadline.store(u64::MAX, Ordering::Relaxed);
        let out = match out {
            Ok(s) => s,
            Err(e) => return (Err(e), ScriptEffects::default()),
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
        let limit = self.origin.elapsed() + CALL_TIME_LIMIT;
        self.deadline
            .store(limit.as_micros() as u64, Ordering::Relaxed);
        let out = f();
        self.deadline.store(u64::MAX, Ordering::Relaxed);
        out
    }

    /// The tenant of a record (`field` of `state[coll][key]`), if it has one (none when the
    /// lookup fails or runs out of time).
    pub fn tenant_of(&self, coll: &str, key: &str, field: &str) -> Option<String> {
        self.bounded(|| {
            self.context.with(|ctx| {
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
    pub fn read_state(&self) -> Result<Value, String> {
        let text = self.bounded(|| {
            self.context.with(|ctx| {
                let f: Result<Function, _> = ctx.globals().get("__gauntlet_state");
                f.and_then(|f| f.call::<_, String>(())).ok()
            })
        });
        let Some(text) = text else {
            return Err(
                "the world's state does not serialise as JSON (a value that throws or \
                        loops in toJSON or a getter, or a cycle)"
                    .to_owned(),
            );
        };
        serde_json::from_str(&text).map_err(|e| {
            if e.to_string().contains("recursion limit") {
                format!("the world's state is nested more than {MAX_STATE_DEPTH} levels deep")
            } else {
                format!("the world's state is not valid JSON: {e}")
            }
        })
    }
}

/// Evaluates a script file's source (sloppy mode, as handler files are written); an error names
/// the file.
fn eval_file(ctx: &rquickjs::Ctx<'_>, file: &str, source: &str) -> Result<(), String> {
    let mut opts = rquickjs::context::EvalOptions::default();
    opts.filename = Some(file.to_owned());
    opts.strict = false;
    ctx.eval_with_options::<(), _>(source, opts)
        .catch(ctx)
        .map_err(|e| format!("{file}: {e}"))
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
) -> Result<Value, String> {
    if function.is_empty()
        || !function
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$')
    {
        return Err(format!("`{function}` is not a JavaScript function name"));
    }
    let runtime = rquickjs::Runtime::new().map_err(|e| format!("cannot start QuickJS: {e}"))?;
    runtime.set_memory_limit(MEMORY_LIMIT);
    runtime.set_max_stack_size(1 << 20);
    let started = Instant::now();
    runtime.set_interrupt_handler(Some(Box::new(move || started.elapsed() > time_limit)));
    let ctx =
        rquickjs::Context::full(&runtime).map_err(|e| format!("cannot start QuickJS: {e}"))?;
    let out: String = ctx.with(|ctx| -> Result<String, String> {
        eval_file(&ctx, "gauntlet-sandbox.js", SANDBOX)?;
        eval_file(&ctx, file, source)?;
        if ctx.globals().get::<_, Function>(function).is_err() {
            return Err(format!("{file} defines no function `{function}`"));
        }
        ctx.globals()
            .set("__gauntlet_input", input.to_string())
            .map_err(|e| e.to_string())?;
        let call = format!("JSON.stringify({function}(JSON.parse(__gauntlet_input)))");
        ctx.eval::<Option<String>, _>(call)
            .catch(&ctx)
            .map_err(|e| {
                if started.elapsed() > time_limit {
                    format!("{file}: `{function}` ran past its time limit of {time_limit:?}")
                } else {
                    format!("{file}: {e}")
                }
            })?
            .ok_or_else(|| format!("{file}: `{function}` returned nothing"))
    })?;
    serde_json::from_str(&out).map_err(|e| format!("{file}: `{function}` returned no JSON: {e}"))
}
