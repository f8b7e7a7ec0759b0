use super::*;
use crate::testkit::{Bench, path_to};
use serde_json::json;

#[test]
fn refusal_matrix_over_every_status() {
    for status in TaskStatus::ALL {
        let mut b = Bench::new();
        let id = if status == TaskStatus::Planned {
            b.planned_root("T-00000000000000bb")
        } else {
            b.start("task")
        };
        for step in path_to(status) {
            b.force(&id, step);
        }
        assert_eq!(b.status_of(&id), status);
        let position = b.snapshot.position;
        let out = b.call(NAME, json!({"task_id": id, "reason": "no longer needed"}));
        let cancellable = lifecycle::cancellable().contains(&status);
        match out.result {
            Ok(v) if status.is_terminal() => {
                assert!(
                    out.drafts.is_empty(),
                    "{status}: reported terminal but drafted"
                );
                assert_eq!(v["already_terminal"], true);
                assert_eq!(v["status"], status.as_str());
                assert_eq!(b.status_of(&id), status);
            }
            Ok(v) => {
                assert!(cancellable, "{status} cancelled but not cancellable");
                assert_eq!(v["status"], "cancelled");
                assert_eq!(v["previous_status"], status.as_str());
                assert_eq!(v["run_cancelled"], true);
                assert_eq!(b.status_of(&id), TaskStatus::Cancelled);
                assert_eq!(
                    b.snapshot.domain.run(&id).unwrap().status(),
                    crate::RunStatus::Cancelled
                );
            }
            Err(e) => {
                assert!(!cancellable && !status.is_terminal(), "{status} refused");
                assert_eq!(e.error, "task_not_cancellable");
                assert_eq!(e.extra["current_status"], status.as_str());
                assert_eq!(
                    e.extra["cancellable_statuses"],
                    json!([
                        "planned",
                        "open",
                        "claimed",
                        "in_progress",
                        "blocked",
                        "waiting_for_subtasks"
                    ])
                );
                assert_eq!(b.status_of(&id), status);
                assert_eq!(out.drafts.len(), 0);
            }
        }
        // Only the stand-in audit record was added by a refusal or a terminal report.
        if !cancellable {
            assert_eq!(b.snapshot.position.seq, position.seq + 1, "{status}");
        }
    }
}

#[test]
fn cancelling_a_root_cancels_the_tree_and_the_run() {
    let mut b = Bench::new();
    let root = b.start("root");
    let c1 = b.ok(
        "bernstein_run",
        json!({"goal": "c1", "parent_task_id": root}),
    )["task_id"]
        .as_str()
        .unwrap()
        .to_string();
    let c2 = b.ok(
        "bernstein_run",
        json!({"goal": "c2", "parent_task_id": root}),
    )["task_id"]
        .as_str()
        .unwrap()
        .to_string();
    let g1 = b.ok("bernstein_run", json!({"goal": "g1", "parent_task_id": c1}))["task_id"]
        .as_str()
        .unwrap()
        .to_string();
    let g2 = b.ok("bernstein_run", json!({"goal": "g2", "parent_task_id": c1}))["task_id"]
        .as_str()
        .unwrap()
        .to_string();
    // g1 finished, g2 awaits approval: neither is cancelled.
    b.force(&g1, TaskStatus::Claimed);
    b.force(&g1, TaskStatus::Done);
    b.force(&g2, TaskStatus::Claimed);
    b.force(&g2, TaskStatus::PendingApproval);
    let before = b.ok("bernstein_run_status", json!({"run_id": root}));
    assert_eq!(before["status"], "input_required");

    let out = b.call(NAME, json!({"task_id": root}));
    let v = out.result.clone().unwrap();
    assert_eq!(v["cancelled_descendants"], 2, "{v}");
    assert_eq!(v["run_cancelled"], true);
    assert_eq!(
        v["not_cancelled"],
        json!([{"task_id": g2, "status": "pending_approval"}])
    );
    assert_eq!(v["not_cancelled_count"], 1);
    assert_eq!(out.run_id.as_deref(), Some(root.as_str()));
    let kinds: Vec<&str> = out.drafts.iter().map(|d| d.kind.as_str()).collect();
    assert_eq!(
        kinds,
        [
            "task.status",
            "task.status",
            "task.status",
            "run.task_status",
            "run.task_status",
            "run.task_status",
            "run.cancelled"
        ]
    );
    assert_eq!(out.drafts[6].body["cancelled_tasks"], 3);
    for id in [&root, &c1, &c2] {
        assert_eq!(b.status_of(id), TaskStatus::Cancelled);
    }
    assert_eq!(b.status_of(&g1), TaskStatus::Done);
    assert_eq!(b.status_of(&g2), TaskStatus::PendingApproval);
    let h = b.ok("bernstein_run_status", json!({"run_id": c2}));
    assert_eq!(h["status"], "cancelled");
    assert_ne!(h["journalHead"], before["journalHead"]);

    // Cancelling again reports the terminal status and writes nothing.
    let again = b.call(NAME, json!({"task_id": root}));
    assert!(again.drafts.is_empty());
    assert_eq!(again.result.unwrap()["already_terminal"], true);
}

#[test]
fn cancelling_a_subtask_leaves_the_run_going() {
    let mut b = Bench::new();
    let root = b.start("root");
    let child = b.ok(
        "bernstein_run",
        json!({"goal": "c", "parent_task_id": root}),
    )["task_id"]
        .as_str()
        .unwrap()
        .to_string();
    let out = b.call(NAME, json!({"task_id": child, "reason": "wrong approach"}));
    let v = out.result.unwrap();
    assert_eq!(v["run_cancelled"], false);
    assert_eq!(v["cancelled_descendants"], 0);
    assert_eq!(out.drafts[0].body["reason"], "wrong approach");
    assert_eq!(b.status_of(&root), TaskStatus::WaitingForSubtasks);
    let h = b.ok("bernstein_run_status", json!({"run_id": root}));
    assert_eq!(h["status"], "working");
}

#[test]
fn unknown_and_malformed_ids_are_refused_without_drafts() {
    let mut b = Bench::new();
    b.start("x");
    let out = b.call(NAME, json!({"task_id": "../x"}));
    assert!(out.drafts.is_empty());
    let e = out.result.unwrap_err();
    assert_eq!(e.error, "invalid_arguments");
    assert_eq!(crate::testkit::argument(&e), "task_id");
    let e = b.refused(NAME, json!({"task_id": "T-0123456789abcdef"}));
    assert_eq!(e.error, "unknown_task");
    assert_eq!(e.extra["task_id"], "T-0123456789abcdef");
    assert_eq!(
        b.refused(NAME, json!({"task": "T-0123456789abcdef"})).error,
        "invalid_arguments"
    );
}
