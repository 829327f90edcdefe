//! One trial's world: its own state, the event log, faults, the clock and the side-effect log.
//!
//! Every call is recorded whatever happens to it: unknown tool, invalid arguments (400),
//! missing scope (403), injected fault, handler error, or success with its state transitions.
//! A write repeated with an idempotency key already applied is answered from the first call
//! without applying its effect again, as an idempotent API would; the key reused for another
//! call (other arguments, or another tool) is refused with 409, as Stripe and ticketing APIs do.

use std::sync::Arc;
use std::time::Instant;

use gauntlet_model::trajectory::ToolCall;
use gauntlet_model::{
    ChangedState, Context, Event, FaultKind, FaultSpec, FinalState, SideEffect, ToolError,
    ToolKind, Trajectory,
};
use serde_json::Value;

use gauntlet_model::checkpoint::CheckpointFailed;
use gauntlet_model::{Classified, ErrorKind};

use crate::handler::HandlerContext;
use crate::script::ScriptError;
use crate::world::World;

/// A fault rule and where it came from (`case`, or `profile:NAME`).
#[derive(Debug, Clone, PartialEq)]
pub struct FaultRule {
    /// The rule.
    pub spec: FaultSpec,
    /// Its origin, recorded in fault events.
    pub source: String,
}

/// The faults of one trial: the rules, and the seed their probabilities are drawn from.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FaultPlan {
    /// Rules in order; the first that matches a call decides its fault.
    pub rules: Vec<FaultRule>,
    /// The trial's seed.
    pub seed: u64,
}

impl FaultPlan {
    /// The rule hitting the `nth` call (1-based) of `tool`, if any. Deterministic: the draw for
    /// a probabilistic rule depends only on the seed, the rule, the tool and `nth`.
    fn hit(&self, tool: &str, kind: Option<ToolKind>, nth: u32) -> Option<(usize, &FaultRule)> {
        self.rules.iter().enumerate().find(|(i, r)| {
            let f = &r.spec;
            !f.model
                && f.tool.as_deref().is_none_or(|t| t == tool)
                && f.on.is_none_or(|k| Some(k) == kind)
                && (f.calls.is_empty() || f.calls.contains(&nth))
                && f.probability
                    .is_none_or(|p| unit_draw(self.seed, *i, tool, nth) < p)
        })
    }
}

impl FaultPlan {
    /// The fault for the `nth` call (1-based) of `tool` outside a simulated world (the shadow
    /// proxy's calls): the rule that hits it and the error its caller sees, `None` for the
    /// kinds that are not an error (`empty`, `lost_response`).
    pub fn tool_fault(
        &self,
        tool: &str,
        kind: ToolKind,
        nth: u32,
    ) -> Option<(&FaultRule, Option<ToolError>)> {
        let (_, rule) = self.hit(tool, Some(kind), nth)?;
        let error = injected_error(rule.spec.kind, rule.spec.retry_after_s, Target::Tool);
        Some((rule, error))
    }

    /// The rule hitting the trial's `nth` model call (1-based), if any; drawn as for tools.
    fn hit_model(&self, nth: u32) -> Option<&FaultRule> {
        self.rules.iter().enumerate().find_map(|(i, r)| {
            let f = &r.spec;
            (f.model
                && (f.calls.is_empty() || f.calls.contains(&nth))
                && f.probability
                    .is_none_or(|p| unit_draw(self.seed, i, MODEL, nth) < p))
            .then_some(r)
        })
    }
}

/// The name model calls go by in fault draws and fault events.
pub const MODEL: &str = "(model)";

/// A uniform draw in [0, 1) from a hash of its inputs (SHA-256, first 8 bytes).
fn unit_draw(seed: u64, rule: usize, tool: &str, nth: u32) -> f64 {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    h.update(seed.to_le_bytes());
    h.update((rule as u64).to_le_bytes());
    h.update(tool.as_bytes());
    h.update(nth.to_le_bytes());
    let d = h.finalize();
    let x = u64::from_le_bytes(d[..8].try_into().unwrap_or_default());
    (x >> 11) as f64 / (1u64 << 53) as f64
}

/// Attacker text a trial's tools carry: appended to a tool's output (at a field) or to its
/// description. Made by [`Injections::for_trial`] from the world's injection vectors and the
/// case's attack; state placeholders are placed before the trial starts, not here.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Injections {
    /// (tool, JSON pointer of the string field or `""` for the whole output, text, from the
    /// n-th call on).
    pub outputs: Vec<(String, String, String, u32)>,
    /// (tool, text appended to its description, from the n-th call on: 0 from the start).
    pub descriptions: Vec<(String, String, u32)>,
}

impl Injections {
    /// The injections of a trial of a world under an attack (or none: the vectors' defaults).
    pub fn for_trial(
        spec: &gauntlet_model::WorldSpec,
        attack: Option<&gauntlet_model::Attack>,
    ) -> Result<Injections, gauntlet_model::NoTemplateError> {
        let vectors = &spec.injection_vectors;
        if vectors.is_empty() {
            return Ok(Injections::default());
        }
        let texts = gauntlet_model::attack::vector_texts(vectors, attack)?;
        let mut out = Injections::default();
        for (name, v) in vectors {
            let Some(text) = texts.get(name).filter(|t| !t.is_empty()) else {
                continue;
            };
            let from = v.after_calls.unwrap_or(0);
            if let Some(tool) = &v.tool {
                out.outputs.push((
                    tool.clone(),
                    v.field.clone().unwrap_or_default(),
                    text.clone(),
                    from,
                ));
            }
            if let Some(tool) = &v.description_of {
                out.descriptions.push((tool.clone(), text.clone(), from));
            }
        }
        Ok(out)
    }

    fn carry_in_output(&self, tool: &str, calls_before: u32, result: &mut Value) {
        for (t, field, text, from) in &self.outputs {
            if t != tool || calls_before < *from {
                continue;
            }
            let target = if field.is_empty() {
                Some(&mut *result)
            } else {
                result.pointer_mut(field)
            };
            if let Some(Value::String(s)) = target {
                s.push_str(text);
            }
        }
    }
}

/// A trap's check of the live state: `Err` says what did not hold.
pub type TrapCheck = Box<dyn Fn(&Value) -> Result<(), CheckpointFailed> + Send>;

/// A checkpoint that ends the trial where it fails (an immediate trap): where it is taken, and
/// the check of the state there (`Err` says what did not hold).
pub struct Trap {
    /// The checkpoint's name.
    pub label: String,
    /// Where it is taken.
    pub at: gauntlet_model::checkpoint::At,
    /// The check.
    pub check: TrapCheck,
}

/// A running trial's world.
pub struct Simulator {
    /// Traps not yet taken.
    traps: Vec<Trap>,
    /// Why the trial ended at a trap, once it has.
    trapped: Option<String>,
    /// Attacker text carried by tool outputs and descriptions.
    injections: Injections,
    world: Arc<World>,
    /// The state the trial started from.
    initial: Arc<Value>,
    /// The state now, for worlds without a script (a script's runtime holds its own).
    state: Value,
    context: Context,
    faults: FaultPlan,
    events: crate::log::EventLog,
    side_effects: Vec<SideEffect>,
    calls_per_tool: std::collections::HashMap<String, u32>,
    model_calls: u32,
    /// Applied writes by idempotency key: what was asked and what it answered.
    idempotent: std::collections::HashMap<String, Applied>,
    next_call: u32,
    started: Instant,
    waited_ms: f64,
    /// The script runtime holding the state, for worlds with a script.
    script: Option<Result<crate::script::ScriptEngine, ScriptError>>,
    /// The real service answering the tools, for worlds that are one.
    service: Option<Box<dyn Service>>,
}

/// A real service behind a world's tools, made for one trial: its MCP server answers the calls
/// and its state is read back as JSON. Dropping it tears it down.
pub trait Service: Send {
    /// Calls one tool of the service; blocks until it answers, fails or times out.
    fn call(&mut self, tool: &str, args: &Value) -> Result<Value, ToolError>;
    /// The service's state now.
    fn snapshot(&mut self) -> Result<Value, ServiceFailed>;
}

/// A real service that failed, with its own error: its message and its kind are the
/// service's (a snapshot command the world wrote wrongly is the user's input, a disk that fails
/// is the harness's).
#[derive(Debug)]
pub struct ServiceFailed(pub Box<dyn Classified + Send + Sync>);

impl ServiceFailed {
    /// Wraps a service's error.
    pub fn new(error: impl Classified + Send + Sync + 'static) -> Self {
        ServiceFailed(Box::new(error))
    }
}

impl std::fmt::Display for ServiceFailed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl std::error::Error for ServiceFailed {
    // Transparent: the service's error speaks for itself, so its cause is this one's.
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.0.source()
    }
}

impl Classified for ServiceFailed {
    fn kind(&self) -> ErrorKind {
        self.0.kind()
    }
}

/// Why a trial's final state cannot be read back: the world's script or its real service
/// failed, and says why (and whose failure it is).
#[derive(Debug, thiserror::Error)]
pub enum FinalStateError {
    /// The world's script cannot write its state out.
    #[error(transparent)]
    Script(#[from] ScriptError),
    /// The real service's state cannot be read.
    #[error(transparent)]
    Service(#[from] ServiceFailed),
}

impl Classified for FinalStateError {
    fn kind(&self) -> ErrorKind {
        match self {
            FinalStateError::Script(e) => e.kind(),
            FinalStateError::Service(e) => e.kind(),
        }
    }
}

/// The changes between two states, record by record (the values of top-level objects), so a
/// write to a real service is recorded like a simulated one.
fn changes_between(before: &Value, after: &Value) -> Vec<gauntlet_model::StateChange> {
    let esc = gauntlet_model::path::escape_segment;
    let empty = serde_json::Map::new();
    let (b, a) = (
        before.as_object().unwrap_or(&empty),
        after.as_object().unwrap_or(&empty),
    );
    let mut keys: Vec<&String> = b.keys().chain(a.keys()).collect();
    keys.sort();
    keys.dedup();
    let mut out = Vec::new();
    for k in keys {
        let (x, y) = (b.get(k), a.get(k));
        if x == y {
            continue;
        }
        match (x, y) {
            (Some(Value::Object(xo)), Some(Value::Object(yo))) => {
                let mut inner: Vec<&String> = xo.keys().chain(yo.keys()).collect();
                inner.sort();
                inner.dedup();
                for r in inner {
                    if xo.get(r) != yo.get(r) {
                        out.push(gauntlet_model::StateChange {
                            path: format!("/{}/{}", esc(k), esc(r)),
                            before: xo.get(r).cloned(),
                            after: yo.get(r).cloned(),
                        });
                    }
                }
            }
            _ => out.push(gauntlet_model::StateChange {
                path: format!("/{}", esc(k)),
                before: x.cloned(),
                after: y.cloned(),
            }),
        }
    }
    out
}

impl Simulator {
    /// A fresh trial over its own copy of the state.
    pub fn new(world: Arc<World>, state: Value, context: Context, faults: FaultPlan) -> Self {
        Simulator::start(world, Arc::new(state), context, faults)
    }

    /// A fresh trial from `initial`. A script world's trials that start from the same `Arc`
    /// share its loaded state, rolled back between trials, instead of loading it each time.
    pub fn start(
        world: Arc<World>,
        initial: Arc<Value>,
        context: Context,
        faults: FaultPlan,
    ) -> Self {
        let script = world.script().map(|src| {
            let now = world.spec().now.clone().unwrap_or_default();
            crate::script::ScriptEngine::lend(
                world.pool(),
                &src.file,
                &src.source,
                &initial,
                &context,
                faults.seed,
                &now,
            )
        });
        // A world whose tools are all its script's keeps no state of its own here; one with
        // declarative tools beside its script keeps the copy they read and write.
        let state = if script.is_some() && world.spec().tools.iter().all(|t| t.handler.is_empty()) {
            Value::Null
        } else {
            (*initial).clone()
        };
        Simulator {
            traps: Vec::new(),
            trapped: None,
            injections: Injections::default(),
            script,
            world,
            initial,
            state,
            context,
            faults,
            events: crate::log::EventLog::default(),
            side_effects: Vec::new(),
            calls_per_tool: Default::default(),
            model_calls: 0,
            idempotent: Default::default(),
            next_call: 0,
            started: Instant::now(),
            waited_ms: 0.0,
            service: None,
        }
    }

    /// Hands the world's tools to a real service: its MCP server answers them, and after each
    /// write its state is read back (the trial's state is the service's).
    pub fn with_service(mut self, service: Box<dyn Service>) -> Self {
        self.service = Some(service);
        self
    }

    /// The trial clock in milliseconds: wall time since the start plus scripted waits.
    pub fn now_ms(&self) -> f64 {
        self.started.elapsed().as_secs_f64() * 1000.0 + self.waited_ms
    }

    /// Advances the trial clock without sleeping (a scripted agent's backoff) and records it.
    /// The wait is bounded first (see [`gauntlet_model::bound::bound_wait_ms`]): an agent's
    /// `sleep(1e308)` must not make the clock infinite, which no reader reads back.
    pub fn wait(&mut self, step: u32, ms: f64) {
        let ms = gauntlet_model::bound::bound_wait_ms(ms);
        self.waited_ms += ms;
        self.events.push(Event::Wait { step, ms });
    }

    /// The world this trial runs in.
    pub fn world(&self) -> &World {
        &self.world
    }

    /// Tells `tap` each event as the trial logs it (the run's live event stream).
    pub fn with_tap(mut self, tap: crate::log::EventTap) -> Self {
        self.events.tap = Some(tap);
        self
    }

    /// Ends the trial at the first of these traps that fails.
    pub fn with_traps(mut self, traps: Vec<Trap>) -> Self {
        self.traps = traps;
        self
    }

    /// Why the trial ended at a trap, once it has: no call runs after it.
    pub fn trapped(&self) -> Option<&str> {
        self.trapped.as_deref()
    }

    /// Takes the traps due now (`due`, one flag per trap) on the current state; the first that
    /// fails ends the trial (a `trapped` event).
    fn spring_traps(&mut self, step: u32, due: Vec<bool>) {
        let traps = std::mem::take(&mut self.traps);
        let mut pending = Vec::new();
        let mut springing = Vec::new();
        for (t, d) in traps.into_iter().zip(due) {
            if d {
                springing.push(t);
            } else {
                pending.push(t);
            }
        }
        self.traps = pending;
        for trap in springing {
            if let Err(reason) = (trap.check)(&self.state()) {
                self.trapped = Some(format!(
                    "the trial ended at trap `{}` (step {step})",
                    trap.label
                ));
                self.events.push(Event::Trapped {
                    checkpoint: trap.label,
                    step,
                    reason: reason.to_string(),
                });
                self.traps.clear();
                return;
            }
        }
    }

    /// Carries attacker text in tool outputs and descriptions from now on.
    pub fn inject(mut self, injections: Injections) -> Self {
        self.injections = injections;
        self
    }

    /// How many rug pulls have happened so far (0 until the first): changes when
    /// [`Simulator::tools`] does.
    pub fn tools_version(&self) -> u32 {
        self.injections
            .descriptions
            .iter()
            .filter(|(_, _, from)| *from > 0 && self.next_call >= *from)
            .count() as u32
    }

    /// The tools as the agent sees them now: the world's, with injected descriptions (those of a
    /// rug pull once its call count is reached).
    pub fn tools(&self) -> Vec<gauntlet_model::ToolSpec> {
        let mut tools = self.world.spec().tools.clone();
        for (name, text, from) in &self.injections.descriptions {
            if self.next_call < *from {
                continue;
            }
            if let Some(t) = tools.iter_mut().find(|t| &t.name == name) {
                t.description.push_str(text);
            }
        }
        tools
    }

    /// The current state.
    pub fn state(&self) -> Value {
        match &self.script {
            Some(Ok(engine)) => engine.changed_state().unwrap_or(Value::Null),
            Some(Err(_)) => (*self.initial).clone(),
            None => self.state.clone(),
        }
    }

    /// Puts the recorded output of a replayed call beside the last call's output.
    pub fn note_recorded_output(&mut self, recorded: Value) {
        self.events.change_last_call(|c| {
            let mut recorded = recorded;
            gauntlet_model::bound::bound_value(&mut recorded);
            c.recorded_output = Some(recorded);
        });
    }

    /// The trial's events so far other than its tool calls (the conversation, faults, waits).
    pub fn conversation(&self) -> impl Iterator<Item = &Event> {
        self.events.conversation()
    }

    /// Appends a non-tool event (messages, confirmations, model calls).
    pub fn record(&mut self, event: Event) {
        self.events.push(event);
    }

    /// Counts one model call of the agent and decides whether a fault hits it: the error the
    /// agent gets instead of the model's answer, and its kind (recorded as a fault event).
    pub fn model_call_fault(&mut self) -> Option<(FaultKind, ToolError)> {
        self.model_calls += 1;
        let nth = self.model_calls;
        let rule = self.faults.hit_model(nth)?.clone();
        let f = &rule.spec;
        self.events.push(Event::FaultInjected {
            call_id: format!("model-{nth}"),
            tool: MODEL.to_owned(),
            kind: f.kind,
            source: rule.source.clone(),
        });
        let e = injected_error(f.kind, f.retry_after_s, Target::Model)?;
        Some((f.kind, e))
    }

    /// Calls a tool as the agent would; the returned error is what the agent sees.
    pub fn call_tool(
        &mut self,
        step: u32,
        tool: &str,
        arguments: Value,
        idempotency_key: Option<String>,
    ) -> Result<Value, ToolError> {
        // A step trap is taken when the agent moves past its step, on the state before this call.
        if !self.traps.is_empty() && self.trapped.is_none() {
            // With traps pending the log keeps every call whole.
            let closed = self.events.whole_calls().next_back().map(|c| c.step);
            let last = closed.unwrap_or(0);
            let due = self
                .traps
                .iter()
                .map(|t| t.at.step.is_some_and(|s| step > s && last <= s))
                .collect();
            self.spring_traps(last, due);
        }
        if let Some(why) = &self.trapped {
            return Err(error(409, why.clone()));
        }
        let started = Instant::now();
        self.next_call += 1;
        let id = format!("call-{}", self.next_call);
        let nth = {
            let n = self.calls_per_tool.entry(tool.to_owned()).or_default();
            *n += 1;
            *n
        };
        let at_ms = self.now_ms();
        let mut call = ToolCall {
            id: id.clone(),
            step,
            tool: tool.to_owned(),
            arguments,
            kind: None,
            schema_valid: None,
            result: None,
            error: None,
            fault: None,
            idempotency_key,
            state_changes: Vec::new(),
            idempotent_replay: false,
            recorded_output: None,
            at_ms,
            latency_ms: 0.0,
        };
        let mut outcome = self.execute(&mut call, nth);
        if let Ok(v) = &mut outcome
            && !self.injections.outputs.is_empty()
            && call.fault.is_none()
        {
            self.injections
                .carry_in_output(tool, self.next_call.saturating_sub(1), v);
        }
        match &outcome {
            Ok(v) => call.result = Some(v.clone()),
            Err(e) => call.error = Some(e.clone()),
        }
        call.latency_ms = started.elapsed().as_secs_f64() * 1000.0;
        self.events.push_call(Box::new(call), self.traps.is_empty());
        if !self.traps.is_empty() {
            let calls: Vec<&gauntlet_model::ToolCall> = self.events.whole_calls().collect();
            let last = calls.len() - 1;
            let due: Vec<bool> = self
                .traps
                .iter()
                .map(|t| t.at.step.is_none() && t.at.is_right_after(&calls, last))
                .collect();
            self.spring_traps(step, due);
        }
        // A rug pull whose moment has come: the tool list changes now, and the trajectory says so.
        let pulled: Vec<String> = self
            .injections
            .descriptions
            .iter()
            .filter(|(_, _, from)| *from > 0 && *from == self.next_call)
            .map(|(tool, _, _)| tool.clone())
            .collect();
        if !pulled.is_empty() {
            self.events.push(Event::ToolsChanged {
                tools: pulled,
                after_calls: self.next_call,
            });
        }
        outcome
    }

    fn execute(&mut self, call: &mut ToolCall, nth: u32) -> Result<Value, ToolError> {
        let world = Arc::clone(&self.world);
        let Some(tool) = world.tool(&call.tool) else {
            return Err(error(404, format!("unknown tool `{}`", call.tool)));
        };
        call.kind = Some(tool.spec.kind);
        if let Err(problems) = world.validate_arguments(&call.tool, &call.arguments) {
            call.schema_valid = Some(false);
            return Err(error(
                400,
                format!(
                    "invalid arguments for `{}`: {}",
                    call.tool,
                    problems.join("; ")
                ),
            ));
        }
        call.schema_valid = Some(true);
        let missing: Vec<&str> = tool
            .spec
            .scopes
            .iter()
            .filter(|s| !self.context.scopes.contains(s))
            .map(String::as_str)
            .collect();
        if !missing.is_empty() {
            return Err(error(
                403,
                format!(
                    "permission denied: `{}` needs scope {}",
                    call.tool,
                    missing.join(", ")
                ),
            ));
        }
        if tool.spec.kind == ToolKind::Write
            && let Some(key) = &call.idempotency_key
            && let Some(first) = self.idempotent.get(key)
        {
            // The first call's answer only for the same call: a replay that returned it for
            // other arguments would hide a wrong retry that no real API accepts.
            if first.tool != call.tool || first.arguments != call.arguments {
                return Err(error(409, idempotency_conflict(key, first)));
            }
            call.idempotent_replay = true;
            return Ok(first.result.clone());
        }
        let fault = self
            .faults
            .hit(&call.tool, Some(tool.spec.kind), nth)
            .map(|(_, r)| r.clone());
        if let Some(rule) = &fault {
            let f = &rule.spec;
            call.fault = Some(f.kind);
            self.events.push(Event::FaultInjected {
                call_id: call.id.clone(),
                tool: call.tool.clone(),
                kind: f.kind,
                source: rule.source.clone(),
            });
            if f.kind == FaultKind::Empty {
                return Ok(tool.handler.empty_result());
            }
            if let Some(e) = injected_error(f.kind, f.retry_after_s, Target::Tool) {
                return Err(e);
            }
        }
        let (result, accessed) = if let Some(service) = self.service.as_mut() {
            let result = service.call(&call.tool, &call.arguments);
            if result.is_ok() && tool.spec.kind == ToolKind::Write {
                match service.snapshot() {
                    Ok(now) => {
                        call.state_changes = changes_between(&self.state, &now);
                        self.state = now;
                    }
                    Err(e) => {
                        return Err(error(
                            500,
                            format!("the service's state could not be read after the call: {e}"),
                        ));
                    }
                }
            }
            (result, Vec::new())
        } else if tool.spec.handler.is_empty() && self.script.is_some() {
            match self.script.as_mut() {
                Some(Ok(engine)) => {
                    let (result, fx) = engine.call(
                        &call.tool,
                        &call.arguments,
                        tool.spec.kind == gauntlet_model::ToolKind::Read,
                    );
                    call.state_changes = fx.changes;
                    (result, fx.accesses)
                }
                Some(Err(e)) => (
                    Err(error(
                        500,
                        format!("the world's script failed to start: {e}"),
                    )),
                    Vec::new(),
                ),
                None => unreachable!("checked above"),
            }
        } else {
            let mut cx = HandlerContext::new(&mut self.state, &self.context);
            let result = tool.handler.call(&call.arguments, &mut cx);
            let accessed = cx.accessed_records();
            match &result {
                Ok(_) => call.state_changes = cx.into_changes(),
                Err(_) => cx.rollback(),
            }
            (result, accessed)
        };
        self.check_tenants(call, &accessed);
        match result {
            Ok(value) => {
                if tool.spec.kind == ToolKind::Write {
                    SideEffect::log(&mut self.side_effects, call);
                    if let Some(key) = &call.idempotency_key {
                        self.idempotent.insert(
                            key.clone(),
                            Applied {
                                call_id: call.id.clone(),
                                tool: call.tool.clone(),
                                arguments: call.arguments.clone(),
                                result: value.clone(),
                            },
                        );
                    }
                }
                if call.fault == Some(FaultKind::LostResponse) {
                    return Err(error(504, "timed out waiting for the response".to_owned()));
                }
                Ok(value)
            }
            Err(e) => Err(e),
        }
    }

    /// Records a cross-tenant access for every record of another tenant the call read or wrote.
    fn check_tenants(&mut self, call: &ToolCall, accessed: &[(String, String)]) {
        let (Some(field), Some(mine)) = (
            self.world.spec().tenant_field.clone(),
            self.context.tenant.clone(),
        ) else {
            return;
        };
        let esc = gauntlet_model::path::escape_segment;
        let mut seen = std::collections::HashSet::new();
        for (coll, key) in accessed {
            let pointer = format!("/{}/{}", esc(coll), esc(key));
            if !seen.insert(pointer.clone()) {
                continue;
            }
            let tenant = match &self.script {
                Some(Ok(engine)) => engine.tenant_of(coll, key, &field),
                _ => self
                    .state
                    .pointer(&pointer)
                    .and_then(|r| r.get(&field))
                    .and_then(|t| t.as_str())
                    .map(str::to_owned),
            };
            if let Some(t) = tenant
                && t != mine
            {
                self.events.push(Event::CrossTenantAccess {
                    call_id: call.id.clone(),
                    tool: call.tool.clone(),
                    record: pointer,
                    tenant: t,
                });
            }
        }
    }

    /// Ends the trial: its trajectory and final state.
    pub fn finish(self, final_answer: Option<String>) -> (Trajectory, Value) {
        let (trajectory, state) = self.finish_checked(final_answer);
        (trajectory, state.unwrap_or(Value::Null))
    }

    /// Ends the trial: its trajectory, and its final state or why the world's script cannot
    /// give it back (the trial then fails as the world's, not the agent's).
    pub fn finish_checked(
        self,
        final_answer: Option<String>,
    ) -> (Trajectory, Result<Value, FinalStateError>) {
        let (trajectory, state) = self.finish_changed(final_answer);
        (trajectory, state.map(FinalState::into_value))
    }

    /// Like [`Simulator::finish_checked`], with the final state of a world whose script keeps
    /// the state as the state the trial started from and the records it changed: not copied.
    pub fn finish_changed(
        self,
        final_answer: Option<String>,
    ) -> (Trajectory, Result<FinalState, FinalStateError>) {
        let mut service = self.service;
        let state = match (&mut service, &self.script) {
            // The service's own state, read back once more: what it is, not what was seen.
            (Some(service), _) => service
                .snapshot()
                .map(FinalState::Whole)
                .map_err(FinalStateError::from),
            (None, Some(Ok(engine))) => engine
                .changes()
                .map(FinalState::Changed)
                .map_err(FinalStateError::from),
            (None, Some(Err(_))) => Ok(FinalState::Changed(ChangedState::new(self.initial))),
            _ => Ok(FinalState::Whole(self.state)),
        };
        // The service is torn down here.
        drop(service);
        let mut final_answer = final_answer;
        final_answer
            .iter_mut()
            .for_each(|a| _ = gauntlet_model::bound::bound_text(a));
        (
            Trajectory {
                events: self.events.into_events(),
                final_answer,
                side_effects: self.side_effects,
            },
            state,
        )
    }
}

/// What a fault is injected into: a tool call or a model call through the gateway.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Target {
    Tool,
    Model,
}

/// The one table from an injected fault to the error its caller sees. `None` where the fault
/// is not an error: an empty result, a lost write response (the effect is applied and the
/// answer dropped later). Model calls know only timeouts and 429s; any other kind is a 503.
fn injected_error(
    kind: FaultKind,
    retry_after_s: Option<f64>,
    target: Target,
) -> Option<ToolError> {
    let model = target == Target::Model;
    let (status, message) = match kind {
        FaultKind::Timeout if model => (504, "the model call timed out"),
        FaultKind::RateLimited if model => (429, "rate limited: too many model calls"),
        _ if model => (503, "the model is unavailable"),
        FaultKind::Timeout => (504, "timed out"),
        FaultKind::RateLimited => (429, "rate limited"),
        FaultKind::BadRequest => (400, "bad request"),
        FaultKind::Forbidden => (403, "permission denied"),
        FaultKind::NotFound => (404, "not found"),
        FaultKind::Unavailable => (503, "service unavailable"),
        FaultKind::Empty | FaultKind::LostResponse => return None,
    };
    Some(ToolError {
        status,
        message: message.to_owned(),
        retry_after_s: (status == 429).then(|| retry_after_s.unwrap_or(1.0)),
    })
}

fn error(status: u16, message: String) -> ToolError {
    ToolError {
        status,
        message,
        retry_after_s: None,
    }
}

/// A write applied under an idempotency key: what a later call under the key is compared with.
#[derive(Debug, Clone)]
struct Applied {
    call_id: String,
    tool: String,
    arguments: Value,
    result: Value,
}

/// Why a call under an applied key is refused: the key, and the call that used it first (what
/// a retry must repeat).
fn idempotency_conflict(key: &str, first: &Applied) -> String {
    format!(
        "idempotency key `{key}` reused with different arguments (first used by {}: `{}` {})",
        first.call_id, first.tool, first.arguments
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_services_changes_are_recorded_record_by_record() {
        let before = json!({"files": {"a.txt": "x", "b.txt": "y"}, "head": "main", "dirs": []});
        let after =
            json!({"files": {"a.txt": "z", "c/d.txt": "new"}, "head": "fix", "dirs": ["c"]});
        let changes = changes_between(&before, &after);
        let paths: Vec<&str> = changes.iter().map(|c| c.path.as_str()).collect();
        assert_eq!(
            paths,
            [
                "/dirs",
                "/files/a.txt",
                "/files/b.txt",
                "/files/c~1d.txt",
                "/head"
            ]
        );
        let removed = &changes[2];
        assert_eq!(
            (removed.before.clone(), removed.after.clone()),
            (Some(json!("y")), None)
        );
        // Replaying the changes on the state before gives the state after.
        let mut state = before.clone();
        for c in &changes {
            let segs = gauntlet_model::path::pointer_segments(&c.path).unwrap();
            let (last, parents) = segs.split_last().unwrap();
            let mut node = &mut state;
            for p in parents {
                node = node.get_mut(p).unwrap();
            }
            match &c.after {
                Some(v) => {
                    node[last.as_str()] = v.clone();
                }
                None => {
                    node.as_object_mut().unwrap().remove(last);
                }
            }
        }
        assert_eq!(state, after);
        assert!(changes_between(&after, &after).is_empty());
    }
}
