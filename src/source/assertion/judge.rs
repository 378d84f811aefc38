//! Judge assertions: `agent` and `llm_judge`.

use crate::case::{JudgeChoice, JudgeRef, JuryRule, Kind};
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
    let judges = judge_choice(obj, path)?;
    let mut metadata = metadata(obj, path)?;
    let criteria = criteria(obj, path, type_name, &mut metadata)?;
    let capabilities = capabilities(obj, path)?;
    // Only agents named: no built-in judge to take the settings. A `judges:NAME` may be
    // one; whether it is, the config says (checked before the run).
    let agents_only = !judges.judges.is_empty()
        && judges
            .judges
            .iter()
            .all(|j| matches!(j, JudgeRef::Agent(_)));
    let owner = agents_only.then(|| match judges.judges.as_slice() {
        [one] => format!("the judge `{one}`"),
        _ => "a jury of agents".to_string(),
    });
    let model = model_settings(obj, path, owner.as_deref())?;
    let json_schema = json_schema(obj, path)?;
    Ok(Kind::Judge {
        type_name,
        spec: Box::new(crate::case::JudgeSpec {
            judges,
            criteria,
            metadata,
            expected: obj.get("expected").cloned(),
            capabilities,
            json_schema,
            model,
        }),
    })
}

/// `use`: one judge (`"llm"`, `"agents:NAME"`, `"judges:NAME"`) or a jury of several
/// (an array of them, with `rule`, `threshold` and `max_abstentions`); absent: the run's
/// default judge.
fn judge_choice(obj: &Map<String, Value>, path: &str) -> Result<JudgeChoice, FieldError> {
    let one = |v: &Value, at: String| -> Result<JudgeRef, FieldError> {
        let s = v.as_str().ok_or_else(|| {
            FieldError::new(
                at.clone(),
                format!("expected a string, found {}", type_of(v)),
            )
        })?;
        JudgeRef::parse(s).map_err(|why| {
            FieldError::new(
                at,
                format!("{why}; leave `use` out for the run's default judge"),
            )
        })
    };
    let use_path = join(path, "use");
    let judges = match obj.get("use") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) if items.is_empty() => {
            return Err(FieldError::new(
                use_path,
                "an empty jury judges nothing; name its judges, or leave `use` out for the run's default judge",
            ))
        }
        Some(Value::Array(items)) => {
            let mut judges = Vec::with_capacity(items.len());
            for (i, v) in items.iter().enumerate() {
                let j = one(v, index(&use_path, i))?;
                if judges.contains(&j) {
                    return Err(FieldError::new(
                        index(&use_path, i),
                        format!("`{j}` is in the jury twice; a juror votes once"),
                    ));
                }
                judges.push(j);
            }
            judges
        }
        Some(v) => vec![one(v, use_path.clone())?],
    };
    let threshold = match obj.get("threshold") {
        None | Some(Value::Null) => None,
        Some(v) => Some(v.as_f64().ok_or_else(|| {
            FieldError::new(
                join(path, "threshold"),
                format!("expected a number from 0 to 1, found {v}"),
            )
        })?),
    };
    let rule_text = opt_str(obj, "rule", path)?;
    let rule = JuryRule::parse(rule_text.as_deref(), threshold).map_err(|why| {
        let key = if why.starts_with("`rule` must") {
            "rule"
        } else {
            "threshold"
        };
        FieldError::new(join(path, key), why)
    })?;
    let max_abstentions = match obj.get("max_abstentions") {
        None | Some(Value::Null) => None,
        Some(v) => Some(v.as_u64().map(|n| n as usize).ok_or_else(|| {
            FieldError::new(
                join(path, "max_abstentions"),
                format!("expected a whole number of jurors, found {v}"),
            )
        })?),
    };
    let inline_jury = judges.len() > 1;
    for (key, set) in [
        ("rule", rule_text.is_some()),
        ("threshold", threshold.is_some()),
        ("max_abstentions", max_abstentions.is_some()),
    ] {
        if set && !inline_jury {
            return Err(FieldError::new(
                join(path, key),
                format!("`{key}` applies to a jury: give `use` several judges, like [\"llm\", \"agents:NAME\"], or define the jury in a [judges.NAME] table"),
            ));
        }
    }
    if let Some(m) = max_abstentions.filter(|m| *m >= judges.len()) {
        return Err(FieldError::new(
            join(path, "max_abstentions"),
            format!("{m} abstentions of a jury of {} would let a verdict stand with no juror answering; give at most {}", judges.len(), judges.len() - 1),
        ));
    }
    Ok(JudgeChoice {
        judges,
        rule,
        max_abstentions,
    })
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
