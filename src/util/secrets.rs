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
}

/// Expands `${VAR}` references from the environment. `what` names the setting for errors;
/// the value itself is never put in an error, since it may be a secret.
pub(crate) fn expand_env(text: &str, what: &str) -> Result<String, EnvError> {
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
        let name = &after[..end];
        match std::env::var(name) {
            Ok(v) => out.push_str(&v),
            Err(_) => {
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

/// The innermost cause of an error: what actually went wrong, without wrappers.
pub(crate) fn root_cause(e: &(dyn std::error::Error + 'static)) -> String {
    let mut cur = e;
    while let Some(next) = cur.source() {
        cur = next;
    }
    cur.to_string()
}

#[cfg(test)]
mod tests {
    use super::shown_url;

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
