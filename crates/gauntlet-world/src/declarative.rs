//! Declarative handlers: CRUD over the JSON state without code.
//!
//! Templates: in a path, `{name}` is replaced by the argument's value, escaped as a JSON Pointer
//! segment; `{context.user}`, `{context.tenant}` by the context. In a value, a string that is
//! exactly `"{name}"` becomes the argument's JSON value; other strings are interpolated.

use gauntlet_model::{Context, HandlerOp, ToolError};
use serde_json::{Map, Value};

use crate::handler::{HandlerContext, ToolHandler, internal, not_found};

/// A tool whose behaviour is a list of [`HandlerOp`]s.
pub struct DeclarativeHandler {
    ops: Vec<HandlerOp>,
}

impl DeclarativeHandler {
    /// A handler running these ops in order.
    pub fn new(ops: Vec<HandlerOp>) -> Self {
        DeclarativeHandler { ops }
    }
}

impl ToolHandler for DeclarativeHandler {
    fn call(&self, args: &Value, cx: &mut HandlerContext<'_>) -> Result<Value, ToolError> {
        let mut result = Value::Object(Map::new());
        for op in &self.ops {
            match op {
                HandlerOp::Require {
                    path,
                    equals,
                    status,
                    message,
                } => {
                    let p = path_template(path, args, cx.context)?;
                    let fail = |default_status: u16, default_message: String| ToolError {
                        status: status.unwrap_or(default_status),
                        message: message
                            .as_ref()
                            .map(|m| text_template(m, args, cx.context))
                            .unwrap_or(default_message),
                        retry_after_s: None,
                    };
                    match (cx.get(&p), equals) {
                        (None, _) => return Err(fail(404, format!("not found: {p}"))),
                        (Some(v), Some(want)) if v != want => {
                            return Err(fail(409, format!("{p} is {v}, not {want}")));
                        }
                        _ => {}
                    }
                }
                HandlerOp::Get(path) => {
                    let p = path_template(path, args, cx.context)?;
                    result = cx.get(&p).cloned().ok_or_else(|| not_found(&p))?;
                }
                HandlerOp::List { path, filter } => {
                    let p = path_template(path, args, cx.context)?;
                    let mut wanted = Vec::new();
                    for (field, template) in filter {
                        if let Some(name) = whole_placeholder(template)
                            && lookup(name, args, cx.context).is_none()
                        {
                            continue;
                        }
                        wanted.push((field, value_template(template, args, cx.context)));
                    }
                    let keep =
                        |item: &Value| wanted.iter().all(|(f, v)| item.get(f.as_str()) == Some(v));
                    // Every listed record counts as read (it reaches the agent).
                    let listed: Vec<(String, Value)> = match cx.peek(&p) {
                        Some(Value::Object(map)) => map
                            .iter()
                            .filter(|(_, v)| keep(v))
                            .map(|(k, v)| (k.clone(), v.clone()))
                            .collect(),
                        Some(Value::Array(items)) => items
                            .iter()
                            .enumerate()
                            .filter(|(_, v)| keep(v))
                            .map(|(i, v)| (i.to_string(), v.clone()))
                            .collect(),
                        Some(_) => return Err(internal(format!("{p} is not a collection"))),
                        None => Vec::new(),
                    };
                    for (k, _) in &listed {
                        cx.note(&format!("{p}/{}", gauntlet_model::path::escape_segment(k)));
                    }
                    result = Value::Array(listed.into_iter().map(|(_, v)| v).collect());
                }
                HandlerOp::Set { path, value } => {
                    let p = path_template(path, args, cx.context)?;
                    let v = value_template(value, args, cx.context);
                    cx.set(&p, v.clone())?;
                    result = v;
                }
                HandlerOp::Merge { path, value } => {
                    let p = path_template(path, args, cx.context)?;
                    let Value::Object(fields) = value_template(value, args, cx.context) else {
                        return Err(internal(format!("merge into {p} needs an object value")));
                    };
                    if !matches!(cx.get(&p), Some(Value::Object(_))) {
                        return Err(not_found(&p));
                    }
                    for (k, v) in fields {
                        let child = format!("{p}/{}", gauntlet_model::path::escape_segment(&k));
                        cx.set(&child, v)?;
                    }
                    result = cx.get(&p).cloned().unwrap_or(Value::Null);
                }
                HandlerOp::Append { path, value } => {
                    let p = path_template(path, args, cx.context)?;
                    let v = value_template(value, args, cx.context);
                    let len = match cx.get(&p) {
                        Some(Value::Array(items)) => items.len(),
                        None => {
                            cx.set(&p, Value::Array(Vec::new()))?;
                            0
                        }
                        Some(_) => return Err(internal(format!("{p} is not an array"))),
                    };
                    cx.set(&format!("{p}/{len}"), v.clone())?;
                    result = v;
                }
                HandlerOp::Delete(path) => {
                    let p = path_template(path, args, cx.context)?;
                    let removed = cx.delete(&p)?;
                    result = serde_json::json!({"deleted": removed});
                }
                HandlerOp::Return(template) => {
                    result = value_template(template, args, cx.context);
                }
            }
        }
        Ok(result)
    }

    fn empty_result(&self) -> Value {
        if self
            .ops
            .iter()
            .any(|op| matches!(op, HandlerOp::List { .. }))
        {
            Value::Array(Vec::new())
        } else {
            Value::Object(Map::new())
        }
    }
}

/// The `{name}`s a template uses, in order.
pub(crate) fn placeholders(template: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        let Some(close) = rest[open..].find('}') else {
            break;
        };
        out.push(&rest[open + 1..open + close]);
        rest = &rest[open + close + 1..];
    }
    out
}

/// `name` when the template is exactly `"{name}"`.
fn whole_placeholder(template: &Value) -> Option<&str> {
    let s = template.as_str()?;
    let inner = s.strip_prefix('{')?.strip_suffix('}')?;
    (!inner.contains(['{', '}'])).then_some(inner)
}

fn lookup(name: &str, args: &Value, context: &Context) -> Option<Value> {
    match name {
        "context.user" => context.user.clone().map(Value::String),
        "context.tenant" => context.tenant.clone().map(Value::String),
        _ => args.get(name).cloned(),
    }
}

fn as_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// A `{name}` in a template with no value among the call's arguments.
///
/// It becomes the 400 tool error the agent sees (the agent's arguments are wrong), which is
/// trajectory data, never an exit code: so it has no [`gauntlet_model::ErrorKind`].
#[derive(Debug, thiserror::Error)]
#[error("missing argument `{name}`")]
struct MissingArgument {
    /// The placeholder's name.
    name: String,
}

/// Replaces each `{name}` by `render(value)`; an error for a name with no value.
fn interpolate(
    template: &str,
    args: &Value,
    context: &Context,
    render: impl Fn(&Value) -> String,
) -> Result<String, MissingArgument> {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        let Some(close) = rest[open..].find('}') else {
            break;
        };
        out.push_str(&rest[..open]);
        let name = &rest[open + 1..open + close];
        match lookup(name, args, context) {
            Some(v) => out.push_str(&render(&v)),
            None => {
                return Err(MissingArgument {
                    name: name.to_owned(),
                });
            }
        }
        rest = &rest[open + close + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

fn path_template(path: &str, args: &Value, context: &Context) -> Result<String, ToolError> {
    interpolate(path, args, context, |v| {
        gauntlet_model::path::escape_segment(&as_text(v))
    })
    .map_err(|e| ToolError {
        status: 400,
        message: e.to_string(),
        retry_after_s: None,
    })
}

fn text_template(text: &str, args: &Value, context: &Context) -> String {
    interpolate(text, args, context, as_text).unwrap_or_else(|_| text.to_owned())
}

fn value_template(template: &Value, args: &Value, context: &Context) -> Value {
    match template {
        Value::String(s) => {
            if let Some(name) = whole_placeholder(template)
                && let Some(v) = lookup(name, args, context)
            {
                return v;
            }
            Value::String(text_template(s, args, context))
        }
        Value::Array(items) => Value::Array(
            items
                .iter()
                .map(|v| value_template(v, args, context))
                .collect(),
        ),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), value_template(v, args, context)))
                .collect(),
        ),
        other => other.clone(),
    }
}
