//! The byte relay to a command upstream: a forwarded call goes to the server's standard input as
//! one line written here, and its answer is taken off the server's standard output as the bytes
//! it sent, beside the MCP client (rmcp) that has every other message on the same pipes. A typed
//! round trip through the client (a request and an answer encoded and decoded as rmcp's enums,
//! and four hand-offs between its tasks) was most of what a forwarded read cost the proxy.
//!
//! [`Relay`] is the handle callers use; [`split`] puts it between a child's pipes and the client.

use std::collections::HashMap;
use std::io::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use gauntlet_process::stdio::Lines;
use rmcp::service::ServiceError;
use serde_json::value::RawValue;
use tokio::io::{AsyncWriteExt, DuplexStream};
use tokio::process::{ChildStdin, ChildStdout};
use tokio::sync::oneshot;

/// Why a call did not get an answer.
#[derive(Debug)]
pub enum CallFailure {
    /// No answer within the time limit.
    Timeout(Duration),
    /// The upstream went away or broke the protocol.
    Broken(String),
}

/// The ids of relayed requests are strings with this prefix; the client's are numbers.
const ID_PREFIX: &str = "gauntlet-relay-";
/// The same, as the id's JSON starts.
const QUOTED_PREFIX: &str = "\"gauntlet-relay-";
/// Bytes in flight between the pipes and the client before the pump waits.
const PIPE_BUFFER: usize = 64 * 1024;

/// What a relayed call got: the `result` as the upstream wrote it, or its JSON-RPC error.
type Answer = Result<Box<RawValue>, rmcp::ErrorData>;

/// Relays `tools/call` requests to one command upstream and their answers back.
pub struct Relay {
    /// The server's standard input, shared with the client's writes (one line at a time);
    /// `None` once the client has closed it.
    stdin: tokio::sync::Mutex<Option<ChildStdin>>,
    waiting: Mutex<Waiting>,
    next: AtomicU64,
}

#[derive(Default)]
struct Waiting {
    /// The server's output ended: no answer will come.
    closed: bool,
    calls: HashMap<u64, oneshot::Sender<Answer>>,
}

impl Relay {
    /// Calls `tool` with `arguments` (a JSON object, as the agent sent it), within `timeout`:
    /// the request the client would have sent, and the answer's `result` as it came. The
    /// failures are the client's: a JSON-RPC error, or the server gone, is
    /// [`CallFailure::Broken`] with the words the client uses.
    pub async fn call(
        &self,
        tool: &str,
        arguments: &RawValue,
        timeout: Duration,
    ) -> Result<Box<RawValue>, CallFailure> {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        {
            let mut w = lock(&self.waiting);
            if w.closed {
                return Err(closed());
            }
            w.calls.insert(n, tx);
        }
        let mut line = Vec::with_capacity(96 + tool.len() + arguments.get().len());
        let name = serde_json::to_string(tool).unwrap_or_default();
        let _ = writeln!(
            line,
            r#"{{"jsonrpc":"2.0","id":"{ID_PREFIX}{n}","method":"tools/call","params":{{"name":{name},"arguments":{}}}}}"#,
            arguments.get()
        );
        let answered = async {
            self.write(&line)
                .await
                .map_err(|e| CallFailure::Broken(format!("Transport send error: {e}")))?;
            match rx.await {
                Ok(Ok(result)) => Ok(result),
                Ok(Err(e)) => Err(CallFailure::Broken(ServiceError::McpError(e).to_string())),
                Err(_) => Err(closed()),
            }
        };
        let got = tokio::time::timeout(timeout, answered).await;
        let got = got.unwrap_or(Err(CallFailure::Timeout(timeout)));
        if got.is_err() {
            lock(&self.waiting).calls.remove(&n);
        }
        got
    }

    /// Writes one whole line to the server.
    async fn write(&self, line: &[u8]) -> std::io::Result<()> {
        let mut stdin = self.stdin.lock().await;
        let Some(pipe) = stdin.as_mut() else {
            return Err(std::io::Error::new(
                std::io::ErrorKind::NotConnected,
                "Transport is closed",
            ));
        };
        pipe.write_all(line).await
    }

    /// Hands a line of the server's output to the relayed call it answers; false when it
    /// answers none (it is the client's).
    fn answer(&self, line: &[u8]) -> bool {
        #[derive(serde::Deserialize)]
        struct Peek<'a> {
            #[serde(borrow)]
            id: Option<&'a RawValue>,
            #[serde(borrow)]
            result: Option<&'a RawValue>,
            error: Option<rmcp::ErrorData>,
        }
        // Cheap refusals first: most lines the client's are not ours.
        let text = String::from_utf8_lossy(line);
        if !text.contains(ID_PREFIX) {
            return false;
        }
        let Ok(peek) = serde_json::from_str::<Peek<'_>>(&text) else {
            return false;
        };
        let Some(n) = peek
            .id
            .and_then(|id| id.get().strip_prefix(QUOTED_PREFIX))
            .and_then(|rest| rest.strip_suffix('"'))
            .and_then(|n| n.parse::<u64>().ok())
        else {
            return false;
        };
        let answer = match (peek.result, peek.error) {
            (_, Some(e)) => Err(e),
            (Some(r), None) => Ok(r.to_owned()),
            (None, None) => return false,
        };
        // A call that timed out is no longer waiting; its late answer is dropped.
        if let Some(tx) = lock(&self.waiting).calls.remove(&n) {
            let _ = tx.send(answer);
        }
        true
    }

    /// The server's output ended: every call waiting fails as the client's would.
    fn close(&self) {
        let mut w = lock(&self.waiting);
        w.closed = true;
        w.calls.clear();
    }
}

fn closed() -> CallFailure {
    CallFailure::Broken(ServiceError::TransportClosed.to_string())
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Puts a relay between a child's pipes and an MCP client: the client reads the server's lines
/// that answer no relayed call, and what it writes reaches the server a whole line at a time.
/// Returns the relay and the client's ends (what it reads, what it writes).
pub fn split(stdin: ChildStdin, stdout: ChildStdout) -> (Arc<Relay>, (DuplexStream, DuplexStream)) {
    let relay = Arc::new(Relay {
        stdin: tokio::sync::Mutex::new(Some(stdin)),
        waiting: Mutex::new(Waiting::default()),
        next: AtomicU64::new(0),
    });
    let (mut to_client, client_reads) = tokio::io::duplex(PIPE_BUFFER);
    let (client_writes, from_client) = tokio::io::duplex(PIPE_BUFFER);
    let out = Arc::clone(&relay);
    tokio::spawn(async move {
        let mut lines = Lines::new(stdout);
        while let Some(line) = lines.next().await {
            if !out.answer(line) && to_client.write_all(line).await.is_err() {
                break;
            }
        }
        out.close();
        // Dropping `to_client` ends the client's input: it sees the server gone.
    });
    let into = Arc::clone(&relay);
    tokio::spawn(async move {
        let mut lines = Lines::new(from_client);
        while let Some(line) = lines.next().await {
            if into.write(line).await.is_err() {
                break;
            }
        }
        // The client closed its end (or the server's input broke): the server sees its input
        // end, as it would have with the client on the pipe.
        into.stdin.lock().await.take();
    });
    (relay, (client_reads, client_writes))
}

#[cfg(test)]
mod tests {
    use std::process::Stdio;
    use std::time::Duration;

    use serde_json::value::RawValue;
    use tokio::io::{AsyncBufReadExt, BufReader};

    use super::CallFailure;
    use super::split;

    /// A server played by `sh -c script`: the relay on its pipes, and the client's ends.
    fn server(
        script: &str,
    ) -> (
        tokio::process::Child,
        std::sync::Arc<super::Relay>,
        BufReader<tokio::io::DuplexStream>,
        tokio::io::DuplexStream,
    ) {
        let mut child = tokio::process::Command::new("sh")
            .args(["-c", script])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let (stdin, stdout) = (child.stdin.take().unwrap(), child.stdout.take().unwrap());
        let (relay, (reads, writes)) = split(stdin, stdout);
        (child, relay, BufReader::new(reads), writes)
    }

    fn args() -> Box<RawValue> {
        RawValue::from_string(r#"{"path": "a.txt"}"#.to_owned()).unwrap()
    }

    const SECOND: Duration = Duration::from_secs(1);

    #[tokio::test]
    async fn a_relayed_call_gets_its_result_as_it_came_and_the_client_every_other_line() {
        // The server says back the request it read (a line the client gets), then answers it.
        let (_child, relay, mut client, _writes) = server(
            r#"read -r line; printf '%s\n' "$line"; printf '%s\n' '{"jsonrpc":"2.0","id":"gauntlet-relay-0","result":{"content": [], "extra":1}}'; read -r rest"#,
        );
        let got = relay.call("read", &args(), 10 * SECOND).await.unwrap();
        assert_eq!(got.get(), r#"{"content": [], "extra":1}"#);
        let mut line = String::new();
        client.read_line(&mut line).await.unwrap();
        assert_eq!(
            line,
            "{\"jsonrpc\":\"2.0\",\"id\":\"gauntlet-relay-0\",\"method\":\"tools/call\",\"params\":{\"name\":\"read\",\"arguments\":{\"path\": \"a.txt\"}}}\n"
        );
    }

    #[tokio::test]
    async fn a_server_that_exits_mid_call_fails_it_as_the_client_would() {
        let (_child, relay, mut client, _writes) = server("read -r line; exit 3");
        let got = relay.call("read", &args(), 10 * SECOND).await;
        assert!(
            matches!(&got, Err(CallFailure::Broken(m)) if m == "Transport closed"),
            "{got:?}"
        );
        let mut line = String::new();
        assert_eq!(client.read_line(&mut line).await.unwrap(), 0, "{line}");
        let again = relay.call("read", &args(), 10 * SECOND).await;
        assert!(matches!(again, Err(CallFailure::Broken(_))), "{again:?}");
    }

    #[tokio::test]
    async fn a_json_rpc_error_is_the_clients_mcp_error() {
        let (_child, relay, _client, _writes) = server(
            r#"read -r line; printf '%s\n' '{"jsonrpc":"2.0","id":"gauntlet-relay-0","error":{"code":-32602,"message":"no such path"}}'; read -r rest"#,
        );
        let got = relay.call("read", &args(), 10 * SECOND).await;
        assert!(
            matches!(&got, Err(CallFailure::Broken(m)) if m.starts_with("Mcp error") && m.contains("no such path")),
            "{got:?}"
        );
    }

    #[tokio::test]
    async fn a_late_answer_is_dropped_not_handed_to_the_client() {
        let (_child, relay, mut client, _writes) = server(
            r#"read -r line; sleep 0.3; printf '%s\n' '{"jsonrpc":"2.0","id":"gauntlet-relay-0","result":{"content":[]}}' '{"jsonrpc":"2.0","method":"notifications/next"}'; read -r rest"#,
        );
        let got = relay.call("read", &args(), SECOND / 10).await;
        assert!(matches!(got, Err(CallFailure::Timeout(_))), "{got:?}");
        let mut line = String::new();
        client.read_line(&mut line).await.unwrap();
        assert_eq!(
            line,
            "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/next\"}\n"
        );
    }
}
