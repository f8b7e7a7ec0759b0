//! The HTTP(S) client agent every outgoing request of the server's processes uses (the
//! worker's MCP calls; an IdP's metadata and keys): `ureq` on rustls with the `ring` provider,
//! verifying servers against the system's root certificates (`SSL_CERT_FILE` and
//! `SSL_CERT_DIR` honoured, so a private CA works) plus, when given, the certificates of a CA
//! file. Plain `http://` is the caller's to allow or refuse.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use ureq::tls::{Certificate, RootCerts, TlsConfig, TlsProvider};

/// Longest a connection may take to open.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// An agent whose requests take at most `timeout` each (a request may set its own), trusting
/// the system's roots and the certificates in `extra_ca`. Every status, redirects included,
/// is returned as a response, not an error or a second request.
pub fn agent(extra_ca: Option<&Path>, timeout: Duration) -> Result<ureq::Agent, String> {
    let roots = roots(extra_ca)?;
    let tls = TlsConfig::builder()
        .provider(TlsProvider::Rustls)
        .unversioned_rustls_crypto_provider(crate::tls::provider())
        .root_certs(RootCerts::Specific(Arc::new(roots)))
        .build();
    let config = ureq::Agent::config_builder()
        .tls_config(tls)
        .timeout_global(Some(timeout))
        .timeout_connect(Some(timeout.min(CONNECT_TIMEOUT)))
        .http_status_as_error(false)
        .max_redirects(0)
        .max_redirects_will_error(false)
        // One connection per request: nothing lingers, and no request meets a pooled
        // connection its server closed meanwhile.
        .max_idle_connections(0)
        .max_idle_connections_per_host(0)
        .user_agent(concat!("bernstein/", env!("CARGO_PKG_VERSION")))
        .build();
    Ok(config.into())
}

/// The system's roots and the extra CA's certificates; an error when there is none at all or
/// the CA file is bad.
fn roots(extra_ca: Option<&Path>) -> Result<Vec<Certificate<'static>>, String> {
    let mut roots: Vec<Certificate<'static>> = Vec::new();
    if let Some(path) = extra_ca {
        for der in crate::tls::ca_certificates(path)? {
            roots.push(Certificate::from_der(der.as_ref()).to_owned());
        }
    }
    // Unreadable entries of the system store are skipped: one bad file must not disable all.
    let native = rustls_native_certs::load_native_certs();
    roots.extend(
        native
            .certs
            .iter()
            .map(|c| Certificate::from_der(c.as_ref()).to_owned()),
    );
    if roots.is_empty() {
        let why = native
            .errors
            .first()
            .map_or_else(String::new, |e| format!(": {e}"));
        return Err(format!(
            "no trusted root certificates (the system store is empty{why}); name a CA file with SSL_CERT_FILE or --ca"
        ));
    }
    Ok(roots)
}
