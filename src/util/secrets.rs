//! Keeping secrets out of messages: `${VAR}` expansion that never shows a value, URLs
//! with their credentials masked, and errors reduced to their cause.

/// A `${VAR}` reference in the config that cannot be expanded. Never holds a value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EnvError {
    /// `${` without its `}`.
    #[error("unclosed `${{` in {what}; write variables as ${{NAME}}")]
    Unclosed {
        /// The setting, like `[agent].url`.
        what: String,
    },
    /// The variable is not set.
    #[error("environment variable `{name}` is not set (used in {what})")]
    Unset {
        /// The variable.
        name: String,
        /// The setting, like `[agent].url`.
        what: String,
    },
    /// `${}`, or `${...}` holding something other than a name and an optional default.
    #[error("`${{{inside}}}` in {what} names no variable; write ${{NAME}}, or ${{NAME:-default}} for a value to use when NAME is unset or empty")]
    NoName {
        /// What is between the braces.
        inside: String,
        /// The setting, like `[agent].url`.
        what: String,
    },
}

/// Expands `${VAR}` references from the environment; `${VAR:-default}` gives `default`
/// when `VAR` is unset or empty, as the shell does. `what` names the setting for errors;
/// the value itself is never put in an error, since it may be a secret.
pub(crate) fn expand_env(text: &str, what: &str) -> Result<String, EnvError> {
    expand_with(text, what, &mut |_| {})
}

/// [`expand_env`] for a setting that may carry a credential (a URL, a header): every
/// value taken from the environment is remembered, and [`scrub`] removes it from any
/// text agentest shows or writes, such as a server's reply that echoes it back.
pub(crate) fn expand_secret(text: &str, what: &str) -> Result<String, EnvError> {
    expand_with(text, what, &mut |v| register_secret(v))
}

fn expand_with(text: &str, what: &str, taken: &mut dyn FnMut(&str)) -> Result<String, EnvError> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else {
            return Err(EnvError::Unclosed {
                what: what.to_string(),
            });
        };
        let inside = &after[..end];
        let (name, default) = match inside.split_once(":-") {
            Some((name, default)) => (name, Some(default)),
            None => (inside, None),
        };
        let is_name = !name.is_empty()
            && !name.starts_with(|c: char| c.is_ascii_digit())
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !is_name {
            return Err(EnvError::NoName {
                inside: inside.to_string(),
                what: what.to_string(),
            });
        }
        match (std::env::var(name), default) {
            (Ok(v), Some(d)) if v.is_empty() => out.push_str(d),
            (Ok(v), _) => {
                taken(&v);
                out.push_str(&v);
            }
            (Err(_), Some(d)) => out.push_str(d),
            (Err(_), None) => {
                return Err(EnvError::Unset {
                    name: name.to_string(),
                    what: what.to_string(),
                })
            }
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// Values shorter than this are not scrubbed: replacing every `1` or `v2` in a report
/// would garble it, and so short a value protects nothing.
const SHORTEST_SECRET: usize = 4;

/// What a secret is replaced with.
const MASK: &str = "[secret]";

fn secrets() -> &'static std::sync::RwLock<Vec<String>> {
    static SECRETS: std::sync::RwLock<Vec<String>> = std::sync::RwLock::new(Vec::new());
    &SECRETS
}

/// Remembers a credential (an expanded `${VAR}` of a URL or header, an API key), so that
/// [`scrub`] keeps it out of everything shown or written.
pub(crate) fn register_secret(value: &str) {
    let value = value.trim();
    if value.len() < SHORTEST_SECRET {
        return;
    }
    let mut list = secrets().write().unwrap_or_else(|e| e.into_inner());
    if !list.iter().any(|s| s == value) {
        list.push(value.to_string());
        // Longest first: a secret that contains another is masked whole.
        list.sort_by_key(|s| std::cmp::Reverse(s.len()));
    }
}

/// `text` with every registered secret replaced by `[secret]`: for agent and model text
/// (a reply, an error body, a stderr tail) before it is shown or written.
pub(crate) fn scrub(text: &str) -> std::borrow::Cow<'_, str> {
    let list = secrets().read().unwrap_or_else(|e| e.into_inner());
    if !list.iter().any(|s| text.contains(s.as_str())) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = text.to_string();
    for s in list.iter() {
        out = out.replace(s.as_str(), MASK);
    }
    std::borrow::Cow::Owned(out)
}

/// [`scrub`] applied to every string (and object key) in a JSON value, in place; `true`
/// when anything was masked.
pub(crate) fn scrub_json(value: &mut serde_json::Value) -> bool {
    use serde_json::Value;
    match value {
        Value::String(s) => match scrub(s) {
            std::borrow::Cow::Owned(clean) => {
                *s = clean;
                true
            }
            std::borrow::Cow::Borrowed(_) => false,
        },
        Value::Array(items) => {
            // Every item, not up to the first masked one.
            let mut any = false;
            for v in items {
                any |= scrub_json(v);
            }
            any
        }
        Value::Object(map) => {
            let dirty: Vec<String> = map
                .keys()
                .filter(|k| matches!(scrub(k), std::borrow::Cow::Owned(_)))
                .cloned()
                .collect();
            let mut any = !dirty.is_empty();
            for k in dirty {
                if let Some(v) = map.remove(&k) {
                    map.insert(scrub(&k).into_owned(), v);
                }
            }
            for v in map.values_mut() {
                any |= scrub_json(v);
            }
            any
        }
        _ => false,
    }
}

/// Whether a JSON value holds the mask [`scrub`] puts where a secret was.
pub(crate) fn masks_a_secret(value: &serde_json::Value) -> bool {
    match value {
        serde_json::Value::String(s) => s.contains(MASK),
        serde_json::Value::Array(items) => items.iter().any(masks_a_secret),
        serde_json::Value::Object(map) => map
            .iter()
            .any(|(k, v)| k.contains(MASK) || masks_a_secret(v)),
        _ => false,
    }
}

/// Whether any secret is registered (nothing to scrub otherwise).
pub(crate) fn any_secret() -> bool {
    !secrets()
        .read()
        .unwrap_or_else(|e| e.into_inner())
        .is_empty()
}

/// The config's URL text fit for messages: user info becomes `***` and the query `?…`
/// (both often carry credentials); the fragment, never sent, is left out. Works on the
/// text before `${VAR}` expansion, so variables show as written.
pub(crate) fn shown_url(raw: &str) -> String {
    let raw = raw.trim();
    let (scheme, rest) = match raw.find("://") {
        Some(i) => raw.split_at(i + 3),
        None => ("", raw),
    };
    let (authority, tail) = rest.split_at(rest.find(['/', '?', '#']).unwrap_or(rest.len()));
    let authority = match authority.rfind('@') {
        Some(i) => format!("***@{}", &authority[i + 1..]),
        None => authority.to_string(),
    };
    let (path, after) = tail.split_at(tail.find(['?', '#']).unwrap_or(tail.len()));
    let query = if after.starts_with('?') { "?…" } else { "" };
    format!("{scheme}{authority}{path}{query}")
}

/// A command line as it may be kept and shown (the run store's executions, reports,
/// the viewer): a URL's user information and query hidden as [`shown_url`] hides them
/// (`--store postgres://user:PASSWORD@host/db`, alone or after `=`), the value of a
/// `--token` masked, and every registered secret [`scrub`]bed.
pub(crate) fn shown_args(args: impl IntoIterator<Item = String>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for arg in args {
        let after_token = out.last().is_some_and(|a| a == "--token");
        let shown = if after_token {
            MASK.to_string()
        } else if let Some(v) = arg.strip_prefix("--token=") {
            format!("--token={}", if v.is_empty() { "" } else { MASK })
        } else if arg.contains("://") {
            match arg
                .split_once('=')
                .filter(|(k, _)| k.starts_with('-') && !k.contains("://"))
            {
                Some((key, url)) => format!("{key}={}", shown_url(url)),
                None => shown_url(&arg),
            }
        } else {
            arg
        };
        out.push(scrub(&shown).into_owned());
    }
    out
}

/// An error and its causes, joined with `: `: for errors whose own `Display` leaves the
/// cause out (postgres says only "db error", the server's words are its source).
pub(crate) fn error_chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// The innermost cause of an error: what actually went wrong, without wrappers.
pub(crate) fn root_cause(e: &(dyn std::error::Error + 'static)) -> String {
    let mut cur = e;
    while let Some(next) = cur.source() {
        cur = next;
    }
    cur.to_string()
}

/// An API key read from a file another tool wrote (EvalStudio's `llmSettings.apiKey`):
/// kept in memory only, sent as a sensitive header, never shown. Its `Debug` says
/// nothing of it.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey(String);

impl ApiKey {
    /// Wraps a key.
    pub fn new(key: String) -> ApiKey {
        register_secret(&key);
        ApiKey(key)
    }

    /// The key, for the one header that carries it.
    pub(crate) fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ApiKey([redacted])")
    }
}

#[cfg(test)]
mod tests {
    use super::{expand_env, shown_args, shown_url, EnvError};

    #[test]
    fn defaults_and_names_follow_the_shell() {
        std::env::set_var("AGENTEST_UNIT_EMPTY", "");
        std::env::remove_var("AGENTEST_UNIT_UNSET");
        assert_eq!(
            expand_env(
                "a${AGENTEST_UNIT_UNSET:-x:-y}b${AGENTEST_UNIT_EMPTY:-z}",
                "w"
            )
            .unwrap(),
            "ax:-ybz"
        );
        assert_eq!(
            expand_env("${}", "[agent].url").unwrap_err(),
            EnvError::NoName {
                inside: String::new(),
                what: "[agent].url".into()
            }
        );
        assert!(matches!(
            expand_env("${A B}", "w").unwrap_err(),
            EnvError::NoName { .. }
        ));
    }

    #[test]
    fn a_command_line_is_kept_without_its_credentials() {
        let args = [
            "agentest",
            "test",
            "--store",
            "postgres://ci:hunter22@db:5432/runs",
            "--store=postgres://ci:hunter22@db/runs?sslmode=require",
            "view",
            "--token",
            "s3cret-view",
            "--token=s3cret-view",
            "-i",
            "agent-tests",
        ]
        .map(String::from);
        assert_eq!(
            shown_args(args),
            [
                "agentest",
                "test",
                "--store",
                "postgres://***@db:5432/runs",
                "--store=postgres://***@db/runs?…",
                "view",
                "--token",
                "[secret]",
                "--token=[secret]",
                "-i",
                "agent-tests"
            ]
        );
    }

    #[test]
    fn shown_url_hides_user_info_and_query() {
        assert_eq!(
            shown_url("http://bob:${PASS}@127.0.0.1:8080/chat?key=${KEY}#x"),
            "http://***@127.0.0.1:8080/chat?…"
        );
        assert_eq!(
            shown_url("https://a:b@c@host?token=1"),
            "https://***@host?…"
        );
        assert_eq!(
            shown_url("http://localhost:3000/v1/agent"),
            "http://localhost:3000/v1/agent"
        );
        assert_eq!(shown_url("${AGENT_URL}"), "${AGENT_URL}");
        assert_eq!(shown_url("http://host/p#frag"), "http://host/p");
    }
}
