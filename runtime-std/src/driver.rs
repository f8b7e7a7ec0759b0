//! The request driver shared by every transport and both runtimes: read a snapshot, run the
//! pure core, commit its records with compare-and-append, and only then render the response.
//!
//! On a conflict (another writer moved the head first) the request is run again from a fresh
//! snapshot, up to [`MAX_ATTEMPTS`] times; the core is pure, so a re-run is the same request
//! seen against newer records, never a merge. This module must never release a response whose
//! records are not durable, and holds no protocol logic of its own.
//!
//! An outcome marked `pending` (`tasks/result` of a task still running) is held back: the
//! driver polls the store's head with a bounded backoff and handles the same message again once
//! the head moves, until the answer is final, the [`WaitPolicy`] deadline passes or the caller's
//! `stop` hook says the client went away; then it sends the answer it has (a retryable error).

use std::time::{Duration, Instant};

use bernstein_core::ledger::{AppendResult, LedgerPosition, Store, StoreError};
use bernstein_core::protocol::{Input, Outcome, Server, TransportFacts};

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
    /// Whether the answer was still pending when the wait ended (it is then a retryable
    /// "not ready" answer; a transport may serve the message again in the background instead).
    pub pending: bool,
}

/// How long and how often the driver waits for the ledger to move under a pending answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WaitPolicy {
    /// Longest a pending answer is held back before it is sent as it stands.
    pub max_wait: Duration,
    /// First pause between two looks at the store's head.
    pub min_backoff: Duration,
    /// Longest pause between two looks (the pause doubles up to it).
    pub max_backoff: Duration,
}

/// Two minutes, polling every 10 ms at first and every 200 ms at most.
pub const DEFAULT_WAIT: WaitPolicy = WaitPolicy {
    max_wait: Duration::from_secs(120),
    min_backoff: Duration::from_millis(10),
    max_backoff: Duration::from_millis(200),
};

/// Serves one message: snapshot → `server.handle` → compare-and-append (retried from a fresh
/// snapshot on conflict) → render with the measured latency. `Err` only for store failures,
/// after which nothing was acknowledged. Pending answers wait under [`DEFAULT_WAIT`].
pub fn serve_message(
    server: &Server,
    store: &dyn Store,
    clock: &dyn Clock,
    bytes: &[u8],
    facts: &TransportFacts,
) -> Result<Served, StoreError> {
    serve_message_with(server, store, clock, bytes, facts, &DEFAULT_WAIT, &|| false)
}

/// [`serve_message`] with an explicit wait policy and a cancellation hook: `stop` is asked
/// between two looks at the store and ends the wait of a pending answer when it returns true
/// (a transport that learns its client went away, or a `notifications/cancelled`, plugs in
/// here).
pub fn serve_message_with(
    server: &Server,
    store: &dyn Store,
    clock: &dyn Clock,
    bytes: &[u8],
    facts: &TransportFacts,
    wait: &WaitPolicy,
    stop: &dyn Fn() -> bool,
) -> Result<Served, StoreError> {
    let started = Instant::now();
    let deadline = started + wait.max_wait;
    let outcome = loop {
        let outcome = handle_and_commit(server, store, clock, bytes, facts)?;
        match &outcome.pending {
            Some(pending) if Instant::now() < deadline && !stop() => {
                if !wait_for_move(store, &pending.after, deadline, wait, stop)? {
                    break outcome;
                }
            }
            _ => break outcome,
        }
    };
    // The records are durable: the response may leave.
    let latency_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    Ok(Served {
        notifications: outcome.notifications,
        span_id: outcome.response.as_ref().map(|r| r.span_id.clone()),
        response: outcome.response.map(|r| r.render(latency_ms)),
        negotiated_version: outcome.negotiated_version,
        pending: outcome.pending.is_some(),
    })
}

/// Polls the store's head until it moves past `after` (true), or the deadline passes or `stop`
/// says so (false).
fn wait_for_move(
    store: &dyn Store,
    after: &LedgerPosition,
    deadline: Instant,
    wait: &WaitPolicy,
    stop: &dyn Fn() -> bool,
) -> Result<bool, StoreError> {
    let mut pause = wait.min_backoff;
    loop {
        let now = Instant::now();
        if now >= deadline || stop() {
            return Ok(false);
        }
        std::thread::sleep(pause.min(deadline - now));
        pause = (pause * 2).min(wait.max_backoff);
        if store.snapshot()?.position != *after {
            return Ok(true);
        }
    }
}

/// Runs the core and commits its records, re-running on conflicts.
fn handle_and_commit(
    server: &Server,
    store: &dyn Store,
    clock: &dyn Clock,
    bytes: &[u8],
    facts: &TransportFacts,
) -> Result<Outcome, StoreError> {
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
    Ok(outcome)
}

#[cfg(test)]
mod tests;
