//! A function-call checker with the rules of BFCL's AST checker (Python category), so scores
//! are comparable with the Berkeley Function-Calling Leaderboard.
//!
//! The rules, as BFCL states them: the function name must match; every required parameter must
//! be present; every given parameter must be declared and appear in the possible answer; the
//! value's type must be the declared one (an int is accepted for a float; a value of the possible
//! answer's type is accepted as a "variable"); arrays check their items' type one level deep;
//! strings compare after removing spaces and `,./-_*^`, lower-casing and turning `'` into `"`;
//! lists and dicts compare element by element the same way; any other value must be one of the
//! acceptable values; a parameter of the possible answer that is absent must list `""` among its
//! values (optional). Parallel calls pair each expected call with the first unused call that
//! passes; a "multiple" category expects exactly one call, checked against its own description.
//! Values compare with Python's equality (`1 == 1.0`, `True == 1`).

use serde_json::{Map, Value};

/// BFCL's verdict: valid or not, with its message and error type.
#[derive(Debug, Clone, PartialEq)]
pub struct Verdict {
    /// Whether the call(s) pass.
    pub valid: bool,
    /// The message (empty when valid).
    pub error: String,
    /// BFCL's error type (`simple_function_checker:missing_required`, ...).
    pub error_type: String,
}

impl Verdict {
    fn ok() -> Self {
        Verdict {
            valid: true,
            error: String::new(),
            error_type: String::new(),
        }
    }
    fn bad(error_type: &str, error: String) -> Self {
        Verdict {
            valid: false,
            error,
            error_type: error_type.to_owned(),
        }
    }
}

/// The checker to apply (from BFCL's test category).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Category {
    /// Exactly one call of the one function.
    Simple,
    /// Exactly one call, choosing among several functions.
    Multiple,
    /// Several calls in any order.
    Parallel,
}

impl Category {
    /// The checker BFCL uses for a test category name.
    pub fn of(test_category: &str) -> Category {
        if test_category.contains("parallel") {
            Category::Parallel
        } else if test_category.contains("multiple") {
            Category::Multiple
        } else {
            Category::Simple
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PyType {
    Str,
    Int,
    Float,
    Bool,
    List,
    Dict,
    None,
}

fn py_type(v: &Value) -> PyType {
    match v {
        Value::String(_) => PyType::Str,
        Value::Number(n) if n.is_f64() => PyType::Float,
        Value::Number(_) => PyType::Int,
        Value::Bool(_) => PyType::Bool,
        Value::Array(_) => PyType::List,
        Value::Object(_) => PyType::Dict,
        Value::Null => PyType::None,
    }
}

fn mapped(desc: &str) -> PyType {
    match desc {
        "string" | "any" => PyType::Str,
        "integer" => PyType::Int,
        "float" | "number" => PyType::Float,
        "boolean" => PyType::Bool,
        "array" | "tuple" => PyType::List,
        _ => PyType::Dict,
    }
}

fn as_number(v: &Value) -> Option<f64> {
    match v {
        Value::Number(n) => n.as_f64(),
        Value::Bool(b) => Some(f64::from(u8::from(*b))),
        _ => None,
    }
}

/// Python's `==` on JSON values.
fn py_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| py_eq(p, q))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| py_eq(v, w)))
        }
        _ => match (as_number(a), as_number(b)) {
            (Some(x), Some(y)) => x == y,
            _ => a == b,
        },
    }
}

fn contains(list: &[Value], v: &Value) -> bool {
    list.iter().any(|x| py_eq(x, v))
}

fn is_optional_marker(v: &Value) -> bool {
    v.as_str() == Some("")
}

/// BFCL's string standardisation.
pub fn standardize(s: &str) -> String {
    s.chars()
        .filter(|c| !matches!(c, ' ' | ',' | '.' | '/' | '-' | '_' | '*' | '^'))
        .collect::<String>()
        .to_lowercase()
        .replace('\'', "\"")
}

fn standardized(v: &Value) -> Value {
    match v {
        Value::String(s) => Value::String(standardize(s)),
        other => other.clone(),
    }
}

fn possible_type(possible: &[Value]) -> Option<PyType> {
    possible
        .iter()
        .find(|v| !is_optional_marker(v))
        .map(py_type)
}

/// Returns (valid, is_variable, error).
fn type_check(
    param: &str,
    value: &Value,
    possible: &[Value],
    desc: &str,
    expected: PyType,
    nested: Option<PyType>,
) -> (bool, bool, Verdict) {
    let pat = possible_type(possible);
    let is_variable = pat.is_some_and(|p| p != expected);
    let mut nested_failed = None;
    if py_type(value) == expected {
        let Some(inner) = nested else {
            return (true, is_variable, Verdict::ok());
        };
        for item in possible {
            let mut flag = true;
            if let Value::Array(item_list) = item {
                for v in value.as_array().map(Vec::as_slice).unwrap_or_default() {
                    if !type_check(param, v, item_list, "nested", inner, None).0 {
                        flag = false;
                        break;
                    }
                }
            }
            if flag {
                return (true, is_variable, Verdict::ok());
            }
        }
        nested_failed = Some(Verdict::bad(
            "type_error:nested",
            format!(
                "Nested type checking failed for parameter '{param}'. Expected outer type {desc} with inner type {inner:?}. Parameter value: {value}."
            ),
        ));
    }
    if let Some(p) = pat
        && py_type(value) == p
    {
        return match nested_failed {
            Some(v) => (false, true, v),
            None => (true, true, Verdict::ok()),
        };
    }
    (
        false,
        is_variable,
        Verdict::bad(
            "type_error:simple",
            format!(
                "Incorrect type for parameter '{param}'. Expected type {desc}, got {:?}. Parameter value: {value}.",
                py_type(value)
            ),
        ),
    )
}

fn dict_check(param: &str, value: &Map<String, Value>, possible_answers: &[Value]) -> Verdict {
    let mut result = Verdict::bad("dict_checker:unclear", String::new());
    for answer in possible_answers {
        let Some(answer) = answer.as_object() else {
            continue;
        }; // "" (optional)
        let mut flag = true;
        for (key, v) in value {
            let Some(acceptable) = answer.get(key) else {
                result = Verdict::bad(
                    "value_error:dict_key",
                    format!("Unexpected dict key parameter: '{key}'."),
                );
                flag = false;
                break;
            };
            let std_answers: Vec<Value> = acceptable
                .as_array()
                .map(|a| a.iter().map(standardized).collect())
                .unwrap_or_default();
            if !contains(&std_answers, &standardized(v)) {
                result = Verdict::bad(
                    "value_error:dict_value",
                    format!("Invalid value for parameter '{key}': {v}."),
                );
                flag = false;
                break;
            }
        }
        if flag {
            for (key, acceptable) in answer {
                let optional = acceptable
                    .as_array()
                    .is_some_and(|a| a.iter().any(is_optional_marker));
                if !value.contains_key(key) && !optional {
                    result = Verdict::bad(
                        "value_error:dict_key",
                        format!("Missing dict key parameter: '{key}'."),
                    );
                    flag = false;
                    break;
                }
            }
        }
        if flag {
            return Verdict::ok();
        }
    }
    let _ = param;
    result
}

fn list_dict_check(param: &str, value: &[Value], possible_answers: &[Value]) -> Verdict {
    let mut result = Verdict::bad("list_dict_checker:unclear", String::new());
    for answer in possible_answers {
        let items = answer.as_array().map(Vec::as_slice).unwrap_or_default();
        if value.len() != items.len() {
            result = Verdict::bad(
                "value_error:list_dict_count",
                "Wrong number of dictionaries in the list.".into(),
            );
            continue;
        }
        let mut flag = true;
        for (v, a) in value.iter().zip(items) {
            result = match v.as_object() {
                Some(obj) => dict_check(param, obj, std::slice::from_ref(a)),
                None => Verdict::bad(
                    "value_error:dict_value",
                    format!("Invalid value for parameter '{param}'."),
                ),
            };
            if !result.valid {
                flag = false;
                break;
            }
        }
        if flag {
            return Verdict::ok();
        }
    }
    result
}

fn list_check(param: &str, value: &[Value], possible: &[Value]) -> Verdict {
    let model: Vec<Value> = value.iter().map(standardized).collect();
    let answers: Vec<Vec<Value>> = possible
        .iter()
        .map(|a| match a {
            Value::Array(items) => items.iter().map(standardized).collect(),
            _ => Vec::new(), // "" has no elements
        })
        .collect();
    let model = Value::Array(model);
    if answers
        .iter()
        .any(|a| py_eq(&Value::Array(a.clone()), &model))
    {
        Verdict::ok()
    } else {
        Verdict::bad(
            "value_error:list/tuple",
            format!(
                "Invalid value for parameter '{param}': {}.",
                Value::Array(value.to_vec())
            ),
        )
    }
}

/// BFCL's `simple_function_checker`: one call (`{name: {param: value}}`) against a function
/// description and a possible answer (`{name: {param: [acceptable values]}}`).
pub fn simple_check(description: &Value, call: &Value, possible_answer: &Value) -> Verdict {
    let Some(answer) = possible_answer
        .as_object()
        .and_then(|o| o.values().next())
        .and_then(Value::as_object)
    else {
        return Verdict::bad(
            "simple_function_checker:unclear",
            "malformed possible answer".into(),
        );
    };
    let name = description["name"].as_str().unwrap_or_default();
    let details = description["parameters"]["properties"]
        .as_object()
        .cloned()
        .unwrap_or_default();
    let required: Vec<&str> = description["parameters"]["required"]
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let Some(params) = call.get(name).and_then(Value::as_object) else {
        return Verdict::bad(
            "simple_function_checker:wrong_func_name",
            format!("Function name '{name}' not found in model output."),
        );
    };
    if let Some(missing) = required.iter().find(|p| !params.contains_key(**p)) {
        return Verdict::bad(
            "simple_function_checker:missing_required",
            format!("Missing required parameter: '{missing}'."),
        );
    }
    for (param, value) in params {
        let (Some(detail), Some(acceptable)) = (details.get(param), answer.get(param)) else {
            return Verdict::bad(
                "simple_function_checker:unexpected_param",
                format!("Unexpected parameter: '{param}'."),
            );
        };
        let possible: Vec<Value> = acceptable.as_array().cloned().unwrap_or_default();
        let desc = detail["type"].as_str().unwrap_or("any");
        let expected = mapped(desc);
        let nested = matches!(desc, "array" | "tuple")
            .then(|| mapped(detail["items"]["type"].as_str().unwrap_or("any")));
        let mut value = value.clone();
        if desc == "float" && py_type(&value) == PyType::Int {
            value = serde_json::Number::from_f64(value.as_f64().unwrap_or_default())
                .map_or(value, Value::Number);
        }
        let (valid, is_variable, verdict) =
            type_check(param, &value, &possible, desc, expected, nested);
        if !valid {
            return verdict;
        }
        if !is_variable {
            let v = match (expected, nested, &value) {
                (PyType::Dict, _, Value::Object(obj)) => Some(dict_check(param, obj, &possible)),
                (PyType::List, Some(PyType::Dict), Value::Array(items)) => {
                    Some(list_dict_check(param, items, &possible))
                }
                (PyType::Str, _, Value::String(s)) => {
                    let answers: Vec<String> = possible
                        .iter()
                        .filter_map(Value::as_str)
                        .map(standardize)
                        .collect();
                    Some(if answers.contains(&standardize(s)) {
                        Verdict::ok()
                    } else {
                        Verdict::bad(
                            "value_error:string",
                            format!(
                                "Invalid value for parameter '{param}': '{s}'. Expected one of {}. Case insensitive.",
                                Value::Array(possible.clone())
                            ),
                        )
                    })
                }
                (PyType::List, _, Value::Array(items)) => Some(list_check(param, items, &possible)),
                _ => None,
            };
            if let Some(v) = v {
                if !v.valid {
                    return v;
                }
                continue;
            }
        }
        if !contains(&possible, &value) {
            return Verdict::bad(
                "value_error:others",
                format!(
                    "Invalid value for parameter '{param}': {value}. Expected one of {}.",
                    Value::Array(possible.clone())
                ),
            );
        }
    }
    for (param, acceptable) in answer {
        let optional = acceptable
            .as_array()
            .is_some_and(|a| a.iter().any(is_optional_marker));
        if !params.contains_key(param) && !optional {
            return Verdict::bad(
                "simple_function_checker:missing_optional",
                format!("Optional parameter '{param}' not provided and not marked as optional."),
            );
        }
    }
    Verdict::ok()
}

fn find<'a>(descriptions: &'a [Value], name: &str) -> Option<&'a Value> {
    descriptions
        .iter()
        .find(|d| d["name"].as_str() == Some(name))
}

/// BFCL's `ast_checker` for the Python categories: calls (`[{name: {param: value}}]`) against the
/// function descriptions and the possible answers (`[{name: {param: [values]}}]`).
pub fn check(
    category: Category,
    descriptions: &[Value],
    calls: &[Value],
    possible: &[Value],
) -> Verdict {
    let expected_name = |p: &Value| {
        p.as_object()
            .and_then(|o| o.keys().next().cloned())
            .unwrap_or_default()
    };
    match category {
        Category::Simple => {
            if calls.len() != 1 {
                return Verdict::bad(
                    "simple_function_checker:wrong_count",
                    "Wrong number of functions.".into(),
                );
            }
            match (descriptions.first(), possible.first()) {
                (Some(d), Some(p)) => simple_check(d, &calls[0], p),
                _ => Verdict::bad(
                    "simple_function_checker:unclear",
                    "no description or answer".into(),
                ),
            }
        }
        Category::Multiple => {
            if calls.len() != possible.len() {
                return Verdict::bad(
                    "multiple_function_checker:wrong_count",
                    "Wrong number of functions.".into(),
                );
            }
            let Some(p) = possible.first() else {
                return Verdict::ok();
            };
            match find(descriptions, &expected_name(p)) {
                Some(d) => simple_check(d, &calls[0], p),
                None => Verdict::bad(
                    "multiple_function_checker:unclear",
                    format!("no description of `{}`", expected_name(p)),
                ),
            }
        }
        Category::Parallel => {
            if calls.len() != possible.len() {
                return Verdict::bad(
                    "parallel_function_checker_no_order:wrong_count",
                    "Wrong number of functions.".into(),
                );
            }
            let mut matched = vec![false; calls.len()];
            for (i, p) in possible.iter().enumerate() {
                let Some(d) = find(descriptions, &expected_name(p)) else {
                    return Verdict::bad(
                        "parallel_function_checker_no_order:cannot_find_match",
                        format!("no description of `{}`", expected_name(p)),
                    );
                };
                match (0..calls.len()).find(|&j| !matched[j] && simple_check(d, &calls[j], p).valid)
                {
                    Some(j) => matched[j] = true,
                    None => {
                        return Verdict::bad(
                            "parallel_function_checker_no_order:cannot_find_match",
                            format!(
                                "Could not find a matching function among the model output for index {i} of possible answers."
                            ),
                        );
                    }
                }
            }
            Verdict::ok()
        }
    }
}
