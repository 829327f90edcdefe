//! Real MCP servers behind the proxy: started as commands (stdio, in their own process group,
//! killed with it) or reached over streamable HTTP, through the official Rust SDK's client.

use std::process::Stdio;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{CallToolRequestParams, CallToolResult, Tool};
use rmcp::service::{Peer, RoleClient, RunningService, ServiceExt};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use tokio::io::AsyncBufReadExt;

use crate::relay::Relay;

pub use crate::relay::CallFailure;

/// Why an upstream cannot be named or reached. A spec that does not parse is the user's input;
/// an upstream that cannot be started or reached is the harness's failure.
#[derive(Debug, thiserror::Error)]
pub enum UpstreamError {
    /// `cmd:` with nothing after it.
    #[error("`{0}`: `cmd:` needs a command")]
    NoCommand(String),
    /// `#bearer=$VAR` naming a variable that is not set.
    #[error("`{spec}`: the environment variable `{variable}` is not set")]
    UnsetVariable {
        /// The spec as written.
        spec: String,
        /// The variable.
        variable: String,
    },
    /// Neither `cmd:` nor an HTTP(S) URL.
    #[error(
        "`{0}` is not an upstream: write `cmd:COMMAND` (an MCP server on stdio) or an http(s):// MCP endpoint, optionally named `NAME=`"
    )]
    NotAnUpstream(String),
    /// Not started and listed within the time limit.
    #[error("upstream `{spec}` did not start and list its tools within {timeout:?}")]
    StartTimeout {
        /// The upstream (its token left out).
        spec: String,
        /// The limit.
        timeout: Duration,
    },
    /// The command could not be spawned.
    #[error("cannot start upstream `{spec}`: {source}")]
    Spawn {
        /// The upstream.
        spec: String,
        /// The cause.
        source: std::io::Error,
    },
    /// gauntlet is stopping, and starts no new process.
    #[error("gauntlet is stopping")]
    Stopping,
    /// A command's server started but did not complete the handshake; the message adds what
    /// to install and the last lines of its stderr.
    #[error("{}", start_failure(command, &source.to_string(), tail))]
    CommandHandshake {
        /// The command.
        command: String,
        /// The cause.
        source: Box<rmcp::service::ClientInitializeError>,
        /// The last lines of its stderr.
        tail: Vec<String>,
    },
    /// An HTTP endpoint did not complete the handshake.
    #[error("upstream `{spec}` did not complete the MCP handshake: {source}")]
    HttpHandshake {
        /// The upstream (its token left out).
        spec: String,
        /// The cause.
        source: Box<rmcp::service::ClientInitializeError>,
    },
    /// The server did not list its tools.
    #[error("upstream `{spec}` did not list its tools: {source}")]
    ListTools {
        /// The upstream (its token left out).
        spec: String,
        /// The cause.
        source: Box<rmcp::ServiceError>,
    },
}

impl gauntlet_model::Classified for UpstreamError {
    fn kind(&self) -> gauntlet_model::ErrorKind {
        match self {
            UpstreamError::NoCommand(_)
            | UpstreamError::UnsetVariable { .. }
            | UpstreamError::NotAnUpstream(_) => gauntlet_model::ErrorKind::InvalidInput,
            UpstreamError::StartTimeout { .. }
            | UpstreamError::Spawn { .. }
            | UpstreamError::Stopping
            | UpstreamError::CommandHandshake { .. }
            | UpstreamError::HttpHandshake { .. }
            | UpstreamError::ListTools { .. } => gauntlet_model::ErrorKind::Harness,
        }
    }
}

/// One `--upstream`: `[NAME=]cmd:COMMAND` or `[NAME=]http(s)://HOST/PATH[#bearer=TOKEN]`
/// (`#bearer=$VAR` reads the token from the environment).
#[derive(Debug, Clone, PartialEq)]
pub struct UpstreamSpec {
    /// The tool-name prefix when there are several upstreams (else the server's own name).
    pub name: Option<String>,
    /// Where it is.
    pub target: Target,
    /// A command's working folder, also given as `$GAUNTLET_DIR` (a service world's trial
    /// folder).
    pub dir: Option<std::path::PathBuf>,
    /// A program line that runs the command sandboxed (bubblewrap's), when it is to be.
    pub wrapper: Vec<std::ffi::OsString>,
    /// Whether a command's standard error is echoed on gauntlet's (prefixed `[upstream NAME]`);
    /// else it is discarded.
    pub echo_stderr: bool,
}

/// How an upstream is reached.
#[derive(Debug, Clone, PartialEq)]
pub enum Target {
    /// A command run with `sh -c`, speaking MCP on its stdin and stdout.
    Command(String),
    /// A streamable HTTP endpoint, with its bearer token if any.
    Http {
        /// The endpoint.
        url: String,
        /// `Authorization: Bearer` value.
        token: Option<String>,
    },
}

impl FromStr for UpstreamSpec {
    type Err = UpstreamError;

    fn from_str(s: &str) -> Result<UpstreamSpec, UpstreamError> {
        let (name, rest) = match s.split_once('=') {
            Some((n, r))
                if !n.is_empty()
                    && n.chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
                    && (r.starts_with("cmd:") || r.starts_with("http")) =>
            {
                (Some(n.to_owned()), r)
            }
            _ => (None, s),
        };
        let target = if let Some(cmd) = rest.strip_prefix("cmd:") {
            if cmd.trim().is_empty() {
                return Err(UpstreamError::NoCommand(s.to_owned()));
            }
            Target::Command(cmd.to_owned())
        } else if rest.starts_with("http://") || rest.starts_with("https://") {
            let (url, token) = match rest.split_once("#bearer=") {
                Some((u, t)) => {
                    let token = match t.strip_prefix('$') {
                        Some(var) => {
                            std::env::var(var).map_err(|_| UpstreamError::UnsetVariable {
                                spec: s.to_owned(),
                                variable: var.to_owned(),
                            })?
                        }
                        None => t.to_owned(),
                    };
                    (u.to_owned(), Some(token))
                }
                None => (rest.to_owned(), None),
            };
            Target::Http { url, token }
        } else {
            return Err(UpstreamError::NotAnUpstream(s.to_owned()));
        };
        Ok(UpstreamSpec {
            name,
            target,
            dir: None,
            wrapper: Vec::new(),
            echo_stderr: true,
        })
    }
}

impl std::fmt::Display for UpstreamSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if let Some(n) = &self.name {
            write!(f, "{n}=")?;
        }
        match &self.target {
            Target::Command(c) => write!(f, "cmd:{c}"),
            Target::Http { url, .. } => write!(f, "{url}"),
        }
    }
}

/// A connected upstream: its client, its tools, and the process group it runs in.
pub struct Upstream {
    /// The server's name (`serverInfo.name`), or the spec's.
    pub name: String,
    /// Its tools, as it lists them.
    pub tools: Vec<Tool>,
    service: Option<RunningService<RoleClient, ()>>,
    /// The process group of a command upstream (its leader's pid).
    group: Option<i32>,
    /// A command upstream's process and the relay on its pipes.
    child: Option<Child>,
}

/// A command upstream's process and the relay on its pipes.
struct Child {
    process: Box<dyn process_wrap::tokio::ChildWrapper>,
    relay: Arc<Relay>,
    /// Whether calls may take the relay (the server's protocol version allows it).
    relayed: bool,
}

impl Drop for Child {
    /// Killed with its group, as a rule; this reaches a server that left it (tokio reaps it).
    fn drop(&mut self) {
        let _ = self.process.start_kill();
    }
}

impl Upstream {
    /// Starts or reaches the upstream and lists its tools, within `timeout`.
    pub async fn connect(
        spec: &UpstreamSpec,
        timeout: Duration,
    ) -> Result<Upstream, UpstreamError> {
        let started = tokio::time::timeout(timeout, Self::start(spec)).await;
        match started {
            Ok(r) => r,
            Err(_) => Err(UpstreamError::StartTimeout {
                spec: spec.to_string(),
                timeout,
            }),
        }
    }

    async fn start(spec: &UpstreamSpec) -> Result<Upstream, UpstreamError> {
        let mut child = None;
        let (service, group) = match &spec.target {
            Target::Command(command) => {
                let mut cmd = match spec.wrapper.split_first() {
                    Some((program, args)) => {
                        let mut c = tokio::process::Command::new(program);
                        c.args(args).arg("sh");
                        c
                    }
                    None => tokio::process::Command::new("sh"),
                };
                cmd.arg("-c").arg(with_exec(command));
                // The LLM upstream's key is gauntlet's, not the tool server's.
                cmd.env_remove("GAUNTLET_UPSTREAM_API_KEY")
                    .env_remove("OPENAI_API_KEY");
                if let Some(dir) = &spec.dir {
                    cmd.current_dir(dir).env("GAUNTLET_DIR", dir);
                }
                // Should the proxy itself be killed (SIGKILL, no clean-up), the server goes
                // with it; and its stdin closes, which ends the MCP servers it may have started.
                // SAFETY: prctl is async-signal-safe and touches only the child.
                unsafe {
                    cmd.pre_exec(|| {
                        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                        Ok(())
                    });
                }
                cmd.stdin(Stdio::piped())
                    .stdout(Stdio::piped())
                    .stderr(Stdio::piped());
                let mut wrap = process_wrap::tokio::CommandWrap::from(cmd);
                wrap.wrap(process_wrap::tokio::ProcessGroup::leader());
                let spawn_error = |source| UpstreamError::Spawn {
                    spec: spec.to_string(),
                    source,
                };
                let mut process = wrap.spawn().map_err(spawn_error)?;
                let group = process.id().map(|p| p as i32);
                let (Some(stdin), Some(stdout)) = (
                    process.inner_mut().stdin().take(),
                    process.inner_mut().stdout().take(),
                ) else {
                    return Err(spawn_error(std::io::Error::other(
                        "its pipes were not made",
                    )));
                };
                let stderr = process.inner_mut().stderr().take();
                // Forwarded calls go through the relay; the client has every other message.
                let (relay, transport) = crate::relay::split(stdin, stdout);
                child = Some(Child {
                    process,
                    relay,
                    relayed: false,
                });
                if let Some(g) = group
                    && !register(g)
                {
                    return Err(UpstreamError::Stopping);
                }
                // The last lines of its stderr are kept (and echoed when asked): a server that
                // dies at start says why there.
                let tail = std::sync::Arc::new(std::sync::Mutex::new(StderrTail::default()));
                if let Some(stderr) = stderr {
                    let label = spec.name.clone().unwrap_or_else(|| command_label(command));
                    let echo = spec.echo_stderr;
                    let tail = tail.clone();
                    tokio::spawn(async move {
                        let mut lines = tokio::io::BufReader::new(stderr).lines();
                        while let Ok(Some(line)) = lines.next_line().await {
                            if echo {
                                eprintln!("[upstream {label}] {line}");
                            }
                            tail.lock().unwrap_or_else(|p| p.into_inner()).push(line);
                        }
                    });
                }
                let service = ().serve(transport).await;
                let service = match service {
                    Ok(s) => Ok(s),
                    Err(e) => {
                        // Let the reader take what the dying server wrote last.
                        tokio::time::sleep(Duration::from_millis(100)).await;
                        let tail = tail.lock().unwrap_or_else(|p| p.into_inner()).lines();
                        Err(UpstreamError::CommandHandshake {
                            command: command.clone(),
                            source: Box::new(e),
                            tail,
                        })
                    }
                };
                if service.is_err()
                    && let Some(g) = group
                {
                    kill_group(g);
                }
                (service?, group)
            }
            Target::Http { url, token } => {
                let mut config = StreamableHttpClientTransportConfig::with_uri(url.as_str());
                if let Some(t) = token {
                    config = config.auth_header(t.clone());
                }
                let transport = rmcp::transport::StreamableHttpClientTransport::from_config(config);
                let service =
                    ().serve(transport)
                        .await
                        .map_err(|source| UpstreamError::HttpHandshake {
                            spec: spec.to_string(),
                            source: Box::new(source),
                        })?;
                (service, None)
            }
        };
        let tools = match service.peer().list_all_tools().await {
            Ok(t) => t,
            Err(e) => {
                if let Some(g) = group {
                    kill_group(g);
                }
                return Err(UpstreamError::ListTools {
                    spec: spec.to_string(),
                    source: Box::new(e),
                });
            }
        };
        // The relay hands answers over as they came, where the client and rmcp's server would
        // reshape them by protocol version from 2026-07-28 on: it serves older versions only.
        let legacy = service.peer_info().is_some_and(|i| {
            i.protocol_version.as_str() < rmcp::model::ProtocolVersion::V_2026_07_28.as_str()
        });
        if let Some(c) = child.as_mut() {
            c.relayed = legacy;
        }
        let name = spec.name.clone().unwrap_or_else(|| {
            service
                .peer_info()
                .and_then(|i| i.server_info.as_ref().map(|s| sanitize(&s.name)))
                .filter(|n| !n.is_empty())
                .unwrap_or_else(|| "upstream".to_owned())
        });
        Ok(Upstream {
            name,
            tools,
            service: Some(service),
            group,
            child,
        })
    }

    /// A handle to call tools with, usable while the upstream lives.
    pub fn peer(&self) -> Option<Peer<RoleClient>> {
        self.service.as_ref().map(|s| s.peer().clone())
    }

    /// The byte relay to a command upstream, for calls forwarded as they came; `None` for an
    /// HTTP upstream, or one on protocol version 2026-07-28 or later.
    pub fn relay(&self) -> Option<Arc<Relay>> {
        self.child
            .as_ref()
            .filter(|c| c.relayed)
            .map(|c| Arc::clone(&c.relay))
    }

    /// Stops the upstream: the client closes, and a command's whole process group is killed.
    pub fn stop(&mut self) {
        if let Some(g) = self.group.take() {
            kill_group(g);
        }
        if let Some(s) = self.service.take() {
            s.cancellation_token().cancel();
        }
        self.child.take();
    }
}

impl Drop for Upstream {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Calls one tool, within `timeout`.
pub async fn call(
    peer: &Peer<RoleClient>,
    tool: &str,
    arguments: serde_json::Map<String, serde_json::Value>,
    timeout: Duration,
) -> Result<CallToolResult, CallFailure> {
    let params = CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments);
    match tokio::time::timeout(timeout, peer.call_tool(params)).await {
        Err(_) => Err(CallFailure::Timeout(timeout)),
        Ok(Err(e)) => Err(CallFailure::Broken(e.to_string())),
        Ok(Ok(r)) => Ok(r),
    }
}

/// What an upstream's answer is in the trajectory: its structured content, else its text
/// (parsed when it is JSON; a list when there are several), else the content blocks; an
/// `isError` answer is a tool error with its text.
pub fn outcome_of(reply: &CallToolResult) -> Result<serde_json::Value, gauntlet_model::ToolError> {
    let texts: Vec<&str> = reply
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.as_str()))
        .collect();
    if reply.is_error == Some(true) {
        return Err(gauntlet_model::ToolError {
            status: 400,
            message: if texts.is_empty() {
                "the tool reported an error".to_owned()
            } else {
                texts.join("\n")
            },
            retry_after_s: None,
        });
    }
    if let Some(s) = &reply.structured_content {
        return Ok(s.clone());
    }
    if texts.len() == reply.content.len() {
        return Ok(match texts.as_slice() {
            [one] => serde_json::from_str(one)
                .unwrap_or_else(|_| serde_json::Value::String((*one).to_owned())),
            many => serde_json::Value::Array(many.iter().map(|t| serde_json::json!(t)).collect()),
        });
    }
    Ok(serde_json::to_value(&reply.content).unwrap_or(serde_json::Value::Null))
}

/// The process groups of the command upstreams running now, and whether gauntlet is stopping
/// (then a server that starts is killed at once).
struct Live {
    stopping: bool,
    groups: Vec<i32>,
}

static LIVE: std::sync::Mutex<Live> = std::sync::Mutex::new(Live {
    stopping: false,
    groups: Vec::new(),
});

fn live() -> std::sync::MutexGuard<'static, Live> {
    LIVE.lock().unwrap_or_else(|p| p.into_inner())
}

/// Counts a started server's group as running; `false` (and the group killed) when gauntlet is
/// stopping.
fn register(group: i32) -> bool {
    let mut l = live();
    if l.stopping {
        drop(l);
        signal_group(group);
        return false;
    }
    l.groups.push(group);
    true
}

/// Kills every command upstream this process started and has not stopped, and any it starts
/// from now on (on SIGINT or SIGTERM, before exiting: a sandboxed server's parent-death signal
/// does not reach it through bubblewrap).
pub fn kill_all() -> usize {
    let groups = {
        let mut l = live();
        l.stopping = true;
        std::mem::take(&mut l.groups)
    };
    for g in &groups {
        signal_group(*g);
    }
    groups.len()
}

/// SIGKILL to a process group (a command upstream and everything it started).
fn kill_group(group: i32) {
    live().groups.retain(|g| *g != group);
    signal_group(group);
}

fn signal_group(group: i32) {
    if group > 1 {
        // SAFETY: killpg only sends a signal; the group is one this process created.
        unsafe {
            libc::killpg(group, libc::SIGKILL);
        }
    }
}

/// A short label for a command's log lines: its last word that is not an option.
/// The command for `sh -c`, as written: environment assignments (`FOO=1 server`) and shell
/// operators (`cd dir && server`) work. A simple command is `exec`'d (after its assignments),
/// so the server itself is the process that dies with gauntlet (`PR_SET_PDEATHSIG` is set on
/// the shell, and survives `exec`); a compound one runs under the shell, and its server ends
/// when its stdin closes.
fn with_exec(command: &str) -> String {
    if compound(command) {
        return command.to_owned();
    }
    let mut rest = command.trim_start();
    let mut assignments = String::new();
    loop {
        let word_end = rest.find(char::is_whitespace).unwrap_or(rest.len());
        let word = &rest[..word_end];
        let is_assignment = word.split_once('=').is_some_and(|(name, _)| {
            !name.is_empty()
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                && !name.starts_with(|c: char| c.is_ascii_digit())
        });
        if !is_assignment || word_end == rest.len() {
            break;
        }
        if word.contains(['\'', '"', '\\']) {
            // A quoted value may hold spaces: not split here.
            return command.to_owned();
        }
        assignments.push_str(word);
        assignments.push(' ');
        rest = rest[word_end..].trim_start();
    }
    let first = rest.split_whitespace().next().unwrap_or_default();
    if first.is_empty() || ["cd", "exec", "if", "for", "while", "case"].contains(&first) {
        return command.to_owned();
    }
    format!("{assignments}exec {rest}")
}

/// Whether a shell command has an operator (`;`, `&&`, `|`, a redirection, a subshell) outside
/// its quotes: then it is not one simple command to `exec`.
fn compound(command: &str) -> bool {
    let mut quote = None;
    let mut escaped = false;
    for c in command.chars() {
        match (quote, c) {
            (_, _) if escaped => escaped = false,
            (Some('\''), '\'') | (Some('"'), '"') => quote = None,
            (Some('\''), _) => {}
            (_, '\\') => escaped = true,
            (Some('"'), '`' | '$') => return true,
            (Some(_), _) => {}
            (None, '\'' | '"') => quote = Some(c),
            (None, ';' | '&' | '|' | '\n' | '(' | ')' | '`' | '<' | '>' | '{' | '}') => {
                return true;
            }
            (None, _) => {}
        }
    }
    false
}

/// The last lines a command wrote on stderr.
#[derive(Default)]
struct StderrTail(std::collections::VecDeque<String>);

impl StderrTail {
    const LINES: usize = 10;
    const LINE_BYTES: usize = 500;

    fn push(&mut self, mut line: String) {
        if line.len() > Self::LINE_BYTES {
            let mut end = Self::LINE_BYTES;
            while !line.is_char_boundary(end) {
                end -= 1;
            }
            line.truncate(end);
            line.push('…');
        }
        if self.0.len() == Self::LINES {
            self.0.pop_front();
        }
        self.0.push_back(line);
    }

    fn lines(&self) -> Vec<String> {
        self.0.iter().cloned().collect()
    }
}

/// Why a command upstream did not start: the command, the last lines of its stderr, and what
/// to install when its program is not on `PATH`.
fn start_failure(command: &str, error: &str, tail: &[String]) -> String {
    let mut message =
        format!("the MCP server `{command}` did not complete the MCP handshake: {error}");
    if let Some(program) = missing_program(command) {
        message.push_str(&format!(
            "\n`{program}` is not on PATH: install it (for a Python server, `pip install {program}`; for an npm one, `npm install -g` its package) or give its full path"
        ));
    }
    if let Some(module) = tail.iter().find_map(|l| {
        l.split_once("No module named ")
            .map(|(_, m)| m.trim_matches(['\'', '"', ' ']).to_owned())
    }) {
        let package = module
            .split('.')
            .next()
            .unwrap_or(&module)
            .replace('_', "-");
        message.push_str(&format!(
            "\nPython has no module `{module}`: install its package (`pip install {package}`, or the name its server documents)"
        ));
    }
    if tail.is_empty() {
        message.push_str("\nit wrote nothing on stderr");
    } else {
        message.push_str("\nthe last lines of its stderr:");
        for line in tail {
            message.push_str("\n  ");
            message.push_str(line);
        }
    }
    message
}

/// The program a shell command starts first, when it is not on `PATH` (nor a file).
fn missing_program(command: &str) -> Option<String> {
    let words = shlex::split(command)?;
    let program = words
        .iter()
        .find(|w| !(w.contains('=') && !w.starts_with('=') && !w.contains('/')))?;
    if ["cd", "exec", "env", "sh", "bash"].contains(&program.as_str())
        || program.contains(['&', '|', ';', '$', '('])
    {
        return None;
    }
    if program.contains('/') {
        return (!std::path::Path::new(program).exists()).then(|| program.clone());
    }
    let on_path = std::env::var_os("PATH")
        .is_some_and(|paths| std::env::split_paths(&paths).any(|p| p.join(program).is_file()));
    (!on_path).then(|| program.clone())
}

fn command_label(command: &str) -> String {
    command
        .split_whitespace()
        .rev()
        .find(|w| !w.starts_with('-'))
        .map(|w| w.rsplit('/').next().unwrap_or(w).to_owned())
        .unwrap_or_else(|| "command".to_owned())
}

/// A name fit for a tool prefix: letters, digits, `_` and `-`.
pub fn sanitize(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '-'
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Regression: `cmd:FOO=1 python3 server.py` and `cmd:cd dir && …` failed, the command
    /// being `exec`'d whole. Each runs as a shell reads it.
    #[test]
    fn upstream_commands_run_as_the_shell_reads_them() {
        assert_eq!(with_exec("python3 server.py"), "exec python3 server.py");
        assert_eq!(
            with_exec("FOO=1 python3 server.py"),
            "FOO=1 exec python3 server.py"
        );
        assert_eq!(with_exec("cd dir && node s.js"), "cd dir && node s.js");
        assert_eq!(with_exec("FOO='a b' node s.js"), "FOO='a b' node s.js");
        assert_eq!(with_exec("exec node s.js"), "exec node s.js");
        assert_eq!(
            with_exec("sh -c 'python3 s.py; sleep 30'"),
            "exec sh -c 'python3 s.py; sleep 30'"
        );
        for (command, want) in [
            ("FOO=hello; echo $FOO", "hello"),
            ("FOO=1 sh -c 'echo $FOO'", "1"),
            ("cd / && pwd", "/"),
            ("X=1 Y=2 env", "X=1"),
        ] {
            let out = std::process::Command::new("sh")
                .args(["-c", &with_exec(command)])
                .output()
                .unwrap();
            let text = String::from_utf8_lossy(&out.stdout);
            assert!(text.contains(want), "{command}: {text}");
        }
    }

    #[test]
    fn upstream_specs_parse() {
        let s: UpstreamSpec = "cmd:npx -y server --root=/tmp".parse().unwrap();
        assert_eq!(s.name, None);
        assert_eq!(
            s.target,
            Target::Command("npx -y server --root=/tmp".into())
        );
        let s: UpstreamSpec = "fs=cmd:node fs.js".parse().unwrap();
        assert_eq!(s.name.as_deref(), Some("fs"));
        let s: UpstreamSpec = "http://127.0.0.1:9/mcp#bearer=abc".parse().unwrap();
        assert_eq!(
            s.target,
            Target::Http {
                url: "http://127.0.0.1:9/mcp".into(),
                token: Some("abc".into())
            }
        );
        assert!("ftp://x".parse::<UpstreamSpec>().is_err());
        assert!("cmd:  ".parse::<UpstreamSpec>().is_err());
        assert!(
            "http://x#bearer=$GAUNTLET_SURELY_UNSET_VAR"
                .parse::<UpstreamSpec>()
                .unwrap_err()
                .to_string()
                .contains("GAUNTLET_SURELY_UNSET_VAR")
        );
    }
}
