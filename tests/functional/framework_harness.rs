//! The framework agents' suites under the libtest harness: builds the crate in
//! `tests/fixtures/frameworks` (a user of agentest whose `agent-tests/agentest.toml`
//! names a `langgraph`, an `a2a`, a `format = "custom"` and a `format = "openai-chat"`
//! agent, each at a `${VAR}` URL) and runs it with the real `cargo test`, then with the
//! real `cargo nextest run`, against real servers on loopback: `langgraph dev` serving
//! tests/python/langgraph_agent/, tests/python/a2a_agent.py (a2a-sdk) and
//! tests/python/custom_agent.py (Starlette), a real ElizaOS server (tests/eliza/), with
//! scripted chat-completions servers as the graph's and the ElizaOS agent's model, as
//! the openai-chat agent, and as the endpoint of agentest's own simulator and judge.
//!
//! The first run (`cargo test`) records the simulator's and the judge's calls in
//! cassettes (`AGENTEST_CASSETTES=record`); then that endpoint is stopped, its key
//! unset, and the second run (`cargo nextest run`, `AGENTEST_CASSETTES=replay`) replays
//! them while every agent is still called live. Both runs must give each trial the same
//! outcome:
//!
//! | trial                      | outcome                                                |
//! |----------------------------|--------------------------------------------------------|
//! | `a2a::book`                | task asks for the city, completes with artifacts       |
//! | `a2a::book-streamed`       | the same over HTTP+JSON, streamed                      |
//! | `a2a::fail`                | error: the task ended TASK_STATE_FAILED                |
//! | `a2a::ping`                | a Message answer                                       |
//! | `custom::chat`             | two turns in one session, a tool call                  |
//! | `custom::misread`          | error: `reply.content` matches nothing                 |
//! | `custom::streamed`         | server-sent events                                     |
//! | `eliza-greet::greets`      | an ElizaOS scenario: REPLY in the trajectory           |
//! | `eliza::ignored`           | error: the agent chose IGNORE, ElizaOS answered 500    |
//! | `eliza::two-turns`         | a session that keeps its conversation                  |
//! | `langgraph::ask`           | `interrupt()`, resumed                                 |
//! | `langgraph::boom`          | error: the model refused, the run failed               |
//! | `langgraph::rainy`         | fails its assertion                                    |
//! | `langgraph::streamed`      | /runs/stream with a tool call                          |
//! | `langgraph::weather`       | a tool call and its result                             |
//! | `offline::judged`          | the built-in judge passes it                           |
//! | `offline::judged-wrong`    | the built-in judge fails it, with its reason           |
//! | `offline::simulated`       | the built-in simulator answers the graph's question    |
//! | `openai-chat::file`        | a completion with a tool call                          |
//! | `openai-chat::streamed`    | streamed chunks joined                                 |
//! | `openai-chat::unfinished`  | error: the stream ended before `data: [DONE]`          |
//! | `traces::weather`          | a process agent's tool call read from its spans        |
//! | `traces::wrong-tool`       | fails naming the traced tool seen                      |
//!
//! The fixture builds into the outer target directory with the same profile, as
//! harness_e2e's demo does, so one build (by the first run) serves both.

use std::ffi::OsString;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::common::chat::{
    call, chunk, completion, ok, sse, status, text, tool_call_json, ChatServer,
};
use crate::common::eliza::ElizaServer;
use crate::common::{
    framework_python, need, LangGraphDev, Needs, PyServer, Scratch, LANGGRAPH_MODULES,
};

pub fn tests() -> Vec<libtest_mimic::Trial> {
    crate::trials![framework_suites_run_under_cargo_test_and_nextest_and_replay_offline(
        needs frameworks
    ),]
}

/// How the trial ends: the report's status, and what its failure message says.
struct Expected {
    trial: &'static str,
    /// `passed`, `failed` or `error`.
    status: &'static str,
    /// Parts of the failure message (libtest's and nextest's, and for an error the
    /// report's `error`); none for a pass.
    messages: &'static [&'static str],
}

const fn pass(trial: &'static str) -> Expected {
    Expected {
        trial,
        status: "passed",
        messages: &[],
    }
}

/// Every trial of the fixture, sorted, with its outcome.
const EXPECTED: [Expected; 23] = [
    pass("a2a::book"),
    pass("a2a::book-streamed"),
    Expected {
        trial: "a2a::fail",
        status: "error",
        messages: &["A2A agent at ${A2A_URL}/rpc: the task ended TASK_STATE_FAILED: no rooms left"],
    },
    pass("a2a::ping"),
    pass("custom::chat"),
    Expected {
        trial: "custom::misread",
        status: "error",
        messages: &["agent at ${CUSTOM_URL}/chat answered, but reply.content = \"$.answer.nothing\" matches nothing in the answer: {\"answer\":{\"text\":\"[None] you said: hello\"}"],
    },
    pass("custom::streamed"),
    pass("eliza-greet::greets"),
    Expected {
        trial: "eliza::ignored",
        status: "error",
        messages: &[
            "agent at ${ELIZA_URL}/api/messaging/sessions/",
            "/messages answered HTTP 500 Internal Server Error: {\"success\":false,\"error\":\"Failed to process message in HTTP transport\"}",
        ],
    },
    pass("eliza::two-turns"),
    pass("langgraph::ask"),
    Expected {
        trial: "langgraph::boom",
        status: "error",
        messages: &[
            "LangGraph agent at ${LANGGRAPH_URL}/threads/",
            "/runs/wait: the run failed: OpenAIInvalidRequestError",
        ],
    },
    Expected {
        trial: "langgraph::rainy",
        status: "failed",
        messages: &["reply: \"It rains in Oslo\"\n    ✗ contains \"sunny\": expected the reply to contain \"sunny\""],
    },
    pass("langgraph::streamed"),
    pass("langgraph::weather"),
    pass("offline::judged"),
    Expected {
        trial: "offline::judged-wrong",
        status: "failed",
        messages: &["reply: \"pong: ping twice\"\n    ✗ llm_judge \"The reply confirms a hotel booking\": judge: The reply is a pong, not a booking. (score 0)"],
    },
    pass("offline::simulated"),
    pass("openai-chat::file"),
    pass("openai-chat::streamed"),
    Expected {
        trial: "openai-chat::unfinished",
        status: "error",
        messages: &["the event stream of agent at ${CHAT_URL}/chat/completions ended before `data: [DONE]`; an incomplete answer is not taken"],
    },
    pass("traces::weather"),
    Expected {
        trial: "traces::wrong-tool",
        status: "failed",
        messages: &["✗ tool_called \"book_flight\": expected a call to \"book_flight\"; called: get_weather({\"city\":\"Oslo\"})"],
    },
];

/// The key the ElizaOS server requires (X-API-KEY).
const ELIZA_KEY: &str = "sk-eliza-frameworks";

/// The cases whose simulator or judge calls the model endpoint, one call each.
const OFFLINE: [&str; 3] = ["judged", "judged-wrong", "simulated"];

/// How the built-in simulator's and judge's system prompts begin.
const SIM_PROMPT: &str = "You are simulating a user";
const JUDGE_PROMPT: &str = "You are a strict, fair evaluator";
/// The criteria of the two judged cases (in offline.jsonl), which route their requests.
const PONG_CRITERIA: &str = "The reply answers the ping with a pong";
const BOOKING_CRITERIA: &str = "The reply confirms a hotel booking";

/// How long a cargo command may take (a cold fixture build is minutes on 2 cores).
const CARGO_LIMIT: Duration = Duration::from_secs(20 * 60);

// ---------------------------------------------------------------------------------
// What the test needs

/// The modules every server here needs: langgraph-cli[inmem], a2a-sdk, Starlette and
/// uvicorn.
fn modules() -> Vec<&'static str> {
    let mut all = LANGGRAPH_MODULES.to_vec();
    all.extend([
        "a2a.server.routes",
        "starlette",
        "uvicorn",
        "opentelemetry.sdk",
        "opentelemetry.exporter.otlp.proto.http",
    ]);
    all
}

/// The frameworks venv, the ElizaOS server's packages and cargo-nextest.
fn frameworks() -> Needs {
    framework_python(&modules())?;
    crate::common::eliza::eliza_server()?;
    nextest()
}

/// Whether `cargo nextest` runs here (asked once).
fn nextest() -> Needs {
    static HAVE: OnceLock<Result<(), String>> = OnceLock::new();
    let have = HAVE.get_or_init(|| {
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        match Command::new(cargo)
            .args(["nextest", "--version"])
            .stdin(Stdio::null())
            .output()
        {
            Ok(out) if out.status.success() => Ok(()),
            Ok(out) => Err(format!(
                "`cargo nextest --version` failed ({}): {}",
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            )),
            Err(e) => Err(format!("cannot run cargo: {e}")),
        }
    });
    match have {
        Ok(()) => Ok(()),
        Err(reason) => need(
            "cargo-nextest",
            format!("{reason}; install it with `cargo install cargo-nextest --locked`"),
        ),
    }
}

// ---------------------------------------------------------------------------------
// Processes

/// What a finished (or killed) cargo command left.
struct Output {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

impl Output {
    fn both(&self) -> String {
        format!("{}\n{}", self.stdout, self.stderr)
    }

    /// The outcome on the `test NAME ... OUTCOME` line of each trial libtest ran.
    fn libtest_outcomes(&self) -> Vec<(String, String)> {
        let mut run: Vec<(String, String)> = self
            .stdout
            .lines()
            .filter_map(|l| l.strip_prefix("test "))
            .filter_map(|l| l.split_once(" ... "))
            .map(|(name, outcome)| (name.trim().to_string(), outcome.to_string()))
            .collect();
        run.sort();
        run
    }

    /// The failure message libtest printed for a trial (its `---- NAME ----` block).
    fn libtest_failure(&self, trial: &str) -> &str {
        let header = format!("---- {trial} ----\n");
        let Some(at) = self.stdout.find(&header) else {
            panic!("no failure block for {trial}\n{self}")
        };
        let rest = &self.stdout[at + header.len()..];
        &rest[..rest.find("\n\n").unwrap_or(rest.len())]
    }

    /// What nextest showed of a failing trial's output: the lines after its first
    /// `FAIL` line up to the next status line, unindented.
    fn nextest_failure(&self, trial: &str) -> String {
        let status = |l: &str| {
            let l = l.trim_start();
            l.starts_with("PASS [") || l.starts_with("FAIL [") || l.starts_with("────")
        };
        let mut lines = self.stderr.lines();
        let suffix = format!("agent_tests {trial}");
        if !lines
            .by_ref()
            .any(|l| l.trim_start().starts_with("FAIL [") && l.trim_end().ends_with(&suffix))
        {
            panic!("no FAIL line for {trial}\n{self}");
        }
        lines
            .take_while(|l| !status(l))
            .map(|l| l.strip_prefix("    ").unwrap_or(l))
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// `PASS` or `FAIL` for each trial nextest ran, from its status lines
    /// (`PASS [ 0.1s] (1/18) CRATE::agent_tests TRIAL`).
    fn nextest_outcomes(&self) -> Vec<(String, String)> {
        let mut run: Vec<(String, String)> = self
            .stderr
            .lines()
            .map(str::trim)
            .filter_map(|l| {
                let (word, rest) = l.split_once(' ')?;
                let trial = rest.rsplit_once("agent_tests ")?.1;
                ["PASS", "FAIL"]
                    .contains(&word)
                    .then(|| (trial.trim().to_string(), word.to_string()))
            })
            .collect();
        run.sort();
        run.dedup();
        run
    }
}

impl std::fmt::Display for Output {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "exit: {:?}\n--- stdout ---\n{}\n--- stderr ---\n{}",
            self.code, self.stdout, self.stderr
        )
    }
}

fn drain(mut r: impl Read + Send + 'static) -> JoinHandle<String> {
    std::thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = r.read_to_end(&mut buf);
        String::from_utf8_lossy(&buf).into_owned()
    })
}

/// Runs `cmd`, killing it after [`CARGO_LIMIT`].
fn run(cmd: &mut Command) -> Output {
    let mut child: Child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("failed to start {cmd:?}: {e}"));
    let out = drain(child.stdout.take().expect("piped"));
    let err = drain(child.stderr.take().expect("piped"));
    let deadline = Instant::now() + CARGO_LIMIT;
    loop {
        if let Some(status) = child.try_wait().expect("wait for cargo") {
            return Output {
                code: status.code(),
                stdout: out.join().expect("stdout"),
                stderr: err.join().expect("stderr"),
            };
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{cmd:?} took more than {CARGO_LIMIT:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

// ---------------------------------------------------------------------------------
// The servers

/// Every server the suites' agents (and agentest's own model roles) talk to.
struct Servers {
    /// The graph's model, and the openai-chat agent: routed by the conversation's first
    /// user message, one queue per case.
    agent_model: ChatServer,
    /// The built-in simulator's and judge's endpoint; `None` once stopped.
    llm: Option<ChatServer>,
    langgraph: LangGraphDev,
    a2a: PyServer,
    custom: PyServer,
    eliza: ElizaServer,
    /// The frameworks venv's python.
    python: PathBuf,
    /// What the a2a server received, one JSON line per request.
    a2a_received: PathBuf,
}

impl Servers {
    fn start(python: &Path, s: &Scratch) -> Servers {
        let agent_model = ChatServer::start();
        let llm = ChatServer::routed(llm_route);
        let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
        let a2a_received = s.join("a2a-received.jsonl");
        let a2a = PyServer::with_python(
            python,
            &manifest.join("tests/python/a2a_agent.py"),
            &[a2a_received.as_os_str()],
        );
        let custom_received = s.join("custom-received.jsonl");
        let custom = PyServer::with_python(
            python,
            &manifest.join("tests/python/custom_agent.py"),
            &[custom_received.as_os_str()],
        );
        let langgraph = LangGraphDev::start(python, s, &agent_model.url());
        let eliza = ElizaServer::start(s, ELIZA_KEY);
        Servers {
            eliza,
            python: python.to_path_buf(),
            agent_model,
            llm: Some(llm),
            langgraph,
            a2a,
            custom,
            a2a_received,
        }
    }

    /// The variables the config's `${VAR}` URLs read.
    fn env(&self, llm_url: &str) -> Vec<(&'static str, OsString)> {
        let local = |port: u16| format!("http://127.0.0.1:{port}").into();
        vec![
            // The traced process agent's interpreter (the venv's, with OpenTelemetry).
            ("FRAMEWORKS_PYTHON", self.python.clone().into()),
            (
                "FRAMEWORKS_TRACED_AGENT",
                Path::new(env!("CARGO_MANIFEST_DIR"))
                    .join("tests/python/traced_process_agent.py")
                    .into(),
            ),
            ("LANGGRAPH_URL", self.langgraph.url().into()),
            ("A2A_URL", local(self.a2a.port)),
            ("CUSTOM_URL", local(self.custom.port)),
            ("CHAT_URL", self.agent_model.url().into()),
            ("FRAMEWORKS_LLM_URL", llm_url.into()),
            ("ELIZA_URL", self.eliza.url().into()),
            ("ELIZA_KEY", ELIZA_KEY.into()),
            // For the ElizaOS scenario, which names no agent.
            ("AGENTEST_AGENT", "ada".into()),
        ]
    }

    /// Queues the agents' model answers for one run of every case.
    fn script_agents(&self) {
        let m = &self.agent_model;
        m.script(
            "weather",
            vec![
                call("call_1", "get_weather", json!({"city": "Paris"}), (10, 5)),
                text("It is sunny in Paris", (7, 3)),
            ],
        );
        m.script(
            "ask",
            vec![text("ASK Which city?", (6, 1)), text("Rome it is", (8, 2))],
        );
        m.script(
            "weather, streamed",
            vec![
                call("call_2", "get_weather", json!({"city": "Lima"}), (11, 6)),
                text("It is sunny in Lima", (9, 4)),
            ],
        );
        m.script("forecast", vec![text("It rains in Oslo", (5, 4))]);
        m.script(
            "boom",
            vec![status(
                400,
                json!({"error": {"message": "nothing for boom"}}),
            )],
        );
        m.script(
            "I want the weather",
            vec![
                text("ASK Which city?", (6, 1)),
                call("call_3", "get_weather", json!({"city": "Paris"}), (10, 5)),
                text("It is sunny in Paris", (7, 3)),
            ],
        );
        let filed = json!({"role": "assistant", "content": "Filed it.",
            "tool_calls": [tool_call_json("c1", "create_expense", &json!({"amount": 35}))]});
        m.script("file it", vec![ok(completion(filed, "stop", (21, 6)))]);
        m.script(
            "stream it",
            vec![sse(&[
                chunk(json!({"role": "assistant", "content": "Str"})),
                chunk(json!({"content": "eamed."})),
                chunk(
                    json!({"tool_calls": [{"index": 0, "id": "c1", "function": {"name": "look", "arguments": "{\"q\":"}}]}),
                ),
                chunk(json!({"tool_calls": [{"index": 0, "function": {"arguments": "\"x\"}"}}]})),
                "[DONE]".into(),
            ])],
        );
        m.script("cut short", vec![sse(&[chunk(json!({"content": "Half"}))])]);
    }

    /// The requests the graph's model received for the simulated case.
    fn simulated_model_calls(&self) -> usize {
        self.agent_model.requests_for("I want the weather").len()
    }

    /// How many messages of the judged cases reached the a2a server.
    fn judged_messages(&self) -> usize {
        std::fs::read_to_string(&self.a2a_received)
            .unwrap_or_default()
            .lines()
            .filter(|l| l.contains("ping judge") || l.contains("ping twice"))
            .count()
    }
}

/// The route of a request to agentest's own model endpoint: the simulator's, or the
/// judge's of one case (told apart by its criteria).
fn llm_route(body: &Value) -> String {
    let system = body["messages"][0]["content"].as_str().unwrap_or_default();
    let all = body["messages"].to_string();
    if system.starts_with(SIM_PROMPT) {
        "sim"
    } else if system.starts_with(JUDGE_PROMPT) && all.contains(PONG_CRITERIA) {
        "judge-pong"
    } else if system.starts_with(JUDGE_PROMPT) && all.contains(BOOKING_CRITERIA) {
        "judge-booking"
    } else {
        "other"
    }
    .to_string()
}

/// Queues the simulator's and the judge's answers, once.
fn script_llm(llm: &ChatServer) {
    let answer = |v: Value| text(&v.to_string(), (30, 8));
    llm.script(
        "sim",
        vec![answer(
            json!({"message": "Paris", "goal_achieved": false, "reasoning": "it asked for the city"}),
        )],
    );
    llm.script(
        "judge-pong",
        vec![answer(
            json!({"passed": true, "score": 1, "reason": "It answers pong: ping judge."}),
        )],
    );
    llm.script(
        "judge-booking",
        vec![answer(
            json!({"passed": false, "score": 0, "reason": "The reply is a pong, not a booking."}),
        )],
    );
}

// ---------------------------------------------------------------------------------
// The fixture

/// The fixture crate, run with cargo in its directory.
struct Fixture {
    dir: PathBuf,
    target: PathBuf,
}

impl Fixture {
    fn new() -> Fixture {
        let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
        let dir = manifest.join("tests/fixtures/frameworks");
        sync_lock_file(&manifest.join("Cargo.lock"), &dir.join("Cargo.lock"));
        Fixture {
            dir,
            target: crate::common::outer_target_dir(),
        }
    }

    /// `cargo ARGS` in the fixture, with `env` over a user's clean environment.
    fn cargo(&self, args: &[&str], env: &[(&str, OsString)]) -> Output {
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let mut cmd = crate::common::clean_command(cargo, &self.dir);
        cmd.env_remove("CI")
            .env_remove("FRAMEWORKS_LLM_KEY")
            .env("CARGO_TARGET_DIR", &self.target)
            .args(args)
            .envs(env.iter().map(|(k, v)| (k, v)));
        run(&mut cmd)
    }
}

/// Copies the repository's lock file into the fixture when it has none or an older one
/// (so it resolves offline to the same versions); renamed into place, so a concurrent
/// cargo never reads half of it.
fn sync_lock_file(from: &Path, to: &Path) {
    let modified = |p: &Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
    if modified(to).is_some_and(|t| modified(from).is_some_and(|f| t >= f)) {
        return;
    }
    let tmp = to.with_extension(format!("lock.{}", std::process::id()));
    std::fs::copy(from, &tmp).expect("copy Cargo.lock into the fixture");
    std::fs::rename(&tmp, to).expect("move Cargo.lock into the fixture");
}

/// The records of a JSONL report (the summary line, when there is one, left out), by
/// trial.
fn records(report: &Path) -> std::collections::BTreeMap<String, Value> {
    let text = std::fs::read_to_string(report).expect("the report");
    let mut map = std::collections::BTreeMap::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let v: Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}"));
        if v["type"] == "summary" {
            continue;
        }
        let trial = v["trial"].as_str().expect("a trial").to_string();
        assert!(
            map.insert(trial.clone(), v).is_none(),
            "two records of {trial}"
        );
    }
    map
}

/// Each trial's record has its expected status, and an error's `error` its message.
#[track_caller]
fn check_records(records: &std::collections::BTreeMap<String, Value>) {
    let trials: Vec<&str> = records.keys().map(String::as_str).collect();
    let expected: Vec<&str> = EXPECTED.iter().map(|e| e.trial).collect();
    assert_eq!(trials, expected);
    for e in &EXPECTED {
        let r = &records[e.trial];
        assert_eq!(r["status"], e.status, "{}: {r}", e.trial);
        if e.status == "error" {
            let error = r["error"].as_str().unwrap_or_default();
            for m in e.messages {
                assert!(error.contains(m), "{}: {m:?} not in {error}", e.trial);
            }
        }
    }
    let sim = &records["offline::simulated"];
    assert_eq!(
        (&sim["simulator"], &sim["termination"]),
        (
            &json!("model test-model"),
            &json!("all_checkpoints_reached")
        ),
        "{sim}"
    );
    let inputs: Vec<(&Value, &Value)> = sim["turns"]
        .as_array()
        .expect("turns")
        .iter()
        .map(|t| (&t["input"], &t["input_source"]))
        .collect();
    assert_eq!(
        inputs,
        [
            (&json!("I want the weather"), &json!("initial")),
            (&json!("Paris"), &json!("simulated"))
        ],
        "{sim}"
    );
}

// ---------------------------------------------------------------------------------
// The test

fn framework_suites_run_under_cargo_test_and_nextest_and_replay_offline() -> Needs {
    let python = framework_python(&modules())?;
    crate::common::eliza::eliza_server()?;
    nextest()?;
    let s = Scratch::named("frameworks", "harness");
    let mut servers = Servers::start(&python, &s);
    let fx = Fixture::new();
    // A copy of the suites, so the cassettes recorded stay out of the source tree.
    let root = s.join("agent-tests");
    crate::common::copy_dir(&fx.dir.join("agent-tests"), &root);
    let llm_url = servers.llm.as_ref().expect("running").url();
    let mut env = servers.env(&llm_url);
    env.push(("FRAMEWORKS_SUITES", root.clone().into()));
    env.push(("AGENTEST_STORE", "off".into()));

    // 1. cargo test, recording the simulator's and judge's calls.
    servers.script_agents();
    script_llm(servers.llm.as_ref().expect("running"));
    let report = s.join("cargo-test.jsonl");
    let mut recording = env.clone();
    recording.extend([
        ("AGENTEST_CASSETTES", "record".into()),
        ("FRAMEWORKS_LLM_KEY", "sk-frameworks-test".into()),
        ("AGENTEST_REPORT", report.clone().into()),
    ]);
    let started = Instant::now();
    let out = fx.cargo(&["test", "--offline", "--test", "agent_tests"], &recording);
    eprintln!(
        "cargo test (with the fixture's build) took {:.1?}",
        started.elapsed()
    );
    assert_eq!(out.code, Some(101), "{out}");
    let outcomes: Vec<(String, String)> = EXPECTED
        .iter()
        .map(|e| {
            let word = if e.status == "passed" { "ok" } else { "FAILED" };
            (e.trial.to_string(), word.to_string())
        })
        .collect();
    assert_eq!(out.libtest_outcomes(), outcomes, "{out}");
    for e in EXPECTED.iter().filter(|e| e.status != "passed") {
        let failure = out.libtest_failure(e.trial);
        for m in e.messages {
            assert!(
                failure.contains(m),
                "{}: {m:?} not in\n{failure}\n{out}",
                e.trial
            );
        }
    }
    let recorded = records(&report);
    check_records(&recorded);
    let llm = servers.llm.take().expect("running");
    assert_eq!(
        (
            llm.requests_for("sim").len(),
            llm.requests_for("judge-pong").len(),
            llm.requests_for("judge-booking").len(),
            llm.count()
        ),
        (1, 1, 1, 3),
        "one call per offline case"
    );
    for id in OFFLINE {
        let r = &recorded[&format!("offline::{id}")];
        assert_eq!(
            (&r["cassette"]["recorded"], &r["cassette"]["replayed"]),
            (&json!(1), &json!(0)),
            "{id}: {r}"
        );
        let cassette = root.join(format!(".cassettes/offline/{id}.jsonl"));
        let text = std::fs::read_to_string(&cassette)
            .unwrap_or_else(|e| panic!("{}: {e}", cassette.display()));
        assert_eq!(text.lines().count(), 1, "{id}: {text}");
        assert!(!text.contains("sk-frameworks-test"), "{text}");
    }
    let (graph_calls, judged) = (servers.simulated_model_calls(), servers.judged_messages());
    assert_eq!((graph_calls, judged), (3, 2));

    // 2. The model endpoint gone and its key unset: cargo nextest replays the cassettes,
    // and calls the agents live.
    drop(llm);
    servers.script_agents();
    let report = s.join("nextest.jsonl");
    let mut replaying = env.clone();
    replaying.extend([
        ("AGENTEST_CASSETTES", "replay".into()),
        ("AGENTEST_REPORT", report.clone().into()),
    ]);
    let out = fx.cargo(
        &[
            "nextest",
            "run",
            "--offline",
            "--test",
            "agent_tests",
            "--color",
            "never",
            "--no-fail-fast",
        ],
        &replaying,
    );
    // 100: nextest's exit code for failing tests.
    assert_eq!(out.code, Some(100), "{out}");
    let outcomes: Vec<(String, String)> = EXPECTED
        .iter()
        .map(|e| {
            let word = if e.status == "passed" { "PASS" } else { "FAIL" };
            (e.trial.to_string(), word.to_string())
        })
        .collect();
    assert_eq!(out.nextest_outcomes(), outcomes, "{out}");
    assert!(
        out.both().contains("23 tests run: 15 passed, 8 failed"),
        "{out}"
    );
    for e in EXPECTED.iter().filter(|e| e.status != "passed") {
        let failure = out.nextest_failure(e.trial);
        for m in e.messages {
            assert!(
                failure.contains(m),
                "{}: {m:?} not in\n{failure}\n{out}",
                e.trial
            );
        }
    }
    let records = records(&report);
    check_records(&records);
    for id in OFFLINE {
        let r = &records[&format!("offline::{id}")];
        assert_eq!(
            (&r["cassette"]["replayed"], &r["cassette"]["recorded"]),
            (&json!(1), &json!(0)),
            "{id}: {r}"
        );
        assert_eq!(r["replayed_calls"], 1, "{id}: {r}");
    }
    // The agents answered again: the graph's model was asked as many times, and the
    // a2a server got the judged cases' messages once more.
    assert_eq!(
        (servers.simulated_model_calls(), servers.judged_messages()),
        (2 * graph_calls, 2 * judged)
    );
    drop(servers);
    Ok(())
}
