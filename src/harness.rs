//! The libtest harness: every case becomes a libtest-mimic trial, so `cargo test`,
//! filters, `--list`, `--exact`, `--ignored`, `--format json` and nextest work as usual.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use libtest_mimic::{Arguments, Completion, Failed, Trial};
use serde_json::Value;

use crate::agent::Agent;
use crate::check::Check;
use crate::config::Config;
use crate::errors::PlanError;
use crate::errors::{ReportError, StoreError};
use crate::plan::{Input, Plan};
use crate::record::store::ExecutionInfo;
use crate::record::{failure_message, CaseReport, Recorder, ReportSink, RunInfo, Status};
use crate::run::context::{Registry, SetupProblem};
use crate::run::engine::Engine;
use crate::run::execution::Execution;
use crate::run::options::RunOptions;
use crate::run::outcome::{not_run, skip_reason};
use crate::run::roles::person::People;
use crate::run::runtime;
use crate::run::scheduler::{Scheduler, Ticket};
use crate::settings::{self, Settings};
use crate::source::Loaded;

/// Builds and runs the test harness for a suites root.
///
/// ```no_run
/// // tests/agent_tests.rs, with `[[test]] name = "agent_tests" harness = false`
/// fn main() -> std::process::ExitCode {
///     agentest::Harness::new(concat!(env!("CARGO_MANIFEST_DIR"), "/agent-tests")).run()
/// }
/// ```
pub struct Harness {
    root: PathBuf,
    registry: Registry,
    agent_name: Option<String>,
}

impl Harness {
    /// A harness for the suites under `root` (usually `<crate>/agent-tests`).
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Harness {
            root: root.into(),
            registry: Registry::default(),
            agent_name: None,
        }
    }

    /// Registers an in-process agent under `name`, for cases with `"agent": name`
    /// (and for [`Harness::use_agent`]). It shadows a config agent of the same name.
    pub fn agent(mut self, name: impl Into<String>, agent: impl Agent) -> Self {
        self.registry.agents.insert(name.into(), Arc::new(agent));
        self
    }

    /// Registers the in-process agent used by cases that name none, in place of `[agent]`.
    pub fn default_agent(mut self, agent: impl Agent) -> Self {
        self.registry.default_agent = Some(Arc::new(agent));
        self
    }

    /// Runs cases that name no agent against the named one (what `-n NAME` does for the
    /// binary). The `AGENTEST_AGENT` environment variable overrides it.
    pub fn use_agent(mut self, name: impl Into<String>) -> Self {
        self.agent_name = Some(name.into());
        self
    }

    /// Registers a `before` / `after` hook; it receives the case as JSON.
    pub fn hook(
        mut self,
        name: impl Into<String>,
        f: impl Fn(&Value) -> Result<(), String> + Send + Sync + 'static,
    ) -> Self {
        self.registry.hooks.insert(name.into(), Arc::new(f));
        self
    }

    /// Registers a case generator for `-i scripts:NAME` and suite lines
    /// `{"generate": "scripts:NAME?k=v"}`: it receives the parameters as a JSON object
    /// (`count` a number, the rest strings) and returns the cases, each as a suite line
    /// would be written. A registered generator wins over `[scripts.NAME]`.
    pub fn generator(
        mut self,
        name: impl Into<String>,
        f: impl Fn(&Value) -> Result<Vec<Value>, String> + Send + Sync + 'static,
    ) -> Self {
        self.registry.generators.insert(name.into(), Arc::new(f));
        self
    }

    /// Registers a script for `script` assertions (`use: "scripts:NAME"`); it receives
    /// `{output, input, response, conversation, value, metadata}`.
    pub fn script(
        mut self,
        name: impl Into<String>,
        f: impl Fn(&Value) -> Result<Check, String> + Send + Sync + 'static,
    ) -> Self {
        self.registry.scripts.insert(name.into(), Arc::new(f));
        self
    }

    /// Parses the process's libtest arguments and runs. Returns the exit code.
    pub fn run(self) -> ExitCode {
        self.run_with_args(Arguments::from_args())
    }

    /// Runs with the given arguments.
    ///
    /// Every case becomes a trial. The cases libtest will run are started at once on
    /// agentest's scheduler (`--test-threads` of them in flight), and each trial waits
    /// for its own case's result, so the harness and the binary share one scheduler.
    pub fn run_with_args(self, mut args: Arguments) -> ExitCode {
        let settings = match settings::load() {
            Ok(s) => s,
            Err(e) => return setup_failure(&args, "settings", e.to_string()),
        };
        crate::util::invocation::set(crate::util::invocation::cargo_test_for_this_binary());
        let loader = crate::run::context::config_loader(settings.config.as_ref());
        let root_config = Config::discover(&self.root, &loader).ok();
        let report = report_path(settings, root_config.as_ref());
        let mut plan = match self.plan(&args, report.as_slice()) {
            Ok(p) => p,
            Err(e) => {
                eprintln!("error: {e}");
                return ExitCode::from(2);
            }
        };
        let options = run_options(settings, self.agent_name, &args);
        let mut execution = Execution::builder(self.registry, options)
            .concurrency(args.test_threads.or(settings.test_threads))
            .config(root_config.as_ref(), &self.root)
            .test_binary()
            .build();
        // Suite lines `{"generate": ...}` make their cases now: listing them is running
        // the generator (a recorded one replays from its cassette).
        plan.cases = execution.expand(std::mem::take(&mut plan.cases));
        // No more threads than trials (nextest's `--exact` runs one): each only waits.
        args.test_threads = Some(execution.size(plan.cases.len()));
        let sink = match report.as_deref().filter(|_| !args.list) {
            Some(path) => match report_sink(settings, path) {
                Ok(w) => Some(w),
                Err(e) => {
                    eprintln!("error: {e}");
                    return ExitCode::from(2);
                }
            },
            None => None,
        };
        execution.record(sink);
        let started = std::time::Instant::now();
        // A config (or the agent it gives) that cannot be used is one failing trial, and
        // the cases it stops fail with a pointer to it: said once, not once per case.
        let problems = execution.engine().contexts.setup_problems(&plan.cases);
        let cases: Vec<Arc<Loaded>> = plan.cases.into_iter().map(Arc::new).collect();
        // The run store, when anything will run (a listing opens nothing).
        let will_run = selected(&args, &cases, &problems);
        if let Err(message) = open_store(&execution, &self.root, settings, &will_run) {
            return fail_all(&args, &will_run, &message.to_string());
        }
        let run = TrialRun {
            engine: execution.engine().clone(),
            recorder: execution.recorder().clone(),
            scheduler: execution.scheduler(false),
            shared_report: settings.nextest.is_some(),
        };
        let (mut trials, started_cases) = run.trials(&args, &cases, &problems);
        trials.extend(problems.iter().map(|p| {
            let message = p.message();
            Trial::test(p.trial(), move || Err(Failed::from(message.clone())))
        }));
        let conclusion = libtest_mimic::run(&args, trials);
        let ended = Ended {
            args: &args,
            cases: &cases,
            started_cases: &started_cases,
            report: report.as_deref(),
            started,
        };
        match finish(&execution, &self.root, settings, ended) {
            Ok(()) => conclusion.exit_code(),
            Err(unrecorded) => setup_failures(&args, unrecorded),
        }
    }

    /// The suites' cases; with `--exact SUITE::ID` (nextest) only that suite is read. The
    /// report is JSONL too: it is never read back as a suite.
    fn plan(&self, args: &Arguments, report: &[PathBuf]) -> Result<Plan, PlanError> {
        let exact = args.exact.then_some(args.filter.as_deref()).flatten();
        let plan = Plan::load(&Input::Dir(self.root.clone()), report, exact)?;
        if plan.cases.is_empty() {
            return Err(PlanError::NoCases {
                root: self.root.clone(),
            });
        }
        Ok(plan)
    }
}

/// Opens the run store, when it is on and any case of `will_run` will run. `Err`: why
/// it could not be opened.
fn open_store(
    execution: &Execution,
    root: &Path,
    settings: &Settings,
    will_run: &[Arc<Loaded>],
) -> Result<(), StoreError> {
    if will_run.is_empty() {
        return Ok(());
    }
    let Some(path) = execution.store_address()? else {
        return Ok(());
    };
    let key = settings.execution_key(path.file().is_none(), true);
    let info = ExecutionInfo {
        command: crate::util::shown_args(std::env::args()),
        root: std::path::absolute(root)
            .unwrap_or_else(|_| root.to_path_buf())
            .display()
            .to_string(),
        // Without a key (no nextest run, no AGENTEST_EXECUTION) the trials of this one
        // process are the execution's only runs.
        exclusive: key.is_none(),
        key,
        nextest_run_id: settings.nextest.as_ref().and_then(|n| n.run_id.clone()),
        lease: execution.store_lease(),
        git_from: root.to_path_buf(),
        ci_run: settings.execution.ci.clone(),
        ci_branch: settings.execution.ci_branch.clone(),
    };
    let list: Vec<&Loaded> = will_run.iter().map(|l| l.as_ref()).collect();
    execution
        .open_store(
            &path,
            &info,
            crate::record::StorePlan {
                cases: &list,
                resume: None,
                retry_of: &Default::default(),
                repeats: Vec::new(),
            },
            false,
        )
        .map(drop)
}

/// Every trial that would run fails with `message`: under nextest's `--exact NAME` a
/// trial of another name would be filtered out, and the case would pass unrun.
fn fail_all(args: &Arguments, will_run: &[Arc<Loaded>], message: &str) -> ExitCode {
    let trials = will_run
        .iter()
        .map(|l| {
            let message = message.to_string();
            Trial::test(l.trial.clone(), move || Err(Failed::from(message)))
        })
        .collect();
    libtest_mimic::run(args, trials).exit_code()
}

/// What the trials left for the end of the run.
struct Ended<'a> {
    args: &'a Arguments,
    cases: &'a [Arc<Loaded>],
    /// The names of the cases the scheduler started.
    started_cases: &'a HashSet<String>,
    /// The report's path, when there is one.
    report: Option<&'a Path>,
    /// When the run began.
    started: std::time::Instant,
}

/// The end of a run: the execution finished (environments, the store), the cases
/// listed as ignored recorded and the report written (under cargo test; under nextest
/// no process ends it). `Err`: what could not be recorded, one more failing trial each
/// (a run whose results were not kept must not pass).
fn finish(
    execution: &Execution,
    root: &Path,
    settings: &Settings,
    ended: Ended,
) -> Result<(), Vec<(&'static str, String)>> {
    let mut unrecorded = Vec::new();
    if let Err(e) = execution.finish(ended.started.elapsed().as_millis() as u64) {
        unrecorded.push(("store", e.to_string()));
    }
    let recorder = execution.recorder();
    // Under nextest each case is a process of its own: no one sees the whole run.
    if settings.nextest.is_none() {
        let mut s = recorder.summary();
        s.max_simulator_blame = execution
            .engine()
            .max_simulator_blame(&root.join(crate::config::CONFIG_FILE));
        if let Some(why) = s.simulator_blame_over() {
            unrecorded.push(("blame", why));
        }
    }
    if recorder.has_report() {
        record_listed_skips(ended.args, ended.cases, ended.started_cases, recorder);
        if settings.nextest.is_none() {
            let mut s = recorder.summary();
            s.duration_ms = ended.started.elapsed().as_millis() as u64;
            s.max_simulator_blame = execution
                .engine()
                .max_simulator_blame(&root.join(crate::config::CONFIG_FILE));
            let command = crate::util::shown_args(std::env::args());
            let mut info = RunInfo::new("(see each case)", root.display().to_string(), command);
            info.duration_ms = s.duration_ms;
            if let Err(e) = recorder.finish(&info, &s) {
                unrecorded.push(("report", e.to_string()));
            } else if let Some(path) = ended.report {
                let cases = crate::util::count(s.total, "case", "cases");
                eprintln!("agentest: wrote {} ({cases})", path.display());
            }
        }
    }
    if unrecorded.is_empty() {
        Ok(())
    } else {
        Err(unrecorded)
    }
}

/// The run's options under `cargo test`: the environment, then the builder.
fn run_options(settings: &Settings, builder_agent: Option<String>, args: &Arguments) -> RunOptions {
    RunOptions {
        agent_name: settings.agent.clone().or(builder_agent),
        timeout: None,
        run_skipped: args.ignored || args.include_ignored,
        live: settings.live,
        simulator: settings.simulator.clone(),
        people: People {
            forced: crate::run::roles::person::interactive_allowed(
                settings.interactive,
                "AGENTEST_INTERACTIVE",
            ),
            skip: settings.skip_interactive,
            on_missing_input: settings.on_missing_input,
        },
        update: settings.update,
        keep_env: settings.keep_env,
        runs: settings.runs,
        // The Yao flags belong to the command line; a harness sets them in its cases.
        overrides: Default::default(),
    }
}

/// What the trials of one run share.
struct TrialRun {
    engine: Arc<Engine>,
    recorder: Arc<Recorder>,
    /// Runs the cases libtest will run, at once, each trial waiting for its own.
    scheduler: Scheduler,
    /// Under nextest: each process writes its own case's record to a shared report, and
    /// no process ends it, so a record that cannot be written fails its case's trial.
    shared_report: bool,
}

impl TrialRun {
    /// One trial per case. The cases libtest will run (not filtered out, not ignored, not
    /// a listing) start at once on the scheduler; each trial waits for its own. Returns
    /// the trials and the names of the cases started.
    fn trials(
        &self,
        args: &Arguments,
        cases: &[Arc<Loaded>],
        problems: &[SetupProblem],
    ) -> (Vec<Trial>, HashSet<String>) {
        let stopped: HashMap<&str, &SetupProblem> = problems
            .iter()
            .flat_map(|p| p.trials.iter().map(move |t| (t.as_str(), p)))
            .collect();
        let selected: Vec<Arc<Loaded>> = selected(args, cases, problems);
        let started: HashSet<String> = selected.iter().map(|l| l.trial.clone()).collect();
        // A listing (nextest lists every test binary) starts no runtime at all.
        let tickets = if selected.is_empty() {
            Vec::new()
        } else {
            let _guard = runtime().enter();
            self.scheduler.start(selected.clone())
        };
        let mut tickets: HashMap<String, Ticket> = selected
            .iter()
            .map(|l| l.trial.clone())
            .zip(tickets)
            .collect();
        let trials = cases
            .iter()
            .map(|l| {
                let ignored = listed_ignored(l);
                if let Some(p) = stopped.get(l.trial.as_str()) {
                    let pointer = format!(
                        "not run: {} cannot be used; see the trial `{}`",
                        p.label,
                        p.trial()
                    );
                    let t = probe(l);
                    if !args.list && !args.is_filtered_out(&t) && !args.is_ignored(&t) {
                        let mut r = not_run(l, pointer.clone());
                        r.status = Status::Error;
                        self.recorder.record(&r);
                    }
                    return Trial::test(l.trial.clone(), move || Err(pointer.clone().into()))
                        .with_ignored_flag(ignored);
                }
                let ticket = tickets.remove(&l.trial);
                let (l, engine, recorder) = (l.clone(), self.engine.clone(), self.recorder.clone());
                let shared_report = self.shared_report;
                Trial::ignorable_test(l.trial.clone(), move || {
                    let report = match &ticket {
                        Some(t) => runtime().block_on(t.wait()),
                        None => None,
                    };
                    // A case libtest runs that was not started (it cannot happen, but a
                    // hang would be worse than a wrong guess) runs here.
                    let report = report.unwrap_or_else(|| {
                        let r = runtime().block_on(engine.clone().run_guarded(
                            l.clone(),
                            crate::run::repeats::Repeat::once(Default::default()),
                        ));
                        recorder.record(&r);
                        r
                    });
                    let result = outcome(&report);
                    match recorder.report_failure().filter(|_| shared_report) {
                        Some(lost) => {
                            let verdict = result.err().and_then(|f| f.message().map(String::from));
                            Err(Failed::from(match verdict {
                                Some(v) => format!("{lost}\n{v}"),
                                None => lost,
                            }))
                        }
                        None => result,
                    }
                })
                .with_ignored_flag(ignored)
            })
            .collect();
        (trials, started)
    }
}

/// Cases listed as ignored (`skip: true`) are never run, but the report still holds them.
fn record_listed_skips(
    args: &Arguments,
    cases: &[Arc<Loaded>],
    started: &HashSet<String>,
    recorder: &Recorder,
) {
    for l in cases {
        let t = probe(l);
        if !t.has_ignored_flag() || started.contains(&l.trial) || args.is_filtered_out(&t) {
            continue;
        }
        if let Ok(case) = &l.entry {
            recorder.record(&not_run(l, skip_reason(case).unwrap_or_default()));
        }
    }
}

/// A trial with the case's name and ignored flag, for libtest's filters. Cases marked
/// `skip: true` are listed as ignored up front, so that nextest (which cannot see a
/// run-time ignore) does not report them as passed.
fn probe(l: &Loaded) -> Trial {
    Trial::test(l.trial.clone(), || Ok(())).with_ignored_flag(listed_ignored(l))
}

/// Whether a case is listed as ignored: `skip: true`.
fn listed_ignored(l: &Loaded) -> bool {
    matches!(&l.entry, Ok(c) if skip_reason(c).is_some())
}

/// A run that cannot start: one failing trial that says why (so `cargo test` and
/// nextest show it), or exit code 2 where no trial can carry it.
/// The cases libtest will run: not a listing, not filtered out, not ignored, not
/// stopped by a setup problem.
fn selected(
    args: &Arguments,
    cases: &[Arc<Loaded>],
    problems: &[SetupProblem],
) -> Vec<Arc<Loaded>> {
    if args.list {
        return Vec::new();
    }
    let stopped: HashSet<&str> = problems
        .iter()
        .flat_map(|p| p.trials.iter().map(String::as_str))
        .collect();
    cases
        .iter()
        .filter(|l| {
            let t = probe(l);
            !args.is_filtered_out(&t) && !args.is_ignored(&t) && !stopped.contains(l.trial.as_str())
        })
        .cloned()
        .collect()
}

fn setup_failure(args: &Arguments, what: &str, message: String) -> ExitCode {
    setup_failures(args, vec![(what, message)])
}

/// [`setup_failure`] for several failures, a trial `agentest::WHAT` each.
fn setup_failures(args: &Arguments, failures: Vec<(&str, String)>) -> ExitCode {
    let trials = failures
        .into_iter()
        .map(|(what, message)| {
            Trial::test(format!("agentest::{what}"), move || {
                Err(Failed::from(message.clone()))
            })
        })
        .collect();
    // A run that cannot start must not pass because a filter (`cargo test smoke`,
    // nextest's `--exact NAME`) left out the trial that says why: it runs whatever
    // was asked for. A listing still lists only what matches.
    let mut args = args.clone();
    if !args.list {
        args.filter = None;
        args.skip.clear();
        args.exact = false;
        args.ignored = false;
    }
    libtest_mimic::run(&args, trials).exit_code()
}

fn outcome(report: &CaseReport) -> Result<Completion, Failed> {
    match report.status {
        Status::Passed => Ok(Completion::Completed),
        Status::Skipped => Ok(Completion::ignored_with(
            report.error.clone().unwrap_or_default(),
        )),
        // `on_inconclusive = "ignore"`: shown as ignored, with why, never as passed.
        Status::Inconclusive
            if report.on_inconclusive == Some(crate::case::OnInconclusive::Ignore) =>
        {
            Ok(Completion::ignored_with(format!(
                "inconclusive: {}",
                report.error.clone().unwrap_or_default()
            )))
        }
        _ => Err(failure_message(report).into()),
    }
}

/// The report at `path`, which may only be written over a report.
fn report_sink(settings: &Settings, path: &Path) -> Result<ReportSink, String> {
    crate::record::only_over_a_report(path, REPORT_SETTING).map_err(|e| e.to_string())?;
    open_report(settings, path).map_err(|e| e.to_string())
}

/// Under cargo test one process writes the whole report; under nextest every case's
/// process appends to it, and a new run id starts it afresh.
fn open_report(settings: &Settings, path: &Path) -> Result<ReportSink, ReportError> {
    match &settings.nextest {
        Some(n) => match n.run_id.as_deref() {
            Some(run) => ReportSink::for_run(path, run),
            None => ReportSink::create(path, false),
        },
        None => ReportSink::create(path, true),
    }
}

/// Where the harness's report path comes from, as a refusal to write it names it.
const REPORT_SETTING: &str = "AGENTEST_REPORT (or `[run] report`)";

/// `AGENTEST_REPORT` (relative to the working directory), else `[run] report` (relative to the config).
fn report_path(settings: &Settings, config: Option<&Config>) -> Option<PathBuf> {
    if let Some(p) = &settings.report {
        return Some(p.clone());
    }
    let c = config?;
    c.file.run.report.as_ref().map(|r| c.dir.join(r))
}
