//! Offline verification of ledger bytes (`bernstein audit verify`).
//!
//! [`LedgerVerifier`] checks a ledger line by line, in order: the line is terminated, it is a
//! canonical record whose `hash` (and, given the key, `mac`) is right, its `seq` follows, its
//! `prev` and `sprev` continue the ledger chain and its stream's chain, and its `txn` continues
//! the transaction framing. The first line that fails any check is named ([`VerifyFailure`]:
//! file, 1-based line, the seq that line should hold, why); nothing after it is trusted. At the
//! end an unfinished transaction is a failure too, named at the line where its next record
//! should stand. The report reconstructs the order of the recorded tool calls.
//!
//! The same framing and chain rules are used by stores when they fold new records
//! ([`TxnFraming`], [`check_extends`]), so the store and the verifier cannot disagree.
//!
//! Pure: it sees bytes, never files. It must never trust a record it has not checked, and
//! never panic on any input.

use std::collections::{BTreeMap, HashMap};

use serde::Serialize;

use crate::digest::Digest;

use super::record::Record;
use super::snapshot::{LedgerPosition, Snapshot};
use super::{AUDIT_STREAM, stream_is_keyed};

/// Kind of the audit entry every `tools/call` appends.
pub const CALL_KIND: &str = "mcp.stateless_call";

/// The first bad entry of a ledger.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, thiserror::Error)]
#[error("{file}:{line} (seq {seq}): {reason}")]
pub struct VerifyFailure {
    pub file: String,
    /// 1-based line number of the bad entry (for a missing entry: where it should stand).
    pub line: u64,
    /// The sequence number the entry at that line should have.
    pub seq: u64,
    pub reason: String,
}

/// One recorded tool call, in ledger order.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CallEntry {
    pub seq: u64,
    pub tool: String,
    pub call_id: String,
    pub ok: bool,
}

/// Records and head of one stream.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct StreamSummary {
    pub records: u64,
    pub head: Digest,
}

/// What a clean ledger holds.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct VerifyReport {
    pub file: String,
    pub records: u64,
    pub transactions: u64,
    /// The final ledger position (seq and hash of the last record).
    pub head: LedgerPosition,
    /// Whether HMAC tags were checked (the key was available).
    pub macs_checked: bool,
    /// Records on keyed streams (audit, mailboxes): those that carry an HMAC tag.
    pub keyed_records: u64,
    /// An externally recorded position (a store checkpoint) the ledger was found to contain.
    pub anchor: Option<LedgerPosition>,
    pub streams: BTreeMap<String, StreamSummary>,
    pub kinds: BTreeMap<String, u64>,
    /// The `mcp.stateless_call` audit entries, in order.
    pub calls: Vec<CallEntry>,
}

impl VerifyReport {
    /// One human line: counts, head and whether MACs were checked.
    pub fn summary(&self) -> String {
        let macs = if self.macs_checked {
            format!("{} HMAC tags verified", self.keyed_records)
        } else {
            format!("{} HMAC tags NOT verified (no key)", self.keyed_records)
        };
        format!(
            "OK: {} records in {} transactions, {} calls; head seq {} {}; {}",
            self.records,
            self.transactions,
            self.calls.len(),
            self.head.seq,
            self.head.head,
            macs
        )
    }
}

/// Transaction framing: records of one transaction carry `txn = [1, n] .. [n, n]`, in order,
/// and a new transaction starts only after the previous one is complete.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TxnFraming {
    /// `[index, count]` the next record must carry, while a transaction is open.
    next: Option<[u32; 2]>,
}

impl TxnFraming {
    /// Checks the next record's `txn`; returns whether it completes its transaction.
    pub fn check(&mut self, txn: [u32; 2]) -> Result<bool, String> {
        let [index, count] = txn;
        match self.next {
            None if index == 1 && count >= 1 => {}
            None => {
                return Err(format!(
                    "transaction framing: a transaction must start with record 1 of n, found {index} of {count}"
                ));
            }
            Some(want) if want == txn => {}
            Some([wi, wc]) => {
                return Err(format!(
                    "transaction framing: expected record {wi} of {wc} (the transaction is incomplete), found {index} of {count}"
                ));
            }
        }
        let completes = index == count;
        self.next = if completes {
            None
        } else {
            Some([index + 1, count])
        };
        Ok(completes)
    }

    /// Whether a transaction is open (some of its records are still to come).
    pub fn in_transaction(&self) -> bool {
        self.next.is_some()
    }

    /// `[index, count]` of the record the open transaction still needs next.
    pub fn expected(&self) -> Option<[u32; 2]> {
        self.next
    }
}

/// Why `rec` cannot follow ledger position `at` with its stream ending at `stream_head`.
pub fn chain_error(at: &LedgerPosition, stream_head: Digest, rec: &Record) -> Option<String> {
    if rec.seq != at.seq + 1 {
        return Some(format!(
            "sequence: expected seq {}, found {}",
            at.seq + 1,
            rec.seq
        ));
    }
    if rec.prev != at.head {
        return Some(format!(
            "ledger chain: prev is {}, but the previous record's hash is {}",
            rec.prev, at.head
        ));
    }
    if rec.sprev != stream_head {
        return Some(format!(
            "stream chain: sprev is {}, but stream {:?} ends at {}",
            rec.sprev, rec.stream, stream_head
        ));
    }
    None
}

/// Checks that `records` extend `snapshot` as one or more whole transactions (seq, prev,
/// sprev, framing), without changing it. On failure: the index of the first bad record and why.
pub fn check_extends(snapshot: &Snapshot, records: &[Record]) -> Result<(), (usize, String)> {
    let mut at = snapshot.position;
    let mut heads: HashMap<&str, Digest> = HashMap::new();
    let mut framing = TxnFraming::default();
    for (i, rec) in records.iter().enumerate() {
        let sh = heads
            .get(rec.stream.as_str())
            .copied()
            .unwrap_or_else(|| snapshot.stream_head(&rec.stream));
        if let Some(reason) = chain_error(&at, sh, rec) {
            return Err((i, reason));
        }
        framing.check(rec.txn).map_err(|reason| (i, reason))?;
        heads.insert(&rec.stream, rec.hash);
        at = LedgerPosition {
            seq: rec.seq,
            head: rec.hash,
        };
    }
    if let Some([index, count]) = framing.expected() {
        return Err((
            records.len(),
            format!("transaction incomplete: record {index} of {count} is missing"),
        ));
    }
    Ok(())
}

/// Incremental verifier: feed it the lines of a ledger in order.
#[derive(Debug)]
pub struct LedgerVerifier<'k> {
    key: Option<&'k [u8]>,
    /// Lines consumed so far.
    line: u64,
    heads: HashMap<String, Digest>,
    framing: TxnFraming,
    anchor: Option<LedgerPosition>,
    report: VerifyReport,
}

impl<'k> LedgerVerifier<'k> {
    /// A verifier for `file` (the name used in failures); MACs are checked iff `key` is given.
    pub fn new(file: &str, key: Option<&'k [u8]>) -> LedgerVerifier<'k> {
        LedgerVerifier {
            key,
            line: 0,
            heads: HashMap::new(),
            framing: TxnFraming::default(),
            anchor: None,
            report: VerifyReport {
                file: file.to_string(),
                records: 0,
                transactions: 0,
                head: LedgerPosition::GENESIS,
                macs_checked: key.is_some(),
                keyed_records: 0,
                anchor: None,
                streams: BTreeMap::new(),
                kinds: BTreeMap::new(),
                calls: Vec::new(),
            },
        }
    }

    /// Also require the ledger to contain `anchor` (a position a store recorded as durable):
    /// the record at `anchor.seq` must exist and have hash `anchor.head`. This catches the one
    /// thing chains alone cannot: whole transactions cut off the end.
    pub fn with_anchor(mut self, anchor: Option<LedgerPosition>) -> LedgerVerifier<'k> {
        self.anchor = anchor.filter(|a| a.seq > 0);
        self
    }

    fn fail(&self, line: u64, reason: impl Into<String>) -> VerifyFailure {
        VerifyFailure {
            file: self.report.file.clone(),
            line,
            seq: self.report.head.seq + 1,
            reason: reason.into(),
        }
    }

    /// Checks the next line, given without its terminating `\n`.
    pub fn push_line(&mut self, line: &[u8]) -> Result<(), VerifyFailure> {
        self.push_record(line).map(drop)
    }

    /// [`LedgerVerifier::push_line`], handing back the checked record (for verifiers layered
    /// on this one, such as the claim-receipt and mailbox verifiers of the domain).
    pub fn push_record(&mut self, line: &[u8]) -> Result<Record, VerifyFailure> {
        let n = self.line + 1;
        let rec = Record::parse_line(line, self.key)
            .map_err(|e| self.fail(n, format!("bad record: {e}")))?;
        let sh = self.heads.get(&rec.stream).copied().unwrap_or(Digest::ZERO);
        if let Some(reason) = chain_error(&self.report.head, sh, &rec) {
            return Err(self.fail(n, reason));
        }
        let completes = self
            .framing
            .check(rec.txn)
            .map_err(|reason| self.fail(n, reason))?;
        if let Some(a) = self.anchor
            && a.seq == rec.seq
            && a.head != rec.hash
        {
            return Err(self.fail(
                n,
                format!(
                    "record differs from the one the store checkpointed ({})",
                    a.head
                ),
            ));
        }
        self.line = n;
        self.record(&rec, completes);
        Ok(rec)
    }

    fn record(&mut self, rec: &Record, completes: bool) {
        let r = &mut self.report;
        r.records += 1;
        r.transactions += u64::from(completes);
        r.head = LedgerPosition {
            seq: rec.seq,
            head: rec.hash,
        };
        if stream_is_keyed(&rec.stream) {
            r.keyed_records += 1;
        }
        let s = r
            .streams
            .entry(rec.stream.clone())
            .or_insert(StreamSummary {
                records: 0,
                head: Digest::ZERO,
            });
        s.records += 1;
        s.head = rec.hash;
        *r.kinds.entry(rec.kind.clone()).or_insert(0) += 1;
        if rec.stream == AUDIT_STREAM && rec.kind == CALL_KIND {
            let text = |k: &str| {
                rec.body
                    .get(k)
                    .and_then(|v| v.as_str())
                    .unwrap_or("?")
                    .to_string()
            };
            r.calls.push(CallEntry {
                seq: rec.seq,
                tool: text("tool"),
                call_id: text("call_id"),
                ok: rec
                    .body
                    .get("ok")
                    .and_then(|v| v.as_bool())
                    .unwrap_or(false),
            });
        }
        self.heads.insert(rec.stream.clone(), rec.hash);
    }

    /// Ends verification. `unterminated` is whatever followed the last `\n` (empty for a
    /// well-formed file); it is always a failure, as is an unfinished transaction or a missing
    /// anchor.
    pub fn finish(mut self, unterminated: &[u8]) -> Result<VerifyReport, VerifyFailure> {
        let next_line = self.line + 1;
        if !unterminated.is_empty() {
            return Err(self.fail(
                next_line,
                format!(
                    "truncated: the last line has no newline ({} bytes)",
                    unterminated.len()
                ),
            ));
        }
        if let Some([index, count]) = self.framing.expected() {
            return Err(self.fail(
                next_line,
                format!("truncated: the ledger ends inside a transaction (record {index} of {count} is missing)"),
            ));
        }
        if let Some(a) = self.anchor
            && a.seq > self.report.head.seq
        {
            return Err(self.fail(
                next_line,
                format!(
                    "truncated: the store checkpointed seq {} as durable, but the ledger ends at seq {}",
                    a.seq, self.report.head.seq
                ),
            ));
        }
        self.report.anchor = self.anchor;
        Ok(self.report)
    }
}

/// Verifies a whole ledger held in memory. See [`LedgerVerifier`] for the checks.
pub fn verify_ledger(
    bytes: &[u8],
    file: &str,
    key: Option<&[u8]>,
) -> Result<VerifyReport, VerifyFailure> {
    verify_ledger_anchored(bytes, file, key, None)
}

/// [`verify_ledger`], also requiring the ledger to contain `anchor`.
pub fn verify_ledger_anchored(
    bytes: &[u8],
    file: &str,
    key: Option<&[u8]>,
    anchor: Option<LedgerPosition>,
) -> Result<VerifyReport, VerifyFailure> {
    let mut v = LedgerVerifier::new(file, key).with_anchor(anchor);
    let mut rest = bytes;
    while let Some(nl) = rest.iter().position(|&b| b == b'\n') {
        v.push_line(&rest[..nl])?;
        rest = &rest[nl + 1..];
    }
    v.finish(rest)
}

#[cfg(test)]
mod tests;
