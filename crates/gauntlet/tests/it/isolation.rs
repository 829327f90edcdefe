//! Hostile command agents: one that searches every process's environment for the harness's API
//! key and its siblings' MCP tokens, one that detaches a child meant to outlive its trial, and
//! gauntlet stopped by SIGINT, SIGTERM or SIGKILL while agents run. In bubblewrap's sandbox an
//! agent finds nothing and leaves nothing behind; the unisolated fallback is shown to leak, so
//! the search itself is known to work.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use crate::common::*;

const CANARY: &str = "sk-canary-4f1d9a";

/// A Python agent that reads `/proc/*/environ` of every process it can see and answers with
/// what it found: the canary key, or an MCP token that is not its own.
const SNOOP: &str = r#"
import json, os
own = os.environ.get("GAUNTLET_MCP_TOKEN")
found = set()
for pid in os.listdir("/proc"):
    if not pid.isdigit():
        continue
    try:
        env = open(f"/proc/{pid}/environ", "rb").read().decode(errors="replace")
    except OSError:
        continue
    for var in env.split("\0"):
        if CANARY in var:
            found.add("key")
        if var.startswith("GAUNTLET_MCP_TOKEN=") and var.split("=", 1)[1] != own:
            found.add("token")
# Regression: every sandbox saw the other trials' scratch folders, and a token kept there was
# stolen 66 times of 66. Keep ours there, give the siblings time to do the same, then look.
import glob, time
scratch = os.environ.get("GAUNTLET_SCRATCH", "")
if scratch:
    with open(os.path.join(scratch, "token"), "w") as f:
        f.write(own or "")
time.sleep(0.5)
tmp = os.path.dirname(os.path.dirname(os.path.dirname(scratch))) if scratch else "/tmp"
paths = set()
for base in {"/tmp", tmp, os.path.dirname(scratch)}:
    for depth in range(1, 4):
        paths.update(glob.glob(os.path.join(base, *["*"] * depth, "token")))
for p in paths:
    try:
        t = open(p).read()
    except OSError:
        continue
    if t and t != own:
        found.add("scratch")
print(json.dumps({"final_answer": "found:" + ",".join(sorted(found))}))
"#;

fn answers(run: &Path) -> Vec<String> {
    read_trials(run)
        .iter()
        .map(|t| {
            t["trajectory"]["events"]
                .as_array()
                .unwrap()
                .iter()
                .find(|e| e["type"] == "final_answer")
                .and_then(|e| e["text"].as_str())
                .unwrap_or("no answer")
                .to_owned()
        })
        .collect()
}

fn snoop_run(isolation: &str) -> (Output, Vec<String>) {
    let (tmp, suite) = example();
    let script = tmp.path().join("snoop.py");
    std::fs::write(&script, SNOOP.replace("CANARY", &format!("{CANARY:?}"))).unwrap();
    let out = tmp.path().join("run");
    let agent = format!("cmd:python3 {}", s(&script));
    let output = gauntlet()
        .env("OPENAI_API_KEY", CANARY)
        .args(["run", s(&suite), "--agent", &agent, "--epochs", "2"])
        .args([
            "--concurrency",
            "4",
            "--isolation",
            isolation,
            "--out",
            s(&out),
        ])
        .output()
        .unwrap();
    let output = Output {
        code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    };
    let found = answers(&out);
    (output, found)
}

#[test]
#[cfg_attr(not(have_bwrap), ignore = "needs bubblewrap (Debian: bubblewrap)")]
fn a_sandboxed_agent_finds_neither_the_key_nor_a_siblings_token() {
    let (out, found) = snoop_run("bubblewrap");
    assert!(!out.stderr.contains("NOT isolated"), "{}", out.stderr);
    assert!(found.len() >= 8, "{found:?}\n{}", out.stderr);
    assert!(found.iter().all(|f| f == "found:"), "{found:?}");
}

#[test]
fn an_unisolated_agent_is_warned_about_and_can_read_the_key() {
    // The fallback's warning is loud, and the snoop is real: unisolated, it finds the key.
    let (out, found) = snoop_run("none");
    assert!(
        out.stderr
            .contains("warning: command agents are NOT isolated"),
        "{}",
        out.stderr
    );
    assert!(found.iter().any(|f| f.contains("key")), "{found:?}");
}

/// Processes whose command line holds `marker`.
fn running(marker: &str) -> Vec<String> {
    let out = Command::new("pgrep").args(["-f", marker]).output().unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_owned)
        .collect()
}

/// Waits up to 5 s for no process to hold `marker`.
fn gone(marker: &str) -> bool {
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(5) {
        if running(marker).is_empty() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    false
}

#[test]
#[cfg_attr(not(have_bwrap), ignore = "needs bubblewrap (Debian: bubblewrap)")]
fn a_detached_child_ends_with_its_trial() {
    let (tmp, suite) = example();
    let marker = "7777.25";
    // A setsid child and a double fork, both meant to outlive the agent.
    let agent = format!(
        "cmd:setsid sleep {marker} & (sleep {marker} &) ; echo '{{\"final_answer\": \"bye\"}}'"
    );
    let out = run(&[
        "run",
        s(&suite),
        "--agent",
        &agent,
        "--filter",
        "close-mitigated",
        "--isolation",
        "bubblewrap",
        "--out",
        s(&tmp.path().join("run")),
    ]);
    assert!(out.code <= 1, "{}", out.stderr);
    assert!(gone(marker), "left running: {:?}", running(marker));
}

/// Starts a run whose agents sleep (unless `release` exists), waits until they run, stops
/// gauntlet with `signal`, and checks nothing is left; then the run resumes to its end.
fn stop_with(signal: &str, marker: &str) {
    let (tmp, suite) = example();
    let release = tmp.path().join("release");
    let out = tmp.path().join("run");
    let agent = format!(
        "cmd:[ -e {r} ] || {{ setsid sleep {marker} & sleep {marker}; }}; echo '{{\"final_answer\": \"ok\"}}'",
        r = s(&release)
    );
    // A TMPDIR of the test's own, to count the scratch folders left behind.
    let tmpdir = tmp.path().join("tmpdir");
    std::fs::create_dir(&tmpdir).unwrap();
    let child = Command::new(gauntlet_bin())
        .env("TMPDIR", &tmpdir)
        .args(["run", s(&suite), "--agent", &agent, "--concurrency", "2"])
        .args(["--isolation", "bubblewrap", "--out", s(&out), "--quiet"])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while running(marker).len() < 2 && start.elapsed() < Duration::from_secs(20) {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(running(marker).len() >= 2, "the agents never started");
    let pid = child.id().to_string();
    Command::new("kill").args([signal, &pid]).status().unwrap();
    let stopped = child.wait_with_output().unwrap();
    assert!(!stopped.status.success());
    assert!(
        gone(marker),
        "left running after kill {signal}: {:?}",
        running(marker)
    );
    let scratch = tmpdir.join("gauntlet-agents");
    let left = || -> Vec<std::path::PathBuf> {
        let mut left = Vec::new();
        for p in std::fs::read_dir(&scratch).into_iter().flatten().flatten() {
            left.push(p.path());
        }
        left
    };
    let stderr = String::from_utf8_lossy(&stopped.stderr).into_owned();
    // Regression: the printed command lacked the suite and exited 2 when pasted. Run what
    // was printed, as a shell would.
    let resume = match signal {
        "-KILL" => format!(
            "gauntlet run {} --resume {} --isolation bubblewrap",
            s(&suite),
            s(&out)
        ),
        _ => {
            // Regression: SIGINT and SIGTERM left every agent's scratch folder behind.
            assert!(left().is_empty(), "left behind: {:?}", left());
            stderr
                .lines()
                .find_map(|l| l.split_once("Resume with: ").map(|(_, c)| c.to_owned()))
                .unwrap_or_else(|| panic!("no resume command in: {stderr}"))
        }
    };
    assert!(resume.starts_with("gauntlet run "), "{resume}");
    std::fs::write(&release, "").unwrap();
    let resumed = Command::new("sh")
        .arg("-c")
        .arg(format!("{resume} --quiet"))
        .env("PATH", path_with_gauntlet())
        .env("TMPDIR", &tmpdir)
        .output()
        .unwrap();
    assert!(
        resumed.status.code().is_some_and(|c| c <= 1),
        "{resume}: {}",
        String::from_utf8_lossy(&resumed.stderr)
    );
    assert!(out.join("results.json").exists());
    // After kill -9 the next run sweeps what the killed one left.
    assert!(left().is_empty(), "left behind: {:?}", left());
}

#[test]
#[cfg_attr(not(have_bwrap), ignore = "needs bubblewrap (Debian: bubblewrap)")]
fn sigint_stops_every_agent_and_the_run_resumes() {
    stop_with("-INT", "6661.25");
}

#[test]
#[cfg_attr(not(have_bwrap), ignore = "needs bubblewrap (Debian: bubblewrap)")]
fn sigterm_stops_every_agent_and_the_run_resumes() {
    stop_with("-TERM", "6662.25");
}

#[test]
#[cfg_attr(not(have_bwrap), ignore = "needs bubblewrap (Debian: bubblewrap)")]
fn kill_9_of_gauntlet_stops_every_agent_and_the_run_resumes() {
    stop_with("-KILL", "6663.25");
}
