//! Judge assertions: `agent` and `llm_judge`.

use crate::case::Kind;
use crate::errors::FieldError;
use crate::source::fields::{index, join, model_settings, opt_str};
use crate::util::type_of;
use serde_json::{Map, Value};

/// `agent` (seed and Yao: `use: "agents:NAME"`, `options.metadata.criteria`) and
/// `llm_judge` (ElizaOS: `prompt`, `expected`, `capabilities`, `json_schema`, `temperature`), both with the built-in judge's model settings
/// (`llm`, `model`, `temperature`, `max_tokens`, `seed`).
pub(super) fn parse_judge(
    obj: &Map<String, Value>,
    path: &str,
    type_name: &'static str,
) -> Result<Kind, FieldError> {
    let agent = judge_agent(obj, path)?;
    let mut metadata = metadata(obj, path)?;
    let criteria = criteria(obj, path, type_name, &mut metadata)?;
    let capabilities = capabilities(obj, path)?;
    let model = model_settings(
        obj,
        path,
        agent
            .as_ref()
            .map(|a| format!("the judge agent `{a}`"))
            .as_deref(),
    )?;
    let json_schema = json_schema(obj, path)?;
    Ok(Kind::Judge {
        type_name,
        spec: Box::new(crate::case::JudgeSpec {
            agent,
            criteria,
            metadata,
            expected: obj.get("expected").cloned(),
            capabilities,
            json_schema,
            model,
        }),
    })
}

/// `use: "agents:NAME"`: the judge agent, when the built-in judge is not the one.
fn judge_agent(obj: &Map<String, Value>, path: &str) -> Result<Option<String>, FieldError> {
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
    Ok(agent)
}

/// `options.metadata` and `metadata`, merged: what the judge is given besides the
/// criteria.
fn metadata(obj: &Map<String, Value>, path: &str) -> Result<Map<String, Value>, FieldError> {
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
    Ok(metadata)
}

/// The criteria the reply must satisfy: `options.metadata.criteria` (taken out of
/// `metadata`), else `prompt` or `value`.
fn criteria(
    obj: &Map<String, Value>,
    path: &str,
    type_name: &'static str,
    metadata: &mut Map<String, Value>,
) -> Result<String, FieldError> {
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
            format!("{} `{type_name}` assertion needs its criteria in `{hint}`: what the reply must satisfy", super::values::article(type_name)),
        ));
    };
    Ok(criteria)
}

/// `capabilities`: strings the judge weighs.
fn capabilities(obj: &Map<String, Value>, path: &str) -> Result<Vec<String>, FieldError> {
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
    Ok(capabilities)
}

/// `json_schema`: a schema the reply must satisfy, checked to be one.
fn json_schema(obj: &Map<String, Value>, path: &str) -> Result<Option<Value>, FieldError> {
    let json_schema = match obj.get("json_schema") {
        None | Some(Value::Null) => None,
        Some(s @ Value::Object(_)) => {
            if let Err(e) = jsonschema::validator_for(s) {
                return Err(FieldError::new(
                    join(path, "json_schema"),
                    format!(
                        "not a valid JSON Schema: {e}; fix the schema, or remove `json_schema`"
                    ),
                ));
            }
            Some(s.clone())
        }
        Some(other) => {
            return Err(FieldError::new(
                join(path, "json_schema"),
                format!("expected an object, found {}", type_of(other)),
            ))
        }
    };
    Ok(json_schema)
}
