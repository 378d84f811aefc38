//! Repeated runs: gates, early stopping, stability classes, flaky labels, Wilson bounds,
//! errors apart from failures, cost by role, budgets and `runs flaky`, against the
//! deliberately unreliable agent in `examples/random-agent` (a real child process per
//! repeat) and a loopback model server for the judge. Every expected number is worked
//! out here by hand, not read back from agentest.

use std::process::Command;

use serde_json::{json, Value};

use crate::common::chat::{text, ChatServer};
use crate::common::project::{agentest, ReportedRun};
use crate::common::{finish, Report, Scratch, BIN};

pub fn tests() -> Vec<libtest_mimic::Trial> {
    crate::trials![
        gates_early_stops_and_classes_match_hand_computed_values,
        the_verdicts_are_the_same_however_many_repeats_run_at_once,
        with_more_cases_than_slots_a_decided_case_starts_no_more_repeats,
        a_seeded_random_agent_gives_the_verdicts_its_draws_imply,
        flaky_cases_are_labelled_in_every_report,
        cost_is_tokens_times_prices_by_role_and_replays_cost_nothing,
        budgets_stop_a_case_and_a_run,
        runs_flaky_finds_verdicts_that_changed_between_executions,
        bad_repeat_settings_are_located_errors,
        ctrl_c_keeps_the_finished_repeats_and_says_the_gate_was_not_decided,
        repeats_spread_over_workers_decide_as_one_process_does,
        repeats_spread_over_workers_on_postgres(needs crate::common::postgres),
        a_cases_budget_holds_for_its_repeats_across_workers,
    ]
}

const KEY: (&str, &str) = ("AGENTEST_TEST_KEY", "sk-repeats");

const AGENT: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/examples/random-agent/agent.py"
);

/// A project running the random agent, with `extra` config, and `cases`.
fn project(tag: &str, extra: &str, cases: &[Value]) -> Scratch {
    let s = Scratch::named("repeats", tag);
    s.write(
        "agentest.toml",
        &format!(
            "[agent]\ntype = \"process\"\ncommand = [\"python3\", {}]\n{extra}",
            crate::common::toml_str(AGENT)
        ),
    );
    let lines: Vec<String> = cases.iter().map(Value::to_string).collect();
    let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
    s.write_suite(crate::common::project::SUITE, &refs);
    s
}

/// A case answering by `pattern` (P pass, F fail, E error), asserting a pass says yes.
fn patterned(id: &str, pattern: &str, more: Value) -> Value {
    let mut c = json!({
        "id": id,
        "input": "q",
        "assert": {"type": "contains", "value": "yes"},
        "options": {"pattern": pattern},
    });
    for (k, v) in more.as_object().expect("an object") {
        c[k] = v.clone();
    }
    c
}

/// z for a two-sided 95 % interval.
const Z95: f64 = 1.959_963_984_540_054;

/// The Wilson score interval, written out again here (not agentest's).
fn wilson(passed: f64, n: f64, z: f64) -> (f64, f64) {
    let p = passed / n;
    let z2 = z * z;
    let centre = (p + z2 / (2.0 * n)) / (1.0 + z2 / n);
    let half = z / (1.0 + z2 / n) * (p * (1.0 - p) / n + z2 / (4.0 * n * n)).sqrt();
    ((centre - half).max(0.0), (centre + half).min(1.0))
}

#[track_caller]
fn close(actual: &Value, expected: f64) {
    let a = actual
        .as_f64()
        .unwrap_or_else(|| panic!("not a number: {actual}"));
    assert!((a - expected).abs() < 1e-6, "{a} != {expected}");
}

/// The statuses of a record's counted repeats, in order.
fn repeats(r: &Value) -> Vec<String> {
    r["repeats"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|x| x["status"].as_str().unwrap_or_default().to_string())
                .collect()
        })
        .unwrap_or_default()
}

fn suite_of_gates() -> Vec<Value> {
    vec![
        patterned("steady", "P", json!({"runs": 5})),
        patterned("flaky", "PFPFP", json!({"runs": 5, "min_pass": 3})),
        patterned("bad", "FFFPP", json!({"runs": 5, "min_pass": 3})),
        patterned("err", "PEP", json!({"runs": 5})),
        patterned("errors-apart", "EPEP", json!({"runs": 4, "min_pass": 2})),
        patterned(
            "wilson",
            "P",
            json!({"runs": 30, "pass_rate": 0.8, "confidence": 0.95}),
        ),
        patterned(
            "inconclusive",
            "PPPPF",
            json!({"runs": 5, "pass_rate": 0.8, "confidence": 0.95}),
        ),
        patterned("rate", "FPFPP", json!({"runs": 5, "pass_rate": 0.6})),
        patterned("once", "P", json!({})),
    ]
}

/// Every gate on a fixed pattern of outcomes: the verdict, how many repeats were
/// counted and saved, the class, the flaky flag and the Wilson bounds.
fn gates_early_stops_and_classes_match_hand_computed_values() {
    let s = project("gates", "", &suite_of_gates());
    let r = agentest(s.path(), KEY).arg("--parallel").arg("1").run();
    r.expect(1);
    let st = |id: &str| r.case(id)["stability"].clone();

    // All 5 must pass, and do: 5 counted, stable; the lower bound is 5 / (5 + z²).
    r.expect_status("steady", "passed");
    assert_eq!(repeats(&r.case("steady")), ["passed"; 5]);
    assert_eq!(
        (
            st("steady")["runs"].as_u64(),
            st("steady")["saved"].as_u64()
        ),
        (Some(5), Some(0))
    );
    assert_eq!(st("steady")["class"], "stable");
    close(&st("steady")["wilson"][0], 5.0 / (5.0 + Z95 * Z95));
    close(&st("steady")["wilson"][1], 1.0);

    // 3 of 5: P F P F P reaches 3 passes at the fifth; flaky, 60 %, unstable.
    r.expect_status("flaky", "passed");
    assert_eq!(st("flaky")["passed"], 3);
    assert_eq!(st("flaky")["failed"], 2);
    assert_eq!(st("flaky")["flaky"], true);
    assert_eq!(st("flaky")["class"], "unstable");
    close(&st("flaky")["pass_rate"], 0.6);
    let (lo, hi) = wilson(3.0, 5.0, Z95);
    close(&st("flaky")["wilson"][0], lo);
    close(&st("flaky")["wilson"][1], hi);
    // Consistency: 3 of 5 transcripts say "yes".
    close(&st("flaky")["consistency"], 0.6);

    // 3 of 5 after F F F: 3 failures leave at most 2 passes; 2 repeats saved.
    r.expect_status("bad", "failed");
    assert_eq!(repeats(&r.case("bad")), ["failed"; 3]);
    assert_eq!(st("bad")["saved"], 2);
    assert_eq!(st("bad")["class"], "highly_unstable");
    assert!(
        r.error("bad")
            .starts_with("gate min_pass 3 of 5 failed: 0 passed, 3 failed, 0 errors; repeat 1: "),
        "{r:?}"
    );

    // All of 5 after P E: five passes are out of reach, yet nothing failed: an error,
    // not a failure; 3 saved.
    r.expect_status("err", "error");
    assert_eq!(repeats(&r.case("err")), ["passed", "error"]);
    assert_eq!(st("err")["failed"], 0);
    assert_eq!(st("err")["errors"], 1);
    assert_eq!(st("err")["saved"], 3);
    assert!(
        r.error("err")
            .contains("cannot be decided: 1 passed, 0 failed, 1 errors"),
        "{r:?}"
    );

    // 2 of 4 with E P E P: the errors do not count against it, and 2 passes pass.
    r.expect_status("errors-apart", "passed");
    assert_eq!(st("errors-apart")["errors"], 2);
    assert_eq!(st("errors-apart")["failed"], 0);

    // 80 % at 95 %: 16 straight passes put the lower bound at 16 / (16 + z²) = 0.806,
    // 15 leave it at 0.796; so 16 counted, 14 saved.
    r.expect_status("wilson", "passed");
    const { assert!(15.0 / (15.0 + Z95 * Z95) < 0.8 && 16.0 / (16.0 + Z95 * Z95) >= 0.8) };
    assert_eq!(st("wilson")["runs"], 16);
    assert_eq!(st("wilson")["saved"], 14);

    // 4 of 5 at 95 %: [0.376, 0.964] still holds 0.8 once all 5 ran: inconclusive.
    r.expect_status("inconclusive", "failed");
    let (lo, hi) = wilson(4.0, 5.0, Z95);
    assert!(lo < 0.8 && hi >= 0.8);
    assert!(
        r.error("inconclusive")
            .contains("is inconclusive: 4 passed, 1 failed, 0 errors"),
        "{r:?}"
    );

    // 60 % of 5 without confidence is 3 of 5: F P F P P passes at the fifth.
    r.expect_status("rate", "passed");
    assert_eq!(st("rate")["runs"], 5);

    // A case run once reports as it always did.
    r.expect_status("once", "passed");
    assert!(r.case("once").get("stability").is_none());
    assert!(r.case("once").get("repeats").is_none());

    // The summary: stable are steady, err, errors-apart and wilson (100 % of what
    // passed or failed); `once` is not repeated.
    let summary = r.summary();
    assert_eq!(summary["stable_cases"], 4, "{summary}");
    assert_eq!(summary["unstable_cases"], 4, "{summary}");
    // Flaky: flaky, inconclusive (P P P P F) and rate (F P F P P).
    assert_eq!(summary["flaky_cases"], 3, "{summary}");
    // Saved: bad 2, err 3, wilson 14.
    assert_eq!(summary["repeats_saved"], 19, "{summary}");
}

/// With 8 repeats in flight the verdicts, the repeats counted and the per-repeat
/// statuses are those of a run one at a time: decisions are made in repeat order.
fn the_verdicts_are_the_same_however_many_repeats_run_at_once() {
    let s = project("overlap", "", &suite_of_gates());
    let one = agentest(s.path(), KEY).arg("--parallel").arg("1").run();
    let eight = agentest(s.path(), KEY).arg("--parallel").arg("8").run();
    for case in suite_of_gates() {
        let id = case["id"].as_str().expect("id");
        let (a, b) = (one.case(id), eight.case(id));
        assert_eq!(a["status"], b["status"], "{id}");
        assert_eq!(repeats(&a), repeats(&b), "{id}");
        assert_eq!(a["stability"]["runs"], b["stability"]["runs"], "{id}");
        assert_eq!(a["stability"]["wilson"], b["stability"]["wilson"], "{id}");
    }
    // At 8 in flight, early stopping stops repeats that were already running.
    assert!(
        eight.case("wilson")["stability"]["cancelled"].as_u64() > Some(0),
        "{eight:?}"
    );
}

/// With more cases than slots, each case runs one repeat at a time: a case that fails
/// its first repeat never starts a second, though slots were free for one. (Starting a
/// case's repeats all at once would start two of each here, and cancel one.)
fn with_more_cases_than_slots_a_decided_case_starts_no_more_repeats() {
    // `steady` passes 20 slow repeats, one at a time; the three failing cases, each
    // slower still, run and decide beside it, one after another.
    let mut cases = vec![patterned(
        "steady",
        "P",
        json!({"runs": 20, "options": {"pattern": "P", "sleep_ms": 100}}),
    )];
    for id in ["f1", "f2", "f3"] {
        cases.push(patterned(
            id,
            "F",
            json!({"runs": 6, "options": {"pattern": "F", "sleep_ms": 300}}),
        ));
    }
    let s = project("window", "", &cases);
    let r = agentest(s.path(), KEY).arg("--parallel").arg("2").run();
    assert_eq!(r.code, 1, "{r:?}");
    let steady = r.case("steady");
    assert_eq!(steady["status"], "passed", "{r:?}");
    assert_eq!(steady["stability"]["started"], 20, "{r:?}");
    assert_eq!(steady["stability"]["saved"], 0, "{r:?}");
    for id in ["f1", "f2", "f3"] {
        let rec = r.case(id);
        assert_eq!(rec["status"], "failed", "{id}: {r:?}");
        assert_eq!(rec["stability"]["runs"], 1, "{id}: {r:?}");
        assert_eq!(rec["stability"]["started"], 1, "{id}: {r:?}");
        assert_eq!(rec["stability"]["saved"], 5, "{id}: {r:?}");
        assert_eq!(rec["stability"].get("cancelled"), None, "{id}: {r:?}");
    }
    let summary = r.summary();
    assert_eq!(summary["repeats_run"], 23, "{r:?}");
    assert_eq!(summary["repeats_saved"], 15, "{r:?}");
}

/// The draws the agent makes, as Python makes them: pass when
/// `random.Random(f"{seed}:{test_id}:{repeat}").random() < p`.
fn python_draws(seed: u64, test_id: &str, p: f64, n: u32) -> Vec<bool> {
    let script = format!(
        "import random\nprint(''.join('P' if random.Random(f'{seed}:{test_id}:{{r}}').random() < {p} else 'F' for r in range(1, {})))",
        n + 1
    );
    let out = Command::new("python3")
        .args(["-c", &script])
        .output()
        .expect("run python3");
    String::from_utf8_lossy(&out.stdout)
        .trim()
        .chars()
        .map(|c| c == 'P')
        .collect()
}

/// A seeded agent passing 70 % of the time, gated at 12 of 20: the repeats counted,
/// the verdict and the figures follow from its draws by the rules, worked out here.
fn a_seeded_random_agent_gives_the_verdicts_its_draws_imply() {
    let case = json!({
        "id": "coin", "input": "q", "assert": {"type": "contains", "value": "yes"},
        "options": {"p": 0.7, "seed": 7}, "runs": 20, "min_pass": 12,
    });
    let s = project("seeded", "", &[case]);
    let r = agentest(s.path(), KEY).run();
    let draws = python_draws(7, "coin", 0.7, 20);
    assert_eq!(draws.len(), 20);
    // Decided in order: 12 passes reached, or more than 8 failures.
    let (mut passed, mut failed, mut counted) = (0, 0, 0);
    for d in &draws {
        counted += 1;
        if *d {
            passed += 1
        } else {
            failed += 1
        }
        if passed >= 12 || failed > 8 {
            break;
        }
    }
    let rec = r.case("coin");
    let expected: Vec<&str> = draws[..counted]
        .iter()
        .map(|d| if *d { "passed" } else { "failed" })
        .collect();
    assert_eq!(repeats(&rec), expected, "{r:?}");
    assert_eq!(
        rec["status"],
        if passed >= 12 { "passed" } else { "failed" }
    );
    assert_eq!(rec["stability"]["runs"], counted);
    assert_eq!(rec["stability"]["saved"], 20 - counted);
    assert_eq!(rec["stability"]["flaky"], passed > 0 && failed > 0);
    let rate = f64::from(passed) / f64::from(passed + failed);
    close(&rec["stability"]["pass_rate"], rate);
    let class = match rate {
        r if r >= 1.0 => "stable",
        r if r >= 0.8 => "mostly_stable",
        r if r >= 0.5 => "unstable",
        _ => "highly_unstable",
    };
    assert_eq!(rec["stability"]["class"], class);
    let (lo, hi) = wilson(f64::from(passed), f64::from(passed + failed), Z95);
    close(&rec["stability"]["wilson"][0], lo);
    close(&rec["stability"]["wilson"][1], hi);
}

/// A flaky case is labelled in the console, JUnit (as nextest writes retried tests),
/// Markdown and the summary.
fn flaky_cases_are_labelled_in_every_report() {
    let s = project(
        "labels",
        "",
        &[
            patterned("flaky", "PFPFP", json!({"runs": 5, "min_pass": 3})),
            patterned("worse", "FPF", json!({"runs": 3, "min_pass": 2})),
        ],
    );
    let r = agentest(s.path(), KEY).arg("--parallel").arg("1").run();
    r.expect(1);
    assert!(r.stdout.contains("FLAKY Repeats: 5 of 5 runs (min_pass 3 of 5): 3 passed, 2 failed, 0 errors; pass rate 60%"), "{r:?}");
    assert!(
        r.stdout
            .contains("Stability: 0 stable, 2 unstable (2 flaky)"),
        "{r:?}"
    );
    let junit = finish(Command::new(BIN).current_dir(s.path()).args([
        "report",
        "report.jsonl",
        "-o",
        "r.xml",
    ]));
    assert_eq!(junit.code, 0, "{junit:?}");
    let xml = s.read("r.xml");
    // The passing case: its failed repeats 2 and 4 as flakyFailure.
    assert_eq!(
        xml.matches("<flakyFailure message=\"repeat 2:").count(),
        1,
        "{xml}"
    );
    assert_eq!(
        xml.matches("<flakyFailure message=\"repeat 4:").count(),
        1,
        "{xml}"
    );
    // The failing one: a failure, and its second failed repeat as rerunFailure.
    assert!(
        xml.contains("<failure message=\"gate min_pass 2 of 3 failed: 1 passed, 2 failed"),
        "{xml}"
    );
    assert_eq!(
        xml.matches("<rerunFailure message=\"repeat 3:").count(),
        1,
        "{xml}"
    );
    let md = finish(Command::new(BIN).current_dir(s.path()).args([
        "report",
        "report.jsonl",
        "-o",
        "r.md",
    ]));
    assert_eq!(md.code, 0, "{md:?}");
    assert!(
        s.read("r.md").contains("s::flaky` (flaky)") || s.read("r.md").contains("s::flaky (flaky)"),
        "{}",
        s.read("r.md")
    );
}

/// The judge's endpoint priced at 2.5 in / 10 out per million: each verdict call
/// (1000 in, 200 out) costs 0.0045. Three repeats spend 0.0135; replayed, nothing.
fn cost_is_tokens_times_prices_by_role_and_replays_cost_nothing() {
    let server = ChatServer::routed(|_| "judge".into());
    let verdict = || {
        text(
            &json!({"passed": true, "reason": "says yes"}).to_string(),
            (1000, 200),
        )
    };
    server.script("judge", (0..6).map(|_| verdict()).collect());
    let extra = format!(
        "[llm]\nbase_url = \"{}\"\nmodel = \"judge-model\"\napi_key_env = \"{}\"\n[llm.pricing]\ninput_per_million = 2.5\noutput_per_million = 10.0\ncurrency = \"EUR\"\n",
        server.url(),
        KEY.0
    );
    let judged = |id: &str, options: Value| {
        json!({"id": id, "input": "q", "runs": 3, "options": options,
               "assert": [{"type": "contains", "value": "yes"}, {"type": "llm_judge", "prompt": "It says yes"}]})
    };
    let s = project(
        "cost",
        &extra,
        &[
            judged("priced", json!({"pattern": "P"})),
            judged(
                "agent-tokens",
                json!({"pattern": "P", "usage": {"input_tokens": 50, "output_tokens": 5}}),
            ),
        ],
    );
    let r = agentest(s.path(), KEY).arg("--parallel").arg("1").run();
    r.expect(0);
    let per_call = (1000.0 * 2.5 + 200.0 * 10.0) / 1e6;
    let cost = r.case("priced")["cost"].clone();
    assert_eq!(cost["currency"], "EUR");
    close(&cost["by_role"]["judge"]["spent"], 3.0 * per_call);
    close(&cost["spent"], 3.0 * per_call);
    close(&cost["replayed"], 0.0);
    // Each repeat has its own cost, and its own cassette.
    for rep in r.case("priced")["repeats"].as_array().expect("repeats") {
        close(&rep["cost"]["spent"], per_call);
    }
    assert!(
        s.exists("suites/.cassettes/s/priced@2.jsonl")
            && s.exists("suites/.cassettes/s/priced@3.jsonl")
    );
    // An agent's own tokens have no price here: unknown, never 0.
    let cost = r.case("agent-tokens")["cost"].clone();
    assert_eq!(cost["by_role"]["agent"]["spent"], Value::Null, "{cost}");
    assert_eq!(cost["spent"], Value::Null, "{cost}");
    assert!(
        r.stdout
            .contains("Cost: unknown EUR spent (agent unknown, judge 0.027)"),
        "{r:?}"
    );

    // Offline: every call replayed from the repeats' cassettes; spent 0, replayed the same.
    let again = agentest(s.path(), KEY)
        .without_key()
        .env("AGENTEST_CASSETTES", "strict")
        .arg("--parallel")
        .arg("1")
        .run();
    again.expect(0);
    let cost = again.case("priced")["cost"].clone();
    close(&cost["spent"], 0.0);
    close(&cost["replayed"], 3.0 * per_call);
    assert_eq!(repeats(&again.case("priced")), repeats(&r.case("priced")));
    assert_eq!(server.requests().len(), 6, "the replay called the model");
}

/// A case's `max_cost` stops its repeats once spent; `[run] max_cost` stops the run
/// from starting cases, which are reported not run.
fn budgets_stop_a_case_and_a_run() {
    let server = ChatServer::routed(|_| "judge".into());
    let verdict = || {
        text(
            &json!({"passed": true, "reason": "ok"}).to_string(),
            (1000, 200),
        )
    };
    server.script("judge", (0..10).map(|_| verdict()).collect());
    let llm = format!(
        "[llm]\nbase_url = \"{}\"\nmodel = \"m\"\napi_key_env = \"{}\"\n[llm.pricing]\ninput_per_million = 2.5\noutput_per_million = 10.0\n",
        server.url(),
        KEY.0
    );
    let judged = |id: &str, more: Value| {
        let mut c = json!({"id": id, "input": "q", "options": {"pattern": "P"},
               "assert": {"type": "llm_judge", "prompt": "ok"}});
        for (k, v) in more.as_object().expect("object") {
            c[k] = v.clone();
        }
        c
    };
    // 0.0045 a repeat: after two, 0.009 is past 0.005, so the third never starts.
    let s = project(
        "case-budget",
        &llm,
        &[judged("capped", json!({"runs": 3, "max_cost": 0.005}))],
    );
    let r = agentest(s.path(), KEY)
        .env("AGENTEST_CASSETTES", "off")
        .arg("--parallel")
        .arg("1")
        .run();
    r.expect(1).expect_status("capped", "error");
    assert!(
        r.error("capped")
            .contains("the case's budget max_cost 0.005 USD is spent (0.009 USD so far)"),
        "{r:?}"
    );
    assert_eq!(r.case("capped")["stability"]["runs"], 2);

    // The run: the first case spends 0.0045 of 0.004; the others are not run.
    let run = format!("{llm}[run]\nmax_cost = 0.004\n");
    let s = project(
        "run-budget",
        &run,
        &[
            judged("a", json!({})),
            judged("b", json!({})),
            judged("c", json!({})),
        ],
    );
    let r = agentest(s.path(), KEY)
        .env("AGENTEST_CASSETTES", "off")
        .arg("--parallel")
        .arg("1")
        .run();
    r.expect_status("a", "passed")
        .expect_status("b", "skipped")
        .expect_status("c", "skipped");
    assert!(
        r.error("b")
            .contains("not run: the run's budget max_cost 0.004 USD is spent (0.0045 USD so far)"),
        "{r:?}"
    );
    assert!(r.stdout.contains("Stopped by the run's budget"), "{r:?}");

    // max_tokens: the agent's own reported tokens count too.
    let s = project(
        "tokens",
        "",
        &[patterned(
            "chatty",
            "P",
            json!({"runs": 4, "max_tokens": 100, "options": {"pattern": "P", "usage": {"input_tokens": 40, "output_tokens": 20}}}),
        )],
    );
    let r = agentest(s.path(), KEY).arg("--parallel").arg("1").run();
    r.expect(1).expect_status("chatty", "error");
    assert!(
        r.error("chatty")
            .contains("the case's budget max_tokens 100 is spent (120 tokens so far)"),
        "{r:?}"
    );
}

/// The same case passing in one execution and failing in the next is flaky over time.
fn runs_flaky_finds_verdicts_that_changed_between_executions() {
    let s = project(
        "history",
        "",
        &[
            patterned("steady", "P", json!({})),
            patterned("flip", "P", json!({})),
        ],
    );
    let store = s.join("runs.db");
    let store = store.to_str().expect("utf-8");
    for flip in ["P", "F", "P"] {
        // The environment flips `flip`'s answers; its definition stays the same.
        let r = agentest(s.path(), KEY)
            .env("AGENTEST_STORE", store)
            .arg("--run")
            .arg("flip")
            .env("RANDOM_AGENT_PATTERN", flip)
            .run();
        assert!(r.code == 0 || r.code == 1, "{r:?}");
        agentest(s.path(), KEY)
            .env("AGENTEST_STORE", store)
            .arg("--run")
            .arg("steady")
            .run()
            .expect(0);
    }
    let out = finish(
        Command::new(BIN)
            .current_dir(s.path())
            .args(["runs", "flaky", "--store", store]),
    );
    assert_eq!(out.code, 0, "{out:?}");
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(lines.len(), 2, "{out:?}");
    assert!(lines[1].starts_with("s::flip"), "{out:?}");
    assert!(
        lines[1].contains("2/3") && lines[1].contains("66.7%"),
        "{out:?}"
    );
    assert!(!out.stdout.contains("s::steady"), "{out:?}");
}

/// An agent that logs each request's repeat and, while the file `hang` exists beside
/// it, never answers repeat 3.
const HANGS_ON_THREE: &str = r#"
import json, os, sys, time
here = os.path.dirname(os.path.abspath(__file__))
for line in sys.stdin:
    req = json.loads(line)
    repeat = int((req.get("metadata") or {}).get("repeat") or 1)
    with open(os.path.join(here, "agent.log"), "a") as log:
        log.write("%s %d\n" % (req["test_id"], repeat))
    if repeat == 3 and os.path.exists(os.path.join(here, "hang")):
        time.sleep(3600)
    print(json.dumps({"content": "yes"}), flush=True)
"#;

/// `runs: 3` and Ctrl-C (a real SIGINT) while repeat 3 runs: the case is reported from
/// the two repeats that passed — not decided, with both repeats in its record — its
/// run is queued again in the store, and `--resume` runs it to a verdict.
fn ctrl_c_keeps_the_finished_repeats_and_says_the_gate_was_not_decided() {
    let s = Scratch::named("repeats", "interrupt");
    s.write("agent.py", HANGS_ON_THREE);
    s.write("hang", "");
    s.write(
        "agentest.toml",
        "[agent]\ntype = \"process\"\ncommand = [\"python3\", \"agent.py\"]\n",
    );
    s.write_suite(
        crate::common::project::SUITE,
        &[r#"{"id": "thrice", "input": "q", "runs": 3, "assert": {"type": "contains", "value": "yes"}}"#],
    );
    let store = s.join("runs.db");
    let start = |resume: bool| {
        let mut cmd = Command::new(BIN);
        cmd.current_dir(s.path())
            .args(["test", "-i", "suites", "--parallel", "1", "-o", "r.jsonl"])
            .env_remove("CARGO_TARGET_DIR")
            .env("AGENTEST_STORE", &store)
            .env("NO_COLOR", "1")
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        if resume {
            cmd.arg("--resume");
        }
        cmd.spawn().expect("start agentest")
    };
    let run = start(false);
    let until = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while !std::fs::read_to_string(s.join("agent.log"))
        .unwrap_or_default()
        .contains("thrice 3")
    {
        assert!(std::time::Instant::now() < until, "repeat 3 never started");
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    // SAFETY: a signal to the child this test started.
    assert_eq!(unsafe { libc::kill(run.id() as i32, libc::SIGINT) }, 0);
    let out = crate::common::Run::of(run.wait_with_output().unwrap());
    assert_eq!(out.code, 130, "{out:?}");
    let report = crate::common::Report::read(&s.join("r.jsonl"));
    let case = report.case("s::thrice");
    assert_eq!(case["status"], "skipped", "{case}");
    assert_eq!(
        case["error"],
        "not decided: the run was interrupted (Ctrl-C) before the gate could decide (2 of 3 repeats counted: 2 passed, 0 failed, 0 errors)"
    );
    assert_eq!(case["repeats"].as_array().map(Vec::len), Some(2), "{case}");
    assert_eq!(case["stability"]["runs"], 2, "{case}");
    assert_eq!(case["stability"]["passed"], 2, "{case}");
    let conn = rusqlite::Connection::open(&store).unwrap();
    let status: String = conn
        .query_row(
            "SELECT status FROM runs WHERE trial = 's::thrice'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(status, "queued", "--resume runs it again");
    std::fs::remove_file(s.join("hang")).unwrap();
    let resumed = crate::common::Run::of(start(true).wait_with_output().unwrap());
    assert_eq!(resumed.code, 0, "{resumed:?}");
    let report = crate::common::Report::read(&s.join("r.jsonl"));
    assert_eq!(report.status("s::thrice"), "passed");
    assert_eq!(report.case("s::thrice")["stability"]["runs"], 3);
}

/// Gate and budget mistakes name the field and the fix, in a case and in the config.
fn bad_repeat_settings_are_located_errors() {
    let cases = [
        (
            json!({"id": "a", "input": "q", "runs": 0}),
            "runs",
            "expected a whole number of runs from 1 to 10000, found 0",
        ),
        (
            json!({"id": "b", "input": "q", "runs": 3, "min_pass": 4}),
            "min_pass",
            "min_pass 4 is more than the 3 runs",
        ),
        (
            json!({"id": "c", "input": "q", "min_pass": 2, "pass_rate": 0.5}),
            "pass_rate",
            "not both",
        ),
        (
            json!({"id": "d", "input": "q", "confidence": 0.95}),
            "confidence",
            "needs a `pass_rate`",
        ),
        (
            json!({"id": "e", "input": "q", "pass_rate": 1.5}),
            "pass_rate",
            "at most 1",
        ),
        (
            json!({"id": "f", "input": "q", "max_cost": -1}),
            "max_cost",
            "expected an amount above 0",
        ),
    ];
    let s = project(
        "bad",
        "",
        &cases.iter().map(|(c, _, _)| c.clone()).collect::<Vec<_>>(),
    );
    let r: ReportedRun = agentest(s.path(), KEY).run();
    r.expect(1);
    for (c, field, message) in &cases {
        let id = c["id"].as_str().expect("id");
        let e = r.error(id);
        assert!(
            e.contains(&format!("`{field}`")) || e.contains(field),
            "{id}: {e}"
        );
        assert!(e.contains(message), "{id}: {e}");
    }
    // --runs lower than a case's min_pass (from the config) is that case's error.
    let s = project(
        "bad-config",
        "[run]\nmin_pass = 3\n",
        &[patterned("x", "P", json!({}))],
    );
    let r = agentest(s.path(), KEY).arg("--runs").arg("2").run();
    r.expect(1).expect_status("x", "error");
    assert!(
        r.error("x")
            .contains("[run] min_pass 3 is more than the 2 runs"),
        "{r:?}"
    );
    // A bad [run] value is a config error.
    let s = project(
        "bad-run",
        "[run]\npass_rate = 0\n",
        &[patterned("x", "P", json!({}))],
    );
    let r = agentest(s.path(), KEY).run();
    r.expect(2);
    assert!(
        r.stderr
            .contains("[run].pass_rate: expected a share of passing repeats above 0 and at most 1"),
        "{r:?}"
    );
    // A pricing table in two currencies.
    let s = project(
        "bad-currency",
        "[llm]\nmodel = \"m\"\n[llm.pricing]\ninput_per_million = 1\noutput_per_million = 2\n[llms.b]\nmodel = \"n\"\n[llms.b.pricing]\ninput_per_million = 1\noutput_per_million = 2\ncurrency = \"EUR\"\n",
        &[patterned("x", "P", json!({}))],
    );
    let r = agentest(s.path(), KEY).run();
    r.expect(2);
    assert!(
        r.stderr
            .contains("currency \"EUR\" differs from [llm]'s \"USD\""),
        "{r:?}"
    );
}

// ---------------------------------------------------------------------------------------
// Repeats spread over workers
// ---------------------------------------------------------------------------------------

/// The gates' suite, each repeat taking 40 ms, so that three workers share the cases'
/// repeats.
fn slow_gates() -> Vec<Value> {
    suite_of_gates()
        .into_iter()
        .map(|mut c| {
            c["options"]["sleep_ms"] = json!(40);
            c
        })
        .collect()
}

/// `agentest test --enqueue` queues the repeated cases repeat by repeat into the store
/// at `store`; three `agentest worker`s share them, and one is killed with SIGKILL
/// mid-run. The execution's report (from the store) gives every case the verdict, the
/// counted repeats and their statuses and the interval of a run in one process, one
/// repeat at a time; a case's repeats were run by more than one worker; a decided
/// case's queued repeats never ran. `owners` reads the owners of the `wilson` case's
/// counted-or-ended repeats from the store.
fn spread_over_workers(s: &Scratch, store: &str, owners: impl Fn() -> Vec<(i64, String)>) {
    let one = agentest(s.path(), KEY)
        .arg("--parallel")
        .arg("1")
        .env("AGENTEST_STORE", "off")
        .run();
    // One worker is lost mid-run (kill -9): the repeats it was running go back to the
    // queue, and the others run them.
    let spread = enqueue_and_work(
        s,
        store,
        Workers {
            key: "spread-1",
            count: 3,
            parallel: 2,
            kill_one: true,
        },
    );
    for case in suite_of_gates() {
        let id = case["id"].as_str().expect("id");
        let a = one.case(id);
        let b = spread
            .cases
            .iter()
            .find(|c| c["trial"] == format!("s::{id}"))
            .unwrap_or_else(|| panic!("{id} is not in the execution's report\n{}", spread.text))
            .clone();
        assert_eq!(a["status"], b["status"], "{id}: {b}");
        assert_eq!(repeats(&a), repeats(&b), "{id}: {b}");
        let (sa, sb) = (&a["stability"], &b["stability"]);
        for field in [
            "runs", "saved", "passed", "failed", "errors", "wilson", "class",
        ] {
            assert_eq!(sa[field], sb[field], "{id}: stability.{field}\n{b}");
        }
    }
    // The 30-repeat case was run by several workers, and it was decided early (a pass
    // rate of 0.8 is settled by fewer than 30 passes): the rest never ran.
    let owners = owners();
    let workers: std::collections::BTreeSet<i64> = owners.iter().map(|(pid, _)| *pid).collect();
    assert!(workers.len() >= 2, "one worker ran them all: {owners:?}");
    let wilson = one.case("wilson");
    let saved = wilson["stability"]["saved"].as_u64().unwrap_or_default();
    assert!(saved > 0, "{wilson}");
    assert!(
        owners.len() < 30,
        "the decided case's queued repeats were cancelled, not run: {} ran",
        owners.len()
    );
}

/// The `wilson` case's repeats that ran, as an SQLite store at `db` holds them.
fn sqlite_owners(db: &std::path::Path) -> Vec<(i64, String)> {
    let conn = rusqlite::Connection::open(db).unwrap();
    let mut stmt = conn
        .prepare(
            "SELECT r.owner_pid, r.status FROM repeats r JOIN runs u ON u.id = r.run_id
             WHERE u.trial = 's::wilson' AND r.status = 'ended'",
        )
        .unwrap();
    stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
}

fn repeats_spread_over_workers_decide_as_one_process_does() {
    let s = project("spread", "", &slow_gates());
    let db = s.join("runs.db");
    spread_over_workers(&s, db.to_str().unwrap(), || sqlite_owners(&db));
}

fn repeats_spread_over_workers_on_postgres() -> crate::common::Needs {
    let pg = crate::common::fresh_postgres()?;
    let s = project("spread-pg", "", &slow_gates());
    let url = pg.url().to_string();
    spread_over_workers(&s, &url, || {
        let mut client = postgres::Client::connect(&url, postgres::NoTls).unwrap();
        client
            .query(
                "SELECT r.owner_pid, r.status FROM repeats r JOIN runs u ON u.id = r.run_id
                 WHERE u.trial = 's::wilson' AND r.status = 'ended'",
                &[],
            )
            .unwrap()
            .iter()
            .map(|r| (r.get(0), r.get(1)))
            .collect()
    });
    Ok(())
}

/// The workers an execution gets in [`enqueue_and_work`].
struct Workers<'a> {
    key: &'a str,
    count: usize,
    parallel: u32,
    /// Kill the first with SIGKILL 600 ms after they started.
    kill_one: bool,
}

/// `agentest test --enqueue` into the store at `store` (the 9 cases of the gates' suite,
/// or whatever the suite holds), then `workers`; each worker that was not killed ends
/// (exit 0) saying the execution ended. The execution's report, from the store.
fn enqueue_and_work(s: &Scratch, store: &str, workers: Workers<'_>) -> Report {
    let key = workers.key;
    let env = [("AGENTEST_STORE", store), ("AGENTEST_EXECUTION", key), KEY];
    let enqueue = finish(
        Command::new(BIN)
            .current_dir(s.path())
            .args(["test", "-i", "suites", "--enqueue"])
            .envs(env),
    );
    assert_eq!(enqueue.code, 0, "{enqueue:?}");
    assert!(
        enqueue.stderr.contains("into execution ")
            && enqueue.stderr.contains(&format!("(key {key})")),
        "{enqueue:?}"
    );
    let parallel = workers.parallel.to_string();
    let mut children: Vec<std::process::Child> = (0..workers.count)
        .map(|_| {
            Command::new(BIN)
                .current_dir(s.path())
                .args(["worker", "--execution", key, "--parallel", &parallel])
                .args(["--poll", "100ms"])
                .envs(env)
                .env("NO_COLOR", "1")
                .stdin(std::process::Stdio::null())
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .expect("start a worker")
        })
        .collect();
    if workers.kill_one {
        std::thread::sleep(std::time::Duration::from_millis(600));
        let mut lost = children.remove(0);
        lost.kill().expect("SIGKILL");
        let _ = lost.wait();
    }
    for c in children {
        let out = c.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{stderr}");
        assert!(
            stderr.contains(&format!("execution {key} ended")),
            "{stderr}"
        );
    }
    let report = s.join(&format!("{key}.jsonl"));
    let r = finish(
        Command::new(BIN)
            .current_dir(s.path())
            .args(["report", "--execution", key, "-o"])
            .arg(&report)
            .envs(env),
    );
    assert_eq!(r.code, 0, "{r:?}");
    Report::read(&report)
}

/// A case's own budget (`max_tokens` 100, 60 tokens a repeat as the agent reports)
/// holds for its repeats wherever they ran: with one worker, as in one process, the
/// third repeat never starts and the case is an error saying the budget is spent
/// (120 tokens); with two workers, each running one repeat at a time, their repeats'
/// tokens count together: at most one repeat more started before the second ended,
/// and the fourth never ran.
fn a_cases_budget_holds_for_its_repeats_across_workers() {
    let budget_workers = |key, count| Workers {
        key,
        count,
        parallel: 1,
        kill_one: false,
    };
    let chatty = patterned(
        "chatty",
        "P",
        json!({"runs": 4, "max_tokens": 100, "options": {"pattern": "P", "sleep_ms": 150, "usage": {"input_tokens": 40, "output_tokens": 20}}}),
    );
    let s = project("spread-budget", "", std::slice::from_ref(&chatty));
    let db = s.join("runs.db");
    // The case's record in `report`: an error saying the budget is spent (`spent`
    // says how much), and how many repeats were counted.
    let capped = |report: &Report, spent: &str| -> u64 {
        let case = report
            .cases
            .iter()
            .find(|c| c["trial"] == "s::chatty")
            .expect("chatty");
        assert_eq!(case["status"], "error", "{}", report.text);
        let said = format!("the case's budget max_tokens 100 is spent ({spent}");
        assert!(
            case["error"].as_str().unwrap_or_default().contains(&said),
            "{}",
            report.text
        );
        case["stability"]["runs"].as_u64().unwrap_or_default()
    };
    let one = enqueue_and_work(&s, db.to_str().unwrap(), budget_workers("budget-1", 1));
    assert_eq!(capped(&one, "120 tokens so far)"), 2, "{}", one.text);
    let two = enqueue_and_work(&s, db.to_str().unwrap(), budget_workers("budget-2", 2));
    assert!((2..=3).contains(&capped(&two, "")), "{}", two.text);
}
