//! Where cases come from: the suite files under a suites root and the formats they are
//! written in. Every format produces the one case model ([`crate::case`]) and located
//! errors in one shape ([`CaseError`]).

mod assertion;
mod bom;
mod discover;
pub(crate) mod document;
mod evalstudio;
pub(crate) mod fields;
mod file;
mod foreign;
mod formats;
pub(crate) mod generate;
mod generator;
mod jsonl;
mod labels;
mod loaded;
mod mocks;
pub(crate) mod tau2;
mod yaml;

pub use crate::errors::CaseError;
pub(crate) use assertion::{compile_regex, parse_assertions};
pub(crate) use discover::files_for_trial;
pub use discover::{discover, discover_excluding};
pub(crate) use evalstudio::read_personas_file;
pub use file::load_file;
pub(crate) use formats::suite_name;
pub(crate) use generator::{GeneratorKind, GeneratorSpec};
pub(crate) use jsonl::{column_of_path, steps as path_steps, Step as PathStep};
pub use jsonl::{parse_case, parse_suite, parse_suite_bytes, CASE_KEYS};
pub(crate) use labels::{read_labels, LabelledItem};
pub use loaded::Loaded;
pub(crate) use loaded::{Generation, SEPARATOR};
pub(crate) use mocks::parse_config_mocks;
pub use mocks::parse_mocks;
pub(crate) use yaml::is_scenario;

/// Whether a file of this (lowercase) name is one of an EvalStudio project's.
pub(crate) fn is_evalstudio(name: &str) -> bool {
    evalstudio::kind_of(name).is_some()
}
