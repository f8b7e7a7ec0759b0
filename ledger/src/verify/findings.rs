//! Every bad line of a ledger, not only the first: what `bernstein audit verify` reports once
//! [`LedgerVerifier`](super::LedgerVerifier) has refused a ledger.
//!
//! [`FindingsVerifier`] makes the same checks, line by line, but reads on after a line that
//! fails them, resynchronised on that line's own record: after a bad line the verifier's
//! position is the seq and `hash` that record claims, its stream's head is that `hash`, and the
//! transaction framing continues from its `txn`. So one edited record is one finding, and a
//! second, separate edit further on is a second one. The line after a line whose *seal* failed
//! (unparsable, hash mismatch, tag missing or wrong) is read against both readings of it:
//!
//! - its `prev` is the bad record's `hash`: the record was edited in place (nothing more);
//! - its `prev` and seq continue the record *before* the bad line: the bad line was inserted,
//!   and the verifier forgets it (position, stream head and framing go back);
//! - its seq is further on: the bad line replaced the records up to it (the `prev` it carries is
//!   the hash the replaced record had), and the finding says so.
//!
//! A record that does not follow (missing records, a record out of place, a broken `prev`) is a
//! finding, unless the hash it continues from (or its own) is one an earlier finding already
//! accounts for: the record found missing turning up further on, the record after a moved one.
//! Then it is a note on that finding. A `sprev` naming such a hash is a note too. A record
//! behind the current position (a copy, a record moved back) never moves the position.
//!
//! The first finding is the failure [`verify_ledger`](super::verify_ledger) names, in the
//! same words, at the same line and seq (property-tested). Each finding names what it affects:
//! the run and task ids its line and the other lines of its transaction name, the claim
//! receipts that transaction issued, and how many claim receipts were recorded from its seq on
//! (handles, receipts and witnesses over heads at or after the first bad seq no longer verify).
//!
//! Only for ledgers known to be bad: it keeps the open transaction's lines and parses the ones
//! around a finding, so it is slower than the streaming verifier, but memory is still bounded
//! by the streams, the longest transaction and the capped lists. Pure, and never panics.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde::Serialize;
use serde_json::Value;

use crate::digest::Digest;
use crate::line::{RecordKey, RecordLine, SealError};
use crate::record::{LedgerPosition, Record};

use super::{
    FastMap, Found, KEY_MISMATCH, OLD_FORMAT, TxnFraming, VerifyReport, anchor_error, end_errors,
    prev_error, seal_reason, seq_error, sorted_streams, sprev_error,
};

/// At most this many findings are listed (the rest are counted).
pub const MAX_FINDINGS: usize = 1000;
/// Notes kept per finding (the rest are counted in one more note).
const MAX_NOTES: usize = 8;
/// Ids of each sort kept per finding.
const MAX_IDS: usize = 64;
/// Lines of the open transaction kept to name what a finding in it affects.
const MAX_TXN_LINES: usize = 256;
/// Hashes kept that earlier findings account for.
const MAX_EXPLAINED: usize = 100_000;

/// The kind of claim receipt records (RECORDS.md), whose `receipt_hash` a finding names.
const CLAIM_RECEIPT_KIND: &str = "task.claim_receipt";

/// What is wrong at a line.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FindingKind {
    /// Not a canonical record line (not JSON, not canonical, fields missing).
    Unparsable,
    /// The record's content does not hash to its `hash`: it was altered.
    HashMismatch,
    /// The record carries no HMAC tag: added without the audit key (or a format-1 ledger).
    MissingTag,
    /// The tag does not verify under the audit key: rewritten without the key.
    BadTag,
    /// A format-2 tag: a ledger from before format 3 (`bernstein ledger upgrade`).
    OldFormatTag,
    /// No record's tag verifies under this key: not the ledger's key.
    KeyMismatch,
    /// The seq jumps forward: records before this line are missing.
    MissingRecords,
    /// The seq does not move forward: a copied or moved record.
    OutOfPlace,
    /// The seq follows, but `prev` is not the previous record's hash.
    ChainBreak,
    /// `sprev` is not the hash of the stream's previous record.
    StreamBreak,
    /// The transaction framing (`txn`) does not continue.
    Framing,
    /// The record at the store's checkpointed position is not the one it checkpointed.
    CheckpointMismatch,
    /// The ledger ends early: a last line without newline, an unfinished transaction, or
    /// before the position the store checkpointed as durable.
    Truncated,
}

impl FindingKind {
    /// The kind's name in `--json` output.
    pub fn name(self) -> &'static str {
        match self {
            FindingKind::Unparsable => "unparsable",
            FindingKind::HashMismatch => "hash_mismatch",
            FindingKind::MissingTag => "missing_tag",
            FindingKind::BadTag => "bad_tag",
            FindingKind::OldFormatTag => "old_format_tag",
            FindingKind::KeyMismatch => "key_mismatch",
            FindingKind::MissingRecords => "missing_records",
            FindingKind::OutOfPlace => "out_of_place",
            FindingKind::ChainBreak => "chain_break",
            FindingKind::StreamBreak => "stream_break",
            FindingKind::Framing => "framing",
            FindingKind::CheckpointMismatch => "checkpoint_mismatch",
            FindingKind::Truncated => "truncated",
        }
    }
    /// The kind in a few words, for people.
    pub fn title(self) -> &'static str {
        match self {
            FindingKind::Unparsable => "unparsable line",
            FindingKind::HashMismatch => "hash mismatch",
            FindingKind::MissingTag => "missing tag",
            FindingKind::BadTag => "bad tag",
            FindingKind::OldFormatTag => "format-2 tag",
            FindingKind::KeyMismatch => "key mismatch",
            FindingKind::MissingRecords => "records missing",
            FindingKind::OutOfPlace => "record out of place",
            FindingKind::ChainBreak => "chain break",
            FindingKind::StreamBreak => "stream break",
            FindingKind::Framing => "transaction framing",
            FindingKind::CheckpointMismatch => "checkpoint mismatch",
            FindingKind::Truncated => "truncated",
        }
    }
}

/// One thing wrong at a line.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Problem {
    pub kind: FindingKind,
    pub reason: String,
}

/// The ids a finding touches.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Affected {
    /// Run ids (a run's id is its root task's id).
    pub runs: BTreeSet<String>,
    pub tasks: BTreeSet<String>,
    /// `receipt_hash` of each claim receipt recorded in the finding's transaction.
    pub claim_receipts: BTreeSet<String>,
}

impl Affected {
    fn add(set: &mut BTreeSet<String>, id: &str, cap: usize) {
        if !id.is_empty() && set.len() < cap {
            set.insert(id.to_string());
        }
    }

    fn extend(&mut self, other: &Affected, cap: usize) {
        for (to, from) in [
            (&mut self.runs, &other.runs),
            (&mut self.tasks, &other.tasks),
            (&mut self.claim_receipts, &other.claim_receipts),
        ] {
            for id in from {
                Affected::add(to, id, cap);
            }
        }
    }

    /// Whether no id is named.
    pub fn is_empty(&self) -> bool {
        self.runs.is_empty() && self.tasks.is_empty() && self.claim_receipts.is_empty()
    }

    /// The ids a record line names: in its stream's name (`run:<id>`, `mailbox:<task>`,
    /// `progress:<run>/…`) and in its body (`run_id`, `root_task_id`, `task_id`, `parent_id`,
    /// an operator command's `target`; a claim receipt's `receipt_hash`). The line is read as
    /// JSON as it is: it may be a damaged one.
    fn add_line(&mut self, line: &[u8]) {
        let Ok(Value::Object(rec)) = serde_json::from_slice::<Value>(line) else {
            return;
        };
        if let Some(stream) = rec.get("stream").and_then(Value::as_str) {
            if let Some(run) = stream.strip_prefix(crate::RUN_STREAM_PREFIX) {
                Affected::add(&mut self.runs, run, MAX_IDS);
            } else if let Some(task) = stream.strip_prefix(crate::MAILBOX_STREAM_PREFIX) {
                Affected::add(&mut self.tasks, task, MAX_IDS);
            } else if let Some(rest) = stream.strip_prefix("progress:") {
                let run = rest.split('/').next().unwrap_or_default();
                Affected::add(&mut self.runs, run, MAX_IDS);
            }
        }
        let receipt = rec.get("kind").and_then(Value::as_str) == Some(CLAIM_RECEIPT_KIND);
        let Some(Value::Object(body)) = rec.get("body") else {
            return;
        };
        for (field, value) in body {
            let Some(id) = value.as_str() else { continue };
            match field.as_str() {
                "run_id" | "root_task_id" => Affected::add(&mut self.runs, id, MAX_IDS),
                "task_id" | "parent_id" => Affected::add(&mut self.tasks, id, MAX_IDS),
                "target" if id.starts_with("T-") => Affected::add(&mut self.tasks, id, MAX_IDS),
                "receipt_hash" if receipt => {
                    Affected::add(&mut self.claim_receipts, id, MAX_IDS);
                }
                _ => {}
            }
        }
    }
}

/// What a bad line says it holds (untrusted when its seal failed).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct LineRecord {
    pub seq: u64,
    pub stream: String,
    pub kind: String,
    pub hash: Digest,
    pub txn: [u32; 2],
}

/// One bad line (or the end of the ledger), and what follows from it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Finding {
    /// 1-based line (for the end of the ledger: where the next line would stand).
    pub line: u64,
    /// The seq the line should hold.
    pub seq: u64,
    /// The first problem of the line (what [`verify_ledger`](super::verify_ledger) names for
    /// the first bad line).
    pub kind: FindingKind,
    pub reason: String,
    /// Further problems of the same line.
    pub also: Vec<Problem>,
    /// What the lines after it show about it (a replaced record's original hash, an insertion,
    /// records found elsewhere, streams continuing from it).
    pub notes: Vec<String>,
    /// What the line says it holds, when it can be read at all.
    pub record: Option<LineRecord>,
    /// The ids the line and the other lines of its transaction name.
    pub affected: Affected,
    /// Claim receipts recorded at or after [`Finding::seq`].
    pub claim_receipts_since: u64,
    /// A tag failure while no tag has verified yet (folded into one key mismatch if none does).
    #[serde(skip)]
    probation: bool,
    #[serde(skip)]
    receipts_before: u64,
    #[serde(skip)]
    notes_dropped: u64,
}

/// Every finding of a ledger.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct FindingsReport {
    pub file: String,
    /// Lines read (an unterminated last line included).
    pub lines: u64,
    pub macs_checked: bool,
    /// The findings, in line order (at most [`MAX_FINDINGS`]).
    pub findings: Vec<Finding>,
    /// Findings not listed (beyond [`MAX_FINDINGS`]).
    pub unlisted: u64,
    /// Findings by kind, the unlisted included.
    pub counts: BTreeMap<FindingKind, u64>,
    /// The first finding's seq: nothing recorded from it on can be trusted as it stands, and
    /// handles, receipts and witnesses over heads at or after it no longer verify.
    pub from_seq: Option<u64>,
    /// Claim receipts recorded at or after `from_seq`.
    pub claim_receipts_since: u64,
    /// The union of the findings' affected ids.
    pub affected: Affected,
    /// The tallies of the records read, for checking witnesses: `found` holds only records
    /// whose seal verified; `head` is the last position read.
    #[serde(skip)]
    pub tally: VerifyReport,
}

impl FindingsReport {
    /// Whether nothing was found.
    pub fn is_clean(&self) -> bool {
        self.findings.is_empty() && self.unlisted == 0
    }

    /// How many findings there are, listed or not.
    pub fn total(&self) -> u64 {
        self.counts.values().sum()
    }
}

/// The fields of a line's record, as the line states them.
struct Claim<'l> {
    seq: u64,
    prev: Digest,
    sprev: Digest,
    hash: Digest,
    stream: Cow<'l, str>,
    kind: Cow<'l, str>,
    txn: [u32; 2],
}

impl<'l> Claim<'l> {
    fn of(raw: &RecordLine<'l>) -> Claim<'l> {
        Claim {
            seq: raw.seq,
            prev: raw.prev,
            sprev: raw.sprev,
            hash: raw.hash,
            stream: raw.stream.clone(),
            kind: raw.kind.clone(),
            txn: raw.txn,
        }
    }

    /// The fields of a line that is JSON but no canonical record (spaces added, a field
    /// reordered): enough to read on from it.
    fn loose(line: &[u8]) -> Option<Claim<'static>> {
        let Ok(Value::Object(rec)) = serde_json::from_slice::<Value>(line) else {
            return None;
        };
        let digest = |k: &str| rec.get(k).and_then(Value::as_str).and_then(Digest::parse);
        let text = |k: &str| rec.get(k).and_then(Value::as_str).map(str::to_string);
        let txn = rec.get("txn").and_then(Value::as_array)?;
        let part = |i: usize| {
            txn.get(i)
                .and_then(Value::as_u64)
                .and_then(|n| u32::try_from(n).ok())
        };
        if txn.len() != 2 {
            return None;
        }
        Some(Claim {
            seq: rec.get("seq").and_then(Value::as_u64)?,
            prev: digest("prev")?,
            sprev: digest("sprev")?,
            hash: digest("hash")?,
            stream: Cow::Owned(text("stream")?),
            kind: Cow::Owned(text("kind")?),
            txn: [part(0)?, part(1)?],
        })
    }

    fn record(&self) -> LineRecord {
        LineRecord {
            seq: self.seq,
            stream: self.stream.to_string(),
            kind: self.kind.to_string(),
            hash: self.hash,
            txn: self.txn,
        }
    }
}

/// How the line after a line whose seal failed may continue: from the bad record, or from the
/// record before it (then the bad line was inserted).
struct Resync {
    finding: Option<usize>,
    /// The position before the bad line, and whether its hash is known.
    before: LedgerPosition,
    before_known: bool,
    /// The bad record's stream and that stream's entry before it.
    stream_undo: Option<(String, Option<(u64, Digest)>)>,
    framing_before: Option<TxnFraming>,
}

/// How a line's seq and `prev` relate to the position before it.
enum Chain {
    /// It follows (or the line before was inserted and it follows the record before that).
    Follows,
    /// It does not follow, for a reason an existing finding accounts for.
    Folded(Option<usize>, String),
    /// It does not follow.
    Broken(Problem),
}

/// The all-findings verifier: feed it every line, then [`FindingsVerifier::finish`].
#[derive(Debug)]
pub struct FindingsVerifier {
    key: Option<RecordKey>,
    file: String,
    anchor: Option<LedgerPosition>,
    /// Lines read so far.
    line: u64,
    /// The position after the last line read (the last record's claims after a break), and
    /// whether its hash is known (not after an unparsable line).
    at: LedgerPosition,
    at_known: bool,
    streams: FastMap<String, (u64, Digest)>,
    kinds: FastMap<String, u64>,
    /// `None` when the framing is unknown (after an unparsable line): the next `txn` is taken
    /// as it is.
    framing: Option<TxnFraming>,
    resync: Option<ResyncSlot>,
    /// Hashes findings account for → (the seq they stand for, the finding).
    explained: HashMap<Digest, (u64, Option<usize>)>,
    /// The last finding that stands for records whose hashes are unknown (a stream continuing
    /// from an unseen hash is put down to it).
    unaccounted: Option<Option<usize>>,
    findings: Vec<Finding>,
    listed: usize,
    probation_listed: usize,
    unlisted: BTreeMap<FindingKind, u64>,
    good_tags: u64,
    /// The open transaction's lines (the first [`MAX_TXN_LINES`]), one after the other, and
    /// where each ends.
    txn_bytes: Vec<u8>,
    txn_ends: Vec<usize>,
    /// The finding whose transaction is still being read (its lines name what it affects).
    collecting: Option<usize>,
    receipts: u64,
    records: u64,
    transactions: u64,
    calls: u64,
    watched: FastMap<Digest, Option<(u64, String)>>,
}

/// [`Resync`], kept out of the `Debug` output.
struct ResyncSlot(Resync);

impl std::fmt::Debug for ResyncSlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Resync(line before: seq {})", self.0.before.seq)
    }
}

impl FindingsVerifier {
    /// A verifier for `file`; tags are checked iff `key` is given.
    pub fn new(file: &str, key: Option<&[u8]>) -> FindingsVerifier {
        FindingsVerifier {
            key: key.map(RecordKey::new),
            file: file.to_string(),
            anchor: None,
            line: 0,
            at: LedgerPosition::GENESIS,
            at_known: true,
            streams: FastMap::default(),
            kinds: FastMap::default(),
            framing: Some(TxnFraming::default()),
            resync: None,
            explained: HashMap::new(),
            unaccounted: None,
            findings: Vec::new(),
            listed: 0,
            probation_listed: 0,
            unlisted: BTreeMap::new(),
            good_tags: 0,
            txn_bytes: Vec::new(),
            txn_ends: Vec::new(),
            collecting: None,
            receipts: 0,
            records: 0,
            transactions: 0,
            calls: 0,
            watched: FastMap::default(),
        }
    }

    /// Also require the ledger to contain `anchor` (see
    /// [`LedgerVerifier::with_anchor`](super::LedgerVerifier::with_anchor)).
    pub fn with_anchor(mut self, anchor: Option<LedgerPosition>) -> FindingsVerifier {
        self.anchor = anchor.filter(|a| a.seq > 0);
        self
    }

    /// Also note where records with these hashes stand, among the records whose seal
    /// verified (the tally's `found`, for checking witnesses).
    pub fn watch(mut self, hashes: impl IntoIterator<Item = Digest>) -> FindingsVerifier {
        self.watched.extend(
            hashes
                .into_iter()
                .filter(|h| *h != Digest::ZERO)
                .map(|h| (h, None)),
        );
        self
    }

    /// Reads the next line, given without its `\n`.
    pub fn push_line(&mut self, line: &[u8]) {
        self.line += 1;
        let n = self.line;
        let scanned = RecordLine::scan(line);
        let mut problems: Vec<Problem> = Vec::new();
        let mut sealed = false;
        let claim = match &scanned {
            Some(raw) => {
                match raw.check(self.key.as_ref()) {
                    Ok(()) => sealed = true,
                    Err(e) => problems.push(Problem {
                        kind: seal_kind(e),
                        reason: seal_reason(e, n == 1),
                    }),
                }
                Some(Claim::of(raw))
            }
            None => {
                problems.push(Problem {
                    kind: FindingKind::Unparsable,
                    reason: format!("bad record: {}", Record::scan_refusal(line)),
                });
                Claim::loose(line)
            }
        };
        if sealed && self.key.is_some() {
            self.good_tags += 1;
            if self.good_tags == 1 {
                self.end_probation();
            }
        }
        // The lines of a transaction name what a finding in it affects.
        if claim.as_ref().is_some_and(|c| c.txn[0] == 1) {
            self.clear_txn_lines();
            self.collecting = None;
        }
        if let Some(f) = self.collecting {
            self.findings[f].affected.add_line(line);
            if claim.as_ref().is_none_or(|c| c.txn[0] >= c.txn[1]) {
                self.collecting = None;
            }
        }
        match claim {
            Some(c) => self.push_claim(n, line, &c, sealed, problems),
            None => self.push_unreadable(n, line, problems),
        }
    }

    /// A line that states no record at all: it stands for one record of unknown hash.
    fn push_unreadable(&mut self, n: u64, line: &[u8], problems: Vec<Problem>) {
        let seq = self.at.seq.saturating_add(1);
        let f = self.open_finding(n, seq, problems, None, line);
        if let Some(i) = f {
            self.collecting = Some(i);
        }
        self.resync = Some(ResyncSlot(Resync {
            finding: f,
            before: self.at,
            before_known: self.at_known,
            stream_undo: None,
            framing_before: self.framing,
        }));
        self.at = LedgerPosition {
            seq,
            head: Digest::ZERO,
        };
        self.at_known = false;
        self.framing = None;
        self.keep_txn_line(line);
    }

    fn push_claim(
        &mut self,
        n: u64,
        line: &[u8],
        c: &Claim<'_>,
        sealed: bool,
        mut problems: Vec<Problem>,
    ) {
        let after_bad = self.resync.as_ref().map(|r| r.0.finding);
        let chain = self.chain(n, c);
        let expected = self.at.seq.saturating_add(1);
        let stream_head = self
            .streams
            .get(c.stream.as_ref())
            .map_or(Digest::ZERO, |s| s.1);
        let sprev = sprev_error(stream_head, c.sprev, &c.stream);
        let framing = match self.framing {
            Some(mut f) => f.check(c.txn).err(),
            None => None,
        };
        let anchor = anchor_error(self.anchor, c.seq, c.hash);

        // Problems an earlier finding accounts for become notes on it.
        let mut fold: Option<(Option<usize>, String)> = None;
        let chain_broken = !matches!(chain, Chain::Follows);
        match chain {
            Chain::Follows => {}
            Chain::Folded(f, note) => fold = Some((f, note)),
            Chain::Broken(p) => problems.push(p),
        }
        if let Some(reason) = sprev {
            if fold.is_some() {
                // Part of what the fold already explains.
            } else if let Some(&(_, f)) = self.explained.get(&c.sprev) {
                fold = Some((
                    f,
                    format!(
                        "line {n} (seq {}) continues stream {:?} from it",
                        c.seq, c.stream
                    ),
                ));
            } else if let (false, Some(f)) = (chain_broken, self.unaccounted) {
                fold = Some((
                    f,
                    format!(
                        "line {n} (seq {}) continues stream {:?} from {}, a record not read before it: one of the records this finding stands for",
                        c.seq, c.stream, c.sprev
                    ),
                ));
            } else {
                problems.push(Problem {
                    kind: FindingKind::StreamBreak,
                    reason,
                });
            }
        }
        if let Some(reason) = framing
            && fold.is_none()
        {
            match after_bad {
                // The framing came from the bad line's own (untrusted) `txn`.
                Some(f) => {
                    fold = Some((
                        f,
                        format!(
                            "line {n} (seq {}) does not continue this line's transaction: {reason}",
                            c.seq
                        ),
                    ));
                }
                None => problems.push(Problem {
                    kind: FindingKind::Framing,
                    reason,
                }),
            }
        }
        if let Some(reason) = anchor {
            problems.push(Problem {
                kind: FindingKind::CheckpointMismatch,
                reason,
            });
        }

        // A record whose seal failed but which continues the chain may have had its seq
        // edited: it takes the place it stands in.
        let edited_in_place = !sealed && self.at_known && c.prev == self.at.head;
        // A record behind the position (a copy, a record moved back) does not move it.
        let behind =
            (!problems.is_empty() || fold.is_some()) && c.seq <= self.at.seq && !edited_in_place;
        let mut finding = None;
        if !problems.is_empty() {
            let missing = problems
                .iter()
                .any(|p| p.kind == FindingKind::MissingRecords);
            finding = self.open_finding(n, expected, problems, Some(c), line);
            self.explain(c.hash, c.seq, finding);
            if chain_broken && !behind {
                self.explain(c.prev, c.seq.saturating_sub(1), finding);
            }
            if missing && !edited_in_place && c.seq > expected.saturating_add(1) {
                self.unaccounted = Some(finding);
            }
            if let Some(i) = finding
                && c.txn[0] < c.txn[1]
            {
                self.collecting = Some(i);
            }
        }
        let troubled = finding.is_some() || fold.is_some();
        if let Some((f, note)) = fold {
            self.note(f, note);
            if behind {
                self.explain(c.hash, c.seq, f);
                if let Some(i) = f {
                    self.findings[i].affected.add_line(line);
                }
            }
        }

        // Tallies (for witnesses) of every record read; `found` only for sealed ones.
        self.records += 1;
        match self.kinds.get_mut(c.kind.as_ref()) {
            Some(k) => *k += 1,
            None => {
                self.kinds.insert(c.kind.to_string(), 1);
            }
        }
        if c.stream == crate::AUDIT_STREAM && c.kind == crate::audit::CALL_KIND {
            self.calls += 1;
        }
        if c.kind == CLAIM_RECEIPT_KIND {
            self.receipts += 1;
        }
        if sealed
            && !self.watched.is_empty()
            && let Some(slot) = self.watched.get_mut(&c.hash)
        {
            *slot = Some((c.seq, c.stream.to_string()));
        }

        if behind {
            // Displaced: the chain continues around it.
            self.resync = None;
            return;
        }
        let before = self.at;
        let before_known = self.at_known;
        let framing_before = self.framing;
        let slot = self.streams.get_mut(c.stream.as_ref());
        let old = slot.as_deref().copied();
        match slot {
            Some(s) => *s = (s.0 + 1, c.hash),
            None => {
                self.streams.insert(c.stream.to_string(), (1, c.hash));
            }
        }
        self.at = LedgerPosition {
            seq: if edited_in_place { expected } else { c.seq },
            head: c.hash,
        };
        self.at_known = true;
        let completes = c.txn[0] >= c.txn[1];
        self.framing = match (self.framing, troubled) {
            (Some(mut f), false) => {
                if f.check(c.txn) == Ok(true) {
                    self.transactions += 1;
                }
                Some(f)
            }
            _ => TxnFraming::after(c.txn),
        };
        self.resync = (!sealed).then(|| {
            ResyncSlot(Resync {
                finding,
                before,
                before_known,
                stream_undo: Some((c.stream.to_string(), old)),
                framing_before,
            })
        });
        if completes {
            self.clear_txn_lines();
        } else {
            self.keep_txn_line(line);
        }
    }

    /// How the line's record `c` continues the chain.
    fn chain(&mut self, n: u64, c: &Claim<'_>) -> Chain {
        // A tag failure while no tag has verified may be the wrong key's: then every line
        // fails its tag, and the chain is read as it stands.
        let resync = self.resync.take().map(|s| s.0).filter(|r| {
            !r.finding
                .and_then(|i| self.findings.get(i))
                .is_some_and(|f| f.probation)
        });
        let expected = self.at.seq.saturating_add(1);
        if let Some(r) = resync {
            if self.at_known && c.prev == self.at.head && c.seq == expected {
                return Chain::Follows;
            }
            if r.before_known && c.prev == r.before.head && c.seq == r.before.seq.saturating_add(1)
            {
                // The bad line was inserted: forget it.
                self.at = r.before;
                self.at_known = true;
                if let Some((stream, old)) = r.stream_undo {
                    match old {
                        Some(s) => {
                            self.streams.insert(stream, s);
                        }
                        None => {
                            self.streams.remove(&stream);
                        }
                    }
                }
                self.framing = r.framing_before;
                self.note(
                    r.finding,
                    format!(
                        "line {n} (seq {}) continues from the record before line {}: that line was inserted",
                        c.seq,
                        n - 1
                    ),
                );
                return Chain::Follows;
            }
            if c.seq >= expected && c.seq > r.before.seq {
                let stood = r.before.seq.saturating_add(1);
                self.explain(c.prev, c.seq.saturating_sub(1), r.finding);
                let note = if c.seq == expected && !self.at_known {
                    format!(
                        "line {n} (seq {}) continues from {}: the record this line held (seq {stood}) had that hash",
                        c.seq, c.prev
                    )
                } else if c.seq == expected {
                    format!(
                        "line {n} (seq {}) continues from {}, not from this line's record: this line replaced the record of seq {stood}, whose hash that is",
                        c.seq, c.prev
                    )
                } else {
                    self.unaccounted = Some(r.finding);
                    format!(
                        "the next readable record (line {n}) is seq {}: this line stands for seq {stood} to {} (records missing, or lines merged)",
                        c.seq,
                        c.seq.saturating_sub(1)
                    )
                };
                return Chain::Folded(r.finding, note);
            }
        }
        let problem = if !self.at_known {
            seq_error(&self.at, c.seq).map(|reason| (c.seq > expected, reason))
        } else {
            seq_error(&self.at, c.seq)
                .map(|reason| (c.seq > expected, reason))
                .or_else(|| prev_error(&self.at, c.prev).map(|reason| (false, reason)))
        };
        let Some((forward, reason)) = problem else {
            return Chain::Follows;
        };
        // A hash an earlier finding accounts for: the record it found missing, or the one
        // after a record it found out of place.
        let follows_known = self
            .explained
            .get(&c.prev)
            .filter(|(s, _)| s.saturating_add(1) == c.seq)
            .map(|(_, f)| (*f, "continues from it"));
        let is_known = self
            .explained
            .get(&c.hash)
            .filter(|(s, _)| *s == c.seq)
            .map(|(_, f)| (*f, "is the record it stands for, out of place"));
        if let Some((f, what)) = follows_known.or(is_known) {
            return Chain::Folded(f, format!("line {n} (seq {}) {what}", c.seq));
        }
        let kind = if c.seq == expected {
            FindingKind::ChainBreak
        } else if forward {
            FindingKind::MissingRecords
        } else {
            FindingKind::OutOfPlace
        };
        Chain::Broken(Problem { kind, reason })
    }

    /// Notes that `hash` stands for seq `seq` and is accounted for by finding `f`.
    fn explain(&mut self, hash: Digest, seq: u64, f: Option<usize>) {
        if hash != Digest::ZERO && self.explained.len() < MAX_EXPLAINED {
            self.explained.entry(hash).or_insert((seq, f));
        }
    }

    fn note(&mut self, f: Option<usize>, note: String) {
        let Some(finding) = f.and_then(|i| self.findings.get_mut(i)) else {
            return;
        };
        if finding.notes.len() < MAX_NOTES {
            finding.notes.push(note);
        } else {
            finding.notes_dropped += 1;
        }
    }

    fn keep_txn_line(&mut self, line: &[u8]) {
        if self.txn_ends.len() < MAX_TXN_LINES {
            self.txn_bytes.extend_from_slice(line);
            self.txn_ends.push(self.txn_bytes.len());
        }
    }

    fn clear_txn_lines(&mut self) {
        self.txn_bytes.clear();
        self.txn_ends.clear();
    }

    /// A new finding at line `n`; `None` once [`MAX_FINDINGS`] are listed (it is counted).
    fn open_finding(
        &mut self,
        n: u64,
        seq: u64,
        mut problems: Vec<Problem>,
        claim: Option<&Claim<'_>>,
        line: &[u8],
    ) -> Option<usize> {
        let first = problems.remove(0);
        // A tag that fails while none has verified yet may be the wrong key, not a forgery.
        let probation = self.key.is_some()
            && self.good_tags == 0
            && problems.is_empty()
            && matches!(first.kind, FindingKind::BadTag | FindingKind::OldFormatTag);
        let room = if probation {
            self.probation_listed < MAX_FINDINGS
        } else {
            self.listed < MAX_FINDINGS
        };
        if !room {
            *self.unlisted.entry(first.kind).or_default() += 1;
            return None;
        }
        if probation {
            self.probation_listed += 1;
        } else {
            self.listed += 1;
        }
        let mut affected = Affected::default();
        let mut start = 0;
        for &end in &self.txn_ends {
            affected.add_line(&self.txn_bytes[start..end]);
            start = end;
        }
        affected.add_line(line);
        self.findings.push(Finding {
            line: n,
            seq,
            kind: first.kind,
            reason: first.reason,
            also: problems,
            notes: Vec::new(),
            record: claim.map(Claim::record),
            affected,
            claim_receipts_since: 0,
            probation,
            receipts_before: self.receipts,
            notes_dropped: 0,
        });
        Some(self.findings.len() - 1)
    }

    /// A tag verified: the tag failures before it were forgeries, not the wrong key.
    fn end_probation(&mut self) {
        for f in &mut self.findings {
            f.probation = false;
        }
        self.listed += self.probation_listed;
        self.probation_listed = 0;
    }

    /// Ends the reading. `unterminated` is whatever followed the last `\n`.
    pub fn finish(mut self, unterminated: &[u8]) -> FindingsReport {
        let n = self.line + 1;
        let open = self.framing.and_then(|f| f.expected());
        let mut ends = end_errors(unterminated, open, self.anchor, self.at.seq);
        if !ends.is_empty() {
            let problems = ends
                .drain(..)
                .map(|reason| Problem {
                    kind: FindingKind::Truncated,
                    reason,
                })
                .collect();
            let seq = self.at.seq.saturating_add(1);
            let f = self.open_finding(n, seq, problems, None, unterminated);
            if !unterminated.is_empty() {
                self.line += 1;
                let whole = RecordLine::scan(unterminated)
                    .filter(|r| r.check(self.key.as_ref()).is_ok())
                    .map(|r| r.seq);
                self.note(
                    f,
                    match whole {
                        Some(seq) => format!(
                            "the bytes after the last newline are a whole record (seq {seq}) without its newline"
                        ),
                        None => "the bytes after the last newline are a record cut short".into(),
                    },
                );
            }
            self.note(
                f,
                "a writer stopped mid-append leaves this; the file store cuts an unfinished append when it next opens the ledger (its records were never acknowledged); a tail cut on purpose looks the same: compare with a saved witness or a copy".into(),
            );
        }
        // No tag verified: one key mismatch (or old format), not a forgery per record.
        if self.key.is_some() && self.good_tags == 0 {
            let failed = self.findings.iter().filter(|f| f.probation).count() as u64
                + self
                    .unlisted
                    .iter()
                    .filter(|(k, _)| matches!(k, FindingKind::BadTag | FindingKind::OldFormatTag))
                    .map(|(_, n)| n)
                    .sum::<u64>();
            let mut kept = false;
            self.findings.retain(|f| {
                let keep = !f.probation || !kept;
                kept |= f.probation;
                keep
            });
            self.unlisted
                .retain(|k, _| !matches!(k, FindingKind::BadTag | FindingKind::OldFormatTag));
            if let Some(f) = self.findings.iter_mut().find(|f| f.probation) {
                if f.kind == FindingKind::BadTag {
                    f.kind = FindingKind::KeyMismatch;
                    f.reason = KEY_MISMATCH.to_string();
                } else {
                    f.reason = OLD_FORMAT.to_string();
                }
                f.notes.insert(
                    0,
                    format!("no record's tag verifies under this key ({failed} records read with a tag that does not)"),
                );
            }
            // Under the wrong key every tag fails: a finding's other problems are its own.
            for f in &mut self.findings {
                if !f.probation
                    && matches!(f.kind, FindingKind::BadTag | FindingKind::OldFormatTag)
                    && !f.also.is_empty()
                {
                    let next = f.also.remove(0);
                    f.kind = next.kind;
                    f.reason = next.reason;
                }
            }
        }
        let mut counts = self.unlisted.clone();
        for f in &mut self.findings {
            *counts.entry(f.kind).or_default() += 1;
            f.claim_receipts_since = self.receipts - f.receipts_before;
            if f.notes_dropped > 0 {
                f.notes
                    .push(format!("… and {} more such lines", f.notes_dropped));
            }
        }
        let mut affected = Affected::default();
        for f in &self.findings {
            affected.extend(&f.affected, MAX_FINDINGS);
        }
        let first = self.findings.first();
        let from_seq = first.map(|f| f.seq);
        let claim_receipts_since = first.map_or(0, |f| f.claim_receipts_since);
        let tally = VerifyReport {
            file: self.file.clone(),
            records: self.records,
            transactions: self.transactions,
            head: self.at,
            macs_checked: self.key.is_some(),
            keyed_records: self.records,
            anchor: self.anchor,
            streams: sorted_streams(self.streams),
            kinds: self.kinds.into_iter().collect(),
            call_count: self.calls,
            calls: Vec::new(),
            found: self
                .watched
                .into_iter()
                .filter_map(|(h, at)| at.map(|(seq, stream)| (h, Found { seq, stream })))
                .collect(),
        };
        FindingsReport {
            file: self.file,
            lines: self.line,
            macs_checked: self.key.is_some(),
            findings: self.findings,
            unlisted: self.unlisted.values().sum(),
            counts,
            from_seq,
            claim_receipts_since,
            affected,
            tally,
        }
    }
}

/// The finding kind of a seal failure.
fn seal_kind(e: SealError) -> FindingKind {
    match e {
        SealError::HashMismatch => FindingKind::HashMismatch,
        SealError::MissingMac => FindingKind::MissingTag,
        SealError::BadMac => FindingKind::BadTag,
        SealError::Format2Mac => FindingKind::OldFormatTag,
    }
}

/// Every finding of a ledger held in memory (see [`FindingsVerifier`]).
pub fn find_all(
    bytes: &[u8],
    file: &str,
    key: Option<&[u8]>,
    anchor: Option<LedgerPosition>,
) -> FindingsReport {
    let mut v = FindingsVerifier::new(file, key).with_anchor(anchor);
    let mut rest = bytes;
    while let Some(nl) = rest.iter().position(|&b| b == b'\n') {
        v.push_line(&rest[..nl]);
        rest = &rest[nl + 1..];
    }
    v.finish(rest)
}

#[cfg(test)]
mod tests;
