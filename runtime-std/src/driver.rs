//! The request driver shared by every transport and both runtimes: read a snapshot, run the
//! pure core, commit its records with compare-and-append, and only then render the response.
//!
//! On a conflict (another writer moved the head first) the request is run again from a fresh
//! snapshot, up to [`MAX_ATTEMPTS`] times; the core is pure, so a re-run is the same request
//! seen against newer records, never a merge. This module must never release a response whose
//! records are not durable, and holds no protocol logic of its own.

use std::time::Instant;

use bernstein_core::ledger::{AppendResult, Store, StoreError};
use bernstein_core::protocol::{Input, Server, TransportFacts};

pub use crate::clock::Clock;

/// How many times a request is run before a run of conflicts is reported as an error.
pub const MAX_ATTEMPTS: usize = 100;

/// What serving one message produced, ready to write.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Served {
    /// Notifications to send before the response, in order.
    pub notifications: Vec<Vec<u8>>,
    /// The rendered response; `None` for notifications and client responses.
    pub response: Option<Vec<u8>>,
    /// The request's content-derived span id (the `X-Bernstein-Span-Id` header).
    pub span_id: Option<String>,
    /// Set by `initialize`: the revision the connection speaks from now on.
    pub negotiated_version: Option<String>,
}

/// Serves one message: snapshot → `server.handle` → compare-and-append (retried from a fresh
/// snapshot on conflict) → render with the measured latency. `Err` only for store failures,
/// after which nothing was acknowledged.
pub fn serve_message(
    server: &Server,
    store: &dyn Store,
    clock: &dyn Clock,
    bytes: &[u8],
    facts: &TransportFacts,
) -> Result<Served, StoreError> {
    let started = Instant::now();
    let mut conflicts = 0;
    let outcome = loop {
        let snapshot = store.snapshot()?;
        let outcome = server.handle(&Input {
            bytes,
            snapshot: &snapshot,
            now: clock.now(),
            transport: facts,
        });
        // Release the snapshot before appending, so the store can fold into it without a copy.
        drop(snapshot);
        let Some(append) = &outcome.append else {
            break outcome;
        };
        match store.compare_and_append(append)? {
            AppendResult::Committed(_) => break outcome,
            AppendResult::Conflict { .. } => {
                conflicts += 1;
                if conflicts >= MAX_ATTEMPTS {
                    return Err(StoreError::Unavailable(format!(
                        "the ledger head moved {conflicts} times while serving one request; gave up"
                    )));
                }
            }
        }
    };
    // The records are durable: the response may leave.
    let latency_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    Ok(Served {
        notifications: outcome.notifications,
        span_id: outcome.response.as_ref().map(|r| r.span_id.clone()),
        response: outcome.response.map(|r| r.render(latency_ms)),
        negotiated_version: outcome.negotiated_version,
    })
}

#[cfg(test)]
mod tests;
