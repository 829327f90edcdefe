//! `gauntlet init`: the starter suite with a Python agent (`--python`), and the example suites
//! the binary carries (`--example`), so a user with only the wheel can follow the guide. The
//! Python files themselves run in `python/tests/test_readme.py` (the quickstart, through the
//! wheel).

use crate::common::*;

/// The files of a folder, relative, without hidden entries (a suite's `.gauntlet/` runs).
fn files_of(dir: &std::path::Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            if name.starts_with('.') || name == "__pycache__" {
                continue;
            }
            if path.is_dir() {
                stack.push(path);
            } else {
                out.push(path.strip_prefix(dir).unwrap().display().to_string());
            }
        }
    }
    out.sort();
    out
}

#[test]
fn init_python_writes_the_suite_an_agent_a_runner_and_a_test() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("my-suite");
    let o = run(&["init", "--python", s(&dir)]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert_eq!(
        files_of(&dir),
        [
            "agent.py",
            "cases/01-complete-task.yaml",
            "cases/02-look-up-task.yaml",
            "gauntlet.yaml",
            "run.py",
            "test_agent.py",
            "worlds/tasks.yaml",
        ]
    );
    // The closing lines speak Python.
    let said = format!("{}{}", o.stdout, o.stderr);
    insta::assert_snapshot!(redact(&said, &dir, None));
    let c = run(&["check", s(&dir)]);
    assert_eq!(c.code, 0, "{}", c.stderr);
    let r = run(&["run", s(&dir), "-q"]);
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    // Nothing is overwritten, the Python files included.
    let again = run(&["init", "--python", s(&dir)]);
    assert_eq!(again.code, 2);
    assert!(again.stderr.contains("already exists"), "{}", again.stderr);
}

#[test]
fn init_example_copies_the_example_suite_the_binary_carries() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("desk");
    let o = run(&["init", "--example", "incident-desk", s(&dir)]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    insta::assert_snapshot!(redact(&format!("{}{}", o.stdout, o.stderr), &dir, None));
    let example = repo().join("examples/incident-desk");
    let copied = files_of(&dir);
    assert_eq!(copied, files_of(&example));
    for file in &copied {
        assert_eq!(
            std::fs::read(dir.join(file)).unwrap(),
            std::fs::read(example.join(file)).unwrap(),
            "{file}"
        );
    }
    let r = run(&["run", s(&dir), "-q"]);
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    // An unknown example names the ones there are.
    let unknown = run(&["init", "--example", "help-desk", s(&tmp.path().join("x"))]);
    assert_eq!(unknown.code, 2);
    for name in ["incident-desk", "safety-desk", "git-desk", "file-desk"] {
        assert!(unknown.stderr.contains(name), "{}", unknown.stderr);
    }
    assert!(!tmp.path().join("x").exists());
}
