//! What a case's record says of its golden file.

use serde::{Deserialize, Serialize};

/// The outcome of comparing a case with its golden file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GoldenCheck {
    /// The golden file.
    pub file: String,
    /// `matched`, `updated`, `mismatch`, `missing`, or `error` (the file could not be
    /// read or written).
    pub outcome: String,
    /// The `.new` file written for review, when one was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pending: Option<String>,
}
