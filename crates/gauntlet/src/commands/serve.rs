//! `gauntlet serve SUITE --case ID (--stdio | --http ADDR)`: one case's world as an MCP server,
//! for interactive work (an IDE agent, MCP Inspector). When the session ends (the client
//! disconnects on stdio; Ctrl-C or SIGTERM on HTTP), the trajectory and its scores are printed.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use gauntlet_agent::{SimulatedEnvironment, SimulatedUser, lock, mcp};
use gauntlet_model::{TrialStatus, TrialSummary};
use gauntlet_world::Simulator;

use crate::exit::{ExpectedError, GATES_PASSED};
use crate::shared::load_suite;

/// Serve one case's world as an MCP server, for an IDE agent or MCP Inspector.
///
/// With --http, prints `{"url", "token"}` on stdout; requests need `Authorization: Bearer
/// TOKEN`. When the session ends (stdio closes, or Ctrl-C), prints the trajectory's verdict
/// and record on stderr.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The suite folder.
    pub suite: PathBuf,
    /// The case whose world to serve.
    #[arg(long)]
    pub case: String,
    /// Serve over stdio.
    #[arg(long, conflicts_with = "http")]
    pub stdio: bool,
    /// Serve over streamable HTTP on this loopback address (127.0.0.1:0 picks a port).
    #[arg(long)]
    pub http: Option<std::net::SocketAddr>,
}

pub fn serve(
    suite_path: &Path,
    case_id: &str,
    stdio: bool,
    http: Option<SocketAddr>,
) -> Result<i32, ExpectedError> {
    let suite = load_suite(suite_path)?;
    let Some(lc) = suite.cases.iter().find(|c| c.case.case_id == case_id) else {
        let ids: Vec<&str> = suite
            .cases
            .iter()
            .map(|c| c.case.case_id.as_str())
            .collect();
        return Err(ExpectedError::input(format!(
            "no case `{case_id}` in the suite (it has: {})",
            ids.join(", ")
        )));
    };
    let trial = gauntlet_runner::plan::single_trial(&suite, lc);
    let case = &lc.case;
    let injections =
        gauntlet_world::Injections::for_trial(trial.world.spec(), case.attack.as_ref())
            .map_err(ExpectedError::from)?;
    // A world that is a real service gets its own for the session, removed when it ends.
    let (service, initial) = match trial.world.spec().service.as_ref() {
        None => (None, (*trial.initial_state).clone()),
        Some(spec) => {
            // Sandboxed like `run --isolation auto` does it, where bubblewrap works.
            let (sandbox, warning) =
                gauntlet_process::Sandbox::detect(gauntlet_process::Isolation::Auto)
                    .map_err(|e| ExpectedError::harness(e.to_string()))?;
            if let Some(w) = warning {
                eprintln!("warning: {w}");
            }
            let (service, state) =
                gauntlet_services::RealService::start_and_read(spec, Some(&sandbox))
                    .map_err(|e| ExpectedError::harness(e.to_string()))?;
            crate::note!(
                "gauntlet: the world's service runs in {}",
                service.dir().display()
            );
            (Some(service), state)
        }
    };
    let mut sim = Simulator::new(
        trial.world.clone(),
        initial.clone(),
        trial.context.clone(),
        trial.faults.clone(),
    )
    .inject(injections);
    if let Some(service) = service {
        sim = sim.with_service(Box::new(service));
    }
    if case.user.as_ref().is_some_and(|u| u.persona.is_some()) {
        crate::note!(
            "note: the case's user persona is played only by `gauntlet run`; here the user answers from its scripted replies"
        );
    }
    let user = SimulatedUser::scripted(case.user.clone());
    let env = SimulatedEnvironment::new(sim, user, &case.user_input).shared();
    // One client, one world: a single thread serves it, with no hand-offs between threads
    // on the way from a request to its answer.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| ExpectedError::harness(format!("failed to start the async runtime: {e}")))?;
    runtime.block_on(async {
        if stdio {
            crate::note!("gauntlet: serving case `{case_id}` of suite `{}` over stdio", suite.config.name);
            mcp::serve_stdio(env.clone()).await.map_err(|e| ExpectedError::harness(format!("MCP over stdio failed: {e}")))
        } else {
            let addr = http.unwrap_or_else(|| "127.0.0.1:0".parse().expect("valid address"));
            let server = mcp::serve_http(env.clone(), addr, mcp::new_token())
                .await
                .map_err(|e| ExpectedError::input(format!("cannot serve on {addr}: {e}")))?;
            // One JSON line on stdout for scripts; a sentence on stderr for people.
            println!("{}", serde_json::json!({"url": server.url, "token": server.token}));
            crate::note!(
                "gauntlet: serving case `{case_id}` at {} (header `Authorization: Bearer {}`); Ctrl-C ends the session",
                server.url, server.token
            );
            let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
                .map_err(|e| ExpectedError::harness(format!("cannot watch signals: {e}")))?;
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = term.recv() => {}
            }
            server.shutdown().await;
            Ok(())
        }
    })?;
    let (trajectory, final_state) = lock(&env).finish(None);
    let final_state = final_state.into_value();
    let custom = gauntlet_runner::plan::custom_evaluators(&suite)?;
    let evaluation = runtime.block_on(gauntlet_scoring::evaluate_trial(
        &gauntlet_scoring::TrialEvidence {
            case_id: &case.case_id,
            case: Some(case),
            epoch: 0,
            trajectory: &trajectory,
            initial_state: Some(&initial),
            final_state: (&final_state).into(),
            world: Some(trial.world.spec()),
            benchmark: suite.config.benchmark.as_ref(),
            harness_failed: false,
            policy: None,
        },
        &custom,
        None,
    ));
    let status = evaluation.status;
    let record = gauntlet_model::TrialRecord::new(
        gauntlet_model::Observed {
            case_id: case.case_id.clone(),
            trace_id: trial.trace_id.clone(),
            tags: case.tags.clone(),
            difficulty: case.difficulty.clone(),
            initial_state: initial,
            final_state,
            trajectory,
            ..Default::default()
        },
        evaluation,
    );
    let summary = TrialSummary::of(&record);
    crate::note!(
        "gauntlet: session over: {} tool calls, {}",
        summary.tool_calls,
        if status == TrialStatus::Passed {
            "passed".to_owned()
        } else {
            format!(
                "failed: {}",
                summary
                    .scores
                    .iter()
                    .filter(|s| s.fails_trial())
                    .map(|s| s.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        }
    );
    eprintln!("{}", serde_json::to_string(&record).unwrap_or_default());
    Ok(GATES_PASSED)
}

impl Args {
    /// Runs the command; the exit code, or an error carrying one.
    pub fn exec(self) -> Result<i32, ExpectedError> {
        serve(&self.suite, &self.case, self.stdio, self.http)
    }
}
