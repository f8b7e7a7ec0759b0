//! What a message from a task's claimer does besides the mailbox entry: it renews the claim's
//! lease, and with a `status` it moves the task along the lifecycle — `in_progress` (the Start
//! edge, from claimed; already in progress is no change), `failed` (the Fail edge, the body as
//! the reason; a waiting parent whose last subtask this was resumes by the completion rule) or
//! `open` (the Requeue edge: the worker releases a task it will not finish).
//!
//! Only the task's current claimer may change its status, and a claimer that lost the task to
//! a reclaim (its lease expired) is refused as stale whatever it posts. This module drafts the
//! status and lease records; it never writes the mailbox entry (the tool does).

use serde::{Deserialize, Serialize};

use crate::refusal::Refusal;
use bernstein_core::ledger::Draft;
use bernstein_core::protocol::registry::ToolError;

use super::super::super::completion::resume_parents;
use super::super::super::lease;
use super::super::super::lifecycle::{self, TaskStatus};
use super::super::super::projection::{Projection, TaskRow};
use super::super::super::status_changes::{ChangeNote, StatusChanges};
use super::super::internal;

/// The statuses a claimer may move its task to with a message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum MessageStatus {
    // The claimer started working (claimed → in_progress).
    InProgress,
    // The work ended without delivering; the body is the reason.
    Failed,
    // The claimer gives the task back to the queue (release on shutdown).
    Open,
}

impl MessageStatus {
    pub fn task_status(self) -> TaskStatus {
        match self {
            MessageStatus::InProgress => TaskStatus::InProgress,
            MessageStatus::Failed => TaskStatus::Failed,
            MessageStatus::Open => TaskStatus::Open,
        }
    }
}

/// Longest reason copied from a body into a status change.
pub const MAX_REASON_CHARS: usize = 512;

/// Refuses a sender that lost `row` to a reclaim.
pub fn check_not_stale(row: &TaskRow, sender: &str) -> Result<(), ToolError> {
    if lease::is_stale_claimer(row, sender) {
        return Err(ToolError::new(
            Refusal::StaleClaim,
            format!(
                "{sender}'s lease on task {} expired and the task was reclaimed{}",
                row.id,
                row.claimer
                    .as_deref()
                    .map(|c| format!(" by {c}"))
                    .unwrap_or_default()
            ),
            "Stop working on this task and its agent; claim a new task with bernstein_claim.",
        )
        .with("task_id", row.id.as_str())
        .with("current_status", row.status.as_str()));
    }
    Ok(())
}

/// Refuses `claimer` unless it holds `row` (a claimer that lost it to a reclaim is stale):
/// the check of a verb that names its claimer (`bernstein_complete` with `claimer_id`).
pub fn check_holds(row: &TaskRow, claimer: &str) -> Result<(), ToolError> {
    check_not_stale(row, claimer)?;
    if row.claimer.as_deref() != Some(claimer) {
        return Err(ToolError::new(
            Refusal::NotClaimer,
            format!("{claimer} does not hold task {}", row.id),
            "Claim the task with bernstein_claim first, or omit claimer_id.",
        )
        .with("task_id", row.id.as_str())
        .with("current_status", row.status.as_str()));
    }
    Ok(())
}

/// The records a message from `sender` writes besides its mailbox entry: the status change it
/// asks for (checked) and the renewal of the sender's lease. `body` is the redacted body.
pub fn claimer_drafts(
    p: &Projection,
    row: &TaskRow,
    sender: &str,
    status: Option<MessageStatus>,
    body: &str,
    now: u64,
) -> Result<Vec<Draft>, ToolError> {
    let holds = row.claimer.as_deref() == Some(sender);
    let mut changes = StatusChanges::new(p);
    if let Some(want) = status {
        if !holds {
            return Err(ToolError::new(
                Refusal::NotClaimer,
                format!(
                    "only the claimer of task {} may change its status; {sender} does not hold it",
                    row.id
                ),
                "Claim the task with bernstein_claim first, and post with sender set to your claimer_id.",
            )
            .with("task_id", row.id.as_str())
            .with("current_status", row.status.as_str()));
        }
        let to = want.task_status();
        let no_change = to == TaskStatus::InProgress && row.status == TaskStatus::InProgress;
        if !no_change {
            lifecycle::transition(row.status, to).map_err(|_| {
                ToolError::new(
                    Refusal::IllegalTransition,
                    format!("task {} cannot move from {} to {}", row.id, row.status, to),
                    "Read the task's status with bernstein_status; only claimed or in_progress tasks take a status from their claimer.",
                )
                .with("task_id", row.id.as_str())
                .with("current_status", row.status.as_str())
            })?;
            let reason = reason_of(want, sender, body);
            let note = ChangeNote {
                reason: Some(&reason),
                actor: Some(sender),
                summary: None,
            };
            changes
                .change(&row.id, to, note, now)
                .map_err(|e| internal("bernstein_post_message", &e.to_string()))?;
            if to == TaskStatus::Failed {
                resume_parents(&mut changes, &row.id, now)
                    .map_err(|e| internal("bernstein_post_message", &e.to_string()))?;
            }
        }
    }
    let still_held = matches!(
        changes.status(&row.id),
        Some(TaskStatus::Claimed | TaskStatus::InProgress)
    );
    let (mut drafts, journal) = changes.into_drafts();
    if holds
        && still_held
        && let Some(lease_ms) = row.rare.lease_ms
    {
        drafts.push(lease::lease_draft(row, sender, lease_ms, now));
    }
    drafts.extend(journal);
    Ok(drafts)
}

/// The reason recorded with a claimer's status change.
fn reason_of(status: MessageStatus, sender: &str, body: &str) -> String {
    let body: String = body.chars().take(MAX_REASON_CHARS).collect();
    match status {
        MessageStatus::InProgress => format!("started by {sender}"),
        MessageStatus::Failed => body,
        MessageStatus::Open => format!("released by {sender}: {body}"),
    }
}
