//! Where a run's report goes: JSONL records streamed as cases end, or any other format
//! rendered from all of them when the run ends.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use super::{CaseReport, Format, JsonlWriter, RunInfo, Summary};
use crate::errors::ReportError;

/// A report file being written.
pub(crate) struct ReportSink {
    path: PathBuf,
    kind: Kind,
}

enum Kind {
    /// One record per line as each case ends; a summary line at the end.
    Jsonl(JsonlWriter),
    /// Everything rendered at the end.
    Rendered {
        format: Format,
        cases: Mutex<Vec<CaseReport>>,
    },
}

impl ReportSink {
    /// A report at `path`, its format chosen by the extension; `truncate` starts a JSONL
    /// report afresh (a rendered report is always replaced).
    pub(crate) fn create(path: &Path, truncate: bool) -> Result<ReportSink, ReportError> {
        let format = Format::from_path(path).ok_or_else(|| ReportError::UnknownFormat {
            path: path.to_path_buf(),
            known: Format::EXTENSIONS,
        })?;
        let kind = match format {
            Format::Jsonl => Kind::Jsonl(JsonlWriter::open(path, truncate).map_err(|source| {
                ReportError::Open {
                    path: path.to_path_buf(),
                    source,
                }
            })?),
            other => {
                // Rendered at the end: find out now, before a case runs, that it can be.
                crate::util::check_writable(path).map_err(|source| ReportError::Open {
                    path: path.to_path_buf(),
                    source,
                })?;
                Kind::Rendered {
                    format: other,
                    cases: Mutex::new(Vec::new()),
                }
            }
        };
        Ok(ReportSink {
            path: path.to_path_buf(),
            kind,
        })
    }

    /// A JSONL report shared by the processes of one nextest run. Other formats cannot
    /// be rendered by a process that sees one case: build them afterwards with
    /// `agentest report`.
    pub(crate) fn for_run(path: &Path, run_id: &str) -> Result<ReportSink, ReportError> {
        if Format::from_path(path) != Some(Format::Jsonl) {
            return Err(ReportError::NotJsonl {
                path: path.to_path_buf(),
            });
        }
        let w = JsonlWriter::open_for_run(path, run_id).map_err(|source| ReportError::Open {
            path: path.to_path_buf(),
            source,
        })?;
        Ok(ReportSink {
            path: path.to_path_buf(),
            kind: Kind::Jsonl(w),
        })
    }

    /// Records one finished case.
    pub(crate) fn record(&self, r: &CaseReport) -> Result<(), ReportError> {
        match &self.kind {
            Kind::Jsonl(w) => w.write_case(r).map_err(|source| ReportError::Append {
                path: self.path.clone(),
                trial: r.trial.clone(),
                source,
            }),
            Kind::Rendered { cases, .. } => {
                cases
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .push(r.clone());
                Ok(())
            }
        }
    }

    /// Ends the report: the summary line, or the whole rendered document (written
    /// atomically, so a reader never sees half of it).
    pub(crate) fn finish(&self, run: &RunInfo, summary: &Summary) -> Result<(), ReportError> {
        match &self.kind {
            Kind::Jsonl(w) => w
                .write_summary(summary)
                .map_err(|source| ReportError::Summary {
                    path: self.path.clone(),
                    source,
                }),
            Kind::Rendered { format, cases } => {
                let cases = cases.lock().unwrap_or_else(|e| e.into_inner());
                let text = format.render(run, summary, &cases);
                crate::util::write_atomically(&self.path, &text).map_err(|source| {
                    ReportError::Write {
                        path: self.path.clone(),
                        source,
                    }
                })
            }
        }
    }
}

/// Reads JSONL reports (a file, or every `.jsonl` file in a folder) back into records
/// and a summary (recounted when no summary line is there, as under nextest).
pub(crate) fn read_reports(path: &Path) -> Result<(Vec<CaseReport>, Summary), ReportError> {
    let files: Vec<PathBuf> = if path.is_dir() {
        let mut f: Vec<PathBuf> = std::fs::read_dir(path)
            .map_err(|source| ReportError::List {
                path: path.to_path_buf(),
                source,
            })?
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
            .collect();
        f.sort();
        f
    } else {
        vec![path.to_path_buf()]
    };
    if files.is_empty() {
        return Err(ReportError::NoReports {
            path: path.to_path_buf(),
        });
    }
    let mut cases = Vec::new();
    let mut summaries = Vec::new();
    for f in &files {
        let text = std::fs::read_to_string(f).map_err(|source| ReportError::Read {
            path: f.clone(),
            source,
        })?;
        let (mut c, s) = parse_lines(&text, Some(f))?;
        cases.append(&mut c);
        summaries.extend(s);
    }
    let summary = match (summaries.len(), files.len()) {
        (1, 1) => summaries.remove(0),
        _ => {
            let mut s = Summary::new();
            for c in &cases {
                s.add(c);
                // No run saw them all: the time is the cases' time, added up.
                s.duration_ms += c.duration_ms;
            }
            s
        }
    };
    Ok((cases, summary))
}

/// Reads a JSONL report back: every case record, and the summary line when there is one
/// (a report collected under nextest has none; build one with [`Summary::add`]). Blank
/// lines are skipped; an unreadable line is an error naming its line number.
pub fn parse_jsonl(text: &str) -> Result<(Vec<CaseReport>, Option<Summary>), ReportError> {
    parse_lines(text, None)
}

/// [`parse_jsonl`], with the file the text came from (when it did) for errors.
fn parse_lines(
    text: &str,
    file: Option<&Path>,
) -> Result<(Vec<CaseReport>, Option<Summary>), ReportError> {
    let mut cases = Vec::new();
    let mut summary = None;
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let at = |source| ReportError::Line {
            file: file.map(Path::to_path_buf),
            line: i + 1,
            source,
        };
        let value: serde_json::Value = serde_json::from_str(line).map_err(at)?;
        if value.get("type").and_then(|t| t.as_str()) == Some("summary") {
            summary = Some(serde_json::from_value(value).map_err(at)?);
        } else {
            cases.push(serde_json::from_value(value).map_err(at)?);
        }
    }
    Ok((cases, summary))
}

#[cfg(test)]
mod tests {
    use crate::record::{parse_jsonl, Format, RunInfo, Summary};

    #[test]
    fn jsonl_round_trip() {
        let text = concat!(
            r#"{"id":"a","name":"a","suite":"s","trial":"s::a","status":"passed","turns":[],"total_turns":0,"duration_ms":3,"location":"s.jsonl:1:1"}"#,
            "\n\n",
            r#"{"type":"summary","total":1,"passed":1,"failed":0,"errors":0,"skipped":0,"timeouts":0,"total_turns":0,"duration_ms":3}"#,
            "\n"
        );
        let (cases, summary) = parse_jsonl(text).unwrap();
        assert_eq!(cases.len(), 1);
        assert_eq!(summary.unwrap().passed, 1);
        let again = Format::Jsonl.render(&RunInfo::default(), &Summary::new(), &cases);
        assert!(again.starts_with(r#"{"id":"a""#), "{again}");
        assert!(matches!(
            parse_jsonl("{\"id\": 1}"),
            Err(crate::errors::ReportError::Line {
                file: None,
                line: 1,
                ..
            })
        ));
    }
}
