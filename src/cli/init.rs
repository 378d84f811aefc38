//! `agentest init`: a starter project that runs green at once: a ten-line agent, a
//! config that runs it and a smoke suite; in a Rust crate, the harness too. The
//! README's "Using it in your crate" shows these same files (a test checks that).

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
    let mut files: Vec<(PathBuf, &str)> = vec![
        (dir.join("agent.py"), AGENT),
        (dir.join("agent-tests/agentest.toml"), CONFIG),
        (dir.join("agent-tests/smoke.jsonl"), SMOKE),
    ];
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
