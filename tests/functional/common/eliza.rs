//! A real ElizaOS 1.7.2 server for the `eliza` kind's tests: tests/eliza/start.mjs run
//! with node in the folder where .ci/run installed tests/eliza/package.json
//! (`AGENTEST_ELIZA_DIR`), its agent's model a scripted chat-completions server on
//! loopback ([`ELIZA_MODEL`]).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::{need, Missing, PyServer, Scratch};

/// The folder where .ci/run installed tests/eliza/package.json (`npm ci`), and `node`.
pub fn eliza_server() -> super::Needs {
    eliza_dir().map(|_| ())
}

pub fn eliza_dir() -> Result<PathBuf, Missing> {
    let why = "run .ci/run, or `npm ci` in a copy of tests/eliza/ and set AGENTEST_ELIZA_DIR to it";
    let Some(dir) = std::env::var_os("AGENTEST_ELIZA_DIR").map(PathBuf::from) else {
        return need("a real ElizaOS server (AGENTEST_ELIZA_DIR)", why);
    };
    if !dir
        .join("node_modules/@elizaos/server/package.json")
        .is_file()
    {
        return need(
            format!("@elizaos/server installed in {}", dir.display()),
            why,
        );
    }
    let node = Command::new("node").arg("--version").output();
    if !node.is_ok_and(|o| o.status.success()) {
        return need("node", "install Node.js 20");
    }
    Ok(dir)
}

/// The scripted model of the real server's agent, an OpenAI-compatible server on
/// loopback: each chat completion is the XML reply ElizaOS's bootstrap asks for,
/// echoing the received message and what the conversation holds; "please ignore ..."
/// is answered with the IGNORE action and no text. Every prompt is appended to the file
/// its argument names; embeddings are zero vectors.
pub const ELIZA_MODEL: &str = r##"
import json, re, sys
from serve import Handler, serve
PROMPTS = sys.argv[1]

def completion(xml):
    return json.dumps({"id": "c", "object": "chat.completion", "created": 0, "model": "scripted",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": xml}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}})

class H(Handler):
    def do_GET(self):
        self.answer(200, json.dumps({"object": "list", "data": [{"id": "scripted", "object": "model"}]}))
    def do_POST(self):
        body = self.body_json()
        if self.path.endswith("/embeddings"):
            data = [{"object": "embedding", "index": 0, "embedding": [0.0] * 1536}]
            return self.answer(200, json.dumps({"object": "list", "data": data, "model": "scripted",
                "usage": {"prompt_tokens": 1, "total_tokens": 1}}))
        prompt = body["messages"][-1]["content"]
        with open(PROMPTS, "a") as f:
            f.write(prompt + "\n=====\n")
        said = re.search(r"# Received Message\n[^:\n]*: (.*)\n", prompt).group(1)
        history = prompt.split("# Conversation Messages\n", 1)[1].split("\n\n", 1)[0]
        lines = [l.split(": ", 1)[1] for l in history.splitlines() if "] " in l and ": " in l]
        if said.startswith("please ignore"):
            xml = "<response><thought>not for me</thought><actions>IGNORE</actions><providers></providers><text></text></response>"
        else:
            xml = ("<response><thought>replying to %s</thought><actions>REPLY</actions><providers></providers>"
                   "<text>Ada heard: %s (%d in this conversation, first: %s)</text></response>"
                   % (said, said, len(lines), lines[0] if lines else "?"))
        self.answer(200, completion(xml))

serve(H)
"##;

/// A real ElizaOS server (agent "Ada") and its scripted model, stopped by their PIDs
/// when dropped.
pub struct ElizaServer {
    child: Child,
    /// The port it listens on (loopback).
    pub port: u16,
    log: PathBuf,
    /// Every prompt the model received, separated by `\n=====\n`.
    pub prompts: PathBuf,
    _model: PyServer,
}

impl ElizaServer {
    /// Starts the scripted model ([`ELIZA_MODEL`]) and tests/eliza/start.mjs (copied
    /// into the installed folder, where its imports resolve) on a free loopback port,
    /// X-API-KEY `token` required; waits until it says it listens.
    pub fn start(s: &Scratch, token: &str) -> ElizaServer {
        let dir = eliza_dir().expect("checked by the need");
        let prompts = s.join("eliza-prompts.txt");
        let model = PyServer::start(s, "eliza_model.py", ELIZA_MODEL, &[prompts.as_os_str()]);
        let model_url = format!("http://127.0.0.1:{}/v1", model.port);
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/eliza/start.mjs");
        let copy = dir.join("agentest-start.mjs");
        let temp = dir.join(format!("agentest-start.{}.tmp", std::process::id()));
        std::fs::copy(&script, &temp).expect("copy start.mjs");
        std::fs::rename(&temp, &copy).expect("put start.mjs in place");
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let log = s.join("eliza.log");
        let out = std::fs::File::create(&log).expect("create the server's log");
        // SERVER_HOST: it binds 0.0.0.0 otherwise. SENTRY_DSN: it reports errors to a
        // public Sentry project unless given another (here one that cannot answer).
        let child = Command::new("node")
            .arg(&copy)
            .current_dir(&dir)
            .env("SERVER_HOST", "127.0.0.1")
            .env("SERVER_PORT", port.to_string())
            .env("AGENT_NAME", "Ada")
            .env("PGLITE_DATA_DIR", s.join("eliza-db"))
            .env("HOME", s.path())
            .env("ELIZA_UI_ENABLE", "false")
            .env("SENTRY_DSN", "http://public@127.0.0.1:9/1")
            .env("LOG_LEVEL", "warn")
            .env("ELIZA_SERVER_AUTH_TOKEN", token)
            .env("OPENAI_API_KEY", "not-a-key")
            .env("OPENAI_BASE_URL", &model_url)
            .env("OPENAI_SMALL_MODEL", "scripted")
            .env("OPENAI_LARGE_MODEL", "scripted")
            .stdin(Stdio::null())
            .stdout(out.try_clone().expect("log"))
            .stderr(out)
            .spawn()
            .expect("start node");
        let mut server = ElizaServer {
            child,
            port,
            log,
            prompts,
            _model: model,
        };
        server.wait_ready(Duration::from_secs(120));
        server
    }

    /// The server's base URL.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    fn wait_ready(&mut self, bound: Duration) {
        let started = Instant::now();
        let ready = format!("listening on {}", self.port);
        while started.elapsed() < bound {
            let log = std::fs::read_to_string(&self.log).unwrap_or_default();
            if log.lines().any(|l| l == ready) {
                return;
            }
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!("the ElizaOS server exited ({status}); its log:\n{log}");
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        panic!(
            "the ElizaOS server did not listen within {bound:?}; its log:\n{}",
            std::fs::read_to_string(&self.log).unwrap_or_default()
        );
    }
}

impl Drop for ElizaServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
