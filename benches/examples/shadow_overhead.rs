//! What `gauntlet shadow` adds to a forwarded read, measured with the official Rust MCP SDK
//! (rmcp) as the client, so that the client's own cost stays out of the figure: the same read of
//! a real MCP server (npm's server-filesystem) is timed directly over stdio, then through
//! `gauntlet shadow --stdio` in front of the same server, in one run, alternating the two paths
//! in rounds so that the machine's drift falls on both. Prints p50/p90/p99 of both and what the
//! proxy adds.
//!
//! ```text
//! cargo run --release -p gauntlet-bench --example shadow_overhead -- target/release/gauntlet [CALLS]
//! ```
//!
//! Needs `npm ci --prefix crates/gauntlet/tests/npm` (the server) and a built `gauntlet`.

use std::path::{Path, PathBuf};
use std::time::Instant;

use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::TokioChildProcess;
use tokio::process::Command;

type Client = RunningService<RoleClient, ()>;

const ROUNDS: usize = 10;
const WARM_UP: usize = 200;

fn pct(xs: &[f64], p: f64) -> f64 {
    let mut xs = xs.to_vec();
    xs.sort_by(f64::total_cmp);
    xs[((p / 100.0) * (xs.len() - 1) as f64).round() as usize]
}

async fn connect(command: Command) -> Result<Client, Box<dyn std::error::Error>> {
    let client = ().serve(TokioChildProcess::new(command)?).await?;
    client.list_tools(None).await?;
    Ok(client)
}

async fn reads(
    client: &Client,
    path: &Path,
    calls: usize,
) -> Result<Vec<f64>, Box<dyn std::error::Error>> {
    let args = serde_json::json!({ "path": path })
        .as_object()
        .cloned()
        .unwrap_or_default();
    let mut xs = Vec::with_capacity(calls);
    for _ in 0..calls {
        let params = CallToolRequestParams::new("read_text_file").with_arguments(args.clone());
        let t = Instant::now();
        let r = client.call_tool(params).await?;
        xs.push(t.elapsed().as_secs_f64() * 1e6);
        if r.is_error == Some(true) {
            return Err(format!("the read failed: {r:?}").into());
        }
    }
    Ok(xs)
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut argv = std::env::args().skip(1);
    let gauntlet = PathBuf::from(
        argv.next()
            .ok_or("usage: shadow_overhead GAUNTLET [CALLS]")?,
    );
    let calls: usize = argv.next().map_or(Ok(5000), |c| c.parse())?;
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let server = root.join(
        "crates/gauntlet/tests/npm/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js",
    );
    if !server.exists() {
        return Err(format!(
            "{} is missing: npm ci --prefix crates/gauntlet/tests/npm",
            server.display()
        )
        .into());
    }
    let tmp = tempfile::tempdir()?;
    let dir = tmp.path().to_owned();
    let file = dir.join("a.txt");
    std::fs::write(&file, "hello\n")?;
    let mut direct_cmd = Command::new("node");
    direct_cmd.arg(&server).arg(&dir);
    let mut proxied_cmd = Command::new(&gauntlet);
    proxied_cmd
        .arg("shadow")
        .arg("--upstream")
        .arg(format!("cmd:node {} {}", server.display(), dir.display()))
        .arg("--stdio")
        .arg("--out")
        .arg(dir.join("run"));
    let direct = connect(direct_cmd).await?;
    let proxied = connect(proxied_cmd).await?;
    reads(&direct, &file, WARM_UP).await?;
    reads(&proxied, &file, WARM_UP).await?;
    let (mut d, mut p) = (Vec::new(), Vec::new());
    let per_round = calls.div_ceil(ROUNDS);
    for _ in 0..ROUNDS {
        d.extend(reads(&direct, &file, per_round).await?);
        p.extend(reads(&proxied, &file, per_round).await?);
    }
    direct.cancel().await?;
    proxied.cancel().await?;
    println!(
        "{} reads per path in {ROUNDS} alternating rounds, the rmcp client over stdio, server-filesystem (npm)",
        d.len()
    );
    println!(
        "{:>8} {:>10} {:>10} {:>10}   (µs)",
        "", "direct", "proxied", "added"
    );
    for q in [50.0, 90.0, 99.0] {
        let (a, b) = (pct(&d, q), pct(&p, q));
        println!("{:>8} {a:>10.1} {b:>10.1} {:>10.1}", format!("p{q}"), b - a);
    }
    Ok(())
}
