//! The seam between the simulator and tool behaviour.
//!
//! A handler sees the arguments and a [`HandlerContext`] over the trial's state, and returns the
//! result the agent sees or a [`ToolError`]. Every mutation goes through the context, so the
//! simulator can record state transitions and undo a handler that fails half-way: a failed call
//! never leaves a half-applied write behind.

use gauntlet_model::{Context, StateChange, ToolError};
use serde_json::Value;

/// Tool behaviour. Implementations must be deterministic given the state and arguments.
pub trait ToolHandler: Send + Sync {
    /// Runs one call.
    fn call(&self, args: &Value, cx: &mut HandlerContext<'_>) -> Result<Value, ToolError>;

    /// The result shape an injected `empty` fault returns: `[]` for collections, `{}` otherwise.
    fn empty_result(&self) -> Value {
        Value::Object(Default::default())
    }
}

/// What a handler may see and change during one call.
pub struct HandlerContext<'a> {
    state: &'a mut Value,
    /// Who the agent acts for.
    pub context: &'a Context,
    changes: Vec<StateChange>,
    accessed: Vec<(String, String)>,
}

impl<'a> HandlerContext<'a> {
    pub(crate) fn new(state: &'a mut Value, context: &'a Context) -> Self {
        HandlerContext {
            state,
            context,
            changes: Vec::new(),
            accessed: Vec::new(),
        }
    }

    /// The value at a JSON Pointer (reading it counts as an access to its record).
    pub fn get(&mut self, pointer: &str) -> Option<&Value> {
        self.note(pointer);
        self.state.pointer(pointer)
    }

    /// Looks without counting an access (for the handler's own bookkeeping).
    pub fn peek(&self, pointer: &str) -> Option<&Value> {
        self.state.pointer(pointer)
    }

    /// Notes an access to the record a pointer falls in (its first two segments).
    pub fn note(&mut self, pointer: &str) {
        if let Some(seg) = gauntlet_model::path::pointer_segments(pointer)
            && seg.len() >= 2
        {
            self.accessed.push((seg[0].clone(), seg[1].clone()));
        }
    }

    /// The records read or written, as (collection, key).
    pub(crate) fn accessed_records(&self) -> Vec<(String, String)> {
        self.accessed.clone()
    }

    /// Writes a value at a JSON Pointer, creating missing objects on the way.
    pub fn set(&mut self, pointer: &str, value: Value) -> Result<(), ToolError> {
        self.note(pointer);
        let segments = gauntlet_model::path::pointer_segments(pointer)
            .ok_or_else(|| internal(format!("path `{pointer}` is not a JSON Pointer")))?;
        let Some((last, parents)) = segments.split_last() else {
            let before = std::mem::replace(self.state, value.clone());
            self.changes.push(StateChange {
                path: String::new(),
                before: Some(before),
                after: Some(value),
            });
            return Ok(());
        };
        let mut node = &mut *self.state;
        let mut prefix = String::new();
        for seg in parents {
            prefix.push('/');
            prefix.push_str(&gauntlet_model::path::escape_segment(seg));
            node = match node {
                Value::Object(map) => {
                    if !map.contains_key(seg) {
                        // Recorded so that a rollback removes it again.
                        self.changes.push(StateChange {
                            path: prefix.clone(),
                            before: None,
                            after: Some(Value::Object(Default::default())),
                        });
                    }
                    map.entry(seg.clone())
                        .or_insert_with(|| Value::Object(Default::default()))
                }
                Value::Array(items) => seg
                    .parse::<usize>()
                    .ok()
                    .and_then(|i| items.get_mut(i))
                    .ok_or_else(|| not_found(pointer))?,
                _ => {
                    return Err(internal(format!(
                        "`{pointer}` goes through a non-container"
                    )));
                }
            };
        }
        let before = match node {
            Value::Object(map) => map.insert(last.clone(), value.clone()),
            Value::Array(items) => {
                let i = last.parse::<usize>().map_err(|_| not_found(pointer))?;
                let len = items.len();
                if i < len {
                    Some(std::mem::replace(&mut items[i], value.clone()))
                } else if i == len {
                    items.push(value.clone());
                    None
                } else {
                    return Err(not_found(pointer));
                }
            }
            _ => {
                return Err(internal(format!(
                    "`{pointer}` goes through a non-container"
                )));
            }
        };
        if before.as_ref() != Some(&value) {
            self.changes.push(StateChange {
                path: pointer.to_owned(),
                before,
                after: Some(value),
            });
        }
        Ok(())
    }

    /// Removes the value at a JSON Pointer; 404 when absent.
    pub fn delete(&mut self, pointer: &str) -> Result<Value, ToolError> {
        self.note(pointer);
        let segments = gauntlet_model::path::pointer_segments(pointer)
            .ok_or_else(|| internal(format!("path `{pointer}` is not a JSON Pointer")))?;
        let (last, parents) = segments.split_last().ok_or_else(|| not_found(pointer))?;
        let parent_ptr: String = parents
            .iter()
            .map(|s| format!("/{}", gauntlet_model::path::escape_segment(s)))
            .collect();
        let removed = match self.state.pointer_mut(&parent_ptr) {
            Some(Value::Object(map)) => map.shift_remove(last),
            Some(Value::Array(items)) => match last.parse::<usize>() {
                Ok(i) if i < items.len() => Some(items.remove(i)),
                _ => None,
            },
            _ => None,
        }
        .ok_or_else(|| not_found(pointer))?;
        self.changes.push(StateChange {
            path: pointer.to_owned(),
            before: Some(removed.clone()),
            after: None,
        });
        Ok(removed)
    }

    /// Puts back every change, newest first (the call failed).
    pub(crate) fn rollback(mut self) {
        while let Some(change) = self.changes.pop() {
            let _ = restore(self.state, &change);
        }
    }

    /// The changes made, in order (the call succeeded).
    pub(crate) fn into_changes(self) -> Vec<StateChange> {
        self.changes
    }
}

fn restore(state: &mut Value, change: &StateChange) -> Option<()> {
    let segments = gauntlet_model::path::pointer_segments(&change.path)?;
    let Some((last, parents)) = segments.split_last() else {
        *state = change.before.clone()?;
        return Some(());
    };
    let mut node = state;
    for seg in parents {
        node = match node {
            Value::Object(map) => map.get_mut(seg)?,
            Value::Array(items) => items.get_mut(seg.parse::<usize>().ok()?)?,
            _ => return None,
        };
    }
    match (node, &change.before) {
        (Value::Object(map), Some(before)) => {
            map.insert(last.clone(), before.clone());
        }
        (Value::Object(map), None) => {
            map.shift_remove(last);
        }
        (Value::Array(items), Some(before)) => {
            let i = last.parse::<usize>().ok()?;
            if change.after.is_none() {
                items.insert(i.min(items.len()), before.clone());
            } else {
                *items.get_mut(i)? = before.clone();
            }
        }
        (Value::Array(items), None) => {
            let i = last.parse::<usize>().ok()?;
            if i < items.len() {
                items.remove(i);
            }
        }
        _ => return None,
    }
    Some(())
}

/// A 404 naming the path.
pub(crate) fn not_found(pointer: &str) -> ToolError {
    ToolError {
        status: 404,
        message: format!("not found: {pointer}"),
        retry_after_s: None,
    }
}

/// A 500: the world definition itself is wrong.
pub(crate) fn internal(message: String) -> ToolError {
    ToolError {
        status: 500,
        message,
        retry_after_s: None,
    }
}
