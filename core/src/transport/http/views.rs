//! The operator's answers that are pure functions of what was read: the JSON bodies and status
//! codes of the probes and the dashboard's API, and [`Views`], what a catalogue's owner answers
//! from a snapshot of its fold (the dashboard's overview, a task, a pasted object checked against
//! the ledger, the fold's own metrics). Bernstein's are the domain's (`bernstein-domain`'s
//! `views`); the effects crate reads the store and the clock, and hands the reads in.

use serde_json::{Value, json};

use super::OperatorRoute;
use super::prometheus::Exposition;
use super::response::{HttpResponse, Status};
use crate::ledger::{Fold, Snapshot, StoreError, StoreFacts};
use crate::time::Timestamp;

/// What an operator answer reads, read by the effects crate before it asks.
pub struct Reads<'a, F: Fold> {
    /// The store's snapshot (records not yet durable left out).
    pub snapshot: &'a Snapshot<F>,
    /// What the store tells of itself.
    pub store: StoreFacts,
    /// The wall clock when the route was asked.
    pub now: Timestamp,
    /// The server serves no MCP (`bernstein dashboard`).
    pub read_only: bool,
    /// Feeds every durable ledger line, oldest first, to the callback until it returns `false`
    /// (the store's `scan_lines`).
    pub lines: &'a Lines<'a>,
}

/// The store's line scan as an operator answer may call it.
pub type Lines<'a> = dyn Fn(&mut dyn FnMut(&[u8]) -> bool) -> Result<(), StoreError> + 'a;

/// What the operator's routes read from the fold, which only its owner can.
pub trait Views<F: Fold>: Send + Sync {
    /// Answers `route` if it is one of the fold's; `None`: not served here (`404`).
    fn answer(
        &self,
        route: &OperatorRoute,
        span: &str,
        reads: &Reads<'_, F>,
    ) -> Option<HttpResponse>;

    /// Adds to `/metrics` the families read from `snapshot` (after `bernstein_ledger_records`).
    fn metrics(&self, snapshot: &Snapshot<F>, x: &mut Exposition);
}

/// No fold views: the dashboard's API answers `404`, `/metrics` has the engine's and the
/// store's families only.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoViews;

impl<F: Fold> Views<F> for NoViews {
    fn answer(&self, _: &OperatorRoute, _: &str, _: &Reads<'_, F>) -> Option<HttpResponse> {
        None
    }

    fn metrics(&self, _: &Snapshot<F>, _: &mut Exposition) {}
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

/// A store failure as the operator's answer: `503` with its reason.
pub fn store_failed(span: &str, e: &StoreError) -> HttpResponse {
    not_ready(span, &e.to_string(), e.retryable())
}

/// `/healthz`: the process answers.
pub fn healthz(span: &str) -> HttpResponse {
    HttpResponse::json(Status::OK, span, &json!({"status": "ok"}))
}

/// `/readyz` once the snapshot was read and the store said whether it can still take appends.
pub fn readiness<F: Fold>(
    span: &str,
    snapshot: &Snapshot<F>,
    writable: Result<(), StoreError>,
) -> HttpResponse {
    match writable {
        Err(e) => store_failed(span, &e),
        Ok(()) => ok(
            span,
            &json!({"status": "ready", "records": snapshot.position.seq, "head": snapshot.position.head.to_string()}),
        ),
    }
}

/// `404` for a route this server does not answer.
pub fn not_served(span: &str, route: &OperatorRoute) -> HttpResponse {
    HttpResponse::problem(
        Status::NOT_FOUND,
        span,
        "not_found",
        &format!("{route:?} is not served here"),
    )
}

/// `503` for a route nobody can answer now (the server is shutting down).
pub fn unavailable(span: &str) -> HttpResponse {
    not_ready(span, "the server is shutting down", true)
}
