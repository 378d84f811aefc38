//! The agent under test: an async HTTP/1.1 server on 127.0.0.1 with keep-alive that
//! speaks the agentest protocol. `POST /delay/<ms>` waits `<ms>` milliseconds, then
//! answers `{"content": "turn <n>: <input>", "awaiting_input": true, "data": {"turn": <n>}}`;
//! a repeated case's request (`metadata.repeat`) gets ` (repeat <r>)` after the input,
//! so a case can pass on some repeats and fail on others.
//!
//! It counts connections and requests and the most requests it held at once, so a
//! bench can tell whether the client reused its connections and reached the
//! concurrency it asked for.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};

#[derive(Default)]
pub struct Stats {
    connections: AtomicU64,
    requests: AtomicU64,
    in_flight: AtomicU64,
    max_in_flight: AtomicU64,
}

/// What the server saw since the last [`AgentServer::reset`].
#[derive(Debug, Clone, Copy)]
pub struct Seen {
    pub connections: u64,
    pub requests: u64,
    pub max_in_flight: u64,
}

pub struct AgentServer {
    addr: SocketAddr,
    stats: Arc<Stats>,
    // Kept alive for as long as the server is used; dropping it stops the server.
    _runtime: tokio::runtime::Runtime,
}

impl AgentServer {
    pub fn start() -> AgentServer {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("bench-agent")
            .enable_all()
            .build()
            .expect("start the agent server's runtime");
        let listener = runtime
            .block_on(TcpListener::bind("127.0.0.1:0"))
            .expect("bind 127.0.0.1:0");
        let addr = listener.local_addr().expect("local address");
        let stats = Arc::new(Stats::default());
        let shared = stats.clone();
        runtime.spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    continue;
                };
                shared.connections.fetch_add(1, Ordering::Relaxed);
                let stats = shared.clone();
                tokio::spawn(async move {
                    let _ = connection(stream, &stats).await;
                });
            }
        });
        AgentServer {
            addr,
            stats,
            _runtime: runtime,
        }
    }

    /// The URL of an agent that answers after `latency`.
    pub fn url(&self, latency: Duration) -> String {
        format!("http://{}/delay/{}", self.addr, latency.as_millis())
    }

    pub fn reset(&self) {
        self.stats.connections.store(0, Ordering::SeqCst);
        self.stats.requests.store(0, Ordering::SeqCst);
        self.stats.max_in_flight.store(0, Ordering::SeqCst);
    }

    pub fn seen(&self) -> Seen {
        Seen {
            connections: self.stats.connections.load(Ordering::SeqCst),
            requests: self.stats.requests.load(Ordering::SeqCst),
            max_in_flight: self.stats.max_in_flight.load(Ordering::SeqCst),
        }
    }
}

/// Serves one keep-alive connection until the client closes it.
async fn connection(stream: TcpStream, stats: &Stats) -> std::io::Result<()> {
    stream.set_nodelay(true)?;
    let (read, mut write) = stream.into_split();
    let mut read = BufReader::new(read);
    let mut line = String::new();
    loop {
        line.clear();
        if read.read_line(&mut line).await? == 0 {
            return Ok(());
        }
        let path = line.split(' ').nth(1).unwrap_or("/").to_string();
        let mut length = 0usize;
        let mut close = false;
        loop {
            line.clear();
            if read.read_line(&mut line).await? == 0 {
                return Ok(());
            }
            let header = line.trim_end();
            if header.is_empty() {
                break;
            }
            if let Some((name, value)) = header.split_once(':') {
                let (name, value) = (name.trim(), value.trim());
                if name.eq_ignore_ascii_case("content-length") {
                    length = value.parse().unwrap_or(0);
                } else if name.eq_ignore_ascii_case("connection") {
                    close = value.eq_ignore_ascii_case("close");
                }
            }
        }
        let mut body = vec![0; length];
        read.read_exact(&mut body).await?;

        stats.requests.fetch_add(1, Ordering::Relaxed);
        let now = stats.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        stats.max_in_flight.fetch_max(now, Ordering::SeqCst);
        let delay = path
            .strip_prefix("/delay/")
            .and_then(|ms| ms.parse::<u64>().ok())
            .unwrap_or(0);
        if delay > 0 {
            tokio::time::sleep(Duration::from_millis(delay)).await;
        }
        let reply = answer(&body);
        let mut out = format!(
            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
            reply.len()
        )
        .into_bytes();
        out.extend_from_slice(reply.as_bytes());
        let written = write.write_all(&out).await;
        stats.in_flight.fetch_sub(1, Ordering::SeqCst);
        written?;
        if close {
            return Ok(());
        }
    }
}

/// The agent's reply to a request body.
fn answer(body: &[u8]) -> String {
    let request: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
    let turn = request["turn"].as_u64().unwrap_or(0);
    let input = request["input"].as_str().unwrap_or("");
    let content = match request["metadata"]["repeat"].as_u64() {
        Some(r) => format!("turn {turn}: {input} (repeat {r})"),
        None => format!("turn {turn}: {input}"),
    };
    json!({
        "content": content,
        "awaiting_input": true,
        "data": {"turn": turn},
    })
    .to_string()
}
