//! The process's own counters, for `GET /metrics`: a value owned by the server's [`Backend`]
//! (no process-global registry) and handed to the request driver in its [`Env`].
//!
//! The driver counts a message once, when its records are durable and its answer final (not
//! per conflict re-run, long-poll round or host round), from the facts the core returns with
//! it ([`Tally`]: bounded labels only). Gauges of work in progress are atomics held by RAII
//! guards; the labelled counters and histograms sit behind one small mutex, taken once per
//! answered message. The ledger's own figures (fsyncs, size, checkpoints) are the store's and
//! are read from it when the metrics are rendered.
//!
//! [`Backend`]: crate::driver::Backend
//! [`Env`]: crate::driver::Env

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use bernstein_core::Timestamp;
use bernstein_core::histogram::{self, Histogram};
use bernstein_core::protocol::tally::Tally;

/// The counters of one server process.
#[derive(Debug)]
pub struct Metrics {
    started_at: Timestamp,
    in_flight: Arc<AtomicUsize>,
    waits: Arc<AtomicUsize>,
    waits_refused: AtomicU64,
    connections: Arc<AtomicUsize>,
    counts: Mutex<Counts>,
}

/// The labelled counters, as read at one instant.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Counts {
    /// Requests answered, by method label.
    pub requests: BTreeMap<&'static str, u64>,
    /// Audited tool calls by (tool, era, outcome).
    pub calls: BTreeMap<(&'static str, &'static str, String), u64>,
    /// Seconds from the start of serving a call's message to its durable answer, by tool.
    pub call_seconds: BTreeMap<&'static str, Histogram>,
}

/// Holds one unit of a gauge until dropped.
#[derive(Debug)]
pub struct Held(Arc<AtomicUsize>);

impl Drop for Held {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

impl Metrics {
    /// Fresh counters of a server started at `started_at` (wall clock).
    pub fn new(started_at: Timestamp) -> Metrics {
        Metrics {
            started_at,
            in_flight: Arc::new(AtomicUsize::new(0)),
            waits: Arc::new(AtomicUsize::new(0)),
            waits_refused: AtomicU64::new(0),
            connections: Arc::new(AtomicUsize::new(0)),
            counts: Mutex::new(Counts::default()),
        }
    }

    /// A message is being served (until the guard drops).
    pub fn request_started(&self) -> Held {
        hold(&self.in_flight)
    }

    /// A pending answer is held back waiting for the ledger (until the guard drops).
    pub fn wait_started(&self) -> Held {
        hold(&self.waits)
    }

    /// A pending answer found every wait slot taken and was sent at once.
    pub fn wait_refused(&self) {
        self.waits_refused.fetch_add(1, Ordering::Relaxed);
    }

    pub fn waits_refused(&self) -> u64 {
        self.waits_refused.load(Ordering::Relaxed)
    }

    /// Counts what one message's final, durable answer answered and audited; `took` is the
    /// time from the start of serving it.
    pub fn served(&self, tally: &Tally, took: Duration) {
        if tally.methods.is_empty() && tally.calls.is_empty() {
            return;
        }
        let mut c = self.lock();
        for m in &tally.methods {
            *c.requests.entry(m).or_default() += 1;
        }
        for call in &tally.calls {
            let key = (call.tool, call.era, call.outcome.clone());
            *c.calls.entry(key).or_default() += 1;
            c.call_seconds
                .entry(call.tool)
                .or_insert_with(|| Histogram::new(histogram::SECONDS))
                .observe(took.as_secs_f64());
        }
    }

    /// The open-connections gauge, for the HTTP runtimes' connection counters to share.
    pub fn connections(&self) -> Arc<AtomicUsize> {
        self.connections.clone()
    }

    pub fn connections_open(&self) -> usize {
        self.connections.load(Ordering::Relaxed)
    }

    pub fn in_flight(&self) -> usize {
        self.in_flight.load(Ordering::Relaxed)
    }

    pub fn waits(&self) -> usize {
        self.waits.load(Ordering::Relaxed)
    }

    pub fn started_at(&self) -> Timestamp {
        self.started_at
    }

    /// The labelled counters now.
    pub fn counts(&self) -> Counts {
        self.lock().clone()
    }

    fn lock(&self) -> MutexGuard<'_, Counts> {
        // Every update is a few increments: a panic cannot leave the maps torn.
        self.counts.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

fn hold(gauge: &Arc<AtomicUsize>) -> Held {
    gauge.fetch_add(1, Ordering::AcqRel);
    Held(gauge.clone())
}

#[cfg(test)]
mod tests;
