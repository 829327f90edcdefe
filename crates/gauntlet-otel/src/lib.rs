//! Trials as OpenTelemetry traces and back.
//!
//! `export`: each trial is one trace in OTLP with the GenAI semantic conventions (an
//! `invoke_agent` span, a `chat` span per model call, an `execute_tool` span per tool call, every
//! verdict a `gen_ai.evaluation.result` event), carrying gauntlet's own attributes so the trial
//! reads back whole. `import`: OTLP (JSON or protobuf) from any producer that follows the GenAI
//! or OpenInference conventions, assembled per trace into trajectories. Pure: bytes and records
//! in, records and messages out; callers do the I/O.

mod export;
mod import;

/// An OTLP trace export request (what `POST /v1/traces` carries).
pub use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest as ExportRequest;
/// The answer to an export request (with its partial success).
pub use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceResponse as ExportResponse;
/// An OTLP span.
pub use opentelemetry_proto::tonic::trace::v1::Span;

pub use export::{
    TRACES_PER_REQUEST, TraceBatches, evaluation_events, evaluation_request, evaluation_span,
    export_request, trial_spans,
};
pub use import::{
    Assembler, AssemblerLimits, Encoding, Grouper, ImportError, ImportedTrace, MAX_DOCUMENT_BYTES,
    TRACE_ID_RULE, Trace, decode, decode_file, export_response, imported_trace, is_valid_trace_id,
    read_requests, remove_invalid_spans, traces_of,
};
