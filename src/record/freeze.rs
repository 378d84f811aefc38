//! `agentest freeze`: the transcript of a finished run (from a JSONL report) becomes a
//! static `turns` case, with the facts each reply established as assertions, so a
//! conversation that once found a bug becomes a regression test.

use std::path::Path;

use serde_json::{json, Map, Value};

use crate::case::{Case, Checkpoint, Mode};
use crate::errors::FreezeError;
use crate::record::{CaseReport, TurnReport};

/// Builds the frozen case from the original case and its report record.
pub(crate) fn freeze(case: &Case, record: &CaseReport) -> Result<Value, FreezeError> {
    if record.turns.is_empty() {
        return Err(FreezeError::NoTurns {
            trial: record.trial.clone(),
        });
    }
    let raw = match case.raw.value() {
        Value::Object(m) => m,
        _ => Map::new(),
    };
    let mut frozen = frozen_head(case, &raw);
    let (checkpoints, forbidden): (Vec<_>, Vec<_>) = match &case.mode {
        Mode::Dynamic { checkpoints, .. } => checkpoints.iter().partition(|c| !c.forbidden),
        _ => (Vec::new(), Vec::new()),
    };
    let raw_checkpoints = raw
        .get("checkpoints")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let established = Established {
        record,
        checkpoints,
        forbidden,
        raw_checkpoints,
    };
    let mut turns = Vec::new();
    for (i, t) in record.turns.iter().enumerate() {
        if t.error.is_some() {
            break;
        }
        let checks = established.checks(t);
        let mut turn = Map::new();
        turn.insert("input".into(), turn_input(case, i, t));
        if !checks.is_empty() {
            turn.insert("assert".into(), Value::Array(checks));
        }
        turns.push(Value::Object(turn));
    }
    frozen.insert("turns".into(), Value::Array(turns));
    Ok(Value::Object(frozen))
}

/// The frozen case's id and name, and what it keeps of the original besides its turns.
fn frozen_head(case: &Case, raw: &Map<String, Value>) -> Map<String, Value> {
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
    frozen
}

/// What the run established, to be asserted turn by turn.
struct Established<'a> {
    record: &'a CaseReport,
    /// The checkpoints to reach.
    checkpoints: Vec<&'a Checkpoint>,
    /// The checkpoints that must never be reached.
    forbidden: Vec<&'a Checkpoint>,
    /// The case file's checkpoints, as written: their assertions are copied verbatim.
    raw_checkpoints: Vec<Value>,
}

impl Established<'_> {
    /// A checkpoint's assertion (or assertions) as the case file wrote it.
    fn assertion_of(&self, id: &str) -> Option<Value> {
        self.raw_checkpoints
            .iter()
            .find(|c| c["id"] == id)
            .and_then(|c| {
                c.get("assertion")
                    .or_else(|| c.get("assert"))
                    .or_else(|| c.get("assertions"))
            })
            .cloned()
    }

    /// The assertions for one turn.
    fn checks(&self, t: &TurnReport) -> Vec<Value> {
        let mut checks: Vec<Value> = Vec::new();
        // What the run established at this turn: the checkpoints it reached...
        for c in &self.checkpoints {
            let reached_here = self
                .record
                .checkpoints
                .iter()
                .any(|r| r.id == c.id && r.reached_at_turn == Some(t.turn));
            if reached_here {
                if let Some(a) = self.assertion_of(&c.id) {
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
        for c in &self.forbidden {
            if let Some(a) = self.assertion_of(&c.id) {
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
        checks
    }
}

/// A turn's input: the first turn keeps a seed conversation of several messages whole.
fn turn_input(case: &Case, i: usize, t: &TurnReport) -> Value {
    match (i, &case.mode) {
        (
            0,
            Mode::Dynamic {
                input: Some(inp), ..
            }
            | Mode::Criteria {
                input: Some(inp), ..
            },
        )
        | (0, Mode::Single { input: inp, .. })
            if inp.messages.len() > 1 =>
        {
            json!(inp.messages)
        }
        _ => json!(t.input),
    }
}

/// Finds a case's record in a JSONL report: the last record whose location is the
/// case's suite file (a report may hold several runs, started from any folder), else of
/// its trial; failing that, the one record with its id, when only one has it.
pub(crate) fn find_record(
    report: &Path,
    suite_file: &Path,
    trial: &str,
    id: &str,
) -> Result<CaseReport, FreezeError> {
    let same_file = |location: &str| {
        // `file:line:column`
        let file = location.rsplitn(3, ':').nth(2).unwrap_or_default();
        let a = std::fs::canonicalize(file).ok();
        a.is_some() && a == std::fs::canonicalize(suite_file).ok()
    };
    let text = std::fs::read_to_string(report).map_err(|source| FreezeError::Read {
        path: report.to_path_buf(),
        source,
    })?;
    let mut by_trial = None;
    let mut by_id = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let v: Value = match serde_json::from_str(line) {
            Ok(v) => v,
            Err(source) => {
                return Err(FreezeError::NotJson {
                    path: report.to_path_buf(),
                    line: i + 1,
                    source,
                })
            }
        };
        if v.get("type").is_some() {
            continue;
        }
        let matches_trial =
            (v["id"] == id && v["location"].as_str().is_some_and(same_file)) || v["trial"] == trial;
        let matches_id = v["id"] == id;
        if !(matches_trial || matches_id) {
            continue;
        }
        let record =
            serde_json::from_value::<CaseReport>(v).map_err(|source| FreezeError::NotRecord {
                path: report.to_path_buf(),
                line: i + 1,
                source,
            })?;
        if matches_trial {
            by_trial = Some(record);
        } else if !by_id.iter().any(|r: &CaseReport| r.trial == record.trial) {
            by_id.push(record);
        }
    }
    if let Some(r) = by_trial {
        return Ok(r);
    }
    match by_id.len() {
        0 => Err(FreezeError::NoRecord {
            path: report.to_path_buf(),
            trial: trial.to_string(),
        }),
        1 => Ok(by_id.remove(0)),
        _ => Err(FreezeError::Ambiguous {
            path: report.to_path_buf(),
            trial: trial.to_string(),
            id: id.to_string(),
            trials: by_id.into_iter().map(|r| r.trial).collect(),
        }),
    }
}
