//! What the engines of one process share when it serves with several (`--engines N`: one event
//! loop and one [`Engine`](super::Engine) each, over one listener and one store): the caps
//! that count across engines (connections open, answers waiting, resources subscribed to), the
//! budgets of lines about single peers, and each engine's
//! [`Counters`], which `GET /metrics` adds up whichever engine serves it. A lock is held for
//! one count or one update and never across an output.
//!
//! Everything else stays with one engine. What needs more than a count crosses engines as an
//! output the runtime delivers to the others as an input ([`super::Output::Tell`], a
//! [`Notice`]): a `notifications/cancelled`, a session's log level, a client's answer to a
//! question another engine put, the OAuth issuer's keys and introspection answers it got (so a
//! token costs one fetch per process), and that this engine's commits are durable (the others'
//! waits, feeds and subscriptions look at the head). The legacy SSE transport, whose streams
//! an engine holds by token, and the dashboard's feeds are served by engine 0 (their caps close
//! the stream idle longest): another engine hands such a connection to it
//! ([`super::Output::HandOff`]).
//! One engine alone shares with nobody: [`Shared::alone`] is what it uses, and it never tells
//! nor hands off.

use core::net::IpAddr;
use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use serde_json::Value;

use super::counters::Counters;
use super::log_budget::{Admit, LogBudget};
use super::wait_slots::WaitSlots;
use crate::protocol::logging::LogLevel;
use crate::protocol::principal::Principal;
use crate::time::Timestamp;
use crate::transport::http::introspection::TokenDigest;
use crate::transport::http::session::SessionId;

/// The engine that serves what carries state the server keeps.
pub const HOME: usize = 0;

/// What one engine tells the others ([`super::Output::Tell`]; each hears it as
/// [`super::Input::Told`]).
#[derive(Clone, Debug, PartialEq)]
pub enum Notice {
    /// Records it committed are durable: waits, feeds and subscriptions look at the head.
    Committed,
    /// A `notifications/cancelled` named this request id (its JSON text), sent from `from`
    /// (whose listen streams of that id it also ends).
    Cancelled { id: String, from: Option<IpAddr> },
    /// A handshake-era session set its log level (`logging/setLevel`).
    SessionLevel { session: SessionId, level: LogLevel },
    /// A client answered a question this engine did not put: the engine that did resumes
    /// its request (as if the answer had arrived there, from principal `from`).
    Answered {
        question: String,
        answer: Result<Value, String>,
        from: Option<Principal>,
    },
    /// What its fetch of the issuer's keys brought (their JWKS document, or why none).
    Keys(Result<Value, String>),
    /// The introspection answer it got for the token of this digest (or why none).
    Introspected {
        digest: TokenDigest,
        result: Result<Value, String>,
    },
}

/// The shared part of a process's engines.
#[derive(Debug)]
pub struct Shared {
    /// HTTP connections open, on every engine (legacy streams and feeds included).
    connections: AtomicUsize,
    waits: Mutex<WaitSlots>,
    /// Resources subscribed to, on every engine.
    subscriptions: Arc<AtomicUsize>,
    /// The tokens some engine is introspecting, and whether one fetches the issuer's keys:
    /// the others wait for its answer ([`Notice::Introspected`], [`Notice::Keys`]) instead of
    /// asking the issuer again.
    introspecting: Mutex<BTreeSet<TokenDigest>>,
    fetching_keys: AtomicBool,
    /// One per engine, by index.
    counters: Vec<Mutex<Counters>>,
    /// Each engine's requests in flight, set after every input (a store, not a lock).
    in_flight: Vec<AtomicUsize>,
    /// Whether each engine has something a commit elsewhere may wake (a wait napping on the
    /// head, a feed, a subscription): only then is it told [`Notice::Committed`].
    listening: Vec<AtomicBool>,
    /// The budgets of lines about single peers (HTTP refusals, failed TLS handshakes), one of
    /// each kind for the process whatever engine writes.
    peer_lines: Mutex<[LogBudget; 2]>,
}

/// Where one engine stands among its process's engines.
#[derive(Clone, Debug)]
pub struct Sharing {
    pub index: usize,
    pub shared: Arc<Shared>,
}

impl Shared {
    /// What `engines` engines share (at least one).
    pub fn new(engines: usize) -> Shared {
        Shared {
            connections: AtomicUsize::new(0),
            waits: Mutex::new(WaitSlots::new()),
            subscriptions: Arc::new(AtomicUsize::new(0)),
            introspecting: Mutex::new(BTreeSet::new()),
            fetching_keys: AtomicBool::new(false),
            counters: (0..engines.max(1))
                .map(|_| Mutex::new(Counters::new(Timestamp(0))))
                .collect(),
            in_flight: (0..engines.max(1)).map(|_| AtomicUsize::new(0)).collect(),
            listening: (0..engines.max(1))
                .map(|_| AtomicBool::new(false))
                .collect(),
            peer_lines: Mutex::new([LogBudget::new(), LogBudget::new()]),
        }
    }

    /// Whether a line about one peer may be written at `now` (the engines of one process
    /// read one monotonic clock), within the process's budget of such lines of its kind
    /// (`tls`: a failed handshake; else a refused HTTP request).
    pub fn admit_peer_line(&self, tls: bool, now: core::time::Duration) -> Admit {
        let mut budgets = self.peer_lines.lock().unwrap_or_else(|p| p.into_inner());
        budgets[usize::from(tls)].admit(now)
    }

    /// What an engine alone shares (with nobody).
    pub fn alone() -> Sharing {
        Sharing {
            index: HOME,
            shared: Arc::new(Shared::new(1)),
        }
    }

    /// How many engines share this.
    pub fn engines(&self) -> usize {
        self.counters.len()
    }

    /// Counts one more connection if fewer than `max` are open; whether it was.
    pub(crate) fn open_connection(&self, max: usize) -> bool {
        self.connections
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < max).then_some(n + 1)
            })
            .is_ok()
    }

    /// A connection [`Shared::open_connection`] counted closed.
    pub(crate) fn close_connection(&self) {
        let _ = self
            .connections
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1));
    }

    /// Whether the caller is to introspect the token of `digest` (no engine is); if so, the
    /// others wait for it until [`Shared::introspected`].
    pub(crate) fn introspect(&self, digest: TokenDigest) -> bool {
        let mut set = self.introspecting.lock().unwrap_or_else(|p| p.into_inner());
        set.insert(digest)
    }

    pub(crate) fn introspected(&self, digest: TokenDigest) {
        let mut set = self.introspecting.lock().unwrap_or_else(|p| p.into_inner());
        set.remove(&digest);
    }

    /// Whether the caller is to fetch the issuer's keys (no engine is); if so, the others
    /// wait for it until [`Shared::keys_fetched`].
    pub(crate) fn fetch_keys(&self) -> bool {
        !self.fetching_keys.swap(true, Ordering::AcqRel)
    }

    pub(crate) fn keys_fetched(&self) {
        self.fetching_keys.store(false, Ordering::Release);
    }

    /// The count of resources subscribed to on every engine.
    pub(crate) fn subscriptions(&self) -> Arc<AtomicUsize> {
        self.subscriptions.clone()
    }

    pub(crate) fn waits(&self) -> MutexGuard<'_, WaitSlots> {
        // Every update is one count on one map entry; a panic cannot leave it torn.
        self.waits.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Engine `index`'s counters, to update.
    pub(crate) fn counters(&self, index: usize) -> MutexGuard<'_, Counters> {
        self.counters[index]
            .lock()
            .unwrap_or_else(|p| p.into_inner())
    }

    /// Every engine's counters added up.
    pub fn merged(&self) -> Counters {
        let mut all = self.counters(HOME).clone();
        for i in 1..self.engines() {
            all.add(&self.counters(i));
        }
        all.connections = self.connections.load(Ordering::Acquire);
        all.in_flight = self
            .in_flight
            .iter()
            .map(|n| n.load(Ordering::Relaxed))
            .sum();
        all
    }

    /// Engine `index` has `n` requests in flight.
    pub(crate) fn set_in_flight(&self, index: usize, n: usize) {
        self.in_flight[index].store(n, Ordering::Relaxed);
    }

    /// Engine `index` has (`true`) or no longer has something a commit elsewhere may wake;
    /// whether it starts listening now. A commit made durable after that is told; one made
    /// before was not, so an engine that starts listening looks at the head once.
    pub(crate) fn listen(&self, index: usize, listening: bool) -> bool {
        let flag = &self.listening[index];
        flag.load(Ordering::Relaxed) != listening && !flag.swap(listening, Ordering::SeqCst)
    }

    /// Whether an engine other than `me` listens for commits.
    pub(crate) fn others_listen(&self, me: usize) -> bool {
        let on = |(i, l): (usize, &AtomicBool)| i != me && l.load(Ordering::SeqCst);
        self.listening.iter().enumerate().any(on)
    }

    /// Whether a wait slot for `peer` is free in every engine's count; takes it if so.
    pub(crate) fn claim_wait(&self, peer: Option<IpAddr>) -> bool {
        self.waits().claim(peer)
    }

    pub(crate) fn release_wait(&self, peer: Option<IpAddr>) {
        self.waits().release(peer);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_connection_cap_counts_every_engine_and_never_goes_below_zero() {
        let shared = Shared::new(2);
        assert!(shared.open_connection(2));
        assert!(shared.open_connection(2));
        assert!(!shared.open_connection(2));
        shared.close_connection();
        assert!(shared.open_connection(2));
        for _ in 0..5 {
            shared.close_connection();
        }
        assert_eq!(shared.merged().connections, 0);
    }

    #[test]
    fn metrics_add_every_engines_counters() {
        let shared = Shared::new(3);
        shared.counters(0).started_at = Timestamp(10);
        shared.counters(1).waits_refused = 2;
        shared.counters(2).waits_refused = 3;
        shared.counters(2).waits = 1;
        let all = shared.merged();
        assert_eq!((all.waits_refused, all.waits), (5, 1));
        assert_eq!(all.started_at, Timestamp(10));
    }
}
