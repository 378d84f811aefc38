//! Recording a run into the store: an execution per invocation (or per nextest run),
//! a `queued` run per trial it will run, `running` when the case starts, and its end
//! committed as soon as it is known, on a thread of its own so that no case waits for
//! the database. The database is a [`Backend`]; this file does not know which.

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::mpsc;
use std::sync::Mutex;
use std::thread::JoinHandle;

use crate::errors::{DbError, StoreError};
use crate::record::CaseReport;
use crate::util::StoreAddress;

use super::backend::{Answer, Backend, Settled, Write};
use super::model::{
    Claim, Decision, ExecutionInfo, Planned, RepeatEnd, Resumed, StoredCalibration, StoredRepeat,
};

enum Op {
    /// Claim the run of a trial; the answer says whether this process runs it.
    Claim(String, tokio::sync::oneshot::Sender<Claim>),
    /// A case of an execution of this process's own started: its run is marked
    /// `running` with the wave's other writes, and nobody waits for the answer.
    Start(String),
    Done(Box<CaseReport>),
    /// A case this process claimed did not end (the run was interrupted): its run is
    /// queued again, for `--resume`.
    Release(String),
    /// A model request asks to start (see [`start_request`]); the answer is `None` when
    /// it may, else how long to wait before asking again, or `Err` when the store
    /// could not say.
    StartRequest {
        endpoint: String,
        limit: u32,
        window: std::time::Duration,
        answer: tokio::sync::oneshot::Sender<Result<Option<std::time::Duration>, ()>>,
    },
    /// This process spent on models.
    Spend {
        tokens: u64,
        cost: f64,
    },
    /// What the other processes of the execution spent so far.
    SpentElsewhere(tokio::sync::oneshot::Sender<(u64, f64)>),
    /// A model endpoint took this structured-output form.
    LearnForm {
        endpoint: String,
        model: String,
        form: &'static str,
    },
    /// The form the store knows a model endpoint takes.
    KnownForm {
        endpoint: String,
        model: String,
        answer: tokio::sync::oneshot::Sender<Option<&'static str>>,
    },
    /// The calibration the store keeps for a judge at a fingerprint.
    Calibration {
        judge: String,
        fingerprint: String,
        answer: tokio::sync::oneshot::Sender<Result<Option<StoredCalibration>, String>>,
    },
    /// Where the runs of these trials, held by other processes, stand now (see
    /// [`Backend::settle`]); `Err` with the cause when the store cannot say.
    Settle(
        Vec<String>,
        tokio::sync::oneshot::Sender<Result<Vec<Settled>, String>>,
    ),
    /// A spread repeat this process ran ended (see [`Backend::end_repeat`]).
    EndRepeat {
        trial: String,
        index: u32,
        report: Box<CaseReport>,
        decide: Decide,
        answer: tokio::sync::oneshot::Sender<Result<RepeatEnd, String>>,
    },
}

/// What a spread case's repeats as stored come to (see [`Backend::end_repeat`]).
pub(crate) type Decide = Box<dyn FnMut(&[StoredRepeat]) -> Decision + Send>;

impl Op {
    /// The trial a claim is for (`""` for any other write).
    fn claimed(&self) -> &str {
        match self {
            Op::Claim(trial, _) => trial,
            _ => "",
        }
    }

    /// Whether a caller waits for this write's answer.
    fn is_awaited(&self) -> bool {
        matches!(
            self,
            Op::Claim(..)
                | Op::StartRequest { .. }
                | Op::SpentElsewhere(_)
                | Op::KnownForm { .. }
                | Op::Calibration { .. }
                | Op::Settle(..)
                | Op::EndRepeat { .. }
        )
    }
}

/// The writer of this process's open store, for the model requests' rate ledger.
static LEDGER: Mutex<Option<mpsc::Sender<Op>>> = Mutex::new(None);

/// Records in the execution's ledger what this process spent on models (nothing
/// without a store).
pub(crate) fn spend(tokens: u64, cost: f64) {
    if let Some(tx) = &*LEDGER.lock().unwrap_or_else(|e| e.into_inner()) {
        let _ = tx.send(Op::Spend { tokens, cost });
    }
}

/// What the execution's other processes spent on models so far, as the ledger says;
/// `None` without a store (or when it could not say).
pub(crate) async fn spent_elsewhere() -> Option<(u64, f64)> {
    let (answer, answered) = tokio::sync::oneshot::channel();
    LEDGER
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .as_ref()?
        .send(Op::SpentElsewhere(answer))
        .ok()?;
    answered.await.ok()
}

/// Records that the model endpoint `endpoint` (its URL, as shown) with `model` took the
/// structured-output `form` (nothing without a store).
pub(crate) fn learn_form(endpoint: &str, model: &str, form: &'static str) {
    if let Some(tx) = &*LEDGER.lock().unwrap_or_else(|e| e.into_inner()) {
        let _ = tx.send(Op::LearnForm {
            endpoint: endpoint.to_string(),
            model: model.to_string(),
            form,
        });
    }
}

/// The structured-output form the store knows `endpoint` with `model` takes, as an
/// earlier run learned it; `None` without a store, or when it does not know.
pub(crate) async fn known_form(endpoint: &str, model: &str) -> Option<&'static str> {
    let (answer, answered) = tokio::sync::oneshot::channel();
    LEDGER
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .as_ref()?
        .send(Op::KnownForm {
            endpoint: endpoint.to_string(),
            model: model.to_string(),
            answer,
        })
        .ok()?;
    answered.await.ok()?
}

/// The calibration the open store keeps for the judge `judge` at `fingerprint`:
/// `Ok(None)` when it keeps none, `Err` without a store (or when it could not say).
pub(crate) async fn calibration(
    judge: &str,
    fingerprint: &str,
) -> Result<Option<StoredCalibration>, String> {
    let (answer, answered) = tokio::sync::oneshot::channel();
    LEDGER
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .as_ref()
        .ok_or("no run store is open, so no calibration can be read")?
        .send(Op::Calibration {
            judge: judge.to_string(),
            fingerprint: fingerprint.to_string(),
            answer,
        })
        .map_err(|_| "the run store has closed".to_string())?;
    answered
        .await
        .map_err(|_| "the run store did not answer".to_string())?
}

/// Asks the execution's ledger to start a model request at `endpoint`, where no
/// `window` may hold more than `limit` starts across every process of the execution.
/// `None`: no store is open (or it could not say), and the caller keeps the rate
/// itself; `Some(None)`: started; `Some(Some(wait))`: ask again after `wait`.
pub(crate) async fn start_request(
    endpoint: &str,
    limit: u32,
    window: std::time::Duration,
) -> Option<Option<std::time::Duration>> {
    let (answer, answered) = tokio::sync::oneshot::channel();
    let sent = LEDGER
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .as_ref()?
        .send(Op::StartRequest {
            endpoint: endpoint.to_string(),
            limit,
            window,
            answer,
        });
    sent.ok()?;
    answered.await.ok()?.ok()
}

/// The store of one run, written in the background.
pub(crate) struct StoreWriter {
    address: StoreAddress,
    execution: i64,
    tx: Mutex<Option<mpsc::Sender<Op>>>,
    thread: Mutex<Option<JoinHandle<Box<dyn Backend>>>>,
    /// What could not be written.
    lost: std::sync::Arc<Mutex<Lost>>,
    /// The trials whose runs this process claimed before they were planned here (a
    /// worker claims a batch, then runs it): their claim is granted without asking.
    preclaimed: Mutex<std::collections::HashSet<String>>,
    /// The execution is this process's own (see [`ExecutionInfo::exclusive`]): every
    /// claim is granted without waiting for the store.
    exclusive: bool,
    /// The ends sent and not yet written (see [`StoreWriter::room`]).
    backlog: std::sync::Arc<Backlog>,
}

/// The most case ends that may wait in memory for the store: past it, no case starts
/// until the store has caught up (see [`StoreWriter::room`]). Four of the writer's
/// transactions' worth, so that it always has a full one to write.
const BACKLOG: usize = 4 * BATCH;

/// The ends sent to the writing thread and not yet written, and a wake-up for those
/// waiting for it to shrink.
#[derive(Default)]
struct Backlog {
    ends: std::sync::atomic::AtomicUsize,
    shrunk: tokio::sync::Notify,
    /// The writing thread is gone (its run ended, or it panicked): nobody waits.
    closed: std::sync::atomic::AtomicBool,
}

/// Marks the backlog closed when the writing thread ends, however it ends, so that no
/// case waits for a writer that is gone.
struct Closing(std::sync::Arc<Backlog>);

impl Drop for Closing {
    fn drop(&mut self) {
        self.0.closed.store(true, Ordering::SeqCst);
        self.0.shrunk.notify_waiters();
    }
}

/// The writes that failed: the runs whose end is not recorded and the first cause.
#[derive(Default)]
struct Lost {
    trials: Vec<String>,
    cause: Option<String>,
}

impl Lost {
    fn note(&mut self, cause: &DbError) {
        self.cause.get_or_insert_with(|| cause.to_string());
    }
}

impl StoreWriter {
    /// Opens the store at `address`, starts an execution (or joins the nextest run's)
    /// and queues `planned`.
    pub(crate) fn begin(
        address: &StoreAddress,
        info: &ExecutionInfo,
        planned: &[Planned<'_>],
    ) -> Result<StoreWriter, StoreError> {
        let mut db = super::open(address)?;
        let write = |source| StoreError::Write {
            store: address.clone(),
            source,
        };
        db.recover(info.lease).map_err(write)?;
        let execution = db.start_execution(info).map_err(write)?;
        db.queue(execution, planned).map_err(write)?;
        let mut writer = StoreWriter::start(db, execution, info.lease)?;
        writer.exclusive = info.exclusive;
        Ok(writer)
    }

    /// Opens the store at `address` and joins its newest execution that did not finish
    /// (`--resume`): runs left `running` by a process that is gone are queued again,
    /// `planned` trials it lacks are queued, and the runs that ended are sorted by
    /// `present`, every case of the suites (`--run` or not) with its `input_hash`: kept
    /// while their case is there unchanged, queued again when it changed, left out when
    /// it is gone.
    pub(crate) fn resume(
        address: &StoreAddress,
        info: &ExecutionInfo,
        planned: &[Planned<'_>],
        present: &HashMap<String, Option<String>>,
    ) -> Result<(StoreWriter, Resumed), StoreError> {
        let mut db = super::open(address)?;
        let write = |source| StoreError::Write {
            store: address.clone(),
            source,
        };
        db.recover(info.lease).map_err(write)?;
        let Some(execution) = db.unfinished_execution().map_err(write)? else {
            return Err(StoreError::NothingToResume {
                store: address.clone(),
            });
        };
        if let Some((pid, host)) = db.take_over(execution, info.lease).map_err(write)? {
            return Err(StoreError::StillRunning {
                store: address.clone(),
                execution,
                pid,
                host,
            });
        }
        db.queue(execution, planned).map_err(write)?;
        let resumed = db.sort_ended(execution, present).map_err(write)?;
        let writer = StoreWriter::start(db, execution, info.lease)?;
        Ok((writer, resumed))
    }

    /// Hands the database to the writing thread.
    fn start(
        db: Box<dyn Backend>,
        execution: i64,
        lease: std::time::Duration,
    ) -> Result<StoreWriter, StoreError> {
        let heartbeat = super::row::heartbeat(lease);
        let (sender, receiver) = mpsc::channel::<Op>();
        let lost = std::sync::Arc::new(Mutex::new(Lost::default()));
        let backlog = std::sync::Arc::new(Backlog::default());
        let address = db.address().clone();
        let mut db = db;
        let thread = std::thread::Builder::new()
            .name("agentest-store".into())
            .spawn({
                let lost = lost.clone();
                let backlog = backlog.clone();
                move || {
                    let _closing = Closing(backlog.clone());
                    // Said once, when the run ends (see `finish`), with every run it cost.
                    let warn = |cause: &DbError| {
                        lost.lock().unwrap_or_else(|e| e.into_inner()).note(cause);
                    };
                    let mut beat = std::time::Instant::now();
                    loop {
                        let first = match receiver.recv_timeout(heartbeat) {
                            Ok(op) => Some(op),
                            Err(mpsc::RecvTimeoutError::Timeout) => None,
                            Err(mpsc::RecvTimeoutError::Disconnected) => break,
                        };
                        // Nobody waits on a start or an end: the wave's others, arriving
                        // over the next moment, are gathered into the same transaction.
                        // Sleeping, not waiting on the channel, so that their senders
                        // need not wake this thread one by one.
                        if first.as_ref().is_some_and(|op| !op.is_awaited()) {
                            std::thread::sleep(GATHER);
                        }
                        // What queued up meanwhile (a wave of cases starting or ending
                        // together) goes in the same transaction: one commit, not one each.
                        let batch: Vec<Op> = first
                            .into_iter()
                            .chain(std::iter::from_fn(|| receiver.try_recv().ok()).take(BATCH))
                            .collect();
                        // What a case waits on (its claim, a model request's start) is
                        // written and answered first, in a transaction of its own, so it
                        // never waits behind a wave of ends being written.
                        let (mut waited, rest): (Vec<Op>, Vec<Op>) =
                            batch.into_iter().partition(Op::is_awaited);
                        // Claims take their rows in trial order, as every process of
                        // the execution does, so that two processes' batches of claims
                        // cannot deadlock on PostgreSQL.
                        waited.sort_by(|a, b| a.claimed().cmp(b.claimed()));
                        let ends = rest.iter().filter(|op| matches!(op, Op::Done(_))).count();
                        for batch in [waited, rest] {
                            if batch.is_empty() {
                                continue;
                            }
                            let unwritten =
                                write_batch(db.as_mut(), execution, lease, batch, &warn);
                            lost.lock()
                                .unwrap_or_else(|e| e.into_inner())
                                .trials
                                .extend(unwritten);
                        }
                        if ends > 0 {
                            backlog.ends.fetch_sub(ends, Ordering::SeqCst);
                            backlog.shrunk.notify_waiters();
                        }
                        if beat.elapsed() >= heartbeat {
                            beat = std::time::Instant::now();
                            if let Err(e) = db.heartbeat(execution) {
                                warn(&e);
                            }
                        }
                    }
                    db
                }
            })
            .map_err(|e| StoreError::Thread {
                store: address.clone(),
                source: e,
            })?;
        *LEDGER.lock().unwrap_or_else(|e| e.into_inner()) = Some(sender.clone());
        Ok(StoreWriter {
            address,
            execution,
            tx: Mutex::new(Some(sender)),
            thread: Mutex::new(Some(thread)),
            lost,
            preclaimed: Mutex::default(),
            exclusive: false,
            backlog,
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
        // Nobody else runs an execution of this process's own: the case starts at once,
        // and its run is marked `running` with the wave's other writes.
        if self.exclusive {
            self.send(Op::Start(trial.to_string()));
            return Claim::Granted;
        }
        if self
            .preclaimed
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(trial)
        {
            return Claim::Granted;
        }
        let (answer, claimed) = tokio::sync::oneshot::channel();
        self.send(Op::Claim(trial.to_string(), answer));
        // No writer (it stopped): the case runs, as without a store.
        claimed.await.unwrap_or(Claim::Granted)
    }

    /// Runs this process claimed already (see [`super::Backend::claim_queued`]): each
    /// one's claim is granted once, without asking the store again.
    pub(crate) fn preclaimed(&self, trials: &[String]) {
        self.preclaimed
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .extend(trials.iter().cloned());
    }

    /// Where the runs of `trials`, which other processes of the execution held, stand
    /// now; a run queued again is claimed for this process. `Err` with the cause when
    /// the store cannot say.
    pub(crate) async fn settle(&self, trials: Vec<String>) -> Result<Vec<Settled>, String> {
        let (answer, settled) = tokio::sync::oneshot::channel();
        self.send(Op::Settle(trials, answer));
        settled
            .await
            .unwrap_or_else(|_| Err("the store's writer stopped".into()))
    }

    /// Repeat `index` of the spread case `trial`, which this process ran, ended with
    /// `report`: recorded, and the case decided when `decide` says its repeats as stored
    /// decide its gate. `Err` with the cause when the store could not record it.
    pub(crate) async fn end_repeat(
        &self,
        trial: String,
        index: u32,
        report: CaseReport,
        decide: Decide,
    ) -> Result<RepeatEnd, String> {
        let (answer, ended) = tokio::sync::oneshot::channel();
        self.send(Op::EndRepeat {
            trial,
            index,
            report: Box::new(report),
            decide,
            answer,
        });
        ended
            .await
            .unwrap_or_else(|_| Err("the store's writer stopped".into()))
    }

    /// A case ended (any status).
    pub(crate) fn done(&self, report: &CaseReport) {
        self.backlog.ends.fetch_add(1, Ordering::SeqCst);
        self.send(Op::Done(Box::new(report.clone())));
    }

    /// Waits until fewer than [`BACKLOG`] case ends wait to be written. Cases end
    /// faster than a slow store writes them (PostgreSQL far away, 256 cases in flight
    /// against an agent that answers at once); without this wait their records would
    /// pile up in memory, a few KB each, for as long as the run lasts. A run starts
    /// cases at the pace its store keeps.
    pub(crate) async fn room(&self) {
        loop {
            let shrunk = self.backlog.shrunk.notified();
            tokio::pin!(shrunk);
            // Registered before the check, so a wake-up between the two is not lost.
            shrunk.as_mut().enable();
            if self.backlog.ends.load(Ordering::SeqCst) < BACKLOG
                || self.backlog.closed.load(Ordering::SeqCst)
            {
                return;
            }
            shrunk.await;
        }
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
        drop(LEDGER.lock().unwrap_or_else(|e| e.into_inner()).take());
        let thread = self.thread.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(mut db) = thread.and_then(|t| t.join().ok()) {
            if let Err(e) = db.finish(self.execution, duration_ms) {
                self.lost.lock().unwrap_or_else(|e| e.into_inner()).note(&e);
            }
            db.close()?;
        }
        let lost = std::mem::take(&mut *self.lost.lock().unwrap_or_else(|e| e.into_inner()));
        match lost {
            Lost { cause: None, .. } => Ok(()),
            Lost {
                trials,
                cause: Some(cause),
            } => Err(StoreError::Unrecorded {
                store: self.address.clone(),
                trials,
                cause,
            }),
        }
    }
}

/// The most writes one transaction takes.
const BATCH: usize = 256;

/// How long the writer gathers a wave's starts and ends before writing them (see the
/// writing thread in [`StoreWriter::start`]): a case's end reaches the store this much
/// later, and what a case waits on (a claim) is answered at once unless it arrives
/// during the gathering.
const GATHER: std::time::Duration = std::time::Duration::from_millis(2);

/// Applies `batch` in one transaction, then answers its claims (only once committed).
/// If the transaction cannot be had or committed, each write is tried on its own.
/// Returns the trials whose end could not be written.
fn write_batch(
    db: &mut dyn Backend,
    execution: i64,
    lease: std::time::Duration,
    batch: Vec<Op>,
    warn: &dyn Fn(&DbError),
) -> Vec<String> {
    // Settling and ending spread repeats have transactions of their own.
    let (own, batch): (Vec<Op>, Vec<Op>) = batch.into_iter().partition(|op| {
        matches!(
            op,
            Op::Settle(..) | Op::EndRepeat { .. } | Op::Calibration { .. }
        )
    });
    for op in own {
        match op {
            Op::Settle(trials, answer) => {
                let settled = db
                    .settle(execution, &trials, lease)
                    .map_err(|e| e.to_string());
                let _ = answer.send(settled);
            }
            Op::EndRepeat {
                trial,
                index,
                report,
                mut decide,
                answer,
            } => {
                let ended = db
                    .end_repeat(execution, &trial, index, &report, &mut *decide)
                    .map_err(|e| {
                        warn(&e);
                        e.to_string()
                    });
                let _ = answer.send(ended);
            }
            Op::Calibration {
                judge,
                fingerprint,
                answer,
            } => {
                let found = db
                    .calibration(&judge, &fingerprint)
                    .map_err(|e| e.to_string());
                let _ = answer.send(found);
            }
            _ => {}
        }
    }
    let writes: Vec<Write<'_>> = batch
        .iter()
        .filter_map(|op| {
            Some(match op {
                Op::Claim(trial, _) => Write::Claim(trial),
                Op::Start(trial) => Write::Start(trial),
                Op::Done(report) => Write::Done(report),
                Op::Release(trial) => Write::Release(trial),
                Op::StartRequest {
                    endpoint,
                    limit,
                    window,
                    ..
                } => Write::StartRequest {
                    endpoint,
                    limit: *limit,
                    window: *window,
                },
                Op::Spend { tokens, cost } => Write::Spend {
                    tokens: *tokens,
                    cost: *cost,
                },
                Op::SpentElsewhere(_) => Write::SpentElsewhere,
                Op::LearnForm {
                    endpoint,
                    model,
                    form,
                } => Write::LearnForm {
                    endpoint,
                    model,
                    form,
                },
                Op::KnownForm {
                    endpoint, model, ..
                } => Write::KnownForm { endpoint, model },
                Op::Settle(..) | Op::EndRepeat { .. } | Op::Calibration { .. } => return None,
            })
        })
        .collect();
    // A batch that failed together (PostgreSQL broke a deadlock between processes
    // sharing the execution by aborting it) was tried write by write: what failed then
    // is what was lost, and only that is the run's error.
    let (_together, results) = db.write_batch(execution, &writes);
    drop(writes);
    let mut unwritten = Vec::new();
    for (op, r) in batch.into_iter().zip(results) {
        if let Err(e) = &r {
            warn(e);
        }
        match (op, r) {
            (Op::Claim(_, answer), Ok(Answer::Claim(claimed))) => {
                let _ = answer.send(claimed);
            }
            // The store cannot say: the case runs, as without one.
            (Op::Claim(_, answer), _) => {
                let _ = answer.send(Claim::Granted);
            }
            (Op::StartRequest { answer, .. }, Ok(Answer::Start(wait))) => {
                let _ = answer.send(Ok(wait));
            }
            // The caller keeps the rate itself.
            (Op::StartRequest { answer, .. }, _) => {
                let _ = answer.send(Err(()));
            }
            (Op::SpentElsewhere(answer), Ok(Answer::Spent(tokens, cost))) => {
                let _ = answer.send((tokens, cost));
            }
            // Dropped unanswered: the caller goes by its own spending.
            (Op::SpentElsewhere(_), _) => {}
            (Op::KnownForm { answer, .. }, Ok(Answer::Form(form))) => {
                let _ = answer.send(form);
            }
            // The store cannot say: the forms are tried.
            (Op::KnownForm { answer, .. }, _) => {
                let _ = answer.send(None);
            }
            (Op::Done(report), Err(_)) => unwritten.push(report.trial.clone()),
            (
                Op::Done(_)
                | Op::Start(_)
                | Op::Release(_)
                | Op::Spend { .. }
                | Op::LearnForm { .. }
                | Op::Calibration { .. }
                | Op::Settle(..)
                | Op::EndRepeat { .. },
                _,
            ) => {}
        }
    }
    unwritten
}
