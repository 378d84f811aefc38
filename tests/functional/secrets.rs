//! Secrets echoed back: a real loopback HTTP agent (Python's http.server, in a child
//! process) that answers with the `Authorization` header it was sent, in error bodies
//! (401, 500, a retried 503) and in a reply. The token, configured as `${VAR}`, must
//! reach no output and no file: not stdout, not stderr, not the reports, not the golden
//! files, not the run store's bytes.

use std::process::Command;

use crate::common::{clean, finish, PyServer, Scratch, BIN};

const TOKEN: &str = "tok-3f9a7c1e5b2d-never-shown";

/// Answers by the request's input: `deny` a 401, `crash` a 500, `busy` a 503 (retried),
/// `echo` a 200 reply; each quoting the `Authorization` header.
const ECHO_SERVER: &str = r#"
import json
from serve import Handler, serve
class H(Handler):
    def do_POST(self):
        req = self.body_json()
        auth = self.headers.get("Authorization", "")
        if self.path.endswith("/chat/completions"):
            said = req["messages"][-1]["content"]
            reply = {"role": "assistant", "content": "your key was " + auth}
            body = json.dumps({"id": "x", "object": "chat.completion", "model": req["model"],
                "choices": [{"index": 0, "message": reply, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 3, "completion_tokens": 4, "total_tokens": 7}})
            return self.answer(200, body)
        said = req["input"]
        if "deny" in said:
            code, body = 401, "unauthorized: the header was " + auth
        elif "crash" in said:
            code, body = 500, json.dumps({"error": "boom", "headers": {"authorization": auth}})
        elif "busy" in said:
            code, body = 503, "busy, come back later (" + auth + ")"
        else:
            code, body = 200, json.dumps({"content": "your header was " + auth})
        self.answer(code, body)
serve(H)
"#;

fn echo_server(s: &Scratch) -> (PyServer, u16) {
    let server = PyServer::start(s, "server.py", ECHO_SERVER, &[]);
    let port = server.port;
    (server, port)
}

/// Every file under `s` whose bytes hold `needle`.
fn files_holding(s: &Scratch, needle: &str) -> Vec<String> {
    s.files()
        .into_iter()
        .filter(|p| {
            std::fs::read(p)
                .map(|b| b.windows(needle.len()).any(|w| w == needle.as_bytes()))
                .unwrap_or(false)
        })
        .map(|p| p.display().to_string())
        .collect()
}

fn a_token_echoed_by_the_server_reaches_no_output_and_no_file() {
    let s = Scratch::named("secrets", "echo");
    let (_server, port) = echo_server(&s);
    s.write(
        "suites/agentest.toml",
        &format!(
            "[agent]\ntype = \"http\"\nurl = \"http://127.0.0.1:{port}/\"\nheaders = {{ Authorization = \"Bearer ${{SECRET_TOKEN_FOR_TEST}}\" }}\nretries = 1\n\n[golden]\nenabled = true\n"
        ),
    );
    s.write_suite(
        "suites/s.jsonl",
        &[
            r#"{"id": "deny", "input": "deny me"}"#,
            r#"{"id": "crash", "input": "crash now"}"#,
            r#"{"id": "busy", "input": "busy today"}"#,
            r#"{"id": "echo", "input": "echo it", "assertions": [{"type": "contains", "value": "your header was"}]}"#,
        ],
    );
    for report in ["r.jsonl", "r.html", "r.json"] {
        let mut cmd = clean(Command::new(BIN));
        cmd.current_dir(s.path())
            .args(["test", "-i", "suites", "-v", "-o", report])
            .env("SECRET_TOKEN_FOR_TEST", TOKEN)
            .env("AGENTEST_STORE", s.join("store.db"))
            .env("AGENTEST_UPDATE", "new");
        let run = finish(&mut cmd);
        assert_eq!(run.code, 1, "{run:?}");
        assert!(!run.stdout.contains(TOKEN), "stdout:\n{}", run.stdout);
        assert!(!run.stderr.contains(TOKEN), "stderr:\n{}", run.stderr);
        // The echoes happened, masked: the 401 and 500 bodies, the retried 503 (on
        // stderr too), and the reply.
        for shown in [
            "unauthorized: the header was Bearer [secret]",
            r#""authorization": "Bearer [secret]""#,
            "busy, come back later (Bearer [secret])",
            "your header was Bearer [secret]",
        ] {
            assert!(run.stdout.contains(shown), "{shown:?} in {run:?}");
        }
        assert!(
            run.stderr
                .contains("busy, come back later (Bearer [secret])"),
            "{run:?}"
        );
    }
    assert!(s.exists("suites/s.golden/echo.txt.new"));
    assert_eq!(files_holding(&s, TOKEN), Vec::<String>::new());
}

/// A model endpoint that echoes its API key: the recorded cassette (a file users commit)
/// holds the mask, and still replays offline with the server gone.
fn a_key_echoed_by_a_model_reaches_no_cassette_and_the_cassette_replays() {
    let s = Scratch::named("secrets", "cassette");
    let (server, port) = echo_server(&s);
    s.write(
        "suites/agentest.toml",
        &format!(
            "[agent]\ntype = \"openai\"\n\n[llm]\nbase_url = \"http://127.0.0.1:{port}/v1\"\nmodel = \"m\"\napi_key_env = \"SECRET_KEY_FOR_TEST\"\n"
        ),
    );
    s.write_suite(
        "suites/s.jsonl",
        &[r#"{"id": "key", "input": "what is my key?", "assertions": [{"type": "contains", "value": "your key was Bearer "}]}"#],
    );
    let run = |offline: bool| {
        let mut cmd = clean(Command::new(BIN));
        cmd.current_dir(s.path())
            .args(["test", "-i", "suites", "-o", "r.jsonl"])
            .env("SECRET_KEY_FOR_TEST", TOKEN);
        if offline {
            cmd.env("AGENTEST_CASSETTES", "strict");
        }
        finish(&mut cmd)
    };
    let recorded = run(false);
    assert_eq!(recorded.code, 0, "{recorded:?}");
    let cassette = s.read("suites/.cassettes/s/key.jsonl");
    assert!(
        cassette.contains("your key was Bearer [secret]"),
        "{cassette}"
    );
    drop(server);
    let replayed = run(true);
    assert_eq!(replayed.code, 0, "{replayed:?}");
    assert!(
        replayed.stdout.contains("(0 retried, 1 replayed)"),
        "{replayed:?}"
    );
    assert_eq!(files_holding(&s, TOKEN), Vec::<String>::new());
}

pub fn tests() -> Vec<libtest_mimic::Trial> {
    crate::trials!(
        a_token_echoed_by_the_server_reaches_no_output_and_no_file,
        a_key_echoed_by_a_model_reaches_no_cassette_and_the_cassette_replays,
    )
}
