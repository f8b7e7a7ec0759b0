//! `specRevision` of claim receipts: pinned, so every era gets the same bytes; receipts older
//! servers issued with the call's revision still verify.
use super::tests::verify;
use super::*;
use crate::claim_verify::ClaimCheck;
use crate::claims::{self, ClaimEntry, ClaimFilter, Claimer, SPEC_REVISION};
use crate::records;
use crate::testkit::Bench;
use bernstein_core::ledger::AUDIT_STREAM;
use serde_json::json;

#[test]
fn receipts_are_byte_identical_in_every_era() {
    let mut seen = Vec::new();
    for rev in ["2024-11-05", "2025-03-26", "2025-11-25", "2026-07-28"] {
        let mut b = Bench::new();
        b.start("same work");
        b.spec_revision = rev.into();
        let r = b.ok(NAME, json!({"claimer_id": "w1"}));
        assert_eq!(r["specRevision"], SPEC_REVISION, "{rev}");
        let receipt: ClaimReceipt = serde_json::from_value(r.clone()).unwrap();
        assert_eq!(verify(&b, &receipt), Ok(()), "{rev}");
        seen.push(serde_json::to_vec(&r).unwrap());
    }
    assert!(
        seen.windows(2).all(|w| w[0] == w[1]),
        "receipt bytes differ by era"
    );
}

/// A refusal as a server before the pin issued it: `specRevision` = the call's revision.
fn old_refusal(b: &mut Bench, rev: &str) -> ClaimReceipt {
    let signer = b.config.signing_key.clone().unwrap();
    let claimer = Claimer {
        id: "w1",
        card_fingerprint: None,
    };
    let filter = ClaimFilter::default();
    let snap = b.snapshot.clone();
    let mut d = claims::decide(&snap, claimer, &filter, 0, &signer);
    assert!(!d.receipt.granted);
    let r = &mut d.receipt;
    r.spec_revision = rev.into();
    r.receipt_hash = claims::receipt_hash(r);
    r.signature = signer.sign(&claims::signed_message(&r.receipt_hash, &r.chain_head));
    r.poll_token = claims::poll_token(&r.receipt_hash, &r.chain_head, "");
    let entry = ClaimEntry::of(&d, &filter, 0);
    b.commit(vec![records::draft(
        AUDIT_STREAM,
        records::CLAIM_RECEIPT,
        &entry,
    )]);
    d.receipt
}

#[test]
fn a_receipt_issued_under_an_older_revision_still_verifies() {
    let mut b = Bench::new();
    let old = old_refusal(&mut b, "2025-11-25");
    assert_eq!(verify(&b, &old), Ok(()));
    // Its revision is covered by the hash: changing it alone is caught.
    let mut moved = old.clone();
    moved.spec_revision = SPEC_REVISION.into();
    assert_eq!(verify(&b, &moved), Err(ClaimCheck::ReceiptHash));
}

#[test]
fn a_receipt_naming_an_unknown_revision_fails_its_shape() {
    let mut b = Bench::new();
    let odd = old_refusal(&mut b, "1999-01-01");
    assert_eq!(verify(&b, &odd), Err(ClaimCheck::ReceiptShape));
}
