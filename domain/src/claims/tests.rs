use super::*;
use crate::testkit::{Bench, TEST_SIGNING_SEED};
use serde_json::json;

fn signer() -> Signer {
    Signer::from_seed(&TEST_SIGNING_SEED)
}

fn filter() -> ClaimFilter {
    ClaimFilter::default()
}

#[test]
fn the_filter_digest_is_over_the_canonical_filter() {
    assert_eq!(filter().canonical(), b"{}");
    let f = ClaimFilter {
        role: Some("qa".into()),
        completed_ids: Some(["T-b".to_string(), "T-a".to_string()].into()),
        max_attempts: Some(3),
        ..ClaimFilter::default()
    };
    assert_eq!(
        String::from_utf8(f.canonical()).unwrap(),
        r#"{"completed_ids":["T-a","T-b"],"max_attempts":3,"role":"qa"}"#
    );
    assert_eq!(f.digest(), Digest::of(&f.canonical()));
    // An empty list is a filter (nothing completed), unlike an absent one.
    let empty = ClaimFilter {
        completed_ids: Some(BTreeSet::new()),
        ..ClaimFilter::default()
    };
    assert_ne!(empty.digest(), filter().digest());
}

#[test]
fn selection_follows_priority_then_creation_order() {
    let mut b = Bench::new();
    let low = Bench::id_of(&b.ok("bernstein_run", json!({"goal": "low", "priority": 3})));
    let first = Bench::id_of(&b.ok("bernstein_run", json!({"goal": "first"})));
    let second = Bench::id_of(&b.ok("bernstein_run", json!({"goal": "second"})));
    let urgent = Bench::id_of(&b.ok("bernstein_run", json!({"goal": "urgent", "priority": 1})));
    let order: Vec<&str> = b
        .snapshot
        .domain
        .open_in_claim_order()
        .map(|t| t.id.as_str())
        .collect();
    assert_eq!(order, [&urgent, &first, &second, &low]);
    assert_eq!(select(&b.snapshot.domain, &filter(), 0).unwrap().id, urgent);
}

#[test]
fn filters_select_on_role_project_capability_and_attempts() {
    let mut b = Bench::new();
    let qa = Bench::id_of(&b.ok(
        "bernstein_run",
        json!({"goal": "qa", "role": "qa", "project": "web", "capabilities": ["browser", "python"]}),
    ));
    let be = Bench::id_of(&b.ok("bernstein_run", json!({"goal": "be"})));
    let p = &b.snapshot.domain;
    let pick = |f: ClaimFilter| select(p, &f, 0).map(|t| t.id.to_string());
    assert_eq!(
        pick(ClaimFilter {
            role: Some("qa".into()),
            ..filter()
        }),
        Some(qa.clone())
    );
    assert_eq!(
        pick(ClaimFilter {
            role: Some("backend".into()),
            ..filter()
        }),
        Some(be.clone())
    );
    assert_eq!(
        pick(ClaimFilter {
            project: Some("web".into()),
            ..filter()
        }),
        Some(qa.clone())
    );
    assert_eq!(
        pick(ClaimFilter {
            project: Some("api".into()),
            ..filter()
        }),
        None
    );
    assert_eq!(
        pick(ClaimFilter {
            capability: Some("python".into()),
            ..filter()
        }),
        Some(qa.clone())
    );
    assert_eq!(
        pick(ClaimFilter {
            capability: Some("rust".into()),
            ..filter()
        }),
        None
    );
    assert_eq!(
        pick(ClaimFilter {
            max_attempts: Some(0),
            ..filter()
        }),
        None
    );
    assert_eq!(
        pick(ClaimFilter {
            max_attempts: Some(1),
            ..filter()
        }),
        Some(qa)
    );
}

#[test]
fn dependencies_gate_the_offer_and_completed_ids_only_narrow_it() {
    let mut b = Bench::new();
    let dep = b.start("dependency");
    let gated = Bench::id_of(&b.ok(
        "bernstein_run",
        json!({"goal": "gated", "depends_on": [dep]}),
    ));
    // Claim the dependency away so only the gated task is open.
    b.force(&dep, TaskStatus::Claimed);
    let p = &b.snapshot.domain;
    assert!(select(p, &filter(), 0).is_none(), "dependency not done");
    let listed = ClaimFilter {
        completed_ids: Some([dep.clone()].into()),
        ..filter()
    };
    assert!(
        select(p, &listed, 0).is_none(),
        "listing an unfinished dependency releases nothing"
    );
    b.force(&dep, TaskStatus::Done);
    let p = &b.snapshot.domain;
    assert_eq!(select(p, &filter(), 0).unwrap().id, gated);
    assert_eq!(select(p, &listed, 0).unwrap().id, gated);
    let unlisted = ClaimFilter {
        completed_ids: Some(BTreeSet::new()),
        ..filter()
    };
    assert!(
        select(p, &unlisted, 0).is_none(),
        "the claimer narrowed the offer"
    );
}

#[test]
fn receipts_are_deterministic_and_self_verifying() {
    let mut b = Bench::new();
    b.start("work");
    let claimer = Claimer {
        id: "worker-1",
        card_fingerprint: None,
    };
    let one = decide(&b.snapshot, claimer, &filter(), 0, &signer()).receipt;
    let two = decide(&b.snapshot, claimer, &filter(), 0, &signer()).receipt;
    assert_eq!(
        serde_json::to_vec(&one).unwrap(),
        serde_json::to_vec(&two).unwrap()
    );
    assert!(one.granted);
    assert_eq!(one.claimer_card_fingerprint, UNREGISTERED);
    assert_eq!(
        one.chain_head,
        b.snapshot.stream_head(AUDIT_STREAM).to_string()
    );
    assert_eq!(
        one.backlog_head,
        b.snapshot.stream_head(BACKLOG_STREAM).to_string()
    );
    check_receipt(&one).unwrap();
    // A later clock or an audit record that did not touch the backlog leaves the hash alone.
    b.ok("bernstein_status", json!({}));
    let three = decide(&b.snapshot, claimer, &filter(), 0, &signer()).receipt;
    assert_eq!(three.receipt_hash, one.receipt_hash);
    assert_ne!(three.chain_head, one.chain_head);
    assert_ne!(three.signature, one.signature);
    // Another claimer or filter is another decision.
    let other = Claimer {
        id: "worker-2",
        card_fingerprint: Some("sha256:abc"),
    };
    assert_ne!(
        decide(&b.snapshot, other, &filter(), 0, &signer())
            .receipt
            .receipt_hash,
        one.receipt_hash
    );
}

#[test]
fn altering_any_receipt_field_fails_its_named_check() {
    let mut b = Bench::new();
    b.start("work");
    let claimer = Claimer {
        id: "worker-1",
        card_fingerprint: Some("sha256:card"),
    };
    let r = decide(&b.snapshot, claimer, &filter(), 0, &signer()).receipt;
    let wire = serde_json::to_value(&r).unwrap();
    let fields = wire
        .as_object()
        .unwrap()
        .keys()
        .cloned()
        .collect::<Vec<_>>();
    assert_eq!(fields.len(), 12);
    for field in fields {
        let mut v = wire.clone();
        v[&field] = match &v[&field] {
            Value::Bool(x) => json!(!x),
            Value::String(s) if s.starts_with("sha256:") => {
                json!(format!("sha256:{}", "1".repeat(64)))
            }
            Value::String(s) if s.starts_with("T-") => json!("T-0000000000000001"),
            Value::String(s) if s.contains("PUBLIC KEY") => {
                json!(Signer::from_seed(&[1; 32]).public_key_pem())
            }
            Value::String(s) => json!(format!("{s}x")),
            other => panic!("unexpected {other}"),
        };
        let altered: ClaimReceipt = serde_json::from_value(v).unwrap();
        assert!(
            check_receipt(&altered).is_err(),
            "altered {field} still verifies"
        );
    }
    check_receipt(&r).unwrap();
}

#[test]
fn receipts_parse_bare_or_enveloped() {
    let mut b = Bench::new();
    b.start("work");
    let claimer = Claimer {
        id: "w",
        card_fingerprint: None,
    };
    let r = decide(&b.snapshot, claimer, &filter(), 0, &signer()).receipt;
    let bare = serde_json::to_vec(&r).unwrap();
    assert_eq!(parse_receipt(&bare).unwrap(), r);
    let env = serde_json::to_vec(&json!({"result": r, "_meter": {"ok": true}})).unwrap();
    assert_eq!(parse_receipt(&env).unwrap(), r);
    assert!(parse_receipt(b"{").unwrap_err().contains("not JSON"));
    assert!(
        parse_receipt(b"{\"taskId\":1}")
            .unwrap_err()
            .contains("not a claim receipt")
    );
}

/// The code block after `<!-- vector:NAME -->` in docs/VERIFY.md.
pub(crate) fn verify_doc_vector(name: &str) -> String {
    let doc = include_str!("../../../docs/VERIFY.md");
    let marker = format!("<!-- vector:{name} -->");
    let start = doc
        .find(&marker)
        .unwrap_or_else(|| panic!("no vector {name}"));
    let rest = &doc[start + marker.len()..];
    let open = rest.find("```").unwrap();
    let body = &rest[open..];
    let body = &body[body.find('\n').unwrap() + 1..];
    body[..body.find("```").unwrap()].trim_end().to_string()
}

/// The scenario behind the documented vectors.
pub(crate) fn vector_bench() -> (Bench, Value, Value) {
    let mut b = Bench::new();
    let t = b.start("Add a health endpoint");
    let receipt = b.ok(
        "bernstein_claim",
        json!({"claimer_id": "worker-1", "role": "backend"}),
    );
    let entry = b.ok(
        "bernstein_post_message",
        json!({"task_id": t, "body": "Bearer abcdefgh12345678 works", "kind": "finding", "sender": "worker-1"}),
    );
    (b, receipt, entry)
}

#[test]
fn documented_vectors_are_what_the_code_produces() {
    let (b, receipt, entry) = vector_bench();
    let canon = |v: &Value| String::from_utf8(to_canonical_bytes(v).unwrap()).unwrap();
    assert_eq!(
        verify_doc_vector("signing-seed"),
        hex::encode(TEST_SIGNING_SEED)
    );
    assert_eq!(
        verify_doc_vector("signing-public-key"),
        signer().public_key_pem().trim_end()
    );
    // The answer carries the granted task's descriptor beside the signed receipt; the vector
    // documents the receipt.
    let mut receipt = receipt;
    let task = receipt.as_object_mut().unwrap().remove("task");
    assert_eq!(task.unwrap()["goal"], "Add a health endpoint");
    assert_eq!(verify_doc_vector("claim-receipt"), canon(&receipt));
    let r: ClaimReceipt = serde_json::from_value(receipt).unwrap();
    let decision = json!({
        "backlogHead": r.backlog_head, "claimerCardFingerprint": r.claimer_card_fingerprint,
        "claimerId": r.claimer_id, "filterDigest": r.filter_digest, "granted": r.granted,
        "specRevision": r.spec_revision, "taskId": r.task_id,
    });
    assert_eq!(
        verify_doc_vector("claim-receipt-hash-preimage"),
        canon(&decision)
    );
    assert_eq!(
        verify_doc_vector("claim-receipt-signed-message"),
        String::from_utf8(signed_message(&r.receipt_hash, &r.chain_head)).unwrap()
    );
    assert_eq!(
        verify_doc_vector("claim-filter"),
        String::from_utf8(
            ClaimFilter {
                role: Some("backend".into()),
                ..ClaimFilter::default()
            }
            .canonical()
        )
        .unwrap()
    );
    assert_eq!(verify_doc_vector("mailbox-entry"), canon(&entry));
    let e: crate::mailbox::MailboxEntry = serde_json::from_value(entry).unwrap();
    let pre = json!({
        "body_hash": e.body_hash, "kind": e.kind.as_str(), "prev_entry_hash": e.prev_entry_hash,
        "redactions": e.redactions, "sender": e.sender,
        "sender_card_fingerprint": e.sender_card_fingerprint, "seq": e.seq, "task_id": e.task_id,
    });
    assert_eq!(
        verify_doc_vector("mailbox-entry-hash-preimage"),
        canon(&pre)
    );
    assert_eq!(Digest::of(canon(&pre).as_bytes()).to_string(), e.entry_hash);
    assert_eq!(
        verify_doc_vector("mailbox-signed-message"),
        String::from_utf8(crate::mailbox::signed_message(&e.entry_hash)).unwrap()
    );
    check_receipt(&r).unwrap();
    let text = String::from_utf8(b.ledger_bytes()).unwrap();
    assert!(text.contains(&r.receipt_hash));
}
