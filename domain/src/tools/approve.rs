//! `bernstein_approve`: a person decides finished work or a plan.
//!
//! A `pending_approval` task: `decision: approve` (or none, from a host that cannot elicit)
//! moves it to `done`, the note its result summary, and resumes a waiting parent
//! ([`crate::completion`]); `decision: reject` sends it back to `open` to be reworked, the note
//! its reason. With no decision, a host that can elicit is asked first ([`form`]).
//!
//! A plan (its root or any planned task) is decided by a person only: a decision in the
//! arguments is refused, and a host that can elicit is shown the plan and its rendering hash
//! and answers; the decision is taken on that hash ([`plan`]), recorded as `bernstein plan
//! approve|reject` records it. A host that cannot elicit is refused as before.
//!
//! Every other status is refused with `task_not_awaiting_approval` and no drafts. Atomic like
//! every gate: decided on the call's snapshot (the run that carries the answer), committed by
//! compare-and-append against it.

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
use super::super::plans::PlanDecision as Decision;
use super::super::projection::TaskRow;
use super::super::status_changes::{ChangeNote, StatusChanges};
use super::{Called, Tool, internal, unknown_task};
use bernstein_core::protocol::input::Capability;

pub const NAME: &str = "bernstein_approve";

/// Longest note, in characters.
pub const MAX_NOTE_CHARS: usize = 4096;

const EFFECTS: Effects = Effects {
    reads_files: true,
    writes_files: true,
    spawns_processes: false,
    network: false,
};

const DESCRIPTION: &str = "Approve or reject a pending_approval task (rejected work reopens). \
Without decision, a host that can elicit asks the person; a plan id is decided only that way.";

/// Arguments of `bernstein_approve`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ApproveArgs {
    pub task_id: TaskId,
    // Recorded (redacted): an approval's result summary, a rejection's reason.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<Text<1, MAX_NOTE_CHARS>>,
    // Finished work only; left out, a host that can elicit asks the person (plans: always).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decision: Option<Decision>,
}

/// Payload of `bernstein_approve`: a task's decision, or a plan's.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(untagged)]
pub enum ApproveAnswer {
    Task(TaskAnswer),
    Plan(plan::PlanAnswer),
}

/// A decided task.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TaskAnswer {
    pub task_id: String,
    /// done when approved, open (to be reworked) when rejected.
    pub status: TaskStatus,
    pub previous_status: TaskStatus,
    pub decision: Decision,
    pub run_id: String,
    /// A rejection's reason as recorded (the note).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The result summary now recorded for the task.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_summary: Option<String>,
    /// Parents that this approval resumed, nearest first (none for a rejection).
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
            "Planned tasks are decided as a whole plan, by a person: call bernstein_approve \
             (without decision) from a host that can elicit, which asks the person, or review it \
             with `bernstein plan show PLAN_ID` and decide with `bernstein plan approve PLAN_ID \
             --hash H` (or reject)."
                .to_string()
        }
        s if s.is_terminal() => "The task is already finished; there is nothing to approve.".into(),
        s if completable.contains(&s) => format!(
            "Only tasks in pending_approval can be approved. Finish this one with \
             bernstein_complete, report a blocker with bernstein_post_message, or abandon it with \
             `bernstein task cancel {task_id}`."
        ),
        _ => "Only tasks in pending_approval can be approved; a worker completes the task first."
            .into(),
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
    let task = ctx
        .snapshot
        .domain
        .task(id)
        .ok_or_else(|| unknown_task(Refusal::UnknownTask, "task_id", id))?;
    // The run that carries the person's answer decides what they were shown.
    if let Some(asked) = form::Asked::of(ctx.input)
        && let Some(answer) = form::answer(ctx.input)
    {
        let answer = answer?;
        return match asked {
            // A plan's reason is the person's own note only.
            form::Asked::Plan { plan_id, plan_hash } => plan::decide(
                ctx,
                &args,
                &plan_id,
                &plan_hash,
                answer.decision,
                answer.note.as_deref(),
            ),
            form::Asked::Task { updated_at, .. } => {
                if task.updated_at != updated_at && lifecycle::approvable().contains(&task.status) {
                    return Err(form::stale_task(id));
                }
                decide_task(ctx, task, answer.decision, answer.note.as_deref().or(note))
            }
        };
    }
    match task.status {
        TaskStatus::Planned => plan::first_round(ctx, &args, task),
        s if lifecycle::approvable().contains(&s) => match args.decision {
            Some(decision) => decide_task(ctx, task, decision, note),
            None if ctx.input.can(Capability::Elicitation) => {
                Ok(Called::need_input(form::ask_task(task)))
            }
            None => decide_task(ctx, task, Decision::Approve, note),
        },
        s => Err(not_awaiting_approval(id, s)),
    }
}

/// Approves or rejects the finished work of `task` on the call's snapshot.
fn decide_task(
    ctx: &ToolContext<'_>,
    task: &TaskRow,
    decision: Decision,
    note: Option<&str>,
) -> Result<Called<ApproveAnswer>, ToolError> {
    let id = task.id.as_str();
    if !lifecycle::approvable().contains(&task.status) {
        return Err(not_awaiting_approval(id, task.status));
    }
    let p = &ctx.snapshot.domain;
    // The records redact the note themselves (and count it there); this redacts it for the
    // answer.
    let mut redactions = Redactions::default();
    let redacted_note = redactions.optional("note", note);
    let mut changes = StatusChanges::new(p);
    let (to, reason, resumed_parents) = match decision {
        Decision::Approve => {
            let change = ChangeNote {
                reason: Some("approved"),
                actor: None,
                summary: note,
            };
            changes
                .change(id, TaskStatus::Done, change, ctx.now.0)
                .map_err(|e| internal(NAME, &e.to_string()))?;
            let resumed = resume_parents(&mut changes, id, ctx.now.0)
                .map_err(|e| internal(NAME, &e.to_string()))?;
            (TaskStatus::Done, None, resumed)
        }
        Decision::Reject => {
            let reason = note.map_or_else(
                || "approval rejected".to_string(),
                |n| format!("approval rejected: {n}"),
            );
            changes
                .change(
                    id,
                    TaskStatus::Open,
                    ChangeNote::reason(Some(&reason)),
                    ctx.now.0,
                )
                .map_err(|e| internal(NAME, &e.to_string()))?;
            let shown = redacted_note.as_deref().map_or_else(
                || "approval rejected".to_string(),
                |n| format!("approval rejected: {n}"),
            );
            (TaskStatus::Open, Some(shown), Vec::new())
        }
    };
    let (mut drafts, journal) = changes.into_drafts();
    drafts.extend(journal);
    let result_summary = match decision {
        Decision::Approve => redacted_note.or_else(|| task.rare.result_summary.clone()),
        Decision::Reject => task.rare.result_summary.clone(),
    };
    let answer = TaskAnswer {
        task_id: task.id.to_string(),
        status: to,
        previous_status: task.status,
        decision,
        run_id: task.run_id.to_string(),
        reason,
        result_summary,
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
        ..Called::ok(ApproveAnswer::Task(answer))
    }
    .reading_task_of(&task.run_id))
}

mod form;
mod plan;

#[cfg(test)]
mod tests;
