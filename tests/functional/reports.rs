//! The report formats, built from a real run: the `agentest` binary runs scratch suites
//! against the example expense agent with `-o run.jsonl`; the records are read back and
//! rendered as JSON, Markdown, JUnit XML and HTML, and each is checked for content. The
//! HTML report is also opened in headless Chromium (tests/browser/check.mjs), and so is
//! the report of a run of a traced agent, for its span waterfall.
//!
//! The rendered files stay in `target/tmp/reports-run-<pid>/` for inspection (earlier
//! runs' folders are removed after ten minutes, so concurrent runs never share one). Set
//! `AGENTEST_SCREENSHOT=path.png` to keep the browser test's screenshot somewhere else
//! (`docs/report.png` is made that way).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use crate::common::{expense_agent_section, need, Needs, BIN};
use agentest::__private::report::{self, CaseReport, Format, RunInfo, Status, Summary};
use serde_json::Value;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// The failing case the browser test expands, and a passing one it expects hidden.
const FAILING: &str = "expense-flow::receipt";
const PASSING: &str = "expense::greet";

const EXPENSE: &str = r#"// Single-turn cases.
{"id": "greet", "name": "Greets back", "input": "Hello", "tags": ["smoke"], "assertions": [{"type": "contains", "value": "Hello"}]}
{"id": "policy", "name": "Looks up the meal policy", "input": "What is the meal policy?", "tags": ["smoke", "tools"], "assertions": [{"type": "tool_called", "name": "get_policy"}, {"type": "contains", "value": "$75"}]}
{"id": "approval", "name": "Large purchases need approval", "input": "Equipment purchase, $100,000", "assertions": [{"type": "contains", "value": "manager approval"}, {"type": "tool_called", "name": "create_expense", "negate": true}]}
{"id": "xss", "name": "Echoes <b>markup</b> as text", "input": "<script>alert(1)</script>", "tags": ["security"], "assertions": [{"type": "contains", "value": "alert(1)"}]}
{"id": "later", "name": "Not ready yet", "skip": true, "input": "Hello"}
"#;

const FLOW: &str = r#"// Multi-turn cases and cases that go wrong in every way.
{"id": "T001", "name": "Happy path", "turns": [{"input": "I want to submit an expense report", "assertions": [{"type": "contains", "value": "type of expense"}]}, {"input": "Business travel to Beijing, $3500", "assertions": [{"type": "tool_called", "name": "create_expense"}]}, {"input": "Yes, confirm", "assertions": [{"type": "contains", "value": "submitted"}]}], "final_assertions": [{"type": "json_path", "path": "$.expense.status", "value": "submitted"}]}
{"id": "receipt", "name": "Asks for a receipt above $25", "tags": ["tools"], "turns": [{"input": "I want to submit an expense", "assertions": [{"type": "contains", "value": "type of expense"}]}, {"input": "Meal with a client, $120", "assertions": [{"type": "tool_called", "name": "create_expense"}, {"type": "json_path", "path": "$.expense.amount", "value": 120}, {"type": "contains", "value": "receipt", "message": "meals above $25 need a receipt"}]}]}
{"id": "crash", "name": "Agent crashes", "input": "CRASH please", "assertions": [{"type": "contains", "value": "never"}]}
{"id": "slow", "name": "Agent too slow", "input": "SLEEP 3", "timeout": "300ms", "assertions": [{"type": "contains", "value": "slept"}]}
{"id": "ctrl", "name": "Control characters", "input": "bell \u0007 and \u001b[31mred\u001b[0m", "assertions": [{"type": "contains", "value": "green"}]}
{"id": "typo", "input": "Hello", "assertions": [{"type": "contians", "value": "Hello"}]}
"#;

const DYNAMIC: &str = r#"// Dynamic cases: a scripted user.
{"id": "submit", "name": "Files a travel expense", "input": "Hi, I need to file an expense", "simulator": {"use": "script", "script": [{"when": "(?i)type", "say": "Travel, $500"}, {"when": "(?i)confirm", "say": "Yes, confirm"}]}, "checkpoints": [{"id": "ask", "description": "asks for the expense type", "assert": {"type": "contains", "value": "type"}}, {"id": "create", "after": ["ask"], "assert": {"type": "tool_called", "name": "create_expense"}}, {"id": "done", "after": ["create"], "assert": {"type": "contains", "value": "submitted"}}], "max_turns": 6}
{"id": "endless", "name": "Never drafts", "input": "I want to submit an expense", "simulator": {"use": "script", "script": [{"say": "hmm"}]}, "checkpoints": [{"id": "drafted", "description": "drafts the expense", "assert": {"type": "tool_called", "name": "create_expense"}}], "max_turns": 3}
"#;

/// What the run left, rendered in every format.
struct Rendered {
    dir: PathBuf,
    summary: Summary,
    cases: Vec<CaseReport>,
    json: String,
    markdown: String,
    junit: String,
    html: String,
}

/// Runs the suites once (tests share it) and renders the four formats.
fn rendered() -> &'static Rendered {
    static ONCE: OnceLock<Rendered> = OnceLock::new();
    ONCE.get_or_init(|| {
        let tmp = Path::new(env!("CARGO_TARGET_TMPDIR"));
        remove_stale_runs(tmp);
        let dir = tmp.join(format!("reports-run-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let suites = dir.join("agent-tests");
        std::fs::create_dir_all(suites.join("chat")).expect("create scratch dir");
        let toml = expense_agent_section();
        std::fs::write(suites.join("agentest.toml"), toml).unwrap();
        std::fs::write(suites.join("expense.jsonl"), EXPENSE).unwrap();
        std::fs::write(suites.join("expense-flow.jsonl"), FLOW).unwrap();
        std::fs::write(suites.join("chat/dynamic.jsonl"), DYNAMIC).unwrap();

        let args = [
            "test",
            "-i",
            "agent-tests",
            "-o",
            "run.jsonl",
            "--color",
            "never",
        ];
        let started = std::time::SystemTime::now();
        let out = Command::new(BIN)
            .args(args)
            .current_dir(&dir)
            .env_remove("NO_COLOR")
            .env_remove("AGENTEST_AGENT")
            .env_remove("AGENTEST_REPORT")
            .output()
            .expect("run agentest");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(
            out.status.code(),
            Some(1),
            "some cases fail on purpose\n{stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let text = std::fs::read_to_string(dir.join("run.jsonl")).expect("run.jsonl written");
        let (cases, summary) = report::parse_jsonl(&text).expect("report reads back");
        let summary = summary.expect("a summary line");

        let mut command = vec!["agentest".to_string()];
        command.extend(args.iter().map(|a| a.to_string()));
        let run = RunInfo {
            started_at: report::rfc3339(started),
            duration_ms: summary.duration_ms,
            agentest_version: env!("CARGO_PKG_VERSION").into(),
            agent: "default (process: python3 examples/expense-agent/agent.py)".into(),
            input: "agent-tests".into(),
            command,
        };
        let json = report::json::render(&run, &summary, &cases);
        let markdown = report::markdown::render(&run, &summary, &cases);
        let junit = report::junit::render(&run, &summary, &cases);
        let html = report::html::render(&run, &summary, &cases);
        for (name, body) in [
            ("report.json", &json),
            ("report.md", &markdown),
            ("junit.xml", &junit),
            ("report.html", &html),
        ] {
            std::fs::write(dir.join(name), body).unwrap();
            // Format::render gives the same text as the module's own function.
            let format = Format::from_path(Path::new(name)).expect("known extension");
            assert_eq!(&format.render(&run, &summary, &cases), body, "{name}");
        }
        Rendered {
            dir,
            summary,
            cases,
            json,
            markdown,
            junit,
            html,
        }
    })
}

/// Removes `reports-run-*` folders of earlier runs, once they are ten minutes old.
fn remove_stale_runs(tmp: &Path) {
    let Ok(entries) = std::fs::read_dir(tmp) else {
        return;
    };
    for e in entries.flatten() {
        let stale = e
            .metadata()
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.elapsed().ok())
            .is_some_and(|age| age > Duration::from_secs(600));
        if stale && e.file_name().to_string_lossy().starts_with("reports-run-") {
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
}

fn case<'a>(r: &'a Rendered, trial: &str) -> &'a CaseReport {
    r.cases
        .iter()
        .find(|c| c.trial == trial)
        .unwrap_or_else(|| panic!("no record for {trial}"))
}

fn the_run_has_every_outcome() {
    let r = rendered();
    let s = &r.summary;
    assert_eq!(
        (s.total, s.passed, s.failed, s.timeouts, s.errors, s.skipped),
        (13, 6, 4, 1, 2, 1),
        "{s:?}"
    );
    assert_eq!(r.cases.len() as u64, s.total);
    assert_eq!(case(r, FAILING).status, Status::Failed);
    assert_eq!(case(r, PASSING).status, Status::Passed);
    assert_eq!(case(r, "expense-flow::slow").status, Status::Timeout);
    assert_eq!(case(r, "expense-flow::crash").status, Status::Error);
    assert_eq!(case(r, "expense-flow::typo").status, Status::Error);
    assert_eq!(case(r, "chat/dynamic::endless").status, Status::Failed);
    assert!(case(r, "expense::xss").turns[0]
        .output
        .as_str()
        .unwrap()
        .contains("<script>alert(1)</script>"));
}

// ---------------------------------------------------------------------------------------
// JSON
// ---------------------------------------------------------------------------------------

fn json_report_parses_back_with_matching_counts() {
    let r = rendered();
    let doc: Value = serde_json::from_str(&r.json).expect("valid JSON");
    let keys: Vec<&String> = doc.as_object().unwrap().keys().collect();
    assert_eq!(keys, ["summary", "environment", "results"]);
    let summary: Summary = serde_json::from_value(doc["summary"].clone()).unwrap();
    assert_eq!(summary, r.summary);
    let env = &doc["environment"];
    assert_eq!(env["version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(env["os"], std::env::consts::OS);
    assert_eq!(env["arch"], std::env::consts::ARCH);
    assert_eq!(env["input"], "agent-tests");
    assert_eq!(env["command"][0], "agentest");
    assert!(env["started_at"].as_str().unwrap().ends_with('Z'));
    assert!(env["agent"].as_str().unwrap().contains("agent.py"));
    let results: Vec<CaseReport> = serde_json::from_value(doc["results"].clone()).unwrap();
    assert_eq!(results.len() as u64, summary.total);
    let mut counted = Summary::new();
    results.iter().for_each(|c| counted.add(c));
    assert_eq!(
        (
            counted.passed,
            counted.failed,
            counted.errors,
            counted.skipped
        ),
        (
            summary.passed,
            summary.failed,
            summary.errors,
            summary.skipped
        )
    );
    for c in &r.cases {
        assert!(results.contains(c), "{} is in the results, whole", c.trial);
    }
    // Full records: turns, tool calls and checkpoints survive.
    let dynamic = results
        .iter()
        .find(|c| c.trial == "chat/dynamic::submit")
        .unwrap();
    assert_eq!(dynamic.checkpoints.len(), 3);
    assert!(dynamic.turns.iter().any(|t| !t.tool_calls.is_empty()));
}

// ---------------------------------------------------------------------------------------
// JUnit
// ---------------------------------------------------------------------------------------

/// An element of a parsed XML document: name, attributes, text content, children.
#[derive(Debug)]
struct Element {
    name: String,
    attrs: BTreeMap<String, String>,
    text: String,
    children: Vec<Element>,
}

impl Element {
    fn attr(&self, k: &str) -> &str {
        self.attrs
            .get(k)
            .unwrap_or_else(|| panic!("<{}> has no `{k}` attribute", self.name))
    }

    fn num(&self, k: &str) -> u64 {
        self.attr(k)
            .parse()
            .unwrap_or_else(|_| panic!("<{}> {k}={:?} is not a count", self.name, self.attr(k)))
    }

    fn seconds(&self) -> f64 {
        let t: f64 = self.attr("time").parse().expect("time is a number");
        assert!(t >= 0.0);
        t
    }

    fn kids<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a Element> + 'a {
        self.children.iter().filter(move |c| c.name == name)
    }
}

/// A small, strict XML 1.0 parser for what the JUnit writer emits: the declaration,
/// elements, attributes in double quotes, character data with the five predefined
/// entities and numeric references. Panics on anything not well-formed: a character XML
/// forbids, a bad name, an unquoted or duplicate attribute, `<` in an attribute, an
/// unknown entity, mismatched or unclosed tags, text outside the root, `]]>` in text.
fn parse_xml(xml: &str) -> Element {
    for (i, c) in xml.char_indices() {
        let ok = matches!(c, '\t' | '\n' | '\r')
            || ('\u{20}'..='\u{d7ff}').contains(&c)
            || ('\u{e000}'..='\u{fffd}').contains(&c)
            || c >= '\u{10000}';
        assert!(ok, "character {c:?} at byte {i} is not allowed in XML 1.0");
    }
    let rest = xml
        .strip_prefix("<?xml version=\"1.0\" encoding=\"UTF-8\"?>")
        .expect("XML declaration first");
    let mut p = Parser { s: rest, pos: 0 };
    p.skip_ws();
    let root = p.element();
    p.skip_ws();
    assert_eq!(p.pos, p.s.len(), "nothing after the root element");
    root
}

struct Parser<'a> {
    s: &'a str,
    pos: usize,
}

impl Parser<'_> {
    fn rest(&self) -> &str {
        &self.s[self.pos..]
    }

    fn skip_ws(&mut self) {
        let n = self.rest().len() - self.rest().trim_start().len();
        self.pos += n;
    }

    fn eat(&mut self, t: &str) -> bool {
        if self.rest().starts_with(t) {
            self.pos += t.len();
            true
        } else {
            false
        }
    }

    fn name(&mut self) -> String {
        let n: String = self
            .rest()
            .chars()
            .take_while(|c| c.is_alphanumeric() || "_-.:".contains(*c))
            .collect();
        assert!(
            n.chars()
                .next()
                .is_some_and(|c| c.is_alphabetic() || c == '_'),
            "bad name at {:?}",
            &self.rest()[..self.rest().len().min(30)]
        );
        self.pos += n.len();
        n
    }

    fn element(&mut self) -> Element {
        assert!(self.eat("<"), "expected an element");
        let name = self.name();
        let mut attrs = BTreeMap::new();
        loop {
            let before = self.pos;
            self.skip_ws();
            if self.eat("/>") {
                return Element {
                    name,
                    attrs,
                    text: String::new(),
                    children: vec![],
                };
            }
            if self.eat(">") {
                break;
            }
            assert!(self.pos > before, "attributes are separated by spaces");
            let k = self.name();
            assert!(self.eat("=\""), "attribute {k} is quoted with \"");
            let end = self.rest().find('"').expect("attribute closes");
            let raw = &self.rest()[..end];
            assert!(!raw.contains('<'), "`<` in attribute {k}");
            let v = unescape(raw);
            self.pos += end + 1;
            assert!(attrs.insert(k.clone(), v).is_none(), "duplicate {k}");
        }
        let mut text = String::new();
        let mut children = Vec::new();
        loop {
            if self.eat("</") {
                let close = self.name();
                assert_eq!(close, name, "mismatched close tag");
                self.skip_ws();
                assert!(self.eat(">"), "close tag ends");
                return Element {
                    name,
                    attrs,
                    text,
                    children,
                };
            }
            if self.rest().starts_with('<') {
                children.push(self.element());
                continue;
            }
            let end = self
                .rest()
                .find('<')
                .unwrap_or_else(|| panic!("<{name}> is not closed"));
            let raw = &self.rest()[..end];
            assert!(!raw.contains("]]>"), "`]]>` in text");
            text.push_str(&unescape(raw));
            self.pos += end;
        }
    }
}

fn unescape(s: &str) -> String {
    let mut out = String::new();
    let mut rest = s;
    while let Some(i) = rest.find('&') {
        out.push_str(&rest[..i]);
        let end = rest[i..].find(';').expect("entity ends with ;") + i;
        let ent = &rest[i + 1..end];
        let c = match ent {
            "amp" => '&',
            "lt" => '<',
            "gt" => '>',
            "quot" => '"',
            "apos" => '\'',
            e if e.starts_with("#x") => {
                char::from_u32(u32::from_str_radix(&e[2..], 16).unwrap()).expect("valid reference")
            }
            e if e.starts_with('#') => {
                char::from_u32(e[1..].parse().unwrap()).expect("valid reference")
            }
            e => panic!("unknown entity &{e};"),
        };
        out.push(c);
        rest = &rest[end + 1..];
    }
    out.push_str(rest);
    out
}

fn junit_report_is_well_formed_with_required_structure() {
    let r = rendered();
    let root = parse_xml(&r.junit);
    assert_eq!(root.name, "testsuites");
    let s = &r.summary;
    assert_eq!(root.num("tests"), s.total);
    assert_eq!(root.num("failures"), s.failed, "timeouts count as failures");
    assert_eq!(root.num("errors"), s.errors);
    assert_eq!(root.num("skipped"), s.skipped);
    root.seconds();

    let suites: Vec<&Element> = root.children.iter().collect();
    assert!(suites.iter().all(|e| e.name == "testsuite"));
    let names: Vec<&str> = suites.iter().map(|e| e.attr("name")).collect();
    assert_eq!(names, ["chat/dynamic", "expense", "expense-flow"]);
    for k in ["tests", "failures", "errors", "skipped"] {
        let sum: u64 = suites.iter().map(|e| e.num(k)).sum();
        assert_eq!(sum, root.num(k), "suites' {k} add up to the total");
    }
    let mut seen = 0;
    for suite in &suites {
        let cases: Vec<&Element> = suite.kids("testcase").collect();
        assert_eq!(cases.len() as u64, suite.num("tests"));
        suite.seconds();
        assert!(suite.attrs.contains_key("timestamp"));
        let (mut failures, mut errors, mut skipped) = (0, 0, 0);
        for tc in &cases {
            seen += 1;
            let id = tc.attr("name");
            assert_eq!(tc.attr("classname"), suite.attr("name"));
            tc.seconds();
            let record = case(r, &format!("{}::{id}", suite.attr("name")));
            let outcome: Vec<&str> = tc.children.iter().map(|c| c.name.as_str()).collect();
            match record.status {
                Status::Passed => assert!(outcome.is_empty(), "{id}: {outcome:?}"),
                Status::Failed | Status::Timeout => {
                    failures += 1;
                    assert_eq!(outcome, ["failure"], "{id}");
                }
                Status::Error => {
                    errors += 1;
                    assert_eq!(outcome, ["error"], "{id}");
                }
                Status::Skipped => {
                    skipped += 1;
                    assert_eq!(outcome, ["skipped"], "{id}");
                }
                // No judge in this run decides "cannot tell".
                other => panic!("{id}: unexpected status {other:?}"),
            }
            for o in &tc.children {
                assert!(!o.attr("message").is_empty(), "{id}: <{}> message", o.name);
            }
        }
        assert_eq!(
            (failures, errors, skipped),
            (
                suite.num("failures"),
                suite.num("errors"),
                suite.num("skipped")
            )
        );
    }
    assert_eq!(seen, s.total);

    // The failure carries the transcript as text.
    let flow = suites
        .iter()
        .find(|e| e.attr("name") == "expense-flow")
        .unwrap();
    let tc = |id: &str| {
        flow.kids("testcase")
            .find(|t| t.attr("name") == id)
            .unwrap()
    };
    let failure = tc("receipt").kids("failure").next().unwrap();
    assert_eq!(failure.attr("type"), "failed");
    assert!(failure.attr("message").contains("contains \"receipt\""));
    for needle in [
        "user: Meal with a client, $120",
        "agent: I've drafted a meal expense of $120.",
        "tool call: create_expense(",
        "✓ tool_called \"create_expense\"",
        "✗ contains \"receipt\"",
        "meals above $25 need a receipt",
    ] {
        assert!(failure.text.contains(needle), "{needle}\n{}", failure.text);
    }
    assert_eq!(
        tc("slow").kids("failure").next().unwrap().attr("type"),
        "timeout"
    );
    let crash = tc("crash").kids("error").next().unwrap();
    assert!(
        crash.text.contains("agent process exited"),
        "{}",
        crash.text
    );
    assert!(tc("typo")
        .kids("error")
        .next()
        .unwrap()
        .attr("message")
        .contains("did you mean"));
    // Control characters and ANSI escapes never reach the XML.
    let ctrl = tc("ctrl").kids("failure").next().unwrap();
    assert!(
        ctrl.text.contains("user: bell \u{fffd} and red"),
        "{}",
        ctrl.text
    );
    assert!(!r.junit.contains('\u{1b}') && !r.junit.contains('\u{7}'));
    let skipped = root
        .children
        .iter()
        .flat_map(|s| s.kids("testcase"))
        .find_map(|t| t.kids("skipped").next())
        .unwrap();
    assert!(!skipped.attr("message").is_empty());
}

// ---------------------------------------------------------------------------------------
// Markdown
// ---------------------------------------------------------------------------------------

fn markdown_report_has_counts_and_failing_transcripts() {
    let r = rendered();
    let md = &r.markdown;
    assert!(md.starts_with(
        "# agentest report\n\n❌ **FAILED**: 6 passed, 4 failed (1 timed out), 2 errors, 1 skipped of 13 cases"
    ), "{md}");
    let s = &r.summary;
    let row = format!(
        "| {} | {} | {} | {} | {} | {} | {} |",
        s.total, s.passed, s.failed, s.timeouts, s.errors, s.skipped, s.total_turns
    );
    assert!(md.contains(&row), "counts row {row}\n{md}");
    for c in &r.cases {
        let escaped = c.trial.replace('_', "\\_");
        assert!(
            md.contains(&format!(" {} | {escaped} |", c.status_name())),
            "{} in the table",
            c.trial
        );
    }
    assert!(md.contains("### ❌ expense-flow::receipt — Asks for a receipt above $25\n"));
    let section = &md[md.find("### ❌ expense-flow::receipt").unwrap()..];
    let section = &section[..section[4..].find("\n### ").map_or(section.len(), |i| i + 4)];
    for needle in [
        "**failed** · static · 2 turns",
        "turn 1 · static",
        "  user: I want to submit an expense\n",
        "  agent: Sure. What type of expense",
        "turn 2 · static",
        "  user: Meal with a client, $120\n",
        "  tool call: create_expense(",
        "  ✗ contains \"receipt\"\n      meals above $25 need a receipt",
    ] {
        assert!(section.contains(needle), "{needle}\n{section}");
    }
    // Every non-passing case has a section with its error; passing ones none.
    for c in r
        .cases
        .iter()
        .filter(|c| matches!(c.status, Status::Failed | Status::Error | Status::Timeout))
    {
        assert!(md.contains(&format!(" {}", c.trial)), "{}", c.trial);
    }
    assert!(md.contains("### ⏱️ expense-flow::slow — Agent too slow"));
    assert!(md.contains("### 💥 expense-flow::crash — Agent crashes"));
    assert!(md.contains("fatal: the agent crashed on purpose"));
    assert!(md.contains(
        "  ✗ drafted (drafts the expense) [required]: not reached: expected a call to \"create_expense\""
    ));
    assert!(!md.contains("### ✅"));
    assert!(md.contains("## Skipped\n\n- expense::later"));
    assert!(!md.contains('\u{1b}'));
}

trait StatusName {
    fn status_name(&self) -> &'static str;
}

impl StatusName for CaseReport {
    fn status_name(&self) -> &'static str {
        match self.status {
            Status::Passed => "passed",
            Status::Failed => "failed",
            Status::Error => "error",
            Status::Skipped => "skipped",
            Status::Timeout => "timeout",
            Status::Inconclusive => "inconclusive",
        }
    }
}

// ---------------------------------------------------------------------------------------
// HTML
// ---------------------------------------------------------------------------------------

fn html_report_has_every_case_and_escapes_markup() {
    let r = rendered();
    let html = &r.html;
    assert!(html.starts_with("<!DOCTYPE html>"));
    assert!(html.contains("<title>agentest report: FAILED, 6 of 13 passed</title>"));
    for c in &r.cases {
        assert!(
            html.contains(&format!("data-trial=\"{}\"", c.trial)),
            "{} is in the page",
            c.trial
        );
        assert!(html.contains(&format!("<span class=\"id\">{}</span>", c.id)));
    }
    // The reply with a script tag is text, never markup.
    assert!(!html.contains("<script>alert(1)</script>"));
    assert!(html.contains("You said: &lt;script&gt;alert(1)&lt;/script&gt;"));
    assert!(html.contains("Echoes &lt;b&gt;markup&lt;/b&gt; as text"));
    assert_eq!(html.matches("<script").count(), 1, "one script: ours");
    assert!(!html.contains('\u{1b}') && !html.contains('\u{7}'));
    // Self-contained.
    for needle in ["http://", "https://", "<link", "src=", "@import", "url("] {
        assert!(!html.contains(needle), "no {needle}");
    }
    // Counts, filters, conversation pieces.
    let s = &r.summary;
    assert!(html.contains(&format!("id=\"count-total\">{}<", s.total)));
    assert!(html.contains(&format!("id=\"count-failed\">{}<", s.failed)));
    assert!(html.contains(&format!("id=\"count-turns\">{}<", s.total_turns)));
    for status in ["passed", "failed", "timeout", "error", "skipped"] {
        assert!(html.contains(&format!("data-filter-status=\"{status}\"")));
    }
    assert!(html.contains("<option value=\"chat/dynamic\">"));
    assert!(html.contains("<option value=\"security\">"));
    assert!(html.contains("<code class=\"tool-name\">create_expense</code>"));
    assert!(html.contains("meals above $25 need a receipt"));
    assert!(html.contains("reached at turn"));
    assert!(html.contains("<span class=\"muted\">last failure:</span>"));
}

/// What the browser test needs and does not have.
fn browser_missing(browser_dir: &Path) -> Vec<String> {
    let mut missing = Vec::new();
    let node = Command::new("node")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
    if !node.is_ok_and(|s| s.success()) {
        missing.push("`node` on PATH (Node.js 20 or later)".to_string());
    }
    if !Path::new("/usr/bin/chromium").exists() {
        missing.push("/usr/bin/chromium (Debian's `chromium` package)".to_string());
    }
    if !browser_dir.join("node_modules/playwright-core").is_dir() {
        missing.push(format!(
            "{}/node_modules/playwright-core",
            browser_dir.display()
        ));
    }
    missing
}

/// What the browser tests need (see [`need`]): headless Chromium, Node.js and
/// playwright-core.
pub(crate) fn browser() -> Needs {
    let missing = browser_missing(&Path::new(ROOT).join("tests/browser"));
    if missing.is_empty() {
        return Ok(());
    }
    need(
        "headless Chromium and playwright-core",
        format!(
            "missing {}; install with `apt-get update && apt-get install -y chromium` \
             (Debian's chromium, at /usr/bin/chromium) and `npm ci --prefix tests/browser` \
             (playwright-core; needs Node.js 20+)",
            missing.join("; ")
        ),
    )
}

fn html_report_works_in_headless_chromium() -> Needs {
    browser()?;
    let r = rendered();
    let report = r.dir.join("report.html");
    let shot = std::env::var_os("AGENTEST_SCREENSHOT")
        .map(PathBuf::from)
        .unwrap_or_else(|| r.dir.join("report.png"));
    let result = browser_check(
        &report,
        &shot,
        &[
            "--failing",
            FAILING,
            "--passing",
            PASSING,
            "--expect-text",
            "Meal with a client, $120",
            "--expect-text",
            "I've drafted a meal expense of $120",
            "--expect-text",
            "create_expense",
            "--expect-text",
            "meals above $25 need a receipt",
            "--expect-text",
            "contains \"receipt\"",
        ],
    );
    assert!(result["passed"].as_u64().unwrap() >= 20, "{result}");
    Ok(())
}

/// What the waterfall's browser test needs: the browser, and the Python OpenTelemetry
/// SDK the traced process agent exports with.
fn browser_and_otel() -> Needs {
    browser()?;
    crate::traces::otel()
}

/// A traced run's report in headless Chromium: the traced process agent
/// (tests/python/traced_process_agent.py) exports its spans through the environment
/// agentest sets, its model call and tool taking 80ms each; a case whose tool span fails
/// fails, and its turn's waterfall must be collapsed, open on a click, have a bar per
/// span placed and sized by its start and duration on the time line, indent children,
/// colour the failed span red and open a tool span's attributes (check.mjs
/// `--waterfall`). The traced call is marked in the conversation.
fn html_waterfall_works_in_headless_chromium() -> Needs {
    browser_and_otel()?;
    let python = crate::common::framework_python(&[
        "opentelemetry.sdk",
        "opentelemetry.exporter.otlp.proto.http",
    ])?;
    let tmp = Path::new(env!("CARGO_TARGET_TMPDIR"));
    remove_stale_runs(tmp);
    let dir = tmp.join(format!("reports-run-traced-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let suites = dir.join("agent-tests");
    std::fs::create_dir_all(&suites).expect("create scratch dir");
    let agent = Path::new(ROOT).join("tests/python/traced_process_agent.py");
    std::fs::write(
        suites.join("agentest.toml"),
        format!(
            "[agent]\ntype = \"process\"\ncommand = [{}, {}]\ntraces = true\n\
             env = {{ TRACED_AGENT_SLEEP_MS = \"80\" }}\n\n[traces]\nsettle = \"200ms\"\n",
            crate::common::toml_str(&python.display().to_string()),
            crate::common::toml_str(&agent.display().to_string())
        ),
    )
    .unwrap();
    std::fs::write(
        suites.join("traced.jsonl"),
        concat!(
            r#"{"id": "oslo", "input": "weather and time in Oslo", "assert": [{"type": "tool_sequence", "value": ["get_weather", "get_time"], "strict": true}]}"#,
            "\n",
            r#"{"id": "atlantis", "input": "weather in Atlantis", "tags": ["traced"], "assert": [{"type": "contains", "value": "sunny"}]}"#,
            "\n"
        ),
    )
    .unwrap();
    let out = Command::new(BIN)
        .args([
            "test",
            "-i",
            "agent-tests",
            "-o",
            "run.jsonl",
            "--color",
            "never",
        ])
        .current_dir(&dir)
        .env_remove("AGENTEST_AGENT")
        .env_remove("AGENTEST_REPORT")
        .output()
        .expect("run agentest");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(1),
        "atlantis fails on purpose\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(dir.join("run.jsonl")).expect("run.jsonl written");
    let (cases, summary) = report::parse_jsonl(&text).expect("report reads back");
    let summary = summary.expect("a summary line");
    let atlantis = cases
        .iter()
        .find(|c| c.id == "atlantis")
        .expect("atlantis ran");
    assert_eq!(atlantis.status, Status::Failed, "{atlantis:?}");
    // Spans with durations to draw: the model call, then the tool, 80ms each.
    let root = &atlantis.turns[0].spans[0];
    let starts: Vec<(u64, u64)> = root
        .children
        .iter()
        .map(|c| (c.start_ms, c.duration_ms))
        .collect();
    assert!(
        starts.len() == 2 && starts[0].1 >= 70 && starts[1].0 >= 70 && starts[1].1 >= 70,
        "{root:?}"
    );
    let run = RunInfo {
        started_at: "2025-01-31T12:00:00Z".into(),
        duration_ms: summary.duration_ms,
        agentest_version: env!("CARGO_PKG_VERSION").into(),
        agent: "default (process: traced_process_agent.py)".into(),
        input: "agent-tests".into(),
        command: vec!["agentest".into(), "test".into()],
    };
    let html = report::html::render(&run, &summary, &cases);
    let report = dir.join("report.html");
    std::fs::write(&report, &html).unwrap();
    let shot = std::env::var_os("AGENTEST_WATERFALL_SCREENSHOT")
        .map(PathBuf::from)
        .unwrap_or_else(|| dir.join("report.png"));
    let result = browser_check(
        &report,
        &shot,
        &[
            "--failing",
            "traced::atlantis",
            "--passing",
            "traced::oslo",
            "--waterfall",
            "traced::atlantis",
            "--expect-text",
            "from trace",
            "--expect-text",
            "no such city: Atlantis",
        ],
    );
    assert!(result["passed"].as_u64().unwrap() >= 30, "{result}");
    Ok(())
}

/// Runs tests/browser/check.mjs on `report` with `args`, writing the screenshot to
/// `shot`; panics with its output unless every check passed, else returns its result.
fn browser_check(report: &Path, shot: &Path, args: &[&str]) -> Value {
    let _ = std::fs::remove_file(shot);
    let mut all = vec![report.display().to_string(), shot.display().to_string()];
    all.extend(args.iter().map(|a| a.to_string()));
    let result = browser_script("check.mjs", &all);
    let png = std::fs::read(shot).expect("screenshot written");
    assert!(png.starts_with(b"\x89PNG\r\n\x1a\n"), "screenshot is a PNG");
    result
}

/// Runs the script `script` of tests/browser with `args` under Node.js (3 minutes at
/// most); panics with its output unless it exited 0 and its last line, a JSON result,
/// says `"ok": true`; returns that result.
pub(crate) fn browser_script(script: &str, args: &[String]) -> Value {
    browser_script_with(script, args, |_| {})
}

/// [`browser_script`], handing each line the script prints to `on_line` as it comes
/// (a script that waits for the test to do something prints a line saying so).
pub(crate) fn browser_script_with(
    script: &str,
    args: &[String],
    mut on_line: impl FnMut(&str),
) -> Value {
    use std::io::BufRead;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::{Arc, Mutex};
    let browser_dir = Path::new(ROOT).join("tests/browser");
    let mut child = Command::new("node")
        .arg(browser_dir.join(script))
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start node");
    let stdout = child.stdout.take().expect("node's stdout");
    let mut stderr = child.stderr.take().expect("node's stderr");
    let errors = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = std::io::Read::read_to_string(&mut stderr, &mut text);
        text
    });
    let child = Arc::new(Mutex::new(child));
    let (late, done) = (
        Arc::new(AtomicBool::new(false)),
        Arc::new(AtomicBool::new(false)),
    );
    let watchdog = {
        let (child, late, done) = (Arc::clone(&child), Arc::clone(&late), Arc::clone(&done));
        std::thread::spawn(move || {
            let deadline = Instant::now() + Duration::from_secs(180);
            while !done.load(Ordering::SeqCst) {
                if Instant::now() > deadline {
                    late.store(true, Ordering::SeqCst);
                    let _ = crate::common::lock(&child).kill();
                    return;
                }
                std::thread::sleep(Duration::from_millis(100));
            }
        })
    };
    let mut lines = Vec::new();
    for line in std::io::BufReader::new(stdout).lines() {
        let Ok(line) = line else { break };
        on_line(&line);
        lines.push(line);
    }
    let status = crate::common::lock(&child).wait().expect("wait for node");
    done.store(true, Ordering::SeqCst);
    let _ = watchdog.join();
    let stdout = lines.join("\n");
    let stderr = errors.join().unwrap_or_default();
    assert!(
        !late.load(Ordering::SeqCst),
        "{script} took more than 180s\n{stdout}\n{stderr}"
    );
    assert!(
        status.success(),
        "{script} failed ({status})\n--- stdout ---\n{stdout}\n--- stderr ---\n{stderr}"
    );
    let result: Value = serde_json::from_str(lines.last().map_or("", String::as_str))
        .unwrap_or_else(|e| panic!("{script} printed no result ({e}): {stdout}"));
    assert_eq!(result["ok"], true, "{result}");
    result
}

pub fn tests() -> Vec<libtest_mimic::Trial> {
    crate::trials![
        the_run_has_every_outcome,
        json_report_parses_back_with_matching_counts,
        junit_report_is_well_formed_with_required_structure,
        markdown_report_has_counts_and_failing_transcripts,
        html_report_has_every_case_and_escapes_markup,
        html_report_works_in_headless_chromium (needs browser),
        html_waterfall_works_in_headless_chromium (needs browser_and_otel),
    ]
}
