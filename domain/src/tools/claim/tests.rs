use super::*;
use crate::claim_verify::{ClaimCheck, verify_claim_receipt};
use crate::claims::check_receipt;
use crate::testkit::{Bench, TEST_AUDIT_KEY};
use bernstein_core::ledger::Record;
use serde_json::{Value, json};

fn claim(b: &mut Bench, args: Value) -> ClaimReceipt {
    serde_json::from_value(b.ok(NAME, args)).unwrap()
}

pub(super) fn verify(b: &Bench, r: &ClaimReceipt) -> Result<(), ClaimCheck> {
    verify_claim_receipt(
        r.clone(),
        &b.ledger_bytes(),
        "ledger.jsonl",
        Some(TEST_AUDIT_KEY),
        None,
    )
    .map(drop)
    .map_err(|f| f.check)
}

#[test]
fn a_dependency_gated_task_is_refused_until_its_dependencies_are_done() {
    let mut b = Bench::new();
    let root = b.start("root");
    let a = b.subtask(&root, "a");
    let gated = Bench::id_of(&b.ok(
        "bernstein_run",
        json!({"goal": "after a", "parent_task_id": root, "depends_on": [a]}),
    ));
    let first = claim(&mut b, json!({"claimer_id": "w1"}));
    assert!(first.granted);
    assert_eq!(
        first.task_id, a,
        "the root waits for its subtasks; `gated` waits for a"
    );
    let refused = claim(&mut b, json!({"claimer_id": "w2"}));
    assert!(!refused.granted);
    assert_eq!(refused.task_id, "");
    check_receipt(&refused).unwrap();
    b.ok(
        "bernstein_complete",
        json!({"task_id": a, "result_summary": "a done"}),
    );
    let granted = claim(&mut b, json!({"claimer_id": "w2"}));
    assert_eq!(granted.task_id, gated);
    for r in [&first, &refused, &granted] {
        verify(&b, r).unwrap();
    }
    let row = b.snapshot.domain.task(&gated).unwrap();
    assert_eq!(row.status, TaskStatus::Claimed);
    assert_eq!(row.claimer.as_deref(), Some("w2"));
    assert_eq!(row.attempts, 1);
}

#[test]
fn a_claim_records_its_receipt_and_the_status_change_in_one_transaction() {
    let mut b = Bench::new();
    let t = b.start("work");
    let before = b.snapshot.clone();
    let out = b.call(NAME, json!({"claimer_id": "w1", "role": "backend"}));
    let kinds: Vec<(&str, &str)> = out
        .drafts
        .iter()
        .map(|d| (d.stream.as_str(), d.kind.as_str()))
        .collect();
    let run = format!("run:{t}");
    assert_eq!(
        kinds,
        [
            ("backlog", "task.status"),
            ("backlog", "task.lease"),
            (run.as_str(), "run.task_status"),
            ("audit", "task.claim_receipt"),
        ]
    );
    assert_eq!(out.run_id.as_deref(), Some(t.as_str()));
    let r: ClaimReceipt = serde_json::from_value(out.result.unwrap()).unwrap();
    let entry: ClaimEntry = serde_json::from_value(out.drafts[3].body.clone()).unwrap();
    assert_eq!(entry.receipt_hash, r.receipt_hash);
    assert_eq!(entry.filter.role.as_deref(), Some("backend"));
    assert_eq!(entry.run_id.as_deref(), Some(t.as_str()));
    assert_eq!(r.chain_head, before.stream_head("audit").to_string());
    // The entry is the audit record right after the receipt's chain head.
    let rec: &Record = b
        .log
        .iter()
        .find(|r| r.kind == "task.claim_receipt")
        .unwrap();
    assert_eq!(rec.sprev.to_string(), r.chain_head);
}

#[test]
fn only_one_claimer_wins_a_task() {
    let mut b = Bench::new();
    let t = b.start("only one");
    let snap = b.snapshot.clone();
    let first = claim(&mut b, json!({"claimer_id": "w1"}));
    assert_eq!(first.task_id, t);
    // A second claimer decided on the same (now stale) snapshot would pick the same task, but
    // its records no longer extend the ledger: the store refuses them, and decided again on the
    // new ledger it is refused.
    let stale = claims::decide(
        &snap,
        Claimer {
            id: "w2",
            card_fingerprint: None,
        },
        &ClaimFilter::default(),
        0,
        b.config.signing_key.as_ref().unwrap(),
    );
    assert_eq!(stale.receipt.task_id, t);
    assert_ne!(snap.position, b.snapshot.position);
    let second = claim(&mut b, json!({"claimer_id": "w2"}));
    assert!(!second.granted);
    verify(&b, &second).unwrap();
}

#[test]
fn refusals_without_a_signing_key_or_with_bad_arguments_write_nothing() {
    let mut b = Bench::new();
    b.start("work");
    b.config.signing_key = None;
    let e = b.refused(NAME, json!({"claimer_id": "w1"}));
    assert_eq!(e.error, "signing_key_unavailable");
    assert!(e.message.contains("signing key"));
    b.config = b.config.clone().with_signing_seed(&[42; 32]);
    for bad in [
        json!({}),
        json!({"claimer_id": ""}),
        json!({"claimer_id": "has space"}),
        json!({"claimer_id": "w", "completed_ids": ["ok", "not ok"]}),
        json!({"claimer_id": "w", "max_attempts": 100001}),
        json!({"claimer_id": "w", "role": "  "}),
        json!({"claimer_id": "w", "surprise": 1}),
    ] {
        let e = b.refused(NAME, bad.clone());
        assert_eq!(e.error, "invalid_arguments", "{bad}");
    }
    let too_many: Vec<String> = (0..4097).map(|i| format!("id{i}")).collect();
    assert_eq!(
        b.refused(NAME, json!({"claimer_id": "w", "completed_ids": too_many}))
            .error,
        "invalid_arguments"
    );
    assert_eq!(
        b.snapshot.domain.count(TaskStatus::Open),
        1,
        "nothing was claimed"
    );
    assert!(
        b.snapshot
            .domain
            .open_in_claim_order()
            .all(|t| t.attempts == 0)
    );
}

#[test]
fn the_same_ledger_replayed_gives_byte_identical_receipts() {
    let script = |b: &mut Bench| -> Vec<Value> {
        let root = b.start("root");
        let a = b.subtask(&root, "a");
        b.ok(
            "bernstein_run",
            json!({"goal": "b", "parent_task_id": root, "depends_on": [a]}),
        );
        vec![
            b.ok(
                NAME,
                json!({"claimer_id": "w1", "claimer_card_fingerprint": "sha256:c1"}),
            ),
            b.ok(NAME, json!({"claimer_id": "w2"})),
            b.ok(NAME, json!({"claimer_id": "w2", "completed_ids": [a]})),
        ]
    };
    let (mut x, mut y) = (Bench::new(), Bench::new());
    let rx = script(&mut x);
    let ry = script(&mut y);
    for (a, b) in rx.iter().zip(&ry) {
        assert_eq!(
            serde_json::to_vec(a).unwrap(),
            serde_json::to_vec(b).unwrap()
        );
    }
    assert_eq!(x.ledger_bytes(), y.ledger_bytes());
    // Replaying the recorded ledger's prefix and deciding again reproduces each receipt.
    let mut r0: ClaimReceipt = serde_json::from_value(rx[0].clone()).unwrap();
    // The task descriptor rides along the answer, outside the signed receipt.
    assert!(r0.task.take().is_some());
    let mut snap = crate::Snapshot::genesis();
    for rec in &x.log {
        if rec.kind == "task.claim_receipt" {
            break;
        }
        if rec.txn[0] == 1 && rec.stream == "backlog" && rec.kind == "task.status" {
            break;
        }
        snap.apply(rec).unwrap();
    }
    let again = claims::decide(
        &snap,
        Claimer {
            id: "w1",
            card_fingerprint: Some("sha256:c1"),
        },
        &ClaimFilter::default(),
        0,
        x.config.signing_key.as_ref().unwrap(),
    );
    assert_eq!(again.receipt, r0);
}

#[test]
fn the_verifier_names_the_check_a_forgery_fails() {
    let mut b = Bench::new();
    let t = b.start("work");
    b.start("other");
    let r = claim(&mut b, json!({"claimer_id": "w1", "role": "backend"}));
    assert_eq!(r.task_id, t);
    b.ok("bernstein_status", json!({}));
    verify(&b, &r).unwrap();

    // A receipt re-signed by another key: its own checks pass, the project's key does not.
    let other = bernstein_core::signing::Signer::from_seed(&[9; 32]);
    let mut forged = r.clone();
    forged.signer_public_key_pem = other.public_key_pem().into();
    forged.signature = other.sign(&claims::signed_message(&r.receipt_hash, &r.chain_head));
    check_receipt(&forged).unwrap();
    assert_eq!(verify(&b, &forged), Err(ClaimCheck::ClaimEntry));
    let project_key = b
        .config
        .signing_key
        .as_ref()
        .unwrap()
        .public_key_pem()
        .to_string();
    assert_eq!(
        verify_claim_receipt(forged, &b.ledger_bytes(), "l", None, Some(&project_key))
            .unwrap_err()
            .check,
        ClaimCheck::SignerKey
    );

    // A receipt claiming the other task, properly re-hashed and re-signed by the project key:
    // the ledger does not hold it.
    let signer = b.config.signing_key.clone().unwrap();
    let mut moved = r.clone();
    moved.task_id = b
        .snapshot
        .domain
        .open_in_claim_order()
        .next()
        .unwrap()
        .id
        .to_string();
    moved.receipt_hash = claims::receipt_hash(&moved);
    moved.signature = signer.sign(&claims::signed_message(
        &moved.receipt_hash,
        &moved.chain_head,
    ));
    moved.poll_token = claims::poll_token(&moved.receipt_hash, &moved.chain_head, &moved.task_id);
    check_receipt(&moved).unwrap();
    assert_eq!(verify(&b, &moved), Err(ClaimCheck::ClaimEntry));

    // Field edits without re-signing.
    let mut edited = r.clone();
    edited.claimer_id = "w2".into();
    assert_eq!(verify(&b, &edited), Err(ClaimCheck::ReceiptHash));
    let mut edited = r.clone();
    edited.poll_token.push('A');
    assert_eq!(verify(&b, &edited), Err(ClaimCheck::PollToken));
    let mut edited = r.clone();
    edited.chain_head = format!("sha256:{}", "2".repeat(64));
    assert_eq!(verify(&b, &edited), Err(ClaimCheck::PollToken));

    // A flipped byte in the ledger, and a wrong audit key.
    let mut bytes = b.ledger_bytes();
    let at = bytes.iter().position(|&c| c == b'w').unwrap();
    bytes[at] = b'W';
    let e = verify_claim_receipt(r.clone(), &bytes, "l", None, None).unwrap_err();
    assert_eq!(e.check, ClaimCheck::Ledger);
    let e =
        verify_claim_receipt(r.clone(), &b.ledger_bytes(), "l", Some(b"wrong"), None).unwrap_err();
    assert_eq!(e.check, ClaimCheck::Ledger);
    assert!(e.to_string().starts_with("ledger check failed"), "{e}");

    // A ledger cut before the claim.
    let cut: Vec<u8> = b
        .log
        .iter()
        .take_while(|rec| rec.kind != "task.status" || rec.body["to"] != "claimed")
        .flat_map(Record::to_line)
        .collect();
    let e = verify_claim_receipt(r, &cut, "l", None, None).unwrap_err();
    assert_eq!(e.check, ClaimCheck::ClaimEntry);
}

#[test]
fn a_rewritten_claim_entry_fails_the_reprojection_checks() {
    // Without the audit key, an attacker can rewrite a record and re-hash the chain; the
    // re-projection still catches a decision the backlog does not support.
    let mut b = Bench::new();
    b.start("work");
    let r = claim(&mut b, json!({"claimer_id": "w1", "role": "qa"}));
    assert!(!r.granted, "no qa task");
    let mut log = b.log.clone();
    let i = log
        .iter()
        .position(|rec| rec.kind == "task.claim_receipt")
        .unwrap();
    let mut body = log[i].body.clone();
    body["filter"] = json!({"role": "backend"});
    log[i].body = body;
    let resealed = reseal(&log);
    let e = verify_claim_receipt(r.clone(), &resealed, "l", None, None).unwrap_err();
    assert_eq!(e.check, ClaimCheck::FilterDigest);
    let mut body = log[i].body.clone();
    body["filter"] = json!({"role": "qa"});
    body["backlog_head"] = json!(format!("sha256:{}", "3".repeat(64)));
    log[i].body = body;
    let e = verify_claim_receipt(r.clone(), &reseal(&log), "l", None, None).unwrap_err();
    assert_eq!(e.check, ClaimCheck::ClaimEntry, "{e}");
    // With the key, the rewrite is caught by the HMAC tags already.
    let e = verify_claim_receipt(r, &resealed, "l", Some(TEST_AUDIT_KEY), None).unwrap_err();
    assert_eq!(e.check, ClaimCheck::Ledger);
}

/// Re-chains `log` (hashes, prev, sprev) as an attacker without the audit key would, keeping
/// the old MAC strings.
fn reseal(log: &[Record]) -> Vec<u8> {
    use bernstein_core::ledger::{Draft, LedgerPosition, seal};
    let mut out = Vec::new();
    let mut pos = LedgerPosition::GENESIS;
    let mut heads = std::collections::HashMap::new();
    let mut i = 0;
    while i < log.len() {
        let n = log[i].txn[1] as usize;
        let drafts: Vec<Draft> = log[i..i + n]
            .iter()
            .map(|r| Draft::new(r.stream.clone(), r.kind.clone(), r.body.clone()))
            .collect();
        let recs = seal(
            &pos,
            |s| {
                heads
                    .get(s)
                    .copied()
                    .unwrap_or(bernstein_core::digest::Digest::ZERO)
            },
            drafts,
            b"attacker-key",
        );
        for r in &recs {
            heads.insert(r.stream.clone(), r.hash);
            out.extend(r.to_line());
        }
        pos = recs.last().map_or(pos, |r| LedgerPosition {
            seq: r.seq,
            head: r.hash,
        });
        i += n;
    }
    out
}

/// A receipt the ledger's backlog does not support, signed with the project key and recorded
/// (as a lying or buggy server would): the re-projection checks catch it.
#[test]
fn decisions_the_backlog_does_not_support_fail_reprojection() {
    let mut b = Bench::new();
    let signer = b.config.signing_key.clone().unwrap();
    b.start("eligible");
    let claimer = Claimer {
        id: "w1",
        card_fingerprint: None,
    };
    let filter = ClaimFilter::default();
    // A refusal although a task is eligible.
    let snap = b.snapshot.clone();
    let mut lie = claims::decide(&snap, claimer, &filter, 0, &signer);
    lie.task = None;
    lie.receipt.task_id = String::new();
    lie.receipt.granted = false;
    lie.receipt.receipt_hash = claims::receipt_hash(&lie.receipt);
    lie.receipt.signature = signer.sign(&claims::signed_message(
        &lie.receipt.receipt_hash,
        &lie.receipt.chain_head,
    ));
    lie.receipt.poll_token =
        claims::poll_token(&lie.receipt.receipt_hash, &lie.receipt.chain_head, "");
    let entry = ClaimEntry::of(&lie, &filter, 0);
    b.commit(vec![records::draft(
        AUDIT_STREAM,
        records::CLAIM_RECEIPT,
        &entry,
    )]);
    assert_eq!(verify(&b, &lie.receipt), Err(ClaimCheck::Decision));

    // A receipt decided on an older backlog, recorded after the backlog moved.
    let mut b = Bench::new();
    let snap = b.snapshot.clone();
    let old = claims::decide(&snap, claimer, &filter, 0, &signer);
    let task = records::TaskCreated {
        task_id: "T-00000000000000aa".into(),
        run_id: "T-00000000000000aa".into(),
        parent_id: None,
        title: "t".into(),
        goal: "t".into(),
        role: "backend".into(),
        priority: 2,
        scope: records::Scope::Medium,
        complexity: records::Complexity::Medium,
        estimated_minutes: 30,
        status: TaskStatus::Open,
        created_at: 0,
        depends_on: Vec::new(),
        requires_approval: false,
        plan: false,
        project: None,
        capabilities: Vec::new(),
        redactions: Default::default(),
        redacted_kinds: Vec::new(),
    };
    b.commit(records::new_run_drafts(&task));
    let entry = ClaimEntry::of(&old, &filter, 0);
    b.commit(vec![records::draft(
        AUDIT_STREAM,
        records::CLAIM_RECEIPT,
        &entry,
    )]);
    assert_eq!(verify(&b, &old.receipt), Err(ClaimCheck::BacklogHead));

    // A grant whose transaction does not claim the task.
    let mut b = Bench::new();
    b.start("x");
    let snap = b.snapshot.clone();
    let grant = claims::decide(&snap, claimer, &filter, 0, &signer);
    let entry = ClaimEntry::of(&grant, &filter, 0);
    b.commit(vec![records::draft(
        AUDIT_STREAM,
        records::CLAIM_RECEIPT,
        &entry,
    )]);
    assert_eq!(verify(&b, &grant.receipt), Err(ClaimCheck::ClaimApplied));
}

/// A claim served on one snapshot and placed after another process's read (as a store places a
/// write that named what it read): the receipt, and the ledger with its call record's
/// `read_at` set by `edit` (the store's own placement when `edit` leaves it).
fn claim_placed_after_a_read(edit: impl Fn(&mut Value, u64)) -> (ClaimReceipt, Vec<u8>) {
    use bernstein_core::ledger::rebase::moved;
    use bernstein_core::ledger::{AUDIT_STREAM, Append, Draft, LedgerPosition, seal};
    let mut b = Bench::new();
    b.start("work");
    let served = b.snapshot.clone();
    let before = b.log.len();
    let r = claim(&mut b, json!({"claimer_id": "w1"}));
    assert!(r.granted);
    let mut log: Vec<Record> = b.log[..before].to_vec();
    let read = seal(
        &served.position,
        |s| served.stream_head(s),
        vec![Draft::new(
            AUDIT_STREAM,
            "mcp.stateless_call",
            json!({"tool": "bernstein_status", "call_id": "other", "ok": true}),
        )],
        TEST_AUDIT_KEY,
    );
    log.extend(read.iter().cloned());
    let txn = b.log[before..].to_vec();
    let mut read_heads: Vec<(String, bernstein_core::digest::Digest)> = txn
        .iter()
        .filter(|r| r.stream != AUDIT_STREAM)
        .map(|r| (r.stream.clone(), served.stream_head(&r.stream)))
        .collect();
    read_heads.dedup();
    let append = Append {
        expected: served.position,
        records: txn,
        read_heads: Some(read_heads),
    };
    let at = LedgerPosition {
        seq: read[0].seq,
        head: read[0].hash,
    };
    let heads = |s: &str| {
        if s == AUDIT_STREAM {
            read[0].hash
        } else {
            served.stream_head(s)
        }
    };
    let mut placed = moved(&append, &at, heads, TEST_AUDIT_KEY)
        .expect("the backlog it read stands")
        .records;
    let call = placed.last_mut().unwrap();
    let mut body = call.body.clone();
    edit(&mut body, read[0].seq);
    call.reseal(body, TEST_AUDIT_KEY);
    log.extend(placed);
    let bytes = log.iter().flat_map(|r| r.to_line()).collect();
    (r, bytes)
}

#[test]
fn a_claim_placed_after_other_calls_records_verifies_where_its_call_record_says_it_was_decided() {
    let (r, ledger) = claim_placed_after_a_read(|_, _| {});
    let text = String::from_utf8(ledger.clone()).unwrap();
    assert!(text.contains("\"read_at\""), "the claim was placed later");
    verify_claim_receipt(r.clone(), &ledger, "l", Some(TEST_AUDIT_KEY), None).unwrap();
    // A call record that does not say where it was decided, or says a position where the audit
    // head was no longer chainHead, does not tie the entry to the receipt.
    for edit in [
        (|body: &mut Value, _| {
            body.as_object_mut().unwrap().remove("read_at");
        }) as fn(&mut Value, u64),
        |body, read_seq| body["read_at"] = json!(read_seq),
    ] {
        let (r, ledger) = claim_placed_after_a_read(edit);
        let e = verify_claim_receipt(r, &ledger, "l", Some(TEST_AUDIT_KEY), None).unwrap_err();
        assert_eq!(e.check, ClaimCheck::ClaimEntry, "{e}");
    }
}

#[test]
fn a_refusal_placed_after_an_identical_later_refusal_still_finds_its_own_entry() {
    use bernstein_core::ledger::rebase::moved;
    use bernstein_core::ledger::{AUDIT_STREAM, Append, Draft};
    // Two refusals with the same decision (same backlog, claimer and filter), hence the same
    // receiptHash, decided at different audit heads: the earlier one placed after the later.
    let refuse = json!({"claimer_id": "w1", "role": "qa"});
    let mut first = Bench::new();
    first.start("work");
    let served = first.snapshot.clone();
    let before = first.log.len();
    let r1 = claim(&mut first, refuse.clone());
    let txn = first.log[before..].to_vec();
    let mut later = Bench::new();
    later.start("work");
    later.commit(vec![Draft::new(
        AUDIT_STREAM,
        "mcp.stateless_call",
        json!({"tool": "bernstein_status", "call_id": "other", "ok": true}),
    )]);
    let r2 = claim(&mut later, refuse);
    assert!(!r1.granted && !r2.granted);
    assert_eq!(r1.receipt_hash, r2.receipt_hash);
    assert_ne!(r1.chain_head, r2.chain_head);
    let append = Append {
        expected: served.position,
        records: txn,
        read_heads: Some(vec![("backlog".into(), served.stream_head("backlog"))]),
    };
    let placed = moved(
        &append,
        &later.snapshot.position,
        |s| later.snapshot.stream_head(s),
        TEST_AUDIT_KEY,
    )
    .expect("a refusal's backlog stands");
    later.log.extend(placed.records);
    let ledger = later.ledger_bytes();
    verify_claim_receipt(r1, &ledger, "l", Some(TEST_AUDIT_KEY), None).unwrap();
    verify_claim_receipt(r2, &ledger, "l", Some(TEST_AUDIT_KEY), None).unwrap();
}
