//! `/api/compare`'s comparisons, made once per pair of finished runs: a second request for a
//! pair (a page reloaded, three tabs open) waits for the first and shares its answer instead of
//! reading both runs again, so N requests at once cost one comparison's memory, not N. A pair
//! is known by its two folders and their `results.json` as last written, so a run resumed or
//! rescored is compared anew. A few pairs are kept; the oldest is forgotten past that.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::SystemTime;

use serde_json::Value;

/// Pairs kept.
const KEPT: usize = 8;

type Key = (PathBuf, Option<SystemTime>, PathBuf, Option<SystemTime>);
type Slot = Arc<OnceLock<Result<Value, String>>>;

/// The comparisons made, newest last.
#[derive(Default)]
pub(crate) struct Comparisons {
    made: Mutex<VecDeque<(Key, Slot)>>,
}

fn written(dir: &Path) -> Option<SystemTime> {
    std::fs::metadata(dir.join("results.json"))
        .and_then(|m| m.modified())
        .ok()
}

impl Comparisons {
    /// The comparison of the runs in `a` and `b`, made by `make` unless it was made (or is being
    /// made, then waited for) for the same two runs as they are now.
    pub(crate) fn get(
        &self,
        a: &Path,
        b: &Path,
        make: impl FnOnce() -> Result<Value, String>,
    ) -> Result<Value, String> {
        let key: Key = (a.to_owned(), written(a), b.to_owned(), written(b));
        let slot = {
            let mut made = self.made.lock().unwrap_or_else(|p| p.into_inner());
            match made.iter().find(|(k, _)| *k == key) {
                Some((_, slot)) => Arc::clone(slot),
                None => {
                    if made.len() >= KEPT {
                        made.pop_front();
                    }
                    let slot: Slot = Arc::default();
                    made.push_back((key, Arc::clone(&slot)));
                    slot
                }
            }
        };
        slot.get_or_init(make).clone()
    }
}

/// A trial's cell in the case × run matrix: its status and why it did not pass (most severe
/// first, each `evaluator: reason`, or the harness error).
fn cell(t: &gauntlet_model::TrialSummary) -> Value {
    let mut failing: Vec<&gauntlet_model::Score> =
        t.scores.iter().filter(|s| s.fails_trial()).collect();
    failing.sort_by_key(|s| std::cmp::Reverse(s.severity));
    let mut reasons: Vec<String> = t.error.iter().cloned().collect();
    reasons.extend(failing.iter().map(|s| match &s.reason {
        Some(r) => format!("{}: {r}", s.name),
        None => s.name.clone(),
    }));
    let critical = failing
        .iter()
        .any(|s| s.severity == gauntlet_model::Severity::Critical);
    serde_json::json!({"status": t.status, "reasons": reasons, "critical": critical})
}

/// The case × run matrix of two runs: one row per (case, epoch) of either, the flipped ones
/// first in the comparison's order (worse first), then the rest by case and epoch; a trial
/// missing from a run is `null` in its column.
pub(crate) fn matrix(
    a: &[gauntlet_model::TrialSummary],
    b: &[gauntlet_model::TrialSummary],
    flips: &[gauntlet_model::compare::Flip],
) -> Vec<Value> {
    use std::collections::BTreeMap;
    /// A row's cells in A and B.
    type Cells = (Option<Value>, Option<Value>);
    let mut rows: BTreeMap<(&str, u32), Cells> = BTreeMap::new();
    for t in a {
        rows.entry((&t.case_id, t.epoch)).or_default().0 = Some(cell(t));
    }
    for t in b {
        rows.entry((&t.case_id, t.epoch)).or_default().1 = Some(cell(t));
    }
    let row = |(case_id, epoch): (&str, u32),
               (ca, cb): &(Option<Value>, Option<Value>),
               flipped| {
        serde_json::json!({"case_id": case_id, "epoch": epoch, "flipped": flipped, "a": ca, "b": cb})
    };
    let mut out = Vec::with_capacity(rows.len());
    for f in flips {
        if let Some(cells) = rows.remove(&(f.case_id.as_str(), f.epoch)) {
            out.push(row((&f.case_id, f.epoch), &cells, true));
        }
    }
    out.extend(rows.iter().map(|(k, cells)| row(*k, cells, false)));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// A trial: its case, status and failing score (severity, reason), if any.
    type Row<'a> = (&'a str, &'a str, Option<(&'a str, &'a str)>);

    fn trials(rows: &[Row]) -> Vec<gauntlet_model::TrialSummary> {
        rows.iter()
            .map(|(case, status, failing)| {
                let scores: Vec<Value> = failing
                    .iter()
                    .map(|(severity, reason)| {
                        serde_json::json!({"name": "check", "dimension": "safety", "value": 0.0,
                            "score": 0.0, "passed": false, "severity": severity, "reason": reason})
                    })
                    .collect();
                serde_json::from_value(serde_json::json!({"case_id": case, "epoch": 0,
                    "trace_id": "0", "status": status, "tool_calls": 0, "steps": 0, "tokens": 0,
                    "cost_eur": 0.0, "duration_ms": 0.0, "final_state": null, "scores": scores}))
                .unwrap()
            })
            .collect()
    }

    #[test]
    fn the_matrix_lists_the_flipped_trials_first_with_their_reasons() {
        let a = trials(&[
            ("a", "passed", None),
            ("b", "passed", None),
            ("c", "failed", Some(("error", "was wrong"))),
        ]);
        let b = trials(&[
            ("b", "failed", Some(("critical", "wrote unconfirmed"))),
            ("a", "passed", None),
            ("d", "passed", None),
        ]);
        let flips: Vec<gauntlet_model::compare::Flip> = serde_json::from_value(serde_json::json!([
            {"case_id": "b", "epoch": 0, "a": "passed", "b": "failed", "reasons": []}
        ]))
        .unwrap();
        let m = matrix(&a, &b, &flips);
        let order: Vec<(&str, bool)> = m
            .iter()
            .map(|r| {
                (
                    r["case_id"].as_str().unwrap(),
                    r["flipped"].as_bool().unwrap(),
                )
            })
            .collect();
        assert_eq!(
            order,
            [("b", true), ("a", false), ("c", false), ("d", false)]
        );
        assert_eq!(
            m[0]["b"]["reasons"],
            serde_json::json!(["check: wrote unconfirmed"])
        );
        assert_eq!(m[0]["b"]["critical"], true);
        assert_eq!(m[2]["b"], Value::Null, "c is not in B");
        assert_eq!(m[3]["a"], Value::Null, "d is not in A");
    }

    /// Regression (issue 48, M10): three `/api/compare` of one pair at once read and compared
    /// both runs three times over (5.35 GB for a 46k-trial run); now once.
    #[test]
    fn one_pair_asked_at_once_is_compared_once() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a"), dir.path().join("b"));
        for d in [&a, &b] {
            std::fs::create_dir(d).unwrap();
            std::fs::write(d.join("results.json"), "{}").unwrap();
        }
        let cache = Comparisons::default();
        let made = AtomicUsize::new(0);
        std::thread::scope(|s| {
            for _ in 0..3 {
                s.spawn(|| {
                    let v = cache.get(&a, &b, || {
                        made.fetch_add(1, Ordering::SeqCst);
                        std::thread::sleep(std::time::Duration::from_millis(100));
                        Ok(serde_json::json!({"flips": []}))
                    });
                    assert_eq!(v.unwrap()["flips"], serde_json::json!([]));
                });
            }
        });
        assert_eq!(made.load(Ordering::SeqCst), 1);
        // Another pair, or the same runs rewritten, is compared anew.
        let again = cache.get(&b, &a, || Ok(Value::Null));
        assert_eq!(again.unwrap(), Value::Null);
        std::thread::sleep(std::time::Duration::from_millis(20));
        std::fs::write(a.join("results.json"), "{ }").unwrap();
        let fresh = cache.get(&a, &b, || Ok(serde_json::json!(2))).unwrap();
        assert_eq!(fresh, serde_json::json!(2));
    }
}
