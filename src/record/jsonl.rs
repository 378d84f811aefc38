//! The JSONL report: one object per case, written and flushed as each case ends,
//! then a summary line.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use super::{CaseReport, Summary};

/// Appends records to a JSONL file. Each record is one `write` on a file opened for
/// appending, so several processes (nextest runs each case in its own) can share a file.
pub(crate) struct JsonlWriter {
    path: PathBuf,
    file: Mutex<File>,
    /// Set when many processes of one run share the file (nextest): the run's id.
    run: Option<String>,
}

impl JsonlWriter {
    /// Opens `path`, creating parent directories; `truncate` starts a new report.
    pub(crate) fn open(path: &Path, truncate: bool) -> std::io::Result<Self> {
        crate::util::create_parents(path)?;
        let file = if truncate {
            File::create(path)?;
            OpenOptions::new().append(true).open(path)?
        } else {
            OpenOptions::new().create(true).append(true).open(path)?
        };
        Ok(JsonlWriter {
            path: path.to_path_buf(),
            file: Mutex::new(file),
            run: None,
        })
    }

    /// Opens `path` for one of many processes of the same run (nextest runs each case in
    /// its own process). The first record written under a new `run_id` empties the file,
    /// so a report holds one run, not every run since the file was created; a lock on the
    /// file keeps processes from interleaving.
    pub(crate) fn open_for_run(path: &Path, run_id: &str) -> std::io::Result<Self> {
        let mut w = JsonlWriter::open(path, false)?;
        w.run = Some(run_id.to_string());
        Ok(w)
    }

    /// The file that remembers which run the report belongs to.
    fn run_marker(&self) -> PathBuf {
        let mut name = self.path.file_name().unwrap_or_default().to_os_string();
        name.push(".run-id");
        self.path.with_file_name(name)
    }

    /// Writes one case record.
    pub(crate) fn write_case(&self, r: &CaseReport) -> std::io::Result<()> {
        self.write_line(&serde_json::to_string(r).map_err(std::io::Error::other)?)
    }

    /// Writes the summary line.
    pub(crate) fn write_summary(&self, s: &Summary) -> std::io::Result<()> {
        self.write_line(&serde_json::to_string(s).map_err(std::io::Error::other)?)
    }

    fn write_line(&self, line: &str) -> std::io::Result<()> {
        let mut buf = String::with_capacity(line.len() + 1);
        buf.push_str(line);
        buf.push('\n');
        let mut f = self.file.lock().unwrap_or_else(|e| e.into_inner());
        let Some(run) = &self.run else {
            return append_whole(&mut f, buf.as_bytes());
        };
        let _lock = FileLock::exclusive(&f)?;
        let marker = self.run_marker();
        if std::fs::read_to_string(&marker).ok().as_deref() != Some(run.as_str()) {
            f.set_len(0)?;
            std::fs::write(&marker, run)?;
        }
        append_whole(&mut f, buf.as_bytes())
    }
}

/// Appends `bytes` to a file opened for appending, or nothing: a write cut short (a full
/// disk, a file size limit) is cut off again, so the report holds whole records only.
fn append_whole(f: &mut File, bytes: &[u8]) -> std::io::Result<()> {
    let before = f.metadata()?.len();
    let written = f.write_all(bytes).and_then(|()| f.flush());
    if written.is_err() {
        let _ = f.set_len(before);
    }
    written
}

/// An advisory lock on a whole file, released on drop.
struct FileLock(std::os::fd::RawFd);

impl FileLock {
    fn exclusive(f: &File) -> std::io::Result<FileLock> {
        use std::os::fd::AsRawFd;
        let fd = f.as_raw_fd();
        // SAFETY: `fd` is a valid open descriptor for as long as `f` lives, which
        // outlives the lock (both are held for the duration of one write).
        if unsafe { libc::flock(fd, libc::LOCK_EX) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(FileLock(fd))
    }
}

impl Drop for FileLock {
    fn drop(&mut self) {
        // SAFETY: see `exclusive`; unlocking a descriptor we locked.
        unsafe {
            libc::flock(self.0, libc::LOCK_UN);
        }
    }
}
