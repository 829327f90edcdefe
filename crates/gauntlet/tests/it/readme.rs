//! The README's command blocks, and those of the guide pages it links (`docs/guide/`, in the
//! README's order), run as printed: documentation that drifts from the program fails here. Each
//! command line of a ```sh block is run in a copy of the examples (with `cargo run --` and
//! `gauntlet` the built binary), in order, so later steps see earlier runs; a command
//! that needs what this machine cannot give (a model API key, a long-running server, data that
//! is not shipped) is named in `NOT_RUN` with the reason, and its subcommand and flags are
//! still checked against the program's own `--help`.

use crate::common::*;

/// Commands not run here, by a piece of their text, with why.
const NOT_RUN: &[(&str, &str)] = &[
    ("cargo test --workspace", "it is this test suite"),
    (
        "cargo install --locked --path crates/gauntlet",
        "installs the binary these tests run as built",
    ),
    (
        "scripts/build-wheel.sh",
        "a release build of the wheel: .ci/run builds it and runs the Python tests against it",
    ),
    (
        "server-filesystem /srv/docs",
        "serves a folder of the reader's until Ctrl-C",
    ),
    (
        "shadow harvest runs/shadow",
        "needs the shadow session above",
    ),
    (
        "--agent replay:runs/shadow",
        "needs the shadow session above",
    ),
    (
        "examples/file-desk",
        "npx fetches the server from the npm registry",
    ),
    ("online --listen", "a receiver that runs until Ctrl-C"),
    ("drift --baseline lake/", "needs a lake the receiver wrote"),
    ("harvest lake/", "needs a lake the receiver wrote"),
    ("import otlp traces.json", "needs the reader's traces"),
    (
        "--gateway-upstream https://api.openai.com",
        "needs a model API key",
    ),
    (
        "calibrate --labels labels-RUN.jsonl",
        "needs labels a person made",
    ),
    ("--pairwise SUITE", "needs a judged run and a model"),
    (
        "rule_based_mcp.py",
        "run by agents::a_python_agent_runs_the_suite_through_cmd_and_its_calls_are_recorded",
    ),
];

/// The README, then the guide pages it links, in the order it links them.
fn documents() -> Vec<std::path::PathBuf> {
    let readme = std::fs::read_to_string(repo().join("README.md")).unwrap();
    let mut pages = vec![repo().join("README.md")];
    for (i, _) in readme.match_indices("](docs/guide/") {
        let link = &readme[i + 2..];
        let page = repo().join(&link[..link.find(')').unwrap()]);
        if !pages.contains(&page) {
            pages.push(page);
        }
    }
    let mut guide: Vec<_> = std::fs::read_dir(repo().join("docs/guide"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    guide.sort();
    for page in guide {
        assert!(
            pages.contains(&page),
            "{} is not linked from the README's guide list",
            page.display()
        );
    }
    pages
}

/// Every command line of the README's and the guide's ```sh blocks, continuations joined,
/// comments dropped.
fn readme_commands() -> Vec<String> {
    documents()
        .iter()
        .flat_map(|page| commands_of(&std::fs::read_to_string(page).unwrap()))
        .collect()
}

/// The command lines of one Markdown text's ```sh blocks.
fn commands_of(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut inside = false;
    let mut pending = String::new();
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            inside = line.trim() == "```sh";
            continue;
        }
        if !inside || line.trim_start().starts_with('#') {
            continue;
        }
        if let Some(head) = line.trim_end().strip_suffix('\\') {
            pending.push_str(head);
            pending.push(' ');
            continue;
        }
        pending.push_str(line);
        // A comment after the command: two spaces and `#`.
        let command = match pending.find("  #") {
            Some(i) => pending[..i].trim().to_owned(),
            None => pending.trim().to_owned(),
        };
        pending.clear();
        if !command.is_empty() {
            out.push(command);
        }
    }
    out
}

/// The subcommand words and `--flags` of a gauntlet command line.
fn subcommand_and_flags(command: &str) -> Option<(Vec<String>, Vec<String>)> {
    let words = shlex_split(command);
    let start = words.iter().position(|w| w == "gauntlet" || w == "--")? + 1;
    let mut sub = Vec::new();
    for w in &words[start..] {
        if w.starts_with('-') || w.contains('/') || w.contains('.') || sub.len() == 2 {
            break;
        }
        sub.push(w.clone());
    }
    let flags = words[start..]
        .iter()
        .take_while(|w| *w != "&&" && *w != "|")
        .filter(|w| w.starts_with("--"))
        .map(|w| w.split('=').next().unwrap().to_owned())
        .collect();
    Some((sub, flags))
}

fn shlex_split(command: &str) -> Vec<String> {
    shlex::split(command).unwrap_or_else(|| panic!("`{command}` does not parse as sh words"))
}

/// The subcommand's help lists every flag the line uses.
fn flags_exist(command: &str) {
    let Some((sub, flags)) = subcommand_and_flags(command) else {
        return;
    };
    // `gauntlet shadow harvest` is a subcommand of shadow; a second word that is not one is an
    // argument (`gauntlet run SUITE`).
    let mut help = run(&[&sub[..1], &["--help".to_owned()]]
        .concat()
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>());
    if sub.len() == 2 {
        let nested = run(&sub
            .iter()
            .map(String::as_str)
            .chain(["--help"])
            .collect::<Vec<_>>());
        if nested.code == 0 {
            help = nested;
        }
    }
    assert_eq!(
        help.code, 0,
        "`{command}`: no subcommand {sub:?}: {}",
        help.stderr
    );
    for f in flags {
        assert!(
            help.stdout.contains(&f),
            "`{command}`: `gauntlet {}` has no flag {f}",
            sub.join(" ")
        );
    }
}

#[test]
fn readme_commands_work_as_printed() {
    let commands = readme_commands();
    assert!(commands.len() > 20, "{commands:?}");
    let tmp = tempfile::tempdir().unwrap();
    for ex in ["incident-desk", "safety-desk", "git-desk"] {
        copy_dir(
            &repo().join("examples").join(ex),
            &tmp.path().join("examples").join(ex),
        );
    }
    let bin = gauntlet_bin();
    let mut ran = 0;
    for command in &commands {
        flags_exist(command);
        if let Some((_, why)) = NOT_RUN.iter().find(|(text, _)| command.contains(text)) {
            eprintln!("not run: `{command}`: {why}");
            continue;
        }
        if command.contains("examples/git-desk") && !python_has("mcp_server_git") {
            eprintln!("not run: `{command}`: needs the Python package mcp-server-git");
            continue;
        }
        let mut line = command.replace("cargo run -- ", &format!("{} ", bin.display()));
        if line.contains("RUN_ID") {
            // The reference agent's run of step 1, as a reader would pick from `gauntlet runs`.
            let runs = run(&[
                "runs",
                s(&tmp.path().join("examples/incident-desk")),
                "--json",
            ]);
            let runs: Value = serde_json::from_str(&runs.stdout).unwrap();
            let id = runs
                .as_array()
                .unwrap()
                .iter()
                .find(|r| r["agent"] == "script:reference")
                .and_then(|r| r["run_id"].as_str())
                .expect("step 1's run is listed");
            line = line.replace("RUN_ID", id);
        }
        let o = std::process::Command::new("sh")
            .args(["-c", &line])
            .current_dir(tmp.path())
            .env("PATH", path_with_gauntlet())
            .env("NO_COLOR", "1")
            .output()
            .unwrap();
        let code = o.status.code().unwrap_or(-1);
        let stdout = String::from_utf8_lossy(&o.stdout);
        let stderr = String::from_utf8_lossy(&o.stderr);
        // Works as printed: a verdict (0 or 1), never invalid input, a harness failure or a panic.
        assert!(
            code == 0 || code == 1,
            "`{command}` exited {code}\n{stdout}\n{stderr}"
        );
        if line.contains("grep -h") {
            assert!(
                stdout.contains("\"status\": \"failed\""),
                "`{command}`: {stdout}"
            );
        }
        if line.contains(" gate ") {
            assert_eq!(code, 0, "`{command}`: {stdout}{stderr}");
        }
        ran += 1;
    }
    assert!(ran >= 10, "only {ran} README commands ran");
}
