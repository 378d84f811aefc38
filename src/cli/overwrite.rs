//! What `-o` may write over. A report replaces its file whole, so a mistyped `-o` onto a
//! suite (`-i agent-tests -o agent-tests/smoke.jsonl`) would put a report where the
//! user's cases were. Checked before anything runs: `-o` never names the file the cases
//! are read from, never a suite the input folder holds, and a built-in report replaces
//! only a file that is missing, empty, or an agentest report of its format.

use std::path::Path;

use crate::errors::OverwriteError;
use crate::plan::Input;
use crate::record::{is_report, only_over_a_report};

/// What `-o` is written with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Writer {
    /// A built-in report: the file must be missing, empty or an agentest report.
    Report,
    /// A reporter agent's answer, in a format of its own: only the user's cases are kept.
    Reporter,
    /// `--dry-run -o`: the validated cases, a suite of its own.
    Cases,
}

/// Checks that `output` may be written for a run of `input`.
pub(super) fn check(input: &Input, output: &Path, writer: Writer) -> Result<(), OverwriteError> {
    let what = match writer {
        Writer::Report | Writer::Reporter => "the report",
        Writer::Cases => "the cases",
    };
    match input {
        Input::File(file) => not_the_input(file, output, what)?,
        Input::Dir(root) => {
            // A report already there (`-i agent-tests -o agent-tests/report.jsonl` run
            // again) is found too, by name; it is replaced as any other report is.
            let report_there = writer != Writer::Cases && is_report(output).unwrap_or(false);
            if !report_there && is_suite_under(root, output) {
                return Err(OverwriteError::Suite {
                    what,
                    path: output.to_path_buf(),
                    root: root.clone(),
                });
            }
        }
        Input::Message(_) | Input::Generator(_) => {}
    }
    if writer == Writer::Report {
        only_over_a_report(output, "-o")?;
    }
    Ok(())
}

/// Refuses `output` when it is `input`, however either is spelt.
pub(super) fn not_the_input(
    input: &Path,
    output: &Path,
    what: &'static str,
) -> Result<(), OverwriteError> {
    match (std::fs::canonicalize(input), std::fs::canonicalize(output)) {
        (Ok(a), Ok(b)) if a == b => Err(OverwriteError::Input {
            what,
            path: output.to_path_buf(),
        }),
        _ => Ok(()),
    }
}

/// Whether discovery under `root` lists `file` as a suite.
fn is_suite_under(root: &Path, file: &Path) -> bool {
    let Ok(target) = std::fs::canonicalize(file) else {
        return false;
    };
    crate::source::discover(root).is_ok_and(|found| {
        found
            .iter()
            .any(|f| std::fs::canonicalize(f).is_ok_and(|f| f == target))
    })
}
