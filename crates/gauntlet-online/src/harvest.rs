//! The flywheel: failed and negatively rated production trajectories into candidate cases.
//!
//! The lake is already anonymised. A trajectory is a candidate when it did not pass, was rated
//! below zero, or was abandoned (feedback on its spans or posted to `/v1/feedback`), and when
//! the `--where` filter (CEL over the row) holds. Candidates with the same normalised request
//! and the same tool sequence are one case (the first seen; the others counted). Each case
//! plays in a recorded world (the trace's tool answers), is tagged with its origin and
//! `needs-review` (its expected outcome is for a person to write), and its observed trajectory
//! is kept beside it as a counter-example (`counterexamples.jsonl`, which `gauntlet score`
//! reads). Pure: rows in, files out.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;

use gauntlet_model::{Event, ToolKind, ToolSpec, Trajectory, TrialRecord, TrialStatus, WorldSpec};
use gauntlet_world::recorded::{self, WORLD};
use serde_json::{Value, json};

use crate::lake::{FeedbackRow, TraceRow, day_of};

/// What people said about a trace, merged over its feedback rows.
#[derive(Debug, Clone, Default)]
pub struct Feedback {
    pub rating: Option<f64>,
    pub abandoned: bool,
    pub comment: Option<String>,
}

impl Feedback {
    /// Merges posted feedback rows by trace (the latest rating and comment win).
    pub fn by_trace(rows: impl IntoIterator<Item = FeedbackRow>) -> HashMap<String, Feedback> {
        let mut rows: Vec<FeedbackRow> = rows.into_iter().collect();
        rows.sort_by_key(|r| r.received_at_ms);
        let mut out: HashMap<String, Feedback> = HashMap::new();
        for r in rows {
            let f = out.entry(r.trace_id).or_default();
            if r.rating.is_some() {
                f.rating = r.rating;
            }
            f.abandoned |= r.abandoned == Some(true);
            if r.comment.is_some() {
                f.comment = r.comment;
            }
        }
        out
    }
}

/// A `--where` filter that does not compile or does not give a boolean: the user's input (the
/// row it reads comes from the lake, a stored file).
#[derive(Debug, thiserror::Error)]
pub enum FilterError {
    /// The expression does not parse.
    #[error("--where `{text}`: {source}")]
    Syntax {
        /// The expression.
        text: String,
        /// Why.
        source: cel::ParseErrors,
    },
    /// A field of the row cannot be given to CEL.
    #[error("{0}")]
    Field(#[source] cel::SerializationError),
    /// The expression gave something other than a boolean.
    #[error("--where `{text}` gave {value:?}, not true or false")]
    NotABoolean {
        /// The expression.
        text: String,
        /// What it gave.
        value: cel::Value,
    },
    /// The expression failed on the row.
    #[error("--where `{text}`: {source}")]
    Execution {
        /// The expression.
        text: String,
        /// Why.
        source: cel::ExecutionError,
    },
}

impl gauntlet_model::Classified for FilterError {
    fn kind(&self) -> gauntlet_model::ErrorKind {
        gauntlet_model::ErrorKind::InvalidInput
    }
}

/// A `--where` filter: a CEL expression over a row's fields.
pub struct Filter {
    program: cel::Program,
    text: String,
}

impl Filter {
    /// Compiles the expression; a syntax error is described.
    pub fn compile(text: &str) -> Result<Filter, FilterError> {
        cel::Program::compile(text)
            .map(|program| Filter {
                program,
                text: text.to_owned(),
            })
            .map_err(|source| FilterError::Syntax {
                text: text.to_owned(),
                source,
            })
    }

    /// Whether the row passes; an expression that does not give a boolean is an error.
    pub fn matches(&self, fields: &Value) -> Result<bool, FilterError> {
        let mut cx = cel::Context::default();
        for (k, v) in fields.as_object().into_iter().flatten() {
            let v = cel::to_value(v).map_err(FilterError::Field)?;
            cx.add_variable_from_value(k.clone(), v);
        }
        match self.program.execute(&cx) {
            Ok(cel::Value::Bool(b)) => Ok(b),
            Ok(value) => Err(FilterError::NotABoolean {
                text: self.text.clone(),
                value,
            }),
            Err(source) => Err(FilterError::Execution {
                text: self.text.clone(),
                source,
            }),
        }
    }
}

/// The fields a `--where` filter sees.
pub fn fields(row: &TraceRow, feedback: Option<&Feedback>) -> Value {
    let rating = feedback.and_then(|f| f.rating).or(row.rating);
    json!({
        "trace_id": row.trace_id, "day": day_of(row.received_at_ms), "status": row.status,
        "service": row.service.clone().unwrap_or_default(), "agent": row.agent,
        "complete": row.complete, "duration_ms": row.duration_ms, "tool_calls": row.tool_calls,
        "tool_errors": row.tool_errors, "input_tokens": row.input_tokens,
        "output_tokens": row.output_tokens, "cost_eur": row.cost_eur, "tools": row.tools,
        "failed_evaluators": row.failed_evaluators, "rated": rating.is_some(),
        "rating": rating.unwrap_or(0.0),
        "abandoned": feedback.is_some_and(|f| f.abandoned),
        "user_input": row.user_input.clone().unwrap_or_default(),
    })
}

/// The written suite and what happened to each row.
#[derive(Debug, Default)]
pub struct Harvest {
    pub files: Vec<(PathBuf, String)>,
    pub examined: usize,
    pub cases: usize,
    /// Candidates that repeated a case (same request and tool sequence).
    pub duplicates: usize,
    /// Candidates left out, with why.
    pub skipped: Vec<String>,
}

/// A request normalised for de-duplication: lower case, digits as 0, spaces collapsed.
fn normalised(text: &str) -> String {
    text.to_lowercase()
        .chars()
        .map(|c| if c.is_ascii_digit() { '0' } else { c })
        .collect::<String>()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

/// Builds the suite, row by row.
#[derive(Default)]
pub struct Harvester {
    /// Every trajectory is a candidate, not only the failed, rated below zero or abandoned
    /// (to replay production's requests on a candidate agent and compare with `drift`).
    pub all: bool,
    signatures: HashMap<String, usize>,
    cases: Vec<Value>,
    counterexamples: Vec<Value>,
    occurrences: Vec<usize>,
    tools: BTreeMap<String, ToolKind>,
    out: Harvest,
}

impl Harvester {
    /// Offers a row: kept when it is a candidate and passes the filter.
    pub fn offer(
        &mut self,
        row: &TraceRow,
        feedback: Option<&Feedback>,
        filter: Option<&Filter>,
    ) -> Result<(), FilterError> {
        self.out.examined += 1;
        let f = fields(row, feedback);
        let negative = f["rated"] == true && f["rating"].as_f64().is_some_and(|r| r < 0.0);
        let candidate = self.all || row.status != "passed" || negative || f["abandoned"] == true;
        if !candidate {
            return Ok(());
        }
        if let Some(filter) = filter
            && !filter.matches(&f)?
        {
            return Ok(());
        }
        let trajectory: Trajectory = match serde_json::from_str(&row.trajectory) {
            Ok(t) => t,
            Err(e) => {
                self.out.skipped.push(format!(
                    "{}: its trajectory does not read ({e})",
                    row.trace_id
                ));
                return Ok(());
            }
        };
        let Some(request) = trajectory.events.iter().find_map(|e| match e {
            Event::UserMessage { text } => Some(text.clone()),
            _ => None,
        }) else {
            self.out
                .skipped
                .push(format!("{}: no user request in the trace", row.trace_id));
            return Ok(());
        };
        let calls: Vec<&gauntlet_model::ToolCall> = trajectory.tool_calls().collect();
        let signature = format!(
            "{}\u{0}{}",
            normalised(&request),
            calls
                .iter()
                .map(|c| c.tool.as_str())
                .collect::<Vec<_>>()
                .join(",")
        );
        if let Some(&i) = self.signatures.get(&signature) {
            self.occurrences[i] += 1;
            self.out.duplicates += 1;
            return Ok(());
        }
        for c in &calls {
            let kind = c.kind.unwrap_or(ToolKind::Read);
            let e = self.tools.entry(c.tool.clone()).or_insert(kind);
            if kind == ToolKind::Write {
                *e = ToolKind::Write;
            }
        }
        let case_id = format!("prod-{}", &row.trace_id[..row.trace_id.len().min(16)]);
        let mut why: Vec<String> = row
            .failed_evaluators
            .iter()
            .map(|e| format!("failed:{e}"))
            .collect();
        if negative {
            why.push(format!("rated:{}", f["rating"]));
        }
        if f["abandoned"] == true {
            why.push("abandoned".to_owned());
        }
        let mut tags = vec![
            "harvested".to_owned(),
            "needs-review".to_owned(),
            "origin:production".to_owned(),
        ];
        if let Some(s) = &row.service {
            tags.push(format!("service:{s}"));
        }
        tags.extend(why.iter().cloned());
        let comment = feedback
            .and_then(|f| f.comment.clone())
            .map(|c| format!(" The user said: \"{c}\"."))
            .unwrap_or_default();
        self.cases.push(json!({
            "case_id": case_id,
            "description": format!(
                "Harvested from production trace {} ({}, agent {}, {}): {}.{comment} \
                 Needs review: write what should have happened (expected_outcome, constraints); \
                 the observed trajectory is in counterexamples.jsonl.",
                row.trace_id, day_of(row.received_at_ms), row.agent, row.status,
                if why.is_empty() { "no passing verdict".to_owned() } else { why.join(", ") },
            ),
            "user_input": request,
            "world": WORLD,
            "initial_state": recorded::initial_state(recorded::answers(&calls)),
            "tags": tags,
        }));
        // A trial record, so `gauntlet score counterexamples.jsonl --cases .` reads it.
        let initial = recorded::initial_state(recorded::answers(&calls));
        let record = TrialRecord::new(
            gauntlet_model::Observed {
                case_id: case_id.clone(),
                trace_id: row.trace_id.clone(),
                final_state: initial.clone(),
                initial_state: initial,
                trajectory,
                duration_ms: row.duration_ms,
                started_at: row.started_at.clone(),
                ..Default::default()
            },
            gauntlet_model::Evaluation::unjudged(if row.status == "passed" {
                TrialStatus::Passed
            } else {
                TrialStatus::Failed
            }),
        );
        self.counterexamples
            .push(serde_json::to_value(&record).expect("records serialise"));
        self.occurrences.push(1);
        self.signatures.insert(signature, self.cases.len() - 1);
        Ok(())
    }

    /// The suite's files.
    pub fn finish(mut self, origin: &str) -> Harvest {
        let mut lines = String::new();
        for (case, n) in self.cases.iter_mut().zip(&self.occurrences) {
            if *n > 1
                && let Some(d) = case["description"].as_str()
            {
                case["description"] = json!(format!("{d} Seen {n} times."));
            }
            lines.push_str(&case.to_string());
            lines.push('\n');
        }
        let counter: String = self
            .counterexamples
            .iter()
            .map(|c| format!("{c}\n"))
            .collect();
        let base = WorldSpec {
            name: WORLD.to_owned(),
            description: Some(format!(
                "Tools as production traces of {origin} called them, answering from each case's recording."
            )),
            tools: self
                .tools
                .iter()
                .map(|(name, kind)| ToolSpec {
                    name: name.clone(),
                    description: String::new(),
                    kind: *kind,
                    scopes: Vec::new(),
                    parameters: json!({"type": "object"}),
                    handler: Vec::new(),
                })
                .collect(),
            ..WorldSpec::default()
        };
        let (spec, script) = recorded::world(
            &base,
            &format!("Recorded in production ({origin}); written by `gauntlet harvest`."),
        );
        let config = format!(
            "# Candidate cases harvested from production traces ({origin}): failed, negatively\n\
             # rated or abandoned, anonymised on ingest, one per request and tool sequence.\n\
             # Each is tagged needs-review: write its expected outcome, then run it:\n\
             #   gauntlet run . --agent YOUR_AGENT\n\
             # The observed (bad) trajectories: gauntlet score counterexamples.jsonl --cases .\n\
             name: harvested\n\
             epochs: 1\n\
             worlds:\n  - worlds/{WORLD}.json\n\
             datasets:\n  - path: cases/harvested.jsonl\n    world: {WORLD}\n\
             # Gates decide the exit code; edit them. A run with harness errors never passes\n\
             # (max_error_rate tolerates some).\n\
             max_error_rate: 0\n\
             gates:\n  - name: no critical policy violations\n    expr: critical_policy_violations == 0\n"
        );
        self.out.cases = self.cases.len();
        self.out.files = vec![
            (PathBuf::from("gauntlet.yaml"), config),
            (
                PathBuf::from(format!("worlds/{WORLD}.json")),
                serde_json::to_string_pretty(&spec).expect("a world serialises"),
            ),
            (PathBuf::from(format!("worlds/{WORLD}.js")), script),
            (PathBuf::from("cases/harvested.jsonl"), lines),
            (PathBuf::from("counterexamples.jsonl"), counter),
        ];
        self.out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(id: &str, status: &str, request: &str, tools: &[&str]) -> TraceRow {
        let events: Vec<Value> = std::iter::once(json!({"type": "user_message", "text": request}))
            .chain(tools.iter().enumerate().map(|(i, t)| {
                json!({"type": "tool_call", "id": format!("c{i}"), "step": 1, "tool": t,
                       "arguments": {"n": i}, "result": {"ok": true}})
            }))
            .collect();
        TraceRow {
            trace_id: format!("{id:0>32}"),
            received_at_ms: 1_700_000_000_000,
            started_at: None,
            service: Some("orders".into()),
            agent: "orders".into(),
            status: status.into(),
            complete: true,
            duration_ms: 10.0,
            tool_calls: tools.len() as i64,
            tool_errors: 0,
            model_calls: 1,
            input_tokens: 1,
            output_tokens: 1,
            cost_eur: 0.0,
            tools: tools.iter().map(|t| t.to_string()).collect(),
            failed_evaluators: if status == "passed" {
                vec![]
            } else {
                vec!["LoopDetection".into()]
            },
            user_input: Some(request.into()),
            final_answer: None,
            scores: "[]".into(),
            trajectory: json!({"events": events}).to_string(),
            feedback: "[]".into(),
            rating: None,
        }
    }

    #[test]
    fn failed_and_negatively_rated_rows_become_one_case_per_request_and_tool_sequence() {
        let mut h = Harvester::default();
        let rated = Feedback {
            rating: Some(-1.0),
            ..Feedback::default()
        };
        h.offer(
            &row("1", "failed", "Refund order 123", &["get", "refund"]),
            None,
            None,
        )
        .unwrap();
        // The same request with other digits and spacing, same tools: folded in.
        h.offer(
            &row("2", "failed", "refund  order 987", &["get", "refund"]),
            None,
            None,
        )
        .unwrap();
        // Same request, other tools: a case of its own.
        h.offer(
            &row("3", "failed", "Refund order 123", &["refund"]),
            None,
            None,
        )
        .unwrap();
        // Passed and unrated: not a candidate; passed but rated below zero: a candidate.
        h.offer(&row("4", "passed", "Where is 5?", &["get"]), None, None)
            .unwrap();
        h.offer(
            &row("5", "passed", "Cancel 5", &["cancel"]),
            Some(&rated),
            None,
        )
        .unwrap();
        let out = h.finish("test");
        assert_eq!((out.examined, out.cases, out.duplicates), (5, 3, 1));
        let cases: Vec<Value> = out
            .files
            .iter()
            .find(|(p, _)| p.ends_with("cases/harvested.jsonl"))
            .unwrap()
            .1
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert!(
            cases[0]["description"]
                .as_str()
                .unwrap()
                .contains("Seen 2 times")
        );
        assert!(
            cases[2]["tags"]
                .as_array()
                .unwrap()
                .contains(&json!("rated:-1.0"))
        );
    }

    #[test]
    fn a_filter_narrows_and_a_non_boolean_filter_is_an_error() {
        let f = Filter::compile("service == 'orders' && 'refund' in tools").unwrap();
        let r = row("1", "failed", "Refund 1", &["get", "refund"]);
        assert!(f.matches(&fields(&r, None)).unwrap());
        let r2 = row("2", "failed", "Get 1", &["get"]);
        assert!(!f.matches(&fields(&r2, None)).unwrap());
        let bad = Filter::compile("agent").unwrap();
        assert!(
            bad.matches(&fields(&r, None))
                .unwrap_err()
                .to_string()
                .contains("not true or false")
        );
        assert!(Filter::compile("status ==").is_err());
    }
}
