//! Verdicts you can defend, end to end with the real binary: juries, inconclusive
//! verdicts (in every report format, JUnit and the store), and `agentest calibrate`
//! with `require_calibrated_judges`.
//!
//! The judges are the built-in one on a scripted chat-completions server on 127.0.0.1
//! ([`ChatServer`]) that answers by the model each `[judges.NAME]` names (and, for
//! calibration, by the item under judgment), so each judge's behaviour, and its error
//! rate, is known exactly. The agent under test is a real process agent that echoes.

use std::path::Path;
use std::process::Command;

use crate::common::chat::ChatServer;
use crate::common::project::{self, ReportedRun as Run};
use crate::common::{clean, Scratch, BIN};
use serde_json::{json, Value};

pub fn tests() -> Vec<libtest_mimic::Trial> {
    crate::trials![
        a_jury_keeps_every_jurors_vote_and_a_jurors_error_is_an_abstention,
        an_undecided_judge_makes_the_case_inconclusive_in_every_report,
        a_dynamic_case_goes_on_past_an_undecided_checkpoint,
        calibrate_reports_the_figures_computed_by_hand,
        only_calibrated_judges_decide_when_the_run_requires_it,
        each_failure_is_blamed_and_rerun_on_runs_only_the_parties_it_names,
        a_run_whose_simulator_spoiled_too_many_attempts_fails,
        the_readmes_calibration_runs_as_shown,
        a_persona_judge_blames_a_simulator_that_broke_its_persona,
        changing_an_agent_judges_prompt_makes_it_uncalibrated,
        a_repeated_case_left_undecided_by_its_judge_is_inconclusive,
        a_deadline_passing_while_a_judge_works_is_infrastructures,
    ]
}

const KEY: (&str, &str) = ("AGENTEST_VERDICTS_TEST_KEY", "sk-verdicts-5b1e");

/// A process agent that echoes and asks for more: "You said: X. Anything else?".
const ECHO: &str = r#"import json, sys
for line in sys.stdin:
    if not line.strip():
        continue
    req = json.loads(line)
    print(json.dumps({"content": "You said: " + (req.get("input") or "") + ". Anything else?"}), flush=True)
"#;

/// Routes a judge's request by the model its `[judges.NAME]` sends.
fn by_model(body: &Value) -> String {
    body["model"].as_str().unwrap_or("*").to_string()
}

/// Routes the built-in simulator's requests to `sim`, the rest by model.
fn by_role(body: &Value) -> String {
    let system = body["messages"][0]["content"].as_str().unwrap_or_default();
    if system.starts_with("You are simulating a user") {
        "sim".into()
    } else {
        by_model(body)
    }
}

/// Routes by model and the item under judgment (`REPLY-<item>`, last in the prompt).
fn by_model_and_item(body: &Value) -> String {
    // The question is the last user message (an agent judge's own system prompt and
    // the judge's instructions come first).
    let user = body["messages"]
        .as_array()
        .and_then(|m| m.iter().rev().find(|m| m["role"] == "user"))
        .and_then(|m| m["content"].as_str())
        .unwrap_or_default();
    let item = user
        .rsplit("The reply to judge:\n")
        .next()
        .and_then(|r| r.trim().strip_prefix("REPLY-"))
        .unwrap_or("?");
    format!("{}:{item}", by_model(body))
}

fn verdict(passed: Value, reason: &str) -> String {
    json!({"passed": passed, "reason": reason}).to_string()
}

/// `n` copies of `answer`.
fn times(n: usize, answer: &str) -> Vec<String> {
    vec![answer.to_string(); n]
}

/// A scratch project: the echo agent, the server as `[llm]`, and `extra` config.
fn project_with(tag: &str, server: &ChatServer, extra: &str, cases: &[Value]) -> Scratch {
    let s = Scratch::named("verdicts", tag);
    s.write("echo.py", ECHO);
    s.write(
        "agentest.toml",
        &format!(
            "[agent]\ntype = \"process\"\ncommand = [\"python3\", \"echo.py\"]\n\n[llm]\nbase_url = \"{}\"\nmodel = \"default-model\"\napi_key_env = \"{}\"\ntimeout = \"5s\"\nmax_retries = 0\n\n{extra}",
            server.url(),
            KEY.0
        ),
    );
    s.cases(cases);
    s
}

fn agentest(s: &Scratch) -> project::Cmd<'_> {
    project::agentest(s.path(), KEY).env("AGENTEST_STORE", &store_of(s))
}

fn store_of(s: &Scratch) -> String {
    s.join("runs.db").display().to_string()
}

/// `agentest ARGS` in `dir`, with the key and the store of the scratch project.
fn command(s: &Scratch, args: &[&str]) -> (i32, String, String) {
    let out = clean(Command::new(BIN))
        .current_dir(s.path())
        .args(args)
        .env(KEY.0, KEY.1)
        .env("AGENTEST_STORE", store_of(s))
        .output()
        .expect("run agentest");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn first_assertion(r: &Run, id: &str) -> Value {
    r.case(id)["turns"][0]["assertions"][0].clone()
}

/// A majority jury with a dissenting juror and one whose answers are garbage: the
/// garbage juror abstains, the majority passes, and the record keeps every juror's
/// verdict, reason and error. A unanimous jury that splits is inconclusive, and a jury
/// that loses more jurors than it may is an error naming each juror's.
fn a_jury_keeps_every_jurors_vote_and_a_jurors_error_is_an_abstention() {
    let server = ChatServer::routed(by_model);
    server.answer("kind", &times(8, &verdict(json!(true), "it greets warmly")));
    server.answer("warm", &times(8, &verdict(json!(true), "friendly enough")));
    server.answer("strict", &times(8, &verdict(json!(false), "no name used")));
    server.answer("broken", &times(16, "hmm, hard to say"));
    let judges = r#"
[judges.kind]
model = "kind"
[judges.warm]
model = "warm"
[judges.strict]
model = "strict"
[judges.broken]
model = "broken"
[judges.panel]
jury = ["judges:kind", "judges:warm", "judges:strict", "judges:broken"]
[judges.all]
jury = ["judges:kind", "judges:strict"]
rule = "unanimous"
"#;
    let judged = |id: &str, use_: Value| json!({"id": id, "input": "hi", "assert": {"type": "llm_judge", "prompt": "greets the user", "use": use_}});
    let s = project_with(
        "jury",
        &server,
        judges,
        &[
            judged("majority", json!("judges:panel")),
            judged("unanimous", json!("judges:all")),
            judged("inline", json!(["judges:kind", "judges:broken"])),
        ],
    );
    let r = agentest(&s).run();
    // The unanimous split is inconclusive and the inline jury an error: exit 1.
    r.expect(1)
        .expect_status("majority", "passed")
        .expect_status("unanimous", "inconclusive")
        .expect_status("inline", "error");
    let a = first_assertion(&r, "majority");
    assert_eq!(a["passed"], true, "{a}");
    let j = &a["judgment"];
    assert_eq!(j["judge"], "judges:panel");
    assert_eq!(j["rule"], "majority");
    assert_eq!(
        j["reason"],
        "judges:panel (majority): 2 pass, 1 fail, 1 abstained: pass"
    );
    let jurors = j["jurors"].as_array().expect("jurors");
    let by: Vec<(&str, Value, &str)> = jurors
        .iter()
        .map(|v| {
            (
                v["judge"].as_str().unwrap(),
                v["passed"].clone(),
                v["reason"].as_str().unwrap_or_default(),
            )
        })
        .collect();
    assert_eq!(
        by,
        [
            ("judges:kind", json!(true), "it greets warmly"),
            ("judges:warm", json!(true), "friendly enough"),
            ("judges:strict", json!(false), "no name used"),
            ("judges:broken", Value::Null, ""),
        ]
    );
    let error = jurors[3]["error"].as_str().expect("the abstention's error");
    assert!(
        error.contains("answered twice without a verdict") && error.contains("not JSON"),
        "{error}"
    );
    let u = first_assertion(&r, "unanimous");
    assert_eq!(u["passed"], Value::Null, "{u}");
    assert_eq!(
        u["judgment"]["reason"],
        "judges:all (unanimous): 1 pass, 1 fail: inconclusive: the jury split"
    );
    r.expect_error(
        "unanimous",
        &["turn 1: llm_judge \"greets the user\": inconclusive: judges:all (unanimous)"],
    );
    r.expect_error(
        "inline",
        &["jury: 1 of 2 jurors could not answer (at most 0 may): judges:broken: "],
    );
    // A jury that lost too many jurors is the judge's fault, not the agent's.
    assert_eq!(r.case("inline")["blame"]["party"], "judge");
    assert_eq!(r.case("unanimous")["blame"]["party"], "judge");
    // The jury that could not decide keeps its votes too.
    let inline = first_assertion(&r, "inline");
    assert_eq!(inline["passed"], false, "{inline}");
    assert_eq!(inline["judgment"]["jurors"][0]["passed"], true, "{inline}");
    assert!(
        inline["judgment"]["jurors"][1]["error"].is_string(),
        "{inline}"
    );
    // The console, JUnit, Markdown and HTML show each juror's vote.
    r.expect_stdout("· judges:strict: fail: no name used");
    for out in ["r.xml", "r.md", "r.html"] {
        let (code, _, err) = command(&s, &["report", "report.jsonl", "-o", out]);
        assert_eq!(code, 0, "{err}");
        let text = s.read(out);
        assert!(
            text.contains("judges:strict: fail: no name used")
                && text.contains("judges:broken: abstained: "),
            "{out}: {text}"
        );
    }
    // One request per verdict, and two (the answer and its repair) per abstention.
    assert_eq!(server.bodies("strict").len(), 2);
    assert_eq!(server.bodies("broken").len(), 4);
}

/// A judge answering `passed: null` makes its case `inconclusive`: a status of its own
/// in the JSONL record, the summary, JUnit and the store, never a pass. What it does to
/// the run is `[run] on_inconclusive`: `fail` (CI's default) and `error` (the default
/// elsewhere) fail it, `ignore` does not, and JUnit shows a failure, an error or a
/// skipped test.
fn an_undecided_judge_makes_the_case_inconclusive_in_every_report() {
    let server = ChatServer::routed(by_model);
    server.answer(
        "default-model",
        &times(
            16,
            &verdict(Value::Null, "the reply is cut off mid-sentence"),
        ),
    );
    let case = json!({"id": "undecided", "input": "hi", "assert": {"type": "llm_judge", "prompt": "answers the question"}});
    for (setting, ci, code, effect, junit) in [
        ("", false, 1, "error", "<error message=\"inconclusive: "),
        ("", true, 1, "fail", "<failure message=\"inconclusive: "),
        (
            "on_inconclusive = \"fail\"\n",
            false,
            1,
            "fail",
            "<failure message=\"inconclusive: ",
        ),
        (
            "on_inconclusive = \"ignore\"\n",
            false,
            0,
            "ignore",
            "<skipped message=\"inconclusive: ",
        ),
    ] {
        let s = project_with(
            "inconclusive",
            &server,
            &format!("[run]\ncassettes = \"off\"\n{setting}"),
            std::slice::from_ref(&case),
        );
        let mut cmd = agentest(&s);
        if ci {
            cmd = cmd.env("CI", "true");
        }
        let r = cmd.run();
        let what = format!("{setting:?} on CI {ci}");
        assert_eq!(r.code, code, "{what}: {r:?}");
        r.expect_status("undecided", "inconclusive").expect_error(
            "undecided",
            &["turn 1: llm_judge \"answers the question\": inconclusive: judge: the reply is cut off mid-sentence"],
        );
        let c = r.case("undecided");
        assert_eq!(c["on_inconclusive"], effect, "{what}");
        assert_eq!(c["turns"][0]["assertions"][0]["passed"], Value::Null);
        let sum = r.summary();
        assert_eq!(sum["inconclusive"], 1, "{what}");
        assert_eq!(
            sum["inconclusive_failing"].as_u64().unwrap_or(0),
            u64::from(effect != "ignore"),
            "{what}"
        );
        assert_eq!(
            (sum["passed"].as_u64(), sum["failed"].as_u64()),
            (Some(0), Some(0))
        );
        r.expect_stdout("INCONCLUSIVE");
        // JUnit, from the JSONL report.
        let (code, _, err) = command(&s, &["report", "report.jsonl", "-o", "report.xml"]);
        assert_eq!(code, 0, "{err}");
        let xml = s.read("report.xml");
        assert!(xml.contains(junit), "{what}: {xml}");
        assert!(xml.contains("the reply is cut off mid-sentence"), "{xml}");
        // Markdown and HTML give it its own status too.
        for (out, parts) in [
            ("report.md", &["1 inconclusive", "❔"][..]),
            (
                "report.html",
                &[
                    "data-filter-status=\"inconclusive\"",
                    "Why it is inconclusive",
                    "id=\"count-inconclusive\"",
                ][..],
            ),
        ] {
            let (code, _, err) = command(&s, &["report", "report.jsonl", "-o", out]);
            assert_eq!(code, 0, "{err}");
            let text = s.read(out);
            for part in parts {
                assert!(text.contains(part), "{out} lacks {part}: {text}");
            }
        }
        // The store keeps the status, and `--status inconclusive` finds it.
        let (code, out, err) = command(&s, &["runs", "list", "--status", "inconclusive"]);
        assert_eq!(code, 0, "{err}");
        assert!(
            out.contains("s::undecided") && out.contains("inconclusive"),
            "{out}"
        );
    }
}

/// A checkpoint whose judge cannot decide is not reached, and the conversation goes on
/// (it does not end the case as failed); a later turn reaches it. A conversation that
/// ends with a required checkpoint last undecided is inconclusive, not failed.
fn a_dynamic_case_goes_on_past_an_undecided_checkpoint() {
    let server = ChatServer::routed(by_model);
    server.answer(
        "default-model",
        &[
            verdict(Value::Null, "cannot tell from a greeting alone"),
            verdict(json!(true), "polite now"),
        ],
    );
    let dynamic = |id: &str, max_turns: u32| {
        json!({"id": id, "input": "start", "max_turns": max_turns,
               "simulator": {"use": "script", "script": [{"say": "please"}, {"say": "thanks"}]},
               "checkpoints": [{"id": "polite", "assert": {"type": "agent", "options": {"metadata": {"criteria": "The assistant is polite"}}}}]})
    };
    let s = project_with(
        "undecided-checkpoint",
        &server,
        "[run]\ncassettes = \"off\"\n",
        &[dynamic("goes-on", 3)],
    );
    let r = agentest(&s).run();
    r.expect(0)
        .expect_status("goes-on", "passed")
        .expect_termination("goes-on", "all_checkpoints_reached");
    assert_eq!(r.checkpoint("goes-on", "polite")["reached_at_turn"], 2);
    let first = &r.case("goes-on")["turns"][0]["checkpoints"][0];
    assert_eq!(first["passed"], Value::Null, "{first}");
    assert_eq!(
        first["message"],
        "inconclusive: judge: cannot tell from a greeting alone"
    );
    // Always undecided: the conversation runs to its last turn, and the case is
    // inconclusive with the checkpoint's last word.
    server.answer(
        "default-model",
        &times(
            2,
            &verdict(Value::Null, "cannot tell from a greeting alone"),
        ),
    );
    s.cases(&[dynamic("never-decided", 2)]);
    let r = agentest(&s).run();
    r.expect(1)
        .expect_status("never-decided", "inconclusive")
        .expect_termination("never-decided", "max_turns")
        .expect_error(
            "never-decided",
            &["max turns (2) exceeded; required checkpoints missing: polite (last: inconclusive: judge: cannot tell from a greeting alone)"],
        );
    assert_eq!(r.case("never-decided")["total_turns"], 2);
}

/// The labelled set of the calibration tests: ten items, the first five labelled
/// `pass`, the rest `fail`.
fn labels() -> String {
    (0..10)
        .map(|i| {
            let label = if i < 5 { "pass" } else { "fail" };
            format!(
                "{}\n",
                json!({"id": format!("i{i}"), "criteria": "answers politely", "input": "hi",
                       "reply": format!("REPLY-i{i}"), "label": label, "notes": format!("note {i}")})
            )
        })
        .collect()
}

/// Queues three answers per item for the judge `model`: `said(item)` gives them.
fn judge_answers(server: &ChatServer, model: &str, said: impl Fn(usize) -> [bool; 3]) {
    for i in 0..10 {
        let answers: Vec<String> = said(i)
            .iter()
            .map(|p| verdict(json!(p), if *p { "polite" } else { "rude" }))
            .collect();
        server.answer(&format!("{model}:i{i}"), &answers);
    }
}

/// The answers of the two judges of the calibration tests (see
/// [`calibrate_reports_the_figures_computed_by_hand`]).
fn good_and_flaky_judges(server: &ChatServer) {
    judge_answers(server, "good", |i| [i < 5 || i == 9; 3]);
    judge_answers(server, "flaky", |i| match i {
        0 => [true, false, true],
        5 => [false, true, false],
        _ => [i < 5; 3],
    });
}

const CALIBRATED_JUDGES: &str = r#"
[judges.good]
model = "good"
min_kappa = 0.6

[judges.flaky]
model = "flaky"
min_kappa = 0.6
min_accuracy = 0.95
"#;

/// Two judges with known error rates, three runs of ten labelled items each.
///
/// `good` is right on 90 %: it passes i9 (labelled fail) every time. By hand: 27 of 30
/// judgments agree, accuracy 0.9; labels pass 15/30, fail 15/30; said pass 18/30, fail
/// 12/30; chance agreement 0.5 × 0.6 + 0.5 × 0.4 = 0.5; κ = (0.9 − 0.5) / 0.5 = 0.8; it
/// never flips. `flaky` flips on 20 % of items (i0: pass, fail, pass; i5: fail, pass,
/// fail): 28 of 30 agree, accuracy 0.9333; said pass 15/30; chance 0.5; κ = 0.8667; flip
/// rate 2/10 = 0.2. `good` meets `min_kappa = 0.6` (exit 0); `flaky` falls short of
/// `min_accuracy = 0.95` (exit 1). A second calibration replays from the cassettes
/// offline, with the same figures.
fn calibrate_reports_the_figures_computed_by_hand() {
    let server = ChatServer::routed(by_model_and_item);
    good_and_flaky_judges(&server);
    let s = project_with("calibrate", &server, CALIBRATED_JUDGES, &[]);
    s.write("labels.jsonl", &labels());
    let (code, out, err) = command(&s, &["calibrate", "good", "-i", "labels.jsonl", "--json"]);
    assert_eq!(code, 0, "{out}\n{err}");
    let report: Value = serde_json::from_str(&out).expect("a JSON report");
    let f = &report["figures"];
    assert_eq!(
        (f["items"].as_u64(), f["runs"].as_u64()),
        (Some(10), Some(3))
    );
    assert_eq!(f["accuracy"], 0.9);
    assert!((f["kappa"].as_f64().unwrap() - 0.8).abs() < 1e-9, "{f}");
    assert_eq!(f["flip_rate"], 0.0);
    assert_eq!(
        f["confusion"],
        json!({"labelled_pass": {"pass": 15, "fail": 0, "undecided": 0, "error": 0},
               "labelled_fail": {"pass": 3, "fail": 12, "undecided": 0, "error": 0}})
    );
    assert_eq!(report["short_of_bar"], Value::Null);
    let wrong = report["wrong"].as_array().expect("wrong items");
    assert_eq!(wrong.len(), 1, "{report}");
    assert_eq!(wrong[0]["id"], "i9");
    assert_eq!(wrong[0]["line"], 10);
    assert_eq!(wrong[0]["said"], json!(["pass", "pass", "pass"]));
    assert_eq!(wrong[0]["reasons"], json!(["polite", "polite", "polite"]));
    assert_eq!(wrong[0]["notes"], "note 9");
    assert_eq!(report["model_calls"], 30);
    assert!(err.contains("calibration of judges:good kept in"), "{err}");

    let (code, out, err) = command(&s, &["calibrate", "judges:flaky", "-i", "labels.jsonl"]);
    assert_eq!(code, 1, "short of its bar: {out}\n{err}");
    assert!(
        out.contains("accuracy 0.933   Cohen's κ 0.867   flip rate 0.200"),
        "{out}"
    );
    assert!(
        out.contains(
            "bar: min_kappa 0.6, min_accuracy 0.95: NOT MET (accuracy 0.933 < min_accuracy 0.95)"
        ),
        "{out}"
    );
    // Which run got which answer depends on the order the judgments ran in: each
    // flipping item is listed with its three verdicts and the reason of the one that
    // disagreed with its label.
    for (item, label, odd, reason) in [
        ("i0 (line 1)", "pass", "fail", "rude"),
        ("i5 (line 6)", "fail", "pass", "polite"),
    ] {
        let line = out
            .lines()
            .find(|l| l.trim_start().starts_with(item))
            .unwrap_or_else(|| panic!("{item} is listed: {out}"));
        let said: Vec<&str> = line
            .split(", judged ")
            .nth(1)
            .expect("its verdicts")
            .split(", ")
            .collect();
        assert!(line.contains(&format!("labelled {label}")), "{line}");
        assert_eq!(said.iter().filter(|s| **s == odd).count(), 1, "{line}");
        assert_eq!(said.iter().filter(|s| **s == label).count(), 2, "{line}");
        assert!(out.contains(&format!(": {reason}\n")), "{out}");
    }
    assert_eq!(server.bodies("flaky:i0").len(), 3);

    // Offline: the server is gone, the cassettes answer.
    drop(server);
    let (code, out, err) = command(&s, &["calibrate", "good", "-i", "labels.jsonl", "--json"]);
    assert_eq!(code, 0, "{out}\n{err}");
    let again: Value = serde_json::from_str(&out).expect("a JSON report");
    assert_eq!(again["figures"], report["figures"]);
    assert_eq!(again["replayed_calls"], 30);
    assert_eq!(again["fingerprint"], report["fingerprint"]);

    // A bad labelled set names the line, the field and the fix, and calibrates nothing.
    s.write(
        "bad.jsonl",
        "{\"id\": \"x\", \"criteria\": \"c\", \"reply\": \"r\", \"label\": \"maybe\"}\n",
    );
    let (code, _, err) = command(&s, &["calibrate", "good", "-i", "bad.jsonl"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains(
            "bad.jsonl:1:1: field `label`: expected \"pass\" or \"fail\", found \"maybe\""
        ),
        "{err}"
    );
    let (code, _, err) = command(&s, &["calibrate", "nobody", "-i", "labels.jsonl"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("no [judges.\"nobody\"] table"), "{err}");
}

/// Under `[run] require_calibrated_judges`, a verdict counts only from a judge whose
/// current fingerprint has a calibration meeting its bar: `good`'s does; `flaky`'s
/// falls short, and the built-in judge has no bar, so theirs are inconclusive with the
/// reason. Changing `good`'s model makes it another judge, uncalibrated until
/// calibrated again.
fn only_calibrated_judges_decide_when_the_run_requires_it() {
    let server = ChatServer::routed(by_model_and_item);
    good_and_flaky_judges(&server);
    let judged = |id: &str, use_: Option<&str>| {
        let mut assert = json!({"type": "llm_judge", "prompt": "answers politely"});
        if let Some(u) = use_ {
            assert["use"] = json!(u);
        }
        json!({"id": id, "input": "hi", "assert": assert})
    };
    let cases = [
        judged("by-good", Some("judges:good")),
        judged("by-flaky", Some("judges:flaky")),
        judged("by-llm", None),
    ];
    let config = format!(
        "[run]\nrequire_calibrated_judges = true\ncassettes = \"off\"\n{CALIBRATED_JUDGES}"
    );
    let s = project_with("require", &server, &config, &cases);
    s.write("labels.jsonl", &labels());
    for judge in ["good", "flaky"] {
        let (code, out, err) = command(&s, &["calibrate", judge, "-i", "labels.jsonl"]);
        assert!(code == 0 || code == 1, "{out}\n{err}");
    }
    // The cases' replies are "You said: hi. Anything else?": the judges answer them from `*` queues.
    for model in ["good", "flaky", "default-model"] {
        server.answer(
            &format!("{model}:?"),
            &times(4, &verdict(json!(true), "polite")),
        );
    }
    let r = agentest(&s).run();
    r.expect(1)
        .expect_status("by-good", "passed")
        .expect_status("by-flaky", "inconclusive")
        .expect_status("by-llm", "inconclusive");
    r.expect_error(
        "by-flaky",
        &[
            "the verdict does not count: its calibration of ",
            "falls short of its bar: accuracy 0.933 < min_accuracy 0.95",
        ],
    );
    r.expect_error(
        "by-llm",
        &["`llm` is no [judges.NAME] with a calibration bar, and [run] require_calibrated_judges is on"],
    );
    let a = first_assertion(&r, "by-flaky");
    assert_eq!(
        a["judgment"]["reason"], "polite",
        "the verdict is kept: {a}"
    );
    assert!(a["judgment"]["uncalibrated"].is_string(), "{a}");

    // Another model: another judge, with no calibration of its own.
    s.write(
        "agentest.toml",
        &s.read("agentest.toml")
            .replace("model = \"good\"", "model = \"good-2\""),
    );
    server.answer("good-2:?", &times(2, &verdict(json!(true), "polite")));
    s.cases(&cases[..1]);
    let r = agentest(&s).run();
    r.expect(1)
        .expect_status("by-good", "inconclusive")
        .expect_error(
            "by-good",
            &["`judges:good` has no calibration of what it is now (fingerprint "],
        );
    assert_eq!(server.bodies("good-2:?").len(), 1, "the judge still judged");
}

fn script(rules: Value) -> Value {
    json!({"use": "script", "script": rules})
}

fn never() -> Value {
    json!([{"id": "never", "description": "mentions a unicorn", "assert": {"type": "contains", "value": "unicorn"}}])
}

/// Each way a case fails, blamed as it ends: a simulator that claims its goal with a
/// checkpoint pending, repeats itself, leaks a checkpoint's wording or rambles; a judge
/// endpoint that cannot be reached (infrastructure); a judge that answers garbage; an
/// agent that does not do what is asked. `rerun_on = ["simulator", "infrastructure"]`
/// with `max_reruns = 2` runs those parties' failures twice more, every attempt kept,
/// and leaves the judge's and the agent's alone. The summary counts every attempt by
/// blame, and `runs list --blame` finds them in the store.
fn each_failure_is_blamed_and_rerun_on_runs_only_the_parties_it_names() {
    let server = ChatServer::routed(by_model);
    server.answer("garbled", &times(8, "no idea"));
    let leak = json!([{"id": "type", "description": "asks for the expense type politely",
                        "assert": {"type": "contains", "value": "unicorn"}}]);
    let dynamic = |id: &str, simulator: Value, checkpoints: Value| json!({"id": id, "input": "start", "max_turns": 3, "simulator": simulator, "checkpoints": checkpoints});
    let cases = [
        dynamic(
            "goal-claim",
            script(json!([{"say": "more"}, {"goal_achieved": true}])),
            never(),
        ),
        dynamic(
            "repeats",
            script(json!([{"say": "the same again"}, {"say": "The same  again"}])),
            never(),
        ),
        dynamic(
            "leak",
            script(
                json!([{"say": "Now please: asks for the expense type politely."}, {"say": "ok"}]),
            ),
            leak,
        ),
        dynamic(
            "rambles",
            script(json!([{"say": "blah ".repeat(450)}, {"say": "ok"}])),
            never(),
        ),
        json!({"id": "infra", "input": "hi", "assert": {"type": "llm_judge", "prompt": "greets", "llm": "down"}}),
        json!({"id": "judge", "input": "hi", "assert": {"type": "llm_judge", "prompt": "greets", "model": "garbled"}}),
        json!({"id": "agent", "input": "hi", "assert": {"type": "contains", "value": "unicorn"}}),
    ];
    let s = project_with(
        "blame",
        &server,
        "[llms.down]\nbase_url = \"http://127.0.0.1:9/v1\"\nmodel = \"m\"\ntimeout = \"2s\"\nmax_retries = 0\n\n[run]\ncassettes = \"off\"\nrerun_on = [\"simulator\", \"infrastructure\"]\nmax_reruns = 2\n",
        &cases,
    );
    let r = agentest(&s).run();
    r.expect(1);
    let blamed = |id: &str| {
        let c = r.case(id);
        (
            c["blame"]["party"].as_str().unwrap_or("none").to_string(),
            c["blame"]["evidence"]
                .as_str()
                .unwrap_or_default()
                .to_string(),
            c["attempts"].as_array().map_or(0, Vec::len),
        )
    };
    let expect = [
        ("goal-claim", "simulator", "the simulated user claimed its goal after turn 2 while required checkpoints were pending: never", 2),
        ("repeats", "simulator", "the simulated user repeated itself at turn 3 (as at turn 2): \"The same  again\"", 2),
        ("leak", "simulator", "the simulated user leaked checkpoint `type`'s wording at turn 2: \"asks for the expense type politely\"", 2),
        ("rambles", "simulator", "the simulated user sent an over-long message at turn 2: 2250 characters (a user's are at most 2000)", 2),
        ("infra", "infrastructure", "turn 1: ", 2),
        ("judge", "judge", "the judge of llm_judge gave no verdict: judge answered twice without a verdict", 0),
        ("agent", "agent", "turn 1: contains \"unicorn\"", 0),
    ];
    for (id, party, evidence, attempts) in expect {
        let (p, e, n) = blamed(id);
        assert_eq!(p, party, "{id}: {e}\n{r:?}");
        assert!(
            e.starts_with(evidence),
            "{id}: {e:?}\n  wanted {evidence:?}"
        );
        assert_eq!(n, attempts, "{id}'s earlier attempts");
    }
    let (_, infra, _) = blamed("infra");
    assert!(infra.contains("127.0.0.1:9"), "{infra}");
    // Every attempt is kept whole, with its own blame.
    let goal = r.case("goal-claim");
    for a in goal["attempts"].as_array().unwrap() {
        assert_eq!(a["status"], "failed");
        assert_eq!(a["blame"]["party"], "simulator");
        assert_eq!(a["total_turns"], 2);
    }
    r.expect_stderr("agentest: s::goal-claim: attempt 1 did not pass by the simulator's fault");
    // 4 simulator cases and the infrastructure one ran three times each.
    let sum = r.summary();
    assert_eq!(
        sum["blame"],
        json!({"agent": 1, "simulator": 12, "judge": 1, "infrastructure": 3})
    );
    assert_eq!(sum["reruns"], 10);
    r.expect_stdout("Not passed, by fault: agent 1, simulator 12, judge 1, infrastructure 3");
    // Two requests for the garbled judge (the answer and its repair), not six.
    assert_eq!(server.bodies("garbled").len(), 2);
    let (code, out, err) = command(&s, &["runs", "list", "--blame", "simulator"]);
    assert_eq!(code, 0, "{err}");
    for id in ["goal-claim", "repeats", "leak", "rambles"] {
        assert!(out.contains(&format!("s::{id}")), "{out}");
    }
    assert!(
        !out.contains("s::agent") && !out.contains("s::infra"),
        "{out}"
    );
    let (code, _, err) = command(&s, &["runs", "list", "--blame", "user"]);
    assert_eq!(code, 2);
    assert!(err.contains("--blame: expected \"agent\", \"simulator\", \"judge\" or \"infrastructure\", found \"user\""), "{err}");
}

/// A simulated user that ends the first attempt early (claiming its goal) and plays
/// properly the second: `rerun_on` rescues the case, which passes, but half of the
/// run's attempts were spoiled by the simulator, over `max_simulator_blame = 0.25`, so
/// the run fails and says why.
fn a_run_whose_simulator_spoiled_too_many_attempts_fails() {
    let server = ChatServer::routed(by_role);
    server.answer(
        "sim",
        &[
            json!({"message": "bye", "goal_achieved": true, "reasoning": "done"}).to_string(),
            json!({"message": "I need a unicorn"}).to_string(),
        ],
    );
    let case = json!({"id": "rescued", "input": "start", "max_turns": 3,
                      "simulator": {"goal": "get a unicorn"},
                      "checkpoints": [{"id": "unicorn", "assert": {"type": "contains", "value": "unicorn"}}]});
    let config = "[run]\ncassettes = \"off\"\nrerun_on = [\"simulator\"]\n";
    let s = project_with(
        "sim-gate",
        &server,
        &format!("{config}max_simulator_blame = 0.25\n"),
        std::slice::from_ref(&case),
    );
    let r = agentest(&s).run();
    r.expect(1).expect_status("rescued", "passed");
    assert_eq!(
        r.case("rescued")["attempts"][0]["blame"]["party"],
        "simulator"
    );
    assert_eq!(r.summary()["blame"], json!({"simulator": 1}));
    r.expect_stdout("Run failed: 1 of 2 attempts failed by the simulated user's fault (50.0 %), over [run] max_simulator_blame 0.25");
    // Without the limit, the rescued run passes.
    server.answer(
        "sim",
        &[
            json!({"message": "bye", "goal_achieved": true, "reasoning": "done"}).to_string(),
            json!({"message": "I need a unicorn"}).to_string(),
        ],
    );
    s.write(
        "agentest.toml",
        &s.read("agentest.toml")
            .replace("max_simulator_blame = 0.25\n", ""),
    );
    let r = agentest(&s).run();
    r.expect(0).expect_status("rescued", "passed");
}

/// The README's worked example: its `agentest calibrate` command, run in this
/// repository offline from the committed cassettes, prints the lines the README shows.
fn the_readmes_calibration_runs_as_shown() {
    let readme = include_str!("../../README.md");
    let block = readme
        .split("```console\n")
        .nth(1)
        .and_then(|b| b.split("```").next())
        .expect("the README's console block");
    let mut lines = block.lines();
    let command = lines.next().expect("its command");
    assert_eq!(
        command,
        "$ cargo run -- calibrate polite -i agent-tests/greetings.labels.jsonl --runs 2"
    );
    let shown: Vec<&str> = lines.take_while(|l| l.trim() != "...").collect();
    assert!(shown.len() > 5, "{block}");
    let scratch = Scratch::named("verdicts", "readme");
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = clean(Command::new(BIN))
        .current_dir(repo)
        .args([
            "calibrate",
            "polite",
            "-i",
            "agent-tests/greetings.labels.jsonl",
            "--runs",
            "2",
        ])
        .env("AGENTEST_CASSETTES", "replay")
        .env("AGENTEST_STORE", scratch.join("runs.db"))
        .output()
        .expect("run agentest");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(1),
        "short of its bar\n{stdout}\n{stderr}"
    );
    let printed: Vec<&str> = stdout.lines().collect();
    assert_eq!(&printed[..shown.len()], &shown[..], "\n{stdout}");
    assert!(
        stdout.contains("16 model call(s) (16 replayed)"),
        "{stdout}"
    );
}

/// `[run] persona_judge`: a failed case whose simulated user played a persona is judged
/// for whether the user stayed in it; one that broke it is the simulator's fault (and so
/// run again under `rerun_on`), one that kept it leaves the failure the agent's. A case
/// that passes is not judged.
fn a_persona_judge_blames_a_simulator_that_broke_its_persona() {
    let server = ChatServer::routed(by_model);
    server.answer(
        "persona-model",
        &[verdict(
            json!(false),
            "the user shouted and swore, no retiree would",
        )],
    );
    let case = json!({"id": "retiree", "input": "start", "max_turns": 2,
        "simulator": {"use": "script", "persona": "a polite retiree who never raises their voice",
                      "script": [{"say": "GIVE ME MY MONEY NOW"}, {"say": "now"}]},
        "checkpoints": never()});
    let s = project_with(
        "persona",
        &server,
        "[run]\ncassettes = \"off\"\npersona_judge = \"judges:persona\"\n\n[judges.persona]\nmodel = \"persona-model\"\n",
        std::slice::from_ref(&case),
    );
    let r = agentest(&s).run();
    r.expect(1).expect_status("retiree", "failed");
    let c = r.case("retiree");
    assert_eq!(c["blame"]["party"], "simulator", "{c}");
    assert_eq!(
        c["blame"]["evidence"],
        "the simulated user broke its persona (judges:persona: the user shouted and swore, no retiree would)"
    );
    let asked = &server.bodies("persona-model")[0];
    let prompt = asked["messages"][1]["content"].as_str().unwrap();
    assert!(
        prompt.contains("a polite retiree who never raises their voice")
            && prompt.contains("GIVE ME MY MONEY NOW"),
        "{prompt}"
    );
    // The judge finds the persona kept: the failure is the agent's.
    server.answer("persona-model", &[verdict(json!(true), "calm throughout")]);
    let r = agentest(&s).run();
    assert_eq!(r.case("retiree")["blame"]["party"], "agent");
    assert_eq!(server.bodies("persona-model").len(), 2);
}

/// An agent judge (an `openai` agent, a model with a system prompt) calibrated, then its
/// prompt changed: its fingerprint is another, so under `require_calibrated_judges` its
/// verdicts no longer count until it is calibrated again.
fn changing_an_agent_judges_prompt_makes_it_uncalibrated() {
    let server = ChatServer::routed(by_model_and_item);
    judge_answers(&server, "reviewer-model", |i| [i < 5; 3]);
    let config = "[run]\nrequire_calibrated_judges = true\ncassettes = \"off\"\n\n[agents.reviewer]\ntype = \"openai\"\nmodel = \"reviewer-model\"\nsystem = \"You review replies.\"\n\n[judges.reviewer]\nuse = \"agents:reviewer\"\nmin_accuracy = 0.9\n";
    let case = json!({"id": "by-reviewer", "input": "hi",
                      "assert": {"type": "agent", "use": "judges:reviewer", "options": {"metadata": {"criteria": "answers politely"}}}});
    let s = project_with(
        "agent-fingerprint",
        &server,
        config,
        std::slice::from_ref(&case),
    );
    s.write("labels.jsonl", &labels());
    let (code, out, err) = command(
        &s,
        &["calibrate", "reviewer", "-i", "labels.jsonl", "--json"],
    );
    assert_eq!(code, 0, "{out}\n{err}");
    let report: Value = serde_json::from_str(&out).expect("a JSON report");
    assert_eq!(report["figures"]["accuracy"], 1.0, "{report}");
    server.answer(
        "reviewer-model:?",
        &times(2, &verdict(json!(true), "polite")),
    );
    let r = agentest(&s).run();
    r.expect(0).expect_status("by-reviewer", "passed");
    s.write(
        "agentest.toml",
        &s.read("agentest.toml")
            .replace("You review replies.", "You review replies, strictly."),
    );
    let r = agentest(&s).run();
    r.expect(1)
        .expect_status("by-reviewer", "inconclusive")
        .expect_error(
            "by-reviewer",
            &["`judges:reviewer` has no calibration of what it is now"],
        );
}

/// Repeats a judge could not decide leave the gate undecided: the case is
/// `inconclusive` (not an error to fix), with `on_inconclusive` as a lone run has it.
fn a_repeated_case_left_undecided_by_its_judge_is_inconclusive() {
    let server = ChatServer::routed(by_model);
    server.answer(
        "default-model",
        &times(6, &verdict(Value::Null, "cannot tell")),
    );
    let case = json!({"id": "twice", "input": "hi", "runs": 2,
                      "assert": {"type": "llm_judge", "prompt": "answers the question"}});
    let s = project_with(
        "repeat-inconclusive",
        &server,
        "[run]\ncassettes = \"off\"\non_inconclusive = \"ignore\"\n",
        std::slice::from_ref(&case),
    );
    let r = agentest(&s).run();
    r.expect(0).expect_status("twice", "inconclusive").expect_error(
        "twice",
        &["gate all 2 runs pass cannot be decided: 0 passed, 0 failed, 1 errors; the gate needs 2 passes, and every repeat that did not decide was inconclusive; repeat 1: turn 1: llm_judge"],
    );
    let c = r.case("twice");
    assert_eq!(c["on_inconclusive"], "ignore", "{c}");
    assert_eq!(r.summary()["inconclusive"], 1);
}

/// A case whose deadline passes while its judge is still answering timed out by what
/// carries the conversation, not by the agent's fault.
fn a_deadline_passing_while_a_judge_works_is_infrastructures() {
    let server = ChatServer::routed(by_model);
    server.script(
        "default-model",
        vec![crate::common::chat::slow(
            std::time::Duration::from_secs(4),
            crate::common::chat::text(&verdict(json!(true), "fine"), (10, 5)),
        )],
    );
    let case = json!({"id": "slow-judge", "input": "hi", "timeout": "1s",
                      "assert": {"type": "llm_judge", "prompt": "answers"}});
    let s = project_with(
        "judge-timeout",
        &server,
        "[run]\ncassettes = \"off\"\n",
        std::slice::from_ref(&case),
    );
    let r = agentest(&s).run();
    r.expect(1).expect_status("slow-judge", "timeout");
    let c = r.case("slow-judge");
    assert_eq!(c["blame"]["party"], "infrastructure", "{c}");
    assert!(
        c["blame"]["evidence"]
            .as_str()
            .unwrap()
            .contains("while checking the assertions of turn 1"),
        "{c}"
    );
}
