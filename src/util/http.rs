//! HTTP clients: every one agentest builds (HTTP agents, `openai` agents' tool
//! endpoints, model endpoints) starts here, so TLS is set up once.

/// A client builder with rustls on the ring provider (no OpenSSL, and much faster to
/// build than aws-lc-rs). The provider is installed as the process default on first use.
pub(crate) fn client_builder() -> reqwest::ClientBuilder {
    static TLS: std::sync::Once = std::sync::Once::new();
    TLS.call_once(|| {
        // Another provider installed first (by the user's own code) is fine too.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
    reqwest::Client::builder()
}
