use serde_json::{Value, json};

use super::verify::PastedCheck;
use super::*;
use crate::testkit::{Bench, TEST_AUDIT_KEY};
use crate::tools::{claim, post_message, run, run_status, status};

fn facts() -> ServerFacts<'static> {
    ServerFacts {
        version: "9.9.9",
        read_only: true,
        store: StoreFacts {
            kind: "file",
            ledger_bytes: Some(123),
            ..StoreFacts::default()
        },
        signed_head: None,
    }
}

/// A bench with a claimed run, an idle run and a cancelled one, plus one refused call.
fn bench() -> (Bench, String, String) {
    let mut b = Bench::new();
    b.stamp_calls = true;
    let claimed = b.start("build the parser");
    b.ok(claim::NAME, json!({"claimer_id": "worker-7"}));
    let _idle = b.start("write the docs");
    let cancelled = b.start("abandoned idea");
    b.ok("bernstein_cancel", json!({"task_id": cancelled}));
    b.ok(
        post_message::NAME,
        json!({"task_id": claimed, "body": "halfway there", "kind": "finding", "sender": "worker-7"}),
    );
    b.refused(status::NAME, json!({"run_id": "not a run id"}));
    (b, claimed, cancelled)
}

#[test]
fn the_overview_shows_runs_tasks_and_calls() {
    let (b, claimed, cancelled) = bench();
    let v = overview(&b.snapshot, &facts(), b.now, 3600);
    assert_eq!(v["server"]["version"], "9.9.9");
    assert_eq!(v["server"]["read_only"], true);
    assert_eq!(v["ledger"]["records"], b.snapshot.position.seq);
    assert_eq!(v["ledger"]["head"], b.snapshot.position.head.to_string());
    assert_eq!(v["ledger"]["bytes"], 123);
    let runs = v["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 3);
    // Newest first.
    assert_eq!(runs[0]["goal"], "abandoned idea");
    assert_eq!(runs[0]["status"], "cancelled");
    assert_eq!(runs[0]["run_id"], cancelled.as_str());
    let parser = runs
        .iter()
        .find(|r| r["run_id"] == claimed.as_str())
        .unwrap();
    assert_eq!(parser["status"], "working");
    assert_eq!(parser["tasks"][0]["claimer"], "worker-7");
    assert_eq!(parser["tasks"][0]["status"], "claimed");
    assert!(parser["tasks"][0]["lease_expires_at"].as_u64().is_some());
    assert_eq!(parser["progress"]["total"], 1);
    let calls = &v["calls"];
    assert_eq!(calls["by_tool"]["bernstein_run"], 3);
    assert_eq!(calls["refusals"].as_object().unwrap().len(), 1);
    assert_eq!(calls["refused"], 1);
    let per_minute = calls["per_minute"].as_array().unwrap();
    assert_eq!(per_minute.len(), 60);
    let counted: u64 = per_minute
        .iter()
        .map(|m| m["calls"].as_u64().unwrap())
        .sum();
    assert_eq!(counted, calls["total"].as_u64().unwrap());
    assert_eq!(v["tasks_by_status"]["claimed"], 1);
}

#[test]
fn a_task_shows_its_mailbox_with_signature_state() {
    let (b, claimed, _) = bench();
    let pem = b
        .config
        .signing_key
        .as_ref()
        .unwrap()
        .public_key_pem()
        .to_string();
    let v = task(&b.snapshot.domain, &claimed, Some(&pem)).unwrap();
    assert_eq!(v["task"]["goal"], "build the parser");
    assert_eq!(v["mailbox"][0]["body"], "halfway there");
    assert_eq!(v["mailbox"][0]["signature"], "valid");
    let other = task(&b.snapshot.domain, &claimed, Some("another key")).unwrap();
    assert_eq!(other["mailbox"][0]["signature"], "foreign");
    assert!(task(&b.snapshot.domain, "T-0000000000000000", None).is_none());
}

fn check(b: &Bench, pasted: &[u8]) -> Value {
    let mut c = PastedCheck::new(
        pasted,
        &b.snapshot.domain,
        "ledger.jsonl",
        Some(TEST_AUDIT_KEY),
        None,
    )
    .unwrap();
    for line in b
        .ledger_bytes()
        .split(|&x| x == b'\n')
        .filter(|l| !l.is_empty())
    {
        if !c.wants_lines() {
            break;
        }
        c.push_line(line);
    }
    c.finish()
}

#[test]
fn pasted_handles_and_receipts_are_checked_against_the_ledger() {
    let mut b = Bench::new();
    let run_id = b.start("verify me");
    let handle = b.ok(run_status::NAME, json!({"run_id": run_id}));
    let saved = json!({"result": {"structuredContent": handle}}).to_string();
    let v = check(&b, saved.as_bytes());
    assert_eq!(
        (v["kind"].as_str(), v["valid"].as_bool()),
        (Some("run_handle"), Some(true)),
        "{v}"
    );
    let forged = handle.to_string().replace("\"working\"", "\"completed\"");
    let v = check(&b, forged.as_bytes());
    assert_eq!(
        (v["kind"].as_str(), v["valid"].as_bool()),
        (Some("run_handle"), Some(false)),
        "{v}"
    );

    let receipt = b.ok(claim::NAME, json!({"claimer_id": "w1"}));
    let v = check(&b, receipt.to_string().as_bytes());
    assert_eq!(
        (v["kind"].as_str(), v["valid"].as_bool()),
        (Some("claim_receipt"), Some(true)),
        "{v}"
    );
    let mut tampered = receipt.clone();
    tampered["claimerId"] = json!("mallory");
    let v = check(&b, tampered.to_string().as_bytes());
    assert_eq!(
        (v["kind"].as_str(), v["valid"].as_bool()),
        (Some("claim_receipt"), Some(false)),
        "{v}"
    );

    assert_eq!(check(&b, b"{\"hello\": 1}")["kind"], "unknown");
    assert!(PastedCheck::new(b"not json", &b.snapshot.domain, "l", None, None).is_err());
    let _ = run::NAME;
}

fn facts_of(kind: &'static str, bytes: Option<u64>) -> ServerFacts<'static> {
    ServerFacts {
        store: StoreFacts {
            kind,
            ledger_bytes: bytes,
            ..StoreFacts::default()
        },
        ..facts()
    }
}

#[test]
fn every_store_has_every_ledger_field() {
    let (b, _, _) = bench();
    // PostgreSQL: records and head as any store, and its table's size as the bytes.
    let pg = overview(&b.snapshot, &facts_of("postgres", Some(8192)), b.now, 3600);
    let ledger = &pg["ledger"];
    assert_eq!(ledger["store"], "postgres");
    assert_eq!(ledger["records"], b.snapshot.position.seq);
    assert_eq!(ledger["head"], b.snapshot.position.head.to_string());
    assert_eq!(ledger["bytes"], 8192);
    assert_eq!(ledger["not_applicable"], json!([]));
    // A size a store cannot tell now is null, not inapplicable.
    let file = overview(&b.snapshot, &facts_of("file", None), b.now, 3600);
    assert_eq!(file["ledger"]["bytes"], Value::Null);
    assert_eq!(file["ledger"]["not_applicable"], json!([]));
    let file = overview(&b.snapshot, &facts(), b.now, 3600);
    assert_eq!(file["ledger"]["bytes"], 123);
}

#[test]
fn the_workers_panel_lists_each_claimer_with_its_task_and_lease() {
    let (mut b, claimed, _) = bench();
    let claimed_at = b.snapshot.domain.task(&claimed).unwrap().updated_at;
    // Another claimer takes a task, finishes it, and holds nothing after.
    b.now = Timestamp(b.now.0 + 60_000);
    let other = b.ok(claim::NAME, json!({"claimer_id": "worker-9"}))["taskId"]
        .as_str()
        .unwrap()
        .to_string();
    b.ok(
        "bernstein_complete",
        json!({"task_id": other, "result_summary": "done", "claimer_id": "worker-9"}),
    );
    let v = overview(&b.snapshot, &facts(), b.now, 3600);
    let w = &v["workers"];
    assert_eq!(w["total"], 2);
    assert_eq!(w["truncated"], false);
    assert_eq!(w["max_rows"], workers::MAX_WORKERS);
    let rows = w["rows"].as_array().unwrap();
    // The most recently active first.
    assert_eq!(rows[0]["claimer"], "worker-9");
    assert_eq!(rows[0]["held"], 0);
    assert_eq!(rows[0]["holds_task"], false);
    assert_eq!(rows[0]["task"]["id"], other.as_str());
    assert_eq!(rows[0]["task"]["status"], "done");
    assert_eq!(rows[0]["claimed_at"], Value::Null);
    assert_eq!(rows[0]["lease_expires_at"], Value::Null);
    let done = b.snapshot.domain.task(&other).unwrap();
    assert_eq!(rows[0]["last_active_at"], done.updated_at);
    assert!(done.updated_at > claimed_at);

    let held = &rows[1];
    let row = b.snapshot.domain.task(&claimed).unwrap();
    assert_eq!(held["claimer"], "worker-7");
    assert_eq!(held["held"], 1);
    assert_eq!(held["holds_task"], true);
    assert_eq!(held["task"]["id"], claimed.as_str());
    assert_eq!(held["task"]["title"], row.title.as_str());
    assert_eq!(held["task"]["status"], "claimed");
    assert_eq!(held["claimed_at"], claimed_at);
    let lease = row.rare.lease_expires_at.unwrap();
    assert_eq!(held["lease_expires_at"], lease);
    assert_eq!(held["lease_expired"], false);
    // Its message renewed the lease: that is its last activity.
    assert_eq!(held["last_active_at"], lease - row.rare.lease_ms.unwrap());

    // Past the lease's end the row says it expired.
    let later = overview(&b.snapshot, &facts(), Timestamp(lease + 1), 3600);
    assert_eq!(later["workers"]["rows"][1]["lease_expired"], true);
}

#[test]
fn the_workers_panel_is_bounded_and_never_shows_a_secret() {
    let mut b = Bench::new();
    for i in 0..workers::MAX_WORKERS + 5 {
        b.start(&format!("task {i}"));
        b.ok(claim::NAME, json!({"claimer_id": format!("w-{i}")}));
    }
    // The claim tool refuses such an id; a ledger written before it did may still hold one.
    let secret = "AKIAABCDEFGHIJKLMNOP";
    let task = b.start("a task for a badly named worker");
    let (mut backlog, journal) = crate::status_changes::status_change_drafts(
        &b.snapshot.domain,
        &task,
        TaskStatus::Claimed,
        None,
        b.now.0,
    )
    .unwrap();
    backlog.body["actor"] = json!(secret);
    b.commit(vec![backlog, journal]);
    assert_eq!(
        b.snapshot.domain.task(&task).unwrap().claimer.as_deref(),
        Some(secret)
    );
    let v = overview(&b.snapshot, &facts(), b.now, 3600);
    let w = &v["workers"];
    assert_eq!(w["total"], workers::MAX_WORKERS + 6);
    assert_eq!(w["truncated"], true);
    assert_eq!(w["rows"].as_array().unwrap().len(), workers::MAX_WORKERS);
    let text = v.to_string();
    assert!(!text.contains(secret), "a secret claimer id leaked");
    // The newest claimer first, its id redacted.
    assert_eq!(w["rows"][0]["claimer"], "[REDACTED:aws_access_key]");
    assert_eq!(w["rows"][0]["task"]["id"], task.as_str());
}
