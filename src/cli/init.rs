//! `agentest init`: a starter project that runs green at once: a ten-line agent, a
//! config that runs it and a smoke suite; in a Rust crate, the harness too. The
//! guide's "Using it in your crate" (docs/guide/crate.md) shows these same files (a test
//! checks that).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use super::InitArgs;

/// `agent.py`: the smallest agent that speaks the process protocol. It flushes each
/// reply (a pipe is block-buffered: without it the reply would wait in the buffer).
pub(crate) const AGENT: &str = r#"# agent.py: reads one JSON request per line, writes one JSON reply per line.
import json
import sys

for line in sys.stdin:
    request = json.loads(line)
    reply = {"content": "You said: " + request["input"]}
    print(json.dumps(reply), flush=True)
"#;

/// `agent-tests/agentest.toml`: the agent under test, as a child process.
pub(crate) const CONFIG: &str = r#"# agent-tests/agentest.toml: relative paths start from this folder.
[agent]
type = "process"
command = ["python3", "../agent.py"]
"#;

/// The agent kinds `agentest init --kind` writes a config for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(super) enum Kind {
    /// A child process speaking JSON lines (with `agent.py`, an agent that answers).
    Process,
    /// A graph behind a LangGraph Agent Server (`langgraph dev`).
    Langgraph,
    /// An Agent2Agent (A2A) endpoint.
    A2a,
    /// An agent of an ElizaOS server.
    Eliza,
    /// An OpenAI-compatible chat endpoint that runs its own tools.
    OpenaiChat,
    /// Any HTTP/SSE API: a body template and JSONPaths into the answer.
    Custom,
}

/// `agent-tests/agentest.toml` for a `langgraph` agent.
pub(crate) const LANGGRAPH_CONFIG: &str = r#"# agent-tests/agentest.toml: a graph served by `langgraph dev --no-browser` (port 2024).
[agent]
type = "langgraph"
url = "http://127.0.0.1:2024"        # the server's base URL
assistant_id = "agent"               # a graph name from langgraph.json, or an assistant id
# headers = { x-api-key = "${LANGGRAPH_API_KEY}" } # LangGraph Platform
# config = { configurable = { model = "small" } }  # each run's `config`
# stream = true                      # /runs/stream instead of /runs/wait
"#;

/// `agent-tests/agentest.toml` for an `a2a` agent.
pub(crate) const A2A_CONFIG: &str = r#"# agent-tests/agentest.toml: an A2A agent; its card is read from /.well-known/agent-card.json.
[agent]
type = "a2a"
url = "http://127.0.0.1:9999"        # the agent's base URL
# binding = "jsonrpc"                # or "http+json", over the card's preference
# version = "1.0"                    # or "0.3", over the card's
# headers = { Authorization = "Bearer ${A2A_TOKEN}" }
# stream = true                      # SendStreamingMessage / message/stream
"#;

/// `agent-tests/agentest.toml` for an `eliza` agent.
pub(crate) const ELIZA_CONFIG: &str = r#"# agent-tests/agentest.toml: an agent of an ElizaOS server (`elizaos start`, port 3000).
[agent]
type = "eliza"
url = "http://127.0.0.1:3000"        # the server's base URL
agent_id = "Eliza"                   # the agent's name (GET /api/agents) or UUID
# headers = { X-API-KEY = "${ELIZA_SERVER_AUTH_TOKEN}" } # when the server sets that token
# stream = true                      # transport "sse" instead of "http"
"#;

/// `agent-tests/agentest.toml` for an agent behind an OpenAI-compatible chat endpoint.
pub(crate) const OPENAI_CHAT_CONFIG: &str = r#"# agent-tests/agentest.toml: an agent behind an OpenAI-compatible chat endpoint.
[agent]
type = "http"
format = "openai-chat"
url = "http://127.0.0.1:8000/v1/chat/completions"
# headers = { Authorization = "Bearer ${AGENT_TOKEN}" }
body = { model = "my-assistant" }    # fields sent beside `messages`
# stream = "sse"                     # read the answer as chat.completion.chunk events
"#;

/// `agent-tests/agentest.toml` for an agent with an HTTP API of its own.
pub(crate) const CUSTOM_CONFIG: &str = r#"# agent-tests/agentest.toml: an agent with an HTTP API of its own.
[agent]
type = "http"
format = "custom"
url = "http://127.0.0.1:8000/chat"
body = { message = "{{input}}", conversation = "{{session_id}}" }
# stream = "sse"                     # the answer is a text/event-stream

[agent.reply]                        # JSONPaths into the answer
content = "$.reply"
# tool_calls = { path = "$.steps[*]", name = "$.tool", arguments = "$.args", result = "$.output" }
# usage = { input_tokens = "$.usage.in", output_tokens = "$.usage.out" }
"#;

/// `agent-tests/smoke.jsonl` for an agent of your own: one case that only needs an answer.
pub(crate) const REACHABLE: &str = r#"// agent-tests/smoke.jsonl: one case per line; add assertions on what your agent says.
{"id": "answers", "input": "Hello", "assertions": [{"type": "regex", "pattern": "\\S"}]}
"#;

/// `agent-tests/smoke.jsonl`: two cases, trials `smoke::greets` and `smoke::echoes`.
pub(crate) const SMOKE: &str = r#"// agent-tests/smoke.jsonl: one case per line.
{"id": "greets", "input": "Hello", "assertions": [{"type": "contains", "value": "Hello"}]}
{"id": "echoes", "input": "What is 2+2?", "assertions": [{"type": "contains", "value": "2+2"}]}
"#;

/// `tests/agent_tests.rs`, written when the folder is a Rust crate.
pub(crate) const HARNESS: &str = r#"// tests/agent_tests.rs: every case under agent-tests/ becomes a test.
agentest::main!();
"#;

/// What a crate's `Cargo.toml` needs; printed, never edited in place.
pub(crate) const CARGO_TOML: &str = r#"[dev-dependencies]
agentest = { path = "../agentest" }  # your clone of agentest, until it is published

[[test]]
name = "agent_tests"
harness = false
"#;

/// Writes the starter files into `args.dir`; refuses to overwrite any that exist
/// (unless `--force`), naming them, before writing anything.
pub(super) fn init(args: InitArgs) -> Result<ExitCode, String> {
    let dir = args.dir.unwrap_or_default();
    let crate_root = dir.join("Cargo.toml").is_file();
    let config = match args.kind {
        Kind::Process => CONFIG,
        Kind::Langgraph => LANGGRAPH_CONFIG,
        Kind::A2a => A2A_CONFIG,
        Kind::Eliza => ELIZA_CONFIG,
        Kind::OpenaiChat => OPENAI_CHAT_CONFIG,
        Kind::Custom => CUSTOM_CONFIG,
    };
    let mut files: Vec<(PathBuf, &str)> = Vec::new();
    if args.kind == Kind::Process {
        files.push((dir.join("agent.py"), AGENT));
    }
    files.push((dir.join("agent-tests/agentest.toml"), config));
    let smoke = match args.kind {
        Kind::Process => SMOKE,
        _ => REACHABLE,
    };
    files.push((dir.join("agent-tests/smoke.jsonl"), smoke));
    if crate_root {
        files.push((dir.join("tests/agent_tests.rs"), HARNESS));
    }
    let existing: Vec<String> = files
        .iter()
        .filter(|(p, _)| p.exists())
        .map(|(p, _)| p.display().to_string())
        .collect();
    if !existing.is_empty() && !args.force {
        return Err(format!(
            "not overwriting {}; move them away, or pass --force to replace them",
            existing.join(", ")
        ));
    }
    for (path, text) in &files {
        write(path, text)?;
        println!("wrote {}", path.display());
    }
    let shown = if dir.as_os_str().is_empty() || dir == Path::new(".") {
        String::new()
    } else {
        format!("cd {} && ", dir.display())
    };
    if args.kind != Kind::Process {
        println!("\nPoint agent-tests/agentest.toml at your agent (its url, and the keys the comments show).");
    }
    println!("\nRun the smoke suite with the agentest command:\n\n    {shown}agentest test -i agent-tests");
    if crate_root {
        println!(
            "\nand under cargo test, once Cargo.toml has:\n\n{}\n\n    {shown}cargo test --test agent_tests",
            CARGO_TOML
                .lines()
                .map(|l| if l.is_empty() { String::new() } else { format!("    {l}") })
                .collect::<Vec<_>>()
                .join("\n")
        );
    }
    Ok(ExitCode::SUCCESS)
}

fn write(path: &Path, text: &str) -> Result<(), String> {
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)
            .map_err(|e| format!("failed to create {}: {e}", parent.display()))?;
    }
    crate::util::write_atomically(path, text)
        .map_err(|e| format!("failed to write {}: {e}", path.display()))
}
