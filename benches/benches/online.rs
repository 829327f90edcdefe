//! The online receiver's path on one core: OTLP/protobuf payloads decoded, spans assembled into
//! traces, each trace turned into a trajectory, judged (every evaluator that needs no case, and
//! a policy), anonymised and made a lake row; then the rows written as Parquet. Before the
//! criterion groups, the time to judge one trace is measured 20,000 times and its p50/p99
//! printed.
//!
//! Run: cargo bench -p gauntlet-bench --bench online

use std::hint::black_box;
use std::time::Instant;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use gauntlet_online::lake::{LakeWriter, row_of};
use gauntlet_online::policy::PolicyCheck;
use gauntlet_otel::{Assembler, AssemblerLimits, Encoding, ExportRequest};

/// The allocator the `gauntlet` binary runs with.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

const TRACES: usize = 1_000;

/// Everything but HTTP and Parquet, for every payload; the rows made.
fn ingest(runtime: &tokio::runtime::Runtime, judge: &PolicyCheck, payloads: &[Vec<u8>]) -> usize {
    let mut a = Assembler::new(AssemblerLimits::default());
    let mut rows = 0;
    for p in payloads {
        let request: ExportRequest = gauntlet_otel::decode(p, Encoding::Protobuf).expect("decodes");
        for t in a.push(request, 0) {
            let mut j = runtime.block_on(judge.judge(gauntlet_otel::imported_trace(&t)));
            judge.anonymise(&mut j);
            black_box(row_of(&j, 0));
            rows += 1;
        }
    }
    rows
}

fn online(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a runtime");
    let judge = gauntlet_bench::online_policy_check();

    // p50/p99 of judging one trace (import, judge, anonymise, row), 20,000 times.
    let (single, _) = gauntlet_bench::online_payloads(200, 1);
    let traces: Vec<_> = single
        .iter()
        .map(|p| {
            let r = gauntlet_otel::decode(p, Encoding::Protobuf).expect("decodes");
            gauntlet_otel::traces_of([r]).remove(0)
        })
        .collect();
    let mut times: Vec<f64> = (0..20_000)
        .map(|i| {
            let t = &traces[i % traces.len()];
            let started = Instant::now();
            let mut j = runtime.block_on(judge.judge(gauntlet_otel::imported_trace(t)));
            judge.anonymise(&mut j);
            black_box(row_of(&j, 0));
            started.elapsed().as_secs_f64() * 1e6
        })
        .collect();
    // Where the time goes: judging alone, anonymising alone.
    let (mut judge_us, mut anon_us) = (0.0, 0.0);
    for i in 0..5_000 {
        let t = &traces[i % traces.len()];
        let started = Instant::now();
        let mut j = runtime.block_on(judge.judge(gauntlet_otel::imported_trace(t)));
        let judged = Instant::now();
        judge.anonymise(&mut j);
        judge_us += (judged - started).as_secs_f64() * 1e6;
        anon_us += judged.elapsed().as_secs_f64() * 1e6;
    }
    eprintln!(
        "per trace: import + judge {:.1} µs, anonymise {:.1} µs (means)",
        judge_us / 5_000.0,
        anon_us / 5_000.0
    );
    times.sort_by(f64::total_cmp);
    eprintln!(
        "judging one trace: p50 {:.1} µs, p99 {:.1} µs (20,000 traces of 3 to 9 spans)",
        times[times.len() / 2],
        times[times.len() * 99 / 100]
    );

    let (batch, spans) = gauntlet_bench::online_payloads(TRACES, 100);
    let mut group = c.benchmark_group(format!("online ingest, {TRACES} traces, {spans} spans"));
    group.sample_size(10);
    group.throughput(Throughput::Elements(spans as u64));
    group.bench_function("decode only (OTLP/protobuf)", |b| {
        b.iter(|| {
            for p in &batch {
                black_box(gauntlet_otel::decode(p, Encoding::Protobuf).expect("decodes"));
            }
        })
    });
    group.bench_function("decode + assemble + judge + anonymise + row", |b| {
        b.iter(|| assert_eq!(ingest(&runtime, &judge, &batch), TRACES))
    });
    group.bench_function("... + Parquet write", |b| {
        let dir = tempfile::tempdir().expect("a folder");
        b.iter(|| {
            let mut a = Assembler::new(AssemblerLimits::default());
            let mut lake = LakeWriter::new(dir.path());
            for p in &batch {
                let request = gauntlet_otel::decode(p, Encoding::Protobuf).expect("decodes");
                for t in a.push(request, 0) {
                    let mut j = runtime.block_on(judge.judge(gauntlet_otel::imported_trace(&t)));
                    judge.anonymise(&mut j);
                    lake.push_trace(row_of(&j, 0));
                }
            }
            lake.flush(0).expect("written");
        })
    });
    group.finish();
}

criterion_group!(benches, online);
criterion_main!(benches);
