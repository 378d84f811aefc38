//! EvalStudio's `evaluateCriteria`: a judge on a model reads the conversation and says
//! whether the success criteria and the failure criteria are met, how sure it is, and
//! why. Its answer is data: anything but that JSON, complete and in range, is asked for
//! again once, then an error that shows it.

use serde_json::{json, Value};
use tokio::time::Instant;

use crate::case::{Criteria, ModelSettings};
use crate::errors::StepError;
use crate::llm::{Endpoint, ModelCalls};
use crate::protocol::{Message, Role};
use crate::record::CriteriaEvaluation;
use crate::run::roles::ask::{ask, Answer, Question, Respondent};
use crate::util::value_text;

/// The judge's instructions.
const SYSTEM: &str = "You are a strict, fair evaluator of a conversation between a user and an AI assistant. \
Decide whether the success criteria are met by the conversation so far, and whether the failure criteria are met. \
Answer with JSON only: {\"successMet\": true or false, \"failureMet\": true or false, \"confidence\": a number from 0 to 1, \"reasoning\": \"why, in one or two sentences\"}.";

/// The example texts of the instructions: an answer that repeats them judged nothing.
const EXAMPLE_TEXTS: [&str; 2] = ["why, in one or two sentences", "a number from 0 to 1"];

/// What the judge is asked: the criteria and the conversation.
fn prompt(criteria: &Criteria, conversation: &[Message]) -> String {
    let mut p = String::new();
    let none = "(none given)";
    p.push_str(&format!(
        "Success criteria: {}\n",
        criteria.success.as_deref().unwrap_or(none)
    ));
    p.push_str(&format!(
        "Failure criteria: {}\n",
        criteria.failure.as_deref().unwrap_or(none)
    ));
    p.push_str("\nConversation:\n");
    for m in conversation.iter().filter(|m| m.role != "system") {
        p.push_str(&format!("{}: {}\n", m.role, m.text()));
    }
    p
}

/// The answer's schema, for endpoints that take one.
fn schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "successMet": {"type": "boolean"},
            "failureMet": {"type": "boolean"},
            "confidence": {"type": "number", "minimum": 0, "maximum": 1},
            "reasoning": {"type": "string"}
        },
        "required": ["successMet", "failureMet", "confidence", "reasoning"]
    })
}

/// Reads an evaluation: JSON (possibly as text) with booleans `successMet` and
/// `failureMet`, a `confidence` from 0 to 1 and a non-empty `reasoning`. `Err` says why
/// the answer is none.
pub(crate) fn read_evaluation(answer: &Answer) -> Result<CriteriaEvaluation, String> {
    if answer.truncated {
        return Err("the answer was cut off at the token limit".into());
    }
    let parsed = match &answer.value {
        Value::String(s) => serde_json::from_str::<Value>(s.trim())
            .map_err(|_| "the answer is not JSON".to_string())?,
        other => other.clone(),
    };
    let Value::Object(o) = &parsed else {
        return Err("the answer is not a JSON object".into());
    };
    let flag = |k: &str| {
        o.get(k)
            .and_then(Value::as_bool)
            .ok_or_else(|| format!("it has no boolean `{k}`"))
    };
    let success_met = flag("successMet")?;
    let failure_met = flag("failureMet")?;
    let confidence = match o.get("confidence") {
        Some(Value::Number(n)) => match n.as_f64() {
            Some(c) if (0.0..=1.0).contains(&c) => c,
            _ => return Err(format!("its `confidence` {n} is not between 0 and 1")),
        },
        Some(other) => {
            return Err(format!(
                "its `confidence` {other} is not a number between 0 and 1"
            ))
        }
        None => return Err("it has no `confidence`".into()),
    };
    let reasoning = o
        .get("reasoning")
        .map(value_text)
        .filter(|r| !r.trim().is_empty())
        .ok_or("it gives no `reasoning`")?;
    if EXAMPLE_TEXTS
        .iter()
        .any(|e| reasoning.trim().eq_ignore_ascii_case(e))
    {
        return Err("it repeats the instructions' example text instead of judging".into());
    }
    Ok(CriteriaEvaluation {
        success_met,
        failure_met,
        confidence,
        reasoning,
    })
}

/// Evaluates `conversation` against `criteria` with the model at `endpoint`, its calls
/// recorded in `calls` (the case's cassette).
pub(crate) async fn evaluate(
    endpoint: &Endpoint,
    calls: &ModelCalls,
    criteria: &Criteria,
    conversation: &[Message],
    model: &ModelSettings,
    deadline: Instant,
) -> Result<CriteriaEvaluation, StepError> {
    let text = prompt(criteria, conversation);
    let question = Question {
        instructions: SYSTEM.to_string(),
        messages: vec![Message::user(text.clone())],
        input: text,
        metadata: json!({"test_mode": "criteria", "success_criteria": criteria.success, "failure_criteria": criteria.failure}),
        repair: "That was not an evaluation. Answer again with JSON only: {\"successMet\": bool, \"failureMet\": bool, \"confidence\": number from 0 to 1, \"reasoning\": string}".into(),
        wanted: "an evaluation {successMet, failureMet, confidence, reasoning}",
        schema: schema(),
        schema_name: "criteria_evaluation",
        model: model.clone(),
    };
    let mut respondent = Respondent::Model {
        endpoint,
        calls,
        role: Role::Judge,
        deadline,
    };
    ask(&mut respondent, "judge", &question, read_evaluation).await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(v: Value) -> Answer {
        Answer {
            value: v,
            truncated: false,
        }
    }

    #[test]
    fn evaluations_are_read_strictly() {
        let ok = read_evaluation(&answer(json!(
            "{\"successMet\": true, \"failureMet\": false, \"confidence\": 0.8, \"reasoning\": \"confirmed\"}"
        )))
        .unwrap();
        assert!(ok.success_met && !ok.failure_met);
        assert_eq!(ok.confidence, 0.8);
        let why = |v: Value| read_evaluation(&answer(v)).unwrap_err();
        assert_eq!(why(json!("sure, it worked")), "the answer is not JSON");
        assert_eq!(
            why(
                json!({"successMet": "yes", "failureMet": false, "confidence": 1, "reasoning": "r"})
            ),
            "it has no boolean `successMet`"
        );
        assert_eq!(
            why(
                json!({"successMet": true, "failureMet": false, "confidence": 2, "reasoning": "r"})
            ),
            "its `confidence` 2 is not between 0 and 1"
        );
        assert_eq!(
            why(json!({"successMet": true, "failureMet": false, "confidence": 0.5})),
            "it gives no `reasoning`"
        );
        assert_eq!(
            why(
                json!({"successMet": true, "failureMet": false, "confidence": 0.5, "reasoning": "Why, in one or two sentences"})
            ),
            "it repeats the instructions' example text instead of judging"
        );
        let cut = Answer {
            value: json!("{\"successMet\": true"),
            truncated: true,
        };
        assert_eq!(
            read_evaluation(&cut).unwrap_err(),
            "the answer was cut off at the token limit"
        );
    }
}
