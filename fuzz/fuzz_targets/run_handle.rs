//! Receipts and poll tokens: `verify_run_handle` on arbitrary JSON and on consistent handles
//! with one fuzzed field changed; claim receipts through `parse_receipt` and `check_receipt`,
//! and the fixture's real claim receipts with one field changed through the offline claim
//! verifier (`verify_claim_receipt` against the fixture ledger).
//! Invariants: no panic; a handle that verifies has the receipt hash and poll token of its own
//! fields; a handle built from any valid fields verifies, and changing any one field to a
//! different value makes it fail; the fixture's own run handles and claim receipts verify, and
//! none does with a field changed.
#![no_main]

use arbitrary::Arbitrary;
use bernstein_domain::claim_verify::verify_claim_receipt;
use bernstein_domain::claims;
use bernstein_domain::handle::{poll_token, receipt_hash, run_handle};
use bernstein_domain::{RunStatus, verify_run_handle};
use bernstein_core::protocol::era::Revision;
use bernstein_fuzz::fixture;
use libfuzzer_sys::fuzz_target;
use serde_json::{Value, json};

const STATUSES: [RunStatus; 5] = [
    RunStatus::Working,
    RunStatus::InputRequired,
    RunStatus::Completed,
    RunStatus::Failed,
    RunStatus::Cancelled,
];

const RECEIPT_FIELDS: [&str; 12] = [
    "taskId",
    "granted",
    "claimerId",
    "claimerCardFingerprint",
    "backlogHead",
    "filterDigest",
    "chainHead",
    "specRevision",
    "receiptHash",
    "signature",
    "signerPublicKeyPem",
    "pollToken",
];

const FIELDS: [&str; 8] = [
    "taskId",
    "runId",
    "status",
    "journalHead",
    "chainHead",
    "specRevision",
    "receiptHash",
    "pollToken",
];

#[derive(Arbitrary, Debug)]
struct Built {
    task: u64,
    run: u64,
    status: u8,
    journal: [u8; 32],
    chain: [u8; 32],
    revision: String,
    field: u8,
    replacement: String,
    raw: Vec<u8>,
}

fn digest(bytes: &[u8; 32]) -> String {
    bernstein_core::digest::Digest(*bytes).to_string()
}

fuzz_target!(|b: Built| {
    // Raw mode: anything as a handle and as a claim receipt.
    if let Ok(v) = serde_json::from_slice::<Value>(&b.raw)
        && verify_run_handle(&v).is_ok()
    {
        let f = |k: &str| v[k].as_str().unwrap_or_default().to_string();
        assert_eq!(f("pollToken"), poll_token(&f("runId")));
        let status: RunStatus =
            serde_json::from_value(v["status"].clone()).expect("verified status");
        let expected = receipt_hash(
            &f("taskId"),
            &f("runId"),
            status,
            &f("journalHead"),
            &f("chainHead"),
            &f("specRevision"),
        );
        assert_eq!(f("receiptHash"), expected);
    }
    if let Ok(receipt) = claims::parse_receipt(&b.raw) {
        let _ = claims::check_receipt(&receipt);
    }

    // Structured mode: a consistent handle verifies; any changed field does not.
    let task = format!("T-{:016x}", b.task);
    let run = format!("T-{:016x}", b.run);
    let status = STATUSES[usize::from(b.status) % STATUSES.len()];
    let (journal, chain) = (digest(&b.journal), digest(&b.chain));
    // A handle names a revision the server speaks; any other is refused even when its
    // receipt hash is consistent.
    let known = Revision::parse(&b.revision);
    if known.is_none() {
        let odd = json!({
            "taskId": task,
            "runId": run,
            "status": status,
            "journalHead": journal,
            "chainHead": chain,
            "specRevision": b.revision,
            "receiptHash": receipt_hash(&task, &run, status, &journal, &chain, &b.revision),
            "pollToken": poll_token(&run),
        });
        assert!(
            verify_run_handle(&odd).is_err(),
            "a handle naming revision {:?} verified",
            b.revision
        );
    }
    let revision = known
        .unwrap_or(Revision::SUPPORTED[b.revision.len() % Revision::SUPPORTED.len()])
        .as_str();
    let handle = json!({
        "taskId": task,
        "runId": run,
        "status": status,
        "journalHead": journal,
        "chainHead": chain,
        "specRevision": revision,
        "receiptHash": receipt_hash(&task, &run, status, &journal, &chain, revision),
        "pollToken": poll_token(&run),
    });
    verify_run_handle(&handle).unwrap_or_else(|e| panic!("a consistent handle failed: {e}"));
    let field = FIELDS[usize::from(b.field) % FIELDS.len()];
    if handle[field] != b.replacement.as_str() {
        let mut changed = handle.clone();
        changed[field] = Value::from(b.replacement.as_str());
        assert!(
            verify_run_handle(&changed).is_err(),
            "{field} changed and the handle still verified"
        );
    }

    // The fixture's claim receipts: intact they verify against the ledger; changed, never.
    let receipts = fixture::claim_receipts();
    if !receipts.is_empty() {
        let receipt = &receipts[usize::from(b.status) % receipts.len()];
        let key = fixture::audit_key();
        let verify = |v: &Value| {
            let r = claims::parse_receipt(v.to_string().as_bytes())?;
            verify_claim_receipt(r, fixture::LEDGER, "ledger.jsonl", Some(&key), None)
                .map_err(|f| format!("{f:?}"))
        };
        verify(receipt).unwrap_or_else(|e| panic!("a recorded claim receipt failed: {e}"));
        let field = RECEIPT_FIELDS[usize::from(b.field) % RECEIPT_FIELDS.len()];
        let replacement = match field {
            "granted" => Value::Bool(b.revision.len().is_multiple_of(2)),
            _ => Value::from(b.replacement.as_str()),
        };
        if receipt[field] != replacement {
            let mut changed = receipt.clone();
            changed[field] = replacement;
            assert!(
                verify(&changed).is_err(),
                "claim receipt verified with {field} changed"
            );
        }
    }

    // The fixture's runs.
    let snapshot = fixture::snapshot();
    for id in fixture::task_ids().iter().take(2) {
        if let Some(h) = run_handle(snapshot, id) {
            verify_run_handle(&serde_json::to_value(&h).expect("handles serialize"))
                .expect("fixture handle");
        }
    }
});
