//! `bernstein ledger upgrade`: re-tags an older ledger in the current format 3, where every
//! record carries an HMAC tag of its hash.
//!
//! - Format 2 tagged every record with an HMAC of its pre-image: each such tag is checked and
//!   replaced.
//! - Format 1 tagged only `audit` and `mailbox:*` records (also over the pre-image). An
//!   untagged record was authenticated only by a tagged record after it in the same
//!   transaction (whose MAC covers `prev`, so the whole chain before it); an untagged record
//!   with no tagged record after it in its transaction is exactly what a keyless forger could
//!   have added, and the upgrade refuses to seal it unless told to trust it.
//!
//! The hash pre-image excludes `mac`, so re-tagging changes no record's hash: every run
//! handle, receipt, capsule and signed head issued before the upgrade still verifies after it.
//! Every record must verify under the key by its own format's rules first, and the result must
//! verify as format 3. Pure: bytes in, bytes out.

use crate::digest::verify_hmac_tag;
use crate::line::RecordKey;

use super::record::{Record, RecordError, render_tag};
use super::verify::{LedgerVerifier, VerifyFailure, VerifyReport};
use super::{AUDIT_STREAM, MAILBOX_STREAM_PREFIX};

/// What an upgrade did.
#[derive(Debug)]
pub struct Upgraded {
    /// Records whose format-1 or format-2 tag (over the pre-image) was replaced.
    pub retagged: u64,
    /// Untagged (format-1) records that gained a tag.
    pub sealed: u64,
    /// Of those, records no tagged record of their transaction covered (sealed only because
    /// the caller trusted them).
    pub trusted: Vec<u64>,
    /// The format-3 verifier's report on the result.
    pub report: VerifyReport,
}

impl Upgraded {
    /// Whether the ledger already was format 3: the upgrade changed no byte.
    pub fn changed_nothing(&self) -> bool {
        self.retagged == 0 && self.sealed == 0
    }
}

fn keyed_in_format_1(stream: &str) -> bool {
    stream == AUDIT_STREAM || stream.starts_with(MAILBOX_STREAM_PREFIX)
}

/// An upgrade fed one line at a time, so a ledger of any size is upgraded in constant memory:
/// each line is checked by its own format's rules and handed back re-tagged, and the result is
/// verified by format-3 rules as it is produced.
pub struct Upgrader {
    file: String,
    key: Vec<u8>,
    record_key: RecordKey,
    trust_uncovered: bool,
    retagged: u64,
    sealed: u64,
    trusted: Vec<u64>,
    /// Untagged records of the open transaction, waiting for a tagged record to cover them.
    uncovered: Vec<(u64, u64)>,
    line_no: u64,
    verifier: LedgerVerifier,
}

impl Upgrader {
    /// An upgrade of the ledger named `file` under `key`; it refuses uncovered untagged
    /// records unless `trust_uncovered`.
    pub fn new(file: &str, key: &[u8], trust_uncovered: bool) -> Upgrader {
        Upgrader {
            file: file.to_string(),
            key: key.to_vec(),
            record_key: RecordKey::new(key),
            trust_uncovered,
            retagged: 0,
            sealed: 0,
            trusted: Vec::new(),
            uncovered: Vec::new(),
            line_no: 0,
            verifier: LedgerVerifier::new(file, Some(key)).collect_calls(false),
        }
    }

    fn fail(&self, line: u64, seq: u64, reason: String) -> VerifyFailure {
        VerifyFailure {
            file: self.file.clone(),
            line,
            seq,
            reason,
        }
    }

    /// Re-tags the next line (without its `\n`) and returns it with its `\n`. Refuses (naming
    /// the line) a record that verifies by no format's rules, and an uncovered untagged record
    /// unless trusted.
    pub fn push_line(&mut self, line: &[u8]) -> Result<Vec<u8>, VerifyFailure> {
        self.line_no += 1;
        let line_no = self.line_no;
        // Canonical, hash right, a well-formed tag or none; the tag is checked below.
        let mut rec = match Record::parse_line(line, None) {
            Ok(r) => r,
            Err(RecordError::MissingMac) => {
                let r: Record = serde_json::from_slice(line)
                    .map_err(|e| self.fail(line_no, line_no, format!("bad record: {e}")))?;
                if keyed_in_format_1(&r.stream) {
                    return Err(self.fail(
                        line_no,
                        r.seq,
                        format!(
                            "bad record: HMAC tag missing on stream {:?}, which carried one in format 1 too",
                            r.stream
                        ),
                    ));
                }
                r
            }
            Err(e) => return Err(self.fail(line_no, line_no, format!("bad record: {e}"))),
        };
        let tag = rec.mac.as_deref().map(|t| {
            let mut bytes = [0u8; 32];
            hex::decode_to_slice(&t["hmac-sha256:".len()..], &mut bytes)
                .expect("the parse checked the tag's rendering");
            bytes
        });
        match (&rec.mac, tag) {
            (Some(_), Some(t)) if self.record_key.verifies(&rec.hash, &t) => {
                self.uncovered.clear();
            }
            (Some(old), _) if verify_hmac_tag(&self.key, &rec.preimage(), old) => {
                self.uncovered.clear();
                rec.mac = Some(render_tag(&self.record_key.tag(&rec.hash)));
                self.retagged += 1;
            }
            (Some(_), _) => {
                return Err(self.fail(
                    line_no,
                    rec.seq,
                    "bad record: HMAC tag does not verify, by format 3 rules nor by an earlier format's".into(),
                ));
            }
            (None, _) => {
                self.uncovered.push((line_no, rec.seq));
                rec.mac = Some(render_tag(&self.record_key.tag(&rec.hash)));
                self.sealed += 1;
            }
        }
        if rec.txn[0] == rec.txn[1] && !self.uncovered.is_empty() {
            if !self.trust_uncovered {
                let (l, s) = self.uncovered[0];
                return Err(self.fail(
                    l,
                    s,
                    "untagged record that no tagged record of its transaction covers: it could have been added without the key (pass --trust-unsealed to seal it anyway, only if you know this ledger was not altered)".into(),
                ));
            }
            self.trusted
                .extend(self.uncovered.drain(..).map(|(_, s)| s));
        }
        let out = rec.to_line();
        // The result must pass the format-3 verifier (chains, framing, every tag).
        self.verifier.push_line(&out[..out.len() - 1])?;
        Ok(out)
    }

    /// The verdict once every line was pushed; `unterminated` is what followed the last `\n`.
    pub fn finish(self, unterminated: &[u8]) -> Result<Upgraded, VerifyFailure> {
        let report = self.verifier.finish(unterminated)?;
        Ok(Upgraded {
            retagged: self.retagged,
            sealed: self.sealed,
            trusted: self.trusted,
            report,
        })
    }
}

/// Re-tags `bytes` (a whole ledger) under `key`: the new ledger and what was done. See
/// [`Upgrader`].
pub fn upgrade(
    bytes: &[u8],
    file: &str,
    key: &[u8],
    trust_uncovered: bool,
) -> Result<(Vec<u8>, Upgraded), VerifyFailure> {
    let mut up = Upgrader::new(file, key, trust_uncovered);
    let mut out = Vec::with_capacity(bytes.len());
    let mut rest = bytes;
    while let Some(nl) = rest.iter().position(|&b| b == b'\n') {
        out.extend(up.push_line(&rest[..nl])?);
        rest = &rest[nl + 1..];
    }
    let done = up.finish(rest)?;
    Ok((out, done))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::verify::verify_ledger;
    use crate::{Draft, LedgerPosition, seal};

    const KEY: &[u8] = b"upgrade-key";

    /// A format-1 ledger: one transaction per entry of `txns`, unkeyed streams untagged.
    fn format_1(txns: &[&[&str]]) -> Vec<u8> {
        older(txns, true)
    }

    /// A ledger in format 1 (`untag`: unkeyed streams untagged) or 2 (every record tagged),
    /// each tag over the pre-image.
    fn older(txns: &[&[&str]], untag: bool) -> Vec<u8> {
        let mut at = LedgerPosition::GENESIS;
        let mut heads = std::collections::HashMap::new();
        let mut out = Vec::new();
        for streams in txns {
            let drafts = streams
                .iter()
                .map(|s| Draft::new(*s, "note", json!({"s": s})))
                .collect();
            let recs = seal(
                &at,
                |s| heads.get(s).copied().unwrap_or_default(),
                drafts,
                KEY,
            );
            for mut r in recs {
                heads.insert(r.stream.clone(), r.hash);
                at = LedgerPosition {
                    seq: r.seq,
                    head: r.hash,
                };
                r.mac = if untag && !keyed_in_format_1(&r.stream) {
                    None
                } else {
                    Some(crate::digest::hmac_tag(KEY, &r.preimage()))
                };
                out.extend(r.to_line());
            }
        }
        out
    }

    #[test]
    fn reseals_covered_records_and_keeps_every_hash() {
        let v1 = format_1(&[&["backlog", "run:R", "audit"], &["audit"]]);
        assert!(
            verify_ledger(&v1, "l", Some(KEY)).is_err(),
            "format 1 is refused"
        );
        let (bytes, up) = upgrade(&v1, "l", KEY, false).unwrap();
        assert_eq!((up.retagged, up.sealed), (2, 2));
        let report = verify_ledger(&bytes, "l", Some(KEY)).unwrap();
        assert_eq!(report.head, up.report.head);
        let old: Vec<Record> = v1
            .split(|b| *b == b'\n')
            .filter(|l| !l.is_empty())
            .map(|l| serde_json::from_slice(l).unwrap())
            .collect();
        assert_eq!(report.head.head, old.last().unwrap().hash);
    }

    #[test]
    fn refuses_uncovered_records_unless_trusted_and_a_bad_tag_always() {
        let v1 = format_1(&[&["audit"], &["backlog"]]);
        let err = upgrade(&v1, "l", KEY, false).unwrap_err();
        assert_eq!((err.line, err.seq), (2, 2));
        assert!(err.reason.contains("--trust-unsealed"), "{err}");
        assert_eq!(upgrade(&v1, "l", KEY, true).unwrap().1.trusted, vec![2]);
        assert!(upgrade(&v1, "l", b"other", true).is_err());
    }

    #[test]
    fn retags_a_format_2_ledger_and_keeps_every_hash() {
        let v2 = older(&[&["backlog", "run:R", "audit"], &["audit"]], false);
        let err = verify_ledger(&v2, "l", Some(KEY)).unwrap_err();
        assert_eq!(err.line, 1);
        assert!(err.reason.contains("format-2 tag"), "{err}");
        assert!(err.reason.contains("bernstein ledger upgrade"), "{err}");
        let (bytes, up) = upgrade(&v2, "l", KEY, false).unwrap();
        assert_eq!((up.retagged, up.sealed), (4, 0));
        assert!(!up.changed_nothing());
        let report = verify_ledger(&bytes, "l", Some(KEY)).unwrap();
        let hashes = |b: &[u8]| -> Vec<_> {
            b.split(|c| *c == b'\n')
                .filter(|l| !l.is_empty())
                .map(|l| serde_json::from_slice::<Record>(l).unwrap().hash)
                .collect()
        };
        assert_eq!(hashes(&bytes), hashes(&v2));
        assert_eq!(report.head, up.report.head);
        // Already current: upgrading again changes nothing.
        let (same, again) = upgrade(&bytes, "l", KEY, false).unwrap();
        assert!(again.changed_nothing());
        assert_eq!(same, bytes);
        // A torn last line is refused, not carried over.
        let mut torn = v2.clone();
        torn.extend_from_slice(b"{\"body\"");
        let err = upgrade(&torn, "l", KEY, false).unwrap_err();
        assert!(err.reason.contains("truncated"), "{err}");
        // A format-2 tag made under another key is refused, naming its line.
        let mut forged: Vec<Record> = v2
            .split(|c| *c == b'\n')
            .filter(|l| !l.is_empty())
            .map(|l| serde_json::from_slice(l).unwrap())
            .collect();
        forged[2].mac = Some(crate::digest::hmac_tag(b"other", &forged[2].preimage()));
        let bytes: Vec<u8> = forged.iter().flat_map(Record::to_line).collect();
        let err = upgrade(&bytes, "l", KEY, false).unwrap_err();
        assert_eq!((err.line, err.seq), (3, 3));
    }
}
