//! The snapshot: everything the core reads, folded from a ledger prefix.
//!
//! A snapshot is a pure fold of the records up to `position`; a store may cache and checkpoint
//! it, but it is a memo of the stored bytes, never session state.
//!
//! Cloning a snapshot is O(1) when cloning its fold is (the domain's projection is): its stream
//! heads are a persistent map (`imbl`), so a store that appends while requests still read the
//! previous snapshot copies only the paths the new records touch. Its maps are ordered, never
//! hashed, so it serializes the same way on every run.

use imbl::OrdMap;
use serde::{Deserialize, Serialize};

use crate::digest::Digest;

use super::compact::InlineStr;
use super::record::{LedgerPosition, Record};

/// What a snapshot folds its records into: the domain's state (Bernstein's is
/// `domain::Projection`). The ledger checks the chains and hands each record to the fold; the
/// fold gives records their meaning. It must be a pure function of the records it folded, and
/// cheap to clone (a store hands out clones while it appends).
pub trait Fold: Clone + Default + core::fmt::Debug + Send + Sync + 'static {
    /// Folds one record that extends the ledger and its stream.
    fn apply(&mut self, rec: &Record);
    /// Whether no transaction is half-folded, so a checkpoint may be taken here.
    fn at_txn_boundary(&self) -> bool;
}

/// The empty fold: a snapshot of positions and stream heads only (what a verifier needs).
impl Fold for () {
    fn apply(&mut self, _rec: &Record) {}
    fn at_txn_boundary(&self) -> bool {
        true
    }
}

/// The projected state at `position`.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Snapshot<F> {
    pub position: LedgerPosition,
    /// Hash of the last record of each stream (serialized in stream-name order; read back
    /// with full tree leaves, see `domain::projection::compact`). A stream name is kept inline
    /// up to 22 bytes, which a run's `run:T-…` is.
    #[serde(deserialize_with = "super::compact::map")]
    pub stream_heads: OrdMap<InlineStr, Digest>,
    /// The fold of every record (Bernstein's: tasks, runs, mailboxes).
    pub domain: F,
}

/// Why a record cannot extend a snapshot.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ApplyError {
    #[error("record {seq} does not follow ledger position {expected_seq}")]
    OutOfSequence { seq: u64, expected_seq: u64 },
    #[error("record {seq} names predecessor {found}, but the ledger head is {expected}")]
    BrokenChain {
        seq: u64,
        expected: Digest,
        found: Digest,
    },
    #[error(
        "record {seq} names stream predecessor {found}, but stream {stream} ends at {expected}"
    )]
    BrokenStream {
        seq: u64,
        stream: String,
        expected: Digest,
        found: Digest,
    },
}

impl<F: Fold> Snapshot<F> {
    /// The empty ledger's snapshot.
    pub fn genesis() -> Snapshot<F> {
        Snapshot::default()
    }

    /// Head of `stream`, ZERO when the stream has no record yet.
    pub fn stream_head(&self, stream: &str) -> Digest {
        self.stream_heads
            .get(stream)
            .copied()
            .unwrap_or(Digest::ZERO)
    }

    /// Folds one record, checking it extends both the ledger chain and its stream's chain.
    pub fn apply(&mut self, rec: &Record) -> Result<(), ApplyError> {
        if rec.seq != self.position.seq + 1 {
            return Err(ApplyError::OutOfSequence {
                seq: rec.seq,
                expected_seq: self.position.seq + 1,
            });
        }
        if rec.prev != self.position.head {
            return Err(ApplyError::BrokenChain {
                seq: rec.seq,
                expected: self.position.head,
                found: rec.prev,
            });
        }
        let sh = self.stream_head(&rec.stream);
        if rec.sprev != sh {
            return Err(ApplyError::BrokenStream {
                seq: rec.seq,
                stream: rec.stream.clone(),
                expected: sh,
                found: rec.sprev,
            });
        }
        self.domain.apply(rec);
        self.stream_heads
            .insert(InlineStr::new(&rec.stream), rec.hash);
        self.position = LedgerPosition {
            seq: rec.seq,
            head: rec.hash,
        };
        Ok(())
    }

    /// Whether the snapshot sits at a transaction boundary (safe to checkpoint).
    pub fn at_txn_boundary(&self) -> bool {
        self.domain.at_txn_boundary()
    }
}
