//! Witnesses against generated ledgers: one issued before a cut proves the cut, one issued
//! after a cut-and-re-extend proves the rewrite, and a sound ledger satisfies all of them.

use serde_json::json;

use super::*;
use crate::Snapshot;
use crate::signed_head::sign_head;
use bernstein_core::ledger::verify::LedgerVerifier;
use bernstein_core::ledger::{Draft, Record, seal};
use bernstein_core::signing::Signer;

const KEY: &[u8] = b"witness-key";

/// `n` one-record transactions after `snap`, alternating backlog and audit records; returns
/// the records and the snapshot after each.
fn grow(snap: &mut Snapshot, n: usize, tag: &str) -> Vec<(Record, Snapshot)> {
    let mut out = Vec::new();
    for i in 0..n {
        let stream = if i % 2 == 0 { "backlog" } else { "audit" };
        let recs = seal(
            &snap.position,
            |s| snap.stream_head(s),
            vec![Draft::new(stream, "note", json!({"i": i, "tag": tag}))],
            KEY,
        );
        snap.apply(&recs[0]).unwrap();
        out.push((recs[0].clone(), snap.clone()));
    }
    out
}

fn verify(lines: &[Record], w: &Witness) -> Result<(), String> {
    let mut v = LedgerVerifier::new("l", Some(KEY)).watch(w.hashes());
    for r in lines {
        let line = r.to_line();
        v.push_line(&line[..line.len() - 1]).unwrap();
    }
    w.check(&v.finish(&[]).unwrap())
}

#[test]
fn a_signed_head_proves_truncation_and_rewriting() {
    let signer = Signer::from_seed(&[3; 32]);
    let mut snap = Snapshot::genesis();
    let first = grow(&mut snap, 10, "a");
    let records: Vec<Record> = first.iter().map(|(r, _)| r.clone()).collect();
    let head = serde_json::to_value(sign_head(&first[7].1, &signer)).unwrap();
    let w = witness_from_json("head.json", &head, Some(signer.public_key_pem())).unwrap();
    assert_eq!(w.kind, "signed head");
    verify(&records, &w).unwrap();

    // Cut back to seq 5: the head at seq 8 is gone.
    let err = verify(&records[..5], &w).unwrap_err();
    assert!(
        err.starts_with("ledger rewritten or truncated after seq"),
        "{err}"
    );
    assert!(err.contains("witnessed by head.json"), "{err}");

    // Cut back to seq 5 and re-extended past seq 8 with other records.
    let mut snap = first[4].1.clone();
    let mut rewritten = records[..5].to_vec();
    rewritten.extend(grow(&mut snap, 6, "b").into_iter().map(|(r, _)| r));
    let err = verify(&rewritten, &w).unwrap_err();
    assert!(err.contains("after seq"), "{err}");

    // Saved inside a tools/call result as a JSON text block.
    let wrapped = json!({"result": {"content": [{"type": "text", "text": head.to_string()}]}});
    witness_from_json("wrapped.json", &wrapped, None).unwrap();
}

#[test]
fn a_forged_or_foreign_witness_is_refused_on_its_own() {
    let signer = Signer::from_seed(&[3; 32]);
    let mut snap = Snapshot::genesis();
    let first = grow(&mut snap, 2, "a");
    let mut head = serde_json::to_value(sign_head(&first[1].1, &signer)).unwrap();
    let other = Signer::from_seed(&[4; 32]);
    assert!(witness_from_json("h", &head, Some(other.public_key_pem())).is_err());
    head["seq"] = json!(1);
    assert!(
        witness_from_json("h", &head, None)
            .unwrap_err()
            .contains("signature")
    );
    assert!(witness_from_json("h", &json!({"x": 1}), None).is_err());
}
