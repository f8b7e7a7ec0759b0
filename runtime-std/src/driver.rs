//! The request driver shared by every transport and both runtimes: read a snapshot, run the
//! pure core, commit its records with compare-and-append, and only then render the response.
//!
//! On a conflict (another writer moved the head first) the request is run again from a fresh
//! snapshot, up to [`MAX_ATTEMPTS`] times; the core is pure, so a re-run is the same request
//! seen against newer records, never a merge. This module must never release a response whose
//! records are not durable, and holds no protocol logic of its own.
//!
//! An outcome marked `pending` (`tasks/result` of a task still running, a long poll of
//! `bernstein_run_status`) is held back: the driver polls the store's head with a bounded
//! backoff and handles the same message again once the head moves, until the answer is final,
//! the deadline passes (the [`WaitPolicy`]'s, or the request's own if shorter) or the caller's
//! `stop` hook ends the wait; then it serves the message once more to settle it (the answer as
//! it stands) or, when the client cancelled, to answer `{cancelled: true, partial}`. The
//! notifications of every round (a waiting long poll's progress ticks) leave as soon as that
//! round's records are durable ([`serve_message_streaming`]), not with the final answer.
//! The final answer is counted once into the [`Env`]'s metrics, with what the core reports of it.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use bernstein_core::ledger::{AppendResult, LedgerPosition, Store, StoreError};
use bernstein_core::protocol::host::{HostReply, MAX_HOST_ROUNDS};
use bernstein_core::protocol::{Input, Outcome, Phase, Server, TransportFacts};

pub use crate::host::HostIo;
pub use crate::metrics::Metrics;
pub use bernstein_core::time::Clock;

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
    env: &Env<'_>,
    bytes: &[u8],
    facts: &TransportFacts,
) -> Result<Served, StoreError> {
    serve_message_with(server, env, bytes, facts, &DEFAULT_WAIT, &|| None)
}

/// Why a pending answer stops waiting before the ledger moved (what a `stop` hook returns).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stop {
    /// Answer now with things as they stand (end of input, shutdown).
    Settle,
    /// The client cancelled the request (`notifications/cancelled`, a closed response
    /// stream): answer `{cancelled: true, partial}` (a long poll) instead.
    Cancel,
    /// Don't wait at all and don't settle: hand the pending state back (`Served::pending`),
    /// so the caller can serve the message again somewhere it may block.
    Defer,
}

/// What a request is served against: the ledger, the clock, the host and, when the server
/// keeps them, the metrics it counts into.
#[derive(Clone, Copy)]
pub struct Env<'a> {
    pub store: &'a dyn Store,
    pub clock: &'a dyn Clock,
    pub host: &'a dyn HostIo,
    pub metrics: Option<&'a Metrics>,
}

/// The owned [`Env`] a long-lived server shares between its threads.
#[derive(Clone)]
pub struct Backend {
    pub store: Arc<dyn Store>,
    pub clock: Arc<dyn Clock>,
    pub host: Arc<dyn HostIo>,
    /// This server's counters (`GET /metrics`), started now.
    pub metrics: Arc<Metrics>,
}

impl Backend {
    pub fn new(store: Arc<dyn Store>, clock: Arc<dyn Clock>, host: Arc<dyn HostIo>) -> Backend {
        let metrics = Arc::new(Metrics::new(clock.now()));
        Backend {
            store,
            clock,
            host,
            metrics,
        }
    }

    pub fn env(&self) -> Env<'_> {
        Env {
            store: &*self.store,
            clock: &*self.clock,
            host: &*self.host,
            metrics: Some(&self.metrics),
        }
    }
}

impl std::fmt::Debug for Backend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Backend")
    }
}

/// [`serve_message_streaming`] collecting the notifications into [`Served::notifications`]
/// (in order, before the response), for callers that write everything at the end.
pub fn serve_message_with(
    server: &Server,
    env: &Env<'_>,
    bytes: &[u8],
    facts: &TransportFacts,
    wait: &WaitPolicy,
    stop: &dyn Fn() -> Option<Stop>,
) -> Result<Served, StoreError> {
    let notes = std::cell::RefCell::new(Vec::new());
    let mut served = serve_message_streaming(server, env, bytes, facts, wait, stop, &|n| {
        notes.borrow_mut().push(n.to_vec());
    })?;
    served.notifications = notes.into_inner();
    Ok(served)
}

/// [`serve_message`] with an explicit wait policy, a cancellation hook and a sink for
/// notifications: `notify` gets each notification as soon as the records of the round that
/// produced it are durable — a long poll's progress ticks while it still waits — and
/// [`Served::notifications`] stays empty. `stop` is asked
/// before and between two looks at the store and ends the wait of a pending answer when it
/// says why (a transport that learns its client went away, or a `notifications/cancelled`,
/// plugs in here). A wait that ends without the answer becoming final serves the message once
/// more in [`Phase::Settle`] or [`Phase::Cancelled`], so the answer sent and the records
/// committed are the core's, never a transport's invention.
pub fn serve_message_streaming(
    server: &Server,
    env: &Env<'_>,
    bytes: &[u8],
    facts: &TransportFacts,
    wait: &WaitPolicy,
    stop: &dyn Fn() -> Option<Stop>,
    notify: &dyn Fn(&[u8]),
) -> Result<Served, StoreError> {
    let started = Instant::now();
    let _serving = env.metrics.map(Metrics::request_started);
    let mut waiting = None;
    let mut deferred = false;
    let mut phase = Phase::Live;
    let outcome = loop {
        let mut outcome = handle_and_commit(server, env, bytes, facts, phase)?;
        // The round's records are durable: its notifications may leave.
        for n in std::mem::take(&mut outcome.notifications) {
            notify(&n);
        }
        let Some(pending) = outcome.pending.as_ref().filter(|_| phase == Phase::Live) else {
            break outcome;
        };
        let limit = pending.max_wait_ms.map_or(wait.max_wait, |ms| {
            wait.max_wait.min(Duration::from_millis(ms))
        });
        if waiting.is_none() {
            waiting = env.metrics.map(Metrics::wait_started);
        }
        phase = match wait_for_move(env.store, &pending.after, started + limit, wait, stop)? {
            Waited::Moved => Phase::Live,
            Waited::Deadline | Waited::Stopped(Stop::Settle) => Phase::Settle,
            Waited::Stopped(Stop::Cancel) => Phase::Cancelled,
            Waited::Stopped(Stop::Defer) => {
                deferred = true;
                break outcome;
            }
        };
    };
    drop(waiting);
    // The records are durable: the response may leave. A deferred answer is counted when it
    // is served again.
    let took = started.elapsed();
    if let Some(m) = env.metrics.filter(|_| !deferred) {
        m.served(&outcome.tally, took);
    }
    let latency_ms = u64::try_from(took.as_millis()).unwrap_or(u64::MAX);
    Ok(Served {
        notifications: outcome.notifications,
        span_id: outcome.response.as_ref().map(|r| r.span_id.clone()),
        response: outcome.response.map(|r| r.render(latency_ms)),
        negotiated_version: outcome.negotiated_version,
        pending: outcome.pending.is_some(),
    })
}

/// How a wait for the ledger ended.
enum Waited {
    Moved,
    Deadline,
    Stopped(Stop),
}

/// Polls the store's head until it moves past `after`, the deadline passes or `stop` says so.
fn wait_for_move(
    store: &dyn Store,
    after: &LedgerPosition,
    deadline: Instant,
    wait: &WaitPolicy,
    stop: &dyn Fn() -> Option<Stop>,
) -> Result<Waited, StoreError> {
    let mut pause = wait.min_backoff;
    loop {
        if let Some(why) = stop() {
            return Ok(Waited::Stopped(why));
        }
        let now = Instant::now();
        if now >= deadline {
            return Ok(Waited::Deadline);
        }
        let nap = pause.min(deadline - now);
        if !store.wait_for_change(after, nap) {
            std::thread::sleep(nap);
        }
        pause = (pause * 2).min(wait.max_backoff);
        if store.snapshot()?.position != *after {
            return Ok(Waited::Moved);
        }
    }
}

/// Runs the core and commits its records, re-running on conflicts, and performing on the host
/// what the core asks for (the core bounds the rounds; so does this loop).
fn handle_and_commit(
    server: &Server,
    env: &Env<'_>,
    bytes: &[u8],
    facts: &TransportFacts,
    phase: Phase,
) -> Result<Outcome, StoreError> {
    let store = env.store;
    let mut conflicts = 0;
    let mut replies: Vec<HostReply> = Vec::new();
    let mut turn = Turn::join_if_contended();
    let outcome = loop {
        // May hold records still waiting for their fsync: settled below before answering.
        let snapshot = store.snapshot_unsettled()?;
        let outcome = server.handle_round(
            &Input {
                bytes,
                snapshot: &snapshot,
                now: env.clock.now(),
                transport: facts,
            },
            &replies,
            phase,
        );
        // Release the snapshot before appending, so the store can fold into it without a copy.
        drop(snapshot);
        if let Some(request) = &outcome.host {
            if replies.len() > MAX_HOST_ROUNDS {
                return Err(StoreError::Unavailable(
                    "the core kept asking the host after its round limit".into(),
                ));
            }
            replies.push(env.host.perform(request));
            continue;
        }
        let Some(append) = &outcome.append else {
            break outcome;
        };
        match store.compare_and_append_unsettled(append)? {
            AppendResult::Committed(_) => break outcome,
            AppendResult::Conflict { .. } => {
                conflicts += 1;
                if conflicts >= MAX_ATTEMPTS {
                    return Err(StoreError::Unavailable(format!(
                        "the ledger head moved {conflicts} times while serving one request; gave up"
                    )));
                }
                turn.take(conflicts);
            }
        }
    };
    // The answer reflects records that may still wait for their fsync (what the snapshot read,
    // what this request appended). Wait for it after giving up the turn, so the writers queued
    // behind this one append meanwhile and share the fsync.
    drop(turn);
    store.settle()?;
    Ok(outcome)
}

/// Fairness under contention. Compare-and-append is optimistic: a request that keeps losing
/// the race for the head could be retried until it gives up. So once a request of this
/// process has lost once, it announces contention and takes a process-wide turn; while anyone
/// is contended, new requests queue for the turn too. Writers of this process then append one
/// at a time until the contention clears, and only other processes (other instances on a
/// shared store) still race, with a jittered pause after repeated losses. Uncontended
/// requests never touch the turn.
struct Turn {
    guard: Option<MutexGuard<'static, ()>>,
    counted: bool,
}

static TURN: Mutex<()> = Mutex::new(());
static CONTENDED: AtomicUsize = AtomicUsize::new(0);

impl Turn {
    fn join_if_contended() -> Turn {
        let guard = (CONTENDED.load(Ordering::Acquire) > 0)
            .then(|| TURN.lock().unwrap_or_else(PoisonError::into_inner));
        Turn {
            guard,
            counted: false,
        }
    }

    /// After the `conflicts`-th lost race: hold the turn, and pause a little when losing
    /// repeatedly (to other processes, as this one's writers take turns).
    fn take(&mut self, conflicts: usize) {
        if !self.counted {
            CONTENDED.fetch_add(1, Ordering::AcqRel);
            self.counted = true;
        }
        if self.guard.is_none() {
            self.guard = Some(TURN.lock().unwrap_or_else(PoisonError::into_inner));
        }
        if conflicts > 2 {
            let mut byte = [0u8; 1];
            let _ = getrandom::fill(&mut byte);
            let ceiling = conflicts.min(20) as u64;
            std::thread::sleep(Duration::from_micros(u64::from(byte[0]) * ceiling * 4));
        }
    }
}

impl Drop for Turn {
    fn drop(&mut self) {
        if self.counted {
            CONTENDED.fetch_sub(1, Ordering::AcqRel);
        }
    }
}

#[cfg(test)]
mod tests;
