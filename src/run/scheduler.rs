//! The scheduler: runs a plan's cases with at most N in flight, opening them in trial
//! order, for the binary and the libtest harness alike. A repeated case's repeats share
//! the slots with the cases after it (see [`Window`]). It stops starting cases after a
//! failure (`--fail-fast`) or when a budget is spent, and stops the run cleanly on
//! Ctrl-C (the binary).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use tokio::sync::{mpsc, oneshot, OwnedSemaphorePermit, Semaphore};
use tokio::task::AbortHandle;

use crate::record::store::{Claim, Decide, Decision, RepeatEnd, Settled};
use crate::record::{CaseReport, Recorder, Status};
use crate::run::engine::Engine;
use crate::run::outcome::not_run;
use crate::run::repeats::{decide_stored, Finished, Group, Plan, Repeat};
use crate::source::Loaded;
use crate::util::signals::{Listener, StopSignal};

/// How a run ended early, if it did.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Ending {
    /// `--fail-fast` stopped it.
    pub(crate) stopped: bool,
    /// The signal that stopped it: Ctrl-C, SIGTERM or SIGHUP.
    pub(crate) interrupted: Option<StopSignal>,
    /// A budget stopped cases from starting.
    pub(crate) over_budget: bool,
}

/// Runs cases on the engine, at most `parallel` at once.
pub(crate) struct Scheduler {
    engine: Arc<Engine>,
    recorder: Arc<Recorder>,
    parallel: usize,
    fail_fast: bool,
    /// Wait for the cases another process of the execution runs (see
    /// [`Scheduler::waiting_for_others`]).
    wait: bool,
}

/// How often the cases another process runs are looked at again.
const SETTLE_POLL: std::time::Duration = std::time::Duration::from_millis(500);

/// A case another process of the execution was running when this one came to it: the
/// report it would have had ("not run here"), and the case.
type Waiting = (CaseReport, Arc<Loaded>);

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
            wait: false,
        }
    }

    /// With `yes`, a case whose run another process of the execution holds is not
    /// reported as "not run here" at once: once this process's own cases ended, it
    /// waits for them, reports each with the record it ended with there, and runs
    /// itself any that goes back to the queue (its process died and the lease lapsed).
    /// For `agentest test` processes that share an execution by its key.
    pub(crate) fn waiting_for_others(mut self, yes: bool) -> Self {
        self.wait = yes;
        self
    }

    /// Starts every case in trial order, each as a permit frees up, and sends each
    /// report (recorded already) as it finishes. Returns the dispatcher, the running
    /// cases (for Ctrl-C), the stop flag and the receiver of finished cases.
    fn dispatch(&self, cases: Arc<Vec<Arc<Loaded>>>) -> Dispatch {
        // The next wave's environment folders are made while this one runs.
        self.engine.prepare_environments(&cases, self.parallel);
        let semaphore = Arc::new(Semaphore::new(self.parallel));
        let stop = Arc::new(AtomicBool::new(false));
        let running: Running = Arc::new(Mutex::new(HashMap::new()));
        let groups: Groups = Arc::new(Mutex::new(HashMap::new()));
        let (tx, rx) = mpsc::unbounded_channel::<Done>();
        let (engine, recorder, fail_fast) =
            (self.engine.clone(), self.recorder.clone(), self.fail_fast);
        let deferred: Arc<Mutex<HashSet<usize>>> = Arc::default();
        let defer = self.wait.then(|| deferred.clone());
        let over_budget = Arc::new(AtomicBool::new(false));
        let parallel = self.parallel;
        let dispatcher = {
            let (stop, running, over_budget) = (stop.clone(), running.clone(), over_budget.clone());
            let groups = groups.clone();
            let semaphore = semaphore.clone();
            // One dispatcher takes the permits, so cases open in trial order and
            // `--fail-fast` sees a failure before it starts anything after it.
            tokio::spawn(async move {
                let d = Dispatcher {
                    engine,
                    recorder,
                    stop,
                    running,
                    groups,
                    tx,
                    fail_fast,
                    over_budget,
                    defer,
                };
                d.take_permits(&cases, &semaphore, parallel).await;
            })
        };
        Dispatch {
            dispatcher,
            semaphore,
            running,
            groups,
            stop,
            over_budget,
            deferred,
            rx,
        }
    }

    /// Runs every case and waits for them. `in_order` sees each report in trial order
    /// (for the console), as soon as every earlier one is done. Ctrl-C stops the run:
    /// running cases (and their agents) are stopped, finished ones keep their results,
    /// the rest are reported as not run. Waiting for other processes (see
    /// [`Scheduler::waiting_for_others`]), the cases they ran come last.
    pub(crate) async fn run_all(
        &self,
        cases: Vec<Loaded>,
        mut in_order: impl FnMut(&CaseReport),
    ) -> Ending {
        // Registered before any agent starts, so SIGINT, SIGTERM and SIGHUP are ours
        // (running agents are killed as their cases are dropped).
        let signals = Listener::new();
        let (mut ending, mut waiting, mut signals) =
            self.run_batch(shared(cases), &mut in_order, signals).await;
        let mut said = false;
        while !waiting.is_empty() && !ending.stopped {
            let Some(mut listener) = signals.take() else {
                break;
            };
            if !said {
                said = true;
                eprintln!(
                    "agentest: waiting for {} that another process of this execution is running",
                    crate::util::count(waiting.len() as u64, "case", "cases")
                );
            }
            let trials = waiting.iter().map(|(_, l)| l.trial.clone()).collect();
            let settled = match self.recorder.settle(trials).await {
                Ok(s) => s,
                Err(cause) => {
                    for (mut report, _) in std::mem::take(&mut waiting) {
                        let why = report.error.take().unwrap_or_default();
                        report.error = Some(format!(
                            "{why}; the run store could not say how it ended: {cause}"
                        ));
                        self.recorder.record_unrun(&report);
                        in_order(&report);
                    }
                    signals = Some(listener);
                    break;
                }
            };
            let mut claimed = Vec::new();
            for ((report, l), settled) in std::mem::take(&mut waiting).into_iter().zip(settled) {
                match settled {
                    Settled::Claimed => claimed.push(l),
                    Settled::Ended(record) => {
                        let ended = record
                            .and_then(|r| serde_json::from_str::<CaseReport>(&r).ok())
                            .unwrap_or_else(|| {
                                let mut r = report;
                                r.error = Some(
                                    "ran in another process of this execution, whose record of it could not be read"
                                        .into(),
                                );
                                r
                            });
                        self.recorder.record_stored(&ended);
                        in_order(&ended);
                    }
                    Settled::Running => waiting.push((report, l)),
                }
            }
            if !claimed.is_empty() {
                let trials: Vec<String> = claimed.iter().map(|l| l.trial.clone()).collect();
                self.recorder.preclaimed(&trials);
                let (more, left, back) = self
                    .run_batch(Arc::new(claimed), &mut in_order, listener)
                    .await;
                ending.stopped |= more.stopped;
                ending.over_budget |= more.over_budget;
                ending.interrupted = ending.interrupted.or(more.interrupted);
                waiting.extend(left);
                signals = back;
                continue;
            }
            if !waiting.is_empty() {
                tokio::select! {
                    () = tokio::time::sleep(SETTLE_POLL) => {}
                    s = listener.recv() => {
                        ending.interrupted = Some(s);
                        listener.exit_on_next();
                        break;
                    }
                }
            }
            signals = Some(listener);
        }
        // Not waited for (a stop, a signal): reported as not run here, as without waiting.
        for (report, _) in waiting {
            self.recorder.record_unrun(&report);
            in_order(&report);
        }
        if let Some(signals) = signals {
            // From now on (writing the reports) a signal ends agentest at once.
            signals.exit_on_next();
        }
        ending
    }

    /// Runs `cases` on a dispatcher of their own (see [`Scheduler::run_all`]). Returns
    /// how it ended, the cases left waiting for other processes, and the signal
    /// listener unless a signal stopped the run (then the next one exits at once).
    async fn run_batch(
        &self,
        cases: Arc<Vec<Arc<Loaded>>>,
        in_order: &mut impl FnMut(&CaseReport),
        mut signals: Listener,
    ) -> (Ending, Vec<Waiting>, Option<Listener>) {
        let total = cases.len();
        let mut d = self.dispatch(cases.clone());
        let mut pending: BTreeMap<usize, CaseReport> = BTreeMap::new();
        let mut next = 0;
        let mut seen = vec![false; total];
        let mut interrupted = None;
        let mut waiting = Vec::new();
        loop {
            let message = tokio::select! {
                m = d.rx.recv() => m,
                s = signals.recv() => {
                    interrupted = Some(s);
                    None
                }
            };
            let Some((i, report)) = message else { break };
            seen[i] = true;
            d.forget(i);
            pending.insert(i, report);
            while let Some(r) = pending.remove(&next) {
                if d.is_deferred(next) {
                    waiting.push((r, cases[next].clone()));
                } else {
                    in_order(&r);
                }
                next += 1;
            }
        }
        let ending = |interrupted| Ending {
            stopped: d.stop.load(Ordering::SeqCst),
            interrupted,
            over_budget: d.over_budget.load(Ordering::SeqCst),
        };
        let Some(signal) = interrupted else {
            return (ending(None), waiting, Some(signals));
        };
        // From now on (stopping the run, writing its reports) a signal ends agentest at once.
        signals.exit_on_next();
        eprintln!(
            "\nagentest: interrupted ({}); stopping the running cases",
            signal.shown()
        );
        d.abort();
        // Cases that finished meanwhile keep their results; the rest are not run.
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        // A case the dispatcher started while it was being stopped is stopped too.
        d.abort();
        while let Ok((i, report)) = d.rx.try_recv() {
            seen[i] = true;
            pending.insert(i, report);
        }
        for (i, l) in cases.iter().enumerate().filter(|(i, _)| !seen[*i]) {
            pending.insert(i, d.interrupted(i, l, &self.recorder, signal));
        }
        for (i, r) in std::mem::take(&mut pending) {
            if d.is_deferred(i) {
                waiting.push((r, cases[i].clone()));
            } else {
                in_order(&r);
            }
        }
        (ending(Some(signal)), waiting, None)
    }

    /// Runs single repeats of cases whose repeats spread over workers (a worker's
    /// claimed work), at most `parallel` at once; `plan` is the case's, `Err` with why
    /// it cannot run. Each repeat's end goes to the store, where the case's repeats
    /// meet and its gate is decided in repeat order (see [`decide_stored`]);
    /// `decided` sees each case whose gate a repeat run here decided, as that happens.
    /// A repeat of a case this process saw decided does not start. Ctrl-C stops them:
    /// their repeats go back to the queue once this process is seen gone.
    pub(crate) async fn run_repeats(
        &self,
        work: Vec<(Arc<Loaded>, Result<Plan, String>, u32)>,
        mut decided: impl FnMut(&CaseReport),
    ) -> Ending {
        let mut signals = Listener::new();
        let semaphore = Arc::new(Semaphore::new(self.parallel));
        let done: Arc<Mutex<HashSet<String>>> = Arc::default();
        let mut tasks = tokio::task::JoinSet::new();
        for (l, plan, index) in work {
            let (engine, recorder) = (self.engine.clone(), self.recorder.clone());
            let (semaphore, done) = (semaphore.clone(), done.clone());
            tasks.spawn(async move {
                let _permit = semaphore.acquire_owned().await.ok()?;
                let (report, plan) = match plan {
                    Err(why) => {
                        let mut report = not_run(&l, String::new());
                        crate::run::outcome::fail(&mut report, Status::Error, why);
                        (report, Plan::single())
                    }
                    Ok(_) if lock(&done).contains(&l.trial) => (
                        not_run(
                            &l,
                            "not run: its case's gate was decided before this repeat started"
                                .into(),
                        ),
                        Plan::single(),
                    ),
                    Ok(plan) => {
                        let repeat = Repeat {
                            index,
                            of: plan.runs,
                            meters: plan.meters(),
                            attempt: 1,
                        };
                        let report = engine.clone().run_guarded(l.clone(), repeat).await;
                        (crate::record::without_secrets(report), plan)
                    }
                };
                let decide: Decide = {
                    let (l, engine) = (l.clone(), engine.clone());
                    Box::new(move |stored| {
                        let transcript = |r: &CaseReport| engine.transcript(&l, r);
                        match decide_stored(l.clone(), plan.clone(), stored, &transcript) {
                            Decision::Record(case) => {
                                Decision::Record(Box::new(crate::record::without_secrets(*case)))
                            }
                            other => other,
                        }
                    })
                };
                let ended = recorder
                    .end_repeat(l.trial.clone(), index, report, decide)
                    .await;
                Some((l, index, ended))
            });
        }
        let mut interrupted = None;
        loop {
            let joined = tokio::select! {
                j = tasks.join_next() => j,
                s = signals.recv() => {
                    interrupted = Some(s);
                    None
                }
            };
            let Some(joined) = joined else { break };
            match joined {
                Ok(Some((l, _, Ok(RepeatEnd::Decided(case))))) => {
                    lock(&done).insert(l.trial.clone());
                    self.recorder.record_stored(&case);
                    decided(&case);
                }
                Ok(Some((l, index, Err(why)))) => eprintln!(
                    "agentest: repeat {index} of {} was not recorded in the run store: {why}",
                    l.trial
                ),
                _ => {}
            }
        }
        if let Some(signal) = interrupted {
            eprintln!(
                "\nagentest: interrupted ({}); stopping the running repeats",
                signal.shown()
            );
            tasks.abort_all();
        }
        signals.exit_on_next();
        Ending {
            stopped: false,
            interrupted,
            over_budget: false,
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

/// What the dispatcher starts cases with; each case's task has its own handle.
#[derive(Clone)]
struct Dispatcher {
    engine: Arc<Engine>,
    recorder: Arc<Recorder>,
    stop: Arc<AtomicBool>,
    running: Running,
    groups: Groups,
    tx: mpsc::UnboundedSender<Done>,
    fail_fast: bool,
    over_budget: Arc<AtomicBool>,
    /// Waiting for other processes: the cases another process holds (see
    /// [`Scheduler::waiting_for_others`]).
    defer: Option<Arc<Mutex<HashSet<usize>>>>,
}

/// The repeats in flight (a case run once is its repeat 1), so Ctrl-C can stop them.
type Running = Arc<Mutex<HashMap<(usize, u32), AbortHandle>>>;

/// The repeated cases started, by index in the plan, so that Ctrl-C can report each
/// from the repeats that finished.
type Groups = Arc<Mutex<HashMap<usize, Arc<Group>>>>;

impl Dispatcher {
    /// Why nothing more may start: `--fail-fast` stopped the run, or a budget is spent.
    fn stopped(&self, plan: &Plan) -> Option<String> {
        if self.stop.load(Ordering::SeqCst) {
            return Some("not run: --fail-fast stopped the run after a failure".into());
        }
        let why = plan.exhausted()?;
        self.over_budget.store(true, Ordering::SeqCst);
        Some(format!("not run: {why}"))
    }

    /// Stops starting a repeated case's repeats, for `why`: an error when its own budget
    /// is spent, else skipped. Its record goes out now if none of them is running.
    fn halt(&self, i: usize, group: &Group, why: String) {
        let own_budget = group
            .plan
            .case_meter
            .as_ref()
            .is_some_and(|m| m.exhausted().is_some());
        let status = if own_budget {
            Status::Error
        } else {
            Status::Skipped
        };
        if let Some(report) = group.halt(status, why) {
            self.finish(i, report);
        }
    }

    /// Records and sends a case that did not run.
    fn unrun(&self, i: usize, l: &Loaded, reason: String) {
        let report = crate::record::without_secrets(not_run(l, reason));
        self.recorder.record_unrun(&report);
        let _ = self.tx.send((i, report));
    }

    /// The run store's claim of case `i`: whether it runs here. Another process of the
    /// same execution (a nextest run, a `--resume` elsewhere) may have it, and then the
    /// case is skipped here; a claim this process already holds means the trial was
    /// planned twice, an error of the run (its store row keeps the first's result).
    async fn claimed(&self, i: usize, l: &Loaded) -> bool {
        let why = match self.recorder.claim(&l.trial).await {
            Claim::Granted => return true,
            Claim::Elsewhere => {
                let why = "not run here: another process of this execution ran it";
                match &self.defer {
                    // Sent, for the order, but neither counted nor recorded: the run
                    // waits for the other process (see `Scheduler::run_all`).
                    Some(deferred) => {
                        lock(deferred).insert(i);
                        let _ = self.tx.send((i, not_run(l, why.into())));
                    }
                    None => self.unrun(i, l, why.into()),
                }
                return false;
            }
            Claim::Twice => format!(
                "not run: this process already ran a case named `{}`; two cases share the \
                 trial name, which loading should have refused (a bug of agentest's: \
                 please report it)",
                l.trial
            ),
        };
        let mut report = not_run(l, String::new());
        crate::run::outcome::fail(&mut report, Status::Error, why.to_string());
        note_failure(self.fail_fast, &self.stop, &report);
        self.recorder.record_unrun(&report);
        let _ = self.tx.send((i, report));
        false
    }

    /// Records and sends a case's report, stopping the run after a failure with
    /// `--fail-fast`.
    fn finish(&self, i: usize, report: CaseReport) {
        // The one way out for every record (repeats' verdicts and halted cases too).
        let report = crate::record::without_secrets(report);
        note_failure(self.fail_fast, &self.stop, &report);
        self.recorder.record(&report);
        let _ = self.tx.send((i, report));
    }

    fn track(&self, key: (usize, u32), task: &tokio::task::JoinHandle<()>) {
        self.running
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(key, task.abort_handle());
    }

    /// Runs a case once.
    fn start_single(&self, i: usize, l: Arc<Loaded>, plan: Plan, permit: OwnedSemaphorePermit) {
        let d = self.clone();
        let task = tokio::spawn(async move {
            if !d.claimed(i, &l).await {
                drop(permit);
                return;
            }
            let report = d
                .engine
                .clone()
                .run_guarded(l, Repeat::once(plan.meters()))
                .await;
            // The permit is released only after `finish` set the stop flag.
            d.finish(i, report);
            drop(permit);
        });
        self.track((i, 1), &task);
    }

    /// Runs repeat `index` of a repeated case; the repeat that decides its gate sends
    /// the case's report.
    fn start_repeat(&self, i: usize, group: Arc<Group>, index: u32, permit: OwnedSemaphorePermit) {
        let repeat = Repeat {
            index,
            of: group.plan.runs,
            meters: group.plan.meters(),
            attempt: 1,
        };
        group.starting(index);
        let task = {
            let (d, group) = (self.clone(), group.clone());
            tokio::spawn(async move {
                let l = group.loaded.clone();
                let report = d.engine.clone().run_guarded(l.clone(), repeat).await;
                let transcript = d.engine.transcript(&l, &report);
                if let Some(report) = group.finish(index, Finished { report, transcript }) {
                    d.finish(i, report);
                }
                drop(permit);
            })
        };
        group.spawned(index, task.abort_handle());
        self.track((i, index), &task);
    }
}

/// With `--fail-fast`, a case that did not pass stops the run from starting more.
fn note_failure(fail_fast: bool, stop: &AtomicBool, report: &CaseReport) {
    let inconclusive_fails = report.status == Status::Inconclusive
        && report.on_inconclusive != Some(crate::case::OnInconclusive::Ignore);
    if fail_fast
        && (inconclusive_fails
            || matches!(
                report.status,
                Status::Failed | Status::Error | Status::Timeout
            ))
    {
        stop.store(true, Ordering::SeqCst);
    }
}

/// The repeated cases with repeats still to start, in trial order, at most `limit` of
/// them (the `--parallel` limit, which bounds how many cases' repeats are held at once).
///
/// A free slot goes first to an open case with no repeat running, then to the next
/// case, and only then to another repeat of a case already running one. So with more
/// cases than slots each case runs about one repeat at a time, and a gate decided
/// early saves the repeats it did not start, not only the ones it cancels; with slots
/// to spare (few cases, the end of a run), the spare slots run further repeats at once.
struct Window {
    open: Vec<Opened>,
    limit: usize,
}

struct Opened {
    /// The case's index in the plan.
    i: usize,
    group: Arc<Group>,
    /// The next repeat to start.
    next: u32,
}

/// What a free slot is for.
enum Pick {
    /// The next repeat of the window's case at this position.
    Repeat(usize),
    /// The next case in trial order.
    Case,
    /// No case is left and every opened case has started all it will.
    Nothing,
}

impl Window {
    fn new(limit: usize) -> Window {
        Window {
            open: Vec::new(),
            limit: limit.max(1),
        }
    }

    fn is_empty(&self) -> bool {
        self.open.is_empty()
    }

    /// Adds a repeated case whose repeat 1 started.
    fn open(&mut self, i: usize, group: Arc<Group>) {
        self.open.push(Opened { i, group, next: 2 });
    }

    fn pick(&mut self, more_cases: bool) -> Pick {
        // Cases decided or halted meanwhile start nothing more.
        self.open.retain(|o| o.group.open());
        let in_flight: Vec<usize> = self.open.iter().map(|o| o.group.in_flight()).collect();
        if let Some(k) = in_flight.iter().position(|&n| n == 0) {
            return Pick::Repeat(k);
        }
        if more_cases && self.open.len() < self.limit {
            return Pick::Case;
        }
        match in_flight.iter().enumerate().min_by_key(|(_, &n)| n) {
            Some((k, _)) => Pick::Repeat(k),
            None if more_cases => Pick::Case,
            None => Pick::Nothing,
        }
    }

    /// The case at `k` and its next repeat's index; a case whose last repeat this is
    /// leaves the window.
    fn take(&mut self, k: usize) -> (usize, Arc<Group>, u32) {
        let o = &mut self.open[k];
        let taken = (o.i, o.group.clone(), o.next);
        o.next += 1;
        if o.next > o.group.plan.runs {
            self.open.remove(k);
        }
        taken
    }
}

/// A dispatch in progress.
struct Dispatch {
    dispatcher: tokio::task::JoinHandle<()>,
    /// The permits in flight: closed on Ctrl-C, so the dispatcher starts nothing more.
    semaphore: Arc<Semaphore>,
    /// The repeats in flight, so Ctrl-C can stop them; a finished case leaves the map.
    running: Running,
    groups: Groups,
    stop: Arc<AtomicBool>,
    over_budget: Arc<AtomicBool>,
    /// The cases left to other processes, reported when they end there.
    deferred: Arc<Mutex<HashSet<usize>>>,
    rx: mpsc::UnboundedReceiver<Done>,
}

impl Dispatch {
    /// Whether case `i` waits for another process (see [`Scheduler::waiting_for_others`]).
    fn is_deferred(&self, i: usize) -> bool {
        lock(&self.deferred).contains(&i)
    }

    fn forget(&self, i: usize) {
        lock(&self.running).retain(|(case, _), _| *case != i);
        lock(&self.groups).remove(&i);
    }

    /// The record of case `i` (`l`), not seen to end when the run was interrupted: a
    /// repeated case's from the repeats that finished (recorded as ended when they
    /// decide its gate), else not run. A case that did not end is recorded as not run,
    /// so the store queues its run again for `--resume`.
    fn interrupted(
        &self,
        i: usize,
        l: &Loaded,
        recorder: &Recorder,
        signal: StopSignal,
    ) -> CaseReport {
        let why = format!("the run was interrupted ({})", signal.shown());
        let group = lock(&self.groups).remove(&i);
        match group.and_then(|g| g.interrupted(&why)) {
            Some((report, true)) => {
                recorder.record(&report);
                report
            }
            Some((report, false)) => {
                recorder.record_unrun(&report);
                report
            }
            None => {
                let report = not_run(l, format!("not run: {why}"));
                recorder.record_unrun(&report);
                report
            }
        }
    }

    fn abort(&self) {
        // Closed first: the permits the aborted cases free would otherwise start the
        // next cases before the dispatcher's abort takes effect at its next pause.
        self.semaphore.close();
        self.dispatcher.abort();
        for (_, h) in lock(&self.running).drain() {
            h.abort();
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Dispatcher {
    /// Takes permits, and with each starts the next repeat or case in trial order,
    /// until every case has run (or the semaphore is closed).
    async fn take_permits(
        &self,
        cases: &[Arc<Loaded>],
        semaphore: &Arc<Semaphore>,
        parallel: usize,
    ) {
        let mut window = Window::new(parallel);
        let mut next_case = 0;
        'permits: loop {
            if next_case == cases.len() && window.is_empty() {
                break;
            }
            let Ok(permit) = semaphore.clone().acquire_owned().await else {
                return;
            };
            // Ends not yet written wait in memory; a slow store sets the pace.
            self.recorder.store_room().await;
            // Until the permit starts something: a case that does not run
            // (a plan error, a stop, another process's claim) leaves it free.
            loop {
                let more = next_case < cases.len();
                match window.pick(more) {
                    Pick::Repeat(k) => {
                        let (i, group, index) = window.take(k);
                        if let Some(why) = self.stopped(&group.plan) {
                            // Halted, it leaves the window at the next pick.
                            self.halt(i, &group, why);
                            continue;
                        }
                        self.start_repeat(i, group, index, permit);
                        break;
                    }
                    Pick::Case => {
                        let i = next_case;
                        next_case += 1;
                        let l = &cases[i];
                        let plan = match self.engine.plan(l) {
                            Ok(p) => p,
                            Err(why) => {
                                let mut report = not_run(l, String::new());
                                crate::run::outcome::fail(
                                    &mut report,
                                    Status::Error,
                                    why.to_string(),
                                );
                                self.finish(i, report);
                                continue;
                            }
                        };
                        if let Some(why) = self.stopped(&plan) {
                            self.unrun(i, l, why);
                            continue;
                        }
                        if plan.runs <= 1 {
                            self.start_single(i, l.clone(), plan, permit);
                            break;
                        }
                        // The run store's claim, once for all of the repeats.
                        if !self.claimed(i, l).await {
                            continue;
                        }
                        let group = Arc::new(Group::new(l.clone(), plan));
                        lock(&self.groups).insert(i, group.clone());
                        self.start_repeat(i, group.clone(), 1, permit);
                        window.open(i, group);
                        break;
                    }
                    Pick::Nothing => break 'permits,
                }
            }
        }
    }
}
