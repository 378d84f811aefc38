//! The real-model lane: agentest against a real OpenAI-compatible model server, whose
//! answers are imperfect (`../shared/realllm/serve.sh PORT` serves SmolLM2-135M with
//! llama-cpp-python on 127.0.0.1; `.ci/run` starts it and sets `AGENTEST_REALLLM_URL`).
//! A model this small does not judge or play a user well: these tests check agentest,
//! not the model. Whatever it says, no run panics or hangs, every outcome is a named
//! status with a reason, garbage never reaches the agent, the token totals are the sums
//! of the `usage` the server returned, and a second run, offline from the cassettes,
//! gives the same verdicts.

use std::collections::BTreeMap;

use serde_json::{json, Value};

use crate::common::project::{self, ReportedRun};
use crate::common::{need, toml_str, Needs, Scratch, EXPENSE_AGENT};

/// The variable that holds the real server's base URL (`http://127.0.0.1:8089/v1`).
const URL_VAR: &str = "AGENTEST_REALLLM_URL";

/// The real model server this lane needs.
pub fn real_model() -> Needs {
    match std::env::var(URL_VAR) {
        Ok(url) if !url.trim().is_empty() => Ok(()),
        _ => need(
            "a real model server",
            format!("start one with `../shared/realllm/serve.sh 8089` and set {URL_VAR}=http://127.0.0.1:8089/v1"),
        ),
    }
}

/// The real model server's turn: llama-cpp-python's server interrupts the request in
/// flight when another arrives (its `interrupt_requests`, on by default), which would cut
/// one test's streamed answer short for another's; the tests that use it take turns.
/// (Under nextest, `.config/nextest.toml` puts them in one test group.)
pub fn exclusive() -> std::sync::MutexGuard<'static, ()> {
    static TURN: std::sync::Mutex<()> = std::sync::Mutex::new(());
    TURN.lock().unwrap_or_else(|e| e.into_inner())
}

/// The project: the example expense agent behind `tee` (every request it receives is in
/// `agent.log`), the real model as `[llm]`, and `openai` agents that answer with it: one
/// under test with a tool, one that judges, one that plays the user.
fn project(url: &str) -> Scratch {
    let s = Scratch::named("realllm", "lane");
    let agent = format!(
        "[agent]\ntype = \"process\"\ncommand = [\"sh\", \"-c\", {}, {}]\n",
        toml_str("tee -a agent.log | exec python3 \"$0\""),
        toml_str(EXPENSE_AGENT)
    );
    let tools = json!([{"type": "function", "function": {"name": "get_policy",
        "description": "The expense policy: limits per category.",
        "parameters": {"type": "object", "properties": {"category": {"type": "string"}}}}}]);
    s.write(
        "suites/agentest.toml",
        &format!(
            "{agent}\n[llm]\nbase_url = {}\nmodel = \"smollm2\"\nmax_tokens = 64\ntimeout = \"60s\"\nmax_retries = 1\nmax_in_flight = 1\n\n\
             [llms.structured]\nbase_url = {}\nmodel = \"smollm2\"\ntimeout = \"60s\"\nmax_retries = 1\nmax_in_flight = 1\nstructured_output = \"json_object_schema\"\n\n\
             [run]\ntimeout = \"150s\"\nconcurrency = 1\n\n\
             [agents.llm-agent]\ntype = \"openai\"\nsystem = \"You are an expense assistant. Use the tools.\"\ntools_file = \"tools.json\"\nmax_tool_rounds = 2\n\
             mocks = [{{ method = \"get_policy\", response = {{ meal_limit = 75 }} }}]\n\n\
             [agents.llm-judge]\ntype = \"openai\"\nsystem = \"You review replies.\"\n\n\
             [agents.llm-user]\ntype = \"openai\"\nsystem = \"You play a user.\"\n",
            toml_str(url),
            toml_str(url),
        ),
    );
    s.write("suites/tools.json", &tools.to_string());
    let checkpoints =
        json!([{"id": "create", "assert": {"type": "tool_called", "name": "create_expense"}}]);
    let cases = [
        json!({"id": "sim", "mode": "dynamic", "input": "Hi, I need to file an expense",
               "simulator": {"persona": "A new employee", "goal": "Submit a $500 travel expense"},
               "checkpoints": checkpoints, "max_turns": 3}),
        json!({"id": "openai-sim", "mode": "dynamic", "input": "Hi, I need to file an expense",
               "simulator": {"use": "llm-user", "persona": "A new employee", "goal": "Submit a $500 travel expense"},
               "checkpoints": checkpoints, "max_turns": 2}),
        json!({"id": "judge", "input": "Hello",
               "assert": {"type": "llm_judge", "prompt": "The reply greets the user"}}),
        json!({"id": "agent-judge", "input": "Hello",
               "assert": {"type": "agent", "use": "agents:llm-judge",
                          "options": {"metadata": {"criteria": "The reply greets the user"}}}}),
        json!({"id": "structured-judge", "input": "Hello",
               "assert": {"type": "llm_judge", "prompt": "The reply greets the user", "llm": "structured",
                          "max_tokens": 160, "json_schema": {"type": "object",
                              "properties": {"judgment": {"type": "string", "enum": ["yes", "no"]}},
                              "required": ["judgment"]}}}),
        json!({"id": "tools", "agent": "llm-agent", "input": "What is the meal limit? Call get_policy.",
               "assert": {"type": "tool_called", "name": "get_policy"}}),
        json!({"id": "criteria", "input": "Hi, I need to file an expense",
               "instructions": "Submit a $500 travel expense",
               "success_criteria": "The assistant drafts a $500 travel expense",
               "failure_criteria": "The assistant refuses to help", "max_messages": 4}),
    ];
    let lines: Vec<String> = cases.iter().map(Value::to_string).collect();
    s.write(project::SUITE, &(lines.join("\n") + "\n"));
    s
}

/// Token usage by case and role, as `(prompt, completion)`.
type Tokens = BTreeMap<(String, String), (u64, u64)>;

/// The usage each case's record reports.
fn reported_tokens(run: &ReportedRun, ids: &[&str]) -> Tokens {
    let mut t = Tokens::new();
    for id in ids {
        if let Some(Value::Object(roles)) = run.case(id).get("usage") {
            for (role, u) in roles {
                let n = |k: &str| u[k].as_u64().unwrap_or(0);
                t.insert(
                    (id.to_string(), role.clone()),
                    (n("prompt_tokens"), n("completion_tokens")),
                );
            }
        }
    }
    t
}

/// The sums of the `usage` the server returned, from the cassettes the run recorded.
fn recorded_tokens(s: &Scratch, ids: &[&str]) -> Tokens {
    let mut t = Tokens::new();
    for id in ids {
        let text = std::fs::read_to_string(s.join(&project::cassette(id))).unwrap_or_default();
        for line in text.lines().filter(|l| !l.trim().is_empty()) {
            let entry: Value = serde_json::from_str(line).expect("a cassette line is JSON");
            let usage = &entry["response"]["usage"];
            let e = t
                .entry((
                    id.to_string(),
                    entry["role"].as_str().unwrap_or("?").to_string(),
                ))
                .or_default();
            e.0 += usage["prompt_tokens"].as_u64().unwrap_or(0);
            e.1 += usage["completion_tokens"].as_u64().unwrap_or(0);
        }
    }
    t
}

/// What a run decided, case by case: status, error, the inputs of every turn and every
/// assertion's verdict.
fn verdicts(run: &ReportedRun, trials: &[String]) -> Vec<Value> {
    trials
        .iter()
        .map(|id| {
            let c = run.record(id);
            let turns: Vec<Value> = c["turns"]
                .as_array()
                .map(|ts| {
                    ts.iter()
                        .map(|t| json!([t["input"], t["assertions"], t["checkpoints"]]))
                        .collect()
                })
                .unwrap_or_default();
            json!({"id": id, "status": c["status"], "error": c["error"], "turns": turns})
        })
        .collect()
}

fn whatever_the_model_says_agentest_keeps_its_guarantees() -> Needs {
    real_model()?;
    let _turn = exclusive();
    let url = std::env::var(URL_VAR).unwrap_or_default();
    let ids = [
        "sim",
        "openai-sim",
        "judge",
        "agent-judge",
        "structured-judge",
        "tools",
        "criteria",
    ];
    let s = project(&url);
    let run = project::agentest(s.path(), ("AGENTEST_REALLLM_UNUSED_KEY", "unused"))
        .env("AGENTEST_CASSETTES", "record")
        .run();
    assert!(
        run.code == 0 || run.code == 1,
        "no usage error, no crash:\n{run:?}"
    );
    let trials: Vec<String> = ids.iter().map(|id| format!("s::{id}")).collect();
    named_outcomes(&run, &trials);
    agent_got_what_the_report_shows(&s, &run, |id| format!("s::{id}"));
    // The per-case endpoint took the schema-constrained form: the server accepted it (no
    // refusal), and what it sent was the verdict's schema with the assertion's merged in.
    let structured = run.case("structured-judge");
    let why = structured["error"].as_str().unwrap_or_default();
    assert!(
        !why.contains("answered HTTP") && !why.contains("same error twice"),
        "the server refused the response_format: {structured}"
    );
    let recorded = s.read(&project::cassette("structured-judge"));
    let first: Value = serde_json::from_str(recorded.lines().next().expect("a recorded call"))
        .expect("a cassette line is JSON");
    let rf = &first["request"]["response_format"];
    assert_eq!(rf["type"], "json_object", "{first}");
    assert_eq!(
        rf["schema"]["required"],
        json!(["passed", "reason", "judgment"]),
        "{rf}"
    );
    assert_eq!(first["request"]["max_tokens"], 160, "{first}");
    // `[llm]` sets no form: `auto` settled on the one llama-cpp-python takes (it refuses
    // `json_schema` with a 500 about the response_format), and said so once.
    let settled: Vec<&str> = run
        .stderr
        .lines()
        .filter(|l| l.contains("[llm] (model `smollm2`) takes structured output as"))
        .collect();
    assert_eq!(settled.len(), 1, "{}", run.stderr);
    assert!(
        settled[0].contains("as `json_object_schema`; `json_schema` refused"),
        "{}",
        settled[0]
    );

    // Every token the server reported is counted, where it was spent.
    let recorded = recorded_tokens(&s, &ids);
    assert!(
        recorded.len() >= 4,
        "the model was called by every role: {recorded:?}"
    );
    // Only the `openai` agent's tokens are model calls; the process agent reports its
    // own usage (the example agent does when the simulated user gets it to draft an
    // expense), which no cassette holds.
    let reported: Tokens = reported_tokens(&run, &ids)
        .into_iter()
        .filter(|((id, role), _)| role != "agent" || id == "tools")
        .collect();
    assert_eq!(reported, recorded, "{run:?}");

    let again = replayed_alike(&s, &run, &trials);
    // Nothing was spent offline: every model token is reported as replayed (what the
    // process agent says it used is its own).
    let spent = reported_tokens(&again, &ids);
    assert!(
        spent
            .keys()
            .all(|(id, role)| role == "agent" && id != "tools"),
        "{spent:?}"
    );
    Ok(())
}

/// The project run again offline, from the cassettes `run` recorded (the endpoint moved
/// to a closed port): the same exit code and the same verdicts for `trials`.
#[track_caller]
fn replayed_alike(s: &Scratch, run: &ReportedRun, trials: &[String]) -> ReportedRun {
    let again = project::agentest(s.path(), ("AGENTEST_REALLLM_UNUSED_KEY", "unused"))
        .env("AGENTEST_CASSETTES", "replay")
        .env("AGENTEST_LLM_BASE_URL", "http://127.0.0.1:9/v1")
        .run();
    assert_eq!(again.code, run.code, "{again:?}");
    assert_eq!(verdicts(&again, trials), verdicts(run, trials));
    again
}

/// Every case ended in a named status, with a reason when it did not pass; nothing
/// panicked.
#[track_caller]
fn named_outcomes(run: &ReportedRun, trials: &[String]) {
    assert!(!run.stderr.contains("panicked"), "{run:?}");
    for id in trials {
        let c = run.record(id);
        let status = c["status"].as_str().unwrap_or_default();
        assert!(
            ["passed", "failed", "error", "skipped", "timeout"].contains(&status),
            "{id}: {c}"
        );
        if status != "passed" {
            let why = c["error"].as_str().unwrap_or_default();
            assert!(
                !why.trim().is_empty(),
                "{id} is {status} without a reason: {c}"
            );
        }
    }
}

/// Garbage never reaches the agent: what it received (`suites/agent.log`) is what the
/// report shows as the user's turns (of the trial `trial` names for a case id), and
/// none of it is empty, cut-off JSON or the prompt's placeholder.
#[track_caller]
fn agent_got_what_the_report_shows(s: &Scratch, run: &ReportedRun, trial: fn(&str) -> String) {
    let received: Vec<Value> = s
        .read("suites/agent.log")
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).expect("a logged request is JSON"))
        .collect();
    assert!(
        !received.is_empty(),
        "the agent was asked nothing:\n{run:?}"
    );
    for q in &received {
        let (id, input) = (q["test_id"].as_str().unwrap(), q["input"].as_str().unwrap());
        let shown: Vec<String> = run.record(&trial(id))["turns"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["input"].as_str().unwrap_or_default().to_string())
            .collect();
        assert!(
            shown.iter().any(|s| s == input),
            "{id}: the agent got {input:?}, the report shows {shown:?}"
        );
        assert!(
            !input.trim().is_empty() && !input.trim_start().starts_with('{'),
            "{id}: {input:?}"
        );
        assert!(
            !input.eq_ignore_ascii_case("what you say next"),
            "{id}: {input:?}"
        );
    }
}

/// ElizaOS scenarios whose simulated user, termination judge and judged evaluators run
/// on the real model: whatever it answers, each conversation ends for a named reason
/// (recorded on its last turn) or the case is an error naming the role whose answer was
/// unusable, every judged evaluation keeps the judge's score and reason, and the offline
/// replay decides the same. `chat` asks the judge after every turn whether to stop;
/// `talk` leaves the conversation to the simulator, then judges it.
fn scenario_conversations_on_a_real_model_keep_the_guarantees() -> Needs {
    real_model()?;
    let _turn = exclusive();
    let url = std::env::var(URL_VAR).unwrap_or_default();
    let s = Scratch::named("realllm", "scenario");
    // `cwd` keeps the agent (and its log) beside the config rather than in the
    // scenario's environment folder.
    s.write(
        "suites/agentest.toml",
        &format!(
            "[agent]\ntype = \"process\"\ncommand = [\"sh\", \"-c\", {}, {}]\ncwd = \".\"\n\n\
             [llm]\nbase_url = {}\nmodel = \"smollm2\"\nmax_tokens = 64\ntimeout = \"60s\"\nmax_retries = 1\nmax_in_flight = 1\n\n\
             [run]\ntimeout = \"240s\"\n",
            toml_str("tee -a agent.log | exec python3 \"$0\""),
            toml_str(EXPENSE_AGENT),
            toml_str(&url),
        ),
    );
    let scenario = |name: &str, conditions: &str| {
        format!(
            r"name: {name}
description: 'A conversation with a simulated user and judges on a real model'
environment: {{type: local}}
run:
  - input: 'Hi, I need to file an expense'
    conversation:
      max_turns: 3
      user_simulator:
        persona: 'A new employee'
        objective: 'Submit a $500 travel expense'
        max_tokens: 64
      termination_conditions:
{conditions}
      turn_evaluations:
        - type: regex_match
          pattern: '\S'
      final_evaluations:
        - type: llm_judge
          prompt: 'Did the assistant help the user file the expense?'
          expected: 'yes'
        - type: user_satisfaction
          measurement_method: llm_judge
        - type: conversation_flow
          required_patterns: [question_then_answer]
        - type: context_retention
          test_memory_of: ['travel']
judgment: {{strategy: all_pass}}
"
        )
    };
    s.write(
        "suites/chat.scenario.yaml",
        &scenario(
            "chat",
            "        - type: custom_condition\n          llm_judge: {prompt: 'Has the expense been submitted?', threshold: 0.8}",
        ),
    );
    s.write(
        "suites/talk.scenario.yaml",
        &scenario(
            "talk",
            "        - type: goal_achieved\n        - type: max_turns_reached",
        ),
    );
    let trial = |id: &str| format!("{id}::{id}");
    let trials = vec![trial("chat"), trial("talk")];
    let run = project::agentest(s.path(), ("AGENTEST_REALLLM_UNUSED_KEY", "unused"))
        .env("AGENTEST_CASSETTES", "record")
        .run();
    assert!(run.code == 0 || run.code == 1, "{run:?}");
    named_outcomes(&run, &trials);
    agent_got_what_the_report_shows(&s, &run, trial);
    for t in &trials {
        let c = run.record(t);
        let turns = c["turns"].as_array().expect("turns");
        assert!(!turns.is_empty(), "{c}");
        assert_eq!(turns[0]["input_source"], "initial", "{c}");
        assert!(
            turns[1..].iter().all(|t| t["input_source"] == "simulated"),
            "{c}"
        );
        assert!(turns.iter().all(|t| t["step"]["index"] == 1), "{c}");
        let last = turns.last().unwrap();
        if c["status"] == "error" {
            // An answer that is no verdict or no user message: which role, in its words.
            let why = c["error"].as_str().unwrap();
            assert!(why.contains("simulator") || why.contains("judge"), "{c}");
            continue;
        }
        let e = &last["ending"];
        assert!(
            [
                "custom_condition",
                "goal_achieved",
                "max_turns_reached",
                "max_turns"
            ]
            .contains(&e["termination"].as_str().unwrap()),
            "{c}"
        );
        assert_eq!(e["turns"].as_u64().unwrap() as usize, turns.len(), "{c}");
        // Every judged evaluation has the judge's reason and, but for llm_judge (which
        // may answer without one), its score within 0..1.
        let judged: Vec<&Value> = last["assertions"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|a| a["type"] != "regex_match")
            .collect();
        assert_eq!(judged.len(), 4, "{last}");
        for a in judged {
            let score = a["judgment"]["score"].as_f64();
            assert!(
                a["type"] == "llm_judge" || score.is_some_and(|v| (0.0..=1.0).contains(&v)),
                "{a}"
            );
            assert!(a["judgment"]["reason"].is_string(), "{a}");
        }
    }
    replayed_alike(&s, &run, &trials);
    Ok(())
}

pub fn tests() -> Vec<libtest_mimic::Trial> {
    crate::trials![
        whatever_the_model_says_agentest_keeps_its_guarantees(needs real_model),
        scenario_conversations_on_a_real_model_keep_the_guarantees(needs real_model),
    ]
}
