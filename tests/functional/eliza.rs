//! `type = "eliza"` agents: against a real ElizaOS 1.7.2 server (@elizaos/server with
//! plugin-bootstrap, plugin-sql on embedded PGlite, and plugin-openai pointed at a
//! scripted model on loopback; installed by .ci/run from tests/eliza/package.json), and,
//! for the bad answers a real server cannot be made to give on purpose, against a
//! STAND-IN that follows the server's documented sessions API
//! (tests/python/eliza_standin.py, Starlette + uvicorn): each is a named case error
//! while the other cases pass.

use std::path::Path;

use serde_json::{json, Value};

use crate::common::eliza::{eliza_dir, eliza_server, ElizaServer};
use crate::common::project::{self, Cmd};
use crate::common::{framework_python, toml_str, Needs, PyServer, Scratch};

pub fn tests() -> Vec<libtest_mimic::Trial> {
    crate::trials![
        a_real_elizaos_server_is_tested_through_its_sessions_api(needs eliza_server),
        eliza_agents_map_replies_and_name_bad_answers_against_a_standin(needs standin),
        eliza_table_mistakes_are_config_errors,
    ]
}

/// The API key the runs set: the stand-in's `X-API-KEY`.
const KEY: (&str, &str) = ("ELIZA_TEST_KEY", "sk-eliza-4f1d");

fn agentest(dir: &Path) -> Cmd<'_> {
    project::agentest(dir, KEY)
}

/// The venv with Starlette and uvicorn (the stand-in's server).
pub fn standin() -> Needs {
    framework_python(&["starlette", "uvicorn"]).map(|_| ())
}

/// A real ElizaOS server's agent, by name, through its sessions API: a session per case
/// that keeps the conversation (and only the case's), replies with their actions and
/// thought, streamed and waited for, a scenario's trajectory; the server's own refusals
/// (a wrong key, an agent that chose IGNORE) named case errors.
fn a_real_elizaos_server_is_tested_through_its_sessions_api() -> Needs {
    eliza_dir()?;
    let s = Scratch::named("eliza", "real");
    let server = ElizaServer::start(&s, KEY.1);
    let base = server.url();
    let config = [
        format!(
            "[agent]\ntype = \"eliza\"\nurl = {}\nagent_id = \"Ada\"\nheaders = {{ X-API-KEY = \"${{{}}}\" }}\ntimeout = \"60s\"\n",
            toml_str(&base),
            KEY.0
        ),
        agent("streamed", &base, "agent_id = \"Ada\"\nstream = true"),
        format!(
            "[agents.wrong-key]\ntype = \"eliza\"\nurl = {}\nagent_id = \"Ada\"\nheaders = {{ X-API-KEY = \"not-the-key\" }}\nretries = 0\n",
            toml_str(&base)
        ),
    ]
    .join("\n");
    s.write("suites/agentest.toml", &config);
    s.cases(&[
        json!({"id": "two-turns", "turns": [
            {"input": "hello one", "assert": {"type": "equals",
                "value": "Ada heard: hello one (1 in this conversation, first: hello one)"}},
            {"input": "and two", "assert": {"type": "equals",
                "value": "Ada heard: and two (2 in this conversation, first: hello one)"}}]}),
        json!({"id": "other", "input": "hello other", "assert": {"type": "equals",
            "value": "Ada heard: hello other (1 in this conversation, first: hello other)"}}),
        json!({"id": "streamed", "agent": "streamed", "input": "stream please",
               "assert": {"type": "contains", "value": "Ada heard: stream please"}}),
        json!({"id": "ignored", "input": "please ignore this"}),
        json!({"id": "wrong-key", "agent": "wrong-key", "input": "hello"}),
    ]);
    s.write(
        "suites/greet.scenario.yaml",
        "name: 'Greets'\ndescription: 'Ada answers'\nenvironment:\n  type: local\n\
         run:\n  - input: 'hello scenario'\n    evaluations:\n      - type: trajectory_contains_action\n        action: REPLY\n\
         \x20     - type: string_contains\n        value: 'Ada heard: hello scenario'\n\
         judgment:\n  strategy: all_pass\n",
    );
    let run = agentest(s.path()).run();
    run.expect(1);
    for id in ["two-turns", "other", "streamed"] {
        run.expect_status(id, "passed");
    }
    assert_eq!(run.record("greet::greets")["status"], "passed");
    let two = run.case("two-turns");
    assert_eq!(two["turns"][0]["actions"], json!(["REPLY"]), "{two}");
    assert_eq!(two["turns"][0]["thought"], "replying to hello one", "{two}");
    // An agent that chose IGNORE: ElizaOS 1.7.2 answers it with a 500.
    run.expect_error(
        "ignored",
        &[&format!(
            "agent at {base}/api/messaging/sessions/"
        ), "/messages answered HTTP 500 Internal Server Error: {\"success\":false,\"error\":\"Failed to process message in HTTP transport\"}"],
    )
    .expect_error(
        "wrong-key",
        &[&format!("agent at {base}/api/agents answered HTTP 401 Unauthorized: "), "API key required"],
    );
    // One model call per message, with no prompt holding another case's words.
    let prompts = std::fs::read_to_string(&server.prompts).expect("the model's prompts");
    let prompts: Vec<&str> = prompts
        .split("\n=====\n")
        .filter(|p| !p.is_empty())
        .collect();
    assert_eq!(prompts.len(), 6, "{prompts:?}");
    assert!(
        prompts
            .iter()
            .filter(|p| p.contains("hello other"))
            .all(|p| !p.contains("hello one")),
        "a case's conversation held another's"
    );
    drop(server);
    Ok(())
}

/// An `eliza` table.
fn agent(name: &str, url: &str, extra: &str) -> String {
    format!(
        "[agents.{name}]\ntype = \"eliza\"\nurl = {}\nheaders = {{ X-API-KEY = \"${{{}}}\" }}\nretries = 0\n{extra}\n",
        toml_str(url),
        KEY.0
    )
}

/// Every mapping and every bad answer, against the stand-in: replies with their actions
/// and thought, a name looked up once, a session and a fresh user per case, streamed
/// replies timed at their first chunk; and each bad answer a case error naming the URL,
/// what was expected and what came, with the other cases unaffected.
fn eliza_agents_map_replies_and_name_bad_answers_against_a_standin() -> Needs {
    let python = framework_python(&["starlette", "uvicorn"])?;
    let s = Scratch::named("eliza", "standin");
    let received = s.join("received.jsonl");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/eliza_standin.py");
    let server = PyServer::with_python(&python, &script, &[received.as_os_str()]);
    let base = format!("http://127.0.0.1:{}", server.port);
    let echo = "2f0a8c55-1b7e-4c8e-8e0b-7d5c1a9e3b22";
    let config = [
        format!(
            "[agent]\ntype = \"eliza\"\nurl = {}\nagent_id = \"ada\"\nheaders = {{ X-API-KEY = \"${{{}}}\" }}\n",
            toml_str(&base),
            KEY.0
        ),
        agent("streamed", &base, "agent_id = \"Ada\"\nstream = true"),
        agent("echo", &base, &format!("agent_id = \"{echo}\"")),
        agent("nobody", &base, "agent_id = \"Zed\""),
        agent("twin", &base, "agent_id = \"Twin\""),
    ]
    .join("\n");
    s.write("suites/agentest.toml", &config);
    let cases = [
        json!({"id": "hello", "turns": [
            {"input": "hello there", "assert": {"type": "equals", "value": "Hi! You said: hello there"}},
            {"input": "hello again", "assert": {"type": "contains", "value": "hello again"}}]}),
        json!({"id": "by-id", "agent": "echo", "input": "hello echo",
               "assert": {"type": "contains", "value": "hello echo"}}),
        json!({"id": "streamed", "agent": "streamed", "input": "hello in five words",
               "assert": {"type": "equals", "value": "Hi! You said: hello in five words"}}),
        json!({"id": "ignore", "input": "ignore"}),
        json!({"id": "blank", "input": "blank"}),
        json!({"id": "crash", "input": "crash"}),
        json!({"id": "cut", "agent": "streamed", "input": "cut"}),
        json!({"id": "oops", "agent": "streamed", "input": "oops"}),
        json!({"id": "expired", "input": "hello"}),
        json!({"id": "nobody", "agent": "nobody", "input": "hello"}),
        json!({"id": "twin", "agent": "twin", "input": "hello"}),
    ];
    s.cases(&cases);
    // An ElizaOS scenario against the same agent: its actions are the trajectory.
    s.write(
        "suites/greet.scenario.yaml",
        "name: 'Greets'\ndescription: 'The agent greets back'\nenvironment:\n  type: local\n\
         run:\n  - input: 'hello scenario'\n    evaluations:\n      - type: trajectory_contains_action\n        action: REPLY\n\
         \x20     - type: string_contains\n        value: 'Hi!'\n  - input: 'hello twice'\n    evaluations:\n\
         \x20     - type: trajectory_contains_action\n        action: SEND_EMAIL\n\
         judgment:\n  strategy: all_pass\n",
    );
    let run = agentest(s.path()).run();
    run.expect(1);
    for id in ["hello", "by-id", "streamed"] {
        run.expect_status(id, "passed");
    }
    let at = |session_path: &str| {
        format!("ElizaOS agent at {base}/api/messaging/sessions/{session_path}")
    };
    let messages = "/messages: expected";
    run.expect_error(
        "ignore",
        &[
            &at(""),
            &format!("{messages} the agent's reply (`agentResponse` with `text` or `actions`; none means the agent chose not to answer), got: {{\"success\":true,\"userMessage\""),
        ],
    )
    .expect_error(
        "blank",
        &[&format!(
            "{messages} a reply with `text` or `actions`, got: {{\"thought\":\"nothing to say\"}}"
        )],
    )
    .expect_error(
        "crash",
        &[
            "answered HTTP 500 Internal Server Error",
            "Failed to process message in sync mode",
        ],
    )
    .expect_error(
        "cut",
        &[&format!(
            "{messages} a `done` event ending the stream, got: \"(the stream ended without one, after: …)\""
        )],
    )
    .expect_error("oops", &["/messages: model provider unreachable"])
    .expect_error("expired", &["answered HTTP 404 Not Found", "Session not found"])
    .expect_error(
        "nobody",
        &[&format!(
            "ElizaOS server at {base}/api/agents: no agent named \"Zed\" (it runs \"Ada\", \"Echo\", \"Twin\", \"Twin\"); set `agent_id` to one of these names or to an agent's UUID"
        )],
    )
    .expect_error(
        "twin",
        &[&format!(
            "ElizaOS server at {base}/api/agents: 2 agents are named \"Twin\" (9a1b2c3d-4e5f-4a6b-8c7d-0e1f2a3b4c55, 0b1c2d3e-4f5a-4b6c-9d7e-1f2a3b4c5d66); set `agent_id` to the UUID of the one to test"
        )],
    );

    // The record: the reply's actions and thought beside its text.
    let hello = run.case("hello");
    assert_eq!(hello["turns"][0]["actions"], json!(["REPLY"]), "{hello}");
    assert_eq!(hello["turns"][0]["thought"], "greet them", "{hello}");
    // Streamed: the first chunk came well before the `done` event (chunks 100 ms apart).
    let streamed = &run.case("streamed")["turns"][0];
    let first = streamed["first_token_ms"].as_u64().expect("first_token_ms");
    let whole = streamed["duration_ms"].as_u64().expect("duration_ms");
    assert!(
        first + 300 <= whole,
        "{first} ms, then {whole} ms: {streamed}"
    );

    // The scenario: REPLY is in the first step's trajectory, SEND_EMAIL in no step's.
    let scenario = run.record("greet::greets");
    assert_eq!(scenario["status"], "failed", "{scenario}");
    assert_eq!(
        scenario["error"],
        "step 2: trajectory_contains_action \"SEND_EMAIL\": expected the action SEND_EMAIL; the agent's were: REPLY (judgment: all_pass)",
        "{scenario}"
    );
    assert_eq!(
        scenario["turns"][0]["assertions"][0]["passed"], true,
        "{scenario}"
    );

    // What the server received.
    let lines: Vec<Value> = std::fs::read_to_string(&received)
        .expect("received")
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect();
    // The name is looked up once per agent table, the UUID never.
    let lookups = lines.iter().filter(|l| l["path"] == "/api/agents").count();
    assert_eq!(lookups, 4, "ada, streamed, nobody, twin: {lines:?}");
    // Every request carries the key; one session per case, each for a user of its own.
    assert!(lines.iter().all(|l| l["key"] == KEY.1), "{lines:?}");
    let made: Vec<&Value> = lines
        .iter()
        .filter(|l| l["path"] == "/api/messaging/sessions")
        .map(|l| &l["body"])
        .collect();
    let users: std::collections::BTreeSet<&str> =
        made.iter().filter_map(|b| b["userId"].as_str()).collect();
    assert_eq!(users.len(), made.len(), "a user per session: {made:?}");
    let for_case = |id: &str| -> Vec<&Value> {
        made.iter()
            .copied()
            .filter(|b| b["metadata"]["test_id"] == id)
            .collect()
    };
    assert_eq!(for_case("hello").len(), 1, "{made:?}");
    assert_eq!(for_case("by-id")[0]["agentId"], echo);
    assert_eq!(
        for_case("hello")[0]["agentId"],
        "6c5cf7c4-5a4e-4d0e-9a59-0d0c3e2b7a11"
    );
    let sent: Vec<&Value> = lines
        .iter()
        .filter(|l| l["path"].as_str().is_some_and(|p| p.ends_with("/messages")))
        .map(|l| &l["body"])
        .collect();
    let hello_sent: Vec<(&str, &str)> = sent
        .iter()
        .filter(|b| b["metadata"]["test_id"] == "hello")
        .map(|b| {
            (
                b["content"].as_str().unwrap_or(""),
                b["transport"].as_str().unwrap_or(""),
            )
        })
        .collect();
    assert_eq!(
        hello_sent,
        [("hello there", "http"), ("hello again", "http")]
    );
    assert!(
        sent.iter()
            .any(|b| b["metadata"]["test_id"] == "streamed" && b["transport"] == "sse"),
        "{sent:?}"
    );
    // The key reached the server, never a file.
    for file in s.files() {
        let text = std::fs::read(&file).unwrap_or_default();
        if file != received {
            assert!(
                !String::from_utf8_lossy(&text).contains(KEY.1),
                "the key is in {}",
                file.display()
            );
        }
    }
    drop(server);
    Ok(())
}

/// An `eliza` table without `agent_id`, with a `stream` that is not a flag, or with
/// another kind's key is a config error naming the fix.
fn eliza_table_mistakes_are_config_errors() {
    for (table, expected) in [
        (
            "[agent]\ntype = \"eliza\"\nurl = \"http://127.0.0.1:3000\"\n",
            "an eliza agent needs `agent_id`: the agent's UUID, or its name as `GET /api/agents` lists it",
        ),
        (
            "[agent]\ntype = \"eliza\"\nurl = \"http://127.0.0.1:3000\"\nagent_id = \"Ada\"\nstream = \"sse\"\n",
            "`stream` of an eliza agent is true (transport \"sse\": the reply streamed) or false (transport \"http\": the reply waited for)",
        ),
        (
            "[agent]\ntype = \"eliza\"\nurl = \"http://127.0.0.1:3000\"\nagent_id = \"Ada\"\nassistant_id = \"x\"\n",
            "`assistant_id`",
        ),
        (
            "[agent]\ntype = \"eliza\"\nagent_id = \"Ada\"\n",
            "an http, langgraph or eliza agent needs `url = \"http://...\"`",
        ),
    ] {
        let s = Scratch::named("eliza", "config");
        s.write("suites/agentest.toml", table);
        s.cases(&[json!({"id": "a", "input": "hi"})]);
        let run = agentest(s.path()).arg("--dry-run").run();
        run.expect(2).expect_stderr(expected);
    }
}
