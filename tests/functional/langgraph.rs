//! `type = "langgraph"` agents against a real LangGraph Agent Server: `langgraph dev`
//! (langgraph-cli[inmem], pinned in tests/python/requirements.txt) serving the graph of
//! tests/python/langgraph_agent/ (a model node, a ToolNode, a node that calls
//! `interrupt()`), whose model is the scripted chat-completions server on loopback.

use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::{json, Value};

use crate::common::chat::{call, status, text, Action, ChatServer};
use crate::common::{
    finish, framework_python, toml_str, LangGraphDev, Needs, Report, Run, Scratch, BIN,
    LANGGRAPH_MODULES,
};

pub fn tests() -> Vec<libtest_mimic::Trial> {
    crate::trials![
        a_langgraph_server_is_tested_through_its_api(needs langgraph),
        an_evalstudio_langgraph_connector_is_the_agent_by_itself(needs langgraph),
        a_langgraph_agent_on_the_real_model_streams_its_tokens(needs langgraph_and_real_model),
        langgraph_table_mistakes_are_config_errors,
    ]
}

/// The Python modules `langgraph dev` and the graph need.
const MODULES: &[&str] = LANGGRAPH_MODULES;

/// The venv with langgraph-cli[inmem].
pub fn langgraph() -> Needs {
    framework_python(MODULES).map(|_| ())
}

/// The venv with langgraph-cli[inmem], and the real model server.
pub fn langgraph_and_real_model() -> Needs {
    langgraph()?;
    crate::real_model::real_model()
}

fn agentest(dir: &Path, args: &[&str]) -> Run {
    let mut cmd = Command::new(BIN);
    cmd.current_dir(dir)
        .args(args)
        .env("AGENTEST_STORE", dir.join("runs.db"))
        .env("LG_USER", "user-7")
        .env_remove("AGENTEST_CASSETTES")
        .env_remove("CI")
        .stdin(Stdio::null());
    finish(&mut cmd)
}

/// The system message the graph's model node sent on the first request of `route`.
fn system_prompt(model: &ChatServer, route: &str) -> String {
    let bodies = model.bodies(route);
    let first = bodies.first().expect("a model request");
    first["messages"][0]["content"]
        .as_str()
        .filter(|_| first["messages"][0]["role"] == "system")
        .unwrap_or_else(|| panic!("no system message: {first}"))
        .to_string()
}

fn a_langgraph_server_is_tested_through_its_api() -> Needs {
    let python = framework_python(MODULES)?;
    let s = Scratch::named("langgraph", "dev");
    let model = ChatServer::start();
    // Routed by the conversation's first user message: one queue per case.
    model.script(
        "weather",
        vec![
            call("call_1", "get_weather", json!({"city": "Paris"}), (10, 5)),
            text("It is sunny in Paris", (7, 3)),
            text("Bye", (4, 2)),
        ],
    );
    model.script(
        "ask",
        vec![text("ASK Which city?", (6, 1)), text("Rome it is", (8, 2))],
    );
    // The same conversations over `/runs/stream`.
    model.script(
        "weather, streamed",
        vec![
            call("call_2", "get_weather", json!({"city": "Lima"}), (11, 6)),
            text("It is sunny in Lima", (9, 4)),
        ],
    );
    model.script(
        "ask, streamed",
        vec![text("ASK Which town?", (6, 1)), text("Cusco it is", (8, 2))],
    );
    model.script(
        "boom, streamed",
        vec![status(
            400,
            json!({"error": {"message": "nothing for boom"}}),
        )],
    );
    model.script(
        "boom",
        vec![status(
            400,
            json!({"error": {"message": "nothing for boom"}}),
        )],
    );
    // Where the `html` agent points: a server that answers a web page.
    let html = ChatServer::start();
    html.script(
        "*",
        vec![Action::Http {
            code: 200,
            headers: vec![("Content-Type".into(), "text/html".into())],
            body: "<html><body>Welcome</body></html>".into(),
        }],
    );
    let server = LangGraphDev::start(&python, &s, &model.url());
    let url = server.url();
    s.write(
        "suites/agentest.toml",
        &format!(
            "[agent]\ntype = \"langgraph\"\nurl = {url}\nassistant_id = \"agent\"\nheaders = {{ x-user-id = \"${{LG_USER}}\" }}\ntimeout = \"60s\"\n\n\
             [agents.streaming]\ntype = \"langgraph\"\nurl = {url}\nassistant_id = \"agent\"\nstream = true\n\n\
             [agents.wrong]\ntype = \"langgraph\"\nurl = {url}\nassistant_id = \"nope\"\n\n\
             [agents.counter]\ntype = \"langgraph\"\nurl = {url}\nassistant_id = \"counter\"\n\n\
             [agents.html]\ntype = \"langgraph\"\nurl = {docs}\nassistant_id = \"agent\"\nretries = 0\n",
            url = toml_str(&url),
            docs = toml_str(&format!("http://127.0.0.1:{}/lg", html.port)),
        ),
    );
    let cases = [
        json!({"id": "weather", "turns": [
            {"input": "weather", "assertions": [
                {"type": "tool_called", "value": {"name": "get_weather", "arguments": {"city": "Paris"}}},
                {"type": "tool_result", "value": {"tool": "get_weather", "result": "Sunny in Paris"}},
                {"type": "contains", "value": "It is sunny in Paris"}]},
            {"input": "thanks", "assertions": [{"type": "contains", "value": "Bye"}]}]}),
        json!({"id": "ask", "turns": [
            {"input": "ask", "assertions": [{"type": "contains", "value": "Which city?"}]},
            {"input": "Rome", "assertions": [{"type": "contains", "value": "Rome it is"}]}]}),
        json!({"id": "boom", "turns": [{"input": "boom"}]}),
        json!({"id": "weather-streamed", "agent": "streaming", "turns": [
            {"input": "weather, streamed", "assertions": [
                {"type": "tool_called", "value": {"name": "get_weather", "arguments": {"city": "Lima"}}},
                {"type": "tool_result", "value": {"tool": "get_weather", "result": "Sunny in Lima"}},
                {"type": "contains", "value": "It is sunny in Lima"}]}]}),
        json!({"id": "ask-streamed", "agent": "streaming", "turns": [
            {"input": "ask, streamed", "assertions": [{"type": "contains", "value": "Which town?"}]},
            {"input": "Cusco", "assertions": [{"type": "contains", "value": "Cusco it is"}]}]}),
        json!({"id": "boom-streamed", "agent": "streaming", "turns": [{"input": "boom, streamed"}]}),
        json!({"id": "wrong", "agent": "wrong", "turns": [{"input": "hi"}]}),
        json!({"id": "counter", "agent": "counter", "turns": [{"input": "hi"}]}),
        json!({"id": "html", "agent": "html", "turns": [{"input": "hi"}]}),
    ];
    let lines: Vec<String> = cases.iter().map(Value::to_string).collect();
    let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
    s.write_suite("suites/graph.jsonl", &lines);
    let r = agentest(s.path(), &["test", "-i", "suites", "-o", "r.jsonl"]);
    assert_eq!(r.code, 1, "{r:?}");
    let rep = Report::read(&s.join("r.jsonl"));

    let weather = rep.case("graph::weather");
    assert_eq!(weather["status"], "passed", "{weather}");
    let turns = &weather["turns"];
    assert_eq!(
        turns[0]["tool_calls"],
        json!([{"name": "get_weather", "arguments": {"city": "Paris"}, "result": "Sunny in Paris"}]),
        "{weather}"
    );
    // Only the messages new in a turn make its reply.
    assert_eq!(turns[1]["output"], "Bye", "{weather}");
    assert!(
        turns[1]["tool_calls"].as_array().is_none_or(Vec::is_empty),
        "{weather}"
    );
    // Usage: the model server's, summed per turn.
    assert_eq!(
        turns[0]["usage"],
        json!({"input_tokens": 17, "output_tokens": 8}),
        "{weather}"
    );
    assert_eq!(
        turns[1]["usage"],
        json!({"input_tokens": 4, "output_tokens": 2}),
        "{weather}"
    );

    // The header, `${LG_USER}` expanded, reached the graph (langgraph.json lets
    // `x-user-*` into `configurable`), which told the model.
    assert_eq!(system_prompt(&model, "weather"), "x-user-id: user-7");

    let ask = rep.case("graph::ask");
    assert_eq!(ask["status"], "passed", "{ask}");
    assert_eq!(ask["turns"][0]["awaiting_input"], true, "{ask}");
    // The resume reached the graph as the interrupt's answer: the model saw it.
    let bodies = model.bodies("ask");
    let last = bodies.last().expect("a model request for ask");
    let said: Vec<&str> = last["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|m| m["role"] == "user")
        .filter_map(|m| m["content"].as_str())
        .collect();
    assert_eq!(said, ["ask", "Rome"], "{last}");

    assert_eq!(rep.status("graph::boom"), "error");
    let e = rep.error("graph::boom");
    assert!(
        e.contains(&format!("LangGraph agent at {url}/threads/"))
            && e.contains("/runs/wait: the run failed: "),
        "{e}"
    );
    // Streamed, the same replies: the last `values` event is the state.
    let c = rep.case("graph::weather-streamed");
    assert_eq!(c["status"], "passed", "{c}");
    assert_eq!(
        c["turns"][0]["usage"],
        json!({"input_tokens": 20, "output_tokens": 10}),
        "{c}"
    );
    let c = rep.case("graph::ask-streamed");
    assert_eq!(c["status"], "passed", "{c}");
    assert_eq!(c["turns"][0]["awaiting_input"], true, "{c}");
    assert_eq!(rep.status("graph::boom-streamed"), "error");
    let e = rep.error("graph::boom-streamed");
    assert!(e.contains("/runs/stream: the run failed: "), "{e}");

    assert_eq!(rep.status("graph::wrong"), "error");
    let e = rep.error("graph::wrong");
    assert!(
        e.contains("answered HTTP 422") && e.contains("Invalid assistant: 'nope'"),
        "{e}"
    );
    // A graph whose state holds no messages gives no reply: a case error, not a pass.
    assert_eq!(rep.status("graph::counter"), "error");
    let e = rep.error("graph::counter");
    assert!(
        e.contains("/runs/wait: expected a state with `messages` (an array; is the graph's state a MessagesState?), got: {\"count\":1}"),
        "{e}"
    );
    assert_eq!(rep.status("graph::html"), "error");
    let e = rep.error("graph::html");
    assert_eq!(
        e,
        format!(
            "turn 1: agent at http://127.0.0.1:{}/lg/threads answered with a body that is not JSON (expected value at line 1 column 1): <html><body>Welcome</body></html>",
            html.port
        )
    );
    drop(server);
    Ok(())
}

/// The real-model lane: the same graph on the small real model (streamed token by token
/// when the run streams). Whatever it says (a model this small sometimes says nothing),
/// each turn is a reply, never an error, with the model's own token counts; a streamed
/// turn that says something has its first token before its end.
fn a_langgraph_agent_on_the_real_model_streams_its_tokens() -> Needs {
    let python = framework_python(MODULES)?;
    crate::real_model::real_model()?;
    let _turn = crate::real_model::exclusive();
    let model_url = std::env::var("AGENTEST_REALLLM_URL").expect("checked by the need");
    let s = Scratch::named("langgraph", "realllm");
    let server = LangGraphDev::start_with(
        &python,
        &s,
        &model_url,
        &[
            ("AGENTEST_MODEL_NAME", "smollm2"),
            ("AGENTEST_MODEL_STREAMS", "1"),
            ("AGENTEST_MODEL_MAX_TOKENS", "40"),
        ],
    );
    let url = toml_str(&server.url());
    s.write(
        "suites/agentest.toml",
        &format!(
            "[agents.wait]\ntype = \"langgraph\"\nurl = {url}\nassistant_id = \"agent\"\ntimeout = \"120s\"\n\n\
             [agents.stream]\ntype = \"langgraph\"\nurl = {url}\nassistant_id = \"agent\"\ntimeout = \"120s\"\nstream = true\n"
        ),
    );
    let say = "Write three sentences about the sea.";
    // No assertion on what the model says: a case passes when every turn was a reply.
    let cases = [
        json!({"id": "wait", "agent": "wait", "turns": [
            {"input": say}, {"input": "And one about rivers."}]}),
        json!({"id": "stream", "agent": "stream", "turns": [{"input": say}]}),
    ];
    let lines: Vec<String> = cases.iter().map(Value::to_string).collect();
    let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
    s.write_suite("suites/sea.jsonl", &lines);
    let r = agentest(s.path(), &["test", "-i", "suites", "-o", "r.jsonl"]);
    let rep = Report::read(&s.join("r.jsonl"));
    assert_eq!(r.code, 0, "{r:?}\n{}", rep.text);
    let wait = rep.case("sea::wait");
    for turn in wait["turns"].as_array().expect("turns") {
        let usage = &turn["usage"];
        let (input, output) = (
            usage["input_tokens"].as_u64(),
            usage["output_tokens"].as_u64(),
        );
        assert!(
            input.is_some_and(|n| n > 10) && output.is_some_and(|n| n <= 40),
            "the model's own token counts: {turn}"
        );
    }
    // Only the new turn's messages: the second reply is not the first again.
    let said = |t: usize| {
        wait["turns"][t]["output"]
            .as_str()
            .unwrap_or("")
            .trim()
            .to_string()
    };
    if !said(0).is_empty() {
        assert_ne!(said(0), said(1), "{wait}");
    }
    let streamed = &rep.case("sea::stream")["turns"][0];
    let first = streamed["first_token_ms"].as_u64().expect("first_token_ms");
    let whole = streamed["duration_ms"].as_u64().expect("duration_ms");
    let words = streamed["output"]
        .as_str()
        .unwrap_or("")
        .split_whitespace()
        .count();
    assert!(first <= whole, "{streamed}");
    if words > 3 {
        assert!(
            first < whole,
            "the first token ({first} ms) came before the whole reply ({whole} ms): {streamed}"
        );
    }
    drop(server);
    Ok(())
}

/// An EvalStudio project whose `connectors.json` names the LangGraph server runs against
/// it with no agentest.toml at all: the connector's `baseUrl`, `config.assistantId` and
/// `config.configurable`, its headers with the persona's over them.
fn an_evalstudio_langgraph_connector_is_the_agent_by_itself() -> Needs {
    let python = framework_python(MODULES)?;
    let s = Scratch::named("langgraph", "evalstudio");
    let model = ChatServer::start();
    model.script(
        "weather",
        vec![
            call("call_1", "get_weather", json!({"city": "Oslo"}), (10, 5)),
            text("It is sunny in Oslo", (7, 3)),
        ],
    );
    let server = LangGraphDev::start(&python, &s, &model.url());
    let connectors = json!([{
        "id": "c-1", "name": "Weather Graph", "type": "langgraph", "baseUrl": server.url(),
        "headers": {"x-user-id": "connector-user", "x-user-team": "blue"},
        "config": {"assistantId": "agent", "configurable": {"tone": "brief"}}
    }]);
    s.write("suites/data/connectors.json", &connectors.to_string());
    s.write(
        "suites/data/personas.json",
        r#"[{"id": "p-1", "name": "Ola", "headers": {"x-user-id": "persona-user"}}]"#,
    );
    s.write(
        "suites/data/scenarios.json",
        r#"[{"id": "s", "name": "forecast", "personaIds": ["p-1"], "messages": [{"role": "user", "content": "weather"}], "successCriteria": "gives the weather"}]"#,
    );
    s.write(
        "suites/data/evals.json",
        r#"[{"id": "e-1", "name": "graph eval", "connectorId": "c-1", "scenarioIds": ["s"]}]"#,
    );
    let dry = agentest(s.path(), &["test", "-i", "suites", "--dry-run"]);
    assert_eq!(dry.code, 0, "{dry:?}");
    let r = agentest(s.path(), &["test", "-i", "suites", "-o", "r.jsonl"]);
    assert_eq!(r.code, 0, "{r:?}");
    let rep = Report::read(&s.join("r.jsonl"));
    let c = rep.case("graph-eval::forecast::ola");
    assert_eq!(
        (c["status"].as_str(), c["agent"].as_str()),
        (Some("passed"), Some("Weather Graph")),
        "{c}"
    );
    let turn = &c["turns"][0];
    assert_eq!(turn["output"], "It is sunny in Oslo", "{c}");
    assert_eq!(
        turn["tool_calls"],
        json!([{"name": "get_weather", "arguments": {"city": "Oslo"}, "result": "Sunny in Oslo"}]),
        "{c}"
    );
    // The persona's header over the connector's, the connector's other header, and its
    // `configurable`, all reached the graph.
    assert_eq!(
        system_prompt(&model, "weather"),
        "x-user-id: persona-user; x-user-team: blue; tone: brief"
    );
    drop(server);
    Ok(())
}

/// A `[agent]` of type `langgraph` without `assistant_id`, or with a key of another kind,
/// is a config error naming the file, the table and the fix.
fn langgraph_table_mistakes_are_config_errors() {
    let s = Scratch::named("langgraph", "mistakes");
    s.write_suite(
        "suites/s.jsonl",
        &[r#"{"id": "a", "turns": [{"input": "hi"}]}"#],
    );
    let config = s.join("suites/agentest.toml");
    for (table, expected) in [
        (
            "url = \"http://127.0.0.1:1\"\n",
            "[agent] (line 1): a langgraph agent needs `assistant_id`: a graph name from the server's langgraph.json (its `graphs` keys) or an assistant id",
        ),
        (
            "url = \"http://127.0.0.1:1\"\nassistant_id = \"agent\"\ncommand = [\"x\"]\n",
            "[agent] (line 1): `command` does not apply to langgraph agents; remove it or change `type`",
        ),
    ] {
        s.write(
            "suites/agentest.toml",
            &format!("[agent]\ntype = \"langgraph\"\n{table}"),
        );
        let r = agentest(s.path(), &["test", "-i", "suites", "--dry-run"]);
        assert_eq!(r.code, 2, "{r:?}");
        assert_eq!(
            r.stderr.trim(),
            format!("error: invalid config {}: {expected}", config.display()),
            "{r:?}"
        );
    }
}
