//! What each writing tool says its decision read (`ToolOutput::reads`): the tools whose answers
//! and records hold nothing that depends on where they are placed name the backlog and their
//! run's journal, a claim the backlog it selected from (its grant writes its run's journal,
//! which the core adds); a refusal and a read name nothing.

use serde_json::json;

use crate::testkit::Bench;
use bernstein_core::ledger::{BACKLOG_STREAM, run_stream};

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
