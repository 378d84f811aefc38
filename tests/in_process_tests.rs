//! Runs `tests/in-process/*.jsonl` against an agent written in Rust and registered in
//! the harness: no process, no socket.

use agentest::{async_agent, Harness, Reply, Request};
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

/// An async in-process agent, registered with `async_agent`: no boxed future to write.
async fn async_greeter(req: Request) -> Result<Reply, String> {
    tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    Ok(Reply::text(format!("Hi, {}, after a wait.", req.input)).with_usage(3, 4))
}

fn main() -> std::process::ExitCode {
    Harness::new(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/in-process"))
        .agent("greeter", greeter)
        .agent("async-greeter", async_agent(async_greeter))
        .run()
}
