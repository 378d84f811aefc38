//! End-to-end tests of dynamic mode, judges and interactive input.
//!
//! Every test runs the real `agentest` binary in a scratch directory against real
//! process agents: `bot.py` (written into each scratch directory, answering from a
//! per-role rules file and logging every request it receives) or the example expense
//! agent. Model-backed features (the built-in simulator and judge) run against a small
//! real chat-completions server on 127.0.0.1 ([`ChatServer`], shared with the `llm` tests) that answers from per-test
//! queues and records every request body.
//!
//! Covered: every row of the termination table, checkpoint ordering (`after`, same-turn
//! chains), optional and forbidden checkpoints, the scripted, named and built-in
//! simulators (with what each receives), awaiting-input detection, judges (built-in,
//! agent judges, repair, broken, unavailable, as checkpoints, the Rust API with its
//! cassette) and interactive input (piped with `--interactive`, the skip/fail rules, and a
//! real pseudo-terminal).

use std::path::Path;
use std::time::Duration;

use crate::common::chat::{self, ChatServer};
use crate::common::project::{self, cassette, Cmd, ReportedRun as Run};
use crate::common::{expense_agent_section, Needs, Scratch};
use serde_json::{json, Value};

/// The variable `[llm] api_key_env` names in the configs here.
const KEY_VAR: &str = "AGENTEST_DYNAMIC_TEST_KEY";
const KEY: &str = "sk-dynamic-test-0d9a41";
/// How the built-in simulator's and judge's system prompts begin (the server's routes).
const SIM_PROMPT: &str = "You are simulating a user";
const JUDGE_PROMPT: &str = "You are a strict, fair evaluator";

// ---------------------------------------------------------------------------------------
// The chat-completions test server's routes
// ---------------------------------------------------------------------------------------

/// The route of a request to [`ChatServer`]: the built-in simulator's and judge's requests
/// start with their own system prompts (`sim`, `judge`); anything else is `other`.
fn route_of(body: &Value) -> String {
    let system = body["messages"][0]["content"].as_str().unwrap_or_default();
    if system.starts_with(SIM_PROMPT) {
        "sim"
    } else if system.starts_with(JUDGE_PROMPT) {
        "judge"
    } else {
        "other"
    }
    .to_string()
}

/// The system prompt of a recorded chat request.
fn system_of(body: &Value) -> String {
    body["messages"][0]["content"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

/// The first user message of a recorded chat request.
fn user_of(body: &Value) -> String {
    body["messages"][1]["content"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

// ---------------------------------------------------------------------------------------
// Scratch projects, process agents and runs of the binary
// ---------------------------------------------------------------------------------------

/// A process agent driven by a rules file: `python3 bot.py LOG RULES`. Each request is
/// appended to LOG as a JSON line; the first rule that fits answers. A rule fits when its
/// `turn` (if any) equals the request's turn, its `when` regex (if any) is found in the
/// request's `input`, and it is not a used `once` rule. It then sleeps `sleep` seconds,
/// exits with code `crash`, prints `raw` verbatim, or prints `reply` as JSON with
/// `{input}` and `{turn}` filled in. No fitting rule: exit 9.
const BOT: &str = r#"import json, re, sys, time
log_path, rules_path = sys.argv[1], sys.argv[2]
with open(rules_path) as f:
    rules = json.load(f)
used = [False] * len(rules)

def fill(v, req):
    if isinstance(v, str):
        return v.replace("{input}", req.get("input") or "").replace("{turn}", str(req.get("turn")))
    if isinstance(v, list):
        return [fill(x, req) for x in v]
    if isinstance(v, dict):
        return {k: fill(x, req) for k, x in v.items()}
    return v

for line in sys.stdin:
    if not line.strip():
        continue
    req = json.loads(line)
    with open(log_path, "a") as f:
        f.write(json.dumps(req) + "\n")
    rule = None
    for i, r in enumerate(rules):
        if r.get("once") and used[i]:
            continue
        if "turn" in r and r["turn"] != req.get("turn"):
            continue
        if "when" in r and not re.search(r["when"], req.get("input") or ""):
            continue
        used[i] = True
        rule = r
        break
    if rule is None:
        sys.stderr.write("bot: no rule for %r\n" % req.get("input"))
        sys.exit(9)
    if "sleep" in rule:
        time.sleep(rule["sleep"])
    if "crash" in rule:
        sys.stderr.write("bot: crashing on purpose\n")
        sys.stderr.flush()
        sys.exit(rule["crash"])
    out = rule["raw"] if "raw" in rule else json.dumps(fill(rule["reply"], req))
    sys.stdout.write(out + "\n")
    sys.stdout.flush()
"#;

/// A scratch directory holding `bot.py`.
fn scratch(tag: &str) -> Scratch {
    let s = Scratch::named("dyn", tag);
    s.write("bot.py", BOT);
    s
}

impl Scratch {
    /// Writes `agentest.toml`.
    fn config(&self, text: &str) {
        self.write("agentest.toml", text);
    }

    /// Writes the rules of the bot `name` (`name.json`).
    fn rules(&self, name: &str, rules: Value) {
        self.write(&format!("{name}.json"), &rules.to_string());
    }

    /// The requests the bot `name` received, in order.
    fn log(&self, name: &str) -> Vec<Value> {
        std::fs::read_to_string(self.join(&format!("{name}.log")))
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).expect("logged request is JSON"))
            .collect()
    }
}

/// A config section running the bot `name` as a process agent.
fn bot(header: &str, name: &str) -> String {
    format!(
        "[{header}]\ntype = \"process\"\ncommand = [\"python3\", \"bot.py\", \"{name}.log\", \"{name}.json\"]\n"
    )
}

/// The `[agent]` section running the example expense agent.
fn expense_agent() -> String {
    expense_agent_section()
}

/// An `[llm]` section on the test server: no retries, short timeout, key in [`KEY_VAR`].
fn llm(url: &str) -> String {
    format!(
        "[llm]\nbase_url = \"{url}\"\nmodel = \"test-model\"\napi_key_env = \"{KEY_VAR}\"\ntimeout = \"5s\"\nmax_retries = 0\n"
    )
}

/// Rules for an agent that echoes and asks for more: "You said: X. Anything else?".
fn echo() -> Value {
    json!([{"reply": {"content": "You said: {input}. Anything else?"}}])
}

/// A scratch project whose `[agent]` is the bot `agent` with `rules`, plus `extra` config.
fn project(tag: &str, extra: &str, rules: Value, cases: &[Value]) -> Scratch {
    let s = scratch(tag);
    s.config(&format!("{}{extra}", bot("agent", "agent")));
    s.rules("agent", rules);
    s.cases(cases);
    s
}

/// A scratch project whose `[agent]` is the example expense agent.
fn expense_project(tag: &str, extra: &str, cases: &[Value]) -> Scratch {
    let s = scratch(tag);
    s.config(&format!("{}{extra}", expense_agent()));
    s.cases(cases);
    s
}

/// A dynamic case.
fn dynamic(id: &str, input: &str, simulator: Value, checkpoints: Value) -> Value {
    json!({"id": id, "input": input, "simulator": simulator, "checkpoints": checkpoints})
}

/// `base` with the keys of `more` added (or replaced).
fn with(mut base: Value, more: Value) -> Value {
    if let (Value::Object(b), Value::Object(m)) = (&mut base, more) {
        b.extend(m);
    }
    base
}

/// A scripted simulator.
fn script(rules: Value) -> Value {
    json!({"use": "script", "script": rules})
}

fn contains(v: &str) -> Value {
    json!({"type": "contains", "value": v})
}

/// A checkpoint.
fn cp(id: &str, assert: Value) -> Value {
    json!({"id": id, "assert": assert})
}

/// A run of `agentest test` in `dir` (see [`Cmd`]) with the key in [`KEY_VAR`].
fn agentest(dir: &Path) -> Cmd<'_> {
    project::agentest(dir, (KEY_VAR, KEY))
}

/// `[(input, source), ...]` as owned strings, for comparisons.
fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
    list.iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect()
}

/// The expense flow's checkpoints: asks for the type, drafts, submits.
fn expense_checkpoints() -> Value {
    json!([
        {"id": "ask", "description": "asks for the expense type", "assert": contains("type")},
        {"id": "create", "description": "drafts the expense with create_expense", "after": ["ask"],
         "assert": {"type": "tool_called", "name": "create_expense"}},
        {"id": "done", "after": ["create"], "assert": contains("submitted")}
    ])
}

// ---------------------------------------------------------------------------------------
// 1. Termination
// ---------------------------------------------------------------------------------------

fn every_checkpoint_reached_passes_with_the_scripted_simulator() {
    let s = expense_project(
        "all-reached",
        "",
        &[with(
            dynamic(
                "flow",
                "Hi, I need to file an expense",
                script(json!([
                    {"when": "(?i)type", "say": "Travel, $500"},
                    {"when": "(?i)confirm", "say": "Yes, confirm"}
                ])),
                expense_checkpoints(),
            ),
            json!({"max_turns": 6}),
        )],
    );
    let r = agentest(s.path()).run();
    r.expect(0)
        .expect_status("flow", "passed")
        .expect_termination("flow", "all_checkpoints_reached");
    let c = r.case("flow");
    assert_eq!(c["mode"], "dynamic");
    assert_eq!(c["simulator"], "script");
    assert_eq!(c["total_turns"], 3);
    assert!(c["error"].is_null(), "{r:?}");
    assert_eq!(
        r.inputs("flow"),
        pairs(&[
            ("Hi, I need to file an expense", "initial"),
            ("Travel, $500", "simulated"),
            ("Yes, confirm", "simulated"),
        ])
    );
    for (cp, turn) in [("ask", 1), ("create", 2), ("done", 3)] {
        let k = r.checkpoint("flow", cp);
        assert_eq!(k["reached"], true, "{cp}: {r:?}");
        assert_eq!(k["reached_at_turn"], turn, "{cp}: {r:?}");
        // The turn is `reached_at_turn`; the message says what matched, once.
        let message = k["message"].as_str().unwrap();
        assert!(
            !message.is_empty() && !message.contains("reached at turn"),
            "{k}"
        );
    }
    assert_eq!(
        c["turns"][1]["reasoning"], "script rule 1 (when /(?i)type/)",
        "{r:?}"
    );
    assert!(c["turns"][0].get("reasoning").is_none(), "{r:?}");
    r.expect_stdout("Checkpoints: 3/3 reached (all_checkpoints_reached)")
        .expect_stdout("Turn 1: [Initial] \"Hi, I need to file an expense\"")
        .expect_stdout("Turn 2: [Simulated] \"Travel, $500\"")
        .expect_stdout("✓ checkpoint create");
}

fn an_agent_that_completes_with_checkpoints_missing_fails_naming_them() {
    // The policy answer declares `awaiting_input: false`: the agent is done after turn 1.
    let s = expense_project(
        "completed",
        "",
        &[dynamic(
            "done-early",
            "What is the meal limit policy?",
            script(json!([{"say": "never used"}])),
            json!([
                {"id": "policy", "assert": contains("$75")},
                {"id": "create", "assert": {"type": "tool_called", "name": "create_expense"}},
                {"id": "confirm", "after": ["create"], "assert": contains("submitted")}
            ]),
        )],
    );
    let r = agentest(s.path()).run();
    r.expect(1)
        .expect_status("done-early", "failed")
        .expect_termination("done-early", "agent_completed")
        .expect_error(
            "done-early",
            &[
                "the agent completed at turn 1 (it is not awaiting input) with required checkpoints missing: create (last: ",
                "create_expense",
                "; confirm (last: waiting for create to be reached first)",
            ],
        );
    assert!(
        !r.error("done-early").contains("policy (last"),
        "a reached checkpoint is not missing: {r:?}"
    );
    let c = r.case("done-early");
    assert_eq!(c["total_turns"], 1);
    assert_eq!(c["turns"][0]["awaiting_input"], false);
    assert_eq!(c["turns"][0]["awaiting_reason"], "agent_declared");
    assert_eq!(r.checkpoint("done-early", "policy")["reached_at_turn"], 1);
    assert_eq!(r.checkpoint("done-early", "create")["reached"], false);
    r.expect_stdout("Checkpoints: 1/3 reached (agent_completed)")
        .expect_stdout("✗ confirm: waiting for create to be reached first");
}

/// One way a conversation with the bot ends: a project whose agent is the bot with
/// `agent`'s rules (and, with `simulator`, a second bot `fake-user` with those rules),
/// one case, and what the run must say of it: the exit code, the case's status, its
/// termination and the parts of its error. `more` checks what is particular to the row.
/// Each row is a trial named `dynamic::NAME`.
struct Ending {
    name: &'static str,
    agent: Value,
    simulator: Option<Value>,
    case: Value,
    code: i32,
    status: &'static str,
    termination: Option<&'static str>,
    error: &'static [&'static str],
    more: fn(&Scratch, &Run),
}

impl Ending {
    fn check(&self) {
        let id = self.case["id"].as_str().expect("the case has an id");
        let extra = match self.simulator {
            Some(_) => bot("agents.fake-user", "sim"),
            None => String::new(),
        };
        let s = project(
            self.name,
            &extra,
            self.agent.clone(),
            std::slice::from_ref(&self.case),
        );
        if let Some(rules) = &self.simulator {
            s.rules("sim", rules.clone());
        }
        let r = agentest(s.path()).run();
        r.expect(self.code).expect_status(id, self.status);
        if let Some(termination) = self.termination {
            r.expect_termination(id, termination);
        }
        if !self.error.is_empty() {
            r.expect_error(id, self.error);
        }
        (self.more)(&s, &r);
    }
}

/// The checkpoints of a case that is not meant to reach them.
fn never() -> Value {
    json!([cp("never", contains("unicorn"))])
}

/// The rows of [`Ending`].
fn endings() -> Vec<Ending> {
    let says = |n: usize| -> Value { (1..=n).map(|i| json!({"say": format!("m{i}")})).collect() };
    vec![
        Ending {
            name: "the_simulator_reporting_its_goal_achieved_with_checkpoints_missing_fails",
            agent: echo(),
            simulator: None,
            case: dynamic(
                "goal",
                "start",
                script(json!([{"say": "more"}, {"goal_achieved": true}])),
                never(),
            ),
            code: 1,
            status: "failed",
            termination: Some("goal_achieved"),
            error: &[
                "the simulator reported its goal achieved after turn 2 (script rule 2) with required checkpoints missing: never (last: ",
                "unicorn",
            ],
            more: |_, r| assert_eq!(r.case("goal")["total_turns"], 2, "{r:?}"),
        },
        Ending {
            name: "max_turns_ends_the_conversation",
            agent: echo(),
            simulator: None,
            case: with(
                dynamic("max", "start", script(says(10)), never()),
                json!({"max_turns": 3}),
            ),
            code: 1,
            status: "failed",
            termination: Some("max_turns"),
            error: &["max turns (3) exceeded; required checkpoints missing: never (last: "],
            more: |s, r| {
                assert_eq!(
                    r.inputs("max"),
                    pairs(&[
                        ("start", "initial"),
                        ("m1", "simulated"),
                        ("m2", "simulated")
                    ])
                );
                assert_eq!(s.log("agent").len(), 3);
            },
        },
        Ending {
            name: "max_turns_defaults_to_20",
            agent: echo(),
            simulator: None,
            case: dynamic("endless", "start", script(says(30)), never()),
            code: 1,
            status: "failed",
            termination: Some("max_turns"),
            error: &["max turns (20) exceeded"],
            more: |s, r| {
                let c = r.case("endless");
                assert_eq!(c["total_turns"], 20, "{r:?}");
                assert_eq!(c["turns"][19]["input"], "m19");
                assert_eq!(s.log("agent").len(), 20);
            },
        },
        Ending {
            name: "reaching_the_last_checkpoint_on_the_last_allowed_turn_passes",
            agent: echo(),
            simulator: None,
            case: with(
                dynamic(
                    "edge",
                    "start",
                    script(json!([{"say": "one"}, {"say": "two"}, {"say": "three"}])),
                    json!([cp("two", contains("You said: two"))]),
                ),
                json!({"max_turns": 3}),
            ),
            code: 0,
            status: "passed",
            termination: Some("all_checkpoints_reached"),
            error: &[],
            more: |_, r| assert_eq!(r.checkpoint("edge", "two")["reached_at_turn"], 3),
        },
        Ending {
            name: "the_timeout_is_checked_during_a_turn",
            // Turn 2's reply would take 30 s; the case has 1 s.
            agent: json!([
                {"turn": 2, "sleep": 30, "reply": {"content": "too late"}},
                {"reply": {"content": "What next?"}}
            ]),
            simulator: None,
            case: with(
                dynamic("slow", "start", script(json!([{"say": "go on"}])), never()),
                json!({"timeout": "1s"}),
            ),
            code: 1,
            status: "timeout",
            termination: None,
            error: &["timeout after 1s (while waiting for the reply to turn 2"],
            more: |_, r| {
                let c = r.case("slow");
                let ms = c["duration_ms"].as_u64().unwrap();
                assert!(
                    (1000..5000).contains(&ms),
                    "finished near 1s: {ms} ms\n{r:?}"
                );
                assert!(r.took < Duration::from_secs(10), "{r:?}");
                assert_eq!(c["turns"][0]["input_source"], "initial");
            },
        },
        Ending {
            name: "a_script_with_no_matching_rule_is_a_simulator_error",
            agent: echo(),
            simulator: None,
            case: dynamic(
                "stuck",
                "start",
                script(json!([{"when": "(?i)never matches", "say": "x"}])),
                never(),
            ),
            code: 1,
            status: "error",
            termination: Some("simulator_error"),
            error: &[
                "turn 2: simulator error: the simulator script has no unused rule for the agent's reply \"You said: start. Anything else?\"",
                "{\"goal_achieved\": true}",
            ],
            more: |_, r| assert_eq!(r.case("stuck")["total_turns"], 1, "{r:?}"),
        },
        Ending {
            name: "a_named_simulator_that_crashes_is_a_simulator_error_naming_it",
            agent: echo(),
            simulator: Some(json!([{"crash": 4}])),
            case: dynamic("crash", "start", json!({"use": "fake-user"}), never()),
            code: 1,
            status: "error",
            termination: Some("simulator_error"),
            error: &[
                "turn 2: simulator error: simulator agent `fake-user`: ",
                "bot: crashing on purpose",
            ],
            more: |_, r| assert_eq!(r.case("crash")["simulator"], "fake-user", "{r:?}"),
        },
        Ending {
            name: "an_agent_that_crashes_on_turn_2_is_an_agent_error",
            agent: json!([{"turn": 2, "crash": 3}, {"reply": {"content": "What next?"}}]),
            simulator: None,
            case: dynamic("crash", "start", script(json!([{"say": "boom"}])), never()),
            code: 1,
            status: "error",
            termination: Some("agent_error"),
            error: &["turn 2: ", "bot: crashing on purpose"],
            more: |_, r| {
                let c = r.case("crash");
                assert_eq!(c["total_turns"], 2);
                assert_eq!(c["turns"][1]["input"], "boom");
                assert_eq!(c["turns"][1]["input_source"], "simulated");
                assert!(c["turns"][1]["error"].is_string(), "{r:?}");
            },
        },
    ]
}

// ---------------------------------------------------------------------------------------
// 2. Checkpoints
// ---------------------------------------------------------------------------------------

fn after_holds_a_checkpoint_back_until_its_predecessor_is_reached() {
    // "beta" shows up on turn 1, before "alpha" (turn 2): `second` is reached only when
    // "beta" shows up again, on turn 3.
    let s = project(
        "after",
        "",
        json!([
            {"turn": 1, "reply": {"content": "beta?"}},
            {"turn": 2, "reply": {"content": "alpha?"}},
            {"turn": 3, "reply": {"content": "beta again?"}}
        ]),
        &[dynamic(
            "order",
            "start",
            script(json!([{"say": "two"}, {"say": "three"}])),
            json!([
                {"id": "second", "after": ["first"], "assert": contains("beta")},
                cp("first", contains("alpha"))
            ]),
        )],
    );
    let r = agentest(s.path()).run();
    r.expect(0)
        .expect_status("order", "passed")
        .expect_termination("order", "all_checkpoints_reached");
    assert_eq!(r.checkpoint("order", "first")["reached_at_turn"], 2);
    assert_eq!(r.checkpoint("order", "second")["reached_at_turn"], 3);
    let c = r.case("order");
    // Turn 1: `second` held but was not evaluated, only `first` (which failed).
    let t1: Vec<(&str, bool)> = c["turns"][0]["checkpoints"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| {
            (
                v["checkpoint"].as_str().unwrap(),
                v["passed"].as_bool().unwrap(),
            )
        })
        .collect();
    assert_eq!(t1, vec![("first", false)], "{r:?}");
    // Turn 2: `first` reached, then `second` evaluated in the same turn (and failed).
    let t2: Vec<(&str, bool)> = c["turns"][1]["checkpoints"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| {
            (
                v["checkpoint"].as_str().unwrap(),
                v["passed"].as_bool().unwrap(),
            )
        })
        .collect();
    assert_eq!(t2, vec![("first", true), ("second", false)], "{r:?}");
}

fn a_same_turn_chain_counts_even_when_the_dependent_checkpoint_comes_first() {
    let s = project(
        "chain",
        "",
        json!([{"reply": {"content": "alpha beta gamma?"}}]),
        &[dynamic(
            "chain",
            "start",
            script(json!([{"say": "unused"}])),
            json!([
                {"id": "c", "after": ["b"], "assert": contains("gamma")},
                {"id": "b", "after": ["a"], "assert": contains("beta")},
                cp("a", contains("alpha"))
            ]),
        )],
    );
    let r = agentest(s.path()).run();
    r.expect(0)
        .expect_status("chain", "passed")
        .expect_termination("chain", "all_checkpoints_reached");
    let c = r.case("chain");
    assert_eq!(c["total_turns"], 1);
    for id in ["a", "b", "c"] {
        assert_eq!(r.checkpoint("chain", id)["reached_at_turn"], 1, "{id}");
    }
    let order: Vec<&str> = c["turns"][0]["checkpoints"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["label"].as_str().unwrap())
        .collect();
    assert_eq!(order, ["checkpoint a", "checkpoint b", "checkpoint c"]);
}

fn optional_checkpoints_may_be_missed_and_unmatched_forbidden_ones_do_not_count() {
    let mut cps = expense_checkpoints().as_array().unwrap().clone();
    cps.push(json!({"id": "upsell", "required": false, "assert": contains("premium card")}));
    cps.push(json!({"id": "no-policy", "forbidden": true, "assert": {"type": "tool_called", "name": "get_policy"}}));
    let s = expense_project(
        "optional",
        "",
        &[dynamic(
            "opt",
            "I want to submit an expense",
            script(json!([
                {"when": "(?i)amount", "say": "Meal, $40"},
                {"when": "(?i)confirm", "say": "confirm"}
            ])),
            json!(cps),
        )],
    );
    let r = agentest(s.path()).run();
    r.expect(0)
        .expect_status("opt", "passed")
        .expect_termination("opt", "all_checkpoints_reached");
    let up = r.checkpoint("opt", "upsell");
    assert_eq!(up["required"], false);
    assert_eq!(up["reached"], false);
    assert!(up.get("reached_at_turn").is_none(), "{up}");
    assert!(
        up["message"].as_str().unwrap().contains("premium card"),
        "{up}"
    );
    let f = r.checkpoint("opt", "no-policy");
    assert_eq!(f["forbidden"], true);
    assert_eq!(f["reached"], false);
    r.expect_stdout("Checkpoints: 3/4 reached, all required (all_checkpoints_reached)");
    // With -v the checkpoints a turn did not reach are pending, not failed: a passing
    // case shows no ✗.
    let r = agentest(s.path()).arg("-v").run();
    r.expect(0);
    r.expect_stdout("○ checkpoint upsell (not reached yet)");
    assert!(!r.stdout.contains('✗'), "{}", r.stdout);
}

fn a_forbidden_checkpoint_fails_the_case_on_the_turn_it_matches() {
    // Turn 2 reaches the last required checkpoint and calls the forbidden tool at once:
    // the forbidden match wins.
    let s = project(
        "forbidden",
        "",
        json!([
            {"turn": 1, "reply": {"content": "alpha?"}},
            {"turn": 2, "reply": {"content": "beta?", "tool_calls": [
                {"name": "delete_account", "arguments": {"id": 7}, "result": {"ok": true}}]}}
        ]),
        &[dynamic(
            "bad",
            "start",
            script(json!([{"say": "two"}, {"say": "three"}])),
            json!([
                cp("a", contains("alpha")),
                cp("b", contains("beta")),
                {"id": "no-delete", "forbidden": true, "assert": {"type": "tool_called", "name": "delete_account"}}
            ]),
        )],
    );
    let r = agentest(s.path()).run();
    r.expect(1)
        .expect_status("bad", "failed")
        .expect_termination("bad", "forbidden_checkpoint")
        .expect_error(
            "bad",
            &["turn 2: forbidden checkpoint `no-delete` matched: tool_called"],
        );
    assert_eq!(r.checkpoint("bad", "a")["reached_at_turn"], 1);
    assert_eq!(r.checkpoint("bad", "b")["reached_at_turn"], 2);
    let f = r.checkpoint("bad", "no-delete");
    assert_eq!(
        (&f["reached"], &f["reached_at_turn"]),
        (&json!(true), &json!(2))
    );
    let c = r.case("bad");
    assert_eq!(c["total_turns"], 2);
    let verdict = c["turns"][1]["checkpoints"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["checkpoint"] == "no-delete")
        .cloned()
        .unwrap_or_else(|| panic!("{r:?}"));
    assert_eq!(verdict["passed"], false);
    assert_eq!(verdict["label"], "forbidden checkpoint no-delete");
}

// ---------------------------------------------------------------------------------------
// 3. Simulators
// ---------------------------------------------------------------------------------------

fn the_scripted_simulator_uses_each_rule_once_in_order() {
    let s = project(
        "script",
        "",
        echo(),
        &[dynamic(
            "rules",
            "start",
            script(json!([
                {"when": "never", "say": "x"},
                {"when": "You said: start", "say": "alpha"},
                {"when": "You said", "say": "beta"},
                {"when": "You said", "say": "gamma"},
                {"say": "delta"}
            ])),
            json!([cp("g", contains("You said: gamma"))]),
        )],
    );
    let r = agentest(s.path()).run();
    r.expect(0).expect_status("rules", "passed");
    assert_eq!(
        r.inputs("rules"),
        pairs(&[
            ("start", "initial"),
            ("alpha", "simulated"),
            ("beta", "simulated"),
            ("gamma", "simulated"),
        ])
    );
    let c = r.case("rules");
    assert_eq!(
        c["turns"][1]["reasoning"],
        "script rule 2 (when /You said: start/)"
    );
    assert_eq!(
        c["turns"][2]["reasoning"],
        "script rule 3 (when /You said/)"
    );
    assert_eq!(
        c["turns"][3]["reasoning"],
        "script rule 4 (when /You said/)"
    );
}

fn a_dynamic_case_without_input_starts_with_the_simulator() {
    let s = project(
        "no-input",
        "",
        echo(),
        &[
            json!({"id": "first", "simulator": script(json!([{"say": "opening"}])),
                 "checkpoints": [cp("hi", contains("You said: opening"))]}),
        ],
    );
    let r = agentest(s.path()).run();
    r.expect(0).expect_status("first", "passed");
    assert_eq!(r.inputs("first"), pairs(&[("opening", "simulated")]));
}

/// The named simulator receives the seed's simulator input in `metadata`, and answers
/// with JSON (`message`, or `input` in `data`) or plain text.
fn a_named_simulator_receives_the_simulator_input_and_answers_json_or_text() {
    let sim = json!({"use": "user", "persona": "A new employee", "goal": "File an expense",
                     "options": {"metadata": {"locale": "fr", "style": "terse"}}});
    let cps = json!([
        cp("hi", contains("You said: Hi")),
        {"id": "one", "description": "hears first", "assert": contains("You said: first")},
        cp("two", contains("You said: second")),
        cp("three", contains("You said: third"))
    ]);
    let s = project(
        "named-sim",
        &bot("agents.user", "sim"),
        echo(),
        &[
            with(
                dynamic("plain", "Hi", sim.clone(), cps.clone()),
                json!({"max_turns": 6}),
            ),
            with(
                dynamic(
                    "shown",
                    "Hi",
                    with(sim, json!({"show_checkpoints": true})),
                    cps,
                ),
                json!({"max_turns": 6}),
            ),
        ],
    );
    s.rules(
        "sim",
        json!([
            {"turn": 2, "reply": {"content": "{\"message\": \"first\", \"goal_achieved\": false, \"reasoning\": \"because\"}"}},
            {"turn": 3, "reply": {"data": {"input": "second"}}},
            {"turn": 4, "reply": {"content": "third"}}
        ]),
    );
    let r = agentest(s.path()).arg("--parallel").arg("1").run();
    r.expect(0);
    for id in ["plain", "shown"] {
        r.expect_status(id, "passed")
            .expect_termination(id, "all_checkpoints_reached");
        assert_eq!(r.case(id)["simulator"], "user");
        assert_eq!(
            r.inputs(id),
            pairs(&[
                ("Hi", "initial"),
                ("first", "simulated"),
                ("second", "simulated"),
                ("third", "simulated"),
            ])
        );
        let c = r.case(id);
        assert_eq!(c["turns"][1]["reasoning"], "because");
        assert!(c["turns"][2].get("reasoning").is_none(), "{r:?}");
    }
    let log = s.log("sim");
    let of = |id: &str| -> Vec<Value> {
        log.iter()
            .filter(|q| q["metadata"]["test_id"] == id)
            .cloned()
            .collect()
    };
    let plain = of("plain");
    assert_eq!(plain.len(), 3, "{log:?}");
    let first = &plain[0];
    let said = "You said: Hi. Anything else?";
    assert_eq!(first["turn"], 2);
    assert_eq!(first["input"], said);
    assert!(
        first["session_id"]
            .as_str()
            .unwrap()
            .ends_with("-simulator"),
        "{first}"
    );
    let m = &first["metadata"];
    assert_eq!(m["test_mode"], "simulator");
    assert_eq!(m["persona"], "A new employee");
    assert_eq!(m["goal"], "File an expense");
    assert_eq!(m["locale"], "fr");
    assert_eq!(m["style"], "terse");
    assert_eq!(m["last_response"], said);
    assert_eq!(m["turn_number"], 2);
    assert_eq!(m["max_turns"], 6);
    assert_eq!(m["checkpoints_reached"], json!(["hi"]));
    assert_eq!(m["checkpoints_pending"], json!([]), "hidden unless asked");
    assert_eq!(
        m["conversation"],
        json!([{"role": "user", "content": "Hi"}, {"role": "assistant", "content": said}])
    );
    let third = &plain[2]["metadata"];
    assert_eq!(third["turn_number"], 4);
    assert_eq!(third["checkpoints_reached"], json!(["hi", "one", "two"]));
    assert_eq!(third["last_response"], "You said: second. Anything else?");
    assert_eq!(third["conversation"].as_array().unwrap().len(), 6);

    let shown = of("shown");
    assert_eq!(shown.len(), 3, "{log:?}");
    assert_eq!(
        shown[0]["metadata"]["checkpoints_pending"],
        json!(["hears first", "two", "three"])
    );
    assert_eq!(
        shown[2]["metadata"]["checkpoints_pending"],
        json!(["three"])
    );
}

fn a_named_simulator_can_end_the_conversation_with_goal_achieved() {
    let s = project(
        "named-goal",
        &bot("agents.user", "sim"),
        echo(),
        &[dynamic(
            "goal",
            "Hi",
            json!({"use": "user"}),
            json!([cp("never", contains("unicorn"))]),
        )],
    );
    s.rules(
        "sim",
        json!([{"reply": {"data": {"goal_achieved": true, "reasoning": "all done"}}}]),
    );
    let r = agentest(s.path()).run();
    r.expect(1)
        .expect_status("goal", "failed")
        .expect_termination("goal", "goal_achieved")
        .expect_error(
            "goal",
            &["the simulator reported its goal achieved after turn 1 (all done) with required checkpoints missing: never"],
        );
}

fn a_named_simulator_answer_without_a_message_is_an_error() {
    let s = project(
        "named-empty",
        &bot("agents.user", "sim"),
        echo(),
        &[dynamic(
            "empty",
            "Hi",
            json!({"use": "user"}),
            json!([cp("never", contains("unicorn"))]),
        )],
    );
    s.rules(
        "sim",
        json!([{"reply": {"data": {"message": "", "goal_achieved": false}}}]),
    );
    let r = agentest(s.path()).run();
    r.expect(1)
        .expect_status("empty", "error")
        .expect_termination("empty", "simulator_error")
        .expect_error(
            "empty",
            &["simulator error: simulator agent `user` answered twice without a message"],
        );
}

fn the_simulator_flag_picks_the_simulator_of_cases_that_name_none() {
    let s = project(
        "sim-flag",
        &bot("agents.user", "sim"),
        echo(),
        &[dynamic(
            "default-sim",
            "Hi",
            json!({"persona": "Someone"}),
            json!([cp("got", contains("You said: from the flag"))]),
        )],
    );
    s.rules("sim", json!([{"reply": {"content": "from the flag"}}]));
    let r = agentest(s.path()).arg("--simulator").arg("user").run();
    r.expect(0).expect_status("default-sim", "passed");
    assert_eq!(r.case("default-sim")["simulator"], "user");
    let log = s.log("sim");
    assert_eq!(log.len(), 1);
    assert_eq!(log[0]["metadata"]["persona"], "Someone");

    // Without the flag the case wants the built-in simulator, and there is no [llm].
    let r = agentest(s.path()).run();
    r.expect(1)
        .expect_status("default-sim", "error")
        .expect_error("default-sim", &["the built-in simulator", "[llm]"]);
}

fn the_model_simulator_plays_the_user_from_json_answers_and_replays_offline() {
    let server = ChatServer::routed(route_of);
    server.answer(
        "sim",
        &[
            json!({"message": "Travel, $500", "goal_achieved": false, "reasoning": "it asked for the type"})
                .to_string(),
            json!({"message": "Yes, confirm it please"}).to_string(),
        ],
    );
    let case = with(
        dynamic(
            "model",
            "Hi, I need to file an expense",
            json!({"options": {"metadata": {"persona": "A new employee, unsure of the process",
                                            "goal": "Submit a $500 travel expense"}}}),
            expense_checkpoints(),
        ),
        json!({"max_turns": 6}),
    );
    let s = expense_project("model-sim", &llm(&server.url()), &[case]);
    let r = agentest(s.path()).run();
    r.expect(0)
        .expect_status("model", "passed")
        .expect_termination("model", "all_checkpoints_reached");
    let c = r.case("model");
    assert_eq!(c["simulator"], "model test-model");
    assert_eq!(
        r.inputs("model"),
        pairs(&[
            ("Hi, I need to file an expense", "initial"),
            ("Travel, $500", "simulated"),
            ("Yes, confirm it please", "simulated"),
        ])
    );
    assert_eq!(c["turns"][1]["reasoning"], "it asked for the type");
    assert_eq!(
        c["usage"]["simulator"],
        json!({"prompt_tokens": 20, "completion_tokens": 10}),
        "{r:?}"
    );
    assert_eq!(c["model_calls"], 2);

    let reqs = server.bodies("sim");
    assert_eq!(reqs.len(), 2, "{reqs:?}");
    let system = system_of(&reqs[0]);
    assert!(
        system.contains("Persona: A new employee, unsure of the process"),
        "{system}"
    );
    assert!(
        system.contains("Goal: Submit a $500 travel expense"),
        "{system}"
    );
    // The pending checkpoints stay hidden: it cannot coach the agent.
    for hidden in [
        "still expects",
        "drafts the expense",
        "create_expense",
        "submitted",
    ] {
        assert!(!system.contains(hidden), "{hidden:?} leaked: {system}");
        assert!(
            !reqs[0]["messages"].to_string().contains(hidden),
            "{hidden:?} leaked"
        );
    }
    // `auto`: the strictest form, which this server takes.
    assert_eq!(reqs[0]["response_format"]["type"], "json_schema");
    assert_eq!(
        reqs[0]["response_format"]["json_schema"]["name"],
        "user_turn"
    );
    assert_eq!(reqs[0]["model"], "test-model");
    assert!(system.contains("This is turn 2 of at most 6"), "{system}");
    // It sees the conversation from the user's side: its words are its own, the
    // agent's come to it, and it answers the last of them.
    let side = |body: &Value| -> Vec<(String, String)> {
        body["messages"].as_array().unwrap()[1..]
            .iter()
            .map(|m| {
                (
                    m["role"].as_str().unwrap().to_string(),
                    m["content"].as_str().unwrap().to_string(),
                )
            })
            .collect()
    };
    let asked = ASKED;
    let mine = |m: &str| ("assistant".to_string(), json!({"message": m}).to_string());
    let theirs = |m: &str| ("user".to_string(), m.to_string());
    assert_eq!(
        side(&reqs[0]),
        vec![mine("Hi, I need to file an expense"), theirs(asked)]
    );
    let second = side(&reqs[1]);
    assert_eq!(
        second[..3],
        [
            mine("Hi, I need to file an expense"),
            theirs(asked),
            mine("Travel, $500")
        ],
        "{second:?}"
    );
    assert_eq!(second.len(), 4, "{second:?}");
    assert_eq!(second[3].0, "user");
    assert!(s.exists(&cassette("model")));

    // Offline: the server is gone and the cassette answers.
    drop(server);
    let r = agentest(s.path()).run();
    r.expect(0).expect_status("model", "passed");
    let c = r.case("model");
    assert_eq!(c["cassette"]["replayed"], 2, "{r:?}");
    assert_eq!(c["cassette"]["recorded"], 0, "{r:?}");
    // Replayed tokens were not spent by this run: they are counted apart (the process
    // agent's own reported usage stays what it spent).
    assert!(c["usage"].get("simulator").is_none(), "{c}");
    assert_eq!(c["replayed_usage"]["simulator"]["prompt_tokens"], 20);
    assert_eq!(c["replayed_calls"], 2);
    assert!(
        r.stdout
            .contains("Replayed from cassettes (not spent): simulator 20 in / 10 out"),
        "{}",
        r.stdout
    );
    assert_eq!(c["turns"][2]["input"], "Yes, confirm it please");
}

fn show_checkpoints_lets_the_model_simulator_see_the_pending_ones() {
    let server = ChatServer::routed(route_of);
    server.answer(
        "sim",
        &[
            json!({"input": "Travel, $500"}).to_string(),
            json!({"message": "yes", "goal_achieved": false}).to_string(),
        ],
    );
    let case = dynamic(
        "shown",
        "Hi, I need to file an expense",
        json!({"persona": "Direct persona", "objective": "Direct objective", "style": "brisk",
               "show_checkpoints": true}),
        expense_checkpoints(),
    );
    let s = expense_project("model-shown", &llm(&server.url()), &[case]);
    let r = agentest(s.path()).run();
    r.expect(0).expect_status("shown", "passed");
    assert_eq!(r.case("shown")["turns"][1]["input"], "Travel, $500");
    let reqs = server.bodies("sim");
    assert_eq!(reqs.len(), 2);
    let first = system_of(&reqs[0]);
    for part in [
        "Persona: Direct persona",
        "Goal: Direct objective",
        "Style: brisk",
        "- The test still expects the assistant to: drafts the expense with create_expense; done\n",
    ] {
        assert!(first.contains(part), "{part:?} in {first}");
    }
    let second = system_of(&reqs[1]);
    assert!(
        second.contains("- The test still expects the assistant to: done\n"),
        "{second}"
    );
}

/// What a model says is data: a simulator answer that is cut off, not JSON, not a string
/// message, or the prompt's own placeholder is never sent to the agent as the user's
/// turn. After one repair it is a `simulator_error` that shows the model's words.
fn simulator_garbage_never_reaches_the_agent() {
    use crate::common::chat::{completion, ok, text};
    let cut_off = |content: &str| {
        ok(completion(
            json!({"role": "assistant", "content": content}),
            "length",
            (20, 24),
        ))
    };
    let cases: Vec<(&str, Vec<crate::common::chat::Action>, &str, &str)> = vec![
        (
            "one-char",
            vec![text("{", (5, 1)), text("{", (5, 1))],
            "the answer is not a JSON object",
            "last answer: \"{\"",
        ),
        (
            "cut-off",
            vec![
                cut_off("{\"message\": \"What type of expense is it"),
                cut_off("{\"message\": \"Travel"),
            ],
            "the answer was cut off at the token limit",
            "Travel",
        ),
        (
            "not-a-string",
            vec![
                text(&json!({"message": {"action_name": "ask_type"}}).to_string(), (5, 5)),
                text(&json!({"message": ["Travel"]}).to_string(), (5, 5)),
            ],
            "its `message` is not a string",
            "Travel",
        ),
        (
            "placeholder",
            vec![
                text(&json!({"message": "What you say next", "goal_achieved": false, "reasoning": "why"}).to_string(), (5, 5)),
                text(&json!({"message": "what you say next"}).to_string(), (5, 5)),
            ],
            "its message repeats the instructions' example text",
            "what you say next",
        ),
    ];
    for (id, answers, why, words) in cases {
        let server = ChatServer::routed(route_of);
        server.script("sim", answers);
        let s = project(
            &format!("sim-garbage-{id}"),
            &llm(&server.url()),
            echo(),
            &[dynamic(
                id,
                "start",
                json!({"persona": "p"}),
                json!([cp("never", contains("unicorn"))]),
            )],
        );
        let r = agentest(s.path()).run();
        r.expect(1)
            .expect_status(id, "error")
            .expect_termination(id, "simulator_error")
            .expect_error(
                id,
                &[
                    "turn 2: simulator error: simulator answered twice without a message",
                    why,
                    words,
                ],
            );
        assert_eq!(server.bodies("sim").len(), 2, "{id}: one repair, no more");
        let inputs: Vec<String> = s
            .log("agent")
            .iter()
            .map(|q| q["input"].as_str().unwrap_or_default().to_string())
            .collect();
        assert_eq!(
            inputs,
            vec!["start".to_string()],
            "{id}: the agent got only the case's input"
        );
    }
}

fn an_empty_simulator_message_is_retried_once_then_an_error() {
    // Empty twice: an error after exactly two requests.
    let server = ChatServer::routed(route_of);
    server.answer(
        "sim",
        &[
            json!({"message": "", "goal_achieved": false}).to_string(),
            "   ".to_string(),
        ],
    );
    let s = project(
        "sim-empty",
        &llm(&server.url()),
        echo(),
        &[dynamic(
            "empty",
            "start",
            json!({"persona": "p"}),
            json!([cp("never", contains("unicorn"))]),
        )],
    );
    let r = agentest(s.path()).run();
    r.expect(1)
        .expect_status("empty", "error")
        .expect_termination("empty", "simulator_error")
        .expect_error(
            "empty",
            &["turn 2: simulator error: simulator answered twice without a message"],
        );
    // An empty message is the simulated user's fault.
    let blame = &r.case("empty")["blame"];
    assert_eq!(blame["party"], "simulator", "{blame}");
    assert!(
        blame["evidence"]
            .as_str()
            .unwrap()
            .contains("simulator answered twice without a message"),
        "{blame}"
    );
    let reqs = server.bodies("sim");
    assert_eq!(reqs.len(), 2, "{reqs:?}");
    // system, its "start", the agent's reply, its answer, the repair note.
    let retry = reqs[1]["messages"].as_array().unwrap();
    assert_eq!(retry.len(), 5, "{retry:?}");
    assert!(
        retry[4]["content"]
            .as_str()
            .unwrap()
            .contains("Your answer had no message"),
        "{retry:?}"
    );
    drop(server);

    // Empty once: the retry answers and the conversation goes on.
    let server = ChatServer::routed(route_of);
    server.answer(
        "sim",
        &[
            json!({"message": ""}).to_string(),
            json!({"message": "second try"}).to_string(),
        ],
    );
    s.config(&format!("{}{}", bot("agent", "agent"), llm(&server.url())));
    s.cases(&[dynamic(
        "retried",
        "start",
        json!({"persona": "p"}),
        json!([cp("got", contains("You said: second try"))]),
    )]);
    let r = agentest(s.path()).run();
    r.expect(0).expect_status("retried", "passed");
    assert_eq!(server.bodies("sim").len(), 2);
    assert_eq!(r.case("retried")["turns"][1]["input"], "second try");
}

fn the_model_simulator_can_report_its_goal_achieved() {
    let server = ChatServer::routed(route_of);
    server.answer(
        "sim",
        &[json!({"message": "thanks, bye", "goal_achieved": true, "reasoning": "I got my answer"})
            .to_string()],
    );
    let s = project(
        "sim-goal",
        &llm(&server.url()),
        echo(),
        &[dynamic(
            "bye",
            "start",
            json!({"goal": "say hi"}),
            json!([cp("never", contains("unicorn"))]),
        )],
    );
    let r = agentest(s.path()).run();
    r.expect(1)
        .expect_status("bye", "failed")
        .expect_termination("bye", "goal_achieved")
        .expect_error("bye", &["after turn 1 (I got my answer)"]);
    assert_eq!(r.case("bye")["total_turns"], 1);
}

/// An `[agents.NAME]` of kind `openai` as the simulator: the test server plays it.
fn openai_simulator_project(tag: &str, server: &ChatServer) -> Scratch {
    server.answer("other", &[json!({"message": "Travel, $500"}).to_string()]);
    let extra = format!(
        "{}[agents.llm-user]\ntype = \"openai\"\nsystem = \"You play a user.\"\n",
        llm(&server.url())
    );
    expense_project(
        tag,
        &extra,
        &[dynamic(
            "llm-user",
            "Hi, I need to file an expense",
            json!({"use": "llm-user"}),
            json!([cp(
                "create",
                json!({"type": "tool_called", "name": "create_expense"})
            )]),
        )],
    )
}

fn a_named_simulator_may_be_an_openai_agent() {
    let server = ChatServer::routed(route_of);
    let s = openai_simulator_project("openai-sim", &server);
    let r = agentest(s.path()).run();
    r.expect(0).expect_status("llm-user", "passed");
    assert_eq!(r.case("llm-user")["simulator"], "llm-user");
    assert_eq!(
        r.inputs("llm-user"),
        pairs(&[
            ("Hi, I need to file an expense", "initial"),
            ("Travel, $500", "simulated"),
        ])
    );
    let reqs = server.bodies("other");
    assert_eq!(reqs.len(), 1);
    let messages = reqs[0]["messages"].as_array().unwrap();
    assert_eq!(messages[0]["content"], "You play a user.");
    // The simulator's instructions and the question reach the model as messages it
    // reads, after the agent's own system prompt: an openai agent drops `metadata`.
    assert_eq!(messages[1]["role"], "system");
    let instructions = messages[1]["content"].as_str().unwrap();
    assert!(
        instructions.starts_with("You are simulating a user"),
        "{instructions}"
    );
    let asked = messages.last().unwrap();
    assert_eq!(asked["role"], "user");
    assert!(
        asked["content"].as_str().unwrap().contains(ASKED),
        "{asked}"
    );
}

fn an_openai_simulators_usage_is_reported_as_the_simulators() {
    let server = ChatServer::routed(route_of);
    let s = openai_simulator_project("openai-sim-usage", &server);
    let r = agentest(s.path()).run();
    r.expect(0);
    let c = r.case("llm-user");
    // The expense agent reports (12, 9) for its drafting turn; the simulator's one
    // model call used (10, 5).
    assert_eq!(
        c["usage"]["agent"],
        json!({"prompt_tokens": 12, "completion_tokens": 9})
    );
    assert_eq!(
        c["usage"]["simulator"],
        json!({"prompt_tokens": 10, "completion_tokens": 5}),
        "{r:?}"
    );
}

fn a_model_simulator_without_key_or_recording_is_skipped_outside_ci_and_fails_on_ci() {
    let s = project(
        "sim-nokey",
        &llm("http://127.0.0.1:9/v1"),
        echo(),
        &[dynamic(
            "nokey",
            "start",
            json!({"persona": "p"}),
            json!([cp("never", contains("unicorn"))]),
        )],
    );
    let r = agentest(s.path()).without_key().run();
    r.expect(0)
        .expect_status("nokey", "skipped")
        .expect_error("nokey", &[KEY_VAR]);
    let r = agentest(s.path()).without_key().env("CI", "true").run();
    r.expect(1)
        .expect_status("nokey", "failed")
        .expect_error("nokey", &[KEY_VAR]);
}

// ---------------------------------------------------------------------------------------
// 4. Awaiting input
// ---------------------------------------------------------------------------------------

/// One reply per turn, each exercising one detection rule.
fn awaiting_rules() -> Value {
    json!([
        {"turn": 1, "reply": {"content": "Done.", "awaiting_input": true}},
        {"turn": 2, "reply": {"content": "What else do you need?", "awaiting_input": false}},
        {"turn": 3, "reply": {"content": "Noted.", "tool_calls": [{"name": "ask_user", "arguments": {}}]}},
        {"turn": 4, "reply": {"content": "Noted.", "tool_calls": [{"name": "ui__request_confirmation", "arguments": {}}]}},
        {"turn": 5, "reply": {"content": "Noted.", "tool_calls": [{"name": "confirm_order", "arguments": {}}]}},
        {"turn": 6, "reply": {"content": "Shall I submit it?"}},
        {"turn": 7, "reply": {"content": "Please provide the PO number."}},
        {"turn": 8, "reply": {"content": "Can you confirm the amount? Thanks."}},
        {"turn": 9, "reply": {"content": "Expense submitted. Reference: EXP-1"}}
    ])
}

fn awaiting_case() -> Value {
    let turns: Vec<Value> = (1..=9).map(|i| json!({"input": format!("t{i}")})).collect();
    json!({"id": "await", "turns": turns})
}

fn awaiting_verdicts(r: &Run) -> Vec<(bool, String)> {
    r.case("await")["turns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["awaiting_input"].as_bool().unwrap(),
                t["awaiting_reason"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

fn awaiting_input_is_detected_by_declaration_then_tools_then_text() {
    let s = project("await", "", awaiting_rules(), &[awaiting_case()]);
    let r = agentest(s.path()).run();
    r.expect(0).expect_status("await", "passed");
    let want: Vec<(bool, String)> = [
        (true, "agent_declared"),
        (false, "agent_declared"),
        (true, "tool_requires_confirmation"),
        (true, "tool_requires_confirmation"),
        (false, "completed"),
        (true, "content_is_question"),
        (true, "content_is_question"),
        (true, "content_is_question"),
        (false, "completed"),
    ]
    .iter()
    .map(|(a, b)| (*a, b.to_string()))
    .collect();
    assert_eq!(awaiting_verdicts(&r), want, "{r:?}");
}

fn run_input_tools_replaces_the_default_list() {
    let s = project(
        "await-tools",
        "[run]\ninput_tools = [\"confirm_order\"]\n",
        awaiting_rules(),
        &[awaiting_case()],
    );
    let r = agentest(s.path()).run();
    r.expect(0);
    let got = awaiting_verdicts(&r);
    assert_eq!(got[2], (false, "completed".to_string()), "ask_user: {r:?}");
    assert_eq!(
        got[3],
        (false, "completed".to_string()),
        "request_confirmation: {r:?}"
    );
    assert_eq!(
        got[4],
        (true, "tool_requires_confirmation".to_string()),
        "confirm_order: {r:?}"
    );
    assert_eq!(got[0], (true, "agent_declared".to_string()));
}

fn the_agents_declaration_decides_when_a_dynamic_conversation_ends() {
    // A question declared not awaiting ends the conversation at once; a statement
    // declared awaiting keeps it going.
    let s = project(
        "await-dyn",
        "",
        json!([
            {"when": "^q$", "reply": {"content": "Anything else?", "awaiting_input": false}},
            {"when": "^s$", "reply": {"content": "Noted.", "awaiting_input": true}},
            {"reply": {"content": "Got {input}."}}
        ]),
        &[
            dynamic(
                "question-done",
                "q",
                script(json!([{"say": "more"}])),
                json!([cp("never", contains("unicorn"))]),
            ),
            dynamic(
                "statement-waits",
                "s",
                script(json!([{"say": "more"}])),
                json!([cp("never", contains("unicorn"))]),
            ),
        ],
    );
    let r = agentest(s.path()).run();
    r.expect(1)
        .expect_termination("question-done", "agent_completed")
        .expect_error("question-done", &["the agent completed at turn 1"]);
    assert_eq!(r.case("question-done")["total_turns"], 1);
    // "Got more." is a plain statement: completed at turn 2.
    r.expect_termination("statement-waits", "agent_completed")
        .expect_error("statement-waits", &["the agent completed at turn 2"]);
    let c = r.case("statement-waits");
    assert_eq!(c["turns"][0]["awaiting_reason"], "agent_declared");
    assert_eq!(c["turns"][1]["awaiting_reason"], "completed");
}

// ---------------------------------------------------------------------------------------
// 5. Judges
// ---------------------------------------------------------------------------------------

/// A project whose agent answers "Hello! How can I help you today?" and whose [llm] is
/// the test server.
fn judge_project(tag: &str, server: &ChatServer, extra: &str, cases: &[Value]) -> Scratch {
    project(
        tag,
        &format!("{}{extra}", llm(&server.url())),
        json!([{"reply": {"content": "Hello! How can I help you today?"}}]),
        cases,
    )
}

/// Each built-in role may call its own endpoint: `[run] judge_llm` and
/// `simulator_llm` name an `[llms.NAME]`, and `AGENTEST_JUDGE_LLM` overrides it.
fn the_built_in_judge_calls_the_endpoint_its_role_names() {
    let server = ChatServer::routed(route_of);
    server.answer(
        "judge",
        &[
            json!({"passed": true, "reason": "greets"}).to_string(),
            json!({"passed": true, "reason": "greets"}).to_string(),
        ],
    );
    let url = server.url();
    let extra = format!(
        "[llms.big]\nbase_url = \"{url}\"\nmodel = \"big-model\"\nseed = 7\ntop_p = 0.5\nstop = [\"END\"]\n\
         [llms.small]\nbase_url = \"{url}\"\nmodel = \"small-model\"\n\
         [run]\njudge_llm = \"big\"\n"
    );
    let case = json!({"id": "j", "input": "Hi", "assert": {"type": "llm_judge", "prompt": "The reply greets"}});
    let s = judge_project("judge-llm", &server, &extra, &[case]);
    agentest(s.path())
        .run()
        .expect(0)
        .expect_status("j", "passed");
    let bodies = server.bodies("judge");
    assert_eq!(bodies[0]["model"], "big-model", "{bodies:?}");
    assert_eq!(bodies[0]["seed"], 7);
    assert_eq!(bodies[0]["top_p"], 0.5);
    assert_eq!(bodies[0]["stop"], json!(["END"]));
    // The environment picks another for this run.
    agentest(s.path())
        .env("AGENTEST_JUDGE_LLM", "small")
        .env("AGENTEST_CASSETTES", "off")
        .run()
        .expect(0);
    assert_eq!(server.bodies("judge")[1]["model"], "small-model");
    // A role naming an endpoint that does not exist is a config error.
    let bad = judge_project(
        "judge-llm-bad",
        &server,
        "[run]\njudge_llm = \"nope\"\n",
        &[json!({"id": "j", "input": "Hi"})],
    );
    let r = agentest(bad.path()).run();
    assert_eq!(r.code, 2, "{r:?}");
    assert!(
        r.stderr.contains("judge_llm") && r.stderr.contains("nope"),
        "{r:?}"
    );
}

/// A case sets the built-in roles' model settings: `llm`, `model`, `temperature`,
/// `max_tokens` and `seed` on `simulator` and on a judge assertion replace the
/// endpoint's, and only there.
fn a_case_sets_the_model_settings_of_its_simulator_and_judges() {
    let server = ChatServer::routed(route_of);
    server.answer(
        "sim",
        &[json!({"message": "Travel, $500", "goal_achieved": true}).to_string()],
    );
    server.answer(
        "judge",
        &[
            json!({"passed": true, "reason": "greets"}).to_string(),
            json!({"passed": true, "reason": "greets"}).to_string(),
        ],
    );
    let url = server.url();
    let extra = format!(
        "[llms.big]\nbase_url = \"{url}\"\nmodel = \"big-model\"\nmax_tokens = 500\ntemperature = 0.9\n"
    );
    let cases = [
        json!({"id": "judged", "input": "Hi", "assertions": [
            {"type": "llm_judge", "prompt": "The reply greets", "llm": "big", "model": "judge-x",
             "temperature": 0.1, "max_tokens": 99, "seed": 3},
            {"type": "agent", "options": {"metadata": {"criteria": "The reply greets"}}}
        ]}),
        dynamic(
            "simulated",
            "Hi",
            json!({"persona": "New employee", "llm": "big", "model": "sim-y", "max_tokens": 40, "seed": 11, "temperature": 0}),
            json!([cp("never", contains("unicorn"))]),
        ),
    ];
    let s = judge_project("model-settings", &server, &extra, &cases);
    agentest(s.path())
        .env("AGENTEST_CASSETTES", "off")
        .run()
        .expect(1)
        .expect_status("judged", "passed");
    let judged = server.bodies("judge");
    assert_eq!(judged.len(), 2, "{judged:?}");
    let (with_settings, plain) = if judged[0]["model"] == "judge-x" {
        (&judged[0], &judged[1])
    } else {
        (&judged[1], &judged[0])
    };
    assert_eq!(with_settings["model"], "judge-x", "{judged:?}");
    assert_eq!(with_settings["temperature"], 0.1);
    assert_eq!(with_settings["max_tokens"], 99);
    assert_eq!(with_settings["seed"], 3);
    // The other assertion keeps the [llm] endpoint's own settings.
    assert_eq!(plain["model"], "test-model", "{judged:?}");
    assert!(
        plain.get("seed").is_none() && plain.get("max_tokens").is_none(),
        "{plain}"
    );
    let sim = &server.bodies("sim")[0];
    assert_eq!(sim["model"], "sim-y", "{sim}");
    assert_eq!(sim["max_tokens"], 40);
    assert_eq!(sim["seed"], 11);
    assert_eq!(sim["temperature"], 0.0);
}

/// Model settings belong to the built-in roles: on a simulator or judge that something
/// else plays they are an error, as are values out of range and endpoints not defined.
fn model_settings_out_of_place_or_undefined_are_errors() {
    let server = ChatServer::routed(route_of);
    let cases = [
        json!({"id": "scripted", "input": "Hi", "simulator": {"use": "script", "script": [{"say": "x"}], "model": "m"},
               "checkpoints": [cp("c", contains("x"))]}),
        json!({"id": "agent-judge", "input": "Hi",
               "assert": {"type": "agent", "use": "agents:critic", "options": {"metadata": {"criteria": "c"}}, "temperature": 0.5}}),
        json!({"id": "tokens", "input": "Hi", "assert": {"type": "llm_judge", "prompt": "p", "max_tokens": 0}}),
        json!({"id": "schema", "input": "Hi", "assert": {"type": "llm_judge", "prompt": "p", "json_schema": {"type": "objekt"}}}),
        json!({"id": "undefined", "input": "Hi", "assert": {"type": "llm_judge", "prompt": "p", "llm": "nope"}}),
    ];
    let s = judge_project("model-settings-bad", &server, "", &cases);
    let r = agentest(s.path()).run();
    r.expect(1)
        .expect_error(
            "scripted",
            &[
                "simulator.model",
                "the script plays this role",
                "remove `model`",
            ],
        )
        .expect_error(
            "agent-judge",
            &["temperature", "the judge `agents:critic` plays this role"],
        )
        .expect_error(
            "tokens",
            &[
                "max_tokens",
                "a whole number of tokens, at least 1, found 0",
            ],
        )
        .expect_error(
            "schema",
            &["json_schema", "not a valid JSON Schema", "objekt"],
        )
        .expect_error(
            "undefined",
            &["model endpoint `nope` is not defined", "[llms.\"nope\"]"],
        );
    assert!(server.bodies("judge").is_empty(), "nothing was asked");
}

/// `structured_output` chooses the `response_format` the built-in roles send; an
/// assertion's `json_schema` is sent in it and enforced on the verdict.
fn structured_output_sends_the_answer_schema_and_the_verdict_must_follow_it() {
    let server = ChatServer::routed(route_of);
    let eliza = json!({"type": "object",
        "properties": {"judgment": {"type": "string", "enum": ["yes", "no"]}},
        "required": ["judgment"]});
    server.answer(
        "judge",
        &[
            // json_schema: follows the assertion's schema.
            json!({"passed": true, "reason": "greets", "judgment": "yes"}).to_string(),
            // json_object_schema: twice not following it.
            json!({"passed": true, "reason": "greets", "judgment": "perhaps"}).to_string(),
            json!({"passed": true, "reason": "greets"}).to_string(),
            // off
            json!({"passed": false, "reason": "cold", "judgment": "no"}).to_string(),
        ],
    );
    let url = server.url();
    let extra = format!(
        "[llms.schema]\nbase_url = \"{url}\"\nmodel = \"m\"\nstructured_output = \"json_schema\"\n\
         [llms.llamacpp]\nbase_url = \"{url}\"\nmodel = \"m\"\nstructured_output = \"json_object_schema\"\n\
         [llms.plain]\nbase_url = \"{url}\"\nmodel = \"m\"\nstructured_output = \"off\"\n"
    );
    let judge = |id: &str, llm: &str| {
        json!({"id": id, "input": "Hi", "assert": {"type": "llm_judge", "prompt": "The reply greets",
               "llm": llm, "json_schema": eliza}})
    };
    let s = judge_project(
        "structured",
        &server,
        &format!("{extra}[run]\nconcurrency = 1\n"),
        &[
            judge("a-schema", "schema"),
            judge("b-llamacpp", "llamacpp"),
            judge("c-plain", "plain"),
        ],
    );
    let r = agentest(s.path())
        .env("AGENTEST_CASSETTES", "off")
        .arg("--parallel")
        .arg("1")
        .run();
    r.expect(1)
        .expect_status("a-schema", "passed")
        .expect_status("c-plain", "failed")
        .expect_status("b-llamacpp", "error")
        .expect_error(
            "b-llamacpp",
            &[
                "does not follow the assertion's `json_schema` (\"judgment\" is a required property)",
                "last answer: \"{\\\"passed\\\":true,\\\"reason\\\":\\\"greets\\\"}\"",
            ],
        );
    let bodies = server.bodies("judge");
    assert_eq!(bodies.len(), 4, "{bodies:?}");
    let rf = &bodies[0]["response_format"];
    assert_eq!(rf["type"], "json_schema", "{rf}");
    assert_eq!(rf["json_schema"]["name"], "verdict");
    let schema = &rf["json_schema"]["schema"];
    assert_eq!(
        schema["properties"]["passed"]["type"],
        json!(["boolean", "null"]),
        "{schema}"
    );
    assert_eq!(
        schema["properties"]["judgment"],
        eliza["properties"]["judgment"]
    );
    assert_eq!(schema["required"], json!(["passed", "reason", "judgment"]));
    assert!(
        bodies[0].get("tool_choice").is_none(),
        "no tools, no tool_choice"
    );
    assert_eq!(bodies[1]["response_format"]["type"], "json_object");
    assert_eq!(bodies[1]["response_format"]["schema"], *schema);
    assert!(bodies[3].get("response_format").is_none(), "{}", bodies[3]);
}

/// A record says what made its result: agentest's version, the config's fingerprint
/// (which changes with the config), the cassette mode, the seed, and the judge's
/// endpoint, model, temperature, structured-output form and instructions' fingerprint.
fn a_record_says_what_made_its_result() {
    let server = ChatServer::routed(route_of);
    let verdict = json!({"passed": true, "reason": "greets"}).to_string();
    server.answer("judge", &[verdict.clone(), verdict]);
    let case = json!({"id": "j", "input": "Hi", "assert": {"type": "llm_judge",
        "prompt": "The reply greets", "temperature": 0.3}});
    let s = judge_project("provenance", &server, "", &[case]);
    let run = || {
        agentest(s.path())
            .env("AGENTEST_CASSETTES", "off")
            .env("AGENTEST_SEED", "11")
            .run()
    };
    let first = run();
    first.expect(0).expect_status("j", "passed");
    let p = first.case("j")["provenance"].clone();
    assert_eq!(p["agentest"], env!("CARGO_PKG_VERSION"), "{p}");
    assert_eq!(p["cassettes"], "off", "{p}");
    assert_eq!(p["seed"], 11, "{p}");
    let hex16 = |v: &Value| {
        v.as_str()
            .is_some_and(|h| h.len() == 16 && h.chars().all(|c| c.is_ascii_hexdigit()))
    };
    assert!(hex16(&p["config_hash"]), "{p}");
    let models = p["models"].as_array().expect("models");
    assert_eq!(models.len(), 1, "{p}");
    let m = &models[0];
    assert_eq!(m["role"], "judge", "{m}");
    assert_eq!(m["endpoint"], server.url(), "{m}");
    assert_eq!(m["model"], "test-model", "{m}");
    assert_eq!(m["temperature"], 0.3, "{m}");
    assert_eq!(m["response_format"], "json_schema", "{m}");
    assert!(hex16(&m["prompt"]), "{m}");
    // Another config is another fingerprint; the judge's instructions are the same.
    let config = std::fs::read_to_string(s.join("agentest.toml")).unwrap();
    s.write("agentest.toml", &format!("{config}\n# changed\n"));
    let second = run();
    second.expect(0);
    let q = &second.case("j")["provenance"];
    assert!(hex16(&q["config_hash"]), "{q}");
    assert_ne!(q["config_hash"], p["config_hash"]);
    assert_eq!(q["models"][0]["prompt"], m["prompt"]);
}

/// The form of structured output a chat request asks for, as the route of a server
/// that takes some forms and refuses others.
fn route_form(body: &Value) -> String {
    let rf = &body["response_format"];
    match (rf["type"].as_str(), rf.get("schema").is_some()) {
        (Some("json_schema"), _) => "json_schema",
        (Some("json_object"), true) => "json_object_schema",
        (Some("json_object"), false) => "json_object",
        _ => "off",
    }
    .to_string()
}

/// `structured_output = "auto"` (the default) tries the forms strictest first: a server
/// that refuses `json_schema` with a 500 about the `response_format` (as
/// llama-cpp-python does) and `json_object` with a schema with a 400 is asked in plain
/// `json_object`. Four cases starting together try the forms once between them, and
/// the form is said once on stderr with why the stricter ones were not used.
fn auto_structured_output_settles_on_the_form_the_server_takes_once() {
    let server = ChatServer::routed(route_form);
    let refusal = json!({"error": {"message": "1 validation error for CreateChatCompletionRequest: response_format.type: Input should be 'text' or 'json_object'"}});
    server.script("json_schema", vec![chat::status(500, refusal)]);
    server.script(
        "json_object_schema",
        vec![chat::status(
            400,
            json!({"error": {"message": "response_format.schema is not supported"}}),
        )],
    );
    let verdict = json!({"passed": true, "reason": "greets"}).to_string();
    server.answer("json_object", &vec![verdict; 4]);
    let case = |id: &str| json!({"id": id, "input": "Hi", "assert": {"type": "llm_judge", "prompt": "The reply greets"}});
    let s = judge_project(
        "rf-auto",
        &server,
        "",
        &[case("a"), case("b"), case("c"), case("d")],
    );
    let r = agentest(s.path())
        .env("AGENTEST_CASSETTES", "off")
        .arg("--parallel")
        .arg("4")
        .run();
    r.expect(0);
    for id in ["a", "b", "c", "d"] {
        r.expect_status(id, "passed");
    }
    let count = |route: &str| server.requests_for(route).len();
    assert_eq!(
        (
            count("json_schema"),
            count("json_object_schema"),
            count("json_object"),
            count("off")
        ),
        (1, 1, 4, 0)
    );
    let said: Vec<&str> = r
        .stderr
        .lines()
        .filter(|l| l.contains("takes structured output as"))
        .collect();
    assert_eq!(said.len(), 1, "{}", r.stderr);
    for part in [
        "[llm] (model `test-model`) takes structured output as `json_object`",
        "`json_schema` refused: ",
        "Input should be 'text' or 'json_object'",
        "`json_object_schema` refused: ",
        "response_format.schema is not supported",
    ] {
        assert!(said[0].contains(part), "{part:?} in {}", said[0]);
    }
}

/// Under `auto`, the form an endpoint took is kept in the run store: the next run
/// starts with it instead of trying the stricter forms again, and says where it came
/// from; with the store off, the forms are tried again.
fn auto_structured_output_starts_where_the_run_store_left_it() {
    let server = ChatServer::routed(route_form);
    let refusal = || {
        chat::status(
            400,
            json!({"error": {"message": "response_format json_schema is not supported"}}),
        )
    };
    server.script("json_schema", vec![refusal(), refusal()]);
    let verdict = json!({"passed": true, "reason": "greets"}).to_string();
    server.answer("json_object_schema", &vec![verdict; 3]);
    let case = json!({"id": "j", "input": "Hi", "assert": {"type": "llm_judge", "prompt": "The reply greets"}});
    let s = judge_project("rf-store", &server, "", &[case]);
    let store = s.join("runs.db");
    let run = |store: &str| {
        agentest(s.path())
            .env("AGENTEST_CASSETTES", "off")
            .env("AGENTEST_STORE", store)
            .run()
    };
    let count = |route: &str| server.requests_for(route).len();
    let first = run(store.to_str().unwrap());
    first.expect(0).expect_status("j", "passed");
    first.expect_stderr("takes structured output as `json_object_schema`; `json_schema` refused");
    assert_eq!((count("json_schema"), count("json_object_schema")), (1, 1));
    let second = run(store.to_str().unwrap());
    second.expect(0).expect_status("j", "passed");
    second.expect_stderr(
        "takes structured output as `json_object_schema` (as the run store had it from an earlier run)",
    );
    assert_eq!(
        (count("json_schema"), count("json_object_schema")),
        (1, 2),
        "the second run started with the form the store kept"
    );
    run("off").expect(0).expect_status("j", "passed");
    assert_eq!((count("json_schema"), count("json_object_schema")), (2, 3));
}

/// Under `auto`, a cassette replays in the form it was recorded in: one recorded when
/// `json_object` was set (the old default) replays without a call, as does one
/// recorded under `auto` with the server's refusal of `json_schema` in it, in mode
/// `strict` (every entry used); a replay neither learns nor says a form. (The run store is off: what it would remember of the
/// endpoint is another test's.)
fn auto_structured_output_replays_a_cassette_in_its_recorded_form() {
    let server = ChatServer::routed(route_form);
    let verdict = json!({"passed": true, "reason": "greets"}).to_string();
    server.answer("json_object", std::slice::from_ref(&verdict));
    let case = json!({"id": "j", "input": "Hi", "assert": {"type": "llm_judge", "prompt": "The reply greets"}});
    let s = judge_project("rf-cassette", &server, "", &[case]);
    let config = std::fs::read_to_string(s.join("agentest.toml")).unwrap();
    let fixed = config.replace(
        "max_retries = 0\n",
        "max_retries = 0\nstructured_output = \"json_object\"\n",
    );
    assert_ne!(fixed, config);
    s.write("agentest.toml", &fixed);
    agentest(s.path())
        .env("AGENTEST_STORE", "off")
        .env("AGENTEST_CASSETTES", "record")
        .run()
        .expect(0)
        .expect_status("j", "passed");
    assert_eq!(server.count(), 1);
    s.write("agentest.toml", &config);
    agentest(s.path())
        .env("AGENTEST_STORE", "off")
        .env("AGENTEST_CASSETTES", "replay")
        .run()
        .expect(0)
        .expect_status("j", "passed");
    assert_eq!(server.count(), 1, "replayed without a call");

    // Recorded under `auto`: the refusal of `json_schema`, then the answer.
    server.script(
        "json_schema",
        vec![chat::status(
            400,
            json!({"error": {"message": "response_format json_schema is not supported"}}),
        )],
    );
    server.answer("json_object_schema", &[verdict]);
    agentest(s.path())
        .env("AGENTEST_STORE", "off")
        .env("AGENTEST_CASSETTES", "record")
        .run()
        .expect(0)
        .expect_status("j", "passed");
    assert_eq!(server.count(), 3);
    let r = agentest(s.path())
        .env("AGENTEST_STORE", "off")
        .env("AGENTEST_CASSETTES", "strict")
        .run();
    r.expect(0).expect_status("j", "passed");
    assert_eq!(server.count(), 3, "replayed without a call");
    // A replay teaches nothing about the endpoint, and says nothing of it.
    assert!(
        !r.stderr.contains("takes structured output as"),
        "{}",
        r.stderr
    );
}

/// A server that rejects the `response_format` it was sent gets a refusal that says
/// which setting to change.
fn a_rejected_response_format_names_the_setting() {
    let server = ChatServer::routed(route_of);
    server.script(
        "judge",
        vec![chat::status(
            400,
            json!({"error": {"message": "'response_format.type' must be 'json_schema'"}}),
        )],
    );
    let case = json!({"id": "j", "input": "Hi", "assert": {"type": "llm_judge", "prompt": "The reply greets"}});
    let url = server.url();
    let extra = format!(
        "[llms.fixed]\nbase_url = \"{url}\"\nmodel = \"m\"\nmax_retries = 0\nstructured_output = \"json_object\"\n\
         [run]\njudge_llm = \"fixed\"\n"
    );
    let s = judge_project("rf-rejected", &server, &extra, &[case]);
    agentest(s.path())
        .env("AGENTEST_CASSETTES", "off")
        .run()
        .expect(1)
        .expect_status("j", "error")
        .expect_error(
            "j",
            &[
                "must be 'json_schema'",
                "set `structured_output` in [llms.\"fixed\"]",
                "\"auto\" to find the form it takes, \"off\" to send none",
            ],
        );
}

fn the_built_in_judge_passes_a_reply_that_meets_the_criteria() {
    let server = ChatServer::routed(route_of);
    server.answer(
        "judge",
        &[
            json!({"passed": true, "score": 0.9, "reason": "It greets"}).to_string(),
            json!({"passed": true, "reason": "It offers help"}).to_string(),
        ],
    );
    let s = judge_project(
        "judge-pass",
        &server,
        "",
        &[json!({"id": "j", "input": "Hi", "assertions": [
            {"type": "agent", "options": {"metadata": {"criteria": "The reply greets the user", "tone": "friendly"}}},
            {"type": "llm_judge", "prompt": "The reply offers help", "expected": "an offer of help",
             "capabilities": ["greeting"], "temperature": 0.3}
        ]})],
    );
    let r = agentest(s.path()).run();
    r.expect(0).expect_status("j", "passed");
    let c = r.case("j");
    let labels: Vec<(&str, bool)> = c["turns"][0]["assertions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| (a["label"].as_str().unwrap(), a["passed"].as_bool().unwrap()))
        .collect();
    assert_eq!(
        labels,
        vec![
            ("agent \"The reply greets the user\"", true),
            ("llm_judge \"The reply offers help\"", true)
        ]
    );
    assert_eq!(
        c["usage"]["judge"],
        json!({"prompt_tokens": 20, "completion_tokens": 10})
    );
    assert_eq!(c["model_calls"], 2);

    let reqs = server.bodies("judge");
    assert_eq!(reqs.len(), 2);
    let p = user_of(&reqs[0]);
    for part in [
        "Criteria: The reply greets the user\n",
        "tone: friendly\n",
        "user: Hi\n",
        "The reply to judge:\nHello! How can I help you today?",
    ] {
        assert!(p.contains(part), "{part:?} in {p}");
    }
    // `auto`: the strictest form, which this server takes.
    assert_eq!(reqs[0]["response_format"]["type"], "json_schema");
    assert_eq!(reqs[0]["response_format"]["json_schema"]["name"], "verdict");
    let p = user_of(&reqs[1]);
    for part in [
        "Criteria: The reply offers help\n",
        "Expected: an offer of help\n",
        "Capabilities to show: greeting\n",
    ] {
        assert!(p.contains(part), "{part:?} in {p}");
    }
    assert_eq!(reqs[1]["temperature"], 0.3);
}

fn a_failing_verdict_fails_the_case_with_its_reason_and_suggestions() {
    let server = ChatServer::routed(route_of);
    server.answer(
        "judge",
        &[
            json!({"passed": false, "score": 0.2, "reason": "It never mentions expenses",
                 "suggestions": ["Mention expenses", "Offer the policy"]})
            .to_string(),
        ],
    );
    let s = judge_project(
        "judge-fail",
        &server,
        "",
        &[
            json!({"id": "j", "input": "Hi", "assert": {"type": "llm_judge", "prompt": "The reply talks about expenses"}}),
        ],
    );
    let r = agentest(s.path()).run();
    r.expect(1).expect_status("j", "failed").expect_error(
        "j",
        &[
            "turn 1: llm_judge \"The reply talks about expenses\": judge: It never mentions expenses (score 0.2); suggestions: Mention expenses; Offer the policy",
        ],
    );
    r.expect_stdout("It never mentions expenses")
        .expect_stdout("suggestions: Mention expenses; Offer the policy");
}

fn an_invalid_verdict_gets_one_repair_attempt() {
    let server = ChatServer::routed(route_of);
    server.answer(
        "judge",
        &[
            "Looks great to me!".to_string(),
            json!({"passed": true, "reason": "fine"}).to_string(),
        ],
    );
    let s = judge_project(
        "judge-repair",
        &server,
        "",
        &[json!({"id": "j", "input": "Hi", "assert": {"type": "llm_judge", "prompt": "greets"}})],
    );
    let r = agentest(s.path()).run();
    r.expect(0).expect_status("j", "passed");
    let reqs = server.bodies("judge");
    assert_eq!(reqs.len(), 2);
    let repair = reqs[1]["messages"].as_array().unwrap();
    assert_eq!(repair.len(), 4);
    assert_eq!(repair[2]["content"], "Looks great to me!");
    assert!(repair[3]["content"]
        .as_str()
        .unwrap()
        .contains("That was not a verdict"));
    assert_eq!(r.case("j")["model_calls"], 2);
}

fn a_judge_that_answers_badly_twice_makes_the_case_an_error() {
    let server = ChatServer::routed(route_of);
    server.answer(
        "judge",
        &[
            "maybe?".to_string(),
            json!({"passed": "yes", "reason": "not a boolean"}).to_string(),
        ],
    );
    let s = judge_project(
        "judge-broken",
        &server,
        "",
        &[
            json!({"id": "j", "input": "Hi", "assert": {"type": "agent", "options": {"metadata": {"criteria": "greets"}}}}),
        ],
    );
    let r = agentest(s.path()).run();
    r.expect(1).expect_status("j", "error").expect_error(
        "j",
        &[
            "turn 1: ",
            "judge answered twice without a verdict {passed, reason}",
        ],
    );
    assert_eq!(server.bodies("judge").len(), 2);
}

fn a_judge_agent_speaks_the_validator_contract() {
    let s = project(
        "judge-agent",
        &bot("agents.critic", "critic"),
        json!([{"reply": {"content": "{input} to you"}}]),
        &[
            json!({"id": "yes", "input": "Hello", "assert": {"type": "agent", "use": "agents:critic",
                   "options": {"metadata": {"criteria": "The reply greets", "tone": "warm"}}}}),
            json!({"id": "no", "input": "Bye", "assert": {"type": "llm_judge", "use": "agents:critic",
                   "prompt": "The reply greets"}}),
            json!({"id": "garbled", "input": "Garbage", "assert": {"type": "agent", "use": "agents:critic",
                   "options": {"metadata": {"criteria": "The reply greets"}}}}),
        ],
    );
    s.rules(
        "critic",
        json!([
            {"when": "^Hello", "reply": {"content": "{\"passed\": true, \"reason\": \"greets\"}"}},
            {"when": "^Bye", "reply": {"content": "ignored", "data": {"passed": false, "reason": "no greeting", "suggestions": ["say hello"]}}},
            {"reply": {"content": "I think it is fine"}}
        ]),
    );
    let r = agentest(s.path()).arg("--parallel").arg("1").run();
    r.expect(1)
        .expect_status("yes", "passed")
        .expect_status("no", "failed")
        .expect_error("no", &["critic: no greeting; suggestions: say hello"])
        .expect_status("garbled", "error")
        .expect_error(
            "garbled",
            &["judge `critic` answered twice without a verdict {passed, reason} (the answer is not JSON); last answer: \"I think it is fine\""],
        );
    // A pass keeps the judge's reason, so that a false pass can be audited.
    let judged = &r.case("yes")["turns"][0]["assertions"][0];
    assert_eq!(judged["passed"], true, "{judged}");
    assert_eq!(
        judged["judgment"],
        json!({"reason": "greets", "judge": "agents:critic"}),
        "{judged}"
    );
    let failed = &r.case("no")["turns"][0]["assertions"][0];
    assert_eq!(
        failed["judgment"],
        json!({"reason": "no greeting", "suggestions": ["say hello"], "judge": "agents:critic"})
    );
    let log = s.log("critic");
    let yes: Vec<&Value> = log
        .iter()
        .filter(|q| q["input"] == "Hello to you")
        .collect();
    assert_eq!(yes.len(), 1, "{log:?}");
    let m = &yes[0]["metadata"];
    assert_eq!(m["test_mode"], "validator");
    assert_eq!(m["criteria"], "The reply greets");
    assert_eq!(m["output"], "Hello to you");
    assert_eq!(m["input"], "Hello");
    assert_eq!(m["tone"], "warm");
    assert_eq!(
        m["conversation"],
        json!([{"role": "user", "content": "Hello"}, {"role": "assistant", "content": "Hello to you"}])
    );
    // The repair attempt tells the judge agent what was wrong.
    let garbled: Vec<&Value> = log
        .iter()
        .filter(|q| q["input"] == "Garbage to you")
        .collect();
    assert_eq!(garbled.len(), 2, "{log:?}");
    assert!(garbled[0]["metadata"].get("repair").is_none());
    assert!(garbled[1]["metadata"]["repair"].is_string());
    // `-v` shows a passing judge's reason too.
    let verbose = agentest(s.path()).arg("-v").arg("--run").arg("yes").run();
    assert!(
        verbose.stdout.contains("      greets"),
        "{}",
        verbose.stdout
    );
}

fn a_judge_works_as_a_checkpoint_of_a_dynamic_case() {
    let server = ChatServer::routed(route_of);
    server.answer(
        "judge",
        &[
            json!({"passed": false, "reason": "not yet polite"}).to_string(),
            json!({"passed": true, "reason": "polite now"}).to_string(),
        ],
    );
    let s = project(
        "judge-cp",
        &llm(&server.url()),
        echo(),
        &[dynamic(
            "polite",
            "start",
            script(json!([{"say": "please"}])),
            json!([{"id": "polite", "description": "the assistant is polite",
                    "assert": {"type": "agent", "options": {"metadata": {"criteria": "The assistant is polite"}}}}]),
        )],
    );
    let r = agentest(s.path()).run();
    r.expect(0)
        .expect_status("polite", "passed")
        .expect_termination("polite", "all_checkpoints_reached");
    let k = r.checkpoint("polite", "polite");
    assert_eq!(k["reached_at_turn"], 2);
    assert_eq!(k["message"], "agent \"The assistant is polite\"");
    let c = r.case("polite");
    assert_eq!(
        c["turns"][0]["checkpoints"][0]["message"],
        "judge: not yet polite"
    );
    assert_eq!(
        c["usage"]["judge"],
        json!({"prompt_tokens": 20, "completion_tokens": 10})
    );
    let reqs = server.bodies("judge");
    assert_eq!(reqs.len(), 2);
    assert!(user_of(&reqs[1]).contains("The reply to judge:\nYou said: please. Anything else?"));
}

fn judges_work_in_static_turns_and_final_assertions() {
    let server = ChatServer::routed(route_of);
    server.answer(
        "judge",
        &[
            json!({"passed": true, "reason": "turn two is fine"}).to_string(),
            json!({"passed": false, "reason": "the ending is abrupt"}).to_string(),
        ],
    );
    let s = project(
        "judge-static",
        &llm(&server.url()),
        echo(),
        &[json!({"id": "st", "turns": [
            {"input": "first"},
            {"input": "second", "assert": {"type": "llm_judge", "prompt": "turn two is fine"}}
        ], "final_assertions": [{"type": "agent", "options": {"metadata": {"criteria": "the ending is polite"}}}]})],
    );
    let r = agentest(s.path()).run();
    r.expect(1).expect_status("st", "failed").expect_error(
        "st",
        &["final assertions: agent \"the ending is polite\": judge: the ending is abrupt"],
    );
    let c = r.case("st");
    assert_eq!(c["turns"][1]["assertions"][0]["passed"], true);
    assert_eq!(c["final_assertions"][0]["passed"], false);
    let reqs = server.bodies("judge");
    assert_eq!(reqs.len(), 2);
    let p = user_of(&reqs[0]);
    assert!(
        p.contains("user: first\nassistant: You said: first. Anything else?\nuser: second\nassistant: You said: second. Anything else?\n"),
        "the judge sees the conversation: {p}"
    );
}

fn a_judge_without_key_or_recording_is_skipped_outside_ci_and_fails_on_ci() {
    // The [llm] points at a closed port: nothing may be sent without the key anyway.
    let s = project(
        "judge-nokey",
        &llm("http://127.0.0.1:9/v1"),
        json!([{"reply": {"content": "Hello"}}]),
        &[json!({"id": "j", "input": "Hi", "assert": {"type": "llm_judge", "prompt": "greets"}})],
    );
    let r = agentest(s.path()).without_key().run();
    r.expect(0)
        .expect_status("j", "skipped")
        .expect_error("j", &["judge: ", KEY_VAR]);
    let r = agentest(s.path()).without_key().env("CI", "true").run();
    r.expect(1)
        .expect_status("j", "failed")
        .expect_error("j", &[KEY_VAR]);
}

/// The Rust API: a judge for users' own `#[test]`s, recorded in a cassette and replayed.
fn the_rust_judge_api_judges_and_replays_from_its_cassette() {
    let server = ChatServer::routed(route_of);
    server.answer(
        "judge",
        &[
            json!({"passed": true, "score": 1.0, "reason": "greets", "suggestions": ["smile"]})
                .to_string(),
        ],
    );
    let s = scratch("judge-api");
    // No api_key_env: a local model needs no key.
    let url = server.url();
    let conf = |mode: &str| {
        format!(
            "[llm]\nbase_url = \"{url}\"\nmodel = \"test-model\"\nmax_retries = 0\n[run]\ncassettes = \"{mode}\"\n"
        )
    };
    s.config(&conf("record"));
    let tape = s.join("cassettes/greeting.jsonl");
    let judge = agentest::judge::Judge::from_config(s.path(), &tape).expect("a judge");
    let verdict = judge
        .judge("Hello! How can I help?", "The reply greets the user")
        .expect("a verdict");
    assert_eq!(verdict.passed, Some(true));
    assert_eq!(verdict.reason, "greets");
    assert_eq!(verdict.score, Some(1.0));
    assert_eq!(verdict.suggestions, vec!["smile".to_string()]);
    let reqs = server.bodies("judge");
    assert_eq!(reqs.len(), 1);
    assert!(user_of(&reqs[0]).contains("Criteria: The reply greets the user"));
    assert!(user_of(&reqs[0]).contains("The reply to judge:\nHello! How can I help?"));
    let recorded = std::fs::read_to_string(&tape).expect("the cassette");
    assert_eq!(recorded.lines().count(), 1);
    assert!(recorded.contains("\"role\":\"judge\""), "{recorded}");

    // Offline, in replay mode: the same verdict from the cassette.
    drop(server);
    s.config(&conf("replay"));
    let judge = agentest::judge::Judge::from_config(s.path(), &tape).expect("a judge");
    let again = judge
        .judge("Hello! How can I help?", "The reply greets the user")
        .expect("a replayed verdict");
    assert_eq!(again, verdict);
    // Anything not recorded cannot be judged offline, and says so.
    match judge.judge("Hello! How can I help?", "Something else") {
        Err(agentest::judge::JudgeError::Broken(m)) => {
            assert!(m.contains("no recording"), "{m}")
        }
        other => panic!("expected a broken judge, got {other:?}"),
    }
}

/// The blocking `Judge::judge` works inside an async runtime (as in `#[tokio::test]`),
/// where blocking on another runtime would panic, and `judge_async` awaits the same.
fn the_rust_judge_works_inside_an_async_runtime() {
    let server = ChatServer::routed(route_of);
    let verdict = json!({"passed": true, "reason": "greets"}).to_string();
    server.answer("judge", &[verdict.clone(), verdict]);
    let s = scratch("judge-in-runtime");
    let url = server.url();
    s.config(&format!(
        "[llm]\nbase_url = \"{url}\"\nmodel = \"test-model\"\nmax_retries = 0\n[run]\ncassettes = \"off\"\n"
    ));
    let judge =
        agentest::judge::Judge::from_config(s.path(), s.join("unused.jsonl")).expect("a judge");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let (blocking, awaited) = rt.block_on(async {
        let blocking = judge.judge("Hello!", "The reply greets");
        let awaited = judge.judge_async("Hello!", "The reply greets").await;
        (blocking, awaited)
    });
    assert_eq!(
        blocking.expect("a verdict from the blocking call").passed,
        Some(true)
    );
    assert_eq!(
        awaited.expect("a verdict from the async call").reason,
        "greets"
    );
    assert_eq!(server.bodies("judge").len(), 2);
}

/// An `openai` agent can judge: the judge's instructions and the question reach the
/// model as messages after the agent's own system prompt (an `openai` agent drops the
/// request's `metadata`, where the validator contract travels for other agents).
fn a_judge_may_be_an_openai_agent_that_reads_its_instructions() {
    let server = ChatServer::routed(route_of);
    server.answer(
        "other",
        &[json!({"passed": false, "reason": "it never says hello"}).to_string()],
    );
    let extra = format!(
        "{}[agents.critic]\ntype = \"openai\"\nsystem = \"You review replies.\"\n",
        llm(&server.url())
    );
    let s = expense_project(
        "openai-judge",
        &extra,
        &[json!({"id": "j", "input": "Hi, I need to file an expense",
                 "assert": {"type": "agent", "use": "agents:critic",
                            "options": {"metadata": {"criteria": "The reply says hello"}}}})],
    );
    let r = agentest(s.path()).run();
    r.expect(1)
        .expect_status("j", "failed")
        .expect_error("j", &["critic: it never says hello"]);
    let reqs = server.bodies("other");
    assert_eq!(reqs.len(), 1, "{reqs:?}");
    let messages = reqs[0]["messages"].as_array().unwrap();
    assert_eq!(messages[0]["content"], "You review replies.");
    assert_eq!(messages[1]["role"], "system");
    let instructions = messages[1]["content"].as_str().unwrap();
    assert!(
        instructions.starts_with("You are a strict, fair evaluator"),
        "{instructions}"
    );
    let asked = messages.last().unwrap();
    assert_eq!(asked["role"], "user");
    let asked = asked["content"].as_str().unwrap();
    assert!(asked.contains("Criteria: The reply says hello"), "{asked}");
    assert!(
        asked.contains(&format!("The reply to judge:\n{ASKED}")),
        "{asked}"
    );
}

// ---------------------------------------------------------------------------------------
// 6. Interactive input
// ---------------------------------------------------------------------------------------

/// A static case whose one scripted turn leaves the expense agent asking for the type.
fn interactive_case() -> Value {
    json!({"id": "human", "interactive": {"enabled": true},
           "turns": [{"input": "Hi, I need to file an expense"}],
           "final_assertions": [contains("submitted")]})
}

const ASKED: &str = "Sure. What type of expense would you like to submit, and what is the amount?";

fn piped_lines_answer_with_interactive_until_the_agent_completes() {
    let s = expense_project("piped", "", &[interactive_case()]);
    let r = agentest(s.path())
        .arg("--interactive")
        .stdin("Travel, $500\nyes\nnever read\n")
        .run();
    r.expect(0).expect_status("human", "passed");
    assert_eq!(
        r.inputs("human"),
        pairs(&[
            ("Hi, I need to file an expense", "static"),
            ("Travel, $500", "human"),
            ("yes", "human"),
        ])
    );
    r.expect_stderr(&format!("[human] the agent asks: {ASKED}"))
        .expect_stderr("hint: e.g. travel, $350")
        .expect_stderr("your reply (empty line to stop):")
        .expect_stdout("Turn 2: [Human] \"Travel, $500\"");
}

fn an_empty_line_stops_asking() {
    let s = expense_project("piped-stop", "", &[interactive_case()]);
    let r = agentest(s.path())
        .arg("--interactive")
        .stdin("Travel, $500\n\nyes\n")
        .run();
    // The person stopped before confirming: the final assertion sees the draft.
    r.expect(1)
        .expect_status("human", "failed")
        .expect_error("human", &["final assertions: contains \"submitted\""]);
    assert_eq!(r.case("human")["total_turns"], 2);
}

fn without_a_terminal_an_interactive_case_is_skipped_with_the_reason() {
    let s = expense_project("no-tty", "", &[interactive_case()]);
    // stdin is /dev/null, then a pipe: neither is a terminal.
    for run in [
        agentest(s.path()).run(),
        agentest(s.path()).stdin("Travel, $500\n").run(),
    ] {
        run.expect(0).expect_status("human", "skipped").expect_error(
            "human",
            &[
                &format!("the agent awaits input after turn 1 (it asked: \"{ASKED}\") and no scripted turn is left, but there is no terminal to ask"),
                "run with --interactive",
                "\nhint: add more turns, run with --interactive, or use a simulator",
            ],
        );
        run.expect_stdout("SKIPPED")
            .expect_stdout("Hint: add more turns, run with --interactive, or use a simulator");
        assert_eq!(run.case("human")["total_turns"], 1);
    }
}

fn on_missing_input_fail_makes_it_fail() {
    let s = expense_project("missing-fail", "", &[interactive_case()]);
    let r = agentest(s.path())
        .arg("--on-missing-input")
        .arg("fail")
        .run();
    r.expect(1)
        .expect_status("human", "failed")
        .expect_error("human", &["there is no terminal to ask"]);
}

fn skip_interactive_and_ci_skip_it_too() -> Needs {
    let s = expense_project("skip-ci", "", &[interactive_case()]);
    let r = agentest(s.path()).arg("--skip-interactive").run();
    r.expect(0)
        .expect_status("human", "skipped")
        .expect_error("human", &["interactive input is off (--skip-interactive)"]);
    let r = agentest(s.path()).env("CI", "true").run();
    r.expect(0)
        .expect_status("human", "skipped")
        .expect_error("human", &["no person can answer on CI"]);
    // Even on a terminal, --skip-interactive asks nobody.
    crate::common::python_pty()?;
    let r = agentest(s.path())
        .arg("--skip-interactive")
        .pty(&["Travel, $500"])
        .run();
    r.expect(0)
        .expect_status("human", "skipped")
        .expect_error("human", &["--skip-interactive"]);
    Ok(())
}

/// `--interactive` on CI asks nobody, even with a stdin that stays open and silent: it
/// is ignored, with a line saying so, and the case needing a person is skipped at once.
fn interactive_on_ci_is_ignored_and_said() {
    use std::process::{Command, Stdio};
    let s = expense_project("interactive-ci", "", &[interactive_case()]);
    let started = std::time::Instant::now();
    let mut child = Command::new(crate::common::BIN)
        .current_dir(s.path())
        .args([
            "test",
            "-i",
            ".",
            "--interactive",
            "-o",
            "report.jsonl",
            "--color",
            "never",
        ])
        .env("CI", "true")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start agentest");
    // Held open and silent until agentest is done.
    let stdin = child.stdin.take();
    let deadline = started + Duration::from_secs(20);
    while child.try_wait().expect("wait").is_none() {
        assert!(
            std::time::Instant::now() < deadline,
            "agentest waited on stdin"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    drop(stdin);
    let out = child.wait_with_output().expect("output");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        started.elapsed() < Duration::from_secs(8),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(
        stderr.matches("agentest: --interactive is ignored on CI (the CI variable is set): no person is asked").count(),
        1,
        "{stderr}"
    );
    let report = s.read("report.jsonl");
    assert!(
        report.contains("\"status\":\"skipped\"") && report.contains("no person can answer on CI"),
        "{report}"
    );
}

fn a_person_may_replace_the_simulator_for_a_turn() {
    let s = project(
        "dyn-human",
        "",
        echo(),
        &[dynamic(
            "dyn",
            "start",
            script(json!([{"say": "from-sim-1"}, {"say": "from-sim-2"}])),
            json!([
                cp("h", contains("You said: from-human")),
                cp("s", contains("You said: from-sim-1"))
            ]),
        )],
    );
    // Turn 2: the person; turn 3: an empty line lets the simulator answer.
    let r = agentest(s.path())
        .arg("--interactive")
        .stdin("from-human\n\n")
        .run();
    r.expect(0)
        .expect_status("dyn", "passed")
        .expect_termination("dyn", "all_checkpoints_reached");
    assert_eq!(
        r.inputs("dyn"),
        pairs(&[
            ("start", "initial"),
            ("from-human", "human"),
            ("from-sim-1", "simulated"),
        ])
    );
    r.expect_stderr("[dyn] the agent asks: You said: start. Anything else?")
        .expect_stderr("your reply (empty line: let the simulator answer):")
        .expect_stdout("Turn 2: [Human] \"from-human\"");
}

fn a_real_terminal_is_asked_without_interactive() -> Needs {
    crate::common::python_pty()?;
    let s = expense_project("pty", "", &[interactive_case()]);
    let r = agentest(s.path()).pty(&["Travel, $500", "yes"]).run();
    r.expect(0).expect_status("human", "passed");
    assert_eq!(
        r.inputs("human"),
        pairs(&[
            ("Hi, I need to file an expense", "static"),
            ("Travel, $500", "human"),
            ("yes", "human"),
        ])
    );
    r.expect_stderr(&format!("[human] the agent asks: {ASKED}"))
        .expect_stderr("hint: e.g. travel, $350");
    Ok(())
}

fn an_unanswered_question_times_out_as_the_case_says() -> Needs {
    crate::common::python_pty()?;
    let s = expense_project(
        "pty-silent",
        "",
        &[with(
            interactive_case(),
            json!({"interactive": {"enabled": true, "timeout": "1s"}}),
        )],
    );
    let r = agentest(s.path()).pty(&[]).run();
    r.expect(1)
        .expect_status("human", "error")
        .expect_error("human", &["turn 2: interactive input: no answer within 1s"]);
    assert!(r.took < Duration::from_secs(10), "{r:?}");
    Ok(())
}

fn an_answer_after_a_timed_out_question_goes_to_the_next_question() -> Needs {
    crate::common::python_pty()?;
    let s = expense_project(
        "pty-after-timeout",
        "",
        &[
            with(
                interactive_case(),
                json!({"id": "a-first", "interactive": {"enabled": true, "timeout": "1s"},
                       "final_assertions": []}),
            ),
            with(
                interactive_case(),
                json!({"id": "b-second", "interactive": {"enabled": true, "timeout": "5s"},
                       "final_assertions": [contains("drafted")]}),
            ),
        ],
    );
    // Nobody answers the first question; the answer comes once the second is asked, and
    // an empty line ends the conversation when the agent asks again.
    let r = agentest(s.path())
        .arg("--parallel")
        .arg("1")
        .pty_script(&[(2, "Travel, $500"), (3, "")])
        .run();
    r.expect_status("a-first", "error")
        .expect_error("a-first", &["no answer within 1s"]);
    r.expect_status("b-second", "passed");
    assert_eq!(
        r.inputs("b-second")[1],
        ("Travel, $500".to_string(), "human".to_string())
    );
    Ok(())
}

fn a_dynamic_prompt_shows_the_agents_input_hint() {
    let s = expense_project(
        "dyn-hint",
        "",
        &[dynamic(
            "dyn",
            "Hi, I need to file an expense",
            script(json!([{"say": "yes"}])),
            json!([cp(
                "create",
                json!({"type": "tool_called", "name": "create_expense"})
            )]),
        )],
    );
    let r = agentest(s.path())
        .arg("--interactive")
        .stdin("Travel, $500\n")
        .run();
    r.expect(0).expect_status("dyn", "passed");
    r.expect_stderr(&format!("[dyn] the agent asks: {ASKED}"))
        .expect_stderr("hint: e.g. travel, $350");
}

pub fn tests() -> Vec<libtest_mimic::Trial> {
    let module = crate::module_of(module_path!());
    let mut trials: Vec<libtest_mimic::Trial> = endings()
        .into_iter()
        .map(|row| {
            crate::trial(format!("{module}::{}", row.name), move || {
                row.check();
                Ok(libtest_mimic::Completion::Completed)
            })
        })
        .collect();
    trials.extend(crate::trials![
        the_built_in_judge_calls_the_endpoint_its_role_names,
        a_case_sets_the_model_settings_of_its_simulator_and_judges,
        model_settings_out_of_place_or_undefined_are_errors,
        structured_output_sends_the_answer_schema_and_the_verdict_must_follow_it,
        a_rejected_response_format_names_the_setting,
        auto_structured_output_settles_on_the_form_the_server_takes_once,
        auto_structured_output_replays_a_cassette_in_its_recorded_form,
        auto_structured_output_starts_where_the_run_store_left_it,
        a_record_says_what_made_its_result,
        simulator_garbage_never_reaches_the_agent,
        the_rust_judge_works_inside_an_async_runtime,
        a_judge_may_be_an_openai_agent_that_reads_its_instructions,
        every_checkpoint_reached_passes_with_the_scripted_simulator,
        an_agent_that_completes_with_checkpoints_missing_fails_naming_them,
        after_holds_a_checkpoint_back_until_its_predecessor_is_reached,
        a_same_turn_chain_counts_even_when_the_dependent_checkpoint_comes_first,
        optional_checkpoints_may_be_missed_and_unmatched_forbidden_ones_do_not_count,
        a_forbidden_checkpoint_fails_the_case_on_the_turn_it_matches,
        the_scripted_simulator_uses_each_rule_once_in_order,
        a_dynamic_case_without_input_starts_with_the_simulator,
        a_named_simulator_receives_the_simulator_input_and_answers_json_or_text,
        a_named_simulator_can_end_the_conversation_with_goal_achieved,
        a_named_simulator_answer_without_a_message_is_an_error,
        the_simulator_flag_picks_the_simulator_of_cases_that_name_none,
        the_model_simulator_plays_the_user_from_json_answers_and_replays_offline,
        show_checkpoints_lets_the_model_simulator_see_the_pending_ones,
        an_empty_simulator_message_is_retried_once_then_an_error,
        the_model_simulator_can_report_its_goal_achieved,
        a_named_simulator_may_be_an_openai_agent,
        an_openai_simulators_usage_is_reported_as_the_simulators,
        a_model_simulator_without_key_or_recording_is_skipped_outside_ci_and_fails_on_ci,
        awaiting_input_is_detected_by_declaration_then_tools_then_text,
        run_input_tools_replaces_the_default_list,
        the_agents_declaration_decides_when_a_dynamic_conversation_ends,
        the_built_in_judge_passes_a_reply_that_meets_the_criteria,
        a_failing_verdict_fails_the_case_with_its_reason_and_suggestions,
        an_invalid_verdict_gets_one_repair_attempt,
        a_judge_that_answers_badly_twice_makes_the_case_an_error,
        a_judge_agent_speaks_the_validator_contract,
        a_judge_works_as_a_checkpoint_of_a_dynamic_case,
        judges_work_in_static_turns_and_final_assertions,
        a_judge_without_key_or_recording_is_skipped_outside_ci_and_fails_on_ci,
        the_rust_judge_api_judges_and_replays_from_its_cassette,
        piped_lines_answer_with_interactive_until_the_agent_completes,
        an_empty_line_stops_asking,
        without_a_terminal_an_interactive_case_is_skipped_with_the_reason,
        on_missing_input_fail_makes_it_fail,
        skip_interactive_and_ci_skip_it_too (needs crate::common::python_pty),
        a_person_may_replace_the_simulator_for_a_turn,
        interactive_on_ci_is_ignored_and_said,
        a_real_terminal_is_asked_without_interactive (needs crate::common::python_pty),
        an_unanswered_question_times_out_as_the_case_says (needs crate::common::python_pty),
        an_answer_after_a_timed_out_question_goes_to_the_next_question (needs crate::common::python_pty),
        a_dynamic_prompt_shows_the_agents_input_hint,
    ]);
    trials
}
