use super::*;
use crate::handle::receipt_hash;
use crate::lifecycle::TaskStatus;
use crate::runs::RunStatus;
use crate::testkit::{Bench, TEST_AUDIT_KEY};
use serde_json::json;

fn check(b: &Bench, handle: &Value) -> Result<HandleReport, HandleFailure> {
    verify_handle_on_ledger(
        handle,
        &b.ledger_bytes(),
        "ledger.jsonl",
        Some(TEST_AUDIT_KEY),
    )
}

/// `h` with `field` set to `value` and its receiptHash recomputed (a careful forger).
fn forge(h: &Value, field: &str, value: Value) -> Value {
    let mut f = h.clone();
    f[field] = value;
    let status: RunStatus = serde_json::from_value(f["status"].clone()).unwrap();
    let s = |k: &str| f[k].as_str().unwrap().to_string();
    f["receiptHash"] = json!(receipt_hash(
        &s("taskId"),
        &s("runId"),
        status,
        &s("journalHead"),
        &s("chainHead"),
        &s("specRevision")
    ));
    f
}

#[test]
fn a_served_handle_verifies_and_later_is_reported_superseded() {
    let mut b = Bench::new();
    let run = b.start("work");
    let h = b.ok("bernstein_run_status", json!({"run_id": run}));
    let r = check(&b, &h).unwrap();
    assert!(r.current);
    assert_eq!(r.handle.run_id, run);
    assert!(r.summary().starts_with("OK:"), "{}", r.summary());
    b.force(&run, TaskStatus::Claimed);
    b.force(&run, TaskStatus::Done);
    let done = b.ok("bernstein_run_status", json!({"run_id": run}));
    assert_eq!(done["status"], "completed");
    let old = check(&b, &h).unwrap();
    assert!(!old.current);
    assert!(old.summary().contains("superseded"));
    assert!(check(&b, &done).unwrap().current);
}

#[test]
fn forged_handles_fail_with_the_link_they_break() {
    let mut b = Bench::new();
    let run = b.start("work");
    let h = b.ok("bernstein_run_status", json!({"run_id": run}));
    b.ok("bernstein_run_status", json!({"run_id": run}));
    let poll_audit = b.snapshot.domain.audit_head().to_string();
    // A status the run never had at that journal head.
    let e = check(&b, &forge(&h, "status", json!("completed"))).unwrap_err();
    assert_eq!(e.check, HandleCheck::Anchor, "{e}");
    assert!(e.to_string().contains("was working, not completed"), "{e}");
    // A real audit record that does not anchor the journal head (a poll's).
    let e = check(&b, &forge(&h, "chainHead", json!(poll_audit))).unwrap_err();
    assert_eq!(e.check, HandleCheck::Anchor, "{e}");
    assert!(e.to_string().contains("forged or spliced"), "{e}");
    // A hash on no chain at all.
    let e = check(
        &b,
        &forge(&h, "chainHead", json!(Digest::of(b"x").to_string())),
    )
    .unwrap_err();
    assert_eq!(e.check, HandleCheck::ChainHead);
    let e = check(
        &b,
        &forge(&h, "journalHead", json!(Digest::of(b"x").to_string())),
    )
    .unwrap_err();
    assert_eq!(e.check, HandleCheck::JournalHead);
    let other = "T-0123456789abcdef";
    let mut elsewhere = forge(&h, "runId", json!(other));
    elsewhere["pollToken"] = json!(crate::handle::poll_token(other));
    let e = check(&b, &forge(&elsewhere, "taskId", json!(other))).unwrap_err();
    assert_eq!(e.check, HandleCheck::Run);
    // A flipped byte without re-hashing: the handle's own check.
    let mut flipped = h.clone();
    flipped["status"] = json!("failed");
    assert_eq!(check(&b, &flipped).unwrap_err().check, HandleCheck::Handle);
    // A tampered ledger fails as a ledger.
    let mut bytes = b.ledger_bytes();
    let at = bytes.iter().position(|&x| x == b'w').unwrap();
    bytes[at] = b'W';
    let e = verify_handle_on_ledger(&h, &bytes, "l", Some(TEST_AUDIT_KEY)).unwrap_err();
    assert_eq!(e.check, HandleCheck::Ledger);
}

#[test]
fn the_handle_is_found_inside_what_hosts_save() {
    let mut b = Bench::new();
    let run = b.start("work");
    let h = b.ok("bernstein_run_status", json!({"run_id": run}));
    let text = serde_json::to_string(&h).unwrap();
    let wrappers = [
        h.clone(),
        json!({"result": h, "_meter": {"tokens": 1}}),
        json!({"content": [{"type": "text", "text": text}], "isError": false}),
        json!({"content": [], "structuredContent": h}),
        json!({"jsonrpc": "2.0", "id": 1, "result": {"content": [{"type": "text", "text": text}]}}),
    ];
    for w in wrappers {
        assert_eq!(extract_handle(&w).as_ref(), Some(&h), "{w}");
    }
    assert_eq!(
        extract_handle(&json!({"content": [{"type": "text", "text": "nope"}]})),
        None
    );
    assert_eq!(extract_handle(&json!([h])), None);
}
