//! What the harness adds to an agent's time: the round trip of one MCP tool call over streamable
//! HTTP (p50, p99 over 2,000 sequential calls), and starting plus stopping a trial's MCP server.
//! Run: cargo bench -p gauntlet-bench --bench mcp

use std::path::Path;
use std::time::Instant;

use gauntlet_agent::mcp::{new_token, serve_http};
use gauntlet_agent::{SimulatedEnvironment, SimulatedUser};
use gauntlet_suite::Suite;
use gauntlet_world::{FaultPlan, Simulator};
use serde_json::{Value, json};
use statrs::statistics::{Data, OrderStatistics};

fn env(suite: &Suite) -> gauntlet_agent::SharedEnv {
    let lc = suite
        .cases
        .iter()
        .find(|c| c.case.case_id == "lookup-status")
        .expect("case");
    let w = suite.world_of(lc);
    let sim = Simulator::new(
        w.world.clone(),
        suite.initial_state(lc),
        w.world.spec().default_context.clone(),
        FaultPlan::default(),
    );
    SimulatedEnvironment::new(sim, SimulatedUser::scripted(None), &lc.case.user_input).shared()
}

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

fn percentiles(mut v: Vec<f64>) -> (f64, f64) {
    v.sort_by(f64::total_cmp);
    let mut d = Data::new(v);
    (d.percentile(50), d.percentile(99))
}

fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/incident-desk");
    let suite = Suite::load(&root).unwrap_or_else(|p| panic!("{p:?}"));
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        let server = serve_http(env(&suite), "127.0.0.1:0".parse().unwrap(), new_token()).await.expect("server");
        let client = reqwest::Client::new();
        let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-03-26", "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}}});
        let (sid, _) = post(&client, &server.url, &server.token, None, init).await;
        let sid = sid.expect("session id");
        post(&client, &server.url, &server.token, Some(&sid), json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).await;
        let mut rtts = Vec::new();
        for i in 1..=2000 {
            let call = json!({"jsonrpc": "2.0", "id": i, "method": "tools/call",
                "params": {"name": "get_incident", "arguments": {"incident_id": "INC-004218"}}});
            let t = Instant::now();
            let (_, body) = post(&client, &server.url, &server.token, Some(&sid), call).await;
            rtts.push(t.elapsed().as_secs_f64() * 1e6);
            assert!(body.contains("Search index lagging"), "{body}");
        }
        let (p50, p99) = percentiles(rtts);
        println!("MCP tool call over streamable HTTP, round trip on loopback: p50 {p50:.0} µs, p99 {p99:.0} µs (2,000 calls)");
        server.shutdown().await;
        let mut starts = Vec::new();
        for _ in 0..200 {
            let t = Instant::now();
            let s = serve_http(env(&suite), "127.0.0.1:0".parse().unwrap(), new_token()).await.expect("server");
            s.shutdown().await;
            starts.push(t.elapsed().as_secs_f64() * 1e6);
        }
        let (p50, p99) = percentiles(starts);
        println!("trial start and stop of the MCP server: p50 {p50:.0} µs, p99 {p99:.0} µs (200 trials)");
    });
}
