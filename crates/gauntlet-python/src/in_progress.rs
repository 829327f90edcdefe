//! The run folders this process is writing, so that a second run into one of them is refused
//! with words that say so ([`claim`]), rather than failing halfway as both write `run.json`.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

static IN_PROGRESS: Mutex<Option<HashSet<PathBuf>>> = Mutex::new(None);

/// A run folder claimed by a run of this process; the claim ends when this is dropped.
pub struct Claim(Vec<PathBuf>);

impl Drop for Claim {
    fn drop(&mut self) {
        let mut held = IN_PROGRESS.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(held) = held.as_mut() {
            for dir in &self.0 {
                held.remove(dir);
            }
        }
    }
}

/// Claims the folders a run will write (its `out`, the run it resumes); the message for the
/// user when another run of this process is writing one of them.
pub fn claim<'a>(dirs: impl IntoIterator<Item = &'a Path>) -> Result<Claim, String> {
    let dirs: Vec<PathBuf> = dirs
        .into_iter()
        .map(|d| std::path::absolute(d).unwrap_or_else(|_| d.to_owned()))
        .collect();
    let mut held = IN_PROGRESS.lock().unwrap_or_else(PoisonError::into_inner);
    let held = held.get_or_insert_with(HashSet::new);
    if let Some(busy) = dirs.iter().find(|d| held.contains(*d)) {
        return Err(format!(
            "{} holds a run in progress: another gauntlet.run of this process is writing it; \
             give this run another out (or wait for that one to end)",
            busy.display()
        ));
    }
    held.extend(dirs.iter().cloned());
    Ok(Claim(dirs))
}
