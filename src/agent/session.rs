//! An agent under test, resolved from its config ([`AgentDef`]), and one conversation
//! with it ([`Session`]).

use super::in_process::{panicked, Agent, CatchUnwind};
use super::{a2a, eliza, http, langgraph, openai, process, CaseScope, Timed};
use crate::config::{AgentConfig, Config};
use crate::errors::{AgentError, AgentSetupError, StepError};
use crate::protocol::{Reply, Request};
use crate::util::{expand_env, expand_secret};
use std::sync::Arc;

/// An agent definition, ready to start conversations.
#[derive(Clone)]
pub(crate) enum AgentDef {
    Process(Arc<process::ProcessSpec>),
    Http(Arc<http::HttpSpec>),
    OpenAi(Arc<openai::OpenAiSpec>),
    LangGraph(Arc<langgraph::LangGraphSpec>),
    A2a(Arc<a2a::A2aSpec>),
    Eliza(Arc<eliza::ElizaSpec>),
    InProcess(Arc<dyn Agent>),
}

impl AgentDef {
    /// Builds a definition from config, expanding `${VAR}`s. `what` names it for errors.
    pub(crate) fn from_config(
        cfg: &AgentConfig,
        config: &Config,
        what: &str,
    ) -> Result<AgentDef, AgentSetupError> {
        Self::build(cfg, config, what).map_err(|e| e.in_config(config.describe()))
    }

    fn build(cfg: &AgentConfig, config: &Config, what: &str) -> Result<AgentDef, AgentSetupError> {
        let duration = |t: &String| parse_timeout(t, what);
        match cfg {
            AgentConfig::Process {
                command,
                cwd,
                env,
                timeout,
            } => Self::process(command, cwd.as_ref(), env, timeout.as_ref(), config, what),
            AgentConfig::Http {
                url,
                headers,
                timeout,
                retries,
                format,
                body,
                reply,
                session,
                sse,
            } => {
                let wire = super::wire::Wire::compile(
                    *format,
                    body.as_ref(),
                    reply.as_deref(),
                    session.as_deref(),
                    *sse,
                    Some(what),
                )?;
                let timeout = timeout.as_ref().map(duration).transpose()?;
                Ok(AgentDef::Http(Arc::new(http::http_spec(
                    url, headers, timeout, *retries, wire, what,
                )?)))
            }
            AgentConfig::LangGraph(g) => {
                let timeout = g.timeout.as_ref().map(duration).transpose()?;
                let wire = super::wire::Wire::plain(what)?;
                let http = http::http_spec(&g.url, &g.headers, timeout, g.retries, wire, what)?;
                Ok(AgentDef::LangGraph(Arc::new(
                    langgraph::LangGraphSpec::new(
                        http,
                        g.assistant_id.clone(),
                        g.config.clone(),
                        g.context.clone(),
                        g.stream,
                    ),
                )))
            }
            AgentConfig::A2a(a) => {
                let timeout = a.timeout.as_ref().map(duration).transpose()?;
                Ok(AgentDef::A2a(Arc::new(a2a::A2aSpec::new(
                    a, config, timeout, what,
                )?)))
            }
            AgentConfig::Eliza(e) => {
                let timeout = e.timeout.as_ref().map(duration).transpose()?;
                let wire = super::wire::Wire::plain(what)?;
                let http = http::http_spec(&e.url, &e.headers, timeout, e.retries, wire, what)?;
                Ok(AgentDef::Eliza(Arc::new(eliza::ElizaSpec::new(
                    http,
                    e.agent_id.clone(),
                    e.stream,
                ))))
            }
            AgentConfig::OpenAi(o) => Ok(AgentDef::OpenAi(Arc::new(openai::OpenAiSpec::new(
                o, config, what,
            )?))),
        }
    }

    /// A process agent: its command, environment and directory expanded, its program
    /// found.
    fn process(
        command: &[String],
        cwd: Option<&String>,
        env: &std::collections::BTreeMap<String, String>,
        timeout: Option<&String>,
        config: &Config,
        what: &str,
    ) -> Result<AgentDef, AgentSetupError> {
        if command.is_empty() {
            return Err(AgentSetupError::EmptyCommand {
                table: what.to_string(),
                config: config.describe(),
            });
        }
        let argv = command
            .iter()
            .map(|a| expand_env(a, &format!("{what}.command")))
            .collect::<Result<Vec<_>, _>>()?;
        let env = env
            .iter()
            .map(|(k, v)| Ok((k.clone(), expand_secret(v, &format!("{what}.env.{k}"))?)))
            .collect::<Result<Vec<_>, AgentSetupError>>()?;
        let cwd_set = cwd.is_some();
        let cwd = match cwd {
            Some(c) => config.dir.join(expand_env(c, &format!("{what}.cwd"))?),
            None => config.dir.clone(),
        };
        let timeout = timeout.map(|t| parse_timeout(t, what)).transpose()?;
        // Checked once, before any case runs, rather than failing every case.
        if !crate::util::command::findable(&argv[0], &cwd, env.iter()) {
            return Err(AgentSetupError::NotFound {
                table: what.to_string(),
                program: command[0].clone(),
                config: config.describe(),
                on_path: !argv[0].contains('/'),
            });
        }
        Ok(AgentDef::Process(Arc::new(process::ProcessSpec {
            argv,
            // As written: `${VAR}`s stay unexpanded, since they may be secrets.
            shown: command.join(" "),
            cwd,
            cwd_set,
            env,
            timeout,
        })))
    }

    /// Starts one conversation (for a process agent, spawns the process); with
    /// `scope.tracer`, each of its turns is traced.
    pub(crate) async fn start(&self, scope: &CaseScope) -> Result<Session, AgentError> {
        let first = crate::trace::TurnContext::fresh();
        // A traced agent's turns replay from the cassette (modes replay, strict): the
        // agent itself is never started.
        let replay = scope.tracer.is_some() && scope.calls.replays_agent_turns();
        let inner = if replay {
            Inner::Replayed
        } else {
            self.start_inner(scope, &first).await?
        };
        Ok(Session {
            inner,
            trace: scope.tracer.clone().map(|tracer| SessionTrace {
                tracer,
                calls: scope.calls.clone(),
                replay,
                next: Some(first),
                pending: None,
            }),
        })
    }

    async fn start_inner(
        &self,
        scope: &CaseScope,
        first: &crate::trace::TurnContext,
    ) -> Result<Inner, AgentError> {
        Ok(match self {
            AgentDef::Process(spec) => {
                let env = scope
                    .tracer
                    .as_ref()
                    .map(|t| t.process_env(first))
                    .unwrap_or_default();
                let session = spec.spawn(scope.workdir.as_deref(), &env)?;
                // The case's agent starts first; a simulator or judge process must not
                // take its place.
                scope
                    .trace
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .get_or_insert_with(|| session.trace());
                Inner::Process(Box::new(session))
            }
            AgentDef::Http(spec) => Inner::Http(http::HttpSession::new(spec.clone(), scope)),
            AgentDef::OpenAi(spec) => {
                Inner::OpenAi(Box::new(openai::OpenAiSession::new(spec.clone(), scope)))
            }
            AgentDef::LangGraph(spec) => Inner::LangGraph(Box::new(
                langgraph::LangGraphSession::new(spec.clone(), scope),
            )),
            AgentDef::A2a(spec) => {
                // The card is read once per agent, by the first case that needs it.
                let endpoint = spec.endpoint().await?;
                Inner::A2a(Box::new(a2a::A2aSession::new(endpoint, scope)))
            }
            AgentDef::Eliza(spec) => {
                Inner::Eliza(Box::new(eliza::ElizaSession::new(spec.clone(), scope)))
            }
            AgentDef::InProcess(a) => Inner::InProcess(a.clone()),
        })
    }

    /// A short description for headers: `process: python3 agent.py`, `http: URL`, `in-process`.
    /// Built from the config's text before `${VAR}` expansion, and without a URL's user
    /// info and query: it never shows a secret.
    pub(crate) fn describe(&self) -> String {
        match self {
            AgentDef::Process(s) => format!("process: {}", s.shown),
            AgentDef::Http(s) => format!("http: {}", s.shown),
            AgentDef::OpenAi(s) => format!("openai: {}", s.shown),
            AgentDef::LangGraph(s) => format!("langgraph: {} ({})", s.http.shown, s.assistant_id),
            AgentDef::A2a(s) => format!("a2a: {}", s.shown),
            AgentDef::Eliza(s) => format!("eliza: {} ({})", s.http.shown, s.agent),
            AgentDef::InProcess(_) => "in-process".into(),
        }
    }
}

/// One conversation with an agent, and, when its spans are read, the trace of the turn
/// in flight.
pub(crate) struct Session {
    inner: Inner,
    trace: Option<SessionTrace>,
}

/// A traced conversation: the tracer, the context the next turn goes under (the first
/// one is made when the agent starts, for a process agent's `TRACEPARENT`), and the
/// turn sent whose spans are still to be read.
struct SessionTrace {
    tracer: Arc<crate::trace::Tracer>,
    /// The case's cassette, which records each traced turn (and replays it in `replay`).
    calls: Arc<crate::llm::ModelCalls>,
    /// Turns come from the cassette, not the agent.
    replay: bool,
    next: Option<crate::trace::TurnContext>,
    /// The turn sent whose spans are still to be read, and its cassette request.
    /// (The cassette request only when turns are recorded.)
    pending: Option<(crate::trace::TurnTrace, Option<serde_json::Value>)>,
}

impl Session {
    /// Whether a model answers in this session (an `openai` agent).
    pub(crate) fn is_model(&self) -> bool {
        self.inner.is_model()
    }

    /// What the last turn did before it failed (an `openai` agent's tool calls and
    /// tokens), for that turn's record.
    pub(crate) fn take_partial(&mut self) -> Option<Reply> {
        self.inner.take_partial()
    }

    /// Sends one turn and reads the reply, checking the protocol; says when the
    /// reply's first byte came. A traced turn goes under a fresh trace context: the
    /// request's `metadata.traceparent`, and a `traceparent` header on each of its HTTP
    /// requests; its spans are read by [`Session::read_spans`].
    pub(crate) async fn send(&mut self, request: &Request) -> Result<Timed<Reply>, StepError> {
        let Some(trace) = &mut self.trace else {
            return self.inner.send(request).await;
        };
        if trace.replay {
            let replayed = trace
                .calls
                .recorded_turn(&crate::trace::turn_request(request))
                .map_err(|e| StepError::Failed(e.to_string()))?;
            let Some(answer) = replayed else {
                return Err(StepError::Failed(format!(
                    "no recording of turn {} of this traced agent in {} (cassette mode replay): {:?}\nhint: record it with the agent running: AGENTEST_CASSETTES=record {}, then commit the cassette",
                    request.turn,
                    trace.calls.cassette_shown(),
                    crate::util::clip(&request.input),
                    crate::util::invocation::get()
                )));
            };
            return crate::trace::reply_of_answer(answer)
                .map(Timed::whole)
                .map_err(|e| StepError::Failed(e.to_string()));
        }
        let context = trace
            .next
            .take()
            .unwrap_or_else(crate::trace::TurnContext::fresh);
        let traceparent = context.traceparent();
        // Spans that carry the conversation's id join it too: the agent's, once it has
        // one, else agentest's own session id.
        let conversation = self
            .inner
            .conversation_id()
            .unwrap_or(&request.session_id)
            .to_string();
        let recorded = trace
            .calls
            .records_agent_turns()
            .then(|| crate::trace::turn_request(request));
        trace.pending = Some((trace.tracer.begin(context, Some(conversation)), recorded));
        let mut traced = request.clone();
        if !traced.metadata.is_object() {
            traced.metadata = serde_json::Value::Object(Default::default());
        }
        traced.metadata["traceparent"] = serde_json::Value::String(traceparent.clone());
        self.inner.set_traceparent(Some(&traceparent));
        self.inner.send(&traced).await
    }

    /// Waits for the spans of the turn just answered to settle and adds what they say to
    /// `reply` (see [`crate::trace::TurnSpans::merge_into`]); nothing for an agent
    /// whose spans are not read.
    pub(crate) async fn read_spans(&mut self, reply: &mut Reply) {
        let Some(trace) = &mut self.trace else {
            return;
        };
        let Some((pending, recorded)) = trace.pending.take() else {
            return;
        };
        // The first turn of a LangGraph thread or an A2A context learns its id from the
        // answer: spans that carry it belong here.
        if let Some(id) = self.inner.conversation_id() {
            trace.tracer.name_session(&pending, id);
        }
        let spans = trace.tracer.finish(pending).await;
        spans.merge_into(reply);
        // Recorded whole, spans and all, so that a replay gives the same verdicts.
        if let Some(recorded) = recorded {
            if let Err(e) = trace
                .calls
                .record_turn(&recorded, crate::trace::turn_answer(reply))
            {
                eprintln!("agentest: {}", crate::util::scrub(&e.to_string()));
            }
        }
    }

    /// Ends the conversation; a process agent is killed.
    pub(crate) async fn close(self) {
        self.inner.close().await;
    }

    /// Ends the case's conversation with the agent under test: as [`Session::close`],
    /// but a process agent is first given its end of input and checked for lines it
    /// wrote beyond its replies (up to `deadline`; see `ProcessSession::finish`).
    pub(crate) async fn finish(self, deadline: tokio::time::Instant) -> Result<(), AgentError> {
        self.inner.finish(deadline).await
    }
}

/// One conversation with an agent, by kind.
enum Inner {
    Process(Box<process::ProcessSession>),
    Http(http::HttpSession),
    OpenAi(Box<openai::OpenAiSession>),
    LangGraph(Box<langgraph::LangGraphSession>),
    A2a(Box<a2a::A2aSession>),
    Eliza(Box<eliza::ElizaSession>),
    InProcess(Arc<dyn Agent>),
    /// A traced agent whose turns come from the cassette: never sent to.
    Replayed,
}

impl Inner {
    /// Whether a model answers in this session (an `openai` agent).
    fn is_model(&self) -> bool {
        matches!(self, Inner::OpenAi(_))
    }

    /// What the last turn did before it failed (an `openai` agent's tool calls and
    /// tokens), for that turn's record.
    fn take_partial(&mut self) -> Option<Reply> {
        match self {
            Inner::OpenAi(o) => o.take_partial(),
            _ => None,
        }
    }

    /// Sends `traceparent` (the turn's W3C trace context) on every HTTP request of the
    /// turn to come, for the kinds that speak HTTP; the others get it in the request's
    /// `metadata.traceparent` alone.
    fn set_traceparent(&mut self, traceparent: Option<&str>) {
        match self {
            Inner::Http(h) => h.set_traceparent(traceparent),
            Inner::LangGraph(g) => g.set_traceparent(traceparent),
            Inner::A2a(a) => a.set_traceparent(traceparent),
            Inner::Eliza(e) => e.set_traceparent(traceparent),
            Inner::Process(_) | Inner::OpenAi(_) | Inner::InProcess(_) | Inner::Replayed => {}
        }
    }

    /// The conversation's id as the agent knows it (a LangGraph thread, an A2A
    /// `contextId`, an ElizaOS session, an HTTP agent's `[session]` id), once it has
    /// one: spans that carry it in a session attribute belong to the conversation.
    fn conversation_id(&self) -> Option<&str> {
        match self {
            Inner::Http(h) => h.conversation_id(),
            Inner::LangGraph(g) => g.conversation_id(),
            Inner::A2a(a) => a.conversation_id(),
            Inner::Eliza(e) => e.conversation_id(),
            Inner::Process(_) | Inner::OpenAi(_) | Inner::InProcess(_) | Inner::Replayed => None,
        }
    }

    /// Sends one turn and reads the reply, checking the protocol; says when the
    /// reply's first byte came.
    async fn send(&mut self, request: &Request) -> Result<Timed<Reply>, StepError> {
        match self {
            Inner::OpenAi(o) => o.send(request).await,
            other => Ok(other.send_plain(request).await?),
        }
    }

    async fn send_plain(&mut self, request: &Request) -> Result<Timed<Reply>, AgentError> {
        match self {
            Inner::OpenAi(_) => unreachable!("handled by send"),
            Inner::Process(p) => p.send(request).await,
            Inner::Http(h) => h.send(request).await,
            Inner::LangGraph(g) => g.send(request).await,
            Inner::A2a(a) => a.send(request).await,
            Inner::Eliza(e) => e.send(request).await,
            // An in-process agent's answer comes whole.
            Inner::InProcess(a) => respond(a, request).await.map(Timed::whole),
            Inner::Replayed => unreachable!("a replayed session answers from its cassette"),
        }
    }

    /// Ends the conversation; a process agent is killed.
    async fn close(self) {
        if let Inner::Process(p) = self {
            p.close().await;
        }
    }

    /// Ends the case's conversation with the agent under test: as [`Inner::close`],
    /// but a process agent is first given its end of input and checked for lines it
    /// wrote beyond its replies (up to `deadline`; see `ProcessInner::finish`).
    async fn finish(self, deadline: tokio::time::Instant) -> Result<(), AgentError> {
        match self {
            Inner::Process(p) => p.finish(deadline).await,
            other => {
                other.close().await;
                Ok(())
            }
        }
    }
}

/// Asks an in-process agent; a panic is an agent error.
async fn respond(a: &Arc<dyn Agent>, request: &Request) -> Result<Reply, AgentError> {
    if a.is_blocking() {
        // On the blocking pool, so that the caller's timeout can fire while it computes
        // and a panic stays in that task.
        let agent = a.clone();
        let request = request.clone();
        let handle = tokio::runtime::Handle::current();
        tokio::task::spawn_blocking(move || handle.block_on(agent.respond(&request)))
            .await
            .map_err(|e| match e.try_into_panic() {
                Ok(payload) => panicked(payload.as_ref()),
                Err(e) => AgentError::Task(e),
            })?
            .map_err(AgentError::Returned)
    } else {
        CatchUnwind(a.respond(request))
            .await
            .map_err(|payload| panicked(payload.as_ref()))?
            .map_err(AgentError::Returned)
    }
}

/// An agent's `timeout`, with the key it was read from for the error.
fn parse_timeout(t: &str, what: &str) -> Result<std::time::Duration, AgentSetupError> {
    crate::util::parse_duration(t).map_err(|source| AgentSetupError::Duration {
        key: format!("{what}.timeout"),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::util::BoxFuture;
    use std::time::Duration;

    fn request() -> Request {
        Request {
            session_id: "s".into(),
            test_id: "T".into(),
            turn: 1,
            input: "hi".into(),
            messages: Vec::new(),
            options: serde_json::Value::Null,
            metadata: serde_json::Value::Null,
            attachments: Vec::new(),
            setup: None,
        }
    }

    async fn session(agent: impl Agent) -> Session {
        let def = AgentDef::InProcess(Arc::new(agent));
        let scope = CaseScope {
            calls: Arc::new(crate::llm::ModelCalls::new(
                "unused.jsonl".into(),
                crate::config::CassetteMode::Off,
            )),
            mocks: Vec::new(),
            seed: 0,
            salt: String::new(),
            live: false,
            deadline: tokio::time::Instant::now() + Duration::from_secs(60),
            role: crate::protocol::Role::Agent,
            trace: Default::default(),
            workdir: None,
            source_llms: None,
            tracer: None,
        };
        def.start(&scope).await.unwrap_or_else(|_| panic!("start"))
    }

    #[tokio::test]
    async fn a_panicking_function_agent_is_an_agent_error() {
        fn boom(_: &Request) -> Result<Reply, String> {
            panic!("boom {}", 42)
        }
        let mut s = session(boom).await;
        let e = s.send(&request()).await.unwrap_err();
        assert_eq!(e, StepError::Broken("agent panicked: boom 42".into()));
        let mut s = session(|_: &Request| -> Result<Reply, String> { panic!("static text") }).await;
        let e = s.send(&request()).await.unwrap_err();
        assert_eq!(e, StepError::Broken("agent panicked: static text".into()));
    }

    #[tokio::test]
    async fn a_sleeping_function_agent_can_be_timed_out() {
        let mut s = session(|r: &Request| {
            std::thread::sleep(Duration::from_secs(1));
            Ok(Reply::text(r.input.clone()))
        })
        .await;
        let started = std::time::Instant::now();
        let r = tokio::time::timeout(Duration::from_millis(100), s.send(&request())).await;
        assert!(r.is_err(), "the send should have timed out");
        assert!(
            started.elapsed() < Duration::from_millis(800),
            "{:?}",
            started.elapsed()
        );
    }

    #[tokio::test]
    async fn function_agents_still_answer() {
        let mut s = session(|r: &Request| Ok(Reply::text(format!("echo {}", r.input)))).await;
        let reply = s.send(&request()).await.unwrap();
        assert_eq!(reply.value, Reply::text("echo hi"));
        assert_eq!(reply.first_byte, None, "an in-process reply comes whole");
        let e = session(|_: &Request| -> Result<Reply, String> { Err("nope".into()) })
            .await
            .send(&request())
            .await
            .unwrap_err();
        assert_eq!(e, StepError::Broken("agent error: nope".into()));
    }

    #[test]
    fn header_errors_name_their_table() {
        let cfg = AgentConfig::Http {
            url: "http://127.0.0.1:1/".into(),
            headers: [("bad name".to_string(), "secret".to_string())].into(),
            timeout: None,
            retries: None,
            format: Default::default(),
            body: None,
            reply: None,
            session: None,
            sse: false,
        };
        let Err(e) = AgentDef::from_config(&cfg, &Config::default(), "[agent]") else {
            panic!("a header name with a space is invalid");
        };
        assert!(
            matches!(&e, AgentSetupError::HeaderName { table, name } if table == "[agent]" && name == "bad name"),
            "{e:?}"
        );
        assert_eq!(
            e.to_string(),
            "[agent].headers: invalid header name `bad name`"
        );
    }

    struct AsyncPanics;

    impl Agent for AsyncPanics {
        fn respond<'a>(&'a self, _: &'a Request) -> BoxFuture<'a, Result<Reply, String>> {
            Box::pin(async {
                tokio::task::yield_now().await;
                panic!("async boom")
            })
        }
    }

    #[tokio::test]
    async fn a_panicking_async_agent_is_an_agent_error() {
        let e = session(AsyncPanics)
            .await
            .send(&request())
            .await
            .unwrap_err();
        assert_eq!(e, StepError::Broken("agent panicked: async boom".into()));
    }
}
