//! `bernstein_run_status`: the verifiable handle of a run, by run id or by the id of
//! any task of the run. The id is checked for shape before it is looked up; an unknown or
//! malformed id is a structured refusal. Polls append only the engine's audit record, which
//! never moves a handle, so two polls of an unchanged run answer byte-identically.
//! This handler must never write records.

use serde::{Deserialize, Serialize};

use crate::refusal::Refusal;
use bernstein_core::protocol::registry::{Effects, ToolError};

use crate::bound::{ToolContext, ToolSpec};
use bernstein_core::config::Tier;

use super::super::args::{Chars, Int, TaskId};
use super::super::handle::{RunHandle, run_handle};
use super::super::runs::RunStatus;
use super::{Called, Tool};

pub const NAME: &str = "bernstein_run_status";

const EFFECTS: Effects = Effects {
    reads_files: true,
    writes_files: false,
    spawns_processes: false,
    network: false,
};

const DESCRIPTION: &str = "Poll a run's signed handle tens of seconds apart; stop at completed, \
failed or cancelled.";

/// Arguments of `bernstein_run_status`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RunStatusArgs {
    /// Or any task of the run.
    pub run_id: TaskId,
    /// Long poll: wait for the end or a move past since.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wait_ms: Option<Int<u32, 1, 120_000>>,
    /// The journalHead last seen.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub since: Option<Chars<1, 128>>,
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
    type Answer = RunHandle;

    fn call(ctx: &ToolContext<'_>, args: RunStatusArgs) -> Called<RunHandle> {
        match resolve(ctx, &args) {
            Ok((run_id, h)) => {
                let settled = matches!(
                    h.status,
                    RunStatus::Completed | RunStatus::Failed | RunStatus::Cancelled
                ) || args.since.as_deref().is_some_and(|s| s != h.journal_head);
                Called {
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

fn resolve(ctx: &ToolContext<'_>, args: &RunStatusArgs) -> Result<(String, RunHandle), ToolError> {
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
    let h = run_handle(ctx.snapshot, &run_id).ok_or_else(|| {
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
}
