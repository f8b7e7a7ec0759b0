//! Serving MCP messages against a ledger store and the host, the same way on every runtime:
//! the request driver that performs what the core's request engine asks for (snapshots,
//! compare-and-append, host requests, the fsync, the turn, naps), the waiting room where HTTP
//! answers wait without a thread, the in-flight registry for cancellation, host IO confined to
//! the project root, the process's metrics, the HTTP service and the stdio connection state.
//! It blocks (file IO, fsync) and moves no bytes: the runtimes (`runtime-std`, `runtime-smol`)
//! read and write sockets and pipes and call in here. It holds no protocol or domain logic.
//!
//! - [`driver`]: performs the engine's outputs ([`driver::Drive`]).
//! - [`host`]: file listings, reads and the shutdown signal the core asks for.
//! - [`metrics`]: the process's counters behind `GET /metrics`.
//! - [`inflight`]: requests in flight by id, for `notifications/cancelled`.
//! - [`http`]: the HTTP service, the waiting room and what both HTTP servers share.
//! - [`stdio`]: the state of a stdio connection and its deferred answers.

pub mod driver;
pub mod host;
pub mod http;
pub mod inflight;
pub mod metrics;
pub mod stdio;
