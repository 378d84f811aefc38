//! The run store through the real binary: every run recorded with the seed's statuses,
//! `agentest runs list|show|delete`, turned off, a store from a newer agentest refused
//! and a damaged one named.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::{finish, toml_str, PyServer, Run, Scratch, BIN, EXPENSE_AGENT};

/// A project with the example agent and a suite of four cases: one passes, one fails,
/// one errors (the agent crashes), one is skipped.
pub(crate) fn project(tag: &str) -> Scratch {
    let s = Scratch::named("store", tag);
    s.write(
        "agentest.toml",
        &format!(
            "[agent]\ntype = \"process\"\ncommand = [\"python3\", {}]\n",
            toml_str(EXPENSE_AGENT)
        ),
    );
    s.write(
        "suites/s.jsonl",
        concat!(
            r#"{"id": "ok", "input": "hello", "assert": {"type": "contains", "value": "Hello"}}"#,
            "\n",
            r#"{"id": "bad", "input": "hello", "assert": {"type": "contains", "value": "refund"}}"#,
            "\n",
            r#"{"id": "crash", "input": "CRASH now"}"#,
            "\n",
            r#"{"id": "later", "input": "hello", "skip": true}"#,
            "\n",
        ),
    );
    s
}

pub(crate) fn agentest(dir: &Path, args: &[&str], envs: &[(&str, &str)]) -> Run {
    let mut cmd = Command::new(BIN);
    cmd.current_dir(dir)
        .args(args)
        .env_remove("AGENTEST_STORE")
        .env_remove("CARGO_TARGET_DIR")
        .env("NO_COLOR", "1")
        .stdin(Stdio::null());
    for (k, v) in envs {
        cmd.env(k, v);
    }
    finish(&mut cmd)
}

/// The rows of `runs list` below its header, as (status, verdict, trial).
pub(crate) fn listed(run: &Run) -> Vec<(String, String, String)> {
    run.stdout
        .lines()
        .skip(1)
        .map(|l| {
            let cols: Vec<&str> = l.split_whitespace().collect();
            (
                cols[2].to_string(),
                cols[3].to_string(),
                cols[4].to_string(),
            )
        })
        .collect()
}

fn row(status: &str, verdict: &str, trial: &str) -> (String, String, String) {
    (status.into(), verdict.into(), trial.into())
}

/// Every case of a run is a run in the store, in the seed's lifecycle (a failed verdict
/// is `completed`, a crash is `error`), with its transcript; two invocations are two
/// executions; `runs delete` removes an execution's runs.
fn every_run_is_recorded_and_listed() {
    let s = project("record");
    let first = agentest(s.path(), &["test", "-i", "suites"], &[]);
    assert_eq!(first.code, 1, "{first:?}");
    assert!(
        s.join(".agentest/runs.db").is_file(),
        "the default place without a crate"
    );
    let list = agentest(s.path(), &["runs", "list"], &[]);
    assert_eq!(list.code, 0, "{list:?}");
    let mut rows = listed(&list);
    rows.sort();
    assert_eq!(
        rows,
        [
            row("completed", "failed", "s::bad"),
            row("completed", "passed", "s::ok"),
            row("completed", "skipped", "s::later"),
            row("error", "error", "s::crash"),
        ]
    );
    // Filters: a verdict, a status, the execution.
    let failed = agentest(s.path(), &["runs", "list", "--status", "failed"], &[]);
    assert_eq!(listed(&failed), [row("completed", "failed", "s::bad")]);
    let errors = agentest(s.path(), &["runs", "list", "--status", "error"], &[]);
    assert_eq!(listed(&errors), [row("error", "error", "s::crash")]);
    assert!(
        errors
            .stdout
            .contains("agent process exited before replying"),
        "the reason is shown: {errors:?}"
    );
    // `show`: the result and the transcript.
    let id = failed
        .stdout
        .lines()
        .nth(1)
        .unwrap()
        .split_whitespace()
        .next()
        .unwrap()
        .to_string();
    let shown = agentest(s.path(), &["runs", "show", &id], &[]);
    assert_eq!(shown.code, 0, "{shown:?}");
    assert!(
        shown.stdout.starts_with(&format!(
            "run {id} (execution 1): s::bad\nstatus: completed (failed)\n"
        )),
        "{shown:?}"
    );
    assert!(
        shown
            .stdout
            .contains("expected the reply to contain \"refund\""),
        "{shown:?}"
    );
    // A second invocation is a second execution.
    agentest(s.path(), &["test", "-i", "suites"], &[]);
    let second = agentest(s.path(), &["runs", "list", "--execution", "2"], &[]);
    assert_eq!(listed(&second).len(), 4, "{second:?}");
    let all = agentest(s.path(), &["runs", "list", "--limit", "100"], &[]);
    assert_eq!(listed(&all).len(), 8, "{all:?}");
    let deleted = agentest(s.path(), &["runs", "delete", "--execution", "1"], &[]);
    assert_eq!(deleted.code, 0, "{deleted:?}");
    assert_eq!(deleted.stderr, "deleted 4 runs\n");
    let left = agentest(s.path(), &["runs", "list", "--limit", "100"], &[]);
    assert_eq!(listed(&left).len(), 4, "{left:?}");
    let missing = agentest(s.path(), &["runs", "show", "1"], &[]);
    assert_eq!(missing.code, 2, "{missing:?}");
    assert!(missing.stderr.contains("no run 1 in "), "{missing:?}");
}

/// `AGENTEST_STORE=off` records nothing; `AGENTEST_STORE=FILE` and `[store] path` say
/// where; a crate's store is in its target directory.
fn the_store_goes_where_it_is_told() {
    let s = project("where");
    let off = agentest(
        s.path(),
        &["test", "-i", "suites"],
        &[("AGENTEST_STORE", "off")],
    );
    assert_eq!(off.code, 1, "{off:?}");
    assert!(!s.join(".agentest").exists());
    agentest(
        s.path(),
        &["test", "-i", "suites"],
        &[("AGENTEST_STORE", "elsewhere/my.db")],
    );
    assert!(s.join("elsewhere/my.db").is_file());
    s.write(
        "agentest.toml",
        &format!(
            "[agent]\ntype = \"process\"\ncommand = [\"python3\", {}]\n\n[store]\npath = \"runs/store.db\"\n",
            toml_str(EXPENSE_AGENT)
        ),
    );
    agentest(s.path(), &["test", "-i", "suites"], &[]);
    assert!(s.join("runs/store.db").is_file());
    // In a crate: target/agentest/runs.db.
    let c = project("crate");
    c.write(
        "Cargo.toml",
        "[package]\nname = \"x\"\nversion = \"0.1.0\"\n",
    );
    agentest(c.path(), &["test", "-i", "suites"], &[]);
    assert!(c.join("target/agentest/runs.db").is_file());
    let list = agentest(c.path(), &["runs", "list"], &[]);
    assert_eq!(listed(&list).len(), 4, "{list:?}");
}

/// A store address with a URL scheme agentest does not support is refused before
/// anything runs, naming the scheme and never the password, and no file is made (taken
/// as a path, `mysql://root:pw@db/x` once became an SQLite file named after the
/// password); `--store` on `runs` refuses it the same way.
fn a_store_url_of_another_scheme_is_refused_by_name() {
    let s = project("scheme");
    let url = "mysql://root:pw-hunter2-secret@db:3306/agentest";
    let r = agentest(
        s.path(),
        &["test", "-i", "suites"],
        &[("AGENTEST_STORE", url)],
    );
    assert_eq!(r.code, 2, "{r:?}");
    assert!(
        r.stderr
            .contains("AGENTEST_STORE=\"mysql://***@db:3306/agentest\"")
            && r.stderr.contains("`mysql:` is no scheme agentest supports"),
        "{r:?}"
    );
    assert!(r.stdout.is_empty(), "nothing ran: {r:?}");
    let listing = format!("{:?}", walk(s.path()));
    for said in [&r.stderr, &listing] {
        assert!(!said.contains("hunter2"), "the password leaked: {said}");
    }
    assert!(!s.join("mysql:").exists(), "no file was made: {listing}");
    let r = agentest(s.path(), &["runs", "list", "--store", url], &[]);
    assert_eq!(r.code, 2, "{r:?}");
    assert!(
        r.stderr.contains("URL scheme `mysql:`") && !r.stderr.contains("hunter2"),
        "{r:?}"
    );
}

/// `[store]` with both `path` and `url`, or a `url` that is no PostgreSQL URL, is a
/// config error before anything runs.
fn a_config_store_of_two_kinds_or_another_scheme_is_refused() {
    let s = project("store-config");
    let config = std::fs::read_to_string(s.join("agentest.toml")).unwrap();
    for (store, said) in [
        (
            "path = \"runs.db\"\nurl = \"postgres://db/x\"",
            "[store]: give `path` (a file) or `url` (a PostgreSQL database), not both",
        ),
        (
            "url = \"mysql://u:pw-secret-x@db/x\"",
            "[store]: expected a postgres:// or postgresql:// URL, found `mysql://***@db/x`",
        ),
        (
            "lease = \"1s\"",
            "[store]: lease: 1s is too short for heartbeats three times per lease",
        ),
        ("lease = \"soon\"", "[store].lease: "),
    ] {
        s.write("agentest.toml", &format!("{config}\n[store]\n{store}\n"));
        let r = agentest(s.path(), &["test", "-i", "suites"], &[]);
        assert_eq!(r.code, 2, "{r:?}");
        assert!(r.stderr.contains(said), "{r:?}");
        assert!(!r.stderr.contains("pw-secret-x"), "{r:?}");
    }
}

/// `agentest store migrate` makes a new SQLite store at the current version, once;
/// `store check` says what it holds; a store that is not there is named.
fn store_check_and_migrate_operate_a_file() {
    let s = project("store-cmd");
    let db = s.join("ops.db");
    let store = [("AGENTEST_STORE", db.to_str().unwrap())];
    let r = agentest(s.path(), &["store", "check"], &store);
    assert_eq!(r.code, 2, "{r:?}");
    assert!(r.stderr.contains("no run store at"), "{r:?}");
    let r = agentest(s.path(), &["store", "migrate"], &store);
    assert_eq!(r.code, 0, "{r:?}");
    assert!(r.stderr.contains("from schema version 0 to 10"), "{r:?}");
    agentest(s.path(), &["test", "-i", "suites"], &store);
    let r = agentest(s.path(), &["store", "check"], &store);
    assert_eq!(r.code, 0, "{r:?}");
    assert_eq!(
        r.stdout,
        format!(
            "store: {} (SQLite file)\nschema: version 10 (current)\nexecutions: 1\nruns: 4 (completed 3, error 1)\n",
            db.display()
        )
    );
}

/// Every path under `dir`.
fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(&p));
        }
        out.push(p);
    }
    out
}

/// Processes that give one `AGENTEST_EXECUTION` record into one execution: two
/// invocations on different suites are one execution, which `runs list`, `runs export`
/// and `report` find by its key; an unknown key is said with the way out.
fn processes_with_one_execution_key_make_one_execution() {
    let s = project("key");
    s.write(
        "suites/t.jsonl",
        concat!(
            r#"{"id": "ok2", "input": "hello", "assert": {"type": "contains", "value": "Hello"}}"#,
            "\n"
        ),
    );
    let key = [("AGENTEST_EXECUTION", "pr-42")];
    agentest(s.path(), &["test", "-i", "suites/s.jsonl"], &key);
    let r = agentest(s.path(), &["test", "-i", "suites/t.jsonl"], &key);
    assert_eq!(r.code, 0, "{r:?}");
    agentest(s.path(), &["test", "-i", "suites/t.jsonl"], &[]);
    let list = agentest(s.path(), &["runs", "list", "--execution", "pr-42"], &[]);
    let mut trials: Vec<String> = listed(&list).into_iter().map(|(_, _, t)| t).collect();
    trials.sort();
    assert_eq!(
        trials,
        ["s::bad", "s::crash", "s::later", "s::ok", "t::ok2"],
        "{list:?}"
    );
    let execution: std::collections::BTreeSet<String> = list
        .stdout
        .lines()
        .skip(1)
        .map(|l| l.split_whitespace().nth(1).unwrap().to_string())
        .collect();
    assert_eq!(execution.len(), 1, "one execution: {list:?}");
    let out = s.join("whole.jsonl");
    let r = agentest(
        s.path(),
        &[
            "report",
            "--execution",
            "pr-42",
            "-o",
            out.to_str().unwrap(),
        ],
        &[],
    );
    assert_eq!(r.code, 0, "{r:?}");
    let report = std::fs::read_to_string(&out).unwrap();
    let cases = report.lines().filter(|l| l.contains("\"trial\"")).count();
    assert_eq!(cases, 5, "{report}");
    assert!(
        report.contains(r#""type":"summary","total":5,"passed":2"#),
        "{report}"
    );
    let r = agentest(
        s.path(),
        &[
            "runs",
            "export",
            "--format",
            "jsonl",
            "--execution",
            "pr-43",
        ],
        &[],
    );
    assert_eq!(r.code, 2, "{r:?}");
    assert!(
        r.stderr.contains("no execution with the key `pr-43`"),
        "{r:?}"
    );
}

/// A store written by a newer agentest is refused, untouched; a file that is no
/// database is named with the way out; either way nothing runs, and with the store off
/// the run goes on.
fn a_newer_or_damaged_store_is_refused_with_the_way_out() {
    let s = project("refused");
    let db = s.join("future.db");
    {
        let conn = rusqlite::Connection::open(&db).unwrap();
        conn.execute_batch("CREATE TABLE later (x); PRAGMA user_version = 99;")
            .unwrap();
    }
    let before = std::fs::read(&db).unwrap();
    let db_str = db.to_str().unwrap();
    let r = agentest(
        s.path(),
        &["test", "-i", "suites"],
        &[("AGENTEST_STORE", db_str)],
    );
    assert_eq!(r.code, 2, "{r:?}");
    assert_eq!(
        r.stderr.trim_end(),
        format!("error: the run store {db_str} has schema version 99, newer than this agentest's (10): it was written by a newer agentest; use that version, set AGENTEST_STORE to another file, or AGENTEST_STORE=off to run without the store")
    );
    assert!(r.stdout.is_empty(), "nothing ran: {r:?}");
    assert_eq!(
        std::fs::read(&db).unwrap(),
        before,
        "the store is untouched"
    );
    let junk = s.join("junk.db");
    std::fs::write(&junk, "this is not a database, just some text that is long enough to be read as a header by SQLite; it is not one").unwrap();
    let junk_str = junk.to_str().unwrap();
    let r = agentest(
        s.path(),
        &["test", "-i", "suites"],
        &[("AGENTEST_STORE", junk_str)],
    );
    assert_eq!(r.code, 2, "{r:?}");
    assert!(
        r.stderr.starts_with(&format!(
            "error: failed to open the run store {junk_str}: file is not a database"
        )) && r
            .stderr
            .contains("AGENTEST_STORE=off to run without the store"),
        "{r:?}"
    );
    let off = agentest(
        s.path(),
        &["test", "-i", "suites"],
        &[("AGENTEST_STORE", "off")],
    );
    assert_eq!(off.code, 1, "runs (and fails on its failing case): {off:?}");
}

/// A store whose folder (or file) this user may not write is refused with the OS's
/// reason — permission denied — and the fix, not "if the file is damaged". As root,
/// whom permissions do not stop, the binary runs as `nobody`.
fn an_unwritable_store_says_permission_denied_and_the_fix() {
    use std::os::unix::fs::PermissionsExt;
    use std::os::unix::process::CommandExt;
    let s = project("unwritable");
    let folder = s.join("locked");
    std::fs::create_dir(&folder).unwrap();
    let db = folder.join("runs.db");
    let run = || {
        let mut cmd = Command::new(BIN);
        cmd.current_dir(s.path())
            .args(["test", "-i", "suites"])
            .env_remove("CARGO_TARGET_DIR")
            .env("AGENTEST_STORE", &db)
            .env("NO_COLOR", "1")
            .stdin(Stdio::null());
        // SAFETY: getuid is async-signal-safe and has no failure.
        if unsafe { libc::getuid() } == 0 {
            cmd.uid(65534).gid(65534);
        }
        finish(&mut cmd)
    };
    let denied = |what: &Path| {
        format!(
            "error: failed to open the run store {}: cannot write {}: Permission denied (os error 13); give this user write permission to {} (chmod u+w, or chown), set AGENTEST_STORE to a file in a writable folder, or AGENTEST_STORE=off to run without the store",
            db.display(),
            what.display(),
            what.display()
        )
    };
    let mode =
        |p: &Path, m: u32| std::fs::set_permissions(p, std::fs::Permissions::from_mode(m)).unwrap();
    // A folder this user may not write, and no store in it yet.
    mode(&folder, 0o555);
    let r = run();
    assert_eq!(r.code, 2, "{r:?}");
    assert_eq!(r.stderr.trim_end(), denied(&folder), "{r:?}");
    assert!(r.stdout.is_empty(), "nothing ran: {r:?}");
    // A store this user may not write, made by another.
    mode(&folder, 0o755);
    drop(rusqlite::Connection::open(&db).unwrap());
    mode(&db, 0o444);
    let r = run();
    assert_eq!(r.code, 2, "{r:?}");
    assert_eq!(r.stderr.trim_end(), denied(&db), "{r:?}");
}

/// Processes started together on one new store (as nextest starts them): each is an
/// execution of its own with every case recorded once, and none sees "database is
/// locked" or loses a write.
fn processes_at_once_share_one_store() {
    let s = project("together");
    let db = s.join("shared/runs.db");
    let db_str = db.to_str().unwrap().to_string();
    let children: Vec<std::process::Child> = (0..8)
        .map(|_| {
            Command::new(BIN)
                .current_dir(s.path())
                .args(["test", "-i", "suites"])
                .env_remove("CARGO_TARGET_DIR")
                .env("AGENTEST_STORE", &db_str)
                .env("NO_COLOR", "1")
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .expect("start agentest")
        })
        .collect();
    for child in children {
        let out = child.wait_with_output().expect("agentest ends");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{stderr}");
        assert!(!stderr.contains("store"), "{stderr}");
    }
    let conn = rusqlite::Connection::open(&db).unwrap();
    let count = |sql: &str| -> i64 { conn.query_row(sql, [], |r| r.get(0)).unwrap() };
    assert_eq!(count("SELECT COUNT(*) FROM executions"), 8);
    assert_eq!(count("SELECT COUNT(*) FROM runs"), 32);
    assert_eq!(
        count("SELECT COUNT(*) FROM runs WHERE status IN ('completed', 'error')"),
        32,
        "every run ended"
    );
    assert_eq!(
        count("SELECT COUNT(DISTINCT execution_id || trial) FROM runs"),
        32,
        "each case once per execution"
    );
}

/// An HTTP agent that takes `argv[2]` seconds per reply and logs each request's case id
/// and the address it came from (`c001 127.0.0.1`) to `argv[1]`; it listens on one port
/// on each address of `argv[3:]`.
const SLOW_AGENT: &str = r#"
import json, sys, threading, time
from http.server import ThreadingHTTPServer
from serve import Handler
log = open(sys.argv[1], "a", buffering=1)
delay = float(sys.argv[2])
class H(Handler):
    def do_POST(self):
        req = self.body_json()
        log.write("%s %s\n" % (req["test_id"], self.client_address[0]))
        time.sleep(delay)
        self.answer(200, json.dumps({"content": "done " + req["input"]}))
ThreadingHTTPServer.daemon_threads = True
ThreadingHTTPServer.request_queue_size = 128
first, rest = sys.argv[3], sys.argv[4:]
servers = [ThreadingHTTPServer((first, 0), H)]
port = servers[0].server_address[1]
servers += [ThreadingHTTPServer((host, port), H) for host in rest]
for s in servers[1:]:
    threading.Thread(target=s.serve_forever, daemon=True).start()
print("listening on %d" % port, flush=True)
servers[0].serve_forever()
"#;

/// How [`slow_project_with`] sets up its agent.
pub(crate) struct SlowAgent<'a> {
    /// Seconds per reply.
    pub(crate) delay: f64,
    /// The addresses it listens on, all on one port.
    pub(crate) hosts: &'a [&'a str],
    /// The host of `[agent] url` (a `${VAR}` is expanded by each agentest process).
    pub(crate) url_host: &'a str,
    /// More of agentest.toml, after `[agent]`.
    pub(crate) toml: &'a str,
}

/// A project of `n` one-turn cases against an agent that takes 100 ms per reply, on
/// 127.0.0.1; the agent's log is `agent.log`.
pub(crate) fn slow_project(tag: &str, n: usize) -> (Scratch, PyServer) {
    slow_project_with(
        tag,
        n,
        &SlowAgent {
            delay: 0.1,
            hosts: &["127.0.0.1"],
            url_host: "127.0.0.1",
            toml: "",
        },
    )
}

/// A project of `n` one-turn cases against the slow agent set up as `agent` says; the
/// agent's log is `agent.log`.
pub(crate) fn slow_project_with(tag: &str, n: usize, agent: &SlowAgent) -> (Scratch, PyServer) {
    let s = Scratch::named("store", tag);
    let log = s.join("agent.log");
    let delay = agent.delay.to_string();
    let mut args = vec![log.as_os_str(), std::ffi::OsStr::new(&delay)];
    args.extend(agent.hosts.iter().map(std::ffi::OsStr::new));
    let server = PyServer::start(&s, "agent.py", SLOW_AGENT, &args);
    let (host, port) = (agent.url_host, server.port);
    s.write(
        "agentest.toml",
        &format!(
            "[agent]\ntype = \"http\"\nurl = \"http://{host}:{port}/\"\n{}",
            agent.toml
        ),
    );
    let cases: String = (0..n)
        .map(|i| format!("{{\"id\": \"c{i:03}\", \"input\": \"case {i}\", \"assert\": {{\"type\": \"contains\", \"value\": \"done case {i}\"}}}}\n"))
        .collect();
    s.write("suites/s.jsonl", &cases);
    (s, server)
}

/// Starts `agentest test -i suites --parallel 16 <extra>` in `s`, with the store in it.
fn start(s: &Scratch, extra: &[&str]) -> Child {
    Command::new(BIN)
        .current_dir(s.path())
        .args(["test", "-i", "suites", "--parallel", "16", "--compact"])
        .args(extra)
        .env_remove("CARGO_TARGET_DIR")
        .env("AGENTEST_STORE", s.join("runs.db"))
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start agentest")
}

/// Kills `agentest` with SIGKILL once the agent has seen `requests` requests.
pub(crate) fn kill_after(s: &Scratch, mut child: Child, requests: usize) {
    let until = Instant::now() + Duration::from_secs(30);
    while Instant::now() < until {
        let seen = std::fs::read_to_string(s.join("agent.log"))
            .unwrap_or_default()
            .lines()
            .count();
        if seen >= requests {
            break;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    child.kill().expect("SIGKILL");
    let _ = child.wait();
}

/// How many requests the agent got for each case.
pub(crate) fn requests(s: &Scratch) -> BTreeMap<String, usize> {
    let mut by = BTreeMap::new();
    for (id, _) in agent_log(s) {
        *by.entry(id).or_insert(0) += 1;
    }
    by
}

/// The slow agent's log, in order: (case id, the address the request came from).
pub(crate) fn agent_log(s: &Scratch) -> Vec<(String, String)> {
    std::fs::read_to_string(s.join("agent.log"))
        .unwrap()
        .lines()
        .map(|l| {
            let (id, from) = l.split_once(' ').unwrap_or((l, ""));
            (id.to_string(), from.to_string())
        })
        .collect()
}

/// [`requests`] once the agent's log has not grown for 300 ms (at most 10 s).
fn settled_requests(s: &Scratch) -> BTreeMap<String, usize> {
    let until = Instant::now() + Duration::from_secs(10);
    let mut seen = requests(s);
    loop {
        std::thread::sleep(Duration::from_millis(300));
        let now = requests(s);
        if now == seen || Instant::now() > until {
            return now;
        }
        seen = now;
    }
}

/// The store's runs of its one execution: (trial, status, how many rows).
fn stored(s: &Scratch) -> (i64, Vec<(String, String)>) {
    let conn = rusqlite::Connection::open(s.join("runs.db")).unwrap();
    let executions: i64 = conn
        .query_row("SELECT COUNT(*) FROM executions", [], |r| r.get(0))
        .unwrap();
    let runs = conn
        .prepare("SELECT trial, status FROM runs ORDER BY trial")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .collect::<Result<Vec<_>, _>>()
        .unwrap();
    (executions, runs)
}

/// [`share_an_execution`] among three plain `agentest worker` processes of this machine,
/// each given the store at `store`.
pub(crate) fn workers_share_an_execution(s: &Scratch, store: &str, runs: usize) {
    let start = |_: usize, args: &[&str]| {
        let mut cmd = Command::new(BIN);
        cmd.args(args).env("AGENTEST_STORE", store);
        cmd
    };
    share_an_execution(
        s,
        runs,
        Workers {
            store,
            env: &[],
            start: &start,
            killed: &mut |_| {},
        },
    );
}

/// How [`share_an_execution`] runs its workers.
pub(crate) struct Workers<'a> {
    /// The store, as this machine's agentest (`--enqueue`, `runs list`, `report`)
    /// reaches it.
    pub(crate) store: &'a str,
    /// More environment for those commands.
    pub(crate) env: &'a [(&'a str, &'a str)],
    /// The command that runs worker `i` (0, 1 or 2; 0 is killed): the binary with these
    /// arguments, wherever it runs, with the store it reaches there.
    pub(crate) start: &'a dyn Fn(usize, &[&str]) -> Command,
    /// Told the killed worker's pid as soon as it is dead.
    pub(crate) killed: &'a mut dyn FnMut(u32),
}

/// `agentest test --enqueue` plans an execution's runs into the store (twice: nothing
/// more is queued), three `agentest worker` processes run them, the first is killed
/// with SIGKILL once a third of the runs reached the agent: every run completed exactly
/// once in the store, no run left queued or running, the report from the store whole,
/// and only runs the killed worker had in flight reached the agent twice. Returns the
/// workers' pids.
pub(crate) fn share_an_execution(s: &Scratch, runs: usize, workers: Workers) -> [u32; 3] {
    let mut key = vec![
        ("AGENTEST_EXECUTION", "work-1"),
        ("AGENTEST_STORE", workers.store),
    ];
    key.extend_from_slice(workers.env);
    for _ in 0..2 {
        let r = agentest(s.path(), &["test", "-i", "suites", "--enqueue"], &key);
        assert_eq!(r.code, 0, "{r:?}");
        assert!(r.stdout.is_empty(), "nothing ran: {r:?}");
    }
    let list = agentest(
        s.path(),
        &["runs", "list", "--execution", "work-1", "--limit", "100000"],
        &key,
    );
    let rows = listed(&list);
    assert_eq!(rows.len(), runs, "a second --enqueue adds nothing");
    assert!(
        rows.iter().all(|(status, _, _)| status == "queued"),
        "{list:?}"
    );
    let worker = |i: usize| {
        let args = [
            "worker",
            "--execution",
            "work-1",
            "--parallel",
            "8",
            "--poll",
            "200ms",
        ];
        (workers.start)(i, &args)
            .current_dir(s.path())
            .env("NO_COLOR", "1")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start a worker")
    };
    let mut started: Vec<Child> = (0..3).map(worker).collect();
    let pids = [started[0].id(), started[1].id(), started[2].id()];
    kill_after(s, started.remove(0), runs / 3);
    (workers.killed)(pids[0]);
    for w in started {
        let out = w.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{stderr}");
        assert!(
            stderr.contains("agentest worker: execution work-1 ended"),
            "{stderr}"
        );
    }
    let list = agentest(
        s.path(),
        &["runs", "list", "--execution", "work-1", "--limit", "100000"],
        &key,
    );
    let rows = listed(&list);
    assert_eq!(rows.len(), runs, "one run per case");
    assert!(
        rows.iter()
            .all(|(status, verdict, _)| status == "completed" && verdict == "passed"),
        "{list:?}"
    );
    let by_case = requests(s);
    assert_eq!(by_case.len(), runs, "every case reached the agent");
    // In flight: the 8 the killed worker was running, and those that had ended but
    // whose end its store writer had not yet committed (as for a killed run's resume).
    let twice = by_case.values().filter(|n| **n > 1).count();
    assert!(
        by_case.values().all(|n| *n <= 2) && twice <= 16,
        "only the killed worker's runs in flight ran again: {twice}\n{by_case:?}"
    );
    let report = s.join("whole.jsonl");
    let r = agentest(
        s.path(),
        &[
            "report",
            "--execution",
            "work-1",
            "-o",
            report.to_str().unwrap(),
        ],
        &key,
    );
    assert_eq!(r.code, 0, "{r:?}");
    let text = std::fs::read_to_string(&report).unwrap();
    assert_eq!(
        text.lines().filter(|l| l.contains("\"trial\"")).count(),
        runs
    );
    pids
}

/// A queued run whose case was removed from the suites after `--enqueue` ends as an
/// `error` that says so; the others run; the worker ends (exit 0) with a line saying
/// how many runs it took. Without the execution, a worker says how to plan one.
fn a_worker_ends_a_run_whose_case_is_gone() {
    let s = project("worker-gone");
    let store = s.join("runs.db");
    let env = [
        ("AGENTEST_STORE", store.to_str().unwrap()),
        ("AGENTEST_EXECUTION", "gone-1"),
    ];
    let r = agentest(s.path(), &["test", "-i", "suites", "--enqueue"], &env);
    assert_eq!(r.code, 0, "{r:?}");
    assert!(r.stderr.contains("queued 4 runs into execution"), "{r:?}");
    let suite = std::fs::read_to_string(s.join("suites/s.jsonl")).unwrap();
    let kept: String = suite
        .lines()
        .filter(|l| !l.contains("\"later\""))
        .map(|l| format!("{l}\n"))
        .collect();
    s.write("suites/s.jsonl", &kept);
    let r = agentest(
        s.path(),
        &["worker", "--execution", "gone-1", "--poll", "100ms"],
        &env,
    );
    assert_eq!(r.code, 0, "a failing case does not fail the worker: {r:?}");
    assert!(
        r.stderr
            .contains("execution gone-1 ended; this worker ran 4 runs"),
        "{r:?}"
    );
    let show = agentest(
        s.path(),
        &["runs", "list", "--execution", "gone-1", "--status", "error"],
        &env,
    );
    let rows = listed(&show);
    assert!(
        rows.contains(&row("error", "error", "s::later")),
        "{show:?}"
    );
    assert!(show.stdout.contains("no longer in the suites"), "{show:?}");
    let r = agentest(s.path(), &["worker", "--execution", "nope"], &env);
    assert_eq!(r.code, 2, "{r:?}");
    assert!(
        r.stderr.contains("agentest test -i SUITES --enqueue"),
        "{r:?}"
    );
}

/// [`workers_share_an_execution`] on the SQLite store: the processes of one machine.
fn workers_on_one_machine_run_every_queued_run_once() {
    let (s, _agent) = slow_project("workers", 300);
    let store = s.join("runs.db");
    workers_share_an_execution(&s, store.to_str().unwrap(), 300);
}

/// `kill -9` in the middle of a 200-case run, then `--resume`: one execution, every
/// case completed exactly once in the store, the resumed run's report covering all
/// 200; only the cases in flight at the kill reached the agent twice.
fn a_killed_run_resumes_with_every_case_once() {
    let (s, _agent) = slow_project("resume", 200);
    kill_after(&s, start(&s, &[]), 60);
    let (_, before) = stored(&s);
    let ended = before.iter().filter(|(_, st)| st == "completed").count();
    assert!(ended > 0 && ended < 200, "killed mid-run: {ended} ended");
    assert!(
        before.iter().any(|(_, st)| st == "running"),
        "in flight at the kill"
    );
    let resumed = start(&s, &["--resume", "-o", "r.jsonl"])
        .wait_with_output()
        .unwrap();
    let out = String::from_utf8_lossy(&resumed.stdout);
    assert_eq!(
        resumed.status.code(),
        Some(0),
        "{out}\n{}",
        String::from_utf8_lossy(&resumed.stderr)
    );
    assert!(
        out.contains(&format!(
            "ℹ Resumed: execution 1, {ended} of 200 cases had ended and are kept; {} to run",
            200 - ended
        )),
        "{out}"
    );
    let (executions, runs) = stored(&s);
    assert_eq!(executions, 1);
    assert_eq!(runs.len(), 200);
    assert!(runs.iter().all(|(_, st)| st == "completed"), "{runs:?}");
    // The report covers the whole execution.
    let report = crate::common::Report::read(&s.join("r.jsonl"));
    assert_eq!(report.cases.len(), 200);
    assert_eq!(report.summary["passed"], 200);
    let asked = requests(&s);
    assert_eq!(asked.len(), 200, "every case reached the agent");
    // In flight at the kill: the 16 running, and those that had ended but whose end
    // the store's writer had not yet written (it gathers a wave's for 2 ms).
    let twice = asked.values().filter(|n| **n == 2).count();
    assert!(
        asked.values().all(|n| *n <= 2) && twice <= 24,
        "only those in flight: {asked:?}"
    );
}

/// Ctrl-C stops a worker: it ends (exit 130) without claiming another batch, and the
/// runs it left are still queued for the other workers.
fn ctrl_c_stops_a_worker_and_it_claims_nothing_more() {
    let (s, _agent) = slow_project("worker-ctrl-c", 200);
    let store = s.join("runs.db");
    let env = [
        ("AGENTEST_STORE", store.to_str().unwrap()),
        ("AGENTEST_EXECUTION", "stop-1"),
    ];
    let r = agentest(s.path(), &["test", "-i", "suites", "--enqueue"], &env);
    assert_eq!(r.code, 0, "{r:?}");
    let mut worker = Command::new(BIN)
        .current_dir(s.path())
        .args(["worker", "--execution", "stop-1", "--parallel", "4"])
        .envs(env)
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start a worker");
    let until = Instant::now() + Duration::from_secs(30);
    while requests(&s).len() < 8 && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(10));
    }
    // SAFETY: a signal to the child this test started.
    assert_eq!(unsafe { libc::kill(worker.id() as i32, libc::SIGINT) }, 0);
    let stopped = Instant::now();
    while worker.try_wait().unwrap().is_none() && stopped.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(20));
    }
    let gone = worker.try_wait().unwrap().is_some();
    if !gone {
        worker.kill().expect("SIGKILL");
    }
    let out = worker.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        gone,
        "the worker was still running 5 s after Ctrl-C: {stderr}"
    );
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    let sent = settled_requests(&s).len();
    assert!(
        sent < 40,
        "it kept claiming after Ctrl-C: {sent} cases sent"
    );
    let list = agentest(
        s.path(),
        &[
            "runs",
            "list",
            "--execution",
            "stop-1",
            "--status",
            "queued",
            "--limit",
            "1000",
        ],
        &env,
    );
    assert!(listed(&list).len() >= 160, "{list:?}");
}

/// An execution of its own (no key) is run by one process, whose cases start without
/// claiming their runs one by one: a `--resume` while that process lives refuses,
/// naming it, and changes nothing; once it is gone (SIGKILL), the resume runs what is
/// left, each case once.
fn a_resume_waits_for_the_process_running_the_execution() {
    let (s, _agent) = slow_project("exclusive", 100);
    let store = s.join("runs.db");
    let env = [("AGENTEST_STORE", store.to_str().unwrap())];
    let mut first = start(&s, &[]);
    let until = Instant::now() + Duration::from_secs(30);
    while requests(&s).len() < 10 && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(20));
    }
    let refused = agentest(s.path(), &["test", "-i", "suites", "--resume"], &env);
    assert_eq!(refused.code, 2, "{refused:?}");
    assert!(
        refused.stderr.contains(&format!(
            "execution 1 in the run store {} is still being run by process {} on ",
            store.display(),
            first.id()
        )),
        "{refused:?}"
    );
    assert!(refused.stdout.is_empty(), "nothing ran: {refused:?}");
    first.kill().expect("SIGKILL");
    let _ = first.wait();
    let resumed = agentest(s.path(), &["test", "-i", "suites", "--resume"], &env);
    assert_eq!(resumed.code, 0, "{resumed:?}");
    let (executions, runs) = stored(&s);
    assert_eq!(executions, 1);
    assert!(
        runs.len() == 100 && runs.iter().all(|(_, st)| st == "completed"),
        "{runs:?}"
    );
}

/// Waits (at most 30 s) until the store in `s` holds at least `n` ended runs.
fn wait_ended(s: &Scratch, n: usize) {
    let until = Instant::now() + Duration::from_secs(30);
    let ended = || -> rusqlite::Result<i64> {
        let conn = rusqlite::Connection::open_with_flags(
            s.join("runs.db"),
            rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
        )?;
        conn.query_row(
            "SELECT COUNT(*) FROM runs WHERE status = 'completed'",
            [],
            |r| r.get(0),
        )
    };
    while Instant::now() < until {
        // Before the run made the store, it cannot be read.
        if ended().is_ok_and(|e| e >= n as i64) {
            return;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    panic!("the run never ended {n} cases");
}

/// Killed after its first cases ended, then the suite edited (a case made to fail,
/// another's input changed, a third deleted, a fourth added) and `--resume`d: the
/// changed cases run again with their new definitions, the deleted one is left out of
/// the report (said once), the new one runs, and the run fails as the edited case does.
fn a_resume_runs_again_what_changed_and_drops_what_is_gone() {
    let (s, _agent) = slow_project("resume-stale", 30);
    let run = Command::new(BIN)
        .current_dir(s.path())
        .args(["test", "-i", "suites", "--parallel", "1", "--compact"])
        .env_remove("CARGO_TARGET_DIR")
        .env("AGENTEST_STORE", s.join("runs.db"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_ended(&s, 3);
    let mut run = run;
    run.kill().unwrap();
    let _ = run.wait();
    let suite = s.read("suites/s.jsonl");
    let suite = suite
        // c000 must now fail; c001 asks something else (and expects its answer).
        .replace(r#""value": "done case 0""#, r#""value": "refund approved""#)
        .replace("case 1\"", "case one\"")
        // c002 is deleted; c100 is new.
        .lines()
        .filter(|l| !l.contains("\"c002\""))
        .chain([r#"{"id": "c100", "input": "case 100", "assert": {"type": "contains", "value": "done case 100"}}"#])
        .collect::<Vec<_>>()
        .join("\n");
    s.write("suites/s.jsonl", &(suite + "\n"));
    let resumed = Command::new(BIN)
        .current_dir(s.path())
        .args([
            "test",
            "-i",
            "suites",
            "--resume",
            "-o",
            "r.jsonl",
            "--compact",
        ])
        .env_remove("CARGO_TARGET_DIR")
        .env("AGENTEST_STORE", s.join("runs.db"))
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let run = crate::common::Run::of(resumed);
    assert_eq!(run.code, 1, "the edited case fails: {run:?}");
    assert_eq!(
        run.stderr
            .matches("note: 1 stored run that had ended is left out of this report: its case is no longer in the suites: s::c002")
            .count(),
        1,
        "{run:?}"
    );
    assert!(
        run.stdout
            .contains("(2 more had ended but changed since, and run again)"),
        "{run:?}"
    );
    let report = crate::common::Report::read(&s.join("r.jsonl"));
    assert_eq!(report.status("s::c000"), "failed");
    assert_eq!(report.status("s::c001"), "passed");
    assert_eq!(
        report.case("s::c001")["turns"][0]["input"],
        "case one",
        "the new input's transcript"
    );
    assert_eq!(report.status("s::c100"), "passed");
    assert!(
        report.cases.iter().all(|c| c["trial"] != "s::c002"),
        "the deleted case is not reported"
    );
    assert_eq!(report.cases.len(), 30);
    let asked = requests(&s);
    assert_eq!(asked["c000"], 2, "run again: {asked:?}");
    assert_eq!(asked["c001"], 2, "run again: {asked:?}");
    assert_eq!(asked.get("c002"), Some(&1), "never again: {asked:?}");
}

/// Ctrl-C (a real SIGINT to the binary) in the middle of a 100-case run with 16 in
/// flight: no run is left `running` in the store; those in flight are queued again,
/// marked interrupted, and `--resume` runs them (and the rest) to the end.
fn ctrl_c_leaves_no_run_running_and_resume_redoes_them() {
    let (s, _agent) = slow_project("interrupt", 100);
    let run = start(&s, &[]);
    let until = Instant::now() + Duration::from_secs(30);
    while requests_seen(&s) < 30 && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(5));
    }
    // SAFETY: a signal to the child this test started.
    assert_eq!(unsafe { libc::kill(run.id() as i32, libc::SIGINT) }, 0);
    let out = run.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (_, runs) = stored(&s);
    let running: Vec<_> = runs.iter().filter(|(_, st)| st == "running").collect();
    assert!(running.is_empty(), "left running: {running:?}");
    let conn = rusqlite::Connection::open(s.join("runs.db")).unwrap();
    let interrupted: Vec<String> = conn
        .prepare(
            "SELECT trial FROM runs WHERE status = 'queued'
             AND reason = 'interrupted before it ended; --resume runs it again'",
        )
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert!(
        !interrupted.is_empty() && interrupted.len() <= 16,
        "the runs in flight are marked: {interrupted:?}"
    );
    // Every case the agent was asked ended or is marked (a case claimed just before
    // the signal may be marked without having reached the agent).
    for id in requests(&s).keys() {
        let trial = format!("s::{id}");
        assert!(
            interrupted.contains(&trial)
                || runs.contains(&(trial.clone(), "completed".to_string())),
            "{trial} neither ended nor marked: {runs:?}"
        );
    }
    let resumed = start(&s, &["--resume"]).wait_with_output().unwrap();
    assert_eq!(
        resumed.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&resumed.stderr)
    );
    let (executions, runs) = stored(&s);
    assert_eq!(executions, 1);
    assert!(
        runs.len() == 100 && runs.iter().all(|(_, st)| st == "completed"),
        "{runs:?}"
    );
}

/// A store that stops taking writes mid-run (the file size limit reached: the OS says
/// "File too large", as it would "No space left on device" on a full disk): the run is
/// an error naming the runs not recorded, the OS's cause and `--resume`, which then
/// runs exactly those.
fn a_store_write_failure_names_the_runs_and_resume_redoes_them() {
    use std::os::unix::process::CommandExt;
    let s = Scratch::named("store", "fsize");
    s.write(
        "agent.py",
        "import json, sys\nfor line in sys.stdin:\n    print(json.dumps({'content': 'ok ' + 'x' * 2000}), flush=True)\n",
    );
    s.write(
        "agentest.toml",
        "[agent]\ntype = \"process\"\ncommand = [\"python3\", \"agent.py\"]\n",
    );
    let long = "y".repeat(3000);
    let cases: String = (0..40)
        .map(|i| format!("{{\"id\": \"c{i:02}\", \"input\": \"{long}\", \"assert\": {{\"type\": \"contains\", \"value\": \"ok\"}}}}\n"))
        .collect();
    s.write("suites/s.jsonl", &cases);
    let run = |limit: bool| {
        let mut cmd = Command::new(BIN);
        cmd.current_dir(s.path())
            .args(["test", "-i", "suites", "--parallel", "4", "--compact"])
            .env_remove("CARGO_TARGET_DIR")
            .env("AGENTEST_STORE", s.join("runs.db"))
            .env("NO_COLOR", "1")
            .stdin(Stdio::null());
        if limit {
            // SAFETY: between fork and exec, only async-signal-safe calls.
            unsafe {
                cmd.pre_exec(|| {
                    // Enough for the store's start, not for 40 long transcripts.
                    let max = libc::rlimit {
                        rlim_cur: 200_000,
                        rlim_max: 200_000,
                    };
                    libc::setrlimit(libc::RLIMIT_FSIZE, &max);
                    // A write past the limit then fails with EFBIG instead of killing.
                    libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
                    Ok(())
                });
            }
        }
        finish(&mut cmd)
    };
    let limited = run(true);
    assert_eq!(limited.code, 2, "{limited:?}");
    let line = limited
        .stderr
        .lines()
        .find(|l| l.starts_with("error: the run store"))
        .unwrap_or_else(|| panic!("{limited:?}"));
    assert!(
        line.contains(" did not record ")
            && line.contains("File too large (os error 27)")
            && line.ends_with(
                "the console and any report have their results, and `agentest test --resume` runs them again (under `cargo test`, run the trials again)"
            ),
        "{line}"
    );
    let lost: usize = line
        .split(" did not record ")
        .nth(1)
        .and_then(|r| r.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{line}"));
    assert!(lost > 0 && lost <= 40, "{line}");
    assert!(
        limited.stdout.contains("Passed:  40"),
        "the console has every result: {limited:?}"
    );
    let resumed = run_resume(&s);
    assert_eq!(resumed.code, 0, "{resumed:?}");
    assert!(
        resumed.stdout.contains(&format!(
            "ℹ Resumed: execution 1, {} of 40 cases had ended and are kept; {lost} to run",
            40 - lost
        )),
        "{resumed:?}"
    );
    let (_, runs) = stored(&s);
    assert!(
        runs.len() == 40 && runs.iter().all(|(_, st)| st == "completed"),
        "{runs:?}"
    );
}

fn run_resume(s: &Scratch) -> crate::common::Run {
    finish(
        Command::new(BIN)
            .current_dir(s.path())
            .args(["test", "-i", "suites", "--resume", "--compact"])
            .env_remove("CARGO_TARGET_DIR")
            .env("AGENTEST_STORE", s.join("runs.db"))
            .env("NO_COLOR", "1")
            .stdin(Stdio::null()),
    )
}

/// The store deleted, or overwritten with something else, in the middle of a run: the
/// run ends as an error that says so, not silently as if its results were kept.
fn a_store_deleted_or_overwritten_mid_run_is_noticed() {
    for (tag, harm, said) in [
        (
            "deleted",
            "delete",
            "was deleted or replaced while this run wrote to it, so this run's results are not in it",
        ),
        (
            "overwritten",
            "overwrite",
            "was overwritten while this run wrote to it and is no longer a database",
        ),
    ] {
        let (s, _agent) = slow_project(tag, 60);
        let run = start(&s, &[]);
        let until = Instant::now() + Duration::from_secs(30);
        while requests_seen(&s) < 20 && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(5));
        }
        let db = s.join("runs.db");
        if harm == "delete" {
            for f in ["runs.db", "runs.db-wal", "runs.db-shm"] {
                let _ = std::fs::remove_file(s.join(f));
            }
        } else {
            // The same file, its contents replaced.
            std::fs::write(&db, vec![b'#'; 8192]).unwrap();
        }
        let out = crate::common::Run::of(run.wait_with_output().unwrap());
        assert_eq!(out.code, 2, "{tag}: {out:?}");
        let expected = format!("error: the run store {} {said}", db.display());
        assert!(out.stderr.contains(&expected), "{tag}: {out:?}");
    }
}

/// How many requests the slow agent has logged.
fn requests_seen(s: &Scratch) -> usize {
    std::fs::read_to_string(s.join("agent.log"))
        .unwrap_or_default()
        .lines()
        .count()
}

/// Two `--resume` processes at once on one interrupted execution: each unfinished case
/// runs in exactly one of them.
fn two_resumes_at_once_run_each_case_once() {
    let (s, _agent) = slow_project("resume-twice", 200);
    kill_after(&s, start(&s, &[]), 40);
    // Requests the killed run sent may still reach the agent's log after the kill.
    let first = settled_requests(&s);
    let a = start(&s, &["--resume"]);
    let b = start(&s, &["--resume"]);
    let (a, b) = (a.wait_with_output().unwrap(), b.wait_with_output().unwrap());
    for out in [&a, &b] {
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let (executions, runs) = stored(&s);
    assert_eq!(executions, 1);
    assert!(
        runs.len() == 200 && runs.iter().all(|(_, st)| st == "completed"),
        "{runs:?}"
    );
    // Cases the first run never sent went to the agent once, from one of the two.
    let asked = requests(&s);
    for (id, n) in &asked {
        let want = if first.contains_key(id) { 1..=2 } else { 1..=1 };
        assert!(want.contains(n), "{id} asked {n} times");
    }
    assert_eq!(asked.len(), 200);
    let here = |o: &std::process::Output| {
        String::from_utf8_lossy(&o.stdout)
            .matches("another process of this execution ran it")
            .count()
    };
    assert!(here(&a) + here(&b) > 0, "the two shared the work");
}

/// `runs retry` runs again exactly the error runs of an execution, as new runs linked
/// to them; `--retry-errors` the cases whose last run was an error; a passed or failed
/// run is never retried.
fn retries_run_again_exactly_the_error_runs() {
    let s = project("retry");
    let first = agentest(s.path(), &["test", "-i", "suites"], &[]);
    assert_eq!(first.code, 1, "{first:?}");
    let retried = agentest(s.path(), &["runs", "retry"], &[]);
    assert_eq!(retried.code, 1, "the agent still crashes: {retried:?}");
    let conn = rusqlite::Connection::open(s.join(".agentest/runs.db")).unwrap();
    let runs_of = |execution: i64| -> Vec<(String, String, Option<i64>)> {
        conn.prepare(
            "SELECT trial, status, retry_of FROM runs WHERE execution_id = ?1 ORDER BY trial",
        )
        .unwrap()
        .query_map([execution], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
    };
    let crash_id: i64 = conn
        .query_row(
            "SELECT id FROM runs WHERE execution_id = 1 AND trial = 's::crash'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(
        runs_of(2),
        [("s::crash".to_string(), "error".to_string(), Some(crash_id))]
    );
    // The agent recovers; --retry-errors runs what last ended in error, and only that.
    let suite = std::fs::read_to_string(s.join("suites/s.jsonl")).unwrap();
    s.write("suites/s.jsonl", &suite.replace("CRASH now", "hello"));
    let again = agentest(s.path(), &["test", "-i", "suites", "--retry-errors"], &[]);
    assert_eq!(again.code, 0, "{again:?}");
    let third = runs_of(3);
    assert_eq!(third.len(), 1, "{third:?}");
    assert_eq!(third[0].0, "s::crash");
    assert_eq!(third[0].1, "completed");
    assert!(
        third[0].2.is_some_and(|id| id != crash_id),
        "links the last error run"
    );
    let nothing = agentest(s.path(), &["test", "-i", "suites", "--retry-errors"], &[]);
    assert_eq!(nothing.code, 0, "{nothing:?}");
    assert!(nothing.stderr.contains("nothing to retry"), "{nothing:?}");
    let executions: i64 = conn
        .query_row("SELECT COUNT(*) FROM executions", [], |r| r.get(0))
        .unwrap();
    assert_eq!(executions, 3, "no execution for nothing");
}

/// A run that ended in error whose case was since deleted is not retried, by
/// `--retry-errors` or `runs retry`, and each says so once.
fn a_retry_names_the_error_runs_whose_case_is_gone() {
    let s = project("retry-gone");
    let first = agentest(s.path(), &["test", "-i", "suites"], &[]);
    assert_eq!(first.code, 1, "{first:?}");
    let suite = s.read("suites/s.jsonl");
    let suite: Vec<&str> = suite.lines().filter(|l| !l.contains("CRASH")).collect();
    s.write("suites/s.jsonl", &(suite.join("\n") + "\n"));
    let note = "note: 1 stored run that ended in error is not retried: its case is no longer in the suites: s::crash\n";
    for args in [
        &["test", "-i", "suites", "--retry-errors"][..],
        &["runs", "retry"],
    ] {
        let run = agentest(s.path(), args, &[]);
        assert_eq!(run.code, 0, "{run:?}");
        assert_eq!(run.stderr.matches(note).count(), 1, "{run:?}");
        assert!(run.stderr.contains("nothing to retry"), "{run:?}");
    }
}

/// An execution exported as EvalStudio's `runs.json` and as a JSONL report, and
/// rendered as a report straight from the store.
fn an_execution_exports_and_renders_from_the_store() {
    let s = project("export");
    agentest(s.path(), &["test", "-i", "suites"], &[]);
    let exported = agentest(
        s.path(),
        &[
            "runs",
            "export",
            "--format",
            "evalstudio",
            "-o",
            "runs.json",
        ],
        &[],
    );
    assert_eq!(exported.code, 0, "{exported:?}");
    assert_eq!(exported.stderr, "wrote runs.json (4 runs)\n");
    let runs: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(s.join("runs.json")).unwrap()).unwrap();
    let by: BTreeMap<String, &serde_json::Value> = runs
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["scenarioId"].as_str().unwrap().to_string(), r))
        .collect();
    assert_eq!(by.len(), 4);
    let bad = by["s::bad"];
    assert_eq!(bad["status"], "completed");
    assert_eq!(bad["executionId"], 1);
    assert_eq!(bad["result"]["success"], false);
    assert!(
        bad["id"].is_string() && bad["startedAt"].is_string() && bad["completedAt"].is_string()
    );
    assert_eq!(
        bad["messages"][0],
        serde_json::json!({"role": "user", "content": "hello"})
    );
    assert_eq!(bad["output"]["messageCount"], 2);
    assert_eq!(by["s::ok"]["result"]["success"], true);
    let crash = by["s::crash"];
    assert_eq!(crash["status"], "error");
    assert!(
        crash.get("result").is_none(),
        "only completed runs have a result"
    );
    assert!(
        crash["error"]
            .as_str()
            .unwrap()
            .contains("agent process exited"),
        "{crash}"
    );
    assert!(crash.get("personaId").is_none(), "absent, not null");
    // JSONL: agentest's own records, which `agentest report` reads.
    let jsonl = agentest(
        s.path(),
        &["runs", "export", "--format", "jsonl", "--execution", "1"],
        &[],
    );
    assert_eq!(jsonl.stdout.lines().count(), 4, "{jsonl:?}");
    // A report from the store.
    let md = agentest(s.path(), &["report", "--execution", "1", "-o", "r.md"], &[]);
    assert_eq!(md.code, 0, "{md:?}");
    let text = std::fs::read_to_string(s.join("r.md")).unwrap();
    assert!(
        text.contains("1 passed, 1 failed, 1 error, 1 skipped of 4 cases"),
        "{text}"
    );
    let none = agentest(s.path(), &["report", "--execution", "9", "-o", "r.md"], &[]);
    assert_eq!(none.code, 2, "{none:?}");
    assert!(none.stderr.contains("no execution 9 in "), "{none:?}");
}

/// Runs another host's process left `running`: taken back (queued, then run by
/// `--resume`) once their heartbeat is older than the lease, left alone while it is
/// fresh, since that process may still be at work.
fn runs_of_a_silent_process_elsewhere_are_taken_back_after_the_lease() {
    let (s, _agent) = slow_project("lease", 4);
    kill_after(&s, start(&s, &[]), 1);
    let conn = rusqlite::Connection::open(s.join("runs.db")).unwrap();
    // Whatever the killed run did, two runs now belong to processes elsewhere: one
    // silent for two minutes, one that marked itself alive just now.
    conn.execute_batch(
        "UPDATE runs SET status = 'queued', owner_pid = NULL, owner_host = NULL, heartbeat_at = NULL;
         UPDATE runs SET status = 'running', owner_pid = 1, owner_host = 'elsewhere',
                         heartbeat_at = strftime('%Y-%m-%dT%H:%M:%SZ', 'now', '-120 seconds')
         WHERE trial = 's::c000';
         UPDATE runs SET status = 'running', owner_pid = 1, owner_host = 'elsewhere',
                         heartbeat_at = strftime('%Y-%m-%dT%H:%M:%SZ', 'now')
         WHERE trial = 's::c001';",
    )
    .unwrap();
    let resumed = start(&s, &["--resume"]).wait_with_output().unwrap();
    assert_eq!(
        resumed.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&resumed.stdout)
    );
    let (_, runs) = stored(&s);
    let status = |t: &str| runs.iter().find(|(trial, _)| trial == t).unwrap().1.clone();
    assert_eq!(
        status("s::c000"),
        "completed",
        "silent past the lease: run here"
    );
    assert_eq!(
        status("s::c001"),
        "running",
        "alive elsewhere: left to its process"
    );
    assert_eq!(status("s::c002"), "completed");
    assert!(
        String::from_utf8_lossy(&resumed.stdout)
            .contains("another process of this execution ran it"),
        "the live one is not run here"
    );
}

pub fn tests() -> Vec<libtest_mimic::Trial> {
    crate::trials![
        rerun_replays_a_judged_result_offline_from_its_cassette,
        rerun_runs_a_stored_result_again_and_says_whether_its_verdict_holds,
        every_run_is_recorded_and_listed,
        the_store_goes_where_it_is_told,
        a_newer_or_damaged_store_is_refused_with_the_way_out,
        a_store_url_of_another_scheme_is_refused_by_name,
        processes_with_one_execution_key_make_one_execution,
        a_config_store_of_two_kinds_or_another_scheme_is_refused,
        workers_on_one_machine_run_every_queued_run_once,
        a_worker_ends_a_run_whose_case_is_gone,
        store_check_and_migrate_operate_a_file,
        an_unwritable_store_says_permission_denied_and_the_fix,
        processes_at_once_share_one_store,
        a_killed_run_resumes_with_every_case_once,
        a_resume_waits_for_the_process_running_the_execution,
        ctrl_c_stops_a_worker_and_it_claims_nothing_more,
        a_resume_runs_again_what_changed_and_drops_what_is_gone,
        ctrl_c_leaves_no_run_running_and_resume_redoes_them,
        a_store_write_failure_names_the_runs_and_resume_redoes_them,
        a_store_deleted_or_overwritten_mid_run_is_noticed,
        two_resumes_at_once_run_each_case_once,
        retries_run_again_exactly_the_error_runs,
        a_retry_names_the_error_runs_whose_case_is_gone,
        an_execution_exports_and_renders_from_the_store,
        runs_of_a_silent_process_elsewhere_are_taken_back_after_the_lease,
    ]
}

/// `agentest rerun ID` runs one stored result again: the same verdict exits 0 and says
/// so; once the case changed, the new verdict exits 1, naming the change; each rerun is
/// a run of its own in the store; a run the store does not hold is a clear error.
fn rerun_runs_a_stored_result_again_and_says_whether_its_verdict_holds() {
    let s = project("rerun");
    let suite = std::fs::read_to_string(s.join("suites/s.jsonl")).unwrap();
    s.write("suites/s.jsonl", &format!("{suite}{{\"id\": \"broken\"\n"));
    let db = s.join("runs.db");
    let store = [("AGENTEST_STORE", db.to_str().unwrap())];
    let first = agentest(s.path(), &["test", "-i", "suites"], &store);
    assert_eq!(first.code, 1, "{first:?}");
    let id_of = |trial: &str| -> String {
        let list = agentest(s.path(), &["runs", "list"], &store);
        list.stdout
            .lines()
            .skip(1)
            .map(|l| l.split_whitespace().collect::<Vec<_>>())
            .filter(|cols| cols[4] == trial)
            .map(|cols| cols[0].to_string())
            .last()
            .unwrap_or_else(|| panic!("no run of {trial}: {list:?}"))
    };
    let ok = id_of("s::ok");
    // Run `id` again: the verdict holds (exit 0) and stdout says so.
    let holds = |id: &str, says: &str| {
        let r = agentest(s.path(), &["rerun", id], &store);
        assert_eq!(r.code, 0, "{r:?}");
        assert!(r.stdout.contains(says), "{says}: {r:?}");
        r
    };
    holds(&ok, &format!("run {ok} (s::ok): passed again, as recorded"));
    holds(&id_of("s::bad"), "(s::bad): failed again, as recorded");
    // A line that did not load reruns to the same error, its record as complete as
    // any other's.
    let r = holds(&id_of("s::line-5"), "(s::line-5): error again, as recorded");
    assert!(!r.stdout.contains("predates provenance"), "{r:?}");
    // The case changes: its verdict does, and the change is named.
    let suite = std::fs::read_to_string(s.join("suites/s.jsonl")).unwrap();
    s.write(
        "suites/s.jsonl",
        &suite.replacen(r#""value": "Hello"}"#, r#""value": "Goodbye"}"#, 1),
    );
    let r = agentest(s.path(), &["rerun", &ok], &store);
    assert_eq!(r.code, 1, "{r:?}");
    for part in [
        format!("run {ok} (s::ok): failed now, recorded passed"),
        "the case or the options it runs with changed since (input_hash".to_string(),
    ] {
        assert!(r.stdout.contains(&part), "{part:?} in {r:?}");
    }
    // Three reruns, three runs of s::ok and s::bad more in the store.
    let list = agentest(s.path(), &["runs", "list", "--limit", "100"], &store);
    let runs_of = |trial: &str| listed(&list).iter().filter(|r| r.2 == trial).count();
    assert_eq!((runs_of("s::ok"), runs_of("s::bad")), (3, 2), "{list:?}");
    let r = agentest(s.path(), &["rerun", "9999"], &store);
    assert_eq!(r.code, 2, "{r:?}");
    assert!(r.stderr.contains("no run 9999 in"), "{r:?}");
}

/// A judged result is run again offline: its cassette answers the judge (the model's
/// server is gone), with the seed it ran with, and the verdict holds.
fn rerun_replays_a_judged_result_offline_from_its_cassette() {
    let s = project("rerun-judged");
    let server = crate::common::chat::ChatServer::start();
    server.answer(
        "*",
        &[serde_json::json!({"passed": true, "reason": "it greets"}).to_string()],
    );
    let config = std::fs::read_to_string(s.join("agentest.toml")).unwrap();
    s.write(
        "agentest.toml",
        &format!(
            "{config}\n[llm]\nbase_url = \"{}\"\nmodel = \"m\"\nmax_retries = 0\n",
            server.url()
        ),
    );
    s.write(
        "suites/s.jsonl",
        r#"{"id": "judged", "input": "hello", "assert": {"type": "llm_judge", "prompt": "The reply greets"}}"#,
    );
    let db = s.join("runs.db");
    let store = [("AGENTEST_STORE", db.to_str().unwrap())];
    let first = agentest(
        s.path(),
        &["test", "-i", "suites"],
        &[
            store[0],
            ("AGENTEST_CASSETTES", "record"),
            ("AGENTEST_SEED", "5"),
        ],
    );
    assert_eq!(first.code, 0, "{first:?}");
    assert_eq!(server.count(), 1);
    drop(server);
    let list = agentest(s.path(), &["runs", "list"], &store);
    let id = list
        .stdout
        .lines()
        .nth(1)
        .and_then(|l| l.split_whitespace().next())
        .unwrap_or_default()
        .to_string();
    let r = agentest(s.path(), &["rerun", &id], &store);
    assert_eq!(r.code, 0, "{r:?}");
    assert!(
        r.stdout
            .contains(&format!("run {id} (s::judged): passed again, as recorded")),
        "{r:?}"
    );
    // The rerun's own record: replayed from the cassette, with the seed it ran with.
    let show = agentest(s.path(), &["runs", "list", "--limit", "1"], &store);
    let newest = show
        .stdout
        .lines()
        .nth(1)
        .and_then(|l| l.split_whitespace().next())
        .unwrap_or_default()
        .to_string();
    assert_ne!(newest, id, "{show:?}");
    let export = agentest(s.path(), &["runs", "export", "--format", "jsonl"], &store);
    let record: serde_json::Value =
        serde_json::from_str(export.stdout.lines().next().unwrap_or_default()).unwrap();
    assert_eq!(record["provenance"]["seed"], 5, "{record}");
    assert_eq!(record["provenance"]["cassettes"], "replay", "{record}");
    assert_eq!(record["replayed_calls"], 1, "{record}");
}
