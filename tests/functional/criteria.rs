//! EvalStudio's evaluation loop on agentest's own dynamic cases, through the real
//! binary against a real HTTP model server on loopback (answering as the scripts here
//! say): success and failure criteria judged after every reply, `every_turn` and
//! `on_max_messages`, seed messages, a judge whose answer is no evaluation, and the
//! fallback without a model.

use serde_json::{json, Value};

use crate::common::chat::ChatServer;
use crate::common::{toml_str, Report, Scratch, EXPENSE_AGENT};

/// Routes the criteria judge's and the simulator's requests by their instructions.
pub(crate) fn route(body: &Value) -> String {
    let system = body["messages"][0]["content"].as_str().unwrap_or_default();
    if system.contains("successMet") {
        "judge".into()
    } else if system.starts_with("You are simulating a user") {
        "user".into()
    } else {
        "other".into()
    }
}

fn evaluation(success: bool, failure: bool, confidence: f64, reasoning: &str) -> String {
    json!({"successMet": success, "failureMet": failure, "confidence": confidence, "reasoning": reasoning})
        .to_string()
}

fn says(message: &str) -> String {
    json!({"message": message, "goal_achieved": false, "reasoning": "pressing on"}).to_string()
}

/// A project with the example agent behind `tee` (its requests in `agent.log`), `[llm]`
/// at `server` (none without one) and `cases` as the suite `s`.
fn project(tag: &str, server: Option<&ChatServer>, cases: &[Value]) -> Scratch {
    let s = Scratch::named("criteria", tag);
    let llm = server
        .map(|srv| {
            format!(
                "\n[llm]\nbase_url = {}\nmodel = \"test-model\"\nmax_retries = 0\n\n[run]\ncassettes = \"off\"\n",
                toml_str(&srv.url())
            )
        })
        .unwrap_or_default();
    s.write(
        "suites/agentest.toml",
        &format!(
            "[agent]\ntype = \"process\"\ncommand = [\"sh\", \"-c\", {}, {}]\n{llm}",
            toml_str("tee -a agent.log | exec python3 \"$0\""),
            toml_str(EXPENSE_AGENT)
        ),
    );
    let lines: Vec<String> = cases.iter().map(Value::to_string).collect();
    s.write("suites/s.jsonl", &(lines.join("\n") + "\n"));
    s
}

fn run(s: &Scratch) -> (crate::common::Run, Report) {
    run_with(s, &[])
}

/// `agentest test -i suites -o r.jsonl <extra>` in `s`, the run store in it.
fn run_with(s: &Scratch, extra: &[&str]) -> (crate::common::Run, Report) {
    let mut cmd = std::process::Command::new(crate::common::BIN);
    cmd.current_dir(s.path())
        .args(["test", "-i", "suites", "-o", "r.jsonl", "--color", "never"])
        .args(extra)
        .env("AGENTEST_STORE", s.join("runs.db"))
        .stdin(std::process::Stdio::null());
    let r = crate::common::finish(&mut cmd);
    let report = Report::read(&s.join("r.jsonl"));
    (r, report)
}

fn case<'a>(report: &'a Report, id: &str) -> &'a Value {
    report
        .cases
        .iter()
        .find(|c| c["id"] == id)
        .unwrap_or_else(|| panic!("no {id} in\n{}", report.text))
}

/// Success met at the second reply: passed, with each turn's evaluation and the result;
/// the simulated user's message came between.
fn success_criteria_met_pass_the_case() {
    let server = ChatServer::routed(route);
    server.answer(
        "judge",
        &[
            evaluation(false, false, 0.4, "nothing filed yet"),
            evaluation(true, false, 0.9, "the expense is drafted"),
        ],
    );
    server.answer("user", &[says("Travel, $500")]);
    let s = project(
        "success",
        Some(&server),
        &[
            json!({"id": "files", "input": "I want to submit an expense",
                 "instructions": "Submit a $500 travel expense",
                 "success_criteria": "The assistant drafts the expense", "max_messages": 8}),
        ],
    );
    let (r, report) = run(&s);
    assert_eq!(r.code, 0, "{r:?}");
    let c = case(&report, "files");
    assert_eq!(c["status"], "passed", "{c}");
    assert_eq!(c["mode"], "dynamic");
    assert_eq!(c["termination"], "success_criteria_met");
    let turns = c["turns"].as_array().unwrap();
    assert_eq!(turns.len(), 2);
    assert_eq!(turns[0]["input_source"], "initial");
    assert_eq!(turns[1]["input"], "Travel, $500");
    assert_eq!(turns[1]["input_source"], "simulated");
    assert_eq!(
        turns[0]["criteria"],
        json!({"successMet": false, "failureMet": false, "confidence": 0.4, "reasoning": "nothing filed yet"})
    );
    assert_eq!(turns[1]["criteria"]["successMet"], true);
    assert_eq!(
        c["result"],
        json!({"success": true, "score": 0.9, "reason": "the expense is drafted"})
    );
    // The judge saw the criteria and the whole conversation; the simulator its goal.
    let asked = server.bodies("judge")[1].to_string();
    assert!(
        asked.contains("The assistant drafts the expense") && asked.contains("Travel, $500"),
        "{asked}"
    );
    let sim = server.bodies("user")[0].to_string();
    assert!(sim.contains("Submit a $500 travel expense"), "{sim}");
    // The run store keeps the result; EvalStudio's export has it with the evaluation.
    let mut cmd = std::process::Command::new(crate::common::BIN);
    cmd.current_dir(s.path())
        .args(["runs", "export", "--format", "evalstudio"])
        .env("AGENTEST_STORE", s.join("runs.db"))
        .stdin(std::process::Stdio::null());
    let exported = crate::common::finish(&mut cmd);
    let runs: Value = serde_json::from_str(&exported.stdout).expect("runs.json");
    assert_eq!(
        runs[0]["result"],
        json!({"success": true, "score": 0.9, "reason": "the expense is drafted"})
    );
    assert_eq!(runs[0]["output"]["evaluation"]["successMet"], true);
}

/// `every_turn`: failure met at the first reply fails the case at once; under
/// `on_max_messages` the conversation goes on and the last evaluation decides, failed
/// when `max_messages` is reached without success.
fn failure_criteria_and_max_messages_fail_the_case() {
    let server = ChatServer::routed(route);
    server.answer(
        "judge",
        &[
            evaluation(false, true, 0.8, "the agent was rude"),
            evaluation(false, true, 0.7, "still rude"),
            evaluation(false, false, 0.6, "no progress"),
        ],
    );
    server.answer("user", &[says("Please help")]);
    let s = project(
        "failure",
        Some(&server),
        &[
            json!({"id": "a-strict", "input": "hello", "success_criteria": "helps",
                   "failure_criteria": "rude", "failure_criteria_mode": "every_turn"}),
            json!({"id": "b-patient", "input": "hello", "success_criteria": "helps",
                   "max_messages": 4}),
        ],
    );
    // One case at a time, so that the judge's answers go in order.
    let (r, report) = run_with(&s, &["--parallel", "1"]);
    assert_eq!(r.code, 1, "{r:?}");
    let strict = case(&report, "a-strict");
    assert_eq!(strict["termination"], "failure_criteria_met");
    assert_eq!(strict["turns"].as_array().unwrap().len(), 1);
    assert_eq!(
        strict["error"],
        "Failure criteria was triggered. the agent was rude"
    );
    assert_eq!(strict["result"]["success"], false);
    assert_eq!(strict["result"]["score"], 0.8);
    let patient = case(&report, "b-patient");
    assert_eq!(patient["termination"], "max_messages");
    assert_eq!(patient["turns"].as_array().unwrap().len(), 2, "4 messages");
    assert_eq!(
        patient["error"],
        "Max messages (4) reached without meeting success criteria. no progress"
    );
    assert_eq!(patient["result"]["score"], 0.6);
}

/// Seed messages are the conversation so far: sent with the first request, a seed that
/// ends with the user's message sent as it is, and counted in `max_messages`.
fn seed_messages_start_the_conversation() {
    let server = ChatServer::routed(route);
    server.answer("judge", &[evaluation(false, false, 0.5, "not yet")]);
    let s = project(
        "seed",
        Some(&server),
        &[
            json!({"id": "seeded", "success_criteria": "the policy is stated", "max_messages": 4,
                 "messages": [{"role": "user", "content": "Hi"},
                              {"role": "assistant", "content": "Hello, how can I help?"},
                              {"role": "user", "content": "What is the meal policy?"}]}),
        ],
    );
    let (r, report) = run(&s);
    assert_eq!(r.code, 1, "{r:?}");
    let c = case(&report, "seeded");
    let turns = c["turns"].as_array().unwrap();
    assert_eq!(turns.len(), 1, "2 seeded + 2 played = 4: {c}");
    assert_eq!(turns[0]["input"], "What is the meal policy?");
    assert_eq!(turns[0]["input_source"], "seed");
    let sent: Value =
        serde_json::from_str(s.read("suites/agent.log").lines().next().unwrap()).unwrap();
    let roles: Vec<&str> = sent["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["user", "assistant", "user"]);
    assert_eq!(
        server.bodies("user").len(),
        0,
        "no simulated message was needed"
    );
}

/// A judge whose answer is no evaluation is asked once more, then the case is an error
/// that quotes it: never a verdict.
fn an_answer_that_is_no_evaluation_is_an_error() {
    let server = ChatServer::routed(route);
    server.answer(
        "judge",
        &["Looks fine to me!".to_string(), "I think so".to_string()],
    );
    let s = project(
        "garbage",
        Some(&server),
        &[json!({"id": "judged", "input": "hello", "success_criteria": "greets"})],
    );
    let (r, report) = run(&s);
    assert_eq!(r.code, 1, "{r:?}");
    let c = case(&report, "judged");
    assert_eq!(c["status"], "error", "{c}");
    let why = c["error"].as_str().unwrap();
    assert!(
        why.contains("the answer is not JSON") && why.contains("I think so"),
        "{why}"
    );
    assert!(c.get("result").is_none(), "no verdict: {c}");
}

/// Without a model for the judge: one exchange, passed when the agent answered.
fn without_a_model_one_exchange_decides() {
    let s = project(
        "fallback",
        None,
        &[json!({"id": "once", "input": "hello", "success_criteria": "greets", "max_messages": 6})],
    );
    let (r, report) = run(&s);
    assert_eq!(r.code, 0, "{r:?}");
    let c = case(&report, "once");
    assert_eq!(c["termination"], "single_turn_fallback");
    assert_eq!(c["turns"].as_array().unwrap().len(), 1);
    assert_eq!(c["result"]["success"], true);
}

/// `personas` make a trial per persona (`suite::case::persona`), each simulated user
/// impersonating its persona (written on the case, or a `[personas.NAME]` of the
/// config); a persona the config lacks is that trial's error, named.
fn personas_make_a_trial_each() {
    let server = ChatServer::routed(route);
    server.answer(
        "judge",
        &[
            evaluation(false, false, 0.3, "not yet"),
            evaluation(true, false, 0.9, "done"),
            evaluation(false, false, 0.3, "not yet"),
            evaluation(true, false, 0.9, "done"),
        ],
    );
    server.answer("user", &[says("Hurry up"), says("Take your time")]);
    let s = project(
        "personas",
        Some(&server),
        &[
            json!({"id": "files", "input": "I want to submit an expense",
                 "success_criteria": "The assistant helps",
                 "personas": ["impatient", {"name": "Calm Customer", "system_prompt": "You are a calm customer."}, "ghost"]}),
        ],
    );
    let config = s.read("suites/agentest.toml");
    s.write(
        "suites/agentest.toml",
        &format!("{config}\n[personas.impatient]\ndescription = \"wants it now\"\nsystem_prompt = \"You are an impatient user.\"\n"),
    );
    let (r, report) = run_with(&s, &["--parallel", "1"]);
    assert_eq!(r.code, 1, "the ghost is an error: {r:?}");
    let by: std::collections::BTreeMap<&str, &Value> = report
        .cases
        .iter()
        .map(|c| (c["trial"].as_str().unwrap(), c))
        .collect();
    assert_eq!(
        by.keys().copied().collect::<Vec<_>>(),
        [
            "s::files::calm-customer",
            "s::files::ghost",
            "s::files::impatient"
        ]
    );
    assert_eq!(by["s::files::calm-customer"]["status"], "passed");
    assert_eq!(by["s::files::calm-customer"]["persona"], "Calm Customer");
    assert_eq!(by["s::files::impatient"]["status"], "passed");
    assert_eq!(by["s::files::impatient"]["persona"], "impatient");
    let ghost = by["s::files::ghost"];
    assert_eq!(ghost["status"], "error");
    assert!(
        ghost["error"]
            .as_str()
            .unwrap()
            .contains("the persona \"ghost\" is not defined; add [personas.\"ghost\"]"),
        "{ghost}"
    );
    // Each simulated user was told its persona (trials run in name order here).
    let asked: Vec<String> = server.bodies("user").iter().map(Value::to_string).collect();
    assert_eq!(asked.len(), 2);
    assert!(
        asked[0].contains("You are a calm customer."),
        "{}",
        asked[0]
    );
    assert!(
        asked[1].contains("You are an impatient user."),
        "{}",
        asked[1]
    );
}

pub fn tests() -> Vec<libtest_mimic::Trial> {
    crate::trials![
        success_criteria_met_pass_the_case,
        failure_criteria_and_max_messages_fail_the_case,
        seed_messages_start_the_conversation,
        an_answer_that_is_no_evaluation_is_an_error,
        without_a_model_one_exchange_decides,
        personas_make_a_trial_each,
        run_judge_names_the_judge_of_criteria,
    ]
}

/// `[run] judge` naming a built-in `[judges.NAME]`: the criteria are evaluated with its
/// model settings; naming a jury is refused with the fix.
fn run_judge_names_the_judge_of_criteria() {
    let server = ChatServer::routed(route);
    server.answer("judge", &[evaluation(true, false, 0.9, "drafted")]);
    let line = json!({"id": "files", "input": "I want to submit an expense",
                      "success_criteria": "The assistant drafts the expense", "max_messages": 4});
    let s = project("run-judge", Some(&server), std::slice::from_ref(&line));
    let written = s.read("suites/agentest.toml");
    assert!(
        written.ends_with("[run]\ncassettes = \"off\"\n"),
        "{written}"
    );
    s.write(
        "suites/agentest.toml",
        &format!(
            "{written}judge = \"judges:strict\"\n\n[judges.strict]\nmodel = \"strict-model\"\ntemperature = 0.0\n\n[judges.panel]\njury = [\"judges:strict\", \"llm\"]\n"
        ),
    );
    let (r, report) = run(&s);
    assert_eq!(r.code, 0, "{r:?}");
    assert_eq!(case(&report, "files")["status"], "passed");
    let asked = &server.bodies("judge")[0];
    assert_eq!(asked["model"], "strict-model", "{asked}");
    assert_eq!(asked["temperature"], 0.0, "{asked}");
    // Under require_calibrated_judges, an uncalibrated judge's criteria do not count.
    server.answer("judge", &[evaluation(true, false, 0.9, "drafted")]);
    s.write(
        "suites/agentest.toml",
        &s.read("suites/agentest.toml")
            .replace("[run]\n", "[run]\nrequire_calibrated_judges = true\n"),
    );
    let (r, report) = run(&s);
    assert_eq!(r.code, 1, "{r:?}");
    let c = case(&report, "files");
    assert_eq!(c["status"], "inconclusive", "{c}");
    assert!(
        c["error"]
            .as_str()
            .unwrap()
            .starts_with("the criteria's verdict (passed) does not count: [judges.\"strict\"] sets no `min_kappa`"),
        "{c}"
    );
    s.write(
        "suites/agentest.toml",
        &s.read("suites/agentest.toml")
            .replace("require_calibrated_judges = true\n", ""),
    );
    s.write(
        "suites/agentest.toml",
        &s.read("suites/agentest.toml")
            .replace("judge = \"judges:strict\"", "judge = \"judges:panel\""),
    );
    let (r, report) = run(&s);
    assert_eq!(r.code, 1, "{r:?}");
    let c = case(&report, "files");
    assert_eq!(c["status"], "error");
    let e = c["error"].as_str().unwrap();
    assert!(
        e.contains("criteria are evaluated by the built-in judge, and [run] judge in ")
            && e.contains("names `judges:panel`"),
        "{c}"
    );
}
