//! What the projection folds of task capsules: the `task.capsule_issued` audit records and
//! the mailbox entries a capsule shows (building, signing and checking capsules is
//! [`super::capsule`]'s, which reads the projection).

use imbl::OrdMap;
use serde::{Deserialize, Serialize};

use super::mailbox::MailboxEntry;
use bernstein_core::digest::Digest;
use bernstein_core::ledger::Record;

/// Audit: a capsule was issued.
pub const CAPSULE_ISSUED: &str = "task.capsule_issued";

/// The chain heads a capsule was cut at (`sha256:<hex>`; the zero digest for an empty stream).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CapsuleHeads {
    /// Head of the audit chain.
    pub audit: String,
    /// Head of the task's run journal.
    pub journal: String,
    /// Head of the task's mailbox stream.
    pub mailbox: String,
    /// Head of the lineage spine.
    pub lineage: String,
    /// Ledger seq of the position.
    pub seq: u64,
}

/// `task.capsule_issued` (stream `audit`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CapsuleIssued {
    pub task_id: String,
    pub run_id: String,
    pub capsule_hash: String,
    pub heads: CapsuleHeads,
    pub signature: String,
    /// Wall-clock ms (not in the capsule).
    pub at: u64,
}

/// Mailbox entries by task and the capsules issued, folded by the projection.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CapsuleIndex {
    mailbox: OrdMap<String, Vec<MailboxEntry>>,
    issued: OrdMap<String, CapsuleIssued>,
}

impl CapsuleIndex {
    pub(crate) fn fold_mailbox(&mut self, entry: MailboxEntry) {
        self.mailbox
            .entry(entry.task_id.clone())
            .or_default()
            .push(entry);
    }

    /// Folds a `task.capsule_issued` record; `audit_before` is the audit head before it.
    pub(crate) fn fold_issued(&mut self, rec: &Record, audit_before: Digest) -> bool {
        let Ok(b) = CapsuleIssued::deserialize(&rec.body) else {
            return false;
        };
        if b.heads.audit != audit_before.to_string() || self.issued.contains_key(&b.capsule_hash) {
            return false;
        }
        self.issued.insert(b.capsule_hash.clone(), b);
        true
    }

    /// The mailbox entries of `task_id`, oldest first.
    pub fn mailbox(&self, task_id: &str) -> &[MailboxEntry] {
        self.mailbox.get(task_id).map_or(&[], Vec::as_slice)
    }

    /// The issuance of the capsule with `capsule_hash`.
    pub fn issued(&self, capsule_hash: &str) -> Option<&CapsuleIssued> {
        self.issued.get(capsule_hash)
    }
}
