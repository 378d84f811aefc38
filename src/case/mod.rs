//! Test cases: the model, and the parser that reads them from JSON Lines.

pub(crate) mod fields;
mod json;
mod locate;
pub(crate) use locate::column_of_path;
mod model;
mod parse;

pub use fields::FieldError;
pub use model::{
    value_text, Case, Checkpoint, Input, Interactive, Location, Message, Mode, ScriptRule,
    Simulator, Turn,
};
pub use parse::{parse_case, CaseError, CASE_KEYS};
