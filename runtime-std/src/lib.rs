//! The blocking runtime of the Bernstein MCP server: the embedded `.sdd/` ledger store, the
//! audit key, the wall clock, the request driver shared by every transport and runtime, and
//! the offline `audit verify` command. It does the IO the pure core must not; it holds no
//! protocol or domain logic of its own.
//!
//! - [`store`]: [`store::FileStore`], the core's `Store` over `.sdd/ledger/`.
//! - [`keys`]: the HMAC audit key `.sdd/keys/audit.key`.
//! - [`clock`]: the wall clock handed to the core.
//! - [`host`]: file listings, reads and the shutdown signal the core asks for, confined to
//!   the project root.
//! - [`driver`]: snapshot → core → compare-and-append → response, with retry on conflict.
//! - [`metrics`]: the process's counters behind `GET /metrics`.
//! - [`inflight`]: requests in flight by id, for `notifications/cancelled`.
//! - [`verify_cmd`]: `bernstein audit verify`.

/// Writes one log line to stderr and never panics: `eprintln!` panics when the write fails, and
/// a full or closed log device must not take the server down with it.
#[macro_export]
macro_rules! log_line {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}

pub mod clock;
pub mod driver;
pub mod host;
pub mod http;
pub mod inflight;
pub mod keys;
pub mod metrics;
pub mod store;
pub mod upgrade_cmd;
pub mod verify_cmd;

pub use store::{FileStore, StoreOptions, init};
pub mod stdio;
