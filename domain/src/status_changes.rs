//! Drafting status changes: both records of each change (`task.status` on the backlog,
//! `run.task_status` on the run's journal), checked against the lifecycle table and against
//! the projection as the transaction's earlier changes leave it. It reads the projection and
//! the projection never reads it.

use std::collections::BTreeMap;

use super::dlp::Redactions;
use super::ids::run_stream;
use super::lifecycle::{self, IllegalTransition, TaskStatus};
use super::projection::Projection;
use super::records::*;
use bernstein_core::ledger::{BACKLOG_STREAM, Draft};

/// Why a status change cannot be drafted.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum StatusChangeError {
    #[error("no task {0}")]
    UnknownTask(String),
    #[error(transparent)]
    Illegal(#[from] IllegalTransition),
}

/// What a status change records besides its edge.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ChangeNote<'a> {
    pub reason: Option<&'a str>,
    pub actor: Option<&'a str>,
    pub summary: Option<&'a str>,
}

impl<'a> ChangeNote<'a> {
    /// A note holding only a reason.
    pub fn reason(reason: Option<&'a str>) -> ChangeNote<'a> {
        ChangeNote {
            reason,
            ..ChangeNote::default()
        }
    }
}

/// The status changes of one transaction, drafted in order through the lifecycle table.
///
/// Each change starts from the status the task has after the changes before it in the same
/// transaction (a plan's root may move planned → open → waiting_for_subtasks in one commit),
/// exactly as the projection will fold them. Backlog and journal drafts are kept apart so a
/// caller can place them (all `task.status` first, then the matching `run.task_status`).
#[derive(Debug)]
pub struct StatusChanges<'p> {
    projection: &'p Projection,
    current: BTreeMap<String, TaskStatus>,
    backlog: Vec<Draft>,
    journal: Vec<Draft>,
    redactions: Redactions,
}

impl<'p> StatusChanges<'p> {
    pub fn new(projection: &'p Projection) -> StatusChanges<'p> {
        StatusChanges {
            projection,
            current: BTreeMap::new(),
            backlog: Vec::new(),
            journal: Vec::new(),
            redactions: Redactions::default(),
        }
    }

    /// What DLP replaced in the reasons and summaries drafted so far.
    pub fn redactions(&self) -> &Redactions {
        &self.redactions
    }

    /// The projection the changes start from.
    pub fn projection(&self) -> &'p Projection {
        self.projection
    }

    /// The status of `task_id` after the changes drafted so far.
    pub fn status(&self, task_id: &str) -> Option<TaskStatus> {
        self.current
            .get(task_id)
            .copied()
            .or_else(|| self.projection.task(task_id).map(|t| t.status))
    }

    /// Drafts moving `task_id` to `to` after checking the edge; returns the status it left.
    pub fn change(
        &mut self,
        task_id: &str,
        to: TaskStatus,
        note: ChangeNote<'_>,
        at: u64,
    ) -> Result<TaskStatus, StatusChangeError> {
        let task = self
            .projection
            .task(task_id)
            .ok_or_else(|| StatusChangeError::UnknownTask(task_id.to_string()))?;
        let from = self.status(task_id).unwrap_or(task.status);
        lifecycle::transition(from, to)?;
        let mut r = Redactions::default();
        let change = TaskStatusChanged {
            task_id: task.id.to_string(),
            run_id: task.run_id.to_string(),
            from,
            to,
            reason: r.optional("reason", note.reason),
            actor: note.actor.map(str::to_string),
            summary: r.optional("summary", note.summary),
            at,
            redactions: r.counts(),
            redacted_kinds: r.kinds(),
        };
        self.redactions.merge(&r);
        self.backlog
            .push(draft(BACKLOG_STREAM, TASK_STATUS, &change));
        self.journal
            .push(draft(run_stream(&task.run_id), RUN_TASK_STATUS, &change));
        self.current.insert(task.id.to_string(), to);
        Ok(from)
    }

    /// Whether nothing was drafted.
    pub fn is_empty(&self) -> bool {
        self.backlog.is_empty()
    }

    /// The drafts: (`task.status` records, `run.task_status` records), in change order.
    pub fn into_drafts(self) -> (Vec<Draft>, Vec<Draft>) {
        (self.backlog, self.journal)
    }
}

/// The two drafts (backlog, run journal) moving `task_id` from its current status to `to`,
/// after checking the edge against the lifecycle table: [`StatusChanges`] with one change.
pub fn status_change_drafts(
    projection: &Projection,
    task_id: &str,
    to: TaskStatus,
    reason: Option<&str>,
    at: u64,
) -> Result<(Draft, Draft), StatusChangeError> {
    let mut changes = StatusChanges::new(projection);
    changes.change(task_id, to, ChangeNote::reason(reason), at)?;
    let (mut backlog, mut journal) = changes.into_drafts();
    match (backlog.pop(), journal.pop()) {
        (Some(b), Some(j)) => Ok((b, j)),
        // `change` succeeded, so it pushed one draft to each list.
        _ => unreachable!("a successful change drafts one record per stream"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_change_refuses_unknown_tasks_and_illegal_edges() {
        let p = Projection::default();
        assert_eq!(
            status_change_drafts(&p, "T-0000000000000000", TaskStatus::Cancelled, None, 0),
            Err(StatusChangeError::UnknownTask("T-0000000000000000".into()))
        );
    }
}
