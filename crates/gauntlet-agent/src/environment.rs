//! A trial's tools and user, as an agent sees them.
//!
//! The environment is shared ([`SharedEnv`]): an in-process agent calls it directly, an MCP
//! server hands it the calls of an agent in another process. Both record into the same trial.

use std::sync::{Arc, Mutex};

use gauntlet_model::{Event, FaultKind, FinalState, ToolError, ToolSpec, Trajectory};
use gauntlet_world::Simulator;
use serde_json::Value;

use crate::recorder::ModelCallRecorder;
use crate::user::{Reply, SimulatedUser, Turn};

/// A trial's environment, shared between the agent adapter and the servers it starts.
pub type SharedEnv = Arc<Mutex<dyn Environment>>;

/// Locks a shared environment; a panic elsewhere while it was held does not lose the trial.
pub fn lock(env: &SharedEnv) -> std::sync::MutexGuard<'_, dyn Environment + 'static> {
    env.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The trial behind `env`, as the LLM gateway records into it.
pub fn recorder(env: &SharedEnv) -> Arc<dyn ModelCallRecorder> {
    Arc::new(EnvRecorder(Arc::clone(env)))
}

struct EnvRecorder(SharedEnv);

impl ModelCallRecorder for EnvRecorder {
    fn now_ms(&self) -> f64 {
        lock(&self.0).now_ms()
    }

    fn model_call_fault(&self) -> Option<(FaultKind, ToolError)> {
        lock(&self.0).model_call_fault()
    }

    fn record(&self, event: Event) {
        lock(&self.0).record_event(event);
    }
}

/// The world and user of one trial. Every method records events in the trajectory.
pub trait Environment: Send {
    /// The tools the agent may call.
    fn tools(&self) -> Vec<ToolSpec>;
    /// A number that changes whenever [`Environment::tools`] does (a rug pull), so a server
    /// can tell its clients without comparing lists.
    fn tools_version(&self) -> u32 {
        0
    }
    /// Whether a trap ended the trial (the agent is then stopped).
    fn trapped(&self) -> bool {
        false
    }
    /// Calls a tool; an error is what the agent sees (and is recorded), never a harness failure.
    fn call_tool(
        &mut self,
        step: u32,
        tool: &str,
        arguments: Value,
        idempotency_key: Option<String>,
    ) -> Result<Value, ToolError>;
    /// Records a question or confirmation request to the user and decides how the reply comes
    /// (agents go through [`crate::conversation::ask`] and [`crate::conversation::confirm`]).
    fn put_to_user(&mut self, step: u32, turn: Turn, text: &str) -> Reply;
    /// Records the user's answer to what was put to them.
    fn user_answered(&mut self, turn: Turn, answer: String);
    /// Notes a failure of the harness's side of the trial (the simulated user could not answer):
    /// the trial is an error, whatever the agent did.
    fn harness_failed(&mut self, why: String);
    /// The first harness failure noted, if any.
    fn harness_failure(&self) -> Option<String>;
    /// Whether the user replies to the agent's messages (an LLM persona), so that an agent's
    /// text is a turn of a conversation rather than its final answer.
    fn user_converses(&self) -> bool;
    /// Tells the user something.
    fn say(&mut self, step: u32, text: &str);
    /// Waits before the next action (a backoff). In-process agents advance the trial clock
    /// without sleeping; the time still counts in every time-based verdict.
    fn wait(&mut self, step: u32, ms: f64);
    /// Records what an out-of-process agent wrote on its standard error.
    fn log_stderr(&mut self, text: &str);
    /// Records an event the harness observed (a model call through the gateway).
    fn record_event(&mut self, event: Event);
    /// Counts one model call of the agent; the injected fault that hits it, if any (recorded).
    fn model_call_fault(&mut self) -> Option<(FaultKind, ToolError)>;
    /// The trial clock, in milliseconds since the user's request.
    fn now_ms(&self) -> f64;
    /// In a replay: the output the recorded trajectory had for the last call.
    fn note_recorded_output(&mut self, recorded: Value);
    /// Ends the trial: the trajectory (with the final answer) and the final state (kept as the
    /// initial state and what changed, where the world can). Later calls answer as if the world
    /// were gone.
    fn finish(&mut self, final_answer: Option<String>) -> (Trajectory, FinalState);
}

/// The in-process environment: the simulator and the simulated user.
pub struct SimulatedEnvironment {
    sim: Option<Simulator>,
    tools: Vec<ToolSpec>,
    user: SimulatedUser,
    failure: Option<String>,
}

impl SimulatedEnvironment {
    /// An environment whose first event is the user's request (when there is one: a persona
    /// opens in its own words, see [`crate::conversation::open`]).
    pub fn new(mut simulator: Simulator, user: SimulatedUser, user_input: &str) -> Self {
        if !user_input.is_empty() {
            simulator.record(Event::UserMessage {
                text: user_input.to_owned(),
            });
        }
        SimulatedEnvironment {
            tools: simulator.tools(),
            sim: Some(simulator),
            user,
            failure: None,
        }
    }

    /// Shares the environment.
    pub fn shared(self) -> SharedEnv {
        Arc::new(Mutex::new(self))
    }

    fn record(&mut self, event: Event) {
        if let Some(sim) = &mut self.sim {
            sim.record(event);
        }
    }
}

impl Environment for SimulatedEnvironment {
    fn tools(&self) -> Vec<ToolSpec> {
        // Live: a rug pull changes the list mid-session.
        match &self.sim {
            Some(sim) if sim.tools_version() > 0 => sim.tools(),
            _ => self.tools.clone(),
        }
    }

    fn tools_version(&self) -> u32 {
        self.sim.as_ref().map_or(0, Simulator::tools_version)
    }

    fn trapped(&self) -> bool {
        self.sim.as_ref().is_some_and(|s| s.trapped().is_some())
    }

    fn call_tool(
        &mut self,
        step: u32,
        tool: &str,
        arguments: Value,
        idempotency_key: Option<String>,
    ) -> Result<Value, ToolError> {
        match &mut self.sim {
            Some(sim) => sim.call_tool(step, tool, arguments, idempotency_key),
            None => Err(ToolError {
                status: 503,
                message: "the trial is over".to_owned(),
                retry_after_s: None,
            }),
        }
    }

    fn put_to_user(&mut self, step: u32, turn: Turn, text: &str) -> Reply {
        let asked = text.to_owned();
        match turn {
            Turn::Open => {}
            Turn::Tell => self.record(Event::AgentMessage { step, text: asked }),
            Turn::Ask => self.record(Event::Question { step, text: asked }),
            Turn::Confirm => self.record(Event::ConfirmationRequest { step, text: asked }),
        }
        let history: Vec<&Event> = self
            .sim
            .as_ref()
            .map(|sim| sim.conversation().collect())
            .unwrap_or_default();
        self.user.reply(turn, text, &history)
    }

    fn user_answered(&mut self, turn: Turn, text: String) {
        self.record(match turn {
            Turn::Open | Turn::Ask | Turn::Tell => Event::UserMessage { text },
            Turn::Confirm => Event::ConfirmationResponse {
                approved: SimulatedUser::approves(&text),
                text,
            },
        });
    }

    fn harness_failed(&mut self, why: String) {
        self.failure.get_or_insert(why);
    }

    fn harness_failure(&self) -> Option<String> {
        self.failure.clone()
    }

    fn user_converses(&self) -> bool {
        self.user.converses()
    }

    fn say(&mut self, step: u32, text: &str) {
        self.record(Event::AgentMessage {
            step,
            text: text.to_owned(),
        });
    }

    fn wait(&mut self, step: u32, ms: f64) {
        if let Some(sim) = &mut self.sim {
            sim.wait(step, ms);
        }
    }

    fn log_stderr(&mut self, text: &str) {
        if !text.is_empty() {
            self.record(Event::AgentStderr {
                text: text.to_owned(),
            });
        }
    }

    fn record_event(&mut self, event: Event) {
        self.record(event);
    }

    fn model_call_fault(&mut self) -> Option<(FaultKind, ToolError)> {
        self.sim.as_mut()?.model_call_fault()
    }

    fn now_ms(&self) -> f64 {
        self.sim.as_ref().map_or(0.0, Simulator::now_ms)
    }

    fn note_recorded_output(&mut self, recorded: Value) {
        if let Some(sim) = &mut self.sim {
            sim.note_recorded_output(recorded);
        }
    }

    fn finish(&mut self, final_answer: Option<String>) -> (Trajectory, FinalState) {
        let Some(mut sim) = self.sim.take() else {
            return (Trajectory::default(), FinalState::Whole(Value::Null));
        };
        if let Some(text) = &final_answer {
            sim.record(Event::FinalAnswer { text: text.clone() });
        }
        let (trajectory, state) = sim.finish_changed(final_answer);
        let state = state.unwrap_or_else(|why| {
            self.failure.get_or_insert(why.to_string());
            FinalState::Whole(Value::Null)
        });
        (trajectory, state)
    }
}
