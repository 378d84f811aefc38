//! The records of EvalStudio's filesystem store (`data/*.json`, each a JSON array), read
//! strictly: the fields EvalStudio writes, each of its type; keys EvalStudio adds on its
//! own (ids, timestamps, the older `projectId`) are taken and ignored; any other key is
//! a mistake, named with the key it most resembles.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use crate::case::ConnectorAgent;

use crate::errors::CaseError;
use crate::source::document::Document;
use crate::source::fields::suggest;
use crate::util::type_of;

/// Keys EvalStudio adds to every record by itself.
const ADDED: [&str; 4] = ["id", "createdAt", "updatedAt", "projectId"];

const SCENARIO_KEYS: [&str; 9] = [
    "name",
    "instructions",
    "messages",
    "maxMessages",
    "successCriteria",
    "failureCriteria",
    "failureCriteriaMode",
    "evaluators",
    "personaIds",
];
const PERSONA_KEYS: [&str; 5] = ["name", "description", "systemPrompt", "imageUrl", "headers"];
const EVAL_KEYS: [&str; 4] = ["name", "connectorId", "scenarioIds", "input"];
const CONNECTOR_KEYS: [&str; 5] = ["name", "type", "baseUrl", "headers", "config"];
const PROVIDER_KEYS: [&str; 4] = ["name", "provider", "apiKey", "config"];
/// Message keys besides the ones a case's message takes: EvalStudio's own.
pub(super) const MESSAGE_EXTRAS: [&str; 2] = ["id", "metadata"];

/// The metrics EvalStudio computes on its own: they never fail a run, and agentest
/// records tool calls and token usage for every turn anyway.
const BUILTIN_EVALUATORS: [&str; 2] = ["tool-call-count", "token-usage"];

/// One record's fields, or why it cannot be used.
pub(super) type Record<T> = Result<T, CaseError>;

/// A scenario: the conversation's setup and the criteria that decide it.
#[derive(Debug, Clone)]
pub(super) struct Scenario {
    /// Its place in the file.
    pub(super) index: usize,
    pub(super) id: Option<String>,
    pub(super) name: String,
    pub(super) persona_ids: Vec<String>,
    /// The record as written (checked field by field when it becomes a case).
    pub(super) fields: Map<String, Value>,
}

/// A persona the simulated user impersonates.
#[derive(Debug, Clone)]
pub(super) struct Persona {
    pub(super) id: Option<String>,
    pub(super) name: String,
    pub(super) description: Option<String>,
    pub(super) system_prompt: Option<String>,
    /// Sent to a LangGraph connector over its own headers, as EvalStudio does.
    pub(super) headers: BTreeMap<String, String>,
}

/// An eval: scenarios run against one connector.
#[derive(Debug, Clone)]
pub(super) struct Eval {
    pub(super) index: usize,
    pub(super) id: Option<String>,
    pub(super) name: String,
    pub(super) connector_id: Option<String>,
    pub(super) scenario_ids: Vec<String>,
    /// The older `input`: messages sent after the scenario's own.
    pub(super) input: Vec<Value>,
}

/// A connector: its id and name (`[connectors]` maps them to agents), and for a
/// `langgraph` one with `baseUrl` and `config.assistantId`, the agent it stands for.
#[derive(Debug, Clone)]
pub(super) struct Connector {
    pub(super) id: Option<String>,
    pub(super) name: String,
    pub(super) agent: Option<ConnectorAgent>,
}

/// An LLM provider of the older store (`llm-providers.json`).
#[derive(Debug, Clone)]
pub(super) struct Provider {
    pub(super) id: Option<String>,
    pub(super) provider: String,
    pub(super) api_key: Option<String>,
}

/// The records of a store file: one result per array item, or one error for the file.
pub(super) fn records<T>(
    doc: &Document,
    read: impl Fn(&Document, usize, &Map<String, Value>) -> Record<T>,
) -> Result<Vec<Record<T>>, CaseError> {
    let Value::Array(items) = &doc.value else {
        return Err(doc.error(
            "",
            format!(
                "expected a JSON array of records, as EvalStudio writes {}; found {}",
                doc.name(),
                type_of(&doc.value)
            ),
        ));
    };
    Ok(items
        .iter()
        .enumerate()
        .map(|(i, item)| match item {
            Value::Object(m) => read(doc, i, m),
            other => Err(doc.error(
                &format!("[{i}]"),
                format!(
                    "expected a record (a JSON object), found {}",
                    type_of(other)
                ),
            )),
        })
        .collect())
}

/// Checks the keys of record `i`: `known`, or one EvalStudio adds.
fn keys(
    doc: &Document,
    i: usize,
    m: &Map<String, Value>,
    known: &[&str],
    what: &str,
) -> Record<()> {
    for key in m.keys() {
        if !known.contains(&key.as_str()) && !ADDED.contains(&key.as_str()) {
            let hint = match suggest(key, known) {
                Some(s) => format!("did you mean `{s}`?"),
                None => format!("a {what} has {}", known.join(", ")),
            };
            return Err(doc.error(
                &format!("[{i}].{key}"),
                format!("unknown key `{key}` in a {what}; {hint}"),
            ));
        }
    }
    Ok(())
}

/// An optional string field of record `i`.
fn string(doc: &Document, i: usize, m: &Map<String, Value>, key: &str) -> Record<Option<String>> {
    match m.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(other) => Err(doc.error(
            &format!("[{i}].{key}"),
            format!("expected a string, found {}", type_of(other)),
        )),
    }
}

/// The required, non-blank `name` of record `i`.
fn name(doc: &Document, i: usize, m: &Map<String, Value>, what: &str) -> Record<String> {
    string(doc, i, m, "name")?
        .filter(|n| !n.trim().is_empty())
        .ok_or_else(|| {
            doc.error(
                &format!("[{i}]"),
                format!("a {what} needs a `name` (it names the trial)"),
            )
        })
}

/// An optional array of strings of record `i`.
fn strings(doc: &Document, i: usize, m: &Map<String, Value>, key: &str) -> Record<Vec<String>> {
    match m.get(key) {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .map(|(j, v)| match v {
                Value::String(s) if !s.is_empty() => Ok(s.clone()),
                other => Err(doc.error(
                    &format!("[{i}].{key}[{j}]"),
                    format!(
                        "expected an id (a non-empty string), found {}",
                        type_of(other)
                    ),
                )),
            })
            .collect(),
        Some(other) => Err(doc.error(
            &format!("[{i}].{key}"),
            format!("expected an array of ids, found {}", type_of(other)),
        )),
    }
}

/// An optional object of string values (`headers`).
fn string_map(
    doc: &Document,
    i: usize,
    m: &Map<String, Value>,
    key: &str,
) -> Record<BTreeMap<String, String>> {
    match m.get(key) {
        None | Some(Value::Null) => Ok(BTreeMap::new()),
        Some(Value::Object(h)) => match h.iter().find(|(_, v)| !v.is_string()) {
            None => Ok(h
                .iter()
                .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string()))
                .collect()),
            Some((k, v)) => Err(doc.error(
                &format!("[{i}].{key}.{k}"),
                format!("expected a string, found {}", type_of(v)),
            )),
        },
        Some(other) => Err(doc.error(
            &format!("[{i}].{key}"),
            format!("expected an object of strings, found {}", type_of(other)),
        )),
    }
}

pub(super) fn scenario(doc: &Document, i: usize, m: &Map<String, Value>) -> Record<Scenario> {
    keys(doc, i, m, &SCENARIO_KEYS, "scenario")?;
    let id = string(doc, i, m, "id")?;
    let name = name(doc, i, m, "scenario")?;
    let persona_ids = strings(doc, i, m, "personaIds")?;
    match m.get("evaluators") {
        None | Some(Value::Null) => {}
        Some(Value::Array(items)) => {
            for (j, e) in items.iter().enumerate() {
                let at = format!("[{i}].evaluators[{j}]");
                let kind = e.get("type").and_then(Value::as_str);
                match kind {
                    Some(t) if BUILTIN_EVALUATORS.contains(&t) => {}
                    Some(t) => {
                        return Err(doc.error(
                            &format!("{at}.type"),
                            format!("evaluator \"{t}\" is code registered in EvalStudio, which agentest cannot run; the built-in metrics ({}) are accepted (agentest records tool calls and tokens of every turn anyway); remove it, or say what it checks in `successCriteria`", BUILTIN_EVALUATORS.join(", ")),
                        ))
                    }
                    None => {
                        return Err(doc.error(
                            &at,
                            "an evaluator needs a `type`, like {\"type\": \"tool-call-count\"}",
                        ))
                    }
                }
            }
        }
        Some(other) => {
            return Err(doc.error(
                &format!("[{i}].evaluators"),
                format!("expected an array of evaluators, found {}", type_of(other)),
            ))
        }
    }
    Ok(Scenario {
        index: i,
        id,
        name,
        persona_ids,
        fields: m.clone(),
    })
}

pub(super) fn persona(doc: &Document, i: usize, m: &Map<String, Value>) -> Record<Persona> {
    keys(doc, i, m, &PERSONA_KEYS, "persona")?;
    string(doc, i, m, "imageUrl")?;
    Ok(Persona {
        id: string(doc, i, m, "id")?,
        name: name(doc, i, m, "persona")?,
        description: string(doc, i, m, "description")?,
        system_prompt: string(doc, i, m, "systemPrompt")?,
        headers: string_map(doc, i, m, "headers")?,
    })
}

/// A persona of a personas file named in `agentest.toml` (`personas_file`): EvalStudio's
/// shape, or agentest's own (`system_prompt`).
pub(super) fn any_persona(doc: &Document, i: usize, m: &Map<String, Value>) -> Record<Persona> {
    if !m.contains_key("system_prompt") {
        return persona(doc, i, m);
    }
    keys(
        doc,
        i,
        m,
        &["name", "description", "system_prompt"],
        "persona",
    )?;
    Ok(Persona {
        id: None,
        name: name(doc, i, m, "persona")?,
        description: string(doc, i, m, "description")?,
        system_prompt: string(doc, i, m, "system_prompt")?,
        headers: BTreeMap::new(),
    })
}

pub(super) fn eval(doc: &Document, i: usize, m: &Map<String, Value>) -> Record<Eval> {
    keys(doc, i, m, &EVAL_KEYS, "eval")?;
    let scenario_ids = strings(doc, i, m, "scenarioIds")?;
    if scenario_ids.is_empty() {
        return Err(doc.error(
            &format!("[{i}]"),
            "an eval needs `scenarioIds`: the ids of the scenarios it runs (at least one)",
        ));
    }
    let input = match m.get("input") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) => items.clone(),
        Some(other) => {
            return Err(doc.error(
                &format!("[{i}].input"),
                format!("expected an array of messages, found {}", type_of(other)),
            ))
        }
    };
    Ok(Eval {
        index: i,
        id: string(doc, i, m, "id")?,
        name: name(doc, i, m, "eval")?,
        connector_id: string(doc, i, m, "connectorId")?,
        scenario_ids,
        input,
    })
}

pub(super) fn connector(doc: &Document, i: usize, m: &Map<String, Value>) -> Record<Connector> {
    keys(doc, i, m, &CONNECTOR_KEYS, "connector")?;
    let headers = string_map(doc, i, m, "headers")?;
    let config = &m.get("config").cloned().unwrap_or_default();
    // A LangGraph connector with its server and graph is an agent as it stands.
    let agent = match (
        string(doc, i, m, "type")?.as_deref(),
        string(doc, i, m, "baseUrl")?,
        config["assistantId"].as_str(),
    ) {
        (Some("langgraph"), Some(url), Some(assistant_id)) => Some(ConnectorAgent {
            url,
            assistant_id: assistant_id.to_string(),
            headers,
            config: config
                .get("configurable")
                .map(|c| serde_json::json!({ "configurable": c })),
        }),
        _ => None,
    };
    Ok(Connector {
        id: string(doc, i, m, "id")?,
        name: name(doc, i, m, "connector")?,
        agent,
    })
}

pub(super) fn provider(doc: &Document, i: usize, m: &Map<String, Value>) -> Record<Provider> {
    keys(doc, i, m, &PROVIDER_KEYS, "LLM provider")?;
    let provider = string(doc, i, m, "provider")?.ok_or_else(|| {
        doc.error(
            &format!("[{i}]"),
            "an LLM provider needs `provider`: \"openai\" or \"anthropic\"",
        )
    })?;
    Ok(Provider {
        id: string(doc, i, m, "id")?,
        provider,
        api_key: string(doc, i, m, "apiKey")?,
    })
}
