//! The domain projection: tasks, runs and mailboxes folded from ledger records.

use serde::{Deserialize, Serialize};

use crate::ledger::Record;

/// Bernstein's state at a ledger position.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Projection {}

impl Projection {
    /// Folds one record. Records were validated by the ledger; unknown kinds are ignored so that
    /// older servers can read newer ledgers.
    pub fn apply(&mut self, _rec: &Record) {}

    /// Whether no transaction is half-folded.
    pub fn at_txn_boundary(&self) -> bool {
        true
    }
}
