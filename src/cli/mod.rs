//! The `agentest` command line: `agentest test -i <file | dir | "a message">`.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Parser, Subcommand, ValueEnum};

use crate::util::StoreAddress;

mod calibrate;
mod commands;
pub(crate) mod init;
mod locate;
mod overwrite;
mod queue;
mod rerun;
mod runs;
mod store;
mod test;
mod view;
mod worker;

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
    /// The config file to use instead of the agentest.toml found from the suites' folder
    /// (also AGENTEST_CONFIG).
    #[arg(long = "config", value_name = "PATH", global = true)]
    config: Option<PathBuf>,
}

#[derive(Subcommand)]
enum Command {
    /// Run test cases against an agent.
    Test(Box<TestArgs>),
    /// Write a starter project: a ten-line agent (agent.py), agent-tests/agentest.toml
    /// and a smoke suite; in a Rust crate also tests/agent_tests.rs.
    Init(InitArgs),
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
    /// ElizaOS's scenario command: `agentest scenario run FILE [--live] [--env-file PATH]`.
    Scenario(ScenarioArgs),
    /// What the run store holds: `runs list`, `runs show ID`, `runs delete`.
    Runs(runs::RunsArgs),
    /// Run one stored result again as it ran (its seed, offline from its cassette) and
    /// say whether its verdict holds: exit 0 when it does, 1 when it changed.
    Rerun(rerun::RerunArgs),
    /// Serve the run store read only, on loopback: pages of executions, runs, cases,
    /// reports and comparisons, and a JSON API under /api/.
    View(view::ViewArgs),
    /// Measure how far a `[judges.NAME]` can be trusted on a labelled set: accuracy,
    /// Cohen's κ, flip rate across runs, the items it got wrong; kept in the run store
    /// for `[run] require_calibrated_judges`. Exit 1 when it falls short of its bar.
    Calibrate(calibrate::CalibrateArgs),
    /// Operate the run store: `store migrate`, `store check` (reachable, schema
    /// version, counts).
    Store(store::StoreArgs),
    /// Run the queued runs of an execution that `agentest test --enqueue` planned, with
    /// any number of workers on other machines, until every run of it ended.
    Worker(worker::WorkerArgs),
    /// Convert another tool's test files into an agentest suite you can edit:
    /// `agentest import tau2 tasks.json -o suite.jsonl`.
    Import(ImportArgs),
}

#[derive(clap::Args)]
struct ImportArgs {
    #[command(subcommand)]
    format: ImportFormat,
}

#[derive(Subcommand)]
enum ImportFormat {
    /// A tau2-bench tasks file (a JSON array of tasks, or one task): one dynamic case
    /// per task, the same cases `-i tasks.json` reads.
    Tau2(ImportTau2Args),
}

#[derive(clap::Args)]
struct ImportTau2Args {
    /// The tasks file.
    file: PathBuf,
    /// The suite to write (JSON Lines).
    #[arg(short = 'o', long = "output")]
    output: PathBuf,
}

#[derive(clap::Args)]
struct ScenarioArgs {
    #[command(subcommand)]
    command: ScenarioCommand,
}

impl TestArgs {
    /// `agentest test -i INPUT` with every other flag at its default.
    fn plain(input: String) -> TestArgs {
        TestArgs {
            input,
            name: None,
            output: None,
            verbose: false,
            run: None,
            dry_run: false,
            fail_fast: false,
            timeout: None,
            parallel: None,
            runs: None,
            compact: false,
            keep_env: false,
            resume: false,
            retry_errors: false,
            enqueue: false,
            worker: None,
            retry_execution: None,
            store: None,
            color: ColorChoice::Auto,
            message: false,
            live: false,
            simulator: None,
            interactive: false,
            skip_interactive: false,
            on_missing_input: MissingInput::Skip,
            connector: None,
            user: None,
            team: None,
            reporter: None,
        }
    }
}

#[derive(Subcommand)]
enum ScenarioCommand {
    /// Run one scenario (or matrix) file, as `elizaos scenario run` does: exit 0 when it
    /// passes, 1 when it fails.
    Run(ScenarioRunArgs),
}

#[derive(clap::Args)]
struct ScenarioRunArgs {
    /// The `*.scenario.yaml` (or `*.matrix.yaml`) file.
    file: PathBuf,
    /// Live mode: `setup.mocks` are ignored (not sent to agents, not answering tool
    /// calls) and `openai` agents call their real `tools_url`.
    #[arg(long = "live")]
    live: bool,
    /// A `.env` file of `KEY=VALUE` lines loaded into the environment first (API keys,
    /// `${VAR}`s of the config); variables already set win.
    #[arg(long = "env-file", value_name = "PATH")]
    env_file: Option<PathBuf>,
    /// Colour the console output.
    #[arg(long = "color", value_enum, default_value = "auto")]
    color: ColorChoice,
}

#[derive(clap::Args)]
struct InitArgs {
    /// Where to write (default: the current folder).
    dir: Option<PathBuf>,
    /// Replace files that already exist.
    #[arg(long = "force")]
    force: bool,
    /// The kind of agent the config tests: `process` writes a ten-line agent that runs
    /// green at once; the others write that kind's table, to point at your agent.
    #[arg(long, value_enum, default_value = "process")]
    kind: init::Kind,
}

#[derive(clap::Args)]
struct ReportArgs {
    /// A JSONL report, or a folder of them.
    #[arg(required_unless_present = "execution")]
    input: Option<PathBuf>,
    /// Render an execution from the run store instead (its ended runs): its id, or its
    /// key (AGENTEST_EXECUTION, the CI's run).
    #[arg(long, conflicts_with = "input")]
    execution: Option<String>,
    /// The run store, with --execution (default: as `agentest test` finds it).
    // Read as text and parsed later: clap's own error would print a URL's password.
    #[arg(long, requires = "execution")]
    store: Option<String>,
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
            let default = PathBuf::from(crate::config::SUITES_DIR);
            if default.is_dir() {
                default
            } else {
                PathBuf::from(".")
            }
        })
    }
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum MissingInput {
    Skip,
    Fail,
}

#[derive(Clone, Copy, ValueEnum)]
pub(crate) enum ColorChoice {
    Auto,
    Always,
    Never,
}

/// The everyday flags come first in `--help`; the rest are under "Less common".
#[derive(clap::Args)]
#[command(after_help = "Examples:
  agentest test -i agent-tests                    every suite under agent-tests/
  agentest test -i agent-tests/smoke.jsonl -v     one suite, every reply shown
  agentest test -i \"Hello there\"                  one message to the agent
  agentest test -i agent-tests --run 'smoke::'    only trials matching a regex
  agentest test -i agent-tests -o report.html     also write a report (.jsonl .json .md .xml .html)
  agentest test -i agent-tests --dry-run          check the cases, run nothing")]
struct TestArgs {
    /// A suite file (.jsonl, .scenario.yaml, .matrix.yaml), a directory of them, or a
    /// message to send.
    #[arg(short = 'i', long = "input")]
    input: String,
    /// The agent to test: a name from [agents.NAME] in agentest.toml (default: [agent]).
    #[arg(short = 'n', long = "name")]
    name: Option<String>,
    /// Write a report; the extension picks the format: .jsonl (one object per case as it
    /// ends, then a summary line), .json, .md, .xml (JUnit) or .html. With --dry-run, a
    /// .jsonl of the validated cases. Without -o no report file is written (Yao writes
    /// output-TIMESTAMP.jsonl beside the input); the run store keeps every run, and
    /// `agentest report --execution N -o FILE` writes one afterwards.
    #[arg(short = 'o', long = "output")]
    output: Option<PathBuf>,
    /// Override the connector of the agent under test: sent as `options.connector` in
    /// every request; an `openai` agent calls the [llms.NAME] it names instead.
    #[arg(short = 'c', long = "connector", value_name = "NAME", value_parser = clap::builder::NonEmptyStringValueParser::new())]
    connector: Option<String>,
    /// The test user, sent as `metadata.user` in every request (over the cases' `user`).
    #[arg(short = 'u', long = "user", value_name = "ID", value_parser = clap::builder::NonEmptyStringValueParser::new())]
    user: Option<String>,
    /// The test team, sent as `metadata.team` in every request (over the cases' `team`).
    #[arg(short = 't', long = "team", value_name = "ID", value_parser = clap::builder::NonEmptyStringValueParser::new())]
    team: Option<String>,
    /// A reporter agent ([agents.NAME]) that writes the report: it receives
    /// `{report: {summary, results, metadata}, format, options}` and its answer is
    /// written to -o (required), whose extension names the format.
    #[arg(
        short = 'r',
        long = "reporter",
        value_name = "NAME",
        requires = "output",
        conflicts_with = "dry_run",
        value_parser = clap::builder::NonEmptyStringValueParser::new()
    )]
    reporter: Option<String>,
    /// Show every case's tree with every reply and every assertion.
    #[arg(short = 'v', long = "verbose", conflicts_with = "compact")]
    verbose: bool,
    /// Only run cases whose trial name (suite::id) matches this regex.
    #[arg(long = "run", value_name = "REGEX")]
    run: Option<String>,
    /// Parse and validate every case (and, with a config, every name they use), print
    /// one line per case, run nothing.
    #[arg(long = "dry-run")]
    dry_run: bool,
    /// Stop starting cases after the first one fails.
    #[arg(long = "fail-fast")]
    fail_fast: bool,
    /// Timeout for cases that set none, like 30s or 5m (default: [run] timeout, else 5m).
    #[arg(long = "timeout", value_parser = crate::util::parse_timeout)]
    timeout: Option<Duration>,
    /// Cases in flight at once (default: [run] concurrency, else 32).
    #[arg(long = "parallel", value_name = "N", value_parser = clap::value_parser!(u32).range(1..=10_000))]
    parallel: Option<u32>,
    /// Run each case N times, as independent conversations; its verdict comes from all
    /// of them through its gate (default: all must pass). A case's own `runs` wins;
    /// default: AGENTEST_RUNS, else [run] runs, else 1.
    #[arg(long = "runs", value_name = "N", value_parser = clap::value_parser!(u32).range(1..=i64::from(crate::case::MAX_RUNS)))]
    runs: Option<u32>,
    /// One line per passing case (the default above 20 cases); failures keep their tree.
    #[arg(long = "compact", help_heading = "Less common")]
    compact: bool,
    /// Keep each ElizaOS scenario's environment folder after its run (their paths are
    /// said on stderr; also AGENTEST_KEEP_ENV=1).
    #[arg(long = "keep-env", help_heading = "Less common")]
    keep_env: bool,
    /// Continue the last execution in the run store that did not finish (Ctrl-C, a
    /// crash, a cancelled CI job): its ended runs are kept and reported, the rest run.
    #[arg(long = "resume", help_heading = "Less common")]
    resume: bool,
    /// Run only the cases whose last run in the run store was an error (a crash, a
    /// timeout, a judge with no verdict), as new runs linked to those.
    #[arg(
        long = "retry-errors",
        help_heading = "Less common",
        conflicts_with = "resume"
    )]
    retry_errors: bool,
    /// Plan every run into the run store's execution and run nothing: workers
    /// (`agentest worker --execution KEY`, on any machine) run them. Needs the
    /// execution's key: AGENTEST_EXECUTION, or the CI's run with a PostgreSQL store.
    #[arg(
        long = "enqueue",
        help_heading = "Less common",
        conflicts_with_all = ["dry_run", "resume", "retry_errors"]
    )]
    enqueue: bool,
    /// Set by `agentest worker`: run the execution's queued runs instead of the plan.
    #[arg(skip)]
    worker: Option<queue::Spec>,
    /// Set by `agentest runs retry`: the execution whose error runs to run again.
    #[arg(skip)]
    retry_execution: Option<i64>,
    /// Set by `agentest runs retry --store FILE`: the store, instead of finding it.
    #[arg(skip)]
    store: Option<StoreAddress>,
    /// Colour the console output.
    #[arg(
        long = "color",
        value_enum,
        default_value = "auto",
        help_heading = "Less common"
    )]
    color: ColorChoice,
    /// Send the input to the agent as a message, even when it is one word.
    #[arg(long = "message", help_heading = "Less common")]
    message: bool,
    /// Live mode: `openai` agents send tool calls to their real `tools_url` instead of
    /// the mocks (also `AGENTEST_LIVE=1`).
    #[arg(long = "live", help_heading = "Less common")]
    live: bool,
    /// The simulator of dynamic cases that name none: a name from [agents.NAME], or
    /// `script` (also `AGENTEST_SIMULATOR`; default: the built-in simulator on [llm]).
    #[arg(long = "simulator", value_name = "NAME", help_heading = "Less common")]
    simulator: Option<String>,
    /// Ask a person (on stdin) when the agent awaits input and no scripted turn is left;
    /// in dynamic cases a person may answer instead of the simulator. Runs one case at a
    /// time. Ignored on CI.
    #[arg(
        long = "interactive",
        conflicts_with = "skip_interactive",
        help_heading = "Less common"
    )]
    interactive: bool,
    /// Never ask a person: cases that need one are skipped (or fail, see --on-missing-input).
    #[arg(long = "skip-interactive", help_heading = "Less common")]
    skip_interactive: bool,
    /// What happens to a case that needs a person when none can answer.
    #[arg(
        long = "on-missing-input",
        value_enum,
        default_value = "skip",
        help_heading = "Less common"
    )]
    on_missing_input: MissingInput,
}

/// Whether to colour stdout: `--color`, and for `auto` a terminal without `NO_COLOR`.
pub(crate) fn use_color(choice: ColorChoice) -> bool {
    match choice {
        ColorChoice::Always => true,
        ColorChoice::Never => false,
        ColorChoice::Auto => std::io::stdout().is_terminal() && !crate::settings::get().no_color,
    }
}

/// The command line as the user typed it, quoted where a shell would need it.
fn invocation() -> String {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .map(|a| {
            if a.is_empty() || a.contains(|c: char| c.is_whitespace() || c == '"' || c == '\'') {
                format!("{a:?}")
            } else {
                a
            }
        })
        .collect();
    format!("agentest {}", args.join(" "))
}

/// `scenario run --env-file`: the file's variables, set before the settings are read
/// (it may set `AGENTEST_*` variables too).
fn read_env_file(command: &Command) -> Result<(), String> {
    if let Command::Scenario(ScenarioArgs {
        command: ScenarioCommand::Run(run),
    }) = command
    {
        if let Some(path) = &run.env_file {
            return commands::load_env_file(path).map_err(|e| e.to_string());
        }
    }
    Ok(())
}

/// Runs one command.
fn dispatch(command: Command) -> Result<ExitCode, String> {
    match command {
        Command::Test(args) => test::test(*args),
        Command::Init(args) => init::init(args),
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
                .map_err(|e| e.to_string())
        }
        Command::Accept(args) => crate::record::review::accept_all(&args.root())
            .map(|_| ExitCode::SUCCESS)
            .map_err(|e| e.to_string()),
        Command::Freeze(args) => commands::freeze(args),
        Command::Import(ImportArgs {
            format: ImportFormat::Tau2(args),
        }) => commands::import_tau2(&args.file, &args.output),
        Command::Report(args) => commands::report(args),
        Command::Runs(args) => runs::runs(args),
        Command::Rerun(args) => rerun::rerun(args),
        Command::Calibrate(args) => calibrate::calibrate(args),
        Command::View(args) => view::view(args),
        Command::Worker(args) => worker::worker(args),
        Command::Store(args) => store::store(args),
        Command::Scenario(ScenarioArgs {
            command: ScenarioCommand::Run(run),
        }) => test::test(TestArgs {
            // The transcript and every evaluation, as ElizaOS prints them.
            verbose: true,
            color: run.color,
            live: run.live,
            ..TestArgs::plain(run.file.display().to_string())
        }),
    }
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
    // Hints name the command the user ran (`agentest test -i suites`).
    crate::util::invocation::set(invocation());
    // Every command reads the environment once, first; a bad value is a usage error.
    if let Err(e) = read_env_file(&cli.command) {
        eprintln!("error: {e}");
        return ExitCode::from(USAGE_ERROR);
    }
    let config = cli.config.clone();
    if let Err(e) = crate::settings::load_with(|s| {
        if let Some(path) = config {
            s.config = Some(crate::config::ConfigChoice {
                path,
                from: "--config",
            });
        }
    }) {
        eprintln!("error: {e}");
        return ExitCode::from(USAGE_ERROR);
    }
    let result = dispatch(cli.command);
    match result {
        Ok(code) => code,
        Err(e) => {
            // A reporter agent's or generator's failure may quote what a server echoed.
            eprintln!("error: {}", crate::util::scrub(&e));
            ExitCode::from(USAGE_ERROR)
        }
    }
}
