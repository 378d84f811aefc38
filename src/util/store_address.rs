//! Where a run store is: a file (the embedded SQLite store) or a PostgreSQL URL, as
//! `AGENTEST_STORE`, `--store` or `[store]` give it. The URL is a credential: it is
//! shown without its user information and query (see [`super::shown_url`]), and its
//! password is registered as a secret so that no message, report or log carries it.

use std::fmt;
use std::path::{Path, PathBuf};

use super::secrets::{register_secret, shown_url};

/// A run store's address.
#[derive(Clone, PartialEq, Eq)]
pub(crate) enum StoreAddress {
    /// An SQLite file.
    File(PathBuf),
    /// A PostgreSQL server's database: `postgres://user:pass@host:port/db?sslmode=...`.
    Postgres(DatabaseUrl),
}

/// A database URL: its text is only handed to the driver ([`DatabaseUrl::expose`]);
/// `Display` and `Debug` show it without credentials.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct DatabaseUrl(String);

impl DatabaseUrl {
    /// The whole URL, password and all: for the database driver, nothing else.
    pub(crate) fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for DatabaseUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&shown_url(&self.0))
    }
}

impl fmt::Debug for DatabaseUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "DatabaseUrl({self})")
    }
}

/// A store address with a URL scheme agentest does not know. Said before anything is
/// created: taken as a file name, `postgres://user:pass@...` once made an SQLite file
/// whose name held the password.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the run store `{shown}` has the URL scheme `{scheme}:`, which agentest does not support; give a file path (the embedded SQLite store), a postgres:// or postgresql:// URL, or off")]
pub(crate) struct StoreAddressError {
    /// The scheme, as written.
    pub(crate) scheme: String,
    /// The address without credentials.
    pub(crate) shown: String,
}

impl StoreAddress {
    /// Reads an address: `scheme://...` is a URL (PostgreSQL's two schemes, else an
    /// error naming the scheme), anything else a file path. A URL's password is
    /// registered as a secret.
    pub(crate) fn parse(text: &str) -> Result<StoreAddress, StoreAddressError> {
        let Some(scheme) = url_scheme(text) else {
            return Ok(StoreAddress::File(PathBuf::from(text)));
        };
        match scheme.to_ascii_lowercase().as_str() {
            "postgres" | "postgresql" => {
                if let Some(password) = password(text) {
                    register_secret(password);
                }
                Ok(StoreAddress::Postgres(DatabaseUrl(text.trim().to_string())))
            }
            _ => Err(StoreAddressError {
                scheme: scheme.to_string(),
                shown: shown_url(text),
            }),
        }
    }

    /// The file, for an SQLite store.
    pub(crate) fn file(&self) -> Option<&Path> {
        match self {
            StoreAddress::File(p) => Some(p),
            StoreAddress::Postgres(_) => None,
        }
    }
}

impl fmt::Display for StoreAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StoreAddress::File(p) => write!(f, "{}", p.display()),
            StoreAddress::Postgres(url) => write!(f, "{url}"),
        }
    }
}

impl fmt::Debug for StoreAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StoreAddress::File(p) => f.debug_tuple("File").field(p).finish(),
            StoreAddress::Postgres(url) => f.debug_tuple("Postgres").field(url).finish(),
        }
    }
}

/// The scheme of `text` when it reads as a URL (`letters://`), else `None` (a path,
/// even one with `:` in it).
fn url_scheme(text: &str) -> Option<&str> {
    let (scheme, _) = text.trim().split_once("://")?;
    let mut chars = scheme.chars();
    let first = chars.next()?;
    (first.is_ascii_alphabetic()
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.')))
    .then_some(scheme)
}

/// The password in a URL's user information, when there is one.
fn password(url: &str) -> Option<&str> {
    let (_, rest) = url.split_once("://")?;
    let authority = &rest[..rest.find(['/', '?', '#']).unwrap_or(rest.len())];
    let (user_info, _) = authority.rsplit_once('@')?;
    let (_, password) = user_info.split_once(':')?;
    Some(password).filter(|p| !p.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_urls_and_unknown_schemes_are_told_apart() {
        assert_eq!(
            StoreAddress::parse("target/runs.db").unwrap(),
            StoreAddress::File(PathBuf::from("target/runs.db"))
        );
        // A colon alone does not make a URL.
        assert!(StoreAddress::parse("C:runs.db").unwrap().file().is_some());
        let pg = StoreAddress::parse("postgres://ci:hunter2-secret@db:5432/agentest").unwrap();
        assert!(pg.file().is_none());
        assert_eq!(pg.to_string(), "postgres://***@db:5432/agentest");
        assert!(!format!("{pg:?}").contains("hunter2"));
        assert!(StoreAddress::parse("postgresql://db/x").is_ok());
        let e = StoreAddress::parse("mysql://root:topsecret-pw@db/x").unwrap_err();
        assert_eq!(e.scheme, "mysql");
        assert!(e.to_string().contains("`mysql:`"), "{e}");
        assert!(!e.to_string().contains("topsecret"), "{e}");
    }

    #[test]
    fn the_password_is_the_user_informations_second_part() {
        assert_eq!(password("postgres://u:p%40ss@h/db"), Some("p%40ss"));
        assert_eq!(password("postgres://u@h/db"), None);
        assert_eq!(password("postgres://h/db?user=x"), None);
    }
}
