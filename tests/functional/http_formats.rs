//! `type = "http"` agents that do not speak agentest's body: `format = "openai-chat"`
//! (against the scripted chat server, and the real model server) and `format = "custom"`
//! (a real Starlette app served by uvicorn, tests/python/custom_agent.py), as JSON and
//! as `stream = "sse"`, with the bad answers each must turn into a named case error.

use std::path::Path;

use serde_json::{json, Value};

use crate::common::chat::{chunk, completion, ok, sse, tool_call_json, ChatServer};
use crate::common::project::{self, Cmd};
use crate::common::{framework_python, toml_str, Needs, PyServer, Scratch};

/// The key variable the runs set (no agent here uses it).
const KEY: (&str, &str) = ("HTTPFMT_UNUSED_KEY", "sk-httpfmt-unused");

fn agentest(dir: &Path) -> Cmd<'_> {
    project::agentest(dir, KEY)
}

/// A scratch project with `config` and these cases in the suite.
fn project(tag: &str, config: &str, cases: &[Value]) -> Scratch {
    let s = Scratch::named("httpfmt", tag);
    s.write("suites/agentest.toml", config);
    s.cases(cases);
    s
}

/// `format = "openai-chat"`: the history goes as `messages` with the `body`'s extra
/// fields (placeholders filled), `choices[0].message` is the reply with its tool calls
/// and usage; streamed, the chunks' deltas are joined (tool-call fragments by index) up
/// to `data: [DONE]`, and a stream without it is a case error.
fn openai_chat_agents_send_the_history_and_read_the_completion() {
    let server = ChatServer::start();
    let base = server.url();
    let message = json!({"role": "assistant", "content": "Filed it.",
        "tool_calls": [tool_call_json("c1", "create_expense", &json!({"amount": 35}))]});
    server.script("file it", vec![ok(completion(message, "stop", (21, 6)))]);
    server.script(
        "stream it",
        vec![sse(&[
            chunk(json!({"role": "assistant", "content": "Str"})),
            chunk(json!({"content": "eamed."})),
            chunk(
                json!({"tool_calls": [{"index": 0, "id": "c1", "function": {"name": "look", "arguments": "{\"q\":"}}]}),
            ),
            chunk(json!({"tool_calls": [{"index": 0, "function": {"arguments": "\"x\"}"}}]})),
            json!({"object": "chat.completion.chunk", "choices": [], "usage": {"prompt_tokens": 9, "completion_tokens": 4}}).to_string(),
            "[DONE]".into(),
        ])],
    );
    server.script("cut short", vec![sse(&[chunk(json!({"content": "Half"}))])]);
    let agent = |name: &str, extra: &str| {
        format!(
            "[agents.{name}]\ntype = \"http\"\nformat = \"openai-chat\"\nurl = {}\n{extra}\nbody = {{ model = \"assistant-7\", chat_id = \"{{{{session_id}}}}\", user = \"{{{{metadata.user}}}}\" }}\n\n",
            toml_str(&format!("{base}/chat/completions"))
        )
    };
    let config = agent("chat", "") + &agent("chat-sse", "stream = \"sse\"");
    let p = project(
        "openai-chat",
        &config,
        &[
            json!({"id": "json", "agent": "chat", "metadata": {"user": "ada"},
                   "turns": [{"input": "file it", "assert": [{"type": "tool_called", "name": "create_expense"},
                                                              {"type": "contains", "value": "Filed it."}]}]}),
            json!({"id": "streamed", "agent": "chat-sse", "input": "stream it",
                   "assert": [{"type": "tool_called", "name": "look"}, {"type": "contains", "value": "Streamed."}]}),
            json!({"id": "unfinished", "agent": "chat-sse", "input": "cut short"}),
        ],
    );
    let run = agentest(p.path()).run();
    run.expect_status("json", "passed")
        .expect_status("streamed", "passed")
        .expect_error(
            "unfinished",
            &["ended before `data: [DONE]`; an incomplete answer is not taken"],
        );
    let json = run.case("json");
    assert_eq!(
        json["turns"][0]["tool_calls"][0]["name"], "create_expense",
        "{run:?}"
    );
    assert_eq!(json["usage"]["agent"]["prompt_tokens"], 21, "{run:?}");
    assert_eq!(json["usage"]["agent"]["completion_tokens"], 6, "{run:?}");
    let streamed = run.case("streamed");
    assert_eq!(
        streamed["turns"][0]["tool_calls"][0]["arguments"],
        json!({"q": "x"}).to_string(),
        "{run:?}"
    );
    assert_eq!(streamed["usage"]["agent"]["prompt_tokens"], 9, "{run:?}");

    let sent = &server.bodies("file it")[0];
    assert_eq!(sent["model"], "assistant-7");
    assert_eq!(sent["user"], "ada");
    assert!(
        sent["chat_id"]
            .as_str()
            .is_some_and(|s| s.starts_with("agentest-")),
        "{sent}"
    );
    assert_eq!(
        sent["messages"],
        json!([{"role": "user", "content": "file it"}])
    );
    assert!(sent.get("stream").is_none(), "{sent}");
    let sent = &server.bodies("stream it")[0];
    assert_eq!(sent["stream"], true);
    assert_eq!(sent["stream_options"], json!({"include_usage": true}));
}

/// The real-model lane's check (see real_model.rs).
fn real_model() -> Needs {
    crate::real_model::real_model()
}

/// `format = "openai-chat"` against the real model server, as JSON and streamed: each
/// answer is a reply whose usage is what the server counted.
fn openai_chat_agents_talk_to_the_real_model_server() -> Needs {
    real_model()?;
    let _turn = crate::real_model::exclusive();
    let base = std::env::var("AGENTEST_REALLLM_URL").expect("checked");
    let url = toml_str(&format!("{}/chat/completions", base.trim_end_matches('/')));
    let config = format!(
        "[run]\ntimeout = \"150s\"\nconcurrency = 1\n\n\
         [agents.real]\ntype = \"http\"\nformat = \"openai-chat\"\nurl = {url}\ntimeout = \"120s\"\nbody = {{ model = \"smollm2\", max_tokens = 24 }}\n\n\
         [agents.real-sse]\ntype = \"http\"\nformat = \"openai-chat\"\nurl = {url}\ntimeout = \"120s\"\nstream = \"sse\"\nbody = {{ model = \"smollm2\", max_tokens = 24 }}\n"
    );
    let p = project(
        "real",
        &config,
        &[
            json!({"id": "json", "agent": "real", "turns": [{"input": "Say hello."}, {"input": "Again."}]}),
            json!({"id": "streamed", "agent": "real-sse", "turns": [{"input": "Say hello."}, {"input": "Again."}]}),
        ],
    );
    let run = agentest(p.path()).run();
    for id in ["json", "streamed"] {
        run.expect_status(id, "passed");
        let case = run.case(id);
        let turns = case["turns"].as_array().expect("turns");
        assert_eq!(turns.len(), 2, "{run:?}");
        for turn in turns {
            assert!(
                turn["output"]
                    .as_str()
                    .is_some_and(|o| !o.trim().is_empty()),
                "{run:?}"
            );
        }
    }
    // The second turn's prompt holds the first: the history went along. (Streamed, this
    // server, llama-cpp-python, sends no usage chunk despite `include_usage`.)
    let turns = &run.case("json")["turns"];
    let prompt = |t: usize| turns[t]["usage"]["input_tokens"].as_u64().unwrap_or(0);
    assert!(prompt(0) > 0 && prompt(1) > prompt(0), "{run:?}");
    Ok(())
}

/// The venv with Starlette and uvicorn.
fn starlette() -> Needs {
    framework_python(&["starlette", "uvicorn"]).map(drop)
}

/// The custom agent's tables: `body` and `[reply]` for its JSON and SSE routes, and its
/// `[session]` request.
fn custom_agent(name: &str, base: &str, route: &str, extra: &str, reply: &str) -> String {
    format!(
        "[agents.{name}]\ntype = \"http\"\nformat = \"custom\"\nurl = {}\n{extra}\n\
         body = {{ query = \"{{{{input}}}}\", conversation = \"{{{{session.id}}}}\", history = \"{{{{messages}}}}\", turn = \"{{{{turn}}}}\", \
         user = {{ name = \"{{{{metadata.user}}}}\", tag = \"case {{{{test_id}}}} turn {{{{turn}}}}\" }}, key = \"${{CUSTOM_AGENT_KEY}}\" }}\n\n\
         [agents.{name}.session]\nurl = {}\nbody = {{ case = \"{{{{test_id}}}}\" }}\nid = \"$.conversation.id\"\n\n\
         [agents.{name}.reply]\n{reply}\n\n",
        toml_str(&format!("{base}{route}")),
        toml_str(&format!("{base}/conversations")),
    )
}

/// `format = "custom"` against a real ASGI app: the body template with every kind of
/// placeholder, the `[session]` id once per case, reply paths for content, awaiting
/// input, tool calls with results and usage, the same over SSE; and the bad answers (a
/// path matching nothing, HTML, a stream that never ends), each a named case error that
/// leaves the other cases alone.
fn custom_agents_map_their_own_body_and_answer() -> Needs {
    let python = framework_python(&["starlette", "uvicorn"])?;
    let s = Scratch::named("httpfmt", "custom");
    let received = s.join("received.jsonl");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/custom_agent.py");
    let server = PyServer::with_python(&python, &script, &[received.as_os_str()]);
    let base = format!("http://127.0.0.1:{}", server.port);
    let json_reply = "content = \"$.answer.text\"\nawaiting_input = \"$.state.waiting\"\n\
        tool_calls = { path = \"$.steps[*]\", name = \"$.tool\", arguments = \"$.args\", result = \"$.output\" }\n\
        usage = { input_tokens = \"$.meta.tokens.in\", output_tokens = \"$.meta.tokens.out\" }";
    let sse_reply = "content = \"$.delta\"\n\
        tool_calls = { path = \"$.step\", name = \"$.tool\", arguments = \"$.args\", result = \"$.output\" }\n\
        usage = { input_tokens = \"$.tokens.in\", output_tokens = \"$.tokens.out\" }";
    let config = [
        custom_agent("rest", &base, "/chat", "", json_reply),
        custom_agent(
            "rest-sse",
            &base,
            "/chat/stream",
            "stream = \"sse\"",
            sse_reply,
        ),
        custom_agent(
            "missing",
            &base,
            "/chat",
            "",
            "content = \"$.answer.nothing\"",
        ),
        custom_agent("html", &base, "/html", "", "content = \"$.answer.text\""),
        custom_agent(
            "hang",
            &base,
            "/hang",
            "stream = \"sse\"\ntimeout = \"2s\"",
            "content = \"$.delta\"",
        ),
    ]
    .concat();
    std::fs::create_dir_all(s.join("suites")).expect("suites");
    s.write("suites/agentest.toml", &config);
    s.cases(&[
        json!({"id": "rest", "agent": "rest", "metadata": {"user": "ada"},
               "turns": [{"input": "hello", "assert": [{"type": "contains", "value": "you said: hello"},
                                                        {"type": "tool_called", "name": "lookup", "arguments": {"q": "hello"}}]},
                         {"input": "and you?"}]}),
        json!({"id": "streamed", "agent": "rest-sse", "input": "stream me",
               "assert": {"type": "tool_called", "name": "lookup"}}),
        json!({"id": "missing", "agent": "missing", "input": "hello"}),
        json!({"id": "html", "agent": "html", "input": "hello"}),
        json!({"id": "hang", "agent": "hang", "input": "hello"}),
    ]);
    let run = agentest(s.path())
        .env("CUSTOM_AGENT_KEY", "custom-key-1234")
        .run();
    run.expect_status("rest", "passed")
        .expect_status("streamed", "passed")
        .expect_error(
            "missing",
            &[&format!("agent at {base}/chat answered, but reply.content = \"$.answer.nothing\" matches nothing in the answer: {{\"answer\":{{\"text\":")],
        )
        .expect_error("html", &["answered with a body that is not JSON", "Welcome to nginx!"])
        .expect_error(
            "hang",
            &[&format!("the event stream of agent at {base}/hang sent nothing for 2s (the agent's reply timeout) before it ended")],
        );

    // What the server received: one session per case, then each turn's templated body.
    let lines: Vec<Value> = std::fs::read_to_string(&received)
        .expect("received")
        .lines()
        .map(|l| serde_json::from_str(l).expect("json line"))
        .collect();
    let of = |case: &str, path: &str| -> Vec<Value> {
        lines
            .iter()
            .filter(|l| l["path"] == path)
            .filter(|l| {
                l["body"]["case"] == case
                    || l["body"]["user"]["tag"]
                        .as_str()
                        .is_some_and(|t| t.starts_with(&format!("case {case} ")))
            })
            .cloned()
            .collect()
    };
    let sessions = of("rest", "/conversations");
    assert_eq!(sessions.len(), 1, "one session request per case: {lines:?}");
    let id = sessions[0]["id"]
        .as_str()
        .expect("the session's id")
        .to_string();
    let turns = of("rest", "/chat");
    assert_eq!(turns.len(), 2, "{lines:?}");
    let first = &turns[0]["body"];
    assert_eq!(first["query"], "hello");
    assert_eq!(first["conversation"], id.as_str());
    assert_eq!(
        first["turn"], 1,
        "a whole-string placeholder keeps the number"
    );
    assert_eq!(
        first["history"],
        json!([{"role": "user", "content": "hello"}])
    );
    assert_eq!(
        first["user"],
        json!({"name": "ada", "tag": "case rest turn 1"})
    );
    assert_eq!(first["key"], "custom-key-1234");
    let second = &turns[1]["body"];
    assert_eq!(second["conversation"], id.as_str());
    assert_eq!(second["turn"], 2);
    assert_eq!(second["history"].as_array().map(Vec::len), Some(3));

    let rest = run.case("rest");
    let turn = &rest["turns"][0];
    assert_eq!(turn["output"], format!("[{id}] you said: hello"), "{run:?}");
    assert_eq!(
        turn["tool_calls"],
        json!([{"name": "lookup", "arguments": {"q": "hello"}, "result": {"hits": 5}}]),
        "{run:?}"
    );
    assert_eq!(rest["turns"][1]["awaiting_input"], true, "{run:?}");
    assert_eq!(
        rest["usage"]["agent"],
        json!({"prompt_tokens": 22, "completion_tokens": 14}),
        "{run:?}"
    );
    let streamed = run.case("streamed");
    let sid = of("streamed", "/conversations")[0]["id"].clone();
    assert_eq!(
        streamed["turns"][0]["output"],
        format!("[{}] you said: stream me", sid.as_str().unwrap_or("")),
        "{run:?}"
    );
    assert_eq!(
        streamed["turns"][0]["tool_calls"][0]["result"],
        json!({"hits": 9}),
        "{run:?}"
    );
    assert_eq!(
        streamed["usage"]["agent"],
        json!({"prompt_tokens": 11, "completion_tokens": 7}),
        "{run:?}"
    );
    // The secret in the body template never reaches the report.
    assert!(!run
        .report
        .as_deref()
        .unwrap_or("")
        .contains("custom-key-1234"));
    drop(server);
    Ok(())
}

/// A body template's unknown placeholder, a `{{session.id}}` without a `[session]`, an
/// invalid reply path and a custom agent without `reply` are config errors at load,
/// naming the table and listing what is known; no case runs.
fn bad_wire_keys_are_config_errors_naming_the_table() {
    let cases = [json!({"id": "a", "input": "hi"})];
    for (tag, agent, expected) in [
        (
            "placeholder",
            "format = \"custom\"\nbody = { q = \"{{inptu}}\" }\nreply = { content = \"$.a\" }",
            "body.q: unknown placeholder {{inptu}}; the known ones are {{input}}, {{messages}}, {{session_id}}, {{test_id}}, {{turn}}, {{metadata}}, {{metadata.KEY}}, {{options}}, {{options.KEY}}",
        ),
        (
            "session",
            "format = \"openai-chat\"\nbody = { chat_id = \"{{session.id}}\" }",
            "body.chat_id: unknown placeholder {{session.id}}; the known ones are {{input}}, {{messages}}, {{session_id}}, {{test_id}}, {{turn}}, {{metadata}}, {{metadata.KEY}}, {{options}}, {{options.KEY}} ({{session.id}} needs a [session] table",
        ),
        (
            "path",
            "format = \"custom\"\nbody = { q = \"{{input}}\" }\nreply = { content = \"$.a[\" }",
            "reply.content: invalid JSONPath \"$.a[\"",
        ),
        (
            "noreply",
            "format = \"custom\"\nbody = { q = \"{{input}}\" }",
            "format = \"custom\" needs `reply`",
        ),
    ] {
        let config = format!("[agent]\ntype = \"http\"\nurl = \"http://127.0.0.1:9/\"\n{agent}\n");
        let p = project(tag, &config, &cases);
        let run = agentest(p.path()).run();
        assert_eq!(run.code, 2, "{tag}: {run:?}");
        assert!(run.stderr.contains("[agent]"), "{tag}: {run:?}");
        assert!(run.stderr.contains(expected), "{tag}: expected {expected:?} in:\n{run:?}");
    }
}

pub fn tests() -> Vec<libtest_mimic::Trial> {
    crate::trials![
        openai_chat_agents_send_the_history_and_read_the_completion,
        openai_chat_agents_talk_to_the_real_model_server(needs real_model),
        custom_agents_map_their_own_body_and_answer(needs starlette),
        bad_wire_keys_are_config_errors_naming_the_table,
    ]
}
