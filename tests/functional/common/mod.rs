//! Helpers shared by the functional tests: what a test needs ([`need`]), scratch
//! directories, runs of the binary, JSONL reports, a tiny HTTP server on 127.0.0.1 and,
//! on it, the scripted chat-completions server ([`chat`]).

pub mod chat;
pub mod eliza;
pub mod project;

use std::io::{BufRead, BufReader, Read};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use libtest_mimic::{Completion, Failed};
use serde_json::Value;

// ---------------------------------------------------------------------------------------
// What a test needs
// ---------------------------------------------------------------------------------------

/// Whether this is a CI run: `CI` set to anything but empty, `false` or `0`.
pub fn on_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| {
        let v = v.trim();
        !v.is_empty() && !v.eq_ignore_ascii_case("false") && v != "0"
    })
}

/// Whether nextest runs this process (it sets `NEXTEST=1` when listing and running).
pub fn under_nextest() -> bool {
    std::env::var_os("NEXTEST").is_some_and(|v| v == "1")
}

/// Something a test needs and this machine lacks (a tool, a corpus, a browser).
#[derive(Debug)]
pub struct Missing {
    what: String,
    reason: String,
}

/// What a test that needs something possibly absent returns: `need(...)?` or
/// `return need(...)` where the thing is absent. Its registration names the check too
/// (`trials![name (needs check)]`), so that nextest can be told when listing.
pub type Needs = Result<(), Missing>;

/// The test cannot run here: `what` is missing (`reason`: what is wrong, how to get it).
/// On CI the harness reports that as a failure, since a test that checks nothing must
/// not pass there; elsewhere as ignored with the reason, never as passed.
pub fn need<T>(what: impl Into<String>, reason: impl Into<String>) -> Result<T, Missing> {
    Err(Missing {
        what: what.into(),
        reason: reason.into(),
    })
}

impl Missing {
    /// How the harness reports the test: failed on CI, otherwise ignored with the reason.
    /// Under nextest, which cannot report a test ignored at run time (it would show it as
    /// passed), a test that gets here off CI was asked for although listed as ignored
    /// (`--run-ignored`), and fails.
    pub fn outcome(self) -> Result<Completion, Failed> {
        let Missing { what, reason } = self;
        if on_ci() {
            Err(format!("needs {what} (CI is set, so its absence is a failure): {reason}").into())
        } else if under_nextest() {
            Err(format!(
                "needs {what}: {reason} (nextest lists this test as ignored here, and cannot \
                 report one ignored at run time)"
            )
            .into())
        } else {
            Ok(Completion::ignored_with(format!("needs {what}: {reason}")))
        }
    }
}

/// The interpreter of the venv that holds the Python frameworks of
/// `tests/python/requirements.txt` (`.ci/run` builds it and sets `AGENTEST_PYTHON`),
/// once `modules` import there.
pub fn framework_python(modules: &[&str]) -> Result<PathBuf, Missing> {
    const HOW: &str = "run .ci/run, or build the venv it builds from tests/python/requirements.txt and set AGENTEST_PYTHON to its python";
    let Some(python) = std::env::var_os("AGENTEST_PYTHON").filter(|p| !p.is_empty()) else {
        return need(
            "the Python frameworks venv",
            format!("AGENTEST_PYTHON is not set; {HOW}"),
        );
    };
    let python = PathBuf::from(python);
    let imports = modules.join(", ");
    let ok = Command::new(&python)
        .args(["-c", &format!("import {imports}")])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        return need(
            format!("the Python modules {imports}"),
            format!("{} cannot import them; {HOW}", python.display()),
        );
    }
    Ok(python)
}

/// How to get the PostgreSQL server that the PostgreSQL store's tests need.
const POSTGRES_HOW: &str = "start a throwaway one with `bash tests/postgres/cluster.sh start DIR` \
     and `export AGENTEST_TEST_POSTGRES=$(cat DIR/url)` (.ci/run does)";

/// The URL of a PostgreSQL server for the store's tests (`AGENTEST_TEST_POSTGRES`, a
/// role that may create databases), as a registration check: `(needs postgres)`.
pub fn postgres() -> Needs {
    postgres_url().map(|_| ())
}

fn postgres_url() -> Result<String, Missing> {
    match std::env::var("AGENTEST_TEST_POSTGRES") {
        Ok(url) if !url.trim().is_empty() => Ok(url.trim().to_string()),
        _ => need(
            "a PostgreSQL server",
            format!("AGENTEST_TEST_POSTGRES is not set; {POSTGRES_HOW}"),
        ),
    }
}

/// An empty database of one test's own on the server of `AGENTEST_TEST_POSTGRES`,
/// dropped (with any connection still open to it) when this is dropped.
pub struct PgDatabase {
    admin: String,
    name: String,
    url: String,
}

impl PgDatabase {
    /// Its URL: the server's, naming this database.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Its name: `agentest_test_` and what makes it unique.
    pub fn name(&self) -> &str {
        &self.name
    }
}

impl Drop for PgDatabase {
    fn drop(&mut self) {
        let dropped = postgres::Client::connect(&self.admin, postgres::NoTls).and_then(|mut c| {
            c.batch_execute(&format!(
                "DROP DATABASE IF EXISTS {} WITH (FORCE)",
                self.name
            ))
        });
        if let Err(e) = dropped {
            eprintln!("could not drop the test database {}: {e:?}", self.name);
        }
    }
}

/// A fresh empty database for a test (see [`PgDatabase`]); missing (see [`need`]) when
/// `AGENTEST_TEST_POSTGRES` is not set. A server that is named but cannot be reached
/// fails the test: that is not a machine lacking something.
pub fn fresh_postgres() -> Result<PgDatabase, Missing> {
    static N: AtomicUsize = AtomicUsize::new(0);
    let admin = postgres_url()?;
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let name = format!(
        "agentest_test_{}_{}_{nanos}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    );
    // The cluster of tests/postgres/cluster.sh speaks no TLS; the store's own TLS is
    // tested in src/record/store/postgres/schema.rs.
    let mut client = postgres::Client::connect(&admin, postgres::NoTls)
        .unwrap_or_else(|e| panic!("connecting to AGENTEST_TEST_POSTGRES: {e:?}"));
    client
        .batch_execute(&format!("CREATE DATABASE {name}"))
        .unwrap_or_else(|e| panic!("CREATE DATABASE {name}: {e:?}"));
    let url = url_with_database(&admin, &name);
    Ok(PgDatabase { admin, name, url })
}

/// `url` (`postgres://user:pass@host:port/db?options`) naming database `name`.
fn url_with_database(url: &str, name: &str) -> String {
    let (base, query) = url
        .split_once('?')
        .map_or((url, None), |(b, q)| (b, Some(q)));
    let after_scheme = base.find("://").map_or(0, |i| i + 3);
    let host_end = base[after_scheme..]
        .find('/')
        .map_or(base.len(), |i| after_scheme + i);
    match query {
        Some(q) => format!("{}/{name}?{q}", &base[..host_end]),
        None => format!("{}/{name}", &base[..host_end]),
    }
}

/// Puts the folder of the interpreter that `python3` runs first on `PATH`, for this
/// process and so for everything the tests start, when the `python3` found on `PATH` is
/// not that interpreter itself but a launcher, such as pyenv's shim (a bash script
/// running `pyenv exec`, which costs about 0.1 s of CPU before Python starts). The tests
/// start python3 several hundred times (the example agents, the scripted servers), so on
/// a machine with pyenv that was a minute of CPU of the suite. `pyenv exec` itself puts
/// that folder first on `PATH` for the program it runs, so the programs are the same.
/// Called once, before any test runs.
pub fn python_first_on_path() {
    let Some(path) = std::env::var_os("PATH") else {
        return;
    };
    let Some(dir) = python_dir(&path) else {
        return;
    };
    let dirs = std::iter::once(dir).chain(std::env::split_paths(&path));
    let path = std::env::join_paths(dirs).expect("PATH entries stay joinable");
    // Before any test's thread starts: nothing else reads the environment yet.
    std::env::set_var("PATH", path);
}

/// The folder to put first on `PATH` (see [`python_first_on_path`]), if any. Nextest
/// starts a process per test, so the first one of a run asks `python3` and leaves the
/// answer for the others.
fn python_dir(path: &std::ffi::OsStr) -> Option<PathBuf> {
    let cache = std::env::var("NEXTEST_RUN_ID")
        .ok()
        .filter(|id| !id.is_empty() && under_nextest())
        .map(|id| Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("python3-dir-{id}")));
    if let Some(answer) = cache.as_ref().and_then(|c| std::fs::read_to_string(c).ok()) {
        return (!answer.is_empty()).then(|| PathBuf::from(answer));
    }
    let dir = launched_python_dir(path);
    if let Some(cache) = cache {
        let answer = dir
            .as_deref()
            .map(Path::to_string_lossy)
            .unwrap_or_default();
        let tmp = cache.with_extension(format!("{}", std::process::id()));
        if std::fs::write(&tmp, answer.as_bytes()).is_ok() {
            let _ = std::fs::rename(&tmp, &cache);
        }
    }
    dir
}

/// The folder of the interpreter that the `python3` on `path` runs, when that `python3`
/// is not the interpreter itself.
fn launched_python_dir(path: &std::ffi::OsStr) -> Option<PathBuf> {
    let on_path = std::env::split_paths(path)
        .map(|d| d.join("python3"))
        .find(|p| p.is_file())?;
    let out = Command::new(&on_path)
        .args(["-c", "import sys; print(sys.executable)"])
        .stderr(std::process::Stdio::null())
        .output()
        .ok()
        .filter(|o| o.status.success())?;
    let exe = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
    let dir = exe.parent().filter(|d| d.join("python3").is_file())?;
    let real = |p: &Path| p.canonicalize().ok();
    (real(&on_path) != real(&dir.join("python3"))).then(|| dir.to_path_buf())
}

// ---------------------------------------------------------------------------------------
// The binary and the example agent
// ---------------------------------------------------------------------------------------

/// The binary under test.
pub const BIN: &str = env!("CARGO_BIN_EXE_agentest");

/// A process agent that answers "pass: You said X" or "fail: You said X", as the file
/// `mode.txt` in its folder says: two runs of one suite that differ as a test wants.
pub const MODE_AGENT: &str = r#"import json, sys
for line in sys.stdin:
    if not line.strip():
        continue
    req = json.loads(line)
    mode = open("mode.txt").read().strip()
    print(json.dumps({"content": mode + ": You said " + (req.get("input") or "")}), flush=True)
"#;

/// The target directory this test binary was built in: crates built by the tests
/// (the demo fixture, the README's crate) share it, and so every dependency already
/// compiled. Cargo does not hold its lock while tests run.
pub fn outer_target_dir() -> PathBuf {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    if let Some(dir) = std::env::var_os("CARGO_TARGET_DIR").filter(|d| !d.is_empty()) {
        return manifest.join(dir);
    }
    // This binary is <target>/<profile>/deps/functional-<hash>.
    std::env::current_exe()
        .ok()
        .and_then(|exe| {
            let deps = exe.parent()?;
            (deps.file_name()? == "deps").then(|| deps.parent()?.parent().map(Path::to_path_buf))?
        })
        .unwrap_or_else(|| manifest.join("target"))
}

/// A command run in `dir` with an environment free of the outer run's test settings
/// (nextest's, agentest's, libtest's, and what cargo set for this test binary), as a
/// user's shell would have it. Cargo's variables matter: a build script that watches one
/// (ring watches CARGO_MANIFEST_DIR) would otherwise rebuild in a fixture's build, and
/// again in the next outer build.
pub fn clean_command(program: impl AsRef<std::ffi::OsStr>, dir: &Path) -> Command {
    let mut cmd = Command::new(program);
    cmd.current_dir(dir);
    for (key, _) in std::env::vars_os() {
        let k = key.to_string_lossy();
        if k.contains("NEXTEST")
            || k.starts_with("AGENTEST_")
            || k.starts_with("CARGO_PKG_")
            || k.starts_with("CARGO_MANIFEST_")
            || k.starts_with("CARGO_BIN_EXE_")
            || matches!(
                &*k,
                "RUST_TEST_THREADS"
                    | "CLICOLOR_FORCE"
                    | "CARGO_BUILD_TARGET_DIR"
                    | "CARGO_CRATE_NAME"
                    | "CARGO_TARGET_TMPDIR"
                    | "CARGO_PRIMARY_PACKAGE"
            )
        {
            cmd.env_remove(&key);
        }
    }
    cmd.env("CARGO_TERM_COLOR", "never");
    // The fixture crates' cargo builds compile agentest once more (a path dependency of
    // another workspace is a unit of its own to cargo), from nothing: incremental
    // compilation only adds to a first build (about a third more, 19 s against 15 s on
    // two cores) and writes hundreds of megabytes no later build of it reads.
    cmd.env("CARGO_INCREMENTAL", "0");
    cmd
}

/// The example expense agent.
pub const EXPENSE_AGENT: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/examples/expense-agent/agent.py"
);

/// A TOML string literal (JSON string syntax is valid TOML basic-string syntax).
pub fn toml_str(s: &str) -> String {
    serde_json::to_string(s).expect("encode string")
}

/// The `[agent]` section running the example expense agent as a process.
pub fn expense_agent_section() -> String {
    format!(
        "[agent]\ntype = \"process\"\ncommand = [\"python3\", {}]\n",
        toml_str(EXPENSE_AGENT)
    )
}

/// A mutex's guard, poisoned or not.
pub fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The 1-based `line:column` (columns count characters) where `needle` first occurs in
/// `text`, counted from the start: what a located error about it must say.
pub fn line_column(text: &str, needle: &str) -> String {
    let at = text
        .find(needle)
        .unwrap_or_else(|| panic!("{needle} does not occur in the text"));
    let before = &text[..at];
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    format!(
        "{}:{}",
        before.matches('\n').count() + 1,
        before[line_start..].chars().count() + 1
    )
}

// ---------------------------------------------------------------------------------------
// Scratch directories
// ---------------------------------------------------------------------------------------

/// A scratch directory under the temporary directory, removed when dropped. Each module
/// makes its own with a `scratch(...)` function around [`Scratch::named`]; a module may add
/// methods in an `impl Scratch` block of its own, under names no other module uses (all
/// modules are one crate).
pub struct Scratch {
    pub root: PathBuf,
}

impl Scratch {
    /// An empty directory `agentest-<kind>-<tag>-<pid>-<n>-<nanos>`, canonical so that the
    /// paths the binary prints (from getcwd) match the ones a test builds.
    pub fn named(kind: &str, tag: &str) -> Scratch {
        static COUNTER: AtomicUsize = AtomicUsize::new(0);
        let n = COUNTER.fetch_add(1, Ordering::SeqCst);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        let name = format!("agentest-{kind}-{tag}-{}-{n}-{nanos}", std::process::id());
        let root = std::env::temp_dir().join(name);
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(&root).expect("create scratch dir");
        let root = root.canonicalize().expect("canonicalize scratch dir");
        Scratch { root }
    }

    pub fn path(&self) -> &Path {
        &self.root
    }

    pub fn join(&self, rel: &str) -> PathBuf {
        self.root.join(rel)
    }

    /// Writes a file, creating its parent directories.
    pub fn write(&self, rel: &str, contents: &str) {
        let path = self.join(rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).expect("create parent dir");
        }
        std::fs::write(&path, contents).expect("write file");
    }

    /// Writes a suite: one case per element, one line each.
    pub fn write_suite(&self, rel: &str, lines: &[&str]) {
        self.write(rel, &format!("{}\n", lines.join("\n")));
    }

    pub fn exists(&self, rel: &str) -> bool {
        self.join(rel).exists()
    }

    /// A file's text; a missing file fails the test, naming the files there are.
    pub fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.join(rel)).unwrap_or_else(|e| {
            let files: Vec<_> = self.files();
            panic!("read {rel}: {e}\nfiles: {files:?}")
        })
    }

    /// Every file under the scratch directory.
    pub fn files(&self) -> Vec<PathBuf> {
        fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
            for e in std::fs::read_dir(dir).expect("read dir").flatten() {
                let p = e.path();
                if p.is_dir() {
                    walk(&p, out);
                } else {
                    out.push(p);
                }
            }
        }
        let mut out = Vec::new();
        walk(&self.root, &mut out);
        out
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

// ---------------------------------------------------------------------------------------
// Processes a test's run started
// ---------------------------------------------------------------------------------------

/// Whether the process `pid` still runs (a zombie does not count: it is dead, waiting to
/// be reaped).
#[cfg(unix)]
pub fn alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // The state follows the parenthesised command name.
        Ok(stat) => stat
            .rsplit(')')
            .next()
            .and_then(|rest| rest.trim_start().chars().next())
            .is_some_and(|state| state != 'Z' && state != 'X'),
        Err(_) if Path::new("/proc/self").exists() => false,
        // SAFETY: signal 0 only checks that the process exists.
        Err(_) => unsafe { libc::kill(pid, 0) == 0 },
    }
}

/// Whether the process `pid` is gone within `grace`.
#[cfg(unix)]
pub fn gone_within(pid: i32, grace: Duration) -> bool {
    let deadline = Instant::now() + grace;
    while alive(pid) {
        if Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    true
}

/// Kills the process `pid` if it still runs and its command line passes `is_ours`, so that
/// a failing test leaves nothing behind.
#[cfg(unix)]
pub fn kill_if_running(pid: i32, is_ours: impl Fn(&str) -> bool) {
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    if alive(pid) && is_ours(&String::from_utf8_lossy(&cmdline)) {
        // SAFETY: a plain kill of a process this test's run started.
        unsafe {
            libc::kill(pid, libc::SIGKILL);
        }
    }
}

// ---------------------------------------------------------------------------------------
// Runs of the binary
// ---------------------------------------------------------------------------------------

/// `cmd` without our `CI`, `NO_COLOR` or `AGENTEST_*` variables.
/// Copies the folder `from` into `to`, with everything under it.
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("create a directory");
    for entry in std::fs::read_dir(from).expect("read a directory") {
        let entry = entry.expect("a directory entry");
        let dest = to.join(entry.file_name());
        if entry.file_type().expect("a file type").is_dir() {
            copy_dir(&entry.path(), &dest);
        } else {
            std::fs::copy(entry.path(), dest).expect("copy a file");
        }
    }
}

pub fn clean(mut cmd: Command) -> Command {
    cmd.env_remove("CI").env_remove("NO_COLOR");
    for (k, _) in std::env::vars_os() {
        if k.to_string_lossy().starts_with("AGENTEST_") {
            cmd.env_remove(k);
        }
    }
    cmd
}

/// What one run of a command left.
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl std::fmt::Debug for Run {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "exit code {}\n--- stdout ---\n{}\n--- stderr ---\n{}",
            self.code, self.stdout, self.stderr
        )
    }
}

impl Run {
    /// What a finished process left (exit code -1 when killed by a signal).
    pub fn of(out: std::process::Output) -> Run {
        Run {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }
}

/// The one pseudo-terminal driver of the tests (see its docstring).
const PTY_DRIVER: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/python/pty_driver.py");

/// Where a program run [`on_a_terminal`] asks its questions.
#[derive(Clone, Copy)]
pub enum Watch {
    Stdout,
    Stderr,
}

/// A command running `program` with its stdin on a fresh pseudo-terminal (through
/// python3 and tests/python/pty_driver.py), where each `(n, line)` of `script` is typed
/// once `program` has printed `prompt` `n` times on the `watch`ed stream, or has exited.
/// Its stdout and stderr are `program`'s, given whole once it exits, and so is its exit
/// code; add `program`'s arguments to it. Tests that use it need [`python_pty`].
pub fn on_a_terminal(
    program: impl AsRef<std::ffi::OsStr>,
    watch: Watch,
    prompt: &str,
    script: &[(usize, &str)],
) -> Command {
    let mut cmd = Command::new("python3");
    cmd.arg(PTY_DRIVER)
        .arg(match watch {
            Watch::Stdout => "stdout",
            Watch::Stderr => "stderr",
        })
        .arg(prompt)
        .arg(serde_json::to_string(script).expect("encode the script"))
        .arg(program);
    cmd
}

/// python3 with its `pty` module, which [`on_a_terminal`] and so every test on a
/// pseudo-terminal needs (see [`need`]).
pub fn python_pty() -> Needs {
    static HAVE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    let have = *HAVE.get_or_init(|| {
        Command::new("python3")
            .args(["-c", "import pty"])
            .output()
            .is_ok_and(|o| o.status.success())
    });
    if have {
        return Ok(());
    }
    need(
        "python3 with the pty module",
        "the pseudo-terminal tests run the binary on a pty opened by python3 \
         (`python3 -c 'import pty'` failed)",
    )
}

/// Runs `cmd` to the end and collects what it left.
pub fn finish(cmd: &mut Command) -> Run {
    Run::of(cmd.output().expect("run the command"))
}

// ---------------------------------------------------------------------------------------
// JSONL reports
// ---------------------------------------------------------------------------------------

/// A JSONL report: the case records and the summary line (the last line).
pub struct Report {
    pub cases: Vec<Value>,
    pub summary: Value,
    pub text: String,
}

impl Report {
    pub fn read(path: &Path) -> Report {
        let text = std::fs::read_to_string(path)
            .unwrap_or_else(|e| panic!("read report {}: {e}", path.display()));
        let mut values: Vec<Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("bad report line {l}: {e}")))
            .collect();
        let summary = values.pop().expect("report is not empty");
        assert_eq!(
            summary["type"], "summary",
            "the last line is the summary:\n{text}"
        );
        Report {
            cases: values,
            summary,
            text,
        }
    }

    /// The record of one trial; exactly one must exist.
    pub fn case(&self, trial: &str) -> &Value {
        let found: Vec<&Value> = self.cases.iter().filter(|c| c["trial"] == trial).collect();
        assert_eq!(
            found.len(),
            1,
            "expected one record for {trial} in the report:\n{}",
            self.text
        );
        found[0]
    }

    pub fn status(&self, trial: &str) -> &str {
        self.case(trial)["status"].as_str().expect("status")
    }

    pub fn error(&self, trial: &str) -> &str {
        self.case(trial)["error"]
            .as_str()
            .unwrap_or_else(|| panic!("{trial} has no error:\n{}", self.text))
    }
}

// ---------------------------------------------------------------------------------------
// A test HTTP server
// ---------------------------------------------------------------------------------------

/// An HTTP server on 127.0.0.1 that hands each connection to `handler` on its own thread;
/// stopped on drop: the stop flag set (handlers that wait may watch it), the port closed
/// and every connection shut.
pub struct TcpServer {
    pub port: u16,
    stop: Arc<AtomicBool>,
    streams: Arc<Mutex<Vec<TcpStream>>>,
    accept: Option<JoinHandle<()>>,
}

impl TcpServer {
    pub fn start(handler: impl Fn(TcpStream, &AtomicBool) + Send + Sync + 'static) -> TcpServer {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the test server");
        let port = listener.local_addr().expect("local addr").port();
        let stop = Arc::new(AtomicBool::new(false));
        let streams = Arc::new(Mutex::new(Vec::new()));
        let handler = Arc::new(handler);
        let accept = {
            let (stop, streams) = (stop.clone(), streams.clone());
            std::thread::spawn(move || {
                for stream in listener.incoming() {
                    if stop.load(Ordering::SeqCst) {
                        break;
                    }
                    let Ok(stream) = stream else { continue };
                    if let Ok(clone) = stream.try_clone() {
                        lock(&streams).push(clone);
                    }
                    let (stop, handler) = (stop.clone(), handler.clone());
                    std::thread::spawn(move || handler(stream, &stop));
                }
            })
        };
        TcpServer {
            port,
            stop,
            streams,
            accept: Some(accept),
        }
    }
}

impl Drop for TcpServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(("127.0.0.1", self.port));
        if let Some(h) = self.accept.take() {
            let _ = h.join();
        }
        for s in lock(&self.streams).drain(..) {
            let _ = s.shutdown(Shutdown::Both);
        }
    }
}

/// One HTTP/1.1 request a test server received.
#[derive(Debug, Clone)]
pub struct Request {
    pub at: Instant,
    pub method: String,
    pub path: String,
    /// Header names lowercased.
    pub headers: Vec<(String, String)>,
    pub raw: String,
    /// The body as JSON (`null` when it is not JSON).
    pub body: Value,
}

impl Request {
    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers
            .iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| v.as_str())
    }

    /// The `messages` of a chat request.
    pub fn messages(&self) -> &[Value] {
        self.body["messages"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_else(|| panic!("no messages in the request {}", self.raw))
    }
}

/// Reads one HTTP/1.1 request. None once the connection is closed or the request is cut
/// short.
pub fn read_request(reader: &mut BufReader<TcpStream>) -> Option<Request> {
    let mut line = String::new();
    if reader.read_line(&mut line).ok()? == 0 {
        return None;
    }
    let at = Instant::now();
    let mut parts = line.split_whitespace();
    let method = parts.next()?.to_string();
    let path = parts.next()?.to_string();
    let mut headers = Vec::new();
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h).ok()? == 0 {
            return None;
        }
        let h = h.trim_end();
        if h.is_empty() {
            break;
        }
        let (k, v) = h.split_once(':')?;
        headers.push((k.trim().to_ascii_lowercase(), v.trim().to_string()));
    }
    let len: usize = headers
        .iter()
        .find(|(k, _)| k == "content-length")
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    let mut body = vec![0; len];
    reader.read_exact(&mut body).ok()?;
    let raw = String::from_utf8_lossy(&body).into_owned();
    Some(Request {
        at,
        method,
        path,
        headers,
        body: serde_json::from_str(&raw).unwrap_or(Value::Null),
        raw,
    })
}

// ---------------------------------------------------------------------------------------
// A Python HTTP server in a child process
// ---------------------------------------------------------------------------------------

/// What every test server's script imports (`from serve import Handler, serve`): a
/// quiet HTTP/1.1 handler with `answer(code, body, headers)`, and `serve(H)`, which
/// listens on a free loopback port and prints `listening on PORT`.
const PY_SERVE: &str = r#"
import json
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def body_json(self):
        return json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))

    def answer(self, code, body, headers=None):
        if isinstance(body, str):
            body = body.encode()
        self.send_response(code)
        headers = dict(headers or {})
        headers.setdefault("Content-Type", "application/json")
        for k, v in headers.items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *a):
        pass

def serve(handler):
    ThreadingHTTPServer.daemon_threads = True
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    print("listening on %d" % server.server_address[1], flush=True)
    server.serve_forever()
"#;

/// A Python program serving HTTP on 127.0.0.1 (a real `http.server` in a child process),
/// killed when dropped. The program prints `listening on PORT` once it listens; a
/// script may build on [`PY_SERVE`], written beside it as `serve.py`.
pub struct PyServer {
    child: std::process::Child,
    /// The port it listens on.
    pub port: u16,
}

impl PyServer {
    /// Writes `script` to `name` in `s` and runs it with `args`, waiting for its port.
    pub fn start(s: &Scratch, name: &str, script: &str, args: &[&std::ffi::OsStr]) -> PyServer {
        s.write("serve.py", PY_SERVE);
        s.write(name, script);
        Self::with_python(Path::new("python3"), &s.join(name), args)
    }

    /// Runs the program at `script` with `python` (a venv's, say) and `args`, waiting
    /// for its port.
    pub fn with_python(python: &Path, script: &Path, args: &[&std::ffi::OsStr]) -> PyServer {
        Self::with_python_env(python, script, args, &[])
    }

    /// [`PyServer::with_python`] with more environment variables.
    pub fn with_python_env(
        python: &Path,
        script: &Path,
        args: &[&std::ffi::OsStr],
        env: &[(&str, &str)],
    ) -> PyServer {
        let name = script.display();
        let mut child = Command::new(python)
            .arg(script)
            .args(args)
            .envs(env.iter().copied())
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("start {name}: {e}"));
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("piped stdout"))
            .read_line(&mut line)
            .unwrap_or_else(|e| panic!("{name}'s port: {e}"));
        let port = line
            .trim()
            .trim_start_matches("listening on ")
            .parse()
            .unwrap_or_else(|_| panic!("no port in {line:?} from {name}"));
        PyServer { child, port }
    }
}

impl Drop for PyServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

// ---------------------------------------------------------------------------------------
// A LangGraph Agent Server
// ---------------------------------------------------------------------------------------

/// The Python modules `langgraph dev` and the graph of tests/python/langgraph_agent/
/// need.
pub const LANGGRAPH_MODULES: &[&str] = &["langgraph_cli", "langgraph_api", "langchain_openai"];

/// A `langgraph dev` server (langgraph-cli[inmem] from the frameworks venv) serving a
/// copy of tests/python/langgraph_agent/, stopped by its PID when dropped.
pub struct LangGraphDev {
    child: std::process::Child,
    /// The port it listens on (loopback).
    pub port: u16,
    log: PathBuf,
}

impl LangGraphDev {
    /// Copies the graph into `s` (`langgraph dev` writes its in-memory state's
    /// `.langgraph_api` beside it), serves it with `python`'s `langgraph` on a free
    /// loopback port, its model at `model_url`, and waits for `/ok`.
    pub fn start(python: &Path, s: &Scratch, model_url: &str) -> LangGraphDev {
        LangGraphDev::start_with(python, s, model_url, &[])
    }

    /// [`LangGraphDev::start`] with more of the graph's environment (`env`: the
    /// real-model lane's model name, streaming and token bound).
    pub fn start_with(
        python: &Path,
        s: &Scratch,
        model_url: &str,
        env: &[(&str, &str)],
    ) -> LangGraphDev {
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/langgraph_agent");
        for file in ["graph.py", "langgraph.json"] {
            let text = std::fs::read_to_string(src.join(file)).expect("read the graph");
            s.write(&format!("graph/{file}"), &text);
        }
        let dir = s.join("graph");
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let log = dir.join("langgraph-dev.log");
        let out = std::fs::File::create(&log).expect("create the server's log");
        // `langgraph dev` phones home unless told not to (the CLI's analytics), opens a
        // browser without --no-browser, and traces to LangSmith when tracing is on.
        let child = Command::new(python.with_file_name("langgraph"))
            .args(["dev", "--no-browser", "--no-reload", "--host", "127.0.0.1"])
            .args(["--port", &port.to_string()])
            .current_dir(&dir)
            .env("AGENTEST_MODEL_URL", model_url)
            .env("LANGGRAPH_CLI_NO_ANALYTICS", "1")
            .env("LANGSMITH_TRACING", "false")
            .env_remove("LANGSMITH_API_KEY")
            .env_remove("LANGCHAIN_API_KEY")
            .env_remove("OPENAI_BASE_URL")
            .envs(env.iter().copied())
            .stdin(std::process::Stdio::null())
            .stdout(out.try_clone().expect("log"))
            .stderr(out)
            .spawn()
            .expect("start langgraph dev");
        let server = LangGraphDev { child, port, log };
        server.wait_ready(Duration::from_secs(120));
        server
    }

    /// The server's base URL.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Polls `GET /ok` until it answers 200; start-up imports a lot, hence the bound.
    fn wait_ready(&self, bound: Duration) {
        use std::io::Write;
        let started = Instant::now();
        while started.elapsed() < bound {
            if let Ok(mut s) = TcpStream::connect(("127.0.0.1", self.port)) {
                let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
                let _ = s.write_all(b"GET /ok HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n");
                let mut answer = String::new();
                let _ = s.read_to_string(&mut answer);
                if answer.starts_with("HTTP/1.1 200") || answer.starts_with("HTTP/1.0 200") {
                    return;
                }
            }
            std::thread::sleep(Duration::from_millis(250));
        }
        panic!(
            "langgraph dev did not answer /ok within {bound:?}; its log:\n{}",
            std::fs::read_to_string(&self.log).unwrap_or_default()
        );
    }
}

impl Drop for LangGraphDev {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
