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
