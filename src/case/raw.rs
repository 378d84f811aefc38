//! What a case or an assertion said, as written, kept as compact JSON text.

use std::sync::Arc;

use serde_json::Value;

/// A JSON value as written in a suite: a case line, or one assertion.
///
/// It is kept as compact JSON text rather than as a [`Value`] tree because every case
/// of a plan holds one for the whole run, and a run of 100,000 cases must fit in 2 KB a
/// case (docs/performance.md): a one-line case's tree costs about 1 KB, its text about
/// 100 bytes. The few readers (hooks, scripts, reports, `--dry-run`, `--freeze`) parse
/// it when they need it, which costs microseconds once per case.
///
/// The text is what `serde_json` writes for the value, so a run's input hash, taken over
/// it, is the one earlier versions took over the tree.
#[derive(Clone, PartialEq, Eq)]
pub struct Raw(Arc<str>);

impl Raw {
    /// The value's compact JSON text.
    pub fn new(value: &Value) -> Raw {
        Raw(value.to_string().into())
    }

    /// The value, parsed again.
    pub fn value(&self) -> Value {
        // The text was written from a `Value` by `new`, so it parses; `Null` stands for
        // the impossible rather than a panic.
        serde_json::from_str(&self.0).unwrap_or(Value::Null)
    }

    /// The value's compact JSON text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl Default for Raw {
    /// `null`, for a case no line was written for (a message given on the command line).
    fn default() -> Raw {
        Raw::new(&Value::Null)
    }
}

impl From<Value> for Raw {
    fn from(value: Value) -> Raw {
        Raw::new(&value)
    }
}

impl std::fmt::Debug for Raw {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::fmt::Display for Raw {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_value_comes_back_as_it_was_written_in_its_key_order() {
        let v = json!({"z": 1, "a": [1.5, -0.0, "é\n", null, {"b": true}], "m": 1e300});
        let raw = Raw::new(&v);
        assert_eq!(raw.value(), v);
        assert_eq!(raw.as_str(), v.to_string());
        let keys: Vec<_> = raw.value().as_object().unwrap().keys().cloned().collect();
        assert_eq!(keys, ["z", "a", "m"]);
    }
}
