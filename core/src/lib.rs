//! The core: Bernstein's MCP engine, pure and sans-IO. What a server of any catalogue does with
//! the bytes it is sent, with the world outside reduced to inputs and outputs. It never touches
//! a socket, a file, a clock, the environment or an OS random source (`clippy.toml` and the
//! domain crate's `tests/purity.rs` check it), and it names no tool: a catalogue (Bernstein's is
//! `bernstein-domain`) is handed in.
//!
//! - [`protocol`]: JSON-RPC, the eras, dispatch, the tool registry and catalogue interface,
//!   validation, tasks and progress.
//! - [`engine`]: one request's state machine (snapshot, core, append, retries, host rounds,
//!   turn, waits) as inputs and outputs a runtime performs.
//! - [`transport`]: stdio lines, HTTP/1.1, SSE, auth decisions, read and stream clocks.
//! - [`config`]: what a server is configured with; [`signing`]: Ed25519 keys and signatures.
//!
//! Modules depend one way (`config` and `protocol` on `signing` and the ledger, `engine` and
//! `transport` on the protocol); the domain crate's `tests/module_graph.rs` fails on a module cycle.

pub use bernstein_ledger as ledger;
pub use bernstein_ledger::{canonical, digest, histogram, time};

pub mod config;
pub mod engine;
pub mod protocol;
pub mod signing;
pub mod transport;

pub use config::{Config, Tier};
pub use ledger::{LedgerPosition, Record};
pub use protocol::{Outcome, TransportFacts, TransportKind};
pub use time::Timestamp;
