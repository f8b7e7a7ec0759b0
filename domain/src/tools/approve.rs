//! `bernstein_approve`: an operator signs off finished work. Accepted only from
//! the approvable statuses (pending_approval, derived from the lifecycle table): the task moves
//! to `done`, the note (when given) is recorded as its result summary, and a parent waiting on
//! it resumes ([`crate::completion`]). Every other status is refused with
//! `task_not_awaiting_approval` and no drafts; a planned task is refused with a hint that plans
//! are decided as a whole (`bernstein plan approve`). Atomic like every gate: decided on the
//! call's snapshot, committed by compare-and-append against it.

use crate::resource_links;
use serde::{Deserialize, Serialize};

use crate::refusal::Refusal;
use bernstein_core::protocol::registry::{Effects, ToolError};

use crate::bound::{ToolContext, ToolSpec};
use bernstein_core::config::Tier;

use super::super::args::{TaskId, Text};
use super::super::completion::{ResumedParent, resume_parents};
use super::super::dlp::Redactions;
use super::super::lifecycle::{self, TaskStatus};
use super::super::status_changes::{ChangeNote, StatusChanges};
use super::{Called, Tool, internal, unknown_task};

pub const NAME: &str = "bernstein_approve";

/// Longest note, in characters.
pub const MAX_NOTE_CHARS: usize = 4096;

const EFFECTS: Effects = Effects {
    reads_files: true,
    writes_files: true,
    spawns_processes: false,
    network: false,
};

const DESCRIPTION: &str = "Approve a pending_approval task: it moves to done, the note its \
summary. Plans: `bernstein plan approve`.";

/// Arguments of `bernstein_approve`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ApproveArgs {
    pub task_id: TaskId,
    // Recorded (redacted) as the result summary, as the description says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<Text<1, MAX_NOTE_CHARS>>,
}

/// Payload of `bernstein_approve`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ApproveAnswer {
    pub task_id: String,
    /// Always done.
    pub status: TaskStatus,
    pub previous_status: TaskStatus,
    pub run_id: String,
    /// The result summary now recorded for the task.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_summary: Option<String>,
    /// Parents that this approval resumed, nearest first.
    pub resumed_parents: Vec<ResumedParent>,
    /// Secrets DLP replaced before recording, per argument (absent when none; docs/RECORDS.md §7).
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub redactions: std::collections::BTreeMap<String, u64>,
    /// The kinds replaced, sorted (absent when none).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub redacted_kinds: Vec<String>,
}

/// `bernstein_approve`, declared once (see [`Tool`]).
pub struct Approve;

impl Tool for Approve {
    const NAME: &'static str = NAME;
    const TITLE: &'static str = "Approve finished work";
    const DESCRIPTION: &'static str = DESCRIPTION;
    const TIER: Tier = Tier::Standard;
    const EFFECTS: Effects = EFFECTS;
    type Args = ApproveArgs;
    type Answer = ApproveAnswer;

    fn call(ctx: &ToolContext<'_>, args: ApproveArgs) -> Called<ApproveAnswer> {
        approve(ctx, args).unwrap_or_else(Called::refused)
    }
}

pub fn spec() -> ToolSpec {
    super::spec::<Approve>()
}

/// The refusal for a task that is not awaiting approval. It names both the approvable and the
/// worker-completable statuses (sorted), and for a task a worker still holds says how the work
/// ends instead: finished, blocked or abandoned.
pub fn not_awaiting_approval(task_id: &str, status: TaskStatus) -> ToolError {
    let completable = lifecycle::worker_completable();
    let hint = match status {
        TaskStatus::Planned => {
            "Planned tasks are decided as a whole plan: review it with `bernstein plan show PLAN_ID` \
             and decide with `bernstein plan approve PLAN_ID --hash H` (or reject)."
                .to_string()
        }
        s if s.is_terminal() => "The task is already finished; there is nothing to approve.".into(),
        s if completable.contains(&s) => format!(
            "Only tasks in pending_approval can be approved. Finish this one with \
             bernstein_complete, report a blocker with bernstein_post_message, or abandon it with \
             `bernstein task cancel {task_id}`."
        ),
        _ => "Only tasks in pending_approval can be approved; a worker completes the task first.".into(),
    };
    ToolError::new(
        Refusal::TaskNotAwaitingApproval,
        format!("task {task_id} is {status}, not awaiting approval"),
        hint,
    )
    .with("task_id", task_id)
    .with("current_status", status.as_str())
    .with(
        "approvable_statuses",
        lifecycle::names(&lifecycle::approvable()),
    )
    .with(
        "completable_statuses",
        lifecycle::sorted_names(&completable),
    )
}

fn approve(ctx: &ToolContext<'_>, args: ApproveArgs) -> Result<Called<ApproveAnswer>, ToolError> {
    let id = args.task_id.as_str();
    let note = args.note.as_deref().map(str::trim);
    let p = &ctx.snapshot.domain;
    let task = p
        .task(id)
        .ok_or_else(|| unknown_task(Refusal::UnknownTask, "task_id", id))?;
    if !lifecycle::approvable().contains(&task.status) {
        return Err(not_awaiting_approval(id, task.status));
    }
    // The records redact the note themselves (and count it there); this redacts it for the
    // answer.
    let mut redactions = Redactions::default();
    let redacted_note = redactions.optional("note", note);
    let mut changes = StatusChanges::new(p);
    let change = ChangeNote {
        reason: Some("approved"),
        actor: None,
        summary: note,
    };
    changes
        .change(id, TaskStatus::Done, change, ctx.now.0)
        .map_err(|e| internal(NAME, &e.to_string()))?;
    let resumed_parents =
        resume_parents(&mut changes, id, ctx.now.0).map_err(|e| internal(NAME, &e.to_string()))?;
    let (mut drafts, journal) = changes.into_drafts();
    drafts.extend(journal);
    let answer = ApproveAnswer {
        task_id: task.id.to_string(),
        status: TaskStatus::Done,
        previous_status: task.status,
        run_id: task.run_id.to_string(),
        result_summary: redacted_note.or_else(|| task.rare.result_summary.clone()),
        resumed_parents,
        redactions: redactions.counts(),
        redacted_kinds: redactions.kinds(),
    };
    Ok(Called {
        drafts,
        run_id: Some(task.run_id.to_string()),
        links: vec![
            resource_links::task_link(&task.id),
            resource_links::run_link(&task.run_id),
        ],
        ..Called::ok(answer)
    })
}

#[cfg(test)]
mod tests;
