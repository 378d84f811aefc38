//! Runs `tests/in-process/*.jsonl` against an agent written in Rust and registered in
//! the harness: no process, no socket.

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
    Harness::new(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/in-process"))
        .agent("greeter", greeter)
        .run()
}
