//! `agentest worker --execution KEY`: runs the queued runs of an execution that
//! `agentest test --enqueue` planned into the store, alongside any number of workers on
//! other machines, as EvalStudio's run processor does (`pollIntervalMs`,
//! `maxConcurrent`): claim a batch of queued runs (a claim no other worker can also
//! win), run it, and again, until every run of the execution ended.
//!
//! The worker reads the execution's suites once, as `agentest test` would (`test.rs`'s
//! `work`), and finds each claimed run's case there by its trial. A worker that dies
//! leaves its runs `running`; they go back to `queued` when their lease lapses (at once
//! on the same machine, where its process is seen gone), and a worker still waiting
//! takes them. So a worker ends only when no run of the execution is queued or running,
//! and waits, polling, while other workers run theirs.

use std::process::ExitCode;
use std::time::Duration;

use super::TestArgs;
use crate::record::store;

#[derive(clap::Args)]
#[command(after_help = "Examples:
  AGENTEST_EXECUTION=pr-12 agentest test -i agent-tests --enqueue   plan the runs
  agentest worker --execution pr-12 --parallel 16                  on each machine")]
pub(super) struct WorkerArgs {
    /// The execution whose queued runs to run: its key (AGENTEST_EXECUTION, the CI's run).
    #[arg(long)]
    execution: String,
    /// Runs in flight at once (maxConcurrent; default: [run] concurrency, else 32).
    #[arg(long = "parallel", value_name = "N", value_parser = clap::value_parser!(u32).range(1..=10_000))]
    parallel: Option<u32>,
    /// Keep polling for runs after the queue is empty, until stopped.
    #[arg(long)]
    follow: bool,
    /// How often to look for runs when none is free to claim (pollIntervalMs).
    #[arg(long, default_value = "1s", value_parser = crate::util::parse_timeout)]
    poll: Duration,
    /// The store (default: AGENTEST_STORE, else as `agentest test` finds it).
    // Read as text and parsed later: clap's own error would print a URL's password.
    #[arg(long)]
    store: Option<String>,
}

/// Runs `agentest worker`. Exit 0 once every run of the execution ended (the cases'
/// verdicts are the store's, not the worker's); 2 when the store cannot be reached or
/// the execution is not there.
pub(super) fn worker(args: WorkerArgs) -> Result<ExitCode, String> {
    let address =
        super::locate::existing_store(super::locate::parse_store(args.store.as_deref())?)?;
    let mut db = store::open(&address).map_err(|e| e.to_string())?;
    let failed = |e: crate::errors::DbError| format!("failed to read the run store {address}: {e}");
    let execution = loop {
        match db.execution_by_key(&args.execution).map_err(failed)? {
            Some(id) => break id,
            None if args.follow => std::thread::sleep(args.poll),
            None => {
                return Err(format!(
                    "no execution with the key `{}` in {address}; plan one with AGENTEST_EXECUTION={} agentest test -i SUITES --enqueue",
                    args.execution, args.execution
                ))
            }
        }
    };
    let Some((_, root)) = db.execution_root(Some(execution)).map_err(failed)? else {
        return Err(format!("no execution {execution} in {address}"));
    };
    drop(db);
    let mut test = TestArgs::plain(root);
    test.parallel = args.parallel;
    test.store = Some(address);
    let parallel = args
        .parallel
        .map_or(crate::DEFAULT_CONCURRENCY, |p| p as usize);
    test.worker = Some(super::queue::Spec {
        key: args.execution,
        batch: 4 * parallel,
        repeats: parallel,
        follow: args.follow,
        poll: args.poll,
    });
    // The cases' verdicts are the execution's: a failing case does not fail the worker.
    super::test::test(test).map(|code| match code == ExitCode::from(1) {
        true => ExitCode::SUCCESS,
        false => code,
    })
}
