//! Tests of the offline verifier: fixed cases, then properties over generated ledgers (every
//! edit, removal, duplication, reordering and truncation is named at its first affected line).

use std::collections::HashMap;

use proptest::prelude::*;
use serde_json::json;

use super::*;
use crate::{Draft, seal};

const KEY: &[u8] = b"verifier-test-key";

/// Seals `txns` one after another from genesis and returns the records.
fn build(txns: Vec<Vec<Draft>>) -> Vec<Record> {
    build_under(KEY, txns)
}

/// [`build`] under `key` (the findings verifier's tests use their own).
pub(crate) fn build_under(key: &[u8], txns: Vec<Vec<Draft>>) -> Vec<Record> {
    let mut at = LedgerPosition::GENESIS;
    let mut heads: HashMap<String, Digest> = HashMap::new();
    let mut out = Vec::new();
    for drafts in txns {
        let recs = seal(
            &at,
            |s| heads.get(s).copied().unwrap_or(Digest::ZERO),
            drafts,
            key,
        );
        for r in &recs {
            heads.insert(r.stream.clone(), r.hash);
            at = LedgerPosition {
                seq: r.seq,
                head: r.hash,
            };
        }
        out.extend(recs);
    }
    out
}

pub(crate) fn lines(recs: &[Record]) -> Vec<Vec<u8>> {
    recs.iter().map(Record::to_line).collect()
}

pub(crate) fn join(lines: &[Vec<u8>]) -> Vec<u8> {
    lines.concat()
}

fn call(tool: &str, id: &str, ok: bool) -> Draft {
    Draft::new(
        "audit",
        CALL_KIND,
        json!({"tool": tool, "call_id": id, "ok": ok}),
    )
}

fn sample() -> Vec<Record> {
    build(vec![
        vec![
            Draft::new("backlog", "task.created", json!({"id": "T-1"})),
            Draft::new("run:R-1", "run.started", json!({"task": "T-1"})),
            call("bernstein_run", "c1", true),
        ],
        vec![call("bernstein_status", "c2", true)],
        vec![call("bernstein_cancel", "c3", false)],
    ])
}

#[test]
fn clean_ledger_reports_calls_in_order() {
    let recs = sample();
    let bytes = join(&lines(&recs));
    let report = verify_ledger(&bytes, "ledger.jsonl", Some(KEY)).unwrap();
    assert_eq!(report.records, 5);
    assert_eq!(report.transactions, 3);
    assert_eq!(report.keyed_records, 5);
    assert!(report.macs_checked);
    assert_eq!(
        report.head,
        LedgerPosition {
            seq: 5,
            head: recs[4].hash
        }
    );
    let tools: Vec<_> = report
        .calls
        .iter()
        .map(|c| (c.seq, c.tool.as_str(), c.call_id.as_str(), c.ok))
        .collect();
    assert_eq!(
        tools,
        vec![
            (3, "bernstein_run", "c1", true),
            (4, "bernstein_status", "c2", true),
            (5, "bernstein_cancel", "c3", false)
        ]
    );
    assert_eq!(report.streams["audit"].records, 3);
    assert_eq!(report.kinds[CALL_KIND], 3);
    assert!(
        report
            .summary()
            .starts_with("OK: 5 records in 3 transactions, 3 calls; head seq 5 sha256:")
    );
}

#[test]
fn empty_ledger_is_clean() {
    let report = verify_ledger(b"", "l", None).unwrap();
    assert_eq!(report.records, 0);
    assert_eq!(report.head, LedgerPosition::GENESIS);
    assert!(report.summary().contains("NOT verified"));
}

#[test]
fn without_key_macs_are_not_checked() {
    // A record whose tag was made under another key passes without a key, fails with ours.
    let mut recs = build(vec![vec![call("x", "y", true)]]);
    recs[0].mac = Some(crate::digest::hmac_tag(b"other key", &recs[0].preimage()));
    let bytes = join(&lines(&recs));
    let report = verify_ledger(&bytes, "l", None).unwrap();
    assert!(!report.macs_checked);
    let err = verify_ledger(&bytes, "l", Some(KEY)).unwrap_err();
    assert_eq!((err.line, err.seq), (1, 1));
    assert!(err.reason.contains("HMAC"), "{}", err.reason);
}

#[test]
fn mac_hex_case_is_not_malleable() {
    let recs = build(vec![vec![call("bernstein_run", "c1", true)]]);
    let line = String::from_utf8(recs[0].to_line()).unwrap();
    let tag = recs[0].mac.clone().unwrap();
    let upper = format!("hmac-sha256:{}", tag["hmac-sha256:".len()..].to_uppercase());
    if upper != tag {
        let edited = line.replace(&tag, &upper);
        let err = verify_ledger(edited.as_bytes(), "l", Some(KEY)).unwrap_err();
        assert_eq!(err.line, 1);
    }
}

#[test]
fn framing_rules() {
    let mut f = TxnFraming::default();
    assert_eq!(f.check([1, 1]), Ok(true));
    assert_eq!(f.check([1, 2]), Ok(false));
    assert!(f.in_transaction());
    assert!(
        f.check([1, 2])
            .unwrap_err()
            .contains("expected record 2 of 2")
    );
    let mut f = TxnFraming::default();
    assert!(f.check([2, 2]).is_err());
    assert!(f.check([1, 0]).is_err());
    assert!(f.check([0, 1]).is_err());
}

#[test]
fn check_extends_names_the_first_bad_record() {
    let recs = sample();
    let snap = Snapshot::<()>::genesis();
    assert_eq!(check_extends(&snap, &recs), Ok(()));
    assert_eq!(check_extends(&snap, &recs[..2]).unwrap_err().0, 2);
    assert_eq!(check_extends(&snap, &recs[1..]).unwrap_err().0, 0);
    let mut swapped = recs.clone();
    swapped.swap(3, 4);
    assert_eq!(check_extends(&snap, &swapped).unwrap_err().0, 3);
}

#[test]
fn unterminated_and_truncated_tails() {
    let recs = sample();
    let all = lines(&recs);
    // Cut in the middle of line 4.
    let mut bytes = join(&all[..3]);
    bytes.extend_from_slice(&all[3][..10]);
    let err = verify_ledger(&bytes, "l", None).unwrap_err();
    assert_eq!((err.line, err.seq), (4, 4));
    assert!(err.reason.contains("no newline"));
    // Cut inside the first transaction at a line boundary: the missing line 3 is named.
    let err = verify_ledger(&join(&all[..2]), "l", None).unwrap_err();
    assert_eq!((err.line, err.seq), (3, 3));
    assert!(err.reason.contains("inside a transaction"));
}

#[test]
fn anchor_catches_whole_transactions_cut_off() {
    let recs = sample();
    let all = lines(&recs);
    let anchor = LedgerPosition {
        seq: 5,
        head: recs[4].hash,
    };
    let report = verify_ledger_anchored(&join(&all), "l", Some(KEY), Some(anchor)).unwrap();
    assert_eq!(report.anchor, Some(anchor));
    let err = verify_ledger_anchored(&join(&all[..4]), "l", Some(KEY), Some(anchor)).unwrap_err();
    assert_eq!((err.line, err.seq), (5, 5));
    let bad_anchor = LedgerPosition {
        seq: 4,
        head: recs[4].hash,
    };
    let err = verify_ledger_anchored(&join(&all), "l", Some(KEY), Some(bad_anchor)).unwrap_err();
    assert_eq!(err.line, 4);
}

#[test]
fn failure_display_names_file_line_and_seq() {
    let f = VerifyFailure {
        file: ".sdd/ledger/ledger.jsonl".into(),
        line: 7,
        seq: 7,
        reason: "bad".into(),
    };
    assert_eq!(f.to_string(), ".sdd/ledger/ledger.jsonl:7 (seq 7): bad");
}

// ---- properties over generated ledgers ----

fn arb_draft() -> impl Strategy<Value = Draft> {
    let stream = prop_oneof![
        Just("backlog".to_string()),
        Just("audit".to_string()),
        Just("run:R-1".to_string()),
        Just("run:R-2".to_string()),
        Just("mailbox:T-1".to_string()),
    ];
    (
        stream,
        "[a-z.]{1,12}",
        "[ -~é\n\"\\\\]{0,16}",
        any::<i64>(),
        any::<bool>(),
    )
        .prop_map(|(s, kind, text, n, b)| {
            Draft::new(
                s,
                kind,
                json!({"text": text, "n": n, "ok": b, "tool": "t", "call_id": "c"}),
            )
        })
}

fn arb_ledger() -> impl Strategy<Value = Vec<Record>> {
    prop::collection::vec(prop::collection::vec(arb_draft(), 1..4), 1..6).prop_map(build)
}

/// (ledger, line index, byte index within the line including its `\n`, xor mask)
fn arb_flip() -> impl Strategy<Value = (Vec<Record>, usize, usize, u8)> {
    arb_ledger().prop_flat_map(|recs| {
        let n = recs.len();
        (Just(recs), 0..n, any::<prop::sample::Index>(), 1u8..=255).prop_map(
            |(recs, i, at, mask)| {
                let len = recs[i].to_line().len();
                (recs, i, at.index(len), mask)
            },
        )
    })
}

fn head_of(recs: &[Record]) -> LedgerPosition {
    recs.last()
        .map_or(LedgerPosition::GENESIS, |r| LedgerPosition {
            seq: r.seq,
            head: r.hash,
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn generated_ledgers_verify(recs in arb_ledger()) {
        let report = verify_ledger(&join(&lines(&recs)), "l", Some(KEY)).unwrap();
        prop_assert_eq!(report.records, recs.len() as u64);
        prop_assert_eq!(report.head, head_of(&recs));
    }

    /// Flipping any byte of line i (its `\n` included) fails at line i exactly: a flipped
    /// `\n` merges line i with the next (or leaves the last line unterminated), so the bad
    /// line is still line i.
    #[test]
    fn any_flipped_byte_fails_at_its_line((recs, i, at, mask) in arb_flip()) {
        let mut all = lines(&recs);
        all[i][at] ^= mask;
        let err = verify_ledger(&join(&all), "l", Some(KEY)).unwrap_err();
        prop_assert_eq!(err.line, i as u64 + 1, "{}", err.reason);
        prop_assert_eq!(err.seq, i as u64 + 1);
    }

    #[test]
    fn a_removed_record_fails_where_it_stood(recs in arb_ledger(), pick in any::<prop::sample::Index>()) {
        let i = pick.index(recs.len());
        let mut all = lines(&recs);
        all.remove(i);
        let bytes = join(&all);
        let last_txn_single = i + 1 == recs.len() && recs[i].txn == [1, 1];
        match verify_ledger(&bytes, "l", Some(KEY)) {
            Ok(_) => prop_assert!(last_txn_single, "removal of line {} not detected", i + 1),
            Err(err) => prop_assert_eq!((err.line, err.seq), (i as u64 + 1, i as u64 + 1)),
        }
        // With the store's anchor even a whole last transaction's removal is named.
        let err = verify_ledger_anchored(&bytes, "l", Some(KEY), Some(head_of(&recs))).unwrap_err();
        prop_assert_eq!((err.line, err.seq), (i as u64 + 1, i as u64 + 1));
    }

    #[test]
    fn a_duplicated_record_fails_at_the_copy(recs in arb_ledger(), pick in any::<prop::sample::Index>()) {
        let i = pick.index(recs.len());
        let mut all = lines(&recs);
        all.insert(i + 1, all[i].clone());
        let err = verify_ledger(&join(&all), "l", Some(KEY)).unwrap_err();
        prop_assert_eq!((err.line, err.seq), (i as u64 + 2, i as u64 + 2));
    }

    #[test]
    fn moved_records_fail_at_the_first_displaced_line(
        recs in arb_ledger(), a in any::<prop::sample::Index>(), b in any::<prop::sample::Index>()
    ) {
        prop_assume!(recs.len() >= 2);
        let (i, j) = (a.index(recs.len()), b.index(recs.len()));
        prop_assume!(i != j);
        let mut all = lines(&recs);
        let moved = all.remove(i);
        all.insert(j, moved);
        let first = i.min(j) as u64 + 1;
        let err = verify_ledger(&join(&all), "l", Some(KEY)).unwrap_err();
        prop_assert_eq!((err.line, err.seq), (first, first));
    }

    #[test]
    fn truncation_inside_the_last_transaction_is_named(recs in arb_ledger(), cut in any::<prop::sample::Index>()) {
        let all = lines(&recs);
        let bytes = join(&all);
        let last_start = recs.iter().rposition(|r| r.txn[0] == 1).unwrap();
        let start_off: usize = all[..last_start].iter().map(Vec::len).sum();
        // Every cut strictly inside the last transaction.
        let c = start_off + 1 + cut.index(bytes.len() - start_off - 1);
        let truncated = &bytes[..c];
        let complete_lines = truncated.iter().filter(|&&b| b == b'\n').count() as u64;
        let err = verify_ledger(truncated, "l", Some(KEY)).unwrap_err();
        prop_assert_eq!((err.line, err.seq), (complete_lines + 1, complete_lines + 1));
        // Cutting at the transaction boundary leaves a clean ledger.
        prop_assert!(verify_ledger(&bytes[..start_off], "l", Some(KEY)).is_ok());
    }
}

/// Attack 1 of the security review: a hand-made transaction with its SHA-256 recomputed and no
/// key, on any stream, at the start, in the middle or at the tail, is refused at its line.
#[test]
fn a_keyless_record_is_refused_wherever_it_stands() {
    let recs = sample();
    for stream in ["backlog", "run:R-1", "audit", "mailbox:T-1"] {
        for at in 0..=recs.len() {
            // Re-seal everything from `at` on, with the forged record inserted there, the way
            // an attacker without the key would: hashes right, MACs made up or absent.
            let mut drafts: Vec<Draft> = recs
                .iter()
                .map(|r| Draft::new(r.stream.clone(), r.kind.clone(), r.body.clone()))
                .collect();
            drafts.insert(
                at,
                Draft::new(
                    stream,
                    "task.status",
                    json!({"id": "T-1", "to": "cancelled", "actor": "mallory"}),
                ),
            );
            let mut forged = build(drafts.into_iter().map(|d| vec![d]).collect());
            let keep = forged[..at].to_vec();
            for (i, r) in forged.iter_mut().enumerate().skip(at) {
                r.mac = if i % 2 == 0 {
                    None
                } else {
                    Some(crate::digest::hmac_tag(b"guess", &r.preimage()))
                };
            }
            forged[..at].clone_from_slice(&keep);
            let err = verify_ledger(&join(&lines(&forged)), "l", Some(KEY)).unwrap_err();
            assert_eq!(err.line as usize, at + 1, "{stream} at {at}: {err}");
            assert!(err.reason.contains("HMAC"), "{err}");
            // Without the key a missing tag is still refused; a made-up one cannot be told.
            if at % 2 == 0 {
                let err = verify_ledger(&join(&lines(&forged)), "l", None).unwrap_err();
                assert_eq!(err.line as usize, at + 1, "{stream} at {at}: {err}");
            }
        }
    }
}

#[test]
fn a_foreign_key_is_named_as_a_key_mismatch() {
    let bytes = join(&lines(&sample()));
    let err = verify_ledger(&bytes, "l", Some(b"another instance's key")).unwrap_err();
    assert_eq!((err.line, err.seq), (1, 1));
    assert_eq!(err.reason, KEY_MISMATCH);
}

/// The verdict of feeding `bytes` one line at a time through `push_line`, the path that looks
/// for each line's end first.
fn line_by_line(bytes: &[u8]) -> Result<VerifyReport, VerifyFailure> {
    let mut v = LedgerVerifier::new("l", Some(KEY));
    let mut rest = bytes;
    while let Some(nl) = rest.iter().position(|&b| b == b'\n') {
        v.push_line(&rest[..nl])?;
        rest = &rest[nl + 1..];
    }
    v.finish(rest)
}

/// The verdict of feeding `bytes` to `push_bytes` in pieces cut at `cuts` (what a file read in
/// chunks looks like), each piece up to its last `\n`, the rest carried over.
fn in_pieces(bytes: &[u8], cuts: &[usize]) -> Result<VerifyReport, VerifyFailure> {
    let mut v = LedgerVerifier::new("l", Some(KEY));
    let mut pending = Vec::new();
    let mut ends: Vec<usize> = cuts.iter().map(|c| c % (bytes.len() + 1)).collect();
    ends.sort_unstable();
    ends.push(bytes.len());
    let mut from = 0;
    for end in ends {
        pending.extend_from_slice(&bytes[from..end.max(from)]);
        from = end.max(from);
        let used = v.push_bytes(&pending)?;
        pending.drain(..used);
    }
    v.finish(&pending)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// `push_bytes`, whole or in pieces, and `push_line` give the same verdict on every edit,
    /// inserted byte and cut of a ledger: the same report, or the same failure at the same
    /// line for the same reason.
    #[test]
    fn pieces_and_lines_agree(
        (recs, i, at, mask) in arb_flip(),
        edit in 0..4u8,
        cuts in prop::collection::vec(any::<usize>(), 0..6),
    ) {
        let mut all = lines(&recs);
        match edit {
            0 => {}
            1 => all[i][at] ^= mask,
            2 => all[i].insert(at, mask),
            _ => all[i].truncate(at),
        }
        let bytes = join(&all);
        let reference = line_by_line(&bytes);
        prop_assert_eq!(&verify_ledger(&bytes, "l", Some(KEY)), &reference);
        prop_assert_eq!(&in_pieces(&bytes, &cuts), &reference);
    }
}

/// Lines that are no records, however they end, are named by the reference parse's reason at
/// their own line when fed as bytes.
#[test]
fn refused_lines_in_a_buffer_are_named_like_single_lines() {
    let recs = sample();
    let good = lines(&recs);
    let bad: [&[u8]; 7] = [
        b"",
        b"{}",
        b"not json",
        b"{\"body\":{\"a\":1},\"hash\":",
        b"{\"body\":{\"a\": 1}}",
        b"\xff\xfe",
        b"{\"body\":\"\n",
    ];
    for junk in bad {
        let mut bytes = join(&good[..2]);
        bytes.extend_from_slice(junk);
        bytes.push(b'\n');
        bytes.extend_from_slice(&join(&good[2..]));
        let reference = line_by_line(&bytes).unwrap_err();
        assert_eq!(reference.line, 3, "{:?}", String::from_utf8_lossy(junk));
        assert_eq!(
            verify_ledger(&bytes, "l", Some(KEY)).unwrap_err(),
            reference
        );
    }
}

/// Stream summaries come out in name order, names that begin one another and long shared
/// prefixes included.
#[test]
fn stream_summaries_are_in_name_order() {
    let names = [
        "run:T-0000000000000000b",
        "run:T-0000000000000000a",
        "run:T-000000000000000",
        "run:T-00000000000000000",
        "audit",
        "a",
        "run:",
        "run:T-é",
    ];
    let recs = build(
        names
            .iter()
            .map(|s| vec![Draft::new(*s, "k", json!({}))])
            .collect(),
    );
    let report = verify_ledger(&join(&lines(&recs)), "l", Some(KEY)).unwrap();
    let got: Vec<&str> = report.streams.keys().map(String::as_str).collect();
    let mut want = names.to_vec();
    want.sort_unstable();
    assert_eq!(got, want);
}
