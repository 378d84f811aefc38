//! The PostgreSQL store's schema and its migrations.
//!
//! The tables and their meaning are schema.rs's, column for column, in PostgreSQL's
//! dialect:
//! - ids are `BIGINT GENERATED ALWAYS AS IDENTITY` (SQLite's `INTEGER PRIMARY KEY
//!   AUTOINCREMENT`: never reused);
//! - every integer column is `BIGINT`: SQLite's integers are 64-bit, and rust-postgres
//!   binds an `i64` only to a `BIGINT`, so both writers bind the same values;
//! - `score` is `DOUBLE PRECISION` (SQLite's `REAL` is 8 bytes; PostgreSQL's `REAL` 4);
//! - times stay `TEXT`, the RFC 3339 strings the writer makes (`record::rfc3339`): both
//!   backends then store, compare (leases compare `heartbeat_at` as text) and export
//!   the same strings, where a `TIMESTAMPTZ` would come back in the session's time zone
//!   and PostgreSQL's own format, and round to microseconds;
//! - JSON stays `TEXT` (`command`, `parameters`, `messages`, `metadata`, `record`):
//!   `JSONB` would reorder keys and drop duplicates, so the stored text, and an export
//!   of it, would differ from what agentest wrote (its JSON keeps key order) and from
//!   the SQLite store's; and a `TEXT` binds from a `String` as on SQLite. Reads take
//!   fields with `(metadata::jsonb ->> 'latency_ms')::bigint` where SQLite says
//!   `json_extract(metadata, '$.latency_ms')`: a cast per row read, on the few columns
//!   filtered or listed.
//!
//! The version is the one row of `agentest_schema`; each migration takes the store from
//! one version to the next, all in one transaction (PostgreSQL's DDL is transactional:
//! a failed migration leaves the store as it was). A store whose version is above
//! [`VERSION`] was written by a newer agentest and is refused, and not written to.

use crate::record::store::backend;
use postgres::Client;

/// The schema version this agentest writes; SQLite's, since the tables are the same.
pub(crate) const VERSION: i64 = 10;

/// The key of the advisory lock that migrators take inside their transaction, so that
/// two processes opening a new store at once migrate it once: "agentest" in ASCII.
const MIGRATION_LOCK: i64 = 0x6167_656e_7465_7374;

/// The migrations, in order: `MIGRATIONS[i]` takes version `i` to `i + 1`.
const MIGRATIONS: [&str; VERSION as usize] = [
    r#"
CREATE TABLE executions (
    id             BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    started_at     TEXT NOT NULL,
    finished_at    TEXT,
    command        TEXT NOT NULL,
    version        TEXT NOT NULL,
    git_commit     TEXT,
    -- Every process of one `cargo nextest run` shares its run id, and so its execution.
    nextest_run_id TEXT UNIQUE,
    root           TEXT NOT NULL
);
CREATE TABLE runs (
    id            BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    execution_id  BIGINT NOT NULL REFERENCES executions(id) ON DELETE CASCADE,
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
    owner_pid     BIGINT,
    owner_host    TEXT,
    heartbeat_at  TEXT,
    success       BIGINT,
    score         DOUBLE PRECISION,
    reason        TEXT,
    error         TEXT,
    messages      TEXT,
    metadata      TEXT,
    record        TEXT,
    retry_of      BIGINT REFERENCES runs(id) ON DELETE SET NULL,
    UNIQUE (execution_id, trial)
);
CREATE INDEX runs_by_status ON runs (status, id);
CREATE INDEX runs_by_suite ON runs (suite, id);
CREATE INDEX runs_by_execution ON runs (execution_id, id);
"#,
    // 2: an execution's wall time, for reports rendered from the store.
    "ALTER TABLE executions ADD COLUMN duration_ms BIGINT;",
    // 3: the key processes join an execution by (AGENTEST_EXECUTION, the CI's run,
    // nextest's run id); a nextest run's execution keeps its run id as its key.
    r#"
ALTER TABLE executions ADD COLUMN execution_key TEXT;
UPDATE executions SET execution_key = 'nextest:' || nextest_run_id WHERE nextest_run_id IS NOT NULL;
ALTER TABLE executions ADD CONSTRAINT executions_by_key UNIQUE (execution_key);
"#,
    // 4: the ledger: the model requests started in the last window, per endpoint, so
    // that every process of an execution keeps one `requests_per_minute` together, and
    // what each spent, so that they keep one run budget.
    r#"
CREATE TABLE request_starts (
    execution_id  BIGINT NOT NULL REFERENCES executions(id) ON DELETE CASCADE,
    endpoint      TEXT NOT NULL,
    started_ms    BIGINT NOT NULL
);
CREATE INDEX request_starts_by_endpoint ON request_starts (execution_id, endpoint, started_ms);
-- What each process of the execution spent on models, for the run's budget.
CREATE TABLE spend (
    execution_id  BIGINT NOT NULL REFERENCES executions(id) ON DELETE CASCADE,
    owner_pid     BIGINT NOT NULL,
    owner_host    TEXT NOT NULL,
    tokens        BIGINT NOT NULL,
    cost          DOUBLE PRECISION NOT NULL
);
CREATE INDEX spend_by_execution ON spend (execution_id);
"#,
    // 5: a queued case's repeats, each a unit of work that any worker may claim, so
    // that they spread over workers; the case's own row (`runs.repeats`, how many)
    // gets the record once its gate decided on them in repeat order.
    r#"
ALTER TABLE runs ADD COLUMN repeats BIGINT;
CREATE TABLE repeats (
    run_id        BIGINT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    idx           BIGINT NOT NULL,
    status        TEXT NOT NULL DEFAULT 'queued'
                  CHECK (status IN ('queued', 'running', 'ended', 'cancelled')),
    owner_pid     BIGINT,
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
ALTER TABLE executions ADD COLUMN owner_pid BIGINT;
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
    items          BIGINT NOT NULL,
    runs           BIGINT NOT NULL,
    accuracy       DOUBLE PRECISION NOT NULL,
    kappa          DOUBLE PRECISION,
    flip_rate      DOUBLE PRECISION,
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
ALTER TABLE runs ADD COLUMN flaky BIGINT;
UPDATE runs SET flaky = CASE
    WHEN (metadata::jsonb #>> '{stability,passed}')::float8 > 0
     AND (metadata::jsonb #>> '{stability,failed}')::float8 > 0 THEN 1 ELSE 0 END
  WHERE metadata IS NOT NULL;
CREATE TABLE run_usage (
    run_id          BIGINT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    execution_id    BIGINT NOT NULL,
    role            TEXT NOT NULL,
    tokens          BIGINT NOT NULL,
    replayed_tokens BIGINT NOT NULL,
    cost            DOUBLE PRECISION,
    replayed_cost   DOUBLE PRECISION,
    currency        TEXT,
    PRIMARY KEY (run_id, role)
);
CREATE INDEX run_usage_by_execution ON run_usage
    (execution_id, role, tokens, replayed_tokens, cost, replayed_cost, currency);
"#,
];

/// Joined to `runs`: each run's metadata parsed once, as `m`.
pub(crate) const PARSED: &str = "CROSS JOIN LATERAL (SELECT runs.metadata::jsonb AS m) parsed";

/// How PostgreSQL reads a run's metadata for [`backend::usage_rows_sql`].
pub(crate) const METADATA: backend::MetadataReader<'static> = backend::MetadataReader {
    number: &|head, tail| {
        let head: String = head.split('.').map(|k| format!(" -> '{k}'")).collect();
        format!("(m{head} -> r.role ->> '{tail}')::float8")
    },
    text: &|path| format!("(m #>> '{{{}}}')", path.replace('.', ",")),
    from: PARSED,
};

/// What opening found about the schema (schema.rs's `Found`, kept here so that this
/// module stands alone until the store's backends share one).
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Found {
    /// At [`VERSION`], migrated from `from` if that was lower.
    Current { from: i64 },
    /// Written by a newer agentest, at this version.
    Newer(i64),
}

/// Brings the store to [`VERSION`], unless it is newer. Concurrent migrators wait for
/// each other on an advisory lock held until their transaction ends; the later one
/// then finds the version the earlier wrote. A store at the current version, or a
/// newer one, is only read.
pub(crate) fn migrate(client: &mut Client) -> Result<Found, postgres::Error> {
    let mut tx = client.transaction()?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])?;
    let exists: bool = tx
        .query_one("SELECT to_regclass('agentest_schema') IS NOT NULL", &[])?
        .get(0);
    let from = if exists {
        let row = tx.query_opt("SELECT version FROM agentest_schema", &[])?;
        row.map_or(0, |r| i64::from(r.get::<_, i32>(0)))
    } else {
        0
    };
    if from >= VERSION {
        // Nothing written: a rollback, which for a transaction that only read is the
        // same as a commit, and works where the role may not write.
        tx.rollback()?;
        return Ok(if from > VERSION {
            Found::Newer(from)
        } else {
            Found::Current { from }
        });
    }
    if !exists {
        // One row at most: the unique index on a constant.
        tx.batch_execute(
            "CREATE TABLE agentest_schema (version INTEGER NOT NULL);
             CREATE UNIQUE INDEX agentest_schema_one_row ON agentest_schema ((true));",
        )?;
    }
    for sql in MIGRATIONS.iter().skip(from.max(0) as usize) {
        tx.batch_execute(sql)?;
    }
    if from < 10 {
        // Step 10's usage rows of the runs stored before it, by the statement every
        // run's end writes its own with (after every step: it fits the schema as it is).
        tx.batch_execute(&backend::usage_rows_sql(
            &METADATA,
            "WHERE runs.metadata IS NOT NULL",
        ))?;
    }
    let version = VERSION as i32;
    if tx.execute("UPDATE agentest_schema SET version = $1", &[&version])? == 0 {
        tx.execute(
            "INSERT INTO agentest_schema (version) VALUES ($1)",
            &[&version],
        )?;
    }
    tx.commit()?;
    Ok(Found::Current { from })
}

/// These tests need a PostgreSQL server: `AGENTEST_TEST_POSTGRES`, a URL of a role that
/// may create databases (`tests/postgres/cluster.sh start DIR` makes one and writes it
/// to DIR/url). Each test makes a database of its own and drops it. libtest cannot mark
/// a test ignored while it runs, so they are `#[ignore]`d with that reason, and .ci/run
/// runs them by name with `--ignored`; there, and wherever `CI` is set, a missing
/// server fails them.
#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use std::sync::Arc;

    use postgres::Config;

    use super::super::connect::connect;
    use super::*;
    use crate::util::error_chain as error_text;

    const NEEDS: &str = "needs a PostgreSQL server: `bash tests/postgres/cluster.sh start DIR`, \
        `export AGENTEST_TEST_POSTGRES=$(cat DIR/url)`, then \
        `cargo test --lib store::postgres::schema -- --ignored`";

    /// A database of its own for one test, dropped with it.
    struct Database {
        admin: String,
        name: String,
        url: String,
    }

    impl Database {
        fn new() -> Database {
            let admin = std::env::var("AGENTEST_TEST_POSTGRES")
                .ok()
                .filter(|u| !u.is_empty())
                .unwrap_or_else(|| panic!("AGENTEST_TEST_POSTGRES is not set; {NEEDS}"));
            static N: AtomicUsize = AtomicUsize::new(0);
            let nanos = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.subsec_nanos());
            let name = format!(
                "agentest_test_{}_{}_{nanos}",
                std::process::id(),
                N.fetch_add(1, Ordering::Relaxed)
            );
            let mut client = connect(&admin).expect("connecting to AGENTEST_TEST_POSTGRES");
            client
                .batch_execute(&format!("CREATE DATABASE {name}"))
                .unwrap();
            let url = with_database(&admin, &name);
            Database { admin, name, url }
        }
    }

    impl Drop for Database {
        fn drop(&mut self) {
            if let Ok(mut client) = connect(&self.admin) {
                let _ = client.batch_execute(&format!(
                    "DROP DATABASE IF EXISTS {} WITH (FORCE)",
                    self.name
                ));
            }
        }
    }

    /// `url` naming database `name` instead of its own.
    fn with_database(url: &str, name: &str) -> String {
        let (base, query) = url
            .split_once('?')
            .map_or((url, None), |(b, q)| (b, Some(q)));
        let after_scheme = base.find("://").map_or(0, |i| i + 3);
        let host_end = base[after_scheme..]
            .find('/')
            .map_or(base.len(), |i| after_scheme + i);
        let mut out = format!("{}/{name}", &base[..host_end]);
        if let Some(q) = query {
            out = format!("{out}?{q}");
        }
        out
    }

    /// The tables, columns and indexes of the public schema, and the version: what a
    /// migration should have made, and what a refused store must still have.
    fn shape(client: &mut Client) -> (Vec<String>, Option<i32>) {
        let mut parts: Vec<String> = client
            .query(
                "SELECT table_name || '.' || column_name || ' ' || data_type
                   FROM information_schema.columns WHERE table_schema = 'public'
                 UNION ALL
                 SELECT 'index ' || indexname FROM pg_indexes WHERE schemaname = 'public'",
                &[],
            )
            .unwrap()
            .iter()
            .map(|r| r.get(0))
            .collect();
        parts.sort();
        // No table: an error, so no version.
        let version = client
            .query_opt("SELECT version FROM agentest_schema", &[])
            .ok()
            .flatten()
            .map(|r| r.get(0));
        (parts, version)
    }

    /// A fresh database is migrated from 0: both tables with schema.rs's columns, the
    /// indexes, the version row; the constraints hold.
    #[test]
    #[ignore = "needs a PostgreSQL server: AGENTEST_TEST_POSTGRES (see tests/postgres/cluster.sh); run with --ignored"]
    fn a_fresh_database_is_migrated() {
        let db = Database::new();
        let mut client = connect(&db.url).unwrap();
        assert_eq!(migrate(&mut client).unwrap(), Found::Current { from: 0 });
        let (parts, version) = shape(&mut client);
        assert_eq!(version, Some(VERSION as i32));
        for want in [
            "executions.id bigint",
            "executions.nextest_run_id text",
            "executions.duration_ms bigint",
            "runs.execution_id bigint",
            "runs.score double precision",
            "runs.metadata text",
            "runs.retry_of bigint",
            "agentest_schema.version integer",
            "index runs_by_status",
            "index runs_by_suite",
            "index runs_by_execution",
            "index repeats_by_status",
            "runs.repeats bigint",
            "repeats.run_id bigint",
            "index agentest_schema_one_row",
        ] {
            assert!(
                parts.iter().any(|p| p == want),
                "{want} missing: {parts:#?}"
            );
        }
        // The columns of schema.rs's SQLite tables, by name and in order.
        let mut sqlite = rusqlite::Connection::open_in_memory().unwrap();
        crate::record::store::sqlite::schema::migrate(&mut sqlite).unwrap();
        for table in [
            "executions",
            "runs",
            "repeats",
            "spend",
            "request_starts",
            "endpoint_forms",
            "calibrations",
            "run_usage",
        ] {
            let lite: Vec<String> = sqlite
                .prepare(&format!(
                    "SELECT name FROM pragma_table_info('{table}') ORDER BY cid"
                ))
                .unwrap()
                .query_map([], |r| r.get(0))
                .unwrap()
                .map(Result::unwrap)
                .collect();
            let pg: Vec<String> = client
                .query(
                    "SELECT column_name::text FROM information_schema.columns
                      WHERE table_schema = 'public' AND table_name = $1 ORDER BY ordinal_position",
                    &[&table],
                )
                .unwrap()
                .iter()
                .map(|r| r.get(0))
                .collect();
            assert_eq!(pg, lite, "{table}");
        }
        // The constraints of schema.rs: the status CHECK, the one trial per execution,
        // the cascade, and one version row.
        let id: i64 = client
            .query_one(
                "INSERT INTO executions (started_at, command, version, root)
                 VALUES ('2026-01-01T00:00:00Z', '[]', 'v', 'r') RETURNING id",
                &[],
            )
            .unwrap()
            .get(0);
        let run = "INSERT INTO runs (execution_id, trial, suite, case_id, file, status)
                   VALUES ($1, $2, 's', 'c', 'f', $3)";
        client.execute(run, &[&id, &"t1", &"queued"]).unwrap();
        let bad = client.execute(run, &[&id, &"t2", &"lost"]).unwrap_err();
        let bad = error_text(&bad);
        assert!(bad.contains("check constraint"), "{bad}");
        let dup = client.execute(run, &[&id, &"t1", &"queued"]).unwrap_err();
        let dup = error_text(&dup);
        assert!(dup.contains("duplicate key"), "{dup}");
        let two = client
            .execute("INSERT INTO agentest_schema (version) VALUES (1)", &[])
            .unwrap_err();
        let two = error_text(&two);
        assert!(two.contains("agentest_schema_one_row"), "{two}");
        client.execute("DELETE FROM executions", &[]).unwrap();
        let left: i64 = client
            .query_one("SELECT COUNT(*) FROM runs", &[])
            .unwrap()
            .get(0);
        assert_eq!(left, 0);
    }

    /// Migrating again finds the current version and changes nothing.
    #[test]
    #[ignore = "needs a PostgreSQL server: AGENTEST_TEST_POSTGRES (see tests/postgres/cluster.sh); run with --ignored"]
    fn migrating_twice_changes_nothing() {
        let db = Database::new();
        let mut client = connect(&db.url).unwrap();
        assert_eq!(migrate(&mut client).unwrap(), Found::Current { from: 0 });
        let before = shape(&mut client);
        assert_eq!(
            migrate(&mut client).unwrap(),
            Found::Current { from: VERSION }
        );
        assert_eq!(shape(&mut client), before);
    }

    /// A store at version 1 (the first migration only) with an execution in it is
    /// migrated in place: the execution kept, the new column there and empty.
    #[test]
    #[ignore = "needs a PostgreSQL server: AGENTEST_TEST_POSTGRES (see tests/postgres/cluster.sh); run with --ignored"]
    fn an_old_store_is_migrated_in_place() {
        let db = Database::new();
        let mut client = connect(&db.url).unwrap();
        client.batch_execute(MIGRATIONS[0]).unwrap();
        client
            .batch_execute(
                "CREATE TABLE agentest_schema (version INTEGER NOT NULL);
                 INSERT INTO agentest_schema VALUES (1);
                 INSERT INTO executions (started_at, command, version, root)
                 VALUES ('t', '[]', 'v', 'r');",
            )
            .unwrap();
        assert_eq!(migrate(&mut client).unwrap(), Found::Current { from: 1 });
        let row = client
            .query_one("SELECT COUNT(*), MAX(duration_ms) FROM executions", &[])
            .unwrap();
        assert_eq!(
            (row.get::<_, i64>(0), row.get::<_, Option<i64>>(1)),
            (1, None)
        );
        assert_eq!(shape(&mut client).1, Some(VERSION as i32));
    }

    /// A store at version 9 with an ended run whose metadata holds its usage and its
    /// repeats: the migration to 10 keeps them as numbers, `flaky` and a `run_usage`
    /// row per role that spent or replayed anything (the figures a run's end writes).
    #[test]
    #[ignore = "needs a PostgreSQL server: AGENTEST_TEST_POSTGRES (see tests/postgres/cluster.sh); run with --ignored"]
    fn runs_stored_before_10_get_their_usage_rows() {
        let db = Database::new();
        let mut client = connect(&db.url).unwrap();
        for sql in &MIGRATIONS[..9] {
            client.batch_execute(sql).unwrap();
        }
        let metadata = r#"{"latency_ms": 5, "usage": {"agent": {"prompt_tokens": 100, "completion_tokens": 20}}, "replayed_usage": {"judge": {"prompt_tokens": 50, "completion_tokens": 5}}, "cost": {"currency": "EUR", "spent": 0.5, "replayed": 0.25, "by_role": {"agent": {"spent": 0.5, "replayed": 0.0}, "judge": {"spent": 0.0, "replayed": 0.25}}}, "stability": {"passed": 3, "failed": 1}}"#;
        client
            .batch_execute(&format!(
                "CREATE TABLE agentest_schema (version INTEGER NOT NULL);
                 INSERT INTO agentest_schema VALUES (9);
                 INSERT INTO executions (started_at, command, version, root)
                 VALUES ('t', '[]', 'v', 'r');
                 INSERT INTO runs (execution_id, trial, suite, case_id, file, status, metadata)
                 VALUES (1, 's::a', 's', 'a', 's.jsonl', 'completed', '{metadata}'),
                        (1, 's::b', 's', 'b', 's.jsonl', 'queued', NULL);"
            ))
            .unwrap();
        assert_eq!(migrate(&mut client).unwrap(), Found::Current { from: 9 });
        type Row = (String, i64, i64, Option<f64>, Option<f64>, Option<String>);
        let rows: Vec<Row> = client
            .query(
                "SELECT role, tokens, replayed_tokens, cost, replayed_cost, currency
                 FROM run_usage ORDER BY role",
                &[],
            )
            .unwrap()
            .iter()
            .map(|r| (r.get(0), r.get(1), r.get(2), r.get(3), r.get(4), r.get(5)))
            .collect();
        assert_eq!(
            rows,
            [
                (
                    "agent".into(),
                    120,
                    0,
                    Some(0.5),
                    Some(0.0),
                    Some("EUR".into())
                ),
                (
                    "judge".into(),
                    0,
                    55,
                    Some(0.0),
                    Some(0.25),
                    Some("EUR".into())
                ),
            ]
        );
        let flaky: Vec<Option<i64>> = client
            .query("SELECT flaky FROM runs ORDER BY trial", &[])
            .unwrap()
            .iter()
            .map(|r| r.get(0))
            .collect();
        assert_eq!(flaky, [Some(1), None]);
    }

    /// Two migrators at once, each on its own connection, released together: both end
    /// at the current version, one of them having migrated from 0 and the other having
    /// waited for it (neither fails on tables the other made), and there is one set of
    /// tables and one version row.
    #[test]
    #[ignore = "needs a PostgreSQL server: AGENTEST_TEST_POSTGRES (see tests/postgres/cluster.sh); run with --ignored"]
    fn concurrent_migrators_migrate_once() {
        let db = Database::new();
        let start = Arc::new(std::sync::Barrier::new(2));
        let threads: Vec<_> = (0..2)
            .map(|_| {
                let url = db.url.clone();
                let start = Arc::clone(&start);
                std::thread::spawn(move || {
                    let mut client = connect(&url).unwrap();
                    start.wait();
                    migrate(&mut client).unwrap()
                })
            })
            .collect();
        let mut found: Vec<Found> = threads.into_iter().map(|t| t.join().unwrap()).collect();
        found.sort_by_key(|f| match f {
            Found::Current { from } => *from,
            Found::Newer(v) => *v,
        });
        assert_eq!(
            found,
            [Found::Current { from: 0 }, Found::Current { from: VERSION }]
        );
        let mut client = connect(&db.url).unwrap();
        let tables: i64 = client
            .query_one(
                "SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = 'public'",
                &[],
            )
            .unwrap()
            .get(0);
        assert_eq!(
            tables, 9,
            "executions, runs, request_starts, spend, repeats, endpoint_forms, calibrations, run_usage, agentest_schema"
        );
        let rows: i64 = client
            .query_one("SELECT COUNT(*) FROM agentest_schema", &[])
            .unwrap()
            .get(0);
        assert_eq!(rows, 1);
    }

    /// A store whose version row says VERSION + 1 is refused, and left as it was.
    #[test]
    #[ignore = "needs a PostgreSQL server: AGENTEST_TEST_POSTGRES (see tests/postgres/cluster.sh); run with --ignored"]
    fn a_newer_store_is_refused_and_left_unchanged() {
        let db = Database::new();
        let mut client = connect(&db.url).unwrap();
        client
            .batch_execute(&format!(
                "CREATE TABLE agentest_schema (version INTEGER NOT NULL);
                 INSERT INTO agentest_schema VALUES ({});
                 CREATE TABLE from_the_future (x INTEGER);",
                VERSION + 1
            ))
            .unwrap();
        let before = shape(&mut client);
        assert_eq!(migrate(&mut client).unwrap(), Found::Newer(VERSION + 1));
        assert_eq!(shape(&mut client), before);
        assert!(
            !before.0.iter().any(|p| p.starts_with("runs.")),
            "{before:?}"
        );
    }

    /// A wrong password and a missing database: errors that say so, without the
    /// password (neither the wrong one nor the right one).
    #[test]
    #[ignore = "needs a PostgreSQL server: AGENTEST_TEST_POSTGRES (see tests/postgres/cluster.sh); run with --ignored"]
    fn connection_errors_name_their_cause_and_not_the_password() {
        let db = Database::new();
        let config: Config = db.url.parse().unwrap();
        let password = String::from_utf8(config.get_password().unwrap().to_vec()).unwrap();
        let wrong_password = "Wr0ngPassw0rdXyz";
        let wrong = db
            .url
            .replacen(&format!(":{password}@"), &format!(":{wrong_password}@"), 1);
        assert_ne!(wrong, db.url);
        let err = connect(&wrong).err().expect("a wrong password is refused");
        let text = format!("{} {err:?}", error_text(&err));
        assert!(text.contains("password authentication failed"), "{text}");
        assert!(
            !text.contains(wrong_password) && !text.contains(&password),
            "{text}"
        );

        let missing = with_database(&db.url, "agentest_test_no_such_database");
        let err = connect(&missing)
            .err()
            .expect("a missing database is refused");
        let text = format!("{} {err:?}", error_text(&err));
        assert!(
            text.contains("database \"agentest_test_no_such_database\" does not exist"),
            "{text}"
        );
        assert!(!text.contains(&password), "{text}");
    }

    /// The TLS choice: the throwaway cluster speaks no TLS, so the default `prefer`
    /// falls back to the clear (through the rustls connector's request), `disable`
    /// never asks, and `require` is refused with a reason; the session says it is
    /// agentest's.
    #[test]
    #[ignore = "needs a PostgreSQL server: AGENTEST_TEST_POSTGRES (see tests/postgres/cluster.sh); run with --ignored"]
    fn tls_follows_the_urls_sslmode() {
        let db = Database::new();
        let sep = if db.url.contains('?') { '&' } else { '?' };
        for (url, tls) in [
            (db.url.clone(), "prefer"),
            (format!("{}{sep}sslmode=disable", db.url), "disable"),
        ] {
            let mut client = connect(&url).unwrap_or_else(|e| panic!("{tls}: {e}"));
            let name: String = client
                .query_one("SELECT current_setting('application_name')", &[])
                .unwrap()
                .get(0);
            assert_eq!(name, "agentest", "{tls}");
        }
        let err = connect(&format!("{}{sep}sslmode=require", db.url))
            .err()
            .expect("require against a server without TLS is refused");
        let text = error_text(&err);
        assert!(text.contains("TLS"), "{text}");
    }

    /// Without a server: a URL that does not parse, and a port nothing listens on. The
    /// errors say which, and never the password.
    #[test]
    fn errors_without_a_server_name_their_cause_and_not_the_password() {
        let password = "Secr3tPassw0rdAbc";
        let err = connect(&format!("postgres://agentest:{password}@127.0.0.1:port/db"))
            .err()
            .expect("a port that is not a number");
        let text = format!("{} {err:?}", error_text(&err));
        assert!(text.contains("invalid value for option `port`"), "{text}");
        assert!(!text.contains(password), "{text}");

        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        drop(listener);
        let err = connect(&format!(
            "postgres://agentest:{password}@127.0.0.1:{port}/db"
        ))
        .err()
        .expect("nothing listens");
        let text = format!("{} {err:?}", error_text(&err));
        assert!(text.contains("error connecting to server"), "{text}");
        assert!(text.contains("Connection refused"), "{text}");
        assert!(!text.contains(password), "{text}");
    }

    #[test]
    fn urls_name_another_database() {
        assert_eq!(
            with_database("postgres://u:p@127.0.0.1:5/agentest", "x"),
            "postgres://u:p@127.0.0.1:5/x"
        );
        assert_eq!(
            with_database("postgres://u:p@h:5/a?sslmode=disable", "x"),
            "postgres://u:p@h:5/x?sslmode=disable"
        );
        assert_eq!(with_database("postgres://h", "x"), "postgres://h/x");
    }
}
