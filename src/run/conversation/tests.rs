//! The driver and each policy, against in-process agents: no process, no network. Each
//! test plays a whole conversation and checks the report it leaves.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};

use crate::agent::{Agent, AgentDef, CaseScope};
use crate::case::scenario::{Conversation as Spec, EndCondition, TerminationKind, UserSimulator};
use crate::case::{Case, Location, Mode};
use crate::check::EvalEnv;
use crate::protocol::{Reply, Request};
use crate::record::{CaseReport, Status, Termination};
use crate::run::context::{Contexts, Registry};
use crate::run::outcome::Stop;
use crate::run::roles::person::People;

use super::checkpoints::Dynamic;
use super::conditions::Conditions;
use super::driver::{Conversation, Parts};

/// A folder with an empty `agentest.toml`, so no config above it is found.
struct Dir(PathBuf);

impl Dir {
    fn new(name: &str) -> Dir {
        let dir = std::env::temp_dir().join(format!(
            "agentest-conversation-{name}-{}",
            std::process::id()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("agentest.toml"), "").unwrap();
        Dir(dir)
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// What the agents under test received, in order.
type Seen = Arc<Mutex<Vec<Request>>>;

/// An agent that answers with `answer(request)` and keeps every request.
fn agent(seen: &Seen, answer: impl Fn(&Request) -> Reply + Send + Sync + 'static) -> impl Agent {
    let seen = seen.clone();
    move |r: &Request| -> Result<Reply, String> {
        seen.lock().unwrap().push(r.clone());
        Ok(answer(r))
    }
}

fn case(line: Value, dir: &Dir) -> Case {
    let location = Location {
        file: Arc::new(dir.0.join("suite.jsonl")),
        line: 1,
        column: 1,
    };
    crate::source::parse_case(&line.to_string(), location).expect("a valid case")
}

/// Plays `case` with `play` on a session with `under_test`; `users` are named agents a
/// simulator may be.
async fn play<F>(
    dir: &Dir,
    case: &Case,
    under_test: impl Agent,
    users: HashMap<String, Arc<dyn Agent>>,
    play: F,
) -> (CaseReport, Result<(), Stop>)
where
    F: for<'c, 'd> FnOnce(
        &'c mut Conversation<'d>,
    ) -> std::pin::Pin<
        Box<dyn std::future::Future<Output = Result<(), Stop>> + 'c>,
    >,
{
    let registry = Registry {
        agents: users,
        ..Registry::default()
    };
    let contexts = Contexts::new(registry, None, None);
    let ctx = contexts.of(&dir.0.join("suite.jsonl")).expect("a context");
    let scope = CaseScope {
        calls: Arc::new(crate::llm::ModelCalls::new(
            dir.0.join("cassette.jsonl"),
            crate::config::CassetteMode::Off,
        )),
        mocks: Vec::new(),
        seed: 0,
        salt: String::new(),
        live: false,
        deadline: tokio::time::Instant::now() + Duration::from_secs(30),
        role: crate::protocol::Role::Agent,
        trace: Default::default(),
        workdir: None,
        source_llms: None,
        tracer: None,
    };
    let mut session = AgentDef::InProcess(Arc::new(under_test))
        .start(&scope)
        .await
        .unwrap_or_else(|_| panic!("the agent starts"));
    let metadata = json!({"user": "u1"});
    let env = EvalEnv {
        scripts: &ctx.scripts,
        metadata: &metadata,
        deadline: scope.deadline,
        judges: None,
    };
    let mut report = CaseReport::default();
    let mut phase = String::new();
    let mut conv = Conversation::new(Parts {
        case,
        ctx: &ctx,
        scope: &scope,
        env: &env,
        session: &mut session,
        report: &mut report,
        phase: &mut phase,
    });
    let result = play(&mut conv).await;
    drop(conv);
    (report, result)
}

fn inputs(seen: &Seen) -> Vec<String> {
    seen.lock()
        .unwrap()
        .iter()
        .map(|r| r.input.clone())
        .collect()
}

#[tokio::test]
async fn a_static_script_builds_each_request_from_the_history() {
    let dir = Dir::new("static");
    let seen = Seen::default();
    let case = case(
        json!({"id": "s", "options": {"a": 1}, "turns": [
            {"input": "one", "assert": {"type": "contains", "value": "one"}},
            {"input": "two", "options": {"b": 2}, "assert": {"type": "contains", "value": "two"}}
        ], "final_assertions": [{"type": "contains", "value": "echo"}]}),
        &dir,
    );
    let echo = agent(&seen, |r| Reply::text(format!("echo {}", r.input)));
    let (report, result) = play(&dir, &case, echo, HashMap::new(), |c| {
        Box::pin(super::scripted::run(c, People::default()))
    })
    .await;
    assert!(result.is_ok());
    assert_eq!(report.status, Status::default(), "{:?}", report.error);
    assert_eq!(inputs(&seen), ["one", "two"]);
    let seen = seen.lock().unwrap();
    // One session, turns counted from 1, the history so far, options merged per turn.
    assert_eq!(seen[0].session_id, seen[1].session_id);
    assert_eq!((seen[0].turn, seen[1].turn), (1, 2));
    assert_eq!(seen[0].messages.len(), 1);
    assert_eq!(seen[1].messages.len(), 3, "user, assistant, user");
    assert_eq!(seen[0].options, json!({"a": 1}));
    assert_eq!(seen[1].options, json!({"a": 1, "b": 2}));
    assert_eq!(seen[1].metadata, json!({"user": "u1"}));
    assert_eq!(report.turns.len(), 2);
    assert!(report.turns.iter().all(|t| t.input_source == "static"));
    assert_eq!(report.final_assertions.len(), 1);
    assert!(report.final_assertions[0].held());
    assert_eq!(
        report.termination, None,
        "scripted cases report no termination"
    );
}

#[tokio::test]
async fn a_failed_scripted_turn_stops_the_case_there() {
    let dir = Dir::new("failed");
    let seen = Seen::default();
    let case = case(
        json!({"id": "f", "turns": [
            {"input": "one", "assert": {"type": "contains", "value": "nope"}},
            {"input": "two"}
        ], "final_assertions": [{"type": "contains", "value": "echo"}]}),
        &dir,
    );
    let echo = agent(&seen, |r| Reply::text(format!("echo {}", r.input)));
    let (report, result) = play(&dir, &case, echo, HashMap::new(), |c| {
        Box::pin(super::scripted::run(c, People::default()))
    })
    .await;
    assert!(result.is_ok());
    assert_eq!(inputs(&seen), ["one"], "turn 2 is never sent");
    assert_eq!(report.status, Status::Failed);
    let error = report.error.unwrap();
    assert!(error.starts_with("turn 1: contains \"nope\""), "{error}");
    assert!(
        report.final_assertions.is_empty(),
        "not checked after a failure"
    );
}

/// A dynamic case with a script simulator: the checkpoints of `assert`s given.
fn dynamic_case(dir: &Dir, checkpoints: Value, max_turns: u32) -> Case {
    case(
        json!({"id": "d", "input": "hello", "simulator": {"use": "script", "script": [
            {"when": "(?i)type", "say": "travel"},
            {"when": "(?i)amount", "say": "500"},
            {"when": "(?i)confirm", "say": "yes"}
        ]}, "checkpoints": checkpoints, "max_turns": max_turns}),
        dir,
    )
}

/// The expense agent in three replies: asks the type, the amount, then confirms.
fn expense(seen: &Seen) -> impl Agent {
    agent(seen, |r| {
        let mut reply = Reply::text(match r.input.as_str() {
            "hello" => "Which type?",
            "travel" => "What amount?",
            "500" => "Shall I confirm?",
            _ => "Submitted.",
        });
        reply.awaiting_input = Some(r.input != "yes");
        reply
    })
}

async fn play_dynamic(dir: &Dir, case: &Case, seen: &Seen) -> (CaseReport, Result<(), Stop>) {
    play_dynamic_with(dir, case, expense(seen)).await
}

/// Plays a dynamic case against `under_test`, its simulator the case's script.
async fn play_dynamic_with(
    dir: &Dir,
    case: &Case,
    under_test: impl Agent,
) -> (CaseReport, Result<(), Stop>) {
    play(dir, case, under_test, HashMap::new(), |c| {
        Box::pin(async move {
            let Mode::Dynamic {
                input,
                simulator,
                checkpoints,
                max_turns,
            } = &c.case.mode
            else {
                panic!("a dynamic case")
            };
            Dynamic::new(input.as_ref(), checkpoints, *max_turns, simulator)
                .run(c, Some("script"))
                .await
        })
    })
    .await
}

#[tokio::test]
async fn a_dynamic_case_ends_when_every_checkpoint_is_reached() {
    let dir = Dir::new("reached");
    let seen = Seen::default();
    let case = dynamic_case(
        &dir,
        json!([
            {"id": "asks", "assert": {"type": "contains", "value": "amount"}},
            {"id": "done", "after": ["asks"], "assert": {"type": "contains", "value": "confirm"}}
        ]),
        6,
    );
    let (report, result) = play_dynamic(&dir, &case, &seen).await;
    assert!(result.is_ok());
    assert_eq!(inputs(&seen), ["hello", "travel", "500"]);
    assert_eq!(report.termination, Some(Termination::AllCheckpointsReached));
    assert_eq!(report.error, None);
    let sources: Vec<&str> = report
        .turns
        .iter()
        .map(|t| t.input_source.as_str())
        .collect();
    assert_eq!(sources, ["initial", "simulated", "simulated"]);
    assert_eq!(report.checkpoints[1].reached_at_turn, Some(3));
    assert_eq!(report.simulator.as_deref(), Some("script"));
}

#[tokio::test]
async fn a_dynamic_case_fails_at_max_turns_and_names_what_is_missing() {
    let dir = Dir::new("max");
    let seen = Seen::default();
    let case = dynamic_case(
        &dir,
        json!([{"id": "never", "assert": {"type": "contains", "value": "refund"}}]),
        2,
    );
    let (report, result) = play_dynamic(&dir, &case, &seen).await;
    assert!(result.is_ok());
    assert_eq!(inputs(&seen), ["hello", "travel"]);
    assert_eq!(report.termination, Some(Termination::MaxTurns));
    assert_eq!(report.status, Status::Failed);
    let error = report.error.unwrap();
    assert!(
        error.starts_with("max turns (2) exceeded; required checkpoints missing: never (last: "),
        "{error}"
    );
}

#[tokio::test]
async fn a_forbidden_checkpoint_ends_the_conversation_at_once() {
    let dir = Dir::new("forbidden");
    let seen = Seen::default();
    let case = dynamic_case(
        &dir,
        json!([
            {"id": "goal", "assert": {"type": "contains", "value": "Submitted"}},
            {"id": "no-amount", "forbidden": true, "assert": {"type": "contains", "value": "amount"}}
        ]),
        6,
    );
    let (report, _) = play_dynamic(&dir, &case, &seen).await;
    assert_eq!(report.termination, Some(Termination::ForbiddenCheckpoint));
    assert_eq!(report.turns.len(), 2);
    let error = report.error.unwrap();
    assert!(
        error.starts_with("turn 2: forbidden checkpoint `no-amount` matched"),
        "{error}"
    );
}

#[tokio::test]
async fn an_agent_that_fails_ends_a_dynamic_case_as_agent_error_with_its_turn_kept() {
    let dir = Dir::new("agent-error");
    let case = dynamic_case(
        &dir,
        json!([{"id": "x", "assert": {"type": "contains", "value": "never"}}]),
        4,
    );
    let failing = |r: &Request| -> Result<Reply, String> {
        if r.turn == 2 {
            Err("the tool server is down".into())
        } else {
            Ok(Reply::text("Which type?"))
        }
    };
    let (report, result) = play_dynamic_with(&dir, &case, failing).await;
    let stop = result.unwrap_err();
    assert!(
        stop.message.contains("the tool server is down"),
        "{}",
        stop.message
    );
    assert_eq!(report.termination, Some(Termination::AgentError));
    assert_eq!(report.turns.len(), 2, "the failed turn is in the record");
    assert!(report.turns[1].error.is_some());
}

/// A scenario's conversation step with a named simulator agent and `conditions`.
fn spec(max_turns: u32, conditions: &[TerminationKind], per_turn: Duration) -> Spec {
    Spec {
        max_turns,
        timeout_per_turn: per_turn,
        total_timeout: Duration::from_secs(20),
        simulator: UserSimulator {
            persona: "a traveller".into(),
            objective: "file an expense".into(),
            profile: Default::default(),
            model: Default::default(),
        },
        termination: conditions
            .iter()
            .map(|&kind| EndCondition {
                kind,
                keywords: Vec::new(),
                judge: None,
            })
            .collect(),
        turn_evaluations: Vec::new(),
        final_evaluations: Vec::new(),
    }
}

async fn play_conditions(
    spec: Spec,
    under_test: impl Agent,
    user_says: &'static [&'static str],
) -> (CaseReport, Result<Termination, Stop>, u32) {
    let dir = Dir::new(&format!("conditions-{}", user_says.len()));
    let case = case(json!({"id": "c", "input": "unused"}), &dir);
    let said = Arc::new(Mutex::new(0usize));
    let user = move |_: &Request| -> Result<Reply, String> {
        let mut n = said.lock().unwrap();
        *n += 1;
        let answer = match user_says.get(*n - 1) {
            Some(m) => json!({"message": m}),
            None => json!({"goal_achieved": true}),
        };
        Ok(Reply::text(answer.to_string()))
    };
    let users = HashMap::from([("user".to_string(), Arc::new(user) as Arc<dyn Agent>)]);
    let turns = Arc::new(Mutex::new((None, 0)));
    let out = turns.clone();
    let (report, _) = play(&dir, &case, under_test, users, move |c| {
        Box::pin(async move {
            let workdir = std::env::temp_dir();
            let mut rules = Conditions::new(&spec, Some("hi"), c.env, &workdir);
            c.set_at(Some("step 1".into()));
            c.start_simulator(&rules.simulator(), Some("user")).await?;
            let t = c.play(&mut rules).await;
            c.close_simulator().await;
            *out.lock().unwrap() = (Some(t), rules.turns);
            Ok(())
        })
    })
    .await;
    let (t, n) = std::mem::take(&mut *turns.lock().unwrap());
    (report, t.expect("played"), n)
}

#[tokio::test]
async fn a_scenario_conversation_ends_on_the_first_condition_that_holds() {
    let seen = Seen::default();
    let spec = spec(
        5,
        &[TerminationKind::UserExpressesSatisfaction],
        Duration::from_secs(5),
    );
    let (report, ended, turns) = play_conditions(
        spec,
        agent(&seen, |_| Reply::text("Done.")),
        &["ok", "thanks, that helps"],
    )
    .await;
    assert_eq!(ended.ok(), Some(Termination::UserExpressesSatisfaction));
    assert_eq!(turns, 3);
    assert_eq!(inputs(&seen), ["hi", "ok", "thanks, that helps"]);
    assert_eq!(report.turns[0].input_source, "initial");
}

#[tokio::test]
async fn a_scenario_conversation_stops_at_max_turns_or_when_the_user_is_done() {
    let seen = Seen::default();
    let (_, ended, turns) = play_conditions(
        spec(2, &[], Duration::from_secs(5)),
        agent(&seen, |_| Reply::text("Hm.")),
        &["more", "more", "more"],
    )
    .await;
    assert_eq!((ended.ok(), turns), (Some(Termination::MaxTurns), 2));
    let seen = Seen::default();
    let (_, ended, turns) = play_conditions(
        spec(5, &[], Duration::from_secs(5)),
        agent(&seen, |_| Reply::text("Hm.")),
        &["more"],
    )
    .await;
    // The user has nothing more to say after turn 2: the goal is reached.
    assert_eq!((ended.ok(), turns), (Some(Termination::GoalAchieved), 2));
}

#[tokio::test]
async fn a_reply_past_the_per_turn_limit_is_an_error_in_the_turn_record() {
    let slow = crate::agent::async_agent(|_r: Request| async {
        tokio::time::sleep(Duration::from_secs(5)).await;
        Ok(Reply::text("late"))
    });
    let (report, ended, _) =
        play_conditions(spec(3, &[], Duration::from_millis(100)), slow, &[]).await;
    let stop = ended.unwrap_err();
    assert_eq!(
        stop.message,
        "step 1: turn 1: the agent did not reply within timeout_per_turn_ms (100 ms)"
    );
    assert_eq!(report.turns.len(), 1);
    assert_eq!(
        report.turns[0].error.as_deref(),
        Some("the agent did not reply within timeout_per_turn_ms (100 ms)")
    );
}

#[tokio::test]
async fn without_a_model_a_criteria_case_is_one_exchange() {
    let dir = Dir::new("fallback");
    let seen = Seen::default();
    let case = case(
        json!({"id": "e", "input": "hello",
               "success_criteria": "the user is helped", "max_messages": 6}),
        &dir,
    );
    let (report, result) = play(&dir, &case, expense(&seen), HashMap::new(), |c| {
        Box::pin(async move {
            let Mode::Criteria {
                input,
                simulator,
                criteria,
            } = &c.case.mode
            else {
                panic!("a criteria case")
            };
            super::criteria::run(c, criteria, input.as_ref(), simulator, None).await
        })
    })
    .await;
    assert!(result.is_ok());
    assert_eq!(inputs(&seen), ["hello"]);
    assert_eq!(report.termination, Some(Termination::SingleTurnFallback));
    let result = report.result.unwrap();
    assert!(result.success, "{}", result.reason);
}
