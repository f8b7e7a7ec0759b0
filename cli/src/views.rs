//! What the operator's routes read from Bernstein's projection, for the effects crate's
//! operator ([`bernstein_effects::http::operator::Operator`], which answers the probes and the
//! engine's and store's metrics itself): the dashboard's overview, a task, a pasted object
//! checked against the ledger, and the tasks-by-status family of `/metrics`.

use std::sync::Arc;

use bernstein_core::transport::http::prometheus::{Exposition, Kind};
use bernstein_core::transport::http::{HttpResponse, OperatorRoute, Status};
use bernstein_domain::bound::Server;
use bernstein_domain::dashboard::verify::PastedCheck;
use bernstein_domain::dashboard::{self, ServerFacts};
use bernstein_domain::signed_head::sign_head;
use bernstein_domain::{Projection, Snapshot, TaskStatus};
use bernstein_effects::http::operator::{Ledger, Views, not_ready, ok};
use serde_json::Value;

/// The views of a server of Bernstein's catalogue (its configuration: version, keys).
pub struct BernsteinViews {
    server: Arc<Server>,
}

impl BernsteinViews {
    pub fn new(server: Arc<Server>) -> BernsteinViews {
        BernsteinViews { server }
    }

    fn signer_pem(&self) -> Option<&str> {
        self.server
            .config
            .signing_key
            .as_ref()
            .map(|k| k.public_key_pem())
    }

    /// `POST /api/verify`: the pasted object checked against this ledger (replayed line by line
    /// for a handle or receipt).
    fn verify_pasted(
        &self,
        span: &str,
        pasted: &[u8],
        ledger: &Ledger<'_, Projection>,
    ) -> HttpResponse {
        ledger.with_snapshot(span, |s| {
            let key = Some(self.server.config.audit_key.as_slice());
            let check = PastedCheck::new(pasted, &s.domain, "ledger", key, self.signer_pem());
            let mut check = match check {
                Ok(c) => c,
                Err(msg) => {
                    return HttpResponse::problem(Status::BAD_REQUEST, span, "bad_request", &msg);
                }
            };
            if check.wants_lines() {
                let scanned = ledger.store.scan_lines(&mut |line| {
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

impl Views<Projection> for BernsteinViews {
    fn answer(
        &self,
        route: &OperatorRoute,
        span: &str,
        ledger: &Ledger<'_, Projection>,
    ) -> Option<HttpResponse> {
        Some(match route {
            OperatorRoute::Overview { window_s } => ledger.with_snapshot(span, |s| {
                let config = &self.server.config;
                let facts = ServerFacts {
                    version: &config.server_version,
                    read_only: ledger.read_only,
                    store: ledger.store.facts(),
                    signed_head: config
                        .signing_key
                        .as_ref()
                        .map(|k| serde_json::to_value(sign_head(s, k)).unwrap_or(Value::Null)),
                };
                let now = ledger.clock.now();
                ok(span, &dashboard::overview(s, &facts, now, *window_s))
            }),
            OperatorRoute::Task { id } => ledger.with_snapshot(span, |s| {
                match dashboard::task(&s.domain, id, self.signer_pem()) {
                    Some(v) => ok(span, &v),
                    None => HttpResponse::problem(
                        Status::NOT_FOUND,
                        span,
                        "not_found",
                        &format!("no task {id:?} in this ledger"),
                    ),
                }
            }),
            OperatorRoute::Verify { pasted } => self.verify_pasted(span, pasted, ledger),
            _ => return None,
        })
    }

    fn metrics(&self, snapshot: &Snapshot, x: &mut Exposition) {
        x.family(
            "bernstein_tasks",
            Kind::Gauge,
            "Tasks in the ledger by status.",
        );
        for status in TaskStatus::ALL {
            let n = snapshot.domain.count(status);
            x.sample(&[("status", status.as_str())], n as f64);
        }
    }
}

#[cfg(test)]
mod tests;
