//! Calling generators: the entries a plan holds for `-i agents:NAME` and for suite
//! lines `{"generate": ...}` are replaced by the cases the generator answers, read
//! through the source's validation ([`crate::source::generate`]).
//!
//! An agent generator (any kind) receives the seed's `GeneratorInput` as the request's
//! `metadata` and, as messages, the seed's generator prompt filled in: a model-backed
//! one (`type = "openai"`) reads that. Its answer is `{cases: [...]}` or a bare array,
//! as content (JSON, or JSON in a fenced block) or `data`, with one repair attempt when
//! it is not. Its model calls go through the cassette
//! `.cassettes/<suite>/generate-<line>-<name>.jsonl`, so a recorded generator gives the
//! same cases offline. A script generator (`[scripts.NAME]`, or one registered with
//! [`crate::Harness::generator`]) gets the parameters as JSON on stdin and prints a JSON
//! array or JSON Lines.

use std::sync::Arc;

use serde_json::{json, Map, Value};
use tokio::time::Instant;

use crate::agent::AgentDef;
use crate::case::ModelSettings;
use crate::errors::{HelperError, HelperFault};
use crate::llm::ModelCalls;
use crate::protocol::Message;
use crate::run::engine::Engine;
use crate::run::roles::ask::{ask, helper_session, Answer, Question, Respondent};
use crate::source::generate::{broken, generator_id, read_generated, Origin};
use crate::source::{Generation, GeneratorKind, GeneratorSpec, Loaded, SEPARATOR};

impl Engine {
    /// Replaces each pending generator entry of `cases` with what its generator made,
    /// in place; a generator that fails is one failing trial with the reason. Notes
    /// (renamed ids, fewer cases than asked) are said on stderr.
    pub(crate) async fn expand(&self, cases: Vec<Loaded>) -> Vec<Loaded> {
        if !cases
            .iter()
            .any(|l| matches!(l.generation, Some(Generation::Pending { .. })))
        {
            return cases;
        }
        let mut out = Vec::with_capacity(cases.len());
        let taken = |suite: &str| -> Vec<String> {
            cases
                .iter()
                .filter(|l| l.suite == suite && l.generation.is_none())
                .filter_map(|l| l.trial.strip_prefix(&format!("{suite}{SEPARATOR}")))
                .map(str::to_string)
                .collect()
        };
        let mut generated = Vec::new();
        for l in &cases {
            let Some(Generation::Pending { spec, command_line }) = &l.generation else {
                continue;
            };
            let location = match &l.entry {
                Err(e) => e.location.clone(),
                Ok(c) => c.location.clone(),
            };
            let origin = Origin {
                suite: l.suite.clone(),
                file: l.file.clone(),
                shown: location.file.clone(),
                line: location.line,
                taken: taken(&l.suite),
                command_line: *command_line,
            };
            let id = generator_id(&origin);
            match self.generate(spec, &origin).await {
                Ok(values) => {
                    let g = read_generated(spec, &origin, values);
                    for note in &g.notes {
                        eprintln!("agentest: {note}");
                    }
                    generated.extend(g.loaded);
                }
                Err(e) => {
                    // `-i agents:NAME` errors are located at `agents:NAME` already.
                    let why = match origin.command_line {
                        true => e.without_who(),
                        false => e.to_string(),
                    };
                    generated.push(broken(&origin, id, why))
                }
            }
        }
        out.extend(
            cases
                .into_iter()
                .filter(|l| !matches!(l.generation, Some(Generation::Pending { .. }))),
        );
        out.extend(generated);
        out.sort_by(|a, b| a.trial.cmp(&b.trial));
        out
    }

    /// The generator's cases, as JSON values, or why there are none.
    async fn generate(
        &self,
        spec: &GeneratorSpec,
        origin: &Origin,
    ) -> Result<Vec<Value>, HelperError> {
        let label = spec.label();
        let ctx = self
            .contexts
            .of(&origin.file)
            .map_err(|e| HelperError::new(&label, e))?;
        let ctx = &ctx;
        self.within_timeout(ctx, &label, |deadline| async move {
            match spec.kind {
                GeneratorKind::Agent => self.ask_generator(spec, origin, ctx, deadline).await,
                GeneratorKind::Script => run_generator_script(spec, ctx, deadline).await,
            }
        })
        .await
    }

    /// Runs `work`, a generator or a reporter (`who`), under the timeout cases have
    /// (`--timeout`, else `[run] timeout`), giving it the deadline.
    pub(crate) async fn within_timeout<T, F>(
        &self,
        ctx: &crate::run::context::Context,
        who: &str,
        work: impl FnOnce(Instant) -> F,
    ) -> Result<T, HelperError>
    where
        F: std::future::Future<Output = Result<T, HelperFault>>,
    {
        let timeout = ctx
            .run_timeout(self.options.timeout)
            .map_err(|e| HelperError::new(who, e))?;
        let deadline = Instant::now() + timeout;
        let done = tokio::time::timeout_at(deadline, work(deadline)).await;
        done.unwrap_or(Err(HelperFault::Timeout(timeout)))
            .map_err(|fault| HelperError::new(who, fault))
    }

    async fn ask_generator(
        &self,
        spec: &GeneratorSpec,
        origin: &Origin,
        ctx: &crate::run::context::Context,
        deadline: Instant,
    ) -> Result<Vec<Value>, HelperFault> {
        let cassette_id = format!("generate-{}-{}", origin.line, spec.name);
        let calls = Arc::new(ModelCalls::new(
            crate::llm::cassette::path_for(&origin.file, &cassette_id),
            ctx.cassettes,
        ));
        let (mut session, template, _) =
            helper_session(ctx, &spec.name, &cassette_id, calls.clone(), deadline).await?;
        let input = generator_input(spec, self.target(ctx));
        let question = question(&input);
        let mut respondent = Respondent::Agent {
            session: &mut session,
            template,
        };
        let who = format!("generator `{}`", spec.label());
        let found = ask(&mut respondent, &who, &question, read_cases).await;
        drop(respondent);
        session.close().await;
        // What was recorded is written whether or not the answer was usable.
        let written = calls.finish();
        let cases = found?;
        written?;
        Ok(cases)
    }

    /// The agent under test, as a generator is told of it: its name, and for an
    /// `openai` agent its instructions and tools.
    fn target(&self, ctx: &crate::run::context::Context) -> Target {
        let name = self
            .options
            .agent_name
            .clone()
            .unwrap_or_else(|| "default".into());
        let (description, tools) = match ctx.agent(None) {
            Ok((AgentDef::OpenAi(spec), _)) => spec.described(),
            _ => (None, Vec::new()),
        };
        Target {
            name,
            description,
            tools,
        }
    }
}

/// What a generator is told of the agent under test.
struct Target {
    name: String,
    description: Option<String>,
    tools: Vec<Value>,
}

/// The seed's `GeneratorInput`: `test_mode`, the target, and every query parameter.
fn generator_input(spec: &GeneratorSpec, target: Target) -> Map<String, Value> {
    let mut v = Map::new();
    v.insert("test_mode".into(), json!("generator"));
    v.insert("target_agent".into(), json!(target.name));
    if let Some(d) = target.description {
        v.insert("target_description".into(), json!(d));
    }
    if !target.tools.is_empty() {
        v.insert("target_tools".into(), Value::Array(target.tools));
    }
    v.extend(spec.params_json());
    v
}

/// The seed's example generator prompt, in agentest's case format.
fn question(input: &Map<String, Value>) -> Question {
    let text = |k: &str| match input.get(k) {
        Some(Value::String(s)) => s.clone(),
        Some(v) => v.to_string(),
        None => "(not given)".into(),
    };
    let count = input
        .get("count")
        .map(|c| c.to_string())
        .unwrap_or_else(|| "5".into());
    let extra: Vec<String> = input
        .iter()
        .filter(|(k, _)| {
            ![
                "test_mode",
                "target_agent",
                "target_description",
                "target_tools",
                "count",
                "focus",
            ]
            .contains(&k.as_str())
        })
        .map(|(k, v)| {
            format!(
                "{k}: {}",
                v.as_str().map_or_else(|| v.to_string(), str::to_string)
            )
        })
        .collect();
    let instructions = format!(
        "You are a test case generator for AI agents.\n\n\
         Target Agent: {}\nDescription: {}\nAvailable Tools: {}\n\n\
         Generate {count} test cases with focus on: {}\n{}\n\
         For each test case, provide:\n\
         - id: Unique identifier\n\
         - name: Descriptive name\n\
         - input: User message, or a `turns` array of {{\"input\", \"assert\"}} for multi-turn\n\
         - assert: Expected behaviors to verify, as assertions like {{\"type\": \"contains\", \"value\": \"...\"}}, {{\"type\": \"regex\", \"pattern\": \"...\"}} or {{\"type\": \"llm_judge\", \"prompt\": \"...\"}}\n\n\
         Output only JSON: {{\"cases\": [ ... ]}}.",
        text("target_agent"),
        text("target_description"),
        input
            .get("target_tools")
            .map(|t| t.to_string())
            .unwrap_or_else(|| "(not given)".into()),
        text("focus"),
        if extra.is_empty() {
            String::new()
        } else {
            format!("Also: {}\n", extra.join("; "))
        },
    );
    let ask_for = format!("Generate {count} test cases.");
    Question {
        instructions,
        messages: vec![Message::user(ask_for.clone())],
        input: ask_for,
        metadata: Value::Object(input.clone()),
        repair: "Answer with JSON only: {\"cases\": [{\"id\": ..., \"input\": ..., \"assert\": ...}, ...]}".into(),
        wanted: "cases (`{\"cases\": [...]}` or an array)",
        schema: json!({
            "type": "object",
            "properties": {"cases": {"type": "array", "items": {"type": "object"}}},
            "required": ["cases"],
        }),
        schema_name: "generated_cases",
        model: ModelSettings::default(),
    }
}

/// The cases in a generator's answer: `{cases: [...]}` or an array, as JSON or as text
/// holding JSON (in a fenced block too).
fn read_cases(answer: &Answer) -> Result<Vec<Value>, String> {
    if answer.truncated {
        return Err("the answer was cut off at the token limit".into());
    }
    let value = match &answer.value {
        Value::String(s) => {
            crate::check::parse_json_text(s).ok_or_else(|| "the answer is not JSON".to_string())?
        }
        other => other.clone(),
    };
    match value {
        Value::Array(cases) => Ok(cases),
        Value::Object(mut o) => match o.remove("cases") {
            Some(Value::Array(cases)) => Ok(cases),
            Some(_) => Err("its `cases` is not an array".into()),
            None => Err("the answer has no `cases` array".into()),
        },
        _ => Err("the answer is neither `{\"cases\": [...]}` nor an array".into()),
    }
}

/// A script generator's cases: a registered one, else `[scripts.NAME]` run with the
/// parameters as JSON on stdin, printing a JSON array or JSON Lines.
async fn run_generator_script(
    spec: &GeneratorSpec,
    ctx: &crate::run::context::Context,
    deadline: Instant,
) -> Result<Vec<Value>, HelperFault> {
    let params = Value::Object(spec.params_json());
    if let Some(f) = ctx.generators.get(&spec.name) {
        let f = f.clone();
        return tokio::task::spawn_blocking(move || f(&params))
            .await
            .map_err(|e| HelperFault::Panicked(crate::util::panic_text(e)))?
            .map_err(HelperFault::Failed);
    }
    let out = ctx.scripts.run_raw(&spec.name, &params, deadline).await?;
    let text = out.trim();
    if text.starts_with('[') {
        return serde_json::from_str(text).map_err(|source| HelperFault::Json {
            shown: crate::util::clip(text),
            source,
        });
    }
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| {
            serde_json::from_str(l).map_err(|source| HelperFault::Line {
                line: i + 1,
                shown: crate::util::clip(l),
                source,
            })
        })
        .collect()
}
