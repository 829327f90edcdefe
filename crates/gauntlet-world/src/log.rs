//! A trial's event log. Tool calls are most of a trajectory's weight: their arguments and what
//! came back, held as trees of JSON values (about 2 KB of memory for a call that reads a small
//! record, against about 300 bytes of JSON text). A trial keeps its
//! first [`WHOLE_CALLS`] calls whole, so a short one pays nothing; past them, a call is kept as
//! its compact JSON text (a few hundred bytes) until the trajectory is handed out, so memory per
//! call stays small however long an agent's session runs.

use std::sync::Arc;

use gauntlet_model::{Event, ToolCall};

/// Who hears each event of a trial as it is logged (the run's event stream, live): a tool call
/// once it has its result.
pub type EventTap = Arc<dyn Fn(&Event) + Send + Sync>;

/// How many calls a log keeps whole before it keeps them as text.
pub(crate) const WHOLE_CALLS: usize = 256;

/// The events of one trial, in order.
#[derive(Default)]
pub(crate) struct EventLog {
    entries: Vec<Entry>,
    whole_calls: usize,
    pub(crate) tap: Option<EventTap>,
}

enum Entry {
    Whole(Event),
    /// A tool call as its JSON text.
    Call(Box<str>),
}

impl EventLog {
    /// Appends an event, whole, bounded as everything recorded is (see
    /// [`gauntlet_model::bound`]).
    pub(crate) fn push(&mut self, mut event: Event) {
        gauntlet_model::bound::bound_event(&mut event);
        if let Some(tap) = &self.tap {
            tap(&event);
        }
        self.keep(event);
    }

    fn keep(&mut self, event: Event) {
        if matches!(event, Event::ToolCall(_)) {
            self.whole_calls += 1;
        }
        self.entries.push(Entry::Whole(event));
    }

    /// Appends a tool call: as text past the first [`WHOLE_CALLS`] when `compact` allows it (a
    /// trial whose traps read every call as they go keeps them whole).
    pub(crate) fn push_call(&mut self, call: Box<ToolCall>, compact: bool) {
        let mut event = Event::ToolCall(call);
        gauntlet_model::bound::bound_event(&mut event);
        let Event::ToolCall(call) = event else {
            unreachable!("made a tool call just above")
        };
        let call = match &self.tap {
            Some(tap) => {
                let event = Event::ToolCall(call);
                tap(&event);
                let Event::ToolCall(call) = event else {
                    unreachable!("made a tool call just above")
                };
                call
            }
            None => call,
        };
        if compact
            && self.whole_calls >= WHOLE_CALLS
            && let Ok(text) = serde_json::to_string(&call)
        {
            self.entries.push(Entry::Call(text.into_boxed_str()));
        } else {
            self.keep(Event::ToolCall(call));
        }
    }

    /// The events other than tool calls (the conversation, faults, waits), in order.
    pub(crate) fn conversation(&self) -> impl Iterator<Item = &Event> {
        self.entries.iter().filter_map(|e| match e {
            Entry::Whole(Event::ToolCall(_)) | Entry::Call(_) => None,
            Entry::Whole(event) => Some(event),
        })
    }

    /// The calls kept whole, in order: every call of a trial that never let the log compact.
    pub(crate) fn whole_calls(&self) -> impl DoubleEndedIterator<Item = &ToolCall> {
        self.entries.iter().filter_map(|e| match e {
            Entry::Whole(Event::ToolCall(c)) => Some(c.as_ref()),
            _ => None,
        })
    }

    /// Changes the last tool call, wherever it is kept.
    pub(crate) fn change_last_call(&mut self, change: impl FnOnce(&mut ToolCall)) {
        let Some(last) = self
            .entries
            .iter_mut()
            .rev()
            .find(|e| matches!(e, Entry::Whole(Event::ToolCall(_)) | Entry::Call(_)))
        else {
            return;
        };
        match last {
            Entry::Whole(Event::ToolCall(c)) => change(c),
            Entry::Call(text) => {
                let mut call = read_call(text);
                change(&mut call);
                if let Ok(changed) = serde_json::to_string(&call) {
                    *text = changed.into_boxed_str();
                }
            }
            Entry::Whole(_) => {}
        }
    }

    /// The events, every call whole again.
    pub(crate) fn into_events(self) -> Vec<Event> {
        self.entries
            .into_iter()
            .map(|e| match e {
                Entry::Whole(event) => event,
                Entry::Call(text) => Event::ToolCall(Box::new(read_call(&text))),
            })
            .collect()
    }
}

/// A call back from the text the log wrote. It reads back as a stored trajectory's call does
/// (a `null` result is no result); text the log wrote always parses, but should it not, the
/// call says so rather than vanish.
fn read_call(text: &str) -> ToolCall {
    serde_json::from_str(text).unwrap_or_else(|e| ToolCall {
        error: Some(gauntlet_model::ToolError {
            status: 500,
            message: format!("gauntlet could not read this call back from its log: {e}"),
            retry_after_s: None,
        }),
        ..ToolCall::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn call(n: u32) -> Event {
        let call: ToolCall = serde_json::from_value(json!({
            "id": format!("call-{n}"), "step": n, "tool": "get_incident",
            "arguments": {"incident_id": format!("INC-{n:06}")},
            "kind": "read", "schema_valid": true,
            "result": {"id": n, "title": "Search index lagging", "notes": [], "score": 0.1 + n as f64},
            "at_ms": n as f64 / 3.0, "latency_ms": 0.017,
        }))
        .unwrap();
        Event::ToolCall(Box::new(call))
    }

    #[test]
    fn a_long_log_gives_back_exactly_what_was_pushed() {
        let mut log = EventLog::default();
        let mut pushed = Vec::new();
        for n in 0..(WHOLE_CALLS as u32 + 40) {
            let events = [
                call(n),
                Event::AgentMessage {
                    step: n,
                    text: format!("said {n}"),
                },
            ];
            for e in events {
                pushed.push(e.clone());
                match e {
                    Event::ToolCall(c) => log.push_call(c, true),
                    e => log.push(e),
                }
            }
        }
        assert!(log.entries.iter().any(|e| matches!(e, Entry::Call(_))));
        assert_eq!(log.whole_calls().count(), WHOLE_CALLS);
        assert_eq!(log.conversation().count(), WHOLE_CALLS + 40);
        log.change_last_call(|c| c.recorded_output = Some(json!({"was": "recorded"})));
        if let Some(Event::ToolCall(c)) = pushed
            .iter_mut()
            .rev()
            .find(|e| matches!(e, Event::ToolCall(_)))
        {
            c.recorded_output = Some(json!({"was": "recorded"}));
        }
        assert_eq!(log.into_events(), pushed);
    }

    /// Issue 48 (H2): an argument nested 3,000 deep (an agent's, through any door) and a wait
    /// of 1e308 s are bounded as they enter, so the trajectory scored is the one stored.
    #[test]
    fn an_argument_3000_deep_and_an_endless_wait_are_bounded_as_they_enter() {
        let mut log = EventLog::default();
        let Event::ToolCall(mut c) = call(1) else {
            unreachable!()
        };
        let mut deep = json!("INC-1");
        for _ in 0..3000 {
            deep = json!([deep]);
        }
        c.arguments = json!({ "incident_id": deep });
        log.push_call(c, false);
        log.push(Event::Wait {
            step: 2,
            ms: f64::INFINITY,
        });
        let events = log.into_events();
        let text = serde_json::to_string(&events).unwrap();
        assert!(text.contains("nested deeper than 64 levels"));
        serde_json::from_str::<Vec<Event>>(&text).expect("reads back");
        assert_eq!(
            events[1],
            Event::Wait {
                step: 2,
                ms: gauntlet_model::bound::MAX_WAIT_MS
            }
        );
    }

    #[test]
    fn a_log_told_not_to_compact_keeps_every_call_whole() {
        let mut log = EventLog::default();
        for n in 0..(WHOLE_CALLS as u32 + 5) {
            let Event::ToolCall(c) = call(n) else {
                unreachable!()
            };
            log.push_call(c, false);
        }
        assert_eq!(log.whole_calls().count(), WHOLE_CALLS + 5);
    }
}
