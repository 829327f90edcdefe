//! The command agent: any program, in any language, started once per trial.
//!
//! It gets the case input on stdin (`{"case_id", "user_input", "epoch", "seed", "mcp": {"url",
//! "token"}}`) and in its environment (`GAUNTLET_CASE_ID`, `GAUNTLET_USER_INPUT`,
//! `GAUNTLET_EPOCH`, `GAUNTLET_SEED`, `GAUNTLET_MCP_URL`, `GAUNTLET_MCP_TOKEN`), reaches the
//! world's tools over MCP (streamable HTTP on loopback, bearer token), and answers on stdout:
//! plain text, or a JSON object with `final_answer`. Its environment is scrubbed: only `PATH`,
//! `HOME`, `LANG`, `LC_ALL`, `TMPDIR` and `TERM` pass, so no API key of the harness reaches it.
//! It runs in a bubblewrap sandbox where one can be made ([`gauntlet_process::sandbox`]): it sees no other
//! process, so neither the harness's environment nor another trial's token. It runs in its own
//! process group, killed whole when the trial's time is up or gauntlet is stopped
//! ([`kill_all_agents`]); a crash, a hang or output past [`MAX_STDOUT`] fails that trial with a
//! readable reason.
//!
//! Whose failure a crash is follows from what the agent reached ([`Contact`]): a program that
//! cannot be spawned, or exits non-zero before it sent the world's MCP server or the gateway a
//! single request, could not start (the trial is an `error`, the harness's); one that exits
//! non-zero or on a signal after that crashed (the trial `failed`, `agent_completed`), unless
//! the model upstream failed it through the gateway (an `error` again).

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::agent::{Agent, AgentError, AgentInput, AgentOutput, BoxFuture};
use crate::environment::{SharedEnv, lock};
use crate::mcp::{Sessions, WorldServer, new_token, serve_handlers};
use crate::recorder::ModelCallRecorder;
use gauntlet_process::Sandbox;

/// Stdout beyond this many bytes fails the trial ("floods stdout").
pub const MAX_STDOUT: usize = 1 << 20;
/// Stderr kept in the trajectory (its end).
pub const MAX_STDERR: usize = 64 << 10;
/// Variables that pass into the agent's environment.
pub const PASSED_ENV: [&str; 6] = ["PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "TERM"];

/// Runs `sh -c COMMAND` per trial.
pub struct CommandAgent {
    command: String,
    dir: PathBuf,
    gateway: Option<Arc<crate::gateway::Gateway>>,
    sandbox: Arc<Sandbox>,
}

impl CommandAgent {
    /// An agent running `command` in `dir`, in `sandbox`; with a gateway, it also gets
    /// `OPENAI_BASE_URL` and a per-trial `OPENAI_API_KEY` that only the gateway accepts.
    pub fn new(
        command: &str,
        dir: PathBuf,
        gateway: Option<Arc<crate::gateway::Gateway>>,
        sandbox: Arc<Sandbox>,
    ) -> Self {
        CommandAgent {
            command: command.to_owned(),
            dir,
            gateway,
            sandbox,
        }
    }
}

/// The process groups of the agents running now, and whether gauntlet is stopping.
struct Live {
    groups: BTreeSet<i32>,
    stopping: bool,
}

static LIVE: Mutex<Live> = Mutex::new(Live {
    groups: BTreeSet::new(),
    stopping: false,
});

/// The registry, even if a thread panicked holding it (it is plain data).
fn live() -> std::sync::MutexGuard<'static, Live> {
    LIVE.lock().unwrap_or_else(|e| e.into_inner())
}

/// Starts the agent's process and registers its group with the registry held: a stop either
/// finds the agent registered and kills it, or came first and no agent starts.
fn spawn_registered(
    cmd: &mut tokio::process::Command,
) -> std::io::Result<(tokio::process::Child, GroupGuard)> {
    let mut live = live();
    if live.stopping {
        return Err(std::io::Error::other("gauntlet is stopping"));
    }
    let child = cmd.spawn()?;
    let pgid = child.id().and_then(|p| i32::try_from(p).ok());
    if let Some(g) = pgid {
        live.groups.insert(g);
    }
    Ok((child, GroupGuard(pgid)))
}

fn kill_group(pgid: i32) {
    // SAFETY: kill(2) with a negative pid signals a process group we created; it has no
    // memory-safety preconditions.
    unsafe {
        libc::kill(-pgid, libc::SIGKILL);
    }
}

/// Kills every running agent's process group (gauntlet is being stopped); returns how many.
/// No agent starts after it: the process is about to exit.
pub fn kill_all_agents() -> usize {
    let mut live = live();
    live.stopping = true;
    for &pgid in live.groups.iter() {
        kill_group(pgid);
    }
    live.groups.len()
}

/// Kills the agent's whole process group when dropped (the trial ended, timed out or failed).
struct GroupGuard(Option<i32>);

impl Drop for GroupGuard {
    fn drop(&mut self) {
        if let Some(pgid) = self.0 {
            kill_group(pgid);
            live().groups.remove(&pgid);
        }
    }
}

/// Reads a pipe to its end, keeping at most `cap` bytes; whether more came.
async fn read_capped(mut r: impl tokio::io::AsyncRead + Unpin, cap: usize) -> (Vec<u8>, bool) {
    let mut out = Vec::new();
    let mut buf = [0u8; 8192];
    let mut over = false;
    loop {
        match r.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                if out.len() + n > cap {
                    out.extend_from_slice(&buf[..cap.saturating_sub(out.len())]);
                    over = true;
                    break;
                }
                out.extend_from_slice(&buf[..n]);
            }
        }
    }
    (out, over)
}

/// Reads `r` to its end, keeping the last `cap` bytes: an agent may write as much as it likes on
/// stderr (it is drained, so it never blocks or dies of a closed pipe); the end is what explains
/// a failure.
async fn read_tail(mut r: impl tokio::io::AsyncRead + Unpin, cap: usize) -> Vec<u8> {
    let mut out = Vec::new();
    let mut buf = [0u8; 8192];
    loop {
        match r.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                out.extend_from_slice(&buf[..n]);
                // Trim in batches, not per read: the buffer stays under twice the cap.
                if out.len() > 2 * cap {
                    out.drain(..out.len() - cap);
                }
            }
        }
    }
    if out.len() > cap {
        out.drain(..out.len() - cap);
    }
    out
}

/// The final answer in an agent's stdout: `{"final_answer": ...}` or the trimmed text.
pub fn final_answer(stdout: &str) -> Option<String> {
    let t = stdout.trim();
    if t.is_empty() {
        return None;
    }
    if let Ok(Value::Object(o)) = serde_json::from_str::<Value>(t)
        && let Some(a) = o
            .get("final_answer")
            .or_else(|| o.get("answer"))
            .and_then(Value::as_str)
    {
        return Some(a.to_owned());
    }
    Some(t.to_owned())
}

impl Agent for CommandAgent {
    fn run<'a>(
        &'a self,
        input: &'a AgentInput,
        env: SharedEnv,
    ) -> BoxFuture<'a, Result<AgentOutput, AgentError>> {
        Box::pin(async move {
            let ends = TrialEndpoints::open(&env, self.gateway.as_deref(), input).await?;
            let result = self
                .run_process(
                    input,
                    &env,
                    &ends.server.url,
                    &ends.server.token,
                    ends.gateway.as_ref(),
                    &ends.contact,
                )
                .await;
            ends.close().await;
            result
        })
    }
}

/// What an out-of-process agent reaches during one trial: the world's MCP server and, when the
/// run has one, its slot on the LLM gateway; and what it has reached of them.
pub(crate) struct TrialEndpoints {
    pub(crate) server: crate::mcp::HttpServer,
    pub(crate) gateway: Option<crate::gateway::TrialGateway>,
    pub(crate) contact: Arc<Contact>,
}

impl TrialEndpoints {
    pub(crate) async fn open(
        env: &SharedEnv,
        gateway: Option<&crate::gateway::Gateway>,
        input: &AgentInput,
    ) -> Result<TrialEndpoints, AgentError> {
        let contact = Arc::new(Contact::default());
        // Stateless: a handler is made per authorised request, so making one is a request.
        let world = WorldServer::new(env.clone());
        let reached = Arc::clone(&contact);
        let server = serve_handlers(
            move || {
                reached.reached.store(true, Ordering::SeqCst);
                world.clone()
            },
            Sessions::Stateless,
            "127.0.0.1:0".parse().expect("valid address"),
            new_token(),
        )
        .await
        .map_err(|e| AgentError(format!("cannot start the MCP server: {e}")))?;
        let gateway = gateway.map(|g| {
            let watched = Watched {
                inner: crate::environment::recorder(env),
                contact: Arc::clone(&contact),
            };
            g.register(Arc::new(watched), &input.case_id, input.epoch)
        });
        Ok(TrialEndpoints {
            server,
            gateway,
            contact,
        })
    }

    /// Ends the gateway slot, then stops the server.
    pub(crate) async fn close(self) {
        drop(self.gateway);
        self.server.shutdown().await;
    }
}

/// What an out-of-process agent reached of its trial: whether it sent the world's MCP server
/// or the gateway anything, and whether the model upstream failed one of its calls.
#[derive(Debug, Default)]
pub(crate) struct Contact {
    /// It sent the MCP server an authorised request, or the gateway a model call.
    reached: AtomicBool,
    /// Model calls of the agent the gateway took.
    calls: AtomicU32,
    /// Model calls of the agent the gateway answered and recorded (a fault's included).
    answered: AtomicU32,
    /// The first upstream failure (429 or 5xx, not injected) of one of its calls.
    upstream_failure: Mutex<Option<String>>,
}

impl Contact {
    fn reached(&self) -> bool {
        self.reached.load(Ordering::SeqCst)
    }

    /// How the model upstream failed the agent, if it did: an error status it answered with, or
    /// a call it never answered (unreachable, or no cassette entry).
    fn upstream_failed(&self) -> Option<String> {
        if let Some(why) = self
            .upstream_failure
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
        {
            return Some(why);
        }
        let (calls, answered) = (
            self.calls.load(Ordering::SeqCst),
            self.answered.load(Ordering::SeqCst),
        );
        (calls > answered)
            .then(|| format!("{} model call(s) got no answer from it", calls - answered))
    }

    /// How the agent's process ended unsuccessfully (`how`): its crash once it had reached the
    /// world, else a harness failure (it could not start, or the upstream failed it).
    fn judge(&self, how: String) -> Result<AgentOutput, AgentError> {
        if let Some(up) = self.upstream_failed() {
            return Err(AgentError(format!(
                "the model upstream failed through the gateway ({up}); {how}"
            )));
        }
        if !self.reached() {
            return Err(AgentError(how));
        }
        Ok(AgentOutput {
            final_answer: None,
            unfinished: None,
            crashed: Some(how),
        })
    }
}

/// The trial's recorder as the gateway sees it, noting what the agent reached of the gateway.
struct Watched {
    inner: Arc<dyn ModelCallRecorder>,
    contact: Arc<Contact>,
}

impl ModelCallRecorder for Watched {
    fn now_ms(&self) -> f64 {
        self.inner.now_ms()
    }

    fn model_call_fault(&self) -> Option<(gauntlet_model::FaultKind, gauntlet_model::ToolError)> {
        // Asked once per model call of the agent, before anything else is done with it.
        self.contact.reached.store(true, Ordering::SeqCst);
        self.contact.calls.fetch_add(1, Ordering::SeqCst);
        self.inner.model_call_fault()
    }

    fn record(&self, event: gauntlet_model::Event) {
        if let gauntlet_model::Event::ModelCall {
            simulated_user: false,
            error,
            fault,
            ..
        } = &event
        {
            self.contact.answered.fetch_add(1, Ordering::SeqCst);
            if let (Some(e), None) = (error, fault)
                && (e.status == 429 || e.status >= 500)
            {
                self.contact
                    .upstream_failure
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .get_or_insert_with(|| format!("status {}: {}", e.status, e.message));
            }
        }
        self.inner.record(event);
    }
}

impl CommandAgent {
    async fn run_process(
        &self,
        input: &AgentInput,
        env: &SharedEnv,
        url: &str,
        token: &str,
        gateway: Option<&crate::gateway::TrialGateway>,
        contact: &Contact,
    ) -> Result<AgentOutput, AgentError> {
        // The trial's own scratch folder: the one place a sandboxed agent may write.
        let scratch =
            gauntlet_process::scratch::scratch().map_err(|e| AgentError(e.to_string()))?;
        let mut cmd = self.sandbox.shell(&self.command, &self.dir, scratch.path());
        for k in PASSED_ENV {
            if let Some(v) = std::env::var_os(k) {
                cmd.env(k, v);
            }
        }
        cmd.env("GAUNTLET_SCRATCH", scratch.path());
        if self.sandbox.isolated() {
            cmd.env("TMPDIR", scratch.path());
        }
        cmd.env("GAUNTLET_CASE_ID", &input.case_id)
            .env("GAUNTLET_USER_INPUT", &input.user_input)
            .env("GAUNTLET_EPOCH", input.epoch.to_string())
            .env("GAUNTLET_SEED", input.seed.to_string())
            .env("GAUNTLET_MCP_URL", url)
            .env("GAUNTLET_MCP_TOKEN", token);
        if let Some(g) = gateway {
            cmd.env("OPENAI_BASE_URL", &g.base_url)
                .env("OPENAI_API_KEY", &g.key);
        }
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .kill_on_drop(true);
        let (mut child, _group) = spawn_registered(&mut cmd)
            .map_err(|e| AgentError(format!("cannot start `{}`: {e}", self.command)))?;
        let stdin_body = json!({
            "case_id": input.case_id, "user_input": input.user_input, "epoch": input.epoch,
            "seed": input.seed, "mcp": {"url": url, "token": token},
        })
        .to_string();
        if let Some(mut stdin) = child.stdin.take() {
            let _ = stdin.write_all(stdin_body.as_bytes()).await;
        }
        let stdout = child
            .stdout
            .take()
            .ok_or_else(|| AgentError("no stdout pipe".into()))?;
        let stderr = child
            .stderr
            .take()
            .ok_or_else(|| AgentError("no stderr pipe".into()))?;
        let ((out, flooded), err) = tokio::join!(
            read_capped(stdout, MAX_STDOUT),
            read_tail(stderr, MAX_STDERR)
        );
        let err_text = String::from_utf8_lossy(&err).into_owned();
        lock(env).log_stderr(&err_text);
        if flooded {
            return contact.judge(format!(
                "the agent wrote more than {MAX_STDOUT} bytes on stdout"
            ));
        }
        let status = child
            .wait()
            .await
            .map_err(|e| AgentError(format!("lost the agent process: {e}")))?;
        if !status.success() {
            let tail: String = err_text
                .lines()
                .rev()
                .take(3)
                .collect::<Vec<_>>()
                .into_iter()
                .rev()
                .collect::<Vec<_>>()
                .join(" | ");
            return contact.judge(format!(
                "the agent exited with {status}{}",
                if tail.is_empty() {
                    String::new()
                } else {
                    format!(": {tail}")
                }
            ));
        }
        Ok(AgentOutput {
            final_answer: final_answer(&String::from_utf8_lossy(&out)),
            unfinished: None,
            crashed: None,
        })
    }
}
