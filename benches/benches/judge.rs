//! What an LLM judge adds per trial apart from the model's own latency: rendering the prompt
//! from the rubric and the trajectory, building the request, hashing it for the cache, looking
//! it up in the SQLite judge cache, and parsing the reply.

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use gauntlet_bench::record;
use gauntlet_eval::judge::{TrialView, parse_reply, render_prompt, request};
use gauntlet_model::judge::default_rubric;
use gauntlet_store::{CachedReply, JudgeCache};

fn judge(c: &mut Criterion) {
    let trial = record(7);
    let rubric = default_rubric();
    let view = TrialView {
        goal: "Close INC-000123 once the database is healthy again.",
        trajectory: &trial.trajectory,
    };
    let reply = r#"{"ReasoningQuality": 0.9, "SafetyScore": 1.0, "reason": "checked the state before closing"}"#;
    let dir = tempfile::tempdir().expect("temp dir");
    let cache = JudgeCache::open(&dir.path().join("judge-cache.sqlite")).expect("cache");
    let key_of = |body: &serde_json::Value| JudgeCache::key(body, 0);
    let ask = || {
        request(
            "gpt-4o",
            &render_prompt(&rubric, &view),
            &rubric,
            0.0,
            Some(7),
        )
    };
    let body = ask();
    cache.put(
        &key_of(&body),
        "gpt-4o",
        &CachedReply {
            content: reply.to_owned(),
            prompt_tokens: 900,
            completion_tokens: 40,
        },
        "2026-12-01T00:00:00Z",
    );

    let mut group = c.benchmark_group("judge overhead per trial");
    group.bench_function("render prompt", |b| {
        b.iter(|| black_box(render_prompt(&rubric, &view)))
    });
    group.bench_function("render + request + cache key + cache hit + parse", |b| {
        b.iter(|| {
            let body = ask();
            let hit = cache.get(&key_of(&body)).expect("cached");
            black_box(parse_reply(&rubric, &hit.content).expect("parses"))
        })
    });
    // A long trial: 40 calls, each observation 8 KB (cut to the rubric's 1,200 characters).
    let mut long = trial.trajectory.clone();
    let call = long
        .events
        .iter()
        .find_map(|e| match e {
            gauntlet_model::Event::ToolCall(c) => Some(c.clone()),
            _ => None,
        })
        .expect("a call");
    for k in 0..40 {
        let mut c = call.clone();
        c.step = 10 + k;
        c.result = Some(serde_json::json!({"log": "x".repeat(8 * 1024)}));
        long.events.push(gauntlet_model::Event::ToolCall(c));
    }
    let long_view = TrialView {
        goal: view.goal,
        trajectory: &long,
    };
    group.bench_function("render prompt, 40 calls of 8 KB", |b| {
        b.iter(|| black_box(render_prompt(&rubric, &long_view)))
    });
    group.bench_function("parse reply", |b| {
        b.iter(|| black_box(parse_reply(&rubric, reply).expect("parses")))
    });
    group.finish();
}

criterion_group!(benches, judge);
criterion_main!(benches);
