//! Bernstein's answers to the operator's routes, pure functions of what the effects crate read
//! ([`Reads`]: a snapshot, the store's facts, the clock, the ledger's lines): the dashboard's
//! overview, a task, a pasted object checked against the ledger, and the tasks-by-status family
//! of `/metrics`.

use std::sync::Arc;

use bernstein_core::transport::http::prometheus::{Exposition, Kind};
use bernstein_core::transport::http::views::{Reads, Views, not_ready, ok};
use bernstein_core::transport::http::{HttpResponse, OperatorRoute, Status};
use serde_json::Value;

use crate::bound::Server;
use crate::dashboard::verify::PastedCheck;
use crate::dashboard::{self, ServerFacts};
use crate::signed_head::sign_head;
use crate::{Projection, Snapshot, TaskStatus};

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
        reads: &Reads<'_, Projection>,
    ) -> HttpResponse {
        let key = Some(self.server.config.audit_key.as_slice());
        let check = PastedCheck::new(
            pasted,
            &reads.snapshot.domain,
            "ledger",
            key,
            self.signer_pem(),
        );
        let mut check = match check {
            Ok(c) => c,
            Err(msg) => {
                return HttpResponse::problem(Status::BAD_REQUEST, span, "bad_request", &msg);
            }
        };
        if check.wants_lines() {
            let scanned = (reads.lines)(&mut |line| {
                check.push_line(line);
                check.wants_lines()
            });
            if let Err(e) = scanned {
                return not_ready(span, &e.to_string(), e.retryable());
            }
        }
        ok(span, &check.finish())
    }
}

impl Views<Projection> for BernsteinViews {
    fn answer(
        &self,
        route: &OperatorRoute,
        span: &str,
        reads: &Reads<'_, Projection>,
    ) -> Option<HttpResponse> {
        let s = reads.snapshot;
        Some(match route {
            OperatorRoute::Overview { window_s } => {
                let config = &self.server.config;
                let facts = ServerFacts {
                    version: &config.server_version,
                    read_only: reads.read_only,
                    store: reads.store.clone(),
                    signed_head: config
                        .signing_key
                        .as_ref()
                        .map(|k| serde_json::to_value(sign_head(s, k)).unwrap_or(Value::Null)),
                };
                ok(span, &dashboard::overview(s, &facts, reads.now, *window_s))
            }
            OperatorRoute::Task { id } => match dashboard::task(&s.domain, id, self.signer_pem()) {
                Some(v) => ok(span, &v),
                None => HttpResponse::problem(
                    Status::NOT_FOUND,
                    span,
                    "not_found",
                    &format!("no task {id:?} in this ledger"),
                ),
            },
            OperatorRoute::Verify { pasted } => self.verify_pasted(span, pasted, reads),
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
