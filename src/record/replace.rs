//! What a report may replace. A report is written over its file whole, so a report path
//! that names a user's file (a suite, notes, another tool's XML) would lose it: a
//! built-in report replaces only a file that is missing, empty, or an agentest report of
//! its format. The binary's `-o` and the harness's `AGENTEST_REPORT` / `[run] report`
//! both ask here before anything runs.

use std::io::{BufRead, BufReader, Read};
use std::path::Path;

use crate::errors::OverwriteError;
use crate::record::Format;

/// Refuses a file that exists, holds something, and is not an agentest report.
///
/// `setting` names where the path came from (`-o`, `AGENTEST_REPORT`), for the fix.
pub(crate) fn only_over_a_report(
    output: &Path,
    setting: &'static str,
) -> Result<(), OverwriteError> {
    let Some(format) = Format::from_path(output) else {
        // No report format: the report's own error says which extensions there are.
        return Ok(());
    };
    match std::fs::metadata(output) {
        Err(_) => return Ok(()),
        // A folder, a device (`/dev/null`), a pipe: the write says what it says.
        Ok(m) if !m.is_file() || m.len() == 0 => return Ok(()),
        Ok(_) => {}
    }
    match is_report(output) {
        Ok(true) => Ok(()),
        Ok(false) => Err(OverwriteError::NotReport {
            setting,
            path: output.to_path_buf(),
            format: name(format),
            recognised: recognised(format),
        }),
        Err(source) => Err(OverwriteError::Unreadable {
            setting,
            path: output.to_path_buf(),
            source,
        }),
    }
}

fn name(format: Format) -> &'static str {
    match format {
        Format::Jsonl => "JSONL",
        Format::Json => "JSON",
        Format::Markdown => "Markdown",
        Format::Junit => "JUnit XML",
        Format::Html => "HTML",
    }
}

/// How a report of `format` is recognised, as the refusal says it.
fn recognised(format: Format) -> &'static str {
    match format {
        Format::Jsonl => "first line is a case record (with `trial` and `status`) or a summary line",
        Format::Json => "top-level `summary` has `\"type\": \"summary\"`",
        Format::Markdown => "first line is `# agentest report`",
        Format::Junit => "root element is `<testsuites name=\"agentest\">`",
        Format::Html => "head names agentest its generator (`<meta name=\"generator\" content=\"agentest ...\">`)",
    }
}

/// The fields of a JSONL report's first line that tell it from a suite's.
#[derive(serde::Deserialize)]
struct Record {
    trial: Option<String>,
    status: Option<String>,
    #[serde(rename = "type")]
    kind: Option<String>,
}

/// The field of a JSON report that tells it from other JSON.
#[derive(serde::Deserialize)]
struct Document {
    summary: Option<Record>,
}

/// How much of a text report's start is read to recognise it.
const HEAD: u64 = 4096;

/// Whether `path` is a report agentest wrote, in the format its extension names (see
/// [`recognised`]). Only the start is read, or the first JSON value.
pub(crate) fn is_report(path: &Path) -> std::io::Result<bool> {
    let Some(format) = Format::from_path(path) else {
        return Ok(false);
    };
    let file = BufReader::new(std::fs::File::open(path)?);
    Ok(match format {
        Format::Jsonl => {
            // The first line alone, however long a record is.
            let mut values = serde_json::Deserializer::from_reader(file).into_iter::<Record>();
            matches!(values.next(), Some(Ok(r)) if is_record(&r))
        }
        Format::Json => serde_json::from_reader::<_, Document>(file).is_ok_and(|d| {
            d.summary
                .is_some_and(|s| s.kind.as_deref() == Some("summary"))
        }),
        Format::Markdown => {
            let mut first = String::new();
            file.take(HEAD).read_line(&mut first)?;
            first.trim_end() == "# agentest report"
        }
        Format::Junit | Format::Html => {
            let mut head = Vec::new();
            file.take(HEAD).read_to_end(&mut head)?;
            let head = String::from_utf8_lossy(&head);
            match format {
                Format::Junit => head.contains("<testsuites name=\"agentest\""),
                _ => head.contains("<meta name=\"generator\" content=\"agentest"),
            }
        }
    })
}

/// A JSONL report's line: a case record, or the summary line of a run with no case.
fn is_record(r: &Record) -> bool {
    (r.trial.is_some() && r.status.is_some()) || r.kind.as_deref() == Some("summary")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each format's report is recognised from what agentest writes, and a suite,
    /// a tasks file or a note is not.
    #[test]
    fn reports_are_told_from_suites_and_other_files() {
        let dir = std::env::temp_dir().join(format!("agentest-overwrite-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let cases = [
            (
                "r.jsonl",
                "{\"id\":\"a\",\"trial\":\"s::a\",\"status\":\"passed\"}\n",
                true,
            ),
            (
                "empty-run.jsonl",
                "{\"type\":\"summary\",\"total\":0}\n",
                true,
            ),
            ("suite.jsonl", "{\"id\":\"a\",\"input\":\"hi\"}\n", false),
            (
                "r.json",
                "{\"summary\": {\"type\": \"summary\"}, \"cases\": []}",
                true,
            ),
            ("tasks.json", "[{\"id\": \"0\"}]", false),
            ("r.md", "# agentest report\n\nfine\n", true),
            ("notes.md", "# My notes\n", false),
            (
                "r.xml",
                "<?xml version=\"1.0\"?>\n<testsuites name=\"agentest\" tests=\"1\">",
                true,
            ),
            ("other.xml", "<testsuites name=\"pytest\">", false),
            (
                "r.html",
                "<!DOCTYPE html>\n<meta name=\"generator\" content=\"agentest 0.1.0\">",
                true,
            ),
            ("page.html", "<!DOCTYPE html>\n<title>home</title>", false),
        ];
        for (name, text, report) in cases {
            let path = dir.join(name);
            std::fs::write(&path, text).unwrap();
            assert_eq!(is_report(&path).unwrap(), report, "{name}");
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}
