//! Running a scenario's steps in order, in its environment, then its judgment over
//! every evaluation of every step.

use serde_json::{json, Map, Value};

use crate::agent::Session;
use crate::case::scenario::{Action, Evaluation, Evaluator, Judgment, Scenario};
use crate::case::Case;
use crate::check::{EvalEnv, Subject};
use crate::errors::StepError;
use crate::protocol::{Message, Reply, Request};
use crate::record::{AssertionReport, CaseReport, Status, TurnReport};
use crate::run::context::Context;
use crate::run::conversation::turn::{check_all, exchange, new_session_id, replied_turn};
use crate::run::outcome::Stop;

use super::evaluators::{self, StepResult};
use super::workdir::Workdir;

/// Runs every step, then decides the case by the scenario's judgment.
#[allow(clippy::too_many_arguments)]
pub(crate) async fn run(
    case: &Case,
    scenario: &Scenario,
    ctx: &Context,
    session: &mut Session,
    env: &EvalEnv<'_>,
    workdir: &Workdir,
    live: bool,
    report: &mut CaseReport,
    phase: &mut String,
) -> Result<(), Stop> {
    let session_id = new_session_id();
    let mut history: Vec<Message> = Vec::new();
    for (i, step) in scenario.steps.iter().enumerate() {
        let n = (i + 1) as u32;
        let at = match &step.name {
            Some(name) => format!("step {n} ({name})"),
            None => format!("step {n}"),
        };
        let (reply, mut record) = match &step.action {
            Action::Message(input) => {
                history.push(Message::user(input.clone()));
                let request = Request {
                    session_id: session_id.clone(),
                    test_id: case.id.clone(),
                    turn: n,
                    input: input.clone(),
                    messages: history.clone(),
                    options: Value::Object(Map::new()),
                    metadata: env.metadata.clone(),
                    attachments: Vec::new(),
                    // Live mode ignores the mocks, as ElizaOS's `--live` does.
                    setup: (!scenario.mocks.is_empty() && !live)
                        .then(|| json!({ "mocks": scenario.mocks })),
                };
                let (reply, took) = exchange(session, &request, "static", report, phase).await?;
                history.push(reply.to_message());
                let record = replied_turn(n, input, "static", &reply, took, &ctx.input_tools);
                (reply, record)
            }
            Action::Code { lang, code } => {
                *phase = format!("running the {} code of {at}", lang.name());
                let out = super::code::run(*lang, code, workdir.path(), env.deadline)
                    .await
                    .map_err(|e| Stop::step(&at, e))?;
                let record = TurnReport {
                    turn: n,
                    input: code.clone(),
                    input_source: "code".into(),
                    output: Value::String(out.stdout.clone()),
                    data: Some(json!({
                        "lang": lang.name(),
                        "exit_code": out.exit_code,
                        "stderr": out.stderr,
                        "files": workdir.files(),
                    })),
                    duration_ms: out.duration_ms,
                    ..TurnReport::default()
                };
                (Reply::text(out.stdout), record)
            }
            Action::Conversation { .. } => {
                return Err(Stop::error(format!(
                "{at}: conversation steps are read and checked, but agentest cannot run them yet"
            )))
            }
        };
        *phase = format!("evaluating {at}");
        let result = StepResult {
            reply: &reply,
            duration_ms: record.duration_ms,
        };
        let subject = Subject {
            reply: &reply,
            input: &record.input,
            conversation: &history,
        };
        let (verdicts, broken) =
            evaluate_all(&step.evaluations, subject, &result, workdir, env).await;
        record.assertions = verdicts;
        record.error = broken.as_ref().map(ToString::to_string);
        report.turns.push(record);
        if let Some(e) = broken {
            return Err(Stop::step(&at, e));
        }
    }
    judge(scenario.judgment, report);
    Ok(())
}

/// Evaluates every evaluation of a step (all of them, so the report shows each). The
/// second value is set when one could not be evaluated.
async fn evaluate_all(
    list: &[Evaluation],
    subject: Subject<'_>,
    result: &StepResult<'_>,
    workdir: &Workdir,
    env: &EvalEnv<'_>,
) -> (Vec<AssertionReport>, Option<StepError>) {
    let mut out = Vec::with_capacity(list.len());
    let mut broken = None;
    for e in list {
        let spec = match &e.raw {
            Value::Object(m) => m.clone(),
            _ => Map::new(),
        };
        match &e.check {
            Evaluator::Assertion(a) => {
                let (mut verdicts, b) = check_all(std::slice::from_ref(a), subject, env).await;
                for v in &mut verdicts {
                    // Reported as the scenario wrote it (`string_contains`, not `contains`).
                    v.spec = spec.clone();
                    if let Some(rest) = v.label.strip_prefix(a.type_name()) {
                        v.label = format!("{}{rest}", e.type_name);
                    }
                }
                out.extend(verdicts);
                if let Some(b) = b {
                    broken.get_or_insert(b);
                }
            }
            other => match evaluators::check(other, result, workdir.path(), env.deadline).await {
                Ok(v) => out.push(AssertionReport {
                    spec,
                    passed: v.passed,
                    label: v.label,
                    message: v.message,
                    judgment: None,
                }),
                Err(err) => {
                    out.push(AssertionReport {
                        spec,
                        passed: false,
                        label: e.type_name.clone(),
                        message: err.to_string(),
                        judgment: None,
                    });
                    broken.get_or_insert(err);
                }
            },
        }
    }
    (out, broken)
}

/// `judgment.strategy` over every evaluation of every step: `all_pass` fails on the
/// first failed one; `any_pass` passes when one passed (and fails with none to pass).
fn judge(judgment: Judgment, report: &mut CaseReport) {
    let all: Vec<(u32, &AssertionReport)> = report
        .turns
        .iter()
        .flat_map(|t| t.assertions.iter().map(move |a| (t.turn, a)))
        .collect();
    let failure = match judgment {
        Judgment::AllPass => all
            .iter()
            .find(|(_, a)| !a.passed)
            .map(|(n, a)| format!("step {n}: {}: {} (judgment: all_pass)", a.label, a.message)),
        Judgment::AnyPass if all.iter().any(|(_, a)| a.passed) => None,
        Judgment::AnyPass => Some(match all.first() {
            Some((n, a)) => format!(
                "no evaluation passed (judgment: any_pass); the first, step {n}: {}: {}",
                a.label, a.message
            ),
            None => "no evaluation passed (judgment: any_pass): the scenario has none".into(),
        }),
    };
    if let Some(f) = failure {
        report.status = Status::Failed;
        report.error = Some(f);
    }
}
