//! Answers the operator's routes the core parsed ([`bernstein_core::transport::http::operator`]):
//! the probes, the dashboard's JSON API and the metrics (the live feed is the engine's). Every
//! answer is read from the store or the engine's counters; nothing here writes to the ledger,
//! so the read-only `bernstein dashboard` serves the same routes. It may block on the store:
//! runtimes call it off their loop (see [`crate::perform`]).

use std::sync::Arc;

use bernstein_core::engine::Counters;
use bernstein_core::ledger::Store;
use bernstein_core::time::Clock;
use bernstein_core::transport::http::{HttpResponse, OperatorRequest, OperatorRoute, Status};
use bernstein_domain::Projection;
use bernstein_domain::Snapshot;
use bernstein_domain::bound::Server;
use bernstein_domain::dashboard::verify::PastedCheck;
use bernstein_domain::dashboard::{self, ServerFacts};
use bernstein_domain::signed_head::sign_head;
use serde_json::{Value, json};

/// What answering the operator's routes reads.
pub struct Operator {
    pub(super) server: Arc<Server>,
    pub(super) store: Arc<dyn Store<Projection>>,
    pub(super) clock: Arc<dyn Clock>,
    /// Whether the server serves no MCP (`bernstein dashboard`).
    read_only: bool,
}

impl std::fmt::Debug for Operator {
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

impl Operator {
    pub fn new(
        server: Arc<Server>,
        store: Arc<dyn Store<Projection>>,
        clock: Arc<dyn Clock>,
        read_only: bool,
    ) -> Operator {
        Operator {
            server,
            store,
            clock,
            read_only,
        }
    }

    /// Answers an operator route with the engine's `counters` as they were when it was asked.
    pub fn answer(&self, req: OperatorRequest, counters: &Counters) -> HttpResponse {
        let span = req.span_id.as_str();
        let r =
            match req.route {
                OperatorRoute::Healthz => {
                    HttpResponse::json(Status::OK, span, &json!({"status": "ok"}))
                }
                OperatorRoute::Readyz => self.readiness(span),
                OperatorRoute::Metrics => self.metrics_response(span, counters),
                OperatorRoute::Overview { window_s } => self.with_snapshot(span, |s| {
                    let facts =
                        ServerFacts {
                            version: &self.server.config.server_version,
                            read_only: self.read_only,
                            store: self.store.facts(),
                            signed_head: self.server.config.signing_key.as_ref().map(|k| {
                                serde_json::to_value(sign_head(s, k)).unwrap_or(Value::Null)
                            }),
                        };
                    let now = self.clock.now();
                    ok(span, &dashboard::overview(s, &facts, now, window_s))
                }),
                OperatorRoute::Task { id } => self.with_snapshot(span, |s| {
                    match dashboard::task(&s.domain, &id, self.signer_pem()) {
                        Some(v) => ok(span, &v),
                        None => HttpResponse::problem(
                            Status::NOT_FOUND,
                            span,
                            "not_found",
                            &format!("no task {id:?} in this ledger"),
                        ),
                    }
                }),
                OperatorRoute::Verify { pasted } => self.verify_pasted(span, &pasted),
                other => HttpResponse::problem(
                    Status::NOT_FOUND,
                    span,
                    "not_found",
                    &format!("{other:?} is not served here"),
                ),
            };
        if req.keep_alive { r } else { r.closing() }
    }

    fn signer_pem(&self) -> Option<&str> {
        self.server
            .config
            .signing_key
            .as_ref()
            .map(|k| k.public_key_pem())
    }

    /// Answers from a snapshot, or 503 with the store's reason.
    fn with_snapshot(&self, span: &str, f: impl FnOnce(&Snapshot) -> HttpResponse) -> HttpResponse {
        match self.store.snapshot() {
            Ok(s) => f(&s),
            Err(e) => not_ready(span, &e.to_string(), e.retryable()),
        }
    }

    /// `/readyz`: 200 once the ledger opened, verified, the store answers and can still take
    /// appends; 503 with the store's own reason otherwise.
    fn readiness(&self, span: &str) -> HttpResponse {
        self.with_snapshot(span, |s| {
            if let Err(e) = self.store.check_writable() {
                return not_ready(span, &e.to_string(), e.retryable());
            }
            ok(
                span,
                &json!({"status": "ready", "records": s.position.seq, "head": s.position.head.to_string()}),
            )
        })
    }

    /// `POST /api/verify`: the pasted object checked against this ledger (replayed line by line
    /// for a handle or receipt).
    fn verify_pasted(&self, span: &str, pasted: &[u8]) -> HttpResponse {
        self.with_snapshot(span, |s| {
            let key = Some(self.server.config.audit_key.as_slice());
            let check = PastedCheck::new(pasted, &s.domain, "ledger", key, self.signer_pem());
            let mut check = match check {
                Ok(c) => c,
                Err(msg) => {
                    return HttpResponse::problem(Status::BAD_REQUEST, span, "bad_request", &msg);
                }
            };
            if check.wants_lines() {
                let scanned = self.store.scan_lines(&mut |line| {
                    check.push_line(line);
                    check.wants_lines()
                });
                if let Err(e) = scanned {
                    return not_ready(span, &e.to_string(), e.retryable());
                }
            }
            ok(span, &check.finish())
        })
    }
}

fn ok(span: &str, v: &Value) -> HttpResponse {
    HttpResponse::json(Status::OK, span, v).with_header("Cache-Control", "no-store")
}

/// 503 with the reason; `Retry-After` only when waiting may help (`retryable`), not for a
/// ledger that needs its operator.
fn not_ready(span: &str, reason: &str, retryable: bool) -> HttpResponse {
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
