//! Reading labels and verdicts for calibration: gauntlet's JSONL label files, and the
//! Online-Mind2Web / AgentRewardBench `results.json` layout.
//!
//! A `results.json` holds `{judge: {benchmark | "all": {agent | "all": {category: {"y_human":
//! [...], "y_judge": [...]}}}}}`. Its items are the per-benchmark, per-agent lists (the `all`
//! entries are their concatenation and are not read twice), named `BENCHMARK/AGENT/INDEX` with
//! segments `benchmark` and `agent`.

use std::collections::BTreeMap;
use std::io::BufRead;
use std::path::Path;

use gauntlet_model::{Label, LabelValue, Segments};
use serde_json::Value;

use crate::{ImportError, invalid, read_json};

/// Which side of a `results.json` to read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// `y_human`: the expert labels.
    Human,
    /// `y_judge`: the judge's verdicts.
    Judge,
}

/// Reads a JSONL label file: one `{"item", "label", "rater"?, "segment"?, "note"?}` per line;
/// blank lines are skipped; an error names the line and column.
pub fn read_label_file(path: &Path) -> Result<Vec<Label>, ImportError> {
    let io = |source| ImportError::Io {
        path: path.to_owned(),
        source,
    };
    let file = std::fs::File::open(path).map_err(io)?;
    let mut labels = Vec::new();
    for (i, line) in std::io::BufReader::new(file).lines().enumerate() {
        let line = line.map_err(io)?;
        let text = line.trim_start_matches('\u{feff}');
        if text.trim().is_empty() {
            continue;
        }
        let label: Label = serde_json::from_str(text).map_err(|e| ImportError::Json {
            path: path.to_owned(),
            line: i + 1,
            column: e.column(),
            message: gauntlet_model::without_rust_types(
                e.to_string()
                    .rsplit_once(" at line ")
                    .map_or(e.to_string().as_str(), |(m, _)| m),
            ),
        })?;
        labels.push(label);
    }
    if labels.is_empty() {
        return Err(invalid(path, "no labels: the file is empty"));
    }
    Ok(labels)
}

/// Whether a file is a `results.json` of the Online-Mind2Web layout rather than a JSONL label
/// file: it is one JSON object whose values are objects (judges), not one label per line.
pub fn is_results_json(path: &Path) -> bool {
    path.extension().is_some_and(|e| e == "json")
}

/// Reads one judge's and one category's labels (`Side::Human`) or verdicts (`Side::Judge`)
/// from a `results.json`.
pub fn read_results_json(
    path: &Path,
    judge: &str,
    category: &str,
    side: Side,
) -> Result<Vec<Label>, ImportError> {
    let doc = read_json(path)?;
    let judges = doc
        .as_object()
        .ok_or_else(|| invalid(path, "not a results.json: the top level is not an object"))?;
    let names = |o: &serde_json::Map<String, Value>| {
        o.keys().map(String::as_str).collect::<Vec<_>>().join(", ")
    };
    let Some(benchmarks) = judges.get(judge).and_then(Value::as_object) else {
        return Err(invalid(
            path,
            &format!(
                "no judge `{judge}` (--judge); the file has: {}",
                names(judges)
            ),
        ));
    };
    let mut labels = Vec::new();
    let mut categories = BTreeMap::new();
    for (benchmark, agents) in benchmarks.iter().filter(|(b, _)| *b != "all") {
        let Some(agents) = agents.as_object() else {
            continue;
        };
        for (agent, cats) in agents.iter().filter(|(a, _)| *a != "all") {
            let Some(cats) = cats.as_object() else {
                continue;
            };
            for name in cats.keys() {
                categories.insert(name.clone(), ());
            }
            let Some(lists) = cats.get(category) else {
                continue;
            };
            let key = match side {
                Side::Human => "y_human",
                Side::Judge => "y_judge",
            };
            let Some(values) = lists.get(key).and_then(Value::as_array) else {
                return Err(invalid(
                    path,
                    &format!("{judge}/{benchmark}/{agent}/{category} has no `{key}` list"),
                ));
            };
            for (i, v) in values.iter().enumerate() {
                let label = match v {
                    Value::Bool(b) => LabelValue::Bool(*b),
                    Value::Number(n) => LabelValue::Number(n.as_f64().unwrap_or(f64::NAN)),
                    Value::String(s) => LabelValue::Text(s.clone()),
                    other => {
                        return Err(invalid(
                            path,
                            &format!(
                                "{judge}/{benchmark}/{agent}/{category}/{key}[{i}] is {other}, not a label"
                            ),
                        ));
                    }
                };
                labels.push(Label {
                    item: format!("{benchmark}/{agent}/{i}"),
                    label,
                    rater: None,
                    segment: Segments::from([
                        ("benchmark", benchmark.clone()),
                        ("agent", agent.clone()),
                    ]),
                    note: None,
                });
            }
        }
    }
    if labels.is_empty() {
        let known = categories.keys().cloned().collect::<Vec<_>>().join(", ");
        return Err(invalid(
            path,
            &format!("judge `{judge}` has no category `{category}` (--category); it has: {known}"),
        ));
    }
    Ok(labels)
}
