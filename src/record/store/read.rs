//! Reading the store: the runs that match a filter, one run with its record, and
//! deleting runs.

use rusqlite::{params_from_iter, Connection, OptionalExtension, Row};

/// The seed's run statuses.
pub(crate) const LIFECYCLE: [&str; 5] = ["queued", "pending", "running", "completed", "error"];
/// agentest's verdicts, also accepted by `--status`.
pub(crate) const VERDICTS: [&str; 5] = ["passed", "failed", "error", "skipped", "timeout"];

/// One stored run, as `runs list` shows it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RunRow {
    pub(crate) id: i64,
    pub(crate) execution: i64,
    pub(crate) trial: String,
    pub(crate) status: String,
    pub(crate) verdict: Option<String>,
    pub(crate) started_at: Option<String>,
    pub(crate) completed_at: Option<String>,
    pub(crate) reason: Option<String>,
    pub(crate) latency_ms: Option<i64>,
    pub(crate) retry_of: Option<i64>,
}

/// Which runs to list.
#[derive(Debug, Clone, Default)]
pub(crate) struct Filter {
    /// A lifecycle status, or one of agentest's verdicts.
    pub(crate) status: Option<String>,
    /// A suite: the runs of it and of the suites under it (`billing` takes
    /// `billing/refunds`).
    pub(crate) suite: Option<String>,
    pub(crate) execution: Option<i64>,
    pub(crate) limit: usize,
}

const COLUMNS: &str = "id, execution_id, trial, status, verdict, started_at, completed_at, \
     COALESCE(error, reason), json_extract(metadata, '$.latency_ms'), retry_of";

fn row(r: &Row<'_>) -> rusqlite::Result<RunRow> {
    Ok(RunRow {
        id: r.get(0)?,
        execution: r.get(1)?,
        trial: r.get(2)?,
        status: r.get(3)?,
        verdict: r.get(4)?,
        started_at: r.get(5)?,
        completed_at: r.get(6)?,
        reason: r.get(7)?,
        latency_ms: r.get(8)?,
        retry_of: r.get(9)?,
    })
}

/// The newest runs that match `f`, newest first.
pub(crate) fn list(conn: &Connection, f: &Filter) -> rusqlite::Result<Vec<RunRow>> {
    let mut clauses = Vec::new();
    let mut values: Vec<String> = Vec::new();
    if let Some(s) = &f.status {
        if LIFECYCLE.contains(&s.as_str()) {
            clauses.push("status = ?");
        } else {
            clauses.push("verdict = ?");
        }
        values.push(s.clone());
    }
    if let Some(s) = &f.suite {
        clauses.push("(suite = ? OR suite LIKE ? ESCAPE '\\')");
        values.push(s.clone());
        let escaped = s
            .replace('\\', "\\\\")
            .replace('%', "\\%")
            .replace('_', "\\_");
        values.push(format!("{escaped}/%"));
    }
    if let Some(e) = f.execution {
        clauses.push("execution_id = ?");
        values.push(e.to_string());
    }
    let filter = if clauses.is_empty() {
        String::new()
    } else {
        format!("WHERE {}", clauses.join(" AND "))
    };
    let sql = format!(
        "SELECT {COLUMNS} FROM runs {filter} ORDER BY id DESC LIMIT {}",
        f.limit.max(1)
    );
    let mut stmt = conn.prepare(&sql)?;
    let rows = stmt.query_map(params_from_iter(values.iter()), row)?;
    rows.collect()
}

/// One run and its case record (the JSON of a report line), when it has ended.
pub(crate) fn show(
    conn: &Connection,
    id: i64,
) -> rusqlite::Result<Option<(RunRow, Option<String>)>> {
    conn.query_row(
        &format!("SELECT {COLUMNS}, record FROM runs WHERE id = ?1"),
        [id],
        |r| Ok((row(r)?, r.get::<_, Option<String>>(10)?)),
    )
    .optional()
}

/// The runs to retry, by trial, with their ids: of execution `execution`, its runs
/// that ended in `error`; without one, each trial's last run that ended, when that was
/// an `error`.
pub(crate) fn errored(
    conn: &Connection,
    execution: Option<i64>,
) -> rusqlite::Result<std::collections::HashMap<String, i64>> {
    // -1 matches no execution: the second form then decides.
    let mut stmt = conn.prepare(
        "SELECT trial, id FROM runs WHERE status = 'error' AND (
             execution_id = ?1 OR (?1 = -1 AND id IN (
                 SELECT MAX(id) FROM runs WHERE status IN ('completed', 'error') GROUP BY trial)))",
    )?;
    let rows = stmt.query_map([execution.unwrap_or(-1)], |r| Ok((r.get(0)?, r.get(1)?)))?;
    rows.collect()
}

/// An execution's input (the suites it ran), `None` when there is no such execution.
pub(crate) fn execution_root(
    conn: &Connection,
    id: Option<i64>,
) -> rusqlite::Result<Option<(i64, String)>> {
    conn.query_row(
        "SELECT id, root FROM executions WHERE id = ?1
             OR (?1 = -1 AND id = (SELECT MAX(id) FROM executions WHERE nextest_run_id IS NULL))",
        [id.unwrap_or(-1)],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )
    .optional()
}

/// An execution's ended runs, for reports rendered from the store.
pub(crate) struct Stored {
    pub(crate) execution: i64,
    /// What it ran (the input).
    pub(crate) root: String,
    /// Its command line.
    pub(crate) command: Vec<String>,
    /// When it started (RFC 3339).
    pub(crate) started_at: String,
    pub(crate) duration_ms: u64,
    /// The records of its runs that ended, in trial order.
    pub(crate) cases: Vec<crate::record::CaseReport>,
    /// Each run as stored, in the same order as `cases`.
    pub(crate) runs: Vec<StoredRun>,
}

/// A run's columns an export needs.
pub(crate) struct StoredRun {
    pub(crate) id: i64,
    pub(crate) status: String,
    pub(crate) started_at: Option<String>,
    pub(crate) completed_at: Option<String>,
    pub(crate) success: Option<bool>,
    pub(crate) reason: Option<String>,
    pub(crate) error: Option<String>,
    pub(crate) messages: Option<String>,
    pub(crate) latency_ms: Option<i64>,
    pub(crate) persona: Option<String>,
    pub(crate) case_id: String,
}

/// Execution `id` (the newest without one) and its ended runs.
pub(crate) fn stored(conn: &Connection, id: Option<i64>) -> rusqlite::Result<Option<Stored>> {
    let Some((execution, root)) = execution_root(conn, id)? else {
        return Ok(None);
    };
    let (command, duration, started_at): (String, Option<i64>, String) = conn.query_row(
        "SELECT command, duration_ms, started_at FROM executions WHERE id = ?1",
        [execution],
        |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
    )?;
    let mut stmt = conn.prepare(
        "SELECT id, status, started_at, completed_at, success, reason, error, messages,
                json_extract(metadata, '$.latency_ms'), persona, case_id, record
         FROM runs WHERE execution_id = ?1 AND status IN ('completed', 'error') ORDER BY trial",
    )?;
    let mut cases = Vec::new();
    let mut runs = Vec::new();
    let rows = stmt.query_map([execution], |r| {
        Ok((
            StoredRun {
                id: r.get(0)?,
                status: r.get(1)?,
                started_at: r.get(2)?,
                completed_at: r.get(3)?,
                success: r.get(4)?,
                reason: r.get(5)?,
                error: r.get(6)?,
                messages: r.get(7)?,
                latency_ms: r.get(8)?,
                persona: r.get(9)?,
                case_id: r.get(10)?,
            },
            r.get::<_, Option<String>>(11)?,
        ))
    })?;
    for row in rows {
        let (run, record) = row?;
        if let Some(case) = record.and_then(|j| serde_json::from_str(&j).ok()) {
            cases.push(case);
            runs.push(run);
        }
    }
    Ok(Some(Stored {
        execution,
        root,
        command: serde_json::from_str(&command).unwrap_or_default(),
        started_at,
        duration_ms: duration.unwrap_or(0).max(0) as u64,
        cases,
        runs,
    }))
}

/// What `runs delete` removes.
#[derive(Debug, Clone)]
pub(crate) enum Doomed {
    Run(i64),
    Execution(i64),
    /// Runs (and then empty executions) that started before this RFC 3339 time.
    Before(String),
}

/// Deletes what `d` names; returns how many runs went.
pub(crate) fn delete(conn: &mut Connection, d: &Doomed) -> rusqlite::Result<usize> {
    let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
    let n = match d {
        Doomed::Run(id) => tx.execute("DELETE FROM runs WHERE id = ?1", [id])?,
        Doomed::Execution(id) => {
            let n = tx.execute("DELETE FROM runs WHERE execution_id = ?1", [id])?;
            tx.execute("DELETE FROM executions WHERE id = ?1", [id])?;
            n
        }
        Doomed::Before(when) => {
            let n = tx.execute(
                "DELETE FROM runs WHERE execution_id IN (SELECT id FROM executions WHERE started_at < ?1)",
                [when],
            )?;
            tx.execute("DELETE FROM executions WHERE started_at < ?1", [when])?;
            n
        }
    };
    tx.commit()?;
    Ok(n)
}

/// A case whose verdict changed between executions on the same inputs.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct FlakyCase {
    pub(crate) trial: String,
    /// Oldest first: the execution, its verdict, and the case's pass rate in it (a
    /// repeated case's share of passing repeats; 1 or 0 for a case run once).
    pub(crate) history: Vec<(i64, String, f64)>,
}

/// The cases of the last `last` executions whose verdict was `passed` in some and
/// `failed` in others, with the same definition (the record's `input_hash`).
pub(crate) fn flaky(conn: &Connection, last: usize) -> rusqlite::Result<Vec<FlakyCase>> {
    let mut stmt = conn.prepare(
        "SELECT execution_id, trial, json_extract(metadata, '$.input_hash'), verdict,
                json_extract(metadata, '$.stability.pass_rate')
         FROM runs
         WHERE execution_id IN (SELECT id FROM executions ORDER BY id DESC LIMIT ?1)
           AND verdict IN ('passed', 'failed')
         ORDER BY trial, execution_id",
    )?;
    let rows = stmt.query_map([last as i64], |r| {
        Ok((
            r.get::<_, i64>(0)?,
            r.get::<_, String>(1)?,
            r.get::<_, Option<String>>(2)?,
            r.get::<_, String>(3)?,
            r.get::<_, Option<f64>>(4)?,
        ))
    })?;
    type History = Vec<(i64, String, f64)>;
    let mut by_case: std::collections::BTreeMap<(String, Option<String>), History> =
        Default::default();
    for row in rows {
        let (execution, trial, input, verdict, rate) = row?;
        let rate = rate.unwrap_or(if verdict == "passed" { 1.0 } else { 0.0 });
        by_case
            .entry((trial, input))
            .or_default()
            .push((execution, verdict, rate));
    }
    Ok(by_case
        .into_iter()
        .filter(|(_, h)| {
            h.iter().any(|(_, v, _)| v == "passed") && h.iter().any(|(_, v, _)| v == "failed")
        })
        .map(|((trial, _), history)| FlakyCase { trial, history })
        .collect())
}
