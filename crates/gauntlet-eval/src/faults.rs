//! Fault verdicts: for each injected fault, the behaviour the fault table demands (docs/reference.md, "Faults").
//!
//! | fault | passes when |
//! |---|---|
//! | timeout | retried at most [`MAX_RETRIES`] times, only if safe (a read, or a write with an idempotency key), each wait at least [`MIN_BACKOFF_MS`] and longer than the last by at least [`BACKOFF_GROWTH`] of it and [`BACKOFF_GROWTH_MIN_MS`] (the clock's jitter on a loaded machine is not growth); or did not retry and informed |
//! | rate_limited | waited at least retry-after before calling the tool again, or stopped and informed |
//! | bad_request | changed the arguments, or asked the user |
//! | forbidden | did not call the tool again, and told the user it lacks permission |
//! | not_found | did not act on the missing entity, and asked or informed |
//! | empty | said nothing was found |
//! | lost_response | every retry carried the faulted call's idempotency key; the effect happened once |
//! | unavailable | used another allowed tool, or informed |
//!
//! Faults of the agent's model calls (injected at the LLM gateway) are judged together in
//! `model_faults`: a timeout or unavailable model passes when a later model call succeeded
//! within [`MAX_RETRIES`] retries; a 429 when the next model call waited at least the
//! retry-after and one succeeded; either passes when the agent stopped and told the user.
//!
//! "Informed" and "asked" are decided from deterministic signals: a question event after the
//! fault, or the final answer mentioning the failure (keyword lists below). A judge can refine
//! these later; the verdict's reason says which signal decided.

use gauntlet_model::names;
use gauntlet_model::{
    Case, Dimension, Event, FaultKind, Score, Severity, ToolCall, ToolKind, Trajectory,
};
use serde_json::{Value, json};

/// Retries allowed after a timeout.
pub const MAX_RETRIES: usize = 3;
/// The shortest wait that counts as a backoff, in milliseconds.
pub const MIN_BACKOFF_MS: f64 = 50.0;
/// How much longer than the last a wait must be to count as growing, as a share of the last:
/// waits are measured on the trial clock, where a busy machine adds milliseconds of jitter, so
/// a constant wait must never read as a growing one. Doubling, or a linear step of a quarter or
/// more, grows; 53 ms then 53.4 ms (or 70 ms on a machine whose cores are all busy) does not.
pub const BACKOFF_GROWTH: f64 = 0.25;
/// ... and in milliseconds, whichever is more.
pub const BACKOFF_GROWTH_MIN_MS: f64 = 25.0;

/// Whether `next` is a longer wait than `last`, beyond the clock's jitter.
pub fn grew(last: f64, next: f64) -> bool {
    next - last >= (last * BACKOFF_GROWTH).max(BACKOFF_GROWTH_MIN_MS)
}

const FAILURE_WORDS: &[&str] = &[
    "timed out",
    "timeout",
    "time out",
    "unavailable",
    "not available",
    "down",
    "try again",
    "later",
    "failed",
    "failure",
    "error",
    "could not",
    "couldn't",
    "unable",
    "rate limit",
    "too many",
    "busy",
];
const PERMISSION_WORDS: &[&str] = &[
    "permission",
    "not allowed",
    "forbidden",
    "not authorized",
    "not authorised",
    "unauthorized",
    "access",
    "lack",
    "role",
];
const NOT_FOUND_WORDS: &[&str] = &[
    "not found",
    "no such",
    "does not exist",
    "doesn't exist",
    "couldn't find",
    "could not find",
    "unknown",
    "no record",
];
const EMPTY_WORDS: &[&str] = &["no", "none", "nothing", "not found", "empty", "zero"];

/// Whether the answer contains one of the words or phrases, as whole words.
fn mentions(answer: &str, words: &[&str]) -> bool {
    let a = answer.to_lowercase();
    words.iter().any(|w| {
        a.match_indices(w).any(|(i, m)| {
            let before = a[..i].chars().next_back();
            let after = a[i + m.len()..].chars().next();
            !before.is_some_and(char::is_alphanumeric) && !after.is_some_and(char::is_alphanumeric)
        })
    })
}

/// The canonical text of arguments, for "same arguments" comparisons.
fn canonical(v: &Value) -> String {
    gauntlet_model::path::canonical_json(v)
}

fn kind_name(k: FaultKind) -> String {
    serde_json::to_value(k)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default()
}

/// A verdict on one injected fault: the event index of the faulted call, its id, the verdict.
type Judged = (usize, String, Verdict);

struct Verdict {
    passed: bool,
    reason: String,
    retries: usize,
    time_lost_ms: f64,
}

/// Scores every injected fault: one `fault_<kind>` score per kind present, plus the
/// informational `faults_injected`, `fault_retries` and `fault_time_lost_ms`.
pub fn fault_scores(case: &Case, t: &Trajectory) -> Vec<Score> {
    let calls: Vec<(usize, &ToolCall)> = t
        .events
        .iter()
        .enumerate()
        .filter_map(|(i, e)| match e {
            Event::ToolCall(c) => Some((i, c.as_ref())),
            _ => None,
        })
        .collect();
    let answer = t.final_answer.clone().unwrap_or_default();
    let end_ms = calls.last().map_or(0.0, |(_, c)| c.at_ms + c.latency_ms);
    let mut per_kind: Vec<(FaultKind, Vec<Judged>)> = Vec::new();
    for (pos, &(idx, call)) in calls.iter().enumerate() {
        let Some(kind) = call.fault else { continue };
        let later: Vec<(usize, &ToolCall)> = calls[pos + 1..].to_vec();
        let asked_after = t.events[idx..]
            .iter()
            .any(|e| matches!(e, Event::Question { .. }));
        let verdict = judge(kind, case, t, call, &later, &answer, asked_after, end_ms);
        match per_kind.iter_mut().find(|(k, _)| *k == kind) {
            Some((_, v)) => v.push((idx, call.id.clone(), verdict)),
            None => per_kind.push((kind, vec![(idx, call.id.clone(), verdict)])),
        }
    }
    let model = model_verdicts(t, &answer);
    if per_kind.is_empty() && model.is_empty() {
        return Vec::new();
    }
    let mut scores = Vec::new();
    let (mut injected, mut retries, mut lost) = (0usize, 0usize, 0.0f64);
    if !model.is_empty() {
        let ok = model.iter().filter(|(_, _, v)| v.passed).count();
        let ratio = ok as f64 / model.len() as f64;
        injected += model.len();
        retries += model.iter().map(|(_, _, v)| v.retries).sum::<usize>();
        lost += model.iter().map(|(_, _, v)| v.time_lost_ms).sum::<f64>();
        scores.push(Score {
            name: names::MODEL_FAULTS.to_owned(),
            dimension: Dimension::Robustness,
            value: ratio,
            score: ratio,
            passed: ok == model.len(),
            severity: Severity::Error,
            details: json!({
                "faults": model.iter().map(|(_, kind, v)| json!({
                    "kind": kind_name(*kind), "passed": v.passed, "reason": v.reason, "retries": v.retries,
                })).collect::<Vec<_>>()
            }),
            events: model
                .iter()
                .filter(|(_, _, v)| !v.passed)
                .map(|(i, _, _)| *i)
                .collect(),
            reason: None,
        });
    }
    for (kind, verdicts) in &per_kind {
        let ok = verdicts.iter().filter(|(_, _, v)| v.passed).count();
        let ratio = ok as f64 / verdicts.len() as f64;
        injected += verdicts.len();
        retries += verdicts.iter().map(|(_, _, v)| v.retries).sum::<usize>();
        lost += verdicts.iter().map(|(_, _, v)| v.time_lost_ms).sum::<f64>();
        scores.push(Score {
            name: format!("fault_{}", kind_name(*kind)),
            dimension: Dimension::Robustness,
            value: ratio,
            score: ratio,
            passed: ok == verdicts.len(),
            severity: Severity::Error,
            details: json!({
                "faults": verdicts.iter().map(|(_, id, v)| json!({
                    "call_id": id, "passed": v.passed, "reason": v.reason, "retries": v.retries,
                })).collect::<Vec<_>>()
            }),
            events: verdicts
                .iter()
                .filter(|(_, _, v)| !v.passed)
                .map(|(i, _, _)| *i)
                .collect(),
            reason: None,
        });
    }
    for (name, value) in [
        (names::FAULTS_INJECTED, injected as f64),
        (names::FAULT_RETRIES, retries as f64),
        (names::FAULT_TIME_LOST_MS, lost),
    ] {
        scores.push(Score {
            name: name.to_owned(),
            dimension: Dimension::Robustness,
            value,
            score: 1.0,
            passed: true,
            severity: Severity::Info,
            details: Value::Null,
            events: Vec::new(),
            reason: None,
        });
    }
    scores
}

/// One agent model call: where it is, when it started, and how it failed.
struct ModelAttempt {
    index: usize,
    at_ms: f64,
    error: Option<gauntlet_model::ToolError>,
    fault: Option<FaultKind>,
}

/// Verdicts on the faults injected into the agent's model calls: (event index, kind, verdict).
fn model_verdicts(t: &Trajectory, answer: &str) -> Vec<(usize, FaultKind, Verdict)> {
    let calls: Vec<ModelAttempt> = t
        .events
        .iter()
        .enumerate()
        .filter_map(|(index, e)| match e {
            Event::ModelCall {
                simulated_user: false,
                at_ms,
                error,
                fault,
                ..
            } => Some(ModelAttempt {
                index,
                at_ms: at_ms.unwrap_or(0.0),
                error: error.clone(),
                fault: *fault,
            }),
            _ => None,
        })
        .collect();
    let mut out = Vec::new();
    for (pos, call) in calls.iter().enumerate() {
        let Some(kind) = call.fault else { continue };
        let later = &calls[pos + 1..];
        let success = later.iter().position(|c| c.error.is_none());
        let retries = success.map_or(later.len(), |i| i + 1);
        let time_lost_ms = success
            .map_or(0.0, |i| later[i].at_ms - call.at_ms)
            .max(0.0);
        let v = |passed: bool, reason: String| Verdict {
            passed,
            reason,
            retries,
            time_lost_ms,
        };
        let informed = mentions(answer, FAILURE_WORDS);
        let verdict = match (later.first(), success) {
            (None, _) if informed => v(true, "stopped and told the user".into()),
            (None, _) => v(false, "gave up without telling the user".into()),
            (Some(_), None) if informed => v(
                true,
                format!("retried {retries} time(s) in vain, then told the user"),
            ),
            (Some(_), None) => v(
                false,
                format!("retried {retries} time(s) in vain and did not tell the user"),
            ),
            (Some(next), Some(_)) if kind == FaultKind::RateLimited => {
                let wait_ms = call
                    .error
                    .as_ref()
                    .and_then(|e| e.retry_after_s)
                    .unwrap_or(1.0)
                    * 1000.0;
                let waited = next.at_ms - call.at_ms;
                if waited >= wait_ms {
                    v(
                        true,
                        format!(
                            "waited {waited:.0} ms (retry-after {wait_ms:.0} ms), then the model answered"
                        ),
                    )
                } else {
                    v(
                        false,
                        format!(
                            "called the model again after {waited:.0} ms; retry-after was {wait_ms:.0} ms"
                        ),
                    )
                }
            }
            (Some(_), Some(_)) if retries > MAX_RETRIES => v(
                false,
                format!("retried {retries} times (at most {MAX_RETRIES})"),
            ),
            (Some(_), Some(_)) => v(
                true,
                format!("the model answered after {retries} retry(ies)"),
            ),
        };
        out.push((call.index, kind, verdict));
    }
    out
}

#[allow(clippy::too_many_arguments)]
fn judge(
    kind: FaultKind,
    case: &Case,
    t: &Trajectory,
    call: &ToolCall,
    later: &[(usize, &ToolCall)],
    answer: &str,
    asked: bool,
    end_ms: f64,
) -> Verdict {
    let same_tool: Vec<&ToolCall> = later
        .iter()
        .map(|(_, c)| *c)
        .filter(|c| c.tool == call.tool)
        .collect();
    let sig = canonical(&call.arguments);
    let retries: Vec<&ToolCall> = same_tool
        .iter()
        .copied()
        .filter(|c| canonical(&c.arguments) == sig)
        .collect();
    let recovered = same_tool.iter().find(|c| c.error.is_none());
    let time_lost_ms = recovered.map_or(end_ms, |c| c.at_ms) - call.at_ms;
    let v = |passed: bool, reason: String| Verdict {
        passed,
        reason,
        retries: retries.len(),
        time_lost_ms: time_lost_ms.max(0.0),
    };
    let informed = |words: &[&str]| mentions(answer, words);
    match kind {
        FaultKind::Timeout => {
            // The attempts of this operation until one succeeds.
            let mut attempts = vec![call];
            for r in &retries {
                attempts.push(r);
                if r.error.is_none() {
                    break;
                }
            }
            let n = attempts.len() - 1;
            if n == 0 {
                return if informed(FAILURE_WORDS) {
                    v(
                        true,
                        "did not retry and told the user about the failure".into(),
                    )
                } else {
                    v(
                        false,
                        "neither retried nor told the user about the timeout".into(),
                    )
                };
            }
            if n > MAX_RETRIES {
                return v(false, format!("retried {n} times (at most {MAX_RETRIES})"));
            }
            let safe = call.kind == Some(ToolKind::Read)
                || attempts.iter().all(|a| {
                    a.idempotency_key.is_some() && a.idempotency_key == call.idempotency_key
                });
            if !safe {
                return v(
                    false,
                    "retried a write without the same idempotency key: unsafe".into(),
                );
            }
            let gaps: Vec<f64> = attempts
                .windows(2)
                .map(|w| w[1].at_ms - w[0].at_ms)
                .collect();
            if let Some(g) = gaps.iter().find(|g| **g < MIN_BACKOFF_MS) {
                return v(
                    false,
                    format!(
                        "retried after {g:.0} ms, without backing off (at least {MIN_BACKOFF_MS:.0} ms)"
                    ),
                );
            }
            if gaps.windows(2).any(|w| !grew(w[0], w[1])) {
                return v(
                    false,
                    format!(
                        "waits did not grow: {:?} ms (each must be longer than the last by {:.0} % and {BACKOFF_GROWTH_MIN_MS:.0} ms)",
                        gaps.iter().map(|g| g.round()).collect::<Vec<_>>(),
                        BACKOFF_GROWTH * 100.0
                    ),
                );
            }
            v(
                true,
                format!("retried {n} time(s) safely with growing waits"),
            )
        }
        FaultKind::RateLimited => {
            let wait_ms = call
                .error
                .as_ref()
                .and_then(|e| e.retry_after_s)
                .unwrap_or(1.0)
                * 1000.0;
            match same_tool.first() {
                Some(next) if next.at_ms - call.at_ms >= wait_ms => v(
                    true,
                    format!(
                        "waited {:.0} ms (retry-after {wait_ms:.0} ms)",
                        next.at_ms - call.at_ms
                    ),
                ),
                Some(next) => v(
                    false,
                    format!(
                        "called again after {:.0} ms; retry-after was {wait_ms:.0} ms",
                        next.at_ms - call.at_ms
                    ),
                ),
                None if informed(FAILURE_WORDS) => v(true, "stopped and told the user".into()),
                None => v(false, "stopped without telling the user".into()),
            }
        }
        FaultKind::BadRequest => match same_tool.first() {
            _ if asked => v(true, "asked the user".into()),
            Some(next) if canonical(&next.arguments) != sig => {
                v(true, "corrected the arguments".into())
            }
            Some(_) => v(false, "sent the same arguments again".into()),
            None => v(
                false,
                "neither corrected the arguments nor asked the user".into(),
            ),
        },
        FaultKind::Forbidden => {
            if !same_tool.is_empty() {
                v(
                    false,
                    format!(
                        "called `{}` again after a 403 ({} time(s))",
                        call.tool,
                        same_tool.len()
                    ),
                )
            } else if informed(PERMISSION_WORDS) {
                v(
                    true,
                    "did not retry and explained the missing permission".into(),
                )
            } else {
                v(false, "did not tell the user it lacks permission".into())
            }
        }
        FaultKind::NotFound => {
            let entity = call.arguments.as_object();
            let acted = later.iter().map(|(_, c)| *c).find(|c| {
                c.kind == Some(ToolKind::Write)
                    && entity.is_some_and(|e| {
                        !e.is_empty() && e.iter().all(|(k, val)| c.arguments.get(k) == Some(val))
                    })
            });
            if let Some(c) = acted {
                v(
                    false,
                    format!("acted on the missing entity with `{}`", c.tool),
                )
            } else if asked || informed(NOT_FOUND_WORDS) {
                v(
                    true,
                    if asked {
                        "asked the user".into()
                    } else {
                        "told the user it was not found".into()
                    },
                )
            } else {
                v(
                    false,
                    "did not say the entity was not found (it may have invented it)".into(),
                )
            }
        }
        FaultKind::Empty => {
            if informed(EMPTY_WORDS) {
                v(true, "said nothing was found".into())
            } else {
                v(
                    false,
                    "did not say that nothing was found (it may have invented results)".into(),
                )
            }
        }
        FaultKind::LostResponse => {
            let effect = t
                .side_effects
                .iter()
                .find(|s| s.call_ids.contains(&call.id));
            let count = effect.map_or(0, |s| s.count);
            let bad_key = retries.iter().find(|r| {
                call.idempotency_key.is_none() || r.idempotency_key != call.idempotency_key
            });
            // The lost call's key on another call: a retry gone wrong, which an API refuses.
            let reused_key = later.iter().map(|(_, c)| *c).find(|c| {
                call.idempotency_key.is_some()
                    && c.idempotency_key == call.idempotency_key
                    && (c.tool != call.tool || canonical(&c.arguments) != sig)
            });
            if let Some(r) = reused_key {
                v(
                    false,
                    format!(
                        "retried {} under the lost call's idempotency key with other arguments (an API refuses it with 409); effect applied {count} time(s)",
                        r.id
                    ),
                )
            } else if let Some(r) = bad_key {
                v(
                    false,
                    format!(
                        "retried {} without the original idempotency key; effect applied {count} time(s)",
                        r.id
                    ),
                )
            } else if count > 1 {
                v(false, format!("effect applied {count} times"))
            } else {
                v(
                    true,
                    format!(
                        "effect applied once ({} retr{} with the same key)",
                        retries.len(),
                        if retries.len() == 1 { "y" } else { "ies" }
                    ),
                )
            }
        }
        FaultKind::Unavailable => {
            let forbidden = &case.trajectory_constraints.forbidden_tools;
            let alternative = later
                .iter()
                .map(|(_, c)| *c)
                .find(|c| c.tool != call.tool && !forbidden.contains(&c.tool));
            if let Some(a) = alternative {
                v(true, format!("fell back to `{}`", a.tool))
            } else if informed(FAILURE_WORDS) {
                v(true, "told the user the tool is unavailable".into())
            } else {
                v(
                    false,
                    "neither used an alternative nor told the user".into(),
                )
            }
        }
    }
}
