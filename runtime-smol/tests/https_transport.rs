//! HTTPS on runtime-smol: the scenarios of `tls_support` (runtime-std/tests) against the
//! async server.

#[path = "../../runtime-std/tests/http_support/mod.rs"]
mod http_support;
#[path = "../../runtime-std/tests/tls_support/mod.rs"]
mod tls_support;

use std::net::SocketAddr;
use std::sync::Arc;

use bernstein_core::transport::http::HttpOptions;
use bernstein_domain::{Projection, Server};
use bernstein_effects::perform::Backend;
use bernstein_os::tls::ServerTls;
use bernstein_runtime_smol::http::{HttpServerHandle, bind_tls};
use http_support::Running;

struct Smol(HttpServerHandle);

impl Running for Smol {
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
    Ok(Box::new(Smol(bind_tls(server, backend, opts, tls)?)))
}

tls_scenarios!(launch);
