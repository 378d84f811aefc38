//! Connecting to a PostgreSQL store: the URL as libpq reads it, a timeout, and TLS by
//! rustls with agentest's one TLS configuration (`sslmode=disable` for none), or one
//! trusting the URL's `sslrootcert` file.
//!
//! tokio-postgres refuses two of libpq's TLS settings: the option `sslrootcert` and the
//! `sslmode` values `verify-ca` and `verify-full`. They are taken out of the connection
//! string here, before it is parsed ([`take_tls_options`]): the verify modes become
//! `require`, which with this connector verifies the certificate's chain and name
//! already, and `sslrootcert` chooses the certificates that chain must end in.

use std::borrow::Cow;
use std::collections::HashMap;
use std::error::Error as _;
use std::future::Future;
use std::io;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::task::{Context, Poll};
use std::time::Duration;

use postgres::config::SslMode;
use postgres::tls::{ChannelBinding, MakeTlsConnect, TlsConnect, TlsStream};
use postgres::{Client, Config, NoTls, Socket};
use rustls::pki_types::pem::{self, PemObject};
use rustls::pki_types::{CertificateDer, InvalidDnsNameError, ServerName};
use rustls::{CertificateError, ClientConfig, RootCertStore};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use crate::errors::PgConnectError;

/// How long a connection may take to be made when the URL does not say
/// (`connect_timeout`): an unreachable server fails the run instead of hanging it.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// A client for the store at `url` (a `postgres://` URL or a key=value string, as libpq
/// reads them). TLS is rustls on ring, trusting the Mozilla roots of webpki-roots (as
/// agentest's HTTP clients do), or only the certificates of the URL's
/// `sslrootcert=FILE` (`sslrootcert=system`: the Mozilla roots), unless the URL says
/// `sslmode=disable` (then `sslrootcert` is ignored, as libpq does). With the default
/// `sslmode=prefer`, a server without TLS is spoken to in the clear; `require`,
/// `verify-ca` and `verify-full` refuse one. Every TLS connection verifies the server's
/// certificate, its chain and its name, whatever the mode. The URL's `connect_timeout`
/// and `application_name` win over agentest's (10 s, `agentest`: what
/// `pg_stat_activity` shows).
///
/// The errors name their cause (a refused password, a missing database, no server, a
/// certificate not trusted, an unreadable `sslrootcert` file) and never the password:
/// the URL is not part of them.
pub(crate) fn connect(url: &str) -> Result<Client, PgConnectError> {
    let (url, root_cert) = take_tls_options(url);
    let mut config: Config = url.parse().map_err(PgConnectError::Postgres)?;
    if config.get_connect_timeout().is_none() {
        config.connect_timeout(CONNECT_TIMEOUT);
    }
    if config.get_application_name().is_none() {
        config.application_name("agentest");
    }
    if config.get_ssl_mode() == SslMode::Disable {
        return config.connect(NoTls).map_err(PgConnectError::Postgres);
    }
    let root_file = root_cert.filter(|r| r != "system").map(PathBuf::from);
    let tls = match &root_file {
        Some(path) => tls_trusting_file(path)?,
        None => default_tls(),
    };
    config
        .connect(Rustls(tls))
        .map_err(|e| classified(e, root_file))
}

/// The connection string without what tokio-postgres would refuse, and the
/// `sslrootcert` it had (the last one, as with every option): `sslrootcert` taken out,
/// `sslmode=verify-ca` and `sslmode=verify-full` made `sslmode=require`. The URL form
/// (`postgres://...?sslrootcert=%2Fa%20b.pem`) has its values percent-decoded; the
/// key=value form (`host=h sslrootcert='/a b.pem'`) its quotes and backslashes read as
/// libpq and tokio-postgres read them. A string tokio-postgres cannot parse is left as
/// it is, for its parser to say what is wrong.
fn take_tls_options(conn: &str) -> (Cow<'_, str>, Option<String>) {
    let rewritten = match ["postgres://", "postgresql://"]
        .iter()
        .find_map(|prefix| conn.strip_prefix(prefix))
    {
        Some(rest) => url_without_tls_options(conn, rest),
        None => key_values_without_tls_options(conn),
    };
    match rewritten {
        Some((text, root_cert)) => (Cow::Owned(text), root_cert),
        None => (Cow::Borrowed(conn), None),
    }
}

/// [`take_tls_options`] for a URL; `rest` is what follows its scheme. `None` when it
/// has neither option. The query starts at the first `?` after the user information,
/// which ends at the first `@` (tokio-postgres's reading, passwords with `?` and all).
fn url_without_tls_options(conn: &str, rest: &str) -> Option<(String, Option<String>)> {
    let after_user = rest.find('@').map_or(0, |i| i + 1);
    let query_at = conn.len() - rest.len() + after_user + rest[after_user..].find('?')?;
    let (head, query) = (&conn[..query_at], &conn[query_at + 1..]);
    let mut root_cert = None;
    let mut changed = false;
    let mut kept: Vec<&str> = Vec::new();
    for pair in query.split('&') {
        let Some((key, value)) = pair.split_once('=') else {
            kept.push(pair);
            continue;
        };
        match percent_decoded(key).as_str() {
            "sslrootcert" => {
                root_cert = Some(percent_decoded(value));
                changed = true;
            }
            "sslmode" if is_verify_mode(&percent_decoded(value)) => {
                kept.push("sslmode=require");
                changed = true;
            }
            _ => kept.push(pair),
        }
    }
    if !changed {
        return None;
    }
    Some(match kept.is_empty() {
        true => (head.to_string(), root_cert),
        false => (format!("{head}?{}", kept.join("&")), root_cert),
    })
}

/// [`take_tls_options`] for libpq's `key=value key='quoted value'` form, read as
/// tokio-postgres reads it; `None` when it has neither option or does not parse.
fn key_values_without_tls_options(conn: &str) -> Option<(String, Option<String>)> {
    let mut chars = conn.char_indices().peekable();
    let mut root_cert = None;
    let mut changed = false;
    let mut kept: Vec<&str> = Vec::new();
    let skip_space = |chars: &mut std::iter::Peekable<std::str::CharIndices<'_>>| {
        while chars.next_if(|(_, c)| c.is_whitespace()).is_some() {}
    };
    loop {
        skip_space(&mut chars);
        let Some(&(start, _)) = chars.peek() else {
            break;
        };
        while chars
            .next_if(|&(_, c)| !c.is_whitespace() && c != '=')
            .is_some()
        {}
        let key_end = chars.peek().map_or(conn.len(), |&(i, _)| i);
        let key = &conn[start..key_end];
        if key.is_empty() {
            // tokio-postgres stops reading here and ignores the rest: so do we.
            kept.push(&conn[start..]);
            break;
        }
        skip_space(&mut chars);
        chars.next_if(|&(_, c)| c == '=')?;
        skip_space(&mut chars);
        let mut value = String::new();
        if chars.next_if(|&(_, c)| c == '\'').is_some() {
            loop {
                match chars.next()? {
                    (_, '\'') => break,
                    (_, '\\') => value.push(chars.next()?.1),
                    (_, c) => value.push(c),
                }
            }
        } else {
            while let Some((_, c)) = chars.next_if(|(_, c)| !c.is_whitespace()) {
                match c {
                    '\\' => value.extend(chars.next().map(|(_, c)| c)),
                    c => value.push(c),
                }
            }
            if value.is_empty() {
                return None;
            }
        }
        let end = chars.peek().map_or(conn.len(), |&(i, _)| i);
        match key {
            "sslrootcert" => {
                root_cert = Some(value);
                changed = true;
            }
            "sslmode" if is_verify_mode(&value) => {
                kept.push("sslmode=require");
                changed = true;
            }
            _ => kept.push(&conn[start..end]),
        }
    }
    changed.then(|| (kept.join(" "), root_cert))
}

/// libpq's `sslmode`s that verify the server's certificate, which tokio-postgres does
/// not know: with agentest's connector, `require` does what they ask.
fn is_verify_mode(mode: &str) -> bool {
    matches!(mode, "verify-ca" | "verify-full")
}

/// `text` with its `%XX` escapes decoded (a `%` not followed by two hex digits stays);
/// bytes that are not UTF-8 become U+FFFD.
fn percent_decoded(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[i], hex) {
            (b'%', Some(byte)) => {
                out.push(byte);
                i += 3;
            }
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// agentest's one TLS configuration, in the Arc tokio-rustls wants, made once.
fn default_tls() -> Arc<ClientConfig> {
    static TLS: OnceLock<Arc<ClientConfig>> = OnceLock::new();
    Arc::clone(TLS.get_or_init(|| Arc::new(crate::util::http::tls().clone())))
}

/// A TLS configuration trusting only the certificates of the PEM file at `path` (as
/// libpq's `sslrootcert` does), made once per file in a process (a run connects its
/// writer and may connect again).
fn tls_trusting_file(path: &Path) -> Result<Arc<ClientConfig>, PgConnectError> {
    static BY_FILE: OnceLock<Mutex<HashMap<PathBuf, Arc<ClientConfig>>>> = OnceLock::new();
    let mut by_file = BY_FILE
        .get_or_init(Mutex::default)
        .lock()
        .unwrap_or_else(PoisonError::into_inner);
    if let Some(tls) = by_file.get(path) {
        return Ok(Arc::clone(tls));
    }
    let unreadable = |e: pem::Error| match e {
        pem::Error::Io(source) => PgConnectError::RootFile {
            path: path.to_path_buf(),
            source,
        },
        other => PgConnectError::RootFilePem {
            path: path.to_path_buf(),
            problem: other.to_string(),
        },
    };
    let mut roots = RootCertStore::empty();
    for cert in CertificateDer::pem_file_iter(path).map_err(unreadable)? {
        roots
            .add(cert.map_err(unreadable)?)
            .map_err(|cause| PgConnectError::BadRoot {
                path: path.to_path_buf(),
                cause,
            })?;
    }
    if roots.is_empty() {
        return Err(PgConnectError::NoCertificate {
            path: path.to_path_buf(),
        });
    }
    let tls = Arc::new(crate::util::http::tls_trusting(roots));
    by_file.insert(path.to_path_buf(), Arc::clone(&tls));
    Ok(tls)
}

/// The driver's error, or what it means when the server's certificate was refused: not
/// signed by a trusted CA (by the `sslrootcert` file's when `root_file`), or not for
/// the host connected to.
fn classified(e: postgres::Error, root_file: Option<PathBuf>) -> PgConnectError {
    let Some(cause) = rustls_error(&e).cloned() else {
        return PgConnectError::Postgres(e);
    };
    match (&cause, root_file) {
        (rustls::Error::InvalidCertificate(CertificateError::UnknownIssuer), Some(path)) => {
            PgConnectError::UntrustedByRootFile { path, cause }
        }
        (rustls::Error::InvalidCertificate(CertificateError::UnknownIssuer), None) => {
            PgConnectError::Untrusted { cause }
        }
        (
            rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            ),
            _,
        ) => PgConnectError::WrongName { cause },
        _ => PgConnectError::Postgres(e),
    }
}

/// The rustls error among `e`'s causes: tokio-postgres's TLS error holds the
/// `io::Error` tokio-rustls made of it, whose `source()` skips it.
fn rustls_error(e: &postgres::Error) -> Option<&rustls::Error> {
    let mut cause = e.source();
    while let Some(err) = cause {
        if let Some(found) = err.downcast_ref::<rustls::Error>().or_else(|| {
            err.downcast_ref::<io::Error>()
                .and_then(io::Error::get_ref)
                .and_then(|inner| inner.downcast_ref::<rustls::Error>())
        }) {
            return Some(found);
        }
        cause = err.source();
    }
    None
}

/// rustls for tokio-postgres: what tokio-postgres-rustls does, without the x509-cert
/// parser it brings for channel binding (with der, der_derive, spki, flagset and a
/// second const-oid). Without channel binding,
/// SCRAM authenticates as `SCRAM-SHA-256` rather than `SCRAM-SHA-256-PLUS`; what
/// `-PLUS` adds (a server holding a trusted certificate for another name cannot relay
/// the login) the verified certificate already gives. A URL that demands it
/// (`channel_binding=require`) is refused.
#[derive(Clone)]
struct Rustls(Arc<ClientConfig>);

impl MakeTlsConnect<Socket> for Rustls {
    type Stream = RustlsStream;
    type TlsConnect = RustlsConnect;
    type Error = InvalidDnsNameError;

    fn make_tls_connect(&mut self, domain: &str) -> Result<RustlsConnect, InvalidDnsNameError> {
        Ok(RustlsConnect(
            ServerName::try_from(domain)?.to_owned(),
            Arc::clone(&self.0),
        ))
    }
}

/// The handshake with one server, checked against its name, with the configuration
/// that says which certificates to trust.
struct RustlsConnect(ServerName<'static>, Arc<ClientConfig>);

impl TlsConnect<Socket> for RustlsConnect {
    type Stream = RustlsStream;
    type Error = io::Error;
    type Future = Pin<Box<dyn Future<Output = io::Result<RustlsStream>> + Send>>;

    fn connect(self, stream: Socket) -> Self::Future {
        let connector = tokio_rustls::TlsConnector::from(self.1);
        Box::pin(async move { Ok(RustlsStream(connector.connect(self.0, stream).await?)) })
    }
}

/// A connection over TLS.
struct RustlsStream(tokio_rustls::client::TlsStream<Socket>);

impl TlsStream for RustlsStream {
    fn channel_binding(&self) -> ChannelBinding {
        ChannelBinding::none()
    }
}

impl AsyncRead for RustlsStream {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_read(cx, buf)
    }
}

impl AsyncWrite for RustlsStream {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.0).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A throwaway CA's certificate (its key was thrown away): a file to trust.
    const CA_PEM: &str = "-----BEGIN CERTIFICATE-----
MIIBpjCCAU2gAwIBAgIUQ5fXbONF8CYM/TFHEQCBJfFUlLgwCgYIKoZIzj0EAwIw
IDEeMBwGA1UEAwwVYWdlbnRlc3QgdW5pdC10ZXN0IENBMCAXDTI2MTEyNjExMDA0
MloYDzIxMjYxMTAyMTEwMDQyWjAgMR4wHAYDVQQDDBVhZ2VudGVzdCB1bml0LXRl
c3QgQ0EwWTATBgcqhkjOPQIBBggqhkjOPQMBBwNCAARfvq/MxmgQTyn815JwyWDP
c6HVSYY26SmO/4NTv88ijmknm+HYrtHX2VqwE6fkdzCXusPqKhs038A6AockYx5W
o2MwYTAdBgNVHQ4EFgQUAW+E2KVmIt5vBYAbHuUl/peZ0GkwHwYDVR0jBBgwFoAU
AW+E2KVmIt5vBYAbHuUl/peZ0GkwDwYDVR0TAQH/BAUwAwEB/zAOBgNVHQ8BAf8E
BAMCAQYwCgYIKoZIzj0EAwIDRwAwRAIgEJs5olyqpK1wDP2rzFwVBewd1yjV/CVD
f9CY40IWHioCIA0MvJMARXFoMEGij2L8aFru7pVBfDAfPuEn2zTadecn
-----END CERTIFICATE-----
";

    fn taken(conn: &str) -> (String, Option<String>) {
        let (text, root) = take_tls_options(conn);
        (text.into_owned(), root)
    }

    fn root(path: &str) -> Option<String> {
        Some(path.to_string())
    }

    /// A folder of this test's own under the system's temporary folder, emptied first.
    fn scratch(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("agentest-pgtls-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn a_urls_tls_options_are_taken_out_and_decoded() {
        assert_eq!(
            taken("postgres://u:p@h:5/db?sslmode=verify-full&sslrootcert=%2Ftmp%2Fmy%20ca%25.pem"),
            (
                "postgres://u:p@h:5/db?sslmode=require".into(),
                root("/tmp/my ca%.pem")
            )
        );
        assert_eq!(
            taken("postgresql://h/db?sslmode=verify-ca&application_name=x"),
            (
                "postgresql://h/db?sslmode=require&application_name=x".into(),
                None
            )
        );
        // The only option gone, so is the `?`.
        assert_eq!(
            taken("postgres://h/db?sslrootcert=system"),
            ("postgres://h/db".into(), root("system"))
        );
        // A `?` in the password is not the query's; the last sslrootcert wins; a key
        // may be percent-encoded too.
        assert_eq!(
            taken("postgres://u:p?w@h/db?ssl%72ootcert=/a&connect_timeout=3&sslrootcert=/b"),
            ("postgres://u:p?w@h/db?connect_timeout=3".into(), root("/b"))
        );
        // What tokio-postgres knows stays as written, borrowed.
        for same in [
            "postgres://u:p@h/db?sslmode=require&application_name=a%20b",
            "postgres://u:p@h/db",
            "postgres://h?sslmode=disable",
        ] {
            assert!(matches!(take_tls_options(same), (Cow::Borrowed(s), None) if s == same));
        }
        let (text, _) = taken("postgres://u:p@h/db?sslmode=verify-full&sslrootcert=/x");
        let config: Config = text.parse().unwrap();
        assert_eq!(config.get_ssl_mode(), SslMode::Require);
        assert_eq!(config.get_password(), Some(&b"p"[..]));
    }

    #[test]
    fn key_value_tls_options_are_taken_out_with_quotes_and_escapes_read() {
        assert_eq!(
            taken("host=h sslrootcert='/tmp/my ca.pem' sslmode=verify-full dbname=d"),
            (
                "host=h sslmode=require dbname=d".into(),
                root("/tmp/my ca.pem")
            )
        );
        assert_eq!(
            taken(r"sslrootcert='/tmp/it\'s.pem'"),
            (String::new(), root("/tmp/it's.pem"))
        );
        assert_eq!(
            taken(r"  host = h  sslrootcert = /tmp/a\ b.pem  password='x y' "),
            ("host = h password='x y'".into(), root("/tmp/a b.pem"))
        );
        assert_eq!(
            taken("sslmode=verify-ca host=h"),
            ("sslmode=require host=h".into(), None)
        );
        // Unchanged: nothing to take, or not parseable (tokio-postgres says why).
        for same in [
            "host=h sslmode=prefer",
            "host=h sslrootcert='/unterminated",
            "host=h sslrootcert",
        ] {
            assert!(matches!(take_tls_options(same), (Cow::Borrowed(s), None) if s == same));
        }
        let (text, _) = taken("host=h password='x y' sslmode=verify-full sslrootcert=/x");
        let config: Config = text.parse().unwrap();
        assert_eq!(config.get_ssl_mode(), SslMode::Require);
        assert_eq!(config.get_password(), Some(&b"x y"[..]));
    }

    #[test]
    fn percent_escapes_decode_and_broken_ones_stay() {
        assert_eq!(percent_decoded("%2Fa%20b"), "/a b");
        assert_eq!(percent_decoded("100%"), "100%");
        assert_eq!(percent_decoded("%zz%4"), "%zz%4");
        assert_eq!(percent_decoded("%C3%A9"), "é");
    }

    /// A root file is read once per path; a missing one, one without a certificate and
    /// one whose certificate is not one each say so, naming the file.
    #[test]
    fn root_files_are_read_once_and_their_problems_named() {
        let dir = scratch("roots");
        let ca = dir.join("ca.pem");
        std::fs::write(&ca, format!("a comment\n{CA_PEM}")).unwrap();
        let first = tls_trusting_file(&ca).unwrap();
        std::fs::remove_file(&ca).unwrap();
        let again = tls_trusting_file(&ca).expect("made once, not read again");
        assert!(Arc::ptr_eq(&first, &again));

        let missing = dir.join("missing.pem");
        let e = tls_trusting_file(&missing).err().unwrap();
        assert!(matches!(e, PgConnectError::RootFile { .. }), "{e:?}");
        let text = e.to_string();
        assert!(
            text.contains(&missing.display().to_string()) && text.contains("No such file"),
            "{text}"
        );

        let empty = dir.join("key-only.pem");
        std::fs::write(
            &empty,
            "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n",
        )
        .unwrap();
        let e = tls_trusting_file(&empty).err().unwrap();
        assert!(matches!(e, PgConnectError::NoCertificate { .. }), "{e:?}");
        assert!(
            e.to_string().contains(&empty.display().to_string())
                && e.to_string().contains("holds no certificate"),
            "{e}"
        );

        let bad = dir.join("bad.pem");
        std::fs::write(
            &bad,
            "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n",
        )
        .unwrap();
        let e = tls_trusting_file(&bad).err().unwrap();
        assert!(matches!(e, PgConnectError::BadRoot { .. }), "{e:?}");
        assert!(e.to_string().contains(&bad.display().to_string()), "{e}");

        let broken = dir.join("broken.pem");
        std::fs::write(&broken, "-----BEGIN CERTIFICATE-----\nAAAA\n").unwrap();
        let e = tls_trusting_file(&broken).err().unwrap();
        assert!(matches!(e, PgConnectError::RootFilePem { .. }), "{e:?}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// Without a server: a missing root file stops the connection before it is tried,
    /// naming the file and not the password; with `sslmode=disable` the file is ignored
    /// (as libpq ignores it) and the connection is tried.
    #[test]
    fn a_missing_root_file_is_named_and_ignored_without_tls() {
        let password = "Secr3tPassw0rdPgTls";
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        drop(listener);
        let base = format!("postgres://agentest:{password}@127.0.0.1:{port}/db");
        let e = connect(&format!(
            "{base}?sslmode=verify-full&sslrootcert=/nonexistent/agentest-ca.pem"
        ))
        .err()
        .unwrap();
        let text = format!("{} {e:?}", crate::util::error_chain(&e));
        assert!(matches!(e, PgConnectError::RootFile { .. }), "{text}");
        assert!(text.contains("/nonexistent/agentest-ca.pem"), "{text}");
        assert!(!text.contains(password), "{text}");
        let e = connect(&format!(
            "{base}?sslmode=disable&sslrootcert=/nonexistent/agentest-ca.pem"
        ))
        .err()
        .unwrap();
        let text = format!("{} {e:?}", crate::util::error_chain(&e));
        assert!(text.contains("Connection refused"), "{text}");
        assert!(!text.contains(password), "{text}");
    }
}
