//! The viewer over a store of 100,000 runs (`view_100k`, opt-in): how long its pages and
//! API take to answer, the median of 20 requests each, against a 200 ms target.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::{agentest, fixtures, median, project, run, Bench, Goal, Row, Unit};

/// Runs in the store.
const RUNS: usize = 100_000;
/// Requests timed per path.
const REQUESTS: usize = 20;

pub fn view_100k(b: &Bench, notes: &mut Vec<String>) -> Vec<Row> {
    let paths = [
        "/",
        "/api/executions",
        "/cases/cases%3A%3AT050000",
        "/api/cases/cases%3A%3AT050000",
    ];
    let row = |path: &str, value: f64, invalid: Option<String>| Row {
        figure: format!(
            "view_100k: GET {path} on a store of {} runs, median of {REQUESTS}",
            crate::thousands(RUNS)
        ),
        unit: Unit::Millis,
        value,
        goal: Goal::Below { limit: 200.0 },
        detail: String::new(),
        invalid,
    };
    let dir = project(b, "view-100k", Duration::ZERO);
    let cases = (0..RUNS).map(|c| fixtures::single(&format!("T{c:06}"), c));
    fixtures::write(&dir, "cases.jsonl", &fixtures::suite(cases));
    let _ = std::fs::remove_dir_all(dir.join(".agentest"));
    let filled = run(
        agentest(&dir, &["test", "-i", "cases.jsonl", "--parallel", "256"]),
        &dir.join("logs"),
        false,
    );
    if let Some(why) = filled.failure() {
        return paths
            .iter()
            .map(|p| row(p, f64::NAN, Some(why.clone())))
            .collect();
    }
    notes.push(format!(
        "view_100k: the store was filled by one run of {} cases in {:.1} s",
        crate::thousands(RUNS),
        filled.wall.as_secs_f64()
    ));
    let mut viewer = match agentest(&dir, &["view"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
    {
        Ok(c) => c,
        Err(e) => {
            return paths
                .iter()
                .map(|p| {
                    row(
                        p,
                        f64::NAN,
                        Some(format!("agentest view did not start: {e}")),
                    )
                })
                .collect()
        }
    };
    let mut url = String::new();
    if let Some(out) = viewer.stdout.take() {
        let _ = BufReader::new(out).read_line(&mut url);
    }
    let host = url
        .trim()
        .trim_start_matches("http://")
        .trim_end_matches('/')
        .to_string();
    let rows = paths
        .iter()
        .map(|path| {
            let mut took = Vec::with_capacity(REQUESTS);
            for _ in 0..REQUESTS {
                match get(&host, path) {
                    Ok(d) => took.push(d.as_secs_f64() * 1000.0),
                    Err(why) => return row(path, f64::NAN, Some(why)),
                }
            }
            row(path, median(took), None)
        })
        .collect();
    let _ = viewer.kill();
    let _ = viewer.wait();
    rows
}

/// One request, read to its end: how long it took, or why it failed.
fn get(host: &str, path: &str) -> Result<Duration, String> {
    let started = Instant::now();
    let mut stream = TcpStream::connect(host).map_err(|e| format!("connect {host}: {e}"))?;
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"
    )
    .map_err(|e| e.to_string())?;
    let mut body = Vec::new();
    stream.read_to_end(&mut body).map_err(|e| e.to_string())?;
    if !body.starts_with(b"HTTP/1.1 200") {
        return Err(format!(
            "GET {path}: {}",
            String::from_utf8_lossy(&body[..body.len().min(200)])
        ));
    }
    Ok(started.elapsed())
}
