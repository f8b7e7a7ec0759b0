use super::*;
use crate::capsule::{CapsuleLedgerCheck, CapsuleVerdict, TaskCapsule};
use crate::testkit::Bench;
use bernstein_core::ledger::Record;
use serde_json::json;

/// A task with two mailbox entries and an artifact, and its capsule.
fn bench_with_capsule() -> (Bench, String, Value) {
    let mut b = Bench::new();
    let t = b.start("work");
    for body in ["first finding", "second finding"] {
        b.ok(
            "bernstein_post_message",
            json!({"task_id": t, "body": body, "kind": "finding"}),
        );
    }
    b.ok(
        "bernstein_post_artifact",
        json!({"task_id": t, "key": "r.md", "kind": "report", "content": "# r"}),
    );
    let c = b.ok(NAME, json!({"task_id": t}));
    (b, t, c)
}

fn verify(b: &mut Bench, t: &str, c: &Value) -> CapsuleVerdict {
    serde_json::from_value(b.ok(NAME, json!({"task_id": t, "verify": true, "capsule": c}))).unwrap()
}

fn ledger_check(b: &Bench, c: &Value) -> CapsuleVerdict {
    let pem = b
        .config
        .signing_key
        .as_ref()
        .map(|s| s.public_key_pem().to_string());
    let mut check = CapsuleLedgerCheck::new(c, pem.as_deref());
    for line in b
        .ledger_bytes()
        .split(|&x| x == b'\n')
        .filter(|l| !l.is_empty())
    {
        check.push(&Record::parse_line(line, None).unwrap());
    }
    check.finish()
}

#[test]
fn a_capsule_holds_the_task_its_mailbox_artifacts_and_heads_and_verifies() {
    let (mut b, t, c) = bench_with_capsule();
    let cap: TaskCapsule = serde_json::from_value(c.clone()).unwrap();
    assert_eq!(cap.task.task_id, t);
    assert_eq!(cap.mailbox.len(), 2);
    assert_eq!(cap.mailbox[1].body, "second finding");
    assert_eq!(cap.artifacts.len(), 1);
    assert_eq!(cap.artifacts[0].key, "r.md");
    // The heads are the ledger's just before the issuance record.
    let issued = b
        .log
        .iter()
        .rev()
        .find(|r| r.kind == CAPSULE_ISSUED)
        .unwrap();
    assert_eq!(issued.sprev.to_string(), cap.heads.audit);
    assert_eq!(issued.txn[0], 1, "the issuance is first in its transaction");
    let journal = b
        .log
        .iter()
        .rev()
        .find(|r| r.stream == format!("run:{t}"))
        .unwrap();
    assert_eq!(journal.hash.to_string(), cap.heads.journal);
    let mailbox = b
        .log
        .iter()
        .rev()
        .find(|r| r.stream == format!("mailbox:{t}"))
        .unwrap();
    assert_eq!(mailbox.hash.to_string(), cap.heads.mailbox);
    let v = verify(&mut b, &t, &c);
    assert!(v.valid, "{:?}", v.problems);
    assert_eq!(v.capsule_hash.as_deref(), Some(cap.capsule_hash.as_str()));
    let offline = ledger_check(&b, &c);
    assert!(offline.valid, "{:?}", offline.problems);
    // Verifying records nothing but the call's audit record.
    let n = b.log.len();
    let out = b.call(NAME, json!({"task_id": t, "verify": true, "capsule": c}));
    assert!(out.drafts.is_empty());
    assert_eq!(b.log.len(), n + 1);
}

#[test]
fn a_flipped_byte_anywhere_fails_verification() {
    let (mut b, t, c) = bench_with_capsule();
    let text = serde_json::to_string(&c).unwrap();
    let targets = [
        "second finding",
        "\"# r\"",
        "\"status\":\"open\"",
        "\"seq\":",
    ];
    for target in targets {
        let at = text
            .find(target)
            .unwrap_or_else(|| panic!("{target} in capsule"))
            + target.len()
            - 2;
        let mut bytes = text.clone().into_bytes();
        bytes[at] ^= if bytes[at].is_ascii_digit() {
            0x01
        } else {
            0x20
        };
        let Ok(tampered) = serde_json::from_slice::<Value>(&bytes) else {
            continue;
        };
        assert!(!verify(&mut b, &t, &tampered).valid, "{target}");
        assert!(!ledger_check(&b, &tampered).valid, "{target}");
    }
    for field in ["capsule_hash", "signature"] {
        let mut tampered = c.clone();
        let s = tampered[field].as_str().unwrap().to_string();
        let flipped = if s.ends_with('A') {
            format!("{}B", &s[..s.len() - 1])
        } else {
            format!("{}A", &s[..s.len() - 1])
        };
        tampered[field] = json!(flipped);
        let v = verify(&mut b, &t, &tampered);
        assert!(!v.valid, "{field}");
    }
    // Re-hashed and re-signed by another key: the signature is fine, the signer and the
    // issuance are not.
    let mut other = c.clone();
    other["task"]["title"] = json!("other");
    let mut cap: TaskCapsule = serde_json::from_value(other).unwrap();
    let stranger = bernstein_core::signing::Signer::from_seed(&[9; 32]);
    cap.signer_public_key_pem = stranger.public_key_pem().to_string();
    cap.capsule_hash = crate::capsule::capsule_hash(&cap);
    cap.signature = stranger.sign(&crate::capsule::signed_message(&cap.capsule_hash));
    let v = verify(&mut b, &t, &serde_json::to_value(&cap).unwrap());
    assert!(!v.valid);
    assert!(
        v.problems.iter().any(|p| p.contains("key other than")),
        "{:?}",
        v.problems
    );
    assert!(
        v.problems.iter().any(|p| p.contains("not issued")),
        "{:?}",
        v.problems
    );
    let junk = verify(&mut b, &t, &json!({"type": "x"}));
    assert!(!junk.valid && junk.capsule_hash.is_none());
}

#[test]
fn a_capsule_from_another_ledger_is_not_on_this_one() {
    let (_, t, c) = bench_with_capsule();
    // Same key, same task id, same history, but this ledger never issued the capsule.
    let mut b = Bench::new();
    assert_eq!(b.start("work"), t);
    let v = verify(&mut b, &t, &c);
    assert!(!v.valid);
    assert!(
        v.problems[0].contains("not issued by this ledger"),
        "{:?}",
        v.problems
    );
    assert!(!ledger_check(&b, &c).valid);
}

#[test]
fn argument_mistakes_are_refusals() {
    let (mut b, t, c) = bench_with_capsule();
    assert_eq!(
        b.refused(NAME, json!({"task_id": t, "verify": true})).error,
        "invalid_arguments"
    );
    assert_eq!(
        b.refused(NAME, json!({"task_id": t, "capsule": c})).error,
        "invalid_arguments"
    );
    assert_eq!(
        b.refused(NAME, json!({"task_id": "x"})).error,
        "invalid_arguments"
    );
    assert_eq!(
        b.refused(NAME, json!({"task_id": "T-0123456789abcdef"}))
            .error,
        "unknown_task"
    );
    let other = b.start("other");
    let v = verify(&mut b, &other, &c);
    assert!(!v.valid && v.problems.iter().any(|p| p.contains("another task")));
    b.config.signing_key = None;
    assert_eq!(
        b.refused(NAME, json!({"task_id": t})).error,
        "signing_key_unavailable"
    );
}
