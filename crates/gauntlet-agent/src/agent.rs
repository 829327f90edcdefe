//! The agent seam.

use std::future::Future;
use std::pin::Pin;

use crate::environment::SharedEnv;

/// A boxed future, so that agents are object-safe.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// What an agent is told about a trial. It never sees expected outcomes.
#[derive(Debug, Clone)]
pub struct AgentInput {
    /// The case.
    pub case_id: String,
    /// The user's request.
    pub user_input: String,
    /// The repetition.
    pub epoch: u32,
    /// The trial's seed.
    pub seed: u64,
}

/// What an agent produced.
#[derive(Debug, Clone, Default)]
pub struct AgentOutput {
    /// The final answer, if any.
    pub final_answer: Option<String>,
    /// Why the agent stopped before finishing its task (it ran out of steps), if it did: the
    /// agent's failure, judged as such, never the harness's.
    pub unfinished: Option<String>,
    /// How the agent crashed once it had started (the exception it raised, the exit status of
    /// its process), if it did: the agent's failure (`agent_completed`), never the harness's.
    pub crashed: Option<String>,
}

/// Why an agent could not run (a process that cannot be spawned or exits before it reaches
/// the world, the user or the gateway; a model upstream that failed): a harness failure, so
/// the trial's status is `error`. An agent that crashes once started reports
/// [`AgentOutput::crashed`] instead.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct AgentError(pub String);

/// An agent under test.
pub trait Agent: Send + Sync {
    /// Runs one trial against its environment.
    fn run<'a>(
        &'a self,
        input: &'a AgentInput,
        env: SharedEnv,
    ) -> BoxFuture<'a, Result<AgentOutput, AgentError>>;
}

/// A parsed `--agent` value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AgentSpec {
    /// `script:NAME`: a named scripted behaviour.
    Script(String),
    /// `cmd:COMMAND`: a program started per trial, reaching the world over MCP.
    Command(String),
    /// `openai:MODEL`: the built-in tool-calling loop, through the gateway.
    OpenAi(String),
    /// `http://...`: an agent service that receives each trial as a POST.
    Http(String),
    /// `replay:FILE`: re-executes the tool calls of recorded trajectories.
    Replay(String),
    /// `python:MODULE:FUNCTION`: a Python function `agent(case, tools, user)`, called in
    /// process (only where the harness runs inside Python: the Python package's `gauntlet`
    /// command and `gauntlet.run`).
    Python {
        /// The module, imported from the current folder or the Python path (`my_agents`,
        /// `pkg.agents`).
        module: String,
        /// The function in it, dotted for an attribute of an attribute (`Support.agent`).
        function: String,
    },
}

/// An `--agent` value of no kind gauntlet knows: the user's input. The message says which
/// kinds exist.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown agent `{0}`: use `script:NAME` (script:reference replays each case's reference_trajectory), `cmd:COMMAND` (a program per trial, with the world over MCP), `openai:MODEL` (the built-in tool-calling loop through the gateway) or `python:MODULE:FUNCTION` (a Python function, in process); see `gauntlet run --help`"
)]
pub struct AgentSpecError(pub String);

impl gauntlet_model::Classified for AgentSpecError {
    fn kind(&self) -> gauntlet_model::ErrorKind {
        gauntlet_model::ErrorKind::InvalidInput
    }
}

/// Parses an `--agent` value; the message says which kinds exist.
pub fn parse_agent_spec(spec: &str) -> Result<AgentSpec, AgentSpecError> {
    match spec.split_once(':') {
        Some(("script", name)) if !name.is_empty() => Ok(AgentSpec::Script(name.to_owned())),
        Some(("cmd", command)) if !command.trim().is_empty() => {
            Ok(AgentSpec::Command(command.to_owned()))
        }
        Some(("openai", model)) if !model.trim().is_empty() => {
            Ok(AgentSpec::OpenAi(model.to_owned()))
        }
        Some(("http" | "https", _)) => Ok(AgentSpec::Http(spec.to_owned())),
        Some(("replay", file)) if !file.is_empty() => Ok(AgentSpec::Replay(file.to_owned())),
        Some(("python", target)) => match target.split_once(':') {
            Some((module, function)) if !module.is_empty() && !function.is_empty() => {
                Ok(AgentSpec::Python {
                    module: module.to_owned(),
                    function: function.to_owned(),
                })
            }
            _ => Err(AgentSpecError(spec.to_owned())),
        },
        _ => Err(AgentSpecError(spec.to_owned())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unknown_agent_lists_the_kinds_there_are() {
        let e = parse_agent_spec("gpt").unwrap_err();
        assert_eq!(
            e.to_string(),
            "unknown agent `gpt`: use `script:NAME` (script:reference replays each case's reference_trajectory), `cmd:COMMAND` (a program per trial, with the world over MCP), `openai:MODEL` (the built-in tool-calling loop through the gateway) or `python:MODULE:FUNCTION` (a Python function, in process); see `gauntlet run --help`"
        );
        assert_eq!(
            parse_agent_spec("script:reference"),
            Ok(AgentSpec::Script("reference".into()))
        );
    }

    /// Issue 47: pytest took `python:MODULE:FUNCTION` and `--agent` took no `python:` form.
    #[test]
    fn a_python_agent_is_spelled_python_module_function() {
        assert_eq!(
            parse_agent_spec("python:ticket_agent:agent"),
            Ok(AgentSpec::Python {
                module: "ticket_agent".into(),
                function: "agent".into()
            })
        );
        for wrong in ["python:ticket_agent.agent", "python::agent", "python:m:"] {
            assert!(parse_agent_spec(wrong).is_err(), "{wrong}");
        }
    }
}
