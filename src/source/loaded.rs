//! What loading a suite yields: one entry per case, read or broken.

use std::path::PathBuf;

use crate::case::Case;
use crate::source::CaseError;

/// One line of a suite, read: a case, or the error that stopped it.
#[derive(Debug, Clone)]
pub struct Loaded {
    /// The suite name (`billing/refunds`).
    pub suite: String,
    /// The trial name (`billing/refunds::T001`, or `billing/refunds::line-7` without a usable id).
    pub trial: String,
    /// The suite file.
    pub file: PathBuf,
    /// The case, or why it could not be read.
    pub entry: Result<Case, CaseError>,
}
