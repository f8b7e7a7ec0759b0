//! The ledger: the append-only, hash-chained record every response is derived from.
//!
//! - [`record`]: the record format, sealing drafts into chained records, parsing lines.
//! - [`line`]: reading a stored line at hashing speed (the verifier's and the stores' path).
//! - [`snapshot`]: the projection of a ledger prefix that the core reads.
//! - [`store`]: the interface a storage backend implements (file store, later PostgreSQL).
//! - [`verify`]: offline verification of a ledger's bytes, naming the first bad record.
//!
//! - [`compact`]: small strings and packed persistent collections for folds.
//!
//! Byte formats are specified in docs/FORMATS.md. The ledger sits below the protocol engine and
//! the domain and names neither (`tests/module_graph.rs`): a [`Snapshot`] is generic over the
//! [`Fold`] its records are folded into (the domain's is `domain::Projection`).

pub mod compact;
pub mod line;
pub mod record;
pub mod snapshot;
pub mod store;
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
