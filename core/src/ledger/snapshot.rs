//! The snapshot: everything the core reads, projected from a ledger prefix.
//!
//! A snapshot is a pure fold of the records up to `position`; a store may cache and checkpoint
//! it, but it is a memo of the stored bytes, never session state.
//!
//! Cloning a snapshot is O(1): its maps are persistent (`imbl`), so a store that appends while
//! requests still read the previous snapshot copies only the paths the new records touch. Its
//! maps are ordered, never hashed, so it serializes the same way on every run.

use imbl::OrdMap;
use serde::{Deserialize, Serialize};

use crate::digest::Digest;
use crate::domain::projection::{InlineStr, Projection};

use super::record::{LedgerPosition, Record};

/// The projected state at `position`.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Snapshot {
    pub position: LedgerPosition,
    /// Hash of the last record of each stream (serialized in stream-name order; read back
    /// with full tree leaves, see `domain::projection::compact`). A stream name is kept inline
    /// up to 22 bytes, which a run's `run:T-…` is.
    #[serde(deserialize_with = "crate::domain::projection::compact::map")]
    pub stream_heads: OrdMap<InlineStr, Digest>,
    /// Bernstein's domain state (tasks, runs, mailboxes).
    pub domain: Projection,
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

impl Snapshot {
    /// The empty ledger's snapshot.
    pub fn genesis() -> Snapshot {
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
