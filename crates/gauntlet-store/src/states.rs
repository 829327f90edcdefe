//! Large states, stored once per run folder (see `gauntlet_model::stored_state`).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use gauntlet_model::StateRef;
use gauntlet_model::stored_state::{apply, is_large, restrict, stored_ref};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::error::StoreError;

/// Writes each distinct large initial state once under `RUN/states/`.
#[derive(Default)]
pub(crate) struct StateWriter {
    /// The file of each state already written, by the digest of its JSON.
    written: HashMap<[u8; 32], String>,
    /// Shared states already seen (kept alive, so their addresses stay theirs): their stored
    /// reference, or `None` when small enough to inline. Keyed by address (as a number, so the
    /// writer can move between threads).
    shared: HashMap<usize, (Arc<Value>, Option<String>)>,
}

impl StateWriter {
    /// Like [`StateWriter::compact`], for a state shared between trials: serialised and hashed
    /// once.
    pub(crate) fn compact_shared(
        &mut self,
        dir: &Path,
        initial: &Arc<Value>,
        final_state: StateRef<'_>,
    ) -> Result<Option<(Value, Value)>, StoreError> {
        let key = Arc::as_ptr(initial) as usize;
        let name = match self.shared.get(&key) {
            Some((_, name)) => name.clone(),
            None => {
                let name = self.store(dir, initial)?;
                self.shared.insert(key, (Arc::clone(initial), name.clone()));
                name
            }
        };
        Ok(name.map(|name| refs(&name, initial, final_state)))
    }

    /// Whether [`StateWriter::compact`] would store this initial state under `states/` (a large
    /// state not already a reference to one).
    pub(crate) fn compacts(initial: &Value) -> bool {
        stored_ref(initial).is_none() && is_large(initial)
    }

    /// The compact forms of a trial's states, or `None` when they are small enough to inline.
    pub(crate) fn compact(
        &mut self,
        dir: &Path,
        initial: &Value,
        final_state: &Value,
    ) -> Result<Option<(Value, Value)>, StoreError> {
        if !Self::compacts(initial) {
            return Ok(None);
        }
        Ok(self
            .store(dir, initial)?
            .map(|name| refs(&name, initial, final_state.into())))
    }

    /// Writes a large state under `states/` (once per distinct content) and names its file;
    /// `None` for a state small enough to inline.
    fn store(&mut self, dir: &Path, state: &Value) -> Result<Option<String>, StoreError> {
        if !is_large(state) {
            return Ok(None);
        }
        let text = serde_json::to_vec(state).map_err(|e| StoreError::Format {
            path: dir.to_owned(),
            line: 0,
            message: e.to_string(),
        })?;
        let digest: [u8; 32] = Sha256::digest(&text).into();
        if let Some(n) = self.written.get(&digest) {
            return Ok(Some(n.clone()));
        }
        let hex = gauntlet_model::digest::hex(&digest[..8]);
        let name = format!("states/{hex}.json");
        let path = dir.join(&name);
        std::fs::create_dir_all(dir.join("states")).map_err(|source| StoreError::Io {
            path: dir.join("states"),
            source,
        })?;
        std::fs::write(&path, &text).map_err(|source| StoreError::Io {
            path: path.clone(),
            source,
        })?;
        self.written.insert(digest, name.clone());
        Ok(Some(name))
    }
}

/// A trial's stored states: the base by name, the final state as the base plus its changes.
fn refs(name: &str, initial: &Value, final_state: StateRef<'_>) -> (Value, Value) {
    (
        json!({"$state": name}),
        json!({"$state": name, "$changes": final_state.changes_from(initial)}),
    )
}

/// Expands stored-state references of one run folder, caching each base.
#[derive(Clone)]
pub struct StateReader {
    dir: PathBuf,
    bases: HashMap<String, Arc<Value>>,
}

impl StateReader {
    /// A reader for the run folder holding `trials_file`.
    pub fn for_file(trials_file: &Path) -> StateReader {
        StateReader {
            dir: trials_file.parent().unwrap_or(Path::new(".")).to_owned(),
            bases: HashMap::new(),
        }
    }

    /// A trial's states restricted to what changed (see `stored_state::lean`), without copying
    /// a stored base whole.
    pub fn lean(
        &mut self,
        initial: Value,
        final_state: Value,
    ) -> Result<(Value, Value), StoreError> {
        if let Some((file, Some(changes))) = stored_ref(&final_state) {
            let changes = changes.clone();
            let base = self.base(file)?;
            let before = restrict(&base, &changes);
            let after = apply(before.clone(), &changes);
            return Ok((before, after));
        }
        Ok((self.expand(initial)?, self.expand(final_state)?))
    }

    /// The state itself: `v` unchanged, or its base with its changes applied.
    pub fn expand(&mut self, v: Value) -> Result<Value, StoreError> {
        let Some((file, changes)) = stored_ref(&v) else {
            return Ok(v);
        };
        let base = self.base(file)?;
        Ok(match changes {
            Some(c) => apply((*base).clone(), c),
            None => (*base).clone(),
        })
    }

    /// A stored base, read once.
    fn base(&mut self, file: &str) -> Result<Arc<Value>, StoreError> {
        if file.contains("..") || Path::new(file).is_absolute() {
            return Err(StoreError::Format {
                path: self.dir.clone(),
                line: 0,
                message: format!("stored state `{file}` is outside the run folder"),
            });
        }
        if let Some(b) = self.bases.get(file) {
            return Ok(b.clone());
        }
        let path = self.dir.join(file);
        let io = |source| StoreError::Io {
            path: path.clone(),
            source,
        };
        // Resolved with its symlinks: a `states` folder linked elsewhere must not publish what
        // lies there (a run folder is shared and served; its states are its own).
        let (real, folder) = (
            path.canonicalize().map_err(io)?,
            self.dir.canonicalize().map_err(io)?,
        );
        if !real.starts_with(&folder) {
            return Err(StoreError::Format {
                path: self.dir.clone(),
                line: 0,
                message: format!(
                    "stored state `{file}` is outside the run folder (a symbolic link leads \
                     out of it)"
                ),
            });
        }
        let text = crate::open::read_regular(&real).map_err(io)?;
        let value: Value = serde_json::from_slice(&text).map_err(|e| StoreError::Format {
            path: path.clone(),
            line: e.line(),
            message: e.to_string(),
        })?;
        let b = Arc::new(value);
        self.bases.insert(file.to_owned(), b.clone());
        Ok(b)
    }
}
