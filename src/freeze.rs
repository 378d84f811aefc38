//! `agentest freeze`: the transcript of a finished run (from a JSONL report) becomes a
//! static `turns` case, with the facts each reply established as assertions, so a
//! conversation that once found a bug becomes a regression test.

use std::path::Path;

use serde_json::{json, Map, Value};

use crate::case::{Case, Mode};
use crate::report::CaseReport;

/// Builds the frozen case from the original case and its report record.
pub fn freeze(case: &Case, record: &CaseReport) -> Result<Value, String> {
    if record.turns.is_empty() {
        return Err(format!(
            "the report's record of {} has no turns to freeze",
            record.trial
        ));
    }
    let raw = case.raw.as_object().cloned().unwrap_or_default();
    let mut frozen = Map::new();
    frozen.insert("id".into(), json!(format!("{}-frozen", case.id)));
    frozen.insert(
        "name".into(),
        json!(format!(
            "{} (frozen from a {} run)",
            case.display_name(),
            case.mode.name()
        )),
    );
    for key in [
        "agent", "options", "metadata", "user", "team", "tags", "timeout", "before", "after",
        "setup",
    ] {
        if let Some(v) = raw.get(key) {
            frozen.insert(key.into(), v.clone());
        }
    }
    let (checkpoints, forbidden): (Vec<_>, Vec<_>) = match &case.mode {
        Mode::Dynamic { checkpoints, .. } => checkpoints.iter().partition(|c| !c.forbidden),
        _ => (Vec::new(), Vec::new()),
    };
    let raw_checkpoints = raw
        .get("checkpoints")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let assertion_of = |id: &str| {
        raw_checkpoints
            .iter()
            .find(|c| c["id"] == id)
            .and_then(|c| {
                c.get("assertion")
                    .or_else(|| c.get("assert"))
                    .or_else(|| c.get("assertions"))
            })
            .cloned()
    };
    let mut turns = Vec::new();
    for (i, t) in record.turns.iter().enumerate() {
        if t.error.is_some() {
            break;
        }
        let mut checks: Vec<Value> = Vec::new();
        // What the run established at this turn: the checkpoints it reached...
        for c in &checkpoints {
            let reached_here = record
                .checkpoints
                .iter()
                .any(|r| r.id == c.id && r.reached_at_turn == Some(t.turn));
            if reached_here {
                if let Some(a) = assertion_of(&c.id) {
                    match a {
                        Value::Array(items) => checks.extend(items),
                        other => checks.push(other),
                    }
                }
            }
        }
        // ...the tools it called...
        for call in &t.tool_calls {
            let already = checks.iter().any(|a| {
                a["type"] == "tool_called"
                    && (a["name"] == call.name.as_str() || a["value"] == call.name.as_str())
            });
            if !already {
                checks.push(json!({"type": "tool_called", "name": call.name}));
            }
        }
        // ...and what must never happen, on every turn.
        for c in &forbidden {
            if let Some(a) = assertion_of(&c.id) {
                let items = match a {
                    Value::Array(items) => items,
                    other => vec![other],
                };
                for mut item in items {
                    if let Value::String(t) = &item {
                        item = json!({"type": t});
                    }
                    item["negate"] = json!(true);
                    checks.push(item);
                }
            }
        }
        let input = match (i, &case.mode) {
            (
                0,
                Mode::Dynamic {
                    input: Some(inp), ..
                },
            )
            | (0, Mode::Single { input: inp, .. })
                if inp.messages.len() > 1 =>
            {
                json!(inp.messages)
            }
            _ => json!(t.input),
        };
        let mut turn = Map::new();
        turn.insert("input".into(), input);
        if !checks.is_empty() {
            turn.insert("assert".into(), Value::Array(checks));
        }
        turns.push(Value::Object(turn));
    }
    frozen.insert("turns".into(), Value::Array(turns));
    Ok(Value::Object(frozen))
}

/// Finds a case's record in a JSONL report (the last one, if the report holds several runs).
pub fn find_record(report: &Path, trial: &str, id: &str) -> Result<CaseReport, String> {
    let text = std::fs::read_to_string(report)
        .map_err(|e| format!("failed to read the report {}: {e}", report.display()))?;
    let mut found = None;
    for (i, line) in text.lines().enumerate() {
        let v: Value = match serde_json::from_str(line) {
            Ok(v) => v,
            Err(e) => {
                return Err(format!(
                    "{}:{}: not a report line ({e})",
                    report.display(),
                    i + 1
                ))
            }
        };
        if v.get("type").is_some() {
            continue;
        }
        if v["trial"] == trial || (v["id"] == id && found.is_none()) {
            found =
                Some(serde_json::from_value::<CaseReport>(v).map_err(|e| {
                    format!("{}:{}: not a case record ({e})", report.display(), i + 1)
                })?);
        }
    }
    found.ok_or_else(|| {
        format!(
            "the report {} has no record of {trial}; run the suite with -o {} first",
            report.display(),
            report.display()
        )
    })
}
