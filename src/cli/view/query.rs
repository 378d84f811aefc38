//! What a viewer URL carries: its query string's values and its path segments, decoded,
//! and text made safe to put back into one.

use std::fmt::Write as _;

/// A request's query string, its values decoded (`+` as a space, `%HH` escapes).
pub(super) struct Query(Vec<(String, String)>);

impl Query {
    pub(super) fn parse(query: &str) -> Query {
        Query(
            query
                .split('&')
                .filter(|kv| !kv.is_empty())
                .map(|kv| {
                    let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
                    (decoded(k, true), decoded(v, true))
                })
                .collect(),
        )
    }

    /// The query again, encoded (`?k=v&...`), without `token` (kept in a cookie);
    /// empty when nothing is left.
    pub(super) fn encoded(&self) -> String {
        let kept: Vec<String> = self
            .0
            .iter()
            .filter(|(k, v)| k != "token" && !v.trim().is_empty())
            .map(|(k, v)| format!("{}={}", url_part(k), url_part(v)))
            .collect();
        match kept.is_empty() {
            true => String::new(),
            false => format!("?{}", kept.join("&")),
        }
    }

    /// The value of `key`, trimmed; None when absent or blank (an empty form field).
    pub(super) fn get(&self, key: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.trim())
            .filter(|v| !v.is_empty())
    }

    /// The value of `key` as an id; an error naming the key when it is not one.
    pub(super) fn id(&self, key: &str) -> Result<Option<i64>, String> {
        self.get(key)
            .map(|v| {
                v.parse::<i64>()
                    .map_err(|_| format!("`{key}={v}`: expected an id, a whole number"))
            })
            .transpose()
    }

    /// The value of `key` when it is one of `allowed`; an error listing them otherwise.
    pub(super) fn one_of(&self, key: &str, allowed: &[&str]) -> Result<Option<String>, String> {
        match self.get(key) {
            None => Ok(None),
            Some(v) if allowed.contains(&v) => Ok(Some(v.to_string())),
            Some(v) => Err(format!(
                "`{key}={v}`: expected one of {}",
                allowed.join(", ")
            )),
        }
    }

    /// `limit`, between 1 and `max`; `default` when absent.
    pub(super) fn limit(&self, default: usize, max: usize) -> Result<usize, String> {
        match self.get("limit") {
            None => Ok(default),
            Some(v) => match v.parse::<usize>() {
                Ok(n) if (1..=max).contains(&n) => Ok(n),
                _ => Err(format!("`limit={v}`: expected a number from 1 to {max}")),
            },
        }
    }
}

/// `s` with its `%HH` escapes decoded, and `+` as a space when `plus` (a query string).
pub(super) fn decoded(s: &str, plus: bool) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        match (
            bytes[i],
            bytes.get(i + 1).copied().and_then(hex),
            bytes.get(i + 2).copied().and_then(hex),
        ) {
            (b'%', Some(h), Some(l)) => {
                out.push((h * 16 + l) as u8);
                i += 3;
            }
            (b'+', _, _) if plus => {
                out.push(b' ');
                i += 1;
            }
            (b, _, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Text as one URL path segment or query value: unreserved characters kept, the rest
/// percent-encoded.
pub(super) fn url_part(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(b as char);
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_query_is_decoded_and_blank_values_are_absent() {
        let q = Query::parse("q=fix+a%2Fb&status=&limit=20&before=x");
        assert_eq!(q.get("q"), Some("fix a/b"));
        assert_eq!(q.get("status"), None);
        assert_eq!(q.limit(50, 500), Ok(20));
        assert!(q.id("before").unwrap_err().contains("`before=x`"));
        assert_eq!(q.id("after"), Ok(None));
        assert_eq!(
            Query::parse("q=fix+a%2Fb&status=&token=s").encoded(),
            "?q=fix%20a%2Fb"
        );
        assert!(Query::parse("limit=0").limit(50, 500).is_err());
        assert_eq!(decoded("cases%3A%3AT1+x", false), "cases::T1+x");
        assert_eq!(url_part("a::b c/é"), "a%3A%3Ab%20c%2F%C3%A9");
    }
}
