//! Values every kind of assertion reads the same way.

use serde_json::{Map, Value};

use crate::errors::FieldError;
use crate::source::fields::join;
use crate::util::type_of;

/// `obj[key]` as a whole number, when given; `expected` says what it must be.
pub(super) fn opt_whole(
    obj: &Map<String, Value>,
    key: &str,
    path: &str,
    expected: &str,
) -> Result<Option<u64>, FieldError> {
    match obj.get(key) {
        None => Ok(None),
        Some(Value::Number(n)) if n.as_u64().is_some() => Ok(n.as_u64()),
        Some(other) => Err(FieldError::new(
            join(path, key),
            format!(
                "expected {expected} found {}",
                match other {
                    Value::Number(n) => n.to_string(),
                    other => type_of(other).to_string(),
                }
            ),
        )),
    }
}

/// `a` or `an`, as `word` (an assertion type) is spoken: "an `agent` assertion".
pub(super) fn article(word: &str) -> &'static str {
    if word.starts_with(['a', 'e', 'i', 'o', 'u']) {
        "an"
    } else {
        "a"
    }
}
