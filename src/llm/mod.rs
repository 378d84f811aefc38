//! Talking to models: an OpenAI-compatible chat-completions client with retries and
//! limits, and cassettes that record and replay every call so CI runs offline.

mod calls;
pub(crate) mod cassette;
mod client;
mod limiter;
mod request;
mod rng;
mod spend;
mod structured;

pub(crate) use calls::{CallStats, ModelCalls};
pub(crate) use client::{ChatOutcome, Endpoint};
pub(crate) use limiter::set_parallelism;
pub(crate) use request::ChatRequest;
pub use rng::SeededRng;
pub(crate) use spend::{Meter, Meters};
pub(crate) use structured::chat_for_json;
