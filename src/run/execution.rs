//! One run's set-up, the same for the binary and the harness: the engine (what is
//! registered in process and the run's options), the cases generators make, how many
//! cases run at once, the recorder with its report and the run store, and, once the
//! cases are done, the environment folders and the store closed. Each front end adapts
//! it: the binary prints the console tree as cases end (`cli/test.rs`), the harness
//! makes each case a libtest trial (`harness.rs`).
//!
//! ```text
//! let mut execution = Execution::builder(registry, options)
//!     .concurrency(asked).config(Some(&config), root).build();
//! plan.cases = execution.expand(plan.cases);    // generators make their cases
//! execution.size(plan.cases.len());              // cases in flight, model calls
//! let recorder = execution.record(sink);         // the report
//! execution.open_store(&path, &info, plan, false)?;
//! ... execution.scheduler(fail_fast) runs the cases ...
//! execution.finish(elapsed_ms)?;                 // environments, the store
//! ```

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::config::Config;
use crate::errors::StoreError;
use crate::record::store::{ExecutionInfo, Resumed};
use crate::record::{Recorder, ReportSink, StorePlan};
use crate::run::context::Registry;
use crate::run::engine::Engine;
use crate::run::options::RunOptions;
use crate::run::runtime;
use crate::run::scheduler::Scheduler;
use crate::source::Loaded;
use crate::util::StoreAddress;

/// Cases in flight when neither the front end (`--parallel`, `--test-threads`,
/// `RUST_TEST_THREADS`) nor `[run] concurrency` says otherwise. Agent calls wait on the
/// network, not the CPU, so this is well above the core count.
pub const DEFAULT_CONCURRENCY: usize = 32;

/// How a run is set up, before its cases are known; [`ExecutionBuilder::build`] makes
/// the [`Execution`].
pub(crate) struct ExecutionBuilder {
    registry: Registry,
    options: RunOptions,
    /// The cases in flight the front end asks for.
    asked: Option<usize>,
    /// `[run] concurrency` of the run's config.
    configured: Option<usize>,
    /// Where the store is looked for: the config's folder, else the suites'.
    store_from: PathBuf,
    /// `[store]` of the run's config, or why it cannot be used.
    store_configured: Result<Option<StoreAddress>, String>,
    /// A store the front end names (`--store`), over the rest.
    store_given: Option<StoreAddress>,
    /// `[store] lease` of the run's config.
    store_lease: Option<std::time::Duration>,
    /// Running as a test binary (the harness): its target folder holds the store.
    test_binary: bool,
}

impl ExecutionBuilder {
    /// The cases in flight the front end asks for (`--parallel`, 1 when a person
    /// answers; `--test-threads` or `RUST_TEST_THREADS`), over `[run] concurrency`.
    pub(crate) fn concurrency(mut self, asked: Option<usize>) -> Self {
        self.asked = asked;
        self
    }

    /// The run's config (`None`: none could be read), with `dir` the folder its store
    /// is found from when there is no config: `[run] concurrency`, `[store] path`.
    pub(crate) fn config(mut self, config: Option<&Config>, dir: &Path) -> Self {
        self.configured = config.and_then(|c| c.file.run.concurrency);
        self.store_configured = config
            .map(Config::store_address)
            .transpose()
            .map(Option::flatten)
            .map_err(|e| e.to_string());
        self.store_from = config.map_or_else(|| dir.to_path_buf(), |c| c.dir.clone());
        self.store_lease = config.and_then(Config::store_lease);
        self
    }

    /// The run store the front end names (`--store`), over `AGENTEST_STORE` and the config.
    pub(crate) fn store(mut self, given: Option<StoreAddress>) -> Self {
        self.store_given = given;
        self
    }

    /// The run is a test binary's (the harness): its store defaults to the target
    /// folder the binary was built in.
    pub(crate) fn test_binary(mut self) -> Self {
        self.test_binary = true;
        self
    }

    /// The execution, its engine made.
    pub(crate) fn build(self) -> Execution {
        let parallel = self
            .asked
            .or(self.configured)
            .unwrap_or(DEFAULT_CONCURRENCY)
            .max(1);
        Execution {
            engine: Arc::new(Engine::new(self.registry, self.options)),
            parallel,
            recorder: None,
            store_from: self.store_from,
            store_configured: self.store_configured,
            store_given: self.store_given,
            store_lease: self.store_lease.unwrap_or(crate::record::store::LEASE),
            test_binary: self.test_binary,
        }
    }
}

/// One run: its engine, how many cases run at once, its recorder and its store.
pub(crate) struct Execution {
    engine: Arc<Engine>,
    parallel: usize,
    recorder: Option<Arc<Recorder>>,
    store_from: PathBuf,
    store_configured: Result<Option<StoreAddress>, String>,
    store_given: Option<StoreAddress>,
    store_lease: std::time::Duration,
    test_binary: bool,
}

impl Execution {
    /// The set-up of a run with the in-process parts `registry` and `options`.
    pub(crate) fn builder(registry: Registry, options: RunOptions) -> ExecutionBuilder {
        ExecutionBuilder {
            registry,
            options,
            asked: None,
            configured: None,
            store_from: PathBuf::new(),
            store_configured: Ok(None),
            store_given: None,
            store_lease: None,
            test_binary: false,
        }
    }

    /// The engine every case runs on.
    pub(crate) fn engine(&self) -> &Arc<Engine> {
        &self.engine
    }

    /// `cases` with each generator entry (`-i agents:NAME`, a suite line
    /// `{"generate": ...}`) replaced by the cases its generator makes now, so that
    /// filters, listings and the rest see them as any other.
    pub(crate) fn expand(&self, cases: Vec<Loaded>) -> Vec<Loaded> {
        runtime().block_on(self.engine.expand(cases))
    }

    /// Sizes the run to its `cases`, once they are chosen: no more in flight than there
    /// are (nextest's `--exact` runs one), and model calls shared out accordingly.
    /// Returns the cases in flight.
    pub(crate) fn size(&mut self, cases: usize) -> usize {
        self.parallel = self.parallel.min(cases).max(1);
        crate::llm::set_parallelism(self.parallel);
        self.parallel
    }

    /// The recorder of the run, writing its report to `sink`, if any.
    pub(crate) fn record(&mut self, sink: Option<ReportSink>) -> Arc<Recorder> {
        let recorder = Arc::new(Recorder::new(sink));
        self.recorder = Some(recorder.clone());
        recorder
    }

    /// The recorder [`Execution::record`] made.
    pub(crate) fn recorder(&self) -> &Arc<Recorder> {
        self.recorder
            .as_ref()
            .expect("an execution records before its store opens or its cases run")
    }

    /// Where the run store is: the one the front end names, else as
    /// [`crate::record::store::location`] says; `None` when it is off. `Err`: the
    /// config's `[store]`, which decides, cannot be used (a `${VAR}` not set).
    pub(crate) fn store_address(&self) -> Result<Option<StoreAddress>, StoreError> {
        if let Some(given) = &self.store_given {
            return Ok(Some(given.clone()));
        }
        let configured = match crate::settings::get().store {
            crate::settings::StoreChoice::Default => self
                .store_configured
                .clone()
                .map_err(|problem| StoreError::Configured { problem })?,
            _ => None,
        };
        Ok(crate::record::store::location(
            &self.store_from,
            configured,
            self.test_binary,
        ))
    }

    /// How long this run's claims hold without a heartbeat (`[store] lease`).
    pub(crate) fn store_lease(&self) -> std::time::Duration {
        self.store_lease
    }

    /// Opens the run store at `address` for the `cases` that will run (see
    /// [`Recorder::open_store`]: `resume`, `retry_of`).
    ///
    /// With `spread` (`--enqueue`: the runs are for workers), a case run more than once
    /// is queued repeat by repeat, so that its repeats spread over the workers.
    pub(crate) fn open_store(
        &self,
        address: &StoreAddress,
        info: &ExecutionInfo,
        mut plan: StorePlan<'_>,
        spread: bool,
    ) -> Result<Resumed, StoreError> {
        if spread {
            plan.repeats = plan
                .cases
                .iter()
                .map(|l| {
                    let runs = self.engine.plan(l).ok()?.runs;
                    (runs > 1).then_some(runs)
                })
                .collect();
        }
        self.recorder().open_store(address, info, plan)
    }

    /// The scheduler that runs the cases, recording each.
    pub(crate) fn scheduler(&self, fail_fast: bool) -> Scheduler {
        Scheduler::new(
            self.engine.clone(),
            self.recorder().clone(),
            self.parallel,
            fail_fast,
        )
    }

    /// Once the cases are done: the last environment folders are removed (in the
    /// background) and the store records the execution's end, `elapsed_ms` after it
    /// began. `Err`: what the store lost, the run's error.
    pub(crate) fn finish(&self, elapsed_ms: u64) -> Result<(), StoreError> {
        self.engine.finish_environments();
        self.recorder().close_store(elapsed_ms)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn execution(asked: Option<usize>, configured: Option<usize>) -> Execution {
        let mut config = Config::default();
        config.file.run.concurrency = configured;
        Execution::builder(Registry::default(), RunOptions::default())
            .concurrency(asked)
            .config(Some(&config), Path::new("."))
            .build()
    }

    // The sizes stay under the limiters' own default, so that telling them changes
    // nothing for the other tests of this process.
    #[test]
    fn the_front_end_asks_over_the_config_over_the_default_and_cases_cap_it() {
        assert_eq!(execution(Some(3), Some(2)).size(10), 3);
        assert_eq!(execution(None, Some(2)).size(10), 2);
        assert_eq!(execution(None, None).size(4), 4, "the default, capped");
        const { assert!(DEFAULT_CONCURRENCY > 4) };
        assert_eq!(
            execution(Some(3), None).size(2),
            2,
            "no more than the cases"
        );
        assert_eq!(execution(Some(0), None).size(0), 1, "never none");
    }

    #[test]
    fn a_store_the_front_end_names_wins() {
        let e = Execution::builder(Registry::default(), RunOptions::default())
            .store(Some(StoreAddress::File(PathBuf::from("given.db"))))
            .build();
        assert_eq!(
            e.store_address().unwrap(),
            Some(StoreAddress::File(PathBuf::from("given.db")))
        );
    }

    #[test]
    #[should_panic(expected = "an execution records before")]
    fn a_scheduler_before_the_recorder_is_a_bug() {
        let e = execution(None, None);
        let _ = e.scheduler(false);
    }
}
