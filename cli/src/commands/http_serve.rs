//! What `bernstein mcp --transport http` and `bernstein dashboard` share: the HTTP options
//! from flags and environment, and serving on the chosen runtime, over HTTPS when a
//! certificate is given (SIGTERM / SIGINT stop it gracefully: [`super::stop_signals`]; SIGHUP
//! reloads the certificate: [`super::tls`]) with a bind error that says what to do.

use std::sync::Arc;

use bernstein_core::transport::http::HttpOptions;
use bernstein_domain::{Projection, Server};
use bernstein_effects::perform::Backend;
use bernstein_os::tls::ServerTls;

use super::stop_signals::stop_on_signals;
use crate::settings;

/// The runtime that moves a server's bytes (`--runtime`).
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum Runtime {
    Std,
    Smol,
}

/// The HTTP options of a server bound at `host:port`.
pub fn options(
    host: String,
    port: u16,
    allowed_hosts: Option<&str>,
    max_body: usize,
) -> Result<HttpOptions, String> {
    let mut opts = HttpOptions {
        host,
        port,
        ..HttpOptions::default()
    };
    opts.allowed_origins = settings::allowed_origins()?;
    opts.allowed_hosts = settings::allowed_hosts(allowed_hosts)?;
    settings::http_limits(&mut opts.limits)?;
    opts.limits.max_body_bytes = max_body;
    Ok(opts)
}

/// Serves (HTTPS with `tls`) until SIGTERM or SIGINT (or the process ends), on the std runtime
/// or the smol one; the operator's routes answer from Bernstein's projection ([`crate::views`]).
pub fn serve(
    runtime: Runtime,
    server: Arc<Server>,
    backend: Backend<Projection>,
    opts: HttpOptions,
    tls: Option<Arc<ServerTls>>,
) -> std::io::Result<()> {
    let views = Arc::new(crate::views::BernsteinViews::new(server.clone()));
    let backend = backend.with_views(views);
    let bind = format!("{}:{}", opts.host, opts.port);
    let reload = tls.clone();
    let on_bound = move |stop| {
        if let Some(tls) = reload {
            super::tls::reload_on_sighup(tls)?;
        }
        stop_on_signals(stop)
    };
    let served = match runtime {
        Runtime::Std => {
            bernstein_runtime_std::http::serve_http(server, backend, opts, tls, on_bound)
        }
        Runtime::Smol => {
            bernstein_runtime_smol::http::serve_http(server, backend, opts, tls, on_bound)
        }
    };
    served.map_err(|e| {
        if e.kind() == std::io::ErrorKind::AddrInUse {
            std::io::Error::new(
                e.kind(),
                format!("cannot listen on {bind}: address already in use (another server on that port?); pick another with --port N, or --port 0 for any free one"),
            )
        } else {
            e
        }
    })
}
