//! Turns and messages: what the user says, in a static script or as a case's input.

use serde_json::{Map, Value};

use crate::case::{Assertion, Input, Turn};
use crate::errors::FieldError;
use crate::protocol::Message;
use crate::source::fields::{check_keys, index, join, opt_object, opt_str};
use crate::source::parse_assertions;
use crate::util::type_of;

const TURN_KEYS: [&str; 7] = [
    "input",
    "assertions",
    "assert",
    "options",
    "attachments",
    "name",
    "description",
];
const MESSAGE_KEYS: [&str; 5] = ["role", "content", "tool_calls", "name", "tool_call_id"];
const ROLES: [&str; 4] = ["user", "assistant", "system", "tool"];

pub(super) fn parse_turn(v: &Value, path: &str) -> Result<Turn, FieldError> {
    let m = match v {
        Value::Object(m) => m,
        other => {
            return Err(FieldError::new(
                path,
                format!(
                    "expected a turn object {{\"input\": ..., \"assertions\": [...]}}, found {}",
                    type_of(other)
                ),
            ))
        }
    };
    check_keys(m, &TURN_KEYS, path, "a turn")?;
    opt_str(m, "name", path)?;
    opt_str(m, "description", path)?;
    let input = match m.get("input") {
        Some(v) => parse_input(v, &join(path, "input"))?,
        None => {
            return Err(FieldError::new(
                join(path, "input"),
                "each turn needs `input`: what the user says",
            ))
        }
    };
    let attachments = match m.get("attachments") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(a)) => a.clone(),
        Some(other) => {
            return Err(FieldError::new(
                join(path, "attachments"),
                format!("expected an array, found {}", type_of(other)),
            ))
        }
    };
    Ok(Turn {
        input,
        assertions: assertion_list(m, path, ["assertions", "assert"])?,
        options: opt_object(m, "options", path)?,
        attachments,
    })
}

pub(super) fn parse_input(v: &Value, path: &str) -> Result<Input, FieldError> {
    let messages = match v {
        Value::String(s) => vec![Message::user(s.clone())],
        Value::Object(_) => vec![parse_message(v, path)?],
        Value::Array(items) if !items.is_empty() => items
            .iter()
            .enumerate()
            .map(|(i, m)| match m {
                Value::String(s) => Ok(Message::user(s.clone())),
                _ => parse_message(m, &index(path, i)),
            })
            .collect::<Result<Vec<_>, _>>()?,
        Value::Array(_) => return Err(FieldError::new(path, "the message list is empty; give at least one user message")),
        other => {
            return Err(FieldError::new(
                path,
                format!("expected a string, a message {{\"role\", \"content\"}} or an array of messages, found {}", type_of(other)),
            ))
        }
    };
    if messages.last().is_some_and(|m| m.role != "user") {
        let at = if v.is_array() {
            index(path, messages.len() - 1)
        } else {
            path.to_string()
        };
        return Err(FieldError::new(
            join(&at, "role"),
            "the last input message must have role \"user\": the agent answers it",
        ));
    }
    Ok(Input { messages })
}

pub(super) fn parse_message(v: &Value, path: &str) -> Result<Message, FieldError> {
    let Value::Object(m) = v else {
        return Err(FieldError::new(
            path,
            format!(
                "expected a message {{\"role\", \"content\"}}, found {}",
                type_of(v)
            ),
        ));
    };
    check_keys(m, &MESSAGE_KEYS, path, "a message")?;
    let role = opt_str(m, "role", path)?.ok_or_else(|| {
        FieldError::new(
            join(path, "role"),
            "a message needs `role`: user, assistant, system or tool",
        )
    })?;
    if !ROLES.contains(&role.as_str()) {
        return Err(FieldError::new(
            join(path, "role"),
            format!("unknown role \"{role}\"; expected user, assistant, system or tool"),
        ));
    }
    let content = m.get("content").cloned().unwrap_or(Value::Null);
    if content.is_null() && role == "user" {
        return Err(FieldError::new(
            join(path, "content"),
            "a user message needs `content`",
        ));
    }
    Ok(Message {
        role,
        content,
        tool_calls: m.get("tool_calls").cloned(),
        name: opt_str(m, "name", path)?,
        tool_call_id: opt_str(m, "tool_call_id", path)?,
    })
}

/// Reads `assertions` or `assert` (not both).
pub(super) fn assertion_list(
    obj: &Map<String, Value>,
    path: &str,
    keys: [&str; 2],
) -> Result<Vec<Assertion>, FieldError> {
    match (obj.get(keys[0]), obj.get(keys[1])) {
        (Some(_), Some(_)) => Err(FieldError::new(
            join(path, keys[1]),
            format!(
                "both `{}` and `{}` are given; use one of them",
                keys[0], keys[1]
            ),
        )),
        (Some(v), None) => parse_assertions(v, &join(path, keys[0])),
        (None, Some(v)) => parse_assertions(v, &join(path, keys[1])),
        (None, None) => Ok(Vec::new()),
    }
}
