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

// ---- Decisions through the host's form (the person), and the `decision` argument. ----

use crate::operator;
use crate::plans::{self, PlanDecision};
use bernstein_core::protocol::input::{ClientCaps, InputNeeded, InputRequest, Inputs};
use serde_json::Value;

/// A host that can elicit, before any answer.
fn can_elicit() -> Inputs {
    Inputs {
        caps: ClientCaps {
            elicitation: true,
            ..ClientCaps::NONE
        },
        ..Inputs::default()
    }
}

/// The run that carries the host's `response` to the question `asked`.
fn answered(asked: &InputNeeded, response: Value) -> Inputs {
    Inputs {
        responses: vec![(form::KEY.to_string(), response)],
        state: asked.state.clone(),
        ..can_elicit()
    }
}

fn accept(decision: &str, note: &str) -> Value {
    json!({"action": "accept", "content": {"decision": decision, "note": note}})
}

/// Asks about `id` from a host that can elicit: the form, nothing committed.
fn ask(b: &mut Bench, id: &str) -> InputNeeded {
    let position = b.snapshot.position;
    let out = b.call_with_input(NAME, json!({"task_id": id}), &can_elicit());
    assert!(out.drafts.is_empty());
    assert_eq!(b.snapshot.position, position, "asking records nothing");
    let asked = out.input.expect("the person is asked");
    assert_eq!(asked.requests.len(), 1);
    assert_eq!(asked.requests[0].0, form::KEY);
    asked
}

fn message_of(asked: &InputNeeded) -> (String, Value) {
    match &asked.requests[0].1 {
        InputRequest::Elicit {
            message,
            requested_schema,
        } => (message.clone(), requested_schema.clone()),
        other => panic!("not a form: {other:?}"),
    }
}

/// A plan: a root and two subtasks (one nested); returns the ids, root first.
fn plan(b: &mut Bench) -> Vec<String> {
    let root = Bench::id_of(&b.ok("bernstein_run", json!({"goal": "ship it", "plan": true})));
    let a = Bench::id_of(&b.ok(
        "bernstein_run",
        json!({"goal": "write it", "parent_task_id": root, "role": "writer"}),
    ));
    let c = Bench::id_of(&b.ok(
        "bernstein_run",
        json!({"goal": "check it", "parent_task_id": a, "role": "qa"}),
    ));
    vec![root, a, c]
}

fn records_of<'a>(recs: &'a [bernstein_core::ledger::Record], kind: &str) -> Vec<&'a Value> {
    recs.iter()
        .filter(|r| r.kind == kind)
        .map(|r| &r.body)
        .collect()
}

#[test]
fn a_plan_is_shown_to_the_person_with_its_hash_and_tasks() {
    let mut b = Bench::new();
    let ids = plan(&mut b);
    let hash = plans::document(&b.snapshot.domain, &ids[0]).unwrap().hash();
    // Any planned task of the plan asks about the whole plan.
    let asked = ask(&mut b, &ids[2]);
    let (message, schema) = message_of(&asked);
    assert!(message.contains(&hash), "{message}");
    for id in &ids {
        assert!(message.contains(id.as_str()), "{message}");
    }
    assert!(message.contains("[writer, planned] write it"), "{message}");
    assert_eq!(schema["required"], json!(["decision"]));
    assert_eq!(
        schema["properties"]["decision"]["enum"],
        json!(["approve", "reject"])
    );
    assert_eq!(schema["properties"]["note"]["maxLength"], MAX_NOTE_CHARS);
    assert_eq!(
        asked.state,
        Some(json!({"asked": "plan", "plan_id": ids[0], "plan_hash": hash}))
    );
}

#[test]
fn a_plan_title_cannot_reorder_what_the_person_reads() {
    let mut b = Bench::new();
    let root = Bench::id_of(&b.ok(
        "bernstein_run",
        json!({"goal": "harmless \u{202E}mr -rf\u{202C}", "plan": true}),
    ));
    let (message, _) = message_of(&ask(&mut b, &root));
    assert!(
        message.contains("harmless <U+202E>mr -rf<U+202C>"),
        "{message}"
    );
    assert!(!message.contains('\u{202E}'), "{message}");
}

#[test]
fn a_long_plan_lists_its_first_tasks_and_counts_the_rest() {
    let mut b = Bench::new();
    let root = Bench::id_of(&b.ok("bernstein_run", json!({"goal": "big", "plan": true})));
    for i in 0..25 {
        b.subtask(&root, &format!("step {i}"));
    }
    let (message, _) = message_of(&ask(&mut b, &root));
    assert!(message.contains("Tasks (26):"), "{message}");
    assert!(message.contains("…and 6 more"), "{message}");
    assert!(!message.contains("step 24"), "{message}");
}

#[test]
fn the_person_approves_a_plan_recorded_as_the_operator_command_would_be() {
    let mut b = Bench::new();
    let ids = plan(&mut b);
    let asked = ask(&mut b, &ids[0]);
    let hash = plans::document(&b.snapshot.domain, &ids[0]).unwrap().hash();
    // What `bernstein plan approve` would draft on the same snapshot, for comparison.
    let cli = operator::decide_plan(
        &b.snapshot,
        b.now,
        &ids[0],
        &hash,
        PlanDecision::Approve,
        Some("go"),
    )
    .unwrap();
    let before = b.log.len();
    let out = b.call_with_input(
        NAME,
        json!({"task_id": ids[0]}),
        &answered(&asked, accept("approve", " go ")),
    );
    let v = out.result.expect("decided");
    assert_eq!(v["decision"], "approve");
    assert_eq!(v["plan_id"], ids[0].as_str());
    assert_eq!(v["plan_hash"], hash.as_str());
    assert_eq!(v["changes"], cli.answer["changes"]);
    let drafted: Vec<(&str, &Value)> = out
        .drafts
        .iter()
        .map(|d| (d.kind.as_str(), &d.body))
        .collect();
    let expected: Vec<(&str, &Value)> = cli
        .drafts
        .iter()
        .map(|d| (d.kind.as_str(), &d.body))
        .collect();
    assert_eq!(drafted, expected, "recorded exactly as the CLI records it");
    let recs = &b.log[before..];
    let cmd = records_of(recs, crate::records::OPERATOR_COMMAND);
    assert_eq!(cmd.len(), 1);
    assert_eq!(cmd[0]["command"], "plan approve");
    assert_eq!(cmd[0]["plan_hash"], hash.as_str());
    assert_eq!(cmd[0]["reason"], "go");
    // The root waits for its subtasks; the leaf is open for workers.
    assert_eq!(b.status_of(&ids[0]), TaskStatus::WaitingForSubtasks);
    assert_eq!(b.status_of(&ids[2]), TaskStatus::Open);
}

#[test]
fn the_person_rejects_a_plan() {
    let mut b = Bench::new();
    let ids = plan(&mut b);
    let asked = ask(&mut b, &ids[1]);
    let before = b.log.len();
    let v = b
        .call_with_input(
            NAME,
            json!({"task_id": ids[1]}),
            &answered(&asked, accept("reject", "too big")),
        )
        .result
        .unwrap();
    assert_eq!(v["decision"], "reject");
    for id in &ids {
        assert_eq!(b.status_of(id), TaskStatus::Cancelled);
    }
    let recs = &b.log[before..];
    assert_eq!(records_of(recs, crate::records::RUN_CANCELLED).len(), 1);
    let cmd = records_of(recs, crate::records::OPERATOR_COMMAND);
    assert_eq!(cmd[0]["command"], "plan reject");
    assert_eq!(cmd[0]["reason"], "too big");
}

#[test]
fn a_declined_or_cancelled_form_records_nothing_but_the_call() {
    for action in ["decline", "cancel"] {
        let mut b = Bench::new();
        let ids = plan(&mut b);
        let asked = ask(&mut b, &ids[0]);
        let out = b.call_with_input(
            NAME,
            json!({"task_id": ids[0]}),
            &answered(&asked, json!({"action": action})),
        );
        assert!(out.drafts.is_empty());
        let e = out.result.unwrap_err();
        assert_eq!(e.error, "approval_declined");
        assert!(e.hint.contains("Nothing was recorded"), "{}", e.hint);
        assert_eq!(b.status_of(&ids[0]), TaskStatus::Planned);
    }
}

#[test]
fn an_answer_that_is_no_decision_is_refused() {
    for content in [
        json!({}),
        json!({"decision": "maybe"}),
        json!({"decision": "approve", "note": 7}),
        json!({"decision": "approve", "note": "x".repeat(MAX_NOTE_CHARS + 1)}),
    ] {
        let mut b = Bench::new();
        let ids = plan(&mut b);
        let asked = ask(&mut b, &ids[0]);
        let out = b.call_with_input(
            NAME,
            json!({"task_id": ids[0]}),
            &answered(&asked, json!({"action": "accept", "content": content})),
        );
        assert!(out.drafts.is_empty());
        assert_eq!(out.result.unwrap_err().error, "approval_answer_invalid");
        assert_eq!(b.status_of(&ids[0]), TaskStatus::Planned);
    }
}

#[test]
fn a_plan_that_changed_after_it_was_shown_is_stale_and_asked_again() {
    let mut b = Bench::new();
    let ids = plan(&mut b);
    let asked = ask(&mut b, &ids[0]);
    let shown = plans::document(&b.snapshot.domain, &ids[0]).unwrap().hash();
    b.subtask(&ids[0], "one more thing");
    let out = b.call_with_input(
        NAME,
        json!({"task_id": ids[0]}),
        &answered(&asked, accept("approve", "")),
    );
    assert!(out.drafts.is_empty());
    let e = out.result.unwrap_err();
    assert_eq!(e.error, "approval_stale");
    assert_eq!(e.extra["shown_hash"], shown.as_str());
    assert_ne!(e.extra["current_hash"], shown.as_str());
    assert_eq!(b.status_of(&ids[0]), TaskStatus::Planned);
    // Asked again, the person sees the plan as it is now.
    let again = ask(&mut b, &ids[0]);
    assert_eq!(again.state.unwrap()["plan_hash"], e.extra["current_hash"]);
}

#[test]
fn a_race_with_the_cli_records_one_decision() {
    let mut b = Bench::new();
    let ids = plan(&mut b);
    let asked = ask(&mut b, &ids[0]);
    let hash = plans::document(&b.snapshot.domain, &ids[0]).unwrap().hash();
    // The CLI decides first and commits.
    let cli = operator::decide_plan(
        &b.snapshot,
        b.now,
        &ids[0],
        &hash,
        PlanDecision::Reject,
        None,
    )
    .unwrap();
    b.commit(cli.drafts);
    // The person's answer, run on the snapshot after it (as the engine re-runs a call whose
    // compare-and-append lost), is stale: nothing more is recorded.
    let out = b.call_with_input(
        NAME,
        json!({"task_id": ids[0]}),
        &answered(&asked, accept("approve", "")),
    );
    assert!(out.drafts.is_empty());
    assert_eq!(out.result.unwrap_err().error, "approval_stale");
    let decisions = b
        .log
        .iter()
        .filter(|r| r.kind == crate::records::OPERATOR_COMMAND)
        .count();
    assert_eq!(decisions, 1);
    assert_eq!(b.status_of(&ids[0]), TaskStatus::Cancelled);
}

#[test]
fn a_decision_from_the_caller_on_a_plan_is_refused() {
    for input in [can_elicit(), Inputs::default()] {
        for decision in ["approve", "reject"] {
            let mut b = Bench::new();
            let ids = plan(&mut b);
            let out = b.call_with_input(
                NAME,
                json!({"task_id": ids[2], "decision": decision}),
                &input,
            );
            assert!(out.input.is_none(), "nobody is asked");
            assert!(out.drafts.is_empty());
            let e = out.result.unwrap_err();
            assert_eq!(e.error, "plan_decided_by_person");
            assert_eq!(e.extra["plan_id"], ids[0].as_str());
            assert_eq!(b.status_of(&ids[2]), TaskStatus::Planned);
        }
    }
}

#[test]
fn a_plan_on_a_host_that_cannot_elicit_keeps_todays_refusal() {
    let mut b = Bench::new();
    let ids = plan(&mut b);
    let e = b.refused(NAME, json!({"task_id": ids[0]}));
    assert_eq!(e.error, "task_not_awaiting_approval");
    assert!(e.hint.contains("host that can elicit"), "{}", e.hint);
    assert!(e.hint.contains("bernstein plan approve"), "{}", e.hint);
}

/// A task in pending_approval with a worker's summary.
fn pending(b: &mut Bench) -> String {
    let id = Bench::id_of(&b.ok(
        "bernstein_run",
        json!({"goal": "reviewed work", "requires_approval": true}),
    ));
    b.ok(
        "bernstein_complete",
        json!({"task_id": id, "result_summary": "shipped the thing"}),
    );
    assert_eq!(b.status_of(&id), TaskStatus::PendingApproval);
    id
}

#[test]
fn finished_work_is_shown_to_the_person_and_approved() {
    let mut b = Bench::new();
    let id = pending(&mut b);
    let asked = ask(&mut b, &id);
    let (message, _) = message_of(&asked);
    assert!(message.contains(&id), "{message}");
    assert!(message.contains("reviewed work"), "{message}");
    assert!(message.contains("shipped the thing"), "{message}");
    let v = b
        .call_with_input(
            NAME,
            json!({"task_id": id}),
            &answered(&asked, accept("approve", "")),
        )
        .result
        .unwrap();
    assert_eq!(v["status"], "done");
    assert_eq!(v["decision"], "approve");
    assert_eq!(v["result_summary"], "shipped the thing");
    assert_eq!(b.status_of(&id), TaskStatus::Done);
}

#[test]
fn finished_work_the_person_rejects_goes_back_to_rework() {
    let mut b = Bench::new();
    let id = pending(&mut b);
    let asked = ask(&mut b, &id);
    let before = b.log.len();
    let v = b
        .call_with_input(
            NAME,
            json!({"task_id": id}),
            &answered(&asked, accept("reject", "tests missing")),
        )
        .result
        .unwrap();
    assert_eq!(v["status"], "open");
    assert_eq!(v["previous_status"], "pending_approval");
    assert_eq!(v["reason"], "approval rejected: tests missing");
    assert_eq!(v["resumed_parents"], json!([]));
    assert_eq!(b.status_of(&id), TaskStatus::Open);
    let status = records_of(&b.log[before..], crate::records::TASK_STATUS);
    assert_eq!(status.len(), 1);
    assert_eq!(status[0]["from"], "pending_approval");
    assert_eq!(status[0]["to"], "open");
    assert_eq!(status[0]["reason"], "approval rejected: tests missing");
    // Back in the queue: a worker can claim it again.
    let claimed = b.ok("bernstein_claim", json!({"claimer_id": "w2"}));
    assert_eq!(claimed["taskId"], id.as_str());
}

#[test]
fn a_declined_task_form_records_nothing() {
    let mut b = Bench::new();
    let id = pending(&mut b);
    let asked = ask(&mut b, &id);
    let out = b.call_with_input(
        NAME,
        json!({"task_id": id}),
        &answered(&asked, json!({"action": "decline"})),
    );
    assert!(out.drafts.is_empty());
    assert_eq!(out.result.unwrap_err().error, "approval_declined");
    assert_eq!(b.status_of(&id), TaskStatus::PendingApproval);
}

#[test]
fn an_answer_about_work_that_changed_since_is_stale() {
    let mut b = Bench::new();
    let id = pending(&mut b);
    let asked = ask(&mut b, &id);
    // Rejected and reworked meanwhile: pending again, but not the work the person saw.
    b.ok(NAME, json!({"task_id": id, "decision": "reject"}));
    b.ok(
        "bernstein_complete",
        json!({"task_id": id, "result_summary": "second try"}),
    );
    let out = b.call_with_input(
        NAME,
        json!({"task_id": id}),
        &answered(&asked, accept("approve", "")),
    );
    assert!(out.drafts.is_empty());
    assert_eq!(out.result.unwrap_err().error, "approval_stale");
    assert_eq!(b.status_of(&id), TaskStatus::PendingApproval);
    // Already decided: a replayed answer is refused as not awaiting approval.
    let asked = ask(&mut b, &id);
    let answer = answered(&asked, accept("approve", ""));
    b.call_with_input(NAME, json!({"task_id": id}), &answer)
        .result
        .unwrap();
    let out = b.call_with_input(NAME, json!({"task_id": id}), &answer);
    assert!(out.drafts.is_empty());
    assert_eq!(out.result.unwrap_err().error, "task_not_awaiting_approval");
}

#[test]
fn the_decision_argument_decides_finished_work_without_asking() {
    let mut b = Bench::new();
    let id = pending(&mut b);
    let out = b.call_with_input(
        NAME,
        json!({"task_id": id, "decision": "reject", "note": "redo"}),
        &can_elicit(),
    );
    assert!(out.input.is_none());
    assert_eq!(out.result.unwrap()["status"], "open");
    assert_eq!(b.status_of(&id), TaskStatus::Open);
    let id = pending(&mut b);
    let v = b.ok(NAME, json!({"task_id": id, "decision": "approve"}));
    assert_eq!(v["status"], "done");
    assert_eq!(
        b.refused(NAME, json!({"task_id": id, "decision": "maybe"}))
            .error,
        "invalid_arguments"
    );
}

#[test]
fn a_host_that_cannot_elicit_approves_finished_work_as_before() {
    let mut b = Bench::new();
    let id = pending(&mut b);
    let out = b.call_with_input(NAME, json!({"task_id": id}), &Inputs::default());
    assert!(out.input.is_none());
    assert_eq!(out.result.unwrap()["status"], "done");
}

#[test]
fn an_unfinished_task_is_refused_before_anyone_is_asked() {
    let mut b = Bench::new();
    let id = b.start("not yet");
    let out = b.call_with_input(NAME, json!({"task_id": id}), &can_elicit());
    assert!(out.input.is_none());
    assert_eq!(out.result.unwrap_err().error, "task_not_awaiting_approval");
}

#[test]
fn a_plans_reason_is_the_persons_note_never_the_callers() {
    let mut b = Bench::new();
    let ids = plan(&mut b);
    let args = json!({"task_id": ids[0], "note": "the model approves"});
    let asked = b
        .call_with_input(NAME, args.clone(), &can_elicit())
        .input
        .expect("asked");
    let before = b.log.len();
    b.call_with_input(NAME, args, &answered(&asked, accept("approve", "  ")))
        .result
        .unwrap();
    let cmd = records_of(&b.log[before..], crate::records::OPERATOR_COMMAND);
    assert!(cmd[0].get("reason").is_none(), "{}", cmd[0]);
}
