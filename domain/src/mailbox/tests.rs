use super::*;
use crate::testkit::{Bench, TEST_AUDIT_KEY};
use bernstein_core::ledger::{Draft, LedgerPosition, seal};
use serde_json::Value;

fn bench_with_messages() -> (Bench, String, String) {
    let mut b = Bench::new();
    let t1 = b.start("one");
    let t2 = b.start("two");
    for (t, body) in [
        (&t1, "first"),
        (&t2, "other task"),
        (&t1, "token ghp_abcdefghijklmnopqrstuvwxyz0123456789"),
        (&t1, "third"),
    ] {
        b.ok(
            "bernstein_post_message",
            serde_json::json!({"task_id": t, "body": body, "kind": "finding"}),
        );
    }
    (b, t1, t2)
}

#[test]
fn a_clean_ledger_verifies_every_mailbox() {
    let (b, t1, t2) = bench_with_messages();
    let pem = b
        .config
        .signing_key
        .as_ref()
        .unwrap()
        .public_key_pem()
        .to_string();
    let r = verify_mailboxes(
        &b.ledger_bytes(),
        "l",
        Some(TEST_AUDIT_KEY),
        None,
        Some(&pem),
    )
    .unwrap();
    assert_eq!(r.entries[&t1], 3);
    assert_eq!(r.entries[&t2], 1);
    assert!(
        r.summary()
            .starts_with("OK: 4 mailbox entries in 2 mailboxes")
    );
    let only = verify_mailboxes(&b.ledger_bytes(), "l", None, Some(&t2), None).unwrap();
    assert_eq!(only.entries.len(), 1);
    assert!(only.summary().contains("NOT verified"));
}

#[test]
fn a_tampered_mailbox_line_fails_at_that_line() {
    let (b, _, _) = bench_with_messages();
    let bytes = b.ledger_bytes();
    let text = String::from_utf8(bytes.clone()).unwrap();
    let (i, line) = text
        .lines()
        .enumerate()
        .find(|(_, l)| l.contains("\"third\""))
        .unwrap();
    let edited = text.replacen(line, &line.replace("\"third\"", "\"THIRD\""), 1);
    let e = verify_mailboxes(edited.as_bytes(), "l", None, None, None).unwrap_err();
    assert_eq!(e.check, MailboxCheck::Ledger);
    assert_eq!(e.line, i as u64 + 1);
    assert!(e.to_string().contains("hash mismatch"), "{e}");
}

/// Re-chains records as an attacker without the audit key would (the MACs become wrong, so
/// this only fools a check that has no key).
fn reseal(records: &[Record]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut pos = LedgerPosition::GENESIS;
    let mut heads = std::collections::HashMap::new();
    let mut i = 0;
    while i < records.len() {
        let n = records[i].txn[1] as usize;
        let drafts: Vec<Draft> = records[i..i + n]
            .iter()
            .map(|r| Draft::new(r.stream.clone(), r.kind.clone(), r.body.clone()))
            .collect();
        let recs = seal(
            &pos,
            |s| heads.get(s).copied().unwrap_or(Digest::ZERO),
            drafts,
            b"x",
        );
        for r in &recs {
            heads.insert(r.stream.clone(), r.hash);
            out.extend(r.to_line());
        }
        pos = LedgerPosition {
            seq: recs[n - 1].seq,
            head: recs[n - 1].hash,
        };
        i += n;
    }
    out
}

fn edit_entry(b: &Bench, body: &str, f: impl Fn(&mut Value)) -> Vec<u8> {
    let mut log = b.log.clone();
    let rec = log
        .iter_mut()
        .find(|r| r.kind == "mailbox.message" && r.body["body"] == body)
        .unwrap();
    f(&mut rec.body);
    reseal(&log)
}

#[test]
fn rewritten_entries_fail_their_named_check_even_without_the_key() {
    let (b, _, _) = bench_with_messages();
    let check = |bytes: Vec<u8>| {
        verify_mailboxes(&bytes, "l", None, None, None)
            .unwrap_err()
            .check
    };
    assert_eq!(
        check(edit_entry(&b, "third", |v| v["body"] = "THIRD".into())),
        MailboxCheck::BodyHash
    );
    assert_eq!(
        check(edit_entry(&b, "third", |v| {
            v["body"] = "THIRD".into();
            v["body_hash"] = body_hash("THIRD").into();
        })),
        MailboxCheck::EntryHash
    );
    assert_eq!(
        check(edit_entry(&b, "third", |v| {
            v["body"] = "THIRD".into();
            v["body_hash"] = body_hash("THIRD").into();
            let e: MailboxEntry = serde_json::from_value(v.clone()).unwrap();
            v["entry_hash"] = entry_hash(&e).into();
        })),
        MailboxCheck::Signature
    );
    assert_eq!(
        check(edit_entry(&b, "third", |v| v["seq"] = 7.into())),
        MailboxCheck::Sequence
    );
    assert_eq!(
        check(edit_entry(&b, "first", |v| v["prev_entry_hash"] =
            Digest::of(b"x").to_string().into())),
        MailboxCheck::PrevEntryHash
    );
    assert_eq!(
        check(edit_entry(&b, "first", |v| v["surprise"] = 1.into())),
        MailboxCheck::EntryShape
    );
    // A mirror that disagrees with its entry.
    let mut log = b.log.clone();
    let m = log
        .iter_mut()
        .find(|r| r.kind == "task.mailbox_message")
        .unwrap();
    m.body["redactions"] = 5.into();
    assert_eq!(check(reseal(&log)), MailboxCheck::Mirror);
    // With the key, the same rewrite fails at the HMAC tag.
    let bytes = edit_entry(&b, "third", |v| v["body"] = "THIRD".into());
    assert_eq!(
        verify_mailboxes(&bytes, "l", Some(TEST_AUDIT_KEY), None, None)
            .unwrap_err()
            .check,
        MailboxCheck::Ledger
    );
}

#[test]
fn another_signer_is_refused_when_the_project_key_is_known() {
    let (b, _, _) = bench_with_messages();
    let other = Signer::from_seed(&[3; 32]);
    let e = verify_mailboxes(
        &b.ledger_bytes(),
        "l",
        None,
        None,
        Some(other.public_key_pem()),
    )
    .unwrap_err();
    assert_eq!(e.check, MailboxCheck::SignerKey);
}
