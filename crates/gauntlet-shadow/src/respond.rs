//! Answers to writes that are recorded, not executed: a success shaped by the tool's output
//! schema, or a template. Pure: a value from the tool, its schema and the arguments.

use serde_json::{Map, Value, json};

/// How deep the schema walk goes before it stops filling (recursive schemas).
const MAX_DEPTH: usize = 12;

/// A plain success for `tool`: with an output schema, the smallest object its required fields
/// allow (an argument of the same name fills a field when it fits the field's schema and is
/// not text); without one, `{"ok": true}`.
pub fn schema_shaped(output_schema: Option<&Value>, args: &Value) -> Value {
    let Some(schema) = output_schema else {
        return json!({"ok": true});
    };
    let mut v = instance(schema, schema, MAX_DEPTH);
    if let (Some(obj), Some(args)) = (v.as_object_mut(), args.as_object()) {
        let props = resolve(schema, schema)
            .get("properties")
            .and_then(Value::as_object);
        for (k, slot) in obj.iter_mut() {
            let Some(arg) = args.get(k) else { continue };
            if arg.is_string() {
                continue;
            }
            let fits = props
                .and_then(|p| p.get(k))
                .is_some_and(|s| jsonschema::is_valid(&with_defs(s, schema), arg));
            if fits {
                *slot = arg.clone();
            }
        }
    }
    v
}

/// A subschema carrying its root's definitions, so that its `$ref`s resolve on its own.
fn with_defs(sub: &Value, root: &Value) -> Value {
    let mut s = sub.clone();
    if let Some(obj) = s.as_object_mut() {
        for key in ["definitions", "$defs"] {
            if let Some(d) = root.get(key) {
                obj.entry(key).or_insert_with(|| d.clone());
            }
        }
    }
    s
}

/// Follows a local `$ref` (`#/definitions/X`, `#/$defs/X`).
fn resolve<'a>(schema: &'a Value, root: &'a Value) -> &'a Value {
    let mut s = schema;
    for _ in 0..MAX_DEPTH {
        match s.get("$ref").and_then(Value::as_str) {
            Some(r) if r.starts_with('#') => match root.pointer(&r[1..]) {
                Some(t) => s = t,
                None => return s,
            },
            _ => return s,
        }
    }
    s
}

/// The smallest value a schema accepts, as far as a walk can tell: its `const`, first `enum`
/// value, `default` or first example; else by type, with required fields, `minItems`,
/// `minLength` and `minimum` honoured.
fn instance(schema: &Value, root: &Value, depth: usize) -> Value {
    let schema = resolve(schema, root);
    if depth == 0 {
        return Value::Null;
    }
    for key in ["const", "default"] {
        if let Some(v) = schema.get(key) {
            return v.clone();
        }
    }
    for key in ["enum", "examples"] {
        if let Some(v) = schema
            .get(key)
            .and_then(Value::as_array)
            .and_then(|a| a.first())
        {
            return v.clone();
        }
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(first) = schema
            .get(key)
            .and_then(Value::as_array)
            .and_then(|a| a.first())
        {
            return instance(first, root, depth - 1);
        }
    }
    if let Some(all) = schema.get("allOf").and_then(Value::as_array) {
        let mut merged = Map::new();
        for part in all {
            if let Value::Object(o) = instance(part, root, depth - 1) {
                merged.extend(o);
            }
        }
        return Value::Object(merged);
    }
    let ty = match schema.get("type") {
        Some(Value::String(t)) => t.as_str(),
        // Of several types, the first that is not null.
        Some(Value::Array(ts)) => ts
            .iter()
            .filter_map(Value::as_str)
            .find(|t| *t != "null")
            .unwrap_or("null"),
        _ if schema.get("properties").is_some() => "object",
        _ if schema.get("items").is_some() => "array",
        _ => "object",
    };
    match ty {
        "object" => {
            let mut out = Map::new();
            let props = schema.get("properties").and_then(Value::as_object);
            for name in schema
                .get("required")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
            {
                let sub = props.and_then(|p| p.get(name)).unwrap_or(&Value::Null);
                let v = if sub.is_null() {
                    Value::Null
                } else {
                    instance(sub, root, depth - 1)
                };
                out.insert(name.to_owned(), v);
            }
            Value::Object(out)
        }
        "array" => {
            let n = schema.get("minItems").and_then(Value::as_u64).unwrap_or(0);
            let item = schema.get("items").unwrap_or(&Value::Null);
            Value::Array(
                (0..n.min(16))
                    .map(|_| instance(item, root, depth - 1))
                    .collect(),
            )
        }
        "string" => {
            let n = schema.get("minLength").and_then(Value::as_u64).unwrap_or(0) as usize;
            let mut s = "ok".to_owned();
            while s.len() < n {
                s.push('.');
            }
            Value::String(s)
        }
        "integer" | "number" => {
            let min = schema
                .get("minimum")
                .and_then(Value::as_f64)
                .or_else(|| {
                    schema
                        .get("exclusiveMinimum")
                        .and_then(Value::as_f64)
                        .map(|m| m + 1.0)
                })
                .unwrap_or(0.0)
                .max(0.0)
                .ceil();
            json!(min as i64)
        }
        "boolean" => Value::Bool(true),
        _ => Value::Null,
    }
}

/// A responder's template that does not render: the configuration's input.
#[derive(Debug, thiserror::Error)]
#[error("template `{template}`: {source}")]
pub struct TemplateError {
    /// The string that does not render.
    pub template: String,
    /// Why.
    pub source: minijinja::Error,
}

impl gauntlet_model::Classified for TemplateError {
    fn kind(&self) -> gauntlet_model::ErrorKind {
        gauntlet_model::ErrorKind::InvalidInput
    }
}

/// Renders every string of `template` with `tool` and `args` (minijinja: `{{ args.path }}`).
pub fn render_template(template: &Value, tool: &str, args: &Value) -> Result<Value, TemplateError> {
    let env = minijinja::Environment::new();
    let cx = minijinja::context! { tool => tool, args => minijinja::Value::from(minijinja::value::Serde(args)) };
    fn walk(
        v: &Value,
        env: &minijinja::Environment<'_>,
        cx: &minijinja::Value,
    ) -> Result<Value, TemplateError> {
        Ok(match v {
            Value::String(s) if s.contains("{{") || s.contains("{%") => {
                Value::String(env.render_str(s, cx).map_err(|source| TemplateError {
                    template: s.clone(),
                    source,
                })?)
            }
            Value::Array(a) => Value::Array(
                a.iter()
                    .map(|x| walk(x, env, cx))
                    .collect::<Result<_, _>>()?,
            ),
            Value::Object(o) => Value::Object(
                o.iter()
                    .map(|(k, x)| Ok((k.clone(), walk(x, env, cx)?)))
                    .collect::<Result<_, TemplateError>>()?,
            ),
            other => other.clone(),
        })
    }
    walk(template, &env, &cx)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn valid(schema: &Value, v: &Value) -> bool {
        jsonschema::is_valid(schema, v)
    }

    #[test]
    fn shapes_satisfy_real_servers_output_schemas() {
        // server-filesystem's write_file and server-memory's create_entities / delete_entities.
        let fs = json!({"$schema": "http://json-schema.org/draft-07/schema#", "type": "object",
            "properties": {"content": {"type": "string"}}, "required": ["content"],
            "additionalProperties": false});
        let v = schema_shaped(Some(&fs), &json!({"path": "/x", "content": "secret text"}));
        assert!(valid(&fs, &v), "{v}");
        assert_eq!(
            v["content"], "ok",
            "file content is not echoed as the answer"
        );

        let entity = json!({"type": "object", "properties": {"name": {"type": "string"},
            "entityType": {"type": "string"}, "observations": {"type": "array", "items": {"type": "string"}}},
            "required": ["name", "entityType", "observations"], "additionalProperties": false});
        let create = json!({"type": "object", "properties": {"entities": {"type": "array", "items": entity}},
            "required": ["entities"], "additionalProperties": false});
        let args = json!({"entities": [{"name": "Ada", "entityType": "person", "observations": ["math"]}]});
        let v = schema_shaped(Some(&create), &args);
        assert!(valid(&create, &v), "{v}");
        assert_eq!(
            v["entities"], args["entities"],
            "a fitting argument fills its field"
        );
        // An argument that does not fit is not copied.
        let v = schema_shaped(Some(&create), &json!({"entities": "not a list"}));
        assert!(valid(&create, &v), "{v}");

        let delete = json!({"type": "object", "properties": {"success": {"type": "boolean"},
            "message": {"type": "string"}}, "required": ["success", "message"]});
        let v = schema_shaped(Some(&delete), &json!({"entityNames": ["Ada"]}));
        assert!(valid(&delete, &v), "{v}");
        assert_eq!(v["success"], true);
    }

    #[test]
    fn shapes_follow_refs_enums_and_bounds() {
        let schema = json!({"type": "object", "required": ["a", "b", "c", "d", "e"],
            "properties": {"a": {"$ref": "#/definitions/A"}, "b": {"enum": ["x", "y"]},
                "c": {"type": "integer", "minimum": 3}, "d": {"type": "array", "minItems": 2, "items": {"type": "number"}},
                "e": {"type": ["null", "string"], "minLength": 4}},
            "definitions": {"A": {"type": "object", "required": ["id"], "properties": {"id": {"type": "string"}}}}});
        let v = schema_shaped(Some(&schema), &json!({}));
        assert!(valid(&schema, &v), "{v}");
        assert_eq!(schema_shaped(None, &json!({})), json!({"ok": true}));
    }

    #[test]
    fn templates_render_arguments() {
        let t = json!({"content": "wrote {{ args.path }} with {{ tool }}", "n": 1});
        let v = render_template(&t, "write_file", &json!({"path": "/a.txt"})).unwrap();
        assert_eq!(
            v,
            json!({"content": "wrote /a.txt with write_file", "n": 1})
        );
        assert!(render_template(&json!("{{ args. }}"), "t", &json!({})).is_err());
    }
}
