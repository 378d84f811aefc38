//! An execution's runs in other shapes: EvalStudio's `runs.json` (so its UI can show
//! what agentest ran) and agentest's JSONL report.

use serde_json::{json, Map, Value};

use super::model::Stored;

/// EvalStudio's `Run[]` as its filesystem store writes it: keys it would leave out are
/// left out, not `null`; ids are opaque strings.
pub(crate) fn evalstudio(stored: &Stored) -> Value {
    let runs: Vec<Value> = stored
        .runs
        .iter()
        .zip(&stored.cases)
        .map(|(run, case)| {
            let mut r = Map::new();
            r.insert("id".into(), json!(run.id.to_string()));
            // A case read from an EvalStudio project points at its records; any other
            // names its trial and persona where the ids would be.
            let ids = case.evalstudio.clone().unwrap_or_default();
            if let Some(e) = &ids.eval_id {
                r.insert("evalId".into(), json!(e));
            }
            r.insert(
                "scenarioId".into(),
                json!(ids.scenario_id.as_deref().unwrap_or(&case.trial)),
            );
            if let Some(p) = ids.persona_id.as_ref().or(run.persona.as_ref()) {
                r.insert("personaId".into(), json!(p));
            }
            if let Some(c) = &ids.connector_id {
                r.insert("connectorId".into(), json!(c));
            }
            r.insert("executionId".into(), json!(stored.execution));
            r.insert("status".into(), json!(run.status));
            if let Some(t) = &run.started_at {
                r.insert("startedAt".into(), json!(t));
                r.insert("createdAt".into(), json!(t));
            }
            if let Some(t) = &run.completed_at {
                r.insert("completedAt".into(), json!(t));
                r.insert("updatedAt".into(), json!(t));
            }
            let messages: Value = run
                .messages
                .as_deref()
                .and_then(|m| serde_json::from_str(m).ok())
                .unwrap_or_else(|| json!([]));
            let count = messages.as_array().map_or(0, Vec::len);
            r.insert("messages".into(), messages);
            if run.status == "completed" {
                let latency = run.latency_ms.unwrap_or(0);
                r.insert("latencyMs".into(), json!(latency));
                let turns = case.turns.len().max(1) as i64;
                let mut output = json!({"avgLatencyMs": latency / turns, "totalLatencyMs": latency, "messageCount": count});
                // A case with criteria: its last evaluation, as EvalStudio keeps it.
                if let Some(e) = case.turns.iter().rev().find_map(|t| t.criteria.as_ref()) {
                    output["evaluation"] = json!(e);
                }
                if case.termination == Some(crate::record::Termination::MaxMessages) {
                    output["maxMessagesReached"] = json!(true);
                }
                r.insert("output".into(), output);
                let mut result = Map::new();
                // A skipped case has no verdict: EvalStudio's result needs one.
                result.insert("success".into(), json!(run.success.unwrap_or(false)));
                if let Some(score) = case.result.as_ref().and_then(|r| r.score) {
                    result.insert("score".into(), json!(score));
                }
                if let Some(reason) = &run.reason {
                    result.insert("reason".into(), json!(reason));
                }
                r.insert("result".into(), Value::Object(result));
            }
            if let Some(e) = &run.error {
                r.insert("error".into(), json!(e));
            }
            r.insert("agentest".into(), json!({"caseId": run.case_id, "verdict": case.status}));
            Value::Object(r)
        })
        .collect();
    Value::Array(runs)
}
