//! The floor `gauntlet score` is measured against: a plain `serde_json::Value` parse of every
//! line of a JSON Lines file, streamed, on one core.
//!
//! usage: cargo run --release -p gauntlet-bench --example parse -- FILE

use std::io::BufRead;

fn main() {
    let path = std::env::args().nth(1).expect("usage: parse FILE");
    let file = std::fs::File::open(&path).expect("open the file");
    let start = std::time::Instant::now();
    let mut lines = 0usize;
    for line in std::io::BufReader::with_capacity(1 << 20, file).lines() {
        let line = line.expect("read a line");
        if line.trim().is_empty() {
            continue;
        }
        let value: serde_json::Value = serde_json::from_str(&line).expect("a JSON line");
        std::hint::black_box(value);
        lines += 1;
    }
    eprintln!(
        "{lines} lines parsed in {:.2} s",
        start.elapsed().as_secs_f64()
    );
}
