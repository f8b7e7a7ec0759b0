//! Bernstein's ledger: the append-only, hash-chained record every response is derived from.
//! Pure like the core above it (no IO, clock or environment; `clippy.toml` and the core's
//! `tests/purity.rs` check it), and it depends on no other workspace crate.
//!
//! - [`canonical`], [`digest`]: canonical JSON bytes; SHA-256 digests and HMAC tags.
//! - [`record`]: the record format, sealing drafts into chained records, parsing lines.
//! - [`line`]: reading a stored line at hashing speed (the verifier's and the stores' path).
//! - [`snapshot`]: a ledger prefix's position, stream heads and [`Fold`] of its records.
//! - [`compact`]: small strings and packed persistent collections for folds.
//! - [`store`]: the interface a storage backend implements (the file store, PostgreSQL).
//! - [`audit`]: the body of a `tools/call`'s audit record, typed once for its writer and
//!   readers.
//! - [`rebase`]: which transactions a store may seal again after a later head (a read, or a
//!   write whose named reads stand), and the re-sealing.
//! - [`sequence`]: where an append goes when a store places it after the head it finds (the
//!   one rule of the file store, PostgreSQL and the simulation).
//! - [`verify`], [`upgrade`]: offline verification of a ledger's bytes, naming the first bad
//!   record; tagging an older ledger's records.
//! - [`histogram`]: fixed-bucket histograms (what a store's fsyncs cost, the runtimes' metrics).
//! - [`time`]: wall-clock time as a value ([`time::Timestamp`]) and the [`time::Clock`] a
//!   runtime or store reads it from.
//!
//! Byte formats are specified in docs/FORMATS.md. The protocol engine and the domain sit above
//! (`bernstein-domain`); a [`Snapshot`] is generic over what its records are folded into (the
//! domain's `Projection`), so the ledger names neither.

pub mod audit;
pub mod canonical;
pub mod compact;
pub mod digest;
pub mod histogram;
pub mod line;
pub mod rebase;
pub mod record;
pub mod sequence;
pub mod snapshot;
pub mod store;
pub mod time;
pub mod upgrade;
pub mod verify;

pub use record::{Draft, LedgerPosition, Record, RecordError, seal};
pub use snapshot::{Fold, Snapshot};
pub use store::{Append, AppendResult, Store, StoreError, StoreFacts, SyncFacts};

/// Stream of the audit chain (one entry per tool call, receipts, mailbox mirrors).
pub const AUDIT_STREAM: &str = "audit";
/// Stream of the task backlog (task creation and status changes).
pub const BACKLOG_STREAM: &str = "backlog";
/// Prefix of a run journal's stream; the rest is the run id.
pub const RUN_STREAM_PREFIX: &str = "run:";
/// The stream name of run `run_id`'s journal.
pub fn run_stream(run_id: &str) -> String {
    format!("{RUN_STREAM_PREFIX}{run_id}")
}
/// Prefix of a task mailbox's stream; the rest is the task id.
pub const MAILBOX_STREAM_PREFIX: &str = "mailbox:";
