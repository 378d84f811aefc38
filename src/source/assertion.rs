//! Reading assertions from their JSON form (seed and Yao spellings).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use jsonpath_rust::parser::model::JpQuery;

use regex::Regex;
use serde_json::{Map, Value};

use crate::case::{Assertion, JsonPath, JsonType, Kind, ValueMatcher, ASSERTION_TYPES};
use crate::errors::FieldError;
use crate::source::fields::{check_keys, index, join, opt_bool, opt_str, suggest};
use crate::util::type_of;

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

fn parse_one(v: &Value, path: &str) -> Result<Assertion, FieldError> {
    let owned;
    let obj: &Map<String, Value> = match v {
        Value::Object(m) => m,
        Value::String(s) => {
            let mut m = Map::new();
            m.insert("type".into(), Value::String(s.clone()));
            owned = m;
            &owned
        }
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
    let type_name = match obj.get("type") {
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
    let extra: &[&str] = match type_name {
        "contains" | "not_contains" => &["value", "case_sensitive"],
        "equals" => &["value"],
        "regex" => &["pattern", "value"],
        "json_path" => &["path", "value"],
        "type" => &["value", "path"],
        "tool_called" => &["name", "value", "arguments"],
        "tool_result" => &["value", "tool", "result"],
        "script" => &["use", "options", "value", "metadata"],
        "agent" => &["use", "options", "metadata", "value"],
        "llm_judge" => &[
            "prompt",
            "expected",
            "capabilities",
            "json_schema",
            "temperature",
            "use",
            "options",
            "metadata",
            "value",
        ],
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
    };
    let known: Vec<&str> = COMMON.iter().chain(extra).copied().collect();
    check_keys(obj, &known, path, &format!("a `{type_name}` assertion"))?;

    let negate = opt_bool(obj, "negate", path)?.unwrap_or(false);
    let message = opt_str(obj, "message", path)?;
    let kind = match type_name {
        "contains" | "not_contains" => {
            let value = required_text(obj, "value", path, type_name)?;
            let case_sensitive = opt_bool(obj, "case_sensitive", path)?.unwrap_or(true);
            if type_name == "contains" {
                Kind::Contains {
                    value,
                    case_sensitive,
                }
            } else {
                Kind::NotContains {
                    value,
                    case_sensitive,
                }
            }
        }
        "equals" => Kind::Equals {
            value: required(obj, "value", path, "the expected value")?.clone(),
        },
        "regex" => {
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
            Kind::Regex {
                regex: compile_regex(pattern, &join(path, key))?,
            }
        }
        "json_path" => Kind::JsonPath {
            path: compile_path(obj, path)?.ok_or_else(|| {
                FieldError::new(
                    join(path, "path"),
                    "a `json_path` assertion needs `path`, such as \"$.status\"",
                )
            })?,
            value: required(obj, "value", path, "the expected value")?.clone(),
        },
        "type" => {
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
            Kind::Type {
                expected,
                path: compile_path(obj, path)?,
            }
        }
        "tool_called" => parse_tool_called(obj, path)?,
        "tool_result" => parse_tool_result(obj, path)?,
        "script" => {
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
            Kind::Script {
                name: name.to_string(),
            }
        }
        "agent" => parse_judge(obj, path, "agent")?,
        _ => parse_judge(obj, path, "llm_judge")?,
    };
    Ok(Assertion {
        kind,
        negate,
        message,
        raw: Value::Object(obj.clone()),
    })
}

/// `agent` (seed and Yao: `use: "agents:NAME"`, `options.metadata.criteria`) and
/// `llm_judge` (ElizaOS: `prompt`, `expected`, `capabilities`, `json_schema`, `temperature`).
fn parse_judge(
    obj: &Map<String, Value>,
    path: &str,
    type_name: &'static str,
) -> Result<Kind, FieldError> {
    let agent = match opt_str(obj, "use", path)? {
        None => None,
        Some(u) => match u.strip_prefix("agents:") {
            Some(name) if !name.is_empty() => Some(name.to_string()),
            _ => {
                return Err(FieldError::new(
                    join(path, "use"),
                    format!("expected \"agents:NAME\" (a judge agent), found \"{u}\"; leave `use` out for the built-in judge on [llm]"),
                ))
            }
        },
    };
    let mut metadata = Map::new();
    for (source, source_path) in [
        (
            obj.get("options").and_then(|o| o.get("metadata")),
            join(&join(path, "options"), "metadata"),
        ),
        (obj.get("metadata"), join(path, "metadata")),
    ] {
        match source {
            None | Some(Value::Null) => {}
            Some(Value::Object(m)) => metadata.extend(m.clone()),
            Some(other) => {
                return Err(FieldError::new(
                    source_path,
                    format!("expected an object, found {}", type_of(other)),
                ))
            }
        }
    }
    if let Some(o) = obj.get("options") {
        if !o.is_object() {
            return Err(FieldError::new(
                join(path, "options"),
                format!("expected an object, found {}", type_of(o)),
            ));
        }
    }
    let criteria = match metadata.remove("criteria") {
        Some(Value::String(c)) => Some(c),
        Some(other) => {
            return Err(FieldError::new(
                join(path, "options.metadata.criteria"),
                format!("expected a string, found {}", type_of(&other)),
            ))
        }
        None => opt_str(obj, "prompt", path)?.or(opt_str(obj, "value", path)?),
    };
    let Some(criteria) = criteria.filter(|c| !c.trim().is_empty()) else {
        let hint = if type_name == "agent" {
            "options.metadata.criteria"
        } else {
            "prompt"
        };
        return Err(FieldError::new(
            join(path, hint),
            format!("a `{type_name}` assertion needs its criteria in `{hint}`: what the reply must satisfy"),
        ));
    };
    let capabilities = match obj.get("capabilities") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .map(|(i, c)| {
                c.as_str().map(str::to_string).ok_or_else(|| {
                    FieldError::new(
                        index(&join(path, "capabilities"), i),
                        format!("expected a string, found {}", type_of(c)),
                    )
                })
            })
            .collect::<Result<_, _>>()?,
        Some(other) => {
            return Err(FieldError::new(
                join(path, "capabilities"),
                format!("expected an array of strings, found {}", type_of(other)),
            ))
        }
    };
    let temperature = match obj.get("temperature") {
        None | Some(Value::Null) => None,
        Some(t) => Some(
            t.as_f64()
                .filter(|t| (0.0..=2.0).contains(t))
                .ok_or_else(|| {
                    FieldError::new(join(path, "temperature"), "expected a number from 0 to 2")
                })?,
        ),
    };
    let json_schema = match obj.get("json_schema") {
        None | Some(Value::Null) => None,
        Some(s @ Value::Object(_)) => Some(s.clone()),
        Some(other) => {
            return Err(FieldError::new(
                join(path, "json_schema"),
                format!("expected an object, found {}", type_of(other)),
            ))
        }
    };
    Ok(Kind::Judge {
        type_name,
        spec: Box::new(crate::case::JudgeSpec {
            agent,
            criteria,
            metadata,
            expected: obj.get("expected").cloned(),
            capabilities,
            json_schema,
            temperature,
        }),
    })
}

fn required<'a>(
    obj: &'a Map<String, Value>,
    key: &str,
    path: &str,
    what: &str,
) -> Result<&'a Value, FieldError> {
    obj.get(key).ok_or_else(|| {
        let t = obj.get("type").and_then(Value::as_str).unwrap_or("this");
        FieldError::new(
            join(path, key),
            format!("a `{t}` assertion needs `{key}`: {what}"),
        )
    })
}

fn required_text(
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
            format!("a `{type_name}` assertion needs `{key}` (a string)"),
        )),
    }
}

/// Suites repeat the same patterns and paths on many lines; compiling each once keeps
/// loading a large suite fast (a compiled `Regex` clones cheaply, the path is shared).
fn cached<T: Clone>(
    cache: &'static OnceLock<Mutex<HashMap<String, T>>>,
    key: &str,
    make: impl FnOnce() -> Result<T, FieldError>,
) -> Result<T, FieldError> {
    const MAX_ENTRIES: usize = 4096;
    let map = cache.get_or_init(|| Mutex::new(HashMap::new()));
    if let Some(hit) = map.lock().unwrap_or_else(|e| e.into_inner()).get(key) {
        return Ok(hit.clone());
    }
    let made = make()?;
    let mut m = map.lock().unwrap_or_else(|e| e.into_inner());
    if m.len() < MAX_ENTRIES {
        m.insert(key.to_string(), made.clone());
    }
    Ok(made)
}

pub(crate) fn compile_regex(pattern: &str, path: &str) -> Result<Regex, FieldError> {
    static CACHE: OnceLock<Mutex<HashMap<String, Regex>>> = OnceLock::new();
    cached(&CACHE, pattern, || new_regex(pattern, path))
}

fn new_regex(pattern: &str, path: &str) -> Result<Regex, FieldError> {
    Regex::new(pattern).map_err(|e| {
        let detail = e.to_string();
        let last = detail.lines().last().unwrap_or("").trim();
        let last = last.strip_prefix("error: ").unwrap_or(last).to_string();
        FieldError::new(path, format!("invalid regex \"{pattern}\": {last}"))
    })
}

fn compile_path(obj: &Map<String, Value>, path: &str) -> Result<Option<JsonPath>, FieldError> {
    let Some(raw) = opt_str(obj, "path", path)? else {
        return Ok(None);
    };
    Ok(Some(compile_json_path(&raw, &join(path, "path"))?))
}

/// Compiles a JSONPath, accepting Yao's shorthand without `$` (`result.count`, `items[0].name`).
pub(crate) fn compile_json_path(raw: &str, path: &str) -> Result<JsonPath, FieldError> {
    let text = raw.trim();
    let (normalised, added) = if text.starts_with('$') {
        (text.to_string(), 0)
    } else if text.starts_with('[') {
        (format!("${text}"), 1)
    } else {
        (format!("$.{text}"), 2)
    };
    static CACHE: OnceLock<Mutex<HashMap<String, Arc<JpQuery>>>> = OnceLock::new();
    let query = cached(&CACHE, &normalised, || {
        parse_path(&normalised, raw, added, path)
    })?;
    Ok(JsonPath {
        text: raw.to_string(),
        query,
    })
}

fn parse_path(
    normalised: &str,
    raw: &str,
    added: usize,
    path: &str,
) -> Result<Arc<JpQuery>, FieldError> {
    let query = jsonpath_rust::parser::parse_json_path(normalised).map_err(|e| {
        // pest reports `--> 1:COL`; the column is all a user needs from it.
        let msg = e.to_string();
        let at = msg
            .split("-->")
            .nth(1)
            .and_then(|s| s.split_whitespace().next())
            .and_then(|s| s.rsplit(':').next())
            .and_then(|c| c.parse::<usize>().ok())
            .map(|c| format!(" (parse error at character {})", c.saturating_sub(added).max(1)))
            .unwrap_or_default();
        FieldError::new(
            path,
            format!("invalid JSONPath \"{raw}\"{at}; write an RFC 9535 path such as \"$.items[0].name\""),
        )
    })?;
    Ok(Arc::new(query))
}

fn parse_tool_called(obj: &Map<String, Value>, path: &str) -> Result<Kind, FieldError> {
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

fn parse_tool_result(obj: &Map<String, Value>, path: &str) -> Result<Kind, FieldError> {
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

fn contains_pattern(v: &Value) -> bool {
    match v {
        Value::String(s) => s.starts_with("regex:"),
        Value::Object(m) => m.values().any(contains_pattern),
        _ => false,
    }
}
