//! `GET /metrics`: the engine's counters ([`Counters`]) and the ledger's figures read from the
//! store, in the Prometheus text format (the families are listed in
//! docs/OPERATIONS.md). Nothing here writes; a store that cannot be read leaves out the
//! families derived from it and the process counters are still answered.

use bernstein_core::histogram::Histogram;
use bernstein_core::protocol::tally::METHODS;
use bernstein_core::transport::http::prometheus::{CONTENT_TYPE, Exposition, Kind};
use bernstein_core::transport::http::{HttpResponse, Status};

use super::operator::Operator;
use bernstein_core::engine::Counters;
use bernstein_core::ledger::Fold;

impl<F: Fold> Operator<F> {
    /// The exposition of this server's metrics.
    pub fn metrics_response(&self, span: &str, counters: &Counters) -> HttpResponse {
        let mut r = HttpResponse::new(Status::OK, span).with_header("Content-Type", CONTENT_TYPE);
        r.body = self.exposition(counters).into_bytes();
        r
    }

    /// The exposition text of `counters` and the store's figures.
    pub fn exposition(&self, counters: &Counters) -> String {
        let mut x = Exposition::new();
        served(&mut x, counters);
        self.ledger(&mut x);
        let gauges = [
            (
                "bernstein_http_connections_open",
                "HTTP connections open now.",
                counters.connections,
            ),
            (
                "bernstein_requests_in_flight",
                "JSON-RPC messages being served now (waits included).",
                counters.in_flight,
            ),
            (
                "bernstein_waits_in_flight",
                "Answers held back now until the ledger moves (long polls, tasks/result).",
                counters.waits,
            ),
        ];
        for (name, help, n) in gauges {
            x.family(name, Kind::Gauge, help).sample(&[], n as f64);
        }
        x.family(
            "bernstein_waits_refused_total",
            Kind::Counter,
            "Answers that would have waited for the ledger but were sent at once: every wait slot was taken.",
        )
        .sample(&[], counters.waits_refused as f64);
        x.family(
            "bernstein_process_start_time_seconds",
            Kind::Gauge,
            "When this server started, in seconds since the Unix epoch.",
        )
        .sample(&[], seconds(counters.started_at.0));
        x.finish()
    }

    /// The families read from the store: fsyncs, size, the fold's own (the views'), checkpoint.
    fn ledger(&self, x: &mut Exposition) {
        let store = &self.store;
        let facts = store.facts();
        if let Some(syncs) = &facts.syncs {
            histogram(
                x,
                "bernstein_ledger_fsync_duration_seconds",
                "Seconds each fsync of the ledger file took.",
                &syncs.fsync_seconds,
            );
            histogram(
                x,
                "bernstein_group_commit_batch_appends",
                "Appends of this process each ledger fsync made durable (fsyncs covering none are not observed).",
                &syncs.appends_per_fsync,
            );
            x.family(
                "bernstein_ledger_durable_bytes",
                Kind::Gauge,
                "Bytes of the ledger file this process knows durable (covered by a successful fsync).",
            )
            .sample(&[], syncs.durable_bytes as f64);
        }
        match store.snapshot() {
            Ok(snapshot) => {
                x.family(
                    "bernstein_ledger_records",
                    Kind::Gauge,
                    "Records in the ledger (the head's sequence number).",
                )
                .sample(&[], snapshot.position.seq as f64);
                self.views().metrics(&snapshot, x);
            }
            Err(e) => {
                bernstein_os::log_line!("bernstein http: /metrics left out the ledger: {e}")
            }
        }
        if let Some(bytes) = facts.ledger_bytes {
            x.family(
                "bernstein_ledger_bytes",
                Kind::Gauge,
                "Bytes of ledger the store has read.",
            )
            .sample(&[], bytes as f64);
        }
        if let Some(at) = facts.checkpoint_at_ms {
            let age = self.clock.now().0.saturating_sub(at);
            x.family(
                "bernstein_checkpoint_age_seconds",
                Kind::Gauge,
                "Seconds since this process last wrote or loaded a ledger checkpoint.",
            )
            .sample(&[], seconds(age));
        }
    }
}

/// The families the engine counts.
fn served(x: &mut Exposition, counts: &Counters) {
    x.family(
        "bernstein_tool_calls_total",
        Kind::Counter,
        "Tool calls this process served (one per audit record), by tool, protocol revision and outcome (ok or the refusal code).",
    );
    for ((tool, era, outcome), n) in &counts.calls {
        x.sample(
            &[("tool", tool), ("era", era), ("outcome", outcome)],
            *n as f64,
        );
    }
    x.family(
        "bernstein_requests_total",
        Kind::Counter,
        "JSON-RPC requests this process answered, by method (other for any method it does not serve).",
    );
    let known = METHODS
        .iter()
        .copied()
        .chain([bernstein_core::protocol::tally::OTHER_METHOD]);
    for method in known {
        let n = counts.requests.get(method).copied().unwrap_or(0);
        x.sample(&[("method", method)], n as f64);
    }
    x.family(
        "bernstein_tool_call_duration_seconds",
        Kind::Histogram,
        "Seconds from the start of serving a tool call to its durable answer, by tool.",
    );
    for (tool, h) in &counts.call_seconds {
        x.histogram(&[("tool", tool)], h);
    }
}

fn histogram(x: &mut Exposition, name: &str, help: &str, h: &Histogram) {
    x.family(name, Kind::Histogram, help).histogram(&[], h);
}

fn seconds(ms: u64) -> f64 {
    ms as f64 / 1000.0
}
