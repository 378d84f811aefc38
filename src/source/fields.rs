//! Reading JSON objects field by field, with errors that name the field and the fix.

use crate::errors::FieldError;
use crate::util::type_of;
use serde_json::{Map, Value};

/// `parent.key`, or `key` at the root.
pub(crate) fn join(parent: &str, key: &str) -> String {
    if parent.is_empty() {
        key.to_string()
    } else {
        format!("{parent}.{key}")
    }
}

/// `parent[i]`.
pub(crate) fn index(parent: &str, i: usize) -> String {
    format!("{parent}[{i}]")
}

/// The closest known word, when it is close enough to be a likely typo.
pub fn suggest<'a>(word: &str, known: &[&'a str]) -> Option<&'a str> {
    known
        .iter()
        .map(|k| (strsim::damerau_levenshtein(word, k), *k))
        .filter(|(d, k)| *d <= 2.max(k.len() / 3) && *d < k.len().max(word.len()))
        .min_by_key(|(d, _)| *d)
        .map(|(_, k)| k)
        .or_else(|| {
            // A prefix or suffix ("assertion" for "assertions", "args" for "arguments").
            known
                .iter()
                .copied()
                .find(|k| word.len() >= 3 && (k.starts_with(word) || word.starts_with(k)))
        })
}

/// Fails on the first key that is not in `known`, suggesting the closest known key.
pub(crate) fn check_keys(
    obj: &Map<String, Value>,
    known: &[&str],
    path: &str,
    what: &str,
) -> Result<(), FieldError> {
    for key in obj.keys() {
        if !known.contains(&key.as_str()) {
            let hint = match suggest(key, known) {
                Some(s) => format!("did you mean `{s}`?"),
                None => format!("known keys are: {}", known.join(", ")),
            };
            return Err(FieldError::new(
                join(path, key),
                format!("unknown key `{key}` in {what}; {hint}"),
            ));
        }
    }
    Ok(())
}

/// An optional string field.
pub(crate) fn opt_str(
    obj: &Map<String, Value>,
    key: &str,
    path: &str,
) -> Result<Option<String>, FieldError> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(other) => Err(FieldError::new(
            join(path, key),
            format!("expected a string, found {}", type_of(other)),
        )),
    }
}

/// An optional boolean field.
pub(crate) fn opt_bool(
    obj: &Map<String, Value>,
    key: &str,
    path: &str,
) -> Result<Option<bool>, FieldError> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(*b)),
        Some(other) => Err(FieldError::new(
            join(path, key),
            format!("expected true or false, found {}", type_of(other)),
        )),
    }
}

/// An optional object field, returned as a JSON value.
pub(crate) fn opt_object(
    obj: &Map<String, Value>,
    key: &str,
    path: &str,
) -> Result<Option<Value>, FieldError> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(v @ Value::Object(_)) => Ok(Some(v.clone())),
        Some(other) => Err(FieldError::new(
            join(path, key),
            format!("expected an object, found {}", type_of(other)),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggests_near_misses() {
        let known = ["assertions", "assert", "input", "turns"];
        assert_eq!(suggest("assertion", &known), Some("assertions"));
        assert_eq!(suggest("asert", &known), Some("assert"));
        assert_eq!(suggest("imput", &known), Some("input"));
        assert_eq!(suggest("zzzzzz", &known), None);
    }
}
