//! Running judges: the built-in judge on `[llm]`, an agent of any kind that speaks the
//! validator contract, and [`Judge`] for users' own tests.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{Map, Value};
use tokio::time::Instant;

use crate::agent::CaseScope;
use crate::case::{default_max_abstentions, JudgeChoice, JudgeRef, ModelSettings};
use crate::check::judge::{JudgeRequest, JudgeVerdict};
use crate::check::jury::Judges;
use crate::check::jury::{Juror, JurorKind, Panel};
use crate::config::CassetteMode;
use crate::config::JudgeDef;
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
    /// Whether judges are held to their calibrations (`require_calibrated_judges`);
    /// not while calibrating them.
    pub(crate) check_calibration: bool,
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

impl CaseJudges<'_> {
    /// One juror as a judgment names it; `model` is the assertion's own settings for the
    /// built-in judge. A `[judges.NAME]` jury is refused here: a juror is one judge.
    /// `checked`: whether its calibration is to be checked (not when the jury it sits on
    /// was calibrated as a whole).
    async fn juror(
        &self,
        j: &JudgeRef,
        model: &ModelSettings,
        checked: bool,
    ) -> Result<Juror, StepError> {
        let (kind, def) = match j {
            JudgeRef::Builtin => (JurorKind::Builtin(model.clone()), None),
            JudgeRef::Agent(a) => (JurorKind::Agent(a.clone()), None),
            JudgeRef::Named(n) => {
                let def = self.named(n)?;
                let kind = match &def.def {
                    JudgeDef::Builtin(own) => JurorKind::Builtin(overlay(own, model)),
                    JudgeDef::Agent(a) => JurorKind::Agent(a.clone()),
                    JudgeDef::Jury(_) => {
                        return Err(StepError::Broken(format!(
                            "`{j}` is a jury, and a juror is one judge; list its judges in this jury instead"
                        )))
                    }
                };
                (kind, Some((n.as_str(), def)))
            }
        };
        let required = self.check_calibration && self.ctx.config.file.run.require_calibrated_judges;
        let uncalibrated = if checked && required {
            // A juror whose endpoint cannot be set up abstains when asked; here it only
            // cannot be shown calibrated.
            match self.fingerprint(&kind) {
                Ok(fingerprint) => self.calibration_problem(j, def, &fingerprint).await,
                Err(e) => Some(format!("its fingerprint cannot be taken: {e}")),
            }
        } else {
            None
        };
        Ok(Juror {
            label: j.to_string(),
            kind,
            uncalibrated,
        })
    }

    fn named(&self, name: &str) -> Result<&crate::config::Judge, StepError> {
        self.ctx.config.judges.get(name).ok_or_else(|| {
            StepError::Broken(format!(
                "no [judges.\"{name}\"] table in {} defines `judges:{name}`; add one",
                self.ctx.config.describe()
            ))
        })
    }

    /// What the juror is, for its calibrations (see [`fingerprint`]).
    fn fingerprint(&self, kind: &JurorKind) -> Result<String, StepError> {
        let endpoint = match kind {
            JurorKind::Builtin(model) => Some(self.ctx.llm(
                Role::Judge,
                model.llm.as_deref(),
                self.scope.source_llms.as_deref(),
            )?),
            JurorKind::Agent(_) => None,
        };
        Ok(fingerprint(&self.ctx.config, kind, endpoint.as_deref()))
    }

    /// Why a judge's verdict does not count under `[run] require_calibrated_judges`:
    /// it is not a `[judges.NAME]` with a bar, or its current fingerprint has no
    /// calibration meeting the bar. `None`: it counts (or nothing is required).
    async fn calibration_problem(
        &self,
        j: &JudgeRef,
        def: Option<(&str, &crate::config::Judge)>,
        fingerprint: &str,
    ) -> Option<String> {
        if !self.ctx.config.file.run.require_calibrated_judges {
            return None;
        }
        let Some((name, def)) = def else {
            return Some(format!(
                "`{j}` is no [judges.NAME] with a calibration bar, and [run] require_calibrated_judges is on; define the judge with `min_kappa` or `min_accuracy` and run `agentest calibrate NAME -i LABELS.jsonl`"
            ));
        };
        if !def.has_bar() {
            return Some(format!(
                "[judges.\"{name}\"] sets no `min_kappa` or `min_accuracy`, so no calibration can make it trusted under [run] require_calibrated_judges"
            ));
        }
        let key = (name.to_string(), fingerprint.to_string());
        if let Some(known) = self.ctx.calibration_checks.lock().ok()?.get(&key) {
            return known.clone();
        }
        let problem = match crate::record::store::calibration(name, fingerprint).await {
            Err(why) => Some(format!("its calibration cannot be read: {why}")),
            Ok(None) => Some(format!(
                "`judges:{name}` has no calibration of what it is now (fingerprint {fingerprint}: its endpoint, model, prompt, temperature and schema); run `agentest calibrate {name} -i LABELS.jsonl`"
            )),
            // The figures of the report `agentest calibrate` kept.
            Ok(Some(c)) => match serde_json::from_str::<serde_json::Value>(&c.report)
                .and_then(|r| {
                    serde_json::from_value::<crate::check::calibration::Figures>(
                        r["figures"].clone(),
                    )
                }) {
                Err(e) => Some(format!("its stored calibration cannot be read: {e}")),
                Ok(figures) => crate::check::calibration::meets(&figures, def.min_kappa, def.min_accuracy)
                    .err()
                    .map(|why| {
                        format!(
                            "its calibration of {} falls short of its bar: {why}",
                            c.calibrated_at
                        )
                    }),
            },
        };
        if let Ok(mut checks) = self.ctx.calibration_checks.lock() {
            checks.insert(key, problem.clone());
        }
        problem
    }

    /// The fingerprint of `[judges.NAME]` as the run's judgments that name it (and
    /// set no model settings of their own) use it: its own, or for a jury its rule's
    /// and its jurors'.
    pub(crate) fn named_fingerprint(&self, name: &str) -> Result<String, StepError> {
        let def = self.named(name)?;
        let none = ModelSettings::default();
        let kind_of = |j: &JudgeRef| -> Result<JurorKind, StepError> {
            Ok(match j {
                JudgeRef::Builtin => JurorKind::Builtin(none.clone()),
                JudgeRef::Agent(a) => JurorKind::Agent(a.clone()),
                JudgeRef::Named(n) => match &self.named(n)?.def {
                    JudgeDef::Builtin(own) => JurorKind::Builtin(own.clone()),
                    JudgeDef::Agent(a) => JurorKind::Agent(a.clone()),
                    JudgeDef::Jury(_) => {
                        return Err(StepError::Broken(format!(
                            "`{j}` is a jury, and a juror is one judge"
                        )))
                    }
                },
            })
        };
        match &def.def {
            JudgeDef::Jury(jury) => {
                let prints = jury
                    .judges
                    .iter()
                    .map(|j| self.fingerprint(&kind_of(j)?))
                    .collect::<Result<Vec<_>, _>>()?;
                Ok(jury_fingerprint(jury, &prints))
            }
            _ => self.fingerprint(&kind_of(&JudgeRef::Named(name.to_string()))?),
        }
    }

    /// The panel of a `[judges.NAME]` jury.
    async fn named_jury(
        &self,
        name: &str,
        def: &crate::config::Judge,
        jury: &JudgeChoice,
        model: &ModelSettings,
    ) -> Result<Panel, StepError> {
        // A jury with a bar is calibrated as a whole; without one, each juror is.
        let as_whole = def.has_bar();
        let mut jurors = Vec::with_capacity(jury.judges.len());
        for j in &jury.judges {
            jurors.push(self.juror(j, model, !as_whole).await?);
        }
        let required = self.check_calibration && self.ctx.config.file.run.require_calibrated_judges;
        let uncalibrated = if def.has_bar() && required {
            // The jury as it sits for this judgment: an assertion's own model settings
            // make its built-in jurors others than the ones calibrated.
            let prints: Result<Vec<String>, StepError> =
                jurors.iter().map(|j| self.fingerprint(&j.kind)).collect();
            match prints {
                Ok(prints) => {
                    let fingerprint = jury_fingerprint(jury, &prints);
                    let me = JudgeRef::Named(name.to_string());
                    self.calibration_problem(&me, Some((name, def)), &fingerprint)
                        .await
                }
                Err(e) => Some(format!("its fingerprint cannot be taken: {e}")),
            }
        } else {
            None
        };
        Ok(Panel {
            jury: Some(format!("judges:{name}")),
            max_abstentions: jury
                .max_abstentions
                .unwrap_or(default_max_abstentions(jurors.len())),
            jurors,
            rule: jury.rule,
            uncalibrated,
        })
    }
}

/// `top`'s settings over `base`'s: an assertion's own settings win over its judge's.
fn overlay(base: &ModelSettings, top: &ModelSettings) -> ModelSettings {
    ModelSettings {
        llm: top.llm.clone().or_else(|| base.llm.clone()),
        model: top.model.clone().or_else(|| base.model.clone()),
        temperature: top.temperature.or(base.temperature),
        max_tokens: top.max_tokens.or(base.max_tokens),
        seed: top.seed.or(base.seed),
    }
}

/// What a judge is, as far as its verdicts go: for the built-in judge its endpoint's
/// URL, the model, the temperature, its instructions, its prompt's template and its
/// answer schema; for an agent, its name and its table. A calibration holds for one
/// fingerprint: changing any of these makes the judge uncalibrated until calibrated
/// again. 16 hex digits of a SHA-256.
pub(crate) fn fingerprint(
    config: &crate::config::Config,
    kind: &JurorKind,
    endpoint: Option<&Endpoint>,
) -> String {
    let what = match (kind, endpoint) {
        (JurorKind::Builtin(model), Some(e)) => {
            // The template, rendered for a fixed request: any change to how a judge is
            // asked changes it.
            let sample = JudgeRequest::new("CRITERIA", "REPLY");
            serde_json::json!({
                "judge": "llm",
                "endpoint": e.shown(),
                "model": model.model.as_deref().unwrap_or(e.model()),
                "temperature": model.temperature.or(e.temperature()),
                "max_tokens": model.max_tokens,
                "seed": model.seed,
                "instructions": sample.instructions(),
                "template": sample.prompt(),
                "schema": sample.answer_schema(),
            })
        }
        (JurorKind::Builtin(model), None) => {
            serde_json::json!({"judge": "llm", "model": model.model})
        }
        (JurorKind::Agent(name), _) => serde_json::json!({
            "judge": "agent",
            "name": name,
            "table": config.agents.get(name).map(|a| format!("{a:?}")),
        }),
    };
    short_hash(&what.to_string())
}

/// A jury's fingerprint: its rule, its abstention limit and its jurors'.
pub(crate) fn jury_fingerprint(jury: &JudgeChoice, jurors: &[String]) -> String {
    let what = serde_json::json!({
        "rule": jury.rule.label(),
        "max_abstentions": jury.max_abstentions,
        "jurors": jurors,
    });
    short_hash(&what.to_string())
}

fn short_hash(text: &str) -> String {
    use sha2::{Digest, Sha256};
    Sha256::digest(text.as_bytes())
        .iter()
        .take(8)
        .map(|b| format!("{b:02x}"))
        .collect()
}

impl Judges for CaseJudges<'_> {
    fn panel<'a>(
        &'a self,
        choice: &'a JudgeChoice,
        model: &'a ModelSettings,
    ) -> BoxFuture<'a, Result<Panel, StepError>> {
        Box::pin(async move {
            let named = self.ctx.config.judges_of(choice);
            if let [JudgeRef::Named(n)] = named.as_slice() {
                let def = self.named(n)?;
                if let JudgeDef::Jury(jury) = &def.def {
                    return self.named_jury(n, def, jury, model).await;
                }
            }
            let mut jurors = Vec::with_capacity(named.len());
            for j in &named {
                jurors.push(self.juror(j, model, true).await?);
            }
            Ok(match jurors.len() {
                1 => Panel {
                    jury: None,
                    jurors,
                    rule: choice.rule,
                    max_abstentions: 0,
                    uncalibrated: None,
                },
                n => Panel {
                    jury: Some("jury".into()),
                    jurors,
                    rule: choice.rule,
                    max_abstentions: choice.max_abstentions.unwrap_or(default_max_abstentions(n)),
                    uncalibrated: None,
                },
            })
        })
    }

    fn judge<'a>(
        &'a self,
        juror: &'a Juror,
        request: &'a JudgeRequest,
    ) -> BoxFuture<'a, Result<JudgeVerdict, StepError>> {
        Box::pin(async move {
            match &juror.kind {
                JurorKind::Agent(name) => self.agent_judge(name, request).await,
                JurorKind::Builtin(model) => {
                    let endpoint = self.ctx.llm(
                        Role::Judge,
                        model.llm.as_deref(),
                        self.scope.source_llms.as_deref(),
                    )?;
                    if *model == request.model {
                        model_judge(&endpoint, &self.scope.calls, request, self.scope.deadline)
                            .await
                    } else {
                        let mut mine = request.clone();
                        mine.model = model.clone();
                        model_judge(&endpoint, &self.scope.calls, &mine, self.scope.deadline).await
                    }
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
/// assert_eq!(verdict.passed, Some(true), "{}", verdict.reason);
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
