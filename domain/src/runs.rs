//! Runs as their journals describe them: the run view folded from stream `run:<run_id>`, and
//! the rule that turns it into a run status.
//!
//! Run status rule (a pure function of the run journal, documented in docs/RECORDS.md):
//! 1. the journal holds `run.cancelled` → `cancelled`;
//! 2. otherwise the root task's status decides: done/closed → `completed`, failed → `failed`,
//!    cancelled → `cancelled`, planned/blocked/pending_approval → `input_required`,
//!    anything else → `working`;
//! 3. a `working` run with any member task in planned, blocked or pending_approval is
//!    `input_required` (someone must decide before the run can finish).
//!
//! The view also keeps the run's chain anchor: the hash of the `mcp.stateless_call` audit
//! record that the engine wrote in the same transaction as the latest journal record. This
//! module must never look at the backlog or at any other run.

use serde::{Deserialize, Serialize};

use bernstein_core::digest::Digest;

use super::lifecycle::{self, TaskStatus};
use super::records::{RunCancelled, RunCreated, RunTaskAdded, TaskStatusChanged};
use bernstein_core::ledger::compact::InlineStr;

mod counts;
mod members;
pub use counts::StatusCounts;
pub use members::Members;

/// The status of a run as a host sees it (`bernstein_run_status`): a run is an MCP task, so
/// its status is the MCP task status.
pub use bernstein_core::protocol::registry::TaskStatus as RunStatus;

/// What a root task's status means for its run (rule 2).
pub fn phase_of(root: TaskStatus) -> RunStatus {
    match root {
        TaskStatus::Open
        | TaskStatus::Claimed
        | TaskStatus::InProgress
        | TaskStatus::WaitingForSubtasks
        | TaskStatus::Orphaned => RunStatus::Working,
        TaskStatus::Planned | TaskStatus::Blocked | TaskStatus::PendingApproval => {
            RunStatus::InputRequired
        }
        TaskStatus::Done | TaskStatus::Closed => RunStatus::Completed,
        TaskStatus::Failed => RunStatus::Failed,
        TaskStatus::Cancelled => RunStatus::Cancelled,
    }
}

/// One run, folded from its journal.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunView {
    pub run_id: InlineStr,
    pub root_task_id: InlineStr,
    pub title: InlineStr,
    pub created_at: u64,
    /// Every member task with its status as the journal last recorded it (iterates in task-id
    /// order; sized for few members, O(1) to copy with many: [`Members`]).
    pub members: Members,
    /// Member counts by status (maintained incrementally).
    pub member_counts: StatusCounts,
    /// Set by `run.cancelled`.
    pub cancelled: bool,
    /// Ledger seq of the latest record of this run's journal.
    pub last_journal_seq: u64,
    /// The chain anchor: hash of the audit record committed with the latest journal record
    /// (or, if that transaction had none for this run, the audit head before it).
    pub chain_head: Digest,
}

impl RunView {
    /// A run from its `run.created` record at ledger `seq`.
    pub(crate) fn created(body: RunCreated, seq: u64, audit_head: Digest) -> RunView {
        RunView {
            run_id: body.run_id.into(),
            root_task_id: body.root_task_id.into(),
            title: body.title.into(),
            created_at: body.created_at,
            members: Members::default(),
            member_counts: StatusCounts::default(),
            cancelled: false,
            last_journal_seq: seq,
            chain_head: audit_head,
        }
    }

    /// The root task's status (`open` until the journal records the root joining).
    pub fn root_status(&self) -> TaskStatus {
        self.members
            .get(&self.root_task_id)
            .copied()
            .unwrap_or(TaskStatus::Open)
    }

    /// Members currently in `status`.
    pub fn count(&self, status: TaskStatus) -> u64 {
        self.member_counts.get(status)
    }

    /// The run status, by the rule in the module docs.
    pub fn status(&self) -> RunStatus {
        if self.cancelled {
            return RunStatus::Cancelled;
        }
        match phase_of(self.root_status()) {
            RunStatus::Working if self.someone_must_decide() => RunStatus::InputRequired,
            phase => phase,
        }
    }

    fn someone_must_decide(&self) -> bool {
        TaskStatus::ALL
            .into_iter()
            .filter(|s| phase_of(*s) == RunStatus::InputRequired)
            .any(|s| self.count(s) > 0)
    }

    /// Any journal record moves the journal head; the anchor follows it provisionally until
    /// the transaction's audit record arrives.
    pub(crate) fn touched(&mut self, seq: u64, audit_head: Digest) {
        self.last_journal_seq = seq;
        self.chain_head = audit_head;
    }

    /// Folds `run.task_added`; false when inconsistent (already a member, wrong run).
    pub(crate) fn add_member(&mut self, body: &RunTaskAdded) -> bool {
        if body.run_id != self.run_id || self.members.contains_key(&body.task_id) {
            return false;
        }
        self.members.insert(body.task_id.clone(), body.status);
        self.member_counts.increment(body.status);
        true
    }

    /// Folds `run.task_status`; false when the journal's `from` does not match or the edge is
    /// illegal (the view is then left unchanged).
    pub(crate) fn change_member(&mut self, body: &TaskStatusChanged) -> bool {
        if body.run_id != self.run_id {
            return false;
        }
        let Some(status) = self.members.get_mut(&body.task_id) else {
            return false;
        };
        if *status != body.from || lifecycle::advance(status, body.to).is_err() {
            return false;
        }
        self.member_counts.decrement(body.from);
        self.member_counts.increment(body.to);
        true
    }

    /// Folds `run.cancelled`.
    pub(crate) fn cancel(&mut self, body: &RunCancelled) -> bool {
        if body.run_id != self.run_id || body.task_id != self.root_task_id {
            return false;
        }
        self.cancelled = true;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view() -> RunView {
        let mut v = RunView::created(
            RunCreated {
                run_id: "T-a".into(),
                root_task_id: "T-a".into(),
                title: "t".into(),
                created_at: 1,
                redactions: Default::default(),
                redacted_kinds: Vec::new(),
            },
            1,
            Digest::ZERO,
        );
        assert!(v.add_member(&RunTaskAdded {
            run_id: "T-a".into(),
            task_id: "T-a".into(),
            parent_id: None,
            status: TaskStatus::Open,
        }));
        v
    }

    fn change(v: &mut RunView, task: &str, from: TaskStatus, to: TaskStatus) -> bool {
        v.change_member(&TaskStatusChanged {
            run_id: "T-a".into(),
            task_id: task.into(),
            from,
            to,
            reason: None,
            actor: None,
            summary: None,
            at: 2,
            redactions: Default::default(),
            redacted_kinds: Vec::new(),
        })
    }

    #[test]
    fn root_status_decides_the_phase() {
        use TaskStatus::*;
        for s in TaskStatus::ALL {
            let expected = match s {
                Done | Closed => RunStatus::Completed,
                Failed => RunStatus::Failed,
                Cancelled => RunStatus::Cancelled,
                Planned | Blocked | PendingApproval => RunStatus::InputRequired,
                _ => RunStatus::Working,
            };
            assert_eq!(phase_of(s), expected, "{s}");
        }
        let mut v = view();
        assert_eq!(v.status(), RunStatus::Working);
        assert!(change(&mut v, "T-a", Open, Claimed));
        assert!(change(&mut v, "T-a", Claimed, Done));
        assert_eq!(v.status(), RunStatus::Completed);
        assert!(v.status().is_final());
    }

    #[test]
    fn a_member_waiting_for_a_decision_makes_a_working_run_need_input() {
        use TaskStatus::*;
        let mut v = view();
        assert!(v.add_member(&RunTaskAdded {
            run_id: "T-a".into(),
            task_id: "T-b".into(),
            parent_id: Some("T-a".into()),
            status: Open,
        }));
        assert!(change(&mut v, "T-a", Open, WaitingForSubtasks));
        assert!(change(&mut v, "T-b", Open, PendingApproval));
        assert_eq!(v.status(), RunStatus::InputRequired);
        assert!(change(&mut v, "T-b", PendingApproval, Done));
        assert_eq!(v.status(), RunStatus::Working);
        assert_eq!(v.count(Done), 1);
        assert_eq!(v.count(PendingApproval), 0);
        assert!(!v.member_counts.to_map().contains_key(&PendingApproval));
    }

    #[test]
    fn inconsistent_journal_records_change_nothing() {
        use TaskStatus::*;
        let mut v = view();
        let before = v.clone();
        assert!(!change(&mut v, "T-a", Claimed, Done), "wrong from");
        assert!(!change(&mut v, "T-a", Open, Closed), "illegal edge");
        assert!(!change(&mut v, "T-z", Open, Claimed), "not a member");
        assert!(!v.add_member(&RunTaskAdded {
            run_id: "T-a".into(),
            task_id: "T-a".into(),
            parent_id: None,
            status: Open,
        }));
        assert!(!v.cancel(&RunCancelled {
            run_id: "T-a".into(),
            task_id: "T-b".into(),
            reason: None,
            cancelled_tasks: 1,
            at: 3,
            ..Default::default()
        }));
        assert_eq!(v, before);
    }

    #[test]
    fn cancellation_wins() {
        let mut v = view();
        assert!(v.cancel(&RunCancelled {
            run_id: "T-a".into(),
            task_id: "T-a".into(),
            reason: None,
            cancelled_tasks: 1,
            at: 3,
            ..Default::default()
        }));
        assert_eq!(v.status(), RunStatus::Cancelled);
    }
}
