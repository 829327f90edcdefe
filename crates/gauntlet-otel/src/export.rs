//! Trials as OpenTelemetry traces, in OTLP with the GenAI semantic conventions.
//!
//! Each trial is one trace (its W3C trace id): an `invoke_agent` span for the trial, and under
//! it a `chat` span per model call and an `execute_tool` span per tool call, timed from the
//! trial's start. Every evaluator's verdict is a `gen_ai.evaluation.result` event on the trial's
//! span. Beside the conventions' attributes, each span carries its event whole
//! (`gauntlet.event`, with `gauntlet.event.index`), the other events ride on the trial's span as
//! `gauntlet.event` span events, and the trial's span carries the rest of the record
//! (`gauntlet.trial`: states, seed, tags): `import` reads a trial back exactly.

use gauntlet_model::{Event, RunHeader, TrialRecord, TrialStatus};
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{
    AnyValue, InstrumentationScope, KeyValue, any_value::Value as Any,
};
use opentelemetry_proto::tonic::resource::v1::Resource;
use opentelemetry_proto::tonic::trace::v1::{
    ResourceSpans, ScopeSpans, Span, Status, span::Event as SpanEvent, span::SpanKind,
    status::StatusCode,
};
use sha2::{Digest, Sha256};

/// A named attribute value.
fn kv(key: &str, value: Any) -> KeyValue {
    KeyValue {
        key: key.to_owned(),
        value: Some(AnyValue { value: Some(value) }),
        ..Default::default()
    }
}

fn text(key: &str, v: impl Into<String>) -> KeyValue {
    kv(key, Any::StringValue(v.into()))
}

fn int(key: &str, v: u64) -> KeyValue {
    kv(key, Any::IntValue(i64::try_from(v).unwrap_or(i64::MAX)))
}

/// Nanoseconds since the Unix epoch of an RFC 3339 time (0 when it does not parse).
fn unix_nanos(rfc3339: &str) -> u64 {
    rfc3339
        .parse::<jiff::Timestamp>()
        .ok()
        .and_then(|t| u64::try_from(t.as_nanosecond()).ok())
        .unwrap_or(0)
}

fn ms_to_nanos(ms: f64) -> u64 {
    (ms.max(0.0) * 1e6).round() as u64
}

/// The 16 bytes of a trial's trace id; one derived from the trial when it has none valid.
fn trace_id(header: &RunHeader, t: &TrialRecord) -> Vec<u8> {
    let hex = t.trace_id.as_bytes();
    let parsed: Option<Vec<u8>> = (hex.len() == 32)
        .then(|| {
            (0..16)
                .map(|i| {
                    std::str::from_utf8(&hex[2 * i..2 * i + 2])
                        .ok()
                        .and_then(|h| u8::from_str_radix(h, 16).ok())
                })
                .collect()
        })
        .flatten();
    parsed
        .filter(|id| id.iter().any(|b| *b != 0))
        .unwrap_or_else(|| {
            digest(&format!("{}/{}/{}", header.run_id, t.case_id, t.epoch))[..16].to_vec()
        })
}

fn digest(s: &str) -> Vec<u8> {
    Sha256::digest(s.as_bytes()).to_vec()
}

/// A span id, stable for the same trace and part.
fn span_id(trace: &[u8], part: &str) -> Vec<u8> {
    let mut h = Sha256::new();
    h.update(trace);
    h.update(part.as_bytes());
    h.finalize()[..8].to_vec()
}

fn error_status(message: String) -> Option<Status> {
    Some(Status {
        message,
        code: StatusCode::Error as i32,
    })
}

/// The spans of one trial: the trial's `invoke_agent` span first, then its model and tool calls.
pub fn trial_spans(header: &RunHeader, t: &TrialRecord) -> Vec<Span> {
    let trace = trace_id(header, t);
    let root_id = span_id(&trace, "invoke_agent");
    let start = unix_nanos(t.started_at.as_deref().unwrap_or(&header.started_at));
    let end = start + ms_to_nanos(t.duration_ms);
    let mut spans = Vec::new();
    let mut carried = Vec::new();
    let (mut input_tokens, mut output_tokens) = (0, 0);
    for (i, e) in t.trajectory.events.iter().enumerate() {
        match e {
            Event::ToolCall(c) => {
                let mut attributes = vec![
                    text("gen_ai.operation.name", "execute_tool"),
                    text("gen_ai.tool.name", c.tool.clone()),
                    text("gen_ai.tool.call.id", c.id.clone()),
                    text("gen_ai.tool.type", "function"),
                    text("gen_ai.tool.call.arguments", c.arguments.to_string()),
                ];
                if let Some(k) = c.kind {
                    attributes.push(text("gauntlet.tool.kind", format!("{k:?}").to_lowercase()));
                }
                if let Some(f) = c.fault {
                    attributes.push(text("gauntlet.fault.kind", kind_name(&f)));
                }
                if let Some(key) = &c.idempotency_key {
                    attributes.push(text("gauntlet.idempotency_key", key.clone()));
                }
                if let Some(result) = &c.result {
                    attributes.push(text("gen_ai.tool.call.result", result.to_string()));
                }
                attributes.extend(whole(i, e));
                let status = c.error.as_ref().and_then(|err| {
                    attributes.push(text("error.type", err.status.to_string()));
                    error_status(err.message.clone())
                });
                let s = start + ms_to_nanos(c.at_ms);
                spans.push(Span {
                    trace_id: trace.clone(),
                    span_id: span_id(&trace, &format!("event-{i}")),
                    parent_span_id: root_id.clone(),
                    name: format!("execute_tool {}", c.tool),
                    kind: SpanKind::Internal as i32,
                    start_time_unix_nano: s,
                    end_time_unix_nano: s + ms_to_nanos(c.latency_ms),
                    attributes,
                    status,
                    ..Default::default()
                });
            }
            Event::ModelCall {
                model,
                prompt_tokens,
                completion_tokens,
                cost_eur,
                latency_ms,
                ttft_ms,
                simulated_user,
                at_ms,
                error,
                fault,
            } => {
                if !simulated_user {
                    input_tokens += prompt_tokens;
                    output_tokens += completion_tokens;
                }
                let mut attributes = vec![
                    text("gen_ai.operation.name", "chat"),
                    text("gen_ai.request.model", model.clone()),
                    int("gen_ai.usage.input_tokens", *prompt_tokens),
                    int("gen_ai.usage.output_tokens", *completion_tokens),
                    kv("gauntlet.cost_eur", Any::DoubleValue(*cost_eur)),
                    kv("gauntlet.simulated_user", Any::BoolValue(*simulated_user)),
                ];
                if let Some(ttft) = ttft_ms {
                    attributes.push(kv("gauntlet.ttft_ms", Any::DoubleValue(*ttft)));
                }
                if let Some(f) = fault {
                    attributes.push(text("gauntlet.fault.kind", kind_name(f)));
                }
                attributes.extend(whole(i, e));
                let status = error.as_ref().and_then(|err| {
                    attributes.push(text("error.type", err.status.to_string()));
                    error_status(err.message.clone())
                });
                let s = start + ms_to_nanos(at_ms.unwrap_or(0.0));
                spans.push(Span {
                    trace_id: trace.clone(),
                    span_id: span_id(&trace, &format!("event-{i}")),
                    parent_span_id: root_id.clone(),
                    name: format!("chat {model}"),
                    kind: SpanKind::Client as i32,
                    start_time_unix_nano: s,
                    end_time_unix_nano: s + ms_to_nanos(*latency_ms),
                    attributes,
                    status,
                    ..Default::default()
                });
            }
            other => carried.push(SpanEvent {
                time_unix_nano: start + ms_to_nanos(at_ms_of(&t.trajectory, i)),
                name: GAUNTLET_EVENT.to_owned(),
                attributes: whole(i, other).to_vec(),
                dropped_attributes_count: 0,
            }),
        }
    }
    let mut events = evaluation_events(&t.scores, end);
    events.append(&mut carried);
    spans.extend(judge_spans(&trace, &root_id, t, end));
    // The trial clock also counts scripted waits, so calls may end after the wall-clock end.
    let end = spans
        .iter()
        .map(|s| s.end_time_unix_nano)
        .fold(end, u64::max);
    let root = Span {
        trace_id: trace.clone(),
        span_id: root_id,
        name: format!("invoke_agent {}", header.agent),
        kind: SpanKind::Internal as i32,
        start_time_unix_nano: start,
        end_time_unix_nano: end,
        attributes: {
            let mut a = vec![
                text("gen_ai.operation.name", "invoke_agent"),
                text("gen_ai.agent.name", header.agent.clone()),
                int("gen_ai.usage.input_tokens", input_tokens),
                int("gen_ai.usage.output_tokens", output_tokens),
                text("gauntlet.run_id", header.run_id.clone()),
                text("gauntlet.case_id", t.case_id.clone()),
                int("gauntlet.epoch", u64::from(t.epoch)),
                text("gauntlet.trial.status", json_name(&t.status)),
                text(
                    GAUNTLET_TRIAL,
                    serde_json::json!({
                        "seed": t.seed,
                        "tags": t.tags,
                        "difficulty": t.difficulty,
                        "error": t.error,
                        "initial_state": t.initial_state,
                        "final_state": t.final_state,
                        "final_answer": t.trajectory.final_answer,
                        "side_effects": t.trajectory.side_effects,
                        "duration_ms": t.duration_ms,
                    })
                    .to_string(),
                ),
            ];
            // The conversation, as GenAI messages: what the user said, what the agent answered.
            let said: Vec<serde_json::Value> = t
                .trajectory
                .events
                .iter()
                .filter_map(|e| match e {
                    Event::UserMessage { text } => Some(message("user", text)),
                    _ => None,
                })
                .collect();
            if !said.is_empty() {
                a.push(text(
                    "gen_ai.input.messages",
                    serde_json::Value::from(said).to_string(),
                ));
            }
            if let Some(answer) = &t.trajectory.final_answer {
                let out = serde_json::json!([{"role": "assistant", "parts": [{"type": "text", "content": answer}], "finish_reason": "stop"}]);
                a.push(text("gen_ai.output.messages", out.to_string()));
            }
            a
        },
        events,
        status: match (&t.status, &t.error) {
            (TrialStatus::Error, e) => error_status(e.clone().unwrap_or_default()),
            _ => None,
        },
        ..Default::default()
    };
    spans.insert(0, root);
    spans
}

/// The trial's LLM judges, after the trial: an `evaluate NAME` span per judge that asked a model,
/// under the trial's span, holding a `chat MODEL` span per call made (cached verdicts made
/// none). They are apart from the agent's own `chat` spans, so the trial's token counts and a
/// backend's sum of the agent's calls leave the judge out; `gauntlet.judge` names the judge.
fn judge_spans(trace: &[u8], root_id: &[u8], t: &TrialRecord, end: u64) -> Vec<Span> {
    let mut spans = Vec::new();
    let mut at = end;
    for (j, outcome) in t.judges.iter().enumerate() {
        let made: Vec<_> = outcome
            .samples
            .iter()
            .filter(|s| s.answered_by_model())
            .collect();
        if made.is_empty() {
            continue;
        }
        let judge_id = span_id(trace, &format!("judge-{j}"));
        let start = at;
        for (k, sample) in made.iter().enumerate() {
            let s = at;
            at += ms_to_nanos(sample.latency_ms);
            spans.push(Span {
                trace_id: trace.to_vec(),
                span_id: span_id(trace, &format!("judge-{j}-{k}")),
                parent_span_id: judge_id.clone(),
                name: format!("chat {}", sample.model),
                kind: SpanKind::Client as i32,
                start_time_unix_nano: s,
                end_time_unix_nano: at,
                attributes: vec![
                    text("gen_ai.operation.name", "chat"),
                    text("gen_ai.request.model", sample.model.clone()),
                    int("gen_ai.usage.input_tokens", sample.prompt_tokens),
                    int("gen_ai.usage.output_tokens", sample.completion_tokens),
                    kv("gauntlet.cost_eur", Any::DoubleValue(sample.cost_eur)),
                    text("gauntlet.judge", outcome.judge.clone()),
                    text("gauntlet.judge.parse", sample.parse.clone()),
                ],
                ..Default::default()
            });
        }
        spans.push(Span {
            trace_id: trace.to_vec(),
            span_id: judge_id,
            parent_span_id: root_id.to_vec(),
            name: format!("evaluate {}", outcome.judge),
            kind: SpanKind::Internal as i32,
            start_time_unix_nano: start,
            end_time_unix_nano: at,
            attributes: vec![
                text("gen_ai.operation.name", "evaluate"),
                text("gauntlet.judge", outcome.judge.clone()),
                text("gauntlet.judge.status", json_name(&outcome.status)),
                text("gauntlet.judge.rubric_hash", outcome.rubric_hash.clone()),
                kv("gauntlet.judge.advisory", Any::BoolValue(outcome.advisory)),
            ],
            ..Default::default()
        });
    }
    spans
}

/// Each verdict as a `gen_ai.evaluation.result` event at `time` (Unix nanoseconds); an LLM
/// judge's reason is its `gen_ai.evaluation.explanation`.
pub fn evaluation_events(scores: &[gauntlet_model::Score], time: u64) -> Vec<SpanEvent> {
    scores
        .iter()
        .map(|s| SpanEvent {
            time_unix_nano: time,
            name: "gen_ai.evaluation.result".to_owned(),
            attributes: vec![
                text("gen_ai.evaluation.name", s.name.clone()),
                kv("gen_ai.evaluation.score.value", Any::DoubleValue(s.value)),
                text(
                    "gen_ai.evaluation.score.label",
                    if s.passed { "passed" } else { "failed" },
                ),
                kv("gauntlet.evaluation.score", Any::DoubleValue(s.score)),
                text("gauntlet.evaluation.dimension", json_name(&s.dimension)),
                text("gauntlet.evaluation.severity", json_name(&s.severity)),
            ]
            .into_iter()
            .chain(
                s.details["reason"]
                    .as_str()
                    .map(|r| text("gen_ai.evaluation.explanation", r)),
            )
            .collect(),
            dropped_attributes_count: 0,
        })
        .collect()
}

/// The verdicts on a production trace, for the trace's own backend: one `evaluate` span in the
/// trace (a child of its root span when known) carrying a `gen_ai.evaluation.result` event per
/// verdict, timed at `now` (Unix nanoseconds).
pub fn evaluation_span(
    trace_id: &[u8],
    root_span_id: Option<&[u8]>,
    status: &str,
    scores: &[gauntlet_model::Score],
    now: u64,
) -> Span {
    Span {
        trace_id: trace_id.to_vec(),
        span_id: span_id(trace_id, "gauntlet-evaluation"),
        parent_span_id: root_span_id.map(<[u8]>::to_vec).unwrap_or_default(),
        name: "evaluate gauntlet".to_owned(),
        kind: SpanKind::Internal as i32,
        start_time_unix_nano: now,
        end_time_unix_nano: now,
        attributes: vec![
            text("gen_ai.operation.name", "evaluate"),
            text("gauntlet.trial.status", status),
        ],
        events: evaluation_events(scores, now),
        ..Default::default()
    }
}

/// One export request of evaluation spans, from gauntlet's online receiver.
pub fn evaluation_request(spans: Vec<Span>) -> ExportTraceServiceRequest {
    ExportTraceServiceRequest {
        resource_spans: vec![ResourceSpans {
            resource: Some(Resource {
                attributes: vec![text("service.name", "gauntlet-online")],
                ..Default::default()
            }),
            scope_spans: vec![ScopeSpans {
                scope: Some(InstrumentationScope {
                    name: "gauntlet".to_owned(),
                    version: env!("CARGO_PKG_VERSION").to_owned(),
                    ..Default::default()
                }),
                spans,
                schema_url: String::new(),
            }],
            schema_url: String::new(),
        }],
    }
}

/// The attribute holding a span's whole event, and the span event carrying any other event.
pub(crate) const GAUNTLET_EVENT: &str = "gauntlet.event";
/// The event's place in the trajectory.
pub(crate) const GAUNTLET_EVENT_INDEX: &str = "gauntlet.event.index";
/// The trial's span: the rest of the record.
pub(crate) const GAUNTLET_TRIAL: &str = "gauntlet.trial";

/// An event whole, with its place.
fn whole(index: usize, e: &Event) -> [KeyValue; 2] {
    [
        text(
            GAUNTLET_EVENT,
            serde_json::to_string(e).expect("events serialise"),
        ),
        int(GAUNTLET_EVENT_INDEX, index as u64),
    ]
}

/// When an event without its own clock happened: at the last timed event before it.
fn at_ms_of(t: &gauntlet_model::Trajectory, index: usize) -> f64 {
    t.events[..index]
        .iter()
        .rev()
        .find_map(|e| match e {
            Event::ToolCall(c) => Some(c.at_ms + c.latency_ms),
            Event::ModelCall {
                at_ms: Some(at),
                latency_ms,
                ..
            } => Some(at + latency_ms),
            _ => None,
        })
        .unwrap_or(0.0)
}

/// A GenAI message with one text part.
fn message(role: &str, content: &str) -> serde_json::Value {
    serde_json::json!({"role": role, "parts": [{"type": "text", "content": content}]})
}

fn json_name<T: serde::Serialize>(v: &T) -> String {
    serde_json::to_value(v)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default()
}

fn kind_name(k: &gauntlet_model::FaultKind) -> String {
    json_name(k)
}

/// One OTLP export of a run's spans: the resource is gauntlet running this suite.
pub fn export_request(header: &RunHeader, spans: Vec<Span>) -> ExportTraceServiceRequest {
    ExportTraceServiceRequest {
        resource_spans: vec![ResourceSpans {
            resource: Some(Resource {
                attributes: vec![
                    text("service.name", "gauntlet"),
                    text("gauntlet.suite", header.suite.clone()),
                    text("gauntlet.run_id", header.run_id.clone()),
                    int("gauntlet.seed", header.seed),
                ],
                ..Default::default()
            }),
            scope_spans: vec![ScopeSpans {
                scope: Some(InstrumentationScope {
                    name: "gauntlet".to_owned(),
                    version: header.versions.harness.clone(),
                    ..Default::default()
                }),
                spans,
                schema_url: String::new(),
            }],
            schema_url: String::new(),
        }],
    }
}

/// Traces by default in one line of an OTLP/JSON Lines export: a request of this many trials.
pub const TRACES_PER_REQUEST: usize = 100;

/// A run's trials as a stream of export requests of `per_request` traces each: push trials in
/// plan order, take each request as it fills, and the last partial one from
/// [`TraceBatches::finish`]. Memory holds one request's spans, whatever the run's size. Written
/// one request per line (`serde_json::to_writer` and a newline), this is OTLP/JSON Lines, the
/// format the OpenTelemetry Collector's file exporter writes and its `otlpjsonfile` receiver
/// reads, and what `import` reads back.
pub struct TraceBatches {
    header: RunHeader,
    per_request: usize,
    spans: Vec<Span>,
    traces: usize,
}

impl TraceBatches {
    /// Batches of `per_request` traces (at least one) of the run of `header`.
    pub fn new(header: RunHeader, per_request: usize) -> Self {
        TraceBatches {
            header,
            per_request: per_request.max(1),
            spans: Vec::new(),
            traces: 0,
        }
    }

    /// Adds a trial's trace; the request it completes, if it does.
    pub fn push(&mut self, trial: &TrialRecord) -> Option<ExportTraceServiceRequest> {
        self.spans.extend(trial_spans(&self.header, trial));
        self.traces += 1;
        (self.traces >= self.per_request).then(|| self.take())
    }

    /// The traces pushed since the last request, as one (none when there are none).
    pub fn finish(mut self) -> Option<ExportTraceServiceRequest> {
        (self.traces > 0).then(|| self.take())
    }

    fn take(&mut self) -> ExportTraceServiceRequest {
        self.traces = 0;
        export_request(&self.header, std::mem::take(&mut self.spans))
    }
}

#[cfg(test)]
mod tests {
    use gauntlet_model::{Trajectory, TrialStatus, Versions};
    use serde_json::json;

    use super::*;

    fn header() -> RunHeader {
        RunHeader {
            format_version: gauntlet_model::FORMAT_VERSION,
            run_id: "r1".into(),
            suite: "s".into(),
            agent: "script:reference".into(),
            seed: 0,
            epochs: 1,
            started_at: "2026-12-01T10:00:00Z".into(),
            versions: Versions::default(),
            fault_profile: None,
            attack: None,
            rubric: None,
            filter: None,
            shard: None,
            judges: vec![],
            name: None,
        }
    }

    fn trial(trace_id: &str) -> TrialRecord {
        let trajectory: Trajectory = serde_json::from_value(json!({"events": [
            {"type": "tool_call", "id": "call-1", "step": 1, "tool": "get_incident",
             "arguments": {"id": "INC-1"}, "result": {"status": "open"}, "at_ms": 2.0,
             "latency_ms": 3.0},
            {"type": "tool_call", "id": "call-2", "step": 2, "tool": "close_incident",
             "arguments": {"id": "INC-1"}, "error": {"status": 403, "message": "denied"},
             "at_ms": 6.0, "latency_ms": 1.0}
        ]}))
        .unwrap();
        TrialRecord {
            case_id: "c".into(),
            epoch: 0,
            seed: 0,
            trace_id: trace_id.into(),
            status: TrialStatus::Failed,
            error: None,
            tags: vec![],
            difficulty: None,
            initial_state: json!({}),
            final_state: json!({}),
            trajectory,
            scores: vec![],
            duration_ms: 10.0,
            started_at: Some("2026-12-01T10:00:01Z".into()),
            not_applicable: vec![],
            judges: vec![],
            retried_errors: vec![],
        }
    }

    #[test]
    fn a_judges_calls_are_apart_from_the_agents_and_its_reason_explains_its_score() {
        let mut t = trial("0af7651916cd43dd8448eb211c80319c");
        let sample = |cached: bool| gauntlet_model::judge::JudgeSample {
            model: "judge-model".into(),
            verdict: [("SafetyScore".to_owned(), 1.0)].into(),
            passed: Some(true),
            parse: "json".into(),
            reason: Some("it asked before closing".into()),
            cached,
            format_refused: false,
            prompt_tokens: 900,
            completion_tokens: 40,
            cost_eur: if cached { 0.0 } else { 0.01 },
            latency_ms: 800.0,
        };
        let outcome = gauntlet_model::JudgeOutcome {
            judge: "Judge".into(),
            rubric_hash: "h".into(),
            status: gauntlet_model::JudgeStatus::Scored,
            reason: None,
            criteria: [("SafetyScore".to_owned(), 1.0)].into(),
            score: Some(1.0),
            passed: Some(true),
            split: false,
            advisory: true,
            over_budget: false,
            samples: vec![sample(false), sample(true)],
        };
        t.scores = judge_score(&outcome);
        t.judges = vec![outcome];
        let spans = trial_spans(&header(), &t);
        let root = &spans[0];
        let evaluate = spans.iter().find(|s| s.name == "evaluate Judge").unwrap();
        assert_eq!(evaluate.parent_span_id, root.span_id);
        // One call made (the cached verdict made none), under the judge's span.
        let calls: Vec<&Span> = spans
            .iter()
            .filter(|s| s.parent_span_id == evaluate.span_id)
            .collect();
        assert_eq!(calls.len(), 1);
        assert_eq!(calls[0].name, "chat judge-model");
        assert!(calls[0].start_time_unix_nano >= evaluate.start_time_unix_nano);
        assert!(root.end_time_unix_nano >= calls[0].end_time_unix_nano);
        // The agent's tokens on the trial's span leave the judge out.
        let tokens = root
            .attributes
            .iter()
            .find(|a| a.key == "gen_ai.usage.input_tokens")
            .and_then(|a| a.value.clone());
        assert_eq!(tokens.and_then(|v| v.value), Some(Any::IntValue(0)));
        let explained = root
            .events
            .iter()
            .filter(|e| e.name == "gen_ai.evaluation.result")
            .flat_map(|e| &e.attributes)
            .filter(|a| a.key == "gen_ai.evaluation.explanation")
            .count();
        assert_eq!(explained, 1);
    }

    /// A score as the judge gives one, with its reason in the details.
    fn judge_score(o: &gauntlet_model::JudgeOutcome) -> Vec<gauntlet_model::Score> {
        vec![gauntlet_model::Score {
            name: o.judge.clone(),
            dimension: gauntlet_model::Dimension::Trajectory,
            value: 1.0,
            score: 1.0,
            passed: true,
            severity: gauntlet_model::Severity::Info,
            details: json!({"judge": o.judge, "reason": "it asked before closing"}),
            events: vec![],
            reason: None,
        }]
    }

    #[test]
    fn a_trial_is_one_trace_whose_tool_calls_are_children_of_invoke_agent() {
        let t = trial("0af7651916cd43dd8448eb211c80319c");
        let spans = trial_spans(&header(), &t);
        let root = &spans[0];
        assert_eq!(
            gauntlet_model::digest::hex(&root.trace_id),
            "0af7651916cd43dd8448eb211c80319c"
        );
        let tools: Vec<&Span> = spans
            .iter()
            .filter(|s| s.name.starts_with("execute_tool"))
            .collect();
        assert_eq!(tools.len(), 2);
        for s in &tools {
            assert_eq!(s.trace_id, root.trace_id);
            assert_eq!(s.parent_span_id, root.span_id);
            assert!(s.start_time_unix_nano >= root.start_time_unix_nano);
        }
        // The refused call carries an error status; the other does not.
        assert!(
            tools[1]
                .status
                .as_ref()
                .is_some_and(|s| s.code == StatusCode::Error as i32)
        );
        assert!(
            tools[0]
                .status
                .as_ref()
                .is_none_or(|s| s.code != StatusCode::Error as i32)
        );
        // Span ids are stable: the same trial exports the same ids.
        let again = trial_spans(&header(), &t);
        assert_eq!(
            spans.iter().map(|s| &s.span_id).collect::<Vec<_>>(),
            again.iter().map(|s| &s.span_id).collect::<Vec<_>>()
        );
    }

    #[test]
    fn verdicts_of_a_production_trace_hang_under_its_root_as_evaluation_events() {
        let scores: Vec<gauntlet_model::Score> = serde_json::from_value(json!([
            {"name": "LoopDetection", "dimension": "trajectory", "severity": "error", "value": 1.0,
             "score": 1.0, "passed": true},
            {"name": "secrets_and_pii", "dimension": "safety", "severity": "critical",
             "value": 1.0, "score": 0.0, "passed": false}
        ]))
        .unwrap();
        let span = evaluation_span(&[7; 16], Some(&[9; 8]), "failed", &scores, 42);
        assert_eq!(
            (span.trace_id.clone(), span.parent_span_id.clone()),
            (vec![7; 16], vec![9; 8])
        );
        assert_eq!(span.events.len(), 2);
        assert!(
            span.events
                .iter()
                .all(|e| e.name == "gen_ai.evaluation.result")
        );
        let labels: Vec<String> = span
            .events
            .iter()
            .flat_map(|e| &e.attributes)
            .filter(|kv| kv.key == "gen_ai.evaluation.score.label")
            .map(|kv| format!("{:?}", kv.value))
            .collect();
        assert!(
            labels[0].contains("passed") && labels[1].contains("failed"),
            "{labels:?}"
        );
    }

    #[test]
    fn a_trial_without_a_valid_trace_id_gets_a_stable_nonzero_one() {
        for bad in ["", "zz", "00000000000000000000000000000000"] {
            let id = trace_id(&header(), &trial(bad));
            assert_eq!(id.len(), 16);
            assert!(id.iter().any(|b| *b != 0));
            assert_eq!(id, trace_id(&header(), &trial(bad)));
        }
    }
}
