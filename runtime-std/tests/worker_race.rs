//! The race the Python implementation documents: a task enters waiting_for_subtasks between a
//! completion's read and its write. Here every gate reads and writes in one compare-and-append
//! against the snapshot it read, so the completion is refused, never applied.
//!
//! 1. Deterministically: a completion decided on a snapshot, then a subtask committed, then the
//!    completion's append: refused as a conflict; decided again, it is `task_not_completable`.
//! 2. Under load: completer processes and splitter processes race over the same tasks; at the
//!    end every task is either done with no subtask or waiting for its subtasks with every
//!    completion refused, and the ledger holds no status change the lifecycle forbids.

mod worker_support;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};

use bernstein_core::ledger::verify::verify_ledger;
use bernstein_core::ledger::{AppendResult, Store};
use bernstein_core::protocol::TransportFacts;
use bernstein_core::time::Clock;
use bernstein_domain::Input;
use bernstein_domain::TaskStatus;
use bernstein_os::clock::SystemClock;
use bernstein_store_file::test_dir::TestDir;
use serde_json::json;

use worker_support::{Answer, Worker, field, spawn_child};

const TASKS: usize = 40;
const COMPLETERS: usize = 3;
const SPLITTERS: usize = 3;

#[test]
fn a_completion_decided_before_a_split_is_never_applied() {
    let tmp = TestDir::new("race-deterministic");
    let w = Worker::open(tmp.path());
    let task = w.start("parent");
    w.call("bernstein_claim", json!({"claimer_id": "w1"})).ok();

    // The completion reads the ledger...
    let read = w.store.snapshot().unwrap();
    let msg = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "bernstein_complete", "arguments": {"task_id": task, "result_summary": "done"}}});
    let bytes = serde_json::to_vec(&msg).unwrap();
    let facts = TransportFacts::stdio(Some("2025-11-25".into()));
    let outcome = w.server.handle(&Input {
        bytes: &bytes,
        snapshot: &read,
        now: SystemClock.now(),
        transport: &facts,
    });
    let completion = outcome.append.expect("a completion appends records");
    // ...a subtask lands in between...
    let child = w
        .call(
            "bernstein_run",
            json!({"goal": "child", "parent_task_id": task}),
        )
        .ok();
    assert_eq!(child["status"], "open");
    // ...and the completion's write is refused: it was decided on a state that is gone.
    assert!(matches!(
        w.store.compare_and_append(&completion).unwrap(),
        AppendResult::Conflict { .. }
    ));
    let snap = w.store.snapshot().unwrap();
    assert_eq!(
        snap.domain.task(&task).unwrap().status,
        TaskStatus::WaitingForSubtasks
    );
    // Decided again on the ledger as it is, the gate refuses.
    match w.call(
        "bernstein_complete",
        json!({"task_id": task, "result_summary": "done"}),
    ) {
        Answer::Refused(e) => {
            assert_eq!(e["error"], "task_not_completable");
            assert_eq!(e["current_status"], "waiting_for_subtasks");
            assert_eq!(
                e["completable_statuses"],
                json!(["claimed", "in_progress", "open"])
            );
        }
        Answer::Ok(v) => panic!("a completion was applied to a waiting parent: {v}"),
    }
}

/// Child mode: `complete` or `split` every task listed in BERNSTEIN_RACE_TASKS, printing
/// `<task> <outcome>` per call.
#[test]
fn child() {
    let Ok(dir) = std::env::var("BERNSTEIN_RACE_DIR") else {
        return;
    };
    let role = std::env::var("BERNSTEIN_RACE_ROLE").unwrap();
    let tasks = std::env::var("BERNSTEIN_RACE_TASKS").unwrap();
    let w = Worker::open(std::path::Path::new(&dir));
    for task in tasks.split(',') {
        let answer = if role == "complete" {
            w.call(
                "bernstein_complete",
                json!({"task_id": task, "result_summary": "race"}),
            )
        } else {
            w.call(
                "bernstein_run",
                json!({"goal": format!("split {task}"), "parent_task_id": task}),
            )
        };
        println!("outcome {role} {task} {}", answer.code());
    }
}

#[test]
fn racing_completions_and_splits_never_complete_a_waiting_parent() {
    let tmp = TestDir::new("race-processes");
    let w = Worker::open(tmp.path());
    let tasks: Vec<String> = (0..TASKS).map(|i| w.start(&format!("task {i}"))).collect();
    drop(w);
    let list = tasks.join(",");
    let mut rev = tasks.clone();
    rev.reverse();
    let rev_list = rev.join(",");
    let dir = tmp.path().display().to_string();
    let mut children = Vec::new();
    for i in 0..COMPLETERS.max(SPLITTERS) {
        for (role, n) in [("complete", COMPLETERS), ("split", SPLITTERS)] {
            if i < n {
                // Half the processes walk the tasks backwards, so they meet in the middle.
                let order = if i % 2 == 0 { &list } else { &rev_list };
                children.push(spawn_child(&[
                    ("BERNSTEIN_RACE_DIR", dir.clone()),
                    ("BERNSTEIN_RACE_ROLE", role.to_string()),
                    ("BERNSTEIN_RACE_TASKS", order.clone()),
                ]));
            }
        }
    }
    // (role, task) -> outcome codes.
    let mut outcomes: BTreeMap<(String, String), Vec<String>> = BTreeMap::new();
    for child in children {
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "a child failed");
        for line in BufReader::new(&out.stdout[..]).lines() {
            let line = line.unwrap();
            if let Some(rest) = field(&line, "outcome ") {
                let parts: Vec<&str> = rest.split_whitespace().collect();
                outcomes
                    .entry((parts[0].to_string(), parts[1].to_string()))
                    .or_default()
                    .push(parts[2].to_string());
            }
        }
    }

    let w = Worker::open(tmp.path());
    let snap = w.store.snapshot().unwrap();
    let p = &snap.domain;
    assert_eq!(p.ignored_records(), 0, "no record broke the lifecycle");
    let (mut done_first, mut split_first) = (0, 0);
    for task in &tasks {
        let row = p.task(task).unwrap();
        let completes = &outcomes[&("complete".to_string(), task.clone())];
        let splits = &outcomes[&("split".to_string(), task.clone())];
        assert_eq!(completes.len(), COMPLETERS);
        assert_eq!(splits.len(), SPLITTERS);
        let applied = completes.iter().filter(|c| *c == "ok").count();
        match row.status {
            TaskStatus::Done => {
                done_first += 1;
                assert_eq!(applied, 1, "{task}: exactly one completion applied");
                assert!(
                    row.rare.children.is_empty(),
                    "{task}: done but has subtasks"
                );
                assert!(
                    splits.iter().all(|s| s == "parent_terminal"),
                    "{task}: {splits:?}"
                );
                assert!(
                    completes
                        .iter()
                        .all(|c| c == "ok" || c == "task_not_completable"),
                    "{task}: {completes:?}"
                );
            }
            TaskStatus::WaitingForSubtasks => {
                split_first += 1;
                assert_eq!(
                    applied, 0,
                    "{task}: a completion was applied to a waiting parent"
                );
                assert!(completes.iter().all(|c| c == "task_not_completable"));
                assert!(splits.iter().all(|s| s == "ok"));
                assert_eq!(row.rare.children.len(), SPLITTERS);
            }
            other => panic!("{task} ended {other}"),
        }
    }
    eprintln!(
        "{TASKS} tasks: {done_first} completed before any split, {split_first} split before any completion"
    );
    let bytes = Worker::ledger(tmp.path());
    verify_ledger(&bytes, "ledger.jsonl", Some(&w.audit_key)).unwrap();
    // No status change from waiting_for_subtasks to done was ever written.
    let text = String::from_utf8(bytes).unwrap();
    assert!(!text.contains(r#""from":"waiting_for_subtasks","#));
}
