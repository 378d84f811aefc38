//! Connecting to a PostgreSQL store: the URL as libpq reads it, a timeout, and TLS by
//! rustls with agentest's one TLS configuration (`sslmode=disable` for none).

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll};
use std::time::Duration;

use postgres::config::SslMode;
use postgres::tls::{ChannelBinding, MakeTlsConnect, TlsConnect, TlsStream};
use postgres::{Client, Config, NoTls, Socket};
use rustls::pki_types::{InvalidDnsNameError, ServerName};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// How long a connection may take to be made when the URL does not say
/// (`connect_timeout`): an unreachable server fails the run instead of hanging it.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// A client for the store at `url` (a `postgres://` URL or a key=value string, as libpq
/// reads them). TLS is rustls on ring, trusting the Mozilla roots of webpki-roots (as
/// agentest's HTTP clients do), unless the URL says `sslmode=disable`; with the
/// default `sslmode=prefer`, a server without TLS is spoken to in the clear, and
/// `sslmode=require` refuses one. The URL's `connect_timeout` and `application_name`
/// win over agentest's (10 s, `agentest`: what `pg_stat_activity` shows).
///
/// The errors name their cause (a refused password, a missing database, no server)
/// and never the password: the URL is not part of them.
pub(crate) fn connect(url: &str) -> Result<Client, postgres::Error> {
    let mut config: Config = url.parse()?;
    if config.get_connect_timeout().is_none() {
        config.connect_timeout(CONNECT_TIMEOUT);
    }
    if config.get_application_name().is_none() {
        config.application_name("agentest");
    }
    match config.get_ssl_mode() {
        SslMode::Disable => config.connect(NoTls),
        _ => config.connect(Rustls),
    }
}

/// rustls for tokio-postgres: what tokio-postgres-rustls does, without the x509-cert
/// parser it brings for channel binding (with der, der_derive, spki, flagset and a
/// second const-oid). Without channel binding,
/// SCRAM authenticates as `SCRAM-SHA-256` rather than `SCRAM-SHA-256-PLUS`; what
/// `-PLUS` adds (a server holding a trusted certificate for another name cannot relay
/// the login) the verified certificate already gives. A URL that demands it
/// (`channel_binding=require`) is refused.
#[derive(Clone, Copy)]
struct Rustls;

impl MakeTlsConnect<Socket> for Rustls {
    type Stream = RustlsStream;
    type TlsConnect = RustlsConnect;
    type Error = InvalidDnsNameError;

    fn make_tls_connect(&mut self, domain: &str) -> Result<RustlsConnect, InvalidDnsNameError> {
        Ok(RustlsConnect(ServerName::try_from(domain)?.to_owned()))
    }
}

/// The handshake with one server, checked against its name.
struct RustlsConnect(ServerName<'static>);

impl TlsConnect<Socket> for RustlsConnect {
    type Stream = RustlsStream;
    type Error = io::Error;
    type Future = Pin<Box<dyn Future<Output = io::Result<RustlsStream>> + Send>>;

    fn connect(self, stream: Socket) -> Self::Future {
        // agentest's one TLS configuration, in the Arc tokio-rustls wants, made once.
        static TLS: OnceLock<Arc<rustls::ClientConfig>> = OnceLock::new();
        let tls = TLS.get_or_init(|| Arc::new(crate::util::http::tls().clone()));
        let connector = tokio_rustls::TlsConnector::from(Arc::clone(tls));
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
