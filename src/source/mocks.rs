//! Tool mocks for `openai` agents, after the scenario runner's mock schema: which tool
//! (`method`), when (`args` exact, `partialArgs` subset, `input` subset, `matcher` regex
//! over the JSON arguments), and what it answers (`response`, or `error`), with an
//! optional `metadata.delay` (ms) and `metadata.probability` (a failure rate drawn from
//! the run's seeded generator, so a run is reproducible).

use std::time::Duration;

use serde_json::{json, Map, Value};

use crate::case::Mock;
use crate::errors::FieldError;
use crate::source::fields::{check_keys, index, join, opt_str};
use crate::util::compact;
use crate::util::type_of;

const MOCK_KEYS: [&str; 6] = ["service", "method", "when", "response", "error", "metadata"];
const WHEN_KEYS: [&str; 4] = ["args", "partialArgs", "input", "matcher"];

/// Reads a `mocks` array.
pub fn parse_mocks(v: &Value, path: &str) -> Result<Vec<Mock>, FieldError> {
    let Value::Array(items) = v else {
        return Err(FieldError::new(
            path,
            format!("expected an array of mocks, found {}", type_of(v)),
        ));
    };
    items
        .iter()
        .enumerate()
        .map(|(i, m)| parse_mock(m, &index(path, i)))
        .collect()
}

fn parse_mock(v: &Value, path: &str) -> Result<Mock, FieldError> {
    let Value::Object(m) = v else {
        return Err(FieldError::new(
            path,
            format!(
                "expected a mock object {{\"method\", \"response\"}}, found {}",
                type_of(v)
            ),
        ));
    };
    if m.contains_key("responseFn") {
        return Err(FieldError::new(
            join(path, "responseFn"),
            "`responseFn` is not supported (no JavaScript here); give a static `response`",
        ));
    }
    check_keys(m, &MOCK_KEYS, path, "a mock")?;
    let method = opt_str(m, "method", path)?.ok_or_else(|| {
        FieldError::new(
            join(path, "method"),
            "a mock needs `method`: the tool name it answers",
        )
    })?;
    let when = when(m, path)?;
    let error = mock_error(m, path)?;
    let (delay, probability) = metadata(m, path)?;
    if !m.contains_key("response") && error.is_none() {
        return Err(FieldError::new(
            join(path, "response"),
            "a mock needs `response` (what the tool returns) or `error`",
        ));
    }
    Ok(Mock {
        source: path.to_string(),
        method,
        args: when.args,
        partial: when.partial,
        input: when.input,
        matcher: when.matcher,
        response: m.get("response").cloned().unwrap_or(Value::Null),
        error,
        delay,
        probability,
        conditions: if when.conditions.is_empty() {
            "always".into()
        } else {
            when.conditions.join(", ")
        },
    })
}

/// A mock's `when`: what a call must match, and those conditions in words.
#[derive(Default)]
struct When {
    conditions: Vec<String>,
    args: Option<Value>,
    partial: Option<Value>,
    input: Option<Value>,
    matcher: Option<regex::Regex>,
}

/// The mock `m`'s `when` (none: it answers every call).
fn when(m: &Map<String, Value>, path: &str) -> Result<When, FieldError> {
    let mut when = When::default();
    if let Some(w) = m.get("when") {
        let wpath = join(path, "when");
        let Value::Object(w) = w else {
            return Err(FieldError::new(
                wpath,
                format!("expected an object, found {}", type_of(w)),
            ));
        };
        if w.contains_key("context") {
            return Err(FieldError::new(join(&wpath, "context"), "`when.context` is not supported; match on `args`, `partialArgs`, `input` or `matcher`"));
        }
        check_keys(w, &WHEN_KEYS, &wpath, "`when`")?;
        if let Some(a) = w.get("args") {
            when.conditions.push(format!("args = {}", compact(a)));
            when.args = Some(single(a));
        }
        if let Some(p) = w.get("partialArgs") {
            when.conditions
                .push(format!("partialArgs ⊆ {}", compact(p)));
            when.partial = Some(single(p));
        }
        if let Some(p) = w.get("input") {
            when.conditions.push(format!("input ⊆ {}", compact(p)));
            when.input = Some(p.clone());
        }
        if let Some(r) = opt_str(w, "matcher", &wpath)? {
            when.conditions.push(format!("matcher /{r}/"));
            when.matcher = Some(crate::source::compile_regex(&r, &join(&wpath, "matcher"))?);
        }
    }
    Ok(when)
}

/// The mock `m`'s `error`: an object `{code, message, status}`, or a message alone.
fn mock_error(m: &Map<String, Value>, path: &str) -> Result<Option<Value>, FieldError> {
    let error = match m.get("error") {
        None | Some(Value::Null) => None,
        Some(Value::Object(e)) => {
            let epath = join(path, "error");
            check_keys(e, &["code", "message", "status"], &epath, "a mock error")?;
            Some(Value::Object(e.clone()))
        }
        Some(Value::String(s)) => Some(json!({"message": s})),
        Some(other) => {
            return Err(FieldError::new(
                join(path, "error"),
                format!(
                    "expected {{\"code\", \"message\", \"status\"}}, found {}",
                    type_of(other)
                ),
            ))
        }
    };
    Ok(error)
}

/// The mock `m`'s `metadata`: a delay before it answers, and how often it fails.
fn metadata(
    m: &Map<String, Value>,
    path: &str,
) -> Result<(Option<Duration>, Option<f64>), FieldError> {
    let (mut delay, mut probability) = (None, None);
    if let Some(meta) = m.get("metadata") {
        let mpath = join(path, "metadata");
        let Value::Object(meta) = meta else {
            return Err(FieldError::new(
                mpath,
                format!("expected an object, found {}", type_of(meta)),
            ));
        };
        check_keys(meta, &["delay", "probability"], &mpath, "mock metadata")?;
        if let Some(d) = meta.get("delay") {
            let ms = d.as_u64().filter(|ms| *ms <= 600_000).ok_or_else(|| {
                FieldError::new(
                    join(&mpath, "delay"),
                    "expected a delay in milliseconds from 0 to 600000",
                )
            })?;
            delay = Some(Duration::from_millis(ms));
        }
        if let Some(p) = meta.get("probability") {
            let p = p
                .as_f64()
                .filter(|p| (0.0..=1.0).contains(p))
                .ok_or_else(|| {
                    FieldError::new(
                        join(&mpath, "probability"),
                        "expected a failure rate from 0 to 1",
                    )
                })?;
            probability = Some(p);
        }
    }
    Ok((delay, probability))
}

/// The scenario runner writes positional arguments (`args: [x]`); a tool call has one
/// argument object, so a one-element array stands for its element.
fn single(v: &Value) -> Value {
    match v {
        Value::Array(items) if items.len() == 1 => items[0].clone(),
        other => other.clone(),
    }
}

/// Converts TOML-side mocks (already JSON values) with their section name as the path.
pub(crate) fn parse_config_mocks(list: &[Value], what: &str) -> Result<Vec<Mock>, FieldError> {
    parse_mocks(&Value::Array(list.to_vec()), &format!("{what}.mocks"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_mocks_are_located() {
        let e = parse_mocks(&json!([{"method": "t"}]), "setup.mocks").unwrap_err();
        assert_eq!(e.path, "setup.mocks[0].response");
        let e = parse_mocks(
            &json!([{"method": "t", "response": 1, "when": {"arg": 1}}]),
            "setup.mocks",
        )
        .unwrap_err();
        assert!(e.message.contains("did you mean `args`?"), "{}", e.message);
        let e = parse_mocks(
            &json!([{"method": "t", "response": 1, "metadata": {"probability": 2}}]),
            "setup.mocks",
        )
        .unwrap_err();
        assert_eq!(e.path, "setup.mocks[0].metadata.probability");
    }
}
