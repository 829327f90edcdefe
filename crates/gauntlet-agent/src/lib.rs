//! Agents under test and what they talk to: the [`Agent`] trait, the scripted agent, the
//! simulated user, and [`Environment`], the trial's tools and user as an agent sees them.
//!
//! Agents are async because real ones wait on processes, sockets and models; the scripted
//! agent simply never waits.
#![warn(missing_docs)]

mod agent;
mod command;
pub mod conversation;
mod environment;
pub mod gateway;
mod http;
pub mod mcp;
mod openai;
mod recorder;
mod replay;
mod script;
pub mod user;

pub use agent::{
    Agent, AgentError, AgentInput, AgentOutput, AgentSpec, AgentSpecError, BoxFuture,
    parse_agent_spec,
};
pub use command::{CommandAgent, final_answer, kill_all_agents};
pub use environment::{Environment, SharedEnv, SimulatedEnvironment, lock, recorder};
pub use http::HttpAgent;
pub use openai::OpenAiAgent;
pub use recorder::ModelCallRecorder;
pub use replay::{ReplayAgent, ReplayLogError};
pub use script::{BUILTIN_BEHAVIOURS, ScriptAgent, UnknownScriptError, play};
pub use user::{PersonaModels, SimulatedUser, UserError};
