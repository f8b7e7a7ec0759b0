//! Answers the operator's routes the core parsed ([`bernstein_core::transport::http::operator`]):
//! the probes, the dashboard's JSON API and the metrics (the live feed is the engine's). Every
//! answer is read from the store or the engine's counters; nothing here writes to the ledger,
//! so the read-only `bernstein dashboard` serves the same routes. It may block on the store:
//! runtimes call it off their loop (see [`crate::perform`]). What only the fold's owner knows
//! (the dashboard's overview, a task, a pasted object's check, the fold's own metrics) it asks
//! of the [`Views`] it was given (the domain's, for Bernstein's projection); the bodies and
//! status codes are the core's (`bernstein_core::transport::http::views`): this module only
//! reads and hands over.

use std::sync::Arc;

use bernstein_core::engine::Counters;
use bernstein_core::ledger::{Fold, Store};
use bernstein_core::time::Clock;
use bernstein_core::transport::http::views::{self, Reads, Views};
use bernstein_core::transport::http::{HttpResponse, OperatorRequest, OperatorRoute};

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

    /// Answers an operator route with the engine's `counters` as they were when it was asked:
    /// reads what the route needs (the store's snapshot and facts, the clock) and hands it to
    /// the core's answers and the fold's [`Views`].
    pub fn answer(&self, req: OperatorRequest, counters: &Counters) -> HttpResponse {
        let span = req.span_id.as_str();
        let r = match req.route {
            OperatorRoute::Healthz => views::healthz(span),
            OperatorRoute::Readyz => match self.store.snapshot() {
                Ok(s) => views::readiness(span, &s, self.store.check_writable()),
                Err(e) => views::store_failed(span, &e),
            },
            OperatorRoute::Metrics => self.metrics_response(span, counters),
            other => match self.store.snapshot() {
                Ok(snapshot) => {
                    let lines = |each: &mut dyn FnMut(&[u8]) -> bool| self.store.scan_lines(each);
                    let reads = Reads {
                        snapshot: &snapshot,
                        store: self.store.facts(),
                        now: self.clock.now(),
                        read_only: self.read_only,
                        lines: &lines,
                    };
                    self.views
                        .answer(&other, span, &reads)
                        .unwrap_or_else(|| views::not_served(span, &other))
                }
                Err(e) => views::store_failed(span, &e),
            },
        };
        if req.keep_alive { r } else { r.closing() }
    }

    pub(super) fn views(&self) -> &dyn Views<F> {
        &*self.views
    }
}
