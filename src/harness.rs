//! The libtest harness: every case becomes a libtest-mimic trial, so `cargo test`,
//! filters, `--list`, `--exact`, `--ignored`, `--format json` and nextest work as usual.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::{Arc, Mutex, OnceLock};

use libtest_mimic::{Arguments, Completion, Failed, Trial};
use serde_json::Value;

use crate::agent::Agent;
use crate::check::Check;
use crate::config::Config;
use crate::record::{failure_message, CaseReport, ReportSink, RunInfo, Status, Summary};
use crate::run::engine::{not_run, skip_reason, Engine, Registry, Settings};
use crate::source::{discover_excluding, file_for_trial, load_file, Loaded, SEPARATOR};

/// Cases in flight when neither `--test-threads`, `RUST_TEST_THREADS` nor `[run] concurrency`
/// says otherwise. Agent calls wait on the network, not the CPU, so this is well above
/// the core count.
pub const DEFAULT_CONCURRENCY: usize = 32;

/// The shared async runtime: one for every trial of the process, so connection pools
/// and the process reaper are shared.
pub(crate) fn runtime() -> &'static tokio::runtime::Runtime {
    static RT: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RT.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("agentest")
            .enable_all()
            .build()
            .expect("failed to start the async runtime")
    })
}

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
    pub fn run_with_args(self, mut args: Arguments) -> ExitCode {
        let root = self.root.clone();
        let root_config = Config::discover(&root).ok();
        let report = report_path(root_config.as_ref());
        // The report is JSONL too: it must never be read back as a suite.
        let loaded = match load(&root, &args, report.as_slice()) {
            Ok(l) => l,
            Err(e) => {
                eprintln!("error: {e}");
                return ExitCode::from(2);
            }
        };
        if args.test_threads.is_none() {
            args.test_threads = std::env::var("RUST_TEST_THREADS")
                .ok()
                .and_then(|v| v.parse().ok())
                .or_else(|| root_config.as_ref().and_then(|c| c.file.run.concurrency))
                .or(Some(DEFAULT_CONCURRENCY))
                // No more threads than trials (nextest's `--exact` runs one).
                .map(|n: usize| n.min(loaded.len()).max(1));
        }
        let agent_name = std::env::var("AGENTEST_AGENT")
            .ok()
            .filter(|s| !s.is_empty())
            .or(self.agent_name);
        let update = match crate::record::golden::UpdateMode::from_env() {
            Ok(u) => u,
            Err(e) => {
                eprintln!("error: {e}");
                return ExitCode::from(2);
            }
        };
        let engine = Arc::new(Engine::new(
            self.registry,
            Settings {
                agent_name,
                timeout: None,
                run_skipped: args.ignored || args.include_ignored,
                live: live_from_env(),
                simulator: std::env::var("AGENTEST_SIMULATOR")
                    .ok()
                    .filter(|s| !s.is_empty()),
                people: crate::run::roles::person::People {
                    forced: env_flag("AGENTEST_INTERACTIVE"),
                    skip: env_flag("AGENTEST_SKIP_INTERACTIVE"),
                    fail_missing: std::env::var("AGENTEST_ON_MISSING_INPUT")
                        .is_ok_and(|v| v == "fail"),
                },
                update,
            },
        ));

        let under_nextest = std::env::var_os("NEXTEST_EXECUTION_MODE").is_some()
            || std::env::var_os("NEXTEST").is_some();
        let writer = if args.list {
            None
        } else {
            match report {
                Some(path) => match open_report(&path, under_nextest) {
                    Ok(w) => Some(Arc::new(w)),
                    Err(e) => {
                        eprintln!("error: {e}");
                        return ExitCode::from(2);
                    }
                },
                None => None,
            }
        };
        let summary = Arc::new(Mutex::new(Summary::new()));
        let ran = Arc::new(Mutex::new(HashSet::new()));
        let started = std::time::Instant::now();

        let mut flagged_skips = Vec::new();
        let trials: Vec<Trial> = loaded
            .into_iter()
            .map(|l| {
                // Cases this version cannot run are listed as ignored up front, so that
                // nextest (which cannot see a run-time ignore) does not report them as passed.
                let skip_flag = matches!(&l.entry, Ok(c) if skip_reason(c).is_some());
                let name = l.trial.clone();
                let l = Arc::new(l);
                if skip_flag {
                    flagged_skips.push(l.clone());
                }
                let (engine, writer, summary, ran) =
                    (engine.clone(), writer.clone(), summary.clone(), ran.clone());
                Trial::ignorable_test(name, move || {
                    let report = runtime().block_on(engine.clone().run_guarded(l.clone()));
                    ran.lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .insert(l.trial.clone());
                    record(&report, writer.as_deref(), &summary);
                    outcome(&report)
                })
                .with_ignored_flag(skip_flag)
            })
            .collect();

        let conclusion = libtest_mimic::run(&args, trials);

        if let Some(w) = &writer {
            // Cases listed as ignored were never run, but the report still holds them.
            let ran = ran.lock().unwrap_or_else(|e| e.into_inner());
            for l in flagged_skips {
                let probe = Trial::test(l.trial.clone(), || Ok(()));
                if ran.contains(&l.trial) || args.is_filtered_out(&probe) {
                    continue;
                }
                if let Ok(case) = &l.entry {
                    let reason = skip_reason(case).unwrap_or_default();
                    let report = not_run(&l, reason);
                    record(&report, Some(w), &summary);
                }
            }
            if !under_nextest {
                let mut s = summary.lock().unwrap_or_else(|e| e.into_inner()).clone();
                s.duration_ms = started.elapsed().as_millis() as u64;
                let mut run = RunInfo::new(
                    "(see each case)",
                    self.root.display().to_string(),
                    std::env::args().collect(),
                );
                run.duration_ms = s.duration_ms;
                if let Err(e) = w.finish(&run, &s) {
                    eprintln!(
                        "warning: failed to finish the report {}: {e}",
                        w.path().display()
                    );
                }
            }
        }
        conclusion.exit_code()
    }
}

fn record(report: &CaseReport, writer: Option<&ReportSink>, summary: &Mutex<Summary>) {
    summary
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .add(report);
    if let Some(w) = writer {
        if let Err(e) = w.record(report) {
            eprintln!(
                "warning: failed to write {} to the report {}: {e}",
                report.trial,
                w.path().display()
            );
        }
    }
}

fn outcome(report: &CaseReport) -> Result<Completion, Failed> {
    match report.status {
        Status::Passed => Ok(Completion::Completed),
        Status::Skipped => Ok(Completion::ignored_with(
            report.error.clone().unwrap_or_default(),
        )),
        _ => Err(failure_message(report).into()),
    }
}

/// `AGENTEST_LIVE=1` (or `true`): tool calls go to the real tools.
pub(crate) fn live_from_env() -> bool {
    env_flag("AGENTEST_LIVE")
}

/// A boolean environment variable: `1` or `true`.
fn env_flag(name: &str) -> bool {
    std::env::var(name).is_ok_and(|v| v == "1" || v.eq_ignore_ascii_case("true"))
}

/// Under cargo test one process writes the whole report; under nextest every case's
/// process appends to it, and a new run id starts it afresh.
fn open_report(path: &Path, under_nextest: bool) -> Result<ReportSink, String> {
    match std::env::var("NEXTEST_RUN_ID") {
        Ok(run) if under_nextest && !run.is_empty() => ReportSink::for_run(path, &run),
        _ => ReportSink::create(path, !under_nextest),
    }
}

/// `AGENTEST_REPORT` (relative to the working directory), else `[run] report` (relative to the config).
fn report_path(config: Option<&Config>) -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("AGENTEST_REPORT").filter(|p| !p.is_empty()) {
        return Some(PathBuf::from(p));
    }
    let c = config?;
    c.file.run.report.as_ref().map(|r| c.dir.join(r))
}

/// Loads the cases the arguments need. With `--exact SUITE::ID` (nextest runs each
/// test this way) only that suite's file is opened.
fn load(root: &Path, args: &Arguments, exclude: &[PathBuf]) -> Result<Vec<Loaded>, String> {
    if args.exact {
        if let Some(file) = args
            .filter
            .as_deref()
            .filter(|f| f.contains(SEPARATOR))
            .and_then(|f| file_for_trial(root, f))
        {
            return Ok(load_file(root, &file));
        }
    }
    let files = discover_excluding(root, exclude).map_err(|e| e.to_string())?;
    let mut loaded: Vec<Loaded> = files.iter().flat_map(|f| load_file(root, f)).collect();
    if loaded.is_empty() {
        return Err(format!(
            "no test cases found under {}: add a suite such as `smoke.jsonl` with a line like {{\"id\": \"T001\", \"input\": \"Hello\", \"assert\": {{\"type\": \"contains\", \"value\": \"Hello\"}}}}",
            root.display()
        ));
    }
    loaded.sort_by(|a, b| a.trial.cmp(&b.trial));
    Ok(loaded)
}
