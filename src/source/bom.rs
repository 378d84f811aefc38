//! A byte-order mark left in the middle of a file: every text format (JSONL, YAML, a
//! JSON document) names it the same way. A leaf of its own, so that the formats need not
//! import the file reader that dispatches to them.

/// The byte-order mark a file may start with (RFC 8259 lets parsers ignore it there).
const BOM: char = '\u{FEFF}';

/// When a syntax error at byte `at` of `line` is a byte-order mark (the one a file
/// starts with, left in the middle when files are concatenated): the message saying
/// so, at line `n`, and the BOM's 1-based character column. Parsers only say
/// "expected value" of it, and it is invisible in an editor.
pub(crate) fn stray_bom(line: &str, n: usize, at: usize) -> Option<(String, usize)> {
    // Parsers point at the mark or just past it.
    let byte = [at, at.saturating_sub(BOM.len_utf8())]
        .into_iter()
        .find(|&b| line.get(b..).is_some_and(|rest| rest.starts_with(BOM)))?;
    let column = line[..byte].chars().count() + 1;
    Some((
        format!("a byte-order mark (U+FEFF) in the middle of the file at line {n}, column {column}; files concatenated? remove it"),
        column,
    ))
}

#[cfg(test)]
mod tests {
    use super::stray_bom;

    #[test]
    fn a_byte_order_mark_where_the_parser_stopped_is_named() {
        let line = "é \u{FEFF}{\"id\": 1}";
        let (message, column) = stray_bom(line, 4, 3).unwrap();
        assert_eq!(column, 3);
        assert_eq!(message, "a byte-order mark (U+FEFF) in the middle of the file at line 4, column 3; files concatenated? remove it");
        // Just past it, as some parsers report.
        assert_eq!(stray_bom(line, 4, 6).map(|(_, c)| c), Some(3));
        assert_eq!(stray_bom(line, 4, 0), None);
        assert_eq!(stray_bom("{}", 1, 9), None);
    }
}
