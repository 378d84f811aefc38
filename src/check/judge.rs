//! Judgments: what a judge is asked and what it answers (`{passed, score, reason,
//! suggestions}`). A judge that cannot answer is an error, never a pass or a fail; the
//! judges themselves run in [`crate::run::roles::judge`].

use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use crate::protocol::Message;
use crate::util::{clip, compact, value_text};

/// A judge's verdict.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct JudgeVerdict {
    /// Whether the reply meets the criteria; `None` when the judge could not decide
    /// (its reason says why).
    pub passed: Option<bool>,
    /// A score from 0 to 1, when the judge gives one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub score: Option<f64>,
    /// Why.
    #[serde(default)]
    pub reason: String,
    /// How the reply could be better.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub suggestions: Vec<String>,
}

/// What a judge is asked.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct JudgeRequest {
    /// What the reply must satisfy.
    pub criteria: String,
    /// The reply under judgment.
    pub output: String,
    /// The user message it answers.
    pub input: String,
    /// The conversation, ending with the reply.
    pub conversation: Vec<Message>,
    /// Other metadata from the assertion (`expected_intent`, `tone`, ...).
    pub metadata: Map<String, Value>,
    /// ElizaOS's `expected`, `capabilities`, `json_schema`.
    pub expected: Option<Value>,
    /// Capabilities the reply should show.
    pub capabilities: Vec<String>,
    /// A JSON schema the verdict must follow (extra fields beyond the contract).
    pub json_schema: Option<Value>,
    /// The built-in judge's model settings for this judgment (endpoint, model,
    /// temperature, ...); the endpoint's own where unset.
    pub model: crate::case::ModelSettings,
    /// The tools the agent called for the reply (its own list and those read from its
    /// traces), so a judge can check what the agent did, not only what it said. Given
    /// to the judge when the agent's traces are read.
    pub tool_calls: Vec<crate::protocol::ToolCall>,
    /// A short summary of the spans the agent exported for the reply, when its traces
    /// are read.
    pub trace: Option<String>,
}

impl JudgeRequest {
    /// A request to judge `output` (the reply) against `criteria`; set the other fields
    /// (conversation, metadata, schema, ...) on the value it returns.
    pub fn new(criteria: impl Into<String>, output: impl Into<String>) -> Self {
        JudgeRequest {
            criteria: criteria.into(),
            output: output.into(),
            ..JudgeRequest::default()
        }
    }

    /// The validator contract's input, as an agent judge receives it in `metadata`.
    pub fn to_json(&self) -> Value {
        let mut v = self.metadata.clone();
        v.insert("test_mode".into(), json!("validator"));
        v.insert("criteria".into(), json!(self.criteria));
        v.insert("output".into(), json!(self.output));
        v.insert("input".into(), json!(self.input));
        v.insert("conversation".into(), json!(self.conversation));
        if let Some(e) = &self.expected {
            v.insert("expected".into(), e.clone());
        }
        if !self.capabilities.is_empty() {
            v.insert("capabilities".into(), json!(self.capabilities));
        }
        Value::Object(v)
    }
}

const SYSTEM: &str = "You are a strict, fair evaluator of an AI assistant's reply. Decide whether the reply meets the criteria, judging only what the reply says. Answer with JSON only: {\"passed\": true or false, \"score\": a number from 0 to 1, \"reason\": \"one or two sentences\", \"suggestions\": [\"how the reply could be better\"]}. If the conversation does not let you decide, answer \"passed\": null and say in \"reason\" what is missing.";

impl JudgeRequest {
    /// The judge's instructions.
    pub(crate) fn instructions(&self) -> String {
        SYSTEM.to_string()
    }

    /// What the judge is asked: the criteria, what goes with them, the conversation and
    /// the reply under judgment.
    pub(crate) fn prompt(&self) -> String {
        let mut prompt = format!("Criteria: {}\n", self.criteria);
        for (k, v) in &self.metadata {
            prompt.push_str(&format!("{k}: {}\n", value_text(v)));
        }
        if let Some(e) = &self.expected {
            prompt.push_str(&format!("Expected: {}\n", value_text(e)));
        }
        if !self.capabilities.is_empty() {
            prompt.push_str(&format!(
                "Capabilities to show: {}\n",
                self.capabilities.join(", ")
            ));
        }
        if let Some(schema) = &self.json_schema {
            prompt.push_str(&format!(
                "Your JSON must also follow this schema: {schema}\n"
            ));
        }
        prompt.push_str("\nConversation:\n");
        for m in &self.conversation {
            prompt.push_str(&format!("{}: {}\n", m.role, m.text()));
        }
        if !self.tool_calls.is_empty() {
            prompt.push_str("\nTools the assistant called for this reply:\n");
            for c in &self.tool_calls {
                let mut line = format!("- {}({})", c.name, compact(&c.arguments_json()));
                if let Some(r) = &c.result {
                    line.push_str(&format!(" -> {}", clip(&compact(r))));
                }
                if let Some(e) = &c.error {
                    line.push_str(&format!(" failed: {}", clip(&value_text(e))));
                }
                prompt.push_str(&line);
                prompt.push('\n');
            }
        }
        if let Some(trace) = &self.trace {
            prompt.push_str(&format!(
                "\nWhat the assistant's traces show for this reply:\n{trace}\n"
            ));
        }
        prompt.push_str(&format!("\nThe reply to judge:\n{}\n", self.output));
        prompt
    }
}

/// The JSON schema of a verdict, the judge's answer.
fn verdict_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "passed": {"type": ["boolean", "null"]},
            "score": {"type": "number", "minimum": 0, "maximum": 1},
            "reason": {"type": "string"},
            "suggestions": {"type": "array", "items": {"type": "string"}}
        },
        "required": ["passed", "reason"]
    })
}

impl JudgeRequest {
    /// The schema of the answer: a verdict, with the properties and requirements of the
    /// assertion's `json_schema` added (a verdict's own properties win).
    pub(crate) fn answer_schema(&self) -> Value {
        let mut schema = verdict_schema();
        let Some(extra) = &self.json_schema else {
            return schema;
        };
        if let (Some(Value::Object(props)), Value::Object(mine)) =
            (extra.get("properties"), &mut schema["properties"])
        {
            for (k, v) in props {
                mine.entry(k.clone()).or_insert_with(|| v.clone());
            }
        }
        if let (Some(Value::Array(req)), Value::Array(mine)) =
            (extra.get("required"), &mut schema["required"])
        {
            for r in req {
                if !mine.contains(r) {
                    mine.push(r.clone());
                }
            }
        }
        schema
    }

    /// Reads a judge's answer: a verdict (see [`read_verdict`]) that also follows the
    /// assertion's `json_schema`, when it has one (merged into the verdict's schema, as
    /// [`JudgeRequest::answer_schema`] sends it).
    pub(crate) fn read_answer(&self, v: &Value) -> Result<JudgeVerdict, String> {
        let verdict = read_verdict(v)?;
        if self.json_schema.is_some() {
            let schema = &self.answer_schema();
            let parsed = match v {
                Value::String(s) => serde_json::from_str(s.trim()).unwrap_or(Value::Null),
                other => other.clone(),
            };
            let validator = jsonschema::validator_for(schema).map_err(|e| {
                format!("the assertion's `json_schema` is not a valid JSON Schema: {e}")
            })?;
            let problems: Vec<String> = validator
                .iter_errors(&parsed)
                .take(3)
                .map(|e| {
                    let at = e.instance_path().to_string();
                    if at.is_empty() {
                        e.to_string()
                    } else {
                        format!("{at}: {e}")
                    }
                })
                .collect();
            if !problems.is_empty() {
                return Err(format!(
                    "it does not follow the assertion's `json_schema` ({})",
                    problems.join("; ")
                ));
            }
        }
        Ok(verdict)
    }
}

/// The example texts of the judge's instructions: an answer that repeats them has not
/// judged anything.
const EXAMPLE_TEXTS: [&str; 5] = [
    "one or two sentences",
    "how the reply could be better",
    "a number from 0 to 1",
    // The request to answer again, given back.
    "not a verdict",
    "that was not a verdict",
];

/// Reads a verdict: JSON (possibly as text) with a boolean `passed` (or `pass`), or
/// `null` for a judge that cannot decide, a `score` from 0 to 1 when there is one, and
/// a non-empty `reason`. `Err` says why the answer is no verdict: not JSON, no
/// `passed`, a score out of range, no reason, or the prompt's own example text (or the
/// request to answer again) given back.
pub(crate) fn read_verdict(v: &Value) -> Result<JudgeVerdict, String> {
    let parsed = match v {
        Value::String(s) => serde_json::from_str::<Value>(s.trim())
            .map_err(|_| "the answer is not JSON".to_string())?,
        other => other.clone(),
    };
    if !parsed.is_object() {
        return Err("the answer is not a JSON object".into());
    }
    // `null` is an answer ("cannot decide"); a missing `passed` is not.
    let passed = match parsed.get("passed").or_else(|| parsed.get("pass")) {
        Some(Value::Bool(b)) => Some(*b),
        Some(Value::Null) => None,
        _ => return Err("it has no boolean `passed` (nor `null` for undecided)".into()),
    };
    let score = match parsed.get("score") {
        None | Some(Value::Null) => None,
        Some(Value::Number(n)) => match n.as_f64() {
            Some(s) if (0.0..=1.0).contains(&s) => Some(s),
            _ => return Err(format!("its `score` {n} is not between 0 and 1")),
        },
        Some(other) => {
            return Err(format!(
                "its `score` {other} is not a number between 0 and 1"
            ))
        }
    };
    // A verdict says why: a bare `passed` cannot be audited.
    let reason = parsed
        .get("reason")
        .map(value_text)
        .filter(|r| !r.trim().is_empty())
        .ok_or("it gives no `reason`")?;
    let suggestions: Vec<String> = match parsed.get("suggestions") {
        Some(Value::Array(items)) => items.iter().map(value_text).collect(),
        Some(Value::String(s)) if !s.is_empty() => vec![s.clone()],
        _ => Vec::new(),
    };
    let echoed = std::iter::once(&reason).chain(&suggestions).any(|t| {
        EXAMPLE_TEXTS
            .iter()
            .any(|e| t.trim().eq_ignore_ascii_case(e))
    });
    if echoed {
        return Err("it repeats the instructions' example text instead of judging".into());
    }
    Ok(JudgeVerdict {
        passed,
        score,
        reason,
        suggestions,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_traced_turns_judge_is_told_the_tools_and_the_spans() {
        let mut request = JudgeRequest::new("books the room", "Booked.");
        let plain = request.prompt();
        assert!(!plain.contains("Tools the assistant called"), "{plain}");
        let mut call = crate::protocol::ToolCall::new("book", json!({"room": 12}));
        call.result = Some(json!({"ok": true}));
        request.tool_calls = vec![call];
        request.trace = Some("invoke_agent (40 ms)\n  execute_tool book (12 ms)\n".into());
        let prompt = request.prompt();
        assert!(
            prompt.contains(
                "Tools the assistant called for this reply:\n- book({\"room\":12}) -> {\"ok\":true}\n"
            ),
            "{prompt}"
        );
        assert!(
            prompt.contains("What the assistant's traces show for this reply:\ninvoke_agent (40 ms)\n  execute_tool book (12 ms)\n"),
            "{prompt}"
        );
        assert!(
            prompt.ends_with("The reply to judge:\nBooked.\n"),
            "{prompt}"
        );
    }

    #[test]
    fn verdicts_are_read_from_json_or_text() {
        let v = read_verdict(&json!("{\"passed\": false, \"score\": 0.2, \"reason\": \"rude\", \"suggestions\": [\"be polite\"]}")).unwrap();
        assert_eq!(v.passed, Some(false));
        assert_eq!(v.reason, "rude");
        assert_eq!(v.suggestions, vec!["be polite"]);
        assert_eq!(
            read_verdict(&json!({"pass": true, "reason": "ok"}))
                .unwrap()
                .passed,
            Some(true)
        );
        let undecided =
            read_verdict(&json!({"passed": null, "reason": "the reply is cut off"})).unwrap();
        assert_eq!(undecided.passed, None);
        assert_eq!(
            read_verdict(&json!({"passed": null})).unwrap_err(),
            "it gives no `reason`",
            "an undecided judge must say why"
        );
        assert_eq!(
            read_verdict(&json!({"reason": "fine"})).unwrap_err(),
            "it has no boolean `passed` (nor `null` for undecided)"
        );
        assert_eq!(
            read_verdict(&json!({"passed": true})).unwrap_err(),
            "it gives no `reason`"
        );
        assert_eq!(
            read_verdict(&json!({"passed": true, "reason": " "})).unwrap_err(),
            "it gives no `reason`"
        );
        assert_eq!(
            read_verdict(&json!({"passed": false, "reason": "Not a verdict"})).unwrap_err(),
            "it repeats the instructions' example text instead of judging"
        );
        assert_eq!(
            read_verdict(&json!("looks good to me")).unwrap_err(),
            "the answer is not JSON"
        );
        assert_eq!(
            read_verdict(&json!({"passed": "yes"})).unwrap_err(),
            "it has no boolean `passed` (nor `null` for undecided)"
        );
        assert_eq!(
            read_verdict(&json!({"passed": true, "score": 7})).unwrap_err(),
            "its `score` 7 is not between 0 and 1"
        );
        assert!(read_verdict(&json!({"passed": true, "score": "a number from 0 to 1"})).is_err());
        assert_eq!(
            read_verdict(&json!({"passed": true, "reason": "One or two sentences"})).unwrap_err(),
            "it repeats the instructions' example text instead of judging"
        );
    }

    /// The ElizaOS example: the verdict must also carry `judgment`, `confidence` and
    /// `reasoning` as the assertion's schema says.
    #[test]
    fn an_assertion_schema_extends_the_verdict_and_is_enforced() {
        let request = JudgeRequest {
            json_schema: Some(json!({
                "type": "object",
                "properties": {
                    "judgment": {"type": "string", "enum": ["yes", "no"]},
                    "confidence": {"type": "number", "minimum": 0, "maximum": 1},
                    "passed": {"type": "string"}
                },
                "required": ["judgment", "confidence"]
            })),
            ..JudgeRequest::default()
        };
        let schema = request.answer_schema();
        assert_eq!(
            schema["properties"]["passed"]["type"],
            json!(["boolean", "null"]),
            "a verdict's own properties win"
        );
        assert_eq!(
            schema["properties"]["judgment"]["enum"],
            json!(["yes", "no"])
        );
        assert_eq!(
            schema["required"],
            json!(["passed", "reason", "judgment", "confidence"])
        );
        let ok = json!({"passed": true, "reason": "r", "judgment": "yes", "confidence": 0.9});
        assert_eq!(request.read_answer(&ok).unwrap().passed, Some(true));
        let why = request
            .read_answer(&json!("{\"passed\": true, \"reason\": \"r\", \"judgment\": \"maybe\", \"confidence\": 0.9}"))
            .unwrap_err();
        assert!(
            why.starts_with("it does not follow the assertion's `json_schema` (/judgment: "),
            "{why}"
        );
        assert!(why.contains("maybe"), "{why}");
        let why = request
            .read_answer(&json!({"passed": true, "reason": "r", "judgment": "no"}))
            .unwrap_err();
        assert!(why.contains("confidence"), "{why}");
    }
}
