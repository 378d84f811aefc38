//! Traces: agents whose tool calls and model tokens are visible only in the
//! OpenTelemetry spans they export, received by agentest's OTLP/HTTP receiver. Real
//! instrumentation (tests/python/TRACED.md): pydantic-ai 2.x's own (OTel GenAI
//! conventions, protobuf with gzip) and OpenInference's LangGraph instrumentation, both
//! behind a small HTTP endpoint that reads `traceparent`, and a process agent that
//! exports through the environment agentest sets. Their model is the scripted
//! chat-completions server.

use std::path::Path;

use serde_json::json;

use crate::common::chat::{call, text, ChatServer};
use crate::common::project::{self, Cmd};
use crate::common::{framework_python, toml_str, Needs, PyServer, Scratch};

pub fn tests() -> Vec<libtest_mimic::Trial> {
    crate::trials![
        a_pydantic_ai_agent_is_checked_through_its_traces(needs pydantic_ai),
        an_openinference_langgraph_agent_is_checked_through_its_traces(needs openinference),
        a_process_agent_exports_through_the_environment_agentest_sets(needs otel),
        traces_table_mistakes_are_config_errors,
        trace_assertion_mistakes_are_located_load_errors,
    ]
}

const KEY: (&str, &str) = ("TRACES_UNUSED_KEY", "sk-traces-unused");

fn agentest(dir: &Path) -> Cmd<'_> {
    project::agentest(dir, KEY)
}

const OTEL: &[&str] = &[
    "opentelemetry.sdk",
    "opentelemetry.exporter.otlp.proto.http",
];

pub fn otel() -> Needs {
    framework_python(OTEL).map(|_| ())
}

pub fn pydantic_ai() -> Needs {
    framework_python(&[OTEL, &["pydantic_ai", "starlette", "uvicorn"]].concat()).map(|_| ())
}

pub fn openinference() -> Needs {
    framework_python(
        &[
            OTEL,
            &[
                "openinference.instrumentation.langchain",
                "langgraph",
                "starlette",
            ],
        ]
        .concat(),
    )
    .map(|_| ())
}

fn script(name: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/python")
        .join(name)
}

/// The model's script for a conversation that starts with `said`: weather, then time,
/// then the answer (tokens 10/5, 12/6, 14/7: 36 in, 18 out).
fn weather_then_time(model: &ChatServer, said: &str, city: &str) {
    model.script(
        said,
        vec![
            call("c1", "get_weather", json!({"city": city}), (10, 5)),
            call("c2", "get_time", json!({"city": city}), (12, 6)),
            text(&format!("Sunny in {city}, and it is 14:05."), (14, 7)),
        ],
    );
}

/// The cases both HTTP agents run: tools checked from traces alone, a wrong tool failing
/// with the tools seen, spans asserted.
fn http_cases(s: &Scratch) {
    s.cases(&[
        json!({"id": "weather", "input": "weather in Paris", "assert": [
            {"type": "tool_called", "value": {"name": "get_weather", "arguments": {"city": "Paris"}}},
            {"type": "tool_sequence", "value": ["get_weather", "get_time"], "strict": true},
            {"type": "tool_result", "value": {"tool": "get_time", "result": "14:05 in Paris"}},
            {"type": "tool_count", "name": "get_weather", "min": 1, "max": 1},
            {"type": "contains", "value": "Sunny in Paris"}]}),
        json!({"id": "wrong-tool", "input": "weather in Lima", "assert": [
            {"type": "tool_called", "value": "book_flight"}]}),
    ]);
}

/// What both HTTP agents' runs must show.
fn check_http_run(run: &project::ReportedRun) {
    run.expect(1)
        .expect_status("weather", "passed")
        .expect_error(
            "wrong-tool",
            &["expected a call to \"book_flight\"; called: get_weather({\"city\":\"Lima\"})"],
        );
    let weather = run.case("weather");
    let turn = &weather["turns"][0];
    // Tokens: the model server's, summed from the model spans, marked as traced.
    assert_eq!(
        turn["usage"],
        json!({"input_tokens": 36, "output_tokens": 18}),
        "{turn}"
    );
    assert_eq!(turn["usage_traced"], true, "{turn}");
    let calls = turn["tool_calls"].as_array().expect("tool calls");
    let names: Vec<&str> = calls.iter().filter_map(|c| c["name"].as_str()).collect();
    assert_eq!(names, ["get_weather", "get_time"], "{turn}");
    assert!(calls.iter().all(|c| c["source"] == "trace"), "{turn}");
    assert!(
        turn["spans"].as_array().is_some_and(|s| !s.is_empty()),
        "the turn record keeps the span tree: {turn}"
    );
}

/// Starts an HTTP agent whose exporter points at a fixed receiver port (an agent
/// started before agentest must be told where to export: `[traces] listen`), and writes
/// the config that tests it with its traces read.
fn start_http_agent(s: &Scratch, python: &Path, name: &str, model: &ChatServer) -> PyServer {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let endpoint = format!("http://127.0.0.1:{port}/v1/traces");
    let agent = PyServer::with_python_env(
        python,
        &script(name),
        &[],
        &[
            ("AGENTEST_MODEL_URL", model.url().as_str()),
            ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", endpoint.as_str()),
        ],
    );
    s.write(
        "suites/agentest.toml",
        &format!(
            "[agent]\ntype = \"http\"\nurl = {}\ntraces = true\n\n[traces]\nlisten = \"127.0.0.1:{port}\"\nsettle = \"200ms\"\n",
            toml_str(&format!("http://127.0.0.1:{}/", agent.port))
        ),
    );
    agent
}

/// The model, the agent `name` (a script under tests/python/) and the config, with the
/// conversations both HTTP agents hold scripted.
fn traced_http_agent(s: &Scratch, python: &Path, name: &str) -> (ChatServer, PyServer) {
    let model = ChatServer::start();
    weather_then_time(&model, "weather in Paris", "Paris");
    model.script(
        "weather in Lima",
        vec![
            call("c1", "get_weather", json!({"city": "Lima"}), (10, 5)),
            text("Cloudy in Lima.", (11, 4)),
        ],
    );
    let agent = start_http_agent(s, python, name, &model);
    http_cases(s);
    (model, agent)
}

fn a_pydantic_ai_agent_is_checked_through_its_traces() -> Needs {
    let python = framework_python(&["pydantic_ai", "opentelemetry.sdk"])?;
    let s = Scratch::named("traces", "pydantic");
    let (model, agent) = traced_http_agent(&s, &python, "traced_pydantic_agent.py");
    let run = agentest(s.path()).env("AGENTEST_CASSETTES", "record").run();
    check_http_run(&run);
    run.expect_stderr("agentest: receiving OpenTelemetry traces (OTLP/HTTP) at http://127.0.0.1:");
    // Offline: the agent and its model gone, the turns (spans and all) replay from the
    // cassettes with the same verdicts.
    drop(agent);
    drop(model);
    let replayed = agentest(s.path()).env("AGENTEST_CASSETTES", "replay").run();
    check_http_run(&replayed);
    assert_eq!(
        replayed.case("weather")["turns"][0]["spans"],
        run.case("weather")["turns"][0]["spans"]
    );
    Ok(())
}

fn an_openinference_langgraph_agent_is_checked_through_its_traces() -> Needs {
    let python = framework_python(&["openinference.instrumentation.langchain"])?;
    let s = Scratch::named("traces", "openinference");
    let (_model, agent) = traced_http_agent(&s, &python, "traced_langgraph/serve.py");
    let run = agentest(s.path()).run();
    check_http_run(&run);
    drop(agent);
    Ok(())
}

fn a_process_agent_exports_through_the_environment_agentest_sets() -> Needs {
    let python = framework_python(OTEL)?;
    let s = Scratch::named("traces", "process");
    s.write(
        "suites/agentest.toml",
        &format!(
            "[agent]\ntype = \"process\"\ncommand = [{}, {}]\ntraces = true\n\n[traces]\nsettle = \"200ms\"\n",
            toml_str(&python.display().to_string()),
            toml_str(&script("traced_process_agent.py").display().to_string())
        ),
    );
    s.cases(&[
        json!({"id": "two-turns", "turns": [
            {"input": "weather and time in Oslo", "assert": [
                {"type": "tool_sequence", "value": ["get_weather", "get_time"], "strict": true},
                {"type": "span", "name": "^execute_tool", "count": 2},
                {"type": "span", "name": "^chat", "attributes": {"gen_ai.usage.input_tokens": 12}}]},
            {"input": "time in Oslo", "assert": [
                {"type": "tool_called", "value": "get_time"},
                {"type": "tool_sequence", "value": ["get_weather", "get_time", "get_time"], "scope": "conversation"}]}]}),
        json!({"id": "failing-tool", "input": "weather in Atlantis", "assert": [
            {"type": "span", "name": "^execute_tool get_weather", "status": "error"}]}),
        json!({"id": "span-missing", "input": "weather in Bergen", "assert": [
            {"type": "span", "name": "^execute_tool get_time"}]}),
    ]);
    let run = agentest(s.path()).run();
    run.expect(1)
        .expect_status("two-turns", "passed")
        .expect_status("failing-tool", "passed")
        .expect_error(
            "span-missing",
            &["span named /^execute_tool get_time/: expected at least 1 span(s) named /^execute_tool get_time/, found 0; "],
        );
    let turns = &run.case("two-turns")["turns"];
    // Each turn's own trace: the second turn's tree holds only its own tool.
    assert_eq!(
        turns[1]["usage"],
        json!({"input_tokens": 12, "output_tokens": 5}),
        "{turns}"
    );
    let failing = &run.case("failing-tool")["turns"][0];
    assert_eq!(
        failing["tool_calls"][0]["error"], "no such city: Atlantis",
        "{failing}"
    );
    Ok(())
}

/// `[traces]` values that cannot be used are config errors naming the key and the fix.
fn traces_table_mistakes_are_config_errors() {
    for (table, expected) in [
        (
            "[traces]\nlisten = \"localhost\"\n",
            "[traces].listen: expected an address and port like \"127.0.0.1:4318\" (port 0: a free one), found \"localhost\"",
        ),
        ("[traces]\nsettle = \"soon\"\n", "[traces].settle: "),
        ("[traces]\nsetle = \"1s\"\n", "setle"),
    ] {
        let s = Scratch::named("traces", "config");
        s.write(
            "suites/agentest.toml",
            &format!("[agent]\ntype = \"process\"\ncommand = [\"true\"]\n\n{table}"),
        );
        s.cases(&[json!({"id": "a", "input": "hi"})]);
        let run = agentest(s.path()).arg("--dry-run").run();
        run.expect(2).expect_stderr(expected);
    }
}

/// Mistakes in the trace assertions are load errors with their line, column and field,
/// and the other cases still run.
fn trace_assertion_mistakes_are_located_load_errors() {
    let s = Scratch::named("traces", "assertions");
    s.write(
        "suites/agentest.toml",
        &format!(
            "[agent]\ntype = \"process\"\ncommand = [\"python3\", {}]\n",
            toml_str(crate::common::EXPENSE_AGENT)
        ),
    );
    s.cases(&[
        json!({"id": "ok", "input": "hi"}),
        json!({"id": "bad-status", "input": "hi", "assert": {"type": "span", "status": "broken"}}),
        json!({"id": "bad-seq", "input": "hi", "assert": {"type": "tool_sequence", "value": "search"}}),
        json!({"id": "bad-count", "input": "hi", "assert": {"type": "tool_count", "name": "x", "min": 3, "max": 1}}),
        json!({"id": "typo", "input": "hi", "assert": {"type": "tool_sequense", "value": ["a"]}}),
    ]);
    let run = agentest(s.path()).run();
    run.expect(1)
        .expect_status("ok", "passed")
        .expect_error(
            "bad-status",
            &["suites/s.jsonl:2:", "field `assert.status`: expected \"ok\", \"error\" or \"unset\", found \"broken\""],
        )
        .expect_error(
            "bad-seq",
            &["suites/s.jsonl:3:", "field `assert.value`: expected the tool names in order, like [\"search\", \"book\"], found a string"],
        )
        .expect_error(
            "bad-count",
            &["suites/s.jsonl:4:", "field `assert.max`: `max` (1) is below `min` (3): no count can hold"],
        )
        .expect_error(
            "typo",
            &["suites/s.jsonl:5:", "unknown assertion type \"tool_sequense\"; did you mean \"tool_sequence\"?"],
        );
}
