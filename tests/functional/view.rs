//! `agentest view`'s JSON API, against the real binary serving a run store filled by
//! two real runs: every endpoint, the token, the refusal of a non-loopback address
//! without one, and a store left unwritten.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};

use serde_json::{json, Value};

use crate::common::{clean, Scratch, BIN};

pub fn tests() -> Vec<libtest_mimic::Trial> {
    crate::trials![
        every_api_endpoint_answers_from_the_store_and_writes_nothing,
        a_token_guards_every_request,
        a_non_loopback_address_needs_a_token,
        the_viewer_reads_a_postgres_store_read_only(needs crate::common::postgres),
        the_pages_show_executions_runs_cases_reports_and_a_comparison,
        a_page_over_runs_still_going_reloads_itself,
    ]
}

/// A store with two executions of one suite: all passing, then all failing.
fn filled() -> Scratch {
    filled_at(None)
}

/// [`filled`], in the store at `url` (a PostgreSQL database) instead of a file.
fn filled_at(url: Option<&str>) -> Scratch {
    let s = Scratch::named("view", "store");
    s.write("agent.py", crate::common::MODE_AGENT);
    s.write(
        "agentest.toml",
        "[agent]\ntype = \"process\"\ncommand = [\"python3\", \"agent.py\"]\n",
    );
    let case = |id: &str| json!({"id": id, "input": "hi", "assert": {"type": "contains", "value": "pass:"}});
    s.write("suites/s.jsonl", &format!("{}\n{}\n", case("a"), case("b")));
    for (mode, code) in [("pass", 0), ("fail", 1)] {
        s.write("mode.txt", mode);
        let out = clean(Command::new(BIN))
            .current_dir(s.path())
            .args(["test", "-i", "suites"])
            .env(
                "AGENTEST_STORE",
                url.map_or_else(|| s.join("runs.db").display().to_string(), str::to_string),
            )
            .output()
            .expect("run agentest");
        assert_eq!(out.status.code(), Some(code), "{out:?}");
    }
    s
}

/// `agentest view ARGS` on the scratch store, and the URL it printed.
struct Viewer {
    child: Child,
    url: String,
}

impl Drop for Viewer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn view(s: &Scratch, args: &[&str]) -> Viewer {
    view_of(s, &s.join("runs.db").display().to_string(), args)
}

fn view_of(s: &Scratch, store: &str, args: &[&str]) -> Viewer {
    let mut child = clean(Command::new(BIN))
        .current_dir(s.path())
        .arg("view")
        .args(args)
        .env("AGENTEST_STORE", store)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start agentest view");
    let mut line = String::new();
    BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut line)
        .expect("the URL");
    assert!(line.starts_with("http://127.0.0.1:"), "{line}");
    Viewer {
        child,
        url: line.trim().to_string(),
    }
}

/// A request: its status and JSON body.
fn request(v: &Viewer, method: &str, path: &str, auth: Option<&str>) -> (u16, Value) {
    let (status, body) = raw(v, method, path, auth);
    (status, serde_json::from_str(&body).unwrap_or(Value::Null))
}

/// A request: its status and body as text.
fn raw(v: &Viewer, method: &str, path: &str, auth: Option<&str>) -> (u16, String) {
    let host = v.url.trim_start_matches("http://").trim_end_matches('/');
    let mut stream = TcpStream::connect(host).expect("connect");
    let auth = auth.map_or(String::new(), |t| format!("Authorization: Bearer {t}\r\n"));
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nHost: {host}\r\n{auth}Connection: close\r\nContent-Length: 0\r\n\r\n"
    )
    .expect("send");
    let mut text = String::new();
    stream.read_to_string(&mut text).expect("read");
    let status = text[9..12].parse().expect("a status");
    let body = text.split_once("\r\n\r\n").map_or("", |(_, b)| b);
    (status, body.to_string())
}

fn every_api_endpoint_answers_from_the_store_and_writes_nothing() {
    let s = filled();
    let before = std::fs::read(s.join("runs.db")).expect("the store");
    let v = view(&s, &[]);
    let (code, list) = request(&v, "GET", "/api/executions", None);
    assert_eq!(code, 200, "{list}");
    let list = list.as_array().expect("executions");
    assert_eq!(list.len(), 2);
    assert_eq!(list[0]["id"], 2, "newest first");
    assert_eq!(list[0]["counts"], json!({"failed": 2}));
    assert_eq!(list[1]["counts"], json!({"passed": 2}));
    assert_eq!(list[0]["total"], 2);
    assert_eq!(list[0]["command"][1], "test");
    let (_, limited) = request(&v, "GET", "/api/executions?limit=1", None);
    assert_eq!(limited.as_array().map(Vec::len), Some(1));
    let (code, one) = request(&v, "GET", "/api/executions/2", None);
    assert_eq!(code, 200);
    let runs = one["runs"].as_array().expect("runs");
    assert_eq!(runs.len(), 2);
    assert!(runs.iter().all(|r| r["verdict"] == "failed"), "{one}");
    let id = runs[0]["id"].as_i64().expect("an id");
    let (code, run) = request(&v, "GET", &format!("/api/runs/{id}"), None);
    assert_eq!(code, 200);
    assert_eq!(run["record"]["status"], "failed", "{run}");
    assert_eq!(run["record"]["turns"][0]["output"], "fail: You said hi");
    let (code, cmp) = request(&v, "GET", "/api/compare?before=1&after=2", None);
    assert_eq!(code, 200);
    assert_eq!(cmp["before"], json!({"passed": 2, "failed": 0}));
    assert_eq!(cmp["after"], json!({"passed": 0, "failed": 2}));
    // 2/2 then 0/2: P(X <= 0) = C(2,0) C(2,2) / C(4,2) = 1/6.
    assert!(
        (cmp["p_value"].as_f64().unwrap() - 1.0 / 6.0).abs() < 1e-12,
        "{cmp}"
    );
    for (method, path, want) in [
        ("GET", "/api/runs/999", 404),
        ("GET", "/api/runs/x", 400),
        ("GET", "/api/compare?before=1", 400),
        ("GET", "/api/nothing", 404),
        ("POST", "/api/executions", 405),
        ("DELETE", "/api/runs/1", 405),
    ] {
        let (code, body) = request(&v, method, path, None);
        assert_eq!(code, want, "{method} {path}: {body}");
        assert!(body["error"].is_string(), "{body}");
    }
    drop(v);
    let after = std::fs::read(s.join("runs.db")).expect("the store");
    assert!(before == after, "the viewer wrote to the store");
}

fn a_token_guards_every_request() {
    let s = filled();
    let v = view(&s, &["--token", "s3cret-view"]);
    let (code, body) = request(&v, "GET", "/api/executions", None);
    assert_eq!(code, 401, "{body}");
    let (code, _) = request(&v, "GET", "/api/executions", Some("wrong"));
    assert_eq!(code, 401);
    let (code, _) = request(&v, "GET", "/api/executions", Some("s3cret-view"));
    assert_eq!(code, 200);
    let (code, _) = request(&v, "GET", "/api/executions?token=s3cret-view", None);
    assert_eq!(code, 200);
}

fn a_non_loopback_address_needs_a_token() {
    let s = filled();
    let out = clean(Command::new(BIN))
        .current_dir(s.path())
        .args(["view", "--listen", "0.0.0.0:0"])
        .env("AGENTEST_STORE", s.join("runs.db"))
        .output()
        .expect("run agentest view");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--listen 0.0.0.0:0 is not a loopback address") && err.contains("--token"),
        "{err}"
    );
    let out = clean(Command::new(BIN))
        .current_dir(s.path())
        .args(["view", "--store", "missing.db"])
        .output()
        .expect("run agentest view");
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("no run store at missing.db"),
        "{out:?}"
    );
}

/// The same API over a PostgreSQL store, whose session the viewer makes read only.
fn the_viewer_reads_a_postgres_store_read_only() -> crate::common::Needs {
    let db = crate::common::fresh_postgres()?;
    let s = filled_at(Some(db.url()));
    let v = view_of(&s, db.url(), &[]);
    let (code, list) = request(&v, "GET", "/api/executions", None);
    assert_eq!(code, 200, "{list}");
    let list = list.as_array().expect("executions");
    assert_eq!(list.len(), 2);
    assert_eq!(list[0]["counts"], json!({"failed": 2}));
    let (code, cmp) = request(&v, "GET", "/api/compare?before=1&after=2", None);
    assert_eq!(code, 200, "{cmp}");
    assert!(
        (cmp["p_value"].as_f64().unwrap() - 1.0 / 6.0).abs() < 1e-12,
        "{cmp}"
    );
    Ok(())
}

/// The pages, readable without JavaScript: the executions with their counts, an
/// execution's runs linking to each case, a case's runs across executions, a run as
/// the HTML report of its record, and a comparison.
fn the_pages_show_executions_runs_cases_reports_and_a_comparison() {
    let s = filled();
    let v = view(&s, &[]);
    let get = |path: &str| {
        let (code, body) = raw(&v, "GET", path, None);
        assert_eq!(code, 200, "{path}: {body}");
        assert!(body.starts_with("<!DOCTYPE html>"), "{path}: {body}");
        body
    };
    let home = get("/");
    assert!(home.contains("<a href=\"/executions/2\">2</a>"), "{home}");
    assert!(home.contains("<td class=\"failed\">2</td>"), "{home}");
    assert!(home.contains("<form action=\"/compare\""), "{home}");
    let exec = get("/executions/2");
    assert!(exec.contains("<h1>Execution 2</h1>"), "{exec}");
    assert!(
        exec.contains("<a href=\"/cases/s%3A%3Aa\">s::a</a>"),
        "{exec}"
    );
    let case = get("/cases/s%3A%3Aa");
    assert!(case.contains("<h1>Case s::a</h1>"), "{case}");
    assert!(
        case.contains("<a href=\"/executions/1\">1</a>")
            && case.contains("<a href=\"/executions/2\">2</a>"),
        "{case}"
    );
    // 2 runs: passed, then failed. Wilson 95 % for 1 of 2 is [0.0945, 0.9055].
    assert!(
        case.contains("Pass rate 50.0% (1 of 2), 95% Wilson interval [0.095, 0.905]; flaky since execution <a href=\"/executions/2\">2</a>"),
        "{case}"
    );
    assert!(case.contains("title=\"execution 1: passed\""), "{case}");
    let (code, api) = request(&v, "GET", "/api/cases/s%3A%3Aa", None);
    assert_eq!(code, 200, "{api}");
    assert_eq!(api["history"]["passed"], 1);
    assert_eq!(api["history"]["changed_at"], 2);
    assert_eq!(api["runs"][0]["execution"], 1, "oldest first: {api}");
    let (code, _) = request(&v, "GET", "/api/cases/nobody", None);
    assert_eq!(code, 404);
    let run = exec
        .split("<a href=\"/runs/")
        .nth(1)
        .and_then(|r| r.split('"').next())
        .expect("a run's link")
        .to_string();
    let report = get(&format!("/runs/{run}"));
    assert!(report.contains("fail: You said hi"), "{report}");
    assert!(
        report.contains("agentest rerun"),
        "the command to run it again: {report}"
    );
    let cmp = get("/compare?before=1&after=2");
    assert!(
        cmp.contains(
            "Runs counted: 2/2 passed → 0/2 passed; a drop within chance: Fisher p = 0.1667"
        ),
        "{cmp}"
    );
    let (code, missing) = raw(&v, "GET", "/runs/999", None);
    assert_eq!(code, 404);
    assert!(missing.contains("no run 999"), "{missing}");
}

/// An execution whose runs are queued (planned by `--enqueue`, no worker yet): its page
/// and the executions page reload themselves every 5 s, so a run can be watched; an
/// ended execution's page does not.
fn a_page_over_runs_still_going_reloads_itself() {
    let s = filled();
    let out = clean(Command::new(BIN))
        .current_dir(s.path())
        .args(["test", "-i", "suites", "--enqueue"])
        .env("AGENTEST_STORE", s.join("runs.db"))
        .env("AGENTEST_EXECUTION", "watch-me")
        .output()
        .expect("run agentest");
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let v = view(&s, &[]);
    let refresh = "<meta http-equiv=\"refresh\" content=\"5\">";
    let (_, home) = raw(&v, "GET", "/", None);
    assert!(home.contains(refresh), "{home}");
    assert!(home.contains("<td class=\"skipped\">0</td>"), "{home}");
    let (_, going) = raw(&v, "GET", "/executions/3", None);
    assert!(
        going.contains(refresh) && going.contains("Runs are still going"),
        "{going}"
    );
    assert!(
        going.contains("<td class=\"queued\">queued</td>"),
        "{going}"
    );
    let (_, ended) = raw(&v, "GET", "/executions/1", None);
    assert!(!ended.contains(refresh), "{ended}");
}
