//! `bernstein_cancel`: cancel a task and its whole subtask tree in one set of
//! drafts (one commit). Refusals (malformed id, unknown task, a status the lifecycle cannot
//! cancel) carry no drafts. An already-finished task is reported with its status, not refused.
//! Descendants are cancelled where the lifecycle allows; finished ones stay as they are, and
//! ones that cannot be cancelled (orphaned, pending_approval) are listed. Cancelling a run's
//! root also writes `run.cancelled` to the run journal. This handler must never change a status
//! except through `crate::status_changes::status_change_drafts`.

use crate::resource_links;
use serde::{Deserialize, Serialize};

use crate::bound::{ToolContext, ToolSpec};
use crate::refusal::Refusal;
use bernstein_core::config::Tier;
use bernstein_core::ledger::Draft;
use bernstein_core::protocol::refusal::Common;
use bernstein_core::protocol::registry::{Effects, ToolError};

use super::super::args::{TaskId, Text};
use super::super::dlp::Redactions;
use super::super::ids::run_stream;
use super::super::lifecycle::{self, TaskStatus};
use super::super::records::{self, RunCancelled};
use super::{Called, Tool, unknown_task};

pub const NAME: &str = "bernstein_cancel";

/// Most uncancellable descendants one answer lists.
pub const MAX_LISTED: usize = 100;

const EFFECTS: Effects = Effects {
    reads_files: true,
    writes_files: true,
    spawns_processes: false,
    network: false,
};

const DESCRIPTION: &str = "Cancel a task and its subtask tree (a run's root: the run); a finished \
task is reported as is.";

/// Arguments of `bernstein_cancel`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CancelArgs {
    pub task_id: TaskId,
    // Why; recorded (redacted).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<Text<0, 4096>>,
}

/// A descendant the call could not cancel.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct NotCancelled {
    pub task_id: String,
    pub status: TaskStatus,
}

/// Payload of `bernstein_cancel`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CancelAnswer {
    pub task_id: String,
    /// The task's status after the call.
    pub status: TaskStatus,
    /// The task's status before the call.
    pub previous_status: TaskStatus,
    /// Whether the task was already finished (nothing was changed).
    pub already_terminal: bool,
    /// How many descendants this call cancelled.
    pub cancelled_descendants: u64,
    pub run_id: String,
    /// Whether the run itself is now cancelled (the task is its root).
    pub run_cancelled: bool,
    /// Unfinished descendants the lifecycle does not let a cancel stop (first 100).
    pub not_cancelled: Vec<NotCancelled>,
    /// How many such descendants there are in all.
    pub not_cancelled_count: u64,
    /// Secrets DLP replaced before recording, per argument (absent when none; docs/RECORDS.md §7).
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub redactions: std::collections::BTreeMap<String, u64>,
    /// The kinds replaced, sorted (absent when none).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub redacted_kinds: Vec<String>,
}

/// `bernstein_cancel`, declared once (see [`Tool`]).
pub struct Cancel;

impl Tool for Cancel {
    const NAME: &'static str = NAME;
    const TITLE: &'static str = "Cancel a task tree";
    const DESCRIPTION: &'static str = DESCRIPTION;
    const TIER: Tier = Tier::Standard;
    const EFFECTS: Effects = EFFECTS;
    type Args = CancelArgs;
    type Answer = CancelAnswer;

    fn call(ctx: &ToolContext<'_>, args: CancelArgs) -> Called<CancelAnswer> {
        match plan(ctx, args) {
            Ok((answer, drafts)) => {
                let run_id = answer.run_id.clone();
                let called = Called {
                    links: vec![
                        resource_links::task_link(&answer.task_id),
                        resource_links::run_link(&run_id),
                    ],
                    run_id: Some(run_id.clone()),
                    drafts,
                    ..Called::ok(answer)
                };
                called.reading_task_of(&run_id)
            }
            Err(e) => Called::refused(e),
        }
    }
}

pub fn spec() -> ToolSpec {
    super::spec::<Cancel>()
}

fn plan(ctx: &ToolContext<'_>, args: CancelArgs) -> Result<(CancelAnswer, Vec<Draft>), ToolError> {
    let id = args.task_id.as_str();
    let p = &ctx.snapshot.domain;
    let task = p
        .task(id)
        .ok_or_else(|| unknown_task(Refusal::UnknownTask, "task_id", id))?;
    let mut answer = CancelAnswer {
        task_id: task.id.to_string(),
        status: task.status,
        previous_status: task.status,
        already_terminal: task.status.is_terminal(),
        cancelled_descendants: 0,
        run_id: task.run_id.to_string(),
        run_cancelled: false,
        not_cancelled: Vec::new(),
        not_cancelled_count: 0,
        redactions: Default::default(),
        redacted_kinds: Vec::new(),
    };
    if answer.already_terminal {
        return Ok((answer, Vec::new()));
    }
    if lifecycle::transition(task.status, TaskStatus::Cancelled).is_err() {
        return Err(ToolError::new(
            Refusal::TaskNotCancellable,
            format!("task {id} is {} and cannot be cancelled", task.status),
            "Only planned, open, claimed, in_progress, blocked and waiting_for_subtasks tasks can be cancelled; \
             a task awaiting approval is decided with the approval gate.",
        )
        .with("task_id", id)
        .with("current_status", task.status.as_str())
        .with("cancellable_statuses", lifecycle::names(&lifecycle::cancellable())));
    }

    // The records redact the reason themselves (and count it there); this counts it for the
    // answer.
    let mut redactions = Redactions::default();
    redactions.optional("reason", args.reason.as_deref());
    let reason = args.reason.as_deref();
    answer.redactions = redactions.counts();
    answer.redacted_kinds = redactions.kinds();
    let mut backlog = Vec::new();
    let mut journal = Vec::new();
    let descendant_reason = format!("cancelled with ancestor {id}");
    for row in p.subtree(id) {
        if lifecycle::transition(row.status, TaskStatus::Cancelled).is_err() {
            if !row.status.is_terminal() {
                answer.not_cancelled_count += 1;
                if answer.not_cancelled.len() < MAX_LISTED {
                    answer.not_cancelled.push(NotCancelled {
                        task_id: row.id.to_string(),
                        status: row.status,
                    });
                }
            }
            continue;
        }
        let reason = if row.id == id {
            reason
        } else {
            Some(descendant_reason.as_str())
        };
        let (b, j) = crate::status_changes::status_change_drafts(
            p,
            &row.id,
            TaskStatus::Cancelled,
            reason,
            ctx.now.0,
        )
        .map_err(|e| internal(&e.to_string()))?;
        backlog.push(b);
        journal.push(j);
        if row.id != id {
            answer.cancelled_descendants += 1;
        }
    }
    answer.status = TaskStatus::Cancelled;
    if task.rare.parent_id.is_none() && task.run_id == task.id {
        answer.run_cancelled = true;
        journal.push(records::draft(
            run_stream(&task.run_id),
            records::RUN_CANCELLED,
            &RunCancelled::new(
                &task.run_id,
                &task.id,
                reason,
                answer.cancelled_descendants + 1,
                ctx.now.0,
            ),
        ));
    }
    backlog.extend(journal);
    Ok((answer, backlog))
}

fn internal(detail: &str) -> ToolError {
    ToolError::new(
        Common::InternalError,
        format!("bernstein_cancel could not record the cancellation: {detail}"),
        "This is a bug in the server; the ledger was not changed.",
    )
}

#[cfg(test)]
mod tests;
