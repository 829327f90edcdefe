//! One session over stdio, with forwarded reads relayed as bytes: the agent's lines are read
//! here, and a call of a forwarded read goes to its upstream as the line the MCP client would
//! have written, its answer back to the agent as the upstream wrote it (the id put back), and
//! then the call is recorded from the same bytes, as the typed path records it. Every other
//! message (the handshake, the tool list, writes, pings, anything this reader does not claim)
//! goes to the session's rmcp server ([`ShadowServer`]) as before.
//!
//! The relay is taken only where it changes nothing but the cost: a session with no faults and
//! no canary (whose calls the proxy may answer itself), an agent and an upstream that negotiated
//! a protocol version before 2026-07-28 (whose answers rmcp reshapes by version), a request
//! without protocol metadata in its `_meta`.

use std::borrow::Cow;
use std::io;
use std::sync::{Arc, OnceLock};

use gauntlet_services::relay::Relay;
use gauntlet_services::upstream::CallFailure;
use rmcp::model::{CallToolResult, ProtocolVersion, ServerResult};
use rmcp::service::ServiceError;
use serde_json::Value;
use serde_json::value::RawValue;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

use crate::proxy::{Begun, Proxy, Session};

/// Bytes in flight between the pipes and rmcp before the pump waits.
const PIPE_BUFFER: usize = 64 * 1024;

/// Standard output, one whole message at a time.
type Out = Arc<tokio::sync::Mutex<gauntlet_process::stdio::Output>>;

/// Serves one session over stdio until the client disconnects.
pub async fn serve_stdio(proxy: &Proxy) -> io::Result<()> {
    let server = proxy.session();
    let session = server.session();
    let (input, output, _blocking_again) = gauntlet_process::stdio::async_stdio();
    let out: Out = Arc::new(tokio::sync::Mutex::new(output));
    let (mut to_rmcp, rmcp_reads) = tokio::io::duplex(PIPE_BUFFER);
    let (rmcp_writes, from_rmcp) = tokio::io::duplex(PIPE_BUFFER);
    // Set once rmcp has the agent's `initialize`: whether its answers may be relayed.
    let relayable = Arc::new(OnceLock::new());
    let serving = {
        let relayable = Arc::clone(&relayable);
        async move {
            let running = rmcp::serve_server(server, (rmcp_reads, rmcp_writes))
                .await
                .map_err(|e| io::Error::other(e.to_string()))?;
            let legacy = running.peer().peer_info().is_some_and(|i| {
                i.protocol_version.as_str() < ProtocolVersion::V_2026_07_28.as_str()
            });
            let _ = relayable.set(legacy);
            running
                .waiting()
                .await
                .map_err(|e| io::Error::other(e.to_string()))?;
            Ok(())
        }
    };
    let answering = copy_lines(from_rmcp, Arc::clone(&out));
    let reading = async move {
        let mut lines = BufReader::new(input);
        let mut line = Vec::new();
        loop {
            line.clear();
            if lines.read_until(b'\n', &mut line).await? == 0 {
                break;
            }
            if relayable.get() == Some(&true)
                && let Some((call, relay)) = claim(&line, &session)
            {
                tokio::spawn(relay_call(
                    Arc::clone(&session),
                    relay,
                    call,
                    Arc::clone(&out),
                ));
                continue;
            }
            to_rmcp.write_all(&line).await?;
        }
        // Dropping `to_rmcp` ends rmcp's input: the session ends as the agent left.
        Ok::<(), io::Error>(())
    };
    let (read, served, _) = tokio::join!(reading, serving, answering);
    served.and(read)
}

/// A `tools/call` this reader took from rmcp.
struct Call {
    /// The agent's request id, as it wrote it.
    id: Box<RawValue>,
    /// The tool, as the agent calls it.
    name: String,
    /// A JSON object.
    arguments: Box<RawValue>,
    /// The request's `_meta`, when it has any.
    meta: Option<Value>,
}

/// The call a line makes, when it is a forwarded read this session may relay; `None` leaves
/// the line to rmcp (which also answers whatever is malformed, as it always has).
fn claim(line: &[u8], session: &Session) -> Option<(Call, Arc<Relay>)> {
    #[derive(serde::Deserialize)]
    struct Request<'a> {
        #[serde(borrow)]
        jsonrpc: Cow<'a, str>,
        #[serde(borrow)]
        id: &'a RawValue,
        #[serde(borrow)]
        method: Cow<'a, str>,
        #[serde(borrow)]
        params: Params<'a>,
    }
    #[derive(serde::Deserialize)]
    struct Params<'a> {
        #[serde(borrow)]
        name: Cow<'a, str>,
        #[serde(borrow, default)]
        arguments: Option<&'a RawValue>,
        #[serde(rename = "_meta", borrow, default)]
        meta: Option<&'a RawValue>,
    }
    // Most lines that are no call are refused before they are parsed.
    if !line.windows(10).any(|w| w == b"tools/call") {
        return None;
    }
    let r: Request<'_> = serde_json::from_slice(line).ok()?;
    if r.jsonrpc != "2.0" || r.method != "tools/call" {
        return None;
    }
    // An id rmcp takes: a string, or a whole number.
    let id = r.id.get();
    if !(id.starts_with('"') || (!id.is_empty() && id.bytes().all(|b| b.is_ascii_digit()))) {
        return None;
    }
    let arguments = match r.params.arguments {
        None => RawValue::from_string("{}".to_owned()).ok()?,
        Some(a) if a.get().starts_with('{') => a.to_owned(),
        Some(_) => return None,
    };
    let meta = match r.params.meta {
        None => None,
        Some(m) => {
            let v: Value = serde_json::from_str(m.get()).ok()?;
            let fields = v.as_object()?;
            // Protocol metadata (a version, per request) changes how rmcp answers.
            if fields
                .keys()
                .any(|k| k.starts_with("io.modelcontextprotocol/"))
            {
                return None;
            }
            (!fields.is_empty()).then_some(v)
        }
    };
    let relay = session.relay_for(&r.params.name)?;
    let call = Call {
        id: r.id.to_owned(),
        name: r.params.name.into_owned(),
        arguments,
        meta,
    };
    Some((call, relay))
}

/// Makes a claimed call: counted, routed and recorded by the session as any call is; a
/// forwarded one relayed, its answer sent before it is recorded.
async fn relay_call(session: Arc<Session>, relay: Arc<Relay>, call: Call, out: Out) {
    let args = serde_json::from_str(call.arguments.get()).unwrap_or_default();
    let reply = match session.begin(&call.name, args, call.meta).await {
        Begun::Answered(reply) => reply,
        Begun::Forward(f) => {
            let got = relay
                .call(&f.tool().name, &call.arguments, session.timeout())
                .await
                .and_then(
                    |raw| match serde_json::from_str::<CallToolResult>(raw.get()) {
                        Ok(typed) => Ok((raw, typed)),
                        Err(_) => Err(CallFailure::Broken(
                            ServiceError::UnexpectedResponse.to_string(),
                        )),
                    },
                );
            match got {
                Ok((raw, typed)) if !f.lost() => {
                    write_reply(&out, &call.id, Ok(raw.get())).await;
                    let _ = session.forwarded(f, Ok(typed));
                    return;
                }
                Ok((_, typed)) => session.forwarded(f, Ok(typed)),
                Err(failure) => session.forwarded(f, Err(failure)),
            }
        }
    };
    match reply {
        Ok(result) => {
            // As rmcp's server answers an agent on a version before 2026-07-28.
            let mut result = ServerResult::CallToolResult(result);
            result.strip_result_type_for_legacy_peer();
            result.strip_non_object_output_for_legacy_peer();
            let json = serde_json::to_string(&result).unwrap_or_default();
            write_reply(&out, &call.id, Ok(&json)).await;
        }
        Err(e) => {
            let json = serde_json::to_string(&e).unwrap_or_default();
            write_reply(&out, &call.id, Err(&json)).await;
        }
    }
}

/// Writes a JSON-RPC answer: a result, or an error, each already JSON.
async fn write_reply(out: &Out, id: &RawValue, reply: Result<&str, &str>) {
    let (key, body) = match reply {
        Ok(r) => ("result", r),
        Err(e) => ("error", e),
    };
    let mut line = Vec::with_capacity(40 + id.get().len() + body.len());
    line.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
    line.extend_from_slice(id.get().as_bytes());
    line.extend_from_slice(b",\"");
    line.extend_from_slice(key.as_bytes());
    line.extend_from_slice(b"\":");
    line.extend_from_slice(body.as_bytes());
    line.extend_from_slice(b"}\n");
    // The agent gone is the reader's to notice; the call is recorded all the same.
    let _ = write_line(out, &line).await;
}

async fn write_line(out: &Out, line: &[u8]) -> io::Result<()> {
    let mut out = out.lock().await;
    out.write_all(line).await?;
    out.flush().await
}

/// Copies rmcp's messages to standard output, each whole.
async fn copy_lines(from: impl tokio::io::AsyncRead + Unpin, out: Out) {
    let mut lines = gauntlet_process::stdio::Lines::new(from);
    while let Some(line) = lines.next().await {
        if write_line(&out, line).await.is_err() {
            break;
        }
    }
}
