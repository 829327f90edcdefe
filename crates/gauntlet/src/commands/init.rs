//! `gauntlet init [DIR]`: a small working suite to edit (a world, two cases, gates), as
//! `promptfoo init` writes a starter configuration. It checks and runs green as written.

use std::path::Path;

use crate::exit::{ExpectedError, GATES_PASSED};

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
    // Nothing of the user's is overwritten: every file is checked before one is written.
    for (name, _) in FILES {
        let path = dir.join(name);
        if path.exists() {
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
        std::fs::write(&path, text)
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
