//! `type = "a2a"` agents against a real a2a-sdk 1.x server (tests/python/a2a_agent.py,
//! pinned in tests/python/requirements.txt): JSON-RPC v1.0, JSON-RPC v0.3 and
//! HTTP+JSON, each also streamed, a task that asks for input once and then completes with a text and a data
//! artifact, and the bad answers each must turn into a named case error.

use std::path::Path;

use serde_json::{json, Value};

use crate::common::project::{self, Cmd};
use crate::common::{framework_python, toml_str, Needs, PyServer, Scratch};

pub fn tests() -> Vec<libtest_mimic::Trial> {
    crate::trials![
        a2a_agents_are_tested_over_each_binding_and_version(needs a2a),
        a2a_table_mistakes_are_config_errors,
    ]
}

/// The key variable the runs set (no agent here uses it).
const KEY: (&str, &str) = ("A2A_UNUSED_KEY", "sk-a2a-unused");

fn agentest(dir: &Path) -> Cmd<'_> {
    project::agentest(dir, KEY)
}

/// The venv with a2a-sdk[http-server].
pub fn a2a() -> Needs {
    framework_python(&["a2a.server.routes", "uvicorn"]).map(|_| ())
}

/// An `[agents.NAME]` table of type a2a at `url`, with `extra` keys.
fn agent(name: &str, url: &str, extra: &str) -> String {
    format!(
        "[agents.{name}]\ntype = \"a2a\"\nurl = {}\n{extra}\n\n",
        toml_str(url)
    )
}

/// The booking conversation: the task asks for the city (awaiting input), the answer
/// completes it with a text artifact and a data artifact (`booking`, whose `nights` the
/// server sends as the protobuf double 2.0).
fn booking(id: &str, agent: &str) -> Value {
    json!({"id": id, "agent": agent, "turns": [
        {"input": "book a room", "assert": {"type": "equals", "value": "Which city?"}},
        {"input": "Paris", "assert": [{"type": "contains", "value": "Booked a room in Paris."},
                                      {"type": "json_path", "path": "$.booking.nights", "value": 2},
                                      {"type": "json_path", "path": "$.booking.city", "value": "Paris"}]}]})
}

/// One run against the real server: every binding and version reaches the same task
/// flow (one context per case, the task continued with its id), a Message answer is a
/// completed turn, and a failed task, a JSON-RPC error, an HTML page and a card naming
/// another host are each a named case error while the other cases pass.
fn a2a_agents_are_tested_over_each_binding_and_version() -> Needs {
    let python = framework_python(&["a2a.server.routes", "uvicorn"])?;
    let s = Scratch::named("a2a", "bindings");
    let received = s.join("received.jsonl");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/a2a_agent.py");
    let server = PyServer::with_python(&python, &script, &[received.as_os_str()]);
    let base = format!("http://127.0.0.1:{}", server.port);
    let config = [
        agent("v1", &base, ""),
        agent("v03", &base, "version = \"0.3\""),
        agent("rest", &base, "binding = \"http+json\""),
        agent("v1-stream", &base, "stream = true"),
        agent("v03-stream", &base, "version = \"0.3\"\nstream = true"),
        agent("rest-stream", &base, "binding = \"rest\"\nstream = true"),
        "[agents.legacy]\ntype = \"a2a\"\ncard = \"legacy-card.json\"\n\n".to_string(),
        agent("html", &format!("{base}/portal"), ""),
        agent("v1-stream-2s", &base, "stream = true\ntimeout = \"2s\""),
        agent("moved", &format!("{base}/moved"), ""),
        agent(
            "moved-ok",
            &format!("{base}/moved"),
            "allow_card_redirect = true",
        ),
    ]
    .concat();
    std::fs::create_dir_all(s.join("suites")).expect("suites");
    s.write("suites/agentest.toml", &config);
    // A v0.3 card in a file (beside the config), without `supportedInterfaces`: its
    // top-level `url`, `preferredTransport` and `protocolVersion` are read.
    let legacy = json!({"name": "booking", "url": format!("{base}/rpc"),
                        "preferredTransport": "JSONRPC", "protocolVersion": "0.3.0"});
    s.write("suites/legacy-card.json", &legacy.to_string());
    s.cases(&[
        booking("book-v1", "v1"),
        booking("book-legacy", "legacy"),
        booking("book-v03", "v03"),
        booking("book-rest", "rest"),
        booking("book-v1-stream", "v1-stream"),
        booking("book-v03-stream", "v03-stream"),
        booking("book-rest-stream", "rest-stream"),
        json!({"id": "fail-stream", "agent": "v1-stream", "input": "fail"}),
        json!({"id": "ping-stream", "agent": "rest-stream", "input": "ping me",
               "assert": {"type": "equals", "value": "pong: ping me"}}),
        json!({"id": "ping", "agent": "v1", "input": "ping me",
               "assert": {"type": "equals", "value": "pong: ping me"}}),
        json!({"id": "fail", "agent": "v1", "input": "fail"}),
        json!({"id": "stall", "agent": "v1", "input": "stall"}),
        json!({"id": "hang", "agent": "v1-stream-2s", "input": "hang"}),
        json!({"id": "fail-v03", "agent": "v03", "input": "fail"}),
        json!({"id": "rpc-error", "agent": "v1", "input": "unsupported"}),
        json!({"id": "html", "agent": "html", "input": "ping"}),
        json!({"id": "moved", "agent": "moved", "input": "ping"}),
        json!({"id": "moved-ok", "agent": "moved-ok", "input": "ping",
               "assert": {"type": "equals", "value": "pong: ping"}}),
    ]);
    let run = agentest(s.path()).run();
    for id in [
        "book-v1",
        "book-legacy",
        "book-v03",
        "book-rest",
        "book-v1-stream",
        "book-v03-stream",
        "book-rest-stream",
        "ping",
        "ping-stream",
        "moved-ok",
    ] {
        run.expect_status(id, "passed");
    }
    run.expect_error(
        "fail",
        &[&format!(
            "A2A agent at {base}/rpc: the task ended TASK_STATE_FAILED: no rooms left"
        )],
    )
    .expect_error(
        "fail-v03",
        &[&format!(
            "A2A agent at {base}/rpc: the task ended failed: no rooms left"
        )],
    )
    .expect_error(
        "fail-stream",
        &[&format!(
            "A2A agent at {base}/rpc: the task ended TASK_STATE_FAILED: no rooms left"
        )],
    )
    .expect_error(
        "stall",
        &[&format!(
            "A2A agent at {base}/rpc: expected a task state of completed, input-required, auth-required, failed, rejected or canceled, got: {{\"state\":\"TASK_STATE_WORKING\""
        )],
    )
    .expect_error(
        "hang",
        &[&format!("the event stream of agent at {base}/rpc sent nothing for 2s")],
    )
    .expect_error(
        "rpc-error",
        &[&format!(
            "A2A agent at {base}/rpc: JSON-RPC error -32004: bookings by pigeon are not supported"
        )],
    )
    .expect_error(
        "html",
        &[
            &format!("agent at {base}/portal/.well-known/agent-card.json answered with a body that is not JSON"),
            "Sign in to continue",
        ],
    )
    .expect_error(
        "moved",
        &[&format!(
            "A2A agent at {base}/moved/.well-known/agent-card.json: expected an endpoint on {base} (where the card came from; set `allow_card_redirect = true` to allow another host), got: http://localhost:{}/rpc",
            server.port
        )],
    );
    for id in [
        "book-v1",
        "book-v03",
        "book-rest",
        "book-v1-stream",
        "book-v03-stream",
        "book-rest-stream",
    ] {
        let c = run.case(id);
        assert_eq!(c["turns"][0]["awaiting_input"], true, "{c}");
        assert_eq!(c["turns"][1]["awaiting_reason"], "completed", "{c}");
        assert_eq!(
            c["turns"][1]["data"],
            json!({"booking": {"nights": 2, "city": "Paris"}}),
            "{c}"
        );
        // File parts are listed in the record, the inline one by size, never its bytes.
        assert_eq!(
            c["turns"][1]["files"],
            json!([{"name": "receipt.txt", "media_type": "text/plain", "bytes": 7, "artifact": "receipt"},
                   {"media_type": "application/pdf", "uri": "https://example.com/r/12.pdf", "artifact": "receipt"}]),
            "{c}"
        );
        assert!(!c.to_string().contains("cm9vbSAxMg"), "no file bytes: {c}");
    }

    // What the server received: per binding and version its method, header and shape;
    // the second turn in the first answer's context and task.
    let lines: Vec<Value> = std::fs::read_to_string(&received)
        .expect("received")
        .lines()
        .map(|l| serde_json::from_str(l).expect("json line"))
        .collect();
    let sent = |case: &str| -> Vec<Value> {
        let tag = format!("agentest-{case}");
        lines
            .iter()
            .filter(|l| {
                let m = &l["body"]["params"]["message"];
                let m = if m.is_null() {
                    &l["body"]["message"]
                } else {
                    m
                };
                // `agentest-{case's id}-{turn}`
                m["messageId"]
                    .as_str()
                    .and_then(|id| id.rsplit_once('-'))
                    .is_some_and(|(head, n)| {
                        n.parse::<u32>().is_ok()
                            && (head == tag || head.ends_with(&format!("::{case}")))
                    })
            })
            .cloned()
            .collect()
    };
    for (case, path, version, method) in [
        ("book-v1", "/rpc", json!("1.0"), json!("SendMessage")),
        ("book-v03", "/rpc", Value::Null, json!("message/send")),
        ("book-legacy", "/rpc", Value::Null, json!("message/send")),
        ("book-rest", "/rest/message:send", json!("1.0"), Value::Null),
        (
            "book-v1-stream",
            "/rpc",
            json!("1.0"),
            json!("SendStreamingMessage"),
        ),
        (
            "book-v03-stream",
            "/rpc",
            Value::Null,
            json!("message/stream"),
        ),
        (
            "book-rest-stream",
            "/rest/message:stream",
            json!("1.0"),
            Value::Null,
        ),
    ] {
        let turns = sent(case);
        assert_eq!(turns.len(), 2, "{case}: {lines:#?}");
        for t in &turns {
            assert_eq!(t["path"], path, "{t}");
            assert_eq!(t["version"], version, "{t}");
            assert_eq!(t["body"]["method"], method, "{t}");
        }
        let message = |t: &Value| {
            let m = &t["body"]["params"]["message"];
            if m.is_null() {
                t["body"]["message"].clone()
            } else {
                m.clone()
            }
        };
        let (first, second) = (message(&turns[0]), message(&turns[1]));
        assert!(first.get("contextId").is_none(), "{first}");
        assert!(first.get("taskId").is_none(), "{first}");
        assert!(second["contextId"].as_str().is_some(), "{second}");
        assert!(second["taskId"].as_str().is_some(), "{second}");
        if version.is_null() {
            assert_eq!(second["role"], "user", "{second}");
            assert_eq!(
                second["parts"],
                json!([{"kind": "text", "text": "Paris"}]),
                "{second}"
            );
        } else {
            assert_eq!(second["role"], "ROLE_USER", "{second}");
            assert_eq!(second["parts"], json!([{"text": "Paris"}]), "{second}");
        }
    }
    drop(server);
    Ok(())
}

/// An a2a table without `url` or `card`, with `stream = "sse"`, or with an unknown
/// binding or version is a config error naming the table and the fix.
fn a2a_table_mistakes_are_config_errors() {
    let s = Scratch::named("a2a", "mistakes");
    s.cases(&[json!({"id": "a", "input": "hi"})]);
    let config = s.join("suites/agentest.toml");
    for (table, expected) in [
        (
            "",
            "[agent] (line 1): an a2a agent needs `url = \"http://...\"` (its base URL: the card is read from /.well-known/agent-card.json) or `card` (a card URL or file)",
        ),
        (
            "url = \"http://127.0.0.1:1\"\nstream = \"sse\"\n",
            "[agent] (line 1): `stream` of an a2a agent is true (SendStreamingMessage / message/stream) or false (SendMessage / message/send)",
        ),
        (
            "url = \"http://127.0.0.1:1\"\nbinding = \"grpc\"\n",
            "[agent] (line 1): `binding` of an a2a agent is \"jsonrpc\" or \"http+json\" (\"rest\"), not \"grpc\"",
        ),
        (
            "url = \"http://127.0.0.1:1\"\nversion = \"2.0\"\n",
            "[agent] (line 1): `version` of an a2a agent is \"1.0\" or \"0.3\", not \"2.0\"",
        ),
        (
            "url = \"http://127.0.0.1:1\"\nassistant_id = \"x\"\n",
            "[agent] (line 1): `assistant_id` does not apply to a2a agents; remove it or change `type`",
        ),
    ] {
        s.write(
            "suites/agentest.toml",
            &format!("[agent]\ntype = \"a2a\"\n{table}"),
        );
        let r = agentest(s.path()).arg("--dry-run").run();
        assert_eq!(r.code, 2, "{r:?}");
        assert!(
            r.stderr.contains(&format!(
                "error: invalid config {}: {expected}",
                config.display()
            )),
            "{r:?}"
        );
    }
}
