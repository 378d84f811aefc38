//! The guide's "Using it in your crate" (`docs/guide/crate.md`), followed literally in a
//! new crate: its files are written as the page shows them (and as `agentest init` writes
//! them, which the README's example shows too), its `cargo test` commands run with the
//! filters it gives, then the `agentest` commands, then the Rust harness examples must
//! compile without a warning.
//!
//! Two liberties, both outside the crate: the dependency's path points at this
//! repository (the page says `../agentest`, "your clone"), and the crate builds into
//! this run's target directory with agentest's own profile (a `.cargo/config.toml` one
//! folder up), so it reuses the dependencies already compiled instead of building
//! them all again.

use std::path::{Path, PathBuf};

use crate::common::{clean_command, finish, outer_target_dir, PyServer, Run, Scratch, BIN};

/// The page the guide's crate walk-through is on.
const GUIDE: &str = include_str!("../../docs/guide/crate.md");
/// The front page, whose example shows some of the same files.
const README: &str = include_str!("../../README.md");

/// A fenced block of a page: its language and text.
struct Block {
    lang: String,
    text: String,
}

impl Block {
    /// The file a block shows, named by its first line (`# agent.py: ...`,
    /// `// tests/agent_tests.rs: ...`), and its text.
    fn file(&self) -> Option<(String, &str)> {
        let first = self.text.lines().next()?;
        let named = first
            .strip_prefix("# ")
            .or_else(|| first.strip_prefix("// "))?;
        let name = named.split([':', ' ']).next()?;
        (name.contains('.') && !name.contains(char::is_whitespace))
            .then(|| (name.to_string(), self.text.as_str()))
    }
}

/// The fenced blocks of the guide's crate page.
fn guide() -> Vec<Block> {
    assert!(
        GUIDE.starts_with("# Using it in your crate\n"),
        "docs/guide/crate.md is no longer the crate walk-through; update this test"
    );
    blocks(GUIDE)
}

/// The fenced blocks of a Markdown text.
fn blocks(text: &str) -> Vec<Block> {
    let mut blocks = Vec::new();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        let Some(lang) = line.strip_prefix("```") else {
            continue;
        };
        let mut text = String::new();
        for l in lines.by_ref() {
            if l.starts_with("```") {
                break;
            }
            text.push_str(l);
            text.push('\n');
        }
        blocks.push(Block {
            lang: lang.to_string(),
            text,
        });
    }
    blocks
}

/// The commands of the `sh` blocks that start with `program`, comments dropped.
fn commands(blocks: &[Block], program: &str) -> Vec<String> {
    blocks
        .iter()
        .filter(|b| b.lang == "sh")
        .flat_map(|b| b.text.lines())
        .map(|l| l.split(" #").next().unwrap_or_default().trim().to_string())
        .filter(|l| l.starts_with(&format!("{program} ")))
        .collect()
}

/// Splits a command line as a shell would for the guide's simple commands: words,
/// and double-quoted strings.
fn words(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut word = String::new();
    let mut quoted = false;
    let mut any = false;
    for c in line.chars() {
        match c {
            '"' => {
                quoted = !quoted;
                any = true;
            }
            ' ' if !quoted => {
                if any {
                    out.push(std::mem::take(&mut word));
                    any = false;
                }
            }
            c => {
                word.push(c);
                any = true;
            }
        }
    }
    if any {
        out.push(word);
    }
    out
}

/// The crate: `cargo new --lib` plus the page's files.
struct Crate {
    _scratch: Scratch,
    dir: PathBuf,
}

impl Crate {
    fn new(blocks: &[Block]) -> Crate {
        let scratch = Scratch::named("readme", "crate");
        let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
        // One folder up, as a user's own cargo config would be: agentest's profile.
        scratch.write(
            ".cargo/config.toml",
            "[profile.dev.package.\"*\"]\ndebug = false\n\n[profile.dev]\ndebug = \"line-tables-only\"\n",
        );
        let dir = scratch.join("my-crate");
        let files: Vec<(String, &str)> = blocks.iter().filter_map(Block::file).collect();
        let manifest = files
            .iter()
            .find(|(name, _)| name == "Cargo.toml")
            .expect("the page shows what to add to Cargo.toml")
            .1;
        assert!(
            manifest.contains("agentest = { path = \"../agentest\" }"),
            "the guide's dependency changed; update this test\n{manifest}"
        );
        let manifest = manifest.replace(
            "path = \"../agentest\"",
            &format!("path = {:?}", repo.display().to_string()),
        );
        std::fs::create_dir_all(dir.join("src")).unwrap();
        std::fs::write(dir.join("src/lib.rs"), "").unwrap();
        std::fs::write(
            dir.join("Cargo.toml"),
            format!("[package]\nname = \"my-crate\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n{manifest}"),
        )
        .unwrap();
        // The same versions as agentest's own build, resolved offline.
        std::fs::copy(repo.join("Cargo.lock"), dir.join("Cargo.lock")).unwrap();
        for (name, text) in &files {
            if name != "Cargo.toml" {
                let path = dir.join(name);
                std::fs::create_dir_all(path.parent().unwrap()).unwrap();
                std::fs::write(path, text).unwrap();
            }
        }
        Crate {
            _scratch: scratch,
            dir,
        }
    }

    fn run(&self, program: &str, args: &[String]) -> Run {
        let mut cmd = clean_command(program, &self.dir);
        cmd.args(args)
            .env("CARGO_TARGET_DIR", outer_target_dir())
            .env("CARGO_NET_OFFLINE", "true")
            .stdin(std::process::Stdio::null());
        finish(&mut cmd)
    }

    /// Runs a command line of the guide (`cargo ...` or `agentest ...`).
    fn command(&self, line: &str) -> Run {
        let words = words(line);
        let program = match words[0].as_str() {
            "agentest" => BIN.to_string(),
            "cargo" => std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()),
            other => panic!("no way to run `{other}` from the guide"),
        };
        self.run(&program, &words[1..])
    }
}

/// The files `agentest init` writes are the ones the guide shows, and the ones the
/// README's example shows.
fn init_writes_the_files_the_docs_show() {
    let s = Scratch::named("readme", "init");
    s.write(
        "Cargo.toml",
        "[package]\nname = \"x\"\nversion = \"0.1.0\"\n",
    );
    let run = finish(
        std::process::Command::new(BIN)
            .arg("init")
            .current_dir(s.path()),
    );
    assert_eq!(run.code, 0, "{run:?}");
    let written = [
        "agent.py",
        "agent-tests/agentest.toml",
        "agent-tests/smoke.jsonl",
        "tests/agent_tests.rs",
    ];
    for file in written {
        assert!(run.stdout.contains(&format!("wrote {file}")), "{run:?}");
    }
    // The guide shows every file; the README's example all but the agent.
    for (page, text, shows) in [
        ("the guide", GUIDE, &written[..]),
        ("the README", README, &written[1..]),
    ] {
        let blocks = blocks(text);
        let shown: Vec<(String, &str)> = blocks.iter().filter_map(Block::file).collect();
        for file in shows {
            let written = std::fs::read_to_string(s.join(file))
                .unwrap_or_else(|e| panic!("init did not write {file}: {e}\n{run:?}"));
            let (_, in_page) = shown
                .iter()
                .find(|(name, _)| name == file)
                .unwrap_or_else(|| panic!("{page} does not show {file}"));
            assert_eq!(&written, in_page, "{file}: init and {page} differ");
        }
        // The Cargo.toml lines it prints are the page's too.
        let (_, manifest) = shown
            .iter()
            .find(|(n, _)| n == "Cargo.toml")
            .unwrap_or_else(|| panic!("{page} does not show Cargo.toml"));
        for line in manifest.lines().skip(1).filter(|l| !l.is_empty()) {
            assert!(
                run.stdout.contains(line),
                "{page}: {line:?} not printed\n{run:?}"
            );
        }
    }
    // The starter runs green with the binary.
    let run = finish(
        std::process::Command::new(BIN)
            .args(["test", "-i", "agent-tests", "--color", "never"])
            .current_dir(s.path())
            .env_remove("AGENTEST_CONFIG"),
    );
    assert_eq!(run.code, 0, "{run:?}");
    assert!(run.stdout.contains("Passed:  2"), "{run:?}");
    // A second init overwrites nothing.
    let again = finish(
        std::process::Command::new(BIN)
            .arg("init")
            .current_dir(s.path()),
    );
    assert_eq!(again.code, 2, "{again:?}");
    assert!(
        again.stderr.contains("error: not overwriting agent.py, agent-tests/agentest.toml, agent-tests/smoke.jsonl, tests/agent_tests.rs; move them away, or pass --force to replace them"),
        "{again:?}"
    );
}

/// The guide's crate page followed step by step in a new crate, with a Python agent
/// that does not flush too.
fn the_guide_crate_page_works_as_written() {
    let blocks = guide();
    let krate = Crate::new(&blocks);
    let cargo = commands(&blocks, "cargo");
    let expected: [(&str, &[&str]); 5] = [
        (
            "cargo test --test agent_tests",
            &[
                "test smoke::echoes ... ok",
                "test smoke::greets ... ok",
                "2 passed",
            ],
        ),
        (
            "cargo test --test agent_tests -- smoke::",
            &[
                "test smoke::echoes ... ok",
                "test smoke::greets ... ok",
                "2 passed",
            ],
        ),
        (
            "cargo test --test agent_tests -- smoke::greets --exact",
            &["test smoke::greets ... ok", "1 passed"],
        ),
        (
            "cargo test --test agent_tests -- --list",
            &["smoke::echoes: test", "smoke::greets: test"],
        ),
        ("cargo nextest run", &["2 tests run: 2 passed"]),
    ];
    let shown: Vec<&str> = cargo
        .iter()
        .filter(|c| !c.starts_with("cargo install"))
        .map(String::as_str)
        .collect();
    assert_eq!(
        shown,
        expected.iter().map(|(c, _)| *c).collect::<Vec<_>>(),
        "the guide's commands changed; update this test"
    );
    for (line, wanted) in expected {
        let run = krate.command(line);
        // cargo-nextest is part of the toolchain this project asks for.
        let both = format!("{}\n{}", run.stdout, run.stderr);
        assert_eq!(run.code, 0, "{line}\n{run:?}");
        for w in wanted {
            assert!(both.contains(w), "{line}: expected {w:?}\n{run:?}");
        }
    }

    // The binary, as the guide runs it (installed: here, the one just built).
    let binary = commands(&blocks, "agentest");
    assert_eq!(
        binary,
        [
            "agentest test -i agent-tests",
            "agentest test -i \"Hello there\""
        ]
    );
    let run = krate.command(&binary[0]);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(run.stdout.contains("Passed:  2"), "{run:?}");
    let run = krate.command(&binary[1]);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(
        run.stdout.contains("ℹ Config: agent-tests/agentest.toml"),
        "{run:?}"
    );
    assert!(run.stdout.contains("Passed:  1"), "{run:?}");

    // The agent a newcomer writes first: no flush.
    let agent = krate.dir.join("agent.py");
    let text = std::fs::read_to_string(&agent).unwrap();
    assert!(text.contains(", flush=True)"), "{text}");
    std::fs::write(&agent, text.replace(", flush=True)", ")")).unwrap();
    let run = krate.command("cargo test --test agent_tests");
    assert_eq!(run.code, 0, "an unflushed agent\n{run:?}");
    assert!(run.stdout.contains("2 passed"), "{run:?}");

    // The Rust harness examples compile without a warning.
    let examples: Vec<&Block> = blocks
        .iter()
        .filter(|b| b.lang == "rust" && b.text.contains("fn main()"))
        .collect();
    assert_eq!(examples.len(), 2, "the guide's Rust examples changed");
    for example in examples {
        std::fs::write(krate.dir.join("tests/agent_tests.rs"), &example.text).unwrap();
        let run = krate.run(
            &std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()),
            &["test", "--test", "agent_tests", "--no-run"].map(String::from),
        );
        assert_eq!(run.code, 0, "{}\n{run:?}", example.text);
        assert!(
            !run.stderr.contains("warning"),
            "the example compiles with warnings:\n{}\n{run:?}",
            example.text
        );
    }
}

/// An agent with an API of its own, as `init --kind custom` expects it: `POST /chat`
/// answering `{"reply": ...}`.
const CHAT_API: &str = r#"
import json
from serve import Handler, serve
class H(Handler):
    def do_POST(self):
        req = self.body_json()
        body = json.dumps({"reply": "you said " + req["message"]})
        self.answer(200 if self.path == "/chat" else 404, body)
serve(H)
"#;

/// `agentest init --kind K` writes that kind's table and a smoke case that needs only
/// an answer, and no agent: each loads (`--dry-run` builds the agent), and the `custom`
/// one, pointed at a real server of that shape, runs green.
fn init_writes_a_table_for_each_agent_kind() {
    let s = Scratch::named("readme", "init-kinds");
    for (kind, table) in [
        ("langgraph", "type = \"langgraph\""),
        ("a2a", "type = \"a2a\""),
        ("eliza", "type = \"eliza\""),
        ("openai-chat", "format = \"openai-chat\""),
        ("custom", "format = \"custom\""),
    ] {
        let run = finish(
            std::process::Command::new(BIN)
                .args(["init", kind, "--kind", kind])
                .current_dir(s.path()),
        );
        assert_eq!(run.code, 0, "{kind}: {run:?}");
        assert!(!s.exists(&format!("{kind}/agent.py")), "{kind}: {run:?}");
        let config = s.read(&format!("{kind}/agent-tests/agentest.toml"));
        assert!(config.contains(table), "{kind}: {config}");
        let dry = finish(
            std::process::Command::new(BIN)
                .args(["test", "-i", "agent-tests", "--dry-run"])
                .current_dir(s.join(kind))
                .env_remove("AGENTEST_CONFIG"),
        );
        assert_eq!(dry.code, 0, "{kind}: {dry:?}");
        assert!(
            dry.stdout.contains("1 case, 0 with errors"),
            "{kind}: {dry:?}"
        );
    }
    let server = PyServer::start(&s, "api.py", CHAT_API, &[]);
    let config = s
        .read("custom/agent-tests/agentest.toml")
        .replace("127.0.0.1:8000", &format!("127.0.0.1:{}", server.port));
    s.write("custom/agent-tests/agentest.toml", &config);
    let run = finish(
        std::process::Command::new(BIN)
            .args(["test", "-i", "agent-tests", "--color", "never"])
            .current_dir(s.join("custom"))
            .env_remove("AGENTEST_CONFIG")
            .env("AGENTEST_STORE", "off"),
    );
    assert_eq!(run.code, 0, "{run:?}");
    assert!(run.stdout.contains("Passed:  1"), "{run:?}");
}

pub fn tests() -> Vec<libtest_mimic::Trial> {
    crate::trials![
        init_writes_the_files_the_docs_show,
        init_writes_a_table_for_each_agent_kind,
        the_guide_crate_page_works_as_written,
    ]
}
