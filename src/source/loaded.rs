//! What loading a suite yields: one entry per case, read or broken, named by its trial
//! (`<suite>::<id>`).

use std::path::PathBuf;
use std::sync::Arc;

use crate::case::Case;
use crate::source::generator::GeneratorSpec;
use crate::source::CaseError;

/// The separator between suite and case id in trial names. Here, with the entries
/// whose trial names it joins, so that every format can use it without importing
/// discovery, which in turn names every format.
pub(crate) const SEPARATOR: &str = "::";

/// One line of a suite, read: a case, or the error that stopped it.
#[derive(Debug, Clone)]
pub struct Loaded {
    /// The suite name (`billing/refunds`).
    pub suite: String,
    /// The trial name (`billing/refunds::T001`, or `billing/refunds::line-7` without a usable id).
    pub trial: String,
    /// The suite file.
    pub file: PathBuf,
    /// The case, or why it could not be read. Both boxed, so that the plan's vector and
    /// its copies (sorting, sharing the cases between tasks) move small entries.
    pub entry: Result<Box<Case>, Box<CaseError>>,
    /// What a generator has to do with the entry, if anything.
    pub generation: Option<Generation>,
}

/// An entry's part in case generation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Generation {
    /// A generator line (`{"generate": "agents:NAME?count=5"}`, or `-i agents:NAME`): the
    /// run replaces it with the generator's cases when it plans. Its `entry` says so, for
    /// a reader that does not expand generators.
    Pending {
        /// The generator.
        spec: Arc<GeneratorSpec>,
        /// It came from `-i` (its cases are the suite `generated/NAME`, located by
        /// their index), not from a suite line.
        command_line: bool,
    },
    /// A generated case whose id was taken: it runs under a new one, and its record
    /// says so with this note.
    Renamed(String),
}
