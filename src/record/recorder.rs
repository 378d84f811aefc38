//! Recording a run as its cases finish: the report file (when there is one), the run
//! store (unless it is off) and the summary. The binary and the harness record through
//! the same [`Recorder`].

use std::sync::{Mutex, OnceLock};

use crate::errors::{ReportError, StoreError};
use crate::record::store::{ExecutionInfo, Planned, Resumed, StoreWriter};
use crate::record::{CaseReport, ReportSink, RunInfo, Summary};
use crate::source::Loaded;

/// What an execution plans into the store (see [`Recorder::open_store`]).
pub(crate) struct StorePlan<'a> {
    /// The cases it will run.
    pub(crate) cases: &'a [&'a Loaded],
    /// Resuming: every case of the suites (`--run` or not) with its `input_hash`.
    pub(crate) resume: Option<&'a std::collections::HashMap<String, Option<String>>>,
    /// The runs that the cases retry, by trial.
    pub(crate) retry_of: &'a std::collections::HashMap<String, i64>,
    /// Per case, how many repeats to queue one by one, so that they spread over
    /// workers (`--enqueue`); empty when none is.
    pub(crate) repeats: Vec<Option<u32>>,
}

/// A run's report file, store and summary, fed one case at a time, from any thread.
pub(crate) struct Recorder {
    sink: Option<ReportSink>,
    /// The first failure to write the report: nothing more is written to it, and the run
    /// ends in error (a report with holes would pass for a whole one).
    report_failed: Mutex<Option<ReportError>>,
    store: OnceLock<StoreWriter>,
    summary: Mutex<Summary>,
}

impl Recorder {
    pub(crate) fn new(sink: Option<ReportSink>) -> Recorder {
        Recorder {
            sink,
            report_failed: Mutex::new(None),
            store: OnceLock::new(),
            summary: Mutex::new(Summary::new()),
        }
    }

    /// Opens the run store at `address` (see [`crate::record::store::location`]) for an
    /// execution that will run `cases`: a new one, or with `resume` (every case of the
    /// suites with its `input_hash`) the newest one that did not finish, whose ended runs
    /// are sorted as [`StoreWriter::resume`] says; the kept ones are counted and reported
    /// here. Called once, before any case starts.
    pub(crate) fn open_store(
        &self,
        address: &crate::util::StoreAddress,
        info: &ExecutionInfo,
        plan: StorePlan<'_>,
    ) -> Result<Resumed, StoreError> {
        let StorePlan {
            cases,
            resume,
            retry_of,
            repeats,
        } = plan;
        // Absolute, so that `runs retry` finds the files from anywhere.
        let files: Vec<String> = cases
            .iter()
            .map(|l| {
                std::path::absolute(&l.file)
                    .unwrap_or_else(|_| l.file.clone())
                    .display()
                    .to_string()
            })
            .collect();
        let planned: Vec<Planned<'_>> = cases
            .iter()
            .zip(&files)
            .enumerate()
            .map(|(i, (l, file))| Planned {
                trial: &l.trial,
                suite: &l.suite,
                case_id: match &l.entry {
                    Ok(c) => &c.id,
                    Err(_) => l.trial.rsplit("::").next().unwrap_or(&l.trial),
                },
                file,
                retry_of: retry_of.get(&l.trial).copied(),
                repeats: repeats.get(i).copied().flatten(),
            })
            .collect();
        let (writer, resumed) = match resume {
            Some(present) => StoreWriter::resume(address, info, &planned, present)?,
            None => (
                StoreWriter::begin(address, info, &planned)?,
                Resumed::default(),
            ),
        };
        let _ = self.store.set(writer);
        for r in &resumed.ended {
            self.count_and_report(r);
        }
        Ok(resumed)
    }

    /// The run store's execution, when there is a store.
    pub(crate) fn execution(&self) -> Option<i64> {
        self.store.get().map(StoreWriter::execution)
    }

    /// Runs this process claimed before it planned them (a worker's batch).
    pub(crate) fn preclaimed(&self, trials: &[String]) {
        if let Some(s) = self.store.get() {
            s.preclaimed(trials);
        }
    }

    /// Claims the case of `trial` for this process (always granted without a store).
    pub(crate) async fn claim(&self, trial: &str) -> crate::record::store::Claim {
        match self.store.get() {
            Some(s) => s.claim(trial).await,
            None => crate::record::store::Claim::Granted,
        }
    }

    /// Where the runs of `trials`, which other processes of the execution held, stand
    /// now; one queued again is claimed for this process. `Err` without a store.
    pub(crate) async fn settle(
        &self,
        trials: Vec<String>,
    ) -> Result<Vec<crate::record::store::Settled>, String> {
        match self.store.get() {
            Some(s) => s.settle(trials).await,
            None => Err("there is no run store".into()),
        }
    }

    /// Repeat `index` of the spread case `trial` ended with `report` (see
    /// [`StoreWriter::end_repeat`]). `Err` without a store, or when it failed.
    pub(crate) async fn end_repeat(
        &self,
        trial: String,
        index: u32,
        report: CaseReport,
        decide: crate::record::store::Decide,
    ) -> Result<crate::record::store::RepeatEnd, String> {
        match self.store.get() {
            Some(s) => s.end_repeat(trial, index, report, decide).await,
            None => Err("there is no run store".into()),
        }
    }

    /// A case whose record the store has already (the repeat that decided its gate
    /// wrote it there, or another process of the execution ran it): counted and
    /// reported here, and left as it is in the store.
    pub(crate) fn record_stored(&self, report: &CaseReport) {
        self.count_and_report(report);
    }

    /// Waits for the store's last writes and closes its execution, which took
    /// `duration_ms` in this process. `Err`: what the store did not record.
    pub(crate) fn close_store(&self, duration_ms: u64) -> Result<(), StoreError> {
        match self.store.get() {
            Some(s) => s.finish(duration_ms),
            None => Ok(()),
        }
    }

    /// Counts a finished case, writes it to the report and records its end in the store.
    /// A report that cannot be written does not change the case's result; it is the
    /// run's error, given by [`Recorder::finish`].
    pub(crate) fn record(&self, report: &CaseReport) {
        self.count_and_report(report);
        if let Some(s) = self.store.get() {
            s.done(report);
        }
    }

    /// Waits until the store has room for more case ends (see [`StoreWriter::room`]);
    /// at once without a store.
    pub(crate) async fn store_room(&self) {
        if let Some(s) = self.store.get() {
            s.room().await;
        }
    }

    /// A case that did not run, or not to its end (Ctrl-C, `--fail-fast`, another
    /// process has it): counted and reported, and its run left to run in the store
    /// (`queued`, for `--resume`; one this process had started is queued again).
    pub(crate) fn record_unrun(&self, report: &CaseReport) {
        self.count_and_report(report);
        if let Some(s) = self.store.get() {
            s.unrun(&report.trial);
        }
    }

    fn count_and_report(&self, report: &CaseReport) {
        self.summary
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .add(report);
        if let Some(sink) = &self.sink {
            let mut failed = self.report_failed.lock().unwrap_or_else(|e| e.into_inner());
            if failed.is_none() {
                *failed = sink.record(report).err();
            }
        }
    }

    /// Why the report could not be written, when it could not.
    pub(crate) fn report_failure(&self) -> Option<String> {
        self.report_failed
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
            .map(ToString::to_string)
    }

    /// The summary so far.
    pub(crate) fn summary(&self) -> Summary {
        self.summary
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Whether a report file is being written.
    pub(crate) fn has_report(&self) -> bool {
        self.sink.is_some()
    }

    /// Ends the report with `summary` (the summary line, or the rendered document). `Err`
    /// when the report, or a record in it, could not be written: then nothing was
    /// finished and no temporary file is left.
    pub(crate) fn finish(&self, run: &RunInfo, summary: &Summary) -> Result<(), ReportError> {
        let Some(sink) = &self.sink else {
            return Ok(());
        };
        let mut failed = self.report_failed.lock().unwrap_or_else(|e| e.into_inner());
        match failed.take() {
            Some(e) => Err(e),
            None => sink.finish(run, summary),
        }
    }
}
