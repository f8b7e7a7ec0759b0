//! The blocking runtime of the Bernstein MCP server: the request driver shared by every
//! transport and runtime, the host IO the core asks for, and the stdio and HTTP transports. It
//! does the IO the pure core must not; it holds no protocol or domain logic of its own. The
//! ledger store, keys and wall clock are `bernstein-store-file`'s.
//!
//! - [`host`]: file listings, reads and the shutdown signal the core asks for, confined to
//!   the project root.
//! - [`driver`]: performs what the core's request engine asks for (snapshots, appends, the
//!   fsync, the turn, naps), for every transport.
//! - [`metrics`]: the process's counters behind `GET /metrics`.
//! - [`inflight`]: requests in flight by id, for `notifications/cancelled`.
//! - [`stdio`], [`http`]: the transports.

pub mod driver;
pub mod host;
pub mod http;
pub mod inflight;
pub mod metrics;
pub mod stdio;
