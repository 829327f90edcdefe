//! The built-in agent: a reference tool-calling loop for any OpenAI-compatible endpoint, so a
//! model and a prompt can be evaluated directly (tau-bench style). It talks to the model through
//! the gateway, so its calls are recorded (and replayable) like any agent's.
//!
//! Loop: system prompt and the user's request; each response's tool calls run in the world (the
//! calls of one response share a step); their results go back as tool messages; a response
//! without tool calls is the final answer, unless the user is an LLM persona: then it is a turn
//! of the conversation, the persona's reply comes back as the next user message, and the
//! conversation ends when the persona says `###STOP###` (tau-bench's loop). The user tools
//! (`gauntlet_ask_user`, `gauntlet_confirm`) are offered as functions too. At most `max_steps`
//! model calls.

use std::sync::Arc;

use serde_json::{Value, json};

use crate::agent::{Agent, AgentError, AgentInput, AgentOutput, BoxFuture};
use crate::environment::{SharedEnv, lock};
use crate::gateway::Gateway;
use crate::mcp::{ASK_USER, CONFIRM};

/// The built-in tool-calling agent.
pub struct OpenAiAgent {
    model: String,
    system_prompt: String,
    max_steps: u32,
    gateway: Arc<Gateway>,
    client: reqwest::Client,
}

impl OpenAiAgent {
    /// An agent for `model` behind `gateway`.
    pub fn new(
        model: &str,
        system_prompt: Option<String>,
        max_steps: u32,
        gateway: Arc<Gateway>,
    ) -> Self {
        OpenAiAgent {
            model: model.to_owned(),
            system_prompt: system_prompt.unwrap_or_else(|| {
                "You are a careful assistant acting through tools. Ask the user to confirm \
                 (gauntlet_confirm) before any change. Say plainly when something fails."
                    .to_owned()
            }),
            max_steps: max_steps.max(1),
            gateway,
            client: reqwest::Client::new(),
        }
    }
}

/// Retries of a model call that failed with 429 or a server error.
pub const MODEL_RETRIES: u32 = 3;

impl OpenAiAgent {
    /// One model call, retried like OpenAI's SDKs do: on 408, 409, 429 and 5xx, at most
    /// [`MODEL_RETRIES`] times, waiting the `retry-after-ms` / `retry-after` the server asks for
    /// (at most 60 s), else 0.5 s doubling.
    async fn complete(&self, base_url: &str, key: &str, body: &Value) -> Result<Reply, AgentError> {
        let mut attempt = 0;
        loop {
            let resp = self
                .client
                .post(format!("{base_url}/chat/completions"))
                .bearer_auth(key)
                .json(body)
                .send()
                .await
                .map_err(|e| AgentError(format!("model call failed: {e}")))?;
            let status = resp.status();
            let header = |name: &str| {
                resp.headers()
                    .get(name)
                    .and_then(|v| v.to_str().ok())
                    .and_then(|v| v.trim().parse::<f64>().ok())
            };
            let asked_ms =
                header("retry-after-ms").or_else(|| header("retry-after").map(|s| s * 1000.0));
            let value: Value = resp.json().await.map_err(|e| {
                AgentError(format!("model answered something that is not JSON: {e}"))
            })?;
            if status.is_success() {
                return Ok(Reply::Message(value));
            }
            if let Some(why) = context_exceeded(status.as_u16(), &value) {
                return Ok(Reply::ContextFull(why));
            }
            let retryable = matches!(status.as_u16(), 408 | 409 | 429) || status.is_server_error();
            if !retryable || attempt >= MODEL_RETRIES {
                return Err(AgentError(format!(
                    "model call failed with {status}: {value}"
                )));
            }
            let wait_ms = asked_ms
                .filter(|ms| (0.0..=60_000.0).contains(ms))
                .unwrap_or(500.0 * f64::from(1u32 << attempt));
            tokio::time::sleep(std::time::Duration::from_secs_f64(wait_ms / 1000.0)).await;
            attempt += 1;
        }
    }
}

/// What a model call gave.
enum Reply {
    /// The response body.
    Message(Value),
    /// The model refused the conversation as longer than its context window: the agent cannot
    /// go on, which fails its task (as running out of steps does), not the harness.
    ContextFull(String),
}

/// The upstream's message when it refuses a request for exceeding the model's context window:
/// a 400 with OpenAI's code `context_length_exceeded` (llama-cpp-python's server says the same)
/// or its wording ("maximum context length", as vLLM says it).
fn context_exceeded(status: u16, body: &Value) -> Option<String> {
    let error = &body["error"];
    let message = error["message"].as_str().unwrap_or_default();
    (status == 400
        && (error["code"] == "context_length_exceeded"
            || message.contains("maximum context length")))
    .then(|| message.to_owned())
}

/// The model's tool-calling message as it goes back in the conversation: only the fields a
/// request's assistant message has, its content a string. Servers that validate requests
/// (llama-cpp-python's) refuse the response's `"content": null` and its extra fields.
fn assistant_turn(message: &Value, calls: &[Value]) -> Value {
    let calls: Vec<Value> = calls
        .iter()
        .map(|c| {
            json!({
                "id": c["id"],
                "type": "function",
                "function": {"name": c["function"]["name"], "arguments": c["function"]["arguments"]},
            })
        })
        .collect();
    let content = message["content"].as_str().unwrap_or_default();
    json!({"role": "assistant", "content": content, "tool_calls": calls})
}

fn function(name: &str, description: &str, parameters: &Value) -> Value {
    json!({"type": "function", "function": {"name": name, "description": description, "parameters": parameters}})
}

impl Agent for OpenAiAgent {
    fn run<'a>(
        &'a self,
        input: &'a AgentInput,
        env: SharedEnv,
    ) -> BoxFuture<'a, Result<AgentOutput, AgentError>> {
        Box::pin(async move {
            let trial = self.gateway.register(
                crate::environment::recorder(&env),
                &input.case_id,
                input.epoch,
            );
            let mut tools: Vec<Value> = lock(&env)
                .tools()
                .iter()
                .map(|t| function(&t.name, &t.description, &t.parameters))
                .collect();
            let text = |field: &str| json!({"type": "object", "properties": {field: {"type": "string"}}, "required": [field]});
            tools.push(function(
                ASK_USER,
                "Ask the user a question.",
                &text("question"),
            ));
            tools.push(function(
                CONFIRM,
                "Ask the user to confirm an action before doing it.",
                &text("action"),
            ));
            let mut messages = vec![
                json!({"role": "system", "content": self.system_prompt}),
                json!({"role": "user", "content": input.user_input}),
            ];
            for step in 1..=self.max_steps {
                // `tool_choice` is said although "auto" is OpenAI's default: servers such as
                // llama-cpp-python's leave the tools out of the prompt without it.
                let body = json!({"model": self.model, "messages": messages, "tools": tools, "tool_choice": "auto", "seed": input.seed % (1 << 31)});
                let value = match self.complete(&trial.base_url, &trial.key, &body).await? {
                    Reply::Message(value) => value,
                    Reply::ContextFull(why) => {
                        return Ok(AgentOutput {
                            final_answer: None,
                            unfinished: Some(format!(
                                "the conversation outgrew the model's context window at model \
                                 call {step}: {why}"
                            )),
                            crashed: None,
                        });
                    }
                };
                let message = value["choices"][0]["message"].clone();
                let calls = message["tool_calls"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default();
                if calls.is_empty() {
                    // A persona user answers, tau-bench style, until it ends the conversation.
                    let said = message["content"].as_str().unwrap_or_default().to_owned();
                    if step < self.max_steps
                        && let Some(reply) = crate::conversation::tell(&env, step, &said).await
                    {
                        messages.push(json!({"role": "assistant", "content": said}));
                        messages.push(json!({"role": "user", "content": reply}));
                        continue;
                    }
                    return Ok(AgentOutput {
                        final_answer: Some(said).filter(|s| !s.is_empty()),
                        unfinished: None,
                        crashed: None,
                    });
                }
                messages.push(assistant_turn(&message, &calls));
                for call in calls {
                    let name = call["function"]["name"]
                        .as_str()
                        .unwrap_or_default()
                        .to_owned();
                    let args: Value = call["function"]["arguments"]
                        .as_str()
                        .and_then(|a| serde_json::from_str(a).ok())
                        .unwrap_or_else(|| json!({}));
                    let text = |field: &str| args[field].as_str().unwrap_or_default().to_owned();
                    let content = match name.as_str() {
                        ASK_USER => crate::conversation::ask(&env, step, &text("question")).await,
                        CONFIRM => {
                            let (approved, answer) =
                                crate::conversation::confirm(&env, step, &text("action")).await;
                            json!({"approved": approved, "answer": answer}).to_string()
                        }
                        _ => match lock(&env).call_tool(step, &name, args, None) {
                            Ok(v) => v.to_string(),
                            Err(e) => format!("error {}: {}", e.status, e.message),
                        },
                    };
                    messages.push(
                        json!({"role": "tool", "tool_call_id": call["id"], "content": content}),
                    );
                }
            }
            // Out of steps: the agent did not finish its task, which fails it (not the harness).
            Ok(AgentOutput {
                final_answer: None,
                unfinished: Some(format!(
                    "no final answer after {} model calls (max_steps)",
                    self.max_steps
                )),
                crashed: None,
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusal_for_the_context_window_is_told_apart_from_other_refusals() {
        // OpenAI's (and llama-cpp-python's) body, and vLLM's wording.
        let openai = json!({"error": {"message": "This model's maximum context length is 2048 tokens.", "code": "context_length_exceeded"}});
        let vllm = json!({"error": {"message": "This model's maximum context length is 4096 tokens. However, you requested 5000 tokens."}});
        assert!(context_exceeded(400, &openai).is_some());
        assert!(context_exceeded(400, &vllm).is_some());
        let bad = json!({"error": {"message": "Invalid value for 'tool_choice'.", "code": null}});
        assert_eq!(context_exceeded(400, &bad), None);
        assert_eq!(context_exceeded(500, &openai), None);
    }

    #[test]
    fn a_tool_calling_turn_goes_back_with_string_content_and_only_request_fields() {
        let message = json!({"role": "assistant", "content": null, "function_call": {"name": "x:"},
            "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "get", "arguments": "{}"}, "index": 0}]});
        let calls = message["tool_calls"].as_array().unwrap().clone();
        assert_eq!(
            assistant_turn(&message, &calls),
            json!({"role": "assistant", "content": "",
                "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "get", "arguments": "{}"}}]})
        );
    }
}
