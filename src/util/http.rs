//! HTTP clients: every one agentest builds (HTTP agents, `openai` agents' tool
//! endpoints, model endpoints) starts here, so TLS is set up once per process.

use std::sync::{Arc, OnceLock};

/// A client builder with rustls on the ring provider (no OpenSSL) that trusts the
/// Mozilla root certificates of `webpki-roots`, as reqwest 0.12's `rustls-tls` did. The
/// TLS configuration is built once and shared: reading the platform's certificates for
/// every client would add milliseconds to every agent and endpoint.
pub(crate) fn client_builder() -> reqwest::ClientBuilder {
    reqwest::Client::builder().tls_backend_preconfigured(tls().clone())
}

/// A response's `Retry-After` in seconds (at most an hour), when it has a usable one.
pub(crate) fn retry_after(headers: &reqwest::header::HeaderMap) -> Option<std::time::Duration> {
    headers
        .get(reqwest::header::RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<f64>().ok())
        .filter(|s| s.is_finite() && *s >= 0.0)
        // Clamped to a year (what Duration can hold): a wait past the case's deadline is
        // refused anyway, saying how long the server asked for.
        .map(|s| std::time::Duration::from_secs_f64(s.min(31_536_000.0)))
}

/// The TLS configuration of every client agentest makes: its HTTP clients' and the
/// PostgreSQL store's (`record::store::postgres::connect`).
pub(crate) fn tls() -> &'static rustls::ClientConfig {
    static TLS: OnceLock<rustls::ClientConfig> = OnceLock::new();
    TLS.get_or_init(|| {
        tls_trusting(rustls::RootCertStore {
            roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
        })
    })
}

/// agentest's TLS configuration (rustls on ring, its default protocol versions) trusting
/// `roots` only: [`tls`]'s Mozilla roots, or a PostgreSQL URL's `sslrootcert` file.
pub(crate) fn tls_trusting(roots: rustls::RootCertStore) -> rustls::ClientConfig {
    rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .expect("ring supports the default TLS versions")
        .with_root_certificates(roots)
        .with_no_client_auth()
}

#[cfg(test)]
mod tests {
    /// The shared configuration is one reqwest accepts: a client builds, and an
    /// `https` request fails at the connection (nothing listens), not at TLS setup.
    #[tokio::test]
    async fn clients_build_with_the_shared_tls_configuration() {
        let client = super::client_builder().build().expect("a client");
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        drop(listener);
        let err = client
            .get(format!("https://127.0.0.1:{port}/"))
            .send()
            .await
            .unwrap_err();
        assert!(err.is_connect(), "{err:?}");
    }
}
