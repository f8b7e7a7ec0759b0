use super::*;
use crate::lifecycle::TaskStatus;
use crate::mailbox::{entry_hash, signed_message};
use crate::testkit::Bench;
use bernstein_core::signing::verify_signature;
use serde_json::json;

fn post(b: &mut Bench, task: &str, body: &str) -> MailboxEntry {
    serde_json::from_value(b.ok(
        NAME,
        json!({"task_id": task, "body": body, "kind": "finding", "sender": "w1"}),
    ))
    .unwrap()
}

#[test]
fn a_secret_comes_back_redacted_and_the_entry_is_signed_and_chained() {
    let mut b = Bench::new();
    let t = b.start("work");
    let first = post(&mut b, &t, "found AKIAIOSFODNN7EXAMPLE in config.py");
    assert_eq!(first.body, "found [REDACTED:aws_access_key] in config.py");
    assert_eq!(first.redactions, 1);
    assert_eq!(first.redacted_kinds, ["aws_access_key"]);
    assert_eq!(first.seq, 1);
    assert_eq!(
        first.prev_entry_hash,
        bernstein_core::digest::Digest::ZERO.to_string()
    );
    assert_eq!(first.entry_hash, entry_hash(&first));
    assert_eq!(first.sender_card_fingerprint, "unregistered");
    verify_signature(
        &first.signer_public_key_pem,
        &signed_message(&first.entry_hash),
        &first.signature,
    )
    .unwrap();
    let second = post(&mut b, &t, "plain progress");
    assert_eq!(second.seq, 2);
    assert_eq!(second.prev_entry_hash, first.entry_hash);
    assert_eq!(second.redactions, 0);
    assert!(second.redacted_kinds.is_empty());
    // The ledger never saw the secret.
    let text = String::from_utf8(b.ledger_bytes()).unwrap();
    assert!(!text.contains("AKIAIOSFODNN7EXAMPLE"));
    assert_eq!(b.snapshot.domain.mailbox(&t).entries, 2);
    // Posting changes no status.
    assert_eq!(b.snapshot.domain.task(&t).unwrap().status, TaskStatus::Open);
}

#[test]
fn the_entry_and_its_mirror_are_one_transaction() {
    let mut b = Bench::new();
    let t = b.start("work");
    let out = b.call(
        NAME,
        json!({"task_id": t, "body": "q?", "kind": "question", "sender_card_fingerprint": "sha256:abc"}),
    );
    let kinds: Vec<(&str, &str)> = out
        .drafts
        .iter()
        .map(|d| (d.stream.as_str(), d.kind.as_str()))
        .collect();
    let stream = format!("mailbox:{t}");
    assert_eq!(
        kinds,
        [
            (stream.as_str(), "mailbox.message"),
            ("audit", "task.mailbox_message")
        ]
    );
    let e: MailboxEntry = serde_json::from_value(out.result.unwrap()).unwrap();
    assert_eq!(e.sender, DEFAULT_SENDER);
    assert_eq!(e.kind, MessageKind::Question);
    assert_eq!(
        out.drafts[1].body,
        serde_json::to_value(MailboxMirror::of(&e)).unwrap()
    );
    // The mailbox record carries an HMAC tag like the audit chain.
    let rec = b.log.iter().find(|r| r.stream == stream).unwrap();
    assert!(rec.mac.is_some());
}

#[test]
fn refusals_write_nothing() {
    let mut b = Bench::new();
    let t = b.start("work");
    let e = b.refused(
        NAME,
        json!({"task_id": t, "body": "x".repeat(MAX_BODY_BYTES + 1), "kind": "finding"}),
    );
    assert_eq!(e.error, "invalid_arguments");
    let multibyte = "é".repeat(MAX_BODY_BYTES / 2 + 1);
    assert_eq!(
        b.refused(
            NAME,
            json!({"task_id": t, "body": multibyte, "kind": "finding"})
        )
        .error,
        "invalid_arguments",
        "the limit is in bytes"
    );
    assert_eq!(
        b.refused(NAME, json!({"task_id": t, "body": "x", "kind": "gossip"}))
            .error,
        "invalid_arguments"
    );
    assert_eq!(
        b.refused(
            NAME,
            json!({"task_id": "../x", "body": "x", "kind": "finding"})
        )
        .error,
        "invalid_arguments"
    );
    assert_eq!(
        b.refused(
            NAME,
            json!({"task_id": "T-0123456789abcdef", "body": "x", "kind": "finding"})
        )
        .error,
        "unknown_task"
    );
    assert_eq!(
        b.refused(
            NAME,
            json!({"task_id": t, "body": "x", "kind": "finding", "sender": "a b"})
        )
        .error,
        "invalid_arguments"
    );
    b.force(&t, TaskStatus::Cancelled);
    let e = b.refused(
        NAME,
        json!({"task_id": t, "body": "late", "kind": "finding"}),
    );
    assert_eq!(e.error, "task_finished");
    assert_eq!(e.extra["current_status"], "cancelled");
    let t2 = b.start("no key");
    b.config.signing_key = None;
    assert_eq!(
        b.refused(NAME, json!({"task_id": t2, "body": "x", "kind": "finding"}))
            .error,
        "signing_key_unavailable"
    );
    assert_eq!(b.snapshot.domain.mailbox(&t).entries, 0);
    assert_eq!(b.snapshot.domain.mailbox(&t2).entries, 0);
}

#[test]
fn a_mailbox_holds_a_bounded_number_of_unconsumed_messages() {
    let mut b = Bench::new();
    let t = b.start("chatty");
    for i in 0..MAX_UNCONSUMED {
        post(&mut b, &t, &format!("message {i}"));
    }
    let e = b.refused(
        NAME,
        json!({"task_id": t, "body": "one more", "kind": "finding"}),
    );
    assert_eq!(e.error, "mailbox_full");
    assert_eq!(e.extra["limit"], MAX_UNCONSUMED);
    assert_eq!(b.snapshot.domain.mailbox(&t).entries, MAX_UNCONSUMED);
}

mod claimer_status {
    use super::*;
    use crate::claims::ClaimReceipt;

    fn claim(b: &mut Bench, who: &str) -> ClaimReceipt {
        serde_json::from_value(b.ok("bernstein_claim", json!({"claimer_id": who}))).unwrap()
    }

    fn post_status(
        b: &mut Bench,
        task: &str,
        who: &str,
        status: &str,
        body: &str,
    ) -> Result<(), String> {
        b.call(
            NAME,
            json!({"task_id": task, "body": body, "kind": "finding", "sender": who, "status": status}),
        )
        .result
        .map(drop)
        .map_err(|e| e.error.to_string())
    }

    #[test]
    fn the_claimer_starts_fails_and_releases_along_the_lifecycle() {
        let mut b = Bench::new();
        let t = b.start("work");
        // No claimer yet: a status is refused.
        assert_eq!(
            post_status(&mut b, &t, "w1", "in_progress", "go"),
            Err("not_claimer".into())
        );
        claim(&mut b, "w1");
        assert_eq!(
            post_status(&mut b, &t, "w2", "in_progress", "go"),
            Err("not_claimer".into())
        );
        post_status(&mut b, &t, "w1", "in_progress", "go").unwrap();
        assert_eq!(b.status_of(&t), TaskStatus::InProgress);
        // Already in progress: no change, still accepted.
        post_status(&mut b, &t, "w1", "in_progress", "still").unwrap();
        post_status(&mut b, &t, "w1", "open", "shutting down").unwrap();
        assert_eq!(b.status_of(&t), TaskStatus::Open);
        assert!(b.snapshot.domain.task(&t).unwrap().claimer.is_none());
        // Released: claimable again, then failed with the (redacted) body as the reason.
        claim(&mut b, "w2");
        post_status(
            &mut b,
            &t,
            "w2",
            "failed",
            "exit 3: token ghp_abcdefghijklmnopqrstuvwxyz0123456789",
        )
        .unwrap();
        assert_eq!(b.status_of(&t), TaskStatus::Failed);
        let text = String::from_utf8(b.ledger_bytes()).unwrap();
        assert!(!text.contains("ghp_abcdefghijklmnopqrstuvwxyz0123456789"));
        let run = b.snapshot.domain.run(&t).unwrap();
        assert_eq!(run.status(), crate::RunStatus::Failed);
        // A finished task takes no more status.
        assert_eq!(
            post_status(&mut b, &t, "w2", "open", "x"),
            Err("task_finished".into())
        );
    }

    #[test]
    fn a_failed_last_subtask_blocks_its_waiting_parent() {
        let mut b = Bench::new();
        let root = b.start("root");
        let sub = b.subtask(&root, "sub");
        claim(&mut b, "w1");
        post_status(&mut b, &sub, "w1", "failed", "agent exited with status 1").unwrap();
        assert_eq!(b.status_of(&root), TaskStatus::Blocked);
    }
}
