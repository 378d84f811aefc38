//! The `agentest` command line: `agentest test -i <file | dir | "a message">`.

use std::collections::{BTreeMap, HashMap};
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::{Parser, Subcommand, ValueEnum};

use crate::case::Location;
use crate::config::Config;
use crate::record::console;
use crate::record::console::Style;
use crate::record::{CaseReport, Format, ReportSink, RunInfo, Status, Summary};
use crate::run::engine::{not_run, Engine, Registry, Settings};
use crate::source::parse_case;
use crate::source::{discover_excluding, load_file, Loaded};
use crate::util::display_path;

/// Exit code for usage and config errors.
const USAGE_ERROR: u8 = 2;

#[derive(Parser)]
#[command(
    name = "agentest",
    version,
    about = "Conversation tests for AI agents",
    propagate_version = true
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run test cases against an agent.
    Test(TestArgs),
    /// Show pending golden files (`*.golden/*.new`) with their diffs; accept or reject
    /// them one by one on a terminal.
    Review(GoldenArgs),
    /// Accept every pending golden file.
    Accept(GoldenArgs),
    /// Turn the transcript of a finished run (from a JSONL report) into a static `turns`
    /// case, with what each reply established as assertions.
    Freeze(FreezeArgs),
    /// Build a report (.json, .md, .xml JUnit, .html, .jsonl) from JSONL reports: a file,
    /// or a folder of them (as nextest runs leave).
    Report(ReportArgs),
}

#[derive(clap::Args)]
struct ReportArgs {
    /// A JSONL report, or a folder of them.
    input: PathBuf,
    /// The report to write; the extension picks the format.
    #[arg(short = 'o', long = "output")]
    output: PathBuf,
}

#[derive(clap::Args)]
struct FreezeArgs {
    /// The suite file holding the case.
    #[arg(short = 'i', long = "input")]
    input: PathBuf,
    /// The case's id.
    #[arg(long = "id")]
    id: String,
    /// The JSONL report of the run (default: AGENTEST_REPORT, else [run] report).
    #[arg(long = "report")]
    report: Option<PathBuf>,
    /// Append the frozen case to the suite file instead of printing it.
    #[arg(long = "write")]
    write: bool,
}

#[derive(clap::Args)]
struct GoldenArgs {
    /// Where to look (default: agent-tests if it exists, else the current directory).
    path: Option<PathBuf>,
    /// With review: accept everything shown.
    #[arg(long = "all")]
    all: bool,
    /// Colour the diffs.
    #[arg(long = "color", value_enum, default_value = "auto")]
    color: ColorChoice,
}

impl GoldenArgs {
    fn root(&self) -> PathBuf {
        self.path.clone().unwrap_or_else(|| {
            let default = PathBuf::from("agent-tests");
            if default.is_dir() {
                default
            } else {
                PathBuf::from(".")
            }
        })
    }
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum MissingInput {
    Skip,
    Fail,
}

#[derive(Clone, Copy, ValueEnum)]
enum ColorChoice {
    Auto,
    Always,
    Never,
}

#[derive(clap::Args)]
struct TestArgs {
    /// A suite file (.jsonl), a directory of suites, or a message to send.
    #[arg(short = 'i', long = "input")]
    input: String,
    /// Live mode: `openai` agents send tool calls to their real `tools_url` instead of
    /// the mocks (also `AGENTEST_LIVE=1`).
    #[arg(long = "live")]
    live: bool,
    /// The simulator of dynamic cases that name none: a name from [agents.NAME], or
    /// `script` (also `AGENTEST_SIMULATOR`; default: the built-in simulator on [llm]).
    #[arg(long = "simulator", value_name = "NAME", env = "AGENTEST_SIMULATOR")]
    simulator: Option<String>,
    /// Ask a person (on stdin) when the agent awaits input and no scripted turn is left;
    /// in dynamic cases a person may answer instead of the simulator. Runs one case at a time.
    #[arg(long = "interactive", conflicts_with = "skip_interactive")]
    interactive: bool,
    /// Never ask a person: cases that need one are skipped (or fail, see --on-missing-input).
    #[arg(long = "skip-interactive")]
    skip_interactive: bool,
    /// What happens to a case that needs a person when none can answer.
    #[arg(long = "on-missing-input", value_enum, default_value = "skip")]
    on_missing_input: MissingInput,
    /// Send the input to the agent as a message, even when it is one word.
    #[arg(long = "message")]
    message: bool,
    /// The agent to test: a name from [agents.NAME] in agentest.toml (default: [agent]).
    #[arg(short = 'n', long = "name", env = "AGENTEST_AGENT")]
    name: Option<String>,
    /// Write a report; the extension picks the format: .jsonl (one object per case as it
    /// ends, then a summary line), .json, .md, .xml (JUnit) or .html.
    #[arg(short = 'o', long = "output")]
    output: Option<PathBuf>,
    /// Show every reply and every assertion.
    #[arg(short = 'v', long = "verbose")]
    verbose: bool,
    /// Only run cases whose trial name (suite::id) matches this regex.
    #[arg(long = "run", value_name = "REGEX")]
    run: Option<String>,
    /// Stop starting cases after the first one fails.
    #[arg(long = "fail-fast")]
    fail_fast: bool,
    /// Timeout for cases that set none, like 30s or 5m (default: [run] timeout, else 5m).
    #[arg(long = "timeout", value_parser = parse_timeout)]
    timeout: Option<Duration>,
    /// Cases in flight at once (default: [run] concurrency, else 32).
    #[arg(long = "parallel", value_name = "N", value_parser = clap::value_parser!(u32).range(1..=10_000))]
    parallel: Option<u32>,
    /// Parse and validate every case, print one line per case, run nothing.
    #[arg(long = "dry-run")]
    dry_run: bool,
    /// Colour the console output.
    #[arg(long = "color", value_enum, default_value = "auto")]
    color: ColorChoice,
}

/// Whether to colour stdout: `--color`, and for `auto` a terminal without `NO_COLOR`.
fn use_color(choice: ColorChoice) -> bool {
    match choice {
        ColorChoice::Always => true,
        ColorChoice::Never => false,
        ColorChoice::Auto => {
            std::io::stdout().is_terminal()
                && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
        }
    }
}

fn parse_timeout(s: &str) -> Result<Duration, String> {
    crate::util::parse_timeout(s)
}

/// Runs the `agentest` command line and returns its exit code:
/// 0 when every case passed, 1 when any failed or errored, 2 for usage and config errors.
pub fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() {
                ExitCode::from(USAGE_ERROR)
            } else {
                ExitCode::SUCCESS
            };
        }
    };
    let result = match cli.command {
        Command::Test(args) => test(args),
        Command::Review(args) => {
            crate::record::review::review(&args.root(), use_color(args.color), args.all)
                // Files left pending are not an error, but scripts may want to know.
                .map(|left| {
                    if left == 0 {
                        ExitCode::SUCCESS
                    } else {
                        ExitCode::from(1)
                    }
                })
        }
        Command::Accept(args) => {
            crate::record::review::accept_all(&args.root()).map(|_| ExitCode::SUCCESS)
        }
        Command::Freeze(args) => freeze(args),
        Command::Report(args) => report(args),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(USAGE_ERROR)
        }
    }
}

fn report(args: ReportArgs) -> Result<ExitCode, String> {
    let format = Format::from_path(&args.output).ok_or_else(|| {
        format!(
            "the report {} has no known extension; use one of: {}",
            args.output.display(),
            Format::EXTENSIONS.join(", ")
        )
    })?;
    let (cases, summary) = crate::record::read_reports(&args.input)?;
    let mut run = RunInfo::new(
        "(from a report)",
        args.input.display().to_string(),
        std::env::args().collect(),
    );
    run.duration_ms = summary.duration_ms;
    let text = format.render(&run, &summary, &cases);
    crate::util::write_atomically(&args.output, &text)
        .map_err(|e| format!("failed to write {}: {e}", args.output.display()))?;
    eprintln!("wrote {} ({} cases)", args.output.display(), cases.len());
    Ok(ExitCode::SUCCESS)
}

fn freeze(args: FreezeArgs) -> Result<ExitCode, String> {
    let file = &args.input;
    if !file.is_file() {
        return Err(format!("suite file `{}` does not exist", file.display()));
    }
    let root = parent_dir(file);
    let loaded = load_file(&root, file);
    let found = loaded
        .iter()
        .find(|l| matches!(&l.entry, Ok(c) if c.id == args.id));
    let Some(l) = found else {
        let ids: Vec<String> = loaded
            .iter()
            .filter_map(|l| l.entry.as_ref().ok().map(|c| c.id.clone()))
            .collect();
        return Err(format!(
            "{} has no case with id \"{}\"; its cases are: {}",
            file.display(),
            args.id,
            ids.join(", ")
        ));
    };
    let case = l.entry.as_ref().expect("matched Ok above");
    if loaded
        .iter()
        .any(|o| matches!(&o.entry, Ok(c) if c.id == format!("{}-frozen", args.id)))
    {
        return Err(format!(
            "{} already has a case \"{}-frozen\"",
            file.display(),
            args.id
        ));
    }
    let config = Config::discover(&root).map_err(|e| e.to_string())?;
    let report = args
        .report
        .clone()
        .or_else(|| std::env::var_os("AGENTEST_REPORT").filter(|p| !p.is_empty()).map(PathBuf::from))
        .or_else(|| config.file.run.report.as_ref().map(|r| config.dir.join(r)))
        .ok_or("no report to read: pass --report FILE (a JSONL report written with -o or AGENTEST_REPORT)")?;
    let record = crate::record::freeze::find_record(&report, file, &l.trial, &args.id)?;
    let frozen = crate::record::freeze::freeze(case, &record)?;
    let line = serde_json::to_string(&frozen).map_err(|e| e.to_string())?;
    if args.write {
        let mut text = std::fs::read_to_string(file)
            .map_err(|e| format!("failed to read {}: {e}", file.display()))?;
        if !text.ends_with('\n') && !text.is_empty() {
            text.push('\n');
        }
        text.push_str(&line);
        text.push('\n');
        crate::util::write_atomically(file, &text)
            .map_err(|e| format!("failed to write {}: {e}", file.display()))?;
        eprintln!("appended {}-frozen to {}", args.id, file.display());
    } else {
        println!("{line}");
    }
    Ok(ExitCode::SUCCESS)
}

/// A file's folder (`.` for a bare file name).
fn parent_dir(file: &Path) -> PathBuf {
    file.parent()
        .map(Path::to_path_buf)
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or_else(|| PathBuf::from("."))
}

/// What `-i` named.
enum Source {
    Dir(PathBuf),
    File(PathBuf),
    Message(String),
}

fn source(input: &str, force_message: bool) -> Result<Source, String> {
    if input.trim().is_empty() {
        return Err(
            "the input is empty; pass a suite file, a directory of suites, or a message".into(),
        );
    }
    if force_message {
        return Ok(Source::Message(input.to_string()));
    }
    let path = Path::new(input);
    if path.is_dir() {
        return Ok(Source::Dir(path.to_path_buf()));
    }
    if path.is_file() {
        return Ok(Source::File(path.to_path_buf()));
    }
    let looks_like_path =
        input.ends_with(".jsonl") || (!input.contains(char::is_whitespace) && input.contains('/'));
    if looks_like_path {
        return Err(format!("input `{input}` does not exist; pass a suite file, a directory of suites, or a quoted message"));
    }
    // One word that is no file is more likely a mistyped path than a message.
    if !input.trim().contains(char::is_whitespace) {
        return Err(format!(
            "input `{input}` is neither a file nor a directory; to send it to the agent as a message, add --message"
        ));
    }
    Ok(Source::Message(input.to_string()))
}

fn test(args: TestArgs) -> Result<ExitCode, String> {
    let filter = match &args.run {
        Some(r) => Some(regex::Regex::new(r).map_err(|e| format!("invalid --run regex: {e}"))?),
        None => None,
    };
    let cwd = std::env::current_dir()
        .map_err(|e| format!("failed to read the working directory: {e}"))?;
    let (root_dir, mut loaded, input_label, qualified) = match source(&args.input, args.message)? {
        Source::Dir(dir) => {
            // The report (`-o`) may be written into the suites folder; never load it.
            let exclude: Vec<PathBuf> = args.output.iter().cloned().collect();
            let files = discover_excluding(&dir, &exclude).map_err(|e| e.to_string())?;
            let loaded: Vec<Loaded> = files.iter().flat_map(|f| load_file(&dir, f)).collect();
            (
                dir.clone(),
                loaded,
                display_path(&dir).display().to_string(),
                true,
            )
        }
        Source::File(file) => {
            let root = parent_dir(&file);
            let loaded = load_file(&root, &file);
            (
                root,
                loaded,
                display_path(&file).display().to_string(),
                false,
            )
        }
        Source::Message(msg) => {
            let line = serde_json::json!({"id": "message", "input": msg}).to_string();
            let location = Location {
                file: Arc::new(PathBuf::from("(command line)")),
                line: 1,
                column: 1,
            };
            let entry = parse_case(&line, location);
            let l = Loaded {
                suite: "input".into(),
                trial: "input::message".into(),
                file: cwd.join("(command line)"),
                entry,
            };
            (
                cwd.clone(),
                vec![l],
                serde_json::Value::String(msg).to_string(),
                false,
            )
        }
    };
    loaded.sort_by(|a, b| a.trial.cmp(&b.trial));
    if let Some(f) = &filter {
        loaded.retain(|l| f.is_match(&l.trial));
    }
    if loaded.is_empty() {
        let why = if filter.is_some() {
            " matching --run"
        } else {
            ""
        };
        return Err(format!("no test cases{why} found in {}", args.input));
    }

    let config = Config::discover(&root_dir).map_err(|e| e.to_string())?;
    let settings = Settings {
        agent_name: args.name.clone(),
        timeout: args.timeout,
        run_skipped: false,
        live: args.live || crate::harness::live_from_env(),
        simulator: args.simulator.clone(),
        people: crate::run::roles::person::People {
            forced: args.interactive,
            skip: args.skip_interactive,
            fail_missing: args.on_missing_input == MissingInput::Fail,
        },
        update: crate::record::golden::UpdateMode::from_env()?,
    };
    let engine = Arc::new(Engine::new(Registry::default(), settings));
    engine.check_setup(&loaded)?;

    if args.dry_run {
        return Ok(dry_run(&loaded));
    }

    // A person answers one question at a time, in order.
    let parallel = if args.interactive {
        1
    } else {
        args.parallel
            .map(|p| p as usize)
            .or(config.file.run.concurrency)
            .unwrap_or(crate::DEFAULT_CONCURRENCY)
            .max(1)
    };
    let writer = match &args.output {
        Some(p) => Some(ReportSink::create(p, true)?),
        None => None,
    };
    let color = use_color(args.color);
    let style = Style {
        color,
        verbose: args.verbose,
        qualified,
    };

    let mut out = std::io::stdout().lock();
    let agent = engine.describe_agent(&loaded[0].file);
    let _ = write!(
        out,
        "{}",
        console::header(&agent, &input_label, loaded.len())
    );
    let _ = out.flush();

    let started = Instant::now();
    let mut summary = Summary::new();
    // On a terminal, a progress line on stderr while cases run; cleared before each
    // block of the console tree so the two never mix.
    let progress = std::io::stderr().is_terminal() && std::io::stdout().is_terminal();
    let total = loaded.len();
    let clear = |on: bool| {
        if on {
            let mut err = std::io::stderr().lock();
            let _ = write!(err, "\r\x1b[2K");
            let _ = err.flush();
        }
    };
    let stopped = crate::harness::runtime().block_on(run_all(
        engine,
        loaded,
        parallel,
        args.fail_fast,
        |report| {
            if let Some(w) = &writer {
                if let Err(e) = w.record(report) {
                    eprintln!(
                        "warning: failed to write {} to the report: {e}",
                        report.trial
                    );
                }
            }
            summary.add(report);
            if progress {
                let mut err = std::io::stderr().lock();
                let _ = write!(
                    err,
                    "\r\x1b[2K  running {}/{total} cases: {} passed, {} failed, {} errors",
                    summary.total, summary.passed, summary.failed, summary.errors
                );
                let _ = err.flush();
            }
        },
        |report| {
            clear(progress);
            let _ = write!(out, "{}", console::case_block(report, &style));
            let _ = out.flush();
        },
    ));
    clear(progress);
    summary.duration_ms = started.elapsed().as_millis() as u64;
    summary.stopped_early = stopped.stopped;
    summary.interrupted = stopped.interrupted;
    if let Some(w) = &writer {
        let mut run = RunInfo::new(&agent, &input_label, std::env::args().collect());
        run.duration_ms = summary.duration_ms;
        if let Err(e) = w.finish(&run, &summary) {
            eprintln!(
                "warning: failed to finish the report {}: {e}",
                w.path().display()
            );
        }
    }
    let _ = write!(out, "{}", console::summary(&summary));
    let _ = out.flush();
    Ok(if summary.interrupted {
        // The shell's convention for a run stopped by SIGINT.
        ExitCode::from(130)
    } else if summary.ok() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

fn dry_run(loaded: &[Loaded]) -> ExitCode {
    let width = loaded.iter().map(|l| l.trial.len()).max().unwrap_or(0);
    let mut out = std::io::stdout().lock();
    let mut broken = 0;
    for l in loaded {
        let _ = match &l.entry {
            Ok(c) => {
                let skip = if c.skip { "  (skip)" } else { "" };
                writeln!(out, "{:<width$}  {}{skip}", l.trial, c.mode.name())
            }
            Err(e) => {
                broken += 1;
                writeln!(out, "{:<width$}  error: {e}", l.trial)
            }
        };
    }
    let cases = if loaded.len() == 1 { "case" } else { "cases" };
    let _ = writeln!(out, "\n{} {cases}, {broken} failed to load", loaded.len());
    if broken > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

/// Runs every case with at most `parallel` in flight. `on_done` sees each report as it
/// finishes (for streaming reports); `in_order` sees them in trial order (for the console),
/// each as soon as every earlier one is done. Returns whether `--fail-fast` stopped the run.
async fn run_all(
    engine: Arc<Engine>,
    loaded: Vec<Loaded>,
    parallel: usize,
    fail_fast: bool,
    mut on_done: impl FnMut(&CaseReport),
    mut in_order: impl FnMut(&CaseReport),
) -> Ending {
    // Ctrl-C stops the run cleanly instead of killing agentest: registered before any
    // agent starts, so it is ours (running agents are killed as their cases are dropped).
    let mut interrupt =
        tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt()).ok();
    let semaphore = Arc::new(tokio::sync::Semaphore::new(parallel));
    let stop = Arc::new(AtomicBool::new(false));
    let stopped = stop.clone();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let total = loaded.len();
    let mut shared: Vec<Arc<Loaded>> = loaded.into_iter().map(Arc::new).collect();
    // The in-place collect keeps the old, much larger buffer otherwise.
    shared.shrink_to_fit();
    let loaded = Arc::new(shared);
    // The cases in flight, so Ctrl-C can stop them; a finished case leaves the map.
    let running = Arc::new(std::sync::Mutex::new(HashMap::<
        usize,
        tokio::task::AbortHandle,
    >::new()));
    // One dispatcher takes the permits in trial order, so cases start in that order and
    // `--fail-fast` sees a failure before it starts anything that comes after it.
    let dispatcher = {
        let (loaded, running) = (loaded.clone(), running.clone());
        tokio::spawn(async move {
            for (i, l) in loaded.iter().enumerate() {
                let Ok(permit) = semaphore.clone().acquire_owned().await else {
                    break;
                };
                let (engine, stop, tx, l) = (engine.clone(), stop.clone(), tx.clone(), l.clone());
                if stop.load(Ordering::SeqCst) {
                    let reason = "not run: --fail-fast stopped the run after a failure";
                    let _ = tx.send((i, not_run(&l, reason.into())));
                    continue;
                }
                let task = tokio::spawn(async move {
                    let report = engine.run_guarded(l).await;
                    if fail_fast
                        && matches!(
                            report.status,
                            Status::Failed | Status::Error | Status::Timeout
                        )
                    {
                        stop.store(true, Ordering::SeqCst);
                    }
                    // The permit is released only after the stop flag is set.
                    drop(permit);
                    let _ = tx.send((i, report));
                });
                running
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .insert(i, task.abort_handle());
            }
        })
    };
    let mut pending: BTreeMap<usize, CaseReport> = BTreeMap::new();
    let mut next = 0;
    let mut seen = vec![false; total];
    let mut interrupted = false;
    loop {
        let message = tokio::select! {
            m = rx.recv() => m,
            _ = async {
                match interrupt.as_mut() {
                    Some(s) => { s.recv().await; }
                    None => std::future::pending::<()>().await,
                }
            } => {
                interrupted = true;
                None
            }
        };
        let Some((i, report)) = message else { break };
        seen[i] = true;
        running.lock().unwrap_or_else(|e| e.into_inner()).remove(&i);
        on_done(&report);
        pending.insert(i, report);
        while let Some(r) = pending.remove(&next) {
            in_order(&r);
            next += 1;
        }
    }
    if interrupted {
        eprintln!("\nagentest: interrupted; stopping the running cases");
        dispatcher.abort();
        for (_, h) in running.lock().unwrap_or_else(|e| e.into_inner()).drain() {
            h.abort();
        }
        // Cases that finished meanwhile keep their results; the rest are reported as not run.
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        while let Ok((i, report)) = rx.try_recv() {
            seen[i] = true;
            on_done(&report);
            pending.insert(i, report);
        }
        for (i, l) in loaded.iter().enumerate() {
            if !seen[i] {
                let report = not_run(l, "not run: the run was interrupted (Ctrl-C)".into());
                on_done(&report);
                pending.insert(i, report);
            }
        }
        for (_, r) in std::mem::take(&mut pending) {
            in_order(&r);
        }
    }
    Ending {
        stopped: stopped.load(Ordering::SeqCst),
        interrupted,
    }
}

/// How a run ended early, if it did.
struct Ending {
    /// `--fail-fast` stopped it.
    stopped: bool,
    /// Ctrl-C stopped it.
    interrupted: bool,
}
