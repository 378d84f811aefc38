//! Tool assertions: `tool_called`, `tool_result`, `tool_sequence` and `tool_count`, and
//! the subset matchers they use.

use super::compile::compile_regex;
use crate::case::{Kind, SpanCount, SpanStatusWanted, ToolScope, ValueMatcher};
use crate::errors::FieldError;
use crate::source::fields::{check_keys, index, join, opt_str};
use crate::util::type_of;
use serde_json::{Map, Value};

pub(super) fn parse_tool_called(obj: &Map<String, Value>, path: &str) -> Result<Kind, FieldError> {
    let mut names = Vec::new();
    let mut arguments = None;
    if let Some(n) = opt_str(obj, "name", path)? {
        names.push(n);
    }
    match obj.get("value") {
        None | Some(Value::Null) => {}
        Some(Value::String(s)) => names.push(s.clone()),
        Some(Value::Array(items)) => {
            for (i, item) in items.iter().enumerate() {
                match item {
                    Value::String(s) => names.push(s.clone()),
                    other => {
                        return Err(FieldError::new(
                            index(&join(path, "value"), i),
                            format!("expected a tool name, found {}", type_of(other)),
                        ))
                    }
                }
            }
        }
        Some(Value::Object(m)) => {
            let vpath = join(path, "value");
            check_keys(
                m,
                &["name", "arguments", "args"],
                &vpath,
                "a tool_called value",
            )?;
            match opt_str(m, "name", &vpath)? {
                Some(n) => names.push(n),
                None => {
                    return Err(FieldError::new(
                        join(&vpath, "name"),
                        "a tool_called value object needs `name`",
                    ))
                }
            }
            if let Some(a) = m.get("arguments").or_else(|| m.get("args")) {
                arguments = Some(matcher(a, &join(&vpath, "arguments"))?);
            }
        }
        Some(other) => {
            return Err(FieldError::new(
                join(path, "value"),
                format!(
                "expected a tool name, an array of names or {{\"name\", \"arguments\"}}, found {}",
                type_of(other)
            ),
            ))
        }
    }
    if let Some(a) = obj.get("arguments") {
        arguments = Some(matcher(a, &join(path, "arguments"))?);
    }
    Ok(Kind::ToolCalled { names, arguments })
}

pub(super) fn parse_tool_result(obj: &Map<String, Value>, path: &str) -> Result<Kind, FieldError> {
    let (tool, result, rpath) = match obj.get("value") {
        Some(Value::Object(m)) => {
            let vpath = join(path, "value");
            check_keys(m, &["tool", "result"], &vpath, "a tool_result value")?;
            let tool = opt_str(m, "tool", &vpath)?;
            (tool, m.get("result").cloned(), join(&vpath, "result"))
        }
        Some(other) => {
            return Err(FieldError::new(
                join(path, "value"),
                format!(
                    "expected {{\"tool\": NAME, \"result\": ...}}, found {}",
                    type_of(other)
                ),
            ))
        }
        None => (
            opt_str(obj, "tool", path)?,
            obj.get("result").cloned(),
            join(path, "result"),
        ),
    };
    let tool = tool.ok_or_else(|| {
        FieldError::new(
            join(path, "value.tool"),
            "a tool_result assertion needs `value: {\"tool\": NAME, \"result\": ...}`",
        )
    })?;
    let result = result.ok_or_else(|| {
        FieldError::new(
            rpath.clone(),
            "a tool_result assertion needs the expected `result`",
        )
    })?;
    Ok(Kind::ToolResult {
        tool,
        result: matcher(&result, &rpath)?,
    })
}

/// Compiles an expected value for subset matching; strings starting `regex:` become patterns.
pub(crate) fn matcher(v: &Value, path: &str) -> Result<ValueMatcher, FieldError> {
    match v {
        Value::String(s) => match s.strip_prefix("regex:") {
            Some(p) => Ok(ValueMatcher::Pattern(compile_regex(p, path)?)),
            None => Ok(ValueMatcher::Subset(v.clone())),
        },
        Value::Object(m) if contains_pattern(v) => Ok(ValueMatcher::Object(
            m.iter()
                .map(|(k, val)| Ok((k.clone(), matcher(val, &join(path, k))?)))
                .collect::<Result<_, FieldError>>()?,
        )),
        _ => Ok(ValueMatcher::Subset(v.clone())),
    }
}

pub(super) fn contains_pattern(v: &Value) -> bool {
    match v {
        Value::String(s) => s.starts_with("regex:"),
        Value::Object(m) => m.values().any(contains_pattern),
        _ => false,
    }
}

/// `scope`: `"turn"` (default) or `"conversation"`.
fn parse_scope(obj: &Map<String, Value>, path: &str) -> Result<ToolScope, FieldError> {
    match opt_str(obj, "scope", path)?.as_deref() {
        None | Some("turn") => Ok(ToolScope::Turn),
        Some("conversation") => Ok(ToolScope::Conversation),
        Some(other) => Err(FieldError::new(
            join(path, "scope"),
            format!("expected \"turn\" (the reply's calls) or \"conversation\" (every call so far), found \"{other}\""),
        )),
    }
}

/// `tool_sequence`: `value`, the tool names in order; `strict`; `scope`.
pub(super) fn parse_tool_sequence(
    obj: &Map<String, Value>,
    path: &str,
) -> Result<Kind, FieldError> {
    let vpath = join(path, "value");
    let names = match obj.get("value") {
        Some(Value::Array(items)) if !items.is_empty() => items
            .iter()
            .enumerate()
            .map(|(i, item)| match item {
                Value::String(s) if !s.is_empty() => Ok(s.clone()),
                other => Err(FieldError::new(
                    index(&vpath, i),
                    format!("expected a tool name, found {}", type_of(other)),
                )),
            })
            .collect::<Result<Vec<_>, _>>()?,
        Some(other) => {
            return Err(FieldError::new(
                vpath,
                format!(
                    "expected the tool names in order, like [\"search\", \"book\"], found {}",
                    match other {
                        Value::Array(_) => "an empty array".to_string(),
                        other => type_of(other).to_string(),
                    }
                ),
            ))
        }
        None => {
            return Err(FieldError::new(
                vpath,
                "a `tool_sequence` assertion needs `value`: the tool names in order, like [\"search\", \"book\"]",
            ))
        }
    };
    let strict = crate::source::fields::opt_bool(obj, "strict", path)?.unwrap_or(false);
    Ok(Kind::ToolSequence {
        names,
        strict,
        scope: parse_scope(obj, path)?,
    })
}

/// `tool_count`: `name` (or `value`; none counts every call), `min`, `max`, `scope`.
pub(super) fn parse_tool_count(obj: &Map<String, Value>, path: &str) -> Result<Kind, FieldError> {
    if obj.contains_key("name") && obj.contains_key("value") {
        return Err(FieldError::new(
            join(path, "value"),
            "give the tool as `name` or `value`, not both",
        ));
    }
    let name = match opt_str(obj, "name", path)? {
        Some(n) => Some(n),
        None => opt_str(obj, "value", path)?,
    };
    let bound = |key: &str| {
        super::values::opt_whole(obj, key, path, "a whole number of calls (0 or more),")
    };
    let (min, max) = (bound("min")?, bound("max")?);
    match (min, max) {
        (None, None) => Err(FieldError::new(
            join(path, "min"),
            "a `tool_count` assertion needs `min`, `max` or both (`min: 1, max: 1` for exactly once)",
        )),
        (Some(lo), Some(hi)) if lo > hi => Err(FieldError::new(
            join(path, "max"),
            format!("`max` ({hi}) is below `min` ({lo}): no count can hold"),
        )),
        _ => Ok(Kind::ToolCount {
            name,
            min,
            max,
            scope: parse_scope(obj, path)?,
        }),
    }
}

/// `span`: `name` (a regex), `attributes` (a subset), `status`, `max_duration_ms`, and
/// `count` or `min_count` / `max_count` (default: at least one).
pub(super) fn parse_span(obj: &Map<String, Value>, path: &str) -> Result<Kind, FieldError> {
    let name = match opt_str(obj, "name", path)? {
        Some(pattern) => Some(compile_regex(&pattern, &join(path, "name"))?),
        None => None,
    };
    let attributes = match obj.get("attributes") {
        None => None,
        Some(v @ Value::Object(_)) => Some(v.clone()),
        Some(other) => {
            return Err(FieldError::new(
                join(path, "attributes"),
                format!(
                    "expected an object of attributes the span must hold, like {{\"gen_ai.tool.name\": \"search\"}}, found {}",
                    type_of(other)
                ),
            ))
        }
    };
    let status = match opt_str(obj, "status", path)?.as_deref() {
        None => None,
        Some("ok") => Some(SpanStatusWanted::Ok),
        Some("error") => Some(SpanStatusWanted::Error),
        Some("unset") => Some(SpanStatusWanted::Unset),
        Some(other) => {
            return Err(FieldError::new(
                join(path, "status"),
                format!("expected \"ok\", \"error\" or \"unset\", found \"{other}\""),
            ))
        }
    };
    let number =
        |key: &str| super::values::opt_whole(obj, key, path, "a whole number (0 or more),");
    let count = match (number("count")?, number("min_count")?, number("max_count")?) {
        (Some(_), Some(_), _) | (Some(_), _, Some(_)) => {
            return Err(FieldError::new(
                join(path, "count"),
                "give `count` (exactly) or `min_count` / `max_count`, not both",
            ))
        }
        (Some(n), None, None) => SpanCount {
            min: n,
            max: Some(n),
        },
        (None, lo, hi) => {
            let min = lo.unwrap_or(if hi.is_some() { 0 } else { 1 });
            if let Some(hi) = hi.filter(|hi| *hi < min) {
                return Err(FieldError::new(
                    join(path, "max_count"),
                    format!("`max_count` ({hi}) is below `min_count` ({min}): no count can hold"),
                ));
            }
            SpanCount { min, max: hi }
        }
    };
    Ok(Kind::Span {
        name,
        attributes,
        status,
        max_duration_ms: number("max_duration_ms")?,
        count,
    })
}
