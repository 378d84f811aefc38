//! One JSON file read whole (an EvalStudio store, a tau2-bench task file), with every field locatable:
//! errors point at `file:line:column` of the key they are about.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;

use crate::case::Location;
use crate::errors::CaseError;
use crate::source::jsonl::{parse_json, position_of_offset, Indexed, LineError};
use crate::util::display_path;

/// A JSON document and where it came from.
pub(crate) struct Document {
    /// The file.
    pub(crate) path: PathBuf,
    /// The file as messages name it.
    pub(crate) shown: Arc<PathBuf>,
    /// Its text, indexed for locating fields.
    text: Indexed,
    /// Its value.
    pub(crate) value: Value,
}

impl Document {
    /// Reads `path`: `Ok(None)` when there is no such file, an error located in it when
    /// it is not one JSON value (invalid UTF-8, a syntax error, a key given twice).
    pub(crate) fn read(path: &Path) -> Result<Option<Document>, CaseError> {
        let shown = Arc::new(display_path(path));
        let at = |line: usize, column: usize, message: String| CaseError {
            location: Location {
                file: shown.clone(),
                line,
                column,
            },
            id: None,
            field: None,
            message,
        };
        let bytes = match std::fs::read(path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(at(1, 1, format!("failed to read the file: {e}"))),
        };
        let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(&bytes);
        let text = match std::str::from_utf8(bytes) {
            Ok(t) => t.to_string(),
            Err(e) => {
                let good = std::str::from_utf8(&bytes[..e.valid_up_to()]).unwrap_or_default();
                let (line, column) = position_of_offset(good, good.len());
                return Err(at(
                    line,
                    column,
                    "invalid UTF-8; save the file as UTF-8".into(),
                ));
            }
        };
        let value = match parse_json(&text) {
            Ok(v) => v,
            Err(LineError::Syntax(e)) => {
                let msg = e.to_string();
                let msg = msg.split(" at line ").next().unwrap_or(&msg).to_string();
                // serde_json's column counts bytes; ours count characters.
                let line_text = text.lines().nth(e.line().max(1) - 1).unwrap_or_default();
                if let Some((message, column)) =
                    crate::source::bom::stray_bom(line_text, e.line().max(1), e.column().max(1) - 1)
                {
                    return Err(at(e.line().max(1), column, message));
                }
                let column = line_text
                    .char_indices()
                    .take_while(|(i, _)| *i < e.column().max(1) - 1)
                    .count()
                    + 1;
                return Err(at(e.line().max(1), column, format!("invalid JSON: {msg}")));
            }
            Err(LineError::Duplicate { path: field, key }) => {
                let text = Indexed::new(text);
                let (line, column) = text.position_of_path(&field, true);
                let (first, _) = text.position_of_path(&field, false);
                return Err(CaseError {
                    field: Some(field),
                    ..at(
                        line,
                        column,
                        format!("duplicate key `{key}` (first given on line {first}); only one of them would count, so remove one"),
                    )
                });
            }
        };
        Ok(Some(Document {
            path: path.to_path_buf(),
            shown,
            text: Indexed::new(text),
            value,
        }))
    }

    /// Where `field` (`[2].maxMessages`) is.
    pub(crate) fn location(&self, field: &str) -> Location {
        let (line, column) = self.text.position_of_path(field, false);
        Location {
            file: self.shown.clone(),
            line,
            column,
        }
    }

    /// An error about `field`.
    pub(crate) fn error(&self, field: &str, message: impl Into<String>) -> CaseError {
        CaseError {
            location: self.location(field),
            id: None,
            field: (!field.is_empty()).then(|| field.to_string()),
            message: message.into(),
        }
    }

    /// The file's name (`scenarios.json`), for messages.
    pub(crate) fn name(&self) -> String {
        self.path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::Document;
    use std::time::{Duration, Instant};

    /// Every record of a large file is located (each case's `file:line:column`): a
    /// locator that rescans the file per record takes minutes here, and is stopped at
    /// the first record past the time limit.
    #[test]
    fn every_record_of_a_large_file_is_located_without_rescanning_it() {
        let n = 20_000;
        let mut text = String::from("[\n");
        for i in 0..n {
            // Two lines per record; multi-byte characters before the key.
            let sep = if i + 1 < n { "," } else { "" };
            text.push_str(&format!(
                "  {{\"id\": \"t-{i}\", \"note\": \"é€😀\",\n   \"é€😀\": 0, \"x\": [1, 2, {{\"k\": \"v\"}}], \"name\": \"task {i}\"}}{sep}\n"
            ));
        }
        text.push_str("]\n");
        let dir = std::env::temp_dir().join(format!("agentest-doc-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("big.json");
        std::fs::write(&path, &text).unwrap();
        let doc = Document::read(&path).unwrap().unwrap();
        let _ = std::fs::remove_dir_all(&dir);
        let started = Instant::now();
        let limit = Duration::from_secs(10);
        for i in 0..n {
            let at = doc.location(&format!("[{i}].name"));
            assert_eq!((at.line, at.column), (2 * i + 3, 39), "record {i}");
            let at = doc.location(&format!("[{i}].x[2].k"));
            assert_eq!((at.line, at.column), (2 * i + 3, 27), "record {i}");
            let at = doc.location(&format!("[{i}]"));
            assert_eq!((at.line, at.column), (2 * i + 2, 3), "record {i}");
            assert!(
                started.elapsed() < limit,
                "locating the first {i} of {n} records took over {limit:?}: the locator rescans the file"
            );
        }
    }
}
