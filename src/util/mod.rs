//! Small helpers every stage uses: text for messages, atomic writes, paths, durations,
//! child processes and keeping secrets out of messages.

pub(crate) mod command;
mod duration;
mod fs;
mod paths;
mod secrets;
mod text;

pub use duration::{format_duration, parse_duration, parse_timeout};
pub(crate) use fs::write_atomically;
pub(crate) use paths::beside;
pub use paths::display_path;
pub(crate) use secrets::{expand_env, root_cause, shown_url};
pub(crate) use text::{clip, compact, panic_text, value_text};
