//! A scenario's `local` environment: a fresh folder under the system's temp folder,
//! holding `setup.virtual_fs`, where code steps run and file evaluators look. It is
//! removed when the case ends, unless `--keep-env` (`AGENTEST_KEEP_ENV`) keeps it.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, OnceLock};
use std::time::Duration;

/// Folders being removed in the background, and folders made and not yet removed (or
/// kept), with a signal when either drops. Removing a folder is file-system work (a
/// fraction of a millisecond each on ext4), so it happens on a thread of its own after
/// the case has reported and freed its slot, not before; the run waits for the last ones
/// before it exits ([`wait_for_every_folder`]).
static COUNTS: (Mutex<Counts>, Condvar) = (
    Mutex::new(Counts {
        removing: 0,
        live: 0,
    }),
    Condvar::new(),
);

struct Counts {
    removing: usize,
    live: usize,
}

/// Changes the counts and wakes whoever waits on them.
fn count(change: impl FnOnce(&mut Counts)) {
    let mut c = COUNTS.0.lock().unwrap_or_else(|e| e.into_inner());
    change(&mut c);
    COUNTS.1.notify_all();
}

/// The folder, removed on drop unless kept.
#[derive(Debug)]
pub(crate) struct Workdir {
    path: PathBuf,
    keep: bool,
}

impl Workdir {
    /// Creates the folder for `trial` and writes `files` (relative paths, checked at
    /// load to stay inside) into it.
    pub(crate) fn create(
        trial: &str,
        files: &[(String, String)],
        keep: bool,
    ) -> std::io::Result<Workdir> {
        static N: AtomicUsize = AtomicUsize::new(0);
        let name: String = trial
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
            .take(48)
            .collect();
        let path = std::env::temp_dir().join(format!(
            "agentest-env-{name}-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        if let Err(e) = std::fs::create_dir(&path) {
            // A folder left by an earlier process with the same id: start afresh.
            if e.kind() != std::io::ErrorKind::AlreadyExists {
                return Err(e);
            }
            std::fs::remove_dir_all(&path)?;
            std::fs::create_dir(&path)?;
        }
        count(|c| c.live += 1);
        let dir = Workdir { path, keep };
        for (rel, text) in files {
            let file = dir.path.join(rel);
            match file.parent() {
                Some(parent) if parent != dir.path => std::fs::create_dir_all(parent)?,
                _ => {}
            }
            std::fs::write(&file, text)?;
        }
        Ok(dir)
    }

    /// [`Workdir::create`] on the blocking pool, so that one case's file-system work
    /// does not hold up the others' requests on the runtime's threads.
    pub(crate) async fn create_off_thread(
        trial: String,
        files: Vec<(String, String)>,
        keep: bool,
    ) -> std::io::Result<Workdir> {
        tokio::task::spawn_blocking(move || Workdir::create(&trial, &files, keep))
            .await
            .unwrap_or_else(|e| Err(std::io::Error::other(e)))
    }

    /// Removes the folder, even under `--keep-env` (no case ran in it).
    pub(crate) fn discard(mut self) {
        self.keep = false;
    }

    /// The folder.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Every file in it, as relative `/`-separated paths, sorted.
    pub(crate) fn files(&self) -> Vec<String> {
        let mut out = Vec::new();
        let mut stack = vec![self.path.clone()];
        while let Some(dir) = stack.pop() {
            let Ok(entries) = std::fs::read_dir(&dir) else {
                continue;
            };
            for e in entries.flatten() {
                let p = e.path();
                match e.file_type() {
                    Ok(t) if t.is_dir() => stack.push(p),
                    Ok(_) => {
                        if let Ok(rel) = p.strip_prefix(&self.path) {
                            let parts: Vec<String> = rel
                                .components()
                                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                                .collect();
                            out.push(parts.join("/"));
                        }
                    }
                    Err(_) => {}
                }
            }
        }
        out.sort();
        out
    }
}

impl Drop for Workdir {
    fn drop(&mut self) {
        if self.keep {
            eprintln!("agentest: kept the environment at {}", self.path.display());
            count(|c| c.live = c.live.saturating_sub(1));
            return;
        }
        let path = std::mem::take(&mut self.path);
        count(|c| c.removing += 1);
        if let Err(back) = remover().send(path) {
            // No removal thread: removed here.
            let _ = std::fs::remove_dir_all(back.0);
            removed();
        }
    }
}

/// The thread that removes dropped folders, one at a time: removals in parallel would
/// only contend for the temp folder's lock (spinning on both cores while the cases'
/// requests wait for a thread).
fn remover() -> &'static std::sync::mpsc::Sender<PathBuf> {
    static REMOVER: OnceLock<std::sync::mpsc::Sender<PathBuf>> = OnceLock::new();
    REMOVER.get_or_init(|| {
        let (tx, rx) = std::sync::mpsc::channel::<PathBuf>();
        let started = std::thread::Builder::new()
            .name("agentest-rm".into())
            .spawn(move || {
                for path in rx {
                    let _ = std::fs::remove_dir_all(&path);
                    removed();
                }
            });
        // Without the thread, the receiver is gone and every send fails: removed in place.
        drop(started);
        tx
    })
}

/// One folder fewer to wait for.
fn removed() {
    count(|c| {
        c.removing = c.removing.saturating_sub(1);
        c.live = c.live.saturating_sub(1);
    });
}

/// Waits (up to `limit`) until every environment folder dropped so far is removed.
#[cfg(test)]
pub(crate) fn wait_for_removals(limit: Duration) {
    wait_while(limit, |c| c.removing > 0);
}

/// Waits (up to `limit`) until every environment folder made is removed (or kept),
/// including those of cases still being dropped: a run stopped by a signal aborts its
/// cases, and they drop their folders a moment later, on the runtime's threads.
pub(crate) fn wait_for_every_folder(limit: Duration) {
    wait_while(limit, |c| c.live > 0 || c.removing > 0);
}

fn wait_while(limit: Duration, busy: impl Fn(&Counts) -> bool) {
    let c = COUNTS.0.lock().unwrap_or_else(|e| e.into_inner());
    let _ = COUNTS
        .1
        .wait_timeout_while(c, limit, |c| busy(c))
        .unwrap_or_else(|e| e.into_inner());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_are_written_listed_and_removed() {
        let files = vec![
            ("config.json".to_string(), "{}".to_string()),
            ("src/main.py".to_string(), "print(1)".to_string()),
        ];
        let dir = Workdir::create("s::a b", &files, false).unwrap();
        let path = dir.path().to_path_buf();
        assert_eq!(
            std::fs::read_to_string(path.join("src/main.py")).unwrap(),
            "print(1)"
        );
        assert_eq!(dir.files(), ["config.json", "src/main.py"]);
        drop(dir);
        wait_for_removals(Duration::from_secs(10));
        assert!(!path.exists(), "removed at the end");
    }
}
