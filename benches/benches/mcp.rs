//! What the harness adds to an agent's time: the round trip of one MCP tool call over streamable
//! HTTP (p50, p99 over 2,000 sequential calls), and starting plus stopping a trial's MCP server.
//! Run: cargo bench -p gauntlet-bench --bench mcp

use std::time::Instant;

use common::{example_suite, lookup_env, percentiles, runtime};
use gauntlet_agent::mcp::{new_token, serve_http};
use serde_json::{Value, json};

mod common;

async fn post(
    client: &reqwest::Client,
    url: &str,
    token: &str,
    session: Option<&str>,
    body: Value,
) -> (Option<String>, String) {
    let mut req = client
        .post(url)
        .bearer_auth(token)
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2025-03-26")
        .json(&body);
    if let Some(s) = session {
        req = req.header("mcp-session-id", s);
    }
    let resp = req.send().await.expect("request");
    let sid = resp
        .headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    (sid, resp.text().await.unwrap_or_default())
}

fn main() {
    let suite = example_suite();
    runtime().block_on(async {
        let server = serve_http(lookup_env(&suite, Vec::new()), "127.0.0.1:0".parse().unwrap(), new_token()).await.expect("server");
        let client = reqwest::Client::new();
        let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-03-26", "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}}});
        // The world's server keeps no sessions (a server that does would name one here).
        let (sid, _) = post(&client, &server.url, &server.token, None, init).await;
        let sid = sid.as_deref();
        post(&client, &server.url, &server.token, sid, json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).await;
        let mut rtts = Vec::new();
        for i in 1..=2000 {
            let call = json!({"jsonrpc": "2.0", "id": i, "method": "tools/call",
                "params": {"name": "get_incident", "arguments": {"incident_id": "INC-004218"}}});
            let t = Instant::now();
            let (_, body) = post(&client, &server.url, &server.token, sid, call).await;
            rtts.push(t.elapsed().as_secs_f64() * 1e6);
            assert!(body.contains("Search index lagging"), "{body}");
        }
        let (p50, p99) = percentiles(rtts);
        println!("MCP tool call over streamable HTTP, round trip on loopback: p50 {p50:.0} µs, p99 {p99:.0} µs (2,000 calls)");
        server.shutdown().await;
        let mut starts = Vec::new();
        for _ in 0..200 {
            let t = Instant::now();
            let s = serve_http(lookup_env(&suite, Vec::new()), "127.0.0.1:0".parse().unwrap(), new_token()).await.expect("server");
            s.shutdown().await;
            starts.push(t.elapsed().as_secs_f64() * 1e6);
        }
        let (p50, p99) = percentiles(starts);
        println!("trial start and stop of the MCP server: p50 {p50:.0} µs, p99 {p99:.0} µs (200 trials)");
    });
}
