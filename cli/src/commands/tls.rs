//! `--tls-cert` / `--tls-key`: serving HTTPS, and reloading the certificate on SIGHUP (new
//! handshakes use the new one, open connections carry on; a reload that fails keeps the old).

use std::path::PathBuf;
use std::sync::Arc;

use bernstein_os::log_line;
use bernstein_os::tls::ServerTls;
use clap::Args;

use crate::settings;

#[derive(Debug, Args)]
pub struct TlsArgs {
    /// Serve HTTPS with the certificate chain in this PEM file (else BERNSTEIN_MCP_TLS_CERT;
    /// needs --tls-key). SIGHUP reloads it.
    #[arg(long, value_name = "FILE")]
    tls_cert: Option<PathBuf>,
    /// The certificate's private key, PEM (else BERNSTEIN_MCP_TLS_KEY; needs --tls-cert).
    #[arg(long, value_name = "FILE")]
    tls_key: Option<PathBuf>,
}

impl TlsArgs {
    /// Whether a flag was given (the environment aside).
    pub fn given(&self) -> bool {
        self.tls_cert.is_some() || self.tls_key.is_some()
    }

    /// The certificate to serve with, loaded and checked, when one is configured.
    pub fn load(&self) -> Result<Option<Arc<ServerTls>>, String> {
        let Some((cert, key)) =
            settings::tls_files(self.tls_cert.as_deref(), self.tls_key.as_deref())?
        else {
            return Ok(None);
        };
        ServerTls::load(&cert, &key).map(|t| Some(Arc::new(t)))
    }
}

/// Reloads `tls` from its files on each SIGHUP, on a thread of its own, saying on one line
/// what became of it.
pub fn reload_on_sighup(tls: Arc<ServerTls>) -> std::io::Result<()> {
    let mut signals = signal_hook::iterator::Signals::new([signal_hook::consts::SIGHUP])?;
    std::thread::Builder::new()
        .name("bernstein-sighup".into())
        .spawn(move || {
            for _ in signals.forever() {
                match tls.reload() {
                    Ok(()) => log_line!(
                        "bernstein: SIGHUP: TLS certificate reloaded from {}",
                        tls.cert_path().display()
                    ),
                    Err(e) => log_line!(
                        "bernstein: SIGHUP: TLS reload failed, still serving the previous certificate: {e}"
                    ),
                }
            }
        })?;
    Ok(())
}
