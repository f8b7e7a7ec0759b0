//! Claims: which open task a claim filter selects, and the signed claim receipt that records
//! the decision (granted or refused).
//!
//! Selection is a pure function of the projection and the filter: among `open` tasks, in claim
//! order (priority 1 first, then creation order), the first one the filter admits. A task is
//! admitted when its role, project and capability match the filter's (where the filter names
//! them), it was claimed fewer than `max_attempts` times, and every task in its `depends_on` is
//! `done` or `closed` in the ledger — and, when the filter lists `completed_ids`, is listed
//! there too (a claimer can narrow what it is offered; it can never release a task early).
//!
//! The receipt (docs/VERIFY.md §1):
//! - `filterDigest` = digest of the canonical filter ([`ClaimFilter::digest`]);
//! - `backlogHead` = the backlog stream head the decision was taken at;
//! - `chainHead` = the audit stream head the decision was taken at; the call's
//!   `task.claim_receipt` entry is the audit record right after it (its `sprev`), or, when the
//!   claim was placed after other calls' records, stands later in a transaction whose call
//!   record names that position (`read_at`);
//! - `specRevision` = [`SPEC_REVISION`] (the pinned tasks-extension revision) in every era;
//!   receipts that older servers issued with the call's revision still verify;
//! - `receiptHash` = digest of the canonical `{backlogHead, claimerCardFingerprint, claimerId,
//!   filterDigest, granted, specRevision, taskId}`: the same backlog, claimer and filter give
//!   the same hash, whatever era the claim was served under;
//! - `signature` = Ed25519 over the canonical `{chainHead, receiptHash, type}`;
//! - `pollToken` = base64url of the canonical `{chainHead, receiptHash, taskId, v: 1}`.
//!
//! No clock value enters any of them. The claim's time decides only whether a held task's
//! lease has expired ([`lease`]); it is recorded in the claim entry (`at`) so a verifier can
//! re-run the decision. This module never writes records; the tool drafts them.

use std::collections::BTreeSet;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::Snapshot;
use bernstein_core::canonical::to_canonical_bytes;
use bernstein_core::digest::Digest;
use bernstein_core::ledger::{AUDIT_STREAM, BACKLOG_STREAM};

pub use super::handle::SPEC_REVISION;
use super::handle::known_spec_revision;
use super::ids::check_task_id;
use super::lease;
use super::lifecycle::TaskStatus;
use super::projection::{Projection, TaskRow};
use bernstein_core::signing::{self, Signer};

/// Domain tag of the claim receipt signature pre-image.
pub const RECEIPT_SIGNATURE_TYPE: &str = "bernstein.claim_receipt.v1";
/// `claimerCardFingerprint` of a claimer that named no agent card.
pub const UNREGISTERED: &str = "unregistered";
/// Version of the poll token's content.
pub const POLL_TOKEN_VERSION: u64 = 1;

/// What a claimer is willing to take. Absent fields do not constrain.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClaimFilter {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capability: Option<String>,
    /// When present, every dependency of an offered task must also be listed here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completed_ids: Option<BTreeSet<String>>,
    /// Offer only tasks claimed fewer times than this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_attempts: Option<u32>,
}

impl ClaimFilter {
    /// The canonical JSON of the filter: absent fields omitted, `completed_ids` sorted and
    /// deduplicated.
    pub fn canonical(&self) -> Vec<u8> {
        let v = serde_json::to_value(self).expect("a filter always serializes");
        to_canonical_bytes(&v).expect("a filter holds strings and integers only")
    }

    /// `filterDigest`: SHA-256 of [`ClaimFilter::canonical`].
    pub fn digest(&self) -> Digest {
        Digest::of(&self.canonical())
    }

    /// Whether the filter admits the open task `row` in `p` (see the module docs).
    pub fn admits(&self, p: &Projection, row: &TaskRow) -> bool {
        row.status == TaskStatus::Open && self.matches(p, row)
    }

    /// Whether `row` fits the filter, whatever its status.
    fn matches(&self, p: &Projection, row: &TaskRow) -> bool {
        self.role.as_ref().is_none_or(|r| &row.role == r)
            && self
                .project
                .as_ref()
                .is_none_or(|pr| row.rare.project.as_ref() == Some(pr))
            && self
                .capability
                .as_ref()
                .is_none_or(|c| row.rare.capabilities.contains(c))
            && self.max_attempts.is_none_or(|m| row.attempts < m)
            && row.rare.depends_on.iter().all(|d| {
                dependency_done(p, d)
                    && self
                        .completed_ids
                        .as_ref()
                        .is_none_or(|ids| ids.contains(d))
            })
    }
}

/// Whether the dependency `id` is finished successfully (`done` or `closed`).
pub fn dependency_done(p: &Projection, id: &str) -> bool {
    p.task(id)
        .is_some_and(|t| matches!(t.status, TaskStatus::Done | TaskStatus::Closed))
}

/// The task a claim with `filter` is granted in `p` at wall-clock `now` (ms), if any: a held
/// task whose lease expired before `now` (the longest expired first, see [`lease`]) and
/// otherwise the first open task in claim order.
pub fn select<'p>(p: &'p Projection, filter: &ClaimFilter, now: u64) -> Option<&'p TaskRow> {
    p.expired_leases(now)
        .find(|row| lease::lease_expired(row, now) && filter.matches(p, row))
        .or_else(|| p.open_in_claim_order().find(|row| filter.admits(p, row)))
}

/// The verifiable answer to a claim.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ClaimReceipt {
    /// The claimed task, or "" when no eligible task matched (a refusal).
    pub task_id: String,
    pub granted: bool,
    pub claimer_id: String,
    /// `sha256:` fingerprint of the claimer's agent card, or `unregistered`.
    pub claimer_card_fingerprint: String,
    /// Backlog stream head the decision was taken at (`sha256:<hex>`).
    pub backlog_head: String,
    /// SHA-256 of the canonical claim filter (`sha256:<hex>`).
    pub filter_digest: String,
    /// Audit chain head the decision was taken at; the claim's `task.claim_receipt` entry follows it.
    pub chain_head: String,
    /// The pinned tasks-extension revision (`2026-07-28`), the same in every era.
    pub spec_revision: String,
    /// SHA-256 over the decision fields (`sha256:<hex>`).
    pub receipt_hash: String,
    /// Ed25519 signature (base64url) over `{chainHead, receiptHash, type}`.
    pub signature: String,
    /// SPKI PEM of the signing key.
    pub signer_public_key_pem: String,
    /// Opaque token naming this claim.
    pub poll_token: String,
    /// What the granted task asks for, so a worker can start without another call. Not part
    /// of `receiptHash` or the signature (informational; absent on refusals).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<ClaimedTask>,
}

/// The granted task as a worker needs it (`ClaimReceipt::task`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ClaimedTask {
    pub run_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_id: Option<String>,
    pub title: String,
    pub goal: String,
    pub role: String,
    /// open, or claimed/in_progress when this claim takes over an expired lease.
    pub previous_status: TaskStatus,
    /// The claimer whose lease expired, for a reclaim.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reclaimed_from: Option<String>,
    /// Claims of this task before this one.
    pub attempts: u32,
    /// Wall-clock ms the new lease ends at unless the claimer posts a message.
    pub lease_expires_at: u64,
}

impl ClaimedTask {
    /// The descriptor of `row` granted at `now` with a lease of `lease_ms`.
    pub fn of(row: &TaskRow, now: u64, lease_ms: u64) -> ClaimedTask {
        ClaimedTask {
            run_id: row.run_id.to_string(),
            parent_id: row.rare.parent_id.clone(),
            title: row.title.to_string(),
            goal: row.goal.to_string(),
            role: row.role.to_string(),
            previous_status: row.status,
            reclaimed_from: (row.status != TaskStatus::Open)
                .then(|| row.claimer.as_deref().map(str::to_string))
                .flatten(),
            attempts: row.attempts,
            lease_expires_at: now.saturating_add(lease_ms),
        }
    }
}

/// The receipt hash of `r` from its decision fields.
pub fn receipt_hash(r: &ClaimReceipt) -> String {
    let pre = json!({
        "backlogHead": r.backlog_head,
        "claimerCardFingerprint": r.claimer_card_fingerprint,
        "claimerId": r.claimer_id,
        "filterDigest": r.filter_digest,
        "granted": r.granted,
        "specRevision": r.spec_revision,
        "taskId": r.task_id,
    });
    Digest::of(&to_canonical_bytes(&pre).expect("strings and booleans only")).to_string()
}

/// The bytes a receipt's signature covers.
pub fn signed_message(receipt_hash: &str, chain_head: &str) -> Vec<u8> {
    signing::canonical_message(&json!({
        "chainHead": chain_head,
        "receiptHash": receipt_hash,
        "type": RECEIPT_SIGNATURE_TYPE,
    }))
}

/// The poll token of a receipt.
pub fn poll_token(receipt_hash: &str, chain_head: &str, task_id: &str) -> String {
    let v = json!({
        "chainHead": chain_head,
        "receiptHash": receipt_hash,
        "taskId": task_id,
        "v": POLL_TOKEN_VERSION,
    });
    URL_SAFE_NO_PAD.encode(to_canonical_bytes(&v).expect("strings and integers only"))
}

/// Who claims.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Claimer<'a> {
    pub id: &'a str,
    /// `None` → [`UNREGISTERED`].
    pub card_fingerprint: Option<&'a str>,
}

/// A claim decision: the signed receipt and the granted task.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClaimDecision<'p> {
    pub receipt: ClaimReceipt,
    pub task: Option<&'p TaskRow>,
}

/// Decides a claim against `snapshot` at wall-clock `now` (ms; it decides only whether a lease
/// has expired, and never enters the receipt) and signs its receipt. Pure and deterministic,
/// and the same whatever era the call was served under.
pub fn decide<'s>(
    snapshot: &'s Snapshot,
    claimer: Claimer<'_>,
    filter: &ClaimFilter,
    now: u64,
    signer: &Signer,
) -> ClaimDecision<'s> {
    let task = select(&snapshot.domain, filter, now);
    let mut receipt = ClaimReceipt {
        task_id: task.map(|t| t.id.to_string()).unwrap_or_default(),
        granted: task.is_some(),
        claimer_id: claimer.id.to_string(),
        claimer_card_fingerprint: claimer.card_fingerprint.unwrap_or(UNREGISTERED).to_string(),
        backlog_head: snapshot.stream_head(BACKLOG_STREAM).to_string(),
        filter_digest: filter.digest().to_string(),
        chain_head: snapshot.stream_head(AUDIT_STREAM).to_string(),
        spec_revision: SPEC_REVISION.to_string(),
        receipt_hash: String::new(),
        signature: String::new(),
        signer_public_key_pem: signer.public_key_pem().to_string(),
        poll_token: String::new(),
        task: None,
    };
    receipt.receipt_hash = receipt_hash(&receipt);
    receipt.signature = signer.sign(&signed_message(&receipt.receipt_hash, &receipt.chain_head));
    receipt.poll_token = poll_token(&receipt.receipt_hash, &receipt.chain_head, &receipt.task_id);
    ClaimDecision { receipt, task }
}

/// `task.claim_receipt` (stream `audit`): the decision, its filter and its signed receipt.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClaimEntry {
    /// The claimed task, "" for a refusal.
    pub task_id: String,
    pub granted: bool,
    /// The claimed task's run (granted claims only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
    pub claimer_id: String,
    pub claimer_card_fingerprint: String,
    /// The filter itself, so a verifier can re-run the selection.
    pub filter: ClaimFilter,
    pub filter_digest: String,
    pub backlog_head: String,
    pub chain_head: String,
    pub spec_revision: String,
    pub receipt_hash: String,
    pub signature: String,
    pub signer_public_key_pem: String,
    /// Wall-clock ms of the claim (recorded, never hashed or signed).
    pub at: u64,
}

impl ClaimEntry {
    pub fn of(decision: &ClaimDecision<'_>, filter: &ClaimFilter, at: u64) -> ClaimEntry {
        let r = &decision.receipt;
        ClaimEntry {
            task_id: r.task_id.clone(),
            granted: r.granted,
            run_id: decision.task.map(|t| t.run_id.to_string()),
            claimer_id: r.claimer_id.clone(),
            claimer_card_fingerprint: r.claimer_card_fingerprint.clone(),
            filter: filter.clone(),
            filter_digest: r.filter_digest.clone(),
            backlog_head: r.backlog_head.clone(),
            chain_head: r.chain_head.clone(),
            spec_revision: r.spec_revision.clone(),
            receipt_hash: r.receipt_hash.clone(),
            signature: r.signature.clone(),
            signer_public_key_pem: r.signer_public_key_pem.clone(),
            at,
        }
    }

    /// The first receipt field this entry disagrees with, if any.
    pub fn disagreement(&self, r: &ClaimReceipt) -> Option<&'static str> {
        let pairs: [(&'static str, bool); 10] = [
            ("taskId", self.task_id == r.task_id),
            ("granted", self.granted == r.granted),
            ("claimerId", self.claimer_id == r.claimer_id),
            (
                "claimerCardFingerprint",
                self.claimer_card_fingerprint == r.claimer_card_fingerprint,
            ),
            ("backlogHead", self.backlog_head == r.backlog_head),
            ("filterDigest", self.filter_digest == r.filter_digest),
            ("chainHead", self.chain_head == r.chain_head),
            ("specRevision", self.spec_revision == r.spec_revision),
            ("signature", self.signature == r.signature),
            (
                "signerPublicKeyPem",
                self.signer_public_key_pem == r.signer_public_key_pem,
            ),
        ];
        pairs.into_iter().find(|(_, same)| !same).map(|(f, _)| f)
    }
}

/// Why a receipt is not internally consistent (before any ledger is consulted).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ReceiptFault {
    /// A field has the wrong shape.
    Shape(String),
    /// `receiptHash` is not the hash of the decision fields.
    Hash,
    /// `pollToken` is not the token of this receipt.
    PollToken,
    /// The Ed25519 signature does not verify.
    Signature(signing::SignatureError),
}

/// Checks a receipt on its own: field shapes, `receiptHash`, `pollToken`, signature.
pub fn check_receipt(r: &ClaimReceipt) -> Result<(), ReceiptFault> {
    for (name, value) in [
        ("backlogHead", &r.backlog_head),
        ("filterDigest", &r.filter_digest),
        ("chainHead", &r.chain_head),
        ("receiptHash", &r.receipt_hash),
    ] {
        if Digest::parse(value).is_none() {
            return Err(ReceiptFault::Shape(format!(
                "{name} is not sha256:<64 lowercase hex>"
            )));
        }
    }
    match (r.granted, r.task_id.as_str()) {
        (false, "") => {}
        (false, _) => {
            return Err(ReceiptFault::Shape(
                "a refusal (granted: false) must carry taskId \"\"".into(),
            ));
        }
        (true, id) => {
            check_task_id(id).map_err(|e| ReceiptFault::Shape(format!("taskId: {e}")))?;
        }
    }
    if r.claimer_id.is_empty() {
        return Err(ReceiptFault::Shape("claimerId is empty".into()));
    }
    if !known_spec_revision(&r.spec_revision) {
        return Err(ReceiptFault::Shape(format!(
            "specRevision {:?} is no protocol revision this server speaks (receipts carry {SPEC_REVISION})",
            r.spec_revision
        )));
    }
    if receipt_hash(r) != r.receipt_hash {
        return Err(ReceiptFault::Hash);
    }
    if poll_token(&r.receipt_hash, &r.chain_head, &r.task_id) != r.poll_token {
        return Err(ReceiptFault::PollToken);
    }
    signing::verify_signature(
        &r.signer_public_key_pem,
        &signed_message(&r.receipt_hash, &r.chain_head),
        &r.signature,
    )
    .map_err(ReceiptFault::Signature)
}

/// Reads a receipt from JSON: the receipt object itself, or a tool result envelope whose
/// `result` is the receipt.
pub fn parse_receipt(bytes: &[u8]) -> Result<ClaimReceipt, String> {
    let v: Value = serde_json::from_slice(bytes).map_err(|e| format!("not JSON: {e}"))?;
    let v = match v.get("result") {
        Some(inner) if inner.get("receiptHash").is_some() => inner.clone(),
        _ => v,
    };
    serde_json::from_value(v).map_err(|e| format!("not a claim receipt: {e}"))
}

#[cfg(test)]
mod tests;
