//! The projection's persistent collections: a clone shares its structure and is independent of
//! the original afterwards, and every index serializes exactly as the `BTreeMap`/`BTreeSet` it
//! replaced (checkpoint bytes must not change).

use std::collections::{BTreeMap, BTreeSet};

use imbl::{OrdMap, OrdSet};
use serde::Serialize;
use serde_json::json;

use super::*;
use crate::Snapshot;
use crate::testkit::Bench;

/// A ledger that fills every index: many runs (several levels of tree nodes), subtasks,
/// claims with leases, mailbox messages, artifacts, a capsule and a plan root.
fn rich_bench() -> Bench {
    let mut b = Bench::new();
    let mut roots = Vec::new();
    for i in 0..40 {
        let root = b.start(&format!("goal {i}"));
        for j in 0..3 {
            b.subtask(&root, &format!("sub {i}.{j}"));
        }
        roots.push(root);
    }
    for w in 0..6 {
        let v = b.ok("bernstein_claim", json!({"claimer_id": format!("w{w}")}));
        let Some(t) = v["taskId"].as_str().filter(|t| !t.is_empty()) else {
            continue;
        };
        let t = t.to_string();
        b.ok(
            "bernstein_post_message",
            json!({"task_id": t, "body": format!("finding {w}"), "kind": "finding"}),
        );
        b.ok(
            "bernstein_post_artifact",
            json!({"task_id": t, "key": format!("r{w}.md"), "kind": "report", "content": "# r"}),
        );
        if w % 2 == 0 {
            b.ok("bernstein_task_capsule", json!({"task_id": t}));
        }
        if w == 3 {
            b.ok(
                "bernstein_complete",
                json!({"task_id": t, "result_summary": "done"}),
            );
        }
    }
    b.ok(
        "bernstein_cancel",
        json!({"task_id": roots[7], "reason": "not needed"}),
    );
    b.planned_root("T-planned");
    b.ok("bernstein_run", json!({"goal": "the plan", "plan": true}));
    b
}

fn same_map<K: Ord + Clone + Serialize, V: Clone + Serialize>(name: &str, m: &OrdMap<K, V>) {
    let tree: BTreeMap<&K, &V> = m.iter().collect();
    assert_eq!(
        serde_json::to_string(m).unwrap(),
        serde_json::to_string(&tree).unwrap(),
        "{name}"
    );
}

fn same_set<A: Ord + Clone + Serialize>(name: &str, s: &OrdSet<A>) {
    let tree: BTreeSet<&A> = s.iter().collect();
    assert_eq!(
        serde_json::to_string(s).unwrap(),
        serde_json::to_string(&tree).unwrap(),
        "{name}"
    );
}

#[test]
fn every_index_serializes_like_the_btree_it_replaced() {
    let b = rich_bench();
    let p = &b.snapshot.domain;
    assert!(p.tasks.len() > 100, "{}", p.tasks.len());
    assert!(p.leases.len() > 1, "{}", p.leases.len());
    assert!(!p.plans.is_empty());
    assert!(!p.mailboxes.is_empty() && p.artifacts().latest("r0.md").is_some());
    let kinds: BTreeSet<&str> = b.log.iter().map(|r| r.kind.as_str()).collect();
    assert!(kinds.contains(capsule_index::CAPSULE_ISSUED) && kinds.contains(lease::TASK_LEASE));
    same_map("tasks", &p.tasks);
    same_map("by_creation", &p.by_creation);
    let by_status: OrdMap<TaskStatus, BTreeSet<u64>> = p
        .by_status
        .iter()
        .map(|(k, v)| (*k, v.iter().copied().collect::<BTreeSet<u64>>()))
        .collect();
    same_map("by_status", &by_status);
    for (status, set) in &p.by_status {
        same_set(status.as_str(), set);
    }
    same_map("roles", &p.roles);
    same_map("runs", &p.runs);
    for run in p.runs.values() {
        let tree: BTreeMap<&str, TaskStatus> = run.members.iter().collect();
        assert_eq!(
            serde_json::to_string(&run.members).unwrap(),
            serde_json::to_string(&tree).unwrap(),
            "{}",
            run.run_id
        );
    }
    same_set("open_queue", &p.open_queue);
    same_map("mailboxes", &p.mailboxes);
    same_set("plans", &p.plans);
    same_set("leases", &p.leases);
    same_map("stream_heads", &b.snapshot.stream_heads);
}

#[test]
fn a_clone_shares_structure_and_diverges_on_write() {
    let mut b = rich_bench();
    let before = b.snapshot.clone();
    let text = serde_json::to_string(&before).unwrap();
    assert!(before.domain.tasks.ptr_eq(&b.snapshot.domain.tasks));
    assert!(before.stream_heads.ptr_eq(&b.snapshot.stream_heads));
    let extra = b.start("after the clone");
    b.ok("bernstein_claim", json!({"claimer_id": "late"}));
    // The clone still reads the old state, byte for byte; the original moved on.
    assert_eq!(serde_json::to_string(&before).unwrap(), text);
    assert!(before.domain.task(&extra).is_none());
    assert!(b.snapshot.domain.task(&extra).is_some());
    assert!(!before.domain.tasks.ptr_eq(&b.snapshot.domain.tasks));
    // Folding the whole ledger afresh gives what the copy-on-write fold gave.
    let mut fresh = Snapshot::genesis();
    for r in &b.log {
        fresh.apply(r).unwrap();
    }
    assert_eq!(fresh.domain, b.snapshot.domain);
    assert_eq!(fresh.stream_heads, b.snapshot.stream_heads);
    // And a checkpoint round-trips to the same bytes.
    let ck = serde_json::to_string(&b.snapshot).unwrap();
    let back: Snapshot = serde_json::from_str(&ck).unwrap();
    assert_eq!(serde_json::to_string(&back).unwrap(), ck);
    assert_eq!(back.domain, b.snapshot.domain);
}
