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

/// A scratch folder that cannot be made: the harness's failure (its temporary folder).
#[derive(Debug, thiserror::Error)]
pub enum ScratchError {
    /// The folder of scratch folders cannot be made.
    #[error("cannot make {}: {source}", .path.display())]
    Parent {
        /// The folder.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The same, found when the process first tried (the first failure is kept).
    #[error(transparent)]
    ParentEarlier(&'static ScratchError),
    /// A trial's own folder cannot be made.
    #[error("cannot make the agent's scratch folder: {0}")]
    Scratch(#[source] std::io::Error),
}

impl gauntlet_model::Classified for ScratchError {
    fn kind(&self) -> gauntlet_model::ErrorKind {
        gauntlet_model::ErrorKind::Harness
    }
}

static PARENT: OnceLock<Result<PathBuf, ScratchError>> = OnceLock::new();

/// This process's folder of scratch folders, made (enter-only) on first use, after removing
/// the folders of gauntlet processes that no longer run.
pub fn parent() -> Result<&'static Path, &'static ScratchError> {
    PARENT
        .get_or_init(|| {
            sweep_stale();
            make_own()
        })
        .as_ref()
        .map(PathBuf::as_path)
}

/// Makes this process's folder of scratch folders (enter-only) and the root above it.
fn make_own() -> Result<PathBuf, ScratchError> {
    let root = root();
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(&root)
        .map_err(|source| ScratchError::Parent {
            path: root.clone(),
            source,
        })?;
    let own = own();
    match std::fs::DirBuilder::new().mode(0o300).create(&own) {
        Ok(()) => Ok(own),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            // A folder of an earlier process with this pid: ours now.
            let _ = std::fs::set_permissions(&own, std::fs::Permissions::from_mode(0o300));
            Ok(own)
        }
        Err(source) => Err(ScratchError::Parent { path: own, source }),
    }
}

/// A new scratch folder for one trial, removed when dropped.
pub fn scratch() -> Result<tempfile::TempDir, ScratchError> {
    let parent = parent().map_err(ScratchError::ParentEarlier)?;
    let made = || {
        tempfile::Builder::new()
            .prefix("gauntlet-agent-")
            .rand_bytes(24)
            .tempdir_in(parent)
    };
    match made() {
        // The folder went away under a live process: a command that ran inside it removed it
        // as it ended (Python's `gauntlet._native.cli`, then `gauntlet.run` with a `cmd:`
        // agent in the same interpreter). It is made again.
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            make_own()?;
            made().map_err(ScratchError::Scratch)
        }
        done => done.map_err(ScratchError::Scratch),
    }
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
