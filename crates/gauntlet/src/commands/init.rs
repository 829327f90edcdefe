//! `gauntlet init [DIR]`: a small working suite to edit (a world, two cases, gates), as
//! `promptfoo init` writes a starter configuration. It checks and runs green as written.

use std::path::{Path, PathBuf};

use crate::exit::{ExpectedError, GATES_PASSED};

/// Write a small working suite to edit: a world, two cases and gates
///
/// Example:
///   gauntlet init my-suite && gauntlet run my-suite
///
/// Overwrites nothing: a folder that already holds one of its files is refused.
#[derive(Debug, clap::Args)]
#[command(verbatim_doc_comment)]
pub struct Args {
    /// The folder to write (made if missing).
    #[arg(default_value = ".")]
    pub dir: PathBuf,
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

pub fn init(dir: &Path) -> Result<i32, ExpectedError> {
    // Nothing of the user's is overwritten: every file is checked before one is written. A
    // symlink counts as there, dangling or not, and so does one in place of a folder: writing
    // through it would write outside the suite.
    for (name, _) in FILES {
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
    for (name, text) in FILES {
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
            .and_then(|mut f| std::io::Write::write_all(&mut f, text.as_bytes()))
            .map_err(|e| ExpectedError::input(format!("cannot write {}: {e}", path.display())))?;
    }
    let shown = dir.display();
    crate::say!(
        "wrote a starter suite to {shown}: gauntlet.yaml, worlds/tasks.yaml, cases/ (2 cases)"
    );
    crate::say!("next:");
    crate::say!("  gauntlet check {shown}      # validate it");
    crate::say!("  gauntlet run {shown}        # run it with the scripted reference agent");
    crate::say!(
        "  gauntlet run {shown} --agent 'cmd:python3 my_agent.py'   # your agent (README step 7)"
    );
    Ok(GATES_PASSED)
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
        let e = super::init(&suite).unwrap_err().lines.join("\n");
        assert!(e.contains("symbolic link"), "{e}");
        assert!(!outside.exists());
        let other = tmp.path().join("other");
        std::fs::create_dir_all(&other).unwrap();
        std::os::unix::fs::symlink(tmp.path().join("elsewhere"), other.join("cases")).unwrap();
        assert!(super::init(&other).is_err());
        assert!(!tmp.path().join("elsewhere").exists());
    }
}

impl Args {
    /// Runs the command; the exit code, or an error carrying one.
    pub fn exec(self) -> Result<i32, ExpectedError> {
        init(&self.dir)
    }
}
