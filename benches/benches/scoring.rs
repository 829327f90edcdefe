//! Offline scoring throughput: read recorded trials from JSON Lines and run every deterministic
//! evaluator (the cases use constraints, order, a reference with agentevals matching, BFCL
//! expected calls and canaries), on one core, against reading the same JSON without scoring (the
//! floor we measure against); then the whole `score` path, aggregation and writing included.

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
            let mut tally = gauntlet_verdict::Accumulator::default();
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

/// The whole `score` path on the example suite: read the file, parse, every evaluator on every
/// core, tally, results and gates, and (second) the run folder written, records and
/// `results.json`.
fn whole_score_path(c: &mut Criterion) {
    const N: usize = 20_000;
    let suite = gauntlet_bench::example_suite();
    let ids: Vec<&str> = suite
        .cases
        .iter()
        .map(|c| c.case.case_id.as_str())
        .collect();
    let mut bytes = Vec::new();
    for i in 0..N {
        let mut r = gauntlet_bench::record(i);
        r.case_id = ids[i % ids.len()].to_owned();
        r.epoch = (i / ids.len()) as u32;
        serde_json::to_writer(&mut bytes, &r).expect("serializable");
        bytes.push(b'\n');
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("trials.jsonl");
    std::fs::write(&path, &bytes).expect("write corpus");
    let custom = gauntlet_runner::plan::custom_evaluators(&suite).expect("evaluators");
    let workers = std::thread::available_parallelism().map_or(1, |n| n.get().min(8));
    let score = |out: Option<&std::path::Path>| {
        let scored = gauntlet_runner::offline::score_file(
            gauntlet_runner::offline::OfflineScoring {
                suite: &suite,
                trajectories: &path,
                custom: &custom,
                judges: None,
                header: gauntlet_bench::header(),
                out,
                summaries_needed: false,
                keep: 10_000,
                workers,
                clock: || "2026-12-01T10:00:00Z".to_owned(),
            },
            |_| {},
            |_| {},
        )
        .expect("scored");
        assert_eq!(scored.problems, Vec::<String>::new());
        black_box(scored.results)
    };
    let mut group = c.benchmark_group(format!("gauntlet score, {N} trajectories"));
    group.sample_size(10);
    group.throughput(Throughput::Elements(N as u64));
    group.bench_function("whole path, no run folder", |b| b.iter(|| score(None)));
    group.bench_function("whole path, run folder written", |b| {
        b.iter(|| {
            let out = dir.path().join("run");
            let _ = std::fs::remove_dir_all(&out);
            score(Some(&out))
        })
    });
    group.finish();
}

criterion_group!(benches, scoring, whole_score_path);
criterion_main!(benches);
