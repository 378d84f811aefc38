//! Recording a run as its cases finish: the report file (when there is one) and the
//! summary. The binary and the harness record through the same [`Recorder`].

use std::sync::Mutex;

use crate::record::{CaseReport, ReportSink, RunInfo, Summary};

/// A run's report file and summary, fed one case at a time, from any thread.
pub(crate) struct Recorder {
    sink: Option<ReportSink>,
    summary: Mutex<Summary>,
}

impl Recorder {
    pub(crate) fn new(sink: Option<ReportSink>) -> Recorder {
        Recorder {
            sink,
            summary: Mutex::new(Summary::new()),
        }
    }

    /// Counts a finished case and writes it to the report. A report that cannot be
    /// written is a warning on stderr: the case's own result stands.
    pub(crate) fn record(&self, report: &CaseReport) {
        self.summary
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .add(report);
        if let Some(sink) = &self.sink {
            if let Err(e) = sink.record(report) {
                eprintln!(
                    "warning: failed to write {} to the report {}: {e}",
                    report.trial,
                    sink.path().display()
                );
            }
        }
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

    /// Ends the report with `summary` (the summary line, or the rendered document).
    pub(crate) fn finish(&self, run: &RunInfo, summary: &Summary) {
        if let Some(sink) = &self.sink {
            if let Err(e) = sink.finish(run, summary) {
                eprintln!(
                    "warning: failed to finish the report {}: {e}",
                    sink.path().display()
                );
            }
        }
    }
}
