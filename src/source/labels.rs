//! Labelled sets for `agentest calibrate`: JSON Lines of judgments a person made.
//!
//! A line is either an item written for calibration,
//! `{"id", "criteria", "input"?, "reply" | "conversation": [messages], "label": "pass" | "fail", "notes"?}`,
//! or one of agentest's own report records with a `label` added, so that a team labels
//! past results as they are. A record's criteria are those of its one judged check (an
//! `agent` or `llm_judge` assertion); a record with several says which with `criteria`.

use std::path::Path;
use std::sync::Arc;

use serde_json::{Map, Value};

use crate::case::Location;
use crate::errors::CaseError;
use crate::protocol::Message;
use crate::util::type_of;

/// One labelled judgment.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct LabelledItem {
    /// `id`, or a record's trial.
    pub(crate) id: String,
    /// Where it was written.
    pub(crate) location: Location,
    /// What the reply must satisfy.
    pub(crate) criteria: String,
    /// The user message the reply answers.
    pub(crate) input: String,
    /// The reply under judgment.
    pub(crate) reply: String,
    /// The conversation, ending with the reply.
    pub(crate) conversation: Vec<Message>,
    /// The person's verdict: `true` for `pass`.
    pub(crate) label: bool,
    /// The person's notes.
    pub(crate) notes: Option<String>,
}

/// Reads a labelled set. Every bad line is an error naming its line, field and fix; an
/// id used twice is one too (the report names items by id).
pub(crate) fn read_labels(path: &Path) -> Result<Vec<LabelledItem>, Vec<CaseError>> {
    let file = Arc::new(path.to_path_buf());
    let at = |line: usize| Location {
        file: file.clone(),
        line,
        column: 1,
    };
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) => {
            return Err(vec![CaseError {
                location: at(1),
                id: None,
                field: None,
                message: format!("cannot read the labelled set: {e}"),
            }])
        }
    };
    let mut items: Vec<LabelledItem> = Vec::new();
    let mut errors = Vec::new();
    for (i, line) in text.trim_start_matches('\u{feff}').lines().enumerate() {
        let trimmed = line.trim();
        if trimmed.is_empty() || trimmed.starts_with("//") {
            continue;
        }
        match item(trimmed, at(i + 1)) {
            Ok(it) => {
                if let Some(first) = items.iter().find(|o| o.id == it.id) {
                    errors.push(CaseError {
                        location: it.location.clone(),
                        id: Some(it.id.clone()),
                        field: Some("id".into()),
                        message: format!(
                            "\"{}\" is already the id of line {}; give each item its own id",
                            it.id, first.location.line
                        ),
                    });
                } else {
                    items.push(it);
                }
            }
            Err(e) => errors.push(e),
        }
    }
    if items.is_empty() && errors.is_empty() {
        errors.push(CaseError {
            location: at(1),
            id: None,
            field: None,
            message: "the labelled set has no items; write one JSON object per line with \"criteria\", \"reply\" or \"conversation\", and \"label\"".into(),
        });
    }
    if errors.is_empty() {
        Ok(items)
    } else {
        Err(errors)
    }
}

fn item(line: &str, location: Location) -> Result<LabelledItem, CaseError> {
    let fail = |id: Option<String>, field: Option<&str>, message: String| CaseError {
        location: location.clone(),
        id,
        field: field.map(str::to_string),
        message,
    };
    let v: Value = serde_json::from_str(line).map_err(|e| {
        fail(
            None,
            None,
            format!("not JSON ({e}); write one JSON object per line"),
        )
    })?;
    let Value::Object(obj) = v else {
        return Err(fail(
            None,
            None,
            format!("expected a JSON object, found {}", type_of(&v)),
        ));
    };
    // A report record: it has a trial and turns.
    let record = obj.contains_key("trial") && obj.contains_key("turns");
    let id = match (obj.get("id"), obj.get("trial")) {
        (_, Some(Value::String(t))) if record => t.clone(),
        (Some(Value::String(s)), _) if !s.trim().is_empty() => s.clone(),
        (Some(other), _) => {
            return Err(fail(
                None,
                Some("id"),
                format!("expected a non-empty string, found {other}"),
            ))
        }
        (None, _) => {
            return Err(fail(
                None,
                Some("id"),
                "every item needs an `id`, to name it in the report".into(),
            ))
        }
    };
    let fail = |field: Option<&str>, message: String| fail(Some(id.clone()), field, message);
    let label = match obj.get("label") {
        Some(Value::String(s)) if s == "pass" => true,
        Some(Value::String(s)) if s == "fail" => false,
        Some(other) => {
            return Err(fail(
                Some("label"),
                format!("expected \"pass\" or \"fail\", found {other}"),
            ))
        }
        None => {
            return Err(fail(
                Some("label"),
                "every item needs a person's verdict: \"label\": \"pass\" or \"fail\"".into(),
            ))
        }
    };
    let notes = match obj.get("notes") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(other) => {
            return Err(fail(
                Some("notes"),
                format!("expected a string, found {}", type_of(other)),
            ))
        }
    };
    let criteria_given = match obj.get("criteria") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) if !s.trim().is_empty() => Some(s.clone()),
        Some(other) => {
            return Err(fail(
                Some("criteria"),
                format!("expected what the reply must satisfy, as text; found {other}"),
            ))
        }
    };
    let (criteria, input, reply, conversation) = if record {
        from_record(&obj, criteria_given).map_err(|(field, m)| fail(Some(field), m))?
    } else {
        let criteria = criteria_given.ok_or_else(|| {
            fail(
                Some("criteria"),
                "every item needs its `criteria`: what the reply must satisfy".into(),
            )
        })?;
        let (input, reply, conversation) =
            conversation_of(&obj).map_err(|(field, m)| fail(Some(field), m))?;
        (criteria, input, reply, conversation)
    };
    Ok(LabelledItem {
        id,
        location,
        criteria,
        input,
        reply,
        conversation,
        label,
        notes,
    })
}

type Problem = (&'static str, String);

/// An item's `reply` (with its `input`), or its `conversation` (ending with the reply).
fn conversation_of(obj: &Map<String, Value>) -> Result<(String, String, Vec<Message>), Problem> {
    let input = match obj.get("input") {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(other) => {
            return Err((
                "input",
                format!("expected a string, found {}", type_of(other)),
            ))
        }
    };
    match (obj.get("reply"), obj.get("conversation")) {
        (Some(_), Some(_)) => Err((
            "conversation",
            "give `reply` or `conversation`, not both".into(),
        )),
        (Some(Value::String(reply)), None) => {
            let mut conversation = Vec::new();
            if !input.is_empty() {
                conversation.push(Message::user(input.clone()));
            }
            conversation.push(Message::assistant(Value::String(reply.clone()), None));
            Ok((input, reply.clone(), conversation))
        }
        (Some(other), None) => Err((
            "reply",
            format!("expected the reply as text, found {}", type_of(other)),
        )),
        (None, Some(Value::Array(messages))) => {
            let conversation: Vec<Message> =
                serde_json::from_value(Value::Array(messages.clone())).map_err(|e| {
                    (
                        "conversation",
                        format!("expected messages like {{\"role\": \"user\", \"content\": \"...\"}}: {e}"),
                    )
                })?;
            let Some(last) = conversation.last().filter(|m| m.role == "assistant") else {
                return Err((
                    "conversation",
                    "the conversation must end with the assistant's reply under judgment".into(),
                ));
            };
            let reply = last.text();
            let input = if input.is_empty() {
                conversation
                    .iter()
                    .rev()
                    .find(|m| m.role == "user")
                    .map(Message::text)
                    .unwrap_or_default()
            } else {
                input
            };
            Ok((input, reply, conversation))
        }
        (None, Some(other)) => Err((
            "conversation",
            format!("expected an array of messages, found {}", type_of(other)),
        )),
        (None, None) => Err((
            "reply",
            "every item needs the `reply` under judgment, or the `conversation` ending with it"
                .into(),
        )),
    }
}

/// A report record's judged check: its criteria and the conversation up to the turn it
/// judged.
fn from_record(
    obj: &Map<String, Value>,
    criteria_given: Option<String>,
) -> Result<(String, String, String, Vec<Message>), Problem> {
    let turns = obj.get("turns").and_then(Value::as_array).ok_or((
        "turns",
        "a report record's `turns` must be an array".to_string(),
    ))?;
    // Each judged check: its criteria and the turn it judged (final ones: the last).
    let mut judged: Vec<(String, usize)> = Vec::new();
    let criteria_of = |a: &Value| -> Option<String> {
        let t = a.get("type")?.as_str()?;
        if t != "agent" && t != "llm_judge" {
            return None;
        }
        a.pointer("/options/metadata/criteria")
            .or_else(|| a.get("prompt"))
            .or_else(|| a.get("value"))
            .and_then(Value::as_str)
            .map(str::to_string)
    };
    for (i, t) in turns.iter().enumerate() {
        for a in t
            .get("assertions")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if let Some(c) = criteria_of(a) {
                judged.push((c, i));
            }
        }
    }
    let last = turns.len().saturating_sub(1);
    for a in obj
        .get("final_assertions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        if let Some(c) = criteria_of(a) {
            judged.push((c, last));
        }
    }
    let (criteria, upto) = match (criteria_given, judged.as_slice()) {
        (Some(c), _) => {
            let upto = judged.iter().find(|(j, _)| *j == c).map_or(last, |(_, t)| *t);
            (c, upto)
        }
        (None, [(c, t)]) => (c.clone(), *t),
        (None, []) => {
            return Err((
                "criteria",
                "this record has no judged check (`agent` or `llm_judge`); add \"criteria\" to say what its reply must satisfy".into(),
            ))
        }
        (None, _) => {
            return Err((
                "criteria",
                format!(
                    "this record has {} judged checks; add \"criteria\" to say which one the label is for",
                    judged.len()
                ),
            ))
        }
    };
    if turns.is_empty() {
        return Err((
            "turns",
            "this record has no turns, so no reply to judge".into(),
        ));
    }
    let mut conversation = Vec::new();
    let (mut input, mut reply) = (String::new(), String::new());
    for t in &turns[..=upto] {
        input = t
            .get("input")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        let output = t.get("output").cloned().unwrap_or(Value::Null);
        reply = match &output {
            Value::String(s) => s.clone(),
            Value::Null => String::new(),
            other => other.to_string(),
        };
        conversation.push(Message::user(input.clone()));
        conversation.push(Message::assistant(output, None));
    }
    Ok((criteria, input, reply, conversation))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file of its own per test (tests run in parallel), removed when dropped.
    struct Scratch(std::path::PathBuf);

    impl Drop for Scratch {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn write(text: &str) -> (Scratch, std::path::PathBuf) {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let dir =
            std::env::temp_dir().join(format!("agentest-labels-{}-{nanos}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("labels.jsonl");
        std::fs::write(&p, text).unwrap();
        (Scratch(dir), p)
    }

    #[test]
    fn items_and_report_records_are_read() {
        let record = serde_json::json!({
            "id": "greet", "trial": "suite::greet", "status": "failed",
            "turns": [
                {"turn": 1, "input": "hi", "output": "Hello!", "assertions": [
                    {"type": "llm_judge", "prompt": "greets the user", "passed": true}
                ]},
                {"turn": 2, "input": "bye", "output": "ok", "assertions": []}
            ],
            "label": "pass"
        });
        let (_d, p) = write(&format!(
            "{}\n// a comment\n{}\n{record}\n",
            r#"{"id": "a", "criteria": "is polite", "input": "hi", "reply": "Go away.", "label": "fail", "notes": "rude"}"#,
            r#"{"id": "b", "criteria": "answers", "conversation": [{"role": "user", "content": "2+2?"}, {"role": "assistant", "content": "4"}], "label": "pass"}"#,
        ));
        let items = read_labels(&p).unwrap();
        assert_eq!(items.len(), 3);
        assert_eq!(items[0].reply, "Go away.");
        assert!(!items[0].label);
        assert_eq!(items[0].notes.as_deref(), Some("rude"));
        assert_eq!(items[1].input, "2+2?");
        assert_eq!(items[1].reply, "4");
        assert_eq!(items[2].id, "suite::greet");
        assert_eq!(items[2].criteria, "greets the user");
        assert_eq!(items[2].reply, "Hello!", "the turn its judged check judged");
        assert_eq!(items[2].conversation.len(), 2);
        assert_eq!(items[2].location.line, 4);
    }

    #[test]
    fn every_bad_line_is_named_with_its_field_and_fix() {
        let (_d, p) = write(concat!(
            "{\"id\": \"a\", \"criteria\": \"c\", \"reply\": \"r\", \"label\": \"yes\"}\n",
            "{\"id\": \"b\", \"reply\": \"r\", \"label\": \"pass\"}\n",
            "{\"id\": \"c\", \"criteria\": \"c\", \"label\": \"pass\"}\n",
            "not json\n",
            "{\"id\": \"d\", \"criteria\": \"c\", \"conversation\": [{\"role\": \"user\", \"content\": \"x\"}], \"label\": \"fail\"}\n",
            "{\"id\": \"e\", \"criteria\": \"c\", \"reply\": \"r\", \"label\": \"pass\"}\n",
            "{\"id\": \"e\", \"criteria\": \"c\", \"reply\": \"r\", \"label\": \"pass\"}\n",
        ));
        let errors: Vec<String> = read_labels(&p)
            .unwrap_err()
            .iter()
            .map(|e| e.to_string())
            .collect();
        let name = p.display().to_string();
        let want = [
            format!("{name}:1:1: field `label`: expected \"pass\" or \"fail\", found \"yes\""),
            format!("{name}:2:1: field `criteria`: every item needs its `criteria`"),
            format!("{name}:3:1: field `reply`: every item needs the `reply` under judgment"),
            format!("{name}:4:1: not JSON"),
            format!("{name}:5:1: field `conversation`: the conversation must end with the assistant's reply"),
            format!("{name}:7:1: field `id`: \"e\" is already the id of line 6"),
        ];
        assert_eq!(errors.len(), want.len(), "{errors:#?}");
        for (got, want) in errors.iter().zip(&want) {
            assert!(got.starts_with(want.as_str()), "{got}\n  wanted {want}");
        }
    }
}
