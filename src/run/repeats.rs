//! A case run more than once: its plan (runs, gate, budgets), the repeats in flight, the
//! gate decided on them as they finish (stopping the rest early), and the one record
//! the case's trial reports.
//!
//! The gate is decided on the repeats in index order (1, 2, 3, ...): a repeat that
//! finishes before an earlier one waits for it to count. So the verdict, the repeats
//! counted and what early stopping saved are the same however the repeats overlap,
//! with `--parallel 1` or 64, live or replayed.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use tokio::task::AbortHandle;

use crate::case::{Budget, Gate};
use crate::check::gate::{consistency, decide, needed, wilson, Tally, Verdict};
use crate::llm::{Meter, Meters};
use crate::record::{CaseReport, Cost, DurationStats, Stability, StabilityClass, Status};
use crate::source::Loaded;

/// The confidence of the Wilson interval reported when the gate names none.
const DEFAULT_CONFIDENCE: f64 = 0.95;

/// Which repeat of its case a run is, and the budgets it spends under.
#[derive(Clone, Debug)]
pub(crate) struct Repeat {
    /// From 1.
    pub(crate) index: u32,
    /// The case's `runs`.
    pub(crate) of: u32,
    /// The case's and the run's budgets.
    pub(crate) meters: Meters,
    /// Which attempt at it this is, from 1: more under `[run] rerun_on`.
    pub(crate) attempt: u32,
}

impl Repeat {
    /// The only run of a case run once.
    pub(crate) fn once(meters: Meters) -> Repeat {
        Repeat {
            index: 1,
            of: 1,
            meters,
            attempt: 1,
        }
    }

    /// The seed salt of the repeat: the case's trial name for the first, `<trial>@<n>`
    /// for the others.
    pub(crate) fn key(&self, trial: &str) -> String {
        let repeat = if self.index <= 1 {
            trial.to_string()
        } else {
            format!("{trial}@{}", self.index)
        };
        // A run again is another conversation: its simulator samples afresh.
        if self.attempt <= 1 {
            repeat
        } else {
            format!("{repeat}~{}", self.attempt)
        }
    }

    /// The same repeat's attempt `attempt` (from 1).
    pub(crate) fn attempt(&self, attempt: u32) -> Repeat {
        Repeat {
            attempt,
            ..self.clone()
        }
    }

    /// The repeat's cassette: the case's for the first (so going from 1 run to 5 keeps
    /// the first recording), `<case file name>@<n>.jsonl` beside it for the others. An
    /// `@` in an id is escaped in file names, so no id can take another's repeat's file.
    pub(crate) fn cassette(
        &self,
        suite_file: &std::path::Path,
        trial_id: &str,
    ) -> std::path::PathBuf {
        let first = crate::llm::cassette::path_for(suite_file, trial_id);
        if self.index <= 1 && self.attempt <= 1 {
            return first;
        }
        let stem = first
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        // Each attempt has its own recording too: replaying the first's would only
        // repeat its failure.
        let repeat = if self.index <= 1 {
            stem
        } else {
            format!("{stem}@{}", self.index)
        };
        let attempt = if self.attempt <= 1 {
            String::new()
        } else {
            format!("~{}", self.attempt)
        };
        first.with_file_name(format!("{repeat}{attempt}.jsonl"))
    }
}

/// How a case is repeated.
#[derive(Clone, Debug)]
pub(crate) struct Plan {
    /// `runs`.
    pub(crate) runs: u32,
    /// What the repeats must show.
    pub(crate) gate: Gate,
    /// The case's budget meter, when it has a budget.
    pub(crate) case_meter: Option<Arc<Meter>>,
    /// The run's budget meter (`[run] max_cost`), when there is one.
    pub(crate) run_meter: Option<Arc<Meter>>,
}

impl Plan {
    /// A case run once, under no budget: a line that did not load, a skipped case.
    pub(crate) fn single() -> Plan {
        Plan {
            runs: 1,
            gate: Gate::All,
            case_meter: None,
            run_meter: None,
        }
    }

    /// A case's budget meter for `budget` in `currency`, when it limits anything.
    pub(crate) fn case_meter(budget: Budget, currency: Option<&str>) -> Option<Arc<Meter>> {
        budget
            .is_set()
            .then(|| Meter::new("the case's", budget, currency))
    }

    /// The meters a repeat spends under.
    pub(crate) fn meters(&self) -> Meters {
        Meters::new(self.case_meter.iter().chain(&self.run_meter).cloned())
    }

    /// Why no more repeats of the case may start, when a budget is gone.
    pub(crate) fn exhausted(&self) -> Option<String> {
        self.case_meter
            .iter()
            .chain(&self.run_meter)
            .find_map(|m| m.exhausted())
    }
}

/// One case's repeats while they run.
pub(crate) struct Group {
    pub(crate) loaded: Arc<Loaded>,
    pub(crate) plan: Plan,
    state: Mutex<State>,
}

/// A finished repeat: its record and its transcript as golden files normalise it.
pub(crate) struct Finished {
    pub(crate) report: CaseReport,
    pub(crate) transcript: String,
}

#[derive(Default)]
struct State {
    finished: HashMap<u32, Finished>,
    /// The repeats started and not finished: each one's task, once it is known. A
    /// repeat is entered before its task is spawned, so one that ends at once is never
    /// left behind as running.
    running: HashMap<u32, Option<AbortHandle>>,
    /// Repeats 1..=counted are counted in `tally`.
    counted: u32,
    tally: Tally,
    decided: Option<Verdict>,
    /// Why no more repeats start (a budget, `--fail-fast`, another process's claim).
    halted: Option<(Status, String)>,
    /// The case's record was made: nothing more happens.
    done: bool,
    cancelled: u32,
    started: u32,
    first_start: Option<Instant>,
}

impl Group {
    pub(crate) fn new(loaded: Arc<Loaded>, plan: Plan) -> Group {
        Group {
            loaded,
            plan,
            state: Mutex::new(State::default()),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether another repeat may start: the gate is not decided and nothing halted it.
    pub(crate) fn open(&self) -> bool {
        let s = self.state();
        !s.done && s.decided.is_none() && s.halted.is_none()
    }

    /// Repeats started and not yet finished.
    pub(crate) fn in_flight(&self) -> usize {
        self.state().running.len()
    }

    /// Notes that repeat `index` is about to start (before its task is spawned).
    pub(crate) fn starting(&self, index: u32) {
        let mut s = self.state();
        s.started += 1;
        s.first_start.get_or_insert_with(Instant::now);
        s.running.insert(index, None);
    }

    /// Notes repeat `index`'s task, so a decision can stop it: at once when the case was
    /// decided meanwhile; not at all when the repeat already finished.
    pub(crate) fn spawned(&self, index: u32, handle: AbortHandle) {
        let mut s = self.state();
        if s.done {
            handle.abort();
        } else if let Some(slot) = s.running.get_mut(&index) {
            *slot = Some(handle);
        }
    }

    /// Counts a finished repeat; the case's record when this decides the gate (the
    /// repeats still running are stopped) or was the last one a halt waited for.
    pub(crate) fn finish(&self, index: u32, finished: Finished) -> Option<CaseReport> {
        let mut s = self.state();
        if s.done {
            return None;
        }
        s.running.remove(&index);
        s.finished.insert(index, finished);
        while s.decided.is_none() {
            let next = s.counted + 1;
            let Some(f) = s.finished.get(&next) else {
                break;
            };
            match f.report.status {
                Status::Passed => s.tally.passed += 1,
                Status::Failed => s.tally.failed += 1,
                // A skipped repeat (no model to be had) says nothing either way.
                _ => s.tally.errors += 1,
            }
            s.counted = next;
            s.decided = decide(&self.plan.gate, self.plan.runs, s.tally);
        }
        if s.decided.is_some() {
            s.cancelled = s.running.len() as u32;
            for h in s.running.drain().filter_map(|(_, h)| h) {
                h.abort();
            }
            s.done = true;
            return Some(self.record(&mut s));
        }
        if s.halted.is_some() && s.running.is_empty() {
            s.done = true;
            return Some(self.record(&mut s));
        }
        None
    }

    /// Stops starting repeats, for `why`; the case's record when none is running.
    pub(crate) fn halt(&self, status: Status, why: String) -> Option<CaseReport> {
        let mut s = self.state();
        if s.done || s.decided.is_some() {
            return None;
        }
        s.halted.get_or_insert((status, why));
        if s.running.is_empty() {
            s.done = true;
            return Some(self.record(&mut s));
        }
        None
    }

    /// The case's record when the run is interrupted before its gate was decided: every
    /// repeat that finished is counted (in index order, over the gaps the stopped ones
    /// left), and the gate decides on them when they settle it whatever the rest would
    /// have done; else the case is `skipped`, "not decided", with the repeats that ran.
    /// `None` when the case's record was already made. The flag: the gate decided.
    pub(crate) fn interrupted(&self, why: &str) -> Option<(CaseReport, bool)> {
        let mut s = self.state();
        if s.done {
            return None;
        }
        s.cancelled = s.running.len() as u32;
        s.running.clear();
        let counted = s.counted;
        let mut late: Vec<u32> = s
            .finished
            .keys()
            .copied()
            .filter(|&k| k > counted)
            .collect();
        late.sort_unstable();
        for index in late {
            let Some(f) = s.finished.remove(&index) else {
                continue;
            };
            match f.report.status {
                Status::Passed => s.tally.passed += 1,
                Status::Failed => s.tally.failed += 1,
                _ => s.tally.errors += 1,
            }
            // Renumbered after the counted ones; its record keeps its own index.
            s.counted += 1;
            let at = s.counted;
            s.finished.insert(at, f);
        }
        s.decided = decide(&self.plan.gate, self.plan.runs, s.tally);
        if s.decided.is_none() {
            // A halt that came first (a spent budget) says more than the interrupt.
            s.halted.get_or_insert_with(|| {
                (
                    Status::Skipped,
                    format!("not decided: {why} before the gate could decide"),
                )
            });
        }
        s.done = true;
        let decided = s.decided.is_some();
        Some((self.record(&mut s), decided))
    }

    /// The case's record: the counted repeats, their figures and the verdict.
    fn record(&self, s: &mut State) -> CaseReport {
        let counted: Vec<Finished> = (1..=s.counted)
            .filter_map(|i| s.finished.remove(&i))
            .collect();
        let plan = &self.plan;
        let Tally {
            passed,
            failed,
            errors,
        } = s.tally;
        let (status, reason) = match (s.decided, &s.halted) {
            (Some(v), _) => verdict(v, plan, s.tally, &counted),
            (None, Some((status, why))) => (
                *status,
                Some(format!(
                    "{why} ({} of {} repeats counted: {passed} passed, {failed} failed, {errors} errors)",
                    s.counted, plan.runs
                )),
            ),
            (None, None) => unreachable!("a record is made once decided or halted"),
        };
        // The turns shown are those of the first repeat that ended as the case did.
        let shown = counted
            .iter()
            .position(|f| f.report.status == status)
            .or_else(|| {
                counted
                    .iter()
                    .position(|f| !matches!(f.report.status, Status::Passed))
            })
            .unwrap_or(0);
        let mut record = match counted.get(shown) {
            Some(f) => f.report.clone(),
            None => crate::run::outcome::not_run(&self.loaded, String::new()),
        };
        record.repeat = None;
        record.status = status;
        record.error = reason;
        // The shown repeat's own, where the case ended otherwise.
        if status != Status::Inconclusive {
            record.on_inconclusive = None;
        }
        if status == Status::Passed {
            record.blame = None;
        }
        record.stability = Some(self.stability(s, &counted));
        // What the case used is what its counted repeats used.
        sum_usage(&mut record, &counted);
        record.duration_ms = s.first_start.map_or(0, |t| t.elapsed().as_millis() as u64);
        record.repeats = counted.into_iter().map(|f| f.report).collect();
        record
    }

    /// The repeats' figures: the tally, the pass rate and its interval, consistency
    /// and durations.
    fn stability(&self, s: &State, counted: &[Finished]) -> Stability {
        let plan = &self.plan;
        let Tally {
            passed,
            failed,
            errors,
        } = s.tally;
        let decided = passed + failed;
        let pass_rate = (decided > 0).then(|| f64::from(passed) / f64::from(decided));
        let confidence = match plan.gate {
            Gate::PassRate {
                confidence: Some(c),
                ..
            } => c,
            _ => DEFAULT_CONFIDENCE,
        };
        let durations: Vec<u64> = counted.iter().map(|f| f.report.duration_ms).collect();
        let transcripts: Vec<String> = counted.iter().map(|f| f.transcript.clone()).collect();
        Stability {
            gate: plan.gate.describe(plan.runs),
            planned: plan.runs,
            runs: s.counted,
            started: s.started,
            saved: plan.runs - s.counted,
            cancelled: s.cancelled,
            passed,
            failed,
            errors,
            pass_rate,
            wilson: (decided > 0).then(|| {
                let (lo, hi) = wilson(passed, decided, confidence);
                [lo, hi]
            }),
            confidence,
            class: pass_rate.map(StabilityClass::of),
            consistency: consistency(&transcripts),
            duration: DurationStats::of(&durations),
            flaky: passed > 0 && failed > 0,
        }
    }
}

/// What a case's repeats as the store holds them (`stored`, spread over workers) come
/// to, decided as [`Group`] decides in one process: the gate in repeat order, repeats
/// started and not ended counting as cancelled. A repeat whose stored record cannot be
/// read counts as an error, saying so. The case's own budget holds for all its repeats,
/// wherever they ran: what the ended ones spent, as recorded, is counted against it,
/// and once it is spent no more repeats start (the case is an error, as in one
/// process). The record's duration is the counted repeats' summed time (they ran on
/// several workers, not one after the other).
pub(crate) fn decide_stored(
    loaded: Arc<Loaded>,
    plan: Plan,
    stored: &[crate::record::store::StoredRepeat],
    transcript: &dyn Fn(&CaseReport) -> String,
) -> crate::record::store::Decision {
    use crate::record::store::Decision;
    let spent = plan.case_meter.as_ref().map(|m| m.fresh());
    let group = Group::new(loaded.clone(), plan);
    for r in stored.iter().filter(|r| r.running || r.ended.is_some()) {
        group.starting(r.index);
    }
    let summed = |mut case: CaseReport| {
        case.duration_ms = case.repeats.iter().map(|r| r.duration_ms).sum();
        Decision::Record(Box::new(case))
    };
    for r in stored {
        let Some(json) = &r.ended else {
            continue;
        };
        let report = serde_json::from_str::<CaseReport>(json).unwrap_or_else(|e| {
            let mut report = crate::run::outcome::not_run(&loaded, String::new());
            crate::run::outcome::fail(
                &mut report,
                crate::record::Status::Error,
                format!(
                    "repeat {}: its record in the run store could not be read: {e}",
                    r.index
                ),
            );
            report.repeat = Some(r.index);
            report
        });
        if let Some(meter) = &spent {
            let tokens = report.usage.values().map(|u| u.total()).sum();
            meter.charge(
                tokens,
                report.cost.as_ref().and_then(|c| c.spent).unwrap_or(0.0),
            );
        }
        let transcript = transcript(&report);
        if let Some(case) = group.finish(r.index, Finished { report, transcript }) {
            return summed(case);
        }
    }
    match spent.as_ref().and_then(|m| m.exhausted()) {
        Some(why) => match group.halt(crate::record::Status::Error, format!("not run: {why}")) {
            Some(case) => summed(case),
            None => Decision::Halt,
        },
        None => Decision::Open,
    }
}

/// What the counted repeats used, summed into the case's record.
fn sum_usage(record: &mut CaseReport, counted: &[Finished]) {
    record.usage.clear();
    record.replayed_usage.clear();
    record.model_calls = 0;
    record.replayed_calls = 0;
    record.retries = 0;
    record.cost = None;
    for f in counted {
        let r = &f.report;
        for (role, u) in &r.usage {
            record.usage.entry(*role).or_default().add(*u);
        }
        for (role, u) in &r.replayed_usage {
            record.replayed_usage.entry(*role).or_default().add(*u);
        }
        record.model_calls += r.model_calls;
        record.replayed_calls += r.replayed_calls;
        record.retries += r.retries;
        if let Some(c) = &r.cost {
            record.cost.get_or_insert_with(Cost::default).add(c);
        }
    }
}

/// The case's status and message for the gate's verdict.
fn verdict(
    v: Verdict,
    plan: &Plan,
    tally: Tally,
    counted: &[Finished],
) -> (Status, Option<String>) {
    let Tally {
        passed,
        failed,
        errors,
    } = tally;
    let gate = plan.gate.describe(plan.runs);
    let counts = format!("{passed} passed, {failed} failed, {errors} errors");
    // The first repeat that did not pass says why, as a lone run would.
    let first = |status: &[Status]| {
        counted
            .iter()
            .find(|f| status.contains(&f.report.status))
            .map(|f| {
                format!(
                    "; repeat {}: {}",
                    f.report.repeat.unwrap_or(1),
                    f.report.error.as_deref().unwrap_or("did not pass")
                )
            })
            .unwrap_or_default()
    };
    let interval = || {
        let n = passed + failed;
        match plan.gate {
            Gate::PassRate {
                confidence: Some(c),
                ..
            } if n > 0 => {
                let (lo, hi) = wilson(passed, n, c);
                format!(", Wilson interval [{lo:.3}, {hi:.3}]")
            }
            _ => String::new(),
        }
    };
    match v {
        Verdict::Passed => (Status::Passed, None),
        Verdict::Failed => (
            Status::Failed,
            Some(format!(
                "gate {gate} failed: {counts}{}{}",
                interval(),
                first(&[Status::Failed])
            )),
        ),
        Verdict::Undecidable => {
            let need = match needed(&plan.gate, plan.runs) {
                Some(k) => format!("the gate needs {k} passes"),
                None => "the interval cannot settle".into(),
            };
            // Left undecided only by repeats a judge could not decide: the case is
            // inconclusive, as a lone run of it would be.
            let undecided = counted
                .iter()
                .filter(|f| !matches!(f.report.status, Status::Passed | Status::Failed));
            let mut undecided = undecided.peekable();
            let all_inconclusive = undecided.peek().is_some()
                && undecided.all(|f| f.report.status == Status::Inconclusive);
            if all_inconclusive {
                return (
                    Status::Inconclusive,
                    Some(format!(
                        "gate {gate} cannot be decided: {counts}; {need}, and every repeat that did not decide was inconclusive{}{}",
                        interval(),
                        first(&[Status::Inconclusive])
                    )),
                );
            }
            (
                Status::Error,
                Some(format!(
                    "gate {gate} cannot be decided: {counts}; {need}, and errors are not failures, so fix what errored{}{}",
                    interval(),
                    first(&[
                        Status::Error,
                        Status::Timeout,
                        Status::Inconclusive,
                        Status::Skipped
                    ])
                )),
            )
        }
        Verdict::Inconclusive => (
            Status::Failed,
            Some(format!(
                "gate {gate} is inconclusive: {counts}{}, which still contains {}; raise `runs` for a narrower interval{}",
                interval(),
                match plan.gate {
                    Gate::PassRate { rate, .. } => rate.to_string(),
                    _ => String::new(),
                },
                first(&[Status::Failed])
            )),
        ),
    }
}
