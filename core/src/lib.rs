//! Bernstein's pure sans-IO core.
//!
//! It turns (request bytes, ledger snapshot, injected clock, immutable config) into an
//! [`Outcome`]: the response, the notifications that precede it and the ledger records to
//! append. It must never touch a socket, a file, a clock, the environment or an OS random
//! source; `clippy.toml` and `tests/purity.rs` enforce that mechanically.
//!
//! - [`protocol`]: the MCP engine (JSON-RPC codec, eras, dispatch, tool registry, validation).
//! - [`engine`]: one request's state machine (snapshot, core, append, retries, host rounds,
//!   turn, waits) as inputs and outputs a runtime performs.
//! - [`domain`]: Bernstein's tasks, lifecycle, tools, prompts and capability card.
//! - [`ledger`]: record format, sealing, projection snapshot, offline verification, store API.
//! - [`histogram`]: fixed-bucket histograms, the values behind the runtime's metrics.
//! - [`digest`], [`signing`]: SHA-256 digests and HMAC tags; Ed25519 signatures (at the bottom).
//!
//! Modules depend one way: `ledger` below `config` and `protocol`, `protocol` below `transport`
//! and `domain`; `tests/module_graph.rs` fails on a module cycle. The ledger's snapshots and the
//! protocol's server are generic over a fold; the root re-exports them bound to the domain's
//! [`Projection`] ([`Snapshot`], [`Server`], [`Input`]).

pub use bernstein_ledger as ledger;
pub use bernstein_ledger::{canonical, digest, histogram, time};

pub mod config;
pub mod domain;
pub mod engine;
pub mod protocol;
pub mod signing;
pub mod transport;

pub use config::{Config, Tier};
pub use domain::bound::Input;
pub use domain::{Projection, Server, Snapshot};
pub use ledger::{LedgerPosition, Record};
pub use protocol::{Outcome, TransportFacts, TransportKind};
pub use time::Timestamp;
