use super::*;
use crate::operator::{self, OperatorCommand};
use crate::testkit::Bench;
use bernstein_core::time::Timestamp;
use serde_json::json;

fn plan(b: &mut Bench) -> (String, String, String) {
    let root = Bench::id_of(&b.ok("bernstein_run", json!({"goal": "the plan", "plan": true})));
    let a = b.subtask(&root, "step a");
    let c = Bench::id_of(&b.ok(
        "bernstein_run",
        json!({"goal": "step c", "parent_task_id": root, "depends_on": [a]}),
    ));
    (root, a, c)
}

/// Commits an operator decision like the CLI: its drafts on the bench's snapshot.
fn commit(b: &mut Bench, out: operator::OperatorOutcome) -> serde_json::Value {
    b.commit(out.drafts);
    out.answer
}

#[test]
fn a_plan_holds_its_tasks_planned_and_documents_them() {
    let mut b = Bench::new();
    let (root, a, c) = plan(&mut b);
    for id in [&root, &a, &c] {
        assert_eq!(b.status_of(id), TaskStatus::Planned);
    }
    let doc = document(&b.snapshot.domain, &root).unwrap();
    let ids: Vec<&str> = doc.tasks.iter().map(|t| t.task_id.as_str()).collect();
    assert_eq!(ids, [&root, &a, &c]);
    assert_eq!(doc.planned(), 3);
    assert_eq!(doc.tasks[2].depends_on, vec![a.clone()]);
    assert_eq!(doc.hash(), Digest::of(&doc.rendering()).to_string());
    // The hash is a function of the ledger: unchanged by unrelated records, changed by any
    // change to the plan.
    let before = doc.hash();
    b.ok("bernstein_status", json!({}));
    let unrelated = b.start("unrelated");
    assert_eq!(document(&b.snapshot.domain, &root).unwrap().hash(), before);
    b.subtask(&root, "one more step");
    assert_ne!(document(&b.snapshot.domain, &root).unwrap().hash(), before);
    // Planned tasks are not offered to workers, and the run needs input.
    let r = b.ok("bernstein_claim", json!({"claimer_id": "w"}));
    assert_eq!(r["taskId"], json!(unrelated));
    let h = b.ok("bernstein_run_status", json!({"run_id": root}));
    assert_eq!(h["status"], "input_required");
    assert_eq!(
        b.ok("bernstein_run", json!({"goal": "x", "parent_task_id": a}))["plan_id"],
        json!(root)
    );
}

#[test]
fn approve_promotes_every_planned_task_and_a_parent_then_waits() {
    let mut b = Bench::new();
    let (root, a, c) = plan(&mut b);
    let hash = document(&b.snapshot.domain, &root).unwrap().hash();
    let out = operator::decide_plan(
        &b.snapshot,
        Timestamp(9),
        &root,
        &hash,
        PlanDecision::Approve,
        Some("looks right"),
    )
    .unwrap();
    let audit = out.drafts.last().unwrap();
    assert_eq!(audit.kind, "operator.command");
    let cmd: OperatorCommand = serde_json::from_value(audit.body.clone()).unwrap();
    assert_eq!(cmd.command, "plan approve");
    assert_eq!(cmd.plan_hash.as_deref(), Some(hash.as_str()));
    assert_eq!(cmd.changed, 4);
    let answer = commit(&mut b, out);
    assert_eq!(answer["decision"], "approve");
    assert_eq!(b.status_of(&root), TaskStatus::WaitingForSubtasks);
    assert_eq!(b.status_of(&a), TaskStatus::Open);
    assert_eq!(b.status_of(&c), TaskStatus::Open);
    assert_eq!(b.snapshot.domain.ignored_records(), 0);
    // The dependency still gates c.
    let r = b.ok("bernstein_claim", json!({"claimer_id": "w"}));
    assert_eq!(r["taskId"], json!(a));
    // Deciding again: the hash moved on, and with the new hash nothing is planned.
    let stale = decide(
        &b.snapshot.domain,
        &root,
        &hash,
        PlanDecision::Reject,
        None,
        1,
    )
    .unwrap_err();
    assert!(stale.is_conflict());
    assert!(stale.to_string().starts_with("409 conflict"), "{stale}");
    let now = document(&b.snapshot.domain, &root).unwrap().hash();
    assert_eq!(
        decide(
            &b.snapshot.domain,
            &root,
            &now,
            PlanDecision::Approve,
            None,
            1
        ),
        Err(PlanError::NothingToDecide(root.clone()))
    );
}

#[test]
fn reject_cancels_what_is_still_planned_and_the_run() {
    let mut b = Bench::new();
    let (root, a, c) = plan(&mut b);
    b.ok("bernstein_cancel", json!({"task_id": c}));
    let hash = document(&b.snapshot.domain, &root).unwrap().hash();
    let out = operator::decide_plan(
        &b.snapshot,
        Timestamp(9),
        &root,
        &hash,
        PlanDecision::Reject,
        None,
    )
    .unwrap();
    let answer = commit(&mut b, out);
    assert_eq!(answer["changes"].as_array().unwrap().len(), 2);
    for id in [&root, &a, &c] {
        assert_eq!(b.status_of(id), TaskStatus::Cancelled);
    }
    let h = b.ok("bernstein_run_status", json!({"run_id": root}));
    assert_eq!(h["status"], "cancelled");
}

#[test]
fn a_stale_hash_is_refused_before_anything_moves() {
    let mut b = Bench::new();
    let (root, a, _) = plan(&mut b);
    let seen = document(&b.snapshot.domain, &root).unwrap().hash();
    b.subtask(&a, "added after review");
    let e = operator::decide_plan(
        &b.snapshot,
        Timestamp(1),
        &root,
        &seen,
        PlanDecision::Approve,
        None,
    )
    .unwrap_err();
    match &e {
        PlanError::Stale {
            seen: s, current, ..
        } => {
            assert_eq!(s, &seen);
            assert_ne!(current, &seen);
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(b.status_of(&root), TaskStatus::Planned);
}

#[test]
fn unknown_and_non_plans_are_refused() {
    let mut b = Bench::new();
    let plain = b.start("not a plan");
    let p = &b.snapshot.domain;
    assert_eq!(
        document(p, "../x"),
        Err(PlanError::InvalidId("../x".into()))
    );
    assert_eq!(
        document(p, "T-0123456789abcdef"),
        Err(PlanError::UnknownPlan("T-0123456789abcdef".into()))
    );
    assert_eq!(document(p, &plain), Err(PlanError::NotAPlan(plain.clone())));
    let e = b.refused(
        "bernstein_run",
        json!({"goal": "x", "plan": true, "parent_task_id": plain}),
    );
    assert_eq!(e.error, "invalid_arguments");
    assert_eq!(b.snapshot.domain.plans().count(), 0);
}

#[test]
fn the_cli_cancel_runs_the_cancel_gate() {
    let mut b = Bench::new();
    let t = b.start("x");
    let config = b.config.clone();
    let out = operator::cancel_task(&b.snapshot, &config, Timestamp(3), &t, Some("no")).unwrap();
    assert_eq!(out.drafts.last().unwrap().kind, "operator.command");
    commit(&mut b, out);
    assert_eq!(b.status_of(&t), TaskStatus::Cancelled);
    // Finished: reported, nothing to commit.
    let again = operator::cancel_task(&b.snapshot, &config, Timestamp(4), &t, None).unwrap();
    assert!(again.drafts.is_empty());
    assert_eq!(again.answer["already_terminal"], true);
    let t2 = b.start("y");
    b.force(&t2, TaskStatus::Claimed);
    b.force(&t2, TaskStatus::PendingApproval);
    let e = operator::cancel_task(&b.snapshot, &config, Timestamp(5), &t2, None).unwrap_err();
    assert_eq!(e.error, "task_not_cancellable");
}
