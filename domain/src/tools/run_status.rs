//! `bernstein_run_status`: the verifiable handle of a run, by run id or by the id of
//! any task of the run. The id is checked for shape before it is looked up; an unknown or
//! malformed id is a structured refusal. Polls append only the engine's audit record, which
//! never moves a handle, so two polls of an unchanged run answer byte-identically.
//! Beside the handle's fields, outside its `receiptHash`, the answer carries the `outcome` of a
//! run that ended and the notice that a run is `waiting` for a worker ([`crate::outcome`]).
//! This handler must never write records.

use crate::resource_links;
use serde::{Deserialize, Serialize};

use crate::refusal::Refusal;
use bernstein_core::protocol::registry::{Effects, ToolError};

use crate::bound::{ToolContext, ToolSpec};
use bernstein_core::config::Tier;

use super::super::args::{Chars, Int, TaskId};
use super::super::handle::{RunHandle, run_handle};
use super::super::outcome::{self, Outcome, Waiting};
use super::{Called, Tool};
use crate::Snapshot;
use crate::lifecycle::TaskStatus;
use crate::runs::{RunStatus, RunView};
use bernstein_core::protocol::logging::{LogLevel, LogMessage};
use bernstein_core::time::Timestamp;

pub const NAME: &str = "bernstein_run_status";

const EFFECTS: Effects = Effects {
    reads_files: true,
    writes_files: false,
    spawns_processes: false,
    network: false,
};

const DESCRIPTION: &str = "Poll a run's signed handle tens of seconds apart until completed, \
failed or cancelled.";

/// Arguments of `bernstein_run_status`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RunStatusArgs {
    /// Or any task of the run.
    pub run_id: TaskId,
    /// Long poll: until the end or a move past since.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wait_ms: Option<Int<u32, 1, 120_000>>,
    /// The journalHead last seen.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub since: Option<Chars<1, 128>>,
}

/// Payload of `bernstein_run_status`: the handle's fields, then what is not signed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct RunStatusAnswer {
    #[serde(flatten)]
    pub handle: RunHandle,
    /// The run ended: its tasks with their summaries or reasons.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "an_object")]
    pub outcome: Option<Outcome>,
    /// Its open tasks wait for a worker that has not claimed for a while.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "an_object")]
    pub waiting: Option<Waiting>,
}

/// Advertised as a bare object: docs/RECORDS.md describes it, the listing stays small.
fn an_object(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({"type": "object"})
}

/// `bernstein_run_status`, declared once (see [`Tool`]).
pub struct PollRun;

impl Tool for PollRun {
    const NAME: &'static str = NAME;
    const TITLE: &'static str = "Poll a run";
    const DESCRIPTION: &'static str = DESCRIPTION;
    const TIER: Tier = Tier::Core;
    const EFFECTS: Effects = EFFECTS;
    const ADVERTISES_ANSWER: bool = true;
    type Args = RunStatusArgs;
    type Answer = RunStatusAnswer;

    fn call(ctx: &ToolContext<'_>, args: RunStatusArgs) -> Called<RunStatusAnswer> {
        match resolve(ctx, &args) {
            Ok((run_id, h)) => {
                let settled = outcome::ended(h.handle.status)
                    || args
                        .since
                        .as_deref()
                        .is_some_and(|s| s != h.handle.journal_head);
                let p = &ctx.snapshot.domain;
                Called {
                    logs: vec![observed(&h, p.run(&run_id))],
                    links: vec![resource_links::run_link(&run_id)],
                    run_id: Some(run_id),
                    wait_ms: args
                        .wait_ms
                        .filter(|_| !settled)
                        .map(|w| u64::from(w.get())),
                    ..Called::ok(h)
                }
            }
            Err(e) => Called::refused(e),
        }
    }
}

pub fn spec() -> ToolSpec {
    super::spec::<PollRun>()
}

/// The answer `bernstein_run_status` gives for run `run_id` at `snapshot` (`now`: the clock
/// the waiting notice is judged by), also the contents of the run's resource
/// (`crate::resources`); `None` when no run has that id.
pub fn answer(snapshot: &Snapshot, run_id: &str, now: Timestamp) -> Option<RunStatusAnswer> {
    let handle = run_handle(snapshot, run_id)?;
    let p = &snapshot.domain;
    let run = p.run(run_id);
    Some(RunStatusAnswer {
        outcome: run.and_then(|r| outcome::outcome(p, r)),
        waiting: run.and_then(|r| outcome::waiting(p, r, now.0)),
        handle,
    })
}

/// The name of the logger of the run events a poll sees.
pub const LOGGER: &str = "bernstein.run";

/// What a poll logs of the run it read (sent only at a level the client asked for): its status,
/// task counts by status and journal head. A long poll reads the run again each time its
/// journal moves, so it logs each state it sees. `info` while the run works or waits for
/// input, `notice` once completed, `warning` once failed or cancelled.
fn observed(answer: &RunStatusAnswer, run: Option<&RunView>) -> LogMessage {
    let h = &answer.handle;
    let level = match h.status {
        RunStatus::Completed => LogLevel::Notice,
        RunStatus::Failed | RunStatus::Cancelled => LogLevel::Warning,
        _ => LogLevel::Info,
    };
    let mut tasks = serde_json::Map::new();
    for status in TaskStatus::ALL {
        let n = run.map_or(0, |r| r.count(status));
        if n > 0 {
            tasks.insert(status.as_str().into(), n.into());
        }
    }
    LogMessage {
        level,
        logger: LOGGER,
        data: serde_json::json!({
            "event": "run_status",
            "run_id": h.run_id,
            "status": h.status.as_str(),
            "tasks": tasks,
            "journal_head": h.journal_head,
        }),
    }
}

fn resolve(
    ctx: &ToolContext<'_>,
    args: &RunStatusArgs,
) -> Result<(String, RunStatusAnswer), ToolError> {
    let id = args.run_id.as_str();
    let p = &ctx.snapshot.domain;
    let run_id = if p.run(id).is_some() {
        id.to_string()
    } else if let Some(task) = p.task(id) {
        task.run_id.to_string()
    } else {
        return Err(ToolError::new(
            Refusal::UnknownRun,
            format!("run_id {id} names no run and no task in this project's ledger"),
            "Pass the task_id or run_id that bernstein_run returned in this project.",
        )
        .with("run_id", id));
    };
    let h = answer(ctx.snapshot, &run_id, ctx.now).ok_or_else(|| {
        ToolError::new(
            Refusal::UnknownRun,
            format!("task {id} belongs to run {run_id}, whose journal is missing"),
            "The ledger is inconsistent; run `bernstein audit verify`.",
        )
        .with("run_id", id)
    })?;
    Ok((run_id, h))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::handle::verify_run_handle;
    use crate::testkit::Bench;
    use serde_json::json;

    #[test]
    fn two_polls_of_an_unchanged_run_are_byte_identical() {
        let mut b = Bench::new();
        let run = b.start("build it");
        let first = b.call(NAME, json!({"run_id": run}));
        let second = b.call(NAME, json!({"run_id": run}));
        let (x, y) = (first.result.unwrap(), second.result.unwrap());
        assert_eq!(
            serde_json::to_vec(&x).unwrap(),
            serde_json::to_vec(&y).unwrap()
        );
        assert_eq!(first.run_id.as_deref(), Some(run.as_str()));
        assert!(first.drafts.is_empty());
        verify_run_handle(&x).unwrap();
        assert_eq!(x["status"], "working");
        assert!(
            x.get("outcome").is_none() && x.get("waiting").is_none(),
            "{x}"
        );
        assert_eq!(x["taskId"], run.as_str());
        assert_eq!(x["specRevision"], "2026-07-28");
        assert_eq!(
            x["journalHead"],
            b.snapshot.stream_head(&format!("run:{run}")).to_string()
        );
    }

    #[test]
    fn a_subtask_id_reaches_its_run_and_the_handle_moves_with_the_journal() {
        let mut b = Bench::new();
        let run = b.start("root");
        let before = b.ok(NAME, json!({"run_id": run}));
        let child = b.ok("bernstein_run", json!({"goal": "c", "parent_task_id": run}));
        let by_child = b.ok(NAME, json!({"run_id": child["task_id"]}));
        let by_run = b.ok(NAME, json!({"run_id": run}));
        assert_eq!(by_child, by_run);
        assert_eq!(by_run["runId"], run.as_str());
        assert_ne!(by_run["journalHead"], before["journalHead"]);
        assert_ne!(by_run["chainHead"], before["chainHead"]);
        assert_ne!(by_run["receiptHash"], before["receiptHash"]);
        assert_eq!(by_run["pollToken"], before["pollToken"]);
    }

    #[test]
    fn unknown_and_malformed_ids_are_structured_refusals() {
        let mut b = Bench::new();
        b.start("something");
        for bad in [
            "../x",
            "",
            "T-0123",
            "T-0123456789abcdeg",
            "T-0123456789abcde\0",
            &"x".repeat(5000),
        ] {
            let e = b.refused(NAME, json!({"run_id": bad}));
            assert_eq!(e.error, "invalid_arguments", "{bad:?}");
            assert!(!e.hint.is_empty() && !e.message.is_empty());
        }
        let e = b.refused(NAME, json!({"run_id": "T-0123456789abcdef"}));
        assert_eq!(e.error, "unknown_run");
        assert_eq!(e.to_value()["run_id"], "T-0123456789abcdef");
        assert_eq!(b.refused(NAME, json!({})).error, "invalid_arguments");
        assert_eq!(
            b.refused(NAME, json!({"run_id": 7})).error,
            "invalid_arguments"
        );
    }

    #[test]
    fn the_handle_is_the_same_in_every_era() {
        let mut b = Bench::new();
        let run = b.start("x");
        let mut seen = Vec::new();
        for rev in [
            "2024-11-05",
            "2025-06-18",
            "2025-11-25",
            "2026-07-28",
            "operator",
        ] {
            b.spec_revision = rev.into();
            let h = b.ok(NAME, json!({"run_id": run}));
            assert_eq!(h["specRevision"], crate::handle::SPEC_REVISION, "{rev}");
            verify_run_handle(&h).unwrap();
            seen.push(serde_json::to_vec(&h).unwrap());
        }
        assert!(
            seen.windows(2).all(|w| w[0] == w[1]),
            "handle bytes differ by era"
        );
    }

    mod outcome_and_waiting {
        use super::*;
        use crate::lifecycle::TaskStatus;
        use crate::outcome::{MAX_OUTCOME_TASKS, MAX_OUTCOME_TEXT_CHARS, WORKER_HINT};
        use bernstein_core::time::Timestamp;

        const SIX_MINUTES: u64 = 6 * 60_000;

        /// Claims the next task as `w` and completes it with `summary`; the task's id.
        fn do_next(b: &mut Bench, summary: &str) -> String {
            let r = b.ok("bernstein_claim", json!({"claimer_id": "w"}));
            let id = r["taskId"]
                .as_str()
                .expect("a task was granted")
                .to_string();
            b.ok(
                "bernstein_complete",
                json!({"task_id": id, "result_summary": summary}),
            );
            id
        }

        #[test]
        fn a_completed_run_lists_its_tasks_in_creation_order_with_their_summaries() {
            let mut b = Bench::new();
            let run = b.start("root");
            let child = b.subtask(&run, "child");
            let mut done = Vec::new();
            for i in 0..4 {
                if b.ok(NAME, json!({"run_id": run}))["status"] == "completed" {
                    break;
                }
                done.push(do_next(&mut b, &format!("summary {i}")));
            }
            let a = b.ok(NAME, json!({"run_id": run}));
            assert_eq!(a["status"], "completed", "{a}");
            verify_run_handle(&a).unwrap();
            assert!(a.get("waiting").is_none());
            let tasks = a["outcome"]["tasks"].as_array().unwrap();
            assert_eq!(a["outcome"]["more"], 0);
            let ids: Vec<&str> = tasks
                .iter()
                .map(|t| t["taskId"].as_str().unwrap())
                .collect();
            assert_eq!(ids, [run.as_str(), child.as_str()]);
            for t in tasks {
                assert_eq!(t["status"], "done", "{t}");
                assert!(t.get("reason").is_none() && t.get("truncated").is_none());
            }
            for (i, id) in done.iter().enumerate() {
                let t = tasks.iter().find(|t| t["taskId"] == id.as_str()).unwrap();
                assert_eq!(t["summary"], format!("summary {i}"));
            }
            // The outcome is beside the handle, not in it: the handle's fields are a handle.
            let mut handle = a.clone();
            handle.as_object_mut().unwrap().remove("outcome");
            verify_run_handle(&handle).unwrap();
            let again = b.ok(NAME, json!({"run_id": child}));
            assert_eq!(again, a, "polls of an ended run are identical");
        }

        #[test]
        fn a_failed_run_carries_the_reason_and_a_cancelled_one_its_reason() {
            let mut b = Bench::new();
            let run = b.start("will fail");
            b.ok("bernstein_claim", json!({"claimer_id": "w"}));
            b.ok(
                "bernstein_post_message",
                json!({"task_id": run, "body": "agent exited with status 1", "kind": "finding",
                       "sender": "w", "status": "failed"}),
            );
            let a = b.ok(NAME, json!({"run_id": run}));
            assert_eq!(a["status"], "failed");
            assert_eq!(
                a["outcome"]["tasks"],
                json!([{"taskId": run, "status": "failed", "reason": "agent exited with status 1"}])
            );

            let gone = b.start("not needed");
            let sub = b.subtask(&gone, "sub");
            b.ok(
                "bernstein_cancel",
                json!({"task_id": gone, "reason": "the goal changed"}),
            );
            let a = b.ok(NAME, json!({"run_id": gone}));
            assert_eq!(a["status"], "cancelled");
            assert_eq!(
                a["outcome"]["tasks"],
                json!([
                    {"taskId": gone, "status": "cancelled", "reason": "the goal changed"},
                    {"taskId": sub, "status": "cancelled",
                     "reason": format!("cancelled with ancestor {gone}")},
                ])
            );
        }

        #[test]
        fn an_outcome_is_bounded_in_tasks_and_in_text() {
            let mut b = Bench::new();
            let run = b.start("many");
            for i in 0..MAX_OUTCOME_TASKS + 10 {
                b.subtask(&run, &format!("sub {i}"));
            }
            b.ok("bernstein_cancel", json!({"task_id": run}));
            let a = b.ok(NAME, json!({"run_id": run}));
            assert_eq!(a["status"], "cancelled");
            assert_eq!(
                a["outcome"]["tasks"].as_array().unwrap().len(),
                MAX_OUTCOME_TASKS
            );
            assert_eq!(a["outcome"]["more"], 11);
            assert_eq!(a["outcome"]["tasks"][0]["taskId"], run.as_str());

            let mut b = Bench::new();
            let run = b.start("long");
            let long = "é".repeat(4000);
            do_next(&mut b, &long);
            let a = b.ok(NAME, json!({"run_id": run}));
            let t = &a["outcome"]["tasks"][0];
            assert_eq!(t["truncated"], true);
            assert_eq!(
                t["summary"].as_str().unwrap(),
                "é".repeat(MAX_OUTCOME_TEXT_CHARS)
            );
            assert!(serde_json::to_vec(&a).unwrap().len() < 2 * 1024);
        }

        #[test]
        fn a_run_waits_for_a_worker_after_six_minutes_without_a_claim() {
            let mut b = Bench::new();
            let run = b.start("nobody home");
            b.now = Timestamp(b.now.0 + SIX_MINUTES - 5_000);
            assert!(b.ok(NAME, json!({"run_id": run})).get("waiting").is_none());
            b.now = Timestamp(b.now.0 + 5_000);
            let a = b.ok(NAME, json!({"run_id": run}));
            verify_run_handle(&a).unwrap();
            assert_eq!(
                a["waiting"],
                json!({"for": "worker", "lastClaimAt": null, "hint": WORKER_HINT})
            );
            assert_eq!(
                b.ok(NAME, json!({"run_id": run})),
                a,
                "the notice is stable"
            );

            // A refused claim is a worker too: the notice goes until six quiet minutes pass.
            let refused = b.ok(
                "bernstein_claim",
                json!({"claimer_id": "w", "role": "nobody-has-this-role"}),
            );
            assert_eq!(refused["granted"], false, "{refused}");
            let claimed_at = b.now.0 - 1_000;
            assert!(b.ok(NAME, json!({"run_id": run})).get("waiting").is_none());
            b.now = Timestamp(claimed_at + SIX_MINUTES);
            let a = b.ok(NAME, json!({"run_id": run}));
            assert_eq!(a["waiting"]["lastClaimAt"], claimed_at);

            // A held task means a worker is on it.
            b.ok("bernstein_claim", json!({"claimer_id": "w"}));
            b.now = Timestamp(b.now.0 + 2 * SIX_MINUTES);
            assert_eq!(b.status_of(&run), TaskStatus::Claimed);
            assert!(b.ok(NAME, json!({"run_id": run})).get("waiting").is_none());
        }
    }
}
