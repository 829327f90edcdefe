//! Offline scoring throughput: read recorded trials from JSON Lines and run every deterministic
//! evaluator (the cases use constraints, order, a reference with agentevals matching, BFCL
//! expected calls and canaries), on one core, against reading the same JSON without scoring (the
//! floor we measure against).

use std::collections::HashMap;
use std::hint::black_box;
use std::io::Write;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use gauntlet_bench::{cases, corpus};
use gauntlet_store::read_trajectories;

const TRAJECTORIES: usize = 100_000;

fn scoring(c: &mut Criterion) {
    let bytes = corpus(TRAJECTORIES);
    let mut file = tempfile::NamedTempFile::new().expect("temp file");
    file.write_all(&bytes).expect("write corpus");
    let path = file.path().to_owned();
    let cases = cases();
    let by_id: HashMap<&str, _> = cases.iter().map(|c| (c.case_id.as_str(), c)).collect();

    let mut group = c.benchmark_group(format!("offline scoring, {TRAJECTORIES} trajectories"));
    group.sample_size(10);
    group.throughput(Throughput::Bytes(bytes.len() as u64));
    group.bench_function("read + parse only (serde_json::Value)", |b| {
        b.iter(|| {
            let text = std::fs::read(&path).expect("read");
            let mut n = 0;
            for v in serde_json::Deserializer::from_slice(&text).into_iter::<serde_json::Value>() {
                black_box(v.expect("json"));
                n += 1;
            }
            assert_eq!(n, TRAJECTORIES);
        })
    });
    group.bench_function("read + parse + every evaluator", |b| {
        b.iter(|| {
            let mut n = 0;
            for t in read_trajectories(&path).expect("open") {
                let t = t.expect("trial");
                let case = by_id[t.case_id.as_str()];
                black_box(gauntlet_eval::evaluate(case, &t.trajectory, &t.final_state));
                n += 1;
            }
            assert_eq!(n, TRAJECTORIES);
        })
    });
    group.finish();

    // The run metrics of as many trials, tallied one by one as `score` does, then finished
    // (intervals by case, pass@k, segments, p50/p95): what aggregation adds to the whole path.
    let summaries: Vec<gauntlet_model::TrialSummary> = (0..TRAJECTORIES)
        .map(|i| gauntlet_model::TrialSummary::of_owned(gauntlet_bench::record(i)))
        .collect();
    let mut group = c.benchmark_group(format!("run metrics, {TRAJECTORIES} trials"));
    group.sample_size(10);
    group.throughput(Throughput::Elements(TRAJECTORIES as u64));
    group.bench_function("tally + finish", |b| {
        b.iter(|| {
            let mut tally = gauntlet_eval::Accumulator::default();
            for s in &summaries {
                tally.push(s);
            }
            black_box(tally.finish(7, None))
        })
    });
    group.finish();
    eprintln!(
        "corpus: {TRAJECTORIES} trajectories, {:.1} MB ({} bytes per trajectory)",
        bytes.len() as f64 / 1e6,
        bytes.len() / TRAJECTORIES
    );
}

criterion_group!(benches, scoring);
criterion_main!(benches);
