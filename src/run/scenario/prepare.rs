//! Environment folders made ahead of their cases. Making one is file-system work (a
//! directory and its `virtual_fs` files: a fraction of a millisecond each on ext4, where
//! inode allocation dominates), and a case cannot send its first message before its
//! folder exists. A few threads make the folders of a run's scenarios in trial order, up
//! to a bounded number ahead of the cases that took theirs: while the first wave of
//! cases waits for the agent, the next wave's folders are made, so they start at once.

use std::collections::HashMap;
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;

use tokio::sync::oneshot;

use super::Workdir;

/// What one folder needs.
pub(crate) struct Job {
    /// The case's trial name (the folder's name is made from it).
    pub(crate) trial: String,
    /// `setup.virtual_fs`.
    pub(crate) files: Vec<(String, String)>,
}

type Made = std::io::Result<Workdir>;

/// The folders being made for a run; dropped, it stops making more and removes the
/// ones no case took.
pub(crate) struct Preparer {
    shared: Arc<Shared>,
    waiting: Mutex<HashMap<String, oneshot::Receiver<Made>>>,
    threads: Vec<JoinHandle<()>>,
}

struct Shared {
    /// Cases that took their folder, and whether to stop.
    state: Mutex<(usize, bool)>,
    more: Condvar,
}

impl Preparer {
    /// Starts making the folders of `jobs`, in their order, at most `ahead` beyond the
    /// cases that took theirs.
    pub(crate) fn start(jobs: Vec<Job>, ahead: usize, keep: bool) -> Preparer {
        let shared = Arc::new(Shared {
            state: Mutex::new((0, false)),
            more: Condvar::new(),
        });
        let mut waiting = HashMap::with_capacity(jobs.len());
        let mut work = Vec::with_capacity(jobs.len());
        for job in jobs {
            let (tx, rx) = oneshot::channel();
            waiting.insert(job.trial.clone(), rx);
            work.push((job, tx));
        }
        // A few threads: a folder's `mkdir` holds the temp folder's lock, but writing
        // its files does not, and that part overlaps.
        let queue = Arc::new(Mutex::new(work.into_iter().enumerate()));
        let threads = std::thread::available_parallelism()
            .map_or(1, |n| n.get())
            .clamp(1, 4);
        let threads = (0..threads)
            .filter_map(|_| {
                let (shared, queue) = (shared.clone(), queue.clone());
                std::thread::Builder::new()
                    .name("agentest-env".into())
                    .spawn(move || loop {
                        let next = queue.lock().unwrap_or_else(|e| e.into_inner()).next();
                        let Some((k, (job, tx))) = next else { return };
                        {
                            let state = shared.state.lock().unwrap_or_else(|e| e.into_inner());
                            let state = shared
                                .more
                                .wait_while(state, |(taken, stop)| !*stop && k >= *taken + ahead)
                                .unwrap_or_else(|e| e.into_inner());
                            if state.1 {
                                return;
                            }
                        }
                        // A case that is gone drops its folder with the unsent message.
                        let _ = tx.send(Workdir::create(&job.trial, &job.files, keep));
                    })
                    .ok()
            })
            .collect();
        Preparer {
            shared,
            waiting: Mutex::new(waiting),
            threads,
        }
    }

    /// The folder made for `trial`, waiting for it if need be; `None` when it was not
    /// planned here (the caller makes its own).
    pub(crate) async fn take(&self, trial: &str) -> Option<Made> {
        let rx = self
            .waiting
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(trial)?;
        {
            let mut state = self.shared.state.lock().unwrap_or_else(|e| e.into_inner());
            state.0 += 1;
            self.shared.more.notify_all();
        }
        // The thread ended early (it could not start): the caller makes its own.
        rx.await.ok()
    }
}

impl Drop for Preparer {
    fn drop(&mut self) {
        {
            let mut state = self.shared.state.lock().unwrap_or_else(|e| e.into_inner());
            state.1 = true;
            self.shared.more.notify_all();
        }
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
        // Folders made for cases that never ran (--fail-fast, Ctrl-C) are removed, even
        // under --keep-env: nothing ran in them.
        let waiting = std::mem::take(&mut *self.waiting.lock().unwrap_or_else(|e| e.into_inner()));
        for (_, mut rx) in waiting {
            if let Ok(Ok(dir)) = rx.try_recv() {
                dir.discard();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn jobs(n: usize) -> Vec<Job> {
        (0..n)
            .map(|i| Job {
                trial: format!("prep::t{i}"),
                files: vec![("a.txt".into(), format!("{i}"))],
            })
            .collect()
    }

    /// The folders in the temp dir made for trial `prep::tN` by this process.
    fn folders_of(n: usize) -> usize {
        let prefix = format!("agentest-env-prep--t{n}-{}-", std::process::id());
        std::fs::read_dir(std::env::temp_dir())
            .unwrap()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().starts_with(&prefix))
            .count()
    }

    #[test]
    fn folders_are_made_in_order_within_the_lookahead_and_the_rest_removed() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let p = Preparer::start(jobs(6), 2, false);
        let first = rt.block_on(p.take("prep::t0")).unwrap().unwrap();
        assert_eq!(
            std::fs::read_to_string(first.path().join("a.txt")).unwrap(),
            "0"
        );
        assert!(rt.block_on(p.take("elsewhere::x")).is_none());
        // Case 1 never takes its folder; case 3 does (two taken: up to case 3 made).
        let third = rt.block_on(p.take("prep::t3")).unwrap().unwrap();
        assert_eq!(
            std::fs::read_to_string(third.path().join("a.txt")).unwrap(),
            "3"
        );
        // Made ahead (by another thread, perhaps still at it).
        let by = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while folders_of(1) == 0 && std::time::Instant::now() < by {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        assert_eq!(folders_of(1), 1, "made ahead");
        assert_eq!(folders_of(5), 0, "not beyond the lookahead");
        drop(p);
        let wait = || super::super::wait_for_removals(std::time::Duration::from_secs(10));
        wait();
        assert_eq!(folders_of(1), 0, "an untaken folder is removed");
        assert!(third.path().exists(), "a taken folder is its case's");
        drop((first, third));
        wait();
        assert_eq!(folders_of(0) + folders_of(3), 0);
    }
}
