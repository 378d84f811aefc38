//! Small helpers every stage uses: text for messages, atomic writes, paths, durations,
//! child processes and keeping secrets out of messages.

pub(crate) mod command;
mod duration;
mod fs;
pub(crate) mod http;
pub(crate) mod ids;
pub(crate) mod invocation;
mod json;
mod paths;
mod secrets;
#[cfg(unix)]
pub(crate) mod signals;
mod store_address;
mod text;

/// A boxed future, as [`crate::Agent::respond`] returns.
pub type BoxFuture<'a, T> = std::pin::Pin<Box<dyn std::future::Future<Output = T> + Send + 'a>>;

pub use duration::{format_duration, parse_duration};
pub(crate) use duration::{parse_timeout, DurationError};
pub(crate) use fs::{check_writable, create_parents, write_atomically};
pub(crate) use json::json_subset;
pub(crate) use json::{json_eq, tool_name_matches, type_of};
pub use paths::display_path;
pub(crate) use paths::{beside, file_name_for_id};
pub(crate) use secrets::{
    any_secret, error_chain, expand_env, expand_secret, masks_a_secret, register_secret,
    root_cause, scrub, scrub_json, shown_args, shown_url,
};
pub(crate) use secrets::{ApiKey, EnvError};
pub(crate) use store_address::{DatabaseUrl, StoreAddress};
pub(crate) use text::suggest;
pub(crate) use text::{
    clip, compact, count, grouped, panic_text, plural, same_words, slug, value_text,
};
