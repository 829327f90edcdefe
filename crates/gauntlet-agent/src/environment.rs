//! A trial's tools and user, as an agent sees them.

use gauntlet_model::{Event, ToolError, ToolSpec, Trajectory};
use gauntlet_world::Simulator;
use serde_json::Value;

use crate::user::ScriptedUser;

/// The world and user of one trial. Every method records events in the trajectory.
pub trait Environment: Send {
    /// The tools the agent may call.
    fn tools(&self) -> Vec<ToolSpec>;
    /// Calls a tool; an error is what the agent sees (and is recorded), never a harness failure.
    fn call_tool(
        &mut self,
        step: u32,
        tool: &str,
        arguments: Value,
        idempotency_key: Option<String>,
    ) -> Result<Value, ToolError>;
    /// Asks the user to confirm an action; whether the user approved.
    fn confirm(&mut self, step: u32, text: &str) -> bool;
    /// Asks the user a question; the answer.
    fn ask(&mut self, step: u32, text: &str) -> String;
    /// Tells the user something.
    fn say(&mut self, step: u32, text: &str);
    /// Waits before the next action (a backoff). In-process agents advance the trial clock
    /// without sleeping; the time still counts in every time-based verdict.
    fn wait(&mut self, step: u32, ms: f64);
}

/// The in-process environment: the simulator and the scripted user.
pub struct SimulatedEnvironment {
    simulator: Simulator,
    user: ScriptedUser,
}

impl SimulatedEnvironment {
    /// An environment whose first event is the user's request.
    pub fn new(mut simulator: Simulator, user: ScriptedUser, user_input: &str) -> Self {
        simulator.record(Event::UserMessage {
            text: user_input.to_owned(),
        });
        SimulatedEnvironment { simulator, user }
    }

    /// Ends the trial: the trajectory (with the final answer) and the final state.
    pub fn finish(mut self, final_answer: Option<String>) -> (Trajectory, Value) {
        if let Some(text) = &final_answer {
            self.simulator
                .record(Event::FinalAnswer { text: text.clone() });
        }
        self.simulator.finish(final_answer)
    }
}

impl Environment for SimulatedEnvironment {
    fn tools(&self) -> Vec<ToolSpec> {
        self.simulator.world().spec().tools.clone()
    }

    fn call_tool(
        &mut self,
        step: u32,
        tool: &str,
        arguments: Value,
        idempotency_key: Option<String>,
    ) -> Result<Value, ToolError> {
        self.simulator
            .call_tool(step, tool, arguments, idempotency_key)
    }

    fn confirm(&mut self, step: u32, text: &str) -> bool {
        self.simulator.record(Event::ConfirmationRequest {
            step,
            text: text.to_owned(),
        });
        let answer = self.user.confirm(text);
        let approved = ScriptedUser::approves(&answer);
        self.simulator.record(Event::ConfirmationResponse {
            text: answer,
            approved,
        });
        approved
    }

    fn ask(&mut self, step: u32, text: &str) -> String {
        self.simulator.record(Event::Question {
            step,
            text: text.to_owned(),
        });
        let answer = self.user.answer(text);
        self.simulator.record(Event::UserMessage {
            text: answer.clone(),
        });
        answer
    }

    fn say(&mut self, step: u32, text: &str) {
        self.simulator.record(Event::AgentMessage {
            step,
            text: text.to_owned(),
        });
    }

    fn wait(&mut self, step: u32, ms: f64) {
        self.simulator.wait(step, ms);
    }
}
