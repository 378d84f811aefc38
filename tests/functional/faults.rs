//! Fault injection: agents and models that misbehave in every way issue 6 lists, run
//! all at once next to healthy cases, and Ctrl-C in the middle of a run.
//!
//! Each family (HTTP agents, `openai` agents against a model server, process agents) runs
//! every one of its faults plus several healthy cases in ONE run of the real `agentest`
//! binary with `--parallel 8` and a 2 s case timeout, then checks every case: it ended
//! within its deadline, its status and an error that names the cause, the healthy cases
//! passed, nothing panicked, the JSONL report holds each case exactly once and a summary
//! whose counts match, and (for the 50 MB replies) the peak resident memory of agentest.
//!
//! The servers are small HTTP/1.1 servers on 127.0.0.1 started by each test ([`FaultServer`]);
//! the fault is chosen per request by the first word of the case's input (`"500"`,
//! `"late"`, `"huge"`, ...; see [`respond`]). The process agents are one Python script
//! that does the same on its stdin ([`PROCESS_AGENT`]).
#![cfg(unix)]

use std::collections::BTreeMap;
use std::io::{BufReader, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::common::{clean, lock, read_request, Scratch, TcpServer, BIN};
use serde_json::{json, Value};

/// The suite file, next to `agentest.toml` in the scratch project: trials are `s::ID`.
const SUITE: &str = "s.jsonl";
/// Every case's timeout (`--timeout`), as the flag writes it and in milliseconds.
const CASE_TIMEOUT: &str = "2s";
const CASE_TIMEOUT_MS: u64 = 2_000;
/// How far past its deadline a case may end (the agent is stopped, the record written).
const DEADLINE_SLACK_MS: u64 = 1_000;
/// The whole run may take the case timeout plus this: far less than the sum of the
/// timeouts, which a run that waited for its faults one after the other would need.
const RUN_SLACK: Duration = Duration::from_secs(5);
/// The size of the "huge" replies: over the 32 MiB limit.
const HUGE: usize = 50 << 20;
/// The most resident memory agentest may reach on a run with 50 MB replies.
const MEMORY_LIMIT_KB: u64 = 150 * 1024;
/// How long a "late" server waits before answering: well past every deadline here.
const LATE: Duration = Duration::from_secs(6);

// ---------------------------------------------------------------------------------------
// A misbehaving HTTP server: an agent (the agentest protocol) or a model (chat completions)
// ---------------------------------------------------------------------------------------

/// What the server speaks: where it reads the input, and what a good reply looks like.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Flavor {
    /// An HTTP agent: the request's `input`, replies `{"content": ...}`.
    Agent,
    /// A chat-completions model: the first user message, replies `choices[0].message`.
    Model,
}

impl Flavor {
    /// The text the request carries: what picks the fault, and what a good reply echoes.
    fn text(self, body: &Value) -> String {
        let text = match self {
            Flavor::Agent => body["input"].as_str(),
            Flavor::Model => body["messages"]
                .as_array()
                .and_then(|m| m.iter().find(|m| m["role"] == "user"))
                .and_then(|m| m["content"].as_str()),
        };
        text.unwrap_or_default().to_string()
    }

    /// A good reply, echoing the input: `echo: <input>`.
    fn answer(self, text: &str) -> Value {
        let content = format!("echo: {text}");
        match self {
            Flavor::Agent => json!({"content": content}),
            Flavor::Model => json!({
                "id": "chatcmpl-fault", "object": "chat.completion", "created": 1, "model": "fault-model",
                "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}
            }),
        }
    }

    /// Valid JSON that is no reply.
    fn wrong_shape(self) -> Value {
        match self {
            Flavor::Agent => json!({"answer": 42, "text": "valid JSON in the wrong shape"}),
            Flavor::Model => {
                json!({"object": "chat.completion", "answer": "valid JSON in the wrong shape"})
            }
        }
    }

    /// What comes before and after the run of `a`s in a huge (but valid) reply.
    fn huge_ends(self) -> (&'static str, &'static str) {
        match self {
            Flavor::Agent => ("{\"content\": \"", "\"}"),
            Flavor::Model => (
                "{\"choices\": [{\"message\": {\"role\": \"assistant\", \"content\": \"",
                "\"}}]}",
            ),
        }
    }
}

/// A misbehaving HTTP/1.1 server on 127.0.0.1, one thread per connection, keep-alive;
/// stopped (port closed, connections shut, slow threads told to quit) on drop.
struct FaultServer {
    port: u16,
    /// Requests per fault (the first word of the input).
    hits: Arc<Mutex<BTreeMap<String, usize>>>,
    _server: TcpServer,
}

impl FaultServer {
    fn start(flavor: Flavor) -> FaultServer {
        let hits = Arc::new(Mutex::new(BTreeMap::new()));
        let server = {
            let hits = hits.clone();
            TcpServer::start(move |stream, stop| serve(stream, flavor, &hits, stop))
        };
        FaultServer {
            port: server.port,
            hits,
            _server: server,
        }
    }

    /// How many requests the fault named `fault` received.
    fn hits(&self, fault: &str) -> usize {
        lock(&self.hits).get(fault).copied().unwrap_or(0)
    }
}

fn serve(
    stream: TcpStream,
    flavor: Flavor,
    hits: &Mutex<BTreeMap<String, usize>>,
    stop: &AtomicBool,
) {
    let Ok(read_half) = stream.try_clone() else {
        return;
    };
    let mut reader = BufReader::new(read_half);
    let mut w = stream;
    while let Some(body) = read_request(&mut reader).map(|r| r.body) {
        let text = flavor.text(&body);
        let fault = text
            .split_whitespace()
            .next()
            .unwrap_or_default()
            .to_string();
        let hit = {
            let mut hits = lock(hits);
            let n = hits.entry(fault.clone()).or_insert(0);
            *n += 1;
            *n
        };
        if !respond(&mut w, flavor, &fault, &text, hit, stop) {
            let _ = w.shutdown(Shutdown::Both);
            return;
        }
    }
}

/// The status line and headers; `length` None means a chunked body.
fn head(w: &mut TcpStream, code: u16, headers: &[(&str, &str)], length: Option<usize>) -> bool {
    let reason = match code {
        200 => "OK",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        _ => "Whatever",
    };
    let mut text = format!("HTTP/1.1 {code} {reason}\r\nContent-Type: application/json\r\n");
    match length {
        Some(n) => text.push_str(&format!("Content-Length: {n}\r\n")),
        None => text.push_str("Transfer-Encoding: chunked\r\n"),
    }
    for (k, v) in headers {
        text.push_str(&format!("{k}: {v}\r\n"));
    }
    text.push_str("\r\n");
    w.write_all(text.as_bytes()).is_ok()
}

/// A whole response with this body.
fn send(w: &mut TcpStream, code: u16, headers: &[(&str, &str)], body: &[u8]) -> bool {
    head(w, code, headers, Some(body.len())) && w.write_all(body).is_ok() && w.flush().is_ok()
}

fn send_json(w: &mut TcpStream, code: u16, headers: &[(&str, &str)], body: &Value) -> bool {
    send(w, code, headers, body.to_string().as_bytes())
}

/// One chunk of a chunked body.
fn chunk(w: &mut TcpStream, bytes: &[u8]) -> bool {
    w.write_all(format!("{:x}\r\n", bytes.len()).as_bytes())
        .is_ok()
        && w.write_all(bytes).is_ok()
        && w.write_all(b"\r\n").is_ok()
        && w.flush().is_ok()
}

/// Sleeps for `d` unless the server stops first; true when the whole time passed.
fn pause(d: Duration, stop: &AtomicBool) -> bool {
    let until = Instant::now() + d;
    while Instant::now() < until {
        if stop.load(Ordering::SeqCst) {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    true
}

/// A valid reply of [`HUGE`] bytes, with a `Content-Length` or chunked; stops at the first
/// failed write (the client hung up, as it should).
fn send_huge(w: &mut TcpStream, flavor: Flavor, chunked: bool) -> bool {
    let (prefix, suffix) = flavor.huge_ends();
    if !head(w, 200, &[], (!chunked).then_some(HUGE)) {
        return false;
    }
    let mut put = |bytes: &[u8]| {
        if chunked {
            chunk(w, bytes)
        } else {
            w.write_all(bytes).is_ok()
        }
    };
    let block = vec![b'a'; 1 << 20];
    let mut left = HUGE - prefix.len() - suffix.len();
    if !put(prefix.as_bytes()) {
        return false;
    }
    while left > 0 {
        let n = left.min(block.len());
        if !put(&block[..n]) {
            return false;
        }
        left -= n;
    }
    put(suffix.as_bytes()) && (!chunked || w.write_all(b"0\r\n\r\n").is_ok())
}

/// Answers one request as the fault says; false when the connection is to be closed.
fn respond(
    w: &mut TcpStream,
    flavor: Flavor,
    fault: &str,
    text: &str,
    hit: usize,
    stop: &AtomicBool,
) -> bool {
    let error = |m: &str| json!({"error": {"message": m, "type": "fault"}});
    match fault {
        "500" => send_json(w, 500, &[], &error("the server fell over")),
        "429" => send_json(w, 429, &[], &error("slow down")),
        "429-retry-after" => send_json(w, 429, &[("Retry-After", "1")], &error("slow down")),
        "429-retry-after-long" => send_json(w, 429, &[("Retry-After", "30")], &error("slow down")),
        // Rate limited once, then fine: a retry that works.
        "flaky" if hit == 1 => send_json(w, 429, &[("Retry-After", "0.2")], &error("slow down")),
        "late" => pause(LATE, stop) && send_json(w, 200, &[], &flavor.answer(text)),
        "endless" => {
            let (prefix, _) = flavor.huge_ends();
            if !head(w, 200, &[], None) || !chunk(w, prefix.as_bytes()) {
                return false;
            }
            // A byte every 50 ms, until the client hangs up or the server stops.
            while pause(Duration::from_millis(50), stop) {
                if !chunk(w, b"a") {
                    return false;
                }
            }
            false
        }
        "reset" => {
            let body = flavor.answer(text).to_string();
            let _ = head(w, 200, &[], Some(body.len() + 100))
                && w.write_all(&body.as_bytes()[..body.len() / 2]).is_ok()
                && w.flush().is_ok();
            false
        }
        "hangup" => false,
        "invalid-json" => send(w, 200, &[], b"{\"content\": \"unterminated"),
        "wrong-shape" => send_json(w, 200, &[], &flavor.wrong_shape()),
        "empty" => send(w, 200, &[], b""),
        "huge" => send_huge(w, flavor, false),
        "huge-chunked" => send_huge(w, flavor, true),
        _ => send_json(w, 200, &[], &flavor.answer(text)),
    }
}

// ---------------------------------------------------------------------------------------
// The process agent
// ---------------------------------------------------------------------------------------

/// One JSON request per line on stdin; the first word of the input picks the fault. It
/// writes its pid to `pids/<test_id>` when the first request arrives, so the test can
/// check that it is gone after the run.
const PROCESS_AGENT: &str = r#"
import json, os, signal, sys, time

first = True
for line in sys.stdin:
    request = json.loads(line)
    if first:
        first = False
        os.makedirs("pids", exist_ok=True)
        with open(os.path.join("pids", request["test_id"]), "w") as f:
            f.write(str(os.getpid()))
    text = request["input"]
    fault = (text.split() or [""])[0]
    if fault == "crash":
        sys.stderr.write("fatal: the agent fell over\n")
        sys.stderr.flush()
        os._exit(3)
    elif fault == "killed":
        os.kill(os.getpid(), signal.SIGKILL)
    elif fault == "garbage":
        print("hello, I am not JSON", flush=True)
    elif fault == "wrong-shape":
        print(json.dumps({"answer": 42}), flush=True)
    elif fault == "stderr-only":
        # Chatty on stderr, never a word on stdout.
        while True:
            sys.stderr.write("thinking very hard " * 1000 + "\n")
            sys.stderr.flush()
            time.sleep(0.01)
    elif fault in ("silent", "sleep"):
        time.sleep(3600 if fault == "silent" else 30)
    elif fault == "huge":
        block = "a" * (1 << 20)
        sys.stdout.write('{"content": "')
        for _ in range(50):
            sys.stdout.write(block)
        sys.stdout.flush()
        time.sleep(3600)
    else:
        print(json.dumps({"content": "echo: " + text}), flush=True)
"#;

// ---------------------------------------------------------------------------------------
// Scratch projects, runs of the binary, processes
// ---------------------------------------------------------------------------------------

fn scratch(tag: &str) -> Scratch {
    Scratch::named("fault-injection", tag)
}

impl Scratch {
    /// The pids the process agents wrote to `pids/`, by test id.
    fn agent_pids(&self) -> BTreeMap<String, i32> {
        self.pids_in(&self.join("pids"))
    }

    /// The pids written to files in `folder`, by file name.
    fn pids_in(&self, folder: &Path) -> BTreeMap<String, i32> {
        let Ok(dir) = std::fs::read_dir(folder) else {
            return BTreeMap::new();
        };
        dir.flatten()
            .filter_map(|e| {
                let pid = std::fs::read_to_string(e.path())
                    .ok()?
                    .trim()
                    .parse()
                    .ok()?;
                Some((e.file_name().to_string_lossy().into_owned(), pid))
            })
            .collect()
    }
}

/// `agentest` with a clean environment: no `CI`, no `NO_COLOR`, no `AGENTEST_*` of ours.
fn agentest(dir: &Path, args: &[&str]) -> Command {
    let mut cmd = clean(Command::new(BIN));
    cmd.current_dir(dir)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    cmd
}

/// A running agentest, killed when dropped if it still runs (a failing test leaves
/// nothing behind); its stdout and stderr drained by threads.
struct Running {
    child: Child,
    stdout: Option<JoinHandle<String>>,
    stderr: Option<JoinHandle<String>>,
}

impl Running {
    fn start(mut cmd: Command) -> Running {
        let mut child = cmd.spawn().expect("start agentest");
        let drain = |r: Option<Box<dyn Read + Send>>| {
            r.map(|mut r| {
                std::thread::spawn(move || {
                    let mut bytes = Vec::new();
                    let _ = r.read_to_end(&mut bytes);
                    String::from_utf8_lossy(&bytes).into_owned()
                })
            })
        };
        let stdout = drain(
            child
                .stdout
                .take()
                .map(|s| Box::new(s) as Box<dyn Read + Send>),
        );
        let stderr = drain(
            child
                .stderr
                .take()
                .map(|s| Box::new(s) as Box<dyn Read + Send>),
        );
        Running {
            child,
            stdout,
            stderr,
        }
    }

    fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    /// Waits up to `limit` for the exit, recording the peak resident memory meanwhile.
    fn finish(mut self, started: Instant, limit: Duration, report: &Path) -> Run {
        let pid = self.pid();
        let mut peak_kb: Option<u64> = None;
        let status = loop {
            if let Some(kb) = peak_rss_kb(pid) {
                peak_kb = Some(peak_kb.map_or(kb, |p| p.max(kb)));
            }
            if let Some(status) = self.child.try_wait().expect("wait for agentest") {
                break status;
            }
            if started.elapsed() > limit {
                let _ = self.child.kill();
                let _ = self.child.wait();
                let out = self.output();
                panic!(
                    "agentest did not finish within {limit:?}\n--- stdout ---\n{}\n--- stderr ---\n{}",
                    out.0, out.1
                );
            }
            std::thread::sleep(Duration::from_millis(5));
        };
        let took = started.elapsed();
        let (stdout, stderr) = self.output();
        Run {
            code: status.code(),
            stdout,
            stderr,
            report: std::fs::read_to_string(report).unwrap_or_default(),
            took,
            peak_kb,
        }
    }

    fn output(&mut self) -> (String, String) {
        let join =
            |h: Option<JoinHandle<String>>| h.and_then(|h| h.join().ok()).unwrap_or_default();
        (join(self.stdout.take()), join(self.stderr.take()))
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// `VmHWM` (peak resident set) of a process, in kB; None once it is gone or a zombie.
fn peak_rss_kb(pid: i32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// A process agent started during a test; killed when dropped if it still runs.
struct AgentProcess(i32);

impl AgentProcess {
    /// Whether it still runs (a zombie does not count: it is dead, waiting to be reaped).
    fn alive(&self) -> bool {
        crate::common::alive(self.0)
    }

    fn gone_within(&self, grace: Duration) -> bool {
        crate::common::gone_within(self.0, grace)
    }
}

impl Drop for AgentProcess {
    fn drop(&mut self) {
        crate::common::kill_if_running(self.0, |cmdline| cmdline.contains("python"));
    }
}

/// What one run of the binary left.
struct Run {
    code: Option<i32>,
    stdout: String,
    stderr: String,
    report: String,
    took: Duration,
    /// The highest `VmHWM` seen while it ran.
    peak_kb: Option<u64>,
}

impl std::fmt::Debug for Run {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "exit code {:?} after {:?}, peak RSS {:?} kB\n--- stdout ---\n{}\n--- stderr ---\n{}\n--- report ---\n{}",
            self.code, self.took, self.peak_kb, self.stdout, self.stderr, self.report
        )
    }
}

impl Run {
    /// The report's lines, parsed.
    fn lines(&self) -> Vec<Value> {
        self.report
            .lines()
            .map(|l| {
                serde_json::from_str(l)
                    .unwrap_or_else(|e| panic!("report line {l:?}: {e}\n{self:?}"))
            })
            .collect()
    }
}

/// Runs `agentest test -i s.jsonl -o report.jsonl --color never <args>` in `dir`.
fn run(dir: &Scratch, args: &[&str]) -> Run {
    let report = dir.join("report.jsonl");
    let _ = std::fs::remove_file(&report);
    let mut all = vec![
        "test",
        "-i",
        SUITE,
        "-o",
        "report.jsonl",
        "--color",
        "never",
    ];
    all.extend_from_slice(args);
    let started = Instant::now();
    Running::start(agentest(dir.path(), &all)).finish(started, Duration::from_secs(60), &report)
}

// ---------------------------------------------------------------------------------------
// Expectations, checked all at once
// ---------------------------------------------------------------------------------------

/// One case of a family's suite and what must become of it.
struct Expect {
    id: &'static str,
    case: Value,
    status: &'static str,
    /// Parts the record's `error` must contain.
    says: Vec<String>,
}

/// A case that must pass: the reply echoes the input.
fn healthy(id: &'static str, input: &str) -> Expect {
    Expect {
        id,
        case: json!({"id": id, "input": input,
                     "assertions": [{"type": "equals", "value": format!("echo: {input}")}]}),
        status: "passed",
        says: Vec::new(),
    }
}

/// A case whose input is a fault: it must end with `status` and an error saying `says`.
fn fault(id: &'static str, input: &str, status: &'static str, says: &[&str]) -> Expect {
    Expect {
        id,
        case: json!({"id": id, "input": input}),
        status,
        says: says.iter().map(|s| s.to_string()).collect(),
    }
}

impl Expect {
    /// Sent to the named agent rather than the default one.
    fn agent(mut self, name: &str) -> Expect {
        self.case["agent"] = json!(name);
        self
    }
}

/// What every case that hits the case deadline says.
const TIMED_OUT: [&str; 2] = [
    "timeout after 2s",
    "while waiting for the reply to turn 1; the agent was stopped",
];

fn write_suite(dir: &Scratch, cases: &[Expect]) {
    let text: String = cases.iter().map(|e| format!("{}\n", e.case)).collect();
    dir.write(SUITE, &text);
}

/// Checks everything the issue demands of a run with faults; every mismatch is listed.
fn check(run: &Run, cases: &[Expect]) {
    let mut problems: Vec<String> = Vec::new();
    if run.code != Some(1) {
        problems.push(format!("exit code {:?}, expected 1", run.code));
    }
    for (name, text) in [("stdout", &run.stdout), ("stderr", &run.stderr)] {
        if text.contains("panicked") {
            problems.push(format!("panic text on {name}"));
        }
    }
    let limit = Duration::from_millis(CASE_TIMEOUT_MS) + RUN_SLACK;
    if run.took > limit {
        problems.push(format!("the run took {:?}, more than {limit:?}", run.took));
    }

    // Every case exactly once, then one summary line.
    let lines = run.lines();
    let Some((summary, records)) = lines.split_last() else {
        panic!("an empty report\n{run:?}");
    };
    if summary["type"] != "summary" {
        problems.push("the last line is not the summary".into());
    }
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    for r in records {
        if r["type"] == "summary" {
            problems.push("more than one summary line".into());
            continue;
        }
        *seen
            .entry(r["trial"].as_str().unwrap_or("(no trial)").to_string())
            .or_default() += 1;
    }
    let wanted: BTreeMap<String, usize> =
        cases.iter().map(|e| (format!("s::{}", e.id), 1)).collect();
    if seen != wanted {
        problems.push(format!(
            "the report's cases (trial: records) {seen:?} are not every case once: {wanted:?}"
        ));
    }

    // Each case: its status, its message, its deadline.
    for e in cases {
        let trial = format!("s::{}", e.id);
        let Some(r) = records.iter().find(|r| r["trial"] == trial.as_str()) else {
            continue;
        };
        let status = r["status"].as_str().unwrap_or_default();
        let error = r["error"].as_str().unwrap_or_default();
        if status != e.status {
            problems.push(format!(
                "{trial}: status {status:?}, expected {:?} (error: {error})",
                e.status
            ));
        }
        for part in &e.says {
            if !error.contains(part.as_str()) {
                problems.push(format!("{trial}: error should contain {part:?}: {error}"));
            }
        }
        if e.status == "passed" && r.get("error").is_some_and(|e| !e.is_null()) {
            problems.push(format!("{trial}: passed with an error: {error}"));
        }
        let took = r["duration_ms"].as_u64().unwrap_or(u64::MAX);
        if took > CASE_TIMEOUT_MS + DEADLINE_SLACK_MS {
            problems.push(format!(
                "{trial}: took {took} ms, past its {CASE_TIMEOUT_MS} ms deadline"
            ));
        }
    }

    // The summary's counts match the records.
    let count = |s: &str| cases.iter().filter(|e| e.status == s).count() as u64;
    let want = [
        ("total", cases.len() as u64),
        ("passed", count("passed")),
        ("failed", count("failed") + count("timeout")),
        ("errors", count("error")),
        ("skipped", count("skipped")),
        ("timeouts", count("timeout")),
    ];
    for (key, n) in want {
        if summary[key].as_u64() != Some(n) {
            problems.push(format!("summary {key} = {}, expected {n}", summary[key]));
        }
    }
    assert!(
        problems.is_empty(),
        "{} problem(s):\n  {}\n\n{run:?}",
        problems.len(),
        problems.join("\n  ")
    );
}

/// The peak resident memory stayed bounded while 50 MB replies were refused.
fn check_memory(run: &Run) {
    match run.peak_kb {
        Some(kb) => assert!(
            kb < MEMORY_LIMIT_KB,
            "agentest's peak RSS was {kb} kB (limit {MEMORY_LIMIT_KB} kB) on a run with 50 MB replies\n{run:?}"
        ),
        None => eprintln!("note: no /proc/<pid>/status here; the memory bound was not measured"),
    }
}

// ---------------------------------------------------------------------------------------
// 1. HTTP agents
// ---------------------------------------------------------------------------------------

fn every_http_agent_fault_ends_in_time_with_its_cause() {
    let server = FaultServer::start(Flavor::Agent);
    let dir = scratch("http");
    let url = format!("http://127.0.0.1:{}/agent", server.port);
    // `short`: the same server with its own 1 s reply timeout, under the case's 2 s.
    dir.write(
        "agentest.toml",
        &format!(
            "[agent]\ntype = \"http\"\nurl = \"{url}\"\n\n\
             [agents.short]\ntype = \"http\"\nurl = \"{url}\"\ntimeout = \"1s\"\n"
        ),
    );
    let http = |code: &str| format!("agent at {url} answered HTTP {code}: ");
    let (h500, h429) = (
        http("500 Internal Server Error"),
        http("429 Too Many Requests"),
    );
    let cases = vec![
        healthy("ok-1", "ok 1"),
        healthy("ok-2", "ok 2"),
        healthy("ok-3", "ok 3"),
        healthy("ok-short", "ok on the short agent").agent("short"),
        fault("500", "500", "error", &[&h500, "the server fell over"]),
        fault("429", "429", "error", &[&h429, "slow down"]),
        fault("429-retry-after", "429-retry-after", "error", &[&h429]),
        fault("late", "late", "timeout", &TIMED_OUT),
        fault(
            "late-short",
            "late",
            "error",
            &[&format!("agent at {url} did not answer within 1s")],
        )
        .agent("short"),
        fault("endless", "endless", "timeout", &TIMED_OUT),
        fault(
            "endless-short",
            "endless",
            "error",
            &[&format!("agent at {url} did not answer within 1s")],
        )
        .agent("short"),
        fault(
            "reset",
            "reset",
            "error",
            &[&format!("request to agent at {url} failed: ")],
        ),
        fault(
            "hangup",
            "hangup",
            "error",
            &[&format!("request to agent at {url} failed: ")],
        ),
        fault(
            "invalid-json",
            "invalid-json",
            "error",
            &[
                &format!("agent at {url} answered with a body that is not JSON"),
                "{\"content\": \"unterminated",
            ],
        ),
        fault(
            "wrong-shape",
            "wrong-shape",
            "error",
            &[
                "agent reply broke the protocol",
                "none of `content`, `tool_calls` or `data`",
            ],
        ),
        fault(
            "empty",
            "empty",
            "error",
            &["answered with a body that is not JSON", "EOF"],
        ),
        fault(
            "huge",
            "huge",
            "error",
            &[
                "agent reply exceeds 32 MiB",
                &format!("announced a body of {HUGE} bytes"),
            ],
        ),
        fault(
            "huge-chunked",
            "huge-chunked",
            "error",
            &["agent reply exceeds 32 MiB"],
        ),
    ];
    write_suite(&dir, &cases);
    let run = run(&dir, &["--parallel", "8", "--timeout", CASE_TIMEOUT]);
    check(&run, &cases);
    check_memory(&run);
    // An HTTP agent's 429 is retried like a model's, after its Retry-After, until one
    // more wait would pass the case's deadline.
    assert_eq!(server.hits("429-retry-after"), 2, "{run:?}");
    eprintln!("http agents: {:?}, peak RSS {:?} kB", run.took, run.peak_kb);
}

// ---------------------------------------------------------------------------------------
// 2. `openai` agents against a misbehaving model
// ---------------------------------------------------------------------------------------

fn every_model_fault_ends_in_time_with_its_cause() {
    let server = FaultServer::start(Flavor::Model);
    let dir = scratch("model");
    let base = format!("http://127.0.0.1:{}/v1", server.port);
    // `[llm]`: 400 ms per try, one retry (a late reply: 400 ms, a backoff of at most
    // 500 ms, 400 ms again: well inside the 2 s deadline). `patient`: the same model with
    // a timeout past the case's deadline, so that the deadline is what stops a late reply.
    // The in-flight limit is pinned: these timeouts and 429s would lower an adaptive one,
    // and cases waiting for a slot would time out instead of showing their own fault (the
    // adaptive limiter has tests of its own in llm.rs).
    dir.write(
        "agentest.toml",
        &format!(
            "[run]\ncassettes = \"off\"\n\n\
             [llm]\nbase_url = \"{base}\"\nmodel = \"fault-model\"\ntimeout = \"400ms\"\nmax_retries = 1\nmax_in_flight = 64\n\n\
             [llms.patient]\nbase_url = \"{base}\"\nmodel = \"fault-model\"\ntimeout = \"30s\"\nmax_retries = 1\nmax_in_flight = 64\n\n\
             [agent]\ntype = \"openai\"\nsystem = \"You are under test.\"\n\n\
             [agents.patient]\ntype = \"openai\"\nllm = \"patient\"\nsystem = \"You are under test.\"\n"
        ),
    );
    let failed = |what: &str| {
        format!("model call failed: model endpoint {base} failed after 2 tries: {what}")
    };
    let cases = vec![
        healthy("ok-1", "ok 1"),
        healthy("ok-2", "ok 2"),
        healthy("ok-3", "ok 3"),
        healthy("flaky", "flaky but fine"),
        fault(
            "500",
            "500",
            "error",
            &[&failed(
                "HTTP 500 Internal Server Error: the server fell over",
            )],
        ),
        fault(
            "429",
            "429",
            "error",
            &[&failed("HTTP 429 Too Many Requests: slow down")],
        ),
        fault(
            "429-retry-after",
            "429-retry-after",
            "error",
            &[&failed("HTTP 429 Too Many Requests: slow down")],
        ),
        fault(
            "429-retry-after-long",
            "429-retry-after-long",
            "error",
            &[
                &format!("model endpoint {base}: HTTP 429 Too Many Requests: slow down"),
                "waiting 30s to retry would pass the case's deadline",
            ],
        ),
        fault(
            "late",
            "late",
            "error",
            &[&failed("no answer within 400ms")],
        ),
        fault("late-patient", "late", "timeout", &TIMED_OUT).agent("patient"),
        fault(
            "endless",
            "endless",
            "error",
            &[&failed(""), "did not finish within"],
        ),
        fault(
            "reset",
            "reset",
            "error",
            &[&failed("the reply was cut off")],
        ),
        fault("hangup", "hangup", "error", &[&failed("request failed")]),
        fault(
            "invalid-json",
            "invalid-json",
            "error",
            &[
                &format!("model endpoint {base} answered with invalid JSON"),
                "{\"content\": \"unterminated",
            ],
        ),
        fault(
            "wrong-shape",
            "wrong-shape",
            "error",
            &[&format!(
                "model endpoint {base} answered without `choices[0].message`"
            )],
        ),
        fault(
            "empty",
            "empty",
            "error",
            &[
                &format!("model endpoint {base} answered with invalid JSON"),
                "EOF",
            ],
        ),
        // On the patient model: 32 MiB read under a loaded CI can take longer than
        // 400 ms, and then a timeout (retried) would answer before the size limit.
        fault(
            "huge",
            "huge",
            "error",
            &[&format!(
                "model endpoint {base} sent a reply larger than 32 MiB"
            )],
        )
        .agent("patient"),
        fault(
            "huge-chunked",
            "huge-chunked",
            "error",
            &[&format!(
                "model endpoint {base} sent a reply larger than 32 MiB"
            )],
        )
        .agent("patient"),
    ];
    write_suite(&dir, &cases);
    let run = run(&dir, &["--parallel", "8", "--timeout", CASE_TIMEOUT]);
    check(&run, &cases);
    check_memory(&run);
    // Retried what is worth retrying, no more than max_retries, and not the rest.
    for (fault, tries) in [
        ("500", 2),
        ("429", 2),
        ("429-retry-after", 2),
        ("429-retry-after-long", 1),
        ("flaky", 2),
        ("reset", 2),
        ("hangup", 2),
        ("invalid-json", 1),
        ("wrong-shape", 1),
        ("empty", 1),
        ("huge", 1),
        ("huge-chunked", 1),
    ] {
        assert_eq!(server.hits(fault), tries, "requests for {fault:?}\n{run:?}");
    }
    let flaky = run
        .lines()
        .into_iter()
        .find(|r| r["trial"] == "s::flaky")
        .expect("flaky's record");
    assert_eq!(flaky["retries"], 1, "{run:?}");
    eprintln!(
        "model faults: {:?}, peak RSS {:?} kB",
        run.took, run.peak_kb
    );
}

// ---------------------------------------------------------------------------------------
// 3. Process agents
// ---------------------------------------------------------------------------------------

fn every_process_agent_fault_ends_in_time_with_its_cause() {
    let dir = scratch("process");
    dir.write("agent.py", PROCESS_AGENT);
    // `limited`: the same agent with a 1.5 s reply timeout (room for the interpreter to
    // start on a loaded machine, below the 2 s case timeout). `dead`: exits before reading.
    dir.write(
        "agentest.toml",
        "[agent]\ntype = \"process\"\ncommand = [\"python3\", \"agent.py\"]\n\n\
         [agents.limited]\ntype = \"process\"\ncommand = [\"python3\", \"agent.py\"]\ntimeout = \"1500ms\"\n\n\
         [agents.dead]\ntype = \"process\"\n\
         command = [\"python3\", \"-c\", 'import sys; sys.stderr.write(\"cannot start: no config\\n\"); sys.exit(2)']\n",
    );
    let mut two_turns = healthy("two-turns", "unused");
    two_turns.case = json!({"id": "two-turns", "turns": [
        {"input": "ok first", "assert": {"type": "equals", "value": "echo: ok first"}},
        {"input": "ok second", "assert": {"type": "equals", "value": "echo: ok second"}}
    ]});
    let cases = vec![
        healthy("ok-1", "ok 1"),
        healthy("ok-2", "ok 2"),
        healthy("ok-limited", "ok within the limit").agent("limited"),
        two_turns,
        fault(
            "crash",
            "crash",
            "error",
            &[
                "agent process exited before replying (exit status: 3)",
                "fatal: the agent fell over",
            ],
        ),
        fault(
            "killed",
            "killed",
            "error",
            &["agent process exited before replying", "signal: 9"],
        ),
        fault(
            "dead",
            "hi",
            "error",
            &["agent process exited before", "cannot start: no config"],
        )
        .agent("dead"),
        fault(
            "garbage",
            "garbage",
            "error",
            &[
                "agent process printed a line that is not JSON",
                "hello, I am not JSON",
            ],
        ),
        fault(
            "wrong-shape",
            "wrong-shape",
            "error",
            &[
                "agent reply broke the protocol",
                "none of `content`, `tool_calls` or `data`",
            ],
        ),
        fault("stderr-only", "stderr-only", "timeout", &TIMED_OUT),
        fault("silent", "silent", "timeout", &TIMED_OUT),
        fault(
            "silent-limited",
            "silent",
            "error",
            &["agent process did not reply within 1.5s"],
        )
        .agent("limited"),
        fault(
            "huge",
            "huge",
            "error",
            &["agent reply exceeds 32 MiB", "no newline in the first"],
        ),
    ];
    write_suite(&dir, &cases);
    let run = run(&dir, &["--parallel", "8", "--timeout", CASE_TIMEOUT]);
    check(&run, &cases);
    check_memory(&run);
    // Every agent process is gone once its case ended, whatever way it ended.
    let pids = dir.agent_pids();
    for id in [
        "ok-1",
        "crash",
        "stderr-only",
        "silent",
        "silent-limited",
        "huge",
    ] {
        assert!(
            pids.contains_key(id),
            "the {id} agent wrote no pid: {pids:?}\n{run:?}"
        );
    }
    let agents: Vec<(String, AgentProcess)> = pids
        .into_iter()
        .map(|(id, pid)| (id, AgentProcess(pid)))
        .collect();
    for (id, agent) in &agents {
        assert!(
            agent.gone_within(Duration::from_secs(2)),
            "the agent of {id} (pid {}) outlived the run\n{run:?}",
            agent.0
        );
    }
    eprintln!(
        "process agents: {:?}, peak RSS {:?} kB",
        run.took, run.peak_kb
    );
}

// ---------------------------------------------------------------------------------------
// 4. Ctrl-C
// ---------------------------------------------------------------------------------------

fn ctrl_c_stops_the_run_kills_the_agents_and_keeps_what_finished() {
    let dir = scratch("sigint");
    dir.write("agent.py", PROCESS_AGENT);
    dir.write(
        "agentest.toml",
        "[agent]\ntype = \"process\"\ncommand = [\"python3\", \"agent.py\"]\n",
    );
    let cases = [
        healthy("fast", "ok fast"),
        fault("slow-a", "sleep", "skipped", &[]),
        fault("slow-b", "sleep", "skipped", &[]),
    ];
    write_suite(&dir, &cases);
    let report = dir.join("report.jsonl");
    let started = Instant::now();
    let running = Running::start(agentest(
        dir.path(),
        &[
            "test",
            "-i",
            SUITE,
            "--parallel",
            "3",
            "--timeout",
            "60s",
            "-o",
            "report.jsonl",
            "--color",
            "never",
        ],
    ));

    // Wait for the fast case's record and for both sleepers to be running.
    let until = Instant::now() + Duration::from_secs(15);
    let sleepers = loop {
        let text = std::fs::read_to_string(&report).unwrap_or_default();
        let pids = dir.agent_pids();
        if text.contains("\"s::fast\"") {
            if let (Some(a), Some(b)) = (pids.get("slow-a"), pids.get("slow-b")) {
                break [AgentProcess(*a), AgentProcess(*b)];
            }
        }
        assert!(
            Instant::now() < until,
            "the fast case never finished or the slow agents never started: {pids:?}\n{text}"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(sleepers.iter().all(AgentProcess::alive));

    // SAFETY: a signal to the child this test started (it is not reaped yet).
    let sent = unsafe { libc::kill(running.pid(), libc::SIGINT) };
    assert_eq!(sent, 0, "kill -INT failed");
    let signalled = Instant::now();
    let run = running.finish(started, started.elapsed() + Duration::from_secs(5), &report);
    let stopping = signalled.elapsed();

    assert_eq!(run.code, Some(130), "{run:?}");
    assert!(
        stopping < Duration::from_secs(3),
        "stopping took {stopping:?}\n{run:?}"
    );
    assert!(
        run.stdout.contains("Interrupted"),
        "the console summary should say the run was interrupted\n{run:?}"
    );
    assert!(!run.stderr.contains("panicked"), "{run:?}");

    let lines = run.lines();
    let (summary, records) = lines.split_last().expect("a report");
    let mut trials: Vec<&str> = records
        .iter()
        .map(|r| r["trial"].as_str().unwrap_or("?"))
        .collect();
    trials.sort_unstable();
    assert_eq!(trials, ["s::fast", "s::slow-a", "s::slow-b"], "{run:?}");
    for r in records {
        let (trial, status, error) = (&r["trial"], &r["status"], r["error"].as_str().unwrap_or(""));
        if trial == "s::fast" {
            assert_eq!(status, "passed", "{run:?}");
        } else {
            assert_eq!(status, "skipped", "{trial}\n{run:?}");
            assert!(error.contains("interrupted"), "{trial}: {error}\n{run:?}");
        }
    }
    assert_eq!(summary["type"], "summary", "{run:?}");
    assert_eq!(summary["interrupted"], true, "{run:?}");
    for (key, n) in [
        ("total", 3),
        ("passed", 1),
        ("skipped", 2),
        ("failed", 0),
        ("errors", 0),
    ] {
        assert_eq!(summary[key], n, "summary {key}\n{run:?}");
    }
    for s in &sleepers {
        assert!(
            s.gone_within(Duration::from_secs(2)),
            "the sleeping agent (pid {}) outlived the interrupted run\n{run:?}",
            s.0
        );
    }
    eprintln!(
        "ctrl-c: stopped {stopping:?} after the signal, run {:?}",
        run.took
    );
}

// ---------------------------------------------------------------------------------------
// 5. SIGTERM, SIGHUP and kill -9
// ---------------------------------------------------------------------------------------

/// Writes its pid to `$PIDS/<test_id>` at each request; `sleep` never answers.
const PID_AGENT: &str = r#"
import json, os, sys, time
for line in sys.stdin:
    request = json.loads(line)
    with open(os.path.join(os.environ["PIDS"], request["test_id"]), "w") as f:
        f.write(str(os.getpid()))
    if request["input"] == "sleep":
        time.sleep(3600)
    print(json.dumps({"content": "echo: " + request["input"]}), flush=True)
"#;

/// A scenario with a `local` environment whose only turn never gets an answer: its
/// environment folder exists while the run is stopped.
const SLEEPING_SCENARIO: &str = "name: env\ndescription: d\nenvironment: {type: local}\nsetup:\n  virtual_fs: {'a.txt': 'x'}\nrun:\n  - input: 'sleep'\n    evaluations:\n      - type: string_contains\n        value: x\njudgment: {strategy: all_pass}\n";

/// The environment folders agentest made under `tmp`.
fn env_folders(tmp: &Path) -> Vec<String> {
    std::fs::read_dir(tmp)
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with("agentest-env-"))
                .collect()
        })
        .unwrap_or_default()
}

/// `docker stop`, Kubernetes and CI cancellation send SIGTERM, a closed terminal SIGHUP:
/// each stops the run as Ctrl-C does (the finished case kept, the running ones and
/// their agents stopped and reported, the summary line written, the scenario's
/// environment folder removed), with the signal named and the exit code 128 + its
/// number.
fn sigterm_and_sighup_stop_the_run_as_ctrl_c_does() {
    for (signal, name, code) in [
        (libc::SIGTERM, "SIGTERM", 143),
        (libc::SIGHUP, "SIGHUP", 129),
    ] {
        stop_the_run_with(signal, name, code);
    }
}

fn stop_the_run_with(signal: i32, name: &str, code: i32) {
    let dir = scratch(&format!("stop-{name}"));
    dir.write("agent.py", PID_AGENT);
    let pids = dir.join("pids");
    let tmp = dir.join("tmp");
    for d in [&pids, &tmp] {
        std::fs::create_dir_all(d).expect("mkdir");
    }
    dir.write(
        "agentest.toml",
        &format!(
            "[agent]\ntype = \"process\"\ncommand = [\"python3\", \"agent.py\"]\nenv = {{ PIDS = {} }}\n",
            crate::common::toml_str(&pids.display().to_string())
        ),
    );
    dir.write(
        "suite/s.jsonl",
        "{\"id\": \"fast\", \"input\": \"ok\", \"assert\": {\"type\": \"equals\", \"value\": \"echo: ok\"}}\n\
         {\"id\": \"slow\", \"input\": \"sleep\"}\n",
    );
    dir.write("suite/env.scenario.yaml", SLEEPING_SCENARIO);
    let report = dir.join("report.jsonl");
    let mut cmd = agentest(
        dir.path(),
        &[
            "test",
            "-i",
            "suite",
            "--parallel",
            "3",
            "--timeout",
            "60s",
            "-o",
            "report.jsonl",
            "--color",
            "never",
        ],
    );
    cmd.env("TMPDIR", &tmp);
    let started = Instant::now();
    let running = Running::start(cmd);

    // Wait for the fast case's record and for both sleepers to be running.
    let until = Instant::now() + Duration::from_secs(15);
    let sleepers: Vec<AgentProcess> = loop {
        let text = std::fs::read_to_string(&report).unwrap_or_default();
        let ids = dir.pids_in(&pids);
        if text.contains("\"s::fast\"") && ids.len() == 3 {
            break ids
                .into_iter()
                .filter(|(id, _)| id != "fast")
                .map(|(_, pid)| AgentProcess(pid))
                .collect();
        }
        assert!(
            Instant::now() < until,
            "the fast case never finished or the slow agents never started: {ids:?}\n{text}"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(sleepers.iter().all(AgentProcess::alive));
    assert_eq!(env_folders(&tmp).len(), 1, "the scenario's folder exists");

    // SAFETY: a signal to the child this test started (it is not reaped yet).
    let sent = unsafe { libc::kill(running.pid(), signal) };
    assert_eq!(sent, 0, "kill -{name} failed");
    let signalled = Instant::now();
    let run = running.finish(started, started.elapsed() + Duration::from_secs(5), &report);
    let stopping = signalled.elapsed();

    assert_eq!(run.code, Some(code), "{name}: exit code\n{run:?}");
    assert!(
        stopping < Duration::from_secs(3),
        "stopping took {stopping:?}\n{run:?}"
    );
    assert!(
        run.stdout.contains(&format!(
            "Interrupted ({name}): running agents were stopped; unfinished cases are reported as not run"
        )),
        "the console summary names the signal\n{run:?}"
    );
    assert!(
        run.stderr.contains(&format!(
            "agentest: interrupted ({name}); stopping the running cases"
        )),
        "{run:?}"
    );
    let lines = run.lines();
    let (summary, records) = lines.split_last().expect("a report");
    let mut trials: Vec<(&str, &str)> = records
        .iter()
        .map(|r| {
            (
                r["trial"].as_str().unwrap_or("?"),
                r["status"].as_str().unwrap_or("?"),
            )
        })
        .collect();
    trials.sort_unstable();
    assert_eq!(
        trials,
        [
            ("env::env", "skipped"),
            ("s::fast", "passed"),
            ("s::slow", "skipped")
        ],
        "{run:?}"
    );
    for r in records.iter().filter(|r| r["status"] == "skipped") {
        assert_eq!(
            r["error"],
            format!("not run: the run was interrupted ({name})"),
            "{run:?}"
        );
    }
    assert_eq!(summary["type"], "summary", "{run:?}");
    assert_eq!(summary["interrupted"], true, "{run:?}");
    assert_eq!(summary["signal"], name, "{run:?}");
    for s in &sleepers {
        assert!(
            s.gone_within(Duration::from_secs(2)),
            "a sleeping agent (pid {}) outlived the run stopped by {name}\n{run:?}",
            s.0
        );
    }
    assert_eq!(
        env_folders(&tmp),
        Vec::<String>::new(),
        "the scenario's environment folder is removed\n{run:?}"
    );
}

/// `kill -9` leaves agentest no chance to stop its agents: a process agent that ignores
/// the end of its stdin (it sleeps without reading) must still die with it.
fn process_agents_die_with_agentest_killed_by_sigkill() {
    let dir = scratch("sigkill");
    dir.write("agent.py", PROCESS_AGENT);
    dir.write(
        "agentest.toml",
        "[agent]\ntype = \"process\"\ncommand = [\"python3\", \"agent.py\"]\n",
    );
    write_suite(
        &dir,
        &[
            fault("a", "silent", "timeout", &[]),
            fault("b", "silent", "timeout", &[]),
        ],
    );
    let report = dir.join("report.jsonl");
    let started = Instant::now();
    let running = Running::start(agentest(
        dir.path(),
        &[
            "test",
            "-i",
            SUITE,
            "--parallel",
            "2",
            "--timeout",
            "60s",
            "-o",
            "report.jsonl",
        ],
    ));
    let until = Instant::now() + Duration::from_secs(15);
    let agents: Vec<AgentProcess> = loop {
        let pids = dir.agent_pids();
        if pids.len() == 2 {
            break pids.into_values().map(AgentProcess).collect();
        }
        assert!(Instant::now() < until, "the agents never started: {pids:?}");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(agents.iter().all(AgentProcess::alive));
    // SAFETY: a signal to the child this test started (it is not reaped yet).
    let sent = unsafe { libc::kill(running.pid(), libc::SIGKILL) };
    assert_eq!(sent, 0, "kill -9 failed");
    let run = running.finish(started, started.elapsed() + Duration::from_secs(5), &report);
    assert_eq!(run.code, None, "killed by a signal\n{run:?}");
    for a in &agents {
        assert!(
            a.gone_within(Duration::from_secs(3)),
            "the agent (pid {}) outlived agentest killed by SIGKILL\n{run:?}",
            a.0
        );
    }
}

/// Once the run is over, a signal ends agentest at once, agents killed: here while a
/// reporter agent (`-r`) that never answers writes the report. (Ctrl-C used to be
/// swallowed there, holding agentest until the reporter's timeout.)
fn a_signal_after_the_run_ends_agentest_at_once() {
    let dir = scratch("after-run");
    dir.write("agent.py", PROCESS_AGENT);
    dir.write(
        "agentest.toml",
        "[agent]\ntype = \"process\"\ncommand = [\"python3\", \"agent.py\"]\n\n\
         [agents.reporter]\ntype = \"process\"\ncommand = [\"python3\", \"-c\", \"import os, sys, time; sys.stdin.readline(); open('reporter.pid', 'w').write(str(os.getpid())); time.sleep(3600)\"]\n",
    );
    write_suite(&dir, &[healthy("fast", "ok fast")]);
    let started = Instant::now();
    let running = Running::start(agentest(
        dir.path(),
        &[
            "test",
            "-i",
            SUITE,
            "-r",
            "reporter",
            "-o",
            "report.md",
            "--timeout",
            "60s",
        ],
    ));
    let until = Instant::now() + Duration::from_secs(15);
    let reporter = loop {
        if let Ok(pid) = std::fs::read_to_string(dir.join("reporter.pid")) {
            if let Ok(pid) = pid.trim().parse() {
                break AgentProcess(pid);
            }
        }
        assert!(Instant::now() < until, "the reporter never started");
        std::thread::sleep(Duration::from_millis(20));
    };
    // SAFETY: a signal to the child this test started (it is not reaped yet).
    let sent = unsafe { libc::kill(running.pid(), libc::SIGINT) };
    assert_eq!(sent, 0, "kill -INT failed");
    let signalled = Instant::now();
    let run = running.finish(
        started,
        started.elapsed() + Duration::from_secs(10),
        &dir.join("report.md"),
    );
    let stopping = signalled.elapsed();
    assert_eq!(run.code, Some(130), "{run:?}");
    assert!(
        stopping < Duration::from_secs(3),
        "stopping took {stopping:?}\n{run:?}"
    );
    assert!(
        run.stderr.contains("agentest: Ctrl-C; exiting at once"),
        "{run:?}"
    );
    assert!(
        reporter.gone_within(Duration::from_secs(2)),
        "the reporter agent (pid {}) outlived agentest\n{run:?}",
        reporter.0
    );
}

pub fn tests() -> Vec<libtest_mimic::Trial> {
    crate::trials![
        every_http_agent_fault_ends_in_time_with_its_cause,
        every_model_fault_ends_in_time_with_its_cause,
        every_process_agent_fault_ends_in_time_with_its_cause,
        ctrl_c_stops_the_run_kills_the_agents_and_keeps_what_finished,
        sigterm_and_sighup_stop_the_run_as_ctrl_c_does,
        process_agents_die_with_agentest_killed_by_sigkill,
        a_signal_after_the_run_ends_agentest_at_once,
    ]
}
