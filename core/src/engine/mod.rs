//! The engine: a server's connections and requests as one value ([`Engine`], in [`server`]),
//! driven by [`Engine::handle_input`] with what happened ([`Input`]) and drained with
//! [`Engine::poll_output`] ([`Output`]: what to do) and [`Engine::poll_timeout`] (when to wake
//! it): the shape of quinn-proto's `Endpoint` and str0m's `Rtc`. A runtime is a loop that
//! moves bytes and performs those outputs.
//!
//! Inside it, each request is a state machine of its own ([`request::Request`]): reading a
//! snapshot and running the core on it (a [`Job`]; for a message, [`dispatch::serve`]),
//! the host-request rounds, compare-and-append with re-runs from a fresh snapshot on conflict
//! (at most [`MAX_ATTEMPTS`] runs), the fairness turn taken once a request has lost a race
//! ([`turns`]), the wait of a pending answer for the ledger head to move (its wait slot,
//! deadline, backoff, stop), and the settle/cancel round that ends a wait. A caller that is not
//! a connection (the command line's operator commands, an in-process worker, a benchmark)
//! submits its job to an engine ([`Engine::submit`]) and gets its end as
//! [`Output::Finished`]; the request machine is interpreted nowhere else. What a server's
//! requests share is plain values here: the
//! turn ([`turns`]), the wait slots and their caps ([`wait_slots`]), the requests a
//! `notifications/cancelled` reaches ([`cancels`]) and the [`Counters`]. Time and randomness
//! only arrive as arguments ([`Moment`], the seeds); the engine never blocks and performs no
//! IO.
//!
//! [`dispatch::serve`]: crate::protocol::dispatch::serve

pub mod cancels;
pub mod counters;
pub mod job;
pub mod log_budget;
pub mod request;
pub mod server;
pub mod session_levels;
pub mod shared;
#[cfg(any(test, feature = "sim"))]
pub mod sim;
pub mod span;
pub mod subscriptions;
pub mod turns;
pub mod wait_slots;

use core::time::Duration;

pub use cancels::Cancels;
pub use counters::Counters;
pub use job::{Job, Message, OwnedMessage, Round, Submitted};
pub use request::{Finished, Request};
pub use server::{
    ConnId, Drain, Engine, EngineConfig, Handed, HttpConfig, Input, JobId, Output, Peer, ReqId,
    STDIO,
};
pub use wait_slots::WaitSlots;

use crate::time::Timestamp;

/// How many times a request is run before a run of conflicts is reported as an error.
pub const MAX_ATTEMPTS: usize = 100;

/// The instant an input arrives: a monotonic reading (deadlines, latency; any origin, as long
/// as it is the same for one request) and the wall clock the core stamps records with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Moment {
    pub mono: Duration,
    pub wall: Timestamp,
}

/// How long and how often a pending answer waits for the ledger to move.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WaitPolicy {
    /// Longest a pending answer is held back before it is sent as it stands.
    pub max_wait: Duration,
    /// First pause between two looks at the store's head.
    pub min_backoff: Duration,
    /// Longest pause between two looks (the pause doubles up to it).
    pub max_backoff: Duration,
}

/// Two minutes, looking every 10 ms at first and every 200 ms at most.
pub const DEFAULT_WAIT: WaitPolicy = WaitPolicy {
    max_wait: Duration::from_secs(120),
    min_backoff: Duration::from_millis(10),
    max_backoff: Duration::from_millis(200),
};

/// Why a pending answer stops waiting before the ledger moved (the runtime's answer to
/// [`Output::AskStop`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stop {
    /// Answer now with things as they stand (end of input, shutdown).
    Settle,
    /// The client cancelled the request (`notifications/cancelled`, a closed response
    /// stream): answer `{cancelled: true, partial}` (a long poll) instead.
    Cancel,
}

/// What serving one message produced, ready to write.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Served {
    /// Notifications to send before the response, in order (runtimes that stream them as
    /// [`Output::Notify`] leave this empty).
    pub notifications: Vec<Vec<u8>>,
    /// The rendered response; `None` for notifications and client responses.
    pub response: Option<Vec<u8>>,
    /// What the response is (result, error and its code, batch), known when it was made.
    pub kind: crate::protocol::AnswerKind,
    /// The request's content-derived span id (the `X-Bernstein-Span-Id` header).
    pub span_id: Option<String>,
    /// Set by `initialize`: the revision the connection speaks from now on.
    pub negotiated_version: Option<String>,
    /// Set by `logging/setLevel`: the log level the connection asks for from now on.
    pub log_level: Option<crate::protocol::logging::LogLevel>,
    /// Set by the subscription methods: what the engine holds for the connection.
    pub subscription: Option<crate::protocol::subscriptions::Order>,
    /// Set by `initialize`: what the client declared it can be asked (the connection keeps it).
    pub declared_caps: Option<crate::protocol::input::ClientCaps>,
}
