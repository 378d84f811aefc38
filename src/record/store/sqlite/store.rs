//! The SQLite backend: the embedded store's SQL. Every write transaction is IMMEDIATE,
//! so that the processes of a nextest run queue for the write lock at its start instead
//! of failing at commit.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use rusqlite::{params, params_from_iter, Connection, OptionalExtension, Row, TransactionBehavior};

use crate::errors::{DbError, StoreError};
use crate::record::rfc3339;
use crate::record::store::backend::{self, known_form, Answer, Backend, ExecutionOwner, Write};
use crate::record::store::model::{
    Claim, Decision, Doomed, ExecutionFilter, ExecutionInfo, ExecutionRow, Filter, FilterValue,
    FlakyRow, Planned, RepeatEnd, Resumed, RunRow, Stored, StoredCalibration, StoredRepeat,
    StoredRun, Work,
};
use crate::record::store::row::{self, Owner, RunEnd};
use crate::util::StoreAddress;

/// An open SQLite store.
pub(crate) struct Sqlite {
    conn: Connection,
    address: StoreAddress,
    /// The file as opened, to notice it deleted or replaced while the run writes.
    identity: Option<(u64, u64)>,
}

impl Sqlite {
    pub(super) fn new(conn: Connection, path: &Path) -> Sqlite {
        Sqlite {
            conn,
            address: StoreAddress::File(path.to_path_buf()),
            identity: identity(path),
        }
    }

    fn path(&self) -> PathBuf {
        self.address
            .file()
            .map(Path::to_path_buf)
            .unwrap_or_default()
    }

    /// `e` as the store's error, with the operating system's own error when SQLite's
    /// is an I/O one ("disk I/O error" says nothing of a full disk or a file size limit).
    fn db(&self, e: rusqlite::Error) -> DbError {
        described(&self.conn, e)
    }
}

/// See [`Sqlite::db`].
fn described(conn: &Connection, e: rusqlite::Error) -> DbError {
    // SAFETY: the handle of a connection this thread holds, used at once; this only
    // reads the errno SQLite kept from its last failed system call.
    let errno = unsafe { rusqlite::ffi::sqlite3_system_errno(conn.handle()) };
    let io = matches!(
        e.sqlite_error_code(),
        Some(
            rusqlite::ErrorCode::SystemIoFailure
                | rusqlite::ErrorCode::DiskFull
                | rusqlite::ErrorCode::CannotOpen
                | rusqlite::ErrorCode::ReadOnly
                | rusqlite::ErrorCode::PermissionDenied
        )
    );
    DbError::Sqlite {
        source: e,
        os: (io && errno != 0).then(|| std::io::Error::from_raw_os_error(errno)),
    }
}

/// The device and inode of the file at `path`.
fn identity(path: &Path) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino()))
}

/// Whether the file at `path` still starts as an SQLite database does.
fn is_database(path: &Path) -> bool {
    use std::io::Read;
    let mut head = [0u8; 16];
    std::fs::File::open(path)
        .and_then(|mut f| f.read_exact(&mut head))
        .is_ok_and(|()| &head == b"SQLite format 3\0")
}

/// A run's columns as [`run_row`] reads them; its tokens, cost and currency from its
/// `run_usage` rows.
const COLUMNS: &str = "id, execution_id, trial, status, verdict, started_at, completed_at, \
     COALESCE(error, reason), json_extract(metadata, '$.latency_ms'), retry_of, suite, blame, \
     json_array_length(messages) / 2, \
     (SELECT SUM(tokens) FROM run_usage u WHERE u.run_id = runs.id), \
     (SELECT SUM(cost) FROM run_usage u WHERE u.run_id = runs.id), \
     (SELECT MAX(currency) FROM run_usage u WHERE u.run_id = runs.id), \
     json_extract(metadata, '$.stability.passed'), json_extract(metadata, '$.stability.failed')";

/// A filter's value as SQLite's.
fn sql_value(v: FilterValue) -> rusqlite::types::Value {
    match v {
        FilterValue::Text(t) => rusqlite::types::Value::Text(t),
        FilterValue::Id(i) => rusqlite::types::Value::Integer(i),
    }
}

fn run_row(r: &Row<'_>) -> rusqlite::Result<RunRow> {
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
        suite: r.get(10)?,
        blame: r.get(11)?,
        turns: r.get(12)?,
        tokens: r.get(13)?,
        cost: r.get(14)?,
        currency: r.get(15)?,
        repeats_passed: r.get(16)?,
        repeats_failed: r.get(17)?,
    })
}

impl Backend for Sqlite {
    fn address(&self) -> &StoreAddress {
        &self.address
    }

    fn recover(&mut self, lease: std::time::Duration) -> Result<usize, DbError> {
        recover(&self.conn, lease).map_err(|e| self.db(e))
    }

    fn start_execution(&mut self, info: &ExecutionInfo) -> Result<i64, DbError> {
        start_execution(&mut self.conn, info).map_err(|e| self.db(e))
    }

    fn unfinished_execution(&mut self) -> Result<Option<i64>, DbError> {
        self.conn
            .query_row(
                "SELECT MAX(id) FROM executions WHERE finished_at IS NULL AND execution_key IS NULL",
                [],
                |r| r.get(0),
            )
            .map_err(|e| self.db(e))
    }

    fn execution_owner(&mut self, execution: i64) -> Result<ExecutionOwner, DbError> {
        self.conn
            .query_row(
                "SELECT owner_pid, owner_host, heartbeat_at FROM executions WHERE id = ?1",
                [execution],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )
            .map_err(|e| self.db(e))
    }

    fn clear_execution_owner(&mut self, execution: i64) -> Result<(), DbError> {
        self.conn
            .execute(
                "UPDATE executions SET owner_pid = NULL, owner_host = NULL WHERE id = ?1",
                [execution],
            )
            .map(drop)
            .map_err(|e| self.db(e))
    }

    fn queue(&mut self, execution: i64, planned: &[Planned<'_>]) -> Result<(), DbError> {
        queue(&mut self.conn, execution, planned).map_err(|e| self.db(e))
    }

    fn sort_ended(
        &mut self,
        execution: i64,
        present: &HashMap<String, Option<String>>,
    ) -> Result<Resumed, DbError> {
        sort_ended(&mut self.conn, execution, present).map_err(|e| self.db(e))
    }

    fn run_state(
        &mut self,
        execution: i64,
        trial: &str,
    ) -> Result<Option<(String, Option<String>)>, DbError> {
        self.conn
            .prepare_cached(
                "SELECT status, record FROM runs WHERE execution_id = ?1 AND trial = ?2",
            )
            .and_then(|mut stmt| {
                stmt.query_row(params![execution, trial], |r| Ok((r.get(0)?, r.get(1)?)))
                    .optional()
            })
            .map_err(|e| self.db(e))
    }

    fn write_batch(
        &mut self,
        execution: i64,
        writes: &[Write<'_>],
    ) -> (Option<DbError>, Vec<Result<Answer, DbError>>) {
        let apply = |conn: &Connection, w: &Write<'_>| -> rusqlite::Result<Answer> {
            match w {
                Write::Claim(trial) => claim(conn, execution, trial).map(Answer::Claim),
                Write::Start(trial) => claim(conn, execution, trial).map(|_| Answer::Done),
                Write::Done(report) => done(conn, execution, report).map(|()| Answer::Done),
                Write::Release(trial) => release(conn, execution, trial).map(|()| Answer::Done),
                Write::StartRequest {
                    endpoint,
                    limit,
                    window,
                } => start_request(conn, execution, endpoint, *limit, *window).map(Answer::Start),
                Write::Spend { tokens, cost } => {
                    let me = Owner::me();
                    conn.prepare_cached(
                        "INSERT INTO spend (execution_id, owner_pid, owner_host, tokens, cost)
                         VALUES (?1, ?2, ?3, ?4, ?5)",
                    )?
                    .execute(params![execution, me.pid, me.host, *tokens as i64, cost])
                    .map(|_| Answer::Done)
                }
                Write::SpentElsewhere => {
                    let me = Owner::me();
                    conn.prepare_cached(
                        "SELECT COALESCE(SUM(tokens), 0), COALESCE(SUM(cost), 0.0) FROM spend
                         WHERE execution_id = ?1 AND NOT (owner_pid = ?2 AND owner_host = ?3)",
                    )?
                    .query_row(params![execution, me.pid, me.host], |r| {
                        Ok(Answer::Spent(r.get::<_, i64>(0)? as u64, r.get(1)?))
                    })
                }
                Write::LearnForm {
                    endpoint,
                    model,
                    form,
                } => conn
                    .prepare_cached(
                        "INSERT INTO endpoint_forms (endpoint, model, form, learned_at)
                         VALUES (?1, ?2, ?3, ?4)
                         ON CONFLICT (endpoint, model) DO UPDATE
                         SET form = excluded.form, learned_at = excluded.learned_at",
                    )?
                    .execute(params![
                        endpoint,
                        model,
                        form,
                        crate::record::rfc3339(std::time::SystemTime::now())
                    ])
                    .map(|_| Answer::Done),
                Write::KnownForm { endpoint, model } => conn
                    .prepare_cached(
                        "SELECT form FROM endpoint_forms WHERE endpoint = ?1 AND model = ?2",
                    )?
                    .query_row(params![endpoint, model], |r| r.get::<_, String>(0))
                    .optional()
                    .map(|f| Answer::Form(f.as_deref().and_then(known_form))),
            }
        };
        let together = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .and_then(|tx| {
                let results: Vec<_> = writes.iter().map(|w| apply(&tx, w)).collect();
                tx.commit().map(|()| results)
            });
        let (failed, results) = match together {
            Ok(results) => (None, results),
            // Rolled back: nothing of it holds, each write is tried on its own.
            Err(e) => (
                Some(self.db(e)),
                writes.iter().map(|w| apply(&self.conn, w)).collect(),
            ),
        };
        let results = results
            .into_iter()
            .map(|r| r.map_err(|e| self.db(e)))
            .collect();
        (failed, results)
    }

    fn claim_queued(
        &mut self,
        execution: i64,
        n: usize,
        repeats: usize,
    ) -> Result<Vec<Work>, DbError> {
        claim_queued(&mut self.conn, execution, n, repeats).map_err(|e| self.db(e))
    }

    fn end_repeat(
        &mut self,
        execution: i64,
        trial: &str,
        index: u32,
        record: &crate::record::CaseReport,
        decide: &mut dyn FnMut(&[StoredRepeat]) -> Decision,
    ) -> Result<RepeatEnd, DbError> {
        end_repeat(&mut self.conn, execution, trial, index, record, decide).map_err(|e| self.db(e))
    }

    fn open_runs(&mut self, execution: i64) -> Result<(u64, u64), DbError> {
        self.conn
            .query_row(
                "SELECT COUNT(*) FILTER (WHERE status IN ('queued', 'pending')),
                        COUNT(*) FILTER (WHERE status = 'running')
                 FROM runs WHERE execution_id = ?1",
                [execution],
                |r| Ok((r.get::<_, i64>(0)? as u64, r.get::<_, i64>(1)? as u64)),
            )
            .map_err(|e| self.db(e))
    }

    fn end_claimed(
        &mut self,
        execution: i64,
        trials: &[String],
        reason: &str,
    ) -> Result<usize, DbError> {
        let now = rfc3339(std::time::SystemTime::now());
        let me = Owner::me();
        let mut ended = 0;
        for trial in trials {
            ended += self
                .conn
                .execute(
                    "UPDATE runs SET status = 'error', verdict = 'error', completed_at = ?1,
                            error = ?2, reason = ?2
                     WHERE execution_id = ?3 AND trial = ?4
                       AND ((status = 'running' AND owner_pid = ?5 AND owner_host = ?6)
                            OR (repeats IS NOT NULL AND status IN ('queued', 'running')))",
                    params![now, reason, execution, trial, me.pid, me.host],
                )
                .map_err(|e| self.db(e))?;
            // A case whose repeats spread: none of them runs any more.
            self.conn
                .execute(
                    "UPDATE repeats SET status = 'cancelled'
                     WHERE status IN ('queued', 'running')
                       AND run_id = (SELECT id FROM runs WHERE execution_id = ?1 AND trial = ?2)",
                    params![execution, trial],
                )
                .map_err(|e| self.db(e))?;
        }
        Ok(ended)
    }

    fn counts(&mut self) -> Result<(u64, Vec<(String, u64)>), DbError> {
        let counted = self
            .conn
            .query_row("SELECT COUNT(*) FROM executions", [], |r| {
                r.get::<_, i64>(0)
            })
            .and_then(|executions| {
                let mut stmt = self
                    .conn
                    .prepare("SELECT status, COUNT(*) FROM runs GROUP BY status ORDER BY status")?;
                let rows = stmt
                    .query_map([], |r| Ok((r.get(0)?, r.get::<_, i64>(1)? as u64)))?
                    .collect::<rusqlite::Result<Vec<_>>>()?;
                Ok((executions as u64, rows))
            });
        counted.map_err(|e| self.db(e))
    }

    fn heartbeat(&mut self, execution: i64) -> Result<(), DbError> {
        let now = rfc3339(std::time::SystemTime::now());
        let me = Owner::me();
        self.conn
            .execute(
                "UPDATE runs SET heartbeat_at = ?1
                 WHERE execution_id = ?2 AND status = 'running' AND owner_pid = ?3 AND owner_host = ?4",
                params![now, execution, me.pid, me.host],
            )
            .and_then(|_| {
                self.conn.execute(
                    "UPDATE repeats SET heartbeat_at = ?1
                     WHERE status = 'running' AND owner_pid = ?2 AND owner_host = ?3
                       AND run_id IN (SELECT id FROM runs WHERE execution_id = ?4)",
                    params![now, me.pid, me.host, execution],
                )
            })
            .and_then(|_| {
                self.conn.execute(
                    "UPDATE executions SET heartbeat_at = ?1
                     WHERE id = ?2 AND owner_pid = ?3 AND owner_host = ?4",
                    params![now, execution, me.pid, me.host],
                )
            })
            .map(drop)
            .map_err(|e| self.db(e))
    }

    fn finish(&mut self, execution: i64, duration_ms: u64) -> Result<(), DbError> {
        let now = rfc3339(std::time::SystemTime::now());
        // A resumed execution adds this invocation's time to the earlier ones'.
        self.conn
            .execute(
                "UPDATE executions SET duration_ms = COALESCE(duration_ms, 0) + ?1 WHERE id = ?2",
                params![duration_ms as i64, execution],
            )
            .and_then(|_| {
                self.conn.execute(
                    "UPDATE executions SET finished_at = ?1 WHERE id = ?2 AND execution_key IS NULL
                     AND NOT EXISTS (SELECT 1 FROM runs WHERE execution_id = ?2
                                     AND status IN ('queued', 'pending', 'running'))",
                    params![now, execution],
                )
            })
            .map(drop)
            .map_err(|e| self.db(e))
    }

    fn close(self: Box<Self>) -> Result<(), StoreError> {
        let path = self.path();
        let opened = self.identity;
        drop(self);
        if identity(&path) != opened {
            return Err(StoreError::Vanished { path });
        }
        if !is_database(&path) {
            return Err(StoreError::Damaged { path });
        }
        Ok(())
    }

    fn list(&mut self, f: &Filter) -> Result<Vec<RunRow>, DbError> {
        let (filter, values) = f.where_clause(|n| format!("?{n}"));
        let values: Vec<rusqlite::types::Value> = values.into_iter().map(sql_value).collect();
        let sql = format!(
            "SELECT {COLUMNS} FROM runs {filter} ORDER BY id DESC LIMIT {}",
            f.limit.max(1)
        );
        let rows = self.conn.prepare(&sql).and_then(|mut stmt| {
            stmt.query_map(params_from_iter(values.iter()), run_row)?
                .collect()
        });
        rows.map_err(|e| self.db(e))
    }

    fn show(&mut self, id: i64) -> Result<Option<(RunRow, Option<String>)>, DbError> {
        self.conn
            .query_row(
                &format!("SELECT {COLUMNS}, record FROM runs WHERE id = ?1"),
                [id],
                |r| Ok((run_row(r)?, r.get::<_, Option<String>>(18)?)),
            )
            .optional()
            .map_err(|e| self.db(e))
    }

    fn errored(&mut self, execution: Option<i64>) -> Result<HashMap<String, i64>, DbError> {
        // -1 matches no execution: the second form then decides.
        let rows = self
            .conn
            .prepare(
                "SELECT trial, id FROM runs WHERE status = 'error' AND (
                     execution_id = ?1 OR (?1 = -1 AND id IN (
                         SELECT MAX(id) FROM runs WHERE status IN ('completed', 'error') GROUP BY trial)))",
            )
            .and_then(|mut stmt| {
                stmt.query_map([execution.unwrap_or(-1)], |r| Ok((r.get(0)?, r.get(1)?)))?
                    .collect()
            });
        rows.map_err(|e| self.db(e))
    }

    fn execution_root(&mut self, id: Option<i64>) -> Result<Option<(i64, String)>, DbError> {
        execution_root(&self.conn, id).map_err(|e| self.db(e))
    }

    fn executions(&mut self, f: &ExecutionFilter) -> Result<Vec<ExecutionRow>, DbError> {
        let (filter, values) = f.where_clause(|n| format!("?{n}"));
        let values: Vec<rusqlite::types::Value> = values.into_iter().map(sql_value).collect();
        let heads = self
            .conn
            .prepare(&format!(
                "SELECT e.id, e.execution_key, e.started_at, e.duration_ms, e.command, e.root,
                        e.git_commit, e.git_branch, e.ci_run
                 FROM executions e {filter} ORDER BY e.id DESC LIMIT {}",
                f.limit.max(1)
            ))
            .and_then(|mut q| {
                q.query_map(params_from_iter(values.iter()), |r| r.try_into())?
                    .collect::<rusqlite::Result<Vec<_>>>()
            })
            .map_err(|e| self.db(e))?;
        let mut executions = backend::executions_of(heads);
        if executions.is_empty() {
            return Ok(executions);
        }
        let ids: Vec<String> = executions.iter().map(|e| e.id.to_string()).collect();
        let ids = ids.join(", ");
        // Numbers only: the runs' own columns, and the usage from its index alone.
        let counts = self
            .conn
            .prepare(&format!(
                "SELECT execution_id, COALESCE(verdict, status, ''), COUNT(*),
                        COALESCE(SUM(flaky), 0)
                 FROM runs WHERE execution_id IN ({ids}) GROUP BY 1, 2"
            ))
            .and_then(|mut q| {
                q.query_map([], |r| r.try_into())?
                    .collect::<rusqlite::Result<Vec<_>>>()
            })
            .map_err(|e| self.db(e))?;
        let usage = self
            .conn
            .prepare(&format!(
                "SELECT execution_id, role, SUM(tokens), SUM(replayed_tokens),
                        TOTAL(cost), TOTAL(replayed_cost), MAX(currency)
                 FROM run_usage WHERE execution_id IN ({ids}) GROUP BY 1, 2"
            ))
            .and_then(|mut q| {
                q.query_map([], |r| r.try_into())?
                    .collect::<rusqlite::Result<Vec<_>>>()
            })
            .map_err(|e| self.db(e))?;
        backend::add_totals(&mut executions, counts, usage);
        Ok(executions)
    }

    fn save_calibration(&mut self, c: &StoredCalibration) -> Result<(), DbError> {
        self.conn
            .execute(
                "INSERT INTO calibrations
                   (judge, fingerprint, calibrated_at, items, runs, accuracy, kappa, flip_rate, report)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)
                 ON CONFLICT (judge, fingerprint) DO UPDATE SET
                   calibrated_at = excluded.calibrated_at, items = excluded.items,
                   runs = excluded.runs, accuracy = excluded.accuracy, kappa = excluded.kappa,
                   flip_rate = excluded.flip_rate, report = excluded.report",
                params![
                    c.judge,
                    c.fingerprint,
                    c.calibrated_at,
                    c.items as i64,
                    c.runs as i64,
                    c.accuracy,
                    c.kappa,
                    c.flip_rate,
                    c.report
                ],
            )
            .map(|_| ())
            .map_err(|e| self.db(e))
    }

    fn calibration(
        &mut self,
        judge: &str,
        fingerprint: &str,
    ) -> Result<Option<StoredCalibration>, DbError> {
        self.conn
            .query_row(
                "SELECT calibrated_at, items, runs, accuracy, kappa, flip_rate, report
                 FROM calibrations WHERE judge = ?1 AND fingerprint = ?2",
                [judge, fingerprint],
                |r| {
                    Ok(StoredCalibration {
                        judge: judge.to_string(),
                        fingerprint: fingerprint.to_string(),
                        calibrated_at: r.get(0)?,
                        items: r.get::<_, i64>(1)? as u64,
                        runs: r.get::<_, i64>(2)? as u64,
                        accuracy: r.get(3)?,
                        kappa: r.get(4)?,
                        flip_rate: r.get(5)?,
                        report: r.get(6)?,
                    })
                },
            )
            .optional()
            .map_err(|e| self.db(e))
    }

    fn execution_by_key(&mut self, key: &str) -> Result<Option<i64>, DbError> {
        self.conn
            .query_row(
                "SELECT id FROM executions WHERE execution_key = ?1",
                [key],
                |r| r.get(0),
            )
            .optional()
            .map_err(|e| self.db(e))
    }

    fn stored(&mut self, id: Option<i64>) -> Result<Option<Stored>, DbError> {
        stored(&self.conn, id).map_err(|e| self.db(e))
    }

    fn delete(&mut self, d: &Doomed) -> Result<usize, DbError> {
        delete(&mut self.conn, d).map_err(|e| self.db(e))
    }

    fn verdicts(&mut self, last: usize) -> Result<Vec<FlakyRow>, DbError> {
        let rows = self
            .conn
            .prepare(
                "SELECT execution_id, trial, json_extract(metadata, '$.input_hash'), verdict,
                        json_extract(metadata, '$.stability.pass_rate')
                 FROM runs
                 WHERE execution_id IN (SELECT id FROM executions ORDER BY id DESC LIMIT ?1)
                   AND verdict IN ('passed', 'failed')
                 ORDER BY trial, execution_id",
            )
            .and_then(|mut stmt| {
                stmt.query_map([last as i64], |r| {
                    Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
                })?
                .collect()
            });
        rows.map_err(|e| self.db(e))
    }
}

/// See [`Backend::sort_ended`].
fn sort_ended(
    conn: &mut Connection,
    execution: i64,
    present: &HashMap<String, Option<String>>,
) -> rusqlite::Result<Resumed> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let rows: Vec<(i64, String, Option<String>)> = {
        let mut stmt = tx.prepare(
            "SELECT id, trial, record FROM runs WHERE execution_id = ?1
             AND status IN ('completed', 'error') ORDER BY id",
        )?;
        let rows = stmt.query_map([execution], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?;
        rows.collect::<Result<_, _>>()?
    };
    let (resumed, again) = row::sort_ended(rows, present);
    for id in again {
        tx.execute(
            "UPDATE runs SET status = 'queued', verdict = NULL, started_at = NULL,
                    completed_at = NULL, owner_pid = NULL, owner_host = NULL,
                    heartbeat_at = NULL, success = NULL, score = NULL, reason = NULL,
                    error = NULL, messages = NULL, metadata = NULL, record = NULL, blame = NULL,
                    flaky = NULL
             WHERE id = ?1",
            [id],
        )?;
    }
    tx.commit()?;
    Ok(resumed)
}

/// See [`Backend::start_execution`].
fn start_execution(conn: &mut Connection, info: &ExecutionInfo) -> rusqlite::Result<i64> {
    let now = rfc3339(std::time::SystemTime::now());
    let command = serde_json::to_string(&info.command).unwrap_or_default();
    let commit = row::git_commit(&info.git_from);
    let branch = row::git_branch(&info.git_from).or_else(|| info.ci_branch.clone());
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    if let Some(key) = &info.key {
        let found: Option<i64> = tx
            .query_row(
                "SELECT id FROM executions WHERE execution_key = ?1",
                [key],
                |r| r.get(0),
            )
            .optional()?;
        if let Some(id) = found {
            tx.commit()?;
            return Ok(id);
        }
    }
    let me = Owner::me();
    let (owner_pid, owner_host) = match info.exclusive {
        true => (Some(me.pid), Some(me.host)),
        false => (None, None),
    };
    tx.execute(
        "INSERT INTO executions (started_at, command, version, git_commit, nextest_run_id, root,
                                 execution_key, owner_pid, owner_host, heartbeat_at,
                                 git_branch, ci_run)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?1, ?10, ?11)",
        params![
            now,
            command,
            env!("CARGO_PKG_VERSION"),
            commit,
            info.nextest_run_id,
            info.root,
            info.key,
            owner_pid,
            owner_host,
            branch,
            info.ci_run
        ],
    )?;
    let id = tx.last_insert_rowid();
    tx.commit()?;
    Ok(id)
}

/// See [`Backend::queue`].
fn queue(conn: &mut Connection, execution: i64, planned: &[Planned<'_>]) -> rusqlite::Result<()> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    {
        let mut insert = tx.prepare(
            "INSERT INTO runs (execution_id, trial, suite, case_id, file, retry_of, repeats)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
             ON CONFLICT (execution_id, trial) DO NOTHING
             RETURNING id",
        )?;
        let mut repeat = tx.prepare("INSERT INTO repeats (run_id, idx) VALUES (?1, ?2)")?;
        for p in planned {
            let id: Option<i64> = insert
                .query_row(
                    params![execution, p.trial, p.suite, p.case_id, p.file, p.retry_of, p.repeats],
                    |r| r.get(0),
                )
                .optional()?;
            // A run queued before keeps its repeats as they are.
            if let (Some(id), Some(n)) = (id, p.repeats) {
                for idx in 1..=n {
                    repeat.execute(params![id, idx])?;
                }
            }
        }
    }
    tx.commit()
}

/// The atomic claim of the seed's run processor: `queued` to `running` in one
/// conditional UPDATE, so two processes never run the same run.
fn claim(conn: &Connection, execution: i64, trial: &str) -> rusqlite::Result<Claim> {
    let now = rfc3339(std::time::SystemTime::now());
    let me = Owner::me();
    let n = conn
        .prepare_cached(
            "UPDATE runs SET status = 'running', started_at = ?1, heartbeat_at = ?1, owner_pid = ?2, owner_host = ?3
             WHERE execution_id = ?4 AND trial = ?5 AND status IN ('queued', 'pending')
               AND repeats IS NULL",
        )?
        .execute(params![now, me.pid, me.host, execution, trial])?;
    if n == 1 {
        return Ok(Claim::Granted);
    }
    let owner = conn
        .prepare_cached(
            "SELECT owner_pid, owner_host FROM runs WHERE execution_id = ?1 AND trial = ?2",
        )?
        .query_row(params![execution, trial], |r| Ok((r.get(0)?, r.get(1)?)))
        .optional()?;
    Ok(me.claim_lost_to(owner))
}

/// A request start at `endpoint` if the last `window` holds fewer than `limit` starts
/// of the execution (under SQLite's write lock, so no other process counts at the same
/// time), else how long until the oldest leaves the window. Starts older than the
/// window are dropped: only the window is ever read.
fn start_request(
    conn: &Connection,
    execution: i64,
    endpoint: &str,
    limit: u32,
    window: std::time::Duration,
) -> rusqlite::Result<Option<std::time::Duration>> {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64);
    let window_ms = window.as_millis() as i64;
    conn.prepare_cached(
        "DELETE FROM request_starts WHERE execution_id = ?1 AND endpoint = ?2 AND started_ms <= ?3",
    )?
    .execute(params![execution, endpoint, now - window_ms])?;
    let (count, oldest): (i64, Option<i64>) = conn
        .prepare_cached(
            "SELECT COUNT(*), MIN(started_ms) FROM request_starts
             WHERE execution_id = ?1 AND endpoint = ?2",
        )?
        .query_row(params![execution, endpoint], |r| Ok((r.get(0)?, r.get(1)?)))?;
    if count < i64::from(limit) {
        conn.prepare_cached(
            "INSERT INTO request_starts (execution_id, endpoint, started_ms) VALUES (?1, ?2, ?3)",
        )?
        .execute(params![execution, endpoint, now])?;
        return Ok(None);
    }
    let free_at = oldest.unwrap_or(now) + window_ms;
    Ok(Some(std::time::Duration::from_millis(
        (free_at - now).max(1) as u64,
    )))
}

/// Queues again the run of `trial` if this process claimed it and it did not end,
/// saying why in its `reason` (`runs list` shows it).
fn release(conn: &Connection, execution: i64, trial: &str) -> rusqlite::Result<()> {
    let me = Owner::me();
    conn.prepare_cached(
        "UPDATE runs SET status = 'queued', owner_pid = NULL, owner_host = NULL,
                heartbeat_at = NULL, started_at = NULL,
                reason = 'interrupted before it ended; --resume runs it again'
         WHERE execution_id = ?1 AND trial = ?2 AND status = 'running'
           AND owner_pid = ?3 AND owner_host = ?4",
    )?
    .execute(params![execution, trial, me.pid, me.host])?;
    Ok(())
}

/// See [`Backend::recover`].
fn recover(conn: &Connection, lease: std::time::Duration) -> rusqlite::Result<usize> {
    let cutoff = row::lease_cutoff(lease);
    // Each running run's id, owner (pid, host) and last heartbeat.
    type Owned = (i64, Option<i64>, Option<String>, Option<String>);
    let running: Vec<Owned> = {
        let mut stmt = conn.prepare(
            "SELECT id, owner_pid, owner_host, heartbeat_at FROM runs
             WHERE status = 'running' AND repeats IS NULL",
        )?;
        let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))?;
        rows.collect::<Result<_, _>>()?
    };
    let mut recovered = 0;
    for (id, pid, owner_host, beat) in running {
        if row::abandoned(pid, owner_host.as_deref(), beat.as_deref(), &cutoff) {
            // Only if it is still the dead owner's run as read: another process that
            // recovered it meanwhile may have claimed it (a new owner and heartbeat),
            // and queuing that claim again would run the case twice.
            recovered += conn.execute(
                "UPDATE runs SET status = 'queued', owner_pid = NULL, owner_host = NULL,
                        heartbeat_at = NULL, started_at = NULL
                 WHERE id = ?1 AND status = 'running' AND owner_pid IS ?2
                   AND owner_host IS ?3 AND heartbeat_at IS ?4",
                params![id, pid, owner_host, beat],
            )?;
        }
    }
    // The repeats a dead worker was running, likewise.
    type OwnedRepeat = (i64, i64, Option<i64>, Option<String>, Option<String>);
    let running: Vec<OwnedRepeat> = {
        let mut stmt = conn.prepare(
            "SELECT run_id, idx, owner_pid, owner_host, heartbeat_at FROM repeats
             WHERE status = 'running'",
        )?;
        let rows = stmt.query_map([], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
        })?;
        rows.collect::<Result<_, _>>()?
    };
    for (run, idx, pid, owner_host, beat) in running {
        if row::abandoned(pid, owner_host.as_deref(), beat.as_deref(), &cutoff) {
            recovered += conn.execute(
                "UPDATE repeats SET status = 'queued', owner_pid = NULL, owner_host = NULL,
                        heartbeat_at = NULL, started_at = NULL
                 WHERE run_id = ?1 AND idx = ?2 AND status = 'running' AND owner_pid IS ?3
                   AND owner_host IS ?4 AND heartbeat_at IS ?5",
                params![run, idx, pid, owner_host, beat],
            )?;
        }
    }
    Ok(recovered)
}

/// See [`Backend::claim_queued`]: the queued repeats of cases not yet decided first
/// (oldest case first, in repeat order), then whole runs, in one transaction under
/// SQLite's write lock, so no other process claims between the choice and the update.
fn claim_queued(
    conn: &mut Connection,
    execution: i64,
    n: usize,
    most_repeats: usize,
) -> rusqlite::Result<Vec<Work>> {
    let now = rfc3339(std::time::SystemTime::now());
    let me = Owner::me();
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let mut work = Vec::new();
    {
        let repeats: Vec<(i64, i64, String)> = tx
            .prepare_cached(
                "SELECT r.run_id, r.idx, u.trial FROM repeats r JOIN runs u ON u.id = r.run_id
                 WHERE u.execution_id = ?1 AND r.status = 'queued'
                   AND u.status IN ('queued', 'running')
                 ORDER BY r.run_id, r.idx LIMIT ?2",
            )?
            .query_map(params![execution, n.min(most_repeats) as i64], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?))
            })?
            .collect::<Result<_, _>>()?;
        let mut take = tx.prepare_cached(
            "UPDATE repeats SET status = 'running', owner_pid = ?1, owner_host = ?2,
                    started_at = ?3, heartbeat_at = ?3
             WHERE run_id = ?4 AND idx = ?5 AND status = 'queued'",
        )?;
        // The case's own row stays as it is until a repeat ends (see `end_repeat`): a
        // claim touches only repeats, so claims and ends never wait on each other in a
        // circle (PostgreSQL's claims lock repeats, its ends the run first).
        for (run, idx, trial) in repeats {
            take.execute(params![me.pid, me.host, now, run, idx])?;
            work.push(Work {
                trial,
                repeat: Some(idx as u32),
            });
        }
    }
    let left = n.saturating_sub(work.len());
    if left > 0 {
        let whole: Vec<String> = tx
            .prepare_cached(
                "UPDATE runs SET status = 'running', started_at = ?1, heartbeat_at = ?1,
                        owner_pid = ?2, owner_host = ?3
                 WHERE id IN (SELECT id FROM runs WHERE execution_id = ?4 AND repeats IS NULL
                              AND status IN ('queued', 'pending') ORDER BY id LIMIT ?5)
                 RETURNING trial",
            )?
            .query_map(params![now, me.pid, me.host, execution, left as i64], |r| {
                r.get(0)
            })?
            .collect::<Result<Vec<String>, _>>()?;
        work.extend(whole.into_iter().map(|trial| Work {
            trial,
            repeat: None,
        }));
    }
    tx.commit()?;
    Ok(work)
}

/// See [`Backend::end_repeat`]. Under SQLite's write lock, so two workers ending the
/// last repeats of one case at once decide it once.
fn end_repeat(
    conn: &mut Connection,
    execution: i64,
    trial: &str,
    index: u32,
    record: &crate::record::CaseReport,
    decide: &mut dyn FnMut(&[StoredRepeat]) -> Decision,
) -> rusqlite::Result<RepeatEnd> {
    let now = rfc3339(std::time::SystemTime::now());
    let me = Owner::me();
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let run: Option<(i64, String)> = tx
        .prepare_cached("SELECT id, status FROM runs WHERE execution_id = ?1 AND trial = ?2")?
        .query_row(params![execution, trial], |r| Ok((r.get(0)?, r.get(1)?)))
        .optional()?;
    let Some((run, status)) = run else {
        return Ok(RepeatEnd::Late);
    };
    let json = serde_json::to_string(record).unwrap_or_default();
    // After its case was decided, a repeat is not counted: `cancelled`, with its record.
    let late = row::ended(&status);
    let ended = tx
        .prepare_cached(
            "UPDATE repeats SET status = ?1, ended_at = ?2, record = ?3
             WHERE run_id = ?4 AND idx = ?5 AND status = 'running'
               AND owner_pid = ?6 AND owner_host = ?7",
        )?
        .execute(params![
            if late { "cancelled" } else { "ended" },
            now,
            json,
            run,
            index,
            me.pid,
            me.host
        ])?;
    if ended == 0 || late {
        // Taken back meanwhile (this worker was thought dead), or decided already.
        tx.commit()?;
        return Ok(RepeatEnd::Late);
    }
    let repeats: Vec<StoredRepeat> = tx
        .prepare_cached("SELECT idx, status, record FROM repeats WHERE run_id = ?1 ORDER BY idx")?
        .query_map([run], |r| {
            let status: String = r.get(1)?;
            Ok(StoredRepeat {
                index: r.get::<_, i64>(0)? as u32,
                ended: if status == "ended" { r.get(2)? } else { None },
                running: status == "running",
            })
        })?
        .collect::<Result<_, _>>()?;
    let decision = decide(&repeats);
    if let Decision::Record(case) = &decision {
        done(&tx, execution, case)?;
    } else {
        tx.execute(
            "UPDATE runs SET status = 'running', started_at = COALESCE(started_at, ?1)
             WHERE id = ?2 AND status = 'queued'",
            params![now, run],
        )?;
    }
    if !matches!(decision, Decision::Open) {
        tx.execute(
            "UPDATE repeats SET status = 'cancelled' WHERE run_id = ?1 AND status = 'queued'",
            [run],
        )?;
    }
    tx.commit()?;
    Ok(match decision {
        Decision::Record(case) => RepeatEnd::Decided(case),
        Decision::Halt | Decision::Open => RepeatEnd::Counted,
    })
}

/// A case's end. A case the plan did not queue (one that failed to load) gets its row
/// here.
fn done(conn: &Connection, execution: i64, r: &crate::record::CaseReport) -> rusqlite::Result<()> {
    let end = RunEnd::of(r);
    // Without usage rows, the one upsert is the end (its trigger drops any old rows).
    if end.usage.is_empty() {
        return end_run(conn, execution, r, &end);
    }
    // With them, the row and its rows as one: a savepoint is a transaction of its own
    // when the write goes alone, and nests in the wave's.
    let alone = conn.is_autocommit();
    conn.prepare_cached("SAVEPOINT run_end")?.execute([])?;
    let written = end_run(conn, execution, r, &end).and_then(|()| {
        conn.prepare_cached("RELEASE run_end")?
            .execute([])
            .map(drop)
    });
    if written.is_err() {
        // Alone, a failed commit may leave the transaction open: every later write would
        // nest in it and seem to succeed. In a wave, the wave's transaction decides.
        let undo = match alone {
            true => "ROLLBACK",
            false => "ROLLBACK TO run_end; RELEASE run_end",
        };
        if !conn.is_autocommit() {
            let _ = conn.execute_batch(undo);
        }
    }
    written
}

/// [`done`]'s writes: the run's row, then its usage rows.
fn end_run(
    conn: &Connection,
    execution: i64,
    r: &crate::record::CaseReport,
    end: &RunEnd,
) -> rusqlite::Result<()> {
    conn.prepare_cached(
        "INSERT INTO runs (execution_id, trial, suite, case_id, file, status, verdict, started_at,
                           completed_at, success, reason, error, messages, metadata, record, parameters,
                           score, persona, blame, flaky)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?18, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?19, ?20)
         ON CONFLICT (execution_id, trial) DO UPDATE SET
             status = excluded.status, verdict = excluded.verdict,
             started_at = COALESCE(runs.started_at, excluded.started_at),
             completed_at = excluded.completed_at, success = excluded.success,
             reason = excluded.reason, error = excluded.error, messages = excluded.messages,
             metadata = excluded.metadata, record = excluded.record,
             parameters = excluded.parameters, score = excluded.score,
             persona = excluded.persona, blame = excluded.blame, flaky = excluded.flaky",
    )?
    .execute(params![
        execution,
        r.trial,
        r.suite,
        r.id,
        end.file,
        end.status,
        end.verdict,
        end.completed_at,
        end.success,
        end.reason,
        end.error,
        end.messages,
        end.metadata,
        end.record,
        end.parameters,
        end.score,
        r.persona,
        end.started_at,
        end.blame,
        end.flaky
    ])?;
    // The upsert's trigger dropped the rows of an earlier end: these are the run's.
    for u in &end.usage {
        conn.prepare_cached(
            "INSERT INTO run_usage (run_id, execution_id, role, tokens, replayed_tokens, cost,
                                    replayed_cost, currency)
             SELECT id, execution_id, ?3, ?4, ?5, ?6, ?7, ?8 FROM runs
             WHERE execution_id = ?1 AND trial = ?2",
        )?
        .execute(params![
            execution,
            r.trial,
            u.role,
            u.tokens,
            u.replayed_tokens,
            u.cost,
            u.replayed_cost,
            end.currency
        ])?;
    }
    Ok(())
}

/// See [`Backend::execution_root`].
fn execution_root(conn: &Connection, id: Option<i64>) -> rusqlite::Result<Option<(i64, String)>> {
    conn.query_row(
        "SELECT id, root FROM executions WHERE id = ?1
             OR (?1 = -1 AND id = (SELECT MAX(id) FROM executions WHERE execution_key IS NULL))",
        [id.unwrap_or(-1)],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )
    .optional()
}

/// See [`Backend::stored`].
fn stored(conn: &Connection, id: Option<i64>) -> rusqlite::Result<Option<Stored>> {
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
    let rows = stmt
        .query_map([execution], |r| {
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
        })?
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Some(Stored::assemble(
        execution, root, &command, started_at, duration, rows,
    )))
}

/// See [`Backend::delete`].
fn delete(conn: &mut Connection, d: &Doomed) -> rusqlite::Result<usize> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A run's `run_usage` rows as its end writes them (from its report) are the rows
    /// the migration to schema 10 makes of a run stored before (from its metadata).
    #[test]
    fn a_runs_usage_rows_are_the_same_from_its_report_and_from_its_metadata() {
        use crate::protocol::{Role, TokenUsage};
        use crate::record::{CaseReport, Cost, RoleCost};
        let mut conn = Connection::open_in_memory().unwrap();
        super::super::schema::migrate(&mut conn).unwrap();
        conn.execute(
            "INSERT INTO executions (started_at, command, version, root) VALUES ('t', '[]', 'v', 'r')",
            [],
        )
        .unwrap();
        let usage = |p, c| TokenUsage {
            prompt_tokens: p,
            completion_tokens: c,
            ..TokenUsage::default()
        };
        let report = CaseReport {
            trial: "s::a".into(),
            suite: "s".into(),
            id: "a".into(),
            usage: [(Role::Agent, usage(100, 20))].into(),
            replayed_usage: [(Role::Judge, usage(50, 5)), (Role::Simulator, usage(0, 0))].into(),
            cost: Some(Cost {
                currency: "EUR".into(),
                spent: Some(0.5),
                replayed: Some(0.25),
                by_role: [
                    (
                        Role::Agent,
                        RoleCost {
                            spent: Some(0.5),
                            replayed: Some(0.0),
                        },
                    ),
                    (
                        Role::Judge,
                        RoleCost {
                            spent: Some(0.0),
                            replayed: Some(0.25),
                        },
                    ),
                ]
                .into(),
            }),
            ..CaseReport::default()
        };
        done(&conn, 1, &report).unwrap();
        type Row = (String, i64, i64, Option<f64>, Option<f64>, Option<String>);
        let rows = |conn: &Connection| -> Vec<Row> {
            conn.prepare(
                "SELECT role, tokens, replayed_tokens, cost, replayed_cost, currency
                 FROM run_usage ORDER BY role",
            )
            .unwrap()
            .query_map([], |r| {
                Ok((
                    r.get(0)?,
                    r.get(1)?,
                    r.get(2)?,
                    r.get(3)?,
                    r.get(4)?,
                    r.get(5)?,
                ))
            })
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap()
        };
        let written = rows(&conn);
        assert_eq!(
            written,
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
        conn.execute("DELETE FROM run_usage", []).unwrap();
        conn.execute(
            &backend::usage_rows_sql(
                &super::super::schema::METADATA,
                "WHERE runs.metadata IS NOT NULL",
            ),
            [],
        )
        .unwrap();
        assert_eq!(rows(&conn), written);
        // Ended again (a repeat's decision rewritten): its rows are replaced, not added.
        done(&conn, 1, &report).unwrap();
        assert_eq!(rows(&conn), written);
    }

    /// Another host's running run is taken back once its last heartbeat is older than
    /// the lease, not before.
    #[test]
    fn another_hosts_run_is_taken_back_when_its_lease_lapses() {
        let mut conn = Connection::open_in_memory().unwrap();
        super::super::schema::migrate(&mut conn).unwrap();
        conn.execute(
            "INSERT INTO executions (started_at, command, version, root) VALUES ('t', '[]', 'v', 'r')",
            [],
        )
        .unwrap();
        let beat = rfc3339(std::time::SystemTime::now() - std::time::Duration::from_secs(10));
        conn.execute(
            "INSERT INTO runs (execution_id, trial, suite, case_id, file, status, owner_pid,
                               owner_host, heartbeat_at)
             VALUES (1, 's::a', 's', 'a', 's.jsonl', 'running', 1, 'elsewhere', ?1)",
            [&beat],
        )
        .unwrap();
        assert_eq!(
            recover(&conn, std::time::Duration::from_secs(30)).unwrap(),
            0
        );
        assert_eq!(
            recover(&conn, std::time::Duration::from_secs(5)).unwrap(),
            1
        );
        let status: String = conn
            .query_row("SELECT status FROM runs", [], |r| r.get(0))
            .unwrap();
        assert_eq!(status, "queued");
    }

    /// A claim names who holds the run: this process claiming a trial twice is told so
    /// (`Twice`, a bug), never that another process ran it; a run another process holds
    /// is `Elsewhere`; a trial never queued runs here.
    #[test]
    fn a_claim_held_by_this_process_is_not_another_processs() {
        let mut conn = Connection::open_in_memory().unwrap();
        super::super::schema::migrate(&mut conn).unwrap();
        conn.execute(
            "INSERT INTO executions (started_at, command, version, root) VALUES ('t', '[]', 'v', 'r')",
            [],
        )
        .unwrap();
        let execution = conn.last_insert_rowid();
        for trial in ["s::mine", "s::theirs"] {
            conn.execute(
                "INSERT INTO runs (execution_id, trial, suite, case_id, file) VALUES (?1, ?2, 's', 'x', 's.jsonl')",
                params![execution, trial],
            )
            .unwrap();
        }
        assert_eq!(claim(&conn, execution, "s::mine").unwrap(), Claim::Granted);
        assert_eq!(claim(&conn, execution, "s::mine").unwrap(), Claim::Twice);
        conn.execute(
            "UPDATE runs SET status = 'running', owner_pid = ?1, owner_host = ?2 WHERE trial = 's::theirs'",
            params![std::process::id() + 1, Owner::me().host],
        )
        .unwrap();
        assert_eq!(
            claim(&conn, execution, "s::theirs").unwrap(),
            Claim::Elsewhere
        );
        assert_eq!(
            claim(&conn, execution, "s::never-queued").unwrap(),
            Claim::Granted
        );
    }
}
