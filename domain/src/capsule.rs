//! Task capsules: a signed, self-contained context of one task at a ledger position (the task,
//! its mailbox entries, the artifact versions it posted, and the chain heads it was cut at),
//! the index of capsules this ledger issued, and the offline checks of a capsule.
//!
//! - `capsule_hash` = `sha256:` + SHA-256 of the canonical JSON of the capsule without
//!   `capsule_hash`, `signature` and `signer_public_key_pem`;
//! - `signature` = Ed25519 over the canonical `{"capsuleHash": <capsule_hash>, "type":
//!   "bernstein.task_capsule.v1"}`.
//!
//! Issuing a capsule writes one `task.capsule_issued` audit record naming its hash and heads,
//! first in its transaction, so the record's `sprev` is the capsule's audit head. A capsule is
//! *on this ledger* when such a record exists with the same task and heads: that is what
//! [`verify_on`] checks against a projection, and [`CapsuleLedgerCheck`] against ledger bytes
//! (where it also finds the journal and mailbox heads on their streams before the issuance).
//! This module never decides who may read a capsule; the tool does.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::Snapshot;
use bernstein_core::canonical::to_canonical_bytes;
use bernstein_core::digest::Digest;
use bernstein_core::ledger::{AUDIT_STREAM, Record};

use super::artifacts::{ArtifactRecord, LINEAGE_STREAM};
pub use super::capsule_index::{CAPSULE_ISSUED, CapsuleHeads, CapsuleIndex, CapsuleIssued};
use super::ids::run_stream;
use super::lifecycle::TaskStatus;
use super::mailbox::{MailboxEntry, mailbox_stream};
use super::projection::{Projection, TaskRow};
use bernstein_core::signing::{self, Signer};

/// Domain tag of the capsule and of its signature pre-image.
pub const CAPSULE_TYPE: &str = "bernstein.task_capsule.v1";

/// The task as a capsule shows it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CapsuleTask {
    pub task_id: String,
    pub run_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_id: Option<String>,
    pub title: String,
    pub goal: String,
    pub role: String,
    pub priority: u8,
    pub status: TaskStatus,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub depends_on: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub children: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub claimer: Option<String>,
    pub attempts: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_summary: Option<String>,
    pub created_at: u64,
    pub updated_at: u64,
}

impl CapsuleTask {
    pub fn of(row: &TaskRow) -> CapsuleTask {
        CapsuleTask {
            task_id: row.id.to_string(),
            run_id: row.run_id.to_string(),
            parent_id: row.rare.parent_id.clone(),
            title: row.title.to_string(),
            goal: row.goal.to_string(),
            role: row.role.to_string(),
            priority: row.priority,
            status: row.status,
            depends_on: row.rare.depends_on.clone(),
            children: row.rare.children.clone(),
            claimer: row.claimer.as_deref().map(str::to_string),
            attempts: row.attempts,
            result_summary: row.rare.result_summary.clone(),
            created_at: row.created_at,
            updated_at: row.updated_at,
        }
    }
}

/// A signed task capsule (what `bernstein_task_capsule` answers).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TaskCapsule {
    /// Always `bernstein.task_capsule.v1`.
    #[serde(rename = "type")]
    pub capsule_type: String,
    pub task: CapsuleTask,
    /// The task's mailbox entries, oldest first.
    pub mailbox: Vec<MailboxEntry>,
    /// The artifact versions the task posted, in posting order.
    pub artifacts: Vec<ArtifactRecord>,
    pub heads: CapsuleHeads,
    pub spec_revision: String,
    /// SHA-256 over everything above (`sha256:<hex>`).
    pub capsule_hash: String,
    /// Ed25519 signature (base64url) over `{capsuleHash, type}`.
    pub signature: String,
    /// SPKI PEM of the signing key.
    pub signer_public_key_pem: String,
}

/// The capsule hash of `c` from its content.
pub fn capsule_hash(c: &TaskCapsule) -> String {
    let mut v = serde_json::to_value(c).expect("a capsule always serializes");
    if let Value::Object(obj) = &mut v {
        for k in ["capsule_hash", "signature", "signer_public_key_pem"] {
            obj.remove(k);
        }
    }
    // Records hold no floats, so neither does a capsule built from them; a capsule parsed
    // from a peer that does hashes to a value no signature covers.
    to_canonical_bytes(&v).map_or_else(|_| "unhashable".into(), |b| Digest::of(&b).to_string())
}

/// The bytes a capsule's signature covers.
pub fn signed_message(capsule_hash: &str) -> Vec<u8> {
    signing::canonical_message(&json!({"capsuleHash": capsule_hash, "type": CAPSULE_TYPE}))
}

/// The capsule of `task` at `snapshot`, hashed and signed.
pub fn build(
    snapshot: &Snapshot,
    task: &TaskRow,
    spec_revision: &str,
    signer: &Signer,
) -> TaskCapsule {
    let p = &snapshot.domain;
    let mut c = TaskCapsule {
        capsule_type: CAPSULE_TYPE.to_string(),
        task: CapsuleTask::of(task),
        mailbox: p.capsules().mailbox(&task.id).to_vec(),
        artifacts: p
            .artifacts()
            .of_task(&task.id)
            .map(|v| v.record.clone())
            .collect(),
        heads: CapsuleHeads {
            audit: snapshot.stream_head(AUDIT_STREAM).to_string(),
            journal: snapshot.stream_head(&run_stream(&task.run_id)).to_string(),
            mailbox: snapshot.stream_head(&mailbox_stream(&task.id)).to_string(),
            lineage: snapshot.stream_head(LINEAGE_STREAM).to_string(),
            seq: snapshot.position.seq,
        },
        spec_revision: spec_revision.to_string(),
        capsule_hash: String::new(),
        signature: String::new(),
        signer_public_key_pem: signer.public_key_pem().to_string(),
    };
    c.capsule_hash = capsule_hash(&c);
    c.signature = signer.sign(&signed_message(&c.capsule_hash));
    c
}

/// The capsule in what a host saved: the capsule itself, a `{result, _meter}` envelope, or a
/// `CallToolResult` (structured content or a JSON text block). `None` when there is none.
pub fn extract_capsule(v: &Value) -> Option<Value> {
    super::handle_verify::find_saved(v, |x| {
        x.get("type").and_then(Value::as_str) == Some(CAPSULE_TYPE)
    })
}

/// The audit record issuing `c`.
pub fn issued_record(c: &TaskCapsule, at: u64) -> CapsuleIssued {
    CapsuleIssued {
        task_id: c.task.task_id.clone(),
        run_id: c.task.run_id.clone(),
        capsule_hash: c.capsule_hash.clone(),
        heads: c.heads.clone(),
        signature: c.signature.clone(),
        at,
    }
}

/// The outcome of a capsule check.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CapsuleVerdict {
    pub valid: bool,
    /// The capsule hash as recomputed (absent when the capsule does not parse).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capsule_hash: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_id: Option<String>,
    /// Every problem found, in check order; empty when valid.
    pub problems: Vec<String>,
}

impl CapsuleVerdict {
    fn of(capsule: Option<&TaskCapsule>, problems: Vec<String>) -> CapsuleVerdict {
        CapsuleVerdict {
            valid: problems.is_empty(),
            capsule_hash: capsule.map(capsule_hash),
            task_id: capsule.map(|c| c.task.task_id.clone()),
            problems,
        }
    }
}

/// Checks a capsule on its own: its shape, its hash, its signature, and (when given) that the
/// signer is `expected_signer`. Returns the parsed capsule when it parses.
pub fn check_self(
    capsule: &Value,
    expected_signer: Option<&str>,
) -> (Option<TaskCapsule>, Vec<String>) {
    let c = match TaskCapsule::deserialize(capsule) {
        Ok(c) => c,
        Err(e) => return (None, vec![format!("not a task capsule: {e}")]),
    };
    let mut problems = Vec::new();
    if c.capsule_type != CAPSULE_TYPE {
        problems.push(format!(
            "type is {:?}, expected {CAPSULE_TYPE}",
            c.capsule_type
        ));
    }
    let expected = capsule_hash(&c);
    if c.capsule_hash != expected {
        problems.push(format!(
            "capsule_hash does not match the capsule's content (recomputed {expected})"
        ));
    }
    if let Some(want) = expected_signer
        && want.trim() != c.signer_public_key_pem.trim()
    {
        problems.push("the capsule is signed by a key other than this project's".into());
    }
    if let Err(e) = signing::verify_signature(
        &c.signer_public_key_pem,
        &signed_message(&c.capsule_hash),
        &c.signature,
    ) {
        problems.push(format!("signature: {e}"));
    }
    (Some(c), problems)
}

/// Checks a capsule against a projection: [`check_self`], then that this ledger issued it for
/// the same task at the same heads.
pub fn verify_on(p: &Projection, capsule: &Value, expected_signer: Option<&str>) -> CapsuleVerdict {
    let (c, mut problems) = check_self(capsule, expected_signer);
    if let Some(c) = &c {
        match p.capsules().issued(&c.capsule_hash) {
            None => problems.push(format!(
                "capsule {} was not issued by this ledger (no task.capsule_issued record names it)",
                c.capsule_hash
            )),
            Some(i) if i.task_id != c.task.task_id || i.heads != c.heads => problems.push(
                "the ledger issued this capsule hash for another task or other chain heads".into(),
            ),
            Some(_) => {}
        }
    }
    CapsuleVerdict::of(c.as_ref(), problems)
}

/// Offline check of a capsule against ledger records (fed in order, already chain-checked):
/// the issuance record exists with the capsule's task and heads, its `sprev` is the audit
/// head, and the journal, mailbox and lineage heads are the last records of their streams
/// before it.
#[derive(Debug)]
pub struct CapsuleLedgerCheck {
    capsule: Option<TaskCapsule>,
    problems: Vec<String>,
    /// stream → (head the capsule names, last record hash seen so far).
    streams: BTreeMap<String, (String, String)>,
    issued: bool,
}

impl CapsuleLedgerCheck {
    pub fn new(capsule: &Value, expected_signer: Option<&str>) -> CapsuleLedgerCheck {
        let (capsule, problems) = check_self(capsule, expected_signer);
        let zero = Digest::ZERO.to_string();
        let streams = capsule
            .as_ref()
            .map(|c| {
                [
                    (run_stream(&c.task.run_id), &c.heads.journal),
                    (mailbox_stream(&c.task.task_id), &c.heads.mailbox),
                    (LINEAGE_STREAM.to_string(), &c.heads.lineage),
                ]
                .into_iter()
                .map(|(s, h)| (s, (h.clone(), zero.clone())))
                .collect()
            })
            .unwrap_or_default();
        CapsuleLedgerCheck {
            capsule,
            problems,
            streams,
            issued: false,
        }
    }

    /// Feeds the next record.
    pub fn push(&mut self, rec: &Record) {
        let Some(c) = &self.capsule else { return };
        if self.issued {
            return;
        }
        if let Some((_, seen)) = self.streams.get_mut(&rec.stream) {
            *seen = rec.hash.to_string();
        }
        if rec.stream != AUDIT_STREAM
            || rec.kind != CAPSULE_ISSUED
            || rec.body.get("capsule_hash").and_then(Value::as_str) != Some(&c.capsule_hash)
        {
            return;
        }
        self.issued = true;
        match CapsuleIssued::deserialize(&rec.body) {
            Ok(i) if i.task_id == c.task.task_id && i.heads == c.heads => {}
            _ => self.problems.push(format!(
                "the issuance record at seq {} names another task or other heads",
                rec.seq
            )),
        }
        if rec.sprev.to_string() != c.heads.audit {
            self.problems.push(format!(
                "audit head {} is not the audit record before the issuance (seq {})",
                c.heads.audit, rec.seq
            ));
        }
        for (stream, (want, seen)) in &self.streams {
            if want != seen {
                self.problems.push(format!(
                    "head {want} is not the last record of stream {stream} before the issuance"
                ));
            }
        }
    }

    /// The verdict once every record was fed.
    pub fn finish(mut self) -> CapsuleVerdict {
        if let Some(c) = &self.capsule
            && !self.issued
        {
            self.problems.push(format!(
                "capsule {} was not issued by this ledger (no task.capsule_issued record names it)",
                c.capsule_hash
            ));
        }
        CapsuleVerdict::of(self.capsule.as_ref(), self.problems)
    }
}

#[cfg(test)]
mod tests;
