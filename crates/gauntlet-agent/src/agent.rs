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
}

/// Why an agent could not run: a harness failure, so the trial's status is `error`.
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
}

/// An `--agent` value of no kind gauntlet knows: the user's input. The message says which
/// kinds exist.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown agent `{0}`: use `script:NAME` (script:reference replays each case's reference_trajectory), `cmd:COMMAND` (a program per trial, with the world over MCP) or `openai:MODEL` (the built-in tool-calling loop through the gateway); see `gauntlet run --help`"
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
            "unknown agent `gpt`: use `script:NAME` (script:reference replays each case's reference_trajectory), `cmd:COMMAND` (a program per trial, with the world over MCP) or `openai:MODEL` (the built-in tool-calling loop through the gateway); see `gauntlet run --help`"
        );
        assert_eq!(
            parse_agent_spec("script:reference"),
            Ok(AgentSpec::Script("reference".into()))
        );
    }
}
