//! `agentest test`: plan the cases `-i` names, run them on the scheduler, print the
//! console tree and write the report.

use std::collections::HashMap;
use std::io::{IsTerminal, Write};
use std::process::ExitCode;
use std::time::Instant;

use super::overwrite::Writer;
use super::{use_color, MissingInput, TestArgs};
use crate::config::Config;
use crate::plan::{Input, Plan};
use crate::record::console::{self, Style};
use crate::record::store::{ExecutionInfo, Resumed};
use crate::record::{Recorder, ReportSink, RunInfo, StorePlan};
use crate::run::context::Registry;
use crate::run::engine::Engine;
use crate::run::execution::Execution;
use crate::run::options::RunOptions;
use crate::run::roles::person::People;
use crate::run::runtime;
use crate::settings::{self, MissingInput as OnMissing};
use crate::source::Loaded;
use crate::util::{count, plural};

/// Runs the test command; `Err` is a usage or config error (exit code 2).
pub(super) fn test(args: TestArgs) -> Result<ExitCode, String> {
    let filter = match &args.run {
        Some(r) => Some(regex::Regex::new(r).map_err(|e| format!("invalid --run regex: {e}"))?),
        None => None,
    };
    let input = Input::parse(&args.input, args.message).map_err(|e| e.to_string())?;
    if let Some(out) = &args.output {
        let writer = if args.dry_run {
            Writer::Cases
        } else if args.reporter.is_some() {
            Writer::Reporter
        } else {
            Writer::Report
        };
        super::overwrite::check(&input, out, writer).map_err(|e| e.to_string())?;
    }
    // The report (`-o`) may be written into the suites folder; never load it.
    let exclude: Vec<_> = args.output.iter().cloned().collect();
    let mut plan = Plan::load(&input, &exclude, None).map_err(|e| e.to_string())?;
    if let (Input::Dir(root), Some(out)) = (&input, &args.output) {
        warn_if_inside(root, out);
    }
    let loader = crate::run::context::config_loader(settings::get().config.as_ref());
    let config = Config::discover(&plan.root, &loader).map_err(|e| e.to_string())?;
    // A person answers one question at a time, in order.
    let interactive =
        crate::run::roles::person::interactive_allowed(args.interactive, "--interactive");
    let asked = if interactive {
        Some(1)
    } else {
        args.parallel.map(|p| p as usize)
    };
    let mut execution = Execution::builder(Registry::default(), options(&args, interactive))
        .concurrency(asked)
        .config(Some(&config), &plan.root)
        .store(args.store.clone())
        .build();
    // Generators (`-i agents:NAME`, suite lines `{"generate": ...}`) make their cases
    // now, so `--run` and the rest see them as any other.
    plan.cases = execution.expand(std::mem::take(&mut plan.cases));
    // Every case of the suites, `--run` or not, with its fingerprint: what a resumed
    // execution's ended runs and a retry's error runs are sorted by.
    let present: Option<HashMap<String, Option<String>>> =
        (args.resume || retrying(&args)).then(|| {
            let engine = execution.engine();
            plan.cases
                .iter()
                .map(|l| (l.trial.clone(), engine.input_hash(l)))
                .collect()
        });
    if let Some(f) = &filter {
        plan.retain(f);
    }
    if plan.cases.is_empty() {
        let why = if filter.is_some() {
            " matching --run"
        } else {
            ""
        };
        return Err(format!("no test cases{why} found in {}", args.input));
    }
    execution.size(plan.cases.len());
    if args.dry_run {
        let (engine, output) = (execution.engine(), args.output.as_deref());
        return dry_run(engine, &plan, config.path.is_some(), output);
    }
    execution
        .engine()
        .contexts
        .check_setup(&plan.cases)
        .map_err(|e| e.to_string())?;
    // With a reporter agent, -o is its answer, not a built-in report.
    let sink = match (&args.output, &args.reporter) {
        (Some(p), None) => Some(ReportSink::create(p, true).map_err(|e| e.to_string())?),
        _ => None,
    };
    let first_suite = plan.cases[0].file.clone();
    execution.record(sink);
    let Some(resumed) = open_store(&execution, &args, &input, &mut plan, present.as_ref())? else {
        return Ok(ExitCode::SUCCESS);
    };
    if args.enqueue {
        return Ok(enqueued(&execution, &args, plan.cases.len()));
    }
    let ran = match &args.worker {
        Some(spec) => work(&execution, &args, &config, plan, spec)?,
        None => run(&execution, &args, &config, plan, resumed),
    };
    conclude(&execution, &args, ran, &first_suite)
}

/// `--enqueue` planned `runs` runs into the store's execution: said on stderr, with
/// how to run them.
fn enqueued(execution: &Execution, args: &TestArgs, runs: usize) -> ExitCode {
    let address = execution.store_address().ok().flatten();
    let key = address
        .and_then(|a| execution_key(args, &a))
        .unwrap_or_default();
    let id = execution.recorder().execution().unwrap_or_default();
    eprintln!(
        "queued {} into execution {id} (key {key}); runs it already had are kept. Run them with: agentest worker --execution {key}",
        count(runs as u64, "run", "runs")
    );
    ExitCode::SUCCESS
}

/// The key of the execution this run joins in the store at `address`: a worker's,
/// else as the settings say.
fn execution_key(args: &TestArgs, address: &crate::util::StoreAddress) -> Option<String> {
    match &args.worker {
        Some(w) => Some(w.key.clone()),
        None => settings::get().execution_key(address.file().is_none(), false),
    }
}

/// `--retry-errors` or `--retry-execution`.
fn retrying(args: &TestArgs) -> bool {
    args.retry_errors || args.retry_execution.is_some()
}

/// Opens the run store, when it is on: for a retry, only the cases whose last run
/// ended in error stay in `plan`; resumed, the runs that ended are kept. `present` is
/// every case of the suites with its fingerprint. `None`: a retry finds nothing to
/// retry (said on stderr).
fn open_store(
    execution: &Execution,
    args: &TestArgs,
    input: &Input,
    plan: &mut Plan,
    present: Option<&HashMap<String, Option<String>>>,
) -> Result<Option<Resumed>, String> {
    let Some(path) = execution.store_address().map_err(|e| e.to_string())? else {
        if args.resume || retrying(args) || args.enqueue {
            return Err(
                "--resume, retries and --enqueue need the run store, which is off (AGENTEST_STORE=off)"
                    .into(),
            );
        }
        return Ok(Some(Resumed::default()));
    };
    let retry_of = if retrying(args) {
        let errored = errored_runs(&path, args.retry_execution)?;
        if let Some(present) = present {
            let gone: Vec<&str> = errored
                .keys()
                .filter(|t| !present.contains_key(*t))
                .map(String::as_str)
                .collect();
            left_out(
                &gone,
                "that ended in error is not retried",
                "that ended in error are not retried",
            );
        }
        plan.cases.retain(|l| errored.contains_key(&l.trial));
        if plan.cases.is_empty() {
            eprintln!("nothing to retry: no case's run to retry ended in error");
            return Ok(None);
        }
        errored
    } else {
        Default::default()
    };
    let key = execution_key(args, &path);
    if args.enqueue && key.is_none() {
        return Err("--enqueue needs the execution's key, for workers to find it: set AGENTEST_EXECUTION (or run on a CI whose run id names it, with a PostgreSQL store)".into());
    }
    // A new execution of this process's own: nobody joins it but a later --resume.
    let exclusive = key.is_none() && !args.resume && args.worker.is_none() && !args.enqueue;
    let info = ExecutionInfo {
        command: crate::util::shown_args(std::env::args()),
        // A folder or file as an absolute path, for `agentest runs retry`.
        root: match input {
            Input::Dir(p) | Input::File(p) => std::path::absolute(p)
                .unwrap_or_else(|_| p.clone())
                .display()
                .to_string(),
            Input::Message(_) | Input::Generator(_) => plan.label.clone(),
        },
        key,
        nextest_run_id: None,
        lease: execution.store_lease(),
        git_from: plan.root.clone(),
        exclusive,
        ci_run: settings::get().execution.ci.clone(),
        ci_branch: settings::get().execution.ci_branch.clone(),
    };
    // A worker joins an execution planned already: it queues nothing.
    let cases: Vec<&Loaded> = match args.worker {
        Some(_) => Vec::new(),
        None => plan.cases.iter().collect(),
    };
    let resume = present.filter(|_| args.resume);
    let resumed = execution
        .open_store(
            &path,
            &info,
            StorePlan {
                cases: &cases,
                resume,
                retry_of: &retry_of,
                repeats: Vec::new(),
            },
            args.enqueue,
        )
        .map_err(|e| e.to_string())?;
    let gone: Vec<&str> = resumed.gone.iter().map(String::as_str).collect();
    left_out(
        &gone,
        "that had ended is left out of this report",
        "that had ended are left out of this report",
    );
    Ok(Some(resumed))
}

/// What running the cases left for the end of the run.
struct Ran {
    /// The agent the header named.
    agent: String,
    /// The run's label (the suites, the message).
    label: String,
    /// How the scheduler stopped.
    ending: crate::run::scheduler::Ending,
    /// The failures the console lists at the end (each a trial and what failed).
    failed: Vec<(String, String)>,
    /// What a reporter agent is given: every case's record, kept ones included.
    reported: Vec<crate::record::CaseReport>,
    /// When the cases began.
    started: Instant,
    /// The console's output.
    out: std::io::StdoutLock<'static>,
}

/// Prints the header, the kept cases of a resumed execution and every case as it ends
/// (in trial order), while the scheduler runs what did not end before.
fn run(
    execution: &Execution,
    args: &TestArgs,
    config: &Config,
    mut plan: Plan,
    resumed: Resumed,
) -> Ran {
    let total = plan.cases.len();
    // Processes that share an execution by its key wait for each other's cases.
    let shared = execution
        .store_address()
        .ok()
        .flatten()
        .and_then(|a| execution_key(args, &a))
        .is_some();
    let scheduler = execution
        .scheduler(args.fail_fast)
        .waiting_for_others(shared);
    let style = Style {
        color: use_color(args.color),
        verbose: args.verbose,
        qualified: plan.qualified,
        compact: !args.verbose && (args.compact || total > console::COMPACT_ABOVE),
    };
    let agent = header_agent(execution.engine(), &plan.cases);
    let (kept, to_run) = kept_and_to_run(&mut plan, resumed.ended);
    let mut out = std::io::stdout().lock();
    let _ = write!(
        out,
        "{}",
        console::header(&agent, &config.label(), &plan.label, total)
    );

    let mut printer = console::Console::new(style);
    let mut failed = Vec::new();
    let mut reported: Vec<crate::record::CaseReport> = Vec::new();
    if args.reporter.is_some() {
        reported.extend(kept.iter().cloned());
    }
    let recorder = execution.recorder();
    if args.resume {
        let again = match resumed.stale.len() {
            0 => String::new(),
            n => format!(" ({n} more had ended but changed since, and run again)"),
        };
        let _ = writeln!(
            out,
            "ℹ Resumed: execution {}, {} of {total} cases had ended and are kept{again}; {} to run\n",
            recorder.execution().unwrap_or_default(),
            kept.len(),
            to_run.len()
        );
        for r in &kept {
            failed.extend(console::failure_line(r));
            let _ = write!(out, "{}", printer.case(r));
        }
    }
    let _ = out.flush();

    let started = Instant::now();
    let progress = Progress::new(to_run.len());
    let ending = runtime().block_on(scheduler.run_all(to_run, |report| {
        failed.extend(console::failure_line(report));
        if args.reporter.is_some() {
            reported.push(report.clone());
        }
        progress.clear();
        let _ = write!(out, "{}", printer.case(report));
        let _ = out.flush();
        progress.show(recorder);
    }));
    progress.clear();
    let label = plan.label;
    Ran {
        agent,
        label,
        ending,
        failed,
        reported,
        started,
        out,
    }
}

/// A worker's run: the header, then batch after batch of the execution's queued runs
/// claimed from the store (see [`super::queue::drain`]), each case printed as it ends.
/// The plan is read once: a claimed run is found in it by its trial.
fn work(
    execution: &Execution,
    args: &TestArgs,
    config: &Config,
    plan: Plan,
    spec: &super::queue::Spec,
) -> Result<Ran, String> {
    let scheduler = execution.scheduler(false);
    let style = Style {
        color: use_color(args.color),
        verbose: args.verbose,
        qualified: plan.qualified,
        compact: !args.verbose,
    };
    let agent = header_agent(execution.engine(), &plan.cases);
    let mut out = std::io::stdout().lock();
    let header = console::header(&agent, &config.label(), &plan.label, plan.cases.len());
    let _ = write!(out, "{header}");
    let mut printer = console::Console::new(style);
    let mut failed = Vec::new();
    // Shared: a case's repeats may be claimed in the same batch.
    let by_trial: HashMap<String, std::sync::Arc<Loaded>> = plan
        .cases
        .into_iter()
        .map(|l| (l.trial.clone(), std::sync::Arc::new(l)))
        .collect();
    let recorder = execution.recorder();
    let started = Instant::now();
    let mut ending = crate::run::scheduler::Ending::default();
    let address = execution
        .store_address()
        .map_err(|e| e.to_string())?
        .ok_or("agentest worker needs the run store, which is off (AGENTEST_STORE=off)")?;
    let id = recorder.execution().unwrap_or_default();
    let mut plans: HashMap<String, Result<crate::run::repeats::Plan, String>> = HashMap::new();
    super::queue::drain(&address, id, spec, execution.store_lease(), |work| {
        let (known, missing): (Vec<_>, Vec<_>) =
            work.iter().partition(|w| by_trial.contains_key(&w.trial));
        let (repeats, whole): (Vec<_>, Vec<_>) =
            known.into_iter().partition(|w| w.repeat.is_some());
        let mut show = |report: &crate::record::CaseReport| {
            failed.extend(console::failure_line(report));
            let _ = write!(out, "{}", printer.case(report));
            let _ = out.flush();
        };
        if !repeats.is_empty() {
            let engine = execution.engine();
            let runs = repeats
                .iter()
                .filter_map(|w| {
                    let l = by_trial.get(&w.trial)?;
                    // One plan per case in this worker: its repeats here share the
                    // case's budget meter.
                    let plan = plans
                        .entry(w.trial.clone())
                        .or_insert_with(|| engine.plan(l).map_err(|e| e.to_string()))
                        .clone();
                    Some((l.clone(), plan, w.repeat?))
                })
                .collect();
            ending = runtime().block_on(scheduler.run_repeats(runs, &mut show));
        }
        if ending.interrupted.is_none() && !whole.is_empty() {
            let trials: Vec<String> = whole.iter().map(|w| w.trial.clone()).collect();
            let cases: Vec<Loaded> = whole
                .iter()
                .map(|w| Loaded::clone(&by_trial[&w.trial]))
                .collect();
            recorder.preclaimed(&trials);
            ending = runtime().block_on(scheduler.run_all(cases, &mut show));
        }
        if ending.interrupted.is_some() {
            return None;
        }
        let mut missing: Vec<String> = missing.into_iter().map(|w| w.trial.clone()).collect();
        missing.dedup();
        Some(missing)
    })?;
    Ok(Ran {
        agent,
        label: plan.label,
        ending,
        failed,
        reported: Vec::new(),
        started,
        out,
    })
}

/// The runs of a resumed execution that ended (`kept`, in trial order, as if they had
/// just run), and the cases still to run, moved out of `plan`, not copied: on a large
/// suite a second copy of every case is most of the run's memory.
fn kept_and_to_run(
    plan: &mut Plan,
    mut kept: Vec<crate::record::CaseReport>,
) -> (Vec<crate::record::CaseReport>, Vec<Loaded>) {
    if !kept.is_empty() {
        let order: HashMap<&str, usize> = plan
            .cases
            .iter()
            .enumerate()
            .map(|(i, l)| (l.trial.as_str(), i))
            .collect();
        kept.sort_by_key(|r| order.get(r.trial.as_str()).copied().unwrap_or(usize::MAX));
    }
    let ended: std::collections::HashSet<&str> = kept.iter().map(|r| r.trial.as_str()).collect();
    let to_run: Vec<Loaded> = std::mem::take(&mut plan.cases)
        .into_iter()
        .filter(|l| !ended.contains(l.trial.as_str()))
        .collect();
    (kept, to_run)
}

/// The end of a run: the execution finished (environments, the store), the summary and
/// the failures printed, the report written (by a reporter agent with `-r`), and the
/// exit code: what a signal says, else 0 when everything passed, 2 when the store or
/// the report lost something, else 1.
fn conclude(
    execution: &Execution,
    args: &TestArgs,
    ran: Ran,
    first_suite: &std::path::Path,
) -> Result<ExitCode, String> {
    let Ran {
        agent,
        label,
        ending,
        failed,
        reported,
        started,
        mut out,
    } = ran;
    // The environment folders of the last cases are removed in the background.
    // Said after the summary, and the run's end: what the store lost is an error.
    let unrecorded = execution.finish(started.elapsed().as_millis() as u64).err();
    let recorder = execution.recorder();
    let mut summary = recorder.summary();
    summary.duration_ms = started.elapsed().as_millis() as u64;
    summary.stopped_early = ending.stopped;
    summary.interrupted = ending.interrupted.is_some();
    summary.signal = ending.interrupted.map(|s| s.name().to_string());
    summary.over_budget = ending.over_budget;
    summary.max_simulator_blame = execution.engine().max_simulator_blame(first_suite);
    let mut run = RunInfo::new(&agent, &label, crate::util::shown_args(std::env::args()));
    run.duration_ms = summary.duration_ms;
    // A report that could not be written is the run's error (exit 2), said after the
    // console has shown every case, and never announced as written.
    let report_written = recorder.finish(&run, &summary);
    let _ = write!(out, "{}", console::summary(&summary));
    let _ = write!(out, "{}", console::failures(&failed));
    let _ = out.flush();
    if let (Some(name), Some(output)) = (&args.reporter, &args.output) {
        let request = crate::run::reporter::ReportRequest {
            name,
            suite: first_suite,
            output,
            run: &run,
            summary: &summary,
            cases: &reported,
            verbose: args.verbose,
        };
        let text = runtime()
            .block_on(execution.engine().report_with(&request))
            .map_err(|e| format!("the report was not written: {e}"))?;
        crate::util::write_atomically(output, &text)
            .map_err(|e| format!("failed to write the report {}: {e}", output.display()))?;
    }
    report_written.map_err(|e| e.to_string())?;
    if let Some(path) = &args.output {
        let by = match &args.reporter {
            Some(name) => format!(" by the reporter `{name}`"),
            None => String::new(),
        };
        let cases = count(summary.total, "case", "cases");
        eprintln!("wrote {}{by} ({cases})", path.display());
    }
    if let Some(e) = unrecorded {
        eprintln!("error: {e}");
        return Ok(ExitCode::from(2));
    }
    Ok(if let Some(signal) = ending.interrupted {
        // The shell's convention for a program a signal stopped: 130, 143, 129.
        ExitCode::from(signal.exit_code())
    } else if summary.ok() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// A JSONL report written into the suites folder is skipped by this run, but any
/// other run (`cargo test`) finds it there: say so while it can still be moved.
fn warn_if_inside(root: &std::path::Path, report: &std::path::Path) {
    let is_jsonl = report.extension().is_some_and(|e| e == "jsonl");
    let parent = report
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(std::path::Path::new("."));
    // Resolved, not only made absolute: `-i . -o ../x.jsonl` is outside `.`.
    if is_jsonl && resolved(parent).starts_with(resolved(root)) {
        eprintln!(
            "warning: the report {} is inside the suites folder {}: this run skips it, but other runs (cargo test) will find it there and say it is not a suite; write reports elsewhere",
            report.display(),
            root.display()
        );
    }
}

/// `path` as the file system resolves it: canonical when it exists, else absolute with
/// `.` and `..` taken out lexically (a report's folder may not exist yet).
fn resolved(path: &std::path::Path) -> std::path::PathBuf {
    if let Ok(p) = std::fs::canonicalize(path) {
        return p;
    }
    let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let mut out = std::path::PathBuf::new();
    for part in absolute.components() {
        match part {
            std::path::Component::ParentDir => {
                out.pop();
            }
            std::path::Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// Says once, on stderr, which stored runs (`trials`) are left out because their case
/// is no longer in the suites; `one` and `many` say what happens to them.
fn left_out(trials: &[&str], one: &str, many: &str) {
    const SHOWN: usize = 10;
    let (n, what) = match trials.len() {
        0 => return,
        1 => (1, one),
        n => (n, many),
    };
    let mut names = trials.to_vec();
    names.sort_unstable();
    let more = match n.saturating_sub(SHOWN) {
        0 => String::new(),
        m => format!(" and {m} more"),
    };
    eprintln!(
        "note: {n} stored {} {what}: {} no longer in the suites: {}{more}",
        plural(n as u64, "run", "runs"),
        plural(n as u64, "its case is", "their cases are"),
        names[..n.min(SHOWN)].join(", ")
    );
}

/// The runs to retry (see [`crate::record::store::errored`]), by trial.
fn errored_runs(
    address: &crate::util::StoreAddress,
    execution: Option<i64>,
) -> Result<std::collections::HashMap<String, i64>, String> {
    if let Some(path) = address.file().filter(|p| !p.is_file()) {
        return Err(format!("no run store at {} to retry from", path.display()));
    }
    let mut db = crate::record::store::open(address).map_err(|e| e.to_string())?;
    db.errored(execution)
        .map_err(|e| format!("failed to read the run store {address}: {e}"))
}

/// The agent the header names: the run's agent, or, when every case names its own
/// agent (and no `-n` overrides them), those agents.
fn header_agent(engine: &Engine, cases: &[Loaded]) -> String {
    let named: Option<std::collections::BTreeSet<&str>> = cases
        .iter()
        .filter_map(|l| l.entry.as_ref().ok())
        .map(|c| c.agent.as_deref())
        .collect();
    match named {
        Some(names) if engine.options.agent_name.is_none() && !names.is_empty() => {
            names.into_iter().collect::<Vec<_>>().join(", ")
        }
        _ => engine.contexts.describe_agent(&cases[0].file),
    }
}

/// The run's options: the command line, else the environment.
fn options(args: &TestArgs, interactive: bool) -> RunOptions {
    let settings = settings::get();
    RunOptions {
        agent_name: args.name.clone().or_else(|| settings.agent.clone()),
        timeout: args.timeout,
        run_skipped: false,
        live: args.live || settings.live,
        simulator: args
            .simulator
            .clone()
            .or_else(|| settings.simulator.clone()),
        people: People {
            forced: interactive,
            skip: args.skip_interactive,
            on_missing_input: match args.on_missing_input {
                MissingInput::Skip => OnMissing::Skip,
                MissingInput::Fail => OnMissing::Fail,
            },
        },
        update: settings.update,
        keep_env: args.keep_env || settings.keep_env,
        runs: args.runs.or(settings.runs),
        overrides: crate::run::options::Overrides {
            connector: args.connector.clone(),
            user: args.user.clone(),
            team: args.team.clone(),
        },
    }
}

/// A progress line on stderr while cases run, on a terminal; cleared before each block
/// of the console tree so the two never mix.
struct Progress {
    on: bool,
    total: usize,
}

impl Progress {
    fn new(total: usize) -> Progress {
        Progress {
            on: std::io::stderr().is_terminal() && std::io::stdout().is_terminal(),
            total,
        }
    }

    fn show(&self, recorder: &Recorder) {
        if self.on {
            let s = recorder.summary();
            let mut err = std::io::stderr().lock();
            let _ = write!(
                err,
                "\r\x1b[2K  running {}/{} cases: {} passed, {} failed, {} {}",
                s.total,
                self.total,
                s.passed,
                s.failed,
                s.errors,
                plural(s.errors, "error", "errors")
            );
            let _ = err.flush();
        }
    }

    fn clear(&self) {
        if self.on {
            let mut err = std::io::stderr().lock();
            let _ = write!(err, "\r\x1b[2K");
            let _ = err.flush();
        }
    }
}

/// `--dry-run`: one line per case (trial name and mode, or what is wrong with it), run
/// nothing. Without a config the cases are only parsed and validated (a user linting
/// JSONL before writing an agent); with one, every name they use must resolve too.
/// With `-o FILE.jsonl`, the valid cases are written there as one suite.
fn dry_run(
    engine: &Engine,
    plan: &Plan,
    configured: bool,
    output: Option<&std::path::Path>,
) -> Result<ExitCode, String> {
    if let Some(path) = output {
        if path.extension().and_then(|e| e.to_str()) != Some("jsonl") {
            return Err(format!(
                "--dry-run -o writes the validated cases as JSON Lines; give a .jsonl path instead of {}",
                path.display()
            ));
        }
    }
    if configured {
        engine
            .contexts
            .check_setup(&plan.cases)
            .map_err(|e| e.to_string())?;
    } else {
        eprintln!(
            "note: no agentest.toml found; the cases were parsed and validated, but the agents, hooks, scripts and model endpoints they name were not checked"
        );
    }
    let lines = dry_lines(engine, plan, configured);
    let width = console::name_width(lines.iter().map(|(t, _)| t.as_str()));
    let mut out = std::io::stdout().lock();
    let mut broken = 0;
    for (trial, verdict) in &lines {
        let _ = match verdict {
            Ok(mode) => writeln!(out, "{trial:<width$}  {mode}"),
            Err(e) => {
                broken += 1;
                let pad = " ".repeat(width + 2);
                let e = e.replace('\n', &format!("\n{pad}       "));
                writeln!(out, "{trial:<width$}  error: {e}")
            }
        };
    }
    let cases = count(lines.len() as u64, "case", "cases");
    let _ = writeln!(out, "\n{cases}, {broken} with errors");
    let _ = out.flush();
    if let Some(path) = output {
        write_valid(plan, &lines, path)?;
    }
    Ok(if broken > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// Each case's line of a dry run: its trial name, and its mode or what is wrong with it.
fn dry_lines(
    engine: &Engine,
    plan: &Plan,
    configured: bool,
) -> Vec<(String, Result<String, String>)> {
    let simulator = engine.options.simulator.as_deref();
    plan.cases
        .iter()
        .map(|l| {
            let verdict = match &l.entry {
                Err(e) => Err(e.to_string()),
                Ok(c) => {
                    let problems = match engine.contexts.of(&l.file) {
                        Ok(ctx) if configured => ctx.unresolved(c, simulator),
                        Ok(_) => Vec::new(),
                        Err(e) => vec![e.to_string()],
                    };
                    if problems.is_empty() {
                        let skip = if c.skip { "  (skip)" } else { "" };
                        Ok(format!("{}{skip}", c.mode.name()))
                    } else {
                        Err(problems.join("\n"))
                    }
                }
            };
            (l.trial.clone(), verdict)
        })
        .collect()
}

/// `--dry-run -o FILE.jsonl`: the valid cases, written as one suite.
fn write_valid(
    plan: &Plan,
    lines: &[(String, Result<String, String>)],
    path: &std::path::Path,
) -> Result<(), String> {
    let valid: Vec<&Loaded> = plan
        .cases
        .iter()
        .zip(lines)
        .filter(|(_, (_, v))| v.is_ok())
        .map(|(l, _)| l)
        .collect();
    let text = normal_form(&valid);
    crate::util::write_atomically(path, &text)
        .map_err(|e| format!("failed to write {}: {e}", path.display()))?;
    eprintln!(
        "wrote {} ({})",
        path.display(),
        count(valid.len() as u64, "case", "cases")
    );
    Ok(())
}

/// The cases as one suite file: each as written (keys in their order), on one line,
/// without the comments and blank lines around it.
/// Cases from several suites get ids `SUITE/ID`, so they stay unique and say where
/// they came from.
fn normal_form(cases: &[&Loaded]) -> String {
    let suites: std::collections::BTreeSet<&str> = cases.iter().map(|l| l.suite.as_str()).collect();
    let mut text = String::new();
    for l in cases {
        let Ok(case) = &l.entry else { continue };
        let mut value = case.raw.value();
        if suites.len() > 1 {
            if let Some(obj) = value.as_object_mut() {
                obj.insert("id".into(), format!("{}/{}", l.suite, case.id).into());
            }
        }
        text.push_str(&value.to_string());
        text.push('\n');
    }
    text
}
