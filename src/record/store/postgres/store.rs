//! The PostgreSQL backend: the shared store's SQL. The same rows as SQLite's, so that
//! both export the same; what differs is the dialect (`$n` parameters, `IS NOT
//! DISTINCT FROM`, `jsonb` reads of the JSON kept as text) and how concurrent writers
//! meet: row locks under READ COMMITTED instead of SQLite's one write lock, so a
//! conditional UPDATE that another transaction got to first matches no row.

use std::collections::HashMap;

use postgres::types::ToSql;
use postgres::{Client, GenericClient, Row, Statement};

use super::schema::PARSED;
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

/// An open PostgreSQL store.
pub(crate) struct Postgres {
    client: Client,
    address: StoreAddress,
    /// The writer's statements, prepared on this connection.
    prepared: Prepared,
}

impl Postgres {
    pub(super) fn new(client: Client, address: StoreAddress) -> Postgres {
        Postgres {
            client,
            address,
            prepared: Prepared::default(),
        }
    }
}

/// The statements every case writes (its claim, its end, the ledger's), each prepared
/// once per connection: the server parses and plans it once, and each use is one round
/// trip instead of two (parse, then bind and execute). Emptied after any error, in case
/// the error took a statement with it.
#[derive(Default)]
struct Prepared(HashMap<&'static str, Statement>);

impl Prepared {
    fn get(
        &mut self,
        c: &mut impl GenericClient,
        sql: &'static str,
    ) -> std::result::Result<Statement, postgres::Error> {
        if let Some(s) = self.0.get(sql) {
            return Ok(s.clone());
        }
        let s = c.prepare(sql)?;
        self.0.insert(sql, s.clone());
        Ok(s)
    }
}

type Result<T> = std::result::Result<T, DbError>;

fn db(e: postgres::Error) -> DbError {
    DbError::Postgres(e)
}

/// A run's columns as [`run_row`] reads them, from `runs` joined with [`PARSED`] (its
/// metadata parsed once, as `m`); its tokens, cost and currency from its `run_usage`
/// rows.
static COLUMNS: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
    format!(
        "id, execution_id, trial, status, verdict, started_at, completed_at, \
         COALESCE(error, reason), (m ->> 'latency_ms')::bigint, retry_of, suite, blame, \
         (jsonb_array_length(messages::jsonb) / 2)::bigint, {RUN_USAGE}, \
         (m #>> '{{stability,passed}}')::bigint, (m #>> '{{stability,failed}}')::bigint"
    )
});

/// A run's tokens spent, cost spent and currency, from its `run_usage` rows.
const RUN_USAGE: &str = "(SELECT SUM(tokens) FROM run_usage u WHERE u.run_id = runs.id)::bigint, \
     (SELECT SUM(cost) FROM run_usage u WHERE u.run_id = runs.id), \
     (SELECT MAX(currency) FROM run_usage u WHERE u.run_id = runs.id)";

/// A filter's value as a PostgreSQL parameter.
fn sql_value(v: FilterValue) -> Box<dyn ToSql + Sync> {
    match v {
        FilterValue::Text(t) => Box::new(t),
        FilterValue::Id(i) => Box::new(i),
    }
}

fn run_row(r: &Row) -> RunRow {
    RunRow {
        id: r.get(0),
        execution: r.get(1),
        trial: r.get(2),
        status: r.get(3),
        verdict: r.get(4),
        started_at: r.get(5),
        completed_at: r.get(6),
        reason: r.get(7),
        latency_ms: r.get(8),
        retry_of: r.get(9),
        suite: r.get(10),
        blame: r.get(11),
        turns: r.get(12),
        tokens: r.get(13),
        cost: r.get(14),
        currency: r.get(15),
        repeats_passed: r.get(16),
        repeats_failed: r.get(17),
    }
}

impl Backend for Postgres {
    fn address(&self) -> &StoreAddress {
        &self.address
    }

    fn recover(&mut self, lease: std::time::Duration) -> Result<usize> {
        let cutoff = row::lease_cutoff(lease);
        let running = self
            .client
            .query(
                "SELECT id, owner_pid, owner_host, heartbeat_at FROM runs
                 WHERE status = 'running' AND repeats IS NULL",
                &[],
            )
            .map_err(db)?;
        let mut recovered = 0;
        for r in running {
            let (id, pid, host, beat): (i64, Option<i64>, Option<String>, Option<String>) =
                (r.get(0), r.get(1), r.get(2), r.get(3));
            if row::abandoned(pid, host.as_deref(), beat.as_deref(), &cutoff) {
                // Only if it is still the dead owner's run as read (see SQLite's).
                recovered += self
                    .client
                    .execute(
                        "UPDATE runs SET status = 'queued', owner_pid = NULL, owner_host = NULL,
                                heartbeat_at = NULL, started_at = NULL
                         WHERE id = $1 AND status = 'running'
                           AND owner_pid IS NOT DISTINCT FROM $2
                           AND owner_host IS NOT DISTINCT FROM $3
                           AND heartbeat_at IS NOT DISTINCT FROM $4",
                        &[&id, &pid, &host, &beat],
                    )
                    .map_err(db)? as usize;
            }
        }
        // The repeats a dead worker was running, likewise.
        let running = self
            .client
            .query(
                "SELECT run_id, idx, owner_pid, owner_host, heartbeat_at FROM repeats
                 WHERE status = 'running'",
                &[],
            )
            .map_err(db)?;
        for r in running {
            let (run, idx, pid, host, beat): (
                i64,
                i64,
                Option<i64>,
                Option<String>,
                Option<String>,
            ) = (r.get(0), r.get(1), r.get(2), r.get(3), r.get(4));
            if row::abandoned(pid, host.as_deref(), beat.as_deref(), &cutoff) {
                recovered += self
                    .client
                    .execute(
                        "UPDATE repeats SET status = 'queued', owner_pid = NULL, owner_host = NULL,
                                heartbeat_at = NULL, started_at = NULL
                         WHERE run_id = $1 AND idx = $2 AND status = 'running'
                           AND owner_pid IS NOT DISTINCT FROM $3
                           AND owner_host IS NOT DISTINCT FROM $4
                           AND heartbeat_at IS NOT DISTINCT FROM $5",
                        &[&run, &idx, &pid, &host, &beat],
                    )
                    .map_err(db)? as usize;
            }
        }
        Ok(recovered)
    }

    fn start_execution(&mut self, info: &ExecutionInfo) -> Result<i64> {
        let now = rfc3339(std::time::SystemTime::now());
        let command = serde_json::to_string(&info.command).unwrap_or_default();
        let commit = row::git_commit(&info.git_from);
        let branch = row::git_branch(&info.git_from).or_else(|| info.ci_branch.clone());
        let version = env!("CARGO_PKG_VERSION");
        // The first process with the key makes the row; the others, at the same
        // moment or later, find it: ON CONFLICT waits for the first's commit.
        let me = Owner::me();
        let (owner_pid, owner_host) = match info.exclusive {
            true => (Some(i64::from(me.pid)), Some(me.host)),
            false => (None, None),
        };
        let made = self
            .client
            .query_opt(
                "INSERT INTO executions (started_at, command, version, git_commit, nextest_run_id,
                                         root, execution_key, owner_pid, owner_host, heartbeat_at,
                                         git_branch, ci_run)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $1, $10, $11)
                 ON CONFLICT (execution_key) DO NOTHING
                 RETURNING id",
                &[
                    &now,
                    &command,
                    &version,
                    &commit,
                    &info.nextest_run_id,
                    &info.root,
                    &info.key,
                    &owner_pid,
                    &owner_host,
                    &branch,
                    &info.ci_run,
                ],
            )
            .map_err(db)?;
        match made {
            Some(r) => Ok(r.get(0)),
            None => self
                .client
                .query_one(
                    "SELECT id FROM executions WHERE execution_key = $1",
                    &[&info.key],
                )
                .map(|r| r.get(0))
                .map_err(db),
        }
    }

    fn unfinished_execution(&mut self) -> Result<Option<i64>> {
        self.client
            .query_one(
                "SELECT MAX(id) FROM executions WHERE finished_at IS NULL AND execution_key IS NULL",
                &[],
            )
            .map(|r| r.get(0))
            .map_err(db)
    }

    fn execution_owner(&mut self, execution: i64) -> Result<ExecutionOwner> {
        let row = self
            .client
            .query_one(
                "SELECT owner_pid, owner_host, heartbeat_at FROM executions WHERE id = $1",
                &[&execution],
            )
            .map_err(db)?;
        Ok((row.get(0), row.get(1), row.get(2)))
    }

    fn clear_execution_owner(&mut self, execution: i64) -> Result<()> {
        self.client
            .execute(
                "UPDATE executions SET owner_pid = NULL, owner_host = NULL WHERE id = $1",
                &[&execution],
            )
            .map(drop)
            .map_err(db)
    }

    fn queue(&mut self, execution: i64, planned: &[Planned<'_>]) -> Result<()> {
        // One transaction, a statement per chunk: a hundred thousand runs are twenty round
        // trips, and no statement's arrays (or returned rows) hold the whole plan at once.
        let mut tx = self.client.transaction().map_err(db)?;
        for chunk in planned.chunks(QUEUE_CHUNK) {
            queue_chunk(&mut tx, execution, chunk)?;
        }
        tx.commit().map_err(db)?;
        // A table that grew by thousands of rows at once is one the planner still
        // thinks small until autovacuum gets to it: it scans the whole table for each
        // wave's starts and ends (73 s of the server's CPU over a 100,000-case run,
        // against 5 s). Its statistics are taken now instead, in a fraction of a second.
        // Only a speed-up: a server that refuses it (a statement timeout) runs the
        // cases all the same.
        if planned.len() >= ANALYZE_FROM {
            if let Err(e) = self.client.batch_execute("ANALYZE runs") {
                eprintln!("agentest: warning: the run store could not analyze its runs table ({e}); PostgreSQL may plan its writes slowly until autovacuum does");
            }
        }
        Ok(())
    }

    fn sort_ended(
        &mut self,
        execution: i64,
        present: &HashMap<String, Option<String>>,
    ) -> Result<Resumed> {
        let mut tx = self.client.transaction().map_err(db)?;
        let rows = tx
            .query(
                "SELECT id, trial, record FROM runs WHERE execution_id = $1
                 AND status IN ('completed', 'error') ORDER BY id FOR UPDATE",
                &[&execution],
            )
            .map_err(db)?
            .iter()
            .map(|r| (r.get(0), r.get(1), r.get(2)))
            .collect();
        let (resumed, again) = row::sort_ended(rows, present);
        tx.execute(
            "UPDATE runs SET status = 'queued', verdict = NULL, started_at = NULL,
                    completed_at = NULL, owner_pid = NULL, owner_host = NULL,
                    heartbeat_at = NULL, success = NULL, score = NULL, reason = NULL,
                    error = NULL, messages = NULL, metadata = NULL, record = NULL, blame = NULL,
                    flaky = NULL
             WHERE id = ANY($1)",
            &[&again],
        )
        .map_err(db)?;
        tx.execute("DELETE FROM run_usage WHERE run_id = ANY($1)", &[&again])
            .map_err(db)?;
        tx.commit().map_err(db)?;
        Ok(resumed)
    }

    fn write_batch(
        &mut self,
        execution: i64,
        writes: &[Write<'_>],
    ) -> (Option<DbError>, Vec<Result<Answer>>) {
        let prepared = &mut self.prepared;
        let together = self.client.transaction().and_then(|mut tx| {
            // A wave's ends go in one statement (one round trip, one plan), unless a
            // trial ends twice in it, which one upsert cannot take.
            let ends: Vec<&crate::record::CaseReport> = writes
                .iter()
                .filter_map(|w| match w {
                    Write::Done(r) => Some(*r),
                    _ => None,
                })
                .collect();
            let mut trials: Vec<&str> = ends.iter().map(|r| r.trial.as_str()).collect();
            trials.sort_unstable();
            trials.dedup();
            let together = ends.len() > 1 && trials.len() == ends.len();
            // Likewise the wave's starts, first.
            let starts: Vec<&str> = writes
                .iter()
                .filter_map(|w| match w {
                    Write::Start(t) => Some(*t),
                    _ => None,
                })
                .collect();
            if !starts.is_empty() {
                start_many(&mut tx, prepared, execution, &starts)?;
            }
            if together {
                done_many(&mut tx, prepared, execution, &ends)?;
            }
            let mut results = Vec::with_capacity(writes.len());
            for w in writes {
                if matches!(w, Write::Start(_)) || together && matches!(w, Write::Done(_)) {
                    results.push(Ok(Answer::Done));
                    continue;
                }
                // A statement that fails aborts PostgreSQL's transaction: the rest
                // could not run in it, so the batch is redone write by write.
                results.push(Ok(apply(&mut tx, prepared, execution, w)?));
            }
            tx.commit().map(|()| results)
        });
        match together {
            Ok(results) => (None, results),
            Err(e) => {
                self.prepared.0.clear();
                let results = writes
                    .iter()
                    .map(|w| apply(&mut self.client, &mut self.prepared, execution, w).map_err(db))
                    .collect();
                (Some(db(e)), results)
            }
        }
    }

    fn claim_queued(&mut self, execution: i64, n: usize, most_repeats: usize) -> Result<Vec<Work>> {
        let now = rfc3339(std::time::SystemTime::now());
        let me = Owner::me();
        let pid = i64::from(me.pid);
        let mut tx = self.client.transaction().map_err(db)?;
        // The queued repeats of cases not yet decided, locked as they are chosen (rows
        // another claimer holds are skipped, not waited for). The case's own row is not
        // touched: ends lock it first, then repeats, so claims lock only repeats.
        let repeats = tx
            .query(
                "WITH picked AS (
                     SELECT r.run_id, r.idx FROM repeats r JOIN runs u ON u.id = r.run_id
                     WHERE u.execution_id = $1 AND r.status = 'queued'
                       AND u.status IN ('queued', 'running')
                     ORDER BY r.run_id, r.idx LIMIT $2
                     FOR UPDATE OF r SKIP LOCKED)
                 UPDATE repeats r SET status = 'running', owner_pid = $3, owner_host = $4,
                        started_at = $5, heartbeat_at = $5
                 FROM picked
                 WHERE r.run_id = picked.run_id AND r.idx = picked.idx AND r.status = 'queued'
                 RETURNING r.run_id, r.idx",
                &[
                    &execution,
                    &(n.min(most_repeats) as i64),
                    &pid,
                    &me.host,
                    &now,
                ],
            )
            .map_err(db)?;
        let mut picked: Vec<(i64, i64)> = repeats.iter().map(|r| (r.get(0), r.get(1))).collect();
        picked.sort_unstable();
        let ids: Vec<i64> = picked.iter().map(|(run, _)| *run).collect();
        let trials: HashMap<i64, String> = tx
            .query("SELECT id, trial FROM runs WHERE id = ANY($1)", &[&ids])
            .map_err(db)?
            .iter()
            .map(|r| (r.get(0), r.get(1)))
            .collect();
        let mut work: Vec<Work> = picked
            .into_iter()
            .filter_map(|(run, idx)| {
                Some(Work {
                    trial: trials.get(&run)?.clone(),
                    repeat: Some(idx as u32),
                })
            })
            .collect();
        let left = n.saturating_sub(work.len());
        if left > 0 {
            // The rows are chosen and locked in one statement; rows another claimer
            // holds are skipped, not waited for, and the status is checked again on
            // update.
            let whole = tx
                .query(
                    "UPDATE runs SET status = 'running', started_at = $1, heartbeat_at = $1,
                            owner_pid = $2, owner_host = $3
                     WHERE id IN (SELECT id FROM runs WHERE execution_id = $4
                                  AND repeats IS NULL AND status IN ('queued', 'pending')
                                  ORDER BY id LIMIT $5 FOR UPDATE SKIP LOCKED)
                       AND status IN ('queued', 'pending')
                     RETURNING trial",
                    &[&now, &pid, &me.host, &execution, &(left as i64)],
                )
                .map_err(db)?;
            work.extend(whole.iter().map(|r| Work {
                trial: r.get(0),
                repeat: None,
            }));
        }
        tx.commit().map_err(db)?;
        Ok(work)
    }

    fn end_repeat(
        &mut self,
        execution: i64,
        trial: &str,
        index: u32,
        record: &crate::record::CaseReport,
        decide: &mut dyn FnMut(&[StoredRepeat]) -> Decision,
    ) -> Result<RepeatEnd> {
        let now = rfc3339(std::time::SystemTime::now());
        let me = Owner::me();
        let prepared = &mut self.prepared;
        let mut tx = self.client.transaction().map_err(db)?;
        // The case's row, locked: two workers ending its last repeats at once decide it
        // one after the other, and the second finds it decided.
        let Some(row) = tx
            .query_opt(
                "SELECT id, status FROM runs WHERE execution_id = $1 AND trial = $2 FOR UPDATE",
                &[&execution, &trial],
            )
            .map_err(db)?
        else {
            return Ok(RepeatEnd::Late);
        };
        let (run, status): (i64, String) = (row.get(0), row.get(1));
        let json = serde_json::to_string(record).unwrap_or_default();
        // After its case was decided, a repeat is not counted: `cancelled`, with its
        // record.
        let late = row::ended(&status);
        let ended = tx
            .execute(
                "UPDATE repeats SET status = $1, ended_at = $2, record = $3
                 WHERE run_id = $4 AND idx = $5 AND status = 'running'
                   AND owner_pid = $6 AND owner_host = $7",
                &[
                    &if late { "cancelled" } else { "ended" },
                    &now,
                    &json,
                    &run,
                    &i64::from(index),
                    &i64::from(me.pid),
                    &me.host,
                ],
            )
            .map_err(db)?;
        if ended == 0 || late {
            // Taken back meanwhile (this worker was thought dead), or decided already.
            tx.commit().map_err(db)?;
            return Ok(RepeatEnd::Late);
        }
        let repeats: Vec<StoredRepeat> = tx
            .query(
                "SELECT idx, status, record FROM repeats WHERE run_id = $1 ORDER BY idx",
                &[&run],
            )
            .map_err(db)?
            .iter()
            .map(|r| {
                let status: String = r.get(1);
                StoredRepeat {
                    index: r.get::<_, i64>(0) as u32,
                    ended: if status == "ended" { r.get(2) } else { None },
                    running: status == "running",
                }
            })
            .collect();
        let decision = decide(&repeats);
        let written = match &decision {
            Decision::Record(case) => done(&mut tx, prepared, execution, case),
            Decision::Halt | Decision::Open => tx
                .execute(
                    "UPDATE runs SET status = 'running', started_at = COALESCE(started_at, $1)
                     WHERE id = $2 AND status = 'queued'",
                    &[&now, &run],
                )
                .map(drop),
        }
        .and_then(|()| match decision {
            Decision::Open => Ok(0),
            _ => tx.execute(
                "UPDATE repeats SET status = 'cancelled' WHERE run_id = $1 AND status = 'queued'",
                &[&run],
            ),
        });
        if let Err(e) = written {
            // Statements prepared in a failed transaction are not trusted again.
            self.prepared.0.clear();
            return Err(db(e));
        }
        tx.commit().map_err(db)?;
        Ok(match decision {
            Decision::Record(case) => RepeatEnd::Decided(case),
            Decision::Halt | Decision::Open => RepeatEnd::Counted,
        })
    }

    fn run_state(
        &mut self,
        execution: i64,
        trial: &str,
    ) -> Result<Option<(String, Option<String>)>> {
        let row = self
            .client
            .query_opt(
                "SELECT status, record FROM runs WHERE execution_id = $1 AND trial = $2",
                &[&execution, &trial],
            )
            .map_err(db)?;
        Ok(row.map(|r| (r.get(0), r.get(1))))
    }

    fn open_runs(&mut self, execution: i64) -> Result<(u64, u64)> {
        let r = self
            .client
            .query_one(
                "SELECT COUNT(*) FILTER (WHERE status IN ('queued', 'pending')),
                        COUNT(*) FILTER (WHERE status = 'running')
                 FROM runs WHERE execution_id = $1",
                &[&execution],
            )
            .map_err(db)?;
        Ok((r.get::<_, i64>(0) as u64, r.get::<_, i64>(1) as u64))
    }

    fn end_claimed(&mut self, execution: i64, trials: &[String], reason: &str) -> Result<usize> {
        let now = rfc3339(std::time::SystemTime::now());
        let me = Owner::me();
        let ended = self
            .client
            .execute(
                "UPDATE runs SET status = 'error', verdict = 'error', completed_at = $1,
                        error = $2, reason = $2
                 WHERE execution_id = $3 AND trial = ANY($4)
                   AND ((status = 'running' AND owner_pid = $5 AND owner_host = $6)
                        OR (repeats IS NOT NULL AND status IN ('queued', 'running')))",
                &[
                    &now,
                    &reason,
                    &execution,
                    &trials,
                    &i64::from(me.pid),
                    &me.host,
                ],
            )
            .map_err(db)?;
        // A case whose repeats spread: none of them runs any more.
        self.client
            .execute(
                "UPDATE repeats SET status = 'cancelled'
                 WHERE status IN ('queued', 'running')
                   AND run_id IN (SELECT id FROM runs WHERE execution_id = $1 AND trial = ANY($2))",
                &[&execution, &trials],
            )
            .map_err(db)?;
        Ok(ended as usize)
    }

    fn counts(&mut self) -> Result<(u64, Vec<(String, u64)>)> {
        let executions: i64 = self
            .client
            .query_one("SELECT COUNT(*) FROM executions", &[])
            .map_err(db)?
            .get(0);
        let rows = self
            .client
            .query(
                "SELECT status, COUNT(*) FROM runs GROUP BY status ORDER BY status",
                &[],
            )
            .map_err(db)?;
        Ok((
            executions as u64,
            rows.iter()
                .map(|r| (r.get(0), r.get::<_, i64>(1) as u64))
                .collect(),
        ))
    }

    fn heartbeat(&mut self, execution: i64) -> Result<()> {
        let now = rfc3339(std::time::SystemTime::now());
        let me = Owner::me();
        self.client
            .execute(
                "UPDATE runs SET heartbeat_at = $1
                 WHERE execution_id = $2 AND status = 'running' AND owner_pid = $3 AND owner_host = $4",
                &[&now, &execution, &i64::from(me.pid), &me.host],
            )
            .map_err(db)?;
        self.client
            .execute(
                "UPDATE repeats SET heartbeat_at = $1
                 WHERE status = 'running' AND owner_pid = $2 AND owner_host = $3
                   AND run_id IN (SELECT id FROM runs WHERE execution_id = $4)",
                &[&now, &i64::from(me.pid), &me.host, &execution],
            )
            .map_err(db)?;
        self.client
            .execute(
                "UPDATE executions SET heartbeat_at = $1
                 WHERE id = $2 AND owner_pid = $3 AND owner_host = $4",
                &[&now, &execution, &i64::from(me.pid), &me.host],
            )
            .map(drop)
            .map_err(db)
    }

    fn finish(&mut self, execution: i64, duration_ms: u64) -> Result<()> {
        let now = rfc3339(std::time::SystemTime::now());
        let duration = duration_ms as i64;
        self.client
            .execute(
                "UPDATE executions SET duration_ms = COALESCE(duration_ms, 0) + $1 WHERE id = $2",
                &[&duration, &execution],
            )
            .and_then(|_| {
                self.client.execute(
                    "UPDATE executions SET finished_at = $1 WHERE id = $2 AND execution_key IS NULL
                     AND NOT EXISTS (SELECT 1 FROM runs WHERE execution_id = $2
                                     AND status IN ('queued', 'pending', 'running'))",
                    &[&now, &execution],
                )
            })
            .map(drop)
            .map_err(db)
    }

    fn close(self: Box<Self>) -> std::result::Result<(), StoreError> {
        // Nothing to check: the server keeps what was committed.
        drop(self);
        Ok(())
    }

    fn list(&mut self, f: &Filter) -> Result<Vec<RunRow>> {
        let (filter, values) = f.where_clause(|n| format!("${n}"));
        let values: Vec<Box<dyn ToSql + Sync>> = values.into_iter().map(sql_value).collect();
        let sql = format!(
            "SELECT {} FROM runs {PARSED} {filter} ORDER BY id DESC LIMIT {}",
            *COLUMNS,
            f.limit.max(1)
        );
        let params: Vec<&(dyn ToSql + Sync)> = values.iter().map(|v| v.as_ref()).collect();
        let rows = self.client.query(&sql, &params).map_err(db)?;
        Ok(rows.iter().map(run_row).collect())
    }

    fn show(&mut self, id: i64) -> Result<Option<(RunRow, Option<String>)>> {
        let r = self
            .client
            .query_opt(
                &format!(
                    "SELECT {}, record FROM runs {PARSED} WHERE id = $1",
                    *COLUMNS
                ),
                &[&id],
            )
            .map_err(db)?;
        Ok(r.map(|r| (run_row(&r), r.get(18))))
    }

    fn errored(&mut self, execution: Option<i64>) -> Result<HashMap<String, i64>> {
        // -1 matches no execution: the second form then decides.
        let rows = self
            .client
            .query(
                "SELECT trial, id FROM runs WHERE status = 'error' AND (
                     execution_id = $1 OR ($1 = -1 AND id IN (
                         SELECT MAX(id) FROM runs WHERE status IN ('completed', 'error') GROUP BY trial)))",
                &[&execution.unwrap_or(-1)],
            )
            .map_err(db)?;
        Ok(rows.iter().map(|r| (r.get(0), r.get(1))).collect())
    }

    fn execution_root(&mut self, id: Option<i64>) -> Result<Option<(i64, String)>> {
        execution_root(&mut self.client, id)
    }

    fn executions(&mut self, f: &ExecutionFilter) -> Result<Vec<ExecutionRow>> {
        let (filter, values) = f.where_clause(|n| format!("${n}"));
        let values: Vec<Box<dyn ToSql + Sync>> = values.into_iter().map(sql_value).collect();
        let params: Vec<&(dyn ToSql + Sync)> = values.iter().map(|v| v.as_ref()).collect();
        let heads = self
            .client
            .query(
                &format!(
                    "SELECT e.id, e.execution_key, e.started_at, e.duration_ms, e.command, e.root,
                            e.git_commit, e.git_branch, e.ci_run
                     FROM executions e {filter} ORDER BY e.id DESC LIMIT {}",
                    f.limit.max(1)
                ),
                &params,
            )
            .map_err(db)?;
        let mut executions = backend::executions_of(
            heads
                .iter()
                .map(|r| {
                    (
                        r.get(0),
                        r.get(1),
                        r.get(2),
                        r.get(3),
                        r.get(4),
                        r.get(5),
                        r.get(6),
                        r.get(7),
                        r.get(8),
                    )
                })
                .collect(),
        );
        if executions.is_empty() {
            return Ok(executions);
        }
        let ids: Vec<i64> = executions.iter().map(|e| e.id).collect();
        // Numbers only: the runs' own columns, and the usage from its index alone.
        let counts = self
            .client
            .query(
                "SELECT execution_id, COALESCE(verdict, status, ''), COUNT(*),
                        COALESCE(SUM(flaky), 0)::bigint
                 FROM runs WHERE execution_id = ANY($1) GROUP BY 1, 2",
                &[&ids],
            )
            .map_err(db)?;
        let usage = self
            .client
            .query(
                "SELECT execution_id, role, SUM(tokens)::bigint, SUM(replayed_tokens)::bigint,
                        COALESCE(SUM(cost), 0), COALESCE(SUM(replayed_cost), 0), MAX(currency)
                 FROM run_usage WHERE execution_id = ANY($1) GROUP BY 1, 2",
                &[&ids],
            )
            .map_err(db)?;
        backend::add_totals(
            &mut executions,
            counts
                .iter()
                .map(|r| (r.get(0), r.get(1), r.get(2), r.get(3)))
                .collect(),
            usage
                .iter()
                .map(|r| {
                    (
                        r.get(0),
                        r.get(1),
                        r.get(2),
                        r.get(3),
                        r.get(4),
                        r.get(5),
                        r.get(6),
                    )
                })
                .collect(),
        );
        Ok(executions)
    }

    fn save_calibration(&mut self, c: &StoredCalibration) -> Result<()> {
        self.client
            .execute(
                "INSERT INTO calibrations
                   (judge, fingerprint, calibrated_at, items, runs, accuracy, kappa, flip_rate, report)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
                 ON CONFLICT (judge, fingerprint) DO UPDATE SET
                   calibrated_at = excluded.calibrated_at, items = excluded.items,
                   runs = excluded.runs, accuracy = excluded.accuracy, kappa = excluded.kappa,
                   flip_rate = excluded.flip_rate, report = excluded.report",
                &[
                    &c.judge,
                    &c.fingerprint,
                    &c.calibrated_at,
                    &(c.items as i64),
                    &(c.runs as i64),
                    &c.accuracy,
                    &c.kappa,
                    &c.flip_rate,
                    &c.report,
                ],
            )
            .map(|_| ())
            .map_err(db)
    }

    fn calibration(&mut self, judge: &str, fingerprint: &str) -> Result<Option<StoredCalibration>> {
        self.client
            .query_opt(
                "SELECT calibrated_at, items, runs, accuracy, kappa, flip_rate, report
                 FROM calibrations WHERE judge = $1 AND fingerprint = $2",
                &[&judge, &fingerprint],
            )
            .map(|r| {
                r.map(|r| StoredCalibration {
                    judge: judge.to_string(),
                    fingerprint: fingerprint.to_string(),
                    calibrated_at: r.get(0),
                    items: r.get::<_, i64>(1) as u64,
                    runs: r.get::<_, i64>(2) as u64,
                    accuracy: r.get(3),
                    kappa: r.get(4),
                    flip_rate: r.get(5),
                    report: r.get(6),
                })
            })
            .map_err(db)
    }

    fn execution_by_key(&mut self, key: &str) -> Result<Option<i64>> {
        self.client
            .query_opt(
                "SELECT id FROM executions WHERE execution_key = $1",
                &[&key],
            )
            .map(|r| r.map(|r| r.get(0)))
            .map_err(db)
    }

    fn stored(&mut self, id: Option<i64>) -> Result<Option<Stored>> {
        let Some((execution, root)) = execution_root(&mut self.client, id)? else {
            return Ok(None);
        };
        let e = self
            .client
            .query_one(
                "SELECT command, duration_ms, started_at FROM executions WHERE id = $1",
                &[&execution],
            )
            .map_err(db)?;
        let (command, duration, started_at): (String, Option<i64>, String) =
            (e.get(0), e.get(1), e.get(2));
        let rows = self
            .client
            .query(
                "SELECT id, status, started_at, completed_at, success, reason, error, messages,
                        (metadata::jsonb ->> 'latency_ms')::bigint, persona, case_id, record
                 FROM runs WHERE execution_id = $1 AND status IN ('completed', 'error')
                 ORDER BY trial COLLATE \"C\"",
                &[&execution],
            )
            .map_err(db)?;
        let rows = rows
            .iter()
            .map(|r| {
                let success: Option<i64> = r.get(4);
                (
                    StoredRun {
                        id: r.get(0),
                        status: r.get(1),
                        started_at: r.get(2),
                        completed_at: r.get(3),
                        success: success.map(|s| s != 0),
                        reason: r.get(5),
                        error: r.get(6),
                        messages: r.get(7),
                        latency_ms: r.get(8),
                        persona: r.get(9),
                        case_id: r.get(10),
                    },
                    r.get(11),
                )
            })
            .collect();
        Ok(Some(Stored::assemble(
            execution, root, &command, started_at, duration, rows,
        )))
    }

    fn delete(&mut self, d: &Doomed) -> Result<usize> {
        let mut tx = self.client.transaction().map_err(db)?;
        let n = match d {
            Doomed::Run(id) => tx
                .execute("DELETE FROM runs WHERE id = $1", &[id])
                .map_err(db)?,
            Doomed::Execution(id) => {
                let n = tx
                    .execute("DELETE FROM runs WHERE execution_id = $1", &[id])
                    .map_err(db)?;
                tx.execute("DELETE FROM executions WHERE id = $1", &[id])
                    .map_err(db)?;
                n
            }
            Doomed::Before(when) => {
                let n = tx
                    .execute(
                        "DELETE FROM runs WHERE execution_id IN
                             (SELECT id FROM executions WHERE started_at < $1)",
                        &[when],
                    )
                    .map_err(db)?;
                tx.execute("DELETE FROM executions WHERE started_at < $1", &[when])
                    .map_err(db)?;
                n
            }
        };
        tx.commit().map_err(db)?;
        Ok(n as usize)
    }

    fn verdicts(&mut self, last: usize) -> Result<Vec<FlakyRow>> {
        let rows = self
            .client
            .query(
                "SELECT execution_id, trial, metadata::jsonb ->> 'input_hash', verdict,
                        (metadata::jsonb #>> '{stability,pass_rate}')::double precision
                 FROM runs
                 WHERE execution_id IN (SELECT id FROM executions ORDER BY id DESC LIMIT $1)
                   AND verdict IN ('passed', 'failed')
                 ORDER BY trial COLLATE \"C\", execution_id",
                &[&(last as i64)],
            )
            .map_err(db)?;
        Ok(rows
            .iter()
            .map(|r| (r.get(0), r.get(1), r.get(2), r.get(3), r.get(4)))
            .collect())
    }
}

/// One write of a batch, in the transaction or alone.
fn apply(
    c: &mut impl GenericClient,
    p: &mut Prepared,
    execution: i64,
    w: &Write<'_>,
) -> std::result::Result<Answer, postgres::Error> {
    match w {
        Write::Claim(trial) => claim(c, p, execution, trial).map(Answer::Claim),
        Write::Start(trial) => start_many(c, p, execution, &[trial]).map(|()| Answer::Done),
        Write::Done(report) => done(c, p, execution, report).map(|()| Answer::Done),
        Write::Release(trial) => release(c, p, execution, trial).map(|()| Answer::Done),
        Write::StartRequest {
            endpoint,
            limit,
            window,
        } => start_request(c, p, execution, endpoint, *limit, *window).map(Answer::Start),
        Write::Spend { tokens, cost } => {
            let me = Owner::me();
            let insert = p.get(
                c,
                "INSERT INTO spend (execution_id, owner_pid, owner_host, tokens, cost)
                 VALUES ($1, $2, $3, $4, $5)",
            )?;
            c.execute(
                &insert,
                &[
                    &execution,
                    &i64::from(me.pid),
                    &me.host,
                    &(*tokens as i64),
                    cost,
                ],
            )
            .map(|_| Answer::Done)
        }
        Write::SpentElsewhere => {
            let me = Owner::me();
            let sum = p.get(
                c,
                "SELECT COALESCE(SUM(tokens), 0)::bigint, COALESCE(SUM(cost), 0)::double precision
                 FROM spend WHERE execution_id = $1 AND NOT (owner_pid = $2 AND owner_host = $3)",
            )?;
            let r = c.query_one(&sum, &[&execution, &i64::from(me.pid), &me.host])?;
            Ok(Answer::Spent(r.get::<_, i64>(0) as u64, r.get(1)))
        }
        Write::LearnForm {
            endpoint,
            model,
            form,
        } => {
            let upsert = p.get(
                c,
                "INSERT INTO endpoint_forms (endpoint, model, form, learned_at)
                 VALUES ($1, $2, $3, $4)
                 ON CONFLICT (endpoint, model) DO UPDATE
                 SET form = excluded.form, learned_at = excluded.learned_at",
            )?;
            let now = rfc3339(std::time::SystemTime::now());
            c.execute(&upsert, &[endpoint, model, form, &now])
                .map(|_| Answer::Done)
        }
        Write::KnownForm { endpoint, model } => {
            let known = p.get(
                c,
                "SELECT form FROM endpoint_forms WHERE endpoint = $1 AND model = $2",
            )?;
            let row = c.query_opt(&known, &[endpoint, model])?;
            Ok(Answer::Form(
                row.and_then(|r| known_form(&r.get::<_, String>(0))),
            ))
        }
    }
}

/// A request start at `endpoint` if the last `window` holds fewer than `limit` starts
/// of the execution, else how long until the oldest leaves it. Processes counting the
/// same endpoint take turns on an advisory lock held to their transaction's end, and
/// the time is the server's, so machines whose clocks differ share one window.
fn start_request(
    c: &mut impl GenericClient,
    p: &mut Prepared,
    execution: i64,
    endpoint: &str,
    limit: u32,
    window: std::time::Duration,
) -> std::result::Result<Option<std::time::Duration>, postgres::Error> {
    let key = format!("{execution}:{endpoint}");
    let lock = p.get(c, "SELECT pg_advisory_xact_lock(hashtextextended($1, 0))")?;
    c.execute(&lock, &[&key])?;
    let clock = p.get(
        c,
        "SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint",
    )?;
    let now: i64 = c.query_one(&clock, &[])?.get(0);
    let window_ms = window.as_millis() as i64;
    let old = p.get(
        c,
        "DELETE FROM request_starts WHERE execution_id = $1 AND endpoint = $2 AND started_ms <= $3",
    )?;
    c.execute(&old, &[&execution, &endpoint, &(now - window_ms)])?;
    let count = p.get(
        c,
        "SELECT COUNT(*), MIN(started_ms) FROM request_starts WHERE execution_id = $1 AND endpoint = $2",
    )?;
    let r = c.query_one(&count, &[&execution, &endpoint])?;
    let (count, oldest): (i64, Option<i64>) = (r.get(0), r.get(1));
    if count < i64::from(limit) {
        let insert = p.get(
            c,
            "INSERT INTO request_starts (execution_id, endpoint, started_ms) VALUES ($1, $2, $3)",
        )?;
        c.execute(&insert, &[&execution, &endpoint, &now])?;
        return Ok(None);
    }
    let free_at = oldest.unwrap_or(now) + window_ms;
    Ok(Some(std::time::Duration::from_millis(
        (free_at - now).max(1) as u64,
    )))
}

/// The atomic claim: `queued` to `running` in one conditional UPDATE. A concurrent
/// claim of the same row waits for this one's commit, then finds the status changed
/// and matches nothing, so two processes never run the same run.
fn claim(
    c: &mut impl GenericClient,
    p: &mut Prepared,
    execution: i64,
    trial: &str,
) -> std::result::Result<Claim, postgres::Error> {
    let now = rfc3339(std::time::SystemTime::now());
    let me = Owner::me();
    let pid = i64::from(me.pid);
    let update = p.get(
        c,
        "UPDATE runs SET status = 'running', started_at = $1, heartbeat_at = $1, owner_pid = $2,
                owner_host = $3
         WHERE execution_id = $4 AND trial = $5 AND status IN ('queued', 'pending')
           AND repeats IS NULL",
    )?;
    let n = c.execute(&update, &[&now, &pid, &me.host, &execution, &trial])?;
    if n == 1 {
        return Ok(Claim::Granted);
    }
    let owner = p.get(
        c,
        "SELECT owner_pid, owner_host FROM runs WHERE execution_id = $1 AND trial = $2",
    )?;
    let owner = c
        .query_opt(&owner, &[&execution, &trial])?
        .map(|r| (r.get(0), r.get(1)));
    Ok(me.claim_lost_to(owner))
}

/// Queues again the run of `trial` if this process claimed it and it did not end.
fn release(
    c: &mut impl GenericClient,
    p: &mut Prepared,
    execution: i64,
    trial: &str,
) -> std::result::Result<(), postgres::Error> {
    let me = Owner::me();
    let update = p.get(
        c,
        "UPDATE runs SET status = 'queued', owner_pid = NULL, owner_host = NULL,
                heartbeat_at = NULL, started_at = NULL,
                reason = 'interrupted before it ended; --resume runs it again'
         WHERE execution_id = $1 AND trial = $2 AND status = 'running'
           AND owner_pid = $3 AND owner_host = $4",
    )?;
    c.execute(&update, &[&execution, &trial, &i64::from(me.pid), &me.host])?;
    Ok(())
}

/// Marks the runs of `trials` running for this process, in one statement: the starts
/// of an execution of its own, which nobody else claims (see [`Write::Start`]).
fn start_many(
    c: &mut impl GenericClient,
    p: &mut Prepared,
    execution: i64,
    trials: &[&str],
) -> std::result::Result<(), postgres::Error> {
    let now = rfc3339(std::time::SystemTime::now());
    let me = Owner::me();
    let update = p.get(
        c,
        "UPDATE runs SET status = 'running', started_at = $1, heartbeat_at = $1, owner_pid = $2,
                owner_host = $3
         WHERE execution_id = $4 AND trial = ANY($5) AND status IN ('queued', 'pending')
           AND repeats IS NULL",
    )?;
    c.execute(
        &update,
        &[&now, &i64::from(me.pid), &me.host, &execution, &trials],
    )?;
    Ok(())
}

/// The ends of cases (distinct trials) in one statement: each run's columns from its
/// report ([`RunEnd`]); a case the plan did not queue gets its row here.
fn done_many(
    c: &mut impl GenericClient,
    p: &mut Prepared,
    execution: i64,
    reports: &[&crate::record::CaseReport],
) -> std::result::Result<(), postgres::Error> {
    // Rows locked in trial order, as every process of the execution locks them, so that
    // two waves of ends (or a wave and another process's settling) cannot deadlock.
    let mut reports = reports.to_vec();
    reports.sort_by(|a, b| a.trial.cmp(&b.trial));
    let ends: Vec<RunEnd> = reports.iter().map(|r| RunEnd::of(r)).collect();
    let column =
        |f: fn(&crate::record::CaseReport, &RunEnd) -> Option<String>| -> Vec<Option<String>> {
            reports.iter().zip(&ends).map(|(r, e)| f(r, e)).collect()
        };
    let trials = column(|r, _| Some(r.trial.clone()));
    let suites = column(|r, _| Some(r.suite.clone()));
    let ids = column(|r, _| Some(r.id.clone()));
    let files = column(|_, e| Some(e.file.clone()));
    let statuses = column(|_, e| Some(e.status.to_string()));
    let verdicts = column(|_, e| Some(e.verdict.to_string()));
    let completed = column(|_, e| Some(e.completed_at.clone()));
    let started = column(|_, e| Some(e.started_at.clone()));
    let reasons = column(|_, e| e.reason.clone());
    let errors = column(|_, e| e.error.clone());
    let messages = column(|_, e| Some(e.messages.clone()));
    let metadata = column(|_, e| Some(e.metadata.clone()));
    let records = column(|_, e| Some(e.record.clone()));
    let parameters = column(|_, e| e.parameters.clone());
    let personas = column(|r, _| r.persona.clone());
    let blames = column(|_, e| e.blame.map(str::to_string));
    let flaky: Vec<i64> = ends.iter().map(|e| i64::from(e.flaky)).collect();
    let success: Vec<Option<i64>> = ends.iter().map(|e| e.success.map(i64::from)).collect();
    let scores: Vec<Option<f64>> = ends.iter().map(|e| e.score).collect();
    let upsert = p.get(
        c,
        "INSERT INTO runs (execution_id, trial, suite, case_id, file, status, verdict, started_at,
                           completed_at, success, reason, error, messages, metadata, record,
                           parameters, score, persona, blame, flaky)
         SELECT $1, t.trial, t.suite, t.case_id, t.file, t.status, t.verdict, t.started_at,
                t.completed_at, t.success, t.reason, t.error, t.messages, t.metadata, t.record,
                t.parameters, t.score, t.persona, t.blame, t.flaky
         FROM UNNEST($2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[],
                     $8::text[], $9::bigint[], $10::text[], $11::text[], $12::text[],
                     $13::text[], $14::text[], $15::text[], $16::float8[], $17::text[],
                     $18::text[], $19::text[], $20::bigint[])
              AS t(trial, suite, case_id, file, status, verdict, completed_at, success, reason,
                   error, messages, metadata, record, parameters, score, persona, started_at,
                   blame, flaky)
         ON CONFLICT (execution_id, trial) DO UPDATE SET
             status = excluded.status, verdict = excluded.verdict,
             started_at = COALESCE(runs.started_at, excluded.started_at),
             completed_at = excluded.completed_at, success = excluded.success,
             reason = excluded.reason, error = excluded.error, messages = excluded.messages,
             metadata = excluded.metadata, record = excluded.record,
             parameters = excluded.parameters, score = excluded.score,
             persona = excluded.persona, blame = excluded.blame, flaky = excluded.flaky
         RETURNING id, trial",
    )?;
    let ended: Vec<(i64, String)> = c
        .query(
            &upsert,
            &[
                &execution,
                &trials,
                &suites,
                &ids,
                &files,
                &statuses,
                &verdicts,
                &completed,
                &success,
                &reasons,
                &errors,
                &messages,
                &metadata,
                &records,
                &parameters,
                &scores,
                &personas,
                &started,
                &blames,
                &flaky,
            ],
        )?
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect();
    // Each run's usage rows anew (a run ended before, then again, keeps only the last).
    let id_of: HashMap<&str, i64> = ended.iter().map(|(id, t)| (t.as_str(), *id)).collect();
    let all: Vec<i64> = ended.iter().map(|(id, _)| *id).collect();
    let clear = p.get(c, "DELETE FROM run_usage WHERE run_id = ANY($1)")?;
    c.execute(&clear, &[&all])?;
    let (mut run, mut role, mut tokens, mut replayed_tokens) = (vec![], vec![], vec![], vec![]);
    let (mut cost, mut replayed_cost, mut currency) = (vec![], vec![], vec![]);
    for (r, e) in reports.iter().zip(&ends) {
        let Some(id) = id_of.get(r.trial.as_str()) else {
            continue;
        };
        for u in &e.usage {
            run.push(*id);
            role.push(u.role);
            tokens.push(u.tokens);
            replayed_tokens.push(u.replayed_tokens);
            cost.push(u.cost);
            replayed_cost.push(u.replayed_cost);
            currency.push(e.currency.clone());
        }
    }
    if !run.is_empty() {
        let insert = p.get(
            c,
            "INSERT INTO run_usage (run_id, execution_id, role, tokens, replayed_tokens, cost,
                                    replayed_cost, currency)
             SELECT t.run_id, $1, t.role, t.tokens, t.replayed_tokens, t.cost,
                    t.replayed_cost, t.currency
             FROM UNNEST($2::bigint[], $3::text[], $4::bigint[], $5::bigint[], $6::float8[],
                         $7::float8[], $8::text[])
                  AS t(run_id, role, tokens, replayed_tokens, cost, replayed_cost, currency)",
        )?;
        c.execute(
            &insert,
            &[
                &execution,
                &run,
                &role,
                &tokens,
                &replayed_tokens,
                &cost,
                &replayed_cost,
                &currency,
            ],
        )?;
    }
    Ok(())
}

/// A case's end; a case the plan did not queue gets its row here (the one upsert
/// [`done_many`] writes a wave's ends with).
fn done(
    c: &mut impl GenericClient,
    p: &mut Prepared,
    execution: i64,
    r: &crate::record::CaseReport,
) -> std::result::Result<(), postgres::Error> {
    done_many(c, p, execution, &[r])
}

/// See [`Backend::execution_root`].
fn execution_root(c: &mut Client, id: Option<i64>) -> Result<Option<(i64, String)>> {
    c.query_opt(
        "SELECT id, root FROM executions WHERE id = $1
             OR ($1 = -1 AND id = (SELECT MAX(id) FROM executions WHERE execution_key IS NULL))",
        &[&id.unwrap_or(-1)],
    )
    .map(|r| r.map(|r| (r.get(0), r.get(1))))
    .map_err(db)
}

/// The runs queued at once past which `Postgres::queue` has the table analyzed.
const ANALYZE_FROM: usize = 1_000;

/// The runs queued by one statement of `Postgres::queue`.
const QUEUE_CHUNK: usize = 5_000;

/// Queues `planned` in `tx`, with the repeats of those run more than once.
fn queue_chunk(
    tx: &mut postgres::Transaction<'_>,
    execution: i64,
    planned: &[Planned<'_>],
) -> Result<()> {
    let trials: Vec<&str> = planned.iter().map(|p| p.trial).collect();
    let suites: Vec<&str> = planned.iter().map(|p| p.suite).collect();
    let cases: Vec<&str> = planned.iter().map(|p| p.case_id).collect();
    let files: Vec<&str> = planned.iter().map(|p| p.file).collect();
    let retry_of: Vec<Option<i64>> = planned.iter().map(|p| p.retry_of).collect();
    let repeats: Vec<Option<i64>> = planned.iter().map(|p| p.repeats.map(i64::from)).collect();
    let insert = "INSERT INTO runs (execution_id, trial, suite, case_id, file, retry_of, repeats)
         SELECT $1, t.* FROM UNNEST($2::text[], $3::text[], $4::text[], $5::text[],
                                    $6::bigint[], $7::bigint[]) AS t
         ON CONFLICT (execution_id, trial) DO NOTHING";
    let params: [&(dyn ToSql + Sync); 7] = [
        &execution, &trials, &suites, &cases, &files, &retry_of, &repeats,
    ];
    if repeats.iter().all(Option::is_none) {
        tx.execute(insert, &params).map_err(db)?;
        return Ok(());
    }
    let made = tx
        .query(&format!("{insert} RETURNING id, repeats"), &params)
        .map_err(db)?;
    // A run queued before keeps its repeats as they are.
    let (ids, counts): (Vec<i64>, Vec<i64>) = made
        .iter()
        .filter_map(|r| Some((r.get::<_, i64>(0), r.get::<_, Option<i64>>(1)?)))
        .unzip();
    if !ids.is_empty() {
        tx.execute(
            "INSERT INTO repeats (run_id, idx)
             SELECT t.id, g FROM UNNEST($1::bigint[], $2::bigint[]) AS t(id, n),
                                 generate_series(1, t.n) AS g",
            &[&ids, &counts],
        )
        .map_err(db)?;
    }
    Ok(())
}
