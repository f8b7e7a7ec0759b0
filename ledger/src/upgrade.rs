//! `bernstein ledger upgrade`: re-seals a format-1 ledger (where only `audit` and `mailbox:*`
//! records carried an HMAC tag) as format 2 (every record carries one).
//!
//! The hash pre-image excludes `mac`, so adding tags changes no record's hash: every run
//! handle, receipt, capsule and signed head issued before the upgrade still verifies after it.
//! A format-1 ledger is re-sealed only if it verifies by format-1 rules under the key first.
//! In format 1, an untagged record was authenticated only by a tagged record after it in the
//! same transaction (whose MAC covers `prev`, so the whole chain before it); an untagged
//! record with no tagged record after it in its transaction is exactly what a keyless forger
//! could have added, and the upgrade refuses to seal it unless told to trust it.
//! Pure: bytes in, bytes out.

use crate::digest::{hmac_tag, verify_hmac_tag};

use super::record::{Record, RecordError};
use super::verify::{LedgerVerifier, VerifyFailure, VerifyReport};
use super::{AUDIT_STREAM, MAILBOX_STREAM_PREFIX};

/// What an upgrade produced.
#[derive(Debug)]
pub struct Upgraded {
    /// The format-2 ledger.
    pub bytes: Vec<u8>,
    /// Records that gained a tag.
    pub sealed: u64,
    /// Of those, records no tagged record of their transaction covered (sealed only because
    /// the caller trusted them).
    pub trusted: Vec<u64>,
    /// The format-2 verifier's report on the result.
    pub report: VerifyReport,
}

fn keyed_in_format_1(stream: &str) -> bool {
    stream == AUDIT_STREAM || stream.starts_with(MAILBOX_STREAM_PREFIX)
}

/// Re-seals `bytes` (a whole ledger) under `key`. Refuses (naming the line) a ledger that does
/// not verify by format-1 rules, and one holding uncovered untagged records unless
/// `trust_uncovered`.
pub fn upgrade(
    bytes: &[u8],
    file: &str,
    key: &[u8],
    trust_uncovered: bool,
) -> Result<Upgraded, VerifyFailure> {
    let fail = |line: u64, seq: u64, reason: String| VerifyFailure {
        file: file.to_string(),
        line,
        seq,
        reason,
    };
    let mut out = Vec::with_capacity(bytes.len() + bytes.len() / 4);
    let mut sealed = 0;
    let mut trusted = Vec::new();
    // Untagged records of the open transaction, waiting for a tagged record to cover them.
    let mut uncovered: Vec<(u64, u64)> = Vec::new();
    let mut rest = bytes;
    let mut line_no = 0;
    while let Some(nl) = rest.iter().position(|&b| b == b'\n') {
        line_no += 1;
        let line = &rest[..nl];
        rest = &rest[nl + 1..];
        let mut rec = match Record::parse_line(line, Some(key)) {
            Ok(r) => r,
            Err(RecordError::MissingMac) => {
                let r: Record = serde_json::from_slice(line)
                    .map_err(|e| fail(line_no, 0, format!("bad record: {e}")))?;
                if keyed_in_format_1(&r.stream) {
                    return Err(fail(
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
            Err(e) => return Err(fail(line_no, 0, format!("bad record: {e}"))),
        };
        let pre = rec.preimage();
        match &rec.mac {
            Some(tag) if verify_hmac_tag(key, &pre, tag) => uncovered.clear(),
            Some(_) => {
                return Err(fail(
                    line_no,
                    rec.seq,
                    "bad record: HMAC tag does not verify".into(),
                ));
            }
            None => {
                uncovered.push((line_no, rec.seq));
                rec.mac = Some(hmac_tag(key, &pre));
                sealed += 1;
            }
        }
        if rec.txn[0] == rec.txn[1] && !uncovered.is_empty() {
            if !trust_uncovered {
                let (l, s) = uncovered[0];
                return Err(fail(
                    l,
                    s,
                    "untagged record that no tagged record of its transaction covers: it could have been added without the key (pass --trust-unsealed to seal it anyway, only if you know this ledger was not altered)".into(),
                ));
            }
            trusted.extend(uncovered.drain(..).map(|(_, s)| s));
        }
        out.extend_from_slice(&rec.to_line());
    }
    out.extend_from_slice(rest);
    // The result must pass the format-2 verifier (chains, framing, every tag).
    let mut v = LedgerVerifier::new(file, Some(key)).collect_calls(false);
    let mut r = out.as_slice();
    while let Some(nl) = r.iter().position(|&b| b == b'\n') {
        v.push_line(&r[..nl])?;
        r = &r[nl + 1..];
    }
    let report = v.finish(r)?;
    Ok(Upgraded {
        bytes: out,
        sealed,
        trusted,
        report,
    })
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
                if !keyed_in_format_1(&r.stream) {
                    r.mac = None;
                }
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
        let up = upgrade(&v1, "l", KEY, false).unwrap();
        assert_eq!(up.sealed, 2);
        let report = verify_ledger(&up.bytes, "l", Some(KEY)).unwrap();
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
        assert_eq!(upgrade(&v1, "l", KEY, true).unwrap().trusted, vec![2]);
        assert!(upgrade(&v1, "l", b"other", true).is_err());
    }
}
