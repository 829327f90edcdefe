//! The data of gauntlet: cases, worlds, trajectories, scores and the run log.
//!
//! This crate does no I/O and knows no async runtime: every other crate reads it, and a stored
//! run can be re-read and re-scored with nothing but these types. Serialized field names are the
//! seeds' vocabulary (`case_id`, `expected_outcome`, `required_tool_recall`, ...) and part of the
//! on-disk format guarded by [`FORMAT_VERSION`].
#![warn(missing_docs)]

pub mod article;
pub mod attack;
pub mod benchmark;
pub mod bound;
pub mod case;
pub mod changed_state;
pub mod checkpoint;
pub mod compare;
pub mod context;
pub mod digest;
pub mod error;
pub mod events;
pub mod fault;
pub mod judge;
pub mod labels;
pub mod matcher;
pub mod matching;
pub mod names;
pub mod online;
pub mod path;
pub mod rubric;
pub mod run;
pub mod score;
pub mod service;
pub mod shadow;
pub mod stored_state;
pub mod trajectory;
pub mod world;

pub use attack::{Attack, CallPattern, InjectionVector, NoTemplateError, Predicate};
pub use benchmark::{BenchmarkHeadline, BenchmarkSpec, Metrics};
pub use case::{
    Case, Constraints, Context, FaultKind, FaultSpec, ReferenceStep, ReplyPattern, UserReply,
    UserSpec,
};
pub use changed_state::{ChangedState, FinalState, StateRef};
pub use digest::is_trace_id;
pub use error::{Classified, ErrorKind, without_rust_types};
pub use events::RunEvent;
pub use judge::{JudgeBrief, JudgeHeader, JudgeOutcome, JudgeReport, JudgeSpec, JudgeStatus};
pub use labels::{
    CalibrationFile, CalibrationThresholds, JudgeIdentity, Label, LabelValue, SegmentValue,
    Segments,
};
pub use matcher::{Expectation, Matcher, MatcherError, MatcherSyntaxError, ReservedKey};
pub use rubric::{DimensionDef, RubricDef};
pub use run::{
    Evaluation, EvaluatorStats, FORMAT_VERSION, FlakyCase, GateOutcome, Interval, IntervalMethod,
    OLDEST_READABLE_FORMAT, Observed, Price, RubricDimensionOutcome, RubricOutcome, RunHeader,
    RunResults, SUMMARIES_FILE, SegmentStats, Shard, ShardSyntaxError, TrialRecord, TrialStatus,
    TrialSummary, Verdict, Versions,
};
pub use score::{Dimension, Needs, NotApplicable, Score, Severity};
pub use trajectory::{Event, SideEffect, StateChange, ToolCall, ToolError, Trajectory};
pub use world::{ClaimRule, HandlerOp, ToolKind, ToolSpec, WorldSpec};
