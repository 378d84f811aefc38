//! `agentest view`'s JSON API, against the real binary serving a run store filled by
//! two real runs: every endpoint, the token, the refusal of a non-loopback address
//! without one, and a store left unwritten.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};

use serde_json::{json, Value};

use crate::common::{clean, copy_dir, Scratch, BIN};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

pub fn tests() -> Vec<libtest_mimic::Trial> {
    crate::trials![
        every_api_endpoint_answers_from_the_store_and_writes_nothing,
        a_token_guards_every_request,
        open_hands_the_url_to_the_desktops_opener,
        a_non_loopback_address_needs_a_token,
        the_viewer_reads_a_postgres_store_read_only(needs crate::common::postgres),
        the_pages_show_executions_runs_cases_reports_and_a_comparison,
        a_page_over_runs_still_going_reloads_itself,
        the_examples_executions_add_up_and_filter,
        the_viewer_works_in_headless_chromium(needs crate::reports::browser),
        the_viewer_follows_a_run_in_headless_chromium(needs crate::reports::browser),
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
    let mut cmd = clean(Command::new(BIN));
    cmd.current_dir(s.path())
        .arg("view")
        .args(args)
        .env("AGENTEST_STORE", store)
        .stderr(Stdio::null());
    spawned(cmd)
}

/// `cmd` (an `agentest view`) started, and the loopback URL it printed.
fn spawned(mut cmd: Command) -> Viewer {
    let mut child = cmd
        .stdout(Stdio::piped())
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
    let auth = auth.map_or(String::new(), |t| format!("Authorization: Bearer {t}\r\n"));
    let (status, _, body) = exchange(v, method, path, &auth);
    (status, body)
}

/// A request with `headers` (each line ending in CRLF): its status, its headers and
/// its body.
fn exchange(v: &Viewer, method: &str, path: &str, headers: &str) -> (u16, String, String) {
    let host = v.url.trim_start_matches("http://").trim_end_matches('/');
    let mut stream = TcpStream::connect(host).expect("connect");
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nHost: {host}\r\n{headers}Connection: close\r\nContent-Length: 0\r\n\r\n"
    )
    .expect("send");
    let mut text = String::new();
    stream.read_to_string(&mut text).expect("read");
    let status = text[9..12].parse().expect("a status");
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    (status, head.to_string(), body.to_string())
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
    // A browser given the token in the URL keeps it in a cookie, for the pages' links.
    let (code, head, _) = exchange(&v, "GET", "/?token=s3cret-view", "");
    assert_eq!(code, 200);
    assert!(
        head.to_lowercase().contains(
            "set-cookie: agentest_view_token=s3cret-view; path=/; httponly; samesite=strict"
        ),
        "{head}"
    );
    let (code, _, page) = exchange(
        &v,
        "GET",
        "/executions/1",
        "Cookie: agentest_view_token=s3cret-view\r\n",
    );
    assert_eq!(code, 200, "{page}");
    let (code, _, _) = exchange(
        &v,
        "GET",
        "/executions/1",
        "Cookie: agentest_view_token=wrong\r\n",
    );
    assert_eq!(code, 401);
    let (code, head, _) = exchange(&v, "GET", "/", "Authorization: Bearer s3cret-view\r\n");
    assert_eq!(code, 200);
    assert!(
        !head.to_lowercase().contains("set-cookie"),
        "a header's token is not kept: {head}"
    );
    // Every answer is read afresh and never sniffed.
    assert!(
        head.to_lowercase().contains("cache-control: no-store"),
        "{head}"
    );
    assert!(
        head.to_lowercase()
            .contains("x-content-type-options: nosniff"),
        "{head}"
    );
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
    // The filters' SQL, in PostgreSQL's dialect: text, status and suite.
    for (path, want) in [
        ("/api/executions?q=SUITES", 2),
        ("/api/executions?q=nothing", 0),
        ("/api/executions?status=passed&suite=s", 1),
    ] {
        let (code, found) = request(&v, "GET", path, None);
        assert_eq!(
            (code, found.as_array().map(Vec::len)),
            (200, Some(want)),
            "{path}: {found}"
        );
    }
    let (_, one) = request(&v, "GET", "/api/executions/2?q=s%3A%3Aa", None);
    let runs = one["runs"].as_array().expect("runs");
    assert_eq!(runs.len(), 1, "{one}");
    assert_eq!(
        (runs[0]["turns"].as_i64(), runs[0]["suite"].as_str()),
        (Some(1), Some("s"))
    );
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
    assert!(home.contains("<td class=\"n failed\">2</td>"), "{home}");
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
    assert!(home.contains("<td class=\"n skipped\">0</td>"), "{home}");
    let (_, going) = raw(&v, "GET", "/executions/3", None);
    assert!(
        going.contains(refresh) && going.contains("Runs are still going"),
        "{going}"
    );
    // With script, it follows its own API instead; without, the refresh is in noscript.
    assert!(
        going.contains("<body data-live=\"/api/executions/3\" data-every=\"5\">")
            && going.contains(&format!("<noscript>{refresh}</noscript>")),
        "{going}"
    );
    assert!(
        going.contains("<td class=\"queued\">queued</td>"),
        "{going}"
    );
    let (_, ended) = raw(&v, "GET", "/executions/1", None);
    assert!(!ended.contains(refresh), "{ended}");
}

/// The random agent's suite added to the examples: `steady` passes 5 repeats of 10 (its
/// gate, met), then (`{steady}` replaced by F) fails 6 (the gate out of reach); `flaky` passes 3 of 4; `wrong` fails;
/// `crash` errors.
const UNRELIABLE: &str = r#"// The random agent (examples/random-agent), by pattern: P passes, F fails, E errors.
{"id": "steady", "agent": "random", "input": "q", "assert": {"type": "contains", "value": "yes"}, "options": {"pattern": "{steady}", "usage": {"input_tokens": 120, "output_tokens": 30}}, "runs": 10, "min_pass": 5}
{"id": "flaky", "agent": "random", "input": "q", "assert": {"type": "contains", "value": "yes"}, "options": {"pattern": "PPFP"}, "runs": 4, "min_pass": 3}
{"id": "wrong", "agent": "random", "input": "q", "assert": {"type": "contains", "value": "yes"}, "options": {"pattern": "F"}}
{"id": "crash", "agent": "random", "input": "q", "assert": {"type": "contains", "value": "yes"}, "options": {"pattern": "E"}}
"#;

/// The example suites (agent-tests/ with examples/, replayed from their cassettes, the
/// model endpoint priced) and [`UNRELIABLE`], run twice by the real binary into one
/// store: execution 1 on a CI run (`github:77:1`, branch `main`), execution 2 in a
/// checkout of branch `feature/refunds` where `steady` fails.
fn examples() -> Scratch {
    let s = Scratch::named("view", "examples");
    copy_dir(
        &std::path::Path::new(ROOT).join("agent-tests"),
        &s.join("agent-tests"),
    );
    copy_dir(
        &std::path::Path::new(ROOT).join("examples"),
        &s.join("examples"),
    );
    let config = s.join("agent-tests/agentest.toml");
    let mut text = std::fs::read_to_string(&config).expect("the examples' config");
    text.push_str(
        "\n[agents.random]\ntype = \"process\"\ncommand = [\"python3\", \"../examples/random-agent/agent.py\"]\n\n\
         [llm.pricing]\ninput_per_million = 2.5\noutput_per_million = 10.0\n",
    );
    std::fs::write(&config, text).expect("write the config");
    let run = |steady: &str, ci: bool, code: i32| {
        s.write(
            "agent-tests/unreliable.jsonl",
            &UNRELIABLE.replace("{steady}", steady),
        );
        let mut cmd = clean(Command::new(BIN));
        cmd.current_dir(s.path())
            .args(["test", "-i", "agent-tests"])
            .env("AGENTEST_STORE", s.join("runs.db"));
        for k in [
            "GITHUB_ACTIONS",
            "GITHUB_RUN_ID",
            "GITHUB_RUN_ATTEMPT",
            "GITHUB_REF_NAME",
            "GITHUB_HEAD_REF",
            "GITLAB_CI",
        ] {
            cmd.env_remove(k);
        }
        if ci {
            cmd.env("GITHUB_ACTIONS", "true")
                .env("GITHUB_RUN_ID", "77")
                .env("GITHUB_RUN_ATTEMPT", "1")
                .env("GITHUB_REF_NAME", "main");
        }
        let out = cmd.output().expect("run agentest");
        assert_eq!(
            out.status.code(),
            Some(code),
            "{}",
            String::from_utf8_lossy(&out.stdout)
        );
    };
    run("P", true, 1);
    // A checkout of a branch: what git keeps in .git for HEAD and the branch.
    s.write(".git/HEAD", "ref: refs/heads/feature/refunds\n");
    s.write(
        ".git/refs/heads/feature/refunds",
        "0123456789abcdef0123456789abcdef01234567\n",
    );
    run("F", false, 1);
    s
}

/// The executions of [`examples`] as the API lists them add up to their runs' records
/// (counts by status, flaky cases, tokens and cost by role, spent and replayed), carry
/// what started them, and every filter of every endpoint keeps what it says.
fn the_examples_executions_add_up_and_filter() {
    let s = examples();
    let v = view(&s, &[]);
    let (code, list) = request(&v, "GET", "/api/executions", None);
    assert_eq!(code, 200, "{list}");
    let list = list.as_array().expect("executions").clone();
    assert_eq!(list.len(), 2, "{list:?}");
    let (e2, e1) = (&list[0], &list[1]);
    assert_eq!(
        (
            e1["ci_run"].as_str(),
            e1["git_branch"].as_str(),
            e1["git_commit"].as_str()
        ),
        (Some("github:77:1"), Some("main"), None)
    );
    assert_eq!(
        (
            e2["ci_run"].as_str(),
            e2["git_branch"].as_str(),
            e2["git_commit"].as_str()
        ),
        (
            None,
            Some("feature/refunds"),
            Some("0123456789abcdef0123456789abcdef01234567")
        )
    );
    for e in [e1, e2] {
        let id = e["id"].as_i64().unwrap();
        let (_, one) = request(&v, "GET", &format!("/api/executions/{id}"), None);
        assert_eq!(one["execution"], *e, "the same execution both ways");
        let runs = one["runs"].as_array().expect("runs");
        assert_eq!(runs.len() as u64, e["total"].as_u64().unwrap());
        // The counts, the flaky cases and the usage, summed here from each run's record.
        let mut counts = std::collections::BTreeMap::<String, u64>::new();
        let (mut flaky, mut usage) = (0, std::collections::BTreeMap::<String, [f64; 4]>::new());
        for r in runs {
            *counts
                .entry(r["verdict"].as_str().unwrap().to_string())
                .or_default() += 1;
            let (_, run) = request(&v, "GET", &format!("/api/runs/{}", r["id"]), None);
            let rec = &run["record"];
            let st = &rec["stability"];
            if st["passed"].as_u64() > Some(0) && st["failed"].as_u64() > Some(0) {
                flaky += 1;
            }
            let tokens = |u: &Value| {
                u["prompt_tokens"].as_f64().unwrap_or(0.0)
                    + u["completion_tokens"].as_f64().unwrap_or(0.0)
            };
            for role in ["agent", "simulator", "judge"] {
                let t = usage.entry(role.to_string()).or_default();
                t[0] += tokens(&rec["usage"][role]);
                t[1] += tokens(&rec["replayed_usage"][role]);
                t[2] += rec["cost"]["by_role"][role]["spent"]
                    .as_f64()
                    .unwrap_or(0.0);
                t[3] += rec["cost"]["by_role"][role]["replayed"]
                    .as_f64()
                    .unwrap_or(0.0);
            }
            let turns = rec["turns"].as_array().map_or(0, Vec::len) as u64;
            assert_eq!(r["turns"].as_u64(), Some(turns), "{r}");
            assert_eq!(r["suite"], rec["suite"], "{r}");
        }
        assert_eq!(json!(counts), e["counts"], "execution {id}");
        assert_eq!(e["flaky"], flaky, "execution {id}");
        assert_eq!(flaky, 1, "execution {id}: `flaky` passed 3 of 4");
        for (role, [tokens, replayed, cost, replayed_cost]) in usage {
            let got = &e["usage"][&role];
            assert_eq!(
                got["tokens"].as_f64().unwrap_or(0.0),
                tokens,
                "{role}: {got}"
            );
            assert_eq!(
                got["replayed_tokens"].as_f64().unwrap_or(0.0),
                replayed,
                "{role}: {got}"
            );
            assert!(
                (got["cost"].as_f64().unwrap_or(0.0) - cost).abs() < 1e-9,
                "{role}: {got}"
            );
            assert!(
                (got["replayed_cost"].as_f64().unwrap_or(0.0) - replayed_cost).abs() < 1e-9,
                "{role}: {got}"
            );
        }
        // The random agent's `steady` reported 150 tokens a repeat, 5 repeats or more.
        assert!(
            e["usage"]["agent"]["tokens"].as_u64().unwrap() >= 750,
            "{e}"
        );
        // The replayed judge and simulator calls are priced at [llm.pricing].
        assert!(
            e["usage"]["judge"]["replayed_cost"].as_f64().unwrap() > 0.0,
            "{e}"
        );
        assert_eq!(e["currency"], "USD");
    }
    assert_eq!(e1["counts"]["error"], 1, "`crash`, each time: {e1}");
    assert_eq!(e2["counts"]["error"], 1, "{e2}");
    assert_eq!(e2["counts"]["skipped"], 1, "{e2}");
    let ids = |path: &str| -> Vec<i64> {
        let (code, list) = request(&v, "GET", path, None);
        assert_eq!(code, 200, "{path}: {list}");
        list.as_array()
            .unwrap()
            .iter()
            .map(|e| e["id"].as_i64().unwrap())
            .collect()
    };
    assert_eq!(ids("/api/executions?q=FEATURE%2Frefunds"), [2]);
    assert_eq!(ids("/api/executions?q=github%3A77"), [1]);
    assert_eq!(ids("/api/executions?q=0123456789ab"), [2]);
    assert_eq!(ids("/api/executions?status=error"), [2, 1]);
    assert_eq!(
        ids("/api/executions?status=inconclusive"),
        Vec::<i64>::new()
    );
    assert_eq!(
        ids("/api/executions?suite=unreliable&status=failed"),
        [2, 1]
    );
    assert_eq!(ids("/api/executions?suite=eliza"), [2, 1]);
    assert_eq!(ids("/api/executions?suite=nothing"), Vec::<i64>::new());
    assert_eq!(ids("/api/executions?limit=1"), [2]);
    let trials = |path: &str| -> Vec<String> {
        let (code, one) = request(&v, "GET", path, None);
        assert_eq!(code, 200, "{path}: {one}");
        let mut t: Vec<String> = one["runs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["trial"].as_str().unwrap().to_string())
            .collect();
        t.sort();
        t
    };
    assert_eq!(trials("/api/executions/2?q=STEADY"), ["unreliable::steady"]);
    assert_eq!(
        trials("/api/executions/2?q=unreliable&status=error"),
        ["unreliable::crash"]
    );
    assert_eq!(
        trials("/api/executions/2?suite=unreliable&blame=agent"),
        [
            "unreliable::crash",
            "unreliable::steady",
            "unreliable::wrong"
        ]
    );
    assert_eq!(trials("/api/executions/2?suite=unreliable").len(), 4);
    for (path, words) in [
        (
            "/api/executions?status=bogus",
            "`status=bogus`: expected one of passed, failed",
        ),
        (
            "/api/executions?limit=0",
            "`limit=0`: expected a number from 1 to 1000",
        ),
        (
            "/api/executions/2?blame=bogus",
            "`blame=bogus`: expected one of agent, simulator, judge, infrastructure",
        ),
        ("/api/executions/x", "`x` is not an execution's id"),
        ("/api/executions/9", "no execution 9"),
        (
            "/api/compare?before=1&after=2&alpha=2",
            "`alpha=2`: expected a number between 0 and 1",
        ),
    ] {
        let (code, body) = request(&v, "GET", path, None);
        assert!(code == 400 || code == 404, "{path}: {code}");
        assert!(
            body["error"].as_str().unwrap_or("").contains(words),
            "{path}: {body}"
        );
    }
    let (_, case) = request(&v, "GET", "/api/cases/unreliable%3A%3Asteady", None);
    // A repeated case's history counts its repeats: 5 passed, then 6 failed.
    assert_eq!(case["history"]["passed"], 5, "{case}");
    assert_eq!(case["history"]["failed"], 6, "{case}");
    assert_eq!(case["history"]["changed_at"], 2, "{case}");
    // `flaky` passed 3 of 4 both times: flaky since the first, its verdict unchanged.
    let (_, flaky) = request(&v, "GET", "/api/cases/unreliable%3A%3Aflaky", None);
    assert_eq!(
        (
            &flaky["history"]["passed"],
            &flaky["history"]["failed"],
            &flaky["history"]["changed_at"]
        ),
        (&json!(6), &json!(2), &json!(1)),
        "{flaky}"
    );
    let (_, cmp) = request(&v, "GET", "/api/compare?before=1&after=2", None);
    let steady = cmp["cases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["trial"] == "unreliable::steady")
        .expect("steady");
    assert_eq!(
        steady["before_counts"],
        json!({"passed": 5, "failed": 0}),
        "{steady}"
    );
    assert_eq!(
        steady["after_counts"],
        json!({"passed": 0, "failed": 6}),
        "{steady}"
    );
    // 5/5 then 0/6: P(X <= 0) = C(5,0) C(6,6) / C(11,5) = 1/462.
    assert!(
        (steady["p_value"].as_f64().unwrap() - 1.0 / 462.0).abs() < 1e-12,
        "{steady}"
    );
    assert_eq!(steady["regression"], true);
    let flaky = cmp["cases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["trial"] == "unreliable::flaky")
        .expect("flaky");
    assert_eq!(
        (flaky["change"].as_str(), flaky["regression"].as_bool()),
        (Some("same"), Some(false))
    );
    let (code, js) = raw(&v, "GET", "/assets/view.js", None);
    assert_eq!(code, 200);
    assert!(js.contains("navigator.clipboard.writeText"), "{js}");
    let (code, report) = raw(&v, "GET", "/executions/2/report", None);
    assert_eq!(code, 200);
    assert!(
        report.contains("data-trial=\"unreliable::steady\"")
            && report.contains("Execution 2</a> › report"),
        "{report}"
    );
}

/// The viewer in headless Chromium over [`examples`]: tests/browser/view.mjs clicks
/// from the executions to a case, its transcript and a comparison, checking what each
/// shows. Its screenshots stay in target/view-screenshots (or AGENTEST_VIEW_SCREENSHOTS:
/// docs/images/view refreshes the docs').
fn the_viewer_works_in_headless_chromium() -> crate::common::Needs {
    crate::reports::browser()?;
    let s = examples();
    let v = view(&s, &[]);
    let shots = std::env::var_os("AGENTEST_VIEW_SCREENSHOTS")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| crate::common::outer_target_dir().join("view-screenshots"));
    let result =
        crate::reports::browser_script("view.mjs", &[v.url.clone(), shots.display().to_string()]);
    assert!(result["passed"].as_u64().unwrap() >= 30, "{result}");
    for name in ["executions", "execution", "case", "run", "compare"] {
        let png = std::fs::read(shots.join(format!("{name}.png"))).expect("a screenshot");
        assert!(png.starts_with(b"\x89PNG\r\n\x1a\n"), "{name}.png is a PNG");
    }
    Ok(())
}

/// An execution's page open in headless Chromium while a worker runs its queued runs:
/// tests/browser/live.mjs sees them end without reloading the page itself (the page's
/// script asks the API and reloads when it changed), and the page stop following.
fn the_viewer_follows_a_run_in_headless_chromium() -> crate::common::Needs {
    crate::reports::browser()?;
    let s = filled();
    let enqueue = clean(Command::new(BIN))
        .current_dir(s.path())
        .args(["test", "-i", "suites", "--enqueue"])
        .env("AGENTEST_STORE", s.join("runs.db"))
        .env("AGENTEST_EXECUTION", "watch-me")
        .output()
        .expect("run agentest");
    assert_eq!(enqueue.status.code(), Some(0), "{enqueue:?}");
    s.write("mode.txt", "pass");
    let v = view(&s, &[]);
    let shot = crate::common::outer_target_dir().join("view-screenshots/live.png");
    let mut worker: Option<Child> = None;
    let result = crate::reports::browser_script_with(
        "live.mjs",
        &[format!("{}executions/3", v.url), shot.display().to_string()],
        |line| {
            if line == "ready" && worker.is_none() {
                worker = Some(
                    clean(Command::new(BIN))
                        .current_dir(s.path())
                        .args(["worker", "--execution", "watch-me", "--poll", "200ms"])
                        .env("AGENTEST_STORE", s.join("runs.db"))
                        .stdout(Stdio::null())
                        .stderr(Stdio::null())
                        .spawn()
                        .expect("start a worker"),
                );
            }
        },
    );
    if let Some(mut w) = worker {
        let _ = w.kill();
        let _ = w.wait();
    }
    assert!(result["passed"].as_u64().unwrap() >= 6, "{result}");
    Ok(())
}

/// `--open` hands the URL it prints to the desktop's opener (here an `xdg-open` of the
/// test's own, first on PATH, that writes down what it was given); without one, it
/// says so on stderr and serves all the same.
fn open_hands_the_url_to_the_desktops_opener() {
    use std::os::unix::fs::PermissionsExt;
    let s = filled();
    let bin = s.join("bin");
    std::fs::create_dir_all(&bin).expect("a bin folder");
    let opener = bin.join("xdg-open");
    std::fs::write(
        &opener,
        // Written whole, then renamed: the test waits for the file to appear.
        format!(
            "#!/bin/sh\nprintf '%s' \"$1\" > {0}.part && mv {0}.part {0}\n",
            s.join("opened.txt").display()
        ),
    )
    .expect("write xdg-open");
    std::fs::set_permissions(&opener, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let start = |path: &std::ffi::OsStr| {
        let mut cmd = clean(Command::new(BIN));
        cmd.current_dir(s.path())
            .args(["view", "--open"])
            .env("AGENTEST_STORE", s.join("runs.db"))
            .env("PATH", path)
            .stderr(Stdio::piped());
        spawned(cmd)
    };
    let path = std::env::join_paths([bin.clone(), "/usr/bin".into(), "/bin".into()]).unwrap();
    let v = start(&path);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while !s.join("opened.txt").exists() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let url = v.url.clone();
    drop(v);
    assert_eq!(
        std::fs::read_to_string(s.join("opened.txt"))
            .ok()
            .as_deref(),
        Some(url.as_str())
    );
    // No opener at all.
    let empty = s.join("empty");
    std::fs::create_dir_all(&empty).expect("an empty folder");
    let mut v = start(empty.as_os_str());
    let mut stderr = v.child.stderr.take().expect("stderr");
    let (code, _) = request(&v, "GET", "/api/executions", None);
    assert_eq!(code, 200, "it serves without an opener");
    drop(v);
    let mut said = String::new();
    stderr.read_to_string(&mut said).expect("read stderr");
    assert!(
        said.contains("could not open a browser (\"xdg-open\": No such file or directory")
            && said.contains("open http://127.0.0.1:"),
        "{said}"
    );
}
