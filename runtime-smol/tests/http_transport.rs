//! The HTTP transports of runtime-smol over real sockets: the same scenarios as runtime-std's
//! (`runtime-std/tests/http_support`), against the async server.

#[path = "../../runtime-std/tests/http_support/mod.rs"]
mod http_support;

use std::net::SocketAddr;
use std::sync::Arc;

use bernstein_effects::perform::Backend;

use bernstein_core::transport::http::HttpOptions;
use bernstein_domain::{Projection, Server};
use bernstein_runtime_smol::http::{HttpServerHandle, bind};
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
) -> std::io::Result<Box<dyn Running>> {
    Ok(Box::new(Smol(bind(server, backend, opts)?)))
}

http_scenarios!(launch);
