use super::*;
use crate::testkit::Bench;
use crate::tools::complete::tests::task_in;
use serde_json::json;

#[test]
fn refusal_matrix_over_every_status() {
    for status in TaskStatus::ALL {
        let mut b = Bench::new();
        let id = task_in(&mut b, status);
        let out = b.call(NAME, json!({"task_id": id, "note": "lgtm"}));
        match out.result {
            Ok(v) => {
                assert_eq!(status, TaskStatus::PendingApproval, "{status} approved");
                assert_eq!(v["status"], "done");
                assert_eq!(v["result_summary"], "lgtm");
                assert_eq!(b.status_of(&id), TaskStatus::Done);
            }
            Err(e) => {
                assert_ne!(status, TaskStatus::PendingApproval);
                assert_eq!(e.error, "task_not_awaiting_approval");
                assert_eq!(e.extra["task_id"], id.as_str());
                assert_eq!(e.extra["current_status"], status.as_str());
                assert_eq!(e.extra["approvable_statuses"], json!(["pending_approval"]));
                assert_eq!(
                    e.extra["completable_statuses"],
                    json!(["claimed", "in_progress", "open"])
                );
                if lifecycle::worker_completable().contains(&status) {
                    assert_eq!(
                        e.hint,
                        format!(
                            "Only tasks in pending_approval can be approved. Finish this one with \
                             bernstein_complete, report a blocker with bernstein_post_message, or \
                             abandon it with `bernstein task cancel {id}`."
                        )
                    );
                }
                assert!(out.drafts.is_empty());
                assert_eq!(b.status_of(&id), status);
                if status == TaskStatus::Planned {
                    assert!(e.hint.contains("plan"), "{}", e.hint);
                    assert!(e.hint.contains("bernstein plan approve"), "{}", e.hint);
                }
            }
        }
    }
}

#[test]
fn approval_keeps_the_workers_summary_without_a_note_and_resumes_parents() {
    let mut b = Bench::new();
    let root = b.start("root");
    let child = Bench::id_of(&b.ok(
        "bernstein_run",
        json!({"goal": "reviewed", "parent_task_id": root, "requires_approval": true}),
    ));
    b.ok(
        "bernstein_complete",
        json!({"task_id": child, "result_summary": "worker summary"}),
    );
    assert_eq!(b.status_of(&root), TaskStatus::WaitingForSubtasks);
    let v = b.ok(NAME, json!({"task_id": child}));
    assert_eq!(v["result_summary"], "worker summary");
    assert_eq!(
        v["resumed_parents"],
        json!([{"task_id": root, "status": "done"}])
    );
    assert_eq!(b.status_of(&root), TaskStatus::Done);
    assert_eq!(
        b.snapshot
            .domain
            .task(&child)
            .unwrap()
            .rare
            .result_summary
            .as_deref(),
        Some("worker summary")
    );
    assert_eq!(
        b.refused(NAME, json!({"task_id": child, "note": ""})).error,
        "invalid_arguments"
    );
}
