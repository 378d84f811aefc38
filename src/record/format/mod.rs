//! Report formats, chosen by the output file's extension. Each renderer takes the
//! run, its summary and the case records; [`common`] holds what they share.

pub(crate) mod common;
pub mod html;
pub mod json;
pub mod junit;
pub mod markdown;
mod text;

pub(crate) use text::failure_message;

use std::path::Path;

use crate::record::{CaseReport, RunInfo, Summary};
use common::summary_for;

/// A report format, chosen by the output file's extension.
///
/// Every renderer takes the run, its [`Summary`] and the case records. A summary that
/// counted nothing (`total` 0, as when a nextest run left no summary line) is recounted
/// from the cases; one without a `duration_ms` takes the run's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Format {
    /// `.jsonl`: one record per case, then the summary line.
    Jsonl,
    /// `.json`: one document ([`json::render`]).
    Json,
    /// `.md`, `.markdown`: a readable summary ([`markdown::render`]).
    Markdown,
    /// `.xml`: JUnit XML ([`junit::render`]).
    Junit,
    /// `.html`, `.htm`: one self-contained page ([`html::render`]).
    Html,
}

impl Format {
    /// The format for `path`'s extension (case-insensitive), or `None` for any other.
    pub fn from_path(path: &Path) -> Option<Format> {
        let ext = path.extension()?.to_str()?.to_ascii_lowercase();
        Some(match ext.as_str() {
            "jsonl" => Format::Jsonl,
            "json" => Format::Json,
            "md" | "markdown" => Format::Markdown,
            "xml" => Format::Junit,
            "html" | "htm" => Format::Html,
            _ => return None,
        })
    }

    /// The extensions [`Format::from_path`] knows, for error messages.
    pub const EXTENSIONS: &'static [&'static str] =
        &["jsonl", "json", "md", "markdown", "xml", "html", "htm"];

    /// Renders the whole report in this format. `Jsonl` gives the case records in the
    /// order given, then the summary line (the streaming [`crate::record::JsonlWriter`] writes
    /// the same lines as cases end).
    pub fn render(self, run: &RunInfo, summary: &Summary, cases: &[CaseReport]) -> String {
        match self {
            Format::Jsonl => {
                let mut s = String::new();
                for c in cases {
                    s.push_str(&serde_json::to_string(c).unwrap_or_default());
                    s.push('\n');
                }
                s.push_str(
                    &serde_json::to_string(&summary_for(run, summary, cases)).unwrap_or_default(),
                );
                s.push('\n');
                s
            }
            Format::Json => json::render(run, summary, cases),
            Format::Markdown => markdown::render(run, summary, cases),
            Format::Junit => junit::render(run, summary, cases),
            Format::Html => html::render(run, summary, cases),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::Format;

    #[test]
    fn format_by_extension() {
        let f = |p: &str| Format::from_path(Path::new(p));
        assert_eq!(f("r.jsonl"), Some(Format::Jsonl));
        assert_eq!(f("out/r.JSON"), Some(Format::Json));
        assert_eq!(f("r.md"), Some(Format::Markdown));
        assert_eq!(f("junit.xml"), Some(Format::Junit));
        assert_eq!(f("r.html"), Some(Format::Html));
        assert_eq!(f("r.txt"), None);
        assert_eq!(f("report"), None);
    }
}
