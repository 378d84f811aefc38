//! Runs the example suites in `agent-tests/` as libtest trials.
//!
//! Most cases talk to the example expense assistant (a Python process, configured in
//! `agent-tests/agentest.toml`); `in-process.jsonl` talks to the Rust agent below.

use agentest::{Harness, Reply, Request};
use serde_json::json;

/// An in-process agent: a plain function from request to reply.
fn greeter(req: &Request) -> Result<Reply, String> {
    Ok(Reply::text(format!("Hello, {}!", req.input))
        .with_data(json!({"name": req.input, "turn": req.turn}))
        .with_tool_call(
            "users.lookup_user",
            json!({"name": req.input}),
            Some(json!({"found": true})),
        ))
}

fn main() -> std::process::ExitCode {
    Harness::new(concat!(env!("CARGO_MANIFEST_DIR"), "/agent-tests"))
        .agent("greeter", greeter)
        .run()
}
