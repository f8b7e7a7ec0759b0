//! The HTTPS client every outbound call of the server and the worker makes (the OAuth issuer's
//! metadata and keys): `ureq` on rustls with the `ring` provider (no OpenSSL, no cmake),
//! verifying servers against the system's roots as `rustls-native-certs` finds them (so
//! `SSL_CERT_FILE` and `SSL_CERT_DIR` name a private CA), plus an optional extra CA file.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use ureq::tls::{Certificate, PemItem, RootCerts, TlsConfig, TlsProvider};

/// An agent that verifies every server against the system roots (and `extra_ca`, a PEM file of
/// CA certificates) and gives up on any call after `timeout`. Error statuses are answers, not
/// errors (the caller reads them).
pub fn agent(extra_ca: Option<&Path>, timeout: Duration) -> Result<ureq::Agent, String> {
    let native = rustls_native_certs::load_native_certs();
    let mut roots: Vec<Certificate<'static>> = native
        .certs
        .iter()
        .map(|c| Certificate::from_der(c.as_ref()).to_owned())
        .collect();
    if let Some(path) = extra_ca {
        let pem = std::fs::read(path)
            .map_err(|e| format!("cannot read the CA file {}: {e}", path.display()))?;
        let before = roots.len();
        for item in ureq::tls::parse_pem(&pem) {
            match item {
                Ok(PemItem::Certificate(c)) => roots.push(c.to_owned()),
                Ok(_) => {}
                Err(e) => return Err(format!("the CA file {} is not PEM: {e}", path.display())),
            }
        }
        if roots.len() == before {
            return Err(format!(
                "the CA file {} holds no certificate",
                path.display()
            ));
        }
    }
    if roots.is_empty() {
        let why = native
            .errors
            .first()
            .map_or_else(|| "none found".to_string(), ToString::to_string);
        return Err(format!(
            "no trusted CA certificates (system roots: {why}; set SSL_CERT_FILE)"
        ));
    }
    // ring rather than aws-lc-rs (no cmake, no C toolchain); rustls deprecates it for lacking
    // post-quantum key exchange, which these short fetches of public keys do not need.
    #[allow(deprecated)]
    let provider = rustls::crypto::ring::default_provider();
    let tls = TlsConfig::builder()
        .provider(TlsProvider::Rustls)
        .unversioned_rustls_crypto_provider(Arc::new(provider))
        .root_certs(RootCerts::new_with_certs(&roots))
        .build();
    let config = ureq::Agent::config_builder()
        .tls_config(tls)
        .timeout_global(Some(timeout))
        .http_status_as_error(false)
        .max_redirects(0)
        .build();
    Ok(config.new_agent())
}
