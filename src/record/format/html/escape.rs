//! Text made safe for the HTML report.

use crate::record::format::common::clean;

/// HTML-escaped text (for element content and double- or single-quoted attributes),
/// cleaned of ANSI escapes and control characters.
pub(crate) fn esc(raw: &str) -> String {
    let mut out = String::with_capacity(raw.len() + 16);
    for c in clean(raw).chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            '\r' => {}
            c => out.push(c),
        }
    }
    out
}
