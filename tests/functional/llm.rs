//! End-to-end tests of the LLM features: the chat-completions client (retries, backoff,
//! `Retry-After`, timeouts, errors), the `openai` agent's tool loop with every mock
//! feature, usage accounting, cassettes in every mode, the missing-key rules, `--live`,
//! the environment overrides and the config errors.
//!
//! Each test starts a small real HTTP/1.1 server on 127.0.0.1 ([`ChatServer`], shared with the `dynamic` tests) that speaks
//! `POST /v1/chat/completions`, answers from a per-test script and records every request,
//! then runs the real `agentest` binary in a scratch directory against it.

use std::net::TcpListener;
use std::path::Path;
use std::time::Duration;

use crate::common::chat::{
    call, calls, completion, cut_off, garbage, ok, rate_limited, server_error, slow, status, text,
    tool_call_json, Action, ChatServer,
};
use crate::common::project::{self, cassette, Cmd};
use crate::common::Scratch;
use serde_json::{json, Value};

/// The variable `[llm] api_key_env` names in every config here.
const KEY_VAR: &str = "AGENTEST_LLM_TEST_KEY";
/// The key's value: distinctive, so a leak into any file or output is found by a grep.
const KEY: &str = "sk-agentest-SECRET-7f3b2c71e5d84a06";

// ---------------------------------------------------------------------------------------
// Scratch projects and runs of the binary
// ---------------------------------------------------------------------------------------

fn scratch(tag: &str) -> Scratch {
    Scratch::named("llm", tag)
}

const TOOLS: &str = r#"[
  {"type": "function", "function": {"name": "get_policy", "description": "The expense policy of a category",
   "parameters": {"type": "object", "properties": {"category": {"type": "string"}}}}},
  {"type": "function", "function": {"name": "lookup", "description": "Looks something up",
   "parameters": {"type": "object", "properties": {"id": {"type": "integer"}}}}},
  {"type": "function", "function": {"name": "flaky", "description": "Fails now and then",
   "parameters": {"type": "object", "properties": {"n": {"type": "integer"}}}}}
]"#;

/// An `agentest.toml` with an `[llm]` and an openai `[agent]`, as in the brief.
struct Conf {
    url: String,
    timeout: &'static str,
    retries: u32,
    llm_extra: String,
    agent: String,
    mocks: String,
    rest: String,
}

fn conf(url: &str) -> Conf {
    Conf {
        url: url.to_string(),
        timeout: "2s",
        retries: 2,
        llm_extra: String::new(),
        agent: String::new(),
        mocks: "[{ method = \"get_policy\", response = { limit = 75 } }]".into(),
        rest: String::new(),
    }
}

impl Conf {
    fn timeout(mut self, t: &'static str) -> Conf {
        self.timeout = t;
        self
    }

    fn retries(mut self, n: u32) -> Conf {
        self.retries = n;
        self
    }

    /// More `[llm]` keys.
    fn llm(mut self, extra: &str) -> Conf {
        self.llm_extra.push_str(extra);
        self
    }

    /// More `[agent]` keys.
    fn agent(mut self, extra: &str) -> Conf {
        self.agent.push_str(extra);
        self
    }

    /// The `[agent]`'s mocks, as a TOML array.
    fn mocks(mut self, mocks: &str) -> Conf {
        self.mocks = mocks.to_string();
        self
    }

    /// More sections after `[agent]`.
    fn rest(mut self, extra: &str) -> Conf {
        self.rest.push_str(extra);
        self
    }

    fn render(&self) -> String {
        format!(
            "[llm]\nbase_url = \"{}\"\nmodel = \"test-model\"\napi_key_env = \"{KEY_VAR}\"\ntimeout = \"{}\"\nmax_retries = {}\n{}\n\
             [agent]\ntype = \"openai\"\nsystem = \"You are a test agent.\"\ntools_file = \"tools.json\"\nmocks = {}\n{}\n{}",
            self.url, self.timeout, self.retries, self.llm_extra, self.mocks, self.agent, self.rest
        )
    }
}

/// A scratch project: `agentest.toml`, `tools.json` and [`SUITE`] with `cases`.
fn project(tag: &str, conf: &Conf, cases: &[Value]) -> Scratch {
    let s = scratch(tag);
    s.write("agentest.toml", &conf.render());
    s.write("tools.json", TOOLS);
    s.cases(cases);
    s
}

/// A reply the model cut off at its token limit (`finish_reason: "length"`) is marked
/// `truncated` on its turn, shown, and never read as the agent finishing the conversation.
fn a_truncated_agent_reply_is_marked_and_never_the_agent_completing() {
    let server = ChatServer::start();
    server.script(
        "hello",
        vec![
            ok(completion(
                json!({"role": "assistant", "content": "Let me"}),
                "length",
                (7, 2),
            )),
            text("Done: all set.", (9, 4)),
        ],
    );
    let case = json!({"id": "T1", "mode": "dynamic", "input": "hello",
        "simulator": {"use": "script", "script": [{"say": "go on"}]},
        "checkpoints": [{"id": "done", "assert": {"type": "contains", "value": "Done"}}],
        "max_turns": 3});
    let p = project("truncated", &conf(&server.url()), &[case]);
    let run = agentest(p.path()).run();
    run.expect(0).expect_status("T1", "passed");
    let turns = &run.case("T1")["turns"];
    assert_eq!(turns[0]["truncated"], true, "{turns}");
    assert!(turns[1].get("truncated").is_none(), "{turns}");
    assert!(
        run.stdout.contains("(reply cut off at the token limit)"),
        "{}",
        run.stdout
    );
}

/// A case with only an input.
fn case(id: &str, input: &str) -> Value {
    json!({"id": id, "input": input})
}

/// A run of `agentest test` in `dir` (see [`Cmd`]) with the key in [`KEY_VAR`].
fn agentest(dir: &Path) -> Cmd<'_> {
    project::agentest(dir, (KEY_VAR, KEY))
}

/// Asserts that `text` holds no trace of the API key.
#[track_caller]
fn assert_no_key(text: &str, what: &str) {
    assert!(
        !text.contains(KEY),
        "the API key leaked into {what}:\n{text}"
    );
}

/// Asserts that no file under `dir` holds the API key (or an Authorization header).
#[track_caller]
fn assert_no_secret_in_files(dir: &Scratch) {
    let files = dir.files();
    assert!(!files.is_empty());
    for f in files {
        let bytes = std::fs::read(&f).expect("read file");
        let text = String::from_utf8_lossy(&bytes);
        assert!(
            !text.contains(KEY),
            "the API key leaked into {}",
            f.display()
        );
        if f.to_string_lossy().contains(".cassettes") {
            let lower = text.to_ascii_lowercase();
            assert!(
                !lower.contains("authorization") && !lower.contains("bearer"),
                "a cassette holds an Authorization header: {}\n{text}",
                f.display()
            );
        }
    }
}

/// Asserts that every object in `v` has its keys in sorted order, as written.
#[track_caller]
fn assert_sorted_keys(v: &Value, at: &str) {
    match v {
        Value::Object(m) => {
            let keys: Vec<&String> = m.keys().collect();
            let mut sorted = keys.clone();
            sorted.sort();
            assert_eq!(keys, sorted, "keys not sorted at {at}");
            for (k, v) in m {
                assert_sorted_keys(v, &format!("{at}.{k}"));
            }
        }
        Value::Array(a) => {
            for (i, v) in a.iter().enumerate() {
                assert_sorted_keys(v, &format!("{at}[{i}]"));
            }
        }
        _ => {}
    }
}

/// The lines of a cassette, parsed.
fn cassette_entries(dir: &Scratch, id: &str) -> Vec<Value> {
    dir.read(&cassette(id))
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("bad cassette line {l}: {e}")))
        .collect()
}

/// A port with nothing listening on it.
fn closed_port() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind");
    l.local_addr().expect("addr").port()
}

// ---------------------------------------------------------------------------------------
// 1. The client: retries, backoff, Retry-After, timeouts, errors
// ---------------------------------------------------------------------------------------

/// A pinned `max_in_flight` below the run's parallelism makes cases wait for a slot:
/// said once on stderr, never a silent slowdown.
fn a_pinned_limit_below_the_parallelism_is_said_once() {
    let server = ChatServer::start();
    server.answer("a", &["A".to_string()]);
    server.answer("b", &["B".to_string()]);
    let p = project(
        "capped",
        &conf(&server.url()).llm("max_in_flight = 1\n"),
        &[case("T1", "a"), case("T2", "b")],
    );
    // Two cases: no more than two run at once, whatever --parallel says.
    let run = agentest(p.path()).arg("--parallel").arg("4").run();
    run.expect(0);
    let note = format!(
        "agentest: model endpoint {} allows 1 requests in flight (max_in_flight) while 2 cases run at once; calls wait for a slot",
        server.url()
    );
    assert_eq!(run.stderr.matches(&note).count(), 1, "{run:?}");
}

/// An endpoint that answers 429 (or times out) gets fewer requests in flight, said once
/// with the setting that pins the limit.
fn an_overloaded_endpoint_gets_fewer_requests_in_flight() {
    let server = ChatServer::start();
    server.script("a", vec![rate_limited(Some("0")), text("A", (1, 1))]);
    server.script("b", vec![rate_limited(Some("0")), text("B", (1, 1))]);
    let p = project(
        "aimd",
        &conf(&server.url()),
        &[case("T1", "a"), case("T2", "b")],
    );
    let run = agentest(p.path()).arg("--parallel").arg("2").run();
    run.expect(0);
    let note = format!(
        "agentest: model endpoint {} is overloaded (a timeout or HTTP 429); lowering its requests in flight from 16 to 8, raised again as calls succeed; set max_in_flight in its table to pin the limit",
        server.url()
    );
    assert_eq!(
        run.stderr.matches("is overloaded").count(),
        1,
        "said once: {run:?}"
    );
    run.expect_stderr(&note);
    // A pinned limit never moves, and is never said to.
    let server = ChatServer::start();
    server.script("a", vec![rate_limited(Some("0")), text("A", (1, 1))]);
    let p = project(
        "aimd-pinned",
        &conf(&server.url()).llm("max_in_flight = 4\n"),
        &[case("T1", "a")],
    );
    let run = agentest(p.path()).run();
    run.expect(0);
    assert!(!run.stderr.contains("is overloaded"), "{run:?}");
}

/// Time spent waiting for a model slot counts against a case's deadline, and the
/// timeout says how much of it went there and what to change.
fn a_timeout_says_how_long_the_case_waited_for_a_model_slot() {
    let server = ChatServer::start();
    let late = || slow(Duration::from_millis(2500), text("late", (1, 1)));
    server.script("slow", vec![late(), late()]);
    let p = project(
        "slot-wait",
        &conf(&server.url())
            .timeout("10s")
            .llm("max_in_flight = 1\n"),
        &[
            json!({"id": "T1", "input": "slow", "timeout": "1s"}),
            json!({"id": "T2", "input": "slow", "timeout": "1s"}),
        ],
    );
    let run = agentest(p.path()).arg("--parallel").arg("2").run();
    run.expect(1)
        .expect_status("T1", "timeout")
        .expect_status("T2", "timeout");
    // One case had the slot; the other waited for it all along.
    let said = format!(
        "of it waiting for a free slot at model endpoint {} (1 in flight: raise max_in_flight, or lower --parallel)",
        server.url()
    );
    let whys: Vec<String> = ["T1", "T2"]
        .iter()
        .map(|id| {
            run.case(id)["error"]
                .as_str()
                .unwrap_or_default()
                .to_string()
        })
        .collect();
    assert!(
        whys.iter()
            .all(|w| w.starts_with("timeout after 1s (while ")),
        "{whys:?}"
    );
    assert_eq!(
        whys.iter().filter(|w| w.contains(&said)).count(),
        1,
        "{whys:?}"
    );
}

/// One way the model endpoint answers, and what agentest makes of it: the server's
/// answers by input (`script`), the config (`conf`, applied to the default), the cases;
/// then the exit code, each case's status and the parts of its error (`{url}` stands for
/// the endpoint's), the stderr lines, how many requests the server received in all, and
/// whether stderr says no retry at all. `more` checks what is particular to the row.
/// Each row is a trial named `llm::NAME`.
struct Answer {
    name: &'static str,
    script: Vec<(&'static str, Vec<Action>)>,
    conf: fn(Conf) -> Conf,
    cases: Vec<Value>,
    code: i32,
    outcomes: &'static [(&'static str, &'static str, &'static [&'static str])],
    stderr: &'static [&'static str],
    requests: usize,
    says_no_retry: bool,
    more: fn(&ChatServer, &project::ReportedRun),
}

impl Answer {
    fn check(&self) {
        let server = ChatServer::start();
        for (input, actions) in &self.script {
            server.script(input, actions.clone());
        }
        let p = project(self.name, &(self.conf)(conf(&server.url())), &self.cases);
        let run = agentest(p.path()).run();
        let at_url = |text: &str| text.replace("{url}", &server.url());
        run.expect(self.code);
        for (id, status, parts) in self.outcomes {
            run.expect_status(id, status);
            if !parts.is_empty() {
                let parts: Vec<String> = parts.iter().map(|p| at_url(p)).collect();
                let parts: Vec<&str> = parts.iter().map(String::as_str).collect();
                run.expect_error(id, &parts);
            }
        }
        for line in self.stderr {
            run.expect_stderr(&at_url(line));
        }
        if self.says_no_retry {
            assert!(!run.stderr.contains("retry"), "{run:?}");
        }
        assert_eq!(
            server.count(),
            self.requests,
            "the requests the server received\n{run:?}"
        );
        (self.more)(&server, &run);
    }
}

/// The time between the first two requests the server received.
fn waited(server: &ChatServer) -> Duration {
    let seen = server.requests();
    seen[1].at - seen[0].at
}

/// The rows of [`Answer`].
fn answers() -> Vec<Answer> {
    let overloaded = || {
        status(
            503,
            json!({"error": {"message": "overloaded", "type": "server_error"}}),
        )
    };
    let unchanged = |c: Conf| c;
    vec![
        Answer {
            name: "a_429_with_retry_after_is_waited_for_retried_and_counted",
            script: vec![("hello", vec![rate_limited(Some("1")), text("Hi there", (5, 2))])],
            conf: unchanged,
            cases: vec![
                json!({"id": "T1", "input": "hello", "assertions": [{"type": "contains", "value": "Hi there"}]}),
            ],
            code: 0,
            outcomes: &[("T1", "passed", &[])],
            stderr: &["agentest: model endpoint {url}: HTTP 429 Too Many Requests: Rate limit reached for test-model; retry 1/2 in 1s"],
            requests: 2,
            says_no_retry: false,
            more: |server, run| {
                let c = run.case("T1");
                assert_eq!(c["retries"], 1, "{run:?}");
                assert_eq!(c["model_calls"], 1, "{run:?}");
                let waited = waited(server);
                assert!(
                    waited >= Duration::from_millis(950),
                    "Retry-After: 1 was not honoured: {waited:?}"
                );
                assert!(waited < Duration::from_secs(3), "{waited:?}");
            },
        },
        Answer {
            name: "a_429_without_retry_after_backs_off",
            script: vec![("hello", vec![rate_limited(None), text("Hi", (1, 1))])],
            conf: unchanged,
            cases: vec![case("T1", "hello")],
            code: 0,
            outcomes: &[("T1", "passed", &[])],
            stderr: &["HTTP 429 Too Many Requests: Rate limit reached for test-model; retry 1/2 in "],
            requests: 2,
            says_no_retry: false,
            more: |server, run| {
                assert_eq!(run.case("T1")["retries"], 1);
                // The first backoff step is 500ms with jitter between half and the whole.
                let waited = waited(server);
                assert!(
                    waited >= Duration::from_millis(240) && waited < Duration::from_millis(1500),
                    "{waited:?}"
                );
            },
        },
        Answer {
            name: "server_errors_exhaust_the_retries",
            script: vec![(
                "hello",
                vec![
                    overloaded(),
                    overloaded(),
                    overloaded(),
                    text("too late", (1, 1)),
                ],
            )],
            conf: unchanged,
            cases: vec![case("T1", "hello")],
            code: 1,
            outcomes: &[(
                "T1",
                "error",
                &[
                    "turn 1: model call failed: model endpoint",
                    "failed after 3 tries: HTTP 503 Service Unavailable: overloaded",
                ],
            )],
            stderr: &["retry 1/2 in ", "retry 2/2 in "],
            // max_retries = 2 means 3 tries.
            requests: 3,
            says_no_retry: false,
            more: |_, run| {
                assert!(!run.stderr.contains("retry 3/"), "{run:?}");
                assert_eq!(run.counts(), [1, 0, 0, 1, 0]);
            },
        },
        // A 500 that comes back word for word (a request the server cannot read, as
        // llama-cpp-python answers one it fails to validate) is retried once, not to the end.
        Answer {
            name: "the_same_500_twice_is_not_retried_further",
            script: vec![("hello", vec![server_error(), server_error(), server_error()])],
            conf: unchanged,
            cases: vec![case("T1", "hello")],
            code: 1,
            outcomes: &[(
                "T1",
                "error",
                &["answered the same error twice, so it was not retried further: HTTP 500 Internal Server Error: upstream exploded"],
            )],
            stderr: &[],
            // One retry, no more.
            requests: 2,
            says_no_retry: false,
            more: |_, _| {},
        },
        Answer {
            name: "retries_of_a_failed_call_are_counted_in_the_report",
            script: vec![("hello", vec![server_error(), server_error(), server_error()])],
            conf: unchanged,
            cases: vec![case("T1", "hello")],
            code: 1,
            outcomes: &[("T1", "error", &[])],
            stderr: &[],
            requests: 2,
            says_no_retry: false,
            // One retry happened (the same 500 again ends the call); the record says so.
            more: |_, run| assert_eq!(run.case("T1")["retries"], 1, "{run:?}"),
        },
        Answer {
            name: "max_retries_zero_tries_once",
            script: vec![(
                "hello",
                vec![status(503, json!({"error": {"message": "busy"}}))],
            )],
            conf: |c| c.retries(0),
            cases: vec![case("T1", "hello")],
            code: 1,
            outcomes: &[("T1", "error", &["HTTP 503 Service Unavailable: busy"])],
            stderr: &[],
            requests: 1,
            says_no_retry: true,
            more: |_, _| {},
        },
        Answer {
            name: "a_slow_reply_past_the_timeout_is_retried",
            script: vec![(
                "hello",
                vec![
                    slow(Duration::from_millis(1600), text("too slow", (1, 1))),
                    text("on time", (1, 1)),
                ],
            )],
            conf: |c| c.timeout("1s"),
            cases: vec![json!({"id": "T1", "input": "hello", "expected": "on time"})],
            code: 0,
            outcomes: &[("T1", "passed", &[])],
            stderr: &["no answer within 1s; retry 1/2 in "],
            requests: 2,
            says_no_retry: false,
            more: |_, run| {
                assert_eq!(run.case("T1")["retries"], 1);
                assert_eq!(run.case("T1")["turns"][0]["output"], "on time");
            },
        },
        Answer {
            name: "malformed_json_fails_at_once_without_retry",
            script: vec![
                ("hello", vec![garbage(), text("unused", (1, 1))]),
                (
                    "no choices",
                    vec![
                        ok(json!({"object": "chat.completion"})),
                        text("unused", (1, 1)),
                    ],
                ),
            ],
            conf: unchanged,
            cases: vec![case("T1", "hello"), case("T2", "no choices")],
            code: 1,
            outcomes: &[
                (
                    "T1",
                    "error",
                    &["answered with invalid JSON", "{\"choices\": [{\"message\":"],
                ),
                ("T2", "error", &["answered without `choices[0].message`"]),
            ],
            stderr: &[],
            // One request each: no retry of invalid JSON.
            requests: 2,
            says_no_retry: true,
            more: |server, _| {
                assert_eq!(server.requests_for("hello").len(), 1);
                assert_eq!(server.requests_for("no choices").len(), 1);
            },
        },
        Answer {
            name: "a_connection_cut_off_or_dropped_is_retried",
            script: vec![
                ("cut", vec![cut_off(), text("whole", (1, 1))]),
                ("hangup", vec![Action::Hangup, text("answered", (1, 1))]),
            ],
            conf: unchanged,
            cases: vec![
                json!({"id": "T1", "input": "cut", "expected": "whole"}),
                json!({"id": "T2", "input": "hangup", "expected": "answered"}),
            ],
            code: 0,
            outcomes: &[("T1", "passed", &[]), ("T2", "passed", &[])],
            stderr: &["the reply was cut off", "request failed"],
            requests: 4,
            says_no_retry: false,
            more: |server, run| {
                assert_eq!(run.case("T1")["retries"], 1);
                assert_eq!(run.case("T2")["retries"], 1);
                assert_eq!(server.requests_for("cut").len(), 2);
                assert_eq!(server.requests_for("hangup").len(), 2);
            },
        },
        Answer {
            name: "a_400_fails_at_once_with_the_servers_message",
            script: vec![(
                "hello",
                vec![
                    status(
                        400,
                        json!({"error": {"message": "This model's maximum context length is 10 tokens", "type": "invalid_request_error"}}),
                    ),
                    text("unused", (1, 1)),
                ],
            )],
            conf: unchanged,
            cases: vec![case("T1", "hello")],
            code: 1,
            outcomes: &[(
                "T1",
                "error",
                &["model endpoint {url} answered HTTP 400 Bad Request: This model's maximum context length is 10 tokens"],
            )],
            stderr: &[],
            requests: 1,
            says_no_retry: true,
            more: |_, _| {},
        },
        Answer {
            name: "a_retry_that_would_pass_the_case_deadline_is_not_waited_for",
            script: vec![(
                "hello",
                vec![rate_limited(Some("30")), text("unused", (1, 1))],
            )],
            conf: unchanged,
            cases: vec![json!({"id": "T1", "input": "hello", "timeout": "3s"})],
            code: 1,
            outcomes: &[(
                "T1",
                "error",
                &["waiting 30s to retry would pass the case's deadline"],
            )],
            stderr: &[],
            requests: 1,
            says_no_retry: false,
            more: |_, run| assert!(run.took < Duration::from_secs(3), "{run:?}"),
        },
    ]
}

fn requests_carry_the_key_the_model_and_the_settings() {
    let server = ChatServer::start();
    server.script("hello", vec![text("Hi", (3, 1))]);
    let p = project(
        "request",
        &conf(&server.url())
            .llm("temperature = 0.25\nmax_tokens = 256\nheaders = { \"X-Team\" = \"${AGENTEST_LLM_TEST_TEAM}\" }\n"),
        &[case("T1", "hello")],
    );
    let run = agentest(p.path())
        .env("AGENTEST_LLM_TEST_TEAM", "team-7")
        .run();
    run.expect(0).expect_status("T1", "passed");
    let seen = server.requests();
    assert_eq!(seen.len(), 1);
    let r = &seen[0];
    assert_eq!(r.method, "POST");
    assert_eq!(r.path, "/v1/chat/completions");
    assert_eq!(
        r.header("authorization"),
        Some(format!("Bearer {KEY}").as_str())
    );
    assert_eq!(r.header("x-team"), Some("team-7"));
    assert!(r
        .header("content-type")
        .is_some_and(|c| c.starts_with("application/json")));
    assert_eq!(r.body["model"], "test-model");
    assert_eq!(r.body["temperature"], 0.25);
    assert_eq!(r.body["max_tokens"], 256);
    assert_eq!(
        r.messages(),
        &[
            json!({"role": "system", "content": "You are a test agent."}),
            json!({"role": "user", "content": "hello"}),
        ]
    );
    let tools: Vec<&str> = r.body["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .map(|t| t["function"]["name"].as_str().expect("name"))
        .collect();
    assert_eq!(tools, ["get_policy", "lookup", "flaky"]);
    assert_no_key(&run.stdout, "stdout");
    assert_no_key(&run.stderr, "stderr");
    assert_no_secret_in_files(&p);
    // Header values (which may hold secrets too) are not recorded either.
    assert!(p.exists(&cassette("T1")));
    for f in p.files() {
        let text = std::fs::read_to_string(&f).unwrap_or_default();
        assert!(
            !text.contains("team-7"),
            "a header value leaked into {}",
            f.display()
        );
    }
}

fn system_file_and_inline_tools_are_sent() {
    let server = ChatServer::start();
    server.script("hello", vec![text("Hi", (1, 1))]);
    let p = scratch("system-file");
    p.write(
        "agentest.toml",
        &format!(
            "[llm]\nbase_url = \"{}\"\nmodel = \"test-model\"\napi_key_env = \"{KEY_VAR}\"\n\n\
             [agent]\ntype = \"openai\"\nsystem_file = \"prompts/system.md\"\n\
             tools = [{{ type = \"function\", function = {{ name = \"only_tool\", parameters = {{ type = \"object\" }} }} }}]\n",
            server.url()
        ),
    );
    p.write("prompts/system.md", "Be terse.\nAlways.\n");
    p.cases(&[case("T1", "hello")]);
    agentest(p.path()).run().expect(0);
    let r = &server.requests()[0];
    assert_eq!(
        r.messages()[0],
        json!({"role": "system", "content": "Be terse.\nAlways.\n"})
    );
    assert_eq!(r.body["tools"][0]["function"]["name"], "only_tool");
    assert_eq!(
        r.body["tool_choice"], "auto",
        "the default, said: {}",
        r.raw
    );
    assert!(r.body.get("temperature").is_none(), "{}", r.raw);
}

// ---------------------------------------------------------------------------------------
// 2. The tool loop and the mocks
// ---------------------------------------------------------------------------------------

/// An `openai` agent's first byte is the answer of its turn's first model call: a tool
/// loop whose second call is slow has its first byte long before its whole reply.
fn an_openai_agents_first_byte_is_its_first_model_answer() {
    let server = ChatServer::start();
    server.script(
        "What is the travel limit?",
        vec![
            call(
                "call_abc",
                "get_policy",
                json!({"category": "travel"}),
                (1, 1),
            ),
            slow(
                Duration::from_millis(800),
                text("The travel limit is 75.", (1, 1)),
            ),
        ],
    );
    let p = project(
        "latency",
        &conf(&server.url()).timeout("30s"),
        &[
            json!({"id": "T1", "input": "What is the travel limit?", "assertions": [
                {"type": "latency", "max_first_token_ms": 60000, "max_ms": 60000}
            ]}),
        ],
    );
    let run = agentest(p.path()).run();
    run.expect(0).expect_status("T1", "passed");
    let turn = &run.case("T1")["turns"][0];
    let first = turn["first_token_ms"].as_u64().expect("first_token_ms");
    let whole = turn["duration_ms"].as_u64().expect("duration_ms");
    assert!(
        whole >= first + 750,
        "the first model answer ({first} ms) came less than 750 ms before the whole reply ({whole} ms)"
    );
}

fn the_tool_loop_answers_from_the_mock_and_calls_the_model_again() {
    let server = ChatServer::start();
    let travel = json!({"category": "travel"});
    server.script(
        "What is the travel limit?",
        vec![
            call("call_abc", "get_policy", travel.clone(), (11, 3)),
            text("The travel limit is 75.", (20, 8)),
        ],
    );
    server.script(
        "What is the meals limit?",
        vec![
            call("call_m", "get_policy", json!({"category": "meals"}), (1, 1)),
            text("The meals limit is 75.", (1, 1)),
        ],
    );
    server.script(
        "Both limits?",
        vec![
            calls(
                &[
                    ("call_1", "get_policy", json!({"category": "travel"})),
                    ("call_2", "get_policy", json!({"category": "meals"})),
                ],
                (1, 1),
            ),
            text("Both are 75.", (1, 1)),
        ],
    );
    let p = project(
        "tool-loop",
        &conf(&server.url()),
        &[
            json!({"id": "T1", "input": "What is the travel limit?", "assertions": [
                {"type": "tool_called", "name": "get_policy", "arguments": {"category": "travel"}},
                {"type": "tool_result", "value": {"tool": "get_policy", "result": {"limit": 75}}},
                {"type": "contains", "value": "75"}
            ]}),
            // A control: the assertions really look at the mocked result.
            json!({"id": "T2", "input": "What is the meals limit?", "assertions": [
                {"type": "tool_result", "value": {"tool": "get_policy", "result": {"limit": 99}}}
            ]}),
            json!({"id": "T3", "input": "Both limits?", "assertions": [
                {"type": "tool_called", "name": "get_policy", "arguments": {"category": "meals"}}
            ]}),
        ],
    );
    let run = agentest(p.path()).run();
    run.expect(1)
        .expect_status("T1", "passed")
        .expect_status("T2", "failed")
        .expect_status("T3", "passed");

    let seen = server.requests_for("What is the travel limit?");
    assert_eq!(seen.len(), 2, "the model is called again after the tool");
    assert_eq!(
        seen[1].messages(),
        &[
            json!({"role": "system", "content": "You are a test agent."}),
            json!({"role": "user", "content": "What is the travel limit?"}),
            // `content: ""`, not the model's `null`: llama-cpp-python refuses null.
            json!({"role": "assistant", "content": "", "tool_calls": [tool_call_json("call_abc", "get_policy", &travel)]}),
            json!({"role": "tool", "tool_call_id": "call_abc", "content": "{\"limit\":75}"}),
        ]
    );
    let t1 = run.case("T1");
    assert_eq!(t1["turns"][0]["output"], "The travel limit is 75.");
    assert_eq!(
        t1["turns"][0]["tool_calls"],
        json!([{"name": "get_policy", "arguments": {"category": "travel"}, "result": {"limit": 75}}])
    );
    assert_eq!(t1["model_calls"], 2);

    // Two calls in one message: two tool messages, in order, with their ids.
    let both = server.requests_for("Both limits?");
    assert_eq!(both.len(), 2);
    let tool_msgs: Vec<&Value> = both[1]
        .messages()
        .iter()
        .filter(|m| m["role"] == "tool")
        .collect();
    assert_eq!(
        tool_msgs,
        [
            &json!({"role": "tool", "tool_call_id": "call_1", "content": "{\"limit\":75}"}),
            &json!({"role": "tool", "tool_call_id": "call_2", "content": "{\"limit\":75}"}),
        ]
    );
    assert_eq!(
        run.case("T3")["turns"][0]["tool_calls"]
            .as_array()
            .map(Vec::len),
        Some(2)
    );
}

/// A case for one mock feature: scripts the model to call `tool(args)` and then say "done"
/// (routed by the case's input), and asserts that the tool's result is `expect`.
fn calling_case(
    server: &ChatServer,
    id: &str,
    tool: &str,
    args: Value,
    mocks: Value,
    expect: Value,
) -> Value {
    let input = format!("case {id}: call {tool}");
    server.script(
        &input,
        vec![
            call(&format!("call_{id}"), tool, args, (1, 1)),
            text("done", (1, 1)),
        ],
    );
    json!({"id": id, "input": input, "setup": {"mocks": mocks}, "assertions": [
        {"type": "tool_result", "value": {"tool": tool, "result": expect}}
    ]})
}

fn every_mock_matcher_picks_the_right_mock() {
    let server = ChatServer::start();
    let exact_then_any = json!([
        {"method": "lookup", "when": {"args": {"id": 1}}, "response": {"hit": "exact"}},
        {"method": "lookup", "response": {"hit": "fallback"}}
    ]);
    let cases = [
        calling_case(
            &server,
            "exact",
            "lookup",
            json!({"id": 1}),
            exact_then_any.clone(),
            json!({"hit": "exact"}),
        ),
        calling_case(
            &server,
            "not-exact",
            "lookup",
            json!({"id": 1, "verbose": true}),
            exact_then_any,
            json!({"hit": "fallback"}),
        ),
        calling_case(
            &server,
            "positional",
            "lookup",
            json!({"id": 1}),
            json!([{"method": "lookup", "when": {"args": [{"id": 1}]}, "response": {"hit": "positional"}}]),
            json!({"hit": "positional"}),
        ),
        calling_case(
            &server,
            "partial",
            "lookup",
            json!({"repo": "x", "n": 2}),
            json!([
                {"method": "lookup", "when": {"partialArgs": {"repo": "y"}}, "response": {"hit": "wrong"}},
                {"method": "lookup", "when": {"partialArgs": {"repo": "x"}}, "response": {"hit": "partial"}}
            ]),
            json!({"hit": "partial"}),
        ),
        calling_case(
            &server,
            "input",
            "lookup",
            json!({"user": "ann", "q": "z"}),
            json!([{"method": "lookup", "when": {"input": {"user": "ann"}}, "response": {"hit": "input"}}]),
            json!({"hit": "input"}),
        ),
        calling_case(
            &server,
            "matcher",
            "lookup",
            json!({"q": "abc"}),
            json!([
                {"method": "lookup", "when": {"matcher": "\"q\":\"x.z\""}, "response": {"hit": "wrong"}},
                {"method": "lookup", "when": {"matcher": "\"q\":\"a.c\""}, "response": {"hit": "matcher"}}
            ]),
            json!({"hit": "matcher"}),
        ),
        calling_case(
            &server,
            "suffix",
            "tools__lookup",
            json!({}),
            json!([{"method": "lookup", "response": {"hit": "suffix"}}]),
            json!({"hit": "suffix"}),
        ),
        // The case's mocks come before the agent's (which answers get_policy with 75).
        calling_case(
            &server,
            "case-first",
            "get_policy",
            json!({"category": "travel"}),
            json!([{"method": "get_policy", "response": {"limit": 10}}]),
            json!({"limit": 10}),
        ),
        // A case mock that does not match falls through to the agent's.
        calling_case(
            &server,
            "fall-through",
            "get_policy",
            json!({"category": "travel"}),
            json!([{"method": "get_policy", "when": {"args": {"category": "meals"}}, "response": {"limit": 10}}]),
            json!({"limit": 75}),
        ),
    ];
    let p = project("matchers", &conf(&server.url()), &cases);
    let run = agentest(p.path()).run();
    run.expect(0);
    assert_eq!(run.counts(), [9, 9, 0, 0, 0], "{run:?}");
    // What the model received is the chosen mock's response.
    for (id, tool, result) in [
        ("exact", "lookup", json!({"hit": "exact"})),
        ("not-exact", "lookup", json!({"hit": "fallback"})),
        ("case-first", "get_policy", json!({"limit": 10})),
        ("fall-through", "get_policy", json!({"limit": 75})),
    ] {
        let seen = server.requests_for(&format!("case {id}: call {tool}"));
        assert_eq!(seen.len(), 2, "{id}");
        let last = seen[1].messages().last().expect("a message").clone();
        assert_eq!(last["role"], "tool", "{id}");
        assert_eq!(last["tool_call_id"], format!("call_{id}"), "{id}");
        let content: Value =
            serde_json::from_str(last["content"].as_str().expect("content")).expect("JSON");
        assert_eq!(content, result, "{id}");
    }
}

fn a_mock_error_is_what_the_model_receives() {
    let server = ChatServer::start();
    let cases = [
        calling_case(
            &server,
            "object",
            "lookup",
            json!({"id": 1}),
            json!([{"method": "lookup", "error": {"code": "QUOTA", "message": "over budget", "status": 403}}]),
            json!(null),
        ),
        calling_case(
            &server,
            "string",
            "lookup",
            json!({"id": 2}),
            json!([{"method": "lookup", "error": "boom"}]),
            json!(null),
        ),
    ];
    // No result to assert on: keep only the calls.
    let cases: Vec<Value> = cases
        .into_iter()
        .map(|mut c| {
            c["assertions"] = json!([{"type": "tool_called", "name": "lookup"}]);
            c
        })
        .collect();
    let p = project("mock-error", &conf(&server.url()), &cases);
    let run = agentest(p.path()).run();
    run.expect(0);
    for (id, error) in [
        (
            "object",
            json!({"code": "QUOTA", "message": "over budget", "status": 403}),
        ),
        ("string", json!({"message": "boom"})),
    ] {
        let seen = server.requests_for(&format!("case {id}: call lookup"));
        let last = seen[1].messages().last().expect("a message").clone();
        let content: Value =
            serde_json::from_str(last["content"].as_str().expect("content")).expect("JSON");
        assert_eq!(content, json!({"error": error}), "{id}");
        let tc = &run.case(id)["turns"][0]["tool_calls"][0];
        assert_eq!(tc["error"], error, "{id}");
        assert!(tc.get("result").is_none(), "{id}: {tc}");
    }
}

fn a_mock_delay_is_waited_for() {
    let server = ChatServer::start();
    let cases = [calling_case(
        &server,
        "delay",
        "lookup",
        json!({}),
        json!([{"method": "lookup", "response": "late", "metadata": {"delay": 400}}]),
        json!("late"),
    )];
    let p = project("mock-delay", &conf(&server.url()), &cases);
    let run = agentest(p.path()).run();
    run.expect(0);
    let ms = run.case("delay")["turns"][0]["duration_ms"]
        .as_u64()
        .expect("duration");
    assert!(ms >= 400, "the turn took {ms}ms with a 400ms mock delay");
    let seen = server.requests();
    assert!(seen[1].at - seen[0].at >= Duration::from_millis(400));
}

/// Runs the flaky case (8 calls to a mock that fails half the time) and returns which
/// calls failed: `E` for an error, `R` for a result.
fn flaky_pattern(server: &ChatServer, dir: &Scratch, seed: Option<&str>) -> String {
    let input = "call flaky eight times";
    let list: Vec<(String, Value)> = (0..8).map(|i| (format!("f{i}"), json!({"n": i}))).collect();
    let list: Vec<(&str, &str, Value)> = list
        .iter()
        .map(|(id, a)| (id.as_str(), "flaky", a.clone()))
        .collect();
    server.script(input, vec![calls(&list, (1, 1)), text("done", (1, 1))]);
    let mut cmd = agentest(dir.path()).env("AGENTEST_CASSETTES", "off");
    if let Some(s) = seed {
        cmd = cmd.env("AGENTEST_SEED", s);
    }
    let run = cmd.run();
    run.expect(0);
    run.case("P")["turns"][0]["tool_calls"]
        .as_array()
        .expect("tool calls")
        .iter()
        .map(|c| if c.get("error").is_some() { 'E' } else { 'R' })
        .collect()
}

fn a_mock_failure_rate_is_reproducible_with_the_seed() {
    let server = ChatServer::start();
    let flaky = json!({"id": "P", "input": "call flaky eight times", "setup": {"mocks": [
        {"method": "flaky", "response": {"ok": true}, "error": {"code": "FLAKY", "message": "flaked"}, "metadata": {"probability": 0.5}}
    ]}});
    let p = project(
        "probability",
        &conf(&server.url()),
        std::slice::from_ref(&flaky),
    );

    let seven = flaky_pattern(&server, &p, Some("7"));
    assert_eq!(
        seven,
        flaky_pattern(&server, &p, Some("7")),
        "same seed, same draws"
    );
    assert!(seven.contains('E') && seven.contains('R'), "{seven}");
    let patterns: Vec<String> = (1..=6)
        .map(|s| flaky_pattern(&server, &p, Some(&s.to_string())))
        .collect();
    let distinct: std::collections::BTreeSet<&String> = patterns.iter().collect();
    assert!(
        distinct.len() > 1,
        "different seeds draw differently: {patterns:?}"
    );
    // Without AGENTEST_SEED the seed is [run] seed, else 0; the variable wins over the file.
    let zero = flaky_pattern(&server, &p, None);
    assert_eq!(zero, flaky_pattern(&server, &p, Some("0")));
    p.write(
        "agentest.toml",
        &conf(&server.url()).rest("[run]\nseed = 7\n").render(),
    );
    assert_eq!(flaky_pattern(&server, &p, None), seven, "[run] seed = 7");
    assert_eq!(
        flaky_pattern(&server, &p, Some("3")),
        patterns[2],
        "AGENTEST_SEED wins"
    );
    // The errors are the mock's own.
    let server2 = ChatServer::start();
    let p2 = project("probability-2", &conf(&server2.url()), &[flaky]);
    flaky_pattern(&server2, &p2, Some("7"));
    let last = server2.requests()[1].messages().to_vec();
    let errors: Vec<&Value> = last
        .iter()
        .filter(|m| {
            m["role"] == "tool" && m["content"].as_str().is_some_and(|c| c.contains("FLAKY"))
        })
        .collect();
    assert_eq!(errors.len(), seven.matches('E').count());
    eprintln!("flaky patterns: seed 7 {seven}, seed 0 {zero}, seeds 1..=6 {patterns:?}");
}

fn a_failure_rate_of_one_or_zero_always_or_never_fails() {
    let server = ChatServer::start();
    let cases = [
        calling_case(
            &server,
            "always",
            "lookup",
            json!({}),
            json!([{"method": "lookup", "response": "fine", "metadata": {"probability": 1}}]),
            json!(null),
        ),
        calling_case(
            &server,
            "never",
            "lookup",
            json!({}),
            json!([{"method": "lookup", "response": "fine", "error": "nope", "metadata": {"probability": 0}}]),
            json!("fine"),
        ),
    ];
    let mut cases = cases.to_vec();
    cases[0]["assertions"] = json!([{"type": "tool_called", "name": "lookup"}]);
    let p = project("probability-edges", &conf(&server.url()), &cases);
    let run = agentest(p.path()).run();
    run.expect(0);
    // Without an `error`, a drawn failure is a generic one.
    assert_eq!(
        run.case("always")["turns"][0]["tool_calls"][0]["error"],
        json!({"code": "MOCK_FAILURE", "message": "simulated failure of lookup"})
    );
    assert_eq!(
        run.case("never")["turns"][0]["tool_calls"][0]["result"],
        "fine"
    );
}

fn an_unmatched_tool_call_fails_the_case_and_lists_the_mocks() {
    let server = ChatServer::start();
    server.script(
        "look up 2",
        vec![
            call("c1", "lookup", json!({"id": 2}), (1, 1)),
            text("unused", (1, 1)),
        ],
    );
    server.script(
        "delete everything",
        vec![
            call("c2", "delete_everything", json!({}), (1, 1)),
            text("unused", (1, 1)),
        ],
    );
    let p = project(
        "unmatched",
        &conf(&server.url()).mocks(
            "[{ method = \"get_policy\", response = { limit = 75 } }, { method = \"lookup\", when = { args = { id = 100 } }, response = \"config\" }]",
        ),
        &[
            json!({"id": "T1", "input": "look up 2", "setup": {"mocks": [
                {"method": "lookup", "when": {"args": {"id": 1}}, "response": 1},
                {"method": "get_policy", "response": 2}
            ]}}),
            case("T2", "delete everything"),
        ],
    );
    let run = agentest(p.path()).run();
    run.expect(1)
        .expect_status("T1", "failed")
        .expect_error(
            "T1",
            &[
                "turn 1: no mock matches the tool call lookup({\"id\":2}); the mocks for `lookup` are:\n  setup.mocks[0] when args = {\"id\":1}\n  [agent].mocks[1] when args = {\"id\":100}",
            ],
        )
        .expect_status("T2", "failed")
        .expect_error(
            "T2",
            &["no mock answers the tool call delete_everything({}): there are no mocks for `delete_everything`"],
        );
    assert!(
        !run.error("T1").contains("get_policy"),
        "only the mocks for that tool:\n{run:?}"
    );
    assert_eq!(
        server.requests_for("look up 2").len(),
        1,
        "the model is not called again"
    );
    assert_eq!(run.counts(), [2, 0, 2, 0, 0]);
}

fn max_tool_rounds_bounds_the_loop() {
    let server = ChatServer::start();
    server.script(
        "loop forever",
        vec![
            call("r1", "get_policy", json!({}), (100, 7)),
            call("r2", "get_policy", json!({}), (120, 9)),
            call("r3", "get_policy", json!({}), (1, 1)),
            text("unused", (1, 1)),
        ],
    );
    let p = project(
        "rounds",
        &conf(&server.url()).rest(
            "[agents.loopy]\ntype = \"openai\"\nmax_tool_rounds = 2\nmocks = [{ method = \"get_policy\", response = { limit = 1 } }]\n",
        ),
        &[json!({"id": "T1", "input": "loop forever", "agent": "loopy"})],
    );
    let run = agentest(p.path()).run();
    run.expect(1).expect_status("T1", "error").expect_error(
        "T1",
        &["the model was still calling tools after 2 rounds in one turn; raise max_tool_rounds"],
    );
    assert_eq!(server.count(), 2);
    let c = run.case("T1");
    assert_eq!(c["model_calls"], 2);
    // The tokens of a failed turn count, and the calls the model made stay in its record.
    assert_eq!(
        c["usage"]["agent"],
        json!({"prompt_tokens": 220, "completion_tokens": 16}),
        "{c}"
    );
    let turn = &c["turns"][0];
    assert_eq!(
        turn["usage"],
        json!({"input_tokens": 220, "output_tokens": 16})
    );
    let names: Vec<&str> = turn["tool_calls"]
        .as_array()
        .expect("the calls made")
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["get_policy", "get_policy"], "{turn}");
    // Every case names its agent: the header names that one, not `[agent]`.
    assert!(run.stdout.contains("ℹ Agent: loopy\n"), "{}", run.stdout);
    assert!(run.stdout.contains("get_policy"), "{}", run.stdout);
}

fn bad_case_mocks_are_load_errors_on_their_line() {
    let server = ChatServer::start();
    let p = project(
        "bad-mocks",
        &conf(&server.url()),
        &[
            json!({"id": "T1", "input": "x", "setup": {"mocks": [{"method": "lookup"}]}}),
            json!({"id": "T2", "input": "x", "setup": {"mocks": [{"method": "lookup", "response": 1, "when": {"arg": 1}}]}}),
            json!({"id": "T3", "input": "x", "setup": {"mocks": [{"method": "lookup", "responseFn": "x => x"}]}}),
            json!({"id": "T4", "input": "x", "setup": {"mocks": [{"method": "lookup", "response": 1, "metadata": {"probability": 2}}]}}),
        ],
    );
    let run = agentest(p.path()).run();
    run.expect(1)
        .expect_error("T1", &["suites/s.jsonl:1:", "setup.mocks[0].response"])
        .expect_error("T2", &["suites/s.jsonl:2:", "did you mean `args`?"])
        .expect_error("T3", &["`responseFn` is not supported"])
        .expect_error("T4", &["setup.mocks[0].metadata.probability"]);
    assert_eq!(run.counts(), [4, 0, 0, 4, 0]);
    assert_eq!(server.count(), 0);
}

// ---------------------------------------------------------------------------------------
// 3. Usage
// ---------------------------------------------------------------------------------------

fn usage_is_summed_over_the_calls_and_turns() {
    let server = ChatServer::start();
    server.script(
        "Plan my trip",
        vec![
            call("u1", "get_policy", json!({"category": "travel"}), (10, 5)),
            call("u2", "get_policy", json!({"category": "hotel"}), (20, 6)),
            text("Planned.", (30, 7)),
            text("Meals are 75.", (40, 9)),
        ],
    );
    let p = project(
        "usage",
        &conf(&server.url()),
        &[json!({"id": "T1", "turns": [
            {"input": "Plan my trip", "assertions": [{"type": "contains", "value": "Planned"}]},
            {"input": "And meals?", "assertions": [{"type": "contains", "value": "Meals"}]}
        ]})],
    );
    let run = agentest(p.path()).run();
    run.expect(0).expect_status("T1", "passed");
    let c = run.case("T1");
    assert_eq!(
        c["usage"],
        json!({"agent": {"prompt_tokens": 100, "completion_tokens": 27}}),
        "{run:?}"
    );
    assert_eq!(c["model_calls"], 4);
    assert_eq!(
        c["turns"][0]["usage"],
        json!({"input_tokens": 60, "output_tokens": 18})
    );
    assert_eq!(
        c["turns"][1]["usage"],
        json!({"input_tokens": 40, "output_tokens": 9})
    );
    assert!(c.get("retries").is_none(), "no retries, no key: {c}");

    // Turn 2 continues the model's own history, tool calls and results included.
    let seen = server.requests();
    assert_eq!(seen.len(), 4);
    let roles: Vec<&str> = seen[3]
        .messages()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(
        roles,
        [
            "system",
            "user",
            "assistant",
            "tool",
            "assistant",
            "tool",
            "assistant",
            "user"
        ]
    );
    assert_eq!(
        seen[3].messages()[6],
        json!({"role": "assistant", "content": "Planned."})
    );
    assert_eq!(
        seen[3].messages()[7],
        json!({"role": "user", "content": "And meals?"})
    );

    // Replayed from the cassette, offline: the same usage, all four calls replayed, and
    // reported apart from tokens spent (none).
    drop(server);
    let again = agentest(p.path()).run();
    again.expect(0);
    let c = again.case("T1");
    assert!(c.get("usage").is_none(), "{c}");
    assert_eq!(
        c["replayed_usage"],
        json!({"agent": {"prompt_tokens": 100, "completion_tokens": 27}})
    );
    assert_eq!(c["model_calls"], 4);
    assert_eq!(c["replayed_calls"], 4);
    assert_eq!(c["cassette"]["replayed"], 4);
    assert_eq!(c["cassette"]["recorded"], 0);
}

// ---------------------------------------------------------------------------------------
// 4. Cassettes
// ---------------------------------------------------------------------------------------

/// The tool-loop conversation of case T1: two model calls.
fn script_tool_loop(server: &ChatServer, answer: &str) {
    server.script(
        "What is the travel limit?",
        vec![
            call(
                "call_abc",
                "get_policy",
                json!({"category": "travel"}),
                (11, 3),
            ),
            text(answer, (20, 8)),
        ],
    );
}

fn tool_loop_case() -> Value {
    json!({"id": "T1", "input": "What is the travel limit?", "assertions": [
        {"type": "tool_result", "value": {"tool": "get_policy", "result": {"limit": 75}}},
        {"type": "contains", "value": "75"}
    ]})
}

fn auto_mode_records_then_replays_offline() {
    let server = ChatServer::start();
    script_tool_loop(&server, "The travel limit is 75.");
    let p = project("auto", &conf(&server.url()), &[tool_loop_case()]);
    let run = agentest(p.path()).run();
    run.expect(0).expect_status("T1", "passed");
    assert_eq!(server.count(), 2);
    let c = run.case("T1");
    assert_eq!(
        c["cassette"],
        json!({"file": cassette("T1"), "mode": "auto", "replayed": 0, "recorded": 2, "unused": 0})
    );

    // The file: one line per call, keys sorted, no volatile fields, no secrets.
    let text = p.read(&cassette("T1"));
    assert_eq!(text.lines().count(), 2, "{text}");
    assert!(text.ends_with('\n'));
    let entries = cassette_entries(&p, "T1");
    for (i, e) in entries.iter().enumerate() {
        assert_sorted_keys(e, &format!("line {}", i + 1));
        let keys: Vec<&String> = e.as_object().expect("object").keys().collect();
        assert_eq!(keys, ["key", "request", "response", "role"]);
        assert_eq!(e["role"], "agent");
        assert_eq!(e["key"].as_str().map(str::len), Some(32));
        assert_eq!(e["request"]["model"], "test-model");
        for volatile in ["id", "created", "system_fingerprint"] {
            assert!(
                e["response"].get(volatile).is_none(),
                "{volatile} kept: {e}"
            );
        }
    }
    assert_eq!(
        entries[0]["request"]["messages"].as_array().map(Vec::len),
        Some(2)
    );
    assert_eq!(
        entries[1]["request"]["messages"].as_array().map(Vec::len),
        Some(4)
    );
    assert_eq!(
        entries[1]["response"]["choices"][0]["message"]["content"],
        "The travel limit is 75."
    );
    assert_no_secret_in_files(&p);
    assert_no_key(&run.stdout, "stdout");
    assert_no_key(&run.stderr, "stderr");

    // Offline: the server is gone, the cassette answers.
    drop(server);
    let offline = agentest(p.path()).run();
    offline.expect(0).expect_status("T1", "passed");
    let c = offline.case("T1");
    assert_eq!(c["cassette"]["replayed"], 2);
    assert_eq!(c["cassette"]["recorded"], 0);
    assert_eq!(c["model_calls"], 2);
    assert_eq!(c["turns"][0]["output"], "The travel limit is 75.");
    assert_eq!(
        p.read(&cassette("T1")),
        text,
        "a replay leaves the file as it was"
    );

    // A recording needs no key, and CI replays it too.
    agentest(p.path())
        .without_key()
        .run()
        .expect(0)
        .expect_status("T1", "passed");
    agentest(p.path())
        .without_key()
        .env("CI", "true")
        .run()
        .expect(0)
        .expect_status("T1", "passed");
    agentest(p.path())
        .env("AGENTEST_CASSETTES", "strict")
        .run()
        .expect(0)
        .expect_status("T1", "passed");
    assert_no_secret_in_files(&p);
}

fn a_changed_request_misses_its_recording() {
    let server = ChatServer::start();
    server.script("hello", vec![text("Hi", (1, 1))]);
    let p = project("miss", &conf(&server.url()), &[case("T1", "hello")]);
    agentest(p.path()).run().expect(0);
    assert_eq!(server.count(), 1);
    p.cases(&[case("T1", "hello again")]);

    // On CI a miss fails the case, names the request and how to record it.
    let ci = agentest(p.path()).env("CI", "true").run();
    ci.expect(1).expect_status("T1", "failed").expect_error(
        "T1",
        &[
            &format!(
                "no recording of this model call in {} (on CI (the CI variable is set))",
                cassette("T1")
            ),
            "model test-model, 2 messages, 3 tools, last user: hello again",
            // The hint names the command that was run.
            "AGENTEST_CASSETTES=record agentest test -i suites -o report.jsonl",
        ],
    );
    // Replay and strict never call the model either.
    for mode in ["replay", "strict"] {
        agentest(p.path())
            .env("AGENTEST_CASSETTES", mode)
            .run()
            .expect(1)
            .expect_status("T1", "failed")
            .expect_error("T1", &["no recording", &format!("(cassette mode {mode})")]);
    }
    assert_eq!(server.count(), 1, "no model call on a refused miss");

    // Outside CI, auto calls the model and records the new call beside the old one,
    // which this run did not use (said on stderr).
    server.script("hello again", vec![text("Hi again", (1, 1))]);
    let auto = agentest(p.path()).run();
    auto.expect(0)
        .expect_status("T1", "passed")
        .expect_stderr(&format!(
            "s::T1: 1 recorded model call(s) in {} were not used by this run",
            cassette("T1")
        ));
    assert_eq!(server.count(), 2);
    let c = auto.case("T1");
    assert_eq!(c["cassette"]["recorded"], 1);
    assert_eq!(c["cassette"]["unused"], 1);
    let entries = cassette_entries(&p, "T1");
    assert_eq!(entries.len(), 2);
    assert_eq!(
        entries[1]["response"]["choices"][0]["message"]["content"],
        "Hi again"
    );
}

fn record_mode_rewrites_the_file() {
    let server = ChatServer::start();
    server.script(
        "hello",
        vec![text("first answer", (1, 1)), text("second answer", (1, 1))],
    );
    let p = project("record", &conf(&server.url()), &[case("T1", "hello")]);
    agentest(p.path()).run().expect(0);
    assert!(p.read(&cassette("T1")).contains("first answer"));

    let run = agentest(p.path()).env("AGENTEST_CASSETTES", "record").run();
    run.expect(0);
    assert_eq!(server.count(), 2, "record always calls the model");
    assert_eq!(
        run.case("T1")["cassette"],
        json!({"file": cassette("T1"), "mode": "record", "replayed": 0, "recorded": 1, "unused": 0})
    );
    let text = p.read(&cassette("T1"));
    assert_eq!(text.lines().count(), 1, "{text}");
    assert!(
        text.contains("second answer") && !text.contains("first answer"),
        "{text}"
    );

    drop(server);
    let replay = agentest(p.path()).env("AGENTEST_CASSETTES", "replay").run();
    replay.expect(0);
    assert_eq!(replay.case("T1")["turns"][0]["output"], "second answer");
}

fn off_mode_writes_no_file() {
    let server = ChatServer::start();
    server.script(
        "hello",
        vec![
            text("one", (1, 1)),
            text("two", (1, 1)),
            text("three", (1, 1)),
            text("four", (1, 1)),
        ],
    );
    let p = project("off", &conf(&server.url()), &[case("T1", "hello")]);
    for _ in 0..2 {
        let run = agentest(p.path()).env("AGENTEST_CASSETTES", "off").run();
        run.expect(0);
        assert!(run.case("T1").get("cassette").is_none(), "{run:?}");
    }
    assert_eq!(server.count(), 2, "every call goes to the model");
    assert!(!p.exists("suites/.cassettes"), "off writes nothing");

    // `[run] cassettes = "off"` does the same, and the variable wins over it.
    p.write(
        "agentest.toml",
        &conf(&server.url())
            .rest("[run]\ncassettes = \"off\"\n")
            .render(),
    );
    agentest(p.path()).run().expect(0);
    assert!(!p.exists("suites/.cassettes"));
    agentest(p.path())
        .env("AGENTEST_CASSETTES", "auto")
        .run()
        .expect(0);
    assert!(p.exists(&cassette("T1")));
    assert_eq!(server.count(), 4);
}

fn strict_mode_fails_a_passing_case_that_left_entries_unused() {
    let server = ChatServer::start();
    script_tool_loop(&server, "The travel limit is 75.");
    server.script("hello", vec![text("Hi", (1, 1))]);
    let p = project(
        "strict",
        &conf(&server.url()),
        &[tool_loop_case(), case("T2", "hello")],
    );
    agentest(p.path()).run().expect(0);
    drop(server);
    // A valid entry of another case, appended to T1's cassette: never used by T1.
    let extra = p.read(&cassette("T2"));
    let t1 = format!("{}{extra}", p.read(&cassette("T1")));
    p.write(&cassette("T1"), &t1);

    let strict = agentest(p.path()).env("AGENTEST_CASSETTES", "strict").run();
    strict
        .expect(1)
        .expect_status("T1", "failed")
        .expect_error(
            "T1",
            &[&format!(
                "strict cassette mode: 1 recorded model call(s) in {} were not used by this run; re-record the cassette (AGENTEST_CASSETTES=record)",
                cassette("T1")
            )],
        )
        .expect_status("T2", "passed");
    assert_eq!(strict.case("T1")["cassette"]["unused"], 1);

    for mode in ["replay", "auto"] {
        let run = agentest(p.path()).env("AGENTEST_CASSETTES", mode).run();
        run.expect(0)
            .expect_status("T1", "passed")
            .expect_stderr(&format!(
                "s::T1: 1 recorded model call(s) in {} were not used",
                cassette("T1")
            ));
        assert_eq!(run.case("T1")["cassette"]["unused"], 1, "{mode}");
    }
    assert_eq!(
        p.read(&cassette("T1")),
        t1,
        "nothing new was recorded, nothing rewritten"
    );
}

fn broken_cassettes_are_errors_naming_the_file_and_line() {
    let server = ChatServer::start();
    script_tool_loop(&server, "The travel limit is 75.");
    let p = project("broken", &conf(&server.url()), &[tool_loop_case()]);
    agentest(p.path()).run().expect(0);
    let good = p.read(&cassette("T1"));
    let lines: Vec<&str> = good.lines().collect();
    assert_eq!(lines.len(), 2);

    let check = |contents: String, expected: &[&str]| {
        p.write(&cassette("T1"), &contents);
        let run = agentest(p.path()).run();
        run.expect(1)
            .expect_status("T1", "error")
            .expect_error("T1", expected);
        assert_eq!(
            p.read(&cassette("T1")),
            contents,
            "a bad cassette is not overwritten"
        );
    };
    let c = cassette("T1");
    // Truncated second line.
    check(
        format!("{}\n{}\n", lines[0], &lines[1][..lines[1].len() / 2]),
        &[
            &format!("{c}:2: invalid cassette entry"),
            "AGENTEST_CASSETTES=record",
        ],
    );
    // Garbage first line.
    check(
        format!("not json at all\n{}\n", lines[1]),
        &[&format!("{c}:1: invalid cassette entry")],
    );
    // Wrong schema: an unknown field.
    let mut odd: Value = serde_json::from_str(lines[0]).unwrap();
    odd["extra"] = json!(1);
    check(
        format!("{odd}\n{}\n", lines[1]),
        &[&format!("{c}:1: invalid cassette entry"), "extra"],
    );
    // A hand-edited request whose key no longer matches.
    let mut edited: Value = serde_json::from_str(lines[1]).unwrap();
    edited["request"]["messages"][1]["content"] = json!("What is the meals limit?");
    check(
        format!("{}\n{edited}\n", lines[0]),
        &[&format!(
            "{c}:2: the entry's key does not match its request"
        )],
    );
    assert_eq!(
        server.count(),
        2,
        "a bad cassette never falls back to the model"
    );

    // A hand-edited response is fine: it is what the case replays.
    let mut answer: Value = serde_json::from_str(lines[1]).unwrap();
    answer["response"]["choices"][0]["message"]["content"] = json!("Edited by hand: 75.");
    p.write(&cassette("T1"), &format!("{}\n{answer}\n", lines[0]));
    let run = agentest(p.path()).run();
    run.expect(0);
    assert_eq!(run.case("T1")["turns"][0]["output"], "Edited by hand: 75.");
}

fn unknown_cassette_modes_and_seeds_are_usage_errors() {
    let server = ChatServer::start();
    let p = project("mode", &conf(&server.url()), &[case("T1", "hello")]);
    let run = agentest(p.path()).env("AGENTEST_CASSETTES", "foo").run();
    run.expect(2).expect_stderr(
        "environment variable AGENTEST_CASSETTES=\"foo\" is not valid; use auto, replay, strict, record or off",
    );
    assert!(run.report.is_none(), "nothing ran:\n{run:?}");
    let run = agentest(p.path()).env("AGENTEST_SEED", "abc").run();
    run.expect(2).expect_stderr(
        "environment variable AGENTEST_SEED=\"abc\" is not valid; use a whole number",
    );
    p.write(
        "agentest.toml",
        &conf(&server.url())
            .rest("[run]\ncassettes = \"replays\"\n")
            .render(),
    );
    agentest(p.path())
        .run()
        .expect(2)
        .expect_stderr("[run].cassettes: unknown cassette mode \"replays\"");
    assert_eq!(server.count(), 0);
}

// ---------------------------------------------------------------------------------------
// 5. No key
// ---------------------------------------------------------------------------------------

fn without_a_key_or_a_recording_the_case_is_skipped_outside_ci_and_fails_on_ci() {
    let server = ChatServer::start();
    let p = project("no-key", &conf(&server.url()), &[case("T1", "hello")]);
    let expected = [
        &format!(
            "turn 1: the case needs a model: no recording in {}",
            cassette("T1")
        ) as &str,
        "[llm] needs the API key in `AGENTEST_LLM_TEST_KEY`, which is not set",
    ];
    for ci in [None, Some("false"), Some("0")] {
        let mut cmd = agentest(p.path()).without_key();
        if let Some(v) = ci {
            cmd = cmd.env("CI", v);
        }
        let run = cmd.run();
        run.expect(0)
            .expect_status("T1", "skipped")
            .expect_error("T1", &expected);
        assert_eq!(run.counts(), [1, 0, 0, 0, 1]);
    }
    // An empty key is no key.
    agentest(p.path())
        .without_key()
        .env(KEY_VAR, "")
        .run()
        .expect(0)
        .expect_status("T1", "skipped");
    let off = agentest(p.path())
        .without_key()
        .env("AGENTEST_CASSETTES", "off")
        .run();
    off.expect(0).expect_status("T1", "skipped").expect_error(
        "T1",
        &["the case needs a model: cassettes are off, and [llm] needs the API key"],
    );

    // On CI the case fails, with the same reason: no recording and no key.
    let ci = agentest(p.path()).without_key().env("CI", "true").run();
    ci.expect(1)
        .expect_status("T1", "failed")
        .expect_error("T1", &["no recording", "AGENTEST_LLM_TEST_KEY"]);
    assert_eq!(ci.counts(), [1, 0, 1, 0, 0]);
    agentest(p.path())
        .without_key()
        .env("CI", "true")
        .env("AGENTEST_CASSETTES", "off")
        .run()
        .expect(1)
        .expect_status("T1", "failed")
        .expect_error(
            "T1",
            &["[llm] needs the API key in `AGENTEST_LLM_TEST_KEY`, which is not set"],
        );

    assert_eq!(server.count(), 0, "no request without a key");
    assert!(!p.exists("suites/.cassettes"), "nothing recorded");
}

fn on_ci_a_case_without_key_or_recording_fails_naming_the_key_variable() {
    let server = ChatServer::start();
    let p = project("no-key-ci", &conf(&server.url()), &[case("T1", "hello")]);
    agentest(p.path())
        .without_key()
        .env("CI", "true")
        .run()
        .expect(1)
        .expect_status("T1", "failed")
        .expect_error("T1", &["AGENTEST_LLM_TEST_KEY"]);
}

/// An endpoint's refusal (a 400 no retry changes) is part of the recording: replayed
/// offline, on CI too, it is the same error, not "no recording".
fn a_refused_call_is_recorded_and_replayed_as_that_error() {
    let server = ChatServer::start();
    server.script(
        "hello",
        vec![status(
            400,
            json!({"error": {"message": "context length exceeded"}}),
        )],
    );
    let p = project("refused", &conf(&server.url()), &[case("T1", "hello")]);
    let first = agentest(p.path()).run();
    first.expect(1).expect_status("T1", "error").expect_error(
        "T1",
        &["answered HTTP 400 Bad Request: context length exceeded"],
    );
    let recorded = p.read(&cassette("T1"));
    assert!(recorded.contains("\"error\":"), "{recorded}");
    drop(server);
    let again = agentest(p.path()).env("CI", "true").run();
    again.expect(1).expect_status("T1", "error").expect_error(
        "T1",
        &["answered HTTP 400 Bad Request: context length exceeded"],
    );
    assert_eq!(again.case("T1")["error"], first.case("T1")["error"]);
}

fn record_mode_keeps_the_old_recording_when_the_model_cannot_be_called() {
    let server = ChatServer::start();
    // 503s: an outage that outlasts the retries is no answer to record.
    let down = || status(503, json!({"error": {"message": "overloaded"}}));
    server.script(
        "hello",
        vec![text("recorded", (1, 1)), down(), down(), down()],
    );
    let p = project("record-wipe", &conf(&server.url()), &[case("T1", "hello")]);
    agentest(p.path()).run().expect(0);
    let good = p.read(&cassette("T1"));
    assert_eq!(good.lines().count(), 1);

    // No key: the case is skipped and the run is green, but the recording must survive.
    agentest(p.path())
        .without_key()
        .env("AGENTEST_CASSETTES", "record")
        .run()
        .expect(0)
        .expect_status("T1", "skipped");
    assert_eq!(
        p.read(&cassette("T1")),
        good,
        "a skipped record run emptied the cassette"
    );

    // The endpoint fails after its retries: the case errors, the recording must survive.
    agentest(p.path())
        .env("AGENTEST_CASSETTES", "record")
        .run()
        .expect(1)
        .expect_status("T1", "error");
    assert_eq!(
        p.read(&cassette("T1")),
        good,
        "a failed record run emptied the cassette"
    );
}

// ---------------------------------------------------------------------------------------
// 6. --live
// ---------------------------------------------------------------------------------------

fn live_mode_sends_tool_calls_to_the_tools_url() {
    let model = ChatServer::start();
    let tools = ChatServer::start();
    let p = project(
        "live",
        &conf(&model.url()).agent(&format!(
            "tools_url = \"http://127.0.0.1:{}/tools\"\n",
            tools.port
        )),
        &[
            json!({"id": "T1", "input": "What is the travel limit?", "assertions": [
                {"type": "tool_result", "value": {"tool": "get_policy", "result": {"limit": 500, "source": "live"}}}
            ]}),
            json!({"id": "T2", "input": "look it up", "assertions": [{"type": "tool_called", "name": "lookup"}]}),
        ],
    );
    let script = |answer: &str| {
        model.script(
            "What is the travel limit?",
            vec![
                call(
                    "call_live",
                    "get_policy",
                    json!({"category": "travel"}),
                    (1, 1),
                ),
                text(answer, (1, 1)),
            ],
        );
        model.script(
            "look it up",
            vec![
                call("call_l", "lookup", json!({"id": 9}), (1, 1)),
                text("ok", (1, 1)),
            ],
        );
        tools.script(
            "get_policy",
            vec![ok(json!({"limit": 500, "source": "live"}))],
        );
        tools.script("lookup", vec![status(503, json!({"message": "tool down"}))]);
    };

    for (how, flag, env) in [
        ("--live", Some("--live"), None),
        ("AGENTEST_LIVE=1", None, Some("1")),
    ] {
        script("The limit is 500.");
        let mut cmd = agentest(p.path()).env("AGENTEST_CASSETTES", "off");
        if let Some(f) = flag {
            cmd = cmd.arg(f);
        }
        if let Some(v) = env {
            cmd = cmd.env("AGENTEST_LIVE", v);
        }
        let run = cmd.run();
        run.expect(0)
            .expect_status("T1", "passed")
            .expect_status("T2", "passed");
        let calls = tools.requests_for("get_policy");
        let last = calls.last().expect("the tool endpoint was called");
        assert_eq!(last.method, "POST", "{how}");
        assert_eq!(last.path, "/tools", "{how}");
        assert_eq!(
            last.body,
            json!({"name": "get_policy", "arguments": {"category": "travel"}}),
            "{how}"
        );
        let sent = model.requests_for("What is the travel limit?");
        assert_eq!(
            sent.last().unwrap().messages().last().unwrap(),
            &json!({"role": "tool", "tool_call_id": "call_live", "content": "{\"limit\":500,\"source\":\"live\"}"}),
            "{how}: the live result, not the mock's"
        );
        // A failing tool endpoint is the call's error, given to the model.
        let err = &run.case("T2")["turns"][0]["tool_calls"][0]["error"];
        assert_eq!(
            err,
            &json!({"status": 503, "message": {"message": "tool down"}}),
            "{how}"
        );
    }
    assert_eq!(tools.requests_for("get_policy").len(), 2);

    // Without live mode the mocks answer and the tool endpoint is not called.
    script("The limit is 75.");
    let run = agentest(p.path()).env("AGENTEST_CASSETTES", "off").run();
    run.expect(1)
        .expect_status("T1", "failed")
        .expect_status("T2", "failed");
    assert_eq!(
        run.case("T1")["turns"][0]["tool_calls"][0]["result"],
        json!({"limit": 75})
    );
    assert_eq!(tools.requests_for("get_policy").len(), 2);
}

fn live_mode_without_a_tools_url_is_a_clear_error() {
    let server = ChatServer::start();
    server.script(
        "What is the travel limit?",
        vec![
            call("c", "get_policy", json!({}), (1, 1)),
            text("unused", (1, 1)),
        ],
    );
    let p = project("live-none", &conf(&server.url()), &[tool_loop_case()]);
    let run = agentest(p.path()).arg("--live").run();
    run.expect(1).expect_status("T1", "error").expect_error(
        "T1",
        &[
            "live mode sends tool calls to the agent's `tools_url`, and this agent has none",
            "(the call was get_policy)",
        ],
    );
    assert_eq!(server.count(), 1);
}

// ---------------------------------------------------------------------------------------
// 7. Environment overrides
// ---------------------------------------------------------------------------------------

fn environment_overrides_redirect_the_endpoint_and_the_model() {
    let server = ChatServer::start();
    let closed = format!("http://127.0.0.1:{}/v1", closed_port());
    let p = project(
        "override",
        &conf(&closed).retries(0),
        &[case("T1", "hello")],
    );
    // The configured endpoint is unreachable.
    agentest(p.path())
        .env("AGENTEST_CASSETTES", "off")
        .run()
        .expect(1)
        .expect_error(
            "T1",
            &[&format!(
                "model endpoint {closed} failed after 1 try: request failed"
            )],
        );

    server.script("hello", vec![text("redirected", (1, 1))]);
    let run = agentest(p.path())
        .env("AGENTEST_LLM_BASE_URL", &server.url())
        .env("AGENTEST_LLM_MODEL", "override-model")
        .run();
    run.expect(0).expect_status("T1", "passed");
    assert_eq!(server.count(), 1);
    assert_eq!(server.requests()[0].body["model"], "override-model");
    let entries = cassette_entries(&p, "T1");
    assert_eq!(entries[0]["request"]["model"], "override-model");
    assert!(
        run.stdout.contains("override-model"),
        "the header names the model:\n{run:?}"
    );
}

fn named_endpoints_have_their_own_overrides_and_agents_their_model() {
    let server = ChatServer::start();
    let closed = format!("http://127.0.0.1:{}/v1", closed_port());
    let p = project(
        "named",
        &conf(&server.url()).rest(&format!(
            "[llms.fast-one]\nbase_url = \"{closed}\"\nmodel = \"fast-model\"\napi_key_env = \"{KEY_VAR}\"\nmax_retries = 0\n\n\
             [agents.quick]\ntype = \"openai\"\nllm = \"fast-one\"\n\n\
             [agents.pinned]\ntype = \"openai\"\nmodel = \"agent-model\"\n"
        )),
        &[
            json!({"id": "T1", "input": "quick one", "agent": "quick"}),
            json!({"id": "T2", "input": "pinned one", "agent": "pinned"}),
        ],
    );
    server.script("quick one", vec![text("fast", (1, 1))]);
    server.script("pinned one", vec![text("pinned", (1, 1))]);
    let run = agentest(p.path())
        .env("AGENTEST_LLMS_FAST_ONE_BASE_URL", &server.url())
        .run();
    run.expect(0);
    assert_eq!(
        server.requests_for("quick one")[0].body["model"],
        "fast-model"
    );
    assert_eq!(
        server.requests_for("pinned one")[0].body["model"],
        "agent-model"
    );
    // The named agent has no system prompt and no tools.
    let r = &server.requests_for("quick one")[0];
    assert_eq!(
        r.messages(),
        &[json!({"role": "user", "content": "quick one"})]
    );
    assert!(r.body.get("tools").is_none(), "{}", r.raw);
}

// ---------------------------------------------------------------------------------------
// 8. Config errors exit 2
// ---------------------------------------------------------------------------------------

fn config_errors_exit_2_before_anything_runs() {
    let server = ChatServer::start();
    let url = server.url();
    let llm = format!("[llm]\nbase_url = \"{url}\"\nmodel = \"m\"\napi_key_env = \"{KEY_VAR}\"\n");
    let table: Vec<(String, &str)> = vec![
        (
            "[agent]\ntype = \"openai\"\n".into(),
            "[agent] is an openai agent but there is no model endpoint: add an [llm] section",
        ),
        (
            format!("{llm}[agent]\ntype = \"openai\"\nllm = \"nope\"\n"),
            "[agent].llm names \"nope\", which is not defined",
        ),
        (
            format!("{llm}[agent]\ntype = \"openai\"\nmax_tool_rounds = 0\n"),
            "`max_tool_rounds` must be at least 1",
        ),
        (
            format!("{llm}temperature = 5\n[agent]\ntype = \"openai\"\n"),
            "[llm].temperature 5 is outside 0..=2",
        ),
        (format!("{llm}modle = \"x\"\n[agent]\ntype = \"openai\"\n"), "modle"),
        (format!("{llm}timeout = \"0s\"\n[agent]\ntype = \"openai\"\n"), "[llm].timeout"),
        (format!("{llm}max_in_flight = 0\n[agent]\ntype = \"openai\"\n"), "[llm].max_in_flight must be at least 1"),
        (
            format!("{llm}[agent]\ntype = \"openai\"\nsystem = \"a\"\nsystem_file = \"b\"\n"),
            "give `system` or `system_file`, not both",
        ),
        (
            format!("{llm}[agent]\ntype = \"openai\"\nurl = \"http://x\"\n"),
            "`url` does not apply to openai agents",
        ),
        (
            format!("{llm}[agent]\ntype = \"openai\"\ntools_file = \"missing.json\"\n"),
            "[agent].tools_file: failed to read",
        ),
        (
            format!("{llm}[agent]\ntype = \"openai\"\ntools = [{{ name = \"flat\" }}]\n"),
            "[agent].tools[0] is not an OpenAI tool schema",
        ),
        (
            format!("{llm}[agent]\ntype = \"openai\"\nmocks = [{{ method = \"x\" }}]\n"),
            "[agent].mocks[0].response",
        ),
        (
            format!("{llm}[agent]\ntype = \"openai\"\nsystem_file = \"nowhere.md\"\n"),
            "[agent].system_file: failed to read",
        ),
        (
            "[llm]\nbase_url = \"${AGENTEST_LLM_TEST_UNSET}\"\nmodel = \"m\"\n[agent]\ntype = \"openai\"\n".into(),
            "environment variable `AGENTEST_LLM_TEST_UNSET` is not set (used in [llm].base_url)",
        ),
        (
            "[llm]\nbase_url = \"http://127.0.0.1:1/v1\"\n[agent]\ntype = \"openai\"\n".into(),
            "[llm] needs `model`",
        ),
    ];
    for (toml, expected) in table {
        let s = scratch("config");
        s.write("agentest.toml", &toml);
        s.cases(&[case("T1", "hello")]);
        let run = agentest(s.path()).run();
        assert_eq!(run.code, 2, "for\n{toml}\n{run:?}");
        assert!(
            run.stderr.contains(expected),
            "expected {expected:?} for\n{toml}\n{run:?}"
        );
        assert!(run.report.is_none(), "nothing ran for\n{toml}\n{run:?}");
    }
    assert_eq!(server.count(), 0);
}

pub fn tests() -> Vec<libtest_mimic::Trial> {
    let module = crate::module_of(module_path!());
    let mut trials: Vec<libtest_mimic::Trial> = answers()
        .into_iter()
        .map(|row| {
            crate::trial(format!("{module}::{}", row.name), move || {
                row.check();
                Ok(libtest_mimic::Completion::Completed)
            })
        })
        .collect();
    trials.extend(crate::trials![
        an_openai_agents_first_byte_is_its_first_model_answer,
        a_pinned_limit_below_the_parallelism_is_said_once,
        an_overloaded_endpoint_gets_fewer_requests_in_flight,
        a_timeout_says_how_long_the_case_waited_for_a_model_slot,
        a_refused_call_is_recorded_and_replayed_as_that_error,
        a_truncated_agent_reply_is_marked_and_never_the_agent_completing,
        requests_carry_the_key_the_model_and_the_settings,
        system_file_and_inline_tools_are_sent,
        the_tool_loop_answers_from_the_mock_and_calls_the_model_again,
        every_mock_matcher_picks_the_right_mock,
        a_mock_error_is_what_the_model_receives,
        a_mock_delay_is_waited_for,
        a_mock_failure_rate_is_reproducible_with_the_seed,
        a_failure_rate_of_one_or_zero_always_or_never_fails,
        an_unmatched_tool_call_fails_the_case_and_lists_the_mocks,
        max_tool_rounds_bounds_the_loop,
        bad_case_mocks_are_load_errors_on_their_line,
        usage_is_summed_over_the_calls_and_turns,
        auto_mode_records_then_replays_offline,
        a_changed_request_misses_its_recording,
        record_mode_rewrites_the_file,
        off_mode_writes_no_file,
        strict_mode_fails_a_passing_case_that_left_entries_unused,
        broken_cassettes_are_errors_naming_the_file_and_line,
        unknown_cassette_modes_and_seeds_are_usage_errors,
        without_a_key_or_a_recording_the_case_is_skipped_outside_ci_and_fails_on_ci,
        on_ci_a_case_without_key_or_recording_fails_naming_the_key_variable,
        record_mode_keeps_the_old_recording_when_the_model_cannot_be_called,
        live_mode_sends_tool_calls_to_the_tools_url,
        live_mode_without_a_tools_url_is_a_clear_error,
        environment_overrides_redirect_the_endpoint_and_the_model,
        named_endpoints_have_their_own_overrides_and_agents_their_model,
        config_errors_exit_2_before_anything_runs,
    ]);
    trials
}
