//! One JSON file read whole (an EvalStudio store, a tau2-bench task file), with every field locatable:
//! errors point at `file:line:column` of the key they are about.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;

use crate::case::Location;
use crate::errors::CaseError;
use crate::source::jsonl::{parse_json, position_of_offset, position_of_path, LineError};
use crate::util::display_path;

/// A JSON document and where it came from.
pub(crate) struct Document {
    /// The file.
    pub(crate) path: PathBuf,
    /// The file as messages name it.
    pub(crate) shown: Arc<PathBuf>,
    text: String,
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
                let column = line_text
                    .char_indices()
                    .take_while(|(i, _)| *i < e.column().max(1) - 1)
                    .count()
                    + 1;
                return Err(at(e.line().max(1), column, format!("invalid JSON: {msg}")));
            }
            Err(LineError::Duplicate { path: field, key }) => {
                let (line, column) = position_of_path(&text, &field, true);
                let (first, _) = position_of_path(&text, &field, false);
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
            text,
            value,
        }))
    }

    /// Where `field` (`[2].maxMessages`) is.
    pub(crate) fn location(&self, field: &str) -> Location {
        let (line, column) = position_of_path(&self.text, field, false);
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
