//! `bernstein_complete`: the worker's completion gate. Accepted only from the
//! worker-completable statuses (open, claimed, in_progress, derived from the lifecycle table);
//! every other status is refused with `task_not_completable` and no drafts. Completing an `open`
//! task claims it on the way, so it passes the claim's dependency gate: while a task it depends
//! on is not done it is refused with `dependencies_not_done` ([`crate::deps`]). A task that requires
//! approval moves to `pending_approval`, any other to `done` — and a `done` task resumes the
//! parents waiting on it ([`crate::completion`]).
//!
//! The gate is atomic: the decision is taken on the call's snapshot and its records are
//! committed by compare-and-append against that snapshot's position, so a task that entered
//! waiting_for_subtasks after the read makes the append conflict; the call is then decided
//! again on the newer ledger and refused. This handler changes statuses only through
//! `StatusChanges`.

use crate::resource_links;
use serde::{Deserialize, Serialize};

use crate::refusal::Refusal;
use bernstein_core::protocol::registry::{Effects, ToolError};

use crate::bound::{ToolContext, ToolSpec};
use bernstein_core::config::Tier;

use super::super::args::{Ident, TaskId, Text};
use super::super::completion::{ResumedParent, resume_parents};
use super::super::dlp::Redactions;
use super::super::lifecycle::{self, TaskStatus};
use super::super::status_changes::{ChangeNote, StatusChanges};
use super::{Called, Tool, internal, unknown_task};

pub const NAME: &str = "bernstein_complete";

/// Longest result summary, in characters.
pub const MAX_SUMMARY_CHARS: usize = 4096;

const EFFECTS: Effects = Effects {
    reads_files: true,
    writes_files: true,
    spawns_processes: false,
    network: false,
};

const DESCRIPTION: &str = "Finish an open, claimed or in_progress task: done, or pending_approval \
if it needs approval.";

/// Arguments of `bernstein_complete`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CompleteArgs {
    pub task_id: TaskId,
    pub result_summary: Text<1, MAX_SUMMARY_CHARS>,
    /// If given, it must hold the task.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub claimer_id: Option<Ident<256>>,
}

/// Payload of `bernstein_complete`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CompleteAnswer {
    pub task_id: String,
    /// done, or pending_approval when the task requires approval.
    pub status: TaskStatus,
    pub previous_status: TaskStatus,
    pub requires_approval: bool,
    pub run_id: String,
    /// Parents that this completion resumed, nearest first.
    pub resumed_parents: Vec<ResumedParent>,
    /// Secrets DLP replaced before recording, per argument (absent when none; docs/RECORDS.md §7).
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub redactions: std::collections::BTreeMap<String, u64>,
    /// The kinds replaced, sorted (absent when none).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub redacted_kinds: Vec<String>,
}

/// `bernstein_complete`, declared once (see [`Tool`]).
pub struct Complete;

impl Tool for Complete {
    const NAME: &'static str = NAME;
    const TITLE: &'static str = "Complete a task";
    const DESCRIPTION: &'static str = DESCRIPTION;
    const TIER: Tier = Tier::Standard;
    const EFFECTS: Effects = EFFECTS;
    type Args = CompleteArgs;
    type Answer = CompleteAnswer;

    fn call(ctx: &ToolContext<'_>, args: CompleteArgs) -> Called<CompleteAnswer> {
        complete(ctx, args).unwrap_or_else(Called::refused)
    }
}

pub fn spec() -> ToolSpec {
    super::spec::<Complete>()
}

/// The refusal for a task the worker may not complete.
pub fn not_completable(task_id: &str, status: TaskStatus) -> ToolError {
    let hint = match status {
        TaskStatus::WaitingForSubtasks => {
            "The task waits for its subtasks; it completes by itself when the last one does."
        }
        TaskStatus::PendingApproval => {
            "The work is done and awaits an operator's sign-off with bernstein_approve."
        }
        TaskStatus::Planned => "The task belongs to a plan an operator has not approved yet.",
        _ => "Only open, claimed or in_progress tasks can be completed.",
    };
    ToolError::new(
        Refusal::TaskNotCompletable,
        format!("task {task_id} is {status} and cannot be completed by a worker"),
        hint,
    )
    .with("task_id", task_id)
    .with("current_status", status.as_str())
    .with(
        "completable_statuses",
        lifecycle::sorted_names(&lifecycle::worker_completable()),
    )
}

fn complete(
    ctx: &ToolContext<'_>,
    args: CompleteArgs,
) -> Result<Called<CompleteAnswer>, ToolError> {
    let id = args.task_id.as_str();
    let summary = args.result_summary.trim();
    let p = &ctx.snapshot.domain;
    let task = p
        .task(id)
        .ok_or_else(|| unknown_task(Refusal::UnknownTask, "task_id", id))?;
    if !lifecycle::worker_completable().contains(&task.status) {
        return Err(not_completable(id, task.status));
    }
    // Completing an open task claims it on the way: it passes the claim's dependency gate.
    if task.status == TaskStatus::Open
        && let Some(e) = super::super::deps::dependencies_not_done(p, task, "completed")
    {
        return Err(e);
    }
    if let Some(claimer) = &args.claimer_id {
        super::post_message::claimer::check_holds(task, claimer)?;
    }
    let to = if task.requires_approval {
        TaskStatus::PendingApproval
    } else {
        TaskStatus::Done
    };
    // The records redact the summary themselves (and count it there); this counts it for
    // the answer.
    let mut redactions = Redactions::default();
    redactions.field("result_summary", summary);
    let mut changes = StatusChanges::new(p);
    let note = ChangeNote {
        reason: Some("completed by worker"),
        actor: task.claimer.as_deref(),
        summary: Some(summary),
    };
    changes
        .change(id, to, note, ctx.now.0)
        .map_err(|e| internal(NAME, &e.to_string()))?;
    let resumed_parents = if to == TaskStatus::Done {
        resume_parents(&mut changes, id, ctx.now.0).map_err(|e| internal(NAME, &e.to_string()))?
    } else {
        Vec::new()
    };
    let (mut drafts, journal) = changes.into_drafts();
    drafts.extend(journal);
    let answer = CompleteAnswer {
        task_id: task.id.to_string(),
        status: to,
        previous_status: task.status,
        requires_approval: task.requires_approval,
        run_id: task.run_id.to_string(),
        resumed_parents,
        redactions: redactions.counts(),
        redacted_kinds: redactions.kinds(),
    };
    let called = Called {
        drafts,
        run_id: Some(task.run_id.to_string()),
        links: vec![
            resource_links::task_link(&task.id),
            resource_links::run_link(&task.run_id),
        ],
        ..Called::ok(answer)
    };
    Ok(called.reading_task_of(&task.run_id))
}

#[cfg(test)]
pub(crate) mod tests;
