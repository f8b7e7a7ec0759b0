//! Serving HTTPS: the certificate and key loaded from PEM files, the rustls `ServerConfig`
//! both runtimes serve with (TLS 1.2 and 1.3 on the `ring` provider), reloadable in place
//! ([`ServerTls::reload`]: new handshakes use the new certificate, open connections carry on),
//! and [`TlsSession`], one connection's TLS as bytes in and bytes out, so a runtime only moves
//! bytes between its socket and the session.

mod session;

use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

use rustls::ServerConfig;
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;

pub use session::{Received, TlsSession};

/// The crypto provider of every TLS endpoint of the server: `ring` (no cmake, no OpenSSL).
/// rustls 0.23.48 deprecates it for lacking post-quantum key exchange (X25519MLKEM768, which
/// only its aws-lc-rs provider has, at the price of cmake and a C build): the key exchange is
/// X25519 or the NIST curves, as most of the web's.
#[allow(deprecated)]
pub fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// A server's certificate, reloadable from its files.
#[derive(Debug)]
pub struct ServerTls {
    cert: PathBuf,
    key: PathBuf,
    current: Arc<Current>,
    config: Arc<ServerConfig>,
}

impl ServerTls {
    /// Loads the certificate chain in `cert` and the private key in `key` (both PEM). The
    /// error names the file and what is wrong with it.
    pub fn load(cert: &Path, key: &Path) -> Result<ServerTls, String> {
        let provider = provider();
        let certified = certified_key(cert, key, &provider)?;
        let current = Arc::new(Current(RwLock::new(Arc::new(certified))));
        let mut config = ServerConfig::builder_with_provider(provider)
            .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])
            .map_err(|e| format!("TLS: {e}"))?
            .with_no_client_auth()
            .with_cert_resolver(current.clone());
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(ServerTls {
            cert: cert.to_path_buf(),
            key: key.to_path_buf(),
            current,
            config: Arc::new(config),
        })
    }

    /// Reads the files again: new handshakes use what they hold now, connections already open
    /// keep theirs. When a file is bad, the certificate in use stays and the error says why.
    pub fn reload(&self) -> Result<(), String> {
        let certified = certified_key(&self.cert, &self.key, self.config.crypto_provider())?;
        *self.current.0.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(certified);
        Ok(())
    }

    /// The certificate file.
    pub fn cert_path(&self) -> &Path {
        &self.cert
    }

    /// A new connection's TLS (`local`: the address it was accepted on, for the refusal a
    /// plain-HTTP client gets).
    pub fn session(&self, local: Option<std::net::SocketAddr>) -> Result<TlsSession, String> {
        TlsSession::new(self.config.clone(), local)
    }
}

/// The certificate in use, handed to each handshake.
#[derive(Debug)]
struct Current(RwLock<Arc<CertifiedKey>>);

impl ResolvesServerCert for Current {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(self.0.read().unwrap_or_else(|e| e.into_inner()).clone())
    }
}

/// The chain in `cert` with the key in `key`, checked to belong together.
fn certified_key(
    cert: &Path,
    key: &Path,
    provider: &CryptoProvider,
) -> Result<CertifiedKey, String> {
    let chain = certificates(cert)?;
    let key_der = PrivateKeyDer::from_pem_file(key).map_err(|e| {
        format!(
            "TLS key {}: {}",
            key.display(),
            pem_error(e, "no PEM private key (PKCS#8, PKCS#1 or SEC1) in it")
        )
    })?;
    let signer = provider
        .key_provider
        .load_private_key(key_der)
        .map_err(|e| format!("TLS key {}: unusable key: {e}", key.display()))?;
    let certified = CertifiedKey::new(chain, signer);
    certified.keys_match().map_err(|_| {
        format!(
            "TLS key {}: it is not the key of the certificate in {}",
            key.display(),
            cert.display()
        )
    })?;
    Ok(certified)
}

/// The certificates of a PEM file, leaf first.
fn certificates(path: &Path) -> Result<Vec<CertificateDer<'static>>, String> {
    let what = |e| format!("TLS certificate {}: {e}", path.display());
    let chain = CertificateDer::pem_file_iter(path)
        .map_err(|e| what(pem_error(e, "")))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| what(pem_error(e, "")))?;
    if chain.is_empty() {
        return Err(what("no PEM certificate in it".into()));
    }
    Ok(chain)
}

/// What a PEM reading error says, in words (`none`: what a file without the item means).
fn pem_error(e: rustls::pki_types::pem::Error, none: &str) -> String {
    use rustls::pki_types::pem::Error;
    match e {
        Error::Io(io) => format!("cannot read it: {io}"),
        Error::NoItemsFound => none.to_string(),
        other => format!("not valid PEM: {other:?}"),
    }
}

/// The certificates of a PEM file, for a client's extra trusted roots.
pub fn ca_certificates(path: &Path) -> Result<Vec<CertificateDer<'static>>, String> {
    certificates(path).map_err(|e| e.replacen("TLS certificate", "CA file", 1))
}
