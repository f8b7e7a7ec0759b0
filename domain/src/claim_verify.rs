//! The offline claim-receipt verifier (`bernstein backlog verify-claim`): no server, no
//! network, only the receipt, the ledger bytes and (optionally) the audit key and the project's
//! public signing key.
//!
//! Checks, in order (docs/VERIFY.md §1); the first that fails is named:
//! 1. `receipt shape`, `receipt hash`, `poll token`, `signature`: the receipt on its own;
//! 2. `signer key`: the receipt is signed by the expected key (when one is given);
//! 3. `ledger`: every line of the ledger verifies (chains, framing, HMAC tags with the key);
//! 4. `claim entry`: a `task.claim_receipt` that records this receipt (same hash, same fields,
//!    same signature and key) is the audit record right after `chainHead`, or stands later in
//!    a transaction whose call record names (`read_at`) a position at which the audit head was
//!    still `chainHead` (a claim placed after other calls' records; docs/VERIFY.md §1);
//! 5. `backlog head`: re-projecting the ledger up to that entry's transaction gives the
//!    receipt's `backlogHead`;
//! 6. `filter digest`: the entry's recorded filter hashes to `filterDigest`;
//! 7. `claim decision`: re-running the selection with that filter on that projection, at the
//!    entry's recorded time (which decides only expired leases), picks the receipt's `taskId`
//!    ("" for a refusal);
//! 8. `claim applied`: for a granted claim, the same transaction moves the task open → claimed
//!    for this claimer.
//!
//! Pure: bytes in, a report or a named failure out. It never trusts a record the ledger check
//! has not passed.

use serde::Serialize;

use crate::Snapshot;
use bernstein_core::digest::Digest;
use bernstein_core::ledger::verify::{LedgerVerifier, VerifyReport};
use bernstein_core::ledger::{AUDIT_STREAM, BACKLOG_STREAM, Record};

use super::claims::{self, ClaimEntry, ClaimReceipt, ReceiptFault};
use super::lifecycle::TaskStatus;
use super::records::{self, TaskStatusChanged};

/// The checks of the claim verifier.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ClaimCheck {
    ReceiptShape,
    ReceiptHash,
    PollToken,
    Signature,
    SignerKey,
    Ledger,
    ClaimEntry,
    BacklogHead,
    FilterDigest,
    Decision,
    ClaimApplied,
}

impl ClaimCheck {
    pub fn as_str(self) -> &'static str {
        match self {
            ClaimCheck::ReceiptShape => "receipt shape",
            ClaimCheck::ReceiptHash => "receipt hash",
            ClaimCheck::PollToken => "poll token",
            ClaimCheck::Signature => "signature",
            ClaimCheck::SignerKey => "signer key",
            ClaimCheck::Ledger => "ledger",
            ClaimCheck::ClaimEntry => "claim entry",
            ClaimCheck::BacklogHead => "backlog head",
            ClaimCheck::FilterDigest => "filter digest",
            ClaimCheck::Decision => "claim decision",
            ClaimCheck::ClaimApplied => "claim applied",
        }
    }
}

/// The first check a receipt failed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{} check failed: {detail}", check.as_str())]
pub struct ClaimFailure {
    pub check: ClaimCheck,
    pub detail: String,
}

fn failure(check: ClaimCheck, detail: impl Into<String>) -> ClaimFailure {
    ClaimFailure {
        check,
        detail: detail.into(),
    }
}

/// What a verified receipt is anchored to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClaimVerification {
    pub receipt_hash: String,
    pub task_id: String,
    pub granted: bool,
    /// Line and seq of the matching `task.claim_receipt` entry.
    pub entry_line: u64,
    pub entry_seq: u64,
    pub ledger: VerifyReport,
}

impl ClaimVerification {
    pub fn summary(&self) -> String {
        let what = if self.granted {
            format!("claim of {}", self.task_id)
        } else {
            "refusal".to_string()
        };
        let macs = if self.ledger.macs_checked {
            "HMAC tags verified"
        } else {
            "HMAC tags NOT verified (no key)"
        };
        format!(
            "OK: {what} receipt {} verified: signature, backlog head, filter digest and decision re-projected; \
             task.claim_receipt entry at line {} (seq {}); ledger {} records, {macs}",
            self.receipt_hash, self.entry_line, self.entry_seq, self.ledger.records
        )
    }
}

/// Incremental claim verifier: built from the receipt, then fed the ledger's lines in order.
#[derive(Debug)]
pub struct ClaimVerifier {
    receipt: ClaimReceipt,
    chain_head: Digest,
    ledger: LedgerVerifier,
    line: u64,
    /// The projection before the current transaction (dropped once the entry was found).
    snapshot: Option<Snapshot>,
    /// Records of the current transaction, not yet folded.
    txn: Vec<Record>,
    found: Option<(u64, u64)>,
    /// The seq of the audit record whose hash is `chainHead` (0 for the zero digest), once read.
    chain_seq: Option<u64>,
    /// The seq of the audit record right after `chainHead`, once read: the audit head was
    /// `chainHead` from `chain_seq` up to before it.
    chain_left_at: Option<u64>,
    /// Why the audit record right after `chainHead` is not this receipt's entry, named if no
    /// later entry is found either.
    not_right_after: Option<ClaimFailure>,
    /// An entry found later than right after `chainHead`: its line and seq, waiting for its
    /// transaction's call record.
    placed_later: Option<(u64, u64)>,
}

impl ClaimVerifier {
    /// Checks the receipt on its own (and against `expected_signer`, the project's public key
    /// PEM, when given) and prepares to read the ledger `file`; HMAC tags are checked iff
    /// `key` is given.
    pub fn new(
        receipt: ClaimReceipt,
        file: &str,
        key: Option<&[u8]>,
        expected_signer: Option<&str>,
    ) -> Result<ClaimVerifier, ClaimFailure> {
        claims::check_receipt(&receipt).map_err(|f| match f {
            ReceiptFault::Shape(d) => failure(ClaimCheck::ReceiptShape, d),
            ReceiptFault::Hash => failure(
                ClaimCheck::ReceiptHash,
                "receiptHash is not the SHA-256 of the receipt's decision fields: a field was altered",
            ),
            ReceiptFault::PollToken => failure(
                ClaimCheck::PollToken,
                "pollToken does not encode this receipt",
            ),
            ReceiptFault::Signature(e) => failure(ClaimCheck::Signature, e.to_string()),
        })?;
        if let Some(want) = expected_signer
            && want.trim() != receipt.signer_public_key_pem.trim()
        {
            return Err(failure(
                ClaimCheck::SignerKey,
                "the receipt is signed by a key other than this project's signing key",
            ));
        }
        let chain_head = Digest::parse(&receipt.chain_head)
            .ok_or_else(|| failure(ClaimCheck::ReceiptShape, "chainHead is not a digest"))?;
        Ok(ClaimVerifier {
            receipt,
            chain_head,
            ledger: LedgerVerifier::new(file, key),
            line: 0,
            snapshot: Some(Snapshot::genesis()),
            txn: Vec::new(),
            found: None,
            chain_seq: (chain_head == Digest::ZERO).then_some(0),
            chain_left_at: None,
            not_right_after: None,
            placed_later: None,
        })
    }

    /// Checks the next ledger line, given without its `\n`.
    pub fn push_line(&mut self, line: &[u8]) -> Result<(), ClaimFailure> {
        let rec = self
            .ledger
            .push_record(line)
            .map_err(|f| failure(ClaimCheck::Ledger, f.to_string()))?;
        self.line += 1;
        if self.found.is_some() {
            return Ok(());
        }
        if let Some(entry) = self.placed_later {
            return self.check_placed_later(entry, &rec);
        }
        if rec.stream == AUDIT_STREAM {
            if rec.hash == self.chain_head {
                self.chain_seq = Some(rec.seq);
            }
            if rec.sprev == self.chain_head && self.chain_left_at.is_none() {
                self.chain_left_at = Some(rec.seq);
                match self.check_entry(&rec) {
                    Ok(()) => {
                        self.found = Some((self.line, rec.seq));
                        self.snapshot = None;
                        self.txn.clear();
                        return Ok(());
                    }
                    // Not this receipt's entry: the claim may have been placed later.
                    Err(e) if e.check == ClaimCheck::ClaimEntry => self.not_right_after = Some(e),
                    Err(e) => return Err(e),
                }
            } else if self.chain_seq.is_some() && self.records_this_receipt(&rec) {
                match self.check_entry(&rec) {
                    Ok(()) => {
                        self.placed_later = Some((self.line, rec.seq));
                        return Ok(());
                    }
                    // Another claim's entry with the same decision (a refusal repeated on the
                    // same backlog) and another chain head: not this one's.
                    Err(e) if e.check == ClaimCheck::ClaimEntry => {}
                    Err(e) => return Err(e),
                }
            }
        }
        let completes = rec.txn[0] == rec.txn[1];
        self.txn.push(rec);
        if completes && let Some(snap) = &mut self.snapshot {
            for r in self.txn.drain(..) {
                // The ledger check above already proved every record extends the chain.
                snap.apply(&r)
                    .map_err(|e| failure(ClaimCheck::Ledger, e.to_string()))?;
            }
        }
        Ok(())
    }

    /// Whether `rec` is a `task.claim_receipt` naming this receipt's hash.
    fn records_this_receipt(&self, rec: &Record) -> bool {
        rec.kind == records::CLAIM_RECEIPT
            && rec.body.get("receipt_hash").and_then(|h| h.as_str())
                == Some(self.receipt.receipt_hash.as_str())
    }

    /// The records after an entry placed later than right after `chainHead`, up to its
    /// transaction's call record: that record must say it was decided where the audit head
    /// was still `chainHead` (`read_at` between the record holding `chainHead` and the one
    /// after it).
    fn check_placed_later(
        &mut self,
        (line, seq): (u64, u64),
        rec: &Record,
    ) -> Result<(), ClaimFailure> {
        let at = format!("line {line} (seq {seq})");
        let is_call =
            rec.stream == AUDIT_STREAM && rec.kind == bernstein_core::ledger::audit::CALL_KIND;
        if !is_call {
            if rec.txn[0] == rec.txn[1] || rec.txn[0] == 1 {
                return Err(failure(
                    ClaimCheck::ClaimEntry,
                    format!(
                        "the task.claim_receipt at {at} stands after other audit records than chain head {}, and its transaction has no call record saying where it was decided",
                        self.receipt.chain_head
                    ),
                ));
            }
            return Ok(());
        }
        let read_at = rec.body.get("read_at").and_then(|v| v.as_u64());
        let (from, until) = (self.chain_seq.unwrap_or(0), self.chain_left_at);
        let within = read_at.is_some_and(|s| s >= from && until.is_none_or(|u| s < u));
        if !within {
            return Err(failure(
                ClaimCheck::ClaimEntry,
                format!(
                    "the task.claim_receipt at {at} stands after other audit records than chain head {}, but its call record was decided at {} (the audit head was {} only from seq {from}{})",
                    self.receipt.chain_head,
                    read_at.map_or("no named position".to_string(), |s| format!("seq {s}")),
                    self.receipt.chain_head,
                    until.map_or(String::new(), |u| format!(" to {}", u - 1)),
                ),
            ));
        }
        self.found = Some((line, seq));
        self.snapshot = None;
        self.txn.clear();
        Ok(())
    }

    fn check_entry(&self, rec: &Record) -> Result<(), ClaimFailure> {
        let r = &self.receipt;
        let at = format!("line {} (seq {})", self.line, rec.seq);
        if rec.kind != records::CLAIM_RECEIPT {
            return Err(failure(
                ClaimCheck::ClaimEntry,
                format!(
                    "the audit record after chain head {} ({at}) is a {}, not a task.claim_receipt",
                    r.chain_head, rec.kind
                ),
            ));
        }
        let entry: ClaimEntry = serde_json::from_value(rec.body.clone()).map_err(|e| {
            failure(
                ClaimCheck::ClaimEntry,
                format!("the task.claim_receipt at {at} is malformed: {e}"),
            )
        })?;
        if entry.receipt_hash != r.receipt_hash {
            return Err(failure(
                ClaimCheck::ClaimEntry,
                format!(
                    "the task.claim_receipt at {at} records receipt {}, not {}",
                    entry.receipt_hash, r.receipt_hash
                ),
            ));
        }
        if let Some(field) = entry.disagreement(r) {
            return Err(failure(
                ClaimCheck::ClaimEntry,
                format!("the task.claim_receipt at {at} records a different {field}"),
            ));
        }
        let snap = self
            .snapshot
            .as_ref()
            .expect("the projection is kept until the entry is found");
        let backlog = snap.stream_head(BACKLOG_STREAM).to_string();
        if backlog != r.backlog_head {
            return Err(failure(
                ClaimCheck::BacklogHead,
                format!(
                    "re-projected backlog head before the claim is {backlog}, the receipt says {}",
                    r.backlog_head
                ),
            ));
        }
        if entry.filter.digest().to_string() != r.filter_digest {
            return Err(failure(
                ClaimCheck::FilterDigest,
                "the recorded filter does not hash to filterDigest",
            ));
        }
        let chosen =
            claims::select(&snap.domain, &entry.filter, entry.at).map_or("", |t| t.id.as_str());
        if chosen != r.task_id {
            return Err(failure(
                ClaimCheck::Decision,
                format!(
                    "at that backlog head the filter selects {:?}, the receipt says {:?}",
                    chosen, r.task_id
                ),
            ));
        }
        if r.granted && !self.txn.iter().any(|t| claimed_by(t, r)) {
            return Err(failure(
                ClaimCheck::ClaimApplied,
                format!(
                    "the claim's transaction does not move {} from open to claimed for {}",
                    r.task_id, r.claimer_id
                ),
            ));
        }
        Ok(())
    }

    /// Ends verification (`unterminated`: bytes after the last `\n`).
    pub fn finish(self, unterminated: &[u8]) -> Result<ClaimVerification, ClaimFailure> {
        let ledger = self
            .ledger
            .finish(unterminated)
            .map_err(|f| failure(ClaimCheck::Ledger, f.to_string()))?;
        let Some((entry_line, entry_seq)) = self.found else {
            if let Some(why) = self.not_right_after {
                return Err(why);
            }
            return Err(failure(
                ClaimCheck::ClaimEntry,
                format!(
                    "no audit record follows chain head {} in this ledger",
                    self.receipt.chain_head
                ),
            ));
        };
        Ok(ClaimVerification {
            receipt_hash: self.receipt.receipt_hash,
            task_id: self.receipt.task_id,
            granted: self.receipt.granted,
            entry_line,
            entry_seq,
            ledger,
        })
    }
}

fn claimed_by(rec: &Record, r: &ClaimReceipt) -> bool {
    rec.stream == BACKLOG_STREAM
        && rec.kind == records::TASK_STATUS
        && serde_json::from_value::<TaskStatusChanged>(rec.body.clone()).is_ok_and(|b| {
            b.task_id == r.task_id
                && b.from == TaskStatus::Open
                && b.to == TaskStatus::Claimed
                && b.actor.as_deref() == Some(r.claimer_id.as_str())
        })
}

/// Verifies `receipt` against a whole ledger held in memory (see [`ClaimVerifier`]).
pub fn verify_claim_receipt(
    receipt: ClaimReceipt,
    ledger: &[u8],
    file: &str,
    key: Option<&[u8]>,
    expected_signer: Option<&str>,
) -> Result<ClaimVerification, ClaimFailure> {
    let mut v = ClaimVerifier::new(receipt, file, key, expected_signer)?;
    let mut rest = ledger;
    while let Some(nl) = rest.iter().position(|&b| b == b'\n') {
        v.push_line(&rest[..nl])?;
        rest = &rest[nl + 1..];
    }
    v.finish(rest)
}
