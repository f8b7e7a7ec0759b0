//! What each writing tool says its decision read (`ToolOutput::reads`): the tools whose answers
//! and records hold nothing that depends on where they are placed name the backlog and their
//! run's journal, a claim the backlog it selected from (its grant writes its run's journal,
//! which the core adds), a shutdown request nothing of the ledger (an empty list); a refusal, a
//! read and a capsule (its record names heads and a seq) name nothing (`None`).

use serde_json::json;

use crate::lifecycle::TaskStatus;
use crate::testkit::Bench;
use crate::tools::complete::tests::task_in;
use bernstein_core::ledger::{BACKLOG_STREAM, run_stream};
use bernstein_core::protocol::host::{HostFailure, HostReply};

fn task_and_run(run: &str) -> Option<Vec<String>> {
    Some(vec![BACKLOG_STREAM.to_string(), run_stream(run)])
}

#[test]
fn writes_name_the_backlog_and_their_run_and_a_claim_the_backlog() {
    let mut b = Bench::new();
    let run = b.call("bernstein_run", json!({"goal": "named reads"}));
    let id = Bench::id_of(run.result.as_ref().unwrap());
    assert_eq!(run.reads, task_and_run(&id));
    let claim = b.call(
        "bernstein_claim",
        json!({"claimer_id": "w", "role": "backend"}),
    );
    assert!(claim.result.is_ok() && !claim.drafts.is_empty());
    assert_eq!(claim.reads, Some(vec![BACKLOG_STREAM.to_string()]));
    let post = b.call(
        "bernstein_post_message",
        json!({"task_id": id, "sender": "w", "kind": "finding", "body": "half way"}),
    );
    assert!(post.result.is_ok(), "{:?}", post.result);
    assert_eq!(post.reads, task_and_run(&id));
    let done = b.call(
        "bernstein_complete",
        json!({"task_id": id, "result_summary": "done"}),
    );
    assert!(done.result.is_ok(), "{:?}", done.result);
    assert_eq!(done.reads, task_and_run(&id));
    let other = b.start("another run");
    let sub = b.call(
        "bernstein_run",
        json!({"goal": "a subtask", "parent_task_id": other}),
    );
    assert_eq!(sub.reads, task_and_run(&other));
    let cancel = b.call("bernstein_cancel", json!({"task_id": other}));
    assert!(cancel.result.is_ok(), "{:?}", cancel.result);
    assert_eq!(cancel.reads, task_and_run(&other));
    // A refusal names nothing: it stays where it was decided.
    let refused = b.call(
        "bernstein_complete",
        json!({"task_id": other, "result_summary": "x"}),
    );
    assert!(refused.result.is_err());
    assert_eq!(refused.reads, None);
    // A read names nothing either: its lone audit record moves by its own rule.
    assert_eq!(b.call("bernstein_status", json!({})).reads, None);
}

#[test]
fn approvals_artifacts_scenarios_and_shutdowns_name_what_they_read() {
    let mut b = Bench::new();
    let id = task_in(&mut b, TaskStatus::PendingApproval);
    let run = id.clone(); // a root task is its own run
    let approved = b.call("bernstein_approve", json!({"task_id": id, "note": "ok"}));
    assert!(approved.result.is_ok(), "{:?}", approved.result);
    assert_eq!(approved.reads, task_and_run(&run));
    let open = b.start("posting");
    let post = |b: &mut Bench, text: &str| {
        b.call(
            "bernstein_post_artifact",
            json!({"task_id": open, "key": "k", "kind": "report", "content": text}),
        )
    };
    let posted = post(&mut b, "v1");
    assert!(posted.result.is_ok() && !posted.drafts.is_empty());
    assert_eq!(posted.reads, task_and_run(&open));
    // The same content again writes nothing: a read.
    let again = post(&mut b, "v1");
    assert!(again.result.is_ok() && again.drafts.is_empty());
    assert_eq!(again.reads, None);
    let not_found = HostReply::Failed(HostFailure::NotFound);
    let args = json!({"action": "run", "scenario_id": "docs-sync"});
    let scenario = b.call_with_host("bernstein_scenario", args, &[not_found]);
    let root = scenario.run_id.clone().expect("a scenario run");
    assert_eq!(scenario.reads, task_and_run(&root));
    let signalled = HostReply::Signalled {
        path: "/tmp/x/.sdd/runtime/signals/SHUTDOWN".into(),
    };
    let shutdown = b.call_with_host("bernstein_shutdown_orchestrator", json!({}), &[signalled]);
    assert!(shutdown.result.is_ok(), "{:?}", shutdown.result);
    assert_eq!(shutdown.reads, Some(Vec::new()));
    let capsule = b.call("bernstein_task_capsule", json!({"task_id": open}));
    assert!(capsule.result.is_ok() && !capsule.drafts.is_empty());
    assert_eq!(capsule.reads, None);
}
