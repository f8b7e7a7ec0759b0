use super::*;
use crate::testkit::{Bench, path_to};
use serde_json::json;

/// A task in `status` (planned roots are committed directly).
pub(crate) fn task_in(b: &mut Bench, status: TaskStatus) -> String {
    let id = if status == TaskStatus::Planned {
        b.planned_root("T-00000000000000bb")
    } else {
        b.start("task")
    };
    for step in path_to(status) {
        b.force(&id, step);
    }
    assert_eq!(b.status_of(&id), status);
    id
}

#[test]
fn refusal_matrix_over_every_status() {
    for status in TaskStatus::ALL {
        let mut b = Bench::new();
        let id = task_in(&mut b, status);
        let seq = b.snapshot.position.seq;
        let out = b.call(NAME, json!({"task_id": id, "result_summary": "did it"}));
        let completable = matches!(
            status,
            TaskStatus::Open | TaskStatus::Claimed | TaskStatus::InProgress
        );
        match out.result {
            Ok(v) => {
                assert!(completable, "{status} was completed");
                assert_eq!(v["status"], "done");
                assert_eq!(v["previous_status"], status.as_str());
                assert_eq!(b.status_of(&id), TaskStatus::Done);
                assert_eq!(
                    b.snapshot
                        .domain
                        .task(&id)
                        .unwrap()
                        .rare
                        .result_summary
                        .as_deref(),
                    Some("did it")
                );
            }
            Err(e) => {
                assert!(!completable, "{status} refused");
                assert_eq!(e.error, "task_not_completable");
                assert_eq!(e.extra["task_id"], id.as_str());
                assert_eq!(e.extra["current_status"], status.as_str());
                assert_eq!(
                    e.extra["completable_statuses"],
                    json!(["claimed", "in_progress", "open"])
                );
                assert!(!e.message.is_empty() && !e.hint.is_empty());
                assert!(out.drafts.is_empty());
                assert_eq!(b.status_of(&id), status);
                // Only the stand-in audit record was appended.
                assert_eq!(b.snapshot.position.seq, seq + 1, "{status}");
            }
        }
    }
}

#[test]
fn a_task_that_requires_approval_waits_for_it() {
    let mut b = Bench::new();
    let id = Bench::id_of(&b.ok(
        "bernstein_run",
        json!({"goal": "needs sign-off", "requires_approval": true}),
    ));
    let v = b.ok(NAME, json!({"task_id": id, "result_summary": "ready"}));
    assert_eq!(v["status"], "pending_approval");
    assert_eq!(v["requires_approval"], true);
    assert_eq!(b.status_of(&id), TaskStatus::PendingApproval);
    let h = b.ok("bernstein_run_status", json!({"run_id": id}));
    assert_eq!(h["status"], "input_required");
    let again = b.refused(NAME, json!({"task_id": id, "result_summary": "again"}));
    assert_eq!(again.error, "task_not_completable");
    assert!(again.hint.contains("bernstein_approve"));
}

#[test]
fn a_parent_completes_when_its_last_subtask_does() {
    let mut b = Bench::new();
    let root = b.start("root");
    let a = b.subtask(&root, "a");
    let c = b.subtask(&root, "c");
    let c1 = b.subtask(&c, "c1");
    assert_eq!(b.status_of(&root), TaskStatus::WaitingForSubtasks);
    assert_eq!(
        b.refused(NAME, json!({"task_id": root, "result_summary": "early"}))
            .error,
        "task_not_completable"
    );
    let v = b.ok(NAME, json!({"task_id": a, "result_summary": "a"}));
    assert_eq!(v["resumed_parents"], json!([]));
    assert_eq!(b.status_of(&root), TaskStatus::WaitingForSubtasks);
    // c1 is c's last subtask, and c is root's last unfinished one: both resume.
    let v = b.ok(NAME, json!({"task_id": c1, "result_summary": "c1"}));
    assert_eq!(
        v["resumed_parents"],
        json!([{"task_id": c, "status": "done"}, {"task_id": root, "status": "done"}])
    );
    assert_eq!(b.status_of(&root), TaskStatus::Done);
    let h = b.ok("bernstein_run_status", json!({"run_id": root}));
    assert_eq!(h["status"], "completed");
}

#[test]
fn a_failed_subtask_blocks_its_parent_and_approval_parents_wait() {
    let mut b = Bench::new();
    let root = b.start("root");
    let a = b.subtask(&root, "a");
    let f = b.subtask(&root, "f");
    b.force(&f, TaskStatus::Failed);
    b.ok(NAME, json!({"task_id": a, "result_summary": "a"}));
    assert_eq!(b.status_of(&root), TaskStatus::Blocked);

    let mut b = Bench::new();
    let root = Bench::id_of(&b.ok(
        "bernstein_run",
        json!({"goal": "root", "requires_approval": true}),
    ));
    let a = b.subtask(&root, "a");
    let v = b.ok(NAME, json!({"task_id": a, "result_summary": "a"}));
    assert_eq!(
        v["resumed_parents"],
        json!([{"task_id": root, "status": "pending_approval"}])
    );
}

#[test]
fn bad_arguments_are_refused() {
    let mut b = Bench::new();
    let id = b.start("x");
    for bad in [
        json!({"task_id": id}),
        json!({"task_id": id, "result_summary": "   "}),
        json!({"task_id": id, "result_summary": "x".repeat(4097)}),
        json!({"task_id": id, "result_summary": "x", "extra": 1}),
    ] {
        assert_eq!(
            b.refused(NAME, bad.clone()).error,
            "invalid_arguments",
            "{bad}"
        );
    }
    let e = b.refused(NAME, json!({"task_id": "nope", "result_summary": "x"}));
    assert_eq!(e.error, "invalid_arguments");
    assert_eq!(crate::testkit::argument(&e), "task_id");
    assert_eq!(
        b.refused(
            NAME,
            json!({"task_id": "T-0123456789abcdef", "result_summary": "x"})
        )
        .error,
        "unknown_task"
    );
}

#[test]
fn completing_an_open_task_passes_the_claims_dependency_gate() {
    let mut b = Bench::new();
    let root = b.start("root");
    let a = b.subtask(&root, "a");
    let c = b.subtask(&root, "c");
    let gated = Bench::id_of(&b.ok(
        "bernstein_run",
        json!({"goal": "after a and c", "parent_task_id": root, "depends_on": [a, c]}),
    ));
    b.ok(NAME, json!({"task_id": c, "result_summary": "c done"}));
    let seq = b.snapshot.position.seq;
    let out = b.call(
        NAME,
        json!({"task_id": gated, "result_summary": "too early"}),
    );
    let e = out.result.unwrap_err();
    assert_eq!(e.error, "dependencies_not_done");
    assert_eq!(e.extra["task_id"], gated.as_str());
    assert_eq!(e.extra["current_status"], "open");
    assert_eq!(
        e.extra["unmet_dependencies"],
        json!([{"task_id": a, "status": "open"}])
    );
    assert!(
        e.message.contains(&a) && !e.message.contains(&c),
        "{}",
        e.message
    );
    assert!(out.drafts.is_empty());
    assert_eq!(b.status_of(&gated), TaskStatus::Open);
    assert_eq!(b.snapshot.position.seq, seq + 1, "only the audit record");
    // Once the dependency is done, the completion goes through.
    b.ok(NAME, json!({"task_id": a, "result_summary": "a done"}));
    let v = b.ok(NAME, json!({"task_id": gated, "result_summary": "now"}));
    assert_eq!(
        (v["previous_status"].as_str(), v["status"].as_str()),
        (Some("open"), Some("done"))
    );
}
