//! Agents and commands that misbehave: grandchildren that outlive their parent, hooks that
//! leave servers running, replies without end, and secrets in the agent's config. Each
//! test runs the real `agentest` binary against real child processes or a real HTTP
//! server on 127.0.0.1.
#![cfg(unix)]

use std::io::{BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::{read_request, toml_str, Scratch, TcpServer, BIN};
use serde_json::Value;

/// An agent that answers every request line with `{"content": "ok"}`.
const OK_AGENT: &str =
    r#"command = ["sh", "-c", "while read -r line; do echo '{\"content\": \"ok\"}'; done"]"#;

// ---------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------

/// A scratch directory holding `config` as its `agentest.toml`.
fn scratch(tag: &str, config: &str) -> Scratch {
    let s = Scratch::named("faults", tag);
    s.write("agentest.toml", config);
    s
}

impl Scratch {
    /// Waits up to 10 s for a file holding a pid, written by a command under test.
    fn pid(&self, rel: &str) -> Sleeper {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let text = std::fs::read_to_string(self.join(rel)).unwrap_or_default();
            if let Ok(pid) = text.trim().parse() {
                return Sleeper(pid);
            }
            assert!(Instant::now() < deadline, "{rel} was never written");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// A `sleep` some command under test started in the background; killed when dropped so
/// that a failing test leaves nothing behind.
struct Sleeper(i32);

impl Sleeper {
    /// Whether the process still runs (a zombie does not count).
    fn alive(&self) -> bool {
        crate::common::alive(self.0)
    }

    /// Whether it is gone within `grace`.
    fn gone_within(&self, grace: Duration) -> bool {
        crate::common::gone_within(self.0, grace)
    }
}

impl Drop for Sleeper {
    fn drop(&mut self) {
        crate::common::kill_if_running(self.0, |cmdline| cmdline.starts_with("sleep"));
    }
}

/// What one run of the binary left.
struct Run {
    code: Option<i32>,
    stdout: String,
    stderr: String,
    report: String,
}

impl std::fmt::Debug for Run {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "exit code {:?}\n--- stdout ---\n{}\n--- stderr ---\n{}\n--- report ---\n{}",
            self.code, self.stdout, self.stderr, self.report
        )
    }
}

impl Run {
    /// The report record of one trial.
    fn case(&self, trial: &str) -> Value {
        self.report
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).expect("report line is JSON"))
            .find(|v| v["trial"] == trial)
            .unwrap_or_else(|| panic!("no record for {trial}:\n{self:?}"))
    }

    fn status(&self, trial: &str) -> String {
        self.case(trial)["status"]
            .as_str()
            .unwrap_or("")
            .to_string()
    }

    fn error(&self, trial: &str) -> String {
        self.case(trial)["error"].as_str().unwrap_or("").to_string()
    }
}

fn agentest(dir: &Path, args: &[&str], envs: &[(&str, &str)]) -> Command {
    let mut cmd = Command::new(BIN);
    cmd.current_dir(dir)
        .args(args)
        .args(["-o", "report.jsonl", "--color", "never"])
        .env_remove("NO_COLOR")
        .stdin(Stdio::null());
    for (k, v) in envs {
        cmd.env(k, v);
    }
    cmd
}

/// Runs `agentest test <args> -o report.jsonl` in `dir`.
fn run(dir: &Scratch, args: &[&str], envs: &[(&str, &str)]) -> Run {
    let mut all = vec!["test"];
    all.extend_from_slice(args);
    let out = agentest(dir.path(), &all, envs)
        .output()
        .expect("run the agentest binary");
    Run {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        report: std::fs::read_to_string(dir.join("report.jsonl")).unwrap_or_default(),
    }
}

// ---------------------------------------------------------------------------------------
// 0. The first agent a user writes
// ---------------------------------------------------------------------------------------

/// The agent nearly every user writes first: `print(json.dumps(reply))`, never flushed,
/// which Python block-buffers on a pipe.
const UNFLUSHED_AGENT: &str = "import json, sys\nfor line in sys.stdin:\n    req = json.loads(line)\n    print(json.dumps({\"content\": \"You said: \" + req[\"input\"]}))\n";

fn python_agent(tag: &str, script: &str, extra: &str) -> Scratch {
    let s = scratch(
        tag,
        &format!("[agent]\ntype = \"process\"\ncommand = [\"python3\", \"agent.py\"]\n{extra}"),
    );
    s.write("agent.py", script);
    s.write(
        "cases.jsonl",
        "{\"id\": \"T1\", \"input\": \"hello\", \"assert\": {\"type\": \"contains\", \"value\": \"hello\"}}\n",
    );
    s
}

/// An unflushed Python agent works: agentest sets PYTHONUNBUFFERED=1 for its process
/// agents unless the config's env sets it.
fn an_unflushed_python_agent_answers() {
    let s = python_agent("unflushed", UNFLUSHED_AGENT, "timeout = \"20s\"\n");
    let started = Instant::now();
    let r = run(&s, &["-i", "cases.jsonl"], &[("PYTHONUNBUFFERED", "")]);
    assert_eq!(r.code, Some(0), "{r:?}");
    assert_eq!(r.status("cases::T1"), "passed", "{r:?}");
    assert!(started.elapsed() < Duration::from_secs(15), "{r:?}");
}

/// With buffering back on (the config's env wins), the agent says nothing, and the
/// timeout says so and how to flush: for the agent's own timeout and the case's.
fn a_silent_agent_timeout_says_it_wrote_nothing_and_how_to_flush() {
    let flush = "; the agent wrote nothing on stdout after the request: write the reply as one line and flush it (Python: print(json.dumps(reply), flush=True); agentest sets PYTHONUNBUFFERED=1 unless the agent's env sets it)";
    let s = python_agent(
        "buffered",
        UNFLUSHED_AGENT,
        "timeout = \"1s\"\nenv = { PYTHONUNBUFFERED = \"\" }\n",
    );
    let r = run(&s, &["-i", "cases.jsonl"], &[]);
    assert_eq!(r.code, Some(1), "{r:?}");
    let why = r.error("cases::T1");
    assert!(
        why.starts_with(&format!("turn 1: agent process did not reply within 1s{flush}; the agent wrote nothing on stderr")),
        "{why}"
    );
    let s = python_agent(
        "buffered-case",
        UNFLUSHED_AGENT,
        "env = { PYTHONUNBUFFERED = \"\" }\n",
    );
    let r = run(&s, &["-i", "cases.jsonl", "--timeout", "1s"], &[]);
    assert_eq!(r.status("cases::T1"), "timeout", "{r:?}");
    assert_eq!(
        r.error("cases::T1"),
        format!("timeout after 1s (while waiting for the reply to turn 1; the agent was stopped){flush}; the agent wrote nothing on stderr")
    );
    // Half a line, flushed: the newline is what is missing.
    let s = python_agent(
        "no-newline",
        "import sys\nfor line in sys.stdin:\n    sys.stdout.write('{\"content\": \"hi\"}')\n    sys.stdout.flush()\n",
        "timeout = \"1s\"\n",
    );
    let r = run(&s, &["-i", "cases.jsonl"], &[]);
    let why = r.error("cases::T1");
    assert!(
        why.contains("; the agent wrote 17 bytes on stdout but never ended the line: end each reply with a newline and flush it"),
        "{why}"
    );
}

/// A process agent's program that cannot be found is said once, before any case runs.
fn a_missing_agent_program_is_said_once_before_anything_runs() {
    let s = scratch(
        "not-on-path",
        "[agent]\ntype = \"process\"\ncommand = [\"no-such-agent-x1\", \"agent.py\"]\n",
    );
    let cases: String = (1..=30)
        .map(|i| format!("{{\"id\": \"T{i}\", \"input\": \"hi\"}}\n"))
        .collect();
    s.write("cases.jsonl", &cases);
    let r = run(&s, &["-i", "cases.jsonl"], &[]);
    assert_eq!(r.code, Some(2), "{r:?}");
    assert_eq!(r.stderr.matches("[agent].command in ").count(), 1, "{r:?}");
    assert!(
        r.stderr
            .contains("`no-such-agent-x1` not found on PATH; install it, or give its path"),
        "{r:?}"
    );
    assert!(r.report.is_empty(), "no case ran: {r:?}");
    // Two suites under two broken configs: both are said, not only the first.
    s.write(
        "other/agentest.toml",
        "[agent]\ntype = \"process\"\ncommand = [\"no-such-agent-x2\"]\n",
    );
    s.write("other/more.jsonl", "{\"id\": \"M1\", \"input\": \"hi\"}\n");
    let r = run(&s, &["-i", "."], &[]);
    assert_eq!(r.code, Some(2), "{r:?}");
    for program in ["no-such-agent-x1", "no-such-agent-x2"] {
        assert_eq!(
            r.stderr
                .matches(&format!("`{program}` not found on PATH"))
                .count(),
            1,
            "{r:?}"
        );
    }
}

/// An agent much slower than usual is said on stderr while the case still waits. The
/// notice comes at ten times the usual reply time, at least 5 s; the test lowers that
/// floor to 1 s (`AGENTEST_SLOW_NOTICE_MIN`) so as not to wait five seconds. Eight fast
/// replies make the usual time (the first one's share of Python's start is then small),
/// and the slow reply takes 3 s: the notice comes first unless the usual time is over
/// 300 ms, which only a badly overloaded machine sees.
fn an_agent_much_slower_than_usual_is_said_on_stderr() {
    let agent = "import json, sys, time\nfor line in sys.stdin:\n    req = json.loads(line)\n    if req['input'] == 'slow':\n        time.sleep(3)\n    print(json.dumps({'content': 'ok'}), flush=True)\n";
    let s = python_agent("slow-notice", agent, "");
    let cases: String = ["a", "b", "c", "d", "e", "f", "g", "h", "slow"]
        .iter()
        .map(|i| format!("{{\"id\": \"{i}\", \"input\": \"{i}\"}}\n"))
        .collect();
    s.write("cases.jsonl", &cases);
    let r = run(
        &s,
        &["-i", "cases.jsonl", "--parallel", "1"],
        &[("AGENTEST_SLOW_NOTICE_MIN", "1s")],
    );
    assert_eq!(r.code, Some(0), "{r:?}");
    const NOTICE: &str = "agentest: cases::slow: agent `default` has not replied to turn 1 after ";
    let after = r
        .stderr
        .lines()
        .find_map(|l| l.strip_prefix(NOTICE))
        .unwrap_or_else(|| panic!("no notice: {r:?}"));
    // Ten times the usual, which is a few milliseconds here: the floor, 1 s. (On a
    // loaded machine ten times the usual may be a little over it.)
    let (wait, usual) = after
        .split_once(" (it usually answers in ")
        .unwrap_or_else(|| panic!("{r:?}"));
    let wait = agentest::__private::duration::parse_duration(wait)
        .unwrap_or_else(|e| panic!("{e}: {r:?}"));
    assert!(
        wait >= Duration::from_secs(1) && wait < Duration::from_secs(3),
        "{r:?}"
    );
    assert!(
        usual.ends_with("); still waiting, up to the case's timeout"),
        "{r:?}"
    );
    assert_eq!(r.stderr.matches("has not replied").count(), 1, "{r:?}");
}

// ---------------------------------------------------------------------------------------
// 1. What an agent starts dies with its conversation
// ---------------------------------------------------------------------------------------

fn a_timed_out_process_agent_takes_its_grandchildren_with_it() {
    let dir = scratch(
        "timeout-group",
        r#"[agent]
type = "process"
command = ["sh", "-c", "sleep 1007 & echo $! > grandchild.pid; wait; true"]
"#,
    );
    dir.write(
        "s.jsonl",
        r#"{"id": "slow", "input": "hi", "timeout": "2s"}"#,
    );
    let run = run(&dir, &["-i", "s.jsonl"], &[]);
    let sleeper = dir.pid("grandchild.pid");
    assert_eq!(run.status("s::slow"), "timeout", "{run:?}");
    assert!(
        sleeper.gone_within(Duration::from_secs(2)),
        "the agent's grandchild (pid {}) outlived the timed-out case",
        sleeper.0
    );
}

fn a_finished_conversation_kills_what_the_agent_started() {
    let dir = scratch(
        "close-group",
        r#"[agent]
type = "process"
command = ["sh", "-c", "sleep 1011 & echo $! > background.pid; while read -r line; do echo '{\"content\": \"ok\"}'; done"]
"#,
    );
    dir.write(
        "s.jsonl",
        r#"{"id": "ok", "input": "hi", "assert": {"type": "equals", "value": "ok"}}"#,
    );
    let run = run(&dir, &["-i", "s.jsonl"], &[]);
    let sleeper = dir.pid("background.pid");
    assert_eq!(run.status("s::ok"), "passed", "{run:?}");
    assert!(
        sleeper.gone_within(Duration::from_secs(2)),
        "the agent's background process (pid {}) outlived the conversation",
        sleeper.0
    );
}

fn stopping_agentest_with_sigterm_kills_the_agents_group() {
    let dir = scratch(
        "sigterm-group",
        r#"[agent]
type = "process"
command = ["sh", "-c", "sleep 1009 & echo $! > grandchild.pid; wait; true"]
"#,
    );
    dir.write(
        "s.jsonl",
        r#"{"id": "slow", "input": "hi", "timeout": "60s"}"#,
    );
    let mut child = agentest(dir.path(), &["test", "-i", "s.jsonl"], &[])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start agentest");
    let sleeper = dir.pid("grandchild.pid");
    // SAFETY: a signal to the child this test started.
    unsafe {
        libc::kill(child.id() as i32, libc::SIGTERM);
    }
    let status = child.wait().expect("wait for agentest");
    assert!(!status.success(), "{status}");
    assert!(
        sleeper.gone_within(Duration::from_secs(2)),
        "the agent's grandchild (pid {}) outlived agentest",
        sleeper.0
    );
}

// ---------------------------------------------------------------------------------------
// 2. Hooks: done when the command exits; killed with their group at the deadline
// ---------------------------------------------------------------------------------------

fn a_hook_that_leaves_a_server_running_does_not_hold_the_case() {
    let dir = scratch(
        "hook-background",
        &format!(
            "[agent]\ntype = \"process\"\n{OK_AGENT}\n\n[hooks.setup]\ncommand = [\"sh\", \"-c\", \"sleep 1013 & echo $! > server.pid; echo started\"]\n"
        ),
    );
    dir.write(
        "s.jsonl",
        r#"{"id": "hooked", "input": "hi", "before": "setup", "timeout": "30s", "assert": {"type": "equals", "value": "ok"}}"#,
    );
    let started = Instant::now();
    let run = run(&dir, &["-i", "s.jsonl"], &[]);
    let elapsed = started.elapsed();
    let server = dir.pid("server.pid");
    assert_eq!(run.status("s::hooked"), "passed", "{run:?}");
    assert!(
        elapsed < Duration::from_secs(10),
        "the hook's background process held the case for {elapsed:?}"
    );
    // A hook that exits normally may leave a server for the case: it is not killed.
    assert!(
        server.alive(),
        "the hook's background process was killed after the hook exited normally"
    );
}

fn a_hook_past_the_deadline_is_killed_with_its_group() {
    // `own`: the hook's own timeout stops it; `case`: the case's deadline cancels it.
    let dir = scratch(
        "hook-deadline",
        &format!(
            "[agent]\ntype = \"process\"\n{OK_AGENT}\n\n\
             [hooks.own]\ncommand = [\"sh\", \"-c\", \"sleep 1017 & echo $! > own.pid; wait; true\"]\ntimeout = \"1s\"\n\n\
             [hooks.case]\ncommand = [\"sh\", \"-c\", \"sleep 1019 & echo $! > case.pid; wait; true\"]\n"
        ),
    );
    dir.write(
        "s.jsonl",
        "{\"id\": \"own\", \"input\": \"hi\", \"before\": \"own\", \"timeout\": \"30s\"}\n\
         {\"id\": \"case\", \"input\": \"hi\", \"before\": \"case\", \"timeout\": \"2s\"}\n",
    );
    let started = Instant::now();
    let run = run(&dir, &["-i", "s.jsonl"], &[]);
    let own = dir.pid("own.pid");
    let case = dir.pid("case.pid");
    assert!(started.elapsed() < Duration::from_secs(10), "{run:?}");
    assert_eq!(run.status("s::own"), "error", "{run:?}");
    assert!(
        run.error("s::own")
            .contains("did not finish before the case's deadline and was killed"),
        "{run:?}"
    );
    assert_ne!(run.status("s::case"), "passed", "{run:?}");
    for (name, sleeper) in [("own", own), ("case", case)] {
        assert!(
            sleeper.gone_within(Duration::from_secs(2)),
            "the `{name}` hook's grandchild (pid {}) outlived the deadline",
            sleeper.0
        );
    }
}

// ---------------------------------------------------------------------------------------
// 3. Replies have a size limit
// ---------------------------------------------------------------------------------------

fn a_process_reply_without_end_is_capped() {
    let dir = scratch(
        "endless-line",
        r#"[agent]
type = "process"
command = ["sh", "-c", "read -r line; head -c 300000000 /dev/zero | tr '\\000' a"]
"#,
    );
    dir.write(
        "s.jsonl",
        r#"{"id": "huge", "input": "hi", "timeout": "60s"}"#,
    );
    let run = run(&dir, &["-i", "s.jsonl"], &[]);
    assert_eq!(run.status("s::huge"), "error", "{run:?}");
    let error = run.error("s::huge");
    assert!(error.contains("agent reply exceeds 32 MiB"), "{error}");
}

/// An HTTP server answering `/announce` with a 100 MiB Content-Length, and `/stream`
/// with 40 MiB of chunked body; stopped on drop.
fn oversized_http_server() -> TcpServer {
    TcpServer::start(|conn, _| serve_oversized(conn))
}

fn serve_oversized(conn: TcpStream) {
    let mut reader = BufReader::new(conn.try_clone().expect("clone stream"));
    let mut conn = conn;
    let Some(request) = read_request(&mut reader) else {
        return;
    };
    if request.path.contains("/announce") {
        let _ = conn.write_all(
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 104857600\r\n\r\n{\"content\": \"",
        );
        std::thread::sleep(Duration::from_secs(5));
    } else {
        let _ = conn.write_all(
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n",
        );
        let chunk = vec![b'a'; 1 << 20];
        for _ in 0..40 {
            let head = format!("{:x}\r\n", chunk.len());
            if conn.write_all(head.as_bytes()).is_err()
                || conn.write_all(&chunk).is_err()
                || conn.write_all(b"\r\n").is_err()
            {
                return;
            }
        }
        let _ = conn.write_all(b"0\r\n\r\n");
    }
}

fn an_http_body_over_the_limit_is_an_error() {
    let server = oversized_http_server();
    let port = server.port;
    let dir = scratch(
        "http-limit",
        &format!(
            "[agents.announce]\ntype = \"http\"\nurl = \"http://127.0.0.1:{port}/announce\"\n\n\
             [agents.stream]\ntype = \"http\"\nurl = \"http://127.0.0.1:{port}/stream\"\n"
        ),
    );
    dir.write(
        "s.jsonl",
        "{\"id\": \"announce\", \"agent\": \"announce\", \"input\": \"hi\", \"timeout\": \"60s\"}\n\
         {\"id\": \"stream\", \"agent\": \"stream\", \"input\": \"hi\", \"timeout\": \"60s\"}\n",
    );
    let started = Instant::now();
    let run = run(&dir, &["-i", "s.jsonl"], &[]);
    for trial in ["s::announce", "s::stream"] {
        assert_eq!(run.status(trial), "error", "{run:?}");
        let error = run.error(trial);
        assert!(
            error.contains("agent reply exceeds 32 MiB"),
            "{trial}: {error}"
        );
    }
    // The announced size is refused before any of the body is read.
    assert!(started.elapsed() < Duration::from_secs(4), "{run:?}");
}

/// An HTTP agent that answers 503 for a moment is retried like a model endpoint: said on
/// stderr, counted, `Retry-After` honoured; `retries = 0` turns that off.
fn a_briefly_unavailable_http_agent_is_retried() {
    use std::collections::HashMap;
    use std::sync::{Arc, Mutex};
    let seen: Arc<Mutex<HashMap<String, usize>>> = Arc::default();
    let counts = seen.clone();
    let server = TcpServer::start(move |conn, _| {
        let mut reader = BufReader::new(conn.try_clone().expect("clone stream"));
        let mut conn = conn;
        let Some(request) = read_request(&mut reader) else {
            return;
        };
        let n = {
            let mut c = counts.lock().unwrap();
            let n = c.entry(request.path.clone()).or_default();
            *n += 1;
            *n
        };
        let busy = request.path.contains("/down") || n == 1;
        let answer = if busy {
            "HTTP/1.1 503 Service Unavailable\r\nRetry-After: 0\r\nContent-Length: 4\r\nConnection: close\r\n\r\nbusy".to_string()
        } else {
            let body = r#"{"content": "hello after a wait"}"#;
            format!(
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            )
        };
        let _ = conn.write_all(answer.as_bytes());
    });
    let port = server.port;
    let dir = scratch(
        "http-retry",
        &format!(
            "[agents.flaky]\ntype = \"http\"\nurl = \"http://127.0.0.1:{port}/flaky\"\n\n\
             [agents.down]\ntype = \"http\"\nurl = \"http://127.0.0.1:{port}/down\"\nretries = 0\n"
        ),
    );
    dir.write(
        "s.jsonl",
        "{\"id\": \"flaky\", \"agent\": \"flaky\", \"input\": \"hi\", \"assert\": {\"type\": \"contains\", \"value\": \"hello\"}}\n\
         {\"id\": \"down\", \"agent\": \"down\", \"input\": \"hi\"}\n",
    );
    let run = run(&dir, &["-i", "s.jsonl"], &[]);
    assert_eq!(run.status("s::flaky"), "passed", "{run:?}");
    assert_eq!(run.case("s::flaky")["retries"], 1, "{run:?}");
    assert!(
        run.stderr.contains("HTTP 503 Service Unavailable"),
        "{run:?}"
    );
    assert!(
        run.stderr
            .contains("answered HTTP 503 Service Unavailable: busy; retry 1/2 in 0s"),
        "{run:?}"
    );
    assert_eq!(run.status("s::down"), "error", "{run:?}");
    assert!(run.error("s::down").contains("503"), "{run:?}");
    let seen = seen.lock().unwrap();
    assert_eq!(seen["/flaky"], 2);
    assert_eq!(seen["/down"], 1, "retries = 0: one try");
}

// ---------------------------------------------------------------------------------------
// 4. Secrets in the agent's config never show
// ---------------------------------------------------------------------------------------

fn expanded_secrets_appear_in_no_output() {
    const PASS: &str = "hunter2-pass-5d1e";
    const KEY: &str = "sk-key-9b7c04";
    let closed = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = closed.local_addr().expect("addr").port();
    drop(closed);
    let url = format!(
        "http://bob:${{AGENTEST_FAULTS_PASS}}@127.0.0.1:{port}/?key=${{AGENTEST_FAULTS_KEY}}"
    );
    let dir = scratch(
        "secrets",
        &format!(
            "[agents.web]\ntype = \"http\"\nurl = {}\n\n\
             [agents.proc]\ntype = \"process\"\ncommand = [\"./not-executable\", \"--token=${{AGENTEST_FAULTS_KEY}}\"]\n\n\
             [hooks.setup]\ncommand = [\"/nonexistent-hook\", \"--token=${{AGENTEST_FAULTS_KEY}}\"]\n",
            toml_str(&url)
        ),
    );
    dir.write("not-executable", "not a program\n");
    dir.write(
        "s.jsonl",
        "{\"id\": \"web\", \"agent\": \"web\", \"input\": \"hi\"}\n\
         {\"id\": \"proc\", \"agent\": \"proc\", \"input\": \"hi\"}\n\
         {\"id\": \"hook\", \"agent\": \"web\", \"before\": \"setup\", \"input\": \"hi\"}\n",
    );
    let envs = [("AGENTEST_FAULTS_PASS", PASS), ("AGENTEST_FAULTS_KEY", KEY)];
    for agent in ["web", "proc"] {
        let run = run(&dir, &["-i", "s.jsonl", "-n", agent, "-v"], &envs);
        assert_eq!(run.code, Some(1), "{run:?}");
        for text in [&run.stdout, &run.stderr, &run.report] {
            assert!(
                !text.contains(PASS) && !text.contains(KEY),
                "a secret leaked:\n{run:?}"
            );
        }
        for trial in ["s::web", "s::proc", "s::hook"] {
            assert_eq!(run.status(trial), "error", "{run:?}");
        }
        // Still useful: the config's text, with the secret parts hidden.
        assert!(
            run.error("s::web")
                .contains(&format!("http://***@127.0.0.1:{port}/?…")),
            "{run:?}"
        );
        assert!(
            run.error("s::proc")
                .contains("`./not-executable --token=${AGENTEST_FAULTS_KEY}`"),
            "{run:?}"
        );
        assert!(
            run.error("s::hook").contains("/nonexistent-hook"),
            "{run:?}"
        );
    }
}

// ---------------------------------------------------------------------------------------
// 5. Replies out of step, and an agent that exits while its child holds stdout
// ---------------------------------------------------------------------------------------

/// Writes `{"content": "thinking..."}` then its answer for each request: in one write
/// (`burst`), or the answer after a pause (`late`), as a streaming agent might.
const TWO_LINE_AGENT: &str = r#"
import json, sys, time
late = sys.argv[1] == "late"
for line in sys.stdin:
    text = json.loads(line)["input"]
    answer = json.dumps({"content": "answer to " + text})
    if late:
        print('{"content": "thinking..."}', flush=True)
        time.sleep(0.05)
        print(answer, flush=True)
    else:
        sys.stdout.write('{"content": "thinking..."}\n' + answer + "\n")
        sys.stdout.flush()
"#;

/// A line more than the request asked for shifts every later reply by one: turn 2
/// would be judged on turn 1's answer. The extra line is a protocol error naming the
/// turn and quoting the line, found when the next request is sent or, at the latest,
/// when the conversation ends; an agent that writes one line per request is unaffected.
fn an_agent_writing_two_lines_for_one_request_is_a_protocol_error() {
    let dir = scratch(
        "two-lines",
        &format!(
            "[agents.burst]\ntype = \"process\"\ncommand = [\"python3\", \"agent.py\", \"burst\"]\n\n\
             [agents.late]\ntype = \"process\"\ncommand = [\"python3\", \"agent.py\", \"late\"]\n\n\
             [agents.ok]\ntype = \"process\"\n{OK_AGENT}\n"
        ),
    );
    dir.write("agent.py", TWO_LINE_AGENT);
    dir.write(
        "s.jsonl",
        "{\"id\": \"burst\", \"agent\": \"burst\", \"turns\": [{\"input\": \"first\"}, {\"input\": \"second\", \"assert\": {\"type\": \"contains\", \"value\": \"answer to\"}}]}\n\
         {\"id\": \"late\", \"agent\": \"late\", \"input\": \"only\", \"assert\": {\"type\": \"contains\", \"value\": \"thinking\"}}\n\
         {\"id\": \"ok\", \"agent\": \"ok\", \"turns\": [{\"input\": \"a\", \"assert\": {\"type\": \"equals\", \"value\": \"ok\"}}, {\"input\": \"b\"}, {\"input\": \"c\", \"assert\": {\"type\": \"equals\", \"value\": \"ok\"}}]}\n",
    );
    let run = run(&dir, &["-i", "s.jsonl", "--timeout", "20s"], &[]);
    assert_eq!(run.code, Some(1), "{run:?}");
    assert_eq!(run.status("s::burst"), "error", "{run:?}");
    assert_eq!(
        run.error("s::burst"),
        "turn 2: agent process wrote more lines than it was sent requests: a line after its reply to turn 1 was still unread when the next request was due: {\"content\": \"answer to first\"}\n\
         hint: a process agent must write exactly one line (its JSON reply) per request on stdout; write progress and logs to stderr",
        "{run:?}"
    );
    assert_eq!(run.status("s::late"), "error", "{run:?}");
    assert_eq!(
        run.error("s::late"),
        "agent process wrote more lines than it was sent requests: a line after its reply to turn 1 was still unread when the conversation ended: {\"content\": \"answer to only\"}\n\
         hint: a process agent must write exactly one line (its JSON reply) per request on stdout; write progress and logs to stderr",
        "{run:?}"
    );
    assert_eq!(run.status("s::ok"), "passed", "{run:?}");
}

/// An agent that crashes (exit status 3) while a process it started keeps its stdout
/// open is reported as the crash it is, at once, not as a timeout at the deadline; and
/// an agent that replies and then exits (one request per process) still passes.
fn an_agent_that_exits_while_its_child_holds_stdout_is_reported_at_once() {
    let dir = scratch(
        "exit-held",
        "[agents.crash]\ntype = \"process\"\ncommand = [\"python3\", \"agent.py\"]\n\n\
         [agents.once]\ntype = \"process\"\n\
         command = [\"sh\", \"-c\", \"read -r line; echo '{\\\"content\\\": \\\"ok\\\"}'\"]\n",
    );
    dir.write(
        "agent.py",
        "import subprocess, sys\n\
         sys.stdin.readline()\n\
         child = subprocess.Popen([\"sleep\", \"1021\"])\n\
         open(\"child.pid\", \"w\").write(str(child.pid))\n\
         sys.stderr.write(\"fatal: lost my config\\n\")\n\
         sys.exit(3)\n",
    );
    dir.write(
        "s.jsonl",
        "{\"id\": \"crash\", \"agent\": \"crash\", \"input\": \"hi\"}\n\
         {\"id\": \"once\", \"agent\": \"once\", \"input\": \"hi\", \"assert\": {\"type\": \"equals\", \"value\": \"ok\"}}\n",
    );
    let started = Instant::now();
    let run = run(&dir, &["-i", "s.jsonl", "--timeout", "20s"], &[]);
    let took = started.elapsed();
    let child = dir.pid("child.pid");
    assert_eq!(run.status("s::crash"), "error", "{run:?}");
    assert_eq!(
        run.error("s::crash"),
        "turn 1: agent process exited before replying (exit status: 3); agent stderr (last lines):\nfatal: lost my config",
        "{run:?}"
    );
    assert!(took < Duration::from_secs(10), "took {took:?}\n{run:?}");
    assert_eq!(run.status("s::once"), "passed", "{run:?}");
    assert!(
        child.gone_within(Duration::from_secs(2)),
        "the crashed agent's child (pid {}) outlived its case",
        child.0
    );
}

pub fn tests() -> Vec<libtest_mimic::Trial> {
    crate::trials![
        an_unflushed_python_agent_answers,
        a_silent_agent_timeout_says_it_wrote_nothing_and_how_to_flush,
        an_agent_much_slower_than_usual_is_said_on_stderr,
        a_missing_agent_program_is_said_once_before_anything_runs,
        a_briefly_unavailable_http_agent_is_retried,
        a_timed_out_process_agent_takes_its_grandchildren_with_it,
        a_finished_conversation_kills_what_the_agent_started,
        stopping_agentest_with_sigterm_kills_the_agents_group,
        a_hook_that_leaves_a_server_running_does_not_hold_the_case,
        a_hook_past_the_deadline_is_killed_with_its_group,
        a_process_reply_without_end_is_capped,
        an_http_body_over_the_limit_is_an_error,
        expanded_secrets_appear_in_no_output,
        an_agent_writing_two_lines_for_one_request_is_a_protocol_error,
        an_agent_that_exits_while_its_child_holds_stdout_is_reported_at_once,
    ]
}
