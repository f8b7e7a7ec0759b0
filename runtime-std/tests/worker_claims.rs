//! N claimer processes against M tasks on one `.sdd/`: every task is claimed exactly once,
//! every claimer ends with a signed refusal receipt, and every receipt (grant or refusal)
//! verifies offline against the final ledger.

mod worker_support;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};

use bernstein_core::signing::Signer;
use bernstein_domain::claim_verify::verify_claim_receipt;
use bernstein_domain::claims::{ClaimReceipt, check_receipt};
use bernstein_store_file::keys::load_signing_key;
use bernstein_store_file::test_dir::TestDir;
use serde_json::json;

use worker_support::{Answer, Worker, field, spawn_child};

const CLAIMERS: usize = 6;
const TASKS: usize = 36;

/// Child mode: claim until refused, printing every receipt as `receipt <json>`.
#[test]
fn child() {
    let Ok(dir) = std::env::var("BERNSTEIN_CLAIM_DIR") else {
        return;
    };
    let me = std::env::var("BERNSTEIN_CLAIMER").unwrap();
    let w = Worker::open(std::path::Path::new(&dir));
    loop {
        let receipt = match w.call("bernstein_claim", json!({"claimer_id": me})) {
            Answer::Ok(v) => v,
            Answer::Refused(e) => panic!("claim refused: {e}"),
        };
        println!("receipt {receipt}");
        if receipt["granted"] == false {
            break;
        }
    }
}

#[test]
fn every_task_is_claimed_exactly_once_and_every_refusal_is_signed() {
    let tmp = TestDir::new("claims");
    let w = Worker::open(tmp.path());
    let root = w.start("root");
    let mut tasks = vec![root.clone()];
    for i in 0..TASKS - 1 {
        // Half are subtasks of the root (which then waits and is not offered).
        let args = if i % 2 == 0 {
            json!({"goal": format!("t{i}"), "parent_task_id": root})
        } else {
            json!({"goal": format!("t{i}")})
        };
        let v = w.call("bernstein_run", args).ok();
        tasks.push(v["task_id"].as_str().unwrap().to_string());
    }
    tasks.retain(|t| *t != root);
    drop(w);
    let dir = tmp.path().display().to_string();
    let children: Vec<_> = (0..CLAIMERS)
        .map(|i| {
            spawn_child(&[
                ("BERNSTEIN_CLAIM_DIR", dir.clone()),
                ("BERNSTEIN_CLAIMER", format!("claimer-{i}")),
            ])
        })
        .collect();
    let mut receipts: Vec<ClaimReceipt> = Vec::new();
    for child in children {
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "a claimer failed");
        for line in BufReader::new(&out.stdout[..]).lines() {
            let line = line.unwrap();
            if let Some(json) = field(&line, "receipt ") {
                receipts.push(serde_json::from_str(json).unwrap());
            }
        }
    }
    let mut winners: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut refusals = 0;
    for r in &receipts {
        check_receipt(r).unwrap();
        if r.granted {
            winners
                .entry(r.task_id.clone())
                .or_default()
                .push(r.claimer_id.clone());
        } else {
            assert_eq!(r.task_id, "");
            refusals += 1;
        }
    }
    assert_eq!(
        refusals, CLAIMERS,
        "each claimer stops at one signed refusal"
    );
    assert_eq!(winners.len(), tasks.len(), "every task was claimed");
    for (task, who) in &winners {
        assert_eq!(who.len(), 1, "{task} was claimed by {who:?}");
        assert!(tasks.contains(task));
    }
    // Every receipt verifies offline against the final ledger, bound to the project's key.
    let w = Worker::open(tmp.path());
    let seed = load_signing_key(&tmp.path().join(".sdd")).unwrap().unwrap();
    let pem = Signer::from_seed(&seed).public_key_pem().to_string();
    let ledger = Worker::ledger(tmp.path());
    for r in receipts {
        verify_claim_receipt(r, &ledger, "ledger.jsonl", Some(&w.audit_key), Some(&pem)).unwrap();
    }
}
