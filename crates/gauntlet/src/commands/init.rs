//! `gauntlet init [DIR]`: a small working suite to edit (a world, two cases, gates), as
//! `promptfoo init` writes a starter configuration. It checks and runs green as written.
//! `--python` adds a Python agent that passes it (`agent.py`), `run.py` and `test_agent.py`;
//! `--example NAME` copies one of the example suites the binary carries instead, so that the
//! guide can be followed with only the wheel installed.

use std::path::{Path, PathBuf};

use crate::exit::{ExpectedError, GATES_PASSED};

/// Write a small working suite to edit: a world, two cases and gates
///
/// Examples:
///   gauntlet init my-suite && gauntlet run my-suite
///   gauntlet init --python my-suite && cd my-suite && python run.py
///   gauntlet init --example incident-desk examples/incident-desk
///
/// --python adds agent.py (a Python agent that passes the suite), run.py (runs it and prints
/// the verdict) and test_agent.py (the same run as a pytest test). --example copies one of the
/// example suites the program carries (incident-desk, safety-desk, git-desk, file-desk), the
/// ones the guide uses. Overwrites nothing: a folder that already holds one of its files is
/// refused.
#[derive(Debug, clap::Args)]
#[command(verbatim_doc_comment)]
pub struct Args {
    /// The folder to write (made if missing).
    #[arg(default_value = ".")]
    pub dir: PathBuf,
    /// Also write a Python agent that passes the suite, run.py and test_agent.py.
    #[arg(long, conflicts_with = "example")]
    pub python: bool,
    /// Copy this example suite instead of the starter suite.
    #[arg(long, value_name = "NAME")]
    pub example: Option<String>,
}

/// The starter suite's files: path within the suite, contents.
const FILES: &[(&str, &str)] = &[
    ("gauntlet.yaml", include_str!("../init/gauntlet.yaml")),
    (
        "worlds/tasks.yaml",
        include_str!("../init/worlds/tasks.yaml"),
    ),
    (
        "cases/01-complete-task.yaml",
        include_str!("../init/cases/01-complete-task.yaml"),
    ),
    (
        "cases/02-look-up-task.yaml",
        include_str!("../init/cases/02-look-up-task.yaml"),
    ),
];

/// What `--python` adds: an agent that passes the suite, a script that runs it, and a test.
const PYTHON_FILES: &[(&str, &str)] = &[
    ("agent.py", include_str!("../init/python/agent.py")),
    ("run.py", include_str!("../init/python/run.py")),
    (
        "test_agent.py",
        include_str!("../init/python/test_agent.py"),
    ),
];

/// The example suites (`examples/` of the repository), embedded by the build script.
mod embedded {
    include!(concat!(env!("OUT_DIR"), "/examples.rs"));
}

/// What `gauntlet init` writes: the starter suite, with the Python files when `python`, or the
/// example suite `example` names.
pub fn init(dir: &Path, python: bool, example: Option<&str>) -> Result<i32, ExpectedError> {
    let files: Vec<(&str, &[u8])> = match example {
        Some(name) => {
            let Some((_, files)) = embedded::EXAMPLES.iter().find(|(n, _)| *n == name) else {
                let names: Vec<&str> = embedded::EXAMPLES.iter().map(|(n, _)| *n).collect();
                return Err(ExpectedError::input(format!(
                    "there is no example `{name}`: the examples are {}",
                    names.join(", ")
                )));
            };
            files.to_vec()
        }
        None => FILES
            .iter()
            .chain(if python { PYTHON_FILES } else { &[] })
            .map(|(name, text)| (*name, text.as_bytes()))
            .collect(),
    };
    write_new(dir, &files)?;
    let shown = dir.display();
    if let Some(name) = example {
        crate::say!(
            "copied the example suite {name} to {shown} ({} files)",
            files.len()
        );
        crate::say!("next:");
        crate::say!("  gauntlet check {shown}      # validate it");
        crate::say!("  gauntlet run {shown}        # run it with the scripted reference agent");
        crate::say!("  gauntlet view {shown}       # the runs in your browser");
    } else if python {
        crate::say!(
            "wrote a starter suite to {shown}: gauntlet.yaml, worlds/tasks.yaml, cases/ (2 cases), \
             agent.py (the agent under test), run.py and test_agent.py"
        );
        crate::say!("next:");
        crate::say!("  cd {shown}");
        crate::say!("  python run.py      # run the suite against agent.py and print the verdict");
        crate::say!("  pytest             # the same run as a test (test_agent.py)");
        crate::say!("  gauntlet view      # the runs in your browser");
        crate::say!("then put your model or framework behind agent() in agent.py");
    } else {
        crate::say!(
            "wrote a starter suite to {shown}: gauntlet.yaml, worlds/tasks.yaml, cases/ (2 cases)"
        );
        crate::say!("next:");
        crate::say!("  gauntlet check {shown}      # validate it");
        crate::say!("  gauntlet run {shown}        # run it with the scripted reference agent");
        crate::say!(
            "  gauntlet run {shown} --agent 'cmd:python3 my_agent.py'   # your agent (docs/guide/agents.md)"
        );
        crate::say!("  (gauntlet init --python writes a Python agent beside the suite)");
    }
    Ok(GATES_PASSED)
}

/// Writes `files` under `dir`, overwriting nothing of the user's: every file is checked before
/// one is written.
fn write_new(dir: &Path, files: &[(&str, &[u8])]) -> Result<(), ExpectedError> {
    // A symlink counts as there, dangling or not, and so does one in place of a folder: writing
    // through it would write outside the suite.
    for (name, _) in files {
        let path = dir.join(name);
        if let Some(link) = std::iter::successors(Some(path.as_path()), |p| p.parent())
            .take_while(|p| *p != dir)
            .find(|p| std::fs::symlink_metadata(p).is_ok_and(|m| m.is_symlink()))
        {
            return Err(ExpectedError::input(format!(
                "{} is a symbolic link: gauntlet init writes a new suite and writes through no \
                 link (choose another folder)",
                link.display()
            )));
        }
        if std::fs::symlink_metadata(&path).is_ok() {
            return Err(ExpectedError::input(format!(
                "{} already exists: gauntlet init writes a new suite and overwrites nothing (choose another folder)",
                path.display()
            )));
        }
    }
    for (name, bytes) in files {
        let path = dir.join(name);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|e| {
                ExpectedError::input(format!("cannot make {}: {e}", parent.display()))
            })?;
        }
        // `create_new`: a link or file put there since the check is refused, not followed.
        std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)
            .and_then(|mut f| std::io::Write::write_all(&mut f, bytes))
            .map_err(|e| ExpectedError::input(format!("cannot write {}: {e}", path.display())))?;
    }
    Ok(())
}

#[cfg(all(test, unix))]
mod tests {
    /// Issue 48: `gauntlet init` wrote through a dangling symlink to a file outside the folder.
    #[test]
    fn init_refuses_to_write_through_a_symlink() {
        let tmp = tempfile::tempdir().unwrap();
        let outside = tmp.path().join("outside.yaml");
        let suite = tmp.path().join("suite");
        std::fs::create_dir_all(&suite).unwrap();
        std::os::unix::fs::symlink(&outside, suite.join("gauntlet.yaml")).unwrap();
        let e = super::init(&suite, false, None)
            .unwrap_err()
            .lines
            .join("\n");
        assert!(e.contains("symbolic link"), "{e}");
        assert!(!outside.exists());
        let other = tmp.path().join("other");
        std::fs::create_dir_all(&other).unwrap();
        std::os::unix::fs::symlink(tmp.path().join("elsewhere"), other.join("cases")).unwrap();
        assert!(super::init(&other, false, None).is_err());
        assert!(!tmp.path().join("elsewhere").exists());
    }
}

impl Args {
    /// Runs the command; the exit code, or an error carrying one.
    pub fn exec(self) -> Result<i32, ExpectedError> {
        init(&self.dir, self.python, self.example.as_deref())
    }
}
