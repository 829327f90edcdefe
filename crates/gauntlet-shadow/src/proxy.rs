//! The proxy: one session per MCP client session, each with its own upstream connections (a
//! command upstream is started per session, so a crash or a hang ends that session only).
//! Reads are forwarded; writes are recorded and answered by a responder (shadow), or forwarded
//! when the canary allows them; every call is recorded as the simulator records a world's.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant, SystemTime};

use gauntlet_model::shadow::{Responder, ShadowConfig};
use gauntlet_model::trajectory::ToolCall;
use gauntlet_model::{Event, SideEffect, ToolError, ToolKind, ToolSpec, Trajectory, WorldSpec};
use gauntlet_world::{FaultPlan, FaultRule, Simulator, World};
use rmcp::handler::server::ServerHandler;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{Peer, RequestContext, RoleClient, RoleServer};
use serde_json::{Map, Value, json};
use tokio::sync::mpsc::UnboundedSender;

use crate::respond::{render_template, schema_shaped};
use gauntlet_services::relay::Relay;
use gauntlet_services::upstream::{
    CallFailure, Upstream, UpstreamError, UpstreamSpec, call, outcome_of,
};

/// The `_meta` key under which a client may send the user's request (it becomes the
/// trajectory's first user message and a harvested case's input).
pub const USER_INPUT_META: &str = "gauntlet/user_input";

/// Seconds an upstream may take to answer a call, unless the configuration says otherwise.
const DEFAULT_TIMEOUT_S: f64 = 30.0;
/// Seconds an upstream may take to start, unless the configuration says otherwise.
const DEFAULT_START_TIMEOUT_S: f64 = 60.0;

/// What the proxy was told: its upstreams, its configuration, and whether it is a canary.
#[derive(Clone)]
pub struct Settings {
    /// The upstream servers, in order.
    pub upstreams: Vec<UpstreamSpec>,
    /// The configuration file's content (defaults when there is none).
    pub config: ShadowConfig,
    /// Canary mode: allowed writes reach the upstream, within budgets.
    pub canary: bool,
    /// The worlds of `world` responders, by the path the configuration gives.
    pub worlds: BTreeMap<String, Arc<World>>,
}

impl Settings {
    /// How long an upstream may take to answer one call.
    pub fn timeout(&self) -> Duration {
        seconds(self.config.timeout_s, DEFAULT_TIMEOUT_S)
    }

    /// How long an upstream may take to start and list its tools.
    pub fn start_timeout(&self) -> Duration {
        seconds(self.config.start_timeout_s, DEFAULT_START_TIMEOUT_S)
    }
}

fn seconds(configured: Option<f64>, default: f64) -> Duration {
    Duration::from_secs_f64(
        configured
            .filter(|t| t.is_finite() && *t > 0.0 && *t < 1e9)
            .unwrap_or(default),
    )
}

/// Where a tool's kind came from, for the start-up summary.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KindSource {
    /// The MCP tool annotations (`readOnlyHint`).
    Annotation,
    /// The configuration's `tools:` entry.
    Config,
    /// No annotation: the configuration's `unannotated` (write unless it says read).
    Default,
}

/// One tool as the agent sees it, and where it goes.
pub struct ProxiedTool {
    /// The name the agent calls (`PREFIX__name` with several upstreams).
    pub exposed: String,
    /// Which upstream serves it.
    pub upstream: usize,
    /// Its name there.
    pub name: String,
    /// Read (forwarded) or write (recorded, or forwarded by a canary).
    pub kind: ToolKind,
    /// Why it has that kind.
    pub kind_source: KindSource,
    /// The tool as listed to the agent.
    pub listed: Tool,
    /// Its declared output schema, which a recorded write's answer satisfies.
    pub output_schema: Option<Value>,
    responder: Responder,
    validator: Option<jsonschema::Validator>,
}

/// Why a session's tools cannot be served: an upstream that does not come up (its own error),
/// or a configuration that does not fit the tools the upstreams have (the user's input).
#[derive(Debug, thiserror::Error)]
pub enum ProxyError {
    /// An upstream could not be named, started or reached.
    #[error(transparent)]
    Upstream(#[from] UpstreamError),
    /// A `world` responder whose world the proxy was not given.
    #[error("the world `{world}` of `{tool}`'s responder is not loaded")]
    WorldNotLoaded {
        /// The world's path, as the configuration gives it.
        world: String,
        /// The tool.
        tool: String,
    },
    /// A write answered by a world that has no such tool.
    #[error("`{tool}` is answered by the world {world}, which has no tool `{tool}`")]
    WorldLacksTool {
        /// The tool.
        tool: String,
        /// The world's path.
        world: String,
    },
    /// `tools:` rules for tools no upstream has.
    #[error(
        "the configuration's `tools:` names {} that no upstream has (they have: {})",
        ticked(.unknown),
        .have.join(", ")
    )]
    UnknownTools {
        /// The tools named that none has.
        unknown: Vec<String>,
        /// The tools there are.
        have: Vec<String>,
    },
    /// `canary.allow` naming tools no upstream has.
    #[error("`canary.allow` names {} that no upstream has", ticked(.0))]
    UnknownCanaryTools(Vec<String>),
}

impl gauntlet_model::Classified for ProxyError {
    fn kind(&self) -> gauntlet_model::ErrorKind {
        match self {
            ProxyError::Upstream(e) => e.kind(),
            // The CLI loads every world the configuration names: one missing is gauntlet's.
            ProxyError::WorldNotLoaded { .. } => gauntlet_model::ErrorKind::Harness,
            ProxyError::WorldLacksTool { .. }
            | ProxyError::UnknownTools { .. }
            | ProxyError::UnknownCanaryTools(_) => gauntlet_model::ErrorKind::InvalidInput,
        }
    }
}

/// `` `a`, `b` ``.
fn ticked(names: &[String]) -> String {
    names
        .iter()
        .map(|k| format!("`{k}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The tools of a session's upstreams.
pub struct Catalog {
    /// Every tool, in upstream order.
    pub tools: Vec<ProxiedTool>,
    /// The upstreams' names, in order.
    pub upstream_names: Vec<String>,
    peers: Vec<Option<Peer<RoleClient>>>,
    relays: Vec<Option<Arc<Relay>>>,
}

impl Catalog {
    /// Classifies and names the upstreams' tools; a configuration rule for a tool no upstream
    /// has is an error that lists the tools there are.
    pub fn build(settings: &Settings, upstreams: &[Upstream]) -> Result<Catalog, ProxyError> {
        let config = &settings.config;
        let prefixed = upstreams.len() > 1;
        let mut names: Vec<String> = Vec::new();
        for u in upstreams {
            let mut n = u.name.clone();
            let mut i = 2;
            while names.contains(&n) {
                n = format!("{}{i}", u.name);
                i += 1;
            }
            names.push(n);
        }
        let mut tools = Vec::new();
        for (i, u) in upstreams.iter().enumerate() {
            for t in &u.tools {
                let exposed = if prefixed {
                    format!("{}__{}", names[i], t.name)
                } else {
                    t.name.to_string()
                };
                let rule = config.tools.get(&exposed);
                let annotated = t.annotations.as_ref().and_then(|a| a.read_only_hint);
                let (kind, kind_source) = match (rule.and_then(|r| r.kind()), annotated) {
                    (Some(k), _) => (k, KindSource::Config),
                    (None, Some(true)) => (ToolKind::Read, KindSource::Annotation),
                    (None, Some(false)) => (ToolKind::Write, KindSource::Annotation),
                    (None, None) => (
                        config.unannotated.unwrap_or(ToolKind::Write),
                        KindSource::Default,
                    ),
                };
                let responder = rule
                    .and_then(|r| r.responder())
                    .or(config.respond.as_ref())
                    .cloned()
                    .unwrap_or(Responder::Schema);
                let input = Value::Object((*t.input_schema).clone());
                let output_schema = t
                    .output_schema
                    .as_ref()
                    .map(|s| Value::Object((**s).clone()));
                let mut listed = t.clone();
                listed.name = exposed.clone().into();
                tools.push(ProxiedTool {
                    exposed,
                    upstream: i,
                    name: t.name.to_string(),
                    kind,
                    kind_source,
                    listed,
                    output_schema,
                    responder,
                    validator: jsonschema::validator_for(&input).ok(),
                });
            }
        }
        for t in &tools {
            if let Responder::World(path) = &t.responder {
                let Some(world) = settings.worlds.get(path) else {
                    return Err(ProxyError::WorldNotLoaded {
                        world: path.clone(),
                        tool: t.exposed.clone(),
                    });
                };
                if t.kind == ToolKind::Write && !world.has_tool(&t.exposed) {
                    return Err(ProxyError::WorldLacksTool {
                        tool: t.exposed.clone(),
                        world: path.clone(),
                    });
                }
            }
        }
        let unknown: Vec<String> = config
            .tools
            .keys()
            .filter(|k| !tools.iter().any(|t| &t.exposed == *k))
            .cloned()
            .collect();
        if !unknown.is_empty() {
            return Err(ProxyError::UnknownTools {
                unknown,
                have: tools.iter().map(|t| t.exposed.clone()).collect(),
            });
        }
        if let Some(c) = &config.canary {
            let bad: Vec<String> = c
                .allow
                .iter()
                .filter(|a| !tools.iter().any(|t| &t.exposed == *a))
                .cloned()
                .collect();
            if !bad.is_empty() {
                return Err(ProxyError::UnknownCanaryTools(bad));
            }
        }
        Ok(Catalog {
            tools,
            upstream_names: names,
            peers: upstreams.iter().map(Upstream::peer).collect(),
            relays: upstreams.iter().map(Upstream::relay).collect(),
        })
    }

    fn find(&self, exposed: &str) -> Option<&ProxiedTool> {
        self.tools.iter().find(|t| t.exposed == exposed)
    }

    /// The session's tools as a world declaration (names, kinds, argument schemas), so that
    /// evaluators check arguments and a harvested suite offers the same tools.
    pub fn world_spec(&self) -> WorldSpec {
        WorldSpec {
            name: "shadow".to_owned(),
            description: Some(format!(
                "Tools of {} as the shadow proxy served them.",
                self.upstream_names.join(", ")
            )),
            default_context: Default::default(),
            state: Default::default(),
            state_file: None,
            tools: self
                .tools
                .iter()
                .map(|t| ToolSpec {
                    name: t.exposed.clone(),
                    description: t
                        .listed
                        .description
                        .as_deref()
                        .unwrap_or_default()
                        .to_owned(),
                    kind: t.kind,
                    scopes: Vec::new(),
                    parameters: Value::Object((*t.listed.input_schema).clone()),
                    handler: Vec::new(),
                })
                .collect(),
            script: None,
            now: None,
            tenant_field: None,
            canaries: Vec::new(),
            injection_vectors: Default::default(),
            service: None,
            claims: Vec::new(),
        }
    }
}

/// Starts (or reaches) every upstream and classifies their tools.
pub async fn connect(settings: &Settings) -> Result<(Vec<Upstream>, Catalog), ProxyError> {
    let mut upstreams = Vec::new();
    for spec in &settings.upstreams {
        upstreams.push(Upstream::connect(spec, settings.start_timeout()).await?);
    }
    let catalog = Catalog::build(settings, &upstreams)?;
    Ok((upstreams, catalog))
}

/// A session that ended: its trajectory and what it would have changed.
#[derive(Debug, Clone)]
pub struct FinishedSession {
    /// `session-0001`, ...: the trial's case id.
    pub id: String,
    /// What happened, call by call.
    pub trajectory: Trajectory,
    /// `{"writes": []}`.
    pub initial_state: Value,
    /// `{"writes": [{tool, arguments}, ...], "executed_writes": N}`: the writes the agent
    /// made (recorded, or executed by a canary).
    pub final_state: Value,
    /// Why the session ended early (an upstream crashed, hung or would not start).
    pub error: Option<String>,
    /// When it started, in milliseconds since the Unix epoch.
    pub started_at_ms: u128,
    /// How long it lasted.
    pub duration_ms: f64,
    /// The session's tools as a world declaration, when its upstreams came up.
    pub world: Option<WorldSpec>,
}

/// The proxy: makes a session per MCP client session and sends each finished one to `sink`.
pub struct Proxy {
    settings: Arc<Settings>,
    sink: UnboundedSender<FinishedSession>,
    sessions: Mutex<Vec<Weak<Session>>>,
    next: AtomicU32,
}

impl Proxy {
    /// A proxy with these settings; finished sessions go to `sink`.
    pub fn new(settings: Settings, sink: UnboundedSender<FinishedSession>) -> Arc<Proxy> {
        Arc::new(Proxy {
            settings: Arc::new(settings),
            sink,
            sessions: Mutex::new(Vec::new()),
            next: AtomicU32::new(0),
        })
    }

    /// A new session's MCP handler.
    pub fn session(&self) -> ShadowServer {
        let number = self.next.fetch_add(1, Ordering::SeqCst) + 1;
        let config = &self.settings.config;
        let session = Arc::new(Session {
            id: format!("session-{number:04}"),
            settings: Arc::clone(&self.settings),
            started: Instant::now(),
            started_at_ms: SystemTime::now()
                .duration_since(SystemTime::UNIX_EPOCH)
                .map_or(0, |d| d.as_millis()),
            catalog: tokio::sync::Mutex::new(None),
            upstreams: Mutex::new(Vec::new()),
            rec: Mutex::new(Recorder::default()),
            worlds: Mutex::new(BTreeMap::new()),
            faults: FaultPlan {
                rules: config
                    .faults
                    .iter()
                    .map(|f| FaultRule {
                        spec: f.clone(),
                        source: "shadow".to_owned(),
                    })
                    .collect(),
                seed: config.seed.unwrap_or(0) ^ u64::from(number),
            },
            sink: self.sink.clone(),
            finished: AtomicBool::new(false),
        });
        let mut live = lock(&self.sessions);
        live.retain(|w| w.strong_count() > 0);
        live.push(Arc::downgrade(&session));
        ShadowServer(session)
    }

    /// Ends every live session (on shutdown): each is sent to the sink, its upstreams stopped.
    pub fn finish_all(&self) {
        let live: Vec<Arc<Session>> = lock(&self.sessions)
            .drain(..)
            .filter_map(|w| w.upgrade())
            .collect();
        for s in live {
            s.finish(None);
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// What a session recorded so far.
#[derive(Default)]
struct Recorder {
    events: Vec<Event>,
    side_effects: Vec<SideEffect>,
    writes: Vec<Value>,
    executed_writes: u32,
    calls: u32,
    per_tool: HashMap<String, u32>,
    user_input: Option<String>,
    broken: Option<String>,
}

/// One MCP session: its upstreams, its record, its faults.
pub(crate) struct Session {
    id: String,
    settings: Arc<Settings>,
    started: Instant,
    started_at_ms: u128,
    /// The session's tools once its upstreams came up, or why they did not (said to every
    /// call of the session, hence shared).
    catalog: tokio::sync::Mutex<Option<Result<Arc<Catalog>, Arc<ProxyError>>>>,
    upstreams: Mutex<Vec<Upstream>>,
    rec: Mutex<Recorder>,
    /// Shadow copies of the responders' worlds, made at their first write.
    worlds: Mutex<BTreeMap<String, Simulator>>,
    /// The configuration's fault rules, drawn from its seed and the session's number.
    faults: FaultPlan,
    sink: UnboundedSender<FinishedSession>,
    finished: AtomicBool,
}

/// How a call is answered.
enum Route {
    Forward,
    Record,
    Refuse(ToolError),
}

/// A call counted and routed: answered, or on its way to its upstream.
pub(crate) enum Begun {
    /// Answered without the upstream (recorded, refused, faulted), or not at all (the
    /// session has ended).
    Answered(Result<CallToolResult, rmcp::ErrorData>),
    /// To be forwarded, then closed with [`Session::forwarded`].
    Forward(Box<Forwarding>),
}

/// A call on its way to its upstream: what its record needs when the answer comes.
pub(crate) struct Forwarding {
    record: ToolCall,
    args: Value,
    started: Instant,
    events: Vec<Event>,
    /// A `lost_response` fault: the upstream answers, the agent is told it timed out.
    lost: bool,
    /// The tool's place in the catalog.
    index: usize,
    catalog: Arc<Catalog>,
}

impl Forwarding {
    /// The tool called.
    pub(crate) fn tool(&self) -> &ProxiedTool {
        &self.catalog.tools[self.index]
    }

    /// Whether the agent is to be told the answer was lost (a `lost_response` fault).
    pub(crate) fn lost(&self) -> bool {
        self.lost
    }
}

fn lost_error() -> ToolError {
    tool_error(504, "timed out waiting for the response".to_owned())
}

impl Session {
    async fn catalog(&self) -> Result<Arc<Catalog>, Arc<ProxyError>> {
        let mut slot = self.catalog.lock().await;
        if slot.is_none() {
            let made = match connect(&self.settings).await {
                Ok((upstreams, catalog)) => {
                    *lock(&self.upstreams) = upstreams;
                    Ok(Arc::new(catalog))
                }
                Err(e) => Err(Arc::new(e)),
            };
            *slot = Some(made);
        }
        match slot.as_ref() {
            Some(Ok(c)) => Ok(Arc::clone(c)),
            Some(Err(e)) => {
                let e = Arc::clone(e);
                drop(slot);
                self.finish(Some(e.to_string()));
                Err(e)
            }
            None => unreachable!("set above"),
        }
    }

    /// The relay that may carry a call of `name` as bytes: the tool is a forwarded read of an
    /// upstream with a relay, in a session whose calls the proxy never answers itself (no
    /// faults, no canary). `None` until the session's upstreams are up.
    pub(crate) fn relay_for(&self, name: &str) -> Option<Arc<Relay>> {
        if self.settings.canary || !self.faults.rules.is_empty() {
            return None;
        }
        let slot = self.catalog.try_lock().ok()?;
        let catalog = slot.as_ref()?.as_ref().ok()?;
        let tool = catalog.find(name)?;
        if tool.kind != ToolKind::Read {
            return None;
        }
        catalog.relays.get(tool.upstream).cloned().flatten()
    }

    /// How long an upstream may take to answer one call.
    pub(crate) fn timeout(&self) -> Duration {
        self.settings.timeout()
    }

    fn broken(&self) -> Option<String> {
        lock(&self.rec).broken.clone()
    }

    /// Ends the session once: its record goes to the sink and its upstreams are stopped.
    fn finish(&self, error: Option<String>) {
        if self.finished.swap(true, Ordering::SeqCst) {
            return;
        }
        let world = self.catalog.try_lock().ok().and_then(|c| {
            c.as_ref()
                .and_then(|c| c.as_ref().ok())
                .map(|c| c.world_spec())
        });
        for mut u in std::mem::take(&mut *lock(&self.upstreams)) {
            u.stop();
        }
        let shadow_states: serde_json::Map<String, Value> =
            std::mem::take(&mut *lock(&self.worlds))
                .into_values()
                .map(|sim| {
                    let name = sim.world().name().to_owned();
                    (name, sim.finish(None).1)
                })
                .collect();
        let mut rec = lock(&self.rec);
        let error = error.or_else(|| rec.broken.clone());
        let mut events = std::mem::take(&mut rec.events);
        if let Some(text) = rec.user_input.clone() {
            events.insert(0, Event::UserMessage { text });
        }
        let finished = FinishedSession {
            id: self.id.clone(),
            trajectory: Trajectory {
                events,
                final_answer: None,
                side_effects: std::mem::take(&mut rec.side_effects),
            },
            initial_state: json!({"writes": []}),
            final_state: {
                let mut state = json!({
                    "writes": std::mem::take(&mut rec.writes),
                    "executed_writes": rec.executed_writes,
                });
                if !shadow_states.is_empty() {
                    state["worlds"] = Value::Object(shadow_states);
                }
                state
            },
            error,
            started_at_ms: self.started_at_ms,
            duration_ms: self.started.elapsed().as_secs_f64() * 1000.0,
            world,
        };
        let _ = self.sink.send(finished);
    }

    /// Decides how the `n`-th call of a tool is answered, counting it against the budgets.
    fn route(&self, rec: &mut Recorder, tool: &ProxiedTool) -> Route {
        let canary = self
            .settings
            .canary
            .then(|| self.settings.config.canary.clone().unwrap_or_default());
        if let Some(c) = &canary
            && let Some(max) = c.max_calls
            && rec.calls > max
        {
            return Route::Refuse(tool_error(
                429,
                format!("canary budget spent: this session may make {max} calls"),
            ));
        }
        match (tool.kind, &canary) {
            (ToolKind::Read, _) => Route::Forward,
            (ToolKind::Write, None) => Route::Record,
            (ToolKind::Write, Some(c)) => {
                if !c.allow.contains(&tool.exposed) {
                    Route::Refuse(tool_error(
                        403,
                        format!(
                            "canary: `{}` may not write here (it is not in canary.allow)",
                            tool.exposed
                        ),
                    ))
                } else if c.max_writes.is_some_and(|m| rec.executed_writes >= m) {
                    Route::Refuse(tool_error(
                        429,
                        format!(
                            "canary budget spent: this session may execute {} writes",
                            c.max_writes.unwrap_or(0)
                        ),
                    ))
                } else {
                    rec.executed_writes += 1;
                    Route::Forward
                }
            }
        }
    }

    async fn call(
        &self,
        name: &str,
        arguments: Map<String, Value>,
        meta: Option<Value>,
    ) -> Result<CallToolResult, rmcp::ErrorData> {
        let f = match self.begin(name, Value::Object(arguments), meta).await {
            Begun::Answered(reply) => return reply,
            Begun::Forward(f) => f,
        };
        let tool = f.tool();
        let Some(peer) = f.catalog.peers.get(tool.upstream).cloned().flatten() else {
            return Err(ended("the upstream is gone"));
        };
        let args = f.args.as_object().cloned().unwrap_or_default();
        let reply = call(&peer, &tool.name, args, self.settings.timeout()).await;
        self.forwarded(f, reply)
    }

    /// Counts and routes a call, and answers it unless it goes to its upstream.
    pub(crate) async fn begin(&self, name: &str, args: Value, meta: Option<Value>) -> Begun {
        if let Some(why) = self.broken() {
            return Begun::Answered(Err(ended(&why)));
        }
        let catalog = match self.catalog().await {
            Ok(c) => c,
            Err(e) => return Begun::Answered(Err(ended(&e.to_string()))),
        };
        let started = Instant::now();
        let at_ms = self.started.elapsed().as_secs_f64() * 1000.0;
        let key = meta
            .as_ref()
            .and_then(|m| m.get("idempotency_key"))
            .and_then(Value::as_str)
            .map(str::to_owned);
        let found = catalog.tools.iter().position(|t| t.exposed == name);
        let tool = found.map(|i| &catalog.tools[i]);
        let (n, nth, route) = {
            let mut rec = lock(&self.rec);
            if rec.user_input.is_none() {
                rec.user_input = meta
                    .as_ref()
                    .and_then(|m| m.get(USER_INPUT_META))
                    .and_then(Value::as_str)
                    .map(str::to_owned);
            }
            rec.calls += 1;
            let n = rec.calls;
            let nth = {
                let c = rec.per_tool.entry(name.to_owned()).or_default();
                *c += 1;
                *c
            };
            let route = tool.map(|t| self.route(&mut rec, t));
            (n, nth, route)
        };
        let mut record = ToolCall {
            id: format!("call-{n}"),
            step: n,
            tool: name.to_owned(),
            arguments: args.clone(),
            kind: tool.map(|t| t.kind),
            schema_valid: tool
                .and_then(|t| t.validator.as_ref())
                .map(|v| v.is_valid(&args)),
            result: None,
            error: None,
            fault: None,
            idempotency_key: key,
            state_changes: Vec::new(),
            idempotent_replay: false,
            recorded_output: None,
            at_ms,
            latency_ms: 0.0,
        };
        let (Some(tool), Some(index), Some(route)) = (tool, found, route) else {
            let e = tool_error(404, format!("unknown tool `{name}`"));
            return Begun::Answered(Ok(self.close(record, Err(e), started, Vec::new())));
        };
        let mut events = Vec::new();
        let injected = self
            .faults
            .tool_fault(name, tool.kind, nth)
            .map(|(rule, error)| {
                events.push(Event::FaultInjected {
                    call_id: record.id.clone(),
                    tool: name.to_owned(),
                    kind: rule.spec.kind,
                    source: rule.source.clone(),
                });
                (rule.spec.kind, error)
            });
        if let Some((kind, error)) = &injected {
            record.fault = Some(*kind);
            if let Some(e) = error {
                if matches!(route, Route::Forward) && tool.kind == ToolKind::Write {
                    // The reserved canary write did not happen.
                    lock(&self.rec).executed_writes -= 1;
                }
                let reply = self.close(record, Err(e.clone()), started, events);
                return Begun::Answered(Ok(reply));
            }
            if *kind == gauntlet_model::FaultKind::Empty {
                let empty = schema_shaped(tool.output_schema.as_ref(), &Value::Null);
                let answer = answer(tool, &empty);
                let reply = self.close_with(record, Ok(empty), answer, started, events);
                return Begun::Answered(Ok(reply));
            }
        }
        let lost = injected.is_some_and(|(k, _)| k == gauntlet_model::FaultKind::LostResponse);
        let answered = match route {
            Route::Refuse(e) => Ok(self.close(record, Err(e), started, events)),
            Route::Record => {
                let value = match &tool.responder {
                    Responder::Schema => Ok(schema_shaped(tool.output_schema.as_ref(), &args)),
                    Responder::Template(t) => render_template(t, name, &args)
                        .map_err(|e| tool_error(500, format!("the shadow responder failed: {e}"))),
                    Responder::World(path) => self.in_world(path, n, name, &args, &record),
                };
                match value {
                    Ok(v) => {
                        self.note_write(&record, &args);
                        if lost {
                            Ok(self.close(record, Err(lost_error()), started, events))
                        } else {
                            let reply = answer(tool, &v);
                            Ok(self.close_with(record, Ok(v), reply, started, events))
                        }
                    }
                    Err(e) => Ok(self.close(record, Err(e), started, events)),
                }
            }
            Route::Forward => {
                return Begun::Forward(Box::new(Forwarding {
                    record,
                    args,
                    started,
                    events,
                    lost,
                    index,
                    catalog,
                }));
            }
        };
        Begun::Answered(answered)
    }

    /// Closes a forwarded call with what its upstream answered; an upstream that failed ends
    /// the session.
    pub(crate) fn forwarded(
        &self,
        f: Box<Forwarding>,
        reply: Result<CallToolResult, CallFailure>,
    ) -> Result<CallToolResult, rmcp::ErrorData> {
        let Forwarding {
            record,
            args,
            started,
            events,
            lost,
            index,
            catalog,
        } = *f;
        let tool = &catalog.tools[index];
        match reply {
            Ok(reply) => {
                let outcome = outcome_of(&reply);
                if tool.kind == ToolKind::Write && outcome.is_ok() {
                    self.note_write(&record, &args);
                } else if tool.kind == ToolKind::Write {
                    lock(&self.rec).executed_writes -= 1;
                }
                if lost {
                    return Ok(self.close(record, Err(lost_error()), started, events));
                }
                Ok(self.close_with(record, outcome, reply, started, events))
            }
            Err(failure) => {
                let upstream = &catalog.upstream_names[tool.upstream];
                let why = match failure {
                    CallFailure::Timeout(t) => format!(
                        "upstream `{upstream}` did not answer `{}` within {t:?}; the session has ended",
                        tool.name
                    ),
                    CallFailure::Broken(e) => format!(
                        "upstream `{upstream}` stopped (crashed or exited) during `{}`: {e}; the session has ended",
                        tool.name
                    ),
                };
                let e = tool_error(502, why.clone());
                let _ = self.close(record, Err(e), started, events);
                lock(&self.rec).broken = Some(why.clone());
                self.finish(Some(why.clone()));
                Err(ended(&why))
            }
        }
    }

    /// Applies a write to the session's shadow copy of a responder's world.
    fn in_world(
        &self,
        path: &str,
        step: u32,
        tool: &str,
        args: &Value,
        record: &ToolCall,
    ) -> Result<Value, ToolError> {
        let Some(world) = self.settings.worlds.get(path) else {
            return Err(tool_error(500, format!("the world {path} is not loaded")));
        };
        let mut worlds = lock(&self.worlds);
        let sim = worlds.entry(path.to_owned()).or_insert_with(|| {
            let spec = world.spec();
            Simulator::new(
                Arc::clone(world),
                Value::Object(spec.state.clone()),
                spec.default_context.clone(),
                FaultPlan::default(),
            )
        });
        sim.call_tool(step, tool, args.clone(), record.idempotency_key.clone())
    }

    fn note_write(&self, record: &ToolCall, args: &Value) {
        let mut rec = lock(&self.rec);
        SideEffect::log(&mut rec.side_effects, record);
        rec.writes
            .push(json!({"tool": record.tool, "arguments": args}));
    }

    /// Records a call whose answer is its outcome (an error, as gauntlet's worlds say it).
    fn close(
        &self,
        record: ToolCall,
        outcome: Result<Value, ToolError>,
        started: Instant,
        events: Vec<Event>,
    ) -> CallToolResult {
        let reply = gauntlet_agent::mcp::reply(&outcome);
        self.close_with(record, outcome, reply, started, events)
    }

    fn close_with(
        &self,
        mut record: ToolCall,
        outcome: Result<Value, ToolError>,
        reply: CallToolResult,
        started: Instant,
        events: Vec<Event>,
    ) -> CallToolResult {
        match outcome {
            Ok(v) => record.result = Some(v),
            Err(e) => record.error = Some(e),
        }
        record.latency_ms = started.elapsed().as_secs_f64() * 1000.0;
        let mut rec = lock(&self.rec);
        rec.events.extend(events);
        rec.events.push(Event::ToolCall(Box::new(record)));
        reply
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        self.finish(None);
    }
}

fn tool_error(status: u16, message: String) -> ToolError {
    ToolError {
        status,
        message,
        retry_after_s: (status == 429).then_some(1.0),
    }
}

fn ended(why: &str) -> rmcp::ErrorData {
    rmcp::ErrorData::internal_error(format!("gauntlet shadow: {why}"), None)
}

/// A recorded write's answer as MCP: structured content where the tool declares an output
/// schema (with its JSON as text, as servers send it), else the text.
fn answer(tool: &ProxiedTool, v: &Value) -> CallToolResult {
    if tool.output_schema.is_some() {
        CallToolResult::structured(v.clone())
    } else {
        let text = match v {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        CallToolResult::success(vec![ContentBlock::text(text)])
    }
}

/// One MCP session's handler.
#[derive(Clone)]
pub struct ShadowServer(Arc<Session>);

impl ShadowServer {
    pub(crate) fn session(&self) -> Arc<Session> {
        Arc::clone(&self.0)
    }
}

impl ServerHandler for ShadowServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build()).with_server_info(
            Implementation::new("gauntlet-shadow", env!("CARGO_PKG_VERSION")),
        )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, rmcp::ErrorData> {
        if let Some(why) = self.0.broken() {
            return Err(ended(&why));
        }
        let catalog = self.0.catalog().await.map_err(|e| ended(&e.to_string()))?;
        Ok(ListToolsResult::with_all_items(
            catalog.tools.iter().map(|t| t.listed.clone()).collect(),
        ))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, rmcp::ErrorData> {
        let meta = gauntlet_agent::mcp::request_meta(&request, &context);
        let args = request.arguments.unwrap_or_default();
        self.0.call(&request.name, args, meta).await.map(Into::into)
    }
}

#[cfg(test)]
mod tests {
    use super::ProxyError;

    #[test]
    fn configuration_errors_list_the_tools_in_backticks() {
        let e = ProxyError::UnknownTools {
            unknown: vec!["a".into(), "b".into()],
            have: vec!["x".into(), "y".into()],
        };
        assert_eq!(
            e.to_string(),
            "the configuration's `tools:` names `a`, `b` that no upstream has (they have: x, y)"
        );
        let e = ProxyError::UnknownCanaryTools(vec!["w".into()]);
        assert_eq!(
            e.to_string(),
            "`canary.allow` names `w` that no upstream has"
        );
    }
}
