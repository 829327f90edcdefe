//! Building a trial's initial state from the world default and the case.

use serde_json::Value;

/// Merges `overlay` into `base`: objects merge key by key, anything else is replaced.
pub fn merge_state(base: &mut Value, overlay: &Value) {
    match (base, overlay) {
        (Value::Object(b), Value::Object(o)) => {
            for (k, v) in o {
                match b.get_mut(k) {
                    Some(slot) => merge_state(slot, v),
                    None => {
                        b.insert(k.clone(), v.clone());
                    }
                }
            }
        }
        (slot, v) => *slot = v.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn objects_merge_and_scalars_replace() {
        let mut base = json!({"a": {"x": 1, "y": 2}, "b": [1]});
        merge_state(&mut base, &json!({"a": {"y": 3}, "b": [2], "c": true}));
        assert_eq!(base, json!({"a": {"x": 1, "y": 3}, "b": [2], "c": true}));
    }
}
