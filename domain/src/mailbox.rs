//! Task mailboxes: the signed, chained message entries of stream `mailbox:<task_id>`, their
//! audit mirrors, and the offline mailbox verifier (`bernstein mailbox verify`).
//!
//! An entry (`mailbox.message`) carries its own chain on top of the ledger's: `seq` counts the
//! task's entries from 1, `prev_entry_hash` is the previous entry's `entry_hash` (the zero
//! digest for the first), and
//!
//! - `body_hash` = `sha256:` + hex SHA-256 of the (already redacted) body's UTF-8 bytes;
//! - `entry_hash` = `sha256:` + hex SHA-256 of the canonical JSON of
//!   `{body_hash, kind, prev_entry_hash, redactions, sender, sender_card_fingerprint, seq,
//!   task_id}`;
//! - `signature` = Ed25519 over the canonical JSON `{"entryHash": <entry_hash>, "type":
//!   "bernstein.mailbox_entry.v1"}`, under `signer_public_key_pem`.
//!
//! No clock value is hashed or signed (`posted_at` is recorded beside them). The ledger record
//! itself is HMAC-tagged (mailbox streams are keyed), and the same transaction mirrors the
//! entry into the audit chain as `task.mailbox_message`. This module never decides whether a
//! message may be posted; the tool does.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::json;

use bernstein_core::canonical::to_canonical_bytes;
use bernstein_core::digest::Digest;
use bernstein_core::ledger::verify::{LedgerVerifier, VerifyFailure, VerifyReport};
use bernstein_core::ledger::{AUDIT_STREAM, MAILBOX_STREAM_PREFIX, Record};

use super::records;
use bernstein_core::signing::{self, Signer};

/// Domain tag of the mailbox entry signature pre-image.
pub const ENTRY_SIGNATURE_TYPE: &str = "bernstein.mailbox_entry.v1";

/// What a message is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
#[schemars(transform = super::schema::undescribed)]
pub enum MessageKind {
    Finding,
    ArtefactRef,
    Question,
    // Answers every question posted to the mailbox before it (see `crate::questions`); a plain
    // comment, so the advertised enum stays one list.
    Answer,
}

impl MessageKind {
    pub fn as_str(self) -> &'static str {
        match self {
            MessageKind::Finding => "finding",
            MessageKind::ArtefactRef => "artefact_ref",
            MessageKind::Question => "question",
            MessageKind::Answer => "answer",
        }
    }
}

/// One signed mailbox entry: the body of `mailbox.message` and what `bernstein_post_message`
/// answers.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MailboxEntry {
    pub task_id: String,
    /// Position in the task's mailbox, from 1.
    pub seq: u64,
    pub kind: MessageKind,
    pub sender: String,
    /// `sha256:` fingerprint of the sender's agent card, or `unregistered`.
    pub sender_card_fingerprint: String,
    /// The body as recorded: secrets replaced by `[REDACTED:<kind>]`.
    pub body: String,
    /// SHA-256 of the recorded body (`sha256:<hex>`).
    pub body_hash: String,
    /// How many secrets were redacted from the body.
    pub redactions: u64,
    /// The kinds of secrets redacted (absent when none).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub redacted_kinds: Vec<String>,
    /// `entry_hash` of the previous entry of this mailbox (zero digest for the first).
    pub prev_entry_hash: String,
    /// SHA-256 over the entry's canonical fields (see docs/RECORDS.md).
    pub entry_hash: String,
    /// Ed25519 signature (base64url) over `{"entryHash", "type"}`.
    pub signature: String,
    /// SPKI PEM of the signing key.
    pub signer_public_key_pem: String,
    /// Wall-clock ms of the post (not hashed, not signed).
    pub posted_at: u64,
}

/// `task.mailbox_message` (stream `audit`): the mirror of an entry.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MailboxMirror {
    pub task_id: String,
    pub seq: u64,
    pub kind: MessageKind,
    pub sender: String,
    pub body_hash: String,
    pub redactions: u64,
    pub prev_entry_hash: String,
    pub entry_hash: String,
    pub signature: String,
    pub posted_at: u64,
}

impl MailboxMirror {
    pub fn of(e: &MailboxEntry) -> MailboxMirror {
        MailboxMirror {
            task_id: e.task_id.clone(),
            seq: e.seq,
            kind: e.kind,
            sender: e.sender.clone(),
            body_hash: e.body_hash.clone(),
            redactions: e.redactions,
            prev_entry_hash: e.prev_entry_hash.clone(),
            entry_hash: e.entry_hash.clone(),
            signature: e.signature.clone(),
            posted_at: e.posted_at,
        }
    }
}

/// Where a task's mailbox stands.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MailboxHead {
    /// Entries posted.
    pub entries: u64,
    /// `entry_hash` of the last entry (zero before the first).
    pub last_entry_hash: Digest,
}

impl MailboxHead {
    /// Folds the next entry; false (and unchanged) when it does not continue the mailbox.
    pub(crate) fn follow(&mut self, e: &MailboxEntry) -> bool {
        let Some(hash) = Digest::parse(&e.entry_hash) else {
            return false;
        };
        if e.seq != self.entries + 1 || e.prev_entry_hash != self.last_entry_hash.to_string() {
            return false;
        }
        self.entries = e.seq;
        self.last_entry_hash = hash;
        true
    }
}

/// The hashed fields of a new entry.
#[derive(Clone, Debug)]
pub struct NewEntry<'a> {
    pub task_id: &'a str,
    pub kind: MessageKind,
    pub sender: &'a str,
    pub sender_card_fingerprint: &'a str,
    /// The redacted body.
    pub body: &'a str,
    pub redactions: u64,
    pub redacted_kinds: Vec<String>,
    pub posted_at: u64,
}

/// `sha256:` + hex SHA-256 of `body`'s bytes.
pub fn body_hash(body: &str) -> String {
    Digest::of(body.as_bytes()).to_string()
}

/// The entry hash of `e` from its fields (see the module docs).
pub fn entry_hash(e: &MailboxEntry) -> String {
    let pre = json!({
        "body_hash": e.body_hash,
        "kind": e.kind.as_str(),
        "prev_entry_hash": e.prev_entry_hash,
        "redactions": e.redactions,
        "sender": e.sender,
        "sender_card_fingerprint": e.sender_card_fingerprint,
        "seq": e.seq,
        "task_id": e.task_id,
    });
    Digest::of(&to_canonical_bytes(&pre).expect("strings and integers only")).to_string()
}

/// The bytes an entry's signature covers.
pub fn signed_message(entry_hash: &str) -> Vec<u8> {
    signing::canonical_message(&json!({"entryHash": entry_hash, "type": ENTRY_SIGNATURE_TYPE}))
}

/// The next entry of a mailbox at `head`, hashed and signed.
pub fn seal_entry(head: &MailboxHead, new: NewEntry<'_>, signer: &Signer) -> MailboxEntry {
    let mut e = MailboxEntry {
        task_id: new.task_id.to_string(),
        seq: head.entries + 1,
        kind: new.kind,
        sender: new.sender.to_string(),
        sender_card_fingerprint: new.sender_card_fingerprint.to_string(),
        body: new.body.to_string(),
        body_hash: body_hash(new.body),
        redactions: new.redactions,
        redacted_kinds: new.redacted_kinds,
        prev_entry_hash: head.last_entry_hash.to_string(),
        entry_hash: String::new(),
        signature: String::new(),
        signer_public_key_pem: signer.public_key_pem().to_string(),
        posted_at: new.posted_at,
    };
    e.entry_hash = entry_hash(&e);
    e.signature = signer.sign(&signed_message(&e.entry_hash));
    e
}

/// The stream of task `task_id`'s mailbox.
pub fn mailbox_stream(task_id: &str) -> String {
    format!("{MAILBOX_STREAM_PREFIX}{task_id}")
}

/// The checks of `bernstein mailbox verify`, in the order they run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum MailboxCheck {
    /// The ledger's hash chains, HMAC tags and framing.
    Ledger,
    /// The record body is a mailbox entry of this stream's task.
    EntryShape,
    /// `seq` continues the task's mailbox.
    Sequence,
    /// `prev_entry_hash` is the previous entry's `entry_hash`.
    PrevEntryHash,
    /// `body_hash` is the hash of the recorded body.
    BodyHash,
    /// `entry_hash` is the hash of the entry's fields.
    EntryHash,
    /// The signer key is the expected one.
    SignerKey,
    /// The Ed25519 signature verifies.
    Signature,
    /// The same transaction mirrors the entry into the audit chain.
    Mirror,
}

impl MailboxCheck {
    pub fn as_str(self) -> &'static str {
        match self {
            MailboxCheck::Ledger => "ledger",
            MailboxCheck::EntryShape => "entry shape",
            MailboxCheck::Sequence => "entry sequence",
            MailboxCheck::PrevEntryHash => "prev_entry_hash",
            MailboxCheck::BodyHash => "body_hash",
            MailboxCheck::EntryHash => "entry_hash",
            MailboxCheck::SignerKey => "signer key",
            MailboxCheck::Signature => "signature",
            MailboxCheck::Mirror => "audit mirror",
        }
    }
}

/// The first mailbox entry (or ledger line) that failed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{} check failed at {file}:{line} (seq {seq}): {detail}", check.as_str())]
pub struct MailboxFailure {
    pub check: MailboxCheck,
    pub file: String,
    pub line: u64,
    pub seq: u64,
    pub detail: String,
}

/// What a clean mailbox verification saw.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MailboxReport {
    /// Entries checked, by task.
    pub entries: BTreeMap<String, u64>,
    pub ledger: VerifyReport,
}

impl MailboxReport {
    pub fn summary(&self) -> String {
        let total: u64 = self.entries.values().sum();
        let macs = if self.ledger.macs_checked {
            "HMAC tags verified"
        } else {
            "HMAC tags NOT verified (no key)"
        };
        format!(
            "OK: {total} mailbox entries in {} mailboxes verified (sequence, hashes, Ed25519 signatures, audit mirrors); ledger {} records, {macs}",
            self.entries.len(),
            self.ledger.records
        )
    }
}

/// An entry waiting for its audit mirror in the same transaction.
#[derive(Debug)]
struct AwaitingMirror {
    mirror: MailboxMirror,
    line: u64,
    seq: u64,
}

/// Incremental mailbox verifier: feed it the ledger's lines in order.
#[derive(Debug)]
pub struct MailboxVerifier {
    ledger: LedgerVerifier,
    file: String,
    task: Option<String>,
    expected_signer: Option<String>,
    line: u64,
    heads: BTreeMap<String, MailboxHead>,
    awaiting: Vec<AwaitingMirror>,
    entries: BTreeMap<String, u64>,
}

impl MailboxVerifier {
    /// A verifier of the mailboxes in `file` (of one task when `task` is given). HMAC tags are
    /// checked iff `key` is given; with `expected_signer`, every entry must carry that key.
    pub fn new(
        file: &str,
        key: Option<&[u8]>,
        task: Option<&str>,
        expected_signer: Option<&str>,
    ) -> MailboxVerifier {
        MailboxVerifier {
            ledger: LedgerVerifier::new(file, key),
            file: file.to_string(),
            task: task.map(str::to_string),
            expected_signer: expected_signer.map(str::to_string),
            line: 0,
            heads: BTreeMap::new(),
            awaiting: Vec::new(),
            entries: BTreeMap::new(),
        }
    }

    fn fail(&self, check: MailboxCheck, line: u64, seq: u64, detail: String) -> MailboxFailure {
        MailboxFailure {
            check,
            file: self.file.clone(),
            line,
            seq,
            detail,
        }
    }

    fn ledger_failure(&self, f: VerifyFailure) -> MailboxFailure {
        self.fail(MailboxCheck::Ledger, f.line, f.seq, f.reason)
    }

    /// Checks the next line, given without its `\n`.
    pub fn push_line(&mut self, line: &[u8]) -> Result<(), MailboxFailure> {
        let rec = self
            .ledger
            .push_record(line)
            .map_err(|f| self.ledger_failure(f))?;
        self.line += 1;
        let n = self.line;
        if let Some(task) = rec.stream.strip_prefix(MAILBOX_STREAM_PREFIX)
            && rec.kind == records::MAILBOX_MESSAGE
            && self.task.as_deref().is_none_or(|t| t == task)
        {
            self.check_entry(task, &rec, n)?;
        } else if rec.stream == AUDIT_STREAM
            && rec.kind == records::MAILBOX_MIRROR
            && self
                .task
                .as_deref()
                .is_none_or(|t| rec.body.get("task_id").and_then(|v| v.as_str()) == Some(t))
        {
            self.check_mirror(&rec, n)?;
        }
        if rec.txn[0] == rec.txn[1]
            && let Some(a) = self.awaiting.first()
        {
            return Err(self.fail(
                MailboxCheck::Mirror,
                a.line,
                a.seq,
                format!(
                    "entry {} of task {} has no task.mailbox_message mirror in its transaction",
                    a.mirror.seq, a.mirror.task_id
                ),
            ));
        }
        Ok(())
    }

    fn check_entry(&mut self, task: &str, rec: &Record, n: u64) -> Result<(), MailboxFailure> {
        let seq = rec.seq;
        let e: MailboxEntry = serde_json::from_value(rec.body.clone())
            .map_err(|err| self.fail(MailboxCheck::EntryShape, n, seq, err.to_string()))?;
        if e.task_id != task {
            return Err(self.fail(
                MailboxCheck::EntryShape,
                n,
                seq,
                format!("entry names task {} on stream mailbox:{task}", e.task_id),
            ));
        }
        let head = self.heads.get(task).cloned().unwrap_or_default();
        if e.seq != head.entries + 1 {
            return Err(self.fail(
                MailboxCheck::Sequence,
                n,
                seq,
                format!("entry seq is {}, expected {}", e.seq, head.entries + 1),
            ));
        }
        if e.prev_entry_hash != head.last_entry_hash.to_string() {
            return Err(self.fail(
                MailboxCheck::PrevEntryHash,
                n,
                seq,
                format!(
                    "prev_entry_hash is {}, but the previous entry's hash is {}",
                    e.prev_entry_hash, head.last_entry_hash
                ),
            ));
        }
        if body_hash(&e.body) != e.body_hash {
            return Err(self.fail(
                MailboxCheck::BodyHash,
                n,
                seq,
                "body_hash does not match the recorded body".into(),
            ));
        }
        if entry_hash(&e) != e.entry_hash {
            return Err(self.fail(
                MailboxCheck::EntryHash,
                n,
                seq,
                "entry_hash does not match the entry's fields".into(),
            ));
        }
        if let Some(want) = &self.expected_signer
            && want.trim() != e.signer_public_key_pem.trim()
        {
            return Err(self.fail(
                MailboxCheck::SignerKey,
                n,
                seq,
                "the entry is signed by a key other than this project's signing key".into(),
            ));
        }
        signing::verify_signature(
            &e.signer_public_key_pem,
            &signed_message(&e.entry_hash),
            &e.signature,
        )
        .map_err(|err| self.fail(MailboxCheck::Signature, n, seq, err.to_string()))?;
        let mut next = head;
        next.follow(&e);
        self.heads.insert(task.to_string(), next);
        *self.entries.entry(task.to_string()).or_default() += 1;
        self.awaiting.push(AwaitingMirror {
            mirror: MailboxMirror::of(&e),
            line: n,
            seq,
        });
        Ok(())
    }

    fn check_mirror(&mut self, rec: &Record, n: u64) -> Result<(), MailboxFailure> {
        let seq = rec.seq;
        let m: MailboxMirror = serde_json::from_value(rec.body.clone())
            .map_err(|err| self.fail(MailboxCheck::Mirror, n, seq, err.to_string()))?;
        let Some(i) = self
            .awaiting
            .iter()
            .position(|a| a.mirror.task_id == m.task_id && a.mirror.seq == m.seq)
        else {
            return Err(self.fail(
                MailboxCheck::Mirror,
                n,
                seq,
                format!(
                    "task.mailbox_message for entry {} of task {} has no entry in its transaction",
                    m.seq, m.task_id
                ),
            ));
        };
        let a = self.awaiting.remove(i);
        if a.mirror != m {
            return Err(self.fail(
                MailboxCheck::Mirror,
                n,
                seq,
                format!(
                    "the audit mirror of entry {} of task {} differs from the entry",
                    m.seq, m.task_id
                ),
            ));
        }
        Ok(())
    }

    /// Ends verification (`unterminated`: bytes after the last `\n`).
    pub fn finish(self, unterminated: &[u8]) -> Result<MailboxReport, MailboxFailure> {
        let file = self.file.clone();
        let ledger = self
            .ledger
            .finish(unterminated)
            .map_err(|f| MailboxFailure {
                check: MailboxCheck::Ledger,
                file,
                line: f.line,
                seq: f.seq,
                detail: f.reason,
            })?;
        Ok(MailboxReport {
            entries: self.entries,
            ledger,
        })
    }
}

/// Verifies the mailboxes of a whole ledger held in memory (see [`MailboxVerifier`]).
pub fn verify_mailboxes(
    bytes: &[u8],
    file: &str,
    key: Option<&[u8]>,
    task: Option<&str>,
    expected_signer: Option<&str>,
) -> Result<MailboxReport, MailboxFailure> {
    let mut v = MailboxVerifier::new(file, key, task, expected_signer);
    let mut rest = bytes;
    while let Some(nl) = rest.iter().position(|&b| b == b'\n') {
        v.push_line(&rest[..nl])?;
        rest = &rest[nl + 1..];
    }
    v.finish(rest)
}

#[cfg(test)]
mod tests;
