//! `gauntlet shadow`: the MCP proxy in front of real servers, each session judged and stored as
//! a trial; `gauntlet shadow harvest`: a shadow run into a suite that replays it offline.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use gauntlet_model::digest::sha256_hex;
use gauntlet_model::shadow::{Responder, ShadowConfig};
use gauntlet_model::{RunHeader, ToolKind, TrialRecord, WorldSpec};
use gauntlet_shadow::proxy::{self, FinishedSession, KindSource};
use gauntlet_shadow::{Proxy, Settings};
use gauntlet_world::World;

use crate::exit::{ExpectedError, GATES_PASSED};
use crate::shared::{load_suite, write_files};
use gauntlet_runner::{new_run_id_for, stamp};

/// Put gauntlet in front of real MCP servers: reads pass through, writes are recorded and
/// never executed, and each session is judged and kept as a trial.
///
/// Examples:
///   gauntlet shadow --upstream 'cmd:npx -y @modelcontextprotocol/server-filesystem /srv/docs' --http 127.0.0.1:0
///   gauntlet shadow --upstream 'fs=cmd:node fs.js' --upstream 'mem=http://127.0.0.1:7000/mcp' --stdio
///   gauntlet shadow --upstream 'cmd:...' --canary --config shadow.yaml --http 127.0.0.1:0
///   gauntlet shadow harvest .gauntlet/runs/shadow-ID --out suites/from-shadow
///
/// A tool is a read when its MCP annotations say `readOnlyHint: true`, a write when they
/// say false; an unannotated tool is a write unless --config says otherwise. A write is
/// answered by a success shaped by the tool's output schema (or the configuration's
/// template, or a gauntlet world that applies it to a copy of its state). With --canary, writes of `canary.allow` tools reach the upstream within
/// `canary.max_writes` and `canary.max_calls`; others are refused. With one upstream, tools
/// keep their names; with several, each is PREFIX__name (PREFIX from NAME= or the server's
/// name). A command upstream is started for each session in its own process group and
/// killed with it. The client may send the user's request as `_meta` key
/// `gauntlet/user_input` on a call. Stops on Ctrl-C or SIGTERM, writing results.json.
#[derive(Debug, clap::Args)]
#[command(verbatim_doc_comment, args_conflicts_with_subcommands = true)]
pub struct Args {
    /// What to do instead of proxying.
    #[command(subcommand)]
    pub action: Option<ShadowAction>,
    /// An upstream MCP server: `[NAME=]cmd:COMMAND` (stdio) or `[NAME=]http(s)://HOST/PATH`
    /// (streamable HTTP; `#bearer=TOKEN` or `#bearer=$VAR` adds a bearer token). Repeat for
    /// several.
    #[arg(long = "upstream", value_name = "UPSTREAM")]
    pub upstreams: Vec<gauntlet_shadow::UpstreamSpec>,
    /// The shadow configuration (YAML or JSON): tool kinds and responders, canary allowance
    /// and budgets, faults, the upstream time limit.
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Canary mode: writes of `canary.allow` tools are executed, within budgets.
    #[arg(long)]
    pub canary: bool,
    /// Serve one session over stdio.
    #[arg(long, conflicts_with = "http")]
    pub stdio: bool,
    /// Serve over streamable HTTP on this loopback address (127.0.0.1:0 picks a port); prints
    /// `{"url", "token"}` on stdout.
    #[arg(long)]
    pub http: Option<std::net::SocketAddr>,
    /// The run folder sessions are written to (default .gauntlet/runs/shadow-ID).
    #[arg(long)]
    pub out: Option<PathBuf>,
}

/// `gauntlet shadow` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum ShadowAction {
    /// Turn a shadow run's sessions into a suite that replays them offline: a recorded world
    /// (reads answered from the recording by tool and canonical arguments; an unrecorded call
    /// is a tool error) and one case per session (its input, its calls as the reference, its
    /// writes as the expected outcome).
    ///
    /// Example:
    ///   gauntlet shadow harvest .gauntlet/runs/shadow-ID --out suites/from-shadow
    #[command(verbatim_doc_comment)]
    Harvest {
        /// The shadow run folder.
        run: PathBuf,
        /// The suite folder to write.
        #[arg(long)]
        out: PathBuf,
    },
}

/// The tool declaration a shadow run keeps beside its trials, for `harvest`.
const WORLD_FILE: &str = "world.json";

/// How long the HTTP server may take to close its connections on shutdown.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

pub fn shadow(args: Args) -> Result<i32, ExpectedError> {
    if let Some(ShadowAction::Harvest { run, out }) = &args.action {
        return harvest(run, out);
    }
    if args.upstreams.is_empty() {
        return Err(ExpectedError::input(
            "give at least one --upstream (`cmd:COMMAND` or an http(s):// MCP endpoint)",
        ));
    }
    if !args.stdio && args.http.is_none() {
        return Err(ExpectedError::input(
            "choose how agents reach the proxy: --stdio, or --http 127.0.0.1:0",
        ));
    }
    let config: ShadowConfig = match &args.config {
        Some(path) => gauntlet_suite::load_document(path).map_err(|problems| {
            ExpectedError::inputs(problems.iter().map(ToString::to_string).collect())
        })?,
        None => ShadowConfig::default(),
    };
    if args.canary && config.canary.is_none() {
        eprintln!(
            "warning: --canary without a `canary:` section in --config: every write will be refused"
        );
    }
    let worlds = responder_worlds(&config, args.config.as_deref())?;
    let settings = Settings {
        upstreams: args.upstreams.clone(),
        config,
        canary: args.canary,
        worlds,
    };
    // Over stdio there is one agent, one session: a single thread serves it, with no hand-offs
    // between threads on a call's way through the proxy (most of what a forwarded read cost
    // with two). Over HTTP, sessions run side by side on every core.
    let runtime = if args.stdio {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
    } else {
        tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
    }
    .map_err(|e| ExpectedError::harness(format!("failed to start the async runtime: {e}")))?;
    runtime.block_on(run(args, settings))
}

/// The worlds the configuration's `world` responders name, loaded relative to it.
fn responder_worlds(
    config: &ShadowConfig,
    file: Option<&Path>,
) -> Result<BTreeMap<String, Arc<World>>, ExpectedError> {
    let base = file.and_then(Path::parent).unwrap_or(Path::new("."));
    let mut worlds = BTreeMap::new();
    let named = config
        .tools
        .values()
        .filter_map(|r| r.responder())
        .chain(config.respond.as_ref());
    for r in named {
        if let Responder::World(path) = r
            && !worlds.contains_key(path)
        {
            let loaded = gauntlet_suite::load_world(&base.join(path)).map_err(|problems| {
                ExpectedError::inputs(problems.iter().map(ToString::to_string).collect())
            })?;
            worlds.insert(path.clone(), loaded.world);
        }
    }
    Ok(worlds)
}

async fn run(args: Args, settings: Settings) -> Result<i32, ExpectedError> {
    // The upstreams are started once first: a bad command or configuration fails here, with
    // the tools and their kinds shown, not in the first agent's session.
    let world = {
        let (_upstreams, catalog) = proxy::connect(&settings)
            .await
            .map_err(|e| ExpectedError::input(e.to_string()))?;
        describe(&catalog, &settings);
        catalog.world_spec()
    };
    let run_id = new_run_id_for("shadow");
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from(".gauntlet/runs").join(&run_id));
    let mut header = RunHeader::new(
        &run_id,
        "shadow",
        format!(
            "{}:{}",
            if settings.canary { "canary" } else { "shadow" },
            settings
                .upstreams
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(",")
        ),
        stamp(),
    );
    header.seed = settings.config.seed.unwrap_or(0);
    header.versions.worlds = [(
        world.name.clone(),
        sha256_hex(serde_json::to_string(&world).unwrap_or_default().as_bytes()),
    )]
    .into();
    header.versions.config = sha256_hex(
        serde_json::to_string(&settings.config)
            .unwrap_or_default()
            .as_bytes(),
    );
    let (sink, _started) = gauntlet_runner::Recorder::start(&out, header)?;
    std::fs::write(
        out.join(WORLD_FILE),
        serde_json::to_string_pretty(&world).unwrap_or_default(),
    )
    .map_err(|e| ExpectedError::harness(format!("failed to write {WORLD_FILE}: {e}")))?;
    let mut sink = Sink {
        run_id,
        world,
        sink,
        custom: gauntlet_scoring::CustomEvaluators {
            evaluators: Vec::new(),
            dir: PathBuf::from("."),
        },
    };
    let (sender, mut finished) = tokio::sync::mpsc::unbounded_channel();
    let proxy = Proxy::new(settings, sender);
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .map_err(|e| ExpectedError::harness(format!("cannot watch signals: {e}")))?;
    let mut server = None;
    let serving: std::pin::Pin<Box<dyn Future<Output = std::io::Result<()>> + Send>> = if args.stdio
    {
        crate::note!(
            "gauntlet: shadowing over stdio; sessions go to {}",
            out.display()
        );
        let proxy = std::sync::Arc::clone(&proxy);
        Box::pin(async move { gauntlet_shadow::serve_stdio(&proxy).await })
    } else {
        let addr = args
            .http
            .unwrap_or_else(|| "127.0.0.1:0".parse().expect("valid address"));
        let maker = std::sync::Arc::clone(&proxy);
        let s = gauntlet_agent::mcp::serve_handlers(
            move || maker.session(),
            gauntlet_agent::mcp::Sessions::PerClient,
            addr,
            gauntlet_agent::mcp::new_token(),
        )
        .await
        .map_err(|e| ExpectedError::input(format!("cannot serve on {addr}: {e}")))?;
        // One JSON line on stdout for scripts; a sentence on stderr for people.
        println!("{}", serde_json::json!({"url": s.url, "token": s.token}));
        crate::note!(
            "gauntlet: shadow proxy at {} (header `Authorization: Bearer {}`); sessions go to {}; Ctrl-C stops",
            s.url,
            s.token,
            out.display()
        );
        server = Some(s);
        Box::pin(std::future::pending())
    };
    tokio::pin!(serving);
    loop {
        tokio::select! {
            Some(session) = finished.recv() => sink.take(session).await?,
            r = &mut serving => {
                if let Err(e) = r {
                    eprintln!("gauntlet: the stdio session failed: {e}");
                }
                break;
            }
            _ = tokio::signal::ctrl_c() => break,
            _ = term.recv() => break,
        }
    }
    if let Some(s) = server {
        let _ = tokio::time::timeout(SHUTDOWN_GRACE, s.shutdown()).await;
    }
    // Sessions still open end now: recorded as they are, their upstreams stopped.
    proxy.finish_all();
    while let Ok(session) = finished.try_recv() {
        sink.take(session).await?;
    }
    sink.finish()?;
    Ok(GATES_PASSED)
}

/// The start-up summary: each upstream's tools by kind, and where each kind came from.
fn describe(catalog: &gauntlet_shadow::Catalog, settings: &Settings) {
    let names = |kind: ToolKind| -> Vec<String> {
        catalog
            .tools
            .iter()
            .filter(|t| t.kind == kind)
            .map(|t| match t.kind_source {
                KindSource::Annotation => t.exposed.clone(),
                KindSource::Config => format!("{} (config)", t.exposed),
                KindSource::Default => format!("{} (unannotated)", t.exposed),
            })
            .collect()
    };
    let reads = names(ToolKind::Read);
    let writes = names(ToolKind::Write);
    crate::note!(
        "gauntlet: {} tools from {}: {} reads forwarded; {} writes {}",
        catalog.tools.len(),
        catalog.upstream_names.join(", "),
        reads.len(),
        writes.len(),
        if settings.canary {
            "refused unless canary.allow lists them"
        } else {
            "recorded, never executed"
        }
    );
    let list = |v: Vec<String>| {
        if v.is_empty() {
            "(none)".to_owned()
        } else {
            v.join(", ")
        }
    };
    crate::note!("  reads:  {}", list(reads));
    crate::note!("  writes: {}", list(writes));
    if let Some(c) = settings.config.canary.as_ref().filter(|_| settings.canary) {
        crate::note!(
            "  canary: executes {} (at most {} writes, {} calls per session)",
            if c.allow.is_empty() {
                "nothing".to_owned()
            } else {
                c.allow.join(", ")
            },
            c.max_writes
                .map_or_else(|| "unlimited".to_owned(), |n| n.to_string()),
            c.max_calls
                .map_or_else(|| "unlimited".to_owned(), |n| n.to_string()),
        );
    }
}

/// Where finished sessions go: judged, written to the run folder, tallied.
struct Sink {
    run_id: String,
    world: WorldSpec,
    sink: gauntlet_runner::Recorder,
    custom: gauntlet_scoring::CustomEvaluators,
}

impl Sink {
    async fn take(&mut self, s: FinishedSession) -> Result<(), ExpectedError> {
        let world = s.world.as_ref().unwrap_or(&self.world);
        let evaluation = gauntlet_scoring::evaluate_trial(
            &gauntlet_scoring::TrialEvidence {
                case_id: &s.id,
                case: None,
                epoch: 0,
                trajectory: &s.trajectory,
                initial_state: Some(&s.initial_state),
                final_state: (&s.final_state).into(),
                world: Some(world),
                benchmark: None,
                harness_failed: s.error.is_some(),
                policy: None,
            },
            &self.custom,
            None,
        )
        .await;
        let started_at = jiff::Timestamp::from_millisecond(s.started_at_ms as i64)
            .ok()
            .map(|t| t.to_string());
        let record = TrialRecord::new(
            gauntlet_model::Observed {
                trace_id: gauntlet_runner::trace_id(&self.run_id, &s.id, 0),
                case_id: s.id,
                tags: vec!["shadow".to_owned()],
                initial_state: s.initial_state,
                final_state: s.final_state,
                trajectory: s.trajectory,
                duration_ms: s.duration_ms,
                started_at,
                error: s.error,
                ..Default::default()
            },
            evaluation,
        );
        let calls: Vec<_> = record.trajectory.tool_calls().collect();
        let writes = calls
            .iter()
            .filter(|c| c.kind == Some(ToolKind::Write))
            .count();
        crate::note!(
            "gauntlet: {}: {} calls ({} reads, {} writes), {}{}",
            record.case_id,
            calls.len(),
            calls.len() - writes,
            writes,
            record.status.as_str(),
            record
                .error
                .as_ref()
                .map(|e| format!(": {e}"))
                .unwrap_or_default()
        );
        self.sink.trial(record)?;
        Ok(())
    }

    fn finish(self) -> Result<(), ExpectedError> {
        let dir = self.sink.dir().to_path_buf();
        let n = self.sink.trials();
        self.sink.finish()?;
        crate::note!("gauntlet: {n} sessions written to {}", dir.display());
        Ok(())
    }
}

/// `gauntlet shadow harvest RUN_DIR --out SUITE_DIR`.
fn harvest(run: &Path, out: &Path) -> Result<i32, ExpectedError> {
    let header = gauntlet_store::read_header(run)
        .map_err(|e| ExpectedError::input(format!("{}: {e}", run.display())))?;
    let world_path = run.join(WORLD_FILE);
    let world: WorldSpec = std::fs::read_to_string(&world_path)
        .map_err(|e| e.to_string())
        .and_then(|t| serde_json::from_str(&t).map_err(|e| e.to_string()))
        .map_err(|e| {
            ExpectedError::input(format!(
                "{}: not a shadow run folder (no readable {WORLD_FILE}: {e})",
                run.display()
            ))
        })?;
    if out.join("gauntlet.yaml").exists() {
        return Err(ExpectedError::input(format!(
            "{} already holds a suite; harvest into a new folder",
            out.display()
        )));
    }
    let trials = gauntlet_store::read_trials(run)
        .map_err(|e| ExpectedError::input(format!("{}: {e}", run.display())))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| ExpectedError::input(format!("{}: {e}", run.display())))?;
    let harvested = gauntlet_shadow::harvest::harvest(&header.run_id, &world, trials);
    write_files(out, &harvested.files)?;
    for s in &harvested.skipped {
        crate::note!("note: left out {s}");
    }
    // What was written must load: a problem here is gauntlet's, not the user's.
    let suite = load_suite(out)
        .map_err(|e| ExpectedError::harness(format!("the harvested suite does not load: {e:?}")))?;
    crate::say!(
        "ok: wrote suite `{}` with {} cases to {} (run it: gauntlet run {}; replay the agent: gauntlet run {} --agent replay:{})",
        suite.config.name,
        harvested.cases,
        out.display(),
        out.display(),
        out.display(),
        run.display()
    );
    Ok(GATES_PASSED)
}

impl Args {
    /// Runs the command; the exit code, or an error carrying one.
    pub fn exec(self) -> Result<i32, ExpectedError> {
        shadow(self)
    }
}
