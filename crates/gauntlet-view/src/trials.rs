//! A run's trials as the viewer pages them: one pass over `trials.jsonl` notes where each record
//! starts and what the table shows of it (status, tags, the evaluators that failed it, a little
//! text to search), kept beside the run so the next open reads the index, not the records. A run
//! that is still going is read on from where the index stopped.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use gauntlet_model::{Severity, TrialRecord, TrialStatus};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::ViewError;

/// The file beside `trials.jsonl` that keeps the index of a finished run.
pub const INDEX_FILE: &str = "view-index.json";

/// Version of [`INDEX_FILE`]'s layout; another version is rebuilt, not read.
const INDEX_VERSION: u32 = 1;

/// How much of `trials.jsonl` is parsed at a time.
const BATCH_BYTES: usize = 16 << 20;

/// Whole lines read from `trials.jsonl`: their bytes, and each line's offset in the file and
/// span in the bytes.
#[derive(Default)]
struct Batch {
    bytes: Vec<u8>,
    lines: Vec<(u64, usize, usize)>,
}

/// Search text kept per trial: the case, the error and the start of the final answer.
const TEXT_CHARS: usize = 240;

/// What the trial table shows of one trial, and where its record is.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Entry {
    /// Byte offset of its line in `trials.jsonl`.
    pub offset: u64,
    /// The line's length, without the newline.
    pub len: u64,
    pub case_id: String,
    pub epoch: u32,
    pub status: TrialStatus,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    /// Evaluators whose verdict failed the trial.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failed: Vec<String>,
    pub tool_calls: u32,
    pub duration_ms: f64,
    pub cost_eur: f64,
    /// The harness error, or the start of the final answer.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub text: String,
}

/// The trials of one run folder.
#[derive(Debug, Serialize, Deserialize)]
pub struct TrialIndex {
    version: u32,
    /// How much of `trials.jsonl` has been read (whole lines only).
    indexed_bytes: u64,
    /// The file's length when the last refresh found a line not ended yet: while it stays that
    /// long, the line is not read again.
    #[serde(skip)]
    unfinished_at: Option<u64>,
    entries: Vec<Entry>,
    #[serde(skip)]
    by_key: HashMap<(String, u32), usize>,
}

impl Default for TrialIndex {
    fn default() -> TrialIndex {
        TrialIndex {
            version: INDEX_VERSION,
            indexed_bytes: 0,
            unfinished_at: None,
            entries: Vec::new(),
            by_key: HashMap::new(),
        }
    }
}

/// What a page of trials is filtered by.
#[derive(Debug, Default, Clone)]
pub struct Filter {
    /// `passed`, `failed` or `error`.
    pub status: Option<String>,
    /// The case id, exactly.
    pub case: Option<String>,
    /// A tag the trial's case has.
    pub tag: Option<String>,
    /// An evaluator that failed the trial.
    pub evaluator: Option<String>,
    /// Text in the case id, the error or the final answer (case-insensitive).
    pub q: Option<String>,
}

impl Filter {
    fn status(&self) -> Result<Option<TrialStatus>, ViewError> {
        match self.status.as_deref().filter(|s| !s.is_empty()) {
            None => Ok(None),
            Some("passed") => Ok(Some(TrialStatus::Passed)),
            Some("failed") => Ok(Some(TrialStatus::Failed)),
            Some("error") => Ok(Some(TrialStatus::Error)),
            Some(other) => Err(ViewError::BadRequest(format!(
                "status={other}: one of passed, failed, error"
            ))),
        }
    }
}

fn nonempty(s: &Option<String>) -> Option<&str> {
    s.as_deref().filter(|s| !s.is_empty())
}

/// The part of a record the index reads; the rest of the line is skipped.
#[derive(Deserialize)]
struct Line {
    case_id: String,
    epoch: u32,
    status: TrialStatus,
    #[serde(default)]
    error: Option<String>,
    #[serde(default)]
    tags: Vec<String>,
    #[serde(default)]
    trajectory: LineTrajectory,
    #[serde(default)]
    scores: Vec<LineScore>,
    #[serde(default)]
    duration_ms: f64,
}

#[derive(Deserialize, Default)]
struct LineTrajectory {
    #[serde(default)]
    events: Vec<LineEvent>,
    #[serde(default)]
    final_answer: Option<String>,
}

#[derive(Deserialize)]
struct LineEvent {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    cost_eur: f64,
    #[serde(default)]
    simulated_user: bool,
}

#[derive(Deserialize)]
struct LineScore {
    name: String,
    passed: bool,
    severity: Severity,
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> ViewError + '_ {
    move |e| ViewError::Io(format!("{}: {e}", path.display()))
}

impl TrialIndex {
    /// The index kept in `dir`, if there is one of this layout that holds together (entries in
    /// order, each within what was read); else an empty one. It is a cache: it is only trusted
    /// as far as that, and a record read through it is checked against its entry.
    pub fn load(dir: &Path) -> TrialIndex {
        let path = dir.join(INDEX_FILE);
        let mut index = gauntlet_store::open::read_regular(&path)
            .ok()
            .and_then(|bytes| serde_json::from_slice::<TrialIndex>(&bytes).ok())
            .filter(|i| i.version == INDEX_VERSION && i.holds_together())
            .unwrap_or_default();
        index.by_key = index
            .entries
            .iter()
            .enumerate()
            .map(|(i, e)| ((e.case_id.clone(), e.epoch), i))
            .collect();
        index
    }

    fn holds_together(&self) -> bool {
        let mut end = 0;
        self.entries.iter().all(|e| {
            let ok = e.offset >= end
                && e.offset
                    .checked_add(e.len)
                    .is_some_and(|x| x <= self.indexed_bytes);
            end = e.offset + e.len;
            ok
        })
    }

    /// Keeps the index beside the run (a folder it cannot write to keeps it in memory only).
    pub fn save(&self, dir: &Path) {
        if let Ok(bytes) = serde_json::to_vec(self) {
            let _ = crate::write::replace_file(&dir.join(INDEX_FILE), &bytes, false);
        }
    }

    /// Reads what `trials.jsonl` gained since the last call (from the start when it shrank: a
    /// resumed run drops a line cut short). Whether anything was added.
    pub fn refresh(&mut self, trials: &Path) -> Result<bool, ViewError> {
        let len = match std::fs::metadata(trials) {
            // A pipe or a device is not read (opening one would block).
            Ok(m) if m.is_file() => m.len(),
            Ok(_) => 0,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => 0,
            Err(e) => return Err(io(trials)(e)),
        };
        if len < self.indexed_bytes {
            *self = TrialIndex::default();
        }
        if len == self.indexed_bytes || self.unfinished_at == Some(len) {
            return Ok(false);
        }
        self.unfinished_at = None;
        let mut file = gauntlet_store::open::open_regular(trials).map_err(io(trials))?;
        file.seek(SeekFrom::Start(self.indexed_bytes))
            .map_err(io(trials))?;
        let mut reader = BufReader::with_capacity(1 << 20, file.take(len - self.indexed_bytes));
        // Lines are read in batches and each batch is parsed on every core, in order.
        let mut batch = Batch::default();
        let mut added = false;
        loop {
            let start = batch.bytes.len();
            // A line is at most what every reader of the store takes: one without end is an
            // error, not all memory.
            let limit = gauntlet_store::open::MAX_LINE_BYTES;
            let read = (&mut reader)
                .take(limit as u64 + 1)
                .read_until(b'\n', &mut batch.bytes)
                .map_err(io(trials))?;
            if read > limit && batch.bytes.last() != Some(&b'\n') {
                return Err(io(trials)(std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    format!("a line is longer than {limit} bytes, the most gauntlet reads"),
                )));
            }
            // A line still being written is read once the file grows.
            let whole = read > 0 && batch.bytes.last() == Some(&b'\n');
            if whole {
                batch
                    .lines
                    .push((self.indexed_bytes, start, batch.bytes.len()));
                self.indexed_bytes += read as u64;
            } else {
                batch.bytes.truncate(start);
                if read > 0 {
                    self.unfinished_at = Some(len);
                }
            }
            if !whole || batch.bytes.len() >= BATCH_BYTES {
                added |= self.take(&batch);
                batch.bytes.clear();
                batch.lines.clear();
            }
            if !whole {
                break;
            }
        }
        Ok(added)
    }

    /// Adds a batch's records, parsed on every core; whether any was new.
    fn take(&mut self, batch: &Batch) -> bool {
        let body = |&(_, from, to): &(u64, usize, usize)| trim_newline(&batch.bytes[from..to]);
        let parse = |lines: &[(u64, usize, usize)]| -> Vec<Option<Line>> {
            lines
                .iter()
                // A line that is not a record (a disk error, a hand edit) is passed over: the
                // run's readers name it; the viewer shows the rest.
                .map(|l| serde_json::from_slice::<Line>(body(l)).ok())
                .collect()
        };
        let workers = std::thread::available_parallelism().map_or(1, |n| n.get().min(8));
        let parsed: Vec<Option<Line>> = if workers == 1 || batch.lines.len() < 64 {
            parse(&batch.lines)
        } else {
            let size = batch.lines.len().div_ceil(workers);
            std::thread::scope(|scope| {
                let parts: Vec<_> = batch
                    .lines
                    .chunks(size)
                    .map(|part| scope.spawn(move || parse(part)))
                    .collect();
                parts
                    .into_iter()
                    .flat_map(|p| p.join().unwrap_or_default())
                    .collect()
            })
        };
        let mut added = false;
        for (line, parsed) in batch.lines.iter().zip(parsed) {
            let Some(parsed) = parsed else { continue };
            let key = (parsed.case_id.clone(), parsed.epoch);
            if self.by_key.contains_key(&key) {
                continue; // A resumed run may have written a record twice: the first counts.
            }
            self.by_key.insert(key, self.entries.len());
            self.entries
                .push(entry_of(parsed, line.0, body(line).len() as u64));
            added = true;
        }
        added
    }

    /// Every trial, in the order they finished.
    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }

    /// The trials that match `filter`: how many, and `limit` of them from `offset`.
    pub fn page(
        &self,
        filter: &Filter,
        offset: usize,
        limit: usize,
    ) -> Result<(usize, Vec<&Entry>), ViewError> {
        let status = filter.status()?;
        let q = nonempty(&filter.q).map(str::to_lowercase);
        let matches = |e: &&Entry| {
            status.is_none_or(|s| e.status == s)
                && nonempty(&filter.case).is_none_or(|c| e.case_id == c)
                && nonempty(&filter.tag).is_none_or(|t| e.tags.iter().any(|x| x == t))
                && nonempty(&filter.evaluator).is_none_or(|v| e.failed.iter().any(|x| x == v))
                && q.as_deref().is_none_or(|q| {
                    e.case_id.to_lowercase().contains(q) || e.text.to_lowercase().contains(q)
                })
        };
        let mut total = 0;
        let mut page = Vec::new();
        for e in self.entries.iter().filter(matches) {
            if total >= offset && page.len() < limit {
                page.push(e);
            }
            total += 1;
        }
        Ok((total, page))
    }

    /// The stored record of `(case_id, epoch)` (states restricted to what changed), if the run
    /// has it.
    pub fn record(
        &self,
        trials: &Path,
        case_id: &str,
        epoch: u32,
    ) -> Result<Option<TrialRecord>, ViewError> {
        let Some(&i) = self.by_key.get(&(case_id.to_owned(), epoch)) else {
            return Ok(None);
        };
        let e = &self.entries[i];
        let size = std::fs::metadata(trials)
            .ok()
            .filter(|m| m.is_file())
            .map_or(0, |m| m.len());
        let changed = || {
            ViewError::Io(format!(
                "{}: the file changed under the viewer's index; reload the page",
                trials.display()
            ))
        };
        if e.offset.checked_add(e.len).is_none_or(|end| end > size) {
            return Err(changed());
        }
        let mut file = gauntlet_store::open::open_regular(trials).map_err(io(trials))?;
        file.seek(SeekFrom::Start(e.offset)).map_err(io(trials))?;
        let mut line = Vec::new();
        (&mut file)
            .take(e.len)
            .read_to_end(&mut line)
            .map_err(io(trials))?;
        let mut record: TrialRecord = serde_json::from_slice(&line)
            .map_err(|err| ViewError::Io(format!("{}: {err}", trials.display())))?;
        if record.case_id != e.case_id || record.epoch != e.epoch {
            return Err(changed());
        }
        let mut states = gauntlet_store::StateReader::for_file(trials);
        let (initial, final_state) = (
            std::mem::take(&mut record.initial_state),
            std::mem::take(&mut record.final_state),
        );
        (record.initial_state, record.final_state) = states
            .lean(initial, final_state)
            .map_err(|err| ViewError::Io(err.to_string()))?;
        Ok(Some(record))
    }
}

fn trim_newline(line: &[u8]) -> &[u8] {
    let mut end = line.len();
    while end > 0 && matches!(line[end - 1], b'\n' | b'\r') {
        end -= 1;
    }
    &line[..end]
}

fn entry_of(l: Line, offset: u64, len: u64) -> Entry {
    let mut failed: Vec<String> = l
        .scores
        .into_iter()
        .filter(|s| !s.passed && s.severity != Severity::Info)
        .map(|s| s.name)
        .collect();
    failed.sort();
    failed.dedup();
    let text = l
        .error
        .or(l.trajectory.final_answer)
        .unwrap_or_default()
        .chars()
        .take(TEXT_CHARS)
        .collect();
    Entry {
        offset,
        len,
        case_id: l.case_id,
        epoch: l.epoch,
        status: l.status,
        tags: l.tags,
        failed,
        tool_calls: l
            .trajectory
            .events
            .iter()
            .filter(|e| e.kind == "tool_call")
            .count() as u32,
        duration_ms: l.duration_ms,
        cost_eur: l
            .trajectory
            .events
            .iter()
            .filter(|e| e.kind == "model_call" && !e.simulated_user)
            .fold(0.0, |sum, e| sum + e.cost_eur),
        text,
    }
}

/// A trial's entry as the API lists it.
pub fn entry_json(e: &Entry) -> Value {
    serde_json::json!({
        "case_id": e.case_id,
        "epoch": e.epoch,
        "status": e.status,
        "tags": e.tags,
        "failed": e.failed,
        "tool_calls": e.tool_calls,
        "duration_ms": e.duration_ms,
        "cost_eur": e.cost_eur,
        "text": e.text,
    })
}

/// Where a run folder keeps its records.
pub fn trials_file(dir: &Path) -> PathBuf {
    dir.join("trials.jsonl")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    /// A record as `trials.jsonl` holds one: a model call, and a tool call when `tool` (the
    /// index counts it; the record itself then is not one the model reads back).
    fn record_line(case: &str, epoch: u32, status: &str, failed: &[&str], tool: bool) -> String {
        let score = |name: &str, severity: &str| {
            serde_json::json!({"name": name, "dimension": "outcome", "value": 0.0, "score": 0.0,
                               "passed": false, "severity": severity, "details": {}})
        };
        let scores: Vec<Value> = failed
            .iter()
            .map(|n| score(n, "error"))
            .chain([score("note", "info")])
            .collect();
        let mut events = vec![serde_json::json!({"type": "model_call", "model": "m",
            "prompt_tokens": 1, "completion_tokens": 1, "cost_eur": 0.5, "latency_ms": 1.0})];
        if tool {
            events.push(serde_json::json!({"type": "tool_call", "tool": "x"}));
        }
        serde_json::json!({
            "case_id": case, "epoch": epoch, "seed": 0, "trace_id": "0".repeat(32),
            "status": status, "tags": ["t"], "initial_state": {}, "final_state": {},
            "trajectory": {"events": events, "final_answer": format!("Answer for {case}")},
            "scores": scores, "duration_ms": 3.0,
        })
        .to_string()
    }

    fn line(case: &str, epoch: u32, status: &str, failed: &[&str]) -> String {
        record_line(case, epoch, status, failed, false)
    }

    #[test]
    fn a_growing_file_is_read_on_from_where_it_stopped_whole_lines_only() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("trials.jsonl");
        let mut f = std::fs::File::create(&path).unwrap();
        writeln!(f, "{}", record_line("a", 0, "passed", &[], true)).unwrap();
        // A line still being written: not read yet.
        let half = line("b", 0, "failed", &["x"]);
        write!(f, "{}", &half[..10]).unwrap();
        f.flush().unwrap();
        let mut index = TrialIndex::default();
        assert!(index.refresh(&path).unwrap());
        assert_eq!(index.entries().len(), 1);
        writeln!(f, "{}", &half[10..]).unwrap();
        // A record written twice (a resumed run) counts once; a line that is not a record is
        // passed over.
        writeln!(f, "{}", line("a", 0, "failed", &["y"])).unwrap();
        writeln!(f, "not json").unwrap();
        f.flush().unwrap();
        assert!(index.refresh(&path).unwrap());
        assert!(!index.refresh(&path).unwrap());
        let e = index.entries();
        assert_eq!(e.len(), 2);
        assert_eq!(e[0].status, TrialStatus::Passed);
        assert_eq!(e[1].failed, vec!["x".to_owned()]);
        assert_eq!(
            (e[0].tool_calls, e[1].tool_calls, e[1].cost_eur),
            (1, 0, 0.5)
        );
        let record = index.record(&path, "b", 0).unwrap().unwrap();
        assert_eq!(record.case_id, "b");
        assert!(index.record(&path, "c", 0).unwrap().is_none());
        // Kept beside the run and read back, it answers the same.
        index.save(dir.path());
        let again = TrialIndex::load(dir.path());
        assert_eq!(again.entries().len(), 2);
        assert!(again.record(&path, "b", 0).unwrap().is_some());
        // A file that shrank (a resumed run dropped a cut line) is read again from the start.
        std::fs::write(&path, format!("{}\n", line("z", 1, "error", &[]))).unwrap();
        let mut again = again;
        assert!(again.refresh(&path).unwrap());
        assert_eq!(again.entries().len(), 1);
        assert_eq!(again.entries()[0].case_id, "z");
    }

    #[test]
    fn pages_count_every_match_and_hold_only_their_slice() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("trials.jsonl");
        let mut text = String::new();
        for i in 0..30 {
            let status = if i % 3 == 0 { "failed" } else { "passed" };
            let failed: &[&str] = if i % 3 == 0 { &["judge"] } else { &[] };
            text.push_str(&line(&format!("case-{i}"), 0, status, failed));
            text.push('\n');
        }
        std::fs::write(&path, text).unwrap();
        let mut index = TrialIndex::default();
        index.refresh(&path).unwrap();
        let f = |status: &str, q: &str| Filter {
            status: Some(status.into()),
            q: Some(q.into()),
            ..Filter::default()
        };
        let (total, page) = index.page(&f("failed", ""), 4, 3).unwrap();
        assert_eq!(total, 10);
        let cases: Vec<&str> = page.iter().map(|e| e.case_id.as_str()).collect();
        assert_eq!(cases, ["case-12", "case-15", "case-18"]);
        let (total, _) = index.page(&f("", "ANSWER FOR CASE-2"), 0, 50).unwrap();
        assert_eq!(total, 11, "case-2 and case-20..29");
        let by_evaluator = Filter {
            evaluator: Some("judge".into()),
            tag: Some("t".into()),
            ..Filter::default()
        };
        assert_eq!(index.page(&by_evaluator, 0, 1).unwrap().0, 10);
        assert!(matches!(
            index.page(&f("maybe", ""), 0, 1),
            Err(ViewError::BadRequest(_))
        ));
    }

    #[test]
    fn a_large_file_parsed_on_every_core_keeps_its_order_and_offsets() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("trials.jsonl");
        let text: String = (0..700)
            .map(|i| format!("{}\n", line(&format!("c{i}"), i % 7, "passed", &[])))
            .collect();
        std::fs::write(&path, text).unwrap();
        let mut index = TrialIndex::default();
        index.refresh(&path).unwrap();
        let cases: Vec<String> = index.entries().iter().map(|e| e.case_id.clone()).collect();
        let expected: Vec<String> = (0..700).map(|i| format!("c{i}")).collect();
        assert_eq!(cases, expected);
        let r = index.record(&path, "c654", 654 % 7).unwrap().unwrap();
        assert_eq!(r.case_id, "c654");
    }

    #[test]
    fn a_planted_index_that_does_not_hold_together_is_not_trusted() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("trials.jsonl");
        std::fs::write(&path, format!("{}\n", line("a", 0, "passed", &[]))).unwrap();
        let size = std::fs::metadata(&path).unwrap().len();
        let planted = serde_json::json!({"version": INDEX_VERSION, "indexed_bytes": size,
            "entries": [{"offset": 0, "len": 4611686018427387904u64, "case_id": "a", "epoch": 0,
                         "status": "passed", "tool_calls": 0, "duration_ms": 0.0, "cost_eur": 0.0}]});
        std::fs::write(dir.path().join(INDEX_FILE), planted.to_string()).unwrap();
        let mut index = TrialIndex::load(dir.path());
        assert!(
            index.entries().is_empty(),
            "rebuilt from the records instead"
        );
        index.refresh(&path).unwrap();
        assert_eq!(index.record(&path, "a", 0).unwrap().unwrap().case_id, "a");
        // One that holds together but names another record than the line holds is refused.
        let lying = serde_json::json!({"version": INDEX_VERSION, "indexed_bytes": size,
            "entries": [{"offset": 0, "len": size - 1, "case_id": "b", "epoch": 0,
                         "status": "passed", "tool_calls": 0, "duration_ms": 0.0, "cost_eur": 0.0}]});
        std::fs::write(dir.path().join(INDEX_FILE), lying.to_string()).unwrap();
        let index = TrialIndex::load(dir.path());
        assert!(matches!(index.record(&path, "b", 0), Err(ViewError::Io(_))));
    }
}
