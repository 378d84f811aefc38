//! Generated suites, configs and cassettes.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde_json::{json, Value};

/// Writes `text` to `dir/rel`, creating folders.
pub fn write(dir: &Path, rel: &str, text: &str) -> PathBuf {
    let path = dir.join(rel);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).expect("create a fixture folder");
    }
    std::fs::write(&path, text).expect("write a fixture file");
    path
}

/// A fresh, empty folder.
pub fn fresh(dir: &Path) -> PathBuf {
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir).expect("create a fixture folder");
    dir.to_path_buf()
}

/// An `agentest.toml` whose default agent is the bench's HTTP server.
pub fn http_config(url: &str) -> String {
    format!("[agent]\ntype = \"http\"\nurl = \"{url}\"\n")
}

/// JSON Lines from cases.
pub fn suite(cases: impl IntoIterator<Item = Value>) -> String {
    let mut text = String::new();
    for case in cases {
        let _ = writeln!(text, "{case}");
    }
    text
}

/// One turn: `hello <i>`, checked with `contains`.
pub fn single(id: &str, i: usize) -> Value {
    json!({"id": id, "input": format!("hello {i}"),
           "assert": {"type": "contains", "value": format!("turn 1: hello {i}")}})
}

/// One turn against the traced agent: `hello <i>`, checked with `contains` and with
/// `tool_called` of the traced `lookup` tool with this case's own `query`, so the case
/// fails when the spans do not arrive, or arrive in another case's turn.
pub fn traced(id: &str, i: usize) -> Value {
    let input = format!("hello {i}");
    json!({"id": id, "input": input,
           "assert": [{"type": "contains", "value": format!("turn 1: {input}")},
                      {"type": "tool_called", "name": "lookup", "arguments": {"query": input}}]})
}

/// An `agentest.toml` whose HTTP agent at `url` has its traces read by a receiver on
/// `127.0.0.1:<port>`, with `[traces] settle` when given (else the default).
pub fn traced_config(url: &str, port: u16, settle: Option<&str>) -> String {
    let settle = settle.map_or(String::new(), |s| format!("settle = \"{s}\"\n"));
    format!(
        "[agent]\ntype = \"http\"\nurl = \"{url}\"\ntraces = true\n\n[traces]\nlisten = \"127.0.0.1:{port}\"\n{settle}"
    )
}

/// `turns` static turns, each checked.
pub fn static_turns(id: &str, turns: usize) -> Value {
    let turns: Vec<Value> = (1..=turns)
        .map(|t| {
            json!({"input": format!("step {t}"),
                   "assert": {"type": "contains", "value": format!("turn {t}: step {t}")}})
        })
        .collect();
    json!({"id": id, "turns": turns})
}

/// A dynamic case of exactly `turns` agent turns: a scripted simulator answers each
/// reply, and the last checkpoint is reached on the last turn.
pub fn dynamic(id: &str, turns: usize) -> Value {
    let script: Vec<Value> = (1..turns)
        .map(|t| json!({"when": format!("^turn {t}:"), "say": format!("step {}", t + 1)}))
        .collect();
    let checkpoints: Vec<Value> = (1..=turns)
        .map(|t| {
            let mut c = json!({"id": format!("c{t}"),
                               "assert": {"type": "contains", "value": format!("turn {t}:")}});
            if t > 1 {
                c["after"] = json!([format!("c{}", t - 1)]);
            }
            c
        })
        .collect();
    json!({"id": id, "mode": "dynamic", "input": "step 1",
           "simulator": {"use": "script", "script": script},
           "checkpoints": checkpoints, "max_turns": turns + 1})
}

/// A mix like real suites: plain and regex checks, JSONPath on `data`, a history as
/// input, a short static script; one kind per `i % 5`. Every one passes against the
/// bench's agent.
pub fn mixed(id: &str, i: usize) -> Value {
    match i % 5 {
        0 => single(id, i),
        1 => json!({"id": id, "name": format!("case {i}"), "tags": ["smoke"],
                    "input": format!("hello {i}"),
                    "assert": [{"type": "contains", "value": "turn 1"},
                               {"type": "regex", "pattern": "^turn \\d+: hello \\d+$"}]}),
        2 => json!({"id": id, "input": format!("hello {i}"),
                    "assert": [{"type": "json_path", "path": "$.turn", "value": 1},
                               {"type": "not_contains", "value": "error"}]}),
        3 => static_turns(id, 2),
        _ => json!({"id": id, "description": "a history as input",
                    "input": [{"role": "user", "content": "hi"},
                              {"role": "assistant", "content": "hello"},
                              {"role": "user", "content": format!("hello {i}")}],
                    "assert": {"type": "equals", "value": format!("turn 1: hello {i}")}}),
    }
}

/// A tree of `dirs × files × per_file` mixed cases (`dNN/sNN.jsonl`, ids `CdNfNcNNN`),
/// with the HTTP agent's config at its root. Returns the trial names, in order.
pub fn mixed_tree(
    root: &Path,
    url: &str,
    dirs: usize,
    files: usize,
    per_file: usize,
) -> Vec<String> {
    fresh(root);
    write(root, "agentest.toml", &http_config(url));
    let mut trials = Vec::new();
    for d in 0..dirs {
        for f in 0..files {
            let suite_name = format!("d{d:02}/s{f:02}");
            let cases = (0..per_file).map(|c| {
                let id = format!("C{d:02}{f:02}{c:04}");
                trials.push(format!("{suite_name}::{id}"));
                mixed(&id, c)
            });
            let text = suite(cases);
            write(root, &format!("{suite_name}.jsonl"), &text);
        }
    }
    trials
}

/// 10,000-case style replay fixture: `n` copies of the repo's `openai-expense` cases,
/// split over `suites` files, each case with its own copy of the recorded cassette,
/// and the repo's `[llm]` and `[agents.expense-llm]` config. Returns how many cases.
pub fn replay_tree(root: &Path, n: usize, suites: usize) -> Result<usize, String> {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("agent-tests");
    let suite_text = std::fs::read_to_string(repo.join("openai-expense.jsonl"))
        .map_err(|e| format!("read agent-tests/openai-expense.jsonl: {e}"))?;
    let templates: Vec<Value> = suite_text
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.trim_start().starts_with("//"))
        .map(|l| serde_json::from_str(l).map_err(|e| format!("a template case: {e}")))
        .collect::<Result<_, _>>()?;
    if templates.is_empty() {
        return Err("agent-tests/openai-expense.jsonl has no cases".into());
    }
    let config_text = std::fs::read_to_string(repo.join("agentest.toml"))
        .map_err(|e| format!("read agent-tests/agentest.toml: {e}"))?;
    let config: toml::Table = config_text
        .parse()
        .map_err(|e| format!("agent-tests/agentest.toml: {e}"))?;
    let agent_name = templates[0]["agent"].as_str().unwrap_or("expense-llm");
    let mut out = toml::Table::new();
    out.insert(
        "llm".into(),
        config
            .get("llm")
            .cloned()
            .ok_or("no [llm] in agent-tests/agentest.toml")?,
    );
    let agent = config
        .get("agents")
        .and_then(|a| a.get(agent_name))
        .cloned()
        .ok_or_else(|| format!("no [agents.{agent_name}] in agent-tests/agentest.toml"))?;
    let mut agents = toml::Table::new();
    agents.insert(agent_name.into(), agent.clone());
    out.insert("agents".into(), toml::Value::Table(agents));

    fresh(root);
    write(root, "agentest.toml", &out.to_string());
    for key in ["system_file", "tools_file"] {
        if let Some(rel) = agent.get(key).and_then(toml::Value::as_str) {
            let text = std::fs::read_to_string(repo.join(rel))
                .map_err(|e| format!("read agent-tests/{rel}: {e}"))?;
            write(root, rel, &text);
        }
    }
    let cassettes = repo.join(".cassettes").join("openai-expense");
    let per_suite = n.div_ceil(suites);
    let mut made = 0;
    for s in 0..suites {
        let suite_name = format!("replay{s:02}");
        let mut lines = Vec::new();
        for c in 0..per_suite.min(n - made) {
            let template = &templates[c % templates.len()];
            let original = template["id"].as_str().unwrap_or("case");
            let id = format!("{original}-{s:02}{c:05}");
            let mut case = template.clone();
            case["id"] = Value::String(id.clone());
            let from = cassettes.join(format!("{original}.jsonl"));
            let to = root
                .join(".cassettes")
                .join(&suite_name)
                .join(format!("{id}.jsonl"));
            if let Some(parent) = to.parent() {
                std::fs::create_dir_all(parent).map_err(|e| e.to_string())?;
            }
            std::fs::copy(&from, &to).map_err(|e| format!("copy {}: {e}", from.display()))?;
            lines.push(case);
        }
        made += lines.len();
        write(root, &format!("{suite_name}.jsonl"), &suite(lines));
    }
    Ok(made)
}

/// `n` tau2-bench tasks (copies of the repo's `examples/tau2-mock/tasks.json`, each with
/// its own id) as tau2 writes a tasks file: one JSON array, indented.
pub fn tau2_tasks(n: usize) -> Result<String, String> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/tau2-mock/tasks.json");
    let text =
        std::fs::read_to_string(&path).map_err(|e| format!("read {}: {e}", path.display()))?;
    let templates: Vec<Value> =
        serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    if templates.is_empty() {
        return Err(format!("{} has no tasks", path.display()));
    }
    let tasks: Vec<Value> = (0..n)
        .map(|i| {
            let mut task = templates[i % templates.len()].clone();
            task["id"] = Value::String(format!("task_{i:05}"));
            task
        })
        .collect();
    serde_json::to_string_pretty(&tasks).map_err(|e| e.to_string())
}

/// `n` EvalStudio scenarios as EvalStudio's store writes `scenarios.json` (an indented
/// array, with its ids and timestamps), and the same cases as JSON Lines.
pub fn evalstudio_scenarios(n: usize) -> (String, String) {
    let scenario = |i: usize| {
        json!({"id": format!("s-{i:05}"), "name": format!("scenario {i}"),
               "instructions": "File a travel expense of $120",
               "messages": [{"role": "user", "content": format!("hello {i}")}],
               "successCriteria": "The assistant drafts the expense", "maxMessages": 4,
               "createdAt": "2026-01-28T10:00:00.000Z", "updatedAt": "2026-01-28T10:00:00.000Z"})
    };
    let store: Vec<Value> = (0..n).map(scenario).collect();
    let cases = (0..n).map(|i| {
        json!({"id": format!("scenario-{i}"), "name": format!("scenario {i}"),
               "instructions": "File a travel expense of $120",
               "messages": [{"role": "user", "content": format!("hello {i}")}],
               "success_criteria": "The assistant drafts the expense", "max_messages": 4})
    });
    (
        serde_json::to_string_pretty(&store).expect("scenarios serialize"),
        suite(cases),
    )
}

/// The agent kinds the bench's server speaks besides agentest's own protocol: each
/// one's `agentest.toml` for its route's `url`.
pub mod kinds {
    /// `type = "langgraph"`; `stream` reads `/runs/stream` instead of `/runs/wait`.
    pub fn langgraph(url: &str, stream: bool) -> String {
        format!(
            "[agent]\ntype = \"langgraph\"\nurl = \"{url}\"\nassistant_id = \"agent\"\n{}",
            if stream { "stream = true\n" } else { "" }
        )
    }

    /// `type = "a2a"`: the card at the base URL's well-known path names the endpoint.
    pub fn a2a(url: &str) -> String {
        format!("[agent]\ntype = \"a2a\"\nurl = \"{url}\"\n")
    }

    /// `type = "eliza"`: the agent by name, looked up in the server's agents list.
    pub fn eliza(url: &str) -> String {
        format!("[agent]\ntype = \"eliza\"\nurl = \"{url}\"\nagent_id = \"Bench\"\n")
    }

    /// `type = "http"`, `format = "openai-chat"`; `sse` asks for chunk events.
    pub fn openai_chat(url: &str, sse: bool) -> String {
        format!(
            "[agent]\ntype = \"http\"\nformat = \"openai-chat\"\nurl = \"{url}\"\nbody = {{ model = \"bench-assistant\" }}\n{}",
            if sse { "stream = \"sse\"\n" } else { "" }
        )
    }

    /// `type = "http"`, `format = "custom"`: a body template and JSONPaths into the
    /// answer (content, data and usage, so every path is applied to every answer).
    pub fn custom(url: &str) -> String {
        format!(
            r#"[agent]
type = "http"
format = "custom"
url = "{url}"
body = {{ message = "{{{{input}}}}", conversation = "{{{{session_id}}}}", turn = "{{{{turn}}}}" }}

[agent.reply]
content = "$.reply.text"
data = "$.state"
usage = {{ input_tokens = "$.usage.in", output_tokens = "$.usage.out" }}
"#
        )
    }
}
