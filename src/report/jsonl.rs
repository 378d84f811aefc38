//! The JSONL report: one object per case, written and flushed as each case ends,
//! then a summary line.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use super::{CaseReport, Summary};

/// Appends records to a JSONL file. Each record is one `write` on a file opened for
/// appending, so several processes (nextest runs each case in its own) can share a file.
pub struct JsonlWriter {
    path: PathBuf,
    file: Mutex<File>,
}

impl JsonlWriter {
    /// Opens `path`, creating parent directories; `truncate` starts a new report.
    pub fn open(path: &Path, truncate: bool) -> std::io::Result<Self> {
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent)?;
        }
        let file = if truncate {
            File::create(path)?;
            OpenOptions::new().append(true).open(path)?
        } else {
            OpenOptions::new().create(true).append(true).open(path)?
        };
        Ok(JsonlWriter {
            path: path.to_path_buf(),
            file: Mutex::new(file),
        })
    }

    /// The file written.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Writes one case record.
    pub fn write_case(&self, r: &CaseReport) -> std::io::Result<()> {
        self.write_line(&serde_json::to_string(r).map_err(std::io::Error::other)?)
    }

    /// Writes the summary line.
    pub fn write_summary(&self, s: &Summary) -> std::io::Result<()> {
        self.write_line(&serde_json::to_string(s).map_err(std::io::Error::other)?)
    }

    fn write_line(&self, line: &str) -> std::io::Result<()> {
        let mut buf = String::with_capacity(line.len() + 1);
        buf.push_str(line);
        buf.push('\n');
        let mut f = self.file.lock().unwrap_or_else(|e| e.into_inner());
        f.write_all(buf.as_bytes())?;
        f.flush()
    }
}
