//! What finishing a task sets off: a parent waiting for its subtasks resumes when its last
//! subtask ends.
//!
//! Rule (docs/RECORDS.md §3): after a task reaches `done` (a worker's completion or an
//! operator's approval), its parent, if `waiting_for_subtasks` and now without unfinished
//! children, moves on along a `subtasks_done` edge: to `pending_approval` when the parent
//! requires approval, to `done` otherwise — unless a child `failed`, in which case the parent
//! is `blocked` for someone to decide. A parent that reaches `done` repeats the rule for its
//! own parent. Every change goes through [`StatusChanges`] (the lifecycle table).
//!
//! This module never decides whether the completion itself was allowed; the gates do.

use serde::{Deserialize, Serialize};

use super::lifecycle::TaskStatus;
use super::status_changes::{ChangeNote, StatusChangeError, StatusChanges};

/// A parent the completion resumed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ResumedParent {
    pub task_id: String,
    /// Its status now: done, pending_approval or blocked.
    pub status: TaskStatus,
}

/// After `task_id` reached `done` in `changes`, resumes the waiting parents above it.
pub fn resume_parents(
    changes: &mut StatusChanges<'_>,
    task_id: &str,
    at: u64,
) -> Result<Vec<ResumedParent>, StatusChangeError> {
    let p = changes.projection();
    let mut resumed = Vec::new();
    let mut child = task_id.to_string();
    while let Some(parent) = p.task(&child).and_then(|t| t.rare.parent_id.clone()) {
        if changes.status(&parent) != Some(TaskStatus::WaitingForSubtasks) {
            break;
        }
        let Some(row) = p.task(&parent) else { break };
        let statuses: Vec<TaskStatus> = row
            .rare
            .children
            .iter()
            .filter_map(|c| changes.status(c))
            .collect();
        if statuses.iter().any(|s| !s.is_terminal()) {
            break;
        }
        let failed = row
            .rare
            .children
            .iter()
            .find(|c| changes.status(c) == Some(TaskStatus::Failed));
        let (to, reason) = match failed {
            Some(f) => (TaskStatus::Blocked, format!("subtask {f} failed")),
            None if row.requires_approval => (
                TaskStatus::PendingApproval,
                format!("last subtask {child} finished; awaiting approval"),
            ),
            None => (TaskStatus::Done, format!("last subtask {child} finished")),
        };
        changes.change(&parent, to, ChangeNote::reason(Some(&reason)), at)?;
        resumed.push(ResumedParent {
            task_id: parent.clone(),
            status: to,
        });
        if to != TaskStatus::Done {
            break;
        }
        child = parent;
    }
    Ok(resumed)
}
