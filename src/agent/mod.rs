//! Agents under test: the protocol, the in-process trait, and the process and HTTP kinds.

mod http;
mod process;
mod protocol;

pub use protocol::{Reply, Request, ToolCall, Usage};

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use crate::config::{expand_env, AgentConfig, Config};

/// A boxed future, as [`Agent::respond`] returns.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// An agent that lives in the test binary: no process, no socket.
///
/// Every request carries the whole conversation in `messages`, so an implementation
/// can be stateless. A plain function or closure `Fn(&Request) -> Result<Reply, String>`
/// is an `Agent` already; implement the trait for async agents.
pub trait Agent: Send + Sync + 'static {
    /// Answers one turn. `Err` is an agent error (the case's status becomes `error`).
    fn respond<'a>(&'a self, request: &'a Request) -> BoxFuture<'a, Result<Reply, String>>;
}

impl<F> Agent for F
where
    F: Fn(&Request) -> Result<Reply, String> + Send + Sync + 'static,
{
    fn respond<'a>(&'a self, request: &'a Request) -> BoxFuture<'a, Result<Reply, String>> {
        let r = self(request);
        Box::pin(async move { r })
    }
}

/// An agent definition, ready to start conversations.
#[derive(Clone)]
pub(crate) enum AgentDef {
    Process(Arc<process::ProcessSpec>),
    Http(Arc<http::HttpSpec>),
    InProcess(Arc<dyn Agent>),
}

impl AgentDef {
    /// Builds a definition from config, expanding `${VAR}`s. `what` names it for errors.
    pub(crate) fn from_config(
        cfg: &AgentConfig,
        config: &Config,
        what: &str,
    ) -> Result<AgentDef, String> {
        match cfg {
            AgentConfig::Process {
                command,
                cwd,
                env,
                timeout,
            } => {
                if command.is_empty() {
                    return Err(format!("{what}.command is empty in {}", config.describe()));
                }
                let argv = command
                    .iter()
                    .map(|a| expand_env(a, &format!("{what}.command")))
                    .collect::<Result<Vec<_>, _>>()?;
                let env = env
                    .iter()
                    .map(|(k, v)| Ok((k.clone(), expand_env(v, &format!("{what}.env.{k}"))?)))
                    .collect::<Result<Vec<_>, String>>()?;
                let cwd = match cwd {
                    Some(c) => config.dir.join(expand_env(c, &format!("{what}.cwd"))?),
                    None => config.dir.clone(),
                };
                let timeout = match timeout {
                    Some(t) => Some(
                        crate::duration::parse_duration(t)
                            .map_err(|e| format!("{what}.timeout: {e}"))?,
                    ),
                    None => None,
                };
                Ok(AgentDef::Process(Arc::new(process::ProcessSpec {
                    argv,
                    cwd,
                    env,
                    timeout,
                })))
            }
            AgentConfig::Http {
                url,
                headers,
                timeout,
            } => {
                let url = expand_env(url, &format!("{what}.url"))?;
                let url = reqwest::Url::parse(&url)
                    .map_err(|e| format!("{what}.url \"{url}\" is not a valid URL: {e}"))?;
                let headers = headers
                    .iter()
                    .map(|(k, v)| Ok((k.clone(), expand_env(v, &format!("{what}.headers.{k}"))?)))
                    .collect::<Result<Vec<_>, String>>()?;
                let timeout = match timeout {
                    Some(t) => Some(
                        crate::duration::parse_duration(t)
                            .map_err(|e| format!("{what}.timeout: {e}"))?,
                    ),
                    None => None,
                };
                Ok(AgentDef::Http(Arc::new(http::HttpSpec::new(
                    url, headers, timeout,
                )?)))
            }
        }
    }

    /// Starts one conversation (for a process agent, spawns the process).
    pub(crate) async fn start(&self) -> Result<Session, String> {
        Ok(match self {
            AgentDef::Process(spec) => Session::Process(Box::new(spec.spawn()?)),
            AgentDef::Http(spec) => Session::Http(spec.clone()),
            AgentDef::InProcess(a) => Session::InProcess(a.clone()),
        })
    }

    /// A short description for headers: `process: python3 agent.py`, `http: URL`, `in-process`.
    pub(crate) fn describe(&self) -> String {
        match self {
            AgentDef::Process(s) => format!("process: {}", s.argv.join(" ")),
            AgentDef::Http(s) => format!("http: {}", s.url),
            AgentDef::InProcess(_) => "in-process".into(),
        }
    }
}

/// One conversation with an agent.
pub(crate) enum Session {
    Process(Box<process::ProcessSession>),
    Http(Arc<http::HttpSpec>),
    InProcess(Arc<dyn Agent>),
}

impl Session {
    /// Sends one turn and reads the reply, checking the protocol.
    pub(crate) async fn send(&mut self, request: &Request) -> Result<Reply, String> {
        match self {
            Session::Process(p) => p.send(request).await,
            Session::Http(h) => h.send(request).await,
            Session::InProcess(a) => a
                .respond(request)
                .await
                .map_err(|e| format!("agent error: {e}")),
        }
    }

    /// Ends the conversation; a process agent is killed.
    pub(crate) async fn close(self) {
        if let Session::Process(p) = self {
            p.close().await;
        }
    }
}

/// The default per-request timeout of HTTP agents when neither the agent nor the case sets one.
pub(crate) const DEFAULT_HTTP_TIMEOUT: Duration = Duration::from_secs(300);
