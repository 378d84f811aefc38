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
