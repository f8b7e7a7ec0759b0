//! One ledger record: the unit of the hash chain. Records are stored one per line as canonical
//! JSON; a request's records form one transaction (`txn` = [index, count], 1-based) that is
//! committed whole or not at all.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::canonical::{to_canonical_bytes, write_canonical};
use crate::digest::{Digest, verify_hmac_tag};

use super::line::{RecordKey, RecordLine, SealError};

/// A point in the ledger: the sequence number of the last record and its hash.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct LedgerPosition {
    pub seq: u64,
    pub head: Digest,
}

impl LedgerPosition {
    /// The position of an empty ledger.
    pub const GENESIS: LedgerPosition = LedgerPosition {
        seq: 0,
        head: Digest::ZERO,
    };
}

impl Default for LedgerPosition {
    fn default() -> Self {
        LedgerPosition::GENESIS
    }
}

/// A record as the core proposes it, before it is placed in the chain.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Draft {
    pub stream: String,
    pub kind: String,
    pub body: Value,
}

impl Draft {
    pub fn new(stream: impl Into<String>, kind: impl Into<String>, body: Value) -> Draft {
        Draft {
            stream: stream.into(),
            kind: kind.into(),
            body,
        }
    }
}

/// A sealed record: placed in the global chain and in its stream's chain.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Record {
    /// Position in the ledger, 1 for the first record.
    pub seq: u64,
    /// `hash` of the record before this one (all zeros before the first).
    pub prev: Digest,
    /// [index, count] of this record within its transaction, 1-based.
    pub txn: [u32; 2],
    pub stream: String,
    /// `hash` of the previous record of the same stream (all zeros for the first).
    pub sprev: Digest,
    pub kind: String,
    pub body: Value,
    /// SHA-256 of the canonical record without `hash` and `mac`.
    pub hash: Digest,
    /// HMAC-SHA256 under the audit key of `hash` (with a label, [`RecordKey::tag`]). Every
    /// record carries one; `None` only when reading a format-1 ledger (`bernstein ledger
    /// upgrade`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mac: Option<String>,
}

/// What [`RecordError::Format2Mac`] says.
pub const FORMAT_2_MAC: &str = "HMAC tag is a format-2 tag (over the pre-image, not the hash): this ledger was written before format 3; `bernstein ledger upgrade` re-tags it in place, no record hash changes";

/// Why bytes are not a valid record.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RecordError {
    #[error("not a JSON record: {0}")]
    Malformed(String),
    #[error("not in canonical form")]
    NotCanonical,
    #[error("hash mismatch: record content was altered")]
    HashMismatch,
    #[error(
        "HMAC tag missing: every record must carry one (a record added without the audit key, or a ledger written in format 1: `bernstein ledger upgrade` re-seals a format-1 ledger that verifies)"
    )]
    MissingMac,
    #[error("HMAC tag does not verify")]
    BadMac,
    #[error("{}", FORMAT_2_MAC)]
    Format2Mac,
}

impl From<SealError> for RecordError {
    fn from(e: SealError) -> RecordError {
        match e {
            SealError::HashMismatch => RecordError::HashMismatch,
            SealError::MissingMac => RecordError::MissingMac,
            SealError::BadMac => RecordError::BadMac,
            SealError::Format2Mac => RecordError::Format2Mac,
        }
    }
}

impl Record {
    /// Gives this sealed record another body and seals it again in its place: its position
    /// and links do not depend on its body. Only for the last record of a transaction not yet
    /// appended (a record after it would link to its old hash).
    pub fn reseal(&mut self, body: Value, key: &[u8]) {
        self.body = body;
        self.sign(&RecordKey::new(key));
    }

    /// Sets `hash` from the pre-image and `mac` from the hash. The core never puts floats in a
    /// record body; `preimage` panics if it did.
    fn sign(&mut self, key: &RecordKey) {
        self.hash = Digest::of(&self.preimage());
        self.mac = Some(render_tag(&key.tag(&self.hash)));
    }

    /// The canonical bytes that `hash` and `mac` are computed over.
    pub fn preimage(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(256);
        self.write_canonical(&mut out, false);
        out
    }

    /// The stored line: canonical JSON of the whole record plus `\n`.
    pub fn to_line(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(400);
        self.write_canonical(&mut out, true);
        out.push(b'\n');
        out
    }

    /// Writes the record's canonical JSON, with `hash` and `mac` when `sealed` (the line) or
    /// without them (the pre-image). Keys are written in their sorted order, field by field,
    /// so that no copy of the body is made; [`RecordLine::scan`] reads this exact layout and a
    /// test holds it equal to the canonical form of the serde value.
    fn write_canonical(&self, out: &mut Vec<u8>, sealed: bool) {
        fn digest(out: &mut Vec<u8>, d: &Digest) {
            out.push(b'"');
            out.extend_from_slice(d.rendered().as_str().as_bytes());
            out.push(b'"');
        }
        fn string(out: &mut Vec<u8>, s: &str) {
            serde_json::to_writer(&mut *out, s).expect("writing a string into memory cannot fail");
        }
        out.extend_from_slice(b"{\"body\":");
        write_canonical(&self.body, out).expect("record bodies are checked for floats when sealed");
        if sealed {
            out.extend_from_slice(b",\"hash\":");
            digest(out, &self.hash);
        }
        out.extend_from_slice(b",\"kind\":");
        string(out, &self.kind);
        if let (true, Some(mac)) = (sealed, &self.mac) {
            out.extend_from_slice(b",\"mac\":");
            string(out, mac);
        }
        out.extend_from_slice(b",\"prev\":");
        digest(out, &self.prev);
        out.extend_from_slice(b",\"seq\":");
        out.extend_from_slice(self.seq.to_string().as_bytes());
        out.extend_from_slice(b",\"sprev\":");
        digest(out, &self.sprev);
        out.extend_from_slice(b",\"stream\":");
        string(out, &self.stream);
        out.extend_from_slice(format!(",\"txn\":[{},{}]}}", self.txn[0], self.txn[1]).as_bytes());
    }

    /// Reads one line (without its `\n`): canonical, its hash right, its MAC present and, with
    /// `key`, right. The fast path of [`Record::parse_line`], with the same verdicts.
    pub fn from_line(line: &[u8], key: Option<&RecordKey>) -> Result<Record, RecordError> {
        let Some(raw) = RecordLine::scan(line) else {
            return Err(Self::scan_refusal(line));
        };
        raw.check(key)?;
        Self::from_checked(&raw)
    }

    /// The record of a line that [`RecordLine::check`] accepted.
    pub fn from_checked(raw: &RecordLine<'_>) -> Result<Record, RecordError> {
        let body: Value =
            serde_json::from_slice(raw.body).map_err(|e| RecordError::Malformed(e.to_string()))?;
        Ok(Record {
            seq: raw.seq,
            prev: raw.prev,
            txn: raw.txn,
            stream: raw.stream.clone().into_owned(),
            sprev: raw.sprev,
            kind: raw.kind.clone().into_owned(),
            body,
            hash: raw.hash,
            mac: raw.mac.as_ref().map(render_tag),
        })
    }

    /// Why a line the scan refused is not a record, in the reference parse's words.
    pub fn scan_refusal(line: &[u8]) -> RecordError {
        match Record::parse_line(line, None) {
            Err(e) => e,
            // The scan and the reference agree (property-tested); should they ever not, refuse.
            Ok(_) => RecordError::NotCanonical,
        }
    }

    /// The reference parse of one line (without its `\n`): serde, then re-serialization must
    /// give the line back, the hash must be right, a MAC present and, with `key`, right.
    /// [`Record::from_line`] is the same check without building intermediate values.
    pub fn parse_line(line: &[u8], key: Option<&[u8]>) -> Result<Record, RecordError> {
        let rec: Record =
            serde_json::from_slice(line).map_err(|e| RecordError::Malformed(e.to_string()))?;
        // One value serves both checks: the whole record must re-serialize to `line`, and the
        // same value without `hash` and `mac` is the pre-image (`preimage` would rebuild it).
        let mut v = serde_json::to_value(&rec).map_err(|_| RecordError::NotCanonical)?;
        if to_canonical_bytes(&v).map_err(|_| RecordError::NotCanonical)? != line {
            return Err(RecordError::NotCanonical);
        }
        let obj = v.as_object_mut().expect("a record serializes to an object");
        obj.remove("hash");
        obj.remove("mac");
        let pre = serde_json::to_vec(&v).expect("serializing a Value into memory cannot fail");
        if Digest::of(&pre) != rec.hash {
            return Err(RecordError::HashMismatch);
        }
        match &rec.mac {
            None => return Err(RecordError::MissingMac),
            Some(tag) => {
                // Only the exact lowercase rendering is valid, with or without the key.
                let well_formed = tag.strip_prefix("hmac-sha256:").is_some_and(|h| {
                    h.len() == 64 && h.bytes().all(|c| matches!(c, b'0'..=b'9' | b'a'..=b'f'))
                });
                if !well_formed {
                    return Err(RecordError::BadMac);
                }
                if let Some(k) = key {
                    let mut bytes = [0u8; 32];
                    hex::decode_to_slice(&tag["hmac-sha256:".len()..], &mut bytes)
                        .expect("checked to be 64 hex digits");
                    if !RecordKey::new(k).verifies(&rec.hash, &bytes) {
                        return Err(if verify_hmac_tag(k, &pre, tag) {
                            RecordError::Format2Mac
                        } else {
                            RecordError::BadMac
                        });
                    }
                }
            }
        }
        Ok(rec)
    }
}

/// A tag's rendering in a line: `hmac-sha256:<64 lowercase hex>`.
pub fn render_tag(tag: &[u8; 32]) -> String {
    format!("hmac-sha256:{}", hex::encode(tag))
}

/// Places `drafts` after `at`, chaining each into the ledger and into its stream.
/// `stream_head` answers the current head of a stream (ZERO when it has none yet).
///
/// Panics if a draft body holds a float: drafts are built by the core, never from raw input,
/// so a float there is a bug in the core.
pub fn seal(
    at: &LedgerPosition,
    stream_head: impl Fn(&str) -> Digest,
    drafts: Vec<Draft>,
    key: &[u8],
) -> Vec<Record> {
    let key = RecordKey::new(key);
    let count = drafts.len() as u32;
    let mut out: Vec<Record> = Vec::with_capacity(drafts.len());
    for (i, d) in drafts.into_iter().enumerate() {
        let prev = out.last().map_or(at.head, |r| r.hash);
        let sprev = out
            .iter()
            .rev()
            .find(|r| r.stream == d.stream)
            .map_or_else(|| stream_head(&d.stream), |r| r.hash);
        let mut rec = Record {
            seq: at.seq + 1 + i as u64,
            prev,
            txn: [i as u32 + 1, count],
            stream: d.stream,
            sprev,
            kind: d.kind,
            body: d.body,
            hash: Digest::ZERO,
            mac: None,
        };
        rec.sign(&key);
        out.push(rec);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn sample() -> Vec<Record> {
        let at = LedgerPosition::GENESIS;
        seal(
            &at,
            |_| Digest::ZERO,
            vec![
                Draft::new("backlog", "task.created", json!({"id": "T-1"})),
                Draft::new(
                    "audit",
                    crate::audit::CALL_KIND,
                    json!({"tool": "bernstein_run"}),
                ),
            ],
            b"key",
        )
    }

    #[test]
    fn sealed_records_chain_and_round_trip() {
        let recs = sample();
        assert_eq!(recs[0].seq, 1);
        assert_eq!(recs[1].prev, recs[0].hash);
        assert_eq!(recs[1].txn, [2, 2]);
        assert!(recs.iter().all(|r| r.mac.is_some()));
        for r in &recs {
            let line = r.to_line();
            let parsed = Record::parse_line(&line[..line.len() - 1], Some(b"key")).unwrap();
            assert_eq!(&parsed, r);
            let fast = Record::from_line(&line[..line.len() - 1], Some(&RecordKey::new(b"key")));
            assert_eq!(fast.as_ref(), Ok(r));
        }
    }

    /// The reference form: canonical JSON of the serde value, without `hash` and `mac` for the
    /// pre-image.
    fn reference(rec: &Record, sealed: bool) -> Vec<u8> {
        let mut v = serde_json::to_value(rec).unwrap();
        if !sealed {
            let obj = v.as_object_mut().unwrap();
            obj.remove("hash");
            obj.remove("mac");
        }
        to_canonical_bytes(&v).unwrap()
    }

    proptest::proptest! {
        #[test]
        fn written_fields_are_the_canonical_form(
            stream in "\\PC{0,12}",
            kind in "[a-z.\"\\\\\u{0}-\u{1f}é😀]{0,10}",
            text in "\\PC{0,20}",
            n in proptest::prelude::any::<i64>(),
            seq in proptest::prelude::any::<u64>(),
            txn in proptest::prelude::any::<[u32; 2]>(),
            mac in proptest::option::of("[ -~]{0,8}"),
        ) {
            let rec = Record {
                seq,
                prev: Digest::of(text.as_bytes()),
                txn,
                stream,
                sprev: Digest::of(kind.as_bytes()),
                kind,
                body: json!({"z": [n, text, null, {"é": true}], "A": {}, "\\": "\u{7f}"}),
                hash: Digest::of(b"h"),
                mac,
            };
            let mut line = reference(&rec, true);
            line.push(b'\n');
            proptest::prop_assert_eq!(rec.to_line(), line);
            proptest::prop_assert_eq!(rec.preimage(), reference(&rec, false));
        }
    }

    #[test]
    fn resealing_the_last_record_equals_sealing_its_body_at_once() {
        let at = LedgerPosition::GENESIS;
        let drafts = |last: Value| {
            vec![
                Draft::new("run:R", "run.created", json!({"id": "R"})),
                Draft::new("audit", crate::audit::CALL_KIND, last),
            ]
        };
        let direct = seal(&at, |_| Digest::ZERO, drafts(json!({"ok": true})), b"key");
        let mut probed = seal(&at, |_| Digest::ZERO, drafts(Value::Null), b"key");
        assert_ne!(probed, direct);
        probed[1].reseal(json!({"ok": true}), b"key");
        assert_eq!(probed, direct);
    }

    #[test]
    fn tampering_is_detected() {
        let recs = sample();
        let line = String::from_utf8(recs[1].to_line()).unwrap();
        let edited = line.trim_end().replace("bernstein_run", "bernstein_ruN");
        assert_eq!(
            Record::parse_line(edited.as_bytes(), None),
            Err(RecordError::HashMismatch)
        );
        let spaced = line.trim_end().replacen(':', ": ", 1);
        assert_eq!(
            Record::parse_line(spaced.as_bytes(), None),
            Err(RecordError::NotCanonical)
        );
        assert_eq!(
            Record::parse_line(line.trim_end().as_bytes(), Some(b"other")),
            Err(RecordError::BadMac)
        );
    }
}
