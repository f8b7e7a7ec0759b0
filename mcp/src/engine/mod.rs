//! The request engine: the state machine of one request from its bytes (or an operator's
//! command, see [`Job`]) to its durable answer, with the world outside reduced to [`Input`]s
//! and [`Output`]s (the shape of quinn-proto's `Connection` and str0m's `Rtc`). A runtime creates a [`Request`], then repeatedly performs
//! what [`Request::poll_output`] asks for and feeds the result back with
//! [`Request::handle_input`], until [`Output::Done`].
//!
//! What lives here, as explicit per-request state: reading a snapshot and running the core on
//! it (a [`Job`]; for a message, [`Server::handle_round`]), the host-request rounds, compare-and-append with re-runs from
//! a fresh snapshot on conflict (at most [`MAX_ATTEMPTS`] runs), the fairness turn taken once
//! a request has lost a race ([`turns`]), the wait of a pending answer for the ledger head to
//! move (its wait slot, deadline, backoff, stop), and the settle/cancel round that ends a wait.
//! What a server's requests share is decided here too, as plain values the runtime keeps
//! behind its lock: the turn ([`turns`]), the wait slots and their caps ([`wait_slots`]) and
//! the requests a `notifications/cancelled` reaches ([`cancels`]). Time and randomness only
//! arrive as arguments ([`Moment`], the request's seed); the engine never blocks and performs
//! no IO.
//!
//! [`Server::handle_round`]: crate::protocol::Server::handle_round

pub mod cancels;
pub mod job;
mod request;
pub mod turns;
pub mod wait_slots;

use core::time::Duration;

pub use cancels::Cancels;
pub use job::{Job, Message, OwnedMessage, Round};
pub use request::{Finished, Input, Output, Request};
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
    /// The request's content-derived span id (the `X-Bernstein-Span-Id` header).
    pub span_id: Option<String>,
    /// Set by `initialize`: the revision the connection speaks from now on.
    pub negotiated_version: Option<String>,
}
