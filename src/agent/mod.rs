//! Agents under test: in-process agents, child processes speaking JSON lines, HTTP
//! endpoints and `openai` models, all behind one [`Session`].

mod a2a;
mod eliza;
mod http;
mod in_process;
mod langgraph;
pub(crate) mod mocks;
mod openai;
mod process;
mod scope;
mod session;
mod sse;
mod timed;
mod wire;

pub use in_process::{async_agent, Agent};
pub(crate) use scope::CaseScope;
pub(crate) use session::{AgentDef, Session};
pub(crate) use timed::Timed;
pub(crate) use wire::check_http_wire;
