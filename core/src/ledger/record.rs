//! One ledger record: the unit of the hash chain. Records are stored one per line as canonical
//! JSON; a request's records form one transaction (`txn` = [index, count], 1-based) that is
//! committed whole or not at all.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::canonical::to_canonical_bytes;
use crate::digest::{Digest, hmac_tag, verify_hmac_tag};

use super::snapshot::LedgerPosition;
use super::stream_is_keyed;

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
    /// HMAC-SHA256 of the same pre-image, on keyed streams (audit, mailboxes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mac: Option<String>,
}

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
    #[error("HMAC tag missing on a keyed stream")]
    MissingMac,
    #[error("HMAC tag does not verify")]
    BadMac,
    #[error("unexpected HMAC tag on an unkeyed stream")]
    UnexpectedMac,
}

impl Record {
    /// The canonical bytes that `hash` and `mac` are computed over.
    pub fn preimage(&self) -> Vec<u8> {
        let mut v = serde_json::to_value(self).expect("a record always serializes");
        let obj = v.as_object_mut().expect("a record serializes to an object");
        obj.remove("hash");
        obj.remove("mac");
        to_canonical_bytes(&v).expect("record bodies are checked for floats when sealed")
    }

    /// The stored line: canonical JSON of the whole record plus `\n`.
    pub fn to_line(&self) -> Vec<u8> {
        let v = serde_json::to_value(self).expect("a record always serializes");
        let mut bytes =
            to_canonical_bytes(&v).expect("record bodies are checked for floats when sealed");
        bytes.push(b'\n');
        bytes
    }

    /// Parses one line (without its `\n`) and checks it is canonical and its hash is right.
    /// The MAC is checked only when `key` is given.
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
        match (&rec.mac, stream_is_keyed(&rec.stream)) {
            (None, true) => return Err(RecordError::MissingMac),
            (Some(_), false) => return Err(RecordError::UnexpectedMac),
            (Some(tag), true) => {
                if let Some(k) = key
                    && !verify_hmac_tag(k, &pre, tag)
                {
                    return Err(RecordError::BadMac);
                }
            }
            (None, false) => {}
        }
        Ok(rec)
    }
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
        // The core never puts floats in a record body; `preimage` panics if it did.
        let pre = rec.preimage();
        rec.hash = Digest::of(&pre);
        if stream_is_keyed(&rec.stream) {
            rec.mac = Some(hmac_tag(key, &pre));
        }
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
                    "mcp.stateless_call",
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
        assert!(recs[0].mac.is_none());
        assert!(recs[1].mac.is_some());
        for r in &recs {
            let line = r.to_line();
            let parsed = Record::parse_line(&line[..line.len() - 1], Some(b"key")).unwrap();
            assert_eq!(&parsed, r);
        }
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
