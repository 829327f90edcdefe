//! What the LLM gateway adds to an agent's model calls: the round trip of a chat completion
//! sent straight to an upstream and sent through the gateway (p50, p99 over 2,000 sequential
//! calls each, on loopback, the upstream answering at once), and the answer of an injected 429.
//! Run: cargo bench -p gauntlet-bench --bench gateway

use std::sync::Arc;
use std::time::Instant;

use common::{example_suite, lookup_env, percentiles, runtime};
use gauntlet_agent::gateway::{Gateway, GatewayConfig, Mode};
use gauntlet_model::{FaultKind, FaultSpec};
use serde_json::{Value, json};

mod common;

/// Round trips (µs) of `n` chat completions posted to `base`.
async fn round_trips(
    client: &reqwest::Client,
    base: &str,
    key: &str,
    body: &Value,
    n: usize,
) -> Vec<f64> {
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        let t = Instant::now();
        let resp = client
            .post(format!("{base}/chat/completions"))
            .bearer_auth(key)
            .json(body)
            .send()
            .await
            .expect("request");
        let status = resp.status();
        let _ = resp.bytes().await.expect("body");
        out.push(t.elapsed().as_secs_f64() * 1e6);
        assert!(status.is_success() || status.as_u16() == 429, "{status}");
    }
    out
}

fn main() {
    let suite = example_suite();
    runtime().block_on(async {
        // An upstream that answers every completion at once.
        let answer = json!({"id": "c", "object": "chat.completion", "created": 0, "model": "m",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": "INC-004218 is open."}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 120, "completion_tokens": 8, "total_tokens": 128}});
        let upstream = axum::Router::new().route(
            "/v1/chat/completions",
            axum::routing::post(move || {
                let a = answer.clone();
                async move { axum::Json(a) }
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        tokio::spawn(async move { axum::serve(listener, upstream).await.expect("serve") });
        let upstream_url = format!("http://{addr}/v1");
        let gateway = Arc::new(
            Gateway::start(GatewayConfig {
                upstream: Some(upstream_url.clone()),
                api_key: Some("sk-upstream".into()),
                mode: Mode::Live,
                prices: Default::default(),
            })
            .await
            .expect("gateway"),
        );
        let client = reqwest::Client::new();
        // A realistic request: a system prompt, a user turn and the world's tools (about 2 KB).
        let body = json!({"model": "m", "messages": [
            {"role": "system", "content": "You are a careful assistant acting through tools. ".repeat(10)},
            {"role": "user", "content": "What is the status of INC-004218?"}],
            "tools": suite.worlds.values().next().map(|w| w.world.spec().tools.iter().map(|t| json!({
                "type": "function", "function": {"name": t.name, "description": t.description, "parameters": t.parameters}})).collect::<Vec<_>>())});
        let n = 2000;
        round_trips(&client, &upstream_url, "sk-upstream", &body, 100).await;
        let (d50, d99) = percentiles(round_trips(&client, &upstream_url, "sk-upstream", &body, n).await);
        let trial = gateway.register(gauntlet_agent::recorder(&lookup_env(&suite, Vec::new())), "lookup-status", 0);
        round_trips(&client, &trial.base_url, &trial.key, &body, 100).await;
        let (g50, g99) = percentiles(round_trips(&client, &trial.base_url, &trial.key, &body, n).await);
        println!(
            "chat completion straight to the upstream: p50 {d50:.0} µs, p99 {d99:.0} µs; through the gateway: p50 {g50:.0} µs, p99 {g99:.0} µs; added: p50 {:.0} µs, p99 {:.0} µs ({n} calls, {} B requests)",
            g50 - d50,
            g99 - d99,
            body.to_string().len()
        );
        let every_call = FaultSpec {
            tool: None,
            on: None,
            calls: Vec::new(),
            probability: None,
            kind: FaultKind::RateLimited,
            retry_after_s: Some(1.0),
            model: true,
        };
        let faulted = gateway.register(gauntlet_agent::recorder(&lookup_env(&suite, vec![every_call])), "lookup-status", 0);
        let (f50, f99) = percentiles(round_trips(&client, &faulted.base_url, &faulted.key, &body, n).await);
        println!("injected 429 answered by the gateway: p50 {f50:.0} µs, p99 {f99:.0} µs ({n} calls)");
    });
}
