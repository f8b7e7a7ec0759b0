//! What a server's engine counts for `GET /metrics`: plain values it updates as it serves (kept
//! in [`super::shared::Shared`], one lock per engine, so that `/metrics` adds up every engine's). A message is counted once, when
//! its answer is final and durable (not per re-run, long-poll round or host round), from the
//! facts the protocol returns with it ([`Tally`]: bounded labels only). The ledger's own
//! figures (fsyncs, size, checkpoints) are the store's; the runtime reads them from it.

use std::collections::BTreeMap;

use crate::histogram::{self, Histogram};
use crate::protocol::tally::Tally;
use crate::time::Timestamp;
use core::time::Duration;

/// The counters of one server.
#[derive(Clone, Debug, PartialEq)]
pub struct Counters {
    /// When the server started (wall clock).
    pub started_at: Timestamp,
    /// Requests answered, by method label.
    pub requests: BTreeMap<&'static str, u64>,
    /// Audited tool calls by (tool, era, outcome).
    pub calls: BTreeMap<(&'static str, &'static str, String), u64>,
    /// Seconds from the start of serving a call's message to its durable answer, by tool.
    pub call_seconds: BTreeMap<&'static str, Histogram>,
    /// Answers that would have waited for the ledger but were sent at once: every wait slot
    /// was taken.
    pub waits_refused: u64,
    /// HTTP connections open now (legacy streams and dashboard feeds included).
    pub connections: usize,
    /// Messages being served now (waits included).
    pub in_flight: usize,
    /// Answers held back now until the ledger moves.
    pub waits: usize,
}

impl Counters {
    /// Fresh counters of a server started at `started_at`.
    pub fn new(started_at: Timestamp) -> Counters {
        Counters {
            started_at,
            requests: BTreeMap::new(),
            calls: BTreeMap::new(),
            call_seconds: BTreeMap::new(),
            waits_refused: 0,
            connections: 0,
            in_flight: 0,
            waits: 0,
        }
    }

    /// Adds another engine's counts to these (`GET /metrics` of a process with several
    /// engines; the start time, the connections open and the requests in flight are the
    /// caller's).
    pub fn add(&mut self, other: &Counters) {
        for (m, n) in &other.requests {
            *self.requests.entry(m).or_default() += n;
        }
        for (k, n) in &other.calls {
            *self.calls.entry(k.clone()).or_default() += n;
        }
        for (tool, h) in &other.call_seconds {
            match self.call_seconds.get_mut(tool) {
                Some(mine) => mine.add(h),
                None => {
                    self.call_seconds.insert(tool, h.clone());
                }
            }
        }
        self.waits_refused += other.waits_refused;
        self.waits += other.waits;
    }

    /// Counts what one message's final, durable answer answered and audited; `took` is the
    /// time from the start of serving it.
    pub fn served(&mut self, tally: &Tally, took: Duration) {
        for m in &tally.methods {
            *self.requests.entry(m).or_default() += 1;
        }
        for call in &tally.calls {
            let key = (call.tool, call.era, call.outcome.clone());
            *self.calls.entry(key).or_default() += 1;
            self.call_seconds
                .entry(call.tool)
                .or_insert_with(|| Histogram::new(histogram::SECONDS))
                .observe(took.as_secs_f64());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::tally::CallFacts;

    #[test]
    fn a_message_counts_its_methods_and_calls_once() {
        let mut c = Counters::new(Timestamp(5));
        let tally = Tally {
            methods: vec!["tools/call", "ping"],
            calls: vec![CallFacts {
                tool: "t",
                era: "2025-11-25",
                outcome: "ok".into(),
            }],
        };
        c.served(&tally, Duration::from_millis(3));
        c.served(&Tally::default(), Duration::ZERO);
        assert_eq!(c.requests.get("tools/call"), Some(&1));
        assert_eq!(c.requests.get("ping"), Some(&1));
        assert_eq!(c.calls.get(&("t", "2025-11-25", "ok".into())), Some(&1));
        assert_eq!(c.call_seconds["t"].count(), 1);
    }
}
