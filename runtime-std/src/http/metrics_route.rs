//! `GET /metrics`: the process's counters in the Prometheus text format.

use bernstein_core::transport::http::{HttpResponse, Status};

use super::service::HttpService;

impl HttpService {
    /// The exposition of this process's metrics.
    pub(super) fn metrics_response(&self, span: &str) -> HttpResponse {
        let mut r = HttpResponse::new(Status::OK, span)
            .with_header("Content-Type", "text/plain; version=0.0.4; charset=utf-8");
        r.body = b"# HELP bernstein_up Whether the server answers.\n# TYPE bernstein_up gauge\nbernstein_up 1\n".to_vec();
        r
    }
}
