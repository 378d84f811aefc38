//! The scheduler: runs a plan's cases with at most N in flight, starting them in trial
//! order, for the binary and the libtest harness alike. It stops starting cases after a
//! failure (`--fail-fast`) and stops the run cleanly on Ctrl-C (the binary).

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use tokio::sync::{mpsc, oneshot, Semaphore};
use tokio::task::AbortHandle;

use crate::record::{CaseReport, Recorder, Status};
use crate::run::engine::Engine;
use crate::run::outcome::not_run;
use crate::source::Loaded;

/// How a run ended early, if it did.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Ending {
    /// `--fail-fast` stopped it.
    pub(crate) stopped: bool,
    /// Ctrl-C stopped it.
    pub(crate) interrupted: bool,
}

/// Runs cases on the engine, at most `parallel` at once.
pub(crate) struct Scheduler {
    engine: Arc<Engine>,
    recorder: Arc<Recorder>,
    parallel: usize,
    fail_fast: bool,
}

/// A finished case, by its index in the plan.
type Done = (usize, CaseReport);

impl Scheduler {
    pub(crate) fn new(
        engine: Arc<Engine>,
        recorder: Arc<Recorder>,
        parallel: usize,
        fail_fast: bool,
    ) -> Self {
        Scheduler {
            engine,
            recorder,
            parallel: parallel.max(1),
            fail_fast,
        }
    }

    /// Starts every case in trial order, each as a permit frees up, and sends each
    /// report (recorded already) as it finishes. Returns the dispatcher, the running
    /// cases (for Ctrl-C), the stop flag and the receiver of finished cases.
    fn dispatch(&self, cases: Arc<Vec<Arc<Loaded>>>) -> Dispatch {
        // The next wave's environment folders are made while this one runs.
        self.engine.prepare_environments(&cases, self.parallel);
        let semaphore = Arc::new(Semaphore::new(self.parallel));
        let stop = Arc::new(AtomicBool::new(false));
        let running = Arc::new(Mutex::new(HashMap::<usize, AbortHandle>::new()));
        let (tx, rx) = mpsc::unbounded_channel::<Done>();
        let (engine, recorder, fail_fast) =
            (self.engine.clone(), self.recorder.clone(), self.fail_fast);
        let dispatcher = {
            let (stop, running) = (stop.clone(), running.clone());
            // One dispatcher takes the permits in trial order, so cases start in that
            // order and `--fail-fast` sees a failure before it starts anything after it.
            tokio::spawn(async move {
                for (i, l) in cases.iter().enumerate() {
                    let Ok(permit) = semaphore.clone().acquire_owned().await else {
                        break;
                    };
                    if stop.load(Ordering::SeqCst) {
                        let reason = "not run: --fail-fast stopped the run after a failure";
                        let report = not_run(l, reason.into());
                        recorder.record_unrun(&report);
                        let _ = tx.send((i, report));
                        continue;
                    }
                    let (engine, recorder, stop, tx, l) = (
                        engine.clone(),
                        recorder.clone(),
                        stop.clone(),
                        tx.clone(),
                        l.clone(),
                    );
                    let task = tokio::spawn(async move {
                        // The run store's claim: another process resuming the same
                        // execution may have this case.
                        if !recorder.claim(&l.trial).await {
                            drop(permit);
                            let report = not_run(
                                &l,
                                "not run here: another process of this execution ran it".into(),
                            );
                            recorder.record_unrun(&report);
                            let _ = tx.send((i, report));
                            return;
                        }
                        let report = engine.run_guarded(l).await;
                        if fail_fast
                            && matches!(
                                report.status,
                                Status::Failed | Status::Error | Status::Timeout
                            )
                        {
                            stop.store(true, Ordering::SeqCst);
                        }
                        // The permit is released only after the stop flag is set.
                        drop(permit);
                        recorder.record(&report);
                        let _ = tx.send((i, report));
                    });
                    running
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .insert(i, task.abort_handle());
                }
            })
        };
        Dispatch {
            dispatcher,
            running,
            stop,
            rx,
        }
    }

    /// Runs every case and waits for them. `in_order` sees each report in trial order
    /// (for the console), as soon as every earlier one is done. Ctrl-C stops the run:
    /// running cases (and their agents) are stopped, finished ones keep their results,
    /// the rest are reported as not run.
    pub(crate) async fn run_all(
        &self,
        cases: Vec<Loaded>,
        mut in_order: impl FnMut(&CaseReport),
    ) -> Ending {
        // Registered before any agent starts, so the signal is ours (running agents are
        // killed as their cases are dropped).
        let mut interrupt =
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt()).ok();
        let cases = shared(cases);
        let total = cases.len();
        let mut d = self.dispatch(cases.clone());
        let mut pending: BTreeMap<usize, CaseReport> = BTreeMap::new();
        let mut next = 0;
        let mut seen = vec![false; total];
        let mut interrupted = false;
        loop {
            let message = tokio::select! {
                m = d.rx.recv() => m,
                _ = async {
                    match interrupt.as_mut() {
                        Some(s) => { s.recv().await; }
                        None => std::future::pending::<()>().await,
                    }
                } => {
                    interrupted = true;
                    None
                }
            };
            let Some((i, report)) = message else { break };
            seen[i] = true;
            d.forget(i);
            pending.insert(i, report);
            while let Some(r) = pending.remove(&next) {
                in_order(&r);
                next += 1;
            }
        }
        if interrupted {
            eprintln!("\nagentest: interrupted; stopping the running cases");
            d.abort();
            // Cases that finished meanwhile keep their results; the rest are not run.
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            while let Ok((i, report)) = d.rx.try_recv() {
                seen[i] = true;
                pending.insert(i, report);
            }
            for (i, l) in cases.iter().enumerate().filter(|(i, _)| !seen[*i]) {
                let report = not_run(l, "not run: the run was interrupted (Ctrl-C)".into());
                self.recorder.record_unrun(&report);
                pending.insert(i, report);
            }
            for (_, r) in std::mem::take(&mut pending) {
                in_order(&r);
            }
        }
        Ending {
            stopped: d.stop.load(Ordering::SeqCst),
            interrupted,
        }
    }

    /// Starts every case at once (within the limit) and returns a ticket per case, in
    /// the same order, to wait on: the libtest harness's trials each wait for their own.
    pub(crate) fn start(&self, cases: Vec<Arc<Loaded>>) -> Vec<Ticket> {
        let (senders, tickets): (Vec<_>, Vec<_>) = cases
            .iter()
            .map(|_| {
                let (tx, rx) = oneshot::channel();
                (tx, Ticket(Mutex::new(Some(rx))))
            })
            .unzip();
        let cases = Arc::new(cases);
        let mut d = self.dispatch(cases);
        tokio::spawn(async move {
            let mut senders: Vec<Option<oneshot::Sender<CaseReport>>> =
                senders.into_iter().map(Some).collect();
            while let Some((i, report)) = d.rx.recv().await {
                d.forget(i);
                if let Some(tx) = senders[i].take() {
                    let _ = tx.send(report);
                }
            }
        });
        tickets
    }
}

/// A case started by [`Scheduler::start`]; its report arrives once.
pub(crate) struct Ticket(Mutex<Option<oneshot::Receiver<CaseReport>>>);

impl Ticket {
    /// Waits for the case's report; `None` if it was already taken or the case was lost.
    pub(crate) async fn wait(&self) -> Option<CaseReport> {
        let rx = self.0.lock().unwrap_or_else(|e| e.into_inner()).take()?;
        rx.await.ok()
    }
}

/// The cases behind `Arc`s, shared by the dispatcher and the waiting side.
fn shared(cases: Vec<Loaded>) -> Arc<Vec<Arc<Loaded>>> {
    let mut v: Vec<Arc<Loaded>> = cases.into_iter().map(Arc::new).collect();
    // The in-place collect keeps the old, much larger buffer otherwise.
    v.shrink_to_fit();
    Arc::new(v)
}

/// A dispatch in progress.
struct Dispatch {
    dispatcher: tokio::task::JoinHandle<()>,
    /// The cases in flight, so Ctrl-C can stop them; a finished case leaves the map.
    running: Arc<Mutex<HashMap<usize, AbortHandle>>>,
    stop: Arc<AtomicBool>,
    rx: mpsc::UnboundedReceiver<Done>,
}

impl Dispatch {
    fn forget(&self, i: usize) {
        self.running
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&i);
    }

    fn abort(&self) {
        self.dispatcher.abort();
        for (_, h) in self
            .running
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .drain()
        {
            h.abort();
        }
    }
}
