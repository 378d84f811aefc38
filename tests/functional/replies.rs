//! Agent replies that break the protocol in ways the error must name plainly: a real
//! loopback HTTP agent (Python's http.server, in a child process) answering with a
//! negative token count, a gzip-compressed body (with and without `Content-Encoding`),
//! and a 429 whose `Retry-After` is longer than the case has left.

use std::process::Command;

use crate::common::{clean, finish, PyServer, Report, Scratch, BIN};

/// Answers by the request's input.
const SERVER: &str = r#"
import gzip, json
from serve import Handler, serve
class H(Handler):
    def do_POST(self):
        said = self.body_json()["input"]
        headers = {}
        code = 200
        body = json.dumps({"content": "hi"}).encode()
        if said == "negative usage":
            body = json.dumps({"content": "hi", "usage": {"input_tokens": -5}}).encode()
        elif said == "gzip":
            body = gzip.compress(body)
            headers["Content-Encoding"] = "gzip"
        elif said == "bare gzip":
            body = gzip.compress(body)
        elif said == "wait":
            code = 429
            body = b"slow down"
            headers["Retry-After"] = "99999"
        self.answer(code, body, headers)
serve(H)
"#;

fn server(s: &Scratch) -> (PyServer, u16) {
    let server = PyServer::start(s, "server.py", SERVER, &[]);
    let port = server.port;
    (server, port)
}

fn misbehaving_replies_are_named_with_the_field_and_the_fix() {
    let s = Scratch::named("replies", "named");
    let (_server, port) = server(&s);
    let url = format!("http://127.0.0.1:{port}/");
    s.write(
        "suites/agentest.toml",
        &format!("[agent]\ntype = \"http\"\nurl = \"{url}\"\n"),
    );
    s.write_suite(
        "suites/s.jsonl",
        &[
            r#"{"id": "usage", "input": "negative usage"}"#,
            r#"{"id": "gzip", "input": "gzip"}"#,
            r#"{"id": "bare", "input": "bare gzip"}"#,
            r#"{"id": "wait", "input": "wait", "timeout": "20s"}"#,
        ],
    );
    let mut cmd = clean(Command::new(BIN));
    cmd.current_dir(s.path())
        .args(["test", "-i", "suites", "-o", "r.jsonl"])
        .env("AGENTEST_STORE", "off");
    let run = finish(&mut cmd);
    assert_eq!(run.code, 1, "{run:?}");
    let report = Report::read(&s.join("r.jsonl"));
    let error = |id: &str| report.error(&format!("s::{id}")).to_string();
    assert!(
        error("usage").ends_with("`usage.input_tokens` must be a whole number of tokens, 0 or more (got -5); report the count the model gave, or leave `usage` out"),
        "{}",
        error("usage")
    );
    let compressed = format!("agent at {url} answered with a gzip-compressed body, which agentest does not decode (it sends no Accept-Encoding, so asks for none): have the server answer with plain JSON");
    for id in ["gzip", "bare"] {
        assert!(error(id).ends_with(&compressed), "{id}: {}", error(id));
    }
    let wait = error("wait");
    assert!(
        wait.contains(&format!("agent at {url} answered HTTP 429 Too Many Requests: slow down; the server asked to wait 99999s before trying again (Retry-After), longer than the "))
            && wait.ends_with(" left before the case's deadline, so agentest did not wait: raise the case's `timeout` (or `[run] timeout`) above 99999s to wait for it"),
        "{wait}"
    );
}

pub fn tests() -> Vec<libtest_mimic::Trial> {
    crate::trials!(misbehaving_replies_are_named_with_the_field_and_the_fix)
}
