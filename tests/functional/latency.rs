//! Per-turn timing and the `latency` assertion, through the real binary, against a real
//! process agent and a real loopback HTTP agent (Python's http.server, in a child
//! process). Each agent waits a time the input names before the first byte of its
//! reply, writes part of the reply, then waits again before the rest, so that the time
//! to the first byte and the whole reply time come apart. Timings are checked by their
//! lower bounds and their order, never by tight upper bounds: the machine may be busy.

use std::process::Command;

use serde_json::Value;

use crate::common::{clean, finish, PyServer, Report, Run, Scratch, BIN};

/// A process agent: for an input `wait FIRST REST` it waits FIRST ms, writes the start
/// of its reply line, waits REST ms, then writes the rest of the line.
const PROCESS_AGENT: &str = r#"
import json, sys, time
for line in sys.stdin:
    _, first, rest = json.loads(line)["input"].split()
    time.sleep(int(first) / 1000)
    sys.stdout.write('{"content": "')
    sys.stdout.flush()
    time.sleep(int(rest) / 1000)
    sys.stdout.write('done"}\n')
    sys.stdout.flush()
"#;

/// An HTTP agent that does the same: the response head and the start of the body after
/// FIRST ms, the rest of the body REST ms later.
const HTTP_AGENT: &str = r#"
import json, time
from serve import Handler, serve
class H(Handler):
    def do_POST(self):
        req = self.body_json()
        _, first, rest = req["input"].split()
        body = json.dumps({"content": "done"}).encode()
        time.sleep(int(first) / 1000)
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body[:5])
        self.wfile.flush()
        time.sleep(int(rest) / 1000)
        self.wfile.write(body[5:])
serve(H)
"#;

/// The cases, the same for both agents.
const SUITE: &[&str] = &[
    // The first byte after 300 ms, the rest 600 ms later: both bounds hold.
    r#"{"id": "timed", "input": "wait 300 600", "assert": {"type": "latency", "max_ms": 60000, "max_first_token_ms": 60000}}"#,
    // A slow whole reply fails `max_ms`, said with thousands separated.
    r#"{"id": "slow_reply", "input": "wait 0 1100", "assert": {"type": "latency", "max_ms": 1000}}"#,
    // ... while its first byte, sent at once, is within a generous bound.
    r#"{"id": "early_first_byte", "input": "wait 0 1100", "assert": {"type": "latency", "max_first_token_ms": 1000}}"#,
    // A slow first byte fails `max_first_token_ms`.
    r#"{"id": "slow_first_byte", "input": "wait 700 0", "assert": {"type": "latency", "max_first_token_ms": 300}}"#,
    // Over the conversation, the slowest reply is named by its turn; a turn's own bound holds.
    // (2.5 s: the first turn also waits for the agent process to start, which a loaded
    // machine has taken over a second to do.)
    r#"{"id": "conversation", "turns": [{"input": "wait 0 0"}, {"input": "wait 0 2500", "assert": {"type": "latency", "max_ms": 60000}}, {"input": "wait 0 0"}], "final_assertions": [{"type": "latency", "max_ms": 500}]}"#,
];

/// Runs the suite against the agent `agent` (an `[agent]` table), verbose, with a JSONL
/// report and a run store; then writes the stored run as JSON, Markdown, JUnit and HTML.
fn run_suite(s: &Scratch, agent: &str) -> (Run, Report) {
    s.write("suites/agentest.toml", agent);
    s.write_suite("suites/s.jsonl", SUITE);
    let store = s.join("runs.db");
    let mut cmd = clean(Command::new(BIN));
    cmd.current_dir(s.path())
        .args(["test", "-i", "suites", "-v", "--color", "never"])
        .args(["-o", "r.jsonl"])
        .env("AGENTEST_STORE", &store);
    let run = finish(&mut cmd);
    assert_eq!(run.code, 1, "some cases fail on purpose: {run:?}");
    for out in ["r.json", "r.md", "r.xml", "r.html"] {
        let mut cmd = clean(Command::new(BIN));
        cmd.current_dir(s.path())
            .args(["report", "--execution", "1", "-o", out])
            .env("AGENTEST_STORE", &store);
        let wrote = finish(&mut cmd);
        assert_eq!(wrote.code, 0, "{out}: {wrote:?}");
    }
    (run, Report::read(&s.join("r.jsonl")))
}

/// A whole number of milliseconds as the failure message writes it (`1,234`).
fn ms(text: &str) -> u64 {
    text.replace(',', "")
        .parse()
        .unwrap_or_else(|_| panic!("not a number of milliseconds: {text:?}"))
}

/// The number between `before` and `after` in `message`, which must have this shape.
fn between(message: &str, before: &str, after: &str) -> u64 {
    let rest = message
        .strip_prefix(before)
        .unwrap_or_else(|| panic!("expected {message:?} to start with {before:?}"));
    let number = rest
        .strip_suffix(after)
        .unwrap_or_else(|| panic!("expected {message:?} to end with {after:?}"));
    ms(number)
}

/// A turn's (first byte, whole reply) times from the JSONL report.
fn times(turn: &Value) -> (u64, u64) {
    let first = turn["first_token_ms"]
        .as_u64()
        .unwrap_or_else(|| panic!("no first_token_ms in {turn}"));
    let whole = turn["duration_ms"].as_u64().expect("duration_ms");
    (first, whole)
}

/// What both agents must show: the timings, the verdicts and every report.
fn check_timings(s: &Scratch, run: &Run, report: &Report) {
    // The first byte after the first wait, the whole reply after both.
    let timed = report.case("s::timed");
    assert_eq!(timed["status"], "passed", "{}", report.text);
    let (first, whole) = times(&timed["turns"][0]);
    assert!(first >= 300, "first byte after {first} ms, before 300");
    assert!(
        whole >= first + 550,
        "the whole reply ({whole} ms) came less than 550 ms after its first byte ({first} ms)"
    );
    let early = report.case("s::early_first_byte");
    assert_eq!(early["status"], "passed", "{}", report.text);
    let (first, whole) = times(&early["turns"][0]);
    assert!(whole >= first + 1000, "{first} ms, then {whole} ms");

    // A failing bound says what was measured, against which bound.
    let message = report.error("s::slow_reply");
    let took = between(
        message,
        "turn 1: latency max_ms 1000: reply took ",
        " ms, more than max_ms 1,000",
    );
    assert!(took >= 1100, "{message}");
    let number = message
        .split(" took ")
        .nth(1)
        .and_then(|r| r.split(' ').next());
    assert!(
        number.is_some_and(|n| n.contains(',')),
        "thousands are separated: {message}"
    );
    let message = report.error("s::slow_first_byte");
    let took = between(
        message,
        "turn 1: latency max_first_token_ms 300: first byte came after ",
        " ms, more than max_first_token_ms 300",
    );
    assert!(took >= 700, "{message}");
    let verdict = &report.case("s::slow_first_byte")["turns"][0]["assertions"][0];
    assert_eq!(verdict["type"], "latency");
    assert_eq!(verdict["max_first_token_ms"], 300);
    assert_eq!(verdict["passed"], false);

    // Over the conversation: every reply bounded, the slowest named.
    let conversation = report.case("s::conversation");
    assert_eq!(conversation["turns"][1]["assertions"][0]["passed"], true);
    let message = report.error("s::conversation");
    let took = between(
        message,
        "final assertions: latency max_ms 500: turn 2's reply took ",
        " ms, more than max_ms 500 (the slowest of 3 replies)",
    );
    assert!(took >= 2500, "{message}");

    // `-v` shows the time to the first byte beside the whole.
    assert!(
        run.stdout.contains(", first byte "),
        "no first byte in the verbose output:\n{}",
        run.stdout
    );
    // JSON keeps the fields; Markdown, JUnit and HTML show them with the turns.
    let json: Value = serde_json::from_str(&s.read("r.json")).expect("r.json");
    let cases = json["results"].as_array().expect("results");
    let stored = cases
        .iter()
        .find(|c| c["id"] == "slow_reply")
        .expect("slow_reply in r.json");
    let (first, whole) = times(&stored["turns"][0]);
    assert!(whole >= first + 1000, "{first} ms, then {whole} ms");
    for out in ["r.md", "r.xml", "r.html"] {
        let text = s.read(out);
        assert!(text.contains(", first byte "), "{out}:\n{text}");
    }
}

fn a_process_agent_is_timed_to_the_first_byte_of_its_reply_line() {
    let s = Scratch::named("latency", "process");
    s.write("suites/agent.py", PROCESS_AGENT);
    let (run, report) = run_suite(
        &s,
        "[agent]\ntype = \"process\"\ncommand = [\"python3\", \"agent.py\"]\n",
    );
    check_timings(&s, &run, &report);
}

fn an_http_agent_is_timed_to_its_response_head() {
    let s = Scratch::named("latency", "http");
    let server = PyServer::start(&s, "server.py", HTTP_AGENT, &[]);
    let (run, report) = run_suite(
        &s,
        &format!(
            "[agent]\ntype = \"http\"\nurl = \"http://127.0.0.1:{}/\"\n",
            server.port
        ),
    );
    check_timings(&s, &run, &report);
}

pub fn tests() -> Vec<libtest_mimic::Trial> {
    crate::trials!(
        a_process_agent_is_timed_to_the_first_byte_of_its_reply_line,
        an_http_agent_is_timed_to_its_response_head,
    )
}
