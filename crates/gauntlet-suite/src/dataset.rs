//! Datasets: a case file (one case or a list), a folder of them, or a JSONL file.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use gauntlet_model::Case;
use serde_saphyr::granit_parser::{Event, Parser};

use crate::diagnostic::Diagnostic;
use crate::document::{is_json, parse};
use crate::spans::SpanIndex;

/// A case with where it came from.
#[derive(Debug, Clone)]
pub struct LoadedCase {
    /// The case.
    pub case: Case,
    /// The world it runs in, once resolved (the case's, the dataset's or the suite's default).
    pub world: Option<String>,
    /// The file it was read from.
    pub file: PathBuf,
    /// Positions of its fields.
    pub spans: Arc<SpanIndex>,
    /// JSON Pointer of the case inside its document (`""`, or `/3` in a list).
    pub pointer: String,
}

impl LoadedCase {
    /// A diagnostic at a field of this case (a JSON Pointer relative to the case).
    pub fn diagnostic(&self, field: &str, message: impl Into<String>) -> Diagnostic {
        let (line, col) = self.spans.locate(&format!("{}{field}", self.pointer));
        Diagnostic::at(&self.file, line, col, message)
    }
}

const CASE_EXTENSIONS: [&str; 4] = ["yaml", "yml", "json", "jsonl"];

/// Every case file under a path, sorted, recursively for folders. A folder named like a case
/// file and a symlink that leads back into a folder already read are problems, named once.
fn case_files(path: &Path, out: &mut Vec<PathBuf>, problems: &mut Vec<Diagnostic>) {
    case_files_in(path, out, problems, &mut std::collections::HashSet::new());
}

fn case_files_in(
    path: &Path,
    out: &mut Vec<PathBuf>,
    problems: &mut Vec<Diagnostic>,
    seen: &mut std::collections::HashSet<PathBuf>,
) {
    if path.is_dir() {
        let real = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_owned());
        if !seen.insert(real.clone()) {
            problems.push(Diagnostic::at(
                path,
                0,
                0,
                format!(
                    "a symlink loop: this folder is {}, already read; remove the link",
                    real.display()
                ),
            ));
            return;
        }
        let mut entries: Vec<PathBuf> = match std::fs::read_dir(path) {
            Ok(rd) => rd.filter_map(|e| e.ok().map(|e| e.path())).collect(),
            Err(e) => {
                problems.push(Diagnostic::at(
                    path,
                    0,
                    0,
                    format!("cannot read folder: {e}"),
                ));
                return;
            }
        };
        entries.sort();
        for p in entries {
            if p.is_dir() {
                if has_case_extension(&p) {
                    problems.push(Diagnostic::at(
                        &p,
                        0,
                        0,
                        "is a folder named like a case file; rename it (or remove it)",
                    ));
                    continue;
                }
                case_files_in(&p, out, problems, seen);
            } else if has_case_extension(&p) {
                out.push(p);
            }
        }
    } else if path.exists() {
        out.push(path.to_owned());
    } else {
        problems.push(Diagnostic::at(path, 0, 0, "no such file or folder"));
    }
}

fn has_case_extension(p: &Path) -> bool {
    p.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| CASE_EXTENSIONS.contains(&e.to_ascii_lowercase().as_str()))
}

/// Whether a document's top-level node is a sequence.
fn is_sequence(text: &str) -> bool {
    Parser::new_from_str(text)
        .filter_map(Result::ok)
        .map(|(e, _)| e)
        .find(|e| {
            matches!(
                e,
                Event::SequenceStart(..) | Event::MappingStart(..) | Event::Scalar(..)
            )
        })
        .is_some_and(|e| matches!(e, Event::SequenceStart(..)))
}

/// Loads every case under a path; problems are collected, good cases are kept.
pub fn load_cases(path: &Path, world: Option<&str>) -> (Vec<LoadedCase>, Vec<Diagnostic>) {
    let mut files = Vec::new();
    let mut problems = Vec::new();
    case_files(path, &mut files, &mut problems);
    let mut cases = Vec::new();
    for file in files {
        let text = match std::fs::read_to_string(&file) {
            Ok(t) => t,
            Err(e) => {
                problems.push(Diagnostic::at(
                    &file,
                    0,
                    0,
                    format!("cannot read file: {e}"),
                ));
                continue;
            }
        };
        let mk = |case: Case, spans: Arc<SpanIndex>, pointer: String| LoadedCase {
            world: case.world.clone().or_else(|| world.map(str::to_owned)),
            case,
            file: file.clone(),
            spans,
            pointer,
        };
        let jsonl = file
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("jsonl"));
        if jsonl {
            for (i, line) in text.lines().enumerate() {
                if line.trim().is_empty() {
                    continue;
                }
                match parse::<Case>(&file, line, true, i) {
                    Ok(doc) => cases.push(mk(doc.value, Arc::new(doc.spans), String::new())),
                    Err(d) => problems.push(d),
                }
            }
        } else if is_sequence(&text) {
            match parse::<Vec<Case>>(&file, &text, is_json(&file), 0) {
                Ok(doc) => {
                    let spans = Arc::new(doc.spans);
                    for (i, case) in doc.value.into_iter().enumerate() {
                        cases.push(mk(case, Arc::clone(&spans), format!("/{i}")));
                    }
                }
                Err(d) => problems.push(d),
            }
        } else {
            match parse::<Case>(&file, &text, is_json(&file), 0) {
                Ok(doc) => cases.push(mk(doc.value, Arc::new(doc.spans), String::new())),
                Err(d) => problems.push(d),
            }
        }
    }
    (cases, problems)
}
