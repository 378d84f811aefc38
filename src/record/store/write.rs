//! Recording a run into the store: an execution per invocation (or per nextest run),
//! a `queued` run per trial it will run, `running` when the case starts, and its end
//! committed as soon as it is known, on a thread of its own so that no case waits for
//! the database.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::sync::Mutex;
use std::thread::JoinHandle;

use rusqlite::{params, Connection, OptionalExtension};
use serde_json::{json, Value};

use crate::errors::StoreError;
use crate::record::{rfc3339, CaseReport, Status};

/// What an execution is, for its row.
pub(crate) struct ExecutionInfo {
    /// The command line.
    pub(crate) command: Vec<String>,
    /// The suites' root or input, as shown.
    pub(crate) root: String,
    /// `NEXTEST_RUN_ID`: the execution every process of the nextest run shares.
    pub(crate) nextest_run_id: Option<String>,
    /// Where to look for the git commit (the suites' folder).
    pub(crate) git_from: PathBuf,
}

/// A trial the run will run.
pub(crate) struct Planned<'a> {
    pub(crate) trial: &'a str,
    pub(crate) suite: &'a str,
    pub(crate) case_id: &'a str,
    pub(crate) file: &'a str,
    /// The run this one retries.
    pub(crate) retry_of: Option<i64>,
}

enum Op {
    /// Claim the run of a trial; the answer says whether this process runs it.
    Claim(String, tokio::sync::oneshot::Sender<Claim>),
    Done(Box<CaseReport>),
    /// A case this process claimed did not end (the run was interrupted): its run is
    /// queued again, for `--resume`.
    Release(String),
}

/// The store's answer to a claim of a trial's run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Claim {
    /// The run is this process's: the case runs here.
    Granted,
    /// Another process of the execution has the run, or ran it (a nextest run, or a
    /// `--resume` of the same execution in another terminal).
    Elsewhere,
    /// This very process claimed the run before: the trial was planned twice, which
    /// planning rules out (trial names are unique). A bug, never a skip.
    Twice,
}

/// How often a process marks its running runs alive.
const HEARTBEAT: std::time::Duration = std::time::Duration::from_secs(5);
/// A `running` run whose process has not marked it alive for this long (on any host)
/// is taken to be abandoned.
const LEASE: std::time::Duration = std::time::Duration::from_secs(60);

/// What a resumed execution already holds.
#[derive(Default)]
pub(crate) struct Resumed {
    /// The records of its runs that ended (`completed` or `error`) and are kept: their
    /// case is still there, with the same `input_hash`.
    pub(crate) ended: Vec<CaseReport>,
    /// The trials of ended runs whose case is no longer in the suites: left out of the
    /// report (their runs stay in the store).
    pub(crate) gone: Vec<String>,
    /// The trials of ended runs whose case changed since (or whose record cannot be
    /// read): queued again, to run.
    pub(crate) stale: Vec<String>,
}

/// The store of one run, written in the background.
pub(crate) struct StoreWriter {
    path: PathBuf,
    execution: i64,
    tx: Mutex<Option<mpsc::Sender<Op>>>,
    thread: Mutex<Option<JoinHandle<Connection>>>,
    /// The file as opened, to notice it deleted or replaced while the run writes.
    identity: Option<(u64, u64)>,
    /// What could not be written.
    lost: std::sync::Arc<Mutex<Lost>>,
}

/// The writes that failed: the runs whose end is not recorded and the first cause.
#[derive(Default)]
struct Lost {
    trials: Vec<String>,
    cause: Option<String>,
}

impl Lost {
    fn note(&mut self, cause: String) {
        self.cause.get_or_insert(cause);
    }
}

/// `e`, with the operating system's own error when SQLite's is an I/O one ("disk I/O
/// error" says nothing of a full disk or a file size limit).
fn described(conn: &Connection, e: &rusqlite::Error) -> String {
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
    if io && errno != 0 {
        format!("{e}: {}", std::io::Error::from_raw_os_error(errno))
    } else {
        e.to_string()
    }
}

/// The device and inode of the file at `path`.
fn identity(path: &Path) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino()))
}

impl StoreWriter {
    /// Opens the store at `path`, starts an execution (or joins the nextest run's) and
    /// queues `planned`.
    pub(crate) fn begin(
        path: &Path,
        info: &ExecutionInfo,
        planned: &[Planned<'_>],
    ) -> Result<StoreWriter, StoreError> {
        let mut conn = super::open::open(path)?;
        let sql = |source| StoreError::Write {
            path: path.to_path_buf(),
            source,
        };
        recover(&conn).map_err(sql)?;
        let execution = start_execution(&mut conn, info).map_err(sql)?;
        queue(&mut conn, execution, planned).map_err(sql)?;
        StoreWriter::start(path, conn, execution)
    }

    /// Opens the store at `path` and joins its newest execution that did not finish
    /// (`--resume`): runs left `running` by a process that is gone are queued again,
    /// `planned` trials it lacks are queued, and the runs that ended are sorted by
    /// `present`, every case of the suites (`--run` or not) with its `input_hash`: kept
    /// while their case is there unchanged, queued again when it changed, left out when
    /// it is gone.
    pub(crate) fn resume(
        path: &Path,
        planned: &[Planned<'_>],
        present: &HashMap<String, Option<String>>,
    ) -> Result<(StoreWriter, Resumed), StoreError> {
        let mut conn = super::open::open(path)?;
        let sql = |source| StoreError::Write {
            path: path.to_path_buf(),
            source,
        };
        recover(&conn).map_err(sql)?;
        let execution: Option<i64> = conn
            .query_row(
                "SELECT MAX(id) FROM executions WHERE finished_at IS NULL AND nextest_run_id IS NULL",
                [],
                |r| r.get(0),
            )
            .map_err(sql)?;
        let Some(execution) = execution else {
            return Err(StoreError::NothingToResume {
                path: path.to_path_buf(),
            });
        };
        queue(&mut conn, execution, planned).map_err(sql)?;
        let resumed = sort_ended(&mut conn, execution, present).map_err(sql)?;
        let writer = StoreWriter::start(path, conn, execution)?;
        Ok((writer, resumed))
    }

    /// Hands `conn` to the writing thread.
    fn start(path: &Path, conn: Connection, execution: i64) -> Result<StoreWriter, StoreError> {
        let (sender, receiver) = mpsc::channel::<Op>();
        let lost = std::sync::Arc::new(Mutex::new(Lost::default()));
        let mut conn = conn;
        let thread = std::thread::Builder::new()
            .name("agentest-store".into())
            .spawn({
                let lost = lost.clone();
                move || {
                    // Said once, when the run ends (see `finish`), with every run it cost.
                    let warn = |cause: String| {
                        lost.lock().unwrap_or_else(|e| e.into_inner()).note(cause);
                    };
                    let mut beat = std::time::Instant::now();
                    loop {
                        let first = match receiver.recv_timeout(HEARTBEAT) {
                            Ok(op) => Some(op),
                            Err(mpsc::RecvTimeoutError::Timeout) => None,
                            Err(mpsc::RecvTimeoutError::Disconnected) => break,
                        };
                        // What queued up meanwhile (a wave of cases starting or ending
                        // together) goes in the same transaction: one commit, not one each.
                        let batch: Vec<Op> = first
                            .into_iter()
                            .chain(std::iter::from_fn(|| receiver.try_recv().ok()).take(BATCH))
                            .collect();
                        if !batch.is_empty() {
                            let unwritten = write_batch(&mut conn, execution, batch, &warn);
                            lost.lock()
                                .unwrap_or_else(|e| e.into_inner())
                                .trials
                                .extend(unwritten);
                        }
                        if beat.elapsed() >= HEARTBEAT {
                            beat = std::time::Instant::now();
                            if let Err(e) = heartbeat(&conn, execution) {
                                warn(described(&conn, &e));
                            }
                        }
                    }
                    conn
                }
            })
            .map_err(|e| StoreError::Folder {
                path: path.to_path_buf(),
                source: e,
            })?;
        Ok(StoreWriter {
            path: path.to_path_buf(),
            execution,
            tx: Mutex::new(Some(sender)),
            thread: Mutex::new(Some(thread)),
            identity: identity(path),
            lost,
        })
    }

    /// The execution's id.
    pub(crate) fn execution(&self) -> i64 {
        self.execution
    }

    fn send(&self, op: Op) {
        if let Some(tx) = &*self.tx.lock().unwrap_or_else(|e| e.into_inner()) {
            let _ = tx.send(op);
        }
    }

    /// Claims the run of `trial` for this process: anything but [`Claim::Granted`] means
    /// the case must not run here.
    pub(crate) async fn claim(&self, trial: &str) -> Claim {
        let (answer, claimed) = tokio::sync::oneshot::channel();
        self.send(Op::Claim(trial.to_string(), answer));
        // No writer (it stopped): the case runs, as without a store.
        claimed.await.unwrap_or(Claim::Granted)
    }

    /// A case ended (any status).
    pub(crate) fn done(&self, report: &CaseReport) {
        self.send(Op::Done(Box::new(report.clone())));
    }

    /// A case did not end here (the run was interrupted, `--fail-fast` stopped it,
    /// another process has it): if this process had claimed its run, the run is queued
    /// again, marked as interrupted.
    pub(crate) fn unrun(&self, trial: &str) {
        self.send(Op::Release(trial.to_string()));
    }

    /// Waits for every write, then marks the execution finished when none of its runs
    /// is left to run (a run that was interrupted, or stopped by `--fail-fast`, stays
    /// `queued` for `--resume`; a nextest run's execution stays open). `Err`: runs
    /// whose end the store did not record, or a store deleted, replaced or damaged
    /// while the run wrote to it.
    pub(crate) fn finish(&self, duration_ms: u64) -> Result<(), StoreError> {
        drop(self.tx.lock().unwrap_or_else(|e| e.into_inner()).take());
        let thread = self.thread.lock().unwrap_or_else(|e| e.into_inner()).take();
        let conn = thread.and_then(|t| t.join().ok());
        if let Some(conn) = &conn {
            let now = rfc3339(std::time::SystemTime::now());
            // A resumed execution adds this invocation's time to the earlier ones'.
            let finished = conn
                .execute(
                    "UPDATE executions SET duration_ms = COALESCE(duration_ms, 0) + ?1 WHERE id = ?2",
                    params![duration_ms as i64, self.execution],
                )
                .and_then(|_| {
                    conn.execute(
                        "UPDATE executions SET finished_at = ?1 WHERE id = ?2 AND nextest_run_id IS NULL
                         AND NOT EXISTS (SELECT 1 FROM runs WHERE execution_id = ?2
                                         AND status IN ('queued', 'pending', 'running'))",
                        params![now, self.execution],
                    )
                });
            if let Err(e) = finished {
                let cause = described(conn, &e);
                self.lost
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .note(cause);
            }
        }
        drop(conn);
        let path = self.path.clone();
        if identity(&path) != self.identity {
            return Err(StoreError::Vanished { path });
        }
        if !is_database(&path) {
            return Err(StoreError::Damaged { path });
        }
        let lost = std::mem::take(&mut *self.lost.lock().unwrap_or_else(|e| e.into_inner()));
        match lost {
            Lost { cause: None, .. } => Ok(()),
            Lost {
                trials,
                cause: Some(cause),
            } => Err(StoreError::Unrecorded {
                path,
                trials,
                cause,
            }),
        }
    }
}

/// Whether the file at `path` still starts as an SQLite database does.
fn is_database(path: &Path) -> bool {
    use std::io::Read;
    let mut head = [0u8; 16];
    std::fs::File::open(path)
        .and_then(|mut f| f.read_exact(&mut head))
        .is_ok_and(|()| &head == b"SQLite format 3\0")
}

/// Sorts the ended runs of a resumed `execution` by the cases `present` now (see
/// [`StoreWriter::resume`]), queuing again those whose case changed, in one transaction.
fn sort_ended(
    conn: &mut Connection,
    execution: i64,
    present: &HashMap<String, Option<String>>,
) -> rusqlite::Result<Resumed> {
    let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
    let rows: Vec<(i64, String, Option<String>)> = {
        let mut stmt = tx.prepare(
            "SELECT id, trial, record FROM runs WHERE execution_id = ?1
             AND status IN ('completed', 'error') ORDER BY id",
        )?;
        let rows = stmt.query_map([execution], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?;
        rows.collect::<Result<_, _>>()?
    };
    let mut resumed = Resumed::default();
    for (id, trial, record) in rows {
        let Some(now) = present.get(&trial) else {
            resumed.gone.push(trial);
            continue;
        };
        let record = record.and_then(|r| serde_json::from_str::<CaseReport>(&r).ok());
        match record {
            // A line that did not load has no hash: it is read again, as it is now.
            Some(r) if r.input_hash.is_some() && r.input_hash == *now => resumed.ended.push(r),
            _ => {
                tx.execute(
                    "UPDATE runs SET status = 'queued', verdict = NULL, started_at = NULL,
                            completed_at = NULL, owner_pid = NULL, owner_host = NULL,
                            heartbeat_at = NULL, success = NULL, score = NULL, reason = NULL,
                            error = NULL, messages = NULL, metadata = NULL, record = NULL
                     WHERE id = ?1",
                    [id],
                )?;
                resumed.stale.push(trial);
            }
        }
    }
    tx.commit()?;
    Ok(resumed)
}

/// The execution's id: a new row, or the nextest run's.
fn start_execution(conn: &mut Connection, info: &ExecutionInfo) -> rusqlite::Result<i64> {
    let now = rfc3339(std::time::SystemTime::now());
    let command = serde_json::to_string(&info.command).unwrap_or_default();
    let commit = git_commit(&info.git_from);
    let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
    if let Some(run_id) = &info.nextest_run_id {
        let found: Option<i64> = tx
            .query_row(
                "SELECT id FROM executions WHERE nextest_run_id = ?1",
                [run_id],
                |r| r.get(0),
            )
            .optional()?;
        if let Some(id) = found {
            tx.commit()?;
            return Ok(id);
        }
    }
    tx.execute(
        "INSERT INTO executions (started_at, command, version, git_commit, nextest_run_id, root)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        params![
            now,
            command,
            env!("CARGO_PKG_VERSION"),
            commit,
            info.nextest_run_id,
            info.root
        ],
    )?;
    let id = tx.last_insert_rowid();
    tx.commit()?;
    Ok(id)
}

/// The most writes one transaction takes.
const BATCH: usize = 256;

/// Applies `batch` in one transaction, then answers its claims (only once committed).
/// If the transaction cannot be had or committed, each write is tried on its own.
/// Returns the trials whose end could not be written.
fn write_batch(
    conn: &mut Connection,
    execution: i64,
    batch: Vec<Op>,
    warn: &dyn Fn(String),
) -> Vec<String> {
    let apply = |conn: &Connection, op: &Op| -> rusqlite::Result<Option<Claim>> {
        match op {
            Op::Claim(trial, _) => claim(conn, execution, trial).map(Some),
            Op::Done(report) => done(conn, execution, report).map(|()| None),
            Op::Release(trial) => release(conn, execution, trial).map(|()| None),
        }
    };
    let together = conn
        .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
        .and_then(|tx| {
            let results: Vec<_> = batch.iter().map(|op| apply(&tx, op)).collect();
            tx.commit().map(|()| results)
        });
    let results = match together {
        Ok(results) => results,
        // Rolled back: nothing of it holds, each write is tried on its own.
        Err(e) => {
            warn(described(conn, &e));
            batch.iter().map(|op| apply(conn, op)).collect()
        }
    };
    let answers = batch.into_iter().zip(results);
    let mut unwritten = Vec::new();
    for (op, r) in answers {
        let claimed = match r {
            Ok(c) => c,
            Err(e) => {
                warn(described(conn, &e));
                if let Op::Done(report) = &op {
                    unwritten.push(report.trial.clone());
                }
                // The store cannot say: the case runs, as without one.
                Some(Claim::Granted)
            }
        };
        if let (Op::Claim(_, answer), Some(claimed)) = (op, claimed) {
            let _ = answer.send(claimed);
        }
    }
    unwritten
}

/// Queues a run for each of `planned` the execution lacks.
fn queue(conn: &mut Connection, execution: i64, planned: &[Planned<'_>]) -> rusqlite::Result<()> {
    let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
    {
        let mut insert = tx.prepare(
            "INSERT INTO runs (execution_id, trial, suite, case_id, file, retry_of)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)
             ON CONFLICT (execution_id, trial) DO NOTHING",
        )?;
        for p in planned {
            insert.execute(params![
                execution, p.trial, p.suite, p.case_id, p.file, p.retry_of
            ])?;
        }
    }
    tx.commit()
}

/// The atomic claim of the seed's run processor: `queued` to `running` in one
/// conditional UPDATE, so two processes never run the same run.
fn claim(conn: &Connection, execution: i64, trial: &str) -> rusqlite::Result<Claim> {
    let now = rfc3339(std::time::SystemTime::now());
    let me = std::process::id();
    let here = host();
    let n = conn
        .prepare_cached(
            "UPDATE runs SET status = 'running', started_at = ?1, heartbeat_at = ?1, owner_pid = ?2, owner_host = ?3
             WHERE execution_id = ?4 AND trial = ?5 AND status IN ('queued', 'pending')",
        )?
        .execute(params![now, me, here, execution, trial])?;
    if n == 1 {
        return Ok(Claim::Granted);
    }
    // Taken: by whom? The run's unique key (execution, trial) is shared by every case
    // of one name, so a claim this process already holds is no other process's run.
    let owner: Option<(Option<i64>, Option<String>)> = conn
        .prepare_cached(
            "SELECT owner_pid, owner_host FROM runs WHERE execution_id = ?1 AND trial = ?2",
        )?
        .query_row(params![execution, trial], |r| Ok((r.get(0)?, r.get(1)?)))
        .optional()?;
    Ok(match owner {
        // Never queued: nobody else has it, so it runs here, as without a store.
        None => Claim::Granted,
        Some((Some(pid), Some(host))) if pid == i64::from(me) && host == here => Claim::Twice,
        Some(_) => Claim::Elsewhere,
    })
}

/// Queues again the run of `trial` if this process claimed it and it did not end,
/// saying why in its `reason` (`runs list` shows it).
fn release(conn: &Connection, execution: i64, trial: &str) -> rusqlite::Result<()> {
    conn.prepare_cached(
        "UPDATE runs SET status = 'queued', owner_pid = NULL, owner_host = NULL,
                heartbeat_at = NULL, started_at = NULL,
                reason = 'interrupted before it ended; --resume runs it again'
         WHERE execution_id = ?1 AND trial = ?2 AND status = 'running'
           AND owner_pid = ?3 AND owner_host = ?4",
    )?
    .execute(params![execution, trial, std::process::id(), host()])?;
    Ok(())
}

/// Marks this process's running runs alive.
fn heartbeat(conn: &Connection, execution: i64) -> rusqlite::Result<()> {
    let now = rfc3339(std::time::SystemTime::now());
    conn.execute(
        "UPDATE runs SET heartbeat_at = ?1
         WHERE execution_id = ?2 AND status = 'running' AND owner_pid = ?3 AND owner_host = ?4",
        params![now, execution, std::process::id(), host()],
    )?;
    Ok(())
}

/// Queues again the runs a dead process left `running`: on this host, its process is
/// gone; on any host, it has not marked them alive within the lease.
fn recover(conn: &Connection) -> rusqlite::Result<usize> {
    let cutoff = rfc3339(std::time::SystemTime::now() - LEASE);
    let here = host();
    let me = std::process::id() as i64;
    // Each running run's id, owner (pid, host) and last heartbeat.
    type Owned = (i64, Option<i64>, Option<String>, Option<String>);
    let running: Vec<Owned> = {
        let mut stmt = conn.prepare(
            "SELECT id, owner_pid, owner_host, heartbeat_at FROM runs WHERE status = 'running'",
        )?;
        let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))?;
        rows.collect::<Result<_, _>>()?
    };
    let mut recovered = 0;
    for (id, pid, owner_host, beat) in running {
        let stale = beat.as_deref().is_none_or(|b| b < cutoff.as_str());
        let gone = owner_host.as_deref() == Some(here) && pid.is_some_and(|p| p != me && !alive(p));
        if stale || gone {
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
    Ok(recovered)
}

/// Whether a process with this id runs on this machine.
fn alive(pid: i64) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return false;
    };
    // SAFETY: signal 0 only checks that the process exists and may be signalled.
    let r = unsafe { libc::kill(pid, 0) };
    r == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

fn done(conn: &Connection, execution: i64, r: &CaseReport) -> rusqlite::Result<()> {
    let now = rfc3339(std::time::SystemTime::now());
    let (status, success) = lifecycle(r.status);
    // A case with criteria has EvalStudio's result: its score and reason.
    let reason = match (&r.result, r.status) {
        (Some(res), _) => Some(res.reason.clone()),
        (None, Status::Passed) => Some("passed".to_string()),
        (None, _) => r.error.clone(),
    };
    let score = r.result.as_ref().and_then(|res| res.score);
    let error = matches!(status, "error").then(|| r.error.clone()).flatten();
    let messages = serde_json::to_string(&messages(r)).unwrap_or_default();
    let metadata = json!({
        "latency_ms": r.duration_ms,
        "usage": r.usage,
        "replayed_usage": r.replayed_usage,
        "model_calls": r.model_calls,
        "replayed_calls": r.replayed_calls,
        "cassette": r.cassette,
        "cost": r.cost,
        "stability": r.stability,
        "input_hash": r.input_hash,
    })
    .to_string();
    let record = serde_json::to_string(r).unwrap_or_default();
    let parameters =
        (!r.parameters.is_empty()).then(|| Value::Object(r.parameters.clone()).to_string());
    // A case the plan did not queue (one that failed to load) gets its row here.
    conn.prepare_cached(
        "INSERT INTO runs (execution_id, trial, suite, case_id, file, status, verdict, started_at,
                           completed_at, success, reason, error, messages, metadata, record, parameters,
                           score, persona)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17)
         ON CONFLICT (execution_id, trial) DO UPDATE SET
             status = excluded.status, verdict = excluded.verdict,
             started_at = COALESCE(runs.started_at, excluded.started_at),
             completed_at = excluded.completed_at, success = excluded.success,
             reason = excluded.reason, error = excluded.error, messages = excluded.messages,
             metadata = excluded.metadata, record = excluded.record,
             parameters = excluded.parameters, score = excluded.score,
             persona = excluded.persona",
    )?
    .execute(params![
            execution,
            r.trial,
            r.suite,
            r.id,
            r.location.split(':').next().unwrap_or_default(),
            status,
            status_word(r.status),
            now,
            success,
            reason,
            error,
            messages,
            metadata,
            record,
            parameters,
            score,
            r.persona
        ])?;
    Ok(())
}

/// The seed's status for agentest's: a verdict is `completed` (failed ones with
/// `success` false), what could not run properly is `error`; a skipped case is
/// `completed` with no verdict.
fn lifecycle(s: Status) -> (&'static str, Option<bool>) {
    match s {
        Status::Passed => ("completed", Some(true)),
        Status::Failed => ("completed", Some(false)),
        Status::Skipped => ("completed", None),
        Status::Error | Status::Timeout => ("error", None),
    }
}

fn status_word(s: Status) -> &'static str {
    match s {
        Status::Passed => "passed",
        Status::Failed => "failed",
        Status::Error => "error",
        Status::Skipped => "skipped",
        Status::Timeout => "timeout",
    }
}

/// The conversation as the seed's messages: each turn's user message and the reply.
fn messages(r: &CaseReport) -> Vec<Value> {
    let mut out = Vec::with_capacity(r.turns.len() * 2);
    for t in &r.turns {
        out.push(json!({"role": "user", "content": t.input}));
        let content = match &t.output {
            Value::String(s) => Value::String(s.clone()),
            Value::Null => Value::Null,
            other => Value::String(other.to_string()),
        };
        out.push(json!({"role": "assistant", "content": content}));
    }
    out
}

/// This machine's name, to tell whose `running` runs a dead process left.
fn host() -> &'static str {
    static HOST: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    HOST.get_or_init(|| {
        std::fs::read_to_string("/proc/sys/kernel/hostname")
            .map(|h| h.trim().to_string())
            .or_else(|_| std::env::var("HOSTNAME"))
            .unwrap_or_default()
    })
}

/// The commit checked out in the repository around `from`, read from `.git` (no `git`
/// process): `HEAD`, the branch's ref file or `packed-refs`.
fn git_commit(from: &Path) -> Option<String> {
    let from = std::path::absolute(from).ok()?;
    let git = from
        .ancestors()
        .map(|d| d.join(".git"))
        .find(|g| g.exists())?;
    // A worktree's `.git` is a file naming the real folder.
    let git = if git.is_file() {
        let text = std::fs::read_to_string(&git).ok()?;
        let dir = text.strip_prefix("gitdir:")?.trim();
        git.parent()?.join(dir)
    } else {
        git
    };
    let head = std::fs::read_to_string(git.join("HEAD")).ok()?;
    let head = head.trim();
    let Some(name) = head.strip_prefix("ref:").map(str::trim) else {
        return Some(head.to_string()).filter(|h| h.len() >= 40);
    };
    if let Ok(id) = std::fs::read_to_string(git.join(name)) {
        return Some(id.trim().to_string());
    }
    // A worktree keeps refs in the common folder.
    let common = std::fs::read_to_string(git.join("commondir"))
        .map(|c| git.join(c.trim()))
        .unwrap_or(git);
    if let Ok(id) = std::fs::read_to_string(common.join(name)) {
        return Some(id.trim().to_string());
    }
    let packed = std::fs::read_to_string(common.join("packed-refs")).ok()?;
    packed.lines().find_map(|l| {
        let (id, r) = l.split_once(' ')?;
        (r == name).then(|| id.to_string())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A claim names who holds the run: this process claiming a trial twice is told so
    /// (`Twice`, a bug), never that another process ran it; a run another process holds
    /// is `Elsewhere`; a trial never queued runs here.
    #[test]
    fn a_claim_held_by_this_process_is_not_another_processs() {
        let mut conn = Connection::open_in_memory().unwrap();
        crate::record::store::schema::migrate(&mut conn).unwrap();
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
            params![std::process::id() + 1, host()],
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
