//! HTTPS on runtime-std: the scenarios of `tls_support` against the mio loop.

mod http_support;
mod tls_support;

use std::net::SocketAddr;
use std::sync::Arc;

use bernstein_core::transport::http::HttpOptions;
use bernstein_domain::{Projection, Server};
use bernstein_effects::perform::Backend;
use bernstein_os::tls::ServerTls;
use bernstein_runtime_std::http::{HttpServerHandle, bind_tls};
use http_support::Running;

struct Std(HttpServerHandle);

impl Running for Std {
    fn addr(&self) -> SocketAddr {
        self.0.local_addr()
    }
}

fn launch(
    server: Arc<Server>,
    backend: Backend<Projection>,
    opts: HttpOptions,
    tls: Option<Arc<ServerTls>>,
) -> std::io::Result<Box<dyn Running>> {
    Ok(Box::new(Std(bind_tls(server, backend, opts, tls)?)))
}

tls_scenarios!(launch);
