//! The online receiver end to end on this machine: OTLP/protobuf payloads POSTed over HTTP by
//! concurrent senders to `gauntlet_online::receiver` (decode, assemble, judge every trace,
//! anonymise, Parquet lake), timed from the first request until every trace is judged and the
//! lake is written. The senders run in the same process and on the same cores, so the figure
//! is what the receiver keeps up with while sharing the machine with its load. The same run
//! also times decoding the payloads alone (the protobuf floor) on one core. On a machine busy
//! with other work the wall-clock rate falls; the CPU the process spent end to end (senders
//! included) is printed too, with the rate it gives on every core of the machine.
//!
//! ```text
//! cargo run --release -p gauntlet-bench --example online_ingest -- [TRACES] [SENDERS]
//! ```
//!
//! TRACES defaults to 200,000 (3 to 9 spans each, 100 traces a payload), SENDERS to 8.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use gauntlet_online::receiver::{Settings, start};

/// The CPU time this process has used (user and system), from `/proc/self/stat` (Linux).
fn cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // After the command's closing parenthesis: state is field 3, utime 14 and stime 15.
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    let ticks = |i: usize| fields.get(i - 3)?.parse::<f64>().ok();
    // USER_HZ, 100 on every Linux the bench runs on.
    Some((ticks(14)? + ticks(15)?) / 100.0)
}
use gauntlet_otel::Encoding;

/// The allocator the `gauntlet` binary runs with.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

const PER_PAYLOAD: usize = 100;
const TOKEN: &str = "online-ingest-bench-token";

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let traces: usize = args.next().map_or(Ok(200_000), |a| a.parse())?;
    let senders: usize = args.next().map_or(Ok(8), |a| a.parse())?;
    let (payloads, spans) = gauntlet_bench::online_payloads(traces, PER_PAYLOAD);
    let bytes: usize = payloads.iter().map(Vec::len).sum();
    eprintln!(
        "{traces} traces, {spans} spans, {} payloads, {:.0} MB",
        payloads.len(),
        bytes as f64 / 1e6
    );

    let started = Instant::now();
    for p in &payloads {
        std::hint::black_box(gauntlet_otel::decode(p, Encoding::Protobuf)?);
    }
    let decode = started.elapsed().as_secs_f64();

    let lake = tempfile::tempdir()?;
    let settings = Settings::new(
        lake.path().to_owned(),
        TOKEN.to_owned(),
        gauntlet_bench::online_policy_check(),
    );
    let running = start("127.0.0.1:0".parse()?, settings).await?;
    let url = format!("http://{}/v1/traces", running.addr);
    let client = reqwest::Client::new();
    let payloads = Arc::new(payloads);
    let next = Arc::new(AtomicUsize::new(0));
    let busy = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let cpu_before = cpu_seconds();
    let mut tasks = Vec::new();
    for _ in 0..senders {
        let (client, url, payloads, next, busy) = (
            client.clone(),
            url.clone(),
            payloads.clone(),
            next.clone(),
            busy.clone(),
        );
        tasks.push(tokio::spawn(async move {
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(body) = payloads.get(i) else {
                    return Ok::<(), reqwest::Error>(());
                };
                loop {
                    let status = client
                        .post(&url)
                        .bearer_auth(TOKEN)
                        .header("content-type", "application/x-protobuf")
                        .body(body.clone())
                        .send()
                        .await?
                        .status();
                    if status.is_success() {
                        break;
                    }
                    assert_eq!(status.as_u16(), 503, "the receiver refused a payload");
                    busy.fetch_add(1, Ordering::Relaxed);
                    tokio::time::sleep(Duration::from_millis(2)).await;
                }
            }
        }));
    }
    for t in tasks {
        t.await??;
    }
    let accepted = started.elapsed().as_secs_f64();
    while (running.counters.traces_judged.load(Ordering::Relaxed) as usize) < traces {
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    let judged = started.elapsed().as_secs_f64();
    let counters = running.stop().await;
    let written = started.elapsed().as_secs_f64();
    let cpu = cpu_seconds()
        .zip(cpu_before)
        .map(|(after, before)| after - before);
    let n = |a: &AtomicU64| a.load(Ordering::Relaxed);
    assert_eq!(
        n(&counters.traces_written) as usize,
        traces,
        "every trace in the lake"
    );
    let rate = |s: f64| spans as f64 / s;
    println!(
        "decode only, one core: {:.0} spans/s ({decode:.2} s)",
        rate(decode)
    );
    println!(
        "end to end, {senders} senders: accepted {:.0} spans/s ({accepted:.2} s), judged {:.0} \
         spans/s ({judged:.2} s), judged and written to the lake {:.0} spans/s ({written:.2} s); \
         {} busy refusals retried",
        rate(accepted),
        rate(judged),
        rate(written),
        n(&busy)
    );
    if let Some(cpu) = cpu {
        let cores = std::thread::available_parallelism().map_or(1, usize::from);
        println!(
            "CPU end to end (senders included): {cpu:.2} s, {:.0} spans per CPU second, so \
             {:.0} spans/s on all {cores} cores if nothing else ran",
            spans as f64 / cpu,
            spans as f64 / cpu * cores as f64
        );
    }
    Ok(())
}
