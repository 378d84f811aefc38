//! Answering an `openai` agent's tool calls from its mocks.

use serde_json::{json, Value};

use crate::case::{Mock, MockAnswer};
use crate::errors::MockError;
use crate::llm::SeededRng;
use crate::util::compact;
use crate::util::json_subset;

impl Mock {
    fn matches(&self, name: &str, args: &Value) -> bool {
        crate::util::tool_name_matches(name, &self.method)
            && self
                .args
                .as_ref()
                .is_none_or(|a| crate::util::json_eq(a, args))
            && self.partial.as_ref().is_none_or(|p| json_subset(p, args))
            && self.input.as_ref().is_none_or(|p| json_subset(p, args))
            && self
                .matcher
                .as_ref()
                .is_none_or(|r| r.is_match(&args.to_string()))
    }
}

/// The mocks a case sees: its own first, then the agent's.
#[derive(Debug, Clone, Default)]
pub struct MockSet(pub Vec<Mock>);

impl MockSet {
    /// Answers a tool call: the first matching mock, after its delay; a drawn failure
    /// returns the mock's error (or a generic one). `Err` names the call and lists the
    /// mocks for that tool, because an unanswered call must fail the case, not guess.
    pub async fn answer(
        &self,
        name: &str,
        args: &Value,
        rng: &mut SeededRng,
    ) -> Result<(MockAnswer, String), MockError> {
        let Some(mock) = self.0.iter().find(|m| m.matches(name, args)) else {
            let mocks: Vec<String> = self
                .0
                .iter()
                .filter(|m| crate::util::tool_name_matches(name, &m.method))
                .map(|m| format!("  {} when {}", m.source, m.conditions))
                .collect();
            let name = name.to_string();
            let call = format!("{name}({})", compact(args));
            return Err(if mocks.is_empty() {
                MockError::NoMocks { name, call }
            } else {
                MockError::NoMatch { name, call, mocks }
            });
        };
        if let Some(d) = mock.delay {
            tokio::time::sleep(d).await;
        }
        let failed = match mock.probability {
            Some(p) => rng.next_f64() < p,
            None => mock.error.is_some(),
        };
        let answer = if failed {
            MockAnswer::Error(mock.error.clone().unwrap_or_else(|| {
                json!({"code": "MOCK_FAILURE", "message": format!("simulated failure of {name}")})
            }))
        } else {
            MockAnswer::Result(mock.response.clone())
        };
        Ok((answer, mock.source.clone()))
    }
}

// Mocks as a suite writes them (parsed by the source layer), answering calls.
#[cfg(test)]
mod tests {
    use serde_json::{json, Value};

    use super::MockSet;
    use crate::case::MockAnswer;
    use crate::errors::MockError;
    use crate::llm::SeededRng;
    use crate::source::parse_mocks;

    fn set(v: Value) -> MockSet {
        MockSet(parse_mocks(&v, "setup.mocks").unwrap())
    }

    fn run(
        s: &MockSet,
        name: &str,
        args: Value,
        rng: &mut SeededRng,
    ) -> Result<MockAnswer, MockError> {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
            .block_on(s.answer(name, &args, rng))
            .map(|(a, _)| a)
    }

    #[test]
    fn first_matching_mock_answers_in_order() {
        let s = set(json!([
            {"method": "search", "when": {"args": ["elizaos/eliza"]}, "response": [1]},
            {"method": "search", "when": {"partialArgs": {"repo": "x"}}, "response": [2]},
            {"method": "search", "when": {"matcher": "\"q\":\"a.c\""}, "response": [3]},
            {"method": "search", "response": [4]}
        ]));
        let mut rng = SeededRng::new(1, "t");
        assert_eq!(
            run(&s, "search", json!("elizaos/eliza"), &mut rng).unwrap(),
            MockAnswer::Result(json!([1]))
        );
        assert_eq!(
            run(&s, "search", json!({"repo": "x", "n": 1}), &mut rng).unwrap(),
            MockAnswer::Result(json!([2]))
        );
        assert_eq!(
            run(&s, "search", json!({"q": "abc"}), &mut rng).unwrap(),
            MockAnswer::Result(json!([3]))
        );
        assert_eq!(
            run(&s, "tools.search", json!({}), &mut rng).unwrap(),
            MockAnswer::Result(json!([4]))
        );
    }

    #[test]
    fn unmatched_calls_name_the_call_and_the_mocks() {
        let s = set(json!([{"method": "create", "when": {"args": {"a": 1}}, "response": {}}]));
        let mut rng = SeededRng::new(1, "t");
        let e = run(&s, "create", json!({"a": 2}), &mut rng).unwrap_err();
        assert_eq!(
            e,
            MockError::NoMatch {
                name: "create".into(),
                call: "create({\"a\":2})".into(),
                mocks: vec!["  setup.mocks[0] when args = {\"a\":1}".into()],
            }
        );
        let e = run(&s, "delete", json!({}), &mut rng).unwrap_err();
        assert_eq!(
            e,
            MockError::NoMocks {
                name: "delete".into(),
                call: "delete({})".into(),
            }
        );
    }

    #[test]
    fn failure_rate_is_reproducible() {
        let s = set(
            json!([{"method": "t", "response": "ok", "error": {"code": "E", "message": "down", "status": 503}, "metadata": {"probability": 0.5}}]),
        );
        let draws = |seed| {
            let mut rng = SeededRng::new(seed, "case");
            (0..40)
                .map(|_| {
                    matches!(
                        run(&s, "t", json!({}), &mut rng).unwrap(),
                        MockAnswer::Error(_)
                    )
                })
                .collect::<Vec<_>>()
        };
        let a = draws(9);
        assert_eq!(a, draws(9));
        let failures = a.iter().filter(|f| **f).count();
        assert!((10..=30).contains(&failures), "{failures}");
    }
}
