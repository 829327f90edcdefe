//! Files the viewer writes inside folders it was given (its caches beside a run, the label
//! file): written whole into a fresh temporary file that must not exist yet (so a planted
//! symbolic link is never followed) and renamed over the name, which replaces a link rather than
//! writing through it.

use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

static SEQ: AtomicU64 = AtomicU64::new(0);

/// Replaces `path` with `bytes`; with `durable`, synced to disk before the rename (the label
/// file; a cache that a crash loses is built again).
pub fn replace_file(path: &Path, bytes: &[u8], durable: bool) -> std::io::Result<()> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = path.with_file_name(format!(
        ".{name}.{}-{}.tmp",
        std::process::id(),
        SEQ.fetch_add(1, Ordering::Relaxed)
    ));
    let written = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&tmp)
        .and_then(|mut f| {
            f.write_all(bytes)?;
            if durable { f.sync_all() } else { Ok(()) }
        })
        .and_then(|()| std::fs::rename(&tmp, path));
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_planted_link_is_replaced_not_written_through() {
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("victim.txt");
        std::fs::write(&victim, "keep").unwrap();
        let cache = dir.path().join("view-summary.json");
        std::os::unix::fs::symlink(&victim, &cache).unwrap();
        replace_file(&cache, b"{}", false).unwrap();
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep");
        assert_eq!(std::fs::read_to_string(&cache).unwrap(), "{}");
        assert!(
            !std::fs::symlink_metadata(&cache)
                .unwrap()
                .file_type()
                .is_symlink()
        );
    }
}
