//! Running judges: the built-in judge on `[llm]`, an agent of any kind that speaks the
//! validator contract, and [`Judge`] for users' own tests.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{Map, Value};
use tokio::time::Instant;

use crate::agent::CaseScope;
use crate::check::judge::{JudgeRequest, JudgeVerdict, Judges};
use crate::config::CassetteMode;
use crate::errors::{JudgeError, StepError};
use crate::llm::{Endpoint, ModelCalls};
use crate::protocol::{Message, Role};
use crate::run::context::Context;
use crate::run::conversation::turn::new_session_id;
use crate::run::roles::ask::{ask, role_request, Answer, Question, Respondent};
use crate::util::BoxFuture;

/// What a judge is asked, as a [`Question`].
fn question(request: &JudgeRequest) -> Question {
    Question {
        instructions: request.instructions(),
        messages: vec![Message::user(request.prompt())],
        input: request.output.clone(),
        metadata: request.to_json(),
        repair: "That was not a verdict. Answer again with JSON only, with a boolean \"passed\" and a \"reason\": {\"passed\": bool, \"reason\": string}".into(),
        wanted: "a verdict {passed, reason}",
        schema: request.answer_schema(),
        schema_name: "verdict",
        model: request.model.clone(),
    }
}

/// A usable verdict from a judge's answer: complete, and a verdict that follows the
/// assertion's schema (see [`JudgeRequest::read_answer`]).
fn verdict_of(request: &JudgeRequest, answer: &Answer) -> Result<JudgeVerdict, String> {
    if answer.truncated {
        return Err("the answer was cut off at the token limit".into());
    }
    request.read_answer(&answer.value)
}

/// The built-in judge: a model endpoint, its calls recorded in `calls`.
async fn model_judge(
    endpoint: &Endpoint,
    calls: &ModelCalls,
    request: &JudgeRequest,
    deadline: Instant,
) -> Result<JudgeVerdict, StepError> {
    let mut respondent = Respondent::Model {
        endpoint,
        calls,
        role: Role::Judge,
        deadline,
    };
    ask(&mut respondent, "judge", &question(request), |a| {
        verdict_of(request, a)
    })
    .await
}

/// The judges of one case: the built-in one on `[llm]` (recorded in the case's
/// cassette), or a configured agent that speaks the validator contract.
pub(crate) struct CaseJudges<'a> {
    pub(crate) ctx: &'a Context,
    pub(crate) scope: &'a CaseScope,
}

impl CaseJudges<'_> {
    /// Judges with the agent `name`, in a conversation of its own.
    async fn agent_judge(
        &self,
        name: &str,
        request: &JudgeRequest,
    ) -> Result<JudgeVerdict, StepError> {
        let (def, label) = self
            .ctx
            .agent(Some(name))
            .map_err(|e| StepError::from(e).context("judge"))?;
        let who = format!("judge `{label}`");
        let scope = CaseScope {
            role: Role::Judge,
            // The environment folder is the agent's, not its judge's.
            workdir: None,
            ..self.scope.clone()
        };
        let mut session = def
            .start(&scope)
            .await
            .map_err(|e| StepError::from(e).context(&who))?;
        let template = role_request(new_session_id(), "judge", 1, Value::Object(Map::new()));
        let verdict = {
            let mut respondent = Respondent::Agent {
                session: &mut session,
                template: Box::new(template),
            };
            ask(&mut respondent, &who, &question(request), |a| {
                verdict_of(request, a)
            })
            .await
        };
        session.close().await;
        verdict
    }
}

impl Judges for CaseJudges<'_> {
    fn judge<'a>(
        &'a self,
        agent: Option<&'a str>,
        request: &'a JudgeRequest,
    ) -> BoxFuture<'a, Result<JudgeVerdict, StepError>> {
        Box::pin(async move {
            match agent {
                Some(name) => self.agent_judge(name, request).await,
                None => {
                    let endpoint = self.ctx.llm(
                        Role::Judge,
                        request.model.llm.as_deref(),
                        self.scope.source_llms.as_deref(),
                    )?;
                    model_judge(&endpoint, &self.scope.calls, request, self.scope.deadline).await
                }
            }
        })
    }
}

/// A judge for your own `#[test]`s (the seed's `t.assert.Agent()`): judges a reply
/// against criteria with the `[llm]` model of an `agentest.toml`, recording every call
/// in a cassette so the test replays offline.
///
/// ```no_run
/// let judge = agentest::judge::Judge::from_config("agent-tests", "agent-tests/.cassettes/judge/greeting.jsonl")
///     .expect("a judge");
/// let verdict = judge.judge("Hello! How can I help?", "The reply greets the user").expect("a verdict");
/// assert!(verdict.passed, "{}", verdict.reason);
/// ```
///
/// In async code (`#[tokio::test]`), await [`Judge::judge_async`]; the blocking
/// [`Judge::judge`] works there too, on a thread of its own.
pub struct Judge {
    endpoint: Arc<Endpoint>,
    cassette: PathBuf,
    mode: CassetteMode,
}

impl Judge {
    /// A judge on the `[llm]` of the `agentest.toml` found from `dir` upwards, recording
    /// into `cassette` (mode from `AGENTEST_CASSETTES` / `[run] cassettes`).
    pub fn from_config(
        dir: impl AsRef<Path>,
        cassette: impl AsRef<Path>,
    ) -> Result<Judge, JudgeError> {
        let setup = |m: String| JudgeError::Setup(m);
        let settings = crate::settings::load().map_err(|e| setup(e.to_string()))?;
        let loader = crate::run::context::config_loader(settings.config.as_ref());
        let config = crate::config::Config::discover(dir.as_ref(), &loader)
            .map_err(|e| setup(e.to_string()))?;
        let llm = config.file.llm.as_ref().ok_or_else(|| {
            setup(format!(
                "the judge needs a model: add an [llm] section to {}",
                config.describe()
            ))
        })?;
        Ok(Judge {
            endpoint: Arc::new(Endpoint::from_config(llm, None).map_err(|e| setup(e.to_string()))?),
            cassette: cassette.as_ref().to_path_buf(),
            mode: CassetteMode::resolve(
                crate::settings::get().cassettes,
                config.file.run.cassettes.as_deref(),
            )
            .map_err(|e| setup(e.to_string()))?,
        })
    }

    /// Judges `reply` against `criteria`, blocking until the verdict (a 2-minute
    /// deadline). Safe inside an async runtime: it then waits on a thread of its own.
    pub fn judge(&self, reply: &str, criteria: &str) -> Result<JudgeVerdict, JudgeError> {
        self.judge_request(&Self::simple(reply, criteria))
    }

    /// Judges `reply` against `criteria`.
    pub async fn judge_async(
        &self,
        reply: &str,
        criteria: &str,
    ) -> Result<JudgeVerdict, JudgeError> {
        self.judge_request_async(&Self::simple(reply, criteria))
            .await
    }

    /// Judges a full request (conversation, metadata, schema), blocking; see [`Judge::judge`].
    pub fn judge_request(&self, request: &JudgeRequest) -> Result<JudgeVerdict, JudgeError> {
        let work = || crate::run::runtime().block_on(self.judge_request_async(request));
        if tokio::runtime::Handle::try_current().is_ok() {
            // Blocking a runtime's own thread on another runtime panics; a scoped thread
            // of our own may block.
            std::thread::scope(|s| s.spawn(work).join())
                .unwrap_or_else(|p| std::panic::resume_unwind(p))
        } else {
            work()
        }
    }

    /// Judges a full request (conversation, metadata, schema).
    pub async fn judge_request_async(
        &self,
        request: &JudgeRequest,
    ) -> Result<JudgeVerdict, JudgeError> {
        let calls = ModelCalls::new(self.cassette.clone(), self.mode);
        let deadline = Instant::now() + std::time::Duration::from_secs(120);
        let verdict = model_judge(&self.endpoint, &calls, request, deadline).await;
        calls
            .finish()
            .map_err(|e| JudgeError::Broken(e.to_string()))?;
        Ok(verdict?)
    }

    fn simple(reply: &str, criteria: &str) -> JudgeRequest {
        JudgeRequest {
            criteria: criteria.to_string(),
            output: reply.to_string(),
            conversation: vec![Message::assistant(Value::String(reply.to_string()), None)],
            ..JudgeRequest::default()
        }
    }
}
