//! A worker's queue: claiming batches of an execution's queued runs from the store and
//! handing each to the run, until every run of the execution ended. `agentest worker`
//! (worker.rs) sets it up; `agentest test` (test.rs) runs the batches.

use std::time::Duration;

use crate::record::store;
use crate::util::StoreAddress;

/// What `agentest test` runs as a worker.
#[derive(Debug, Clone)]
pub(super) struct Spec {
    /// The execution's key.
    pub(super) key: String,
    /// Runs claimed at once.
    pub(super) batch: usize,
    /// Repeats of cases spread over workers claimed at once: as many as run at once.
    pub(super) repeats: usize,
    /// Keep polling once the queue is empty.
    pub(super) follow: bool,
    /// How often to look for runs when none is free to claim.
    pub(super) poll: Duration,
}

/// Claims batches of the queued work of `execution` (whole runs, and single repeats of
/// cases whose repeats spread over workers) and hands each to `run`, which returns the
/// trials it could not find (their cases are gone from the suites: their runs end as
/// errors), or `None` when a signal stopped the batch, until no run of the execution
/// is queued or running (with `follow`, never) or a signal stops it.
/// Work a dead worker left is taken back before each claim.
pub(super) fn drain(
    address: &StoreAddress,
    execution: i64,
    spec: &Spec,
    lease: Duration,
    mut run: impl FnMut(&[store::Work]) -> Option<Vec<String>>,
) -> Result<(), String> {
    let mut db = store::open(address).map_err(|e| e.to_string())?;
    let failed = |e: crate::errors::DbError| format!("failed to use the run store {address}: {e}");
    let (mut ran, mut repeats) = (0usize, 0usize);
    loop {
        db.recover(lease).map_err(failed)?;
        let work = db
            .claim_queued(execution, spec.batch, spec.repeats)
            .map_err(failed)?;
        if work.is_empty() {
            let (queued, running) = db.open_runs(execution).map_err(failed)?;
            if queued == 0 && running == 0 && !spec.follow {
                let repeats = match repeats {
                    0 => String::new(),
                    n => format!(
                        " and {} of cases spread over workers",
                        crate::util::count(n as u64, "repeat", "repeats")
                    ),
                };
                eprintln!(
                    "agentest worker: execution {} ended; this worker ran {}{repeats}",
                    spec.key,
                    crate::util::count(ran as u64, "run", "runs")
                );
                return Ok(());
            }
            std::thread::sleep(spec.poll);
            continue;
        }
        let spread = work.iter().filter(|w| w.repeat.is_some()).count();
        repeats += spread;
        ran += work.len() - spread;
        // A signal stopped the batch: the worker stops too, and claims nothing more.
        let Some(missing) = run(&work) else {
            return Ok(());
        };
        if !missing.is_empty() {
            db.end_claimed(
                execution,
                &missing,
                "not run: its case is no longer in the suites the execution planned",
            )
            .map_err(failed)?;
        }
    }
}
