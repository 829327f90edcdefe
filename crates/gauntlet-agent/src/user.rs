//! The simulated user: scripted replies (patterns → reply, with defaults for confirmations and
//! questions), or an LLM persona that answers through the gateway.
//!
//! Agents reach the user through [`crate::conversation`]; this module decides what the user
//! says, and makes a persona's model call when asked to.

use std::sync::Arc;

use gauntlet_model::{Event, UserSpec};
use serde_json::{Value, json};

use crate::gateway::Gateway;
use crate::recorder::ModelCallRecorder;

/// What the agent put to the user.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Turn {
    /// Nothing yet: the user opens the conversation (a persona whose case has no `user_input`).
    Open,
    /// A message from the agent that awaits the user's reply (a persona's conversation turn).
    Tell,
    /// A question.
    Ask,
    /// A confirmation request.
    Confirm,
}

/// How the user's reply comes.
pub enum Reply {
    /// Known at once (a scripted reply).
    Now(String),
    /// From the persona's model, through the gateway.
    Persona(PersonaCall),
}

/// Where a run's personas get their words: its gateway, and the model that plays a persona
/// whose case names none.
#[derive(Clone)]
pub struct PersonaModels {
    /// The run's gateway (live, recording or replaying).
    pub gateway: Arc<Gateway>,
    /// The model, when the case names none.
    pub default_model: Option<String>,
    /// The persona's system prompt, with `{persona}` where the case's persona goes
    /// ([`PERSONA_PROMPT`] when `None`).
    pub prompt: Option<String>,
}

/// A trial's persona: its model and where its calls are recorded.
#[derive(Clone)]
struct PersonaLink {
    gateway: Arc<Gateway>,
    model: String,
    prompt: Option<String>,
    case_id: String,
    epoch: u32,
}

/// One model call the persona is about to make.
pub struct PersonaCall {
    link: PersonaLink,
    request: Value,
}

/// Why the simulated user cannot be played or cannot answer. A persona with no model or no
/// endpoint, or a case with nothing to open with, is the user's input; a persona's model call
/// that fails is the harness's.
#[derive(Debug, thiserror::Error)]
pub enum UserError {
    /// A persona with no endpoint to play it.
    #[error("{}", PERSONA_NEEDS_ENDPOINT)]
    NeedsEndpoint,
    /// A persona with no model to play it.
    #[error("{}", PERSONA_NEEDS_MODEL)]
    NeedsModel,
    /// No `user_input` and no persona to say the first words.
    #[error("the case has no user_input and its user no persona to open with")]
    NothingToOpenWith,
    /// The persona's model call did not get an answer.
    #[error("the simulated user's model call failed: {0}")]
    Call(#[source] reqwest::Error),
    /// The persona's model answered something that is not JSON.
    #[error("the simulated user's model answered something that is not JSON: {0}")]
    NotJson(#[source] reqwest::Error),
    /// The persona's model call failed with an HTTP status.
    #[error("the simulated user's model call failed with {status}: {message}")]
    Status {
        /// The status.
        status: reqwest::StatusCode,
        /// The error's message, or the whole body.
        message: String,
    },
    /// The persona's model answered with no text.
    #[error("the simulated user's model gave no text: {0}")]
    NoText(Value),
}

impl gauntlet_model::Classified for UserError {
    fn kind(&self) -> gauntlet_model::ErrorKind {
        match self {
            UserError::NeedsEndpoint | UserError::NeedsModel | UserError::NothingToOpenWith => {
                gauntlet_model::ErrorKind::InvalidInput
            }
            UserError::Call(_)
            | UserError::NotJson(_)
            | UserError::Status { .. }
            | UserError::NoText(_) => gauntlet_model::ErrorKind::Harness,
        }
    }
}

/// Answers the agent from a case's `user:` section.
#[derive(Clone, Default)]
pub struct SimulatedUser {
    spec: UserSpec,
    persona: Option<PersonaLink>,
}

impl SimulatedUser {
    /// A scripted user following the spec (one who says "yes" to confirmations when `None`).
    /// A persona in the spec is not played (there is no model to play it).
    pub fn scripted(spec: Option<UserSpec>) -> Self {
        SimulatedUser {
            spec: spec.unwrap_or_default(),
            persona: None,
        }
    }

    /// The user of one trial: scripted, and played by a model through `models` if the spec has
    /// a persona. Errs when a persona has no gateway or no model to play it.
    pub fn for_trial(
        spec: Option<UserSpec>,
        models: Option<&PersonaModels>,
        case_id: &str,
        epoch: u32,
    ) -> Result<Self, UserError> {
        let spec = spec.unwrap_or_default();
        let persona = match (&spec.persona, models) {
            (None, _) => None,
            (Some(_), None) => return Err(UserError::NeedsEndpoint),
            (Some(_), Some(models)) => Some(PersonaLink {
                gateway: Arc::clone(&models.gateway),
                model: spec
                    .model
                    .clone()
                    .or_else(|| models.default_model.clone())
                    .ok_or(UserError::NeedsModel)?,
                prompt: models.prompt.clone(),
                case_id: case_id.to_owned(),
                epoch,
            }),
        };
        Ok(SimulatedUser { spec, persona })
    }

    /// The reply to a question or confirmation request, given the conversation so far (the
    /// trial's events but its tool calls, the request included).
    pub fn reply(&self, turn: Turn, text: &str, history: &[&Event]) -> Reply {
        if let Some(reply) = self.spec.reply_to(text) {
            return Reply::Now(reply.reply.clone());
        }
        if let (Some(persona), Some(link)) = (&self.spec.persona, &self.persona) {
            return Reply::Persona(PersonaCall {
                request: persona_request(
                    link.prompt.as_deref().unwrap_or(PERSONA_PROMPT),
                    persona,
                    &link.model,
                    history,
                ),
                link: link.clone(),
            });
        }
        Reply::Now(match turn {
            Turn::Open => String::new(),
            Turn::Tell => STOP.to_owned(),
            Turn::Confirm => self
                .spec
                .confirm
                .clone()
                .unwrap_or_else(|| "yes".to_owned()),
            Turn::Ask => self
                .spec
                .default
                .clone()
                .unwrap_or_else(|| gauntlet_model::case::NOTHING_TO_ADD.to_owned()),
        })
    }

    /// Whether the user talks back to the agent's messages (a persona does; a script has only
    /// answers to questions and confirmation requests).
    pub fn converses(&self) -> bool {
        self.persona.is_some()
    }

    /// Whether an answer approves: it starts with an affirmative word.
    pub fn approves(answer: &str) -> bool {
        let first = answer
            .trim()
            .split(|c: char| !c.is_alphanumeric())
            .next()
            .unwrap_or_default()
            .to_lowercase();
        [
            "yes",
            "y",
            "ok",
            "okay",
            "sure",
            "confirm",
            "confirmed",
            "go",
            "proceed",
            "si",
            "sí",
        ]
        .contains(&first.as_str())
    }
}

/// Why a persona cannot be played without an endpoint.
pub const PERSONA_NEEDS_ENDPOINT: &str = "the case's user is an LLM persona, which needs a model \
endpoint: give --gateway-upstream URL (or the suite's gateway.upstream), or --replay-cassette CASSETTE";

/// Why a persona cannot be played without a model.
pub const PERSONA_NEEDS_MODEL: &str = "the case's user is an LLM persona but no model plays it: \
set the case's `user.model`, the suite's `user_model`, or --user-model";

/// What the persona is told. It plays the user; the agent's words come to it as the user's
/// role and its own as the assistant's (the conversation seen from the other side).
pub const PERSONA_PROMPT: &str = "You are role-playing a user who is talking to an assistant \
that acts for you through tools. Stay in character for the whole conversation.

Who you are and what you want:
{persona}

Rules:
- Write only your next message, short, as the user would type it.
- Give the assistant only what it needs for its current question; do not reveal your whole goal at once.
- Never invent facts that are not in your description. If you do not know something, say so.
- When the assistant asks you to confirm an action, begin your reply with \"yes\" or \"no\", as your goal decides.
- When your goal is met, or cannot be met, reply with ###STOP### and nothing else.";

/// What a persona says when its goal is met (or cannot be): the conversation is over.
pub const STOP: &str = "###STOP###";

/// What the persona hears before it opens the conversation.
pub const PERSONA_GREETING: &str = "Hi! How can I help you today?";

/// The chat request that asks the persona's model for the user's next message; `prompt` is the
/// system prompt, with `{persona}` where the persona goes.
pub fn persona_request(prompt: &str, persona: &str, model: &str, history: &[&Event]) -> Value {
    let mut messages = vec![json!({
        "role": "system",
        "content": prompt.replace("{persona}", persona.trim()),
    })];
    if !history
        .iter()
        .any(|e| matches!(e, Event::UserMessage { .. }))
    {
        messages.push(json!({"role": "user", "content": PERSONA_GREETING}));
    }
    for event in history {
        let (role, text) = match event {
            Event::UserMessage { text } | Event::ConfirmationResponse { text, .. } => {
                ("assistant", text.clone())
            }
            Event::AgentMessage { text, .. } | Event::Question { text, .. } => {
                ("user", text.clone())
            }
            Event::ConfirmationRequest { text, .. } => {
                ("user", format!("{text}\n(Please confirm: yes or no.)"))
            }
            _ => continue,
        };
        messages.push(json!({"role": role, "content": text}));
    }
    json!({"model": model, "messages": messages, "temperature": 0})
}

impl PersonaCall {
    /// Asks the persona's model for the user's next message, through the gateway (so the call
    /// is recorded in the trial and in the cassette).
    pub async fn answer(self, trial: Arc<dyn ModelCallRecorder>) -> Result<String, UserError> {
        let trial = self
            .link
            .gateway
            .register_user(trial, &self.link.case_id, self.link.epoch);
        let response = self
            .link
            .gateway
            .client()
            .post(format!("{}/chat/completions", trial.base_url))
            .bearer_auth(&trial.key)
            .json(&self.request)
            .send()
            .await
            .map_err(UserError::Call)?;
        let status = response.status();
        let body: Value = response.json().await.map_err(UserError::NotJson)?;
        if !status.is_success() {
            let message = body["error"]["message"]
                .as_str()
                .map_or_else(|| body.to_string(), str::to_owned);
            return Err(UserError::Status { status, message });
        }
        body["choices"][0]["message"]["content"]
            .as_str()
            .map(|t| t.trim().to_owned())
            .filter(|t| !t.is_empty())
            .ok_or_else(|| UserError::NoText(body.clone()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gauntlet_model::{ReplyPattern, UserReply};

    fn now(reply: Reply) -> String {
        match reply {
            Reply::Now(text) => text,
            Reply::Persona(_) => panic!("expected a scripted reply"),
        }
    }

    #[test]
    fn replies_match_case_insensitively_then_defaults_apply() {
        let user = SimulatedUser::scripted(Some(UserSpec {
            replies: vec![UserReply {
                pattern: ReplyPattern::One("delete".into()),
                reply: "No, do not delete it.".into(),
            }],
            default: Some("INC-1".into()),
            ..UserSpec::default()
        }));
        let refusal = now(user.reply(Turn::Confirm, "Really DELETE it?", &[]));
        assert_eq!(refusal, "No, do not delete it.");
        assert!(!SimulatedUser::approves(&refusal));
        assert!(SimulatedUser::approves(&now(user.reply(
            Turn::Confirm,
            "Close it?",
            &[]
        ))));
        assert_eq!(now(user.reply(Turn::Ask, "Which one?", &[])), "INC-1");
    }

    /// Regression (issue 47, item 4): `pattern: which` answered only questions containing
    /// "which", so "Could you tell me the ticket number?" got "I have nothing to add." and the
    /// agent failed for the user's deafness. A list of patterns hears the ways of asking.
    #[test]
    fn a_reply_with_several_patterns_answers_any_of_them_ignoring_case() {
        let spec: UserSpec = serde_json::from_value(json!({"replies": [
            {"pattern": ["which", "ticket number", "WHAT TICKET"], "reply": "TCK-102"},
            {"pattern": "sure", "reply": "Yes."}
        ]}))
        .unwrap();
        let user = SimulatedUser::scripted(Some(spec));
        for question in [
            "Which ticket?",
            "Could you tell me the Ticket Number?",
            "what ticket do you mean?",
        ] {
            assert_eq!(now(user.reply(Turn::Ask, question, &[])), "TCK-102");
        }
        assert_eq!(now(user.reply(Turn::Ask, "Are you SURE?", &[])), "Yes.");
        assert_eq!(
            now(user.reply(Turn::Ask, "Anything else?", &[])),
            gauntlet_model::case::NOTHING_TO_ADD
        );
    }

    #[test]
    fn the_persona_sees_the_conversation_from_the_user_side_and_never_the_tools() {
        let history = [
            Event::UserMessage {
                text: "Cancel my trip.".into(),
            },
            Event::Question {
                step: 1,
                text: "Which reservation?".into(),
            },
            Event::UserMessage {
                text: "ABC123".into(),
            },
            Event::ConfirmationRequest {
                step: 2,
                text: "Cancel ABC123?".into(),
            },
        ];
        let r = persona_request(
            PERSONA_PROMPT,
            "You are Mia. You want ABC123 cancelled.",
            "m",
            &history.iter().collect::<Vec<_>>(),
        );
        let messages = r["messages"].as_array().unwrap();
        assert!(
            messages[0]["content"]
                .as_str()
                .unwrap()
                .contains("You are Mia. You want ABC123 cancelled.")
        );
        let turns: Vec<(&str, &str)> = messages[1..]
            .iter()
            .map(|m| (m["role"].as_str().unwrap(), m["content"].as_str().unwrap()))
            .collect();
        assert_eq!(
            turns,
            vec![
                ("assistant", "Cancel my trip."),
                ("user", "Which reservation?"),
                ("assistant", "ABC123"),
                ("user", "Cancel ABC123?\n(Please confirm: yes or no.)"),
            ]
        );
        assert_eq!(r["model"], "m");
    }
}
