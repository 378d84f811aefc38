//! Text for messages: values as text, long texts clipped.

use serde_json::Value;

/// Compact JSON for messages, clipped.
pub(crate) fn compact(v: &Value) -> String {
    clip(&v.to_string())
}

/// A whole number with thousands separated by commas: `12,345`.
pub(crate) fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Long texts are cut in messages; the report keeps them whole.
///
/// The middle goes, not the end: a server's error body or a stack of wrappers often names
/// the cause last, and the start says what it is about.
pub(crate) fn clip(s: &str) -> String {
    const HEAD: usize = 240;
    const TAIL: usize = 160;
    let count = s.chars().count();
    if count <= HEAD + TAIL {
        return s.to_string();
    }
    let head: String = s.chars().take(HEAD).collect();
    let tail: String = s.chars().skip(count - TAIL).collect();
    format!("{head} …({} chars left out)… {tail}", count - HEAD - TAIL)
}

/// Text of a JSON value: a string as it is, anything else as compact JSON, null as "".
pub(crate) fn value_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// The message of a panic caught by `spawn_blocking`.
pub(crate) fn panic_text(e: tokio::task::JoinError) -> String {
    match e.try_into_panic() {
        Ok(p) => p
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| p.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "a non-text panic".into()),
        Err(e) => e.to_string(),
    }
}

/// The closest known word, when it is close enough to be a likely typo.
pub(crate) fn suggest<'a>(word: &str, known: &[&'a str]) -> Option<&'a str> {
    known
        .iter()
        .map(|k| (strsim::damerau_levenshtein(word, k), *k))
        .filter(|(d, k)| *d <= 2.max(k.len() / 3) && *d < k.len().max(word.len()))
        .min_by_key(|(d, _)| *d)
        .map(|(_, k)| k)
        .or_else(|| {
            // A prefix or suffix ("assertion" for "assertions", "args" for "arguments").
            known
                .iter()
                .copied()
                .find(|k| word.len() >= 3 && (k.starts_with(word) || word.starts_with(k)))
        })
}

/// A name as a trial id: lower case, words joined by `-` (a scenario's `Basic Multi-Turn
/// Conversation Test` is `basic-multi-turn-conversation-test`; EvalStudio's evals,
/// scenarios and personas are named the same way).
/// Whether two texts say the same words, case and spacing aside (a repeated message).
pub(crate) fn same_words(a: &str, b: &str) -> bool {
    let norm = |s: &str| {
        s.split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
            .to_lowercase()
    };
    norm(a) == norm(b)
}

pub(crate) fn slug(name: &str) -> String {
    let mut out = String::new();
    for c in name.chars() {
        if c.is_alphanumeric() {
            out.extend(c.to_lowercase());
        } else if !out.is_empty() && !out.ends_with('-') {
            out.push('-');
        }
    }
    out.trim_end_matches('-').to_string()
}

#[cfg(test)]
mod tests {
    use super::{clip, grouped, slug};

    #[test]
    fn slugs_are_stable_words() {
        assert_eq!(
            slug("Basic Multi-Turn Conversation Test"),
            "basic-multi-turn-conversation-test"
        );
        assert_eq!(slug("  GitHub: issues (v2)!"), "github-issues-v2");
        assert_eq!(slug("Été à Zürich"), "été-à-zürich");
        assert_eq!(slug("!!!"), "");
    }

    #[test]
    fn thousands_are_grouped() {
        let all: Vec<String> = [0, 999, 1000, 12_345, 1_234_567]
            .into_iter()
            .map(grouped)
            .collect();
        assert_eq!(all, ["0", "999", "1,000", "12,345", "1,234,567"]);
    }

    #[test]
    fn clipping_keeps_the_start_and_the_end() {
        assert_eq!(clip("short"), "short");
        let long = format!("{}CAUSE", "x".repeat(1000));
        let c = clip(&long);
        assert!(
            c.starts_with(&"x".repeat(240)) && c.ends_with("xCAUSE"),
            "{c}"
        );
        assert!(c.contains("…(605 chars left out)…"), "{c}");
    }
}

/// `one` or `many`, by `n`: the one pluralisation every message uses (`1 case`,
/// `2 cases`; `error`/`errors`; `its case is`/`their cases are`).
pub(crate) fn plural<'a>(n: impl Into<u64>, one: &'a str, many: &'a str) -> &'a str {
    if n.into() == 1 {
        one
    } else {
        many
    }
}

/// `n` and its noun, pluralised: `1 case`, `3 cases`.
pub(crate) fn count(n: impl Into<u64> + Copy, one: &str, many: &str) -> String {
    format!("{} {}", n.into(), plural(n, one, many))
}

#[cfg(test)]
mod plural_tests {
    use super::{count, plural};

    #[test]
    fn one_is_singular_and_everything_else_plural() {
        assert_eq!(count(1u64, "case", "cases"), "1 case");
        assert_eq!(count(0u64, "case", "cases"), "0 cases");
        assert_eq!(count(2u32, "run", "runs"), "2 runs");
        assert_eq!(
            plural(1u32, "its case is", "their cases are"),
            "its case is"
        );
        assert_eq!(
            plural(7u32, "its case is", "their cases are"),
            "their cases are"
        );
    }
}
