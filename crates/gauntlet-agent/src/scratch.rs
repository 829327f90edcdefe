//! Command agents' scratch folders: one per trial, the one place a sandboxed agent may write.
//!
//! They live under `$TMPDIR/gauntlet-agents/p<PID>/`, a folder of this process that its owner
//! may enter but not list (mode 0300), each with a long random name: an agent of another run
//! can neither list nor guess a sibling's folder, and inside a sandbox the whole process folder
//! is covered by an empty one but for the trial's own scratch ([`crate::Sandbox`]). The process
//! folder goes when the process ends ([`remove_own`]), on a stop, and, after `kill -9`, at the
//! next start of any gauntlet ([`sweep_stale`] as the folder is first made).

use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// `$TMPDIR/gauntlet-agents`.
fn root() -> PathBuf {
    std::env::temp_dir().join("gauntlet-agents")
}

/// This process's folder of scratch folders.
fn own() -> PathBuf {
    root().join(format!("p{}", std::process::id()))
}

static PARENT: OnceLock<Result<PathBuf, String>> = OnceLock::new();

/// This process's folder of scratch folders, made (enter-only) on first use, after removing
/// the folders of gauntlet processes that no longer run.
pub(crate) fn parent() -> Result<&'static Path, String> {
    PARENT
        .get_or_init(|| {
            sweep_stale();
            let root = root();
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(&root)
                .map_err(|e| format!("cannot make {}: {e}", root.display()))?;
            let own = own();
            match std::fs::DirBuilder::new().mode(0o300).create(&own) {
                Ok(()) => Ok(own),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                    // A folder of an earlier process with this pid: ours now.
                    let _ = std::fs::set_permissions(&own, std::fs::Permissions::from_mode(0o300));
                    Ok(own)
                }
                Err(e) => Err(format!("cannot make {}: {e}", own.display())),
            }
        })
        .as_ref()
        .map(PathBuf::as_path)
        .map_err(Clone::clone)
}

/// A new scratch folder for one trial, removed when dropped.
pub(crate) fn scratch() -> Result<tempfile::TempDir, String> {
    let parent = parent()?;
    tempfile::Builder::new()
        .prefix("gauntlet-agent-")
        .rand_bytes(24)
        .tempdir_in(parent)
        .map_err(|e| format!("cannot make the agent's scratch folder: {e}"))
}

/// Removes this process's scratch folders (at the end of a command, and on a stop).
pub fn remove_own() {
    remove(&own());
}

/// Removes the scratch folders of gauntlet processes that no longer run (killed outright).
pub fn sweep_stale() {
    let Ok(entries) = std::fs::read_dir(root()) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if let Some(pid) = name.strip_prefix('p').and_then(|p| p.parse::<u32>().ok())
            && pid != std::process::id()
            && !Path::new(&format!("/proc/{pid}")).exists()
        {
            remove(&e.path());
        }
    }
}

fn remove(dir: &Path) {
    // Enter-only folders cannot be listed, so neither removed, until made listable again.
    if std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700)).is_ok() {
        let _ = std::fs::remove_dir_all(dir);
    }
}
