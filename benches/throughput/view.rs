//! The viewer over a store of 100,000 runs (`view_100k`, opt-in): how long its pages and
//! API take to answer, the median of 20 requests each, against a 200 ms target, in two
//! shapes: one execution of 100,000 runs (the worst case for the executions page, which
//! sums every run of the executions it lists), and the same runs regrouped into 1,000
//! executions of 100 (a store after months of CI: the page lists the newest 50).

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
    let one = [
        "/",
        "/api/executions",
        "/cases/cases%3A%3AT050000",
        "/api/cases/cases%3A%3AT050000",
    ];
    let many = [
        "/",
        "/api/executions",
        "/executions/500",
        "/cases/cases%3A%3AT050000",
        "/compare?before=999&after=1000",
    ];
    let row = |shape: &str, path: &str, value: f64, invalid: Option<String>| Row {
        figure: format!(
            "view_100k: GET {path} on {} runs in {shape}, median of {REQUESTS}",
            crate::thousands(RUNS)
        ),
        unit: Unit::Millis,
        value,
        goal: Goal::Below { limit: 200.0 },
        detail: String::new(),
        invalid,
    };
    let failed = |why: String| -> Vec<Row> {
        one.iter()
            .map(|p| row("one execution", p, f64::NAN, Some(why.clone())))
            .chain(
                many.iter()
                    .map(|p| row("1,000 executions", p, f64::NAN, Some(why.clone()))),
            )
            .collect()
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
        return failed(why);
    }
    notes.push(format!(
        "view_100k: the store was filled by one run of {} cases in {:.1} s",
        crate::thousands(RUNS),
        filled.wall.as_secs_f64()
    ));
    let store = dir.join(".agentest/runs.db");
    if let Err(why) = with_usage(&store) {
        return failed(why);
    }
    notes.push(
        "view_100k: each run was given the usage rows of an agent that spent tokens and a judge replayed from a cassette (the fixture's agent reports none), so that the sums read 200,000 of them".into(),
    );
    let regrouped = dir.join("regrouped.db");
    if let Err(why) = regroup(&store, &regrouped) {
        return failed(why);
    }
    let mut rows = time_paths(&dir, &store, &one, |p, v, w| row("one execution", p, v, w));
    rows.extend(time_paths(&dir, &regrouped, &many, |p, v, w| {
        row("1,000 executions", p, v, w)
    }));
    rows
}

/// Gives every run of the store at `path` two `run_usage` rows, as a run whose agent
/// spent tokens and whose judge was replayed has.
fn with_usage(path: &std::path::Path) -> Result<(), String> {
    let conn = rusqlite::Connection::open(path).map_err(|e| e.to_string())?;
    conn.execute_batch(
        "BEGIN;
         INSERT INTO run_usage (run_id, execution_id, role, tokens, replayed_tokens, cost, replayed_cost, currency)
           SELECT id, execution_id, 'agent', 150, 0, 0.0006, 0.0, 'USD' FROM runs;
         INSERT INTO run_usage (run_id, execution_id, role, tokens, replayed_tokens, cost, replayed_cost, currency)
           SELECT id, execution_id, 'judge', 0, 180, 0.0, 0.0007, 'USD' FROM runs;
         COMMIT;",
    )
    .map_err(|e| format!("add usage rows: {e}"))
}

/// A copy of the store at `from` in `to`, its runs regrouped 100 to an execution (run
/// ids in order), as 1,000 executions like the first.
fn regroup(from: &std::path::Path, to: &std::path::Path) -> Result<(), String> {
    let _ = std::fs::remove_file(to);
    let conn = rusqlite::Connection::open(from).map_err(|e| e.to_string())?;
    conn.execute("VACUUM INTO ?1", [to.display().to_string()])
        .map_err(|e| format!("copy the store: {e}"))?;
    drop(conn);
    let conn = rusqlite::Connection::open(to).map_err(|e| e.to_string())?;
    conn.execute_batch(
        "BEGIN;
         WITH RECURSIVE n(i) AS (SELECT 2 UNION ALL SELECT i + 1 FROM n WHERE i < 1000)
         INSERT INTO executions (id, started_at, finished_at, command, version, git_commit, root, duration_ms)
           SELECT i, started_at, finished_at, command, version, git_commit, root, duration_ms
           FROM executions, n WHERE executions.id = 1;
         UPDATE runs SET execution_id = 1 + (id - (SELECT MIN(id) FROM runs)) / 100;
         UPDATE run_usage SET execution_id =
           (SELECT execution_id FROM runs WHERE runs.id = run_usage.run_id);
         COMMIT;",
    )
    .map_err(|e| format!("regroup the runs: {e}"))
}

/// The median time of each of `paths` from `agentest view` over `store`.
fn time_paths(
    dir: &std::path::Path,
    store: &std::path::Path,
    paths: &[&str],
    row: impl Fn(&str, f64, Option<String>) -> Row,
) -> Vec<Row> {
    let mut viewer = match agentest(dir, &["view", "--store", &store.display().to_string()])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
    {
        Ok(c) => c,
        Err(e) => {
            let why = format!("agentest view did not start: {e}");
            return paths
                .iter()
                .map(|p| row(p, f64::NAN, Some(why.clone())))
                .collect();
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
