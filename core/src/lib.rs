//! Bernstein's pure core: the domain (tasks, runs, lifecycle, tools, prompts, the capability
//! card) over the MCP engine ([`bernstein_mcp`]) and the ledger below it, which it re-exports so the stores and runtimes name one pure crate.
//!
//! It turns (request bytes, ledger snapshot, injected clock, immutable config) into an
//! [`Outcome`]: the response, the notifications that precede it and the ledger records to
//! append. It must never touch a socket, a file, a clock, the environment or an OS random
//! source; `clippy.toml` and `tests/purity.rs` enforce that mechanically, for this crate and
//! the two below it.
//!
//! - [`domain`]: Bernstein's catalogue and its fold of the ledger, the [`Projection`].
//! - [`protocol`], [`engine`], [`transport`], [`config`], [`signing`]: the MCP engine's crate.
//! - [`ledger`], [`canonical`], [`digest`], [`histogram`], [`time`]: the ledger's crate.
//!
//! The ledger's snapshots and the protocol's server are generic over a fold; the root
//! re-exports them bound to the domain's [`Projection`] ([`Snapshot`], [`Server`], [`Input`]).
//! Crates depend one way (`store-file/tests/crate_graph.rs`); inside each, modules do too
//! (`tests/module_graph.rs`).

pub use bernstein_mcp::{
    canonical, config, digest, engine, histogram, ledger, protocol, refusal_codes, signing, time,
    transport,
};

pub mod domain;

pub use config::{Config, Tier};
pub use domain::bound::Input;
pub use domain::{Projection, Server, Snapshot};
pub use ledger::{LedgerPosition, Record};
pub use protocol::{Outcome, TransportFacts, TransportKind};
pub use time::Timestamp;
