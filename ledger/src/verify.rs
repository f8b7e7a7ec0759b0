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

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};

use serde::Serialize;

use crate::digest::Digest;

use super::AUDIT_STREAM;
use super::line::{RecordKey, RecordLine, SealError};
use super::record::LedgerPosition;
use super::record::{Record, RecordError};
use super::snapshot::{Fold, Snapshot};

use super::audit::CALL_KIND;
use super::audit::CallAudit;

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
    /// `iss sub` of the OAuth token the call was made with (absent without one).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub principal: Option<String>,
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
    /// Records carrying an HMAC tag: all of them (format 3).
    pub keyed_records: u64,
    /// An externally recorded position (a store checkpoint) the ledger was found to contain.
    pub anchor: Option<LedgerPosition>,
    pub streams: BTreeMap<String, StreamSummary>,
    pub kinds: BTreeMap<String, u64>,
    /// How many `mcp.stateless_call` audit entries the ledger holds.
    pub call_count: u64,
    /// Those entries, in order (when collected, see [`LedgerVerifier::collect_calls`]).
    pub calls: Vec<CallEntry>,
    /// Where the ledger holds the watched hashes it was asked about ([`LedgerVerifier::watch`]).
    pub found: BTreeMap<Digest, Found>,
}

/// Where a watched record stands.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Found {
    pub seq: u64,
    pub stream: String,
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
            self.records, self.transactions, self.call_count, self.head.seq, self.head.head, macs
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

    /// The framing after a record carrying `txn`, taken on trust (to read on after a break);
    /// `None` when `txn` is no valid position in a transaction.
    fn after(txn: [u32; 2]) -> Option<TxnFraming> {
        let [index, count] = txn;
        (index >= 1 && index <= count).then(|| TxnFraming {
            next: (index < count).then(|| [index + 1, count]),
        })
    }
}

/// Why `rec` cannot follow ledger position `at` with its stream ending at `stream_head`.
pub fn chain_error(at: &LedgerPosition, stream_head: Digest, rec: &Record) -> Option<String> {
    chain_error_of(at, stream_head, rec.seq, rec.prev, rec.sprev, &rec.stream)
}

/// [`chain_error`] over a record's chain fields.
pub fn chain_error_of(
    at: &LedgerPosition,
    stream_head: Digest,
    seq: u64,
    prev: Digest,
    sprev: Digest,
    stream: &str,
) -> Option<String> {
    seq_error(at, seq)
        .or_else(|| prev_error(at, prev))
        .or_else(|| sprev_error(stream_head, sprev, stream))
}

/// Why a record of sequence number `seq` cannot follow `at`.
fn seq_error(at: &LedgerPosition, seq: u64) -> Option<String> {
    let want = at.seq.saturating_add(1);
    (seq != want).then(|| format!("sequence: expected seq {want}, found {seq}"))
}

/// Why a record whose `prev` is `prev` cannot follow `at`.
fn prev_error(at: &LedgerPosition, prev: Digest) -> Option<String> {
    (prev != at.head).then(|| {
        format!(
            "ledger chain: prev is {prev}, but the previous record's hash is {}",
            at.head
        )
    })
}

/// Why a record whose `sprev` is `sprev` cannot follow stream `stream` ending at `stream_head`.
fn sprev_error(stream_head: Digest, sprev: Digest, stream: &str) -> Option<String> {
    (sprev != stream_head).then(|| {
        format!("stream chain: sprev is {sprev}, but stream {stream:?} ends at {stream_head}")
    })
}

/// Checks that `records` extend `snapshot` as one or more whole transactions (seq, prev,
/// sprev, framing), without changing it. On failure: the index of the first bad record and why.
pub fn check_extends<F: Fold>(
    snapshot: &Snapshot<F>,
    records: &[Record],
) -> Result<(), (usize, String)> {
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

/// Incremental verifier: feed it the lines of a ledger in order. It keeps one entry per stream
/// (its head and count) and per kind, never the records: memory does not grow with the ledger
/// (the call list aside, which [`LedgerVerifier::collect_calls`] turns off).
#[derive(Debug)]
pub struct LedgerVerifier {
    key: Option<RecordKey>,
    /// Lines consumed so far.
    line: u64,
    /// Stream → (records, head).
    streams: FastMap<String, (u64, Digest)>,
    kinds: FastMap<String, u64>,
    framing: TxnFraming,
    anchor: Option<LedgerPosition>,
    collect_calls: bool,
    /// Witnessed record hashes → where the ledger holds them (seq, stream), once seen.
    watched: FastMap<Digest, Option<(u64, String)>>,
    report: VerifyReport,
}

/// The verifier's maps, looked up once or twice per record: foldhash with a per-map random
/// seed, not SipHash (which was a twentieth of `audit verify` on a ledger of many runs). A
/// record's stream is inserted only after its tag verified, when the key is given.
type FastMap<K, V> = HashMap<K, V, foldhash::fast::RandomState>;

impl LedgerVerifier {
    /// A verifier for `file` (the name used in failures); MACs are checked iff `key` is given.
    pub fn new(file: &str, key: Option<&[u8]>) -> LedgerVerifier {
        LedgerVerifier {
            key: key.map(RecordKey::new),
            line: 0,
            streams: FastMap::default(),
            kinds: FastMap::default(),
            framing: TxnFraming::default(),
            anchor: None,
            collect_calls: true,
            watched: FastMap::default(),
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
                call_count: 0,
                calls: Vec::new(),
                found: BTreeMap::new(),
            },
        }
    }

    /// Also require the ledger to contain `anchor` (a position a store recorded as durable):
    /// the record at `anchor.seq` must exist and have hash `anchor.head`. This catches the one
    /// thing chains alone cannot: whole transactions cut off the end.
    pub fn with_anchor(mut self, anchor: Option<LedgerPosition>) -> LedgerVerifier {
        self.anchor = anchor.filter(|a| a.seq > 0);
        self
    }

    /// Whether to list every `mcp.stateless_call` in the report (default: yes). Counting them
    /// costs nothing; listing them costs memory in proportion to the ledger.
    pub fn collect_calls(mut self, on: bool) -> LedgerVerifier {
        self.collect_calls = on;
        self
    }

    /// Also note where the ledger holds records with these hashes (the report's `found`): what
    /// a witness (a saved handle, receipt or signed head) needs to be checked against.
    pub fn watch(mut self, hashes: impl IntoIterator<Item = Digest>) -> LedgerVerifier {
        self.watched.extend(
            hashes
                .into_iter()
                .filter(|h| *h != Digest::ZERO)
                .map(|h| (h, None)),
        );
        self
    }

    /// The position after the last record pushed.
    pub fn head(&self) -> LedgerPosition {
        self.report.head
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
        let raw = self.check_line(line)?;
        self.count(&raw);
        Ok(())
    }

    /// [`LedgerVerifier::push_line`], handing back the checked record (for verifiers layered
    /// on this one, such as the claim-receipt and mailbox verifiers of the domain).
    pub fn push_record(&mut self, line: &[u8]) -> Result<Record, VerifyFailure> {
        let raw = self.check_line(line)?;
        let rec = Record::from_checked(&raw)
            .map_err(|e| self.fail(self.line + 1, format!("bad record: {e}")))?;
        self.count(&raw);
        Ok(rec)
    }

    /// Checks every whole line of `bytes` (each ended by `\n`) in order, as
    /// [`LedgerVerifier::push_line`] would, and returns how many bytes they took: what follows
    /// the last `\n` is left to be completed by more bytes, or handed to
    /// [`LedgerVerifier::finish`]. A record is scanned straight from the buffer, without a
    /// separate search for its line's end (a canonical line holds no `\n`).
    ///
    /// Each call rescans the incomplete line at the end, so a caller reading a file in chunks
    /// should hand over the bytes up to the chunk's last `\n`.
    pub fn push_bytes(&mut self, bytes: &[u8]) -> Result<usize, VerifyFailure> {
        let mut at = 0;
        while at < bytes.len() {
            let rest = &bytes[at..];
            // The common case: a canonical record, then its newline.
            if let Some(raw) = RecordLine::scan_prefix(rest)
                && rest.get(raw.line().len()) == Some(&b'\n')
            {
                self.push_scanned(&raw)?;
                at += raw.line().len() + 1;
                continue;
            }
            // Not a record (or not yet a whole line): the line as it is, for the reason.
            let Some(nl) = rest.iter().position(|&b| b == b'\n') else {
                break;
            };
            self.push_line(&rest[..nl])?;
            at += nl + 1;
        }
        Ok(at)
    }

    /// Every check of one line; nothing is counted yet.
    fn check_line<'l>(&self, line: &'l [u8]) -> Result<RecordLine<'l>, VerifyFailure> {
        let n = self.line + 1;
        let raw = RecordLine::scan(line)
            .ok_or_else(|| self.fail(n, format!("bad record: {}", Record::scan_refusal(line))))?;
        self.check_scanned(raw)
    }

    /// Every check of a scanned line but its form; nothing is counted yet.
    fn check_scanned<'l>(&self, raw: RecordLine<'l>) -> Result<RecordLine<'l>, VerifyFailure> {
        let n = self.line + 1;
        self.check_seal(&raw, n)?;
        let sh = self
            .streams
            .get(raw.stream.as_ref())
            .map_or(Digest::ZERO, |s| s.1);
        Self::check_chain(&self.report.head, self.framing, self.anchor, &raw, sh)
            .map_err(|reason| self.fail(n, reason))?;
        Ok(raw)
    }

    /// [`LedgerVerifier::check_scanned`] and [`LedgerVerifier::count`] in one, looking the
    /// record's stream up once.
    fn push_scanned(&mut self, raw: &RecordLine<'_>) -> Result<(), VerifyFailure> {
        let n = self.line + 1;
        self.check_seal(raw, n)?;
        let slot = self.streams.get_mut(raw.stream.as_ref());
        let sh = slot.as_ref().map_or(Digest::ZERO, |s| s.1);
        if let Err(reason) =
            Self::check_chain(&self.report.head, self.framing, self.anchor, raw, sh)
        {
            return Err(self.fail(n, reason));
        }
        match slot {
            Some(s) => *s = (s.0 + 1, raw.hash),
            None => {
                self.streams.insert(raw.stream.to_string(), (1, raw.hash));
            }
        }
        self.count_rest(raw);
        Ok(())
    }

    /// The record's `hash` and (with the key) `mac`; `n` is its line.
    fn check_seal(&self, raw: &RecordLine<'_>, n: u64) -> Result<(), VerifyFailure> {
        raw.check(self.key.as_ref())
            .map_err(|e| self.fail(n, seal_reason(e, self.report.records == 0)))
    }

    /// Seq, chains, framing and anchor of a sealed record whose stream ends at
    /// `stream_head`; why not, if it does not follow.
    fn check_chain(
        head: &LedgerPosition,
        mut framing: TxnFraming,
        anchor: Option<LedgerPosition>,
        raw: &RecordLine<'_>,
        stream_head: Digest,
    ) -> Result<(), String> {
        if let Some(reason) =
            chain_error_of(head, stream_head, raw.seq, raw.prev, raw.sprev, &raw.stream)
        {
            return Err(reason);
        }
        framing.check(raw.txn)?;
        match anchor_error(anchor, raw.seq, raw.hash) {
            Some(reason) => Err(reason),
            None => Ok(()),
        }
    }

    fn count(&mut self, raw: &RecordLine<'_>) {
        match self.streams.get_mut(raw.stream.as_ref()) {
            Some(s) => *s = (s.0 + 1, raw.hash),
            None => {
                self.streams.insert(raw.stream.to_string(), (1, raw.hash));
            }
        }
        self.count_rest(raw);
    }

    /// Counts a checked record whose stream is already counted.
    fn count_rest(&mut self, raw: &RecordLine<'_>) {
        self.line += 1;
        let completes = self
            .framing
            .check(raw.txn)
            .expect("check_chain checked the framing");
        let r = &mut self.report;
        r.records += 1;
        r.transactions += u64::from(completes);
        r.head = LedgerPosition {
            seq: raw.seq,
            head: raw.hash,
        };
        r.keyed_records += 1;
        match self.kinds.get_mut(raw.kind.as_ref()) {
            Some(n) => *n += 1,
            None => {
                self.kinds.insert(raw.kind.to_string(), 1);
            }
        }
        if !self.watched.is_empty()
            && let Some(slot) = self.watched.get_mut(&raw.hash)
        {
            *slot = Some((raw.seq, raw.stream.to_string()));
        }
        if raw.stream == AUDIT_STREAM && raw.kind == CALL_KIND {
            r.call_count += 1;
            if self.collect_calls {
                let body = CallAudit::read_bytes(raw.body);
                let text = |s: Cow<'_, str>| {
                    if s.is_empty() {
                        "?".to_string()
                    } else {
                        s.into_owned()
                    }
                };
                let principal = body
                    .principal
                    .as_ref()
                    .map(|p| format!("{} {}", p.iss, p.sub));
                r.calls.push(CallEntry {
                    seq: raw.seq,
                    tool: text(body.tool),
                    call_id: text(body.call_id),
                    ok: body.ok,
                    principal,
                });
            }
        }
    }

    /// Ends verification. `unterminated` is whatever followed the last `\n` (empty for a
    /// well-formed file); it is always a failure, as is an unfinished transaction or a missing
    /// anchor.
    pub fn finish(mut self, unterminated: &[u8]) -> Result<VerifyReport, VerifyFailure> {
        let next_line = self.line + 1;
        if let Some(reason) = end_errors(
            unterminated,
            self.framing.expected(),
            self.anchor,
            self.report.head.seq,
        )
        .into_iter()
        .next()
        {
            return Err(self.fail(next_line, reason));
        }
        self.report.anchor = self.anchor;
        self.report.streams = sorted_streams(self.streams);
        self.report.kinds = self.kinds.into_iter().collect();
        self.report.found = self
            .watched
            .into_iter()
            .filter_map(|(h, at)| at.map(|(seq, stream)| (h, Found { seq, stream })))
            .collect();
        Ok(self.report)
    }
}

/// Why a record of sequence number `seq` and hash `hash` is not the one the store checkpointed
/// as `anchor`.
fn anchor_error(anchor: Option<LedgerPosition>, seq: u64, hash: Digest) -> Option<String> {
    anchor.filter(|a| a.seq == seq && a.head != hash).map(|a| {
        format!(
            "record differs from the one the store checkpointed ({})",
            a.head
        )
    })
}

/// Why a line whose seal failed with `e` is bad; `first`: no record before it was read (a tag
/// failing there most likely means the key is not the ledger's, not a forged record).
fn seal_reason(e: SealError, first: bool) -> String {
    match e {
        SealError::BadMac if first => KEY_MISMATCH.to_string(),
        SealError::Format2Mac if first => OLD_FORMAT.to_string(),
        e => format!("bad record: {}", RecordError::from(e)),
    }
}

/// What is wrong with the end of a ledger, in the order [`LedgerVerifier::finish`] names it:
/// bytes after the last `\n`, an open transaction (`open`: the record it still needs), a
/// store's durable position past the last record (at `head_seq`).
fn end_errors(
    unterminated: &[u8],
    open: Option<[u32; 2]>,
    anchor: Option<LedgerPosition>,
    head_seq: u64,
) -> Vec<String> {
    let mut out = Vec::new();
    if !unterminated.is_empty() {
        out.push(format!(
            "truncated: the last line has no newline ({} bytes)",
            unterminated.len()
        ));
    }
    if let Some([index, count]) = open {
        out.push(format!(
            "truncated: the ledger ends inside a transaction (record {index} of {count} is missing)"
        ));
    }
    if let Some(a) = anchor
        && a.seq > head_seq
    {
        out.push(format!(
            "truncated: the store checkpointed seq {} as durable, but the ledger ends at seq {head_seq}",
            a.seq
        ));
    }
    out
}

/// The streams in name order. Sorted first by a 16-byte prefix of each name held beside it,
/// which settles most comparisons without reaching the names on the heap (a ledger of many
/// runs has hundreds of thousands of streams).
fn sorted_streams(streams: FastMap<String, (u64, Digest)>) -> BTreeMap<String, StreamSummary> {
    let prefix = |name: &str| {
        let mut p = [0u8; 16];
        let n = name.len().min(16);
        p[..n].copy_from_slice(&name.as_bytes()[..n]);
        // Zero-padded, so a shorter name never sorts after a longer one it begins.
        u128::from_be_bytes(p)
    };
    let mut v: Vec<(u128, String, StreamSummary)> = streams
        .into_iter()
        .map(|(name, (records, head))| (prefix(&name), name, StreamSummary { records, head }))
        .collect();
    v.sort_unstable_by(|a, b| a.0.cmp(&b.0).then_with(|| a.1.cmp(&b.1)));
    // Already in order: the map's own sort only checks it.
    v.into_iter().map(|(_, name, sum)| (name, sum)).collect()
}

/// Whether a verified ledger prefix ends exactly at `snapshot`'s position and stream heads
/// (what a store checks before it trusts a checkpoint's projection).
pub fn prefix_matches<F: Fold>(report: &VerifyReport, snapshot: &Snapshot<F>) -> bool {
    report.head == snapshot.position
        && report.streams.len() == snapshot.stream_heads.len()
        && report
            .streams
            .iter()
            .all(|(s, sum)| snapshot.stream_heads.get(s.as_str()) == Some(&sum.head))
}

/// Why record 1 fails its MAC: a key mismatch, named as such.
pub const KEY_MISMATCH: &str = "HMAC tag does not verify under this audit key, and no record before it does: this instance's audit key does not match the ledger's (copy .sdd/keys from an instance that wrote it), or the first record was forged";

/// The reason [`LedgerVerifier`] gives when the first record carries a format-2 tag: the whole
/// ledger is of an older format, not damaged.
pub const OLD_FORMAT: &str = super::record::FORMAT_2_MAC;

/// The store error for a failure that names the whole ledger rather than damage at a line
/// ([`KEY_MISMATCH`], [`OLD_FORMAT`]); `None` for damage.
pub fn whole_ledger_error(f: &VerifyFailure) -> Option<crate::StoreError> {
    let file = f.file.clone();
    match f.reason.as_str() {
        KEY_MISMATCH => Some(crate::StoreError::KeyMismatch { file }),
        OLD_FORMAT => Some(crate::StoreError::OldFormat { file }),
        _ => None,
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
    let used = v.push_bytes(bytes)?;
    v.finish(&bytes[used..])
}

mod findings;
pub use findings::{
    Affected, Finding, FindingKind, FindingsReport, FindingsVerifier, LineRecord, MAX_FINDINGS,
    Problem, find_all,
};

#[cfg(test)]
mod tests;
