//! The storage interface. The core never calls it; runtimes drive it: read a snapshot, run the
//! core, compare-and-append the outcome's records, retry from a fresh snapshot on conflict.
//! Implementations: the embedded file store (runtime-std), later PostgreSQL.

use std::sync::Arc;

use super::record::LedgerPosition;
use super::record::Record;
use super::snapshot::{Fold, Snapshot};
use crate::digest::Digest;
use crate::histogram::Histogram;

/// Records one request produces, to be committed together: right after `expected` (the head of
/// the snapshot they were decided on), or, when they name what they read (`read_heads`), after
/// any later head at which those streams still stand where they were (`crate::rebase`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Append {
    pub expected: LedgerPosition,
    pub records: Vec<Record>,
    /// The heads of the streams the records were decided on (the zero digest for a stream
    /// that did not exist), every stream the records write but `audit` among them; `None`:
    /// decided on the whole ledger as it stood at `expected`, so placed only right after it
    /// (a call that wrote nothing but its audit record aside: [`crate::rebase`]).
    pub read_heads: Option<Vec<(String, Digest)>>,
}

impl Append {
    /// The bytes to store: one canonical line per record.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        for r in &self.records {
            out.extend_from_slice(&r.to_line());
        }
        out
    }

    /// The ledger position after a successful commit.
    pub fn new_position(&self) -> LedgerPosition {
        self.records
            .last()
            .map_or(self.expected, |r| LedgerPosition {
                seq: r.seq,
                head: r.hash,
            })
    }
}

/// Result of a compare-and-append.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AppendResult {
    /// Durable: the records are on stable storage at this position.
    Committed(LedgerPosition),
    /// Another writer moved the head; nothing was written.
    Conflict { current: LedgerPosition },
}

/// A storage failure (IO, corruption, lock). Never a peer fault.
#[derive(Clone, Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    #[error("ledger IO failed: {0}")]
    Io(String),
    #[error(
        "ledger is corrupt at {file}:{line} (seq {seq}): {reason}; nothing is served from it: run `bernstein audit verify` for the full report (and `--witness FILE` with saved run handles, receipts or signed heads to see whether records were cut)"
    )]
    Corrupt {
        file: String,
        line: u64,
        seq: u64,
        reason: String,
    },
    /// The first record's MAC does not verify: the key is not the one the ledger was written
    /// with (nothing was changed).
    #[error(
        "this instance's audit key does not match the ledger's ({file}: the first record's HMAC tag does not verify under it); copy .sdd/keys from an instance that wrote it"
    )]
    KeyMismatch { file: String },
    /// The first record carries a tag of an older ledger format (nothing was changed).
    #[error(
        "{file} was written in ledger format 2 (its HMAC tags cover each record's pre-image, not its hash); stop every server using it and run `bernstein ledger upgrade`, which re-tags it in place and changes no record hash (a PostgreSQL ledger: docs/POSTGRES.md, \"Upgrading the ledger format\"); nothing was changed"
    )]
    OldFormat { file: String },
    #[error("ledger store unavailable: {0}")]
    Unavailable(String),
    /// The ledger cannot be served until an operator acts (it did not verify when the server
    /// opened it, its file was replaced under the server, or an fsync of it failed): retrying
    /// does not help.
    #[error("{0}")]
    NotServed(String),
}

impl StoreError {
    /// Whether the same request may succeed later without anyone acting: `false` for a ledger
    /// that does not verify, was written under another key or in an older format, or is not
    /// served; `true` for I/O and an unavailable store (a full disk, a database restarting).
    pub fn retryable(&self) -> bool {
        matches!(self, StoreError::Io(_) | StoreError::Unavailable(_))
    }
}

/// A ledger backend whose snapshots fold the records into `F`.
pub trait Store<F: Fold>: Send + Sync {
    /// The projection at the current head, folding whatever was appended since the last call.
    fn snapshot(&self) -> Result<Arc<Snapshot<F>>, StoreError>;
    /// Appends `append.records` atomically iff the head is `append.expected`; durable on
    /// `Committed`.
    fn compare_and_append(&self, append: &Append) -> Result<AppendResult, StoreError>;
    /// Whether this store hears of heads other writers commit ([`Store::heard_past`]): false
    /// (the default) for a store that only finds them by reading.
    fn hears_heads(&self) -> bool {
        false
    }
    /// Blocks at most `timeout` until this store hears that the ledger moved past seq `after`
    /// (PostgreSQL: a NOTIFY of any instance's commit) and returns the newest seq heard; `None`
    /// when none came in time or the store hears of none (at once then). A hint, never a
    /// source of truth: callers read the head afterwards.
    fn heard_past(&self, after: u64, timeout: core::time::Duration) -> Option<u64> {
        let _ = (after, timeout);
        None
    }
    /// Like [`Store::snapshot`], but it may include records whose appends are not durable yet
    /// (a writer of this process is still waiting for the fsync it shares with others). A
    /// caller that answers from it without appending calls [`Store::settle`] first; one whose
    /// append commits is covered, since its append extends what it read and is acknowledged
    /// only once durable. The default is [`Store::snapshot`] (stores whose snapshots only ever
    /// hold durable records).
    fn snapshot_unsettled(&self) -> Result<Arc<Snapshot<F>>, StoreError> {
        self.snapshot()
    }
    /// Blocks until every record up to seq `upto` handed out so far by
    /// [`Store::snapshot_unsettled`], or committed by [`Store::compare_and_append_unsettled`],
    /// is durable (`u64::MAX`: every one), and returns the seq up to which records are now
    /// known durable: at least `upto` (or what was handed out, if less), and more when the
    /// fsync that covered them also covered records written since (by other threads, or by the
    /// caller after it asked). Records past `upto` need not be durable: the caller did not
    /// see them. The default: every record handed out is durable already.
    fn settle(&self, upto: u64) -> Result<u64, StoreError> {
        Ok(upto)
    }
    /// Like [`Store::compare_and_append`], but `Committed` may come back before the records are
    /// durable: the caller calls [`Store::settle`] before acknowledging them, after letting go
    /// of anything other writers wait for, so that they append meanwhile and one fsync covers
    /// them all. The default is [`Store::compare_and_append`] (durable on return).
    fn compare_and_append_unsettled(&self, append: &Append) -> Result<AppendResult, StoreError> {
        self.compare_and_append(append)
    }
    /// Whether [`Store::snapshot_unsettled`] and [`Store::compare_and_append_unsettled`] return
    /// without waiting on anything but this machine's file system (no network round trip, no
    /// fsync: the file store), so that an event loop may perform them on its own thread and
    /// hand only [`Store::settle`] to another. The default, `false`, sends every call off the
    /// loop.
    fn local(&self) -> bool {
        false
    }
    /// Whether appends can still succeed, checked without appending: what a readiness probe
    /// asks besides a snapshot. The file store checks that the ledger it holds open is still
    /// the file at its path (a ledger replaced under a server refuses every append). The
    /// default: nothing more to check.
    fn check_writable(&self) -> Result<(), StoreError> {
        Ok(())
    }
    /// What the operator's views show of the store itself (everything optional).
    fn facts(&self) -> StoreFacts {
        StoreFacts::default()
    }
    /// Feeds every ledger line (without its newline), oldest first, to `each` until it returns
    /// `false`: what the dashboard's checks of a pasted handle or receipt replay. The default
    /// refuses (a store that cannot be read line by line).
    fn scan_lines(&self, each: &mut dyn FnMut(&[u8]) -> bool) -> Result<(), StoreError> {
        let _ = each;
        Err(StoreError::Unavailable(
            "this store cannot be read line by line".into(),
        ))
    }
}

/// Facts about a store for the operator's views; `None` where a store does not know.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StoreFacts {
    /// `"file"` or `"postgres"`.
    pub kind: &'static str,
    /// Bytes of ledger the store has folded.
    pub ledger_bytes: Option<u64>,
    /// Wall-clock ms when the newest checkpoint was written or loaded by this process.
    pub checkpoint_at_ms: Option<u64>,
    /// Records the newest checkpoint covers.
    pub checkpoint_records: Option<u64>,
    /// The ledger fsyncs this process performed.
    pub syncs: Option<SyncFacts>,
}

/// What a store's fsyncs of its ledger cost, since it was opened.
#[derive(Clone, Debug, PartialEq)]
pub struct SyncFacts {
    /// Seconds each fsync took.
    pub fsync_seconds: Histogram,
    /// Appends of this process each fsync made durable (counting only fsyncs that covered at
    /// least one: a reader's fsync of bytes another process wrote covers none).
    pub appends_per_fsync: Histogram,
    /// Every byte of the ledger file before this offset is known durable (an fsync of this
    /// process that began after they were written has succeeded).
    pub durable_bytes: u64,
}
