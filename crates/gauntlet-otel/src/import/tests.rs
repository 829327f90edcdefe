use gauntlet_model::{RunHeader, TrialRecord, TrialStatus, Versions};
use serde_json::json;

use super::*;
use crate::{export_request, trial_spans};

fn header() -> RunHeader {
    RunHeader {
        format_version: gauntlet_model::FORMAT_VERSION,
        run_id: "r1".into(),
        suite: "s".into(),
        agent: "script:reference".into(),
        seed: 7,
        epochs: 2,
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

/// A trial with every kind of event the export must carry.
fn trial() -> TrialRecord {
    let trajectory: Trajectory = serde_json::from_value(json!({"events": [
        {"type": "user_message", "text": "Close INC-1, my email is ann@example.com"},
        {"type": "model_call", "model": "gpt-x", "prompt_tokens": 120, "completion_tokens": 14,
         "cost_eur": 0.002, "latency_ms": 40.0, "at_ms": 1.0},
        {"type": "reasoning", "step": 1, "text": "look it up first"},
        {"type": "tool_call", "id": "call-1", "step": 1, "tool": "get_incident", "kind": "read",
         "arguments": {"id": "INC-1"}, "result": {"status": "open"}, "at_ms": 42.0,
         "latency_ms": 3.0, "schema_valid": true},
        {"type": "fault_injected", "call_id": "call-2", "tool": "close_incident",
         "kind": "rate_limited", "source": "case"},
        {"type": "tool_call", "id": "call-2", "step": 2, "tool": "close_incident", "kind": "write",
         "arguments": {"id": "INC-1"}, "error": {"status": 429, "message": "slow down",
         "retry_after_s": 1.0}, "fault": "rate_limited", "at_ms": 50.0, "latency_ms": 1.0},
        {"type": "wait", "step": 3, "ms": 1000.0},
        {"type": "tool_call", "id": "call-3", "step": 3, "tool": "close_incident", "kind": "write",
         "arguments": {"id": "INC-1"}, "result": {"status": "closed"}, "idempotency_key": "k1",
         "state_changes": [{"path": "/incidents/INC-1/status", "before": "open", "after": "closed"}],
         "at_ms": 1052.0, "latency_ms": 2.0},
        {"type": "agent_message", "step": 3, "text": "Closed."},
        {"type": "final_answer", "text": "INC-1 is closed."}
    ], "final_answer": "INC-1 is closed.",
       "side_effects": [{"tool": "close_incident", "effect": "close_incident {\"id\":\"INC-1\"}",
                         "count": 1, "call_ids": ["call-3"], "idempotency_key": "k1"}]}))
    .unwrap();
    TrialRecord {
        case_id: "close-one".into(),
        epoch: 1,
        seed: 99,
        trace_id: "0af7651916cd43dd8448eb211c80319c".into(),
        status: TrialStatus::Passed,
        error: None,
        tags: vec!["writes".into()],
        difficulty: Some("easy".into()),
        initial_state: json!({"incidents": {"INC-1": {"status": "open"}}}),
        final_state: json!({"incidents": {"INC-1": {"status": "closed"}}}),
        trajectory,
        scores: vec![],
        duration_ms: 1060.5,
        started_at: Some("2026-12-01T10:00:01Z".into()),
        not_applicable: vec![],
        judges: vec![],
        retried_errors: vec![],
    }
}

fn exported() -> ExportTraceServiceRequest {
    export_request(&header(), trial_spans(&header(), &trial()))
}

#[test]
fn gauntlets_own_export_reads_back_exactly_from_json_and_protobuf() {
    let request = exported();
    let json = serde_json::to_vec(&request).unwrap();
    let proto = request.encode_to_vec();
    for bytes in [json, proto] {
        let traces = traces_of(decode_file(&bytes).unwrap());
        assert_eq!(traces.len(), 1);
        let t = imported_trace(&traces[0]);
        let want = trial();
        assert_eq!(t.trajectory, want.trajectory);
        assert_eq!(t.trace_id, want.trace_id);
        assert_eq!(t.case_id, want.case_id);
        assert_eq!(t.epoch, 1);
        assert_eq!(t.seed, 99);
        assert_eq!(t.tags, want.tags);
        assert_eq!(t.difficulty, want.difficulty);
        assert_eq!(t.initial_state, want.initial_state);
        assert_eq!(t.final_state, want.final_state);
        assert_eq!(t.duration_ms, want.duration_ms);
        assert_eq!(t.started_at.as_deref(), Some("2026-12-01T10:00:01Z"));
        assert!(t.complete);
    }
}

/// Without gauntlet's own attributes, the export is read by the GenAI conventions alone.
#[test]
fn the_genai_conventions_alone_give_the_calls_arguments_results_and_tokens() {
    let mut request = exported();
    for rs in &mut request.resource_spans {
        for ss in &mut rs.scope_spans {
            for s in &mut ss.spans {
                s.attributes.retain(|kv| !kv.key.starts_with("gauntlet."));
                s.events.retain(|e| e.name != GAUNTLET_EVENT);
            }
        }
    }
    let t = imported_trace(&traces_of([request])[0]);
    let want = trial();
    let calls: Vec<_> = t.trajectory.tool_calls().collect();
    let wanted: Vec<_> = want.trajectory.tool_calls().collect();
    assert_eq!(calls.len(), 3);
    for (c, w) in calls.iter().zip(&wanted) {
        assert_eq!(
            (&c.id, &c.tool, &c.arguments),
            (&w.id, &w.tool, &w.arguments)
        );
        assert_eq!(c.result, w.result);
        assert_eq!(
            c.error.as_ref().map(|e| e.status),
            w.error.as_ref().map(|e| e.status)
        );
        assert!(
            (c.at_ms - w.at_ms).abs() < 1e-3,
            "{} vs {}",
            c.at_ms,
            w.at_ms
        );
    }
    let tokens: Vec<(u64, u64)> = t
        .trajectory
        .events
        .iter()
        .filter_map(|e| match e {
            Event::ModelCall {
                prompt_tokens,
                completion_tokens,
                ..
            } => Some((*prompt_tokens, *completion_tokens)),
            _ => None,
        })
        .collect();
    assert_eq!(tokens, vec![(120, 14)]);
    assert!(
        matches!(&t.trajectory.events[0], Event::UserMessage { text } if text.starts_with("Close INC-1"))
    );
    assert_eq!(
        t.trajectory.final_answer.as_deref(),
        Some("INC-1 is closed.")
    );
    assert_eq!(t.agent, "script:reference");
    assert_eq!(t.case_id, "0af7651916cd43dd8448eb211c80319c");
}

fn kv_str(key: &str, v: &str) -> KeyValue {
    KeyValue {
        key: key.into(),
        value: Some(AnyValue {
            value: Some(Any::StringValue(v.into())),
        }),
        ..Default::default()
    }
}

fn kv_int(key: &str, v: i64) -> KeyValue {
    KeyValue {
        key: key.into(),
        value: Some(AnyValue {
            value: Some(Any::IntValue(v)),
        }),
        ..Default::default()
    }
}

fn span(trace: u8, id: u8, parent: Option<u8>, start: u64, attrs: Vec<KeyValue>) -> Span {
    Span {
        trace_id: vec![trace; 16],
        span_id: vec![id; 8],
        parent_span_id: parent.map(|p| vec![p; 8]).unwrap_or_default(),
        name: format!("span-{id}"),
        start_time_unix_nano: 1_000_000_000 + start * 1_000_000,
        end_time_unix_nano: 1_000_000_000 + (start + 5) * 1_000_000,
        attributes: attrs,
        ..Default::default()
    }
}

fn request(spans: Vec<Span>) -> ExportTraceServiceRequest {
    ExportTraceServiceRequest {
        resource_spans: vec![opentelemetry_proto::tonic::trace::v1::ResourceSpans {
            resource: Some(opentelemetry_proto::tonic::resource::v1::Resource {
                attributes: vec![kv_str("service.name", "orders")],
                ..Default::default()
            }),
            scope_spans: vec![opentelemetry_proto::tonic::trace::v1::ScopeSpans {
                spans,
                ..Default::default()
            }],
            ..Default::default()
        }],
    }
}

/// OpenInference: the calls come from the LLM span's output, the TOOL span (no call id) fills
/// in the result.
#[test]
fn openinference_spans_become_a_trajectory() {
    let llm1 = span(
        1,
        2,
        Some(1),
        1,
        vec![
            kv_str("openinference.span.kind", "LLM"),
            kv_str("llm.model_name", "gpt-fake"),
            kv_int("llm.token_count.prompt", 51),
            kv_int("llm.token_count.completion", 7),
            kv_str("llm.input_messages.0.message.role", "user"),
            kv_str("llm.input_messages.0.message.content", "Where is A-1?"),
            kv_str("llm.output_messages.0.message.role", "assistant"),
            kv_str(
                "llm.output_messages.0.message.tool_calls.0.tool_call.id",
                "call_1",
            ),
            kv_str(
                "llm.output_messages.0.message.tool_calls.0.tool_call.function.name",
                "get_order",
            ),
            kv_str(
                "llm.output_messages.0.message.tool_calls.0.tool_call.function.arguments",
                r#"{"order_id": "A-1"}"#,
            ),
            kv_str(
                "llm.tools.0.tool.json_schema",
                r#"{"type": "function", "function": {"name": "get_order", "parameters": {"type": "object"}}}"#,
            ),
        ],
    );
    let tool = span(
        1,
        3,
        Some(1),
        10,
        vec![
            kv_str("openinference.span.kind", "TOOL"),
            kv_str("tool.name", "get_order"),
            kv_str("input.value", r#"{"order_id": "A-1"}"#),
            kv_str("output.value", r#"{"status": "shipped"}"#),
        ],
    );
    let llm2 = span(
        1,
        4,
        Some(1),
        20,
        vec![
            kv_str("openinference.span.kind", "LLM"),
            kv_int("llm.token_count.prompt", 81),
            kv_int("llm.token_count.completion", 9),
            kv_str("llm.input_messages.0.message.role", "user"),
            kv_str("llm.input_messages.0.message.content", "Where is A-1?"),
            kv_str("llm.output_messages.0.message.role", "assistant"),
            kv_str("llm.output_messages.0.message.content", "A-1 has shipped."),
        ],
    );
    let root = span(
        1,
        1,
        None,
        0,
        vec![
            kv_str("openinference.span.kind", "AGENT"),
            kv_str("input.value", "Where is A-1?"),
        ],
    );
    let t = imported_trace(&traces_of([request(vec![llm1, tool, llm2, root])])[0]);
    let calls: Vec<_> = t.trajectory.tool_calls().collect();
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].id, "call_1");
    assert_eq!(calls[0].arguments, json!({"order_id": "A-1"}));
    assert_eq!(calls[0].result, Some(json!({"status": "shipped"})));
    assert_eq!(calls[0].at_ms, 10.0);
    assert_eq!(
        t.trajectory.final_answer.as_deref(),
        Some("A-1 has shipped.")
    );
    let users = t
        .trajectory
        .events
        .iter()
        .filter(|e| matches!(e, Event::UserMessage { .. }))
        .count();
    assert_eq!(users, 1, "the repeated history is one request");
    assert_eq!(t.tools.len(), 1);
    assert_eq!(t.service.as_deref(), Some("orders"));
}

#[test]
fn the_assembler_hands_over_a_trace_when_its_root_arrives_or_it_goes_idle() {
    let limits = AssemblerLimits {
        max_open_traces: 2,
        max_spans_per_trace: 3,
        idle_ms: 1_000,
    };
    let mut a = Assembler::new(limits);
    // Children first (they end first), then the root in a later batch.
    assert!(
        a.push(request(vec![span(1, 2, Some(1), 1, vec![])]), 0)
            .is_empty()
    );
    let done = a.push(request(vec![span(1, 1, None, 0, vec![])]), 10);
    assert_eq!(done.len(), 1);
    assert_eq!(done[0].spans.len(), 2);
    // A late span of a finished trace is dropped and counted, not a new trace.
    assert!(
        a.push(request(vec![span(1, 3, Some(1), 2, vec![])]), 20)
            .is_empty()
    );
    assert_eq!((a.open_traces(), a.dropped_spans), (0, 1));
    // Spans over the per-trace limit are dropped.
    let many: Vec<Span> = (2..8).map(|i| span(2, i, Some(1), 1, vec![])).collect();
    a.push(request(many), 30);
    assert_eq!(a.dropped_spans, 1 + 3);
    // A third open trace hands over the longest idle one.
    a.push(request(vec![span(3, 2, Some(1), 1, vec![])]), 40);
    let out = a.push(request(vec![span(4, 2, Some(1), 1, vec![])]), 50);
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].trace_id, vec![2; 16]);
    assert!(!out[0].has_root());
    // Idle traces are handed over.
    assert!(a.expire(1_039).is_empty());
    assert_eq!(a.expire(1_040).len(), 1);
    assert_eq!(a.drain().len(), 1);
}

#[test]
fn a_bad_file_names_the_line() {
    let err = decode_file(b"{\"resourceSpans\": []}\n{\"resourceSpans\": 3}\n").unwrap_err();
    assert!(matches!(err, ImportError::Json { line: 2, .. }), "{err}");
    assert!(decode_file(b"\x0a\x03abc").is_err());
    assert!(decode_file(b"  \n").unwrap().is_empty());
}

fn tool_span(trace: u8, id: u8, parent: Option<u8>, start: u64) -> Span {
    span(
        trace,
        id,
        parent,
        start,
        vec![
            kv_str("gen_ai.operation.name", "execute_tool"),
            kv_str("gen_ai.tool.name", "get_order"),
            kv_str("gen_ai.tool.call.id", &format!("call_{id}")),
            kv_str("gen_ai.tool.call.arguments", r#"{"order_id": "A-1"}"#),
            kv_str("gen_ai.tool.call.result", r#"{"status": "shipped"}"#),
        ],
    )
}

fn chat_span(trace: u8, id: u8, parent: Option<u8>, start: u64) -> Span {
    span(
        trace,
        id,
        parent,
        start,
        vec![
            kv_str("gen_ai.operation.name", "chat"),
            kv_str("gen_ai.request.model", "gpt-fake"),
            kv_int("gen_ai.usage.input_tokens", 40),
            kv_int("gen_ai.usage.output_tokens", 4),
        ],
    )
}

/// Regression: a trace whose root span never arrived lost its earliest span when it was handed
/// over at the idle timeout (the span standing in for the root was left out), so 12,000
/// one-span traces were stored with 0 calls.
#[test]
fn a_trace_without_its_root_keeps_every_span_at_the_idle_timeout() {
    let mut a = Assembler::new(AssemblerLimits {
        idle_ms: 1_000,
        ..AssemblerLimits::default()
    });
    // One tool span whose parent (the agent's span) never comes.
    assert!(
        a.push(request(vec![tool_span(1, 2, Some(1), 1)]), 0)
            .is_empty()
    );
    // A chat and a tool span, both children of a root that never comes.
    assert!(
        a.push(
            request(vec![
                chat_span(2, 2, Some(1), 1),
                tool_span(2, 3, Some(1), 10)
            ]),
            0
        )
        .is_empty()
    );
    let mut expired = a.expire(1_000);
    expired.sort_by(|x, y| x.trace_id.cmp(&y.trace_id));
    assert_eq!(expired.len(), 2);
    let one = imported_trace(&expired[0]);
    assert!(!one.complete);
    let calls: Vec<_> = one.trajectory.tool_calls().collect();
    assert_eq!(calls.len(), 1, "{:?}", one.trajectory);
    assert_eq!(calls[0].tool, "get_order");
    assert_eq!(calls[0].result, Some(json!({"status": "shipped"})));
    // The tool's input is not the user's request, nor its output the answer.
    assert!(
        !one.trajectory
            .events
            .iter()
            .any(|e| matches!(e, Event::UserMessage { .. }))
    );
    assert_eq!(one.trajectory.final_answer, None);
    let two = imported_trace(&expired[1]);
    assert_eq!(two.trajectory.tool_calls().count(), 1);
    let models = two
        .trajectory
        .events
        .iter()
        .filter(|e| matches!(e, Event::ModelCall { .. }))
        .count();
    assert_eq!(models, 1, "{:?}", two.trajectory);
    // The same from a file.
    let t = traces_of([request(vec![tool_span(3, 2, Some(1), 1)])]);
    assert_eq!(imported_trace(&t[0]).trajectory.tool_calls().count(), 1);
}

/// Regression: a span sent again before its root arrived (an OTLP exporter's retry) was kept
/// twice, so the trace showed the call twice and LoopDetection failed it.
#[test]
fn a_span_sent_again_before_its_root_is_kept_once() {
    let mut a = Assembler::new(AssemblerLimits::default());
    let tool = tool_span(1, 2, Some(1), 1);
    assert!(a.push(request(vec![tool.clone()]), 0).is_empty());
    assert!(a.push(request(vec![tool.clone()]), 5).is_empty());
    let done = a.push(request(vec![span(1, 1, None, 0, vec![])]), 10);
    assert_eq!(done.len(), 1);
    assert_eq!(done[0].spans.len(), 2);
    assert_eq!(a.duplicate_spans, 1);
    assert_eq!(a.dropped_spans, 0);
    assert_eq!(imported_trace(&done[0]).trajectory.tool_calls().count(), 1);
    // Within one request, and across the requests of a file, too.
    let mut g = Grouper::default();
    g.add(request(vec![tool.clone(), tool.clone()]));
    g.add(request(vec![tool]));
    assert_eq!(g.duplicate_spans, 2);
    assert_eq!(g.finish()[0].spans.len(), 1);
}

/// Regression: past the limit of spans per trace (2,000) the root span was dropped like any
/// other, so the trace never completed and lost its root's request and answer.
#[test]
fn past_the_span_limit_the_root_is_kept_and_the_extra_spans_counted() {
    let mut a = Assembler::new(AssemblerLimits {
        max_spans_per_trace: 3,
        ..AssemblerLimits::default()
    });
    let children: Vec<Span> = (2..7).map(|i| span(1, i, Some(1), 1, vec![])).collect();
    assert!(a.push(request(children), 0).is_empty());
    assert_eq!(a.dropped_spans, 2);
    let root = span(1, 1, None, 0, vec![kv_str("gen_ai.agent.name", "orders")]);
    let done = a.push(request(vec![root]), 10);
    assert_eq!(done.len(), 1, "the root completes the trace");
    assert!(done[0].has_root());
    assert_eq!(done[0].spans.len(), 4, "three spans and the root");
    assert_eq!(done[0].dropped_spans, 2);
    let t = imported_trace(&done[0]);
    assert!(t.complete);
    assert_eq!(t.agent, "orders");
    assert_eq!(t.dropped_spans, 2);
}

/// Regression: spans whose trace id was not a W3C trace id (`ab`, 3 bytes, 64 hex digits, all
/// zeros) were accepted and stored, when feedback for such an id is refused.
#[test]
fn spans_with_an_invalid_trace_id_are_refused_and_counted() {
    let with_id = |id: Vec<u8>| Span {
        trace_id: id,
        ..span(1, 1, None, 0, vec![])
    };
    let bad = || {
        vec![
            with_id(vec![0xab]),
            with_id(vec![1, 2, 3]),
            with_id(vec![7; 32]),
            with_id(vec![0; 16]),
            with_id(vec![]),
        ]
    };
    for id in [vec![0xab], vec![1, 2, 3], vec![7; 32], vec![0; 16], vec![]] {
        assert!(!is_valid_trace_id(&id), "{id:?}");
    }
    assert!(is_valid_trace_id(&[
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1
    ]));
    // The receiver's filter.
    let mut r = request(bad());
    r.resource_spans[0].scope_spans[0]
        .spans
        .push(span(2, 1, None, 0, vec![]));
    assert_eq!(remove_invalid_spans(&mut r), 5);
    assert_eq!(r.resource_spans[0].scope_spans[0].spans.len(), 1);
    // The assembler and the file reader refuse them too.
    let mut a = Assembler::new(AssemblerLimits::default());
    assert!(a.push(request(bad()), 0).is_empty());
    assert_eq!((a.refused_spans, a.open_traces()), (5, 0));
    let mut g = Grouper::default();
    g.add(request(bad()));
    assert_eq!(g.refused_spans, 5);
    assert!(g.finish().is_empty());
    // OTLP/JSON carries them as hex: `ab` and 64 digits decode, and are refused the same way.
    let json = |id: &str| {
        format!(
            r#"{{"resourceSpans": [{{"scopeSpans": [{{"spans": [{{"traceId": "{id}", "spanId": "0102030405060708", "name": "x"}}]}}]}}]}}"#
        )
    };
    for id in ["ab", &"ab".repeat(32), &"0".repeat(32)] {
        let mut r = decode(json(id).as_bytes(), Encoding::Json).unwrap();
        assert_eq!(remove_invalid_spans(&mut r), 1, "{id}");
    }
    let mut r = decode(json(&"ab".repeat(16)).as_bytes(), Encoding::Json).unwrap();
    assert_eq!(remove_invalid_spans(&mut r), 0);
}

/// Regression: `gauntlet import otlp /dev/zero` read the whole file into memory before decoding
/// it, growing to 7.3 GB in 6 s. Each document or message is now read up to a limit.
#[test]
fn an_endless_input_is_refused_after_the_document_limit() {
    use std::io::Read as _;
    let limit = 1 << 20;
    let zeros = std::io::repeat(0);
    let err = read_requests(zeros, limit, |_| panic!("nothing decodes")).unwrap_err();
    assert!(matches!(err, ImportError::TooLarge { .. }), "{err}");
    // A JSON document without an end, or white space without a document.
    let open = b"{\"resourceSpans\": [".chain(std::io::repeat(b' '));
    let err = read_requests(open, limit, |_| {}).unwrap_err();
    assert!(matches!(err, ImportError::TooLarge { .. }), "{err}");
    let err = read_requests(std::io::repeat(b'\n'), limit, |_| {}).unwrap_err();
    assert!(matches!(err, ImportError::TooLarge { .. }), "{err}");
    // The limit is per document: many small ones go through.
    let doc = "{\"resourceSpans\": []}\n";
    let many = doc.repeat((limit as usize / doc.len()) * 3);
    let mut n = 0;
    read_requests(many.as_bytes(), limit, |_| n += 1).unwrap();
    assert_eq!(n, many.lines().count());
    // A bad document after white space is still named by its line and column.
    let err = read_requests(&b"\n\n  {\"resourceSpans\": 3}"[..], limit, |_| {}).unwrap_err();
    assert!(
        matches!(err, ImportError::Json { line: 3, column, .. } if column > 3),
        "{err:?}"
    );
}

/// An export written as OTLP/JSON Lines (a request of `per_request` traces per line) reads back
/// trace by trace, each trial whole, with no line holding more than its batch.
#[test]
fn an_export_in_json_lines_batched_by_traces_reads_back_every_trial() {
    let trials: Vec<TrialRecord> = (0..5u32)
        .map(|i| {
            let mut t = trial();
            t.epoch = i;
            t.trace_id = format!("0af7651916cd43dd8448eb211c8031{i:02x}");
            t
        })
        .collect();
    let mut batches = crate::TraceBatches::new(header(), 2);
    let mut requests: Vec<ExportTraceServiceRequest> =
        trials.iter().filter_map(|t| batches.push(t)).collect();
    requests.extend(batches.finish());
    let mut file = Vec::new();
    for r in &requests {
        serde_json::to_writer(&mut file, r).unwrap();
        file.push(b'\n');
    }
    let text = String::from_utf8(file.clone()).unwrap();
    assert_eq!(text.lines().count(), 3, "5 traces by 2 make 3 lines");
    for line in text.lines() {
        let one: ExportTraceServiceRequest = serde_json::from_str(line).unwrap();
        let traces = traces_of([one]);
        assert!((1..=2).contains(&traces.len()), "{} traces", traces.len());
    }
    let mut read = Vec::new();
    read_requests(&file[..], MAX_DOCUMENT_BYTES, |r| read.push(r)).unwrap();
    let traces = traces_of(read);
    assert_eq!(traces.len(), 5);
    let mut epochs: Vec<u32> = traces.iter().map(|t| imported_trace(t).epoch).collect();
    epochs.sort_unstable();
    assert_eq!(epochs, vec![0, 1, 2, 3, 4]);
    for t in &traces {
        let t = imported_trace(t);
        assert_eq!(t.trajectory, trial().trajectory);
        assert_eq!(t.final_state, trial().final_state);
    }
}
