//! The label file a team fills from the viewer: JSON Lines, one human label per line, the file
//! `gauntlet calibrate --labels` reads. A rater labelling an item again replaces their label.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use gauntlet_model::{Label, LabelValue};
use serde::Deserialize;

use crate::ViewError;

/// A label as the viewer posts it.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Posted {
    /// The trial, `CASE#EPOCH`.
    pub item: String,
    /// `pass` or `fail`.
    pub label: String,
    /// Who labels.
    pub rater: String,
    #[serde(default)]
    pub note: Option<String>,
}

/// The label file, written one change at a time.
pub struct LabelFile {
    path: PathBuf,
    lock: Mutex<()>,
}

const MAX_TEXT: usize = 2_000;

impl LabelFile {
    pub fn new(path: PathBuf) -> LabelFile {
        LabelFile {
            path,
            lock: Mutex::new(()),
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Every label (none while the file does not exist).
    pub fn read(&self) -> Result<Vec<Label>, ViewError> {
        let _guard = self.lock.lock().unwrap_or_else(|p| p.into_inner());
        self.read_unlocked()
    }

    fn read_unlocked(&self) -> Result<Vec<Label>, ViewError> {
        let text = match gauntlet_store::open::read_regular_to_string(&self.path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(ViewError::Io(format!("{}: {e}", self.path.display()))),
        };
        text.lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty())
            .map(|(i, l)| {
                serde_json::from_str(l)
                    .map_err(|e| ViewError::Io(format!("{}:{}: {e}", self.path.display(), i + 1)))
            })
            .collect()
    }

    /// Keeps `posted`, replacing the same rater's label of the same item; the file is
    /// rewritten whole into a temporary file and renamed, so a reader never sees half of it.
    pub fn put(&self, posted: Posted) -> Result<Label, ViewError> {
        let bad = |m: &str| Err(ViewError::BadRequest(m.to_owned()));
        let rater = posted.rater.trim();
        // Characters, not bytes: a rater's name or note in emoji is as long as it looks.
        if rater.is_empty() || rater.chars().count() > 100 {
            return bad("rater: a name of 1 to 100 characters");
        }
        let Some((case, epoch)) = posted.item.rsplit_once('#') else {
            return bad("item: CASE#EPOCH");
        };
        let canonical = epoch.parse::<u32>().is_ok_and(|n| n.to_string() == epoch);
        if case.is_empty() || !canonical || posted.item.chars().count() > 500 {
            return bad("item: CASE#EPOCH, the epoch a number as trials are named (0, 1, ...)");
        }
        if rater.chars().any(char::is_control) {
            return bad("rater: a name without control characters");
        }
        let value = match posted.label.as_str() {
            "pass" => true,
            "fail" => false,
            _ => return bad("label: pass or fail"),
        };
        if posted
            .note
            .as_ref()
            .is_some_and(|n| n.chars().count() > MAX_TEXT)
        {
            return bad("note: at most 2000 characters");
        }
        let label = Label {
            item: posted.item.clone(),
            label: LabelValue::Bool(value),
            rater: Some(rater.to_owned()),
            segment: Default::default(),
            note: posted.note.filter(|n| !n.trim().is_empty()),
        };
        let _guard = self.lock.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(parent) = self.path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent)
                .map_err(|e| ViewError::Io(format!("{}: {e}", parent.display())))?;
        }
        // Viewers in other processes may share the file: one change at a time across them.
        let lock_path = self.path.with_extension("jsonl.lock");
        let lock = gauntlet_store::open::open_regular_with(
            std::fs::OpenOptions::new()
                .create(true)
                .truncate(false)
                .write(true),
            &lock_path,
        )
        .map_err(|e| ViewError::Io(format!("{}: {e}", lock_path.display())))?;
        lock.lock()
            .map_err(|e| ViewError::Io(format!("{}: {e}", lock_path.display())))?;
        let mut labels = self.read_unlocked()?;
        labels.retain(|l| !(l.item == label.item && l.rater.as_deref() == Some(rater)));
        labels.push(label.clone());
        let mut text = String::new();
        for l in &labels {
            text.push_str(&serde_json::to_string(l).map_err(|e| ViewError::Io(e.to_string()))?);
            text.push('\n');
        }
        crate::write::replace_file(&self.path, text.as_bytes(), true)
            .map_err(|e| ViewError::Io(format!("{}: {e}", self.path.display())))?;
        Ok(label)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn posted(item: &str, label: &str, rater: &str) -> Posted {
        Posted {
            item: item.into(),
            label: label.into(),
            rater: rater.into(),
            note: None,
        }
    }

    #[test]
    fn a_rater_labelling_again_replaces_their_label_and_not_anothers() {
        let dir = tempfile::tempdir().unwrap();
        let file = LabelFile::new(dir.path().join("sub/labels.jsonl"));
        file.put(posted("a#0", "pass", "alice")).unwrap();
        file.put(posted("a#0", "fail", "bob")).unwrap();
        file.put(posted("a#0", "fail", "alice")).unwrap();
        let labels = file.read().unwrap();
        assert_eq!(labels.len(), 2);
        let alice = labels
            .iter()
            .find(|l| l.rater.as_deref() == Some("alice"))
            .unwrap();
        assert_eq!(alice.label, LabelValue::Bool(false));
        // What calibrate reads: the model's own reader takes every line.
        let text = std::fs::read_to_string(file.path()).unwrap();
        for line in text.lines() {
            serde_json::from_str::<Label>(line).unwrap();
        }
    }

    #[test]
    fn a_wrong_label_is_refused_and_nothing_is_written() {
        let dir = tempfile::tempdir().unwrap();
        let file = LabelFile::new(dir.path().join("labels.jsonl"));
        for bad in [
            posted("a#0", "maybe", "alice"),
            posted("a", "pass", "alice"),
            posted("a#x", "pass", "alice"),
            posted("a#0", "pass", "  "),
        ] {
            assert!(matches!(file.put(bad), Err(ViewError::BadRequest(_))));
        }
        assert!(!file.path().exists());
    }

    /// Issue 48: a rater of 30 emoji (120 bytes) was refused as longer than 100.
    #[test]
    fn a_raters_name_is_counted_in_characters_not_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let file = LabelFile::new(dir.path().join("labels.jsonl"));
        file.put(posted("a#0", "pass", &"😀".repeat(30))).unwrap();
        let mut note = posted("a#0", "pass", "alice");
        note.note = Some("é".repeat(2000));
        file.put(note).unwrap();
        assert!(file.put(posted("a#0", "pass", &"😀".repeat(101))).is_err());
    }

    /// Issue 48 (M1): a FIFO planted as the lock file or the label file made every labelling
    /// request hang for good; now each is an error at once.
    #[cfg(unix)]
    #[test]
    fn a_fifo_planted_as_the_lock_or_the_labels_is_an_error_not_a_hang() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("labels.jsonl");
        let fifo = |p: &std::path::Path| {
            let c = std::ffi::CString::new(p.to_str().unwrap()).unwrap();
            assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
        };
        fifo(&path.with_extension("jsonl.lock"));
        let file = LabelFile::new(path.clone());
        let e = file.put(posted("a#0", "pass", "alice")).unwrap_err();
        assert!(e.to_string().contains("regular files only"), "{e}");
        std::fs::remove_file(path.with_extension("jsonl.lock")).unwrap();
        fifo(&path);
        assert!(file.read().is_err());
    }
}
