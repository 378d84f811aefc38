//! Reading one file of cases, whatever its format: the format is picked by the file's
//! name (`*.scenario.yaml`) and content (files that are not suites at all), and every
//! format yields the same [`Loaded`] entries.

use std::path::Path;
use std::sync::Arc;

use super::{suite_name, Loaded, SEPARATOR};
use crate::case::Location;
use crate::errors::CaseError;
use crate::util::display_path;

/// Reads one suite file. Never fails: an unreadable file is one broken entry, a bad
/// case (a JSONL line, a scenario) is a broken entry, and every other case still loads.
pub fn load_file(root: &Path, file: &Path) -> Vec<Loaded> {
    let suite = suite_name(root, file);
    let shown = Arc::new(display_path(file));
    let whole_file = |trial: &str, message: String| {
        vec![Loaded {
            generation: None,
            trial: format!("{suite}{SEPARATOR}{trial}"),
            suite: suite.clone(),
            file: file.to_path_buf(),
            entry: Err(CaseError {
                location: Location {
                    file: shown.clone(),
                    line: 1,
                    column: 1,
                },
                id: None,
                field: None,
                message,
            }),
        }]
    };
    let name = file
        .file_name()
        .map(|n| n.to_string_lossy().to_lowercase())
        .unwrap_or_default();
    if let Some(what) = crate::source::evalstudio::kind_of(&name) {
        return crate::source::evalstudio::load(root, file, what);
    }
    if crate::source::tau2::is_task_file(&name) {
        return tau2_file(&suite, file);
    }
    let bytes = match std::fs::read(file) {
        Ok(bytes) => bytes,
        Err(e) => {
            return whole_file(
                "unreadable-file",
                format!("failed to read the suite file: {e}"),
            )
        }
    };
    if crate::source::yaml::is_scenario(&name) {
        return match String::from_utf8(bytes) {
            Ok(text) if crate::source::yaml::is_matrix(&name) => {
                crate::source::yaml::load_matrix(&suite, file, shown.clone(), &text)
            }
            Ok(text) => vec![crate::source::yaml::load_scenario(
                &suite,
                file,
                shown.clone(),
                &text,
            )],
            Err(e) => whole_file(
                "scenario",
                format!(
                    "invalid UTF-8 at byte {}; save the file as UTF-8",
                    e.utf8_error().valid_up_to()
                ),
            ),
        };
    }
    // A tau2 task file under another name, named by `-i`.
    if name.ends_with(".json")
        && serde_json::from_slice::<serde_json::Value>(&bytes)
            .is_ok_and(|v| crate::source::tau2::looks_like_tasks(&v))
    {
        return tau2_file(&suite, file);
    }
    match crate::source::foreign::not_a_suite(file, &bytes) {
        Some(what) => whole_file("not-a-suite", what),
        None => crate::source::parse_suite_bytes(&suite, file, shown.clone(), &bytes),
    }
}

/// A tau2-bench tasks file: one case per task.
fn tau2_file(suite: &str, file: &Path) -> Vec<Loaded> {
    let broken = |e: CaseError| {
        vec![Loaded {
            generation: None,
            trial: format!("{suite}{SEPARATOR}tasks"),
            suite: suite.to_string(),
            file: file.to_path_buf(),
            entry: Err(e),
        }]
    };
    match crate::source::document::Document::read(file) {
        Ok(Some(doc)) => crate::source::tau2::load(suite, file, &doc),
        Ok(None) => broken(CaseError {
            location: Location {
                file: Arc::new(display_path(file)),
                line: 1,
                column: 1,
            },
            id: None,
            field: None,
            message: "the tasks file does not exist".into(),
        }),
        Err(e) => broken(e),
    }
}

/// The byte-order mark a file may start with (RFC 8259 lets parsers ignore it there).
const BOM: char = '\u{FEFF}';

/// When a syntax error at byte `at` of `line` is a byte-order mark (the one a file
/// starts with, left in the middle when files are concatenated): the message saying
/// so, at line `n`, and the BOM's 1-based character column. Parsers only say
/// "expected value" of it, and it is invisible in an editor.
pub(crate) fn stray_bom(line: &str, n: usize, at: usize) -> Option<(String, usize)> {
    // Parsers point at the mark or just past it.
    let byte = [at, at.saturating_sub(BOM.len_utf8())]
        .into_iter()
        .find(|&b| line.get(b..).is_some_and(|rest| rest.starts_with(BOM)))?;
    let column = line[..byte].chars().count() + 1;
    Some((
        format!("a byte-order mark (U+FEFF) in the middle of the file at line {n}, column {column}; files concatenated? remove it"),
        column,
    ))
}

#[cfg(test)]
mod tests {
    use super::stray_bom;

    #[test]
    fn a_byte_order_mark_where_the_parser_stopped_is_named() {
        let line = "é \u{FEFF}{\"id\": 1}";
        let (message, column) = stray_bom(line, 4, 3).unwrap();
        assert_eq!(column, 3);
        assert_eq!(message, "a byte-order mark (U+FEFF) in the middle of the file at line 4, column 3; files concatenated? remove it");
        // Just past it, as some parsers report.
        assert_eq!(stray_bom(line, 4, 6).map(|(_, c)| c), Some(3));
        assert_eq!(stray_bom(line, 4, 0), None);
        assert_eq!(stray_bom("{}", 1, 9), None);
    }
}
