//! Choosing the agent a run plays, from its spec, and the cases it can play: a script plays only
//! the cases it has a plan for, a replay only the cases its log has. A `python:MODULE:FUNCTION`
//! agent is made by the [`PythonAgents`] the Python package's extension sets
//! ([`set_python_agents`]); a process without Python (the binary cargo builds) has none and says
//! which command to use instead.

use std::sync::{Arc, OnceLock};

use gauntlet_agent::gateway::{Gateway, GatewayConfig, GatewayError, Mode};
use gauntlet_agent::{
    Agent, AgentSpec, CommandAgent, HttpAgent, OpenAiAgent, PersonaModels, ReplayAgent,
    ScriptAgent, SimulatedUser, parse_agent_spec,
};
use gauntlet_process::{Isolation, Sandbox};
use gauntlet_suite::{LoadedCase, Suite};

use crate::plan::PlanError;

/// The agent, the cases it plays, and notes for the user on the cases it leaves out.
pub struct ChosenAgent<'s> {
    /// The agent.
    pub agent: Arc<dyn Agent>,
    /// The cases it plays, in dataset order.
    pub cases: Vec<&'s LoadedCase>,
    /// What the user should know (cases left out, and why).
    pub notes: Vec<String>,
    /// What the user must know (agents running unisolated).
    pub warnings: Vec<String>,
}

/// Makes the agent of `python:MODULE:FUNCTION` (module, function, the folder the module is
/// imported from first): the Python function, called in this process. A message saying why it
/// could not (the module does not import, it has no such function) is the user's mistake.
pub type PythonAgents = fn(&str, &str, &std::path::Path) -> Result<Arc<dyn Agent>, String>;

static PYTHON_AGENTS: OnceLock<PythonAgents> = OnceLock::new();

/// Lets this process run `python:MODULE:FUNCTION` agents (the Python package's extension calls it
/// when it is loaded); the first call wins.
pub fn set_python_agents(make: PythonAgents) {
    let _ = PYTHON_AGENTS.set(make);
}

/// Builds the agent `spec` names for `cases`; command agents run in `workdir`, isolated as
/// `isolation` says.
pub fn choose_agent<'s>(
    spec: &str,
    mut cases: Vec<&'s LoadedCase>,
    suite: &Suite,
    gateway: Option<&Arc<Gateway>>,
    workdir: std::path::PathBuf,
    isolation: Isolation,
) -> Result<ChosenAgent<'s>, PlanError> {
    let mut notes = Vec::new();
    let mut warnings = Vec::new();
    let agent: Arc<dyn Agent> = match parse_agent_spec(spec)
        .map_err(|e| PlanError::Agent(e.to_string()))?
    {
        AgentSpec::Script(name) => {
            let script = ScriptAgent::new(&name, cases.iter().map(|c| &c.case))
                .map_err(|e| PlanError::Agent(e.to_string()))?;
            let skipped: Vec<&str> = cases
                .iter()
                .filter(|c| !script.has_plan(&c.case.case_id))
                .map(|c| c.case.case_id.as_str())
                .collect();
            if !skipped.is_empty() {
                notes.push(format!(
                    "script `{name}` has no plan for {} case(s), not run: {}",
                    skipped.len(),
                    skipped.join(", ")
                ));
            }
            cases.retain(|c| script.has_plan(&c.case.case_id));
            if cases.is_empty() {
                return Err(PlanError::Agent(format!(
                    "script `{name}` has a plan for no case"
                )));
            }
            Arc::new(script)
        }
        AgentSpec::Command(command) => {
            let (sandbox, warning) =
                Sandbox::detect(isolation).map_err(|e| PlanError::Agent(e.to_string()))?;
            warnings.extend(warning);
            Arc::new(CommandAgent::new(
                &command,
                workdir,
                gateway.cloned(),
                Arc::new(sandbox),
            ))
        }
        AgentSpec::Replay(file) => {
            let replay = ReplayAgent::load(&file).map_err(|e| PlanError::Agent(e.to_string()))?;
            let before = cases.len();
            cases.retain(|c| replay.has_case(&c.case.case_id));
            if cases.is_empty() {
                return Err(PlanError::Agent(format!(
                    "the log {file} has no trajectory for any case of the suite"
                )));
            }
            if cases.len() < before {
                notes.push(format!(
                    "the log has trajectories for {} of {} cases; only those run",
                    cases.len(),
                    before
                ));
            }
            Arc::new(replay)
        }
        AgentSpec::Http(url) => Arc::new(HttpAgent::new(&url, gateway.cloned())),
        AgentSpec::Python { module, function } => match PYTHON_AGENTS.get() {
            Some(make) => make(&module, &function, &workdir)
                .map_err(|why| PlanError::Agent(format!("--agent {spec}: {why}")))?,
            None => return Err(PlanError::Agent(no_python(spec))),
        },
        AgentSpec::OpenAi(model) => {
            let Some(g) = gateway.cloned() else {
                return Err(PlanError::Agent(
                    "`openai:MODEL` needs a model endpoint: give --gateway-upstream URL (or the suite's gateway.upstream), or --replay-cassette CASSETTE".to_owned(),
                ));
            };
            Arc::new(OpenAiAgent::new(
                &model,
                suite.config.system_prompt.clone(),
                suite.config.max_steps.unwrap_or(20),
                g,
            ))
        }
    };
    Ok(ChosenAgent {
        agent,
        cases,
        notes,
        warnings,
    })
}

/// Why this process cannot run a Python agent, and what can.
fn no_python(spec: &str) -> String {
    format!(
        "--agent {spec}: this gauntlet binary has no Python interpreter to call the function in; \
         run the same command with the `gauntlet` that `pip install gauntlet-harness` installs \
         (it runs Python agents in process, the module found from the current folder), call \
         gauntlet.run(suite, agent=...) from Python, or serve the function over MCP with `cmd:`"
    )
}

/// Where users with an LLM persona get their words; an error naming the case when a case's
/// persona has no endpoint or no model.
pub fn persona_models(
    user_model: Option<String>,
    suite: &Suite,
    gateway: Option<&Arc<Gateway>>,
    cases: &[&LoadedCase],
) -> Result<Option<PersonaModels>, PlanError> {
    let models = gateway.map(|g| PersonaModels {
        gateway: Arc::clone(g),
        default_model: user_model.or(suite.config.user_model.clone()),
        prompt: suite.config.user_prompt.clone(),
    });
    for lc in cases {
        let case = &lc.case;
        if let Err(why) =
            SimulatedUser::for_trial(case.user.clone(), models.as_ref(), &case.case_id, 0)
        {
            return Err(PlanError::Agent(format!(
                "case `{}` ({}): {why}",
                case.case_id,
                lc.file.display()
            )));
        }
    }
    Ok(models)
}

/// The upstream's key: `GAUNTLET_UPSTREAM_API_KEY`, else `OPENAI_API_KEY` (kept in the harness,
/// never handed to the agent).
pub fn upstream_key() -> Option<String> {
    std::env::var("GAUNTLET_UPSTREAM_API_KEY")
        .or_else(|_| std::env::var("OPENAI_API_KEY"))
        .ok()
}

/// Where a run's model calls go: its options for the LLM gateway.
#[derive(Debug, Clone, Default)]
pub struct GatewayOptions {
    /// `--gateway-upstream` (else the suite's `gateway.upstream`).
    pub upstream: Option<String>,
    /// `--record-cassette`.
    pub record: Option<std::path::PathBuf>,
    /// `--replay-cassette`.
    pub replay: Option<std::path::PathBuf>,
    /// The upstream's key (never shown to agents).
    pub api_key: Option<String>,
}

/// Starts the LLM gateway when the run needs one (a model endpoint, a cassette to record or
/// replay); `None` when it does not.
pub async fn start_gateway(
    options: GatewayOptions,
    suite: &Suite,
) -> Result<Option<Arc<Gateway>>, GatewayError> {
    let cfg = suite.config.gateway.clone().unwrap_or_default();
    let upstream = options.upstream.or(cfg.upstream);
    let mode = match (options.record, options.replay) {
        (Some(p), _) => Mode::Record(p),
        (None, Some(p)) => Mode::Replay(p),
        (None, None) => Mode::Live,
    };
    if upstream.is_none() && mode == Mode::Live {
        return Ok(None);
    }
    let config = GatewayConfig {
        upstream,
        api_key: options.api_key,
        mode,
        prices: cfg.prices,
    };
    Gateway::start(config).await.map(|g| Some(Arc::new(g)))
}
