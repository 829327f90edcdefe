//! The HTTP agent: an agent service that receives each trial as a POST.
//!
//! Body: `{"case_id", "user_input", "epoch", "seed", "mcp": {"url", "token"}, "openai":
//! {"base_url", "api_key"}?}`. The service works the world over MCP (and its model through the
//! gateway, when one runs) and answers with `{"final_answer": "..."}` or plain text. A refused
//! connection, an error status, or more than [`crate::command::MAX_STDOUT`] bytes fail the trial;
//! the trial's time limit applies as to any agent.

use futures_util::StreamExt;
use serde_json::json;

use crate::agent::{Agent, AgentError, AgentInput, AgentOutput, BoxFuture};
use crate::command::{MAX_STDOUT, TrialEndpoints, final_answer};
use crate::environment::SharedEnv;
use crate::gateway::Gateway;

/// Posts each trial to an agent service.
pub struct HttpAgent {
    url: String,
    gateway: Option<std::sync::Arc<Gateway>>,
    client: reqwest::Client,
}

impl HttpAgent {
    /// An agent service at `url`.
    pub fn new(url: &str, gateway: Option<std::sync::Arc<Gateway>>) -> Self {
        HttpAgent {
            url: url.to_owned(),
            gateway,
            client: reqwest::Client::new(),
        }
    }
}

impl Agent for HttpAgent {
    fn run<'a>(
        &'a self,
        input: &'a AgentInput,
        env: SharedEnv,
    ) -> BoxFuture<'a, Result<AgentOutput, AgentError>> {
        Box::pin(async move {
            let ends = TrialEndpoints::open(&env, self.gateway.as_deref(), input).await?;
            let (server, trial) = (&ends.server, &ends.gateway);
            let mut body = json!({
                "case_id": input.case_id, "user_input": input.user_input, "epoch": input.epoch, "seed": input.seed,
                "mcp": {"url": server.url, "token": server.token},
            });
            if let Some(t) = &trial {
                body["openai"] = json!({"base_url": t.base_url, "api_key": t.key});
            }
            let result = async {
                let resp = self
                    .client
                    .post(&self.url)
                    .json(&body)
                    .send()
                    .await
                    .map_err(|e| AgentError(format!("the agent service failed: {e}")))?;
                let status = resp.status();
                let mut bytes = Vec::new();
                let mut stream = resp.bytes_stream();
                while let Some(part) = stream.next().await {
                    let part =
                        part.map_err(|e| AgentError(format!("the agent service broke off: {e}")))?;
                    if bytes.len() + part.len() > MAX_STDOUT {
                        return Err(AgentError(format!(
                            "the agent service answered more than {MAX_STDOUT} bytes"
                        )));
                    }
                    bytes.extend_from_slice(&part);
                }
                let text = String::from_utf8_lossy(&bytes).into_owned();
                if !status.is_success() {
                    return Err(AgentError(format!(
                        "the agent service answered {status}: {}",
                        text.chars().take(300).collect::<String>()
                    )));
                }
                Ok(AgentOutput {
                    final_answer: final_answer(&text),
                    unfinished: None,
                    crashed: None,
                })
            }
            .await;
            ends.close().await;
            result
        })
    }
}
