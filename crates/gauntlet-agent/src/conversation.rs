//! How agents reach the simulated user: [`ask`] and [`confirm`] (and [`tell`], a conversation
//! turn for a persona); the runner gets a persona's opening words from [`open`].
//!
//! The environment records what was put to the user and decides the reply; a persona's model
//! call is made after the environment's lock is released (the agent's other calls go on
//! meanwhile), and the answer is recorded when it comes.

use crate::environment::{SharedEnv, lock, recorder};
use crate::user::{Reply, STOP, SimulatedUser, Turn, UserError};

/// Puts a question or confirmation request to the user and records both sides; the answer.
/// When the persona cannot answer, the trial is marked as failed by the harness and the agent
/// hears that the user is unavailable.
async fn put(env: &SharedEnv, step: u32, turn: Turn, text: &str) -> String {
    let reply = lock(env).put_to_user(step, turn, text);
    let answer = match reply {
        Reply::Now(answer) => answer,
        Reply::Persona(call) => match call.answer(recorder(env)).await {
            Ok(answer) => answer,
            Err(why) => {
                lock(env).harness_failed(why.to_string());
                "(no answer: the simulated user is unavailable)".to_owned()
            }
        },
    };
    lock(env).user_answered(turn, answer.clone());
    answer
}

/// The user's opening request: `user_input` when the case has one (recorded when the
/// environment was made), else the persona's first message. Errs when the persona cannot speak.
pub async fn open(env: &SharedEnv, user_input: &str) -> Result<String, UserError> {
    if !user_input.is_empty() {
        return Ok(user_input.to_owned());
    }
    let reply = lock(env).put_to_user(0, Turn::Open, "");
    let opening = match reply {
        Reply::Now(text) => text,
        Reply::Persona(call) => call.answer(recorder(env)).await?,
    };
    if opening.is_empty() {
        return Err(UserError::NothingToOpenWith);
    }
    lock(env).user_answered(Turn::Open, opening.clone());
    Ok(opening)
}

/// Tells a conversing user something and waits for the reply (tau-bench's turn taking); `None`
/// when the user ends the conversation (`###STOP###`) or does not converse.
pub async fn tell(env: &SharedEnv, step: u32, text: &str) -> Option<String> {
    if !lock(env).user_converses() {
        return None;
    }
    let answer = put(env, step, Turn::Tell, text).await;
    (!answer.contains(STOP) && lock(env).harness_failure().is_none()).then_some(answer)
}

/// Asks the user a question; the answer.
pub async fn ask(env: &SharedEnv, step: u32, question: &str) -> String {
    put(env, step, Turn::Ask, question).await
}

/// Asks the user to confirm an action; whether they approved, and what they said.
pub async fn confirm(env: &SharedEnv, step: u32, action: &str) -> (bool, String) {
    let answer = put(env, step, Turn::Confirm, action).await;
    (SimulatedUser::approves(&answer), answer)
}
