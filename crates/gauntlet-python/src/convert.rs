//! A tool call's arguments from Python values to JSON ([`to_json`]), as `json.dumps` takes
//! them: the same types, and the same `TypeError` and `ValueError` for what JSON cannot hold.
//! It walks the value itself, with the path of containers it is inside, so that a value that
//! contains itself or nests without end is an exception the agent can catch, never a stack
//! that overflows and kills the interpreter.

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};
use serde_json::{Map, Number, Value};

/// How deep arguments may nest: as deep as gauntlet's own JSON readers go (serde_json reads 128
/// levels), so arguments from Python go as far as arguments over MCP do.
pub const MAX_DEPTH: usize = 128;

/// Python arguments as JSON: `dict` (string, number, bool or `None` keys, as `json.dumps` turns
/// them into strings), `list` and `tuple`, `str`, `int` (64 bits), finite `float`, `bool` and
/// `None`, subclasses included. A value that contains itself raises `ValueError: Circular
/// reference detected`; one deeper than [`MAX_DEPTH`], NaN, an infinity or an integer past 64
/// bits raises `ValueError`; any other type `TypeError`, as `json.dumps` says it.
pub fn to_json(value: &Bound<'_, PyAny>) -> PyResult<Value> {
    Walk { inside: Vec::new() }.value(value)
}

/// The containers being converted, outermost first: their addresses, to see a cycle.
struct Walk {
    inside: Vec<usize>,
}

impl Walk {
    fn value(&mut self, value: &Bound<'_, PyAny>) -> PyResult<Value> {
        if value.is_none() {
            return Ok(Value::Null);
        }
        if let Ok(b) = value.cast::<PyBool>() {
            return Ok(Value::Bool(b.is_true()));
        }
        if let Ok(i) = value.cast::<PyInt>() {
            return integer(i).map(Value::Number);
        }
        if let Ok(f) = value.cast::<PyFloat>() {
            return float(f.value()).map(Value::Number);
        }
        if let Ok(s) = value.cast::<PyString>() {
            return Ok(Value::String(s.to_cow()?.into_owned()));
        }
        if let Ok(dict) = value.cast::<PyDict>() {
            self.enter(value)?;
            let mut map = Map::new();
            for (k, v) in dict.iter() {
                map.insert(key(&k)?, self.value(&v)?);
            }
            self.inside.pop();
            return Ok(Value::Object(map));
        }
        if let Ok(list) = value.cast::<PyList>() {
            self.enter(value)?;
            let items = list
                .iter()
                .map(|v| self.value(&v))
                .collect::<PyResult<_>>()?;
            self.inside.pop();
            return Ok(Value::Array(items));
        }
        if let Ok(tuple) = value.cast::<PyTuple>() {
            self.enter(value)?;
            let items = tuple
                .iter()
                .map(|v| self.value(&v))
                .collect::<PyResult<_>>()?;
            self.inside.pop();
            return Ok(Value::Array(items));
        }
        Err(PyTypeError::new_err(format!(
            "Object of type {} is not JSON serializable",
            type_name(value)
        )))
    }

    /// Steps into a container, refusing one it is already inside or one level too many.
    fn enter(&mut self, container: &Bound<'_, PyAny>) -> PyResult<()> {
        let address = container.as_ptr() as usize;
        if self.inside.contains(&address) {
            return Err(PyValueError::new_err("Circular reference detected"));
        }
        if self.inside.len() >= MAX_DEPTH {
            return Err(PyValueError::new_err(format!(
                "the arguments nest deeper than {MAX_DEPTH} levels, more than a tool call takes"
            )));
        }
        self.inside.push(address);
        Ok(())
    }
}

/// An `int` as a JSON number (`bool` is checked before).
fn integer(i: &Bound<'_, PyInt>) -> PyResult<Number> {
    if let Ok(n) = i.extract::<i64>() {
        return Ok(n.into());
    }
    if let Ok(n) = i.extract::<u64>() {
        return Ok(n.into());
    }
    Err(PyValueError::new_err(format!(
        "integer {} is out of range: a JSON number here holds 64 bits",
        i.str().map(|s| s.to_string()).unwrap_or_default()
    )))
}

/// A finite float as a JSON number; NaN and the infinities have none.
fn float(f: f64) -> PyResult<Number> {
    Number::from_f64(f).ok_or_else(|| {
        PyValueError::new_err(format!(
            "Out of range float values are not JSON compliant: {}",
            python_float(f)
        ))
    })
}

/// How Python writes a float JSON has no number for.
fn python_float(f: f64) -> &'static str {
    if f.is_nan() {
        "nan"
    } else if f > 0.0 {
        "inf"
    } else {
        "-inf"
    }
}

/// A dict's key as `json.dumps` makes it a string: `str` as it is, `True`/`False`/`None` as
/// `true`/`false`/`null`, a number as Python writes it.
fn key(k: &Bound<'_, PyAny>) -> PyResult<String> {
    if let Ok(s) = k.cast::<PyString>() {
        return Ok(s.to_cow()?.into_owned());
    }
    if let Ok(b) = k.cast::<PyBool>() {
        return Ok(if b.is_true() { "true" } else { "false" }.to_owned());
    }
    if k.is_none() {
        return Ok("null".to_owned());
    }
    if let Ok(i) = k.cast::<PyInt>() {
        return Ok(integer(i)?.to_string());
    }
    if let Ok(f) = k.cast::<PyFloat>() {
        let f = f.value();
        float(f)?;
        // `float.__repr__` (`1.0`, `1e+16`), as `json.dumps` writes a float key.
        return Ok(PyFloat::new(k.py(), f).repr()?.to_cow()?.into_owned());
    }
    Err(PyTypeError::new_err(format!(
        "keys must be str, int, float, bool or None, not {}",
        type_name(k)
    )))
}

fn type_name(value: &Bound<'_, PyAny>) -> String {
    value
        .get_type()
        .name()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "object".to_owned())
}
