//! The execution's ledger in the run store: a model endpoint's `requests_per_minute` held
//! by every process of an execution together, as a window (no window holds more than
//! the limit), against a loopback chat server that notes when each request arrives.
//! The window is shortened with `AGENTEST_RATE_WINDOW` so the test takes seconds.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::chat::{text, Action, ChatServer};
use crate::common::{fresh_postgres, Needs, Scratch, BIN};

pub fn tests() -> Vec<libtest_mimic::Trial> {
    crate::trials![
        four_processes_share_one_rate_window_in_sqlite,
        four_processes_share_one_rate_window_in_postgres(needs crate::common::postgres),
        one_process_keeps_a_window_not_a_bucket,
        three_processes_share_one_run_budget,
        three_processes_share_one_run_budget_in_postgres(needs crate::common::postgres),
    ]
}

const WINDOW: Duration = Duration::from_secs(2);
const LIMIT: usize = 4;
/// What a request may take from its start being granted to its arrival.
const TRANSIT: Duration = Duration::from_millis(150);

/// A project of `suites` suites of `per_suite` one-turn cases against an `openai` agent
/// whose endpoint allows [`LIMIT`] starts per window.
fn project(tag: &str, server: &ChatServer, suites: usize, per_suite: usize) -> Scratch {
    let s = Scratch::named("ledger", tag);
    s.write(
        "agentest.toml",
        &format!(
            "[llm]\nbase_url = \"{}\"\nmodel = \"m\"\nrequests_per_minute = {LIMIT}\n\n\
             [agent]\ntype = \"openai\"\nsystem = \"You are a test agent.\"\n",
            server.url()
        ),
    );
    for k in 0..suites {
        let cases: String = (0..per_suite)
            .map(|i| format!("{{\"id\": \"c{i}\", \"input\": \"hello\", \"assert\": {{\"type\": \"contains\", \"value\": \"hi\"}}}}\n"))
            .collect();
        s.write(&format!("suites/s{k}.jsonl"), &cases);
    }
    server.answer("hello", &vec!["hi".to_string(); suites * per_suite]);
    s
}

/// Runs one `agentest test` per suite at once, all in one execution of `store`.
fn run_all(s: &Scratch, store: &str, suites: usize) {
    let children: Vec<_> = (0..suites)
        .map(|k| {
            let env = [
                ("AGENTEST_STORE", store),
                ("AGENTEST_EXECUTION", "rate-1"),
                ("AGENTEST_RATE_WINDOW", "2s"),
            ];
            start_suite(s, k, 8, &env)
        })
        .collect();
    for c in children {
        let out = c.wait_with_output().unwrap();
        assert!(out.status.success(), "{out:?}");
    }
}

/// Starts `agentest test` on `suites/s<k>.jsonl` with `parallel` cases at once, no
/// cassettes, and `env`.
fn start_suite(s: &Scratch, k: usize, parallel: u32, env: &[(&str, &str)]) -> std::process::Child {
    Command::new(BIN)
        .current_dir(s.path())
        .args(["test", "-i", &format!("suites/s{k}.jsonl")])
        .args(["--parallel", &parallel.to_string()])
        .envs(env.iter().copied())
        .env("AGENTEST_CASSETTES", "off")
        .env_remove("CARGO_TARGET_DIR")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start agentest")
}

/// No window (less the transit allowance) holds more than [`LIMIT`] arrivals.
#[track_caller]
fn assert_window_kept(arrivals: &[Instant], total: usize) {
    assert_eq!(arrivals.len(), total, "every call reached the server");
    let mut sorted = arrivals.to_vec();
    sorted.sort();
    for (i, start) in sorted.iter().enumerate() {
        let within = sorted[i..]
            .iter()
            .take_while(|t| t.duration_since(*start) < WINDOW - TRANSIT)
            .count();
        assert!(
            within <= LIMIT,
            "{within} requests arrived within one window of {WINDOW:?} (limit {LIMIT}): {:?}",
            sorted
                .iter()
                .map(|t| t.duration_since(sorted[0]))
                .collect::<Vec<_>>()
        );
    }
    // And the limit was used, not starved: the calls took about the windows they need.
    let span = sorted[total - 1].duration_since(sorted[0]);
    let windows = (total - 1) / LIMIT;
    assert!(
        span >= WINDOW * windows as u32 - TRANSIT,
        "{total} calls at {LIMIT} per window took only {span:?}"
    );
}

/// Four processes on one machine, one SQLite store and one execution: together they
/// keep the endpoint's window.
fn four_processes_share_one_rate_window_in_sqlite() {
    let server = ChatServer::start();
    let s = project("sqlite", &server, 4, 3);
    let store = s.join("runs.db");
    run_all(&s, store.to_str().unwrap(), 4);
    assert_window_kept(&server.arrivals(), 12);
}

/// The same on a PostgreSQL store, as processes on several machines would share it.
fn four_processes_share_one_rate_window_in_postgres() -> Needs {
    let db = fresh_postgres()?;
    let server = ChatServer::start();
    let s = project("pg", &server, 4, 3);
    run_all(&s, db.url(), 4);
    assert_window_kept(&server.arrivals(), 12);
    Ok(())
}

/// Without a store, one process keeps the window itself: the first window holds the
/// limit, not the limit plus a full bucket's refill.
fn one_process_keeps_a_window_not_a_bucket() {
    let server = ChatServer::start();
    let s = project("alone", &server, 1, 9);
    let out = Command::new(BIN)
        .current_dir(s.path())
        .args(["test", "-i", "suites", "--parallel", "16"])
        .env("AGENTEST_STORE", "off")
        .env("AGENTEST_RATE_WINDOW", "2s")
        .env("AGENTEST_CASSETTES", "off")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    assert_window_kept(&server.arrivals(), 9);
}

/// Three processes of one execution under `[run] max_tokens = 150`, each call 15
/// tokens: together they stop once the execution spent it, over by at most their calls
/// in flight (3 processes × 2 at once), where each alone would have spent 150.
fn three_processes_share_one_run_budget() {
    let s = Scratch::named("ledger", "budget");
    let store = s.join("runs.db");
    share_a_budget(&s, store.to_str().unwrap());
}

/// The same on a PostgreSQL store.
fn three_processes_share_one_run_budget_in_postgres() -> Needs {
    let db = fresh_postgres()?;
    let s = Scratch::named("ledger", "budget-pg");
    share_a_budget(&s, db.url());
    Ok(())
}

/// See [`three_processes_share_one_run_budget`].
fn share_a_budget(s: &Scratch, store: &str) {
    let server = ChatServer::start();
    s.write(
        "agentest.toml",
        &format!(
            "[llm]\nbase_url = \"{}\"\nmodel = \"m\"\n\n\
             [agent]\ntype = \"openai\"\nsystem = \"You are a test agent.\"\n\n\
             [run]\nmax_tokens = 150\n",
            server.url()
        ),
    );
    for k in 0..3 {
        let cases: String = (0..20)
            .map(|i| format!("{{\"id\": \"c{i}\", \"input\": \"hello\"}}\n"))
            .collect();
        s.write(&format!("suites/s{k}.jsonl"), &cases);
    }
    // Each answer takes 100 ms, and reports 10 + 5 tokens.
    server.script(
        "hello",
        (0..60)
            .map(|_| Action::Slow(Duration::from_millis(100), Box::new(text("hi", (10, 5)))))
            .collect(),
    );
    let children: Vec<_> = (0..3)
        .map(|k| {
            let env = [
                ("AGENTEST_STORE", store),
                ("AGENTEST_EXECUTION", "budget-1"),
            ];
            start_suite(s, k, 2, &env)
        })
        .collect();
    for c in children {
        let out = c.wait_with_output().unwrap();
        let said = String::from_utf8_lossy(&out.stdout);
        assert!(said.contains("max_tokens 150 is spent"), "{said}");
    }
    let calls = server.arrivals().len();
    assert!(
        (10..=10 + 6).contains(&calls),
        "{calls} calls of 15 tokens under a budget of 150 for the execution"
    );
}
