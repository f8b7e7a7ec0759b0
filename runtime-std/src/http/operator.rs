//! Serves the operator's routes the core parsed ([`bernstein_core::transport::http::operator`]):
//! the probes, the dashboard's JSON API, its live feed and the metrics. Every answer is read
//! from the store or the process's counters; nothing here writes to the ledger, so the
//! read-only `bernstein dashboard` serves the same routes.

use bernstein_core::transport::http::{HttpResponse, OperatorRequest, OperatorRoute, Status};
use serde_json::json;

use super::service::{Action, HttpService};

impl HttpService {
    /// Serves an operator route (may block on the store).
    pub fn serve_operator(&self, req: OperatorRequest) -> Action {
        let span = req.span_id.as_str();
        let r = match req.route {
            OperatorRoute::Healthz => {
                HttpResponse::json(Status::OK, span, &json!({"status": "ok"}))
            }
            OperatorRoute::Readyz => self.readiness(span),
            OperatorRoute::Metrics => self.metrics_response(span),
            other => HttpResponse::problem(
                Status::NOT_IMPLEMENTED,
                span,
                "not_implemented",
                &format!("{other:?} is not served yet"),
            ),
        };
        Action::Write(if req.keep_alive { r } else { r.closing() })
    }

    /// `/readyz`: 200 once the ledger opened, verified and the store answers; 503 with the
    /// store's own reason otherwise.
    fn readiness(&self, span: &str) -> HttpResponse {
        match self.backend.store.snapshot() {
            Ok(s) => HttpResponse::json(
                Status::OK,
                span,
                &json!({"status": "ready", "records": s.position.seq, "head": s.position.head.to_string()}),
            ),
            Err(e) => HttpResponse::json(
                Status::SERVICE_UNAVAILABLE,
                span,
                &json!({"status": "not_ready", "reason": e.to_string()}),
            )
            .with_header("Retry-After", "5"),
        }
    }
}
