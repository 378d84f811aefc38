//! Reading JSON objects field by field, with errors that name the field and the fix.

use crate::case::ModelSettings;
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

pub(crate) use crate::util::suggest;

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

/// A built-in role's model settings on `obj` ([`ModelSettings::KEYS`]). `owner` is
/// `Some(what)` when the role is played by something else (a judge or simulator agent,
/// a script), which has no such settings: then any of them is an error.
pub(crate) fn model_settings(
    obj: &Map<String, Value>,
    path: &str,
    owner: Option<&str>,
) -> Result<ModelSettings, FieldError> {
    if let Some(owner) = owner {
        if let Some(key) = ModelSettings::KEYS.iter().find(|k| obj.contains_key(**k)) {
            return Err(FieldError::new(
                join(path, key),
                format!("`{key}` sets the built-in model's request, but {owner} plays this role; remove `{key}`, or remove `use` to use the built-in model"),
            ));
        }
        return Ok(ModelSettings::default());
    }
    let llm = opt_str(obj, "llm", path)?;
    if llm.as_deref().is_some_and(|l| l.trim().is_empty()) {
        return Err(FieldError::new(
            join(path, "llm"),
            "expected the name of an [llms.NAME] endpoint, found \"\"",
        ));
    }
    let number = |key: &str, ok: &dyn Fn(f64) -> bool, want: &str| match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => match v.as_f64() {
            Some(n) if ok(n) => Ok(Some(n)),
            _ => Err(FieldError::new(
                join(path, key),
                format!("expected {want}, found {v}"),
            )),
        },
    };
    let whole = |n: f64| n.fract() == 0.0;
    Ok(ModelSettings {
        llm,
        model: opt_str(obj, "model", path)?,
        temperature: number(
            "temperature",
            &|t| (0.0..=2.0).contains(&t),
            "a number from 0 to 2",
        )?,
        max_tokens: number(
            "max_tokens",
            &|n| whole(n) && (1.0..=f64::from(u32::MAX)).contains(&n),
            "a whole number of tokens, at least 1",
        )?
        .map(|n| n as u32),
        seed: number(
            "seed",
            &|n| whole(n) && n >= 0.0 && n < 2f64.powi(53),
            "a whole number, 0 or more",
        )?
        .map(|n| n as u64),
    })
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
