//! Answers the operator's routes the core parsed ([`bernstein_core::transport::http::operator`]):
//! the probes, the dashboard's JSON API and the metrics (the live feed is the engine's). Every
//! answer is read from the store or the engine's counters; nothing here writes to the ledger,
//! so the read-only `bernstein dashboard` serves the same routes. It may block on the store:
//! runtimes call it off their loop (see [`crate::perform`]). What only the fold's owner knows
//! (the dashboard's overview, a task, a pasted object's check, the fold's own metrics) it asks
//! of the [`Views`] it was given: the CLI's, for Bernstein's projection.

use std::sync::Arc;

use bernstein_core::engine::Counters;
use bernstein_core::ledger::{Fold, Snapshot, Store};
use bernstein_core::time::Clock;
use bernstein_core::transport::http::prometheus::Exposition;
use bernstein_core::transport::http::{HttpResponse, OperatorRequest, OperatorRoute, Status};
use serde_json::{Value, json};

/// What the operator's routes read from the fold, which only its owner can: the dashboard's
/// answers (the overview, a task, a pasted object checked against the ledger) and the metrics
/// derived from a snapshot. The CLI implements it for Bernstein's projection.
pub trait Views<F: Fold>: Send + Sync {
    /// Answers `route` if it is one of the fold's; `None`: not served here (`404`).
    fn answer(
        &self,
        route: &OperatorRoute,
        span: &str,
        ledger: &Ledger<'_, F>,
    ) -> Option<HttpResponse>;

    /// Adds to `/metrics` the families read from `snapshot` (after `bernstein_ledger_records`).
    fn metrics(&self, snapshot: &Snapshot<F>, x: &mut Exposition);
}

/// No fold views: the dashboard's API answers `404`, `/metrics` has the engine's and the
/// store's families only.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoViews;

impl<F: Fold> Views<F> for NoViews {
    fn answer(&self, _: &OperatorRoute, _: &str, _: &Ledger<'_, F>) -> Option<HttpResponse> {
        None
    }

    fn metrics(&self, _: &Snapshot<F>, _: &mut Exposition) {}
}

/// What a [`Views`] answer reads: the store, the clock, and whether the server serves no MCP.
pub struct Ledger<'a, F: Fold> {
    pub store: &'a dyn Store<F>,
    pub clock: &'a dyn Clock,
    /// The server serves no MCP (`bernstein dashboard`).
    pub read_only: bool,
}

impl<F: Fold> Ledger<'_, F> {
    /// Answers from a snapshot, or `503` with the store's reason.
    pub fn with_snapshot(
        &self,
        span: &str,
        f: impl FnOnce(&Snapshot<F>) -> HttpResponse,
    ) -> HttpResponse {
        match self.store.snapshot() {
            Ok(s) => f(&s),
            Err(e) => not_ready(span, &e.to_string(), e.retryable()),
        }
    }
}

/// What answering the operator's routes reads.
pub struct Operator<F: Fold> {
    pub(super) store: Arc<dyn Store<F>>,
    pub(super) clock: Arc<dyn Clock>,
    views: Arc<dyn Views<F>>,
    /// Whether the server serves no MCP (`bernstein dashboard`).
    read_only: bool,
}

impl<F: Fold> std::fmt::Debug for Operator<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Operator")
            .field("read_only", &self.read_only)
            .finish_non_exhaustive()
    }
}

/// `503` for a route nobody can answer now (the server is shutting down).
pub fn unavailable(span: &str) -> HttpResponse {
    not_ready(span, "the server is shutting down", true)
}

impl<F: Fold> Operator<F> {
    pub fn new(
        store: Arc<dyn Store<F>>,
        clock: Arc<dyn Clock>,
        views: Arc<dyn Views<F>>,
        read_only: bool,
    ) -> Operator<F> {
        Operator {
            store,
            clock,
            views,
            read_only,
        }
    }

    /// Answers an operator route with the engine's `counters` as they were when it was asked.
    pub fn answer(&self, req: OperatorRequest, counters: &Counters) -> HttpResponse {
        let span = req.span_id.as_str();
        let r = match req.route {
            OperatorRoute::Healthz => {
                HttpResponse::json(Status::OK, span, &json!({"status": "ok"}))
            }
            OperatorRoute::Readyz => self.readiness(span),
            OperatorRoute::Metrics => self.metrics_response(span, counters),
            other => {
                let ledger = self.reads();
                self.views.answer(&other, span, &ledger).unwrap_or_else(|| {
                    HttpResponse::problem(
                        Status::NOT_FOUND,
                        span,
                        "not_found",
                        &format!("{other:?} is not served here"),
                    )
                })
            }
        };
        if req.keep_alive { r } else { r.closing() }
    }

    fn reads(&self) -> Ledger<'_, F> {
        Ledger {
            store: &*self.store,
            clock: &*self.clock,
            read_only: self.read_only,
        }
    }

    pub(super) fn views(&self) -> &dyn Views<F> {
        &*self.views
    }

    /// `/readyz`: 200 once the ledger opened, verified, the store answers and can still take
    /// appends; 503 with the store's own reason otherwise.
    fn readiness(&self, span: &str) -> HttpResponse {
        self.reads().with_snapshot(span, |s| {
            if let Err(e) = self.store.check_writable() {
                return not_ready(span, &e.to_string(), e.retryable());
            }
            ok(
                span,
                &json!({"status": "ready", "records": s.position.seq, "head": s.position.head.to_string()}),
            )
        })
    }
}

/// `200` with `v` as JSON, not to be cached.
pub fn ok(span: &str, v: &Value) -> HttpResponse {
    HttpResponse::json(Status::OK, span, v).with_header("Cache-Control", "no-store")
}

/// 503 with the reason; `Retry-After` only when waiting may help (`retryable`), not for a
/// ledger that needs its operator.
pub fn not_ready(span: &str, reason: &str, retryable: bool) -> HttpResponse {
    let r = HttpResponse::json(
        Status::SERVICE_UNAVAILABLE,
        span,
        &json!({"status": "not_ready", "error": "not_ready", "reason": reason, "message": reason, "retryable": retryable}),
    );
    if retryable {
        r.with_header("Retry-After", "5")
    } else {
        r
    }
}
