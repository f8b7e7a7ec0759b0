//! The HTTP transports of runtime-std over real sockets: every scenario of
//! `http_support::scenarios` against the blocking server.

mod http_support;

use std::net::SocketAddr;
use std::sync::Arc;

use bernstein_effects::perform::Backend;

use bernstein_core::transport::http::HttpOptions;
use bernstein_domain::{Projection, Server};
use bernstein_runtime_std::http::{HttpServerHandle, bind};
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
) -> std::io::Result<Box<dyn Running>> {
    Ok(Box::new(Std(bind(server, backend, opts)?)))
}

// Every scenario again with two engines (`two_engines`): each connection is served by
// whichever engine holds fewer, and the answers are the same.
http_scenarios!(launch, two engines in two_engines);
