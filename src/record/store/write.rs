//! Recording a run into the store: an execution per invocation (or per nextest run),
//! a `queued` run per trial it will run, `running` when the case starts, and its end
//! committed as soon as it is known, on a thread of its own so that no case waits for
//! the database.

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
}

enum Op {
    Started(String),
    Done(Box<CaseReport>),
}

/// The store of one run, written in the background.
pub(crate) struct StoreWriter {
    path: PathBuf,
    execution: i64,
    tx: Mutex<Option<mpsc::Sender<Op>>>,
    thread: Mutex<Option<JoinHandle<Connection>>>,
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
        let execution = start_execution(&mut conn, info).map_err(sql)?;
        let tx = conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .map_err(sql)?;
        {
            let mut insert = tx
                .prepare(
                    "INSERT INTO runs (execution_id, trial, suite, case_id, file) VALUES (?1, ?2, ?3, ?4, ?5)
                     ON CONFLICT (execution_id, trial) DO NOTHING",
                )
                .map_err(sql)?;
            for p in planned {
                insert
                    .execute(params![execution, p.trial, p.suite, p.case_id, p.file])
                    .map_err(sql)?;
            }
        }
        tx.commit().map_err(sql)?;
        let (sender, receiver) = mpsc::channel::<Op>();
        let shown = path.to_path_buf();
        let thread = std::thread::Builder::new()
            .name("agentest-store".into())
            .spawn(move || {
                for op in receiver {
                    let written = match op {
                        Op::Started(trial) => started(&conn, execution, &trial),
                        Op::Done(report) => done(&conn, execution, &report),
                    };
                    if let Err(e) = written {
                        eprintln!(
                            "warning: failed to write to the run store {}: {e}",
                            shown.display()
                        );
                    }
                }
                conn
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
        })
    }

    fn send(&self, op: Op) {
        if let Some(tx) = &*self.tx.lock().unwrap_or_else(|e| e.into_inner()) {
            let _ = tx.send(op);
        }
    }

    /// The case of `trial` started.
    pub(crate) fn started(&self, trial: &str) {
        self.send(Op::Started(trial.to_string()));
    }

    /// A case ended (any status).
    pub(crate) fn done(&self, report: &CaseReport) {
        self.send(Op::Done(Box::new(report.clone())));
    }

    /// Waits for every write, then marks the execution finished (a nextest run's
    /// execution stays open: its processes finish one by one).
    pub(crate) fn finish(&self) {
        drop(self.tx.lock().unwrap_or_else(|e| e.into_inner()).take());
        let thread = self.thread.lock().unwrap_or_else(|e| e.into_inner()).take();
        let Some(conn) = thread.and_then(|t| t.join().ok()) else {
            return;
        };
        let now = rfc3339(std::time::SystemTime::now());
        let finished = conn.execute(
            "UPDATE executions SET finished_at = ?1 WHERE id = ?2 AND nextest_run_id IS NULL",
            params![now, self.execution],
        );
        if let Err(e) = finished {
            eprintln!(
                "warning: failed to write to the run store {}: {e}",
                self.path.display()
            );
        }
    }
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

fn started(conn: &Connection, execution: i64, trial: &str) -> rusqlite::Result<()> {
    let now = rfc3339(std::time::SystemTime::now());
    conn.execute(
        "UPDATE runs SET status = 'running', started_at = ?1, heartbeat_at = ?1, owner_pid = ?2, owner_host = ?3
         WHERE execution_id = ?4 AND trial = ?5 AND status IN ('queued', 'pending')",
        params![now, std::process::id(), host(), execution, trial],
    )?;
    Ok(())
}

fn done(conn: &Connection, execution: i64, r: &CaseReport) -> rusqlite::Result<()> {
    let now = rfc3339(std::time::SystemTime::now());
    let (status, success) = lifecycle(r.status);
    let reason = match r.status {
        Status::Passed => Some("passed".to_string()),
        _ => r.error.clone(),
    };
    let error = matches!(status, "error").then(|| r.error.clone()).flatten();
    let messages = serde_json::to_string(&messages(r)).unwrap_or_default();
    let metadata = json!({
        "latency_ms": r.duration_ms,
        "usage": r.usage,
        "replayed_usage": r.replayed_usage,
        "model_calls": r.model_calls,
        "replayed_calls": r.replayed_calls,
        "cassette": r.cassette,
    })
    .to_string();
    let record = serde_json::to_string(r).unwrap_or_default();
    let parameters =
        (!r.parameters.is_empty()).then(|| Value::Object(r.parameters.clone()).to_string());
    // A case the plan did not queue (one that failed to load) gets its row here.
    conn.execute(
        "INSERT INTO runs (execution_id, trial, suite, case_id, file, status, verdict, started_at,
                           completed_at, success, reason, error, messages, metadata, record, parameters)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)
         ON CONFLICT (execution_id, trial) DO UPDATE SET
             status = excluded.status, verdict = excluded.verdict,
             started_at = COALESCE(runs.started_at, excluded.started_at),
             completed_at = excluded.completed_at, success = excluded.success,
             reason = excluded.reason, error = excluded.error, messages = excluded.messages,
             metadata = excluded.metadata, record = excluded.record,
             parameters = excluded.parameters",
        params![
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
            parameters
        ],
    )?;
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
fn host() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .or_else(|_| std::env::var("HOSTNAME"))
        .unwrap_or_default()
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
