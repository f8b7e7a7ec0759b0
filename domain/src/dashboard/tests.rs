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
