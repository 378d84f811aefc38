//! A list of checks into the report's verdicts: every one evaluated, so the report shows
//! each, and the first that could not be evaluated kept as the error.

use serde_json::{Map, Value};

use crate::case::Assertion;
use crate::check::{evaluate, EvalEnv, Subject};
use crate::errors::StepError;
use crate::record::AssertionReport;

/// Evaluates every assertion (all of them, so the report shows each verdict).
/// The second value is set when one could not be evaluated.
pub(crate) async fn check_all(
    list: &[Assertion],
    subject: Subject<'_>,
    env: &EvalEnv<'_>,
) -> (Vec<AssertionReport>, Option<StepError>) {
    let mut out = Vec::with_capacity(list.len());
    let mut broken = None;
    for a in list {
        let mut spec = match a.raw.value() {
            Value::Object(m) => m,
            _ => Map::new(),
        };
        // A custom `message` is part of the verdict's message; one key, not two.
        spec.remove("message");
        match evaluate(a, subject, env).await {
            Ok(v) => {
                if let Some(e) = v.broken {
                    broken.get_or_insert(e);
                }
                out.push(AssertionReport {
                    spec,
                    passed: v.passed,
                    message: v.detail.unwrap_or_else(|| v.label.clone()),
                    label: v.label,
                    judgment: v.judgment,
                })
            }
            Err(e) => {
                out.push(AssertionReport {
                    spec,
                    passed: Some(false),
                    label: a.type_name().to_string(),
                    message: e.to_string(),
                    judgment: None,
                });
                broken.get_or_insert(e);
            }
        }
    }
    (out, broken)
}

/// The first failing verdict of a list, as `<at>: <label>: <message>`.
pub(crate) fn first_failure(at: &str, verdicts: &[AssertionReport]) -> Option<String> {
    verdicts
        .iter()
        .find(|a| a.failed())
        .map(|a| format!("{at}: {}: {}", a.label, a.message))
}

/// The first inconclusive verdict of a list, as `<at>: <label>: <message>`.
pub(crate) fn first_inconclusive(at: &str, verdicts: &[AssertionReport]) -> Option<String> {
    verdicts
        .iter()
        .find(|a| a.inconclusive())
        .map(|a| format!("{at}: {}: {}", a.label, a.message))
}
