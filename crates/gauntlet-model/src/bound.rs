//! What a trajectory may hold, so that everything the harness records its own readers can read
//! back, whatever an agent sent. The main entry is [`bound_event`]: every door (MCP, Python,
//! HTTP, a command's pipes) logs its events through the simulator, which bounds each one as it
//! enters; [`bound_record`] is the store's last check before a trial is written.
//!
//! Why these limits: serde_json's reader refuses a document nested deeper than 128 levels, and
//! writes a number that is not finite as `null`, which it then refuses where a number is
//! expected. A value nested deeper than [`MAX_RECORDED_DEPTH`] keeps its first levels and
//! the rest becomes a marker string; a number that is not finite is clamped; a text longer than
//! [`MAX_RECORDED_TEXT_BYTES`] or a value larger than [`MAX_RECORDED_VALUE_BYTES`] as JSON is cut,
//! with a marker saying how much was there.

use serde_json::Value;

use crate::run::{TrialRecord, TrialSummary};
use crate::trajectory::{Event, TextsMut, ToolError, Trajectory};

/// How deep a recorded JSON value may nest (its own levels; a trial record adds a few around it,
/// far below the 128 serde_json reads).
pub const MAX_RECORDED_DEPTH: usize = 64;

/// The longest text recorded (a final answer, a message, a string inside a value): 1 MiB.
pub const MAX_RECORDED_TEXT_BYTES: usize = 1 << 20;

/// The largest JSON value recorded whole (a call's arguments or result, a state change): 4 MiB of
/// JSON, about; a larger one is recorded as a marker string giving its size.
pub const MAX_RECORDED_VALUE_BYTES: usize = 4 << 20;

/// The longest wait recorded, in milliseconds (one day): a longer or non-finite wait is this.
pub const MAX_WAIT_MS: f64 = 86_400_000.0;

/// The largest magnitude any other recorded number (a clock, a latency, a cost) takes.
const MAX_RECORDED_NUMBER: f64 = 1e15;

/// The marker put where a value nested too deep was cut.
pub fn too_deep_marker() -> Value {
    Value::String(format!(
        "[gauntlet: cut here, nested deeper than {MAX_RECORDED_DEPTH} levels]"
    ))
}

/// Bounds one event as it enters a trajectory; whether anything was changed.
pub fn bound_event(event: &mut Event) -> bool {
    let mut bounder = Bounder::default();
    event.texts_mut(&mut bounder);
    bound_event_numbers(event, &mut bounder.changed);
    bounder.changed
}

/// Bounds a final answer as it is recorded; whether it was cut.
pub fn bound_text(text: &mut String) -> bool {
    let mut bounder = Bounder::default();
    bounder.text(text);
    bounder.changed
}

/// Bounds a wait in milliseconds: not negative, finite, at most [`MAX_WAIT_MS`].
pub fn bound_wait_ms(ms: f64) -> f64 {
    if ms.is_nan() {
        0.0
    } else {
        ms.clamp(0.0, MAX_WAIT_MS)
    }
}

/// Bounds a whole trajectory; whether anything was changed.
pub fn bound_trajectory(trajectory: &mut Trajectory) -> bool {
    let mut changed = false;
    for e in &mut trajectory.events {
        changed |= bound_event(e);
    }
    let mut bounder = Bounder::default();
    trajectory
        .final_answer
        .iter_mut()
        .for_each(|a| bounder.text(a));
    for s in &mut trajectory.side_effects {
        bounder.text(&mut s.effect);
    }
    changed | bounder.changed
}

/// Whether a trial record needs [`bound_record`]: a walk that allocates nothing, for the store
/// to check every record before it writes it and copy only the rare one that is out of bounds.
pub fn record_in_bounds(record: &TrialRecord) -> bool {
    let values_ok = |v: &Value| {
        let mut size = 0;
        value_in_bounds(v, 0, &mut size) && size <= MAX_RECORDED_VALUE_BYTES
    };
    let numbers_ok = record.duration_ms.is_finite()
        && record
            .scores
            .iter()
            .all(|s| s.value.is_finite() && s.score.is_finite());
    numbers_ok
        && shallow_enough(&record.initial_state, 0)
        && shallow_enough(&record.final_state, 0)
        && record.scores.iter().all(|s| values_ok(&s.details))
        && record.trajectory.events.iter().all(event_in_bounds)
        && record
            .trajectory
            .final_answer
            .as_ref()
            .is_none_or(|a| a.len() <= MAX_RECORDED_TEXT_BYTES)
        && record
            .trajectory
            .side_effects
            .iter()
            .all(|s| s.effect.len() <= MAX_RECORDED_TEXT_BYTES)
}

/// Bounds a whole trial record (its trajectory, states' depth, scores' numbers and details);
/// whether anything was changed. States keep their size (a world's state may be large) but not
/// an unreadable depth.
pub fn bound_record(record: &mut TrialRecord) -> bool {
    let mut changed = bound_trajectory(&mut record.trajectory);
    changed |= clamp(&mut record.duration_ms);
    for s in &mut record.scores {
        changed |= clamp(&mut s.value);
        changed |= clamp(&mut s.score);
        changed |= bound_value(&mut s.details);
    }
    for state in [&mut record.initial_state, &mut record.final_state] {
        changed |= cut_deep(state, 0);
    }
    changed
}

/// Whether a trial summary needs [`bound_summary`] (a walk that allocates nothing).
pub fn summary_in_bounds(summary: &TrialSummary) -> bool {
    let details_ok = |v: &Value| {
        let mut size = 0;
        value_in_bounds(v, 0, &mut size) && size <= MAX_RECORDED_VALUE_BYTES
    };
    [summary.cost_eur, summary.user_cost_eur, summary.duration_ms]
        .iter()
        .all(|x| x.is_finite())
        && summary
            .scores
            .iter()
            .all(|s| s.value.is_finite() && s.score.is_finite() && details_ok(&s.details))
        && shallow_enough(&summary.final_state, 0)
}

/// Bounds a trial summary as [`bound_record`] bounds its record; whether anything was changed.
pub fn bound_summary(summary: &mut TrialSummary) -> bool {
    let mut changed = false;
    for x in [
        &mut summary.cost_eur,
        &mut summary.user_cost_eur,
        &mut summary.duration_ms,
    ] {
        changed |= clamp(x);
    }
    for s in &mut summary.scores {
        changed |= clamp(&mut s.value);
        changed |= clamp(&mut s.score);
        changed |= bound_value(&mut s.details);
    }
    changed | cut_deep(&mut summary.final_state, 0)
}

/// Bounds one JSON value (depth, texts, size); whether it was changed.
pub fn bound_value(value: &mut Value) -> bool {
    let mut bounder = Bounder::default();
    bounder.value(value);
    bounder.changed
}

#[derive(Default)]
struct Bounder {
    changed: bool,
}

impl TextsMut for Bounder {
    fn text(&mut self, text: &mut String) {
        if text.len() > MAX_RECORDED_TEXT_BYTES {
            let total = text.len();
            let mut cut = MAX_RECORDED_TEXT_BYTES;
            while !text.is_char_boundary(cut) {
                cut -= 1;
            }
            text.truncate(cut);
            text.push_str(&format!(
                " [gauntlet: cut at {cut} of {total} bytes; texts are recorded up to {MAX_RECORDED_TEXT_BYTES}]"
            ));
            self.changed = true;
        }
    }

    fn value(&mut self, value: &mut Value) {
        self.changed |= cut_deep(value, 0);
        let mut size = 0;
        self.changed |= cut_texts(value, self, &mut size);
        if size > MAX_RECORDED_VALUE_BYTES {
            *value = Value::String(format!(
                "[gauntlet: a value of about {size} bytes as JSON was not recorded; values are \
                 recorded up to {MAX_RECORDED_VALUE_BYTES}]"
            ));
            self.changed = true;
        }
    }
}

/// Replaces what lies deeper than [`MAX_RECORDED_DEPTH`] with [`too_deep_marker`]; whether
/// anything was cut. Recursion stops at the limit, so it is safe on any depth.
fn cut_deep(value: &mut Value, depth: usize) -> bool {
    if !matches!(value, Value::Array(_) | Value::Object(_)) {
        return false;
    }
    if depth >= MAX_RECORDED_DEPTH {
        *value = too_deep_marker();
        return true;
    }
    let mut changed = false;
    match value {
        Value::Array(items) => items
            .iter_mut()
            .for_each(|c| changed |= cut_deep(c, depth + 1)),
        Value::Object(map) => map
            .values_mut()
            .for_each(|c| changed |= cut_deep(c, depth + 1)),
        _ => {}
    }
    changed
}

/// Cuts the long texts of a value (already cut to depth), adding its size as JSON to `size`.
fn cut_texts(value: &mut Value, bounder: &mut Bounder, size: &mut usize) -> bool {
    let before = bounder.changed;
    match value {
        Value::String(s) => {
            bounder.text(s);
            *size += s.len() + 2;
        }
        Value::Array(items) => {
            *size += 2 + items.len();
            for item in items {
                cut_texts(item, bounder, size);
            }
        }
        Value::Object(map) => {
            *size += 2;
            for (k, v) in map.iter_mut() {
                *size += k.len() + 4;
                cut_texts(v, bounder, size);
            }
        }
        Value::Number(_) => *size += 8,
        Value::Bool(_) | Value::Null => *size += 5,
    }
    bounder.changed != before
}

/// Whether a value is within depth, text and size limits; `size` adds up its JSON size.
fn value_in_bounds(value: &Value, depth: usize, size: &mut usize) -> bool {
    fn walk(value: &Value, depth: usize, size: &mut usize) -> bool {
        match value {
            Value::String(s) => {
                *size += s.len() + 2;
                s.len() <= MAX_RECORDED_TEXT_BYTES
            }
            Value::Array(items) => {
                *size += 2 + items.len();
                depth < MAX_RECORDED_DEPTH && items.iter().all(|i| walk(i, depth + 1, size))
            }
            Value::Object(map) => {
                *size += 2;
                depth < MAX_RECORDED_DEPTH
                    && map.iter().all(|(k, v)| {
                        *size += k.len() + 4;
                        walk(v, depth + 1, size)
                    })
            }
            _ => {
                *size += 8;
                true
            }
        }
    }
    walk(value, depth, size)
}

/// Whether a value nests no deeper than [`MAX_RECORDED_DEPTH`].
fn shallow_enough(value: &Value, depth: usize) -> bool {
    match value {
        Value::Array(items) => {
            depth < MAX_RECORDED_DEPTH && items.iter().all(|i| shallow_enough(i, depth + 1))
        }
        Value::Object(map) => {
            depth < MAX_RECORDED_DEPTH && map.values().all(|v| shallow_enough(v, depth + 1))
        }
        _ => true,
    }
}

/// Whether [`bound_event`] would leave the event as it is.
fn event_in_bounds(event: &Event) -> bool {
    let text_ok = |t: &String| t.len() <= MAX_RECORDED_TEXT_BYTES;
    let value_ok = |v: &Value| {
        let mut size = 0;
        value_in_bounds(v, 0, &mut size) && size <= MAX_RECORDED_VALUE_BYTES
    };
    let error_ok = |e: &Option<ToolError>| {
        e.as_ref()
            .is_none_or(|e| text_ok(&e.message) && e.retry_after_s.is_none_or(|s| s.is_finite()))
    };
    match event {
        Event::FinalAnswer { text } => text_ok(text),
        Event::Wait { ms, .. } => ms.is_finite() && (0.0..=MAX_WAIT_MS).contains(ms),
        Event::ToolCall(c) => {
            value_ok(&c.arguments)
                && c.result.as_ref().is_none_or(value_ok)
                && c.recorded_output.as_ref().is_none_or(value_ok)
                && c.state_changes.iter().all(|s| {
                    s.before.as_ref().is_none_or(value_ok) && s.after.as_ref().is_none_or(value_ok)
                })
                && error_ok(&c.error)
                && c.at_ms.is_finite()
                && c.latency_ms.is_finite()
        }
        // The other events are small: bounding a copy tells, and stays right for events added
        // later.
        other => !bound_event(&mut other.clone()),
    }
}

/// Clamps a number to what is recorded (finite, at most [`MAX_RECORDED_NUMBER`] in size);
/// whether it changed.
fn clamp(x: &mut f64) -> bool {
    let bounded = if x.is_nan() {
        0.0
    } else {
        x.clamp(-MAX_RECORDED_NUMBER, MAX_RECORDED_NUMBER)
    };
    let changed = bounded != *x;
    *x = bounded;
    changed
}

fn bound_event_numbers(event: &mut Event, changed: &mut bool) {
    let bound_error = |e: &mut Option<ToolError>, changed: &mut bool| {
        if let Some(ToolError {
            retry_after_s: Some(s),
            ..
        }) = e
        {
            *changed |= clamp(s);
        }
    };
    match event {
        Event::Wait { ms, .. } => {
            let bounded = bound_wait_ms(*ms);
            *changed |= bounded != *ms;
            *ms = bounded;
        }
        Event::ToolCall(c) => {
            *changed |= clamp(&mut c.at_ms);
            *changed |= clamp(&mut c.latency_ms);
            bound_error(&mut c.error, changed);
        }
        Event::ModelCall {
            cost_eur,
            latency_ms,
            ttft_ms,
            at_ms,
            error,
            ..
        } => {
            for x in [
                Some(cost_eur),
                Some(latency_ms),
                ttft_ms.as_mut(),
                at_ms.as_mut(),
            ]
            .into_iter()
            .flatten()
            {
                *changed |= clamp(x);
            }
            bound_error(error, changed);
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn nested(depth: usize) -> Value {
        let mut v = json!("bottom");
        for _ in 0..depth {
            v = json!([v]);
        }
        v
    }

    fn depth_of(v: &Value) -> usize {
        match v {
            Value::Array(a) => 1 + a.iter().map(depth_of).max().unwrap_or(0),
            Value::Object(m) => 1 + m.values().map(depth_of).max().unwrap_or(0),
            _ => 0,
        }
    }

    #[test]
    fn an_argument_nested_3000_deep_is_cut_to_the_limit_with_a_marker() {
        let mut v = nested(3000);
        assert!(bound_value(&mut v));
        assert_eq!(depth_of(&v), MAX_RECORDED_DEPTH);
        let text = serde_json::to_string(&v).unwrap();
        assert!(text.contains("nested deeper than 64 levels"));
        serde_json::from_str::<Value>(&text).expect("reads back");
    }

    #[test]
    fn a_value_within_the_limits_is_left_alone() {
        let mut v = json!({"a": [1, 2, {"b": "c"}], "n": 1e308});
        let before = v.clone();
        assert!(!bound_value(&mut v));
        assert_eq!(v, before);
    }

    #[test]
    fn a_wait_of_1e308_seconds_is_recorded_as_a_day() {
        let mut e = Event::Wait {
            step: 1,
            ms: 1e308 * 1000.0,
        };
        assert!(bound_event(&mut e));
        assert_eq!(
            e,
            Event::Wait {
                step: 1,
                ms: MAX_WAIT_MS
            }
        );
        let mut nan = Event::Wait {
            step: 1,
            ms: f64::NAN,
        };
        bound_event(&mut nan);
        assert_eq!(nan, Event::Wait { step: 1, ms: 0.0 });
    }

    #[test]
    fn a_100_mb_final_answer_is_cut_at_the_stated_limit() {
        let mut answer = "é".repeat(50 << 20);
        assert!(bound_text(&mut answer));
        assert!(answer.len() < MAX_RECORDED_TEXT_BYTES + 200);
        assert!(answer.ends_with(&format!(
            "texts are recorded up to {MAX_RECORDED_TEXT_BYTES}]"
        )));
    }

    #[test]
    fn a_huge_value_becomes_a_marker_giving_its_size() {
        let mut v = json!(
            (0..300_000)
                .map(|i| format!("item {i:08}"))
                .collect::<Vec<_>>()
        );
        assert!(bound_value(&mut v));
        assert!(v.as_str().unwrap().contains("was not recorded"));
    }
}
