//! The store's schema and its migrations. The version is SQLite's `user_version`; each
//! migration takes the store from one version to the next, in one transaction. A store
//! whose version is above [`VERSION`] was written by a newer agentest and is refused:
//! this one cannot know what it would break.

use crate::record::store::backend;
use rusqlite::Connection;

/// The schema version this agentest writes.
pub(crate) const VERSION: i64 = 10;

/// The migrations, in order: `MIGRATIONS[i]` takes version `i` to `i + 1`.
const MIGRATIONS: [&str; VERSION as usize] = [
    r#"
CREATE TABLE executions (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    started_at    TEXT NOT NULL,
    finished_at   TEXT,
    command       TEXT NOT NULL,
    version       TEXT NOT NULL,
    git_commit    TEXT,
    -- Every process of one `cargo nextest run` shares its run id, and so its execution.
    nextest_run_id TEXT UNIQUE,
    root          TEXT NOT NULL
);
CREATE TABLE runs (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    execution_id  INTEGER NOT NULL REFERENCES executions(id) ON DELETE CASCADE,
    trial         TEXT NOT NULL,
    suite         TEXT NOT NULL,
    case_id       TEXT NOT NULL,
    file          TEXT NOT NULL,
    persona       TEXT,
    parameters    TEXT,
    -- The seed's lifecycle; a failed verdict is `completed` with result.success = 0.
    status        TEXT NOT NULL DEFAULT 'queued'
                  CHECK (status IN ('queued', 'pending', 'running', 'completed', 'error')),
    -- agentest's own status: passed, failed, error, skipped or timeout.
    verdict       TEXT,
    started_at    TEXT,
    completed_at  TEXT,
    owner_pid     INTEGER,
    owner_host    TEXT,
    heartbeat_at  TEXT,
    success       INTEGER,
    score         REAL,
    reason        TEXT,
    error         TEXT,
    messages      TEXT,
    metadata      TEXT,
    record        TEXT,
    retry_of      INTEGER REFERENCES runs(id) ON DELETE SET NULL,
    UNIQUE (execution_id, trial)
);
CREATE INDEX runs_by_status ON runs (status, id);
CREATE INDEX runs_by_suite ON runs (suite, id);
CREATE INDEX runs_by_execution ON runs (execution_id, id);
"#,
    // 2: an execution's wall time, for reports rendered from the store.
    "ALTER TABLE executions ADD COLUMN duration_ms INTEGER;",
    // 3: the key processes join an execution by (AGENTEST_EXECUTION, the CI's run,
    // nextest's run id); a nextest run's execution keeps its run id as its key.
    r#"
ALTER TABLE executions ADD COLUMN execution_key TEXT;
UPDATE executions SET execution_key = 'nextest:' || nextest_run_id WHERE nextest_run_id IS NOT NULL;
CREATE UNIQUE INDEX executions_by_key ON executions (execution_key);
"#,
    // 4: the ledger: the model requests started in the last window, per endpoint, so
    // that every process of an execution keeps one `requests_per_minute` together, and
    // what each spent, so that they keep one run budget.
    r#"
CREATE TABLE request_starts (
    execution_id  INTEGER NOT NULL REFERENCES executions(id) ON DELETE CASCADE,
    endpoint      TEXT NOT NULL,
    started_ms    INTEGER NOT NULL
);
CREATE INDEX request_starts_by_endpoint ON request_starts (execution_id, endpoint, started_ms);
-- What each process of the execution spent on models, for the run's budget.
CREATE TABLE spend (
    execution_id  INTEGER NOT NULL REFERENCES executions(id) ON DELETE CASCADE,
    owner_pid     INTEGER NOT NULL,
    owner_host    TEXT NOT NULL,
    tokens        INTEGER NOT NULL,
    cost          REAL NOT NULL
);
CREATE INDEX spend_by_execution ON spend (execution_id);
"#,
    // 5: a queued case's repeats, each a unit of work that any worker may claim, so
    // that they spread over workers; the case's own row (`runs.repeats`, how many)
    // gets the record once its gate decided on them in repeat order.
    r#"
ALTER TABLE runs ADD COLUMN repeats INTEGER;
CREATE TABLE repeats (
    run_id        INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    idx           INTEGER NOT NULL,
    status        TEXT NOT NULL DEFAULT 'queued'
                  CHECK (status IN ('queued', 'running', 'ended', 'cancelled')),
    owner_pid     INTEGER,
    owner_host    TEXT,
    heartbeat_at  TEXT,
    started_at    TEXT,
    ended_at      TEXT,
    record        TEXT,
    PRIMARY KEY (run_id, idx)
);
CREATE INDEX repeats_by_status ON repeats (status, run_id, idx);
"#,
    // 6: the one process running an execution of its own (no key), alive while it
    // marks the row: its cases start without claiming their runs one by one, and a
    // `--resume` waits for it to be gone.
    r#"
ALTER TABLE executions ADD COLUMN owner_pid INTEGER;
ALTER TABLE executions ADD COLUMN owner_host TEXT;
ALTER TABLE executions ADD COLUMN heartbeat_at TEXT;
"#,
    // 7: the structured-output form each model endpoint (its URL and model) took under
    // `structured_output = "auto"`, so that later runs start with it.
    r#"
CREATE TABLE endpoint_forms (
    endpoint    TEXT NOT NULL,
    model       TEXT NOT NULL,
    form        TEXT NOT NULL,
    learned_at  TEXT NOT NULL,
    PRIMARY KEY (endpoint, model)
);
"#,
    // 8: judges' calibrations (`agentest calibrate`): the latest of each judge's
    // fingerprint (its endpoint, model, prompt, temperature, schema), with the figures
    // a `min_kappa` / `min_accuracy` bar is checked against.
    r#"
CREATE TABLE calibrations (
    judge          TEXT NOT NULL,
    fingerprint    TEXT NOT NULL,
    calibrated_at  TEXT NOT NULL,
    items          INTEGER NOT NULL,
    runs           INTEGER NOT NULL,
    accuracy       REAL NOT NULL,
    kappa          REAL,
    flip_rate      REAL,
    report         TEXT NOT NULL,
    PRIMARY KEY (judge, fingerprint)
);
"#,
    // 9: whose fault each run that did not pass was (`runs list --blame`).
    r#"
ALTER TABLE runs ADD COLUMN blame TEXT;
CREATE INDEX runs_by_blame ON runs (blame, execution_id);
"#,
    // 10: for the viewer: what started an execution (its git branch and its CI's run),
    // and each run's flakiness and usage as numbers.
    r#"
ALTER TABLE executions ADD COLUMN git_branch TEXT;
ALTER TABLE executions ADD COLUMN ci_run TEXT;

-- Each run's flakiness, and each role's tokens and cost, kept as numbers at its end, so
-- that an execution is summed up without parsing its runs' metadata (JSON text).
ALTER TABLE runs ADD COLUMN flaky INTEGER;
UPDATE runs SET flaky = CASE
    WHEN json_extract(metadata, '$.stability.passed') > 0
     AND json_extract(metadata, '$.stability.failed') > 0 THEN 1 ELSE 0 END
  WHERE metadata IS NOT NULL;
CREATE TABLE run_usage (
    run_id          INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    execution_id    INTEGER NOT NULL,
    role            TEXT NOT NULL,
    tokens          INTEGER NOT NULL,
    replayed_tokens INTEGER NOT NULL,
    cost            REAL,
    replayed_cost   REAL,
    currency        TEXT,
    PRIMARY KEY (run_id, role)
);
CREATE INDEX run_usage_by_execution ON run_usage
    (execution_id, role, tokens, replayed_tokens, cost, replayed_cost, currency);
-- A run ended anew (or queued again) loses its usage rows within the same statement.
CREATE TRIGGER run_usage_replaced AFTER UPDATE OF record ON runs
BEGIN
    DELETE FROM run_usage WHERE run_id = NEW.id;
END;
"#,
];

/// How SQLite reads a run's metadata for [`backend::usage_rows_sql`].
pub(crate) const METADATA: backend::MetadataReader<'static> = backend::MetadataReader {
    number: &|head, tail| {
        format!("json_extract(runs.metadata, '$.{head}.' || r.role || '.{tail}')")
    },
    text: &|path| format!("json_extract(runs.metadata, '$.{path}')"),
    from: "",
};

/// What opening found about the schema.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Found {
    /// At [`VERSION`], migrated from `from` if that was lower.
    Current { from: i64 },
    /// Written by a newer agentest, at this version.
    Newer(i64),
}

/// Brings the store to [`VERSION`], unless it is newer.
pub(crate) fn migrate(conn: &mut Connection) -> rusqlite::Result<Found> {
    let from: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0))?;
    if from > VERSION {
        return Ok(Found::Newer(from));
    }
    if from == VERSION {
        return Ok(Found::Current { from });
    }
    // Every step in one transaction: a store is at one version or the next, never
    // half-way, and each page is written once (a new store's write-ahead log holds its
    // final pages, not each step's). IMMEDIATE: two processes opening a new store at
    // once migrate it once; the second sees the version the first wrote.
    let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
    let now: i64 = tx.query_row("PRAGMA user_version", [], |r| r.get(0))?;
    if now > VERSION {
        return Ok(Found::Newer(now));
    }
    for sql in MIGRATIONS.iter().skip(now.max(0) as usize) {
        tx.execute_batch(sql)?;
    }
    if now < 10 {
        // Step 10's usage rows of the runs stored before it, by the statement every
        // run's end writes its own with (after every step: it fits the schema as it is).
        tx.execute(
            &backend::usage_rows_sql(&METADATA, "WHERE runs.metadata IS NOT NULL"),
            [],
        )?;
    }
    tx.pragma_update(None, "user_version", VERSION)?;
    tx.commit()?;
    Ok(Found::Current { from })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A store at version 1 with an execution in it: migrated to the current version,
    /// the execution kept, the new column there; migrating again changes nothing.
    #[test]
    fn an_old_store_is_migrated_in_place() {
        let mut conn = Connection::open_in_memory().unwrap();
        conn.execute_batch(MIGRATIONS[0]).unwrap();
        conn.pragma_update(None, "user_version", 1).unwrap();
        conn.execute(
            "INSERT INTO executions (started_at, command, version, root, nextest_run_id)
             VALUES ('t', '[]', 'v', 'r', 'abc')",
            [],
        )
        .unwrap();
        assert_eq!(migrate(&mut conn).unwrap(), Found::Current { from: 1 });
        let (n, d): (i64, Option<i64>) = conn
            .query_row(
                "SELECT COUNT(*), MAX(duration_ms) FROM executions",
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .unwrap();
        assert_eq!((n, d), (1, None));
        let key: Option<String> = conn
            .query_row("SELECT execution_key FROM executions", [], |r| r.get(0))
            .unwrap();
        assert_eq!(
            key.as_deref(),
            Some("nextest:abc"),
            "a nextest run keeps its id"
        );
        assert_eq!(
            migrate(&mut conn).unwrap(),
            Found::Current { from: VERSION }
        );
        conn.pragma_update(None, "user_version", VERSION + 1)
            .unwrap();
        assert_eq!(migrate(&mut conn).unwrap(), Found::Newer(VERSION + 1));
    }
}
