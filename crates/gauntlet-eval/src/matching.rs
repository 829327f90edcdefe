//! What a matcher means on a value: the one place `expected_outcome`, attack predicates and
//! checkpoints are decided.

use gauntlet_model::Matcher;
use gauntlet_model::path::json_eq;
use serde_json::Value;

/// Whether a value (or its absence) satisfies a matcher.
pub(crate) fn matches(matcher: &Matcher, actual: Option<&Value>) -> bool {
    match (matcher, actual) {
        (Matcher::Absent, a) => a.is_none(),
        (Matcher::Present, a) => a.is_some(),
        (_, None) => false,
        (Matcher::Equals(want), Some(v)) => json_eq(want, v),
        (Matcher::OneOf(options), Some(v)) => options.iter().any(|o| json_eq(o, v)),
        (Matcher::Contains(want), Some(v)) => match (v, want) {
            (Value::String(s), Value::String(w)) => s.contains(w.as_str()),
            (Value::Array(items), w) => items.iter().any(|i| json_eq(i, w)),
            (Value::Object(map), Value::String(k)) => map.contains_key(k),
            _ => false,
        },
        (Matcher::Regex(re), Some(Value::String(s))) => {
            regex::Regex::new(re).is_ok_and(|r| r.is_match(s))
        }
        (Matcher::Regex(_), Some(_)) => false,
        (Matcher::Range { min, max }, Some(v)) => v.as_f64().is_some_and(|x| within(x, *min, *max)),
        (Matcher::Count { min, max }, Some(v)) => {
            let n = match v {
                Value::Array(a) => a.len(),
                Value::Object(o) => o.len(),
                _ => return false,
            };
            within(n as f64, *min, *max)
        }
    }
}

fn within(x: f64, min: Option<f64>, max: Option<f64>) -> bool {
    min.is_none_or(|m| x >= m) && max.is_none_or(|m| x <= m)
}
