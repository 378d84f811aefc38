//! Reading assertions from their JSON form (seed and Yao spellings).

mod compile;
mod judge;
mod tools;
mod values;

use compile::compile_path;
pub(crate) use compile::compile_regex;
use judge::parse_judge;
use tools::{
    parse_span, parse_tool_called, parse_tool_count, parse_tool_result, parse_tool_sequence,
};

use serde_json::{Map, Value};

use crate::case::{Assertion, JsonType, Kind, ASSERTION_TYPES};
use crate::errors::FieldError;
use crate::source::fields::{check_keys, index, join, opt_bool, opt_str, suggest};
use crate::util::type_of;
use values::{article, opt_whole};

/// Keys every assertion may carry.
const COMMON: [&str; 5] = ["type", "negate", "message", "description", "id"];

/// Reads an assertion list: an object, an array of objects, or a bare type string.
pub(crate) fn parse_assertions(v: &Value, path: &str) -> Result<Vec<Assertion>, FieldError> {
    match v {
        Value::Null => Ok(Vec::new()),
        Value::Array(items) => items
            .iter()
            .enumerate()
            .map(|(i, item)| parse_one(item, &index(path, i)))
            .collect(),
        other => Ok(vec![parse_one(other, path)?]),
    }
}

/// An assertion's `type`, as written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TypeName {
    Contains,
    NotContains,
    Equals,
    Regex,
    JsonPath,
    Type,
    ToolCalled,
    ToolResult,
    ToolSequence,
    ToolCount,
    Span,
    Script,
    Latency,
    Agent,
    LlmJudge,
}

impl TypeName {
    /// Reads `type`: missing, not a string and unknown are errors, the last with the
    /// closest known type.
    fn parse(obj: &Map<String, Value>, path: &str) -> Result<TypeName, FieldError> {
        let name = match obj.get("type") {
            Some(Value::String(t)) => t.as_str(),
            Some(other) => {
                return Err(FieldError::new(
                    join(path, "type"),
                    format!("expected a string, found {}", type_of(other)),
                ))
            }
            None => {
                return Err(FieldError::new(
                    join(path, "type"),
                    format!(
                        "missing assertion `type`; expected one of: {}",
                        ASSERTION_TYPES.join(", ")
                    ),
                ))
            }
        };
        Ok(match name {
            "contains" => TypeName::Contains,
            "not_contains" => TypeName::NotContains,
            "equals" => TypeName::Equals,
            "regex" => TypeName::Regex,
            "json_path" => TypeName::JsonPath,
            "type" => TypeName::Type,
            "tool_called" => TypeName::ToolCalled,
            "tool_result" => TypeName::ToolResult,
            "tool_sequence" => TypeName::ToolSequence,
            "tool_count" => TypeName::ToolCount,
            "span" => TypeName::Span,
            "script" => TypeName::Script,
            "latency" => TypeName::Latency,
            "agent" => TypeName::Agent,
            "llm_judge" => TypeName::LlmJudge,
            other => {
                let hint = match suggest(other, &ASSERTION_TYPES) {
                    Some(s) => format!("did you mean \"{s}\"?"),
                    None => format!("expected one of: {}", ASSERTION_TYPES.join(", ")),
                };
                return Err(FieldError::new(
                    join(path, "type"),
                    format!("unknown assertion type \"{other}\"; {hint}"),
                ));
            }
        })
    }

    /// The name as written.
    fn name(self) -> &'static str {
        match self {
            TypeName::Contains => "contains",
            TypeName::NotContains => "not_contains",
            TypeName::Equals => "equals",
            TypeName::Regex => "regex",
            TypeName::JsonPath => "json_path",
            TypeName::Type => "type",
            TypeName::ToolCalled => "tool_called",
            TypeName::ToolResult => "tool_result",
            TypeName::ToolSequence => "tool_sequence",
            TypeName::ToolCount => "tool_count",
            TypeName::Span => "span",
            TypeName::Script => "script",
            TypeName::Latency => "latency",
            TypeName::Agent => "agent",
            TypeName::LlmJudge => "llm_judge",
        }
    }

    /// The keys this type takes besides the common ones.
    fn keys(self) -> &'static [&'static str] {
        match self {
            TypeName::Contains | TypeName::NotContains => &["value", "case_sensitive"],
            TypeName::Equals => &["value"],
            TypeName::Regex => &["pattern", "value"],
            TypeName::JsonPath => &["path", "value"],
            TypeName::Type => &["value", "path"],
            TypeName::ToolCalled => &["name", "value", "arguments"],
            TypeName::ToolResult => &["value", "tool", "result"],
            TypeName::ToolSequence => &["value", "strict", "scope"],
            TypeName::ToolCount => &["name", "value", "min", "max", "scope"],
            TypeName::Span => &[
                "name",
                "attributes",
                "status",
                "max_duration_ms",
                "count",
                "min_count",
                "max_count",
            ],
            TypeName::Script => &["use", "options", "value", "metadata"],
            TypeName::Latency => &["max_ms", "max_first_token_ms"],
            TypeName::Agent => &[
                "use",
                "options",
                "metadata",
                "value",
                "llm",
                "model",
                "temperature",
                "max_tokens",
                "seed",
                "rule",
                "threshold",
                "max_abstentions",
            ],
            TypeName::LlmJudge => &[
                "prompt",
                "expected",
                "capabilities",
                "json_schema",
                "use",
                "options",
                "metadata",
                "value",
                "llm",
                "model",
                "temperature",
                "max_tokens",
                "seed",
                "rule",
                "threshold",
                "max_abstentions",
            ],
        }
    }
}

/// Reads one assertion: an object, or a bare type name (`"contains"` would then fail
/// for its missing `value`, but a type without required fields reads well bare).
fn parse_one(v: &Value, path: &str) -> Result<Assertion, FieldError> {
    let obj: Map<String, Value> = match v {
        Value::Object(m) => m.clone(),
        Value::String(s) => Map::from_iter([("type".to_string(), Value::String(s.clone()))]),
        other => {
            return Err(FieldError::new(
                path,
                format!(
                    "expected an assertion object like {{\"type\": \"contains\", \"value\": \"...\"}}, found {}",
                    type_of(other)
                ),
            ))
        }
    };
    let type_name = TypeName::parse(&obj, path)?;
    let known: Vec<&str> = COMMON.iter().chain(type_name.keys()).copied().collect();
    check_keys(
        &obj,
        &known,
        path,
        &format!(
            "{} `{}` assertion",
            article(type_name.name()),
            type_name.name()
        ),
    )?;
    let negate = opt_bool(&obj, "negate", path)?.unwrap_or(false);
    let message = opt_str(&obj, "message", path)?;
    let kind = match type_name {
        TypeName::Contains | TypeName::NotContains => parse_contains(&obj, path, type_name)?,
        TypeName::Equals => Kind::Equals {
            value: required(&obj, "value", path, "the expected value")?.clone(),
        },
        TypeName::Regex => parse_regex(&obj, path)?,
        TypeName::JsonPath => Kind::JsonPath {
            path: compile_path(&obj, path)?.ok_or_else(|| {
                FieldError::new(
                    join(path, "path"),
                    "a `json_path` assertion needs `path`, such as \"$.status\"",
                )
            })?,
            value: required(&obj, "value", path, "the expected value")?.clone(),
        },
        TypeName::Type => parse_type(&obj, path)?,
        TypeName::ToolCalled => parse_tool_called(&obj, path)?,
        TypeName::ToolResult => parse_tool_result(&obj, path)?,
        TypeName::ToolSequence => parse_tool_sequence(&obj, path)?,
        TypeName::ToolCount => parse_tool_count(&obj, path)?,
        TypeName::Span => parse_span(&obj, path)?,
        TypeName::Script => parse_script(&obj, path)?,
        TypeName::Latency => parse_latency(&obj, path)?,
        TypeName::Agent | TypeName::LlmJudge => parse_judge(&obj, path, type_name.name())?,
    };
    Ok(Assertion {
        kind,
        negate,
        message,
        raw: crate::case::Raw::new(&Value::Object(obj)),
    })
}

/// `contains` / `not_contains`: `value`, and `case_sensitive` (default true).
fn parse_contains(
    obj: &Map<String, Value>,
    path: &str,
    type_name: TypeName,
) -> Result<Kind, FieldError> {
    let value = required_text(obj, "value", path, type_name.name())?;
    let case_sensitive = opt_bool(obj, "case_sensitive", path)?.unwrap_or(true);
    Ok(if type_name == TypeName::Contains {
        Kind::Contains {
            value,
            case_sensitive,
        }
    } else {
        Kind::NotContains {
            value,
            case_sensitive,
        }
    })
}

/// `regex`: `pattern` (or `value`), compiled now.
fn parse_regex(obj: &Map<String, Value>, path: &str) -> Result<Kind, FieldError> {
    let key = if obj.contains_key("pattern") {
        "pattern"
    } else {
        "value"
    };
    let pattern = match obj.get(key) {
        Some(Value::String(s)) => s,
        Some(other) => {
            return Err(FieldError::new(
                join(path, key),
                format!("expected a regex pattern string, found {}", type_of(other)),
            ))
        }
        None => {
            return Err(FieldError::new(
                join(path, "pattern"),
                "a `regex` assertion needs `pattern` (or `value`): a Rust regex such as \"(?i)order-\\\\d+\"",
            ))
        }
    };
    Ok(Kind::Regex {
        regex: compile_regex(pattern, &join(path, key))?,
    })
}

/// `type`: a JSON type name in `value`, and an optional `path`.
fn parse_type(obj: &Map<String, Value>, path: &str) -> Result<Kind, FieldError> {
    let name = required_text(obj, "value", path, "type")?;
    let expected = match JsonType::NAMES.iter().position(|n| *n == name) {
        Some(i) => [
            JsonType::String,
            JsonType::Number,
            JsonType::Boolean,
            JsonType::Array,
            JsonType::Object,
            JsonType::Null,
        ][i],
        None => {
            return Err(FieldError::new(
                join(path, "value"),
                format!(
                    "unknown JSON type \"{name}\"; expected one of: {}",
                    JsonType::NAMES.join(", ")
                ),
            ))
        }
    };
    Ok(Kind::Type {
        expected,
        path: compile_path(obj, path)?,
    })
}

/// `script`: `use: "scripts:NAME"`.
fn parse_script(obj: &Map<String, Value>, path: &str) -> Result<Kind, FieldError> {
    let used = opt_str(obj, "use", path)?.ok_or_else(|| {
        FieldError::new(
            join(path, "use"),
            "a `script` assertion needs `use`, such as \"scripts:check_amount\"",
        )
    })?;
    let name = used.strip_prefix("scripts:").ok_or_else(|| {
        FieldError::new(
            join(path, "use"),
            format!("expected \"scripts:NAME\", found \"{used}\"; script names take the `scripts:` prefix"),
        )
    })?;
    if name.is_empty() {
        return Err(FieldError::new(
            join(path, "use"),
            "the script name after `scripts:` is empty",
        ));
    }
    Ok(Kind::Script {
        name: name.to_string(),
    })
}

/// `latency`: `max_ms`, `max_first_token_ms` or both, whole milliseconds.
fn parse_latency(obj: &Map<String, Value>, path: &str) -> Result<Kind, FieldError> {
    let ms = |key: &str| {
        opt_whole(
            obj,
            key,
            path,
            "a whole number of milliseconds (0 or more), such as 2000;",
        )
    };
    let (max_ms, max_first_token_ms) = (ms("max_ms")?, ms("max_first_token_ms")?);
    if max_ms.is_none() && max_first_token_ms.is_none() {
        return Err(FieldError::new(
            join(path, "max_ms"),
            "a `latency` assertion needs `max_ms` (the whole reply), `max_first_token_ms` (its first byte) or both, in milliseconds",
        ));
    }
    Ok(Kind::Latency {
        max_ms,
        max_first_token_ms,
    })
}

pub(super) fn required<'a>(
    obj: &'a Map<String, Value>,
    key: &str,
    path: &str,
    what: &str,
) -> Result<&'a Value, FieldError> {
    obj.get(key).ok_or_else(|| {
        let t = obj.get("type").and_then(Value::as_str).unwrap_or("this");
        FieldError::new(
            join(path, key),
            format!("{} `{t}` assertion needs `{key}`: {what}", article(t)),
        )
    })
}

pub(super) fn required_text(
    obj: &Map<String, Value>,
    key: &str,
    path: &str,
    type_name: &str,
) -> Result<String, FieldError> {
    match obj.get(key) {
        Some(Value::String(s)) => Ok(s.clone()),
        Some(Value::Number(n)) if type_name != "type" => Ok(n.to_string()),
        Some(Value::Bool(b)) if type_name != "type" => Ok(b.to_string()),
        Some(other) => Err(FieldError::new(
            join(path, key),
            format!("expected a string, found {}", type_of(other)),
        )),
        None => Err(FieldError::new(
            join(path, key),
            format!(
                "{} `{type_name}` assertion needs `{key}` (a string)",
                article(type_name)
            ),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn messages_use_the_right_article() {
        let e = parse_assertions(&json!({"type": "agent"}), "assert").unwrap_err();
        assert!(
            e.message.starts_with("an `agent` assertion needs"),
            "{}",
            e.message
        );
        let e = parse_assertions(&json!({"type": "equals", "valu": 1}), "assert").unwrap_err();
        assert!(e.message.contains("an `equals` assertion"), "{}", e.message);
        let e = parse_assertions(&json!({"type": "regex"}), "assert").unwrap_err();
        assert!(
            e.message.starts_with("a `regex` assertion needs"),
            "{}",
            e.message
        );
    }
}
