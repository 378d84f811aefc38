//! `cargo bench`: how close agentest runs to the physical limit.
//!
//! Every figure runs the release `agentest` binary (or the libtest harness) against an
//! HTTP agent this bench serves on 127.0.0.1, and compares the wall time, or the peak
//! memory, with its target. These are measurements, not tests: nothing here fails on
//! a slow machine; the table says which targets were met.
//!
//! ```text
//! cargo bench                      # every group (about four minutes on 2 cores)
//! cargo bench -- throughput replay # only the groups named
//! cargo bench -- kinds             # the agent kinds' throughput rows alone
//! cargo bench -- traces            # what reading an agent's traces costs a run
//! cargo bench -- store_cpu store_pg store_memory workers   # the run store's cost (issue 28)
//! cargo bench -- store_memory_100k # opt-in: the memory rows at 100,000 cases
//! AGENTEST_REALLLM_URL=http://127.0.0.1:8089/v1 cargo bench -- structured_real   # opt-in
//! cargo bench -- view_100k       # opt-in: the viewer's pages over a store of 100,000 runs
//! ```
//!
//! Groups: `startup`, `throughput`, `kinds`, `traces`, `repeats`, `replay`, `nextest`,
//! `memory`, `scenarios`, `store`, `loading`, and the run store's cost on SQLite and
//! PostgreSQL (`store_cost.rs`): `store_cpu`, `store_pg`, `store_memory`, `workers`.
//! `store_memory_100k` runs only when named exactly (about 100 s on 2 cores), as does
//! `structured_real` (`structured.rs`: each `structured_output` form's repairs and
//! errors against the real model; a few minutes).
//! The PostgreSQL rows record into a throwaway cluster the bench starts with
//! `tests/postgres/cluster.sh` under the system's temp folder and stops at its end (also
//! when a group panics); without PostgreSQL's programs they say `skipped: no PostgreSQL`.
//! Every `agentest` run records into a run store in the group's own folder (as users'
//! runs do; `store` measures what that costs). The table is printed
//! and saved to `target/agentest-bench.txt`.
//!
//! `AGENTEST_BENCH_WRAP="valgrind --tool=massif"` runs every `agentest` under that
//! tool (for profiling a missed target); `AGENTEST_BENCH_KEEP=1` keeps the generated
//! suites in `target/tmp/agentest-bench`.
//!
//! Run with `AGENTEST_BENCH_HARNESS=<suites root>`, this binary is a libtest harness
//! (`agentest::Harness`) for that root instead: the nextest figures time it as a process.

mod fixtures;
mod postgres;
mod server;
mod store_cost;
mod structured;
mod view;

use std::fmt::Write as _;
use std::io::Write as _;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use server::AgentServer;

const BIN: &str = env!("CARGO_BIN_EXE_agentest");
const HARNESS_ENV: &str = "AGENTEST_BENCH_HARNESS";
const CONCURRENCY: usize = 64;
const EXACT_RUNS: usize = 25;
const LATENCY: Duration = Duration::from_millis(100);

fn main() -> ExitCode {
    if let Some(root) = std::env::var_os(HARNESS_ENV) {
        return agentest::Harness::new(PathBuf::from(root)).run();
    }
    let args: Vec<String> = std::env::args().skip(1).collect();
    if !args.iter().any(|a| a == "--bench") {
        // `cargo test --benches` runs this binary without `--bench`: nothing to measure.
        println!("agentest benchmarks: run them with `cargo bench`");
        return ExitCode::SUCCESS;
    }
    let filters: Vec<&str> = args
        .iter()
        .filter(|a| !a.starts_with('-'))
        .map(String::as_str)
        .collect();
    let wanted = |group: &str| filters.is_empty() || filters.iter().any(|f| group.contains(f));

    let target_dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("target"));
    let work = fixtures::fresh(&Path::new(env!("CARGO_TARGET_TMPDIR")).join("agentest-bench"));
    let bench = Bench {
        server: AgentServer::start(),
        work: work.clone(),
        postgres: std::cell::OnceCell::new(),
    };

    let started = Instant::now();
    let mut rows = Vec::new();
    let mut notes = Vec::new();
    type Group = fn(&Bench, &mut Vec<String>) -> Vec<Row>;
    let groups: [(&str, Group); 15] = [
        ("throughput", throughput),
        ("kinds", kinds),
        ("traces", traces),
        ("repeats", repeats),
        ("startup", startup),
        ("replay", replay),
        ("nextest", nextest),
        ("memory", memory),
        ("scenarios", scenarios),
        ("store", store),
        ("loading", loading),
        ("store_cpu", store_cost::store_cpu),
        ("store_pg", store_cost::store_pg),
        ("store_memory", |b, notes| {
            store_cost::store_memory(b, notes, false)
        }),
        ("workers", store_cost::workers),
    ];
    // Opt-in groups: only when a filter names them exactly.
    let opt_in: [(&str, Group); 3] = [
        ("store_memory_100k", |b, notes| {
            store_cost::store_memory(b, notes, true)
        }),
        ("structured_real", structured::structured_real),
        ("view_100k", view::view_100k),
    ];
    let chosen = groups.into_iter().filter(|(name, _)| wanted(name)).chain(
        opt_in
            .into_iter()
            .filter(|(name, _)| filters.contains(name)),
    );
    for (name, group) in chosen {
        eprintln!("agentest bench: {name} ...");
        let t = Instant::now();
        rows.extend(group(&bench, &mut notes));
        eprintln!(
            "agentest bench: {name} done in {:.1} s",
            t.elapsed().as_secs_f64()
        );
    }
    let text = render(&rows, &notes, started.elapsed());
    print!("{text}");
    let _ = std::io::stdout().flush();
    let saved = target_dir.join("agentest-bench.txt");
    match std::fs::write(&saved, &text) {
        Ok(()) => eprintln!("agentest bench: saved to {}", saved.display()),
        Err(e) => eprintln!("agentest bench: failed to save {}: {e}", saved.display()),
    }
    if std::env::var_os("AGENTEST_BENCH_KEEP").is_none() {
        let _ = std::fs::remove_dir_all(&work);
    }
    ExitCode::SUCCESS
}

struct Bench {
    server: AgentServer,
    work: PathBuf,
    /// The PostgreSQL cluster, started by the first group that records into it (or why
    /// it could not start); stopped when the bench ends.
    postgres: std::cell::OnceCell<Result<postgres::Postgres, String>>,
}

impl Bench {
    /// The bench's PostgreSQL cluster, started on first use; `Err` says why there is none.
    fn postgres(&self) -> Result<&postgres::Postgres, String> {
        self.postgres
            .get_or_init(|| {
                let started = postgres::Postgres::start(Path::new(env!("CARGO_MANIFEST_DIR")));
                if let Err(why) = &started {
                    eprintln!("agentest bench: the PostgreSQL rows are skipped: {why}");
                }
                started
            })
            .as_ref()
            .map_err(Clone::clone)
    }
}

// ---------------------------------------------------------------------------------------
// Rows and the table
// ---------------------------------------------------------------------------------------

#[derive(Clone, Copy)]
enum Unit {
    Seconds,
    Millis,
    Megabytes,
    Kilobytes,
    Micros,
    /// A count (repeats, requests).
    Count,
}

impl Unit {
    fn show(self, v: f64) -> String {
        match self {
            Unit::Seconds => format!("{v:.3} s"),
            Unit::Millis => format!("{v:.1} ms"),
            Unit::Megabytes => format!("{v:.1} MB"),
            Unit::Kilobytes => format!("{v:.2} KB"),
            Unit::Micros => format!("{v:.1} µs"),
            Unit::Count => thousands(v.round() as usize),
        }
    }
}

/// What a figure is held to.
#[derive(Clone, Copy)]
enum Goal {
    /// At most `max` times an ideal wall time.
    Ideal { ideal: f64, max: f64 },
    /// Below a limit.
    Below { limit: f64 },
    /// At most `max` times a reference measurement (`what`).
    Near {
        reference: f64,
        max: f64,
        what: &'static str,
    },
    /// No target: reported only.
    Report,
}

struct Row {
    figure: String,
    unit: Unit,
    value: f64,
    goal: Goal,
    /// Connections, counts and the like, for the verdict line.
    detail: String,
    /// Why the figure is not valid (a run that failed), if it is not.
    invalid: Option<String>,
}

impl Row {
    fn ratio(&self) -> f64 {
        match self.goal {
            Goal::Ideal { ideal, .. } => self.value / ideal,
            Goal::Below { limit } => self.value / limit,
            Goal::Near { reference, .. } => self.value / reference,
            Goal::Report => f64::NAN,
        }
    }

    fn met(&self) -> bool {
        let r = self.ratio();
        match self.goal {
            Goal::Ideal { max, .. } | Goal::Near { max, .. } => r <= max,
            Goal::Below { .. } => r < 1.0,
            Goal::Report => true,
        }
    }

    fn target(&self) -> String {
        match self.goal {
            Goal::Ideal { ideal, max } => format!("≤ {max}× ideal {}", self.unit.show(ideal)),
            Goal::Below { limit } => format!("< {}", self.unit.show(limit)),
            Goal::Near {
                reference,
                max,
                what,
            } => format!("≤ {max}× {what} {}", self.unit.show(reference)),
            Goal::Report => "reported".into(),
        }
    }

    fn ratio_text(&self) -> String {
        let basis = match self.goal {
            Goal::Ideal { .. } => "ideal",
            Goal::Below { .. } => "target",
            Goal::Near { what, .. } => what,
            Goal::Report => return "-".into(),
        };
        format!("{:.2}× {basis}", self.ratio())
    }

    fn verdict(&self) -> &'static str {
        match (&self.invalid, self.met()) {
            (Some(why), _) if why.starts_with("skipped:") => "skipped",
            (Some(_), _) => "INVALID",
            (None, _) if matches!(self.goal, Goal::Report) => "reported",
            (None, true) => "met",
            (None, false) => "MISSED",
        }
    }
}

fn render(rows: &[Row], notes: &[String], took: Duration) -> String {
    let header = ["figure", "measured", "target", "ratio", "verdict"];
    let cells: Vec<[String; 5]> = rows
        .iter()
        .map(|r| {
            [
                r.figure.clone(),
                if r.value.is_nan() {
                    "-".into()
                } else {
                    r.unit.show(r.value)
                },
                r.target(),
                r.ratio_text(),
                r.verdict().to_string(),
            ]
        })
        .collect();
    let mut width = header.map(|h| h.chars().count());
    for row in &cells {
        for (w, c) in width.iter_mut().zip(row) {
            *w = (*w).max(c.chars().count());
        }
    }
    let line = |cols: [&str; 5]| {
        let mut s = String::from("|");
        for (c, w) in cols.iter().zip(width) {
            let pad = w - c.chars().count();
            let _ = write!(s, " {c}{} |", " ".repeat(pad));
        }
        s.push('\n');
        s
    };
    let mut out = String::new();
    let _ = writeln!(
        out,
        "\nagentest benchmarks ({} cores, agentest {}, {:.0} s)\n",
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        env!("CARGO_PKG_VERSION"),
        took.as_secs_f64()
    );
    out.push_str(&line(header));
    out.push_str(&line(
        width.map(|w| "-".repeat(w)).each_ref().map(String::as_str),
    ));
    for row in &cells {
        out.push_str(&line(row.each_ref().map(String::as_str)));
    }
    let _ = writeln!(out, "\nverdicts:");
    for r in rows {
        let why = match &r.invalid {
            Some(e) if e.starts_with("skipped:") => e.clone(),
            Some(e) => format!("the run failed: {e}"),
            None if matches!(r.goal, Goal::Report) => {
                format!("{}; {}", r.unit.show(r.value), r.detail)
            }
            None => format!(
                "{} is {} (target {}){}",
                r.unit.show(r.value),
                r.ratio_text(),
                r.target(),
                if r.detail.is_empty() {
                    String::new()
                } else {
                    format!("; {}", r.detail)
                }
            ),
        };
        let _ = writeln!(out, "- {:<7} {}: {why}", r.verdict(), r.figure);
    }
    if !notes.is_empty() {
        let _ = writeln!(out, "\nnotes:");
        for n in notes {
            let _ = writeln!(out, "- {n}");
        }
    }
    out
}

// ---------------------------------------------------------------------------------------
// Running a process
// ---------------------------------------------------------------------------------------

/// One finished child process.
struct Run {
    wall: Duration,
    /// The exit code; `None` when a signal ended it.
    code: Option<i32>,
    /// `ru_maxrss` from `wait4`, in KiB. On Linux it also counts the spawning process's
    /// own peak (the exec'd-over address space is folded in), so it is exact only when
    /// it exceeds [`Run::parent_hwm_kib`].
    max_rss_kib: u64,
    /// This process's own `VmHWM` when it spawned the child, in KiB.
    parent_hwm_kib: u64,
    /// The highest `VmHWM` seen polling `/proc/<pid>/status` every millisecond, in KiB
    /// (0 unless polled).
    polled_hwm_kib: u64,
    /// The child's CPU time (user and system), from `wait4`.
    cpu: Duration,
    stdout: PathBuf,
    stderr: PathBuf,
}

impl Run {
    /// The child's peak resident memory in KiB: `ru_maxrss` when it is the child's own,
    /// else the polled `VmHWM`.
    fn peak_kib(&self) -> u64 {
        if self.max_rss_kib > self.parent_hwm_kib {
            self.max_rss_kib.max(self.polled_hwm_kib)
        } else {
            self.polled_hwm_kib
        }
    }

    /// `None` when the run exited 0; else what went wrong, with the start of its output.
    fn failure(&self) -> Option<String> {
        if self.code == Some(0) {
            return None;
        }
        let tail = |p: &Path| {
            let text = std::fs::read_to_string(p).unwrap_or_default();
            let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
            lines[lines.len().saturating_sub(3)..].join(" / ")
        };
        Some(format!(
            "exit {:?}; stderr: {}; stdout: {}",
            self.code,
            tail(&self.stderr),
            tail(&self.stdout)
        ))
    }
}

/// A command with a clean agentest environment (no inherited AGENTEST_*, nextest or
/// test-thread settings).
fn command(program: &Path, cwd: &Path) -> Command {
    let mut cmd = Command::new(program);
    cmd.current_dir(cwd);
    for (key, _) in std::env::vars_os() {
        let k = key.to_string_lossy();
        if k.starts_with("AGENTEST_") || k.starts_with("NEXTEST") || k == "RUST_TEST_THREADS" {
            cmd.env_remove(&key);
        }
    }
    cmd.env("NO_COLOR", "1");
    // The run store in the figure's own folder, not in agentest's target directory.
    cmd.env("AGENTEST_STORE", cwd.join(".agentest/runs.db"));
    cmd
}

/// Runs a command to its end, stdout and stderr to files under `logs`; times it from
/// just before the spawn to the reaping, and takes its peak memory from `wait4`.
fn run(mut cmd: Command, logs: &Path, poll_memory: bool) -> Run {
    std::fs::create_dir_all(logs).expect("create the log folder");
    let stdout = logs.join("stdout.txt");
    let stderr = logs.join("stderr.txt");
    cmd.stdin(Stdio::null())
        .stdout(std::fs::File::create(&stdout).expect("create stdout.txt"))
        .stderr(std::fs::File::create(&stderr).expect("create stderr.txt"));
    let parent_hwm_kib = std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| status_kib(&s, "VmHWM:"))
        .unwrap_or(u64::MAX);
    let started = Instant::now();
    let child = cmd.spawn().expect("spawn the command");
    let pid = child.id() as libc::pid_t;
    let done = Arc::new(AtomicBool::new(false));
    let hwm = Arc::new(AtomicU64::new(0));
    let poller = poll_memory.then(|| {
        let (done, hwm) = (done.clone(), hwm.clone());
        std::thread::spawn(move || {
            let path = format!("/proc/{pid}/status");
            while !done.load(Ordering::SeqCst) {
                if let Some(kib) = std::fs::read_to_string(&path)
                    .ok()
                    .and_then(|s| status_kib(&s, "VmHWM:"))
                {
                    hwm.fetch_max(kib, Ordering::SeqCst);
                }
                std::thread::sleep(Duration::from_millis(1));
            }
        })
    });
    let mut status = 0;
    // SAFETY: an all-zero rusage is a valid value for wait4 to fill.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `pid` is our own child, not yet reaped; the pointers are to live locals.
    let reaped = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    let wall = started.elapsed();
    done.store(true, Ordering::SeqCst);
    if let Some(p) = poller {
        let _ = p.join();
    }
    drop(child);
    let code = if reaped == pid && libc::WIFEXITED(status) {
        Some(libc::WEXITSTATUS(status))
    } else {
        None
    };
    Run {
        wall,
        code,
        max_rss_kib: usage.ru_maxrss.max(0) as u64,
        parent_hwm_kib,
        polled_hwm_kib: hwm.load(Ordering::SeqCst),
        cpu: timeval(usage.ru_utime) + timeval(usage.ru_stime),
        stdout,
        stderr,
    }
}

fn timeval(t: libc::timeval) -> Duration {
    Duration::from_secs(t.tv_sec.max(0) as u64) + Duration::from_micros(t.tv_usec.max(0) as u64)
}

/// This process's CPU time so far (the bench's agent server's work, and the bench's).
fn own_cpu() -> Duration {
    // SAFETY: an all-zero rusage is a valid value for getrusage to fill.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: the pointer is to a live local.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
    timeval(usage.ru_utime) + timeval(usage.ru_stime)
}

/// The number after `key` on a line of the console summary (`Passed:  10000`).
fn console_count(out: &str, key: &str) -> Option<u64> {
    let line = out
        .lines()
        .rev()
        .find(|l| l.trim_start().starts_with(key))?;
    let rest = &line.trim_start()[key.len()..];
    rest.split_whitespace().next()?.parse().ok()
}

fn status_kib(status: &str, key: &str) -> Option<u64> {
    let line = status.lines().find(|l| l.starts_with(key))?;
    line[key.len()..].split_whitespace().next()?.parse().ok()
}

/// The `agentest` binary; `AGENTEST_BENCH_WRAP` (say `valgrind --tool=massif`) runs it
/// under a profiler instead.
fn agentest(cwd: &Path, args: &[&str]) -> Command {
    let wrap = std::env::var("AGENTEST_BENCH_WRAP").unwrap_or_default();
    let mut words = wrap.split_whitespace();
    let mut cmd = match words.next() {
        Some(tool) => {
            let mut cmd = command(Path::new(tool), cwd);
            cmd.args(words).arg(BIN);
            cmd
        }
        None => command(Path::new(BIN), cwd),
    };
    cmd.args(args);
    cmd
}

/// 10000 as `10,000`.
fn thousands(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

/// Three runs of the binary with `args` in `dir` against the bench's agent: the walls
/// in seconds, the first failure, and what the agent saw in the last run.
fn against_server(
    b: &Bench,
    dir: &Path,
    args: &[&str],
) -> (Vec<f64>, Option<String>, server::Seen) {
    let mut walls = Vec::new();
    let mut failure = None;
    let mut last = b.server.seen();
    for _ in 0..3 {
        b.server.reset();
        let r = run(agentest(dir, args), &dir.join("logs"), false);
        walls.push(r.wall.as_secs_f64());
        last = b.server.seen();
        if failure.is_none() {
            failure = r.failure();
        }
    }
    (walls, failure, last)
}

/// Why a dry run's log does not end with `<cases> cases, 0 with errors`, if it does not.
fn dry_run_failure(logs: &Path, cases: usize) -> Option<String> {
    let out = std::fs::read_to_string(logs.join("stdout.txt")).unwrap_or_default();
    let summary = out
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .trim();
    (!summary.starts_with(&format!("{cases} cases, 0 with errors")))
        .then(|| format!("unexpected summary: {summary}"))
}

/// Runs `make()` `n` times; the median wall in `unit`s, and the first failure.
fn repeat(
    n: usize,
    logs: &Path,
    unit: Unit,
    mut make: impl FnMut() -> Command,
) -> (f64, Vec<f64>, Option<String>) {
    let mut walls = Vec::with_capacity(n);
    let mut failure = None;
    for _ in 0..n {
        let r = run(make(), logs, false);
        walls.push(in_unit(r.wall, unit));
        if failure.is_none() {
            failure = r.failure();
        }
    }
    (median(walls.clone()), walls, failure)
}

fn in_unit(d: Duration, unit: Unit) -> f64 {
    match unit {
        Unit::Seconds => d.as_secs_f64(),
        Unit::Millis => d.as_secs_f64() * 1000.0,
        Unit::Megabytes | Unit::Kilobytes | Unit::Micros | Unit::Count => f64::NAN,
    }
}

fn spread(walls: &[f64], unit: Unit) -> String {
    let min = walls.iter().copied().fold(f64::INFINITY, f64::min);
    let max = walls.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    format!(
        "median of {}, min {}, max {}",
        walls.len(),
        unit.show(min),
        unit.show(max)
    )
}

// ---------------------------------------------------------------------------------------
// The groups
// ---------------------------------------------------------------------------------------

/// 1,000 single-turn, 200 five-turn static and 100 five-turn dynamic cases against an
/// agent that takes 100 ms per reply, 64 cases in flight.
fn throughput(b: &Bench, _notes: &mut Vec<String>) -> Vec<Row> {
    type Make = fn(&str, usize) -> serde_json::Value;
    let kinds: [(&str, usize, usize, Make); 3] = [
        ("1,000 single-turn cases", 1000, 1, fixtures::single),
        ("200 five-turn static cases", 200, 5, |id, _| {
            fixtures::static_turns(id, 5)
        }),
        ("100 five-turn dynamic cases", 100, 5, |id, _| {
            fixtures::dynamic(id, 5)
        }),
    ];
    let mut rows = Vec::new();
    for (i, (label, n, turns, make)) in kinds.into_iter().enumerate() {
        let dir = fixtures::fresh(&b.work.join(format!("throughput-{i}")));
        fixtures::write(
            &dir,
            "agentest.toml",
            &fixtures::http_config(&b.server.url(LATENCY)),
        );
        let cases = (0..n).map(|c| make(&format!("T{c:05}"), c));
        fixtures::write(&dir, "cases.jsonl", &fixtures::suite(cases));
        let ideal = (n.div_ceil(CONCURRENCY) * turns) as f64 * LATENCY.as_secs_f64();
        let parallel = CONCURRENCY.to_string();
        let args = [
            "test",
            "-i",
            "cases.jsonl",
            "--parallel",
            &parallel,
            "--color",
            "never",
        ];
        let (walls, failure, last) = against_server(b, &dir, &args);
        let kind = if label.contains("dynamic") {
            "a scripted simulator answers each reply; "
        } else {
            ""
        };
        rows.push(server_row(
            format!("throughput: {label}"),
            ideal,
            format!("{kind}agent latency 100 ms, --parallel {CONCURRENCY}, ideal ceil({n}/{CONCURRENCY}) × {turns} turn(s) × 100 ms"),
            (walls, failure, last),
            (n * turns) as u64,
        ));
    }
    rows
}

/// A row from runs against the bench's server (their walls, failure and what the
/// server saw): the median against `ideal`, invalid when the server did not see the
/// `expected` requests.
fn server_row(
    figure: String,
    ideal: f64,
    how: String,
    (walls, failure, last): (Vec<f64>, Option<String>, server::Seen),
    expected: u64,
) -> Row {
    let failure = failure.or_else(|| {
        (last.requests != expected).then(|| {
            format!(
                "the agent saw {} requests, expected {expected}",
                last.requests
            )
        })
    });
    Row {
        figure,
        unit: Unit::Seconds,
        value: median(walls.clone()),
        goal: Goal::Ideal { ideal, max: 1.15 },
        detail: format!(
            "{how}; {}; agent saw {} connections, {} requests, {} in flight at most",
            spread(&walls, Unit::Seconds),
            last.connections,
            last.requests,
            last.max_in_flight
        ),
        invalid: failure,
    }
}

/// One agent kind the bench's server speaks: the row's label, the server's route, the
/// kind's config for that route's URL, and the requests the agent must see for `n`
/// single-turn cases.
struct Kind {
    label: &'static str,
    route: &'static str,
    config: fn(&str) -> String,
    requests: fn(usize) -> usize,
}

/// The agent kinds other than agentest's own protocol, as `throughput`'s first row:
/// 1,000 single-turn cases against the 100 ms agent, 64 in flight, each kind speaking
/// its own protocol to the bench's server, which answers `turn 1: hello <i>` from the
/// input it read in the kind's request body; the case's `contains` check fails (and the
/// row is invalid) when agentest maps the request or the answer wrongly.
fn kinds(b: &Bench, _notes: &mut Vec<String>) -> Vec<Row> {
    let kinds = [
        Kind {
            label: "`langgraph` kind",
            route: "langgraph",
            config: |url| fixtures::kinds::langgraph(url, false),
            // A thread per case, then the run.
            requests: |n| 2 * n,
        },
        Kind {
            label: "`langgraph` kind, `stream = true`",
            route: "langgraph",
            config: |url| fixtures::kinds::langgraph(url, true),
            requests: |n| 2 * n,
        },
        Kind {
            label: "`a2a` kind (JSON-RPC 1.0)",
            route: "a2a",
            config: fixtures::kinds::a2a,
            // The card, read once per agent, then a message per case.
            requests: |n| n + 1,
        },
        Kind {
            label: "`http` kind, `format = \"openai-chat\"`",
            route: "openai/v1/chat/completions",
            config: |url| fixtures::kinds::openai_chat(url, false),
            requests: |n| n,
        },
        Kind {
            label: "`http` kind, `format = \"openai-chat\"`, `stream = \"sse\"`",
            route: "openai/v1/chat/completions",
            config: |url| fixtures::kinds::openai_chat(url, true),
            requests: |n| n,
        },
        Kind {
            label: "`http` kind, `format = \"custom\"`",
            route: "custom/chat",
            config: fixtures::kinds::custom,
            requests: |n| n,
        },
        Kind {
            label: "`eliza` kind",
            route: "eliza",
            config: fixtures::kinds::eliza,
            // The agent's name looked up once, then a session and a message per case.
            requests: |n| 2 * n + 1,
        },
    ];
    let n: usize = 1000;
    let parallel = CONCURRENCY.to_string();
    let args = [
        "test",
        "-i",
        "cases.jsonl",
        "--parallel",
        &parallel,
        "--color",
        "never",
    ];
    let ideal = n.div_ceil(CONCURRENCY) as f64 * LATENCY.as_secs_f64();
    let mut rows = Vec::new();
    for (i, kind) in kinds.iter().enumerate() {
        let dir = fixtures::fresh(&b.work.join(format!("kinds-{i}")));
        let url = b.server.route_url(LATENCY, kind.route);
        fixtures::write(&dir, "agentest.toml", &(kind.config)(&url));
        let cases = (0..n).map(|c| fixtures::single(&format!("K{c:05}"), c));
        fixtures::write(&dir, "cases.jsonl", &fixtures::suite(cases));
        rows.push(server_row(
            format!("throughput: 1,000 single-turn cases, {}", kind.label),
            ideal,
            format!("agent latency 100 ms, --parallel {CONCURRENCY}, ideal ceil({n}/{CONCURRENCY}) × 100 ms"),
            against_server(b, &dir, &args),
            (kind.requests)(n) as u64,
        ));
    }
    rows
}

/// Traces: the 1,000 single-turn cases against the 100 ms agent at 64 in flight, read
/// plainly (the reference) and with `traces = true`, the agent exporting ten spans a
/// turn as OTLP/JSON to agentest's receiver before it answers (`server.rs`, route
/// `traced`); each case asserts `tool_called` of the traced `lookup` with its own
/// arguments, so spans that do not arrive, or join another case's turn, fail the row.
/// The traced run is held to 1.05× the plain one with `settle = "20ms"`; beside it,
/// diagnostics that take its parts away one at a time (the cassette that mode `auto`
/// records, then the quiet period), the default 300 ms once, and the traced run's peak
/// memory.
fn traces(b: &Bench, notes: &mut Vec<String>) -> Vec<Row> {
    let n: usize = 1000;
    let port = free_port();
    let parallel = CONCURRENCY.to_string();
    let args = [
        "test",
        "-i",
        "cases.jsonl",
        "--parallel",
        &parallel,
        "--color",
        "never",
    ];
    let plain = project(b, "traces-off", LATENCY);
    fixtures::write(
        &plain,
        "cases.jsonl",
        &fixtures::suite((0..n).map(|c| fixtures::single(&format!("T{c:05}"), c))),
    );
    let url = b.server.route_url(LATENCY, &format!("traced/{port}"));
    let traced = |name: &str, settle: Option<&str>| {
        let dir = fixtures::fresh(&b.work.join(name));
        fixtures::write(
            &dir,
            "agentest.toml",
            &fixtures::traced_config(&url, port, settle),
        );
        fixtures::write(
            &dir,
            "cases.jsonl",
            &fixtures::suite((0..n).map(|c| fixtures::traced(&format!("T{c:05}"), c))),
        );
        dir
    };
    let short = traced("traces-20ms", Some("20ms"));
    let zero = traced("traces-0ms", Some("0ms"));
    let default = traced("traces-default", None);
    // What a run must show besides exit 0: every turn answered, every traced turn's
    // spans accepted, and none left over (spans no turn claimed).
    let check = |r: &Run, traced: bool| {
        let seen = b.server.seen();
        let stderr = std::fs::read_to_string(&r.stderr).unwrap_or_default();
        r.failure()
            .or_else(|| {
                (seen.requests != n as u64)
                    .then(|| format!("the agent saw {} requests, expected {n}", seen.requests))
            })
            .or_else(|| {
                (traced && seen.exports != n as u64).then(|| {
                    format!(
                        "the receiver accepted {} exports, expected {n}",
                        seen.exports
                    )
                })
            })
            .or_else(|| {
                stderr
                    .lines()
                    .find(|l| l.contains("matched no turn") || l.contains("refused"))
                    .map(str::to_string)
            })
    };

    // Interleaved, so that a drift of the machine hits every variant alike: (the
    // project, whether traced, whether cassettes are off, the row's label and note).
    let variants: [(&PathBuf, bool, bool, &str, &str); 4] = [
        (&plain, false, false, "", ""),
        (
            &short,
            true,
            false,
            "settle 20ms",
            "each turn's spans form a whole tree before its reply, so no quiet period is waited; cassette mode auto, which records no agent turn",
        ),
        (
            &short,
            true,
            true,
            "settle 20ms, AGENTEST_CASSETTES=off",
            "as above, without the cassette (diagnostic)",
        ),
        (
            &zero,
            true,
            true,
            "settle 0ms, AGENTEST_CASSETTES=off",
            "no quiet period, no cassette: the receiver and reading the spans alone (diagnostic)",
        ),
    ];
    let mut walls: [Vec<f64>; 4] = Default::default();
    let mut failures: [Option<String>; 4] = Default::default();
    // CPU seconds of agentest and of the bench's agent (this process) in each run.
    let mut cpus: [(Vec<f64>, Vec<f64>); 4] = Default::default();
    // What the agent saw in each variant's last run.
    let mut seen = [b.server.seen(); 4];
    for _ in 0..3 {
        for (i, (dir, is_traced, cassettes_off, _, _)) in variants.iter().enumerate() {
            b.server.reset();
            fresh_cassettes(dir);
            let mut cmd = agentest(dir, &args);
            if *cassettes_off {
                cmd.env("AGENTEST_CASSETTES", "off");
            }
            let before = own_cpu();
            let r = run(cmd, &dir.join("logs"), false);
            cpus[i].0.push(r.cpu.as_secs_f64());
            cpus[i].1.push((own_cpu() - before).as_secs_f64());
            walls[i].push(r.wall.as_secs_f64());
            failures[i] = failures[i].take().or_else(|| check(&r, *is_traced));
            seen[i] = b.server.seen();
        }
    }
    let reference = median(walls[0].clone());
    let cpu = |i: usize| {
        format!(
            "CPU (medians): agentest {:.2} s, the agent {:.2} s",
            median(cpus[i].0.clone()),
            median(cpus[i].1.clone())
        )
    };
    let waves = n.div_ceil(CONCURRENCY);
    let ideal = waves as f64 * LATENCY.as_secs_f64();
    let mut rows = vec![Row {
        figure: "traces: 1,000 single-turn cases, no traces (reference)".into(),
        unit: Unit::Seconds,
        value: reference,
        goal: Goal::Ideal { ideal, max: 1.15 },
        detail: format!(
            "100 ms agent, --parallel {CONCURRENCY}; {}; {}",
            spread(&walls[0], Unit::Seconds),
            cpu(0)
        ),
        invalid: failures[0].clone(),
    }];
    for (i, (_, _, _, label, why)) in variants.iter().enumerate().skip(1) {
        rows.push(Row {
            figure: format!("traces: the same, traces = true, 10 spans a turn, {label}"),
            unit: Unit::Seconds,
            value: median(walls[i].clone()),
            goal: Goal::Near {
                reference,
                max: 1.05,
                what: "untraced",
            },
            detail: format!(
                "{why}; OTLP/JSON to [traces] listen 127.0.0.1:{port}, every case tool_called of a traced tool; {}; {}; the last run: {} exports, each waiting {:.1} ms for the receiver on average ({:.1} ms at most), {} agent connections",
                spread(&walls[i], Unit::Seconds),
                cpu(i),
                seen[i].exports,
                seen[i].export_mean.as_secs_f64() * 1000.0,
                seen[i].export_max.as_secs_f64() * 1000.0,
                seen[i].connections
            ),
            invalid: failures[i].clone().or(failures[0].clone()),
        });
    }

    // The default settle, once: 300 ms more a turn, so some 6.4 s.
    b.server.reset();
    fresh_cassettes(&default);
    let r = run(agentest(&default, &args), &default.join("logs"), false);
    let failure = check(&r, true);
    let settle = Duration::from_millis(300);
    rows.push(Row {
        figure: "traces: the same, default settle 300ms (informational)".into(),
        unit: Unit::Seconds,
        value: r.wall.as_secs_f64(),
        goal: Goal::Ideal {
            ideal: waves as f64 * (LATENCY + settle).as_secs_f64(),
            max: 1.15,
        },
        detail: format!(
            "one run; ideal ceil({n}/{CONCURRENCY}) × (100 ms + 300 ms): the quiet period holds each case's slot"
        ),
        invalid: failure,
    });

    // Peak memory: a run of each with VmHWM polled (not in the timed runs: the polling
    // takes CPU).
    let mb = |kib: u64| kib as f64 * 1024.0 / 1e6;
    let peak = |dir: &Path, traced: bool| {
        b.server.reset();
        fresh_cassettes(dir);
        let r = run(agentest(dir, &args), &dir.join("memory-logs"), true);
        (r.peak_kib(), check(&r, traced))
    };
    let (plain_peak, plain_failure) = peak(&plain, false);
    let (traced_peak, traced_failure) = peak(&short, true);
    rows.push(Row {
        figure: "traces: peak RSS, 1,000 traced cases (settle 20ms)".into(),
        unit: Unit::Megabytes,
        value: mb(traced_peak),
        goal: Goal::Below { limit: 100.0 },
        detail: format!(
            "the same run untraced: {:.1} MB; VmHWM polled every ms",
            mb(plain_peak)
        ),
        invalid: traced_failure.or(plain_failure),
    });
    notes.push(format!(
        "traces: the receiver at a fixed 127.0.0.1:{port}, each turn's spans exported before its reply"
    ));
    rows
}

/// Removes the cassettes an earlier run of `dir` recorded. In mode `auto` a traced
/// turn is called live and recorded on every run, and its entry is appended to the
/// ones already there (the file grows by one entry per run), so each run starts
/// without them: every run measures one recording, as the first does.
fn fresh_cassettes(dir: &Path) {
    let _ = std::fs::remove_dir_all(dir.join(".cassettes"));
}

/// A free port on 127.0.0.1 for the trace receiver's fixed `[traces] listen`, below
/// Linux's ephemeral range (32768–60999), so no outgoing connection takes it between
/// the runs that bind it.
fn free_port() -> u16 {
    (21_000..32_000)
        .find(|p| std::net::TcpListener::bind(("127.0.0.1", *p)).is_ok())
        .expect("a free port on 127.0.0.1 below 32000")
}

/// Repeated runs. Every repeat run: 100 one-turn cases × 10 repeats against the 100 ms
/// agent at 64 in flight, held to the same 1.15× of ideal as single runs. Early
/// stopping: 100 cases × 20 repeats gated on `pass_rate = 0.8` at 95 % confidence,
/// where 45 cases always pass, 45 always fail and 10 pass 80 % of their repeats (the
/// bench's agent says which repeat it answers): the repeats started and the wall, against
/// running every repeat.
fn repeats(b: &Bench, _notes: &mut Vec<String>) -> Vec<Row> {
    let mut rows = Vec::new();
    let parallel = CONCURRENCY.to_string();

    let (n, runs): (usize, usize) = (100, 10);
    let dir = project(b, "repeats-all", LATENCY);
    let cases = (0..n).map(|i| fixtures::single(&format!("R{i:04}"), i));
    fixtures::write(&dir, "cases.jsonl", &fixtures::suite(cases));
    let runs_text = runs.to_string();
    let args = repeat_args(&runs_text, &parallel);
    let (walls, mut failure, last) = against_server(b, &dir, &args);
    let total = n * runs;
    if failure.is_none() && last.requests != total as u64 {
        failure = Some(format!(
            "the agent saw {} requests, expected {total}",
            last.requests
        ));
    }
    let summary = report_summary(&dir.join("report.jsonl"));
    if failure.is_none() && summary["repeats_run"] != total {
        failure = Some(format!(
            "the summary counts {} repeats run, expected {total}",
            summary["repeats_run"]
        ));
    }
    let ideal = total.div_ceil(CONCURRENCY) as f64 * LATENCY.as_secs_f64();
    rows.push(Row {
        figure: format!("repeats: {n} cases × {runs} repeats, 100 ms agent, 64 in flight"),
        unit: Unit::Seconds,
        value: median(walls.clone()),
        goal: Goal::Ideal { ideal, max: 1.15 },
        detail: format!(
            "every repeat its own conversation and session; ideal ceil({total}/{CONCURRENCY}) × 100 ms; {}; agent saw {} connections, {} in flight at most",
            spread(&walls, Unit::Seconds),
            last.connections,
            last.max_in_flight
        ),
        invalid: failure,
    });

    let (n, runs): (usize, usize) = (100, 20);
    let dir = project(b, "repeats-early", LATENCY);
    fixtures::write(
        &dir,
        "agentest.toml",
        &format!(
            "{}\n[run]\npass_rate = 0.8\nconfidence = 0.95\n",
            fixtures::http_config(&b.server.url(LATENCY))
        ),
    );
    let (passing, failing) = (45, 45);
    let cases = (0..n).map(|i| {
        let id = format!("E{i:04}");
        let input = format!("hello {i}");
        let check = if i < passing {
            serde_json::json!({"type": "contains", "value": input})
        } else if i < passing + failing {
            serde_json::json!({"type": "contains", "value": "goodbye"})
        } else {
            // Fails on repeats 5, 10, 15 and 20: a pass rate of exactly 0.8.
            serde_json::json!({"type": "regex", "pattern": "repeat [0-9]*[1-46-9]\\)$"})
        };
        serde_json::json!({"id": id, "input": input, "assert": check})
    });
    fixtures::write(&dir, "cases.jsonl", &fixtures::suite(cases));
    let runs_text = runs.to_string();
    let args = repeat_args(&runs_text, &parallel);
    let mut walls = Vec::new();
    let mut started = Vec::new();
    let mut failure = None;
    let mut summary = serde_json::Value::Null;
    for _ in 0..3 {
        b.server.reset();
        let r = run(agentest(&dir, &args), &dir.join("logs"), false);
        walls.push(r.wall.as_secs_f64());
        started.push(b.server.seen().requests as f64);
        summary = report_summary(&dir.join("report.jsonl"));
        // The failing cases fail the run (exit 1): what must hold is their number.
        let expected = (passing as u64, (n - passing) as u64);
        let got = (
            summary["passed"].as_u64().unwrap_or(0),
            summary["failed"].as_u64().unwrap_or(0),
        );
        if failure.is_none() && (r.code != Some(1) || got != expected) {
            failure = Some(format!(
                "expected exit 1 with {expected:?} passed/failed, got exit {:?} with {got:?}",
                r.code
            ));
        }
    }
    let planned = n * runs;
    let every_repeat = planned.div_ceil(CONCURRENCY) as f64 * LATENCY.as_secs_f64();
    let counted = summary["repeats_run"].as_u64().unwrap_or(0);
    let saved = summary["repeats_saved"].as_u64().unwrap_or(0);
    rows.push(Row {
        figure: format!("repeats: early stopping, repeats started of {planned} planned"),
        unit: Unit::Count,
        value: median(started.clone()),
        goal: Goal::Near {
            reference: planned as f64,
            max: 0.6,
            what: "planned",
        },
        detail: format!(
            "{n} cases × {runs} repeats, pass_rate 0.8 at 95 %: {passing} always pass, {failing} always fail, {} pass 4 in 5; {counted} repeats counted in verdicts, {saved} saved (not started, or stopped once decided); median of 3",
            n - passing - failing
        ),
        invalid: failure.clone(),
    });
    rows.push(Row {
        figure: "repeats: early stopping, wall".into(),
        unit: Unit::Seconds,
        value: median(walls.clone()),
        goal: Goal::Near {
            reference: every_repeat,
            max: 0.6,
            what: "every repeat's ideal",
        },
        detail: format!(
            "the same run; every repeat's ideal ceil({planned}/{CONCURRENCY}) × 100 ms; {}",
            spread(&walls, Unit::Seconds)
        ),
        invalid: failure,
    });
    rows
}

/// `agentest test` on `cases.jsonl` with `--runs`, at `parallel`, into `report.jsonl`.
fn repeat_args<'a>(runs: &'a str, parallel: &'a str) -> [&'a str; 11] {
    [
        "test",
        "-i",
        "cases.jsonl",
        "--runs",
        runs,
        "--parallel",
        parallel,
        "--color",
        "never",
        "-o",
        "report.jsonl",
    ]
}

/// The summary line of a JSON Lines report (`Null` when there is none).
fn report_summary(path: &Path) -> serde_json::Value {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .find(|v| v["type"] == "summary")
        .unwrap_or(serde_json::Value::Null)
}

/// ElizaOS scenarios: 1,000 files loaded and checked (`--dry-run`), and 100 one-step
/// scenarios against the 100 ms agent at 64 in flight.
fn scenarios(b: &Bench, _notes: &mut Vec<String>) -> Vec<Row> {
    let scenario = |i: usize| {
        format!(
            "name: 'Scenario {i}'\ndescription: 'one message step'\nplugins: ['@elizaos/plugin-bootstrap']\nenvironment:\n  type: local\nsetup:\n  virtual_fs:\n    'notes.txt': 'note {i}'\nrun:\n  - name: 'greets'\n    input: 'hello {i}'\n    evaluations:\n      - type: string_contains\n        value: 'hello {i}'\n      - type: regex_match\n        pattern: 'hello [0-9]+'\n      - type: execution_time\n        max_duration_ms: 5000\njudgment:\n  strategy: all_pass\n"
        )
    };
    let mut rows = Vec::new();
    let dir = fixtures::fresh(&b.work.join("scenarios-load"));
    fixtures::write(
        &dir,
        "agentest.toml",
        &fixtures::http_config(&b.server.url(Duration::ZERO)),
    );
    let files = 1000;
    for i in 0..files {
        fixtures::write(&dir, &format!("s/{i:04}.scenario.yaml"), &scenario(i));
    }
    let (value, walls, failure) = repeat(3, &dir.join("logs"), Unit::Seconds, || {
        agentest(&dir, &["test", "-i", "s", "--dry-run", "--color", "never"])
    });
    let failure = failure.or_else(|| dry_run_failure(&dir.join("logs"), files));
    rows.push(Row {
        figure: "scenarios: load and validate 1,000 scenario files".into(),
        unit: Unit::Seconds,
        value,
        goal: Goal::Below { limit: 1.0 },
        detail: format!(
            "--dry-run, YAML read and checked; {}",
            spread(&walls, Unit::Seconds)
        ),
        invalid: failure,
    });

    let dir = project(b, "scenarios-run", LATENCY);
    let n = 100;
    for i in 0..n {
        fixtures::write(&dir, &format!("s/{i:04}.scenario.yaml"), &scenario(i));
    }
    let ideal = n.div_ceil(CONCURRENCY) as f64 * LATENCY.as_secs_f64();
    let parallel = CONCURRENCY.to_string();
    let args = [
        "test",
        "-i",
        "s",
        "--parallel",
        &parallel,
        "--color",
        "never",
    ];
    let (walls, mut failure, last) = against_server(b, &dir, &args);
    if failure.is_none() && last.requests != n as u64 {
        failure = Some(format!(
            "the agent saw {} requests, expected {n}",
            last.requests
        ));
    }
    // The same 100 exchanges as one-turn JSONL cases: the engine's own overhead at this
    // size, without environment folders.
    fixtures::write(
        &dir,
        "j/cases.jsonl",
        &fixtures::suite((0..n).map(|i| fixtures::single(&format!("T{i:04}"), i))),
    );
    let jsonl_args = [
        "test",
        "-i",
        "j",
        "--parallel",
        &parallel,
        "--color",
        "never",
    ];
    let (jsonl_walls, jsonl_failure, _) = against_server(b, &dir, &jsonl_args);
    rows.push(Row {
        figure: "scenarios: 100 one-step scenarios, 100 ms agent, 64 in flight".into(),
        unit: Unit::Seconds,
        value: median(walls.clone()),
        goal: Goal::Ideal { ideal, max: 1.15 },
        detail: format!(
            "an environment folder with a file per scenario; ideal ceil({n}/{CONCURRENCY}) × 100 ms; {}",
            spread(&walls, Unit::Seconds)
        ),
        invalid: failure,
    });
    rows.push(Row {
        figure: "scenarios: the same 100 exchanges as JSONL cases (baseline)".into(),
        unit: Unit::Seconds,
        value: median(jsonl_walls.clone()),
        goal: Goal::Ideal { ideal, max: 1.15 },
        detail: format!(
            "no environment folders: what the scenario figure adds is theirs; {}",
            spread(&jsonl_walls, Unit::Seconds)
        ),
        invalid: jsonl_failure,
    });
    rows
}

/// A fresh folder `name` with a config whose agent is the bench's, answering after
/// `latency`.
fn project(b: &Bench, name: &str, latency: Duration) -> PathBuf {
    let dir = fixtures::fresh(&b.work.join(name));
    fixtures::write(
        &dir,
        "agentest.toml",
        &fixtures::http_config(&b.server.url(latency)),
    );
    dir
}

/// The run store: what recording costs the 1,000-case run (on against off), and
/// `runs list` over 100,000 stored runs.
fn store(b: &Bench, _notes: &mut Vec<String>) -> Vec<Row> {
    let mut rows = Vec::new();
    let dir = project(b, "store", LATENCY);
    let n: usize = 1000;
    let cases = (0..n).map(|c| fixtures::single(&format!("T{c:05}"), c));
    fixtures::write(&dir, "cases.jsonl", &fixtures::suite(cases));
    let parallel = CONCURRENCY.to_string();
    let args = [
        "test",
        "-i",
        "cases.jsonl",
        "--parallel",
        &parallel,
        "--color",
        "never",
    ];
    // Alternately off and on, so that a drift of the machine hits both alike.
    let mut off = Vec::new();
    let mut on = Vec::new();
    let mut failure = None;
    for _ in 0..3 {
        for (store, walls) in [("off", &mut off), ("on", &mut on)] {
            let mut cmd = agentest(&dir, &args);
            if store == "off" {
                cmd.env("AGENTEST_STORE", "off");
            }
            let r = run(cmd, &dir.join("logs"), false);
            walls.push(r.wall.as_secs_f64());
            failure = failure.or_else(|| r.failure());
        }
    }
    let reference = median(off.clone());
    rows.push(Row {
        figure: "store: 1,000 single-turn cases, recorded (against off)".into(),
        unit: Unit::Seconds,
        value: median(on.clone()),
        goal: Goal::Near {
            reference,
            max: 1.05,
            what: "store off",
        },
        detail: format!(
            "100 ms agent, --parallel {CONCURRENCY}; on: {}; off: {}",
            spread(&on, Unit::Seconds),
            spread(&off, Unit::Seconds)
        ),
        invalid: failure,
    });

    // 64 processes at once on one new store, as a nextest run with 64 test threads.
    let crowd = project(b, "store-crowd", LATENCY);
    fixtures::write(
        &crowd,
        "one.jsonl",
        &fixtures::suite([fixtures::single("T1", 1)]),
    );
    let started = std::time::Instant::now();
    let children: Vec<_> = (0..64)
        .map(|_| {
            let mut cmd = agentest(&crowd, &["test", "-i", "one.jsonl", "--color", "never"]);
            cmd.stdout(Stdio::null()).stderr(Stdio::piped());
            cmd.spawn()
        })
        .collect();
    let mut crowd_failure = None;
    for child in children {
        match child.and_then(|c| c.wait_with_output()) {
            Ok(out) if out.status.success() && out.stderr.is_empty() => {}
            Ok(out) => {
                crowd_failure.get_or_insert_with(|| {
                    format!(
                        "a process failed ({}): {}",
                        out.status,
                        String::from_utf8_lossy(&out.stderr)
                    )
                });
            }
            Err(e) => {
                crowd_failure.get_or_insert_with(|| format!("failed to start agentest: {e}"));
            }
        }
    }
    let crowd_wall = started.elapsed().as_secs_f64();
    let recorded: i64 = rusqlite::Connection::open(crowd.join(".agentest/runs.db"))
        .and_then(|c| {
            c.query_row(
                "SELECT COUNT(*) FROM runs WHERE status = 'completed'",
                [],
                |r| r.get(0),
            )
        })
        .unwrap_or(0);
    if crowd_failure.is_none() && recorded != 64 {
        crowd_failure = Some(format!("{recorded} of 64 runs recorded"));
    }
    rows.push(Row {
        figure: "store: 64 processes at once on one new store".into(),
        unit: Unit::Seconds,
        value: crowd_wall,
        goal: Goal::Below { limit: 5.0 },
        detail: "each a one-case run (100 ms agent), all started together; none may fail or warn (no \"database is locked\"), every run recorded".into(),
        invalid: crowd_failure,
    });

    // 100,000 runs: the store the runs above made, filled up to 100 executions of 1,000.
    let db = dir.join(".agentest/runs.db");
    let filled = fill_store(&db, 100_000);
    let mut walls = Vec::new();
    let mut failure = filled.err();
    for list in [
        vec!["runs", "list"],
        vec!["runs", "list", "--status", "failed"],
        vec!["runs", "list", "--suite", "cases", "--limit", "200"],
    ] {
        for _ in 0..3 {
            let r = run(agentest(&dir, &list), &dir.join("logs"), false);
            walls.push(r.wall.as_secs_f64());
            failure = failure.or_else(|| r.failure());
        }
    }
    rows.push(Row {
        figure: "store: runs list over 100,000 stored runs".into(),
        unit: Unit::Seconds,
        value: walls.iter().copied().fold(0.0, f64::max),
        goal: Goal::Below { limit: 0.2 },
        detail: format!(
            "the slowest of runs list, --status failed, --suite cases (3 each); {}",
            spread(&walls, Unit::Seconds)
        ),
        invalid: failure,
    });
    rows
}

/// Copies the runs in the store at `db` until it holds `total`, each copy a new
/// execution, one in ten failed.
fn fill_store(db: &Path, total: i64) -> Result<(), String> {
    let mut conn = rusqlite::Connection::open(db).map_err(|e| e.to_string())?;
    let tx = conn.transaction().map_err(|e| e.to_string())?;
    let have: i64 = tx
        .query_row("SELECT COUNT(*) FROM runs", [], |r| r.get(0))
        .map_err(|e| e.to_string())?;
    let per: i64 = tx
        .query_row(
            "SELECT COUNT(*) FROM runs WHERE execution_id = (SELECT MIN(id) FROM executions)",
            [],
            |r| r.get(0),
        )
        .map_err(|e| e.to_string())?;
    let mut left = total - have;
    while left > 0 && per > 0 {
        tx.execute(
            "INSERT INTO executions (started_at, finished_at, command, version, root)
             SELECT started_at, finished_at, command, version, root FROM executions ORDER BY id LIMIT 1",
            [],
        )
        .map_err(|e| e.to_string())?;
        let exec = tx.last_insert_rowid();
        tx.execute(
            "INSERT INTO runs (execution_id, trial, suite, case_id, file, status, verdict, started_at,
                               completed_at, success, reason, messages, metadata, record)
             SELECT ?1, trial, suite, case_id, file, status,
                    CASE WHEN id % 10 = 0 THEN 'failed' ELSE verdict END, started_at, completed_at,
                    CASE WHEN id % 10 = 0 THEN 0 ELSE success END, reason, messages, metadata, record
             FROM runs WHERE execution_id = (SELECT MIN(id) FROM executions) LIMIT ?2",
            rusqlite::params![exec, left.min(per)],
        )
        .map_err(|e| e.to_string())?;
        left -= per;
    }
    tx.commit().map_err(|e| e.to_string())
}

/// The binary on a one-case suite against an agent that answers at once.
fn startup(b: &Bench, _notes: &mut Vec<String>) -> Vec<Row> {
    let dir = fixtures::fresh(&b.work.join("startup"));
    fixtures::write(
        &dir,
        "agentest.toml",
        &fixtures::http_config(&b.server.url(Duration::ZERO)),
    );
    fixtures::write(
        &dir,
        "smoke.jsonl",
        &fixtures::suite([fixtures::single("T001", 1)]),
    );
    let args = ["test", "-i", "smoke.jsonl", "--color", "never"];
    let logs = dir.join("logs");
    let _ = repeat(3, &logs, Unit::Millis, || agentest(&dir, &args));
    let (value, walls, failure) = repeat(21, &logs, Unit::Millis, || agentest(&dir, &args));
    vec![Row {
        figure: "start-up: one case, HTTP agent, no latency".into(),
        unit: Unit::Millis,
        value,
        goal: Goal::Below { limit: 50.0 },
        detail: spread(&walls, Unit::Millis),
        invalid: failure,
    }]
}

/// 10,000 `openai` cases replayed from cassettes; a 100,000-line suite under `--dry-run`.
fn replay(b: &Bench, notes: &mut Vec<String>) -> Vec<Row> {
    let mut rows = Vec::new();
    let dir = b.work.join("replay");
    let t = Instant::now();
    match fixtures::replay_tree(&dir, 10_000, 10) {
        Ok(n) => {
            notes.push(format!(
                "replay fixture: {n} cases and {n} cassette files written in {:.1} s",
                t.elapsed().as_secs_f64()
            ));
            let (value, walls, mut failure) = repeat(3, &dir.join("logs"), Unit::Seconds, || {
                let mut cmd = agentest(&dir, &["test", "-i", ".", "--color", "never"]);
                cmd.env("AGENTEST_CASSETTES", "replay");
                cmd
            });
            let out = std::fs::read_to_string(dir.join("logs/stdout.txt")).unwrap_or_default();
            let passed = console_count(&out, "Passed:");
            let calls = console_count(&out, "Model calls:");
            let detail = format!(
                "{} passed, {} model calls replayed (last run); {}",
                passed.unwrap_or(0),
                calls.unwrap_or(0),
                spread(&walls, Unit::Seconds)
            );
            if failure.is_none() && passed != Some(n as u64) {
                failure = Some(format!("{passed:?} of {n} cases passed"));
            }
            rows.push(Row {
                figure: format!("replay: {} openai cases from cassettes", thousands(n)),
                unit: Unit::Seconds,
                value,
                goal: Goal::Below { limit: 5.0 },
                detail,
                invalid: failure,
            });
        }
        Err(e) => rows.push(Row {
            figure: "replay: 10,000 openai cases from cassettes".into(),
            unit: Unit::Seconds,
            value: f64::NAN,
            goal: Goal::Below { limit: 5.0 },
            detail: String::new(),
            invalid: Some(e),
        }),
    }

    let dir = fixtures::fresh(&b.work.join("dry-run"));
    fixtures::write(
        &dir,
        "agentest.toml",
        &fixtures::http_config(&b.server.url(Duration::ZERO)),
    );
    let lines = 100_000;
    let cases = (0..lines).map(|i| {
        let id = format!("L{i:06}");
        if i % 6 == 5 {
            fixtures::dynamic(&id, 3)
        } else {
            fixtures::mixed(&id, i)
        }
    });
    let text = fixtures::suite(cases);
    let bytes = text.len();
    fixtures::write(&dir, "big.jsonl", &text);
    drop(text);
    let (value, walls, failure) = repeat(3, &dir.join("logs"), Unit::Seconds, || {
        agentest(
            &dir,
            &["test", "-i", "big.jsonl", "--dry-run", "--color", "never"],
        )
    });
    let failure = failure.or_else(|| dry_run_failure(&dir.join("logs"), lines));
    rows.push(Row {
        figure: "dry run: load and validate a 100,000-line suite".into(),
        unit: Unit::Seconds,
        value,
        goal: Goal::Below { limit: 1.0 },
        detail: format!(
            "{:.1} MB of JSONL, six kinds of case; {}",
            bytes as f64 / 1e6,
            spread(&walls, Unit::Seconds)
        ),
        invalid: failure,
    });
    rows
}

/// Files read whole (a tau2 tasks file, an EvalStudio `scenarios.json`) under
/// `--dry-run`, each against the same cases as JSON Lines: locating every record must
/// not rescan the file (it did, and 20,000 tasks took minutes).
fn loading(b: &Bench, _notes: &mut Vec<String>) -> Vec<Row> {
    let dir = fixtures::fresh(&b.work.join("loading"));
    let config = format!(
        "{}\n[llm]\nbase_url = \"{}\"\nmodel = \"bench\"\n",
        fixtures::http_config(&b.server.url(Duration::ZERO)),
        b.server.url(Duration::ZERO)
    );
    fixtures::write(&dir, "agentest.toml", &config);
    let mut rows = Vec::new();

    let tasks = 20_000;
    let prepared = fixtures::tau2_tasks(tasks).and_then(|text| {
        fixtures::write(&dir, "tau2/tasks.json", &text);
        std::fs::create_dir_all(dir.join("tau2-jsonl")).map_err(|e| e.to_string())?;
        let r = run(
            agentest(
                &dir,
                &[
                    "import",
                    "tau2",
                    "tau2/tasks.json",
                    "-o",
                    "tau2-jsonl/tasks.jsonl",
                ],
            ),
            &dir.join("logs"),
            false,
        );
        r.failure().map_or(Ok(text.len()), Err)
    });
    match prepared {
        Ok(bytes) => rows.extend(whole_file_rows(
            &dir,
            &format!("{} tau2 tasks", thousands(tasks)),
            ("tau2", "tau2-jsonl"),
            tasks,
            bytes,
        )),
        Err(e) => rows.push(Row {
            figure: format!("loading: {} tau2 tasks", thousands(tasks)),
            unit: Unit::Seconds,
            value: f64::NAN,
            goal: Goal::Below { limit: 1.0 },
            detail: String::new(),
            invalid: Some(e),
        }),
    }

    let scenarios = 8_000;
    let (store, jsonl) = fixtures::evalstudio_scenarios(scenarios);
    fixtures::write(&dir, "es/scenarios.json", &store);
    fixtures::write(&dir, "es-jsonl/cases.jsonl", &jsonl);
    rows.extend(whole_file_rows(
        &dir,
        &format!("{} EvalStudio scenarios", thousands(scenarios)),
        ("es", "es-jsonl"),
        scenarios,
        store.len(),
    ));
    rows
}

/// The `--dry-run` of folder `whole` (one file read whole), held to 3× that of folder
/// `lines` (the same cases as JSON Lines), and the JSONL figure itself.
fn whole_file_rows(
    dir: &Path,
    what: &str,
    (whole, lines): (&str, &str),
    cases: usize,
    bytes: usize,
) -> Vec<Row> {
    let logs = dir.join("logs");
    let dry_run = |input: &str| {
        let (value, walls, failure) = repeat(3, &logs, Unit::Seconds, || {
            agentest(dir, &["test", "-i", input, "--dry-run", "--color", "never"])
        });
        (
            value,
            walls,
            failure.or_else(|| dry_run_failure(&logs, cases)),
        )
    };
    let (reference, ref_walls, ref_failure) = dry_run(lines);
    let (value, walls, failure) = dry_run(whole);
    vec![
        Row {
            figure: format!("loading: {what}, one file, --dry-run"),
            unit: Unit::Seconds,
            value,
            goal: Goal::Near {
                reference,
                max: 3.0,
                what: "JSONL",
            },
            detail: format!(
                "{:.1} MB read whole, every record located; {}",
                bytes as f64 / 1e6,
                spread(&walls, Unit::Seconds)
            ),
            invalid: failure.or(ref_failure.clone()),
        },
        Row {
            figure: format!("loading: the same {what} as JSONL (reference)"),
            unit: Unit::Seconds,
            value: reference,
            goal: Goal::Below { limit: 3.0 },
            detail: spread(&ref_walls, Unit::Seconds),
            invalid: ref_failure,
        },
    ]
}

/// Runs `f` with the process's stdout sent to /dev/null (the harness prints its list there).
fn silenced<T>(f: impl FnOnce() -> T) -> T {
    let _ = std::io::stdout().flush();
    let null = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/null")
        .expect("open /dev/null");
    // SAFETY: plain descriptor calls on fds we own; stdout is restored before returning.
    let saved = unsafe { libc::dup(1) };
    // SAFETY: as above.
    unsafe { libc::dup2(null.as_raw_fd(), 1) };
    let out = f();
    let _ = std::io::stdout().flush();
    // SAFETY: as above.
    unsafe {
        libc::dup2(saved, 1);
        libc::close(saved);
    }
    out
}

fn harness_in_process(root: &Path, args: &[&str]) -> (Duration, ExitCode) {
    let args = std::iter::once("bench-harness").chain(args.iter().copied());
    let arguments = libtest_mimic::Arguments::from_iter(args);
    silenced(|| {
        let t = Instant::now();
        let code = agentest::Harness::new(root).run_with_args(arguments);
        (t.elapsed(), code)
    })
}

fn harness_process(root: &Path, args: &[&str]) -> Command {
    let exe = std::env::current_exe().expect("the bench's own path");
    let mut cmd = command(&exe, root);
    cmd.env(HARNESS_ENV, root).args(args);
    cmd
}

/// The libtest harness on a 10,000-case tree: `--list --format terse` as nextest calls
/// it, and `--exact NAME` (one nextest test) compared with the same on a one-file tree.
fn nextest(b: &Bench, notes: &mut Vec<String>) -> Vec<Row> {
    let tree = b.work.join("tree");
    let url = b.server.url(Duration::ZERO);
    let trials = fixtures::mixed_tree(&tree, &url, 10, 10, 100);
    let name = "d03/s07::C03070042";
    let one = fixtures::fresh(&b.work.join("one-file"));
    fixtures::write(&one, "agentest.toml", &fixtures::http_config(&url));
    let file = std::fs::read_to_string(tree.join("d03/s07.jsonl")).expect("read d03/s07.jsonl");
    fixtures::write(&one, "d03/s07.jsonl", &file);
    let list = ["--list", "--format", "terse"];
    let exact = ["--exact", name];
    let exact_list = ["--exact", name, "--list", "--format", "terse"];
    let logs = b.work.join("nextest-logs");
    let mut rows = Vec::new();

    // In process.
    let in_process = |root: &Path, args: &[&str], n: usize| {
        let _ = harness_in_process(root, args);
        let mut walls = Vec::new();
        let mut failure = None;
        for _ in 0..n {
            let (wall, code) = harness_in_process(root, args);
            walls.push(wall.as_secs_f64() * 1000.0);
            if code != ExitCode::SUCCESS && failure.is_none() {
                failure = Some(format!("the harness exited with {code:?}"));
            }
        }
        (median(walls.clone()), walls, failure)
    };
    let (value, walls, failure) = in_process(&tree, &list, 10);
    rows.push(Row {
        figure: "nextest: --list --format terse, 10,000 cases (in process)".into(),
        unit: Unit::Millis,
        value,
        goal: Goal::Below { limit: 200.0 },
        detail: spread(&walls, Unit::Millis),
        invalid: failure,
    });

    // As a process, the way nextest calls it.
    let (value, walls, mut failure) =
        repeat(10, &logs, Unit::Millis, || harness_process(&tree, &list));
    let listed = std::fs::read_to_string(logs.join("stdout.txt"))
        .unwrap_or_default()
        .lines()
        .filter(|l| l.ends_with(": test"))
        .count();
    if failure.is_none() && listed != trials.len() {
        failure = Some(format!("listed {listed} tests, expected {}", trials.len()));
    }
    rows.push(Row {
        figure: "nextest: --list --format terse, 10,000 cases (process)".into(),
        unit: Unit::Millis,
        value,
        goal: Goal::Below { limit: 200.0 },
        detail: format!("{listed} tests listed; {}", spread(&walls, Unit::Millis)),
        invalid: failure,
    });

    // `--exact NAME`: one test, as nextest runs each one, against the 10,000-case tree
    // and against a tree of just that test's file; interleaved, so drift hits both.
    let (mut tree_walls, mut one_walls) = (Vec::new(), Vec::new());
    let mut failure = None;
    let mut ran_one = true;
    for _ in 0..EXACT_RUNS {
        for (root, walls) in [(&one, &mut one_walls), (&tree, &mut tree_walls)] {
            let r = run(harness_process(root, &exact), &logs, false);
            walls.push(r.wall.as_secs_f64() * 1000.0);
            failure = failure.or_else(|| r.failure());
            ran_one &= std::fs::read_to_string(&r.stdout).is_ok_and(|o| o.contains("1 passed"));
        }
    }
    if failure.is_none() && !ran_one {
        failure = Some(format!("--exact {name} did not run one passing test"));
    }
    rows.push(Row {
        figure: "nextest: --exact NAME in a 10,000-case tree (process)".into(),
        unit: Unit::Millis,
        value: median(tree_walls.clone()),
        goal: Goal::Near {
            reference: median(one_walls.clone()),
            max: 1.25,
            what: "one-file tree",
        },
        detail: format!(
            "runs the one case against the HTTP agent; {}; the one-file tree: {}",
            spread(&tree_walls, Unit::Millis),
            spread(&one_walls, Unit::Millis)
        ),
        invalid: failure,
    });
    let (mut tree_walls, mut one_walls) = (Vec::new(), Vec::new());
    let mut failure = None;
    let _ = harness_in_process(&tree, &exact_list);
    for _ in 0..EXACT_RUNS {
        for (root, walls) in [(&one, &mut one_walls), (&tree, &mut tree_walls)] {
            let (wall, code) = harness_in_process(root, &exact_list);
            walls.push(wall.as_secs_f64() * 1000.0);
            if code != ExitCode::SUCCESS && failure.is_none() {
                failure = Some(format!("the harness exited with {code:?}"));
            }
        }
    }
    rows.push(Row {
        figure: "nextest: --exact NAME --list, 10,000-case tree (in process)".into(),
        unit: Unit::Millis,
        value: median(tree_walls.clone()),
        goal: Goal::Near {
            reference: median(one_walls.clone()),
            max: 1.25,
            what: "one-file tree",
        },
        detail: format!(
            "loads and filters without running; {}; the one-file tree: {}",
            spread(&tree_walls, Unit::Millis),
            spread(&one_walls, Unit::Millis)
        ),
        invalid: failure,
    });
    notes.push(format!(
        "nextest tree: {} cases in 100 files of 100 under 10 folders (five kinds of case, one in five a two-turn static case)",
        trials.len()
    ));
    rows
}

/// Peak resident memory of a 10,000-case run with a JSONL report.
fn memory(b: &Bench, notes: &mut Vec<String>) -> Vec<Row> {
    let url = b.server.url(Duration::ZERO);
    let measure = |dirs: usize| {
        let tree = b.work.join(format!("memory-{dirs}"));
        let trials = fixtures::mixed_tree(&tree, &url, dirs, 10, 100);
        let report = b.work.join(format!("memory-{dirs}.jsonl"));
        let report_arg = report.display().to_string();
        b.server.reset();
        let r = run(
            agentest(
                &tree,
                &["test", "-i", ".", "-o", &report_arg, "--color", "never"],
            ),
            &b.work.join(format!("memory-{dirs}-logs")),
            true,
        );
        let records = std::fs::read_to_string(&report)
            .map(|t| t.lines().count())
            .unwrap_or(0);
        let failure = r.failure().or_else(|| {
            (records != trials.len() + 1).then(|| {
                format!(
                    "the report has {records} lines, expected {}",
                    trials.len() + 1
                )
            })
        });
        (r, trials.len(), records, failure, b.server.seen())
    };
    let (small, small_n, _, _, _) = measure(1);
    let (r, n, records, failure, seen) = measure(10);
    let mb = |kib: u64| kib as f64 * 1024.0 / 1e6;
    notes.push(format!(
        "memory: {small_n} cases peak at {:.1} MB and {n} cases at {:.1} MB, so {:.1} KB more per case",
        mb(small.peak_kib()),
        mb(r.peak_kib()),
        (mb(r.peak_kib()) - mb(small.peak_kib())) * 1000.0 / (n - small_n) as f64
    ));
    vec![Row {
        figure: "memory: peak RSS, 10,000 cases, HTTP agent, -o run.jsonl".into(),
        unit: Unit::Megabytes,
        value: mb(r.peak_kib()),
        goal: Goal::Below { limit: 100.0 },
        detail: format!(
            "VmHWM polled every ms {:.1} MB, wait4 ru_maxrss {:.1} MB (the bench's own peak {:.1} MB); run took {:.2} s; report {records} lines; agent saw {} connections, {} requests",
            mb(r.polled_hwm_kib),
            mb(r.max_rss_kib),
            mb(r.parent_hwm_kib),
            r.wall.as_secs_f64(),
            seen.connections,
            seen.requests
        ),
        invalid: failure,
    }]
}
