//! The case beside its trial: a run's suite folder is found above the run's folder (the first
//! folder holding a suite configuration of the run's suite name), loaded once and kept while its
//! configuration and case files are unchanged, and each case shown as its author wrote it with
//! the file it came from ([`gauntlet_report::CasePanel`]).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use gauntlet_model::RunHeader;
use serde_json::Value;

const CONFIG_NAMES: [&str; 3] = ["gauntlet.yaml", "gauntlet.yml", "gauntlet.json"];

/// A suite's cases as panels, and the dataset hash they had when read.
struct Loaded {
    name: String,
    files: Vec<PathBuf>,
    stamp: Vec<Option<SystemTime>>,
    dataset_hash: String,
    panels: HashMap<String, Value>,
}

/// Suites read, by folder.
#[derive(Default)]
pub(crate) struct Cases {
    suites: Mutex<HashMap<PathBuf, Arc<Loaded>>>,
}

/// When the configuration and every case file were last written: a suite is read again when
/// this changes.
fn stamp(config: &Path, files: &[PathBuf]) -> Vec<Option<SystemTime>> {
    std::iter::once(config)
        .chain(files.iter().map(PathBuf::as_path))
        .map(|p| std::fs::metadata(p).and_then(|m| m.modified()).ok())
        .collect()
}

impl Cases {
    /// The panel of `case_id` in the suite of the run in `run_dir`, with `changed_since_run`
    /// when the suite's cases are no longer those the run ran; `None` when the suite cannot be
    /// found or read.
    pub(crate) fn panel(&self, run_dir: &Path, header: &RunHeader, case_id: &str) -> Option<Value> {
        for dir in run_dir.ancestors().skip(1) {
            let Some(config) = CONFIG_NAMES
                .iter()
                .map(|n| dir.join(n))
                .find(|p| p.is_file())
            else {
                continue;
            };
            let Some(loaded) = self.load(dir, &config) else {
                continue;
            };
            if loaded.name != header.suite {
                continue;
            }
            let mut out = loaded.panels.get(case_id)?.clone();
            out["changed_since_run"] = Value::Bool(loaded.dataset_hash != header.versions.dataset);
            return Some(out);
        }
        None
    }

    fn load(&self, dir: &Path, config: &Path) -> Option<Arc<Loaded>> {
        let known = self
            .suites
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(dir)
            .cloned();
        if let Some(k) = &known
            && k.stamp == stamp(config, &k.files)
        {
            return known;
        }
        let suite = gauntlet_suite::Suite::load(dir).ok()?;
        let mut files: Vec<PathBuf> = suite.cases.iter().map(|c| c.file.clone()).collect();
        files.sort();
        files.dedup();
        let panels: HashMap<String, Value> = suite
            .cases
            .iter()
            .map(|c| {
                let panel = gauntlet_report::CasePanel::new(&c.case, &c.file);
                (
                    c.case.case_id.clone(),
                    serde_json::to_value(panel).unwrap_or_default(),
                )
            })
            .collect();
        let loaded = Arc::new(Loaded {
            name: suite.config.name.clone(),
            stamp: stamp(config, &files),
            files,
            dataset_hash: suite.dataset_hash,
            panels,
        });
        self.suites
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(dir.to_owned(), loaded.clone());
        Some(loaded)
    }
}
