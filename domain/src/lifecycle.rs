//! The task lifecycle: one table of legal status transitions, and the sets derived from it.
//!
//! Every status change of a task, wherever it happens (a tool building drafts, the projection
//! folding records), goes through [`transition`] or [`advance`]. The named sets the tools
//! quote in their refusals (approvable, worker-completable, cancellable, terminal, splittable)
//! are computed from [`TRANSITIONS`], never listed by hand, so they cannot drift from it.
//!
//! This module must never hold state, read the ledger or know about tools: it is the rulebook.

use serde::{Deserialize, Serialize};

/// The status of a task.
// Variant notes are plain comments, not docs, so the generated schema is a flat string enum.
#[derive(
    Clone,
    Copy,
    Debug,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
#[schemars(transform = super::schema::undescribed)]
pub enum TaskStatus {
    // Part of a plan that waits for an operator's decision.
    Planned,
    // Ready to be claimed by a worker.
    Open,
    // A worker holds it but has not started.
    Claimed,
    // A worker is working on it.
    InProgress,
    // Finished successfully.
    Done,
    // Finished and verified (after done).
    Closed,
    // Ended without delivering; an operator may reopen it.
    Failed,
    // Cannot proceed until someone intervenes.
    Blocked,
    // Split into subtasks; resumes when they end.
    WaitingForSubtasks,
    // Stopped on request; never runs again.
    Cancelled,
    // Its worker vanished mid-task; pending crash recovery.
    Orphaned,
    // Finished work held for an operator's sign-off.
    PendingApproval,
}

impl TaskStatus {
    /// Every status, in declaration order.
    pub const ALL: [TaskStatus; 12] = [
        TaskStatus::Planned,
        TaskStatus::Open,
        TaskStatus::Claimed,
        TaskStatus::InProgress,
        TaskStatus::Done,
        TaskStatus::Closed,
        TaskStatus::Failed,
        TaskStatus::Blocked,
        TaskStatus::WaitingForSubtasks,
        TaskStatus::Cancelled,
        TaskStatus::Orphaned,
        TaskStatus::PendingApproval,
    ];

    /// The wire name (`in_progress`, `waiting_for_subtasks`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            TaskStatus::Planned => "planned",
            TaskStatus::Open => "open",
            TaskStatus::Claimed => "claimed",
            TaskStatus::InProgress => "in_progress",
            TaskStatus::Done => "done",
            TaskStatus::Closed => "closed",
            TaskStatus::Failed => "failed",
            TaskStatus::Blocked => "blocked",
            TaskStatus::WaitingForSubtasks => "waiting_for_subtasks",
            TaskStatus::Cancelled => "cancelled",
            TaskStatus::Orphaned => "orphaned",
            TaskStatus::PendingApproval => "pending_approval",
        }
    }

    /// Parses a wire name.
    pub fn parse(s: &str) -> Option<TaskStatus> {
        TaskStatus::ALL.into_iter().find(|st| st.as_str() == s)
    }

    /// Whether the task has finished (see [`terminal`]).
    pub fn is_terminal(self) -> bool {
        terminal().contains(&self)
    }
}

impl std::fmt::Display for TaskStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What moves a task along an edge. Tags classify edges so the named sets can be derived.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Trigger {
    /// An operator approves the plan holding the task.
    Promote,
    /// A worker claims an open task.
    Claim,
    /// The claimer starts working.
    Start,
    /// The task goes back to the queue (unclaim, force-claim, requeue after a crash).
    Requeue,
    /// Subtasks are created under the task.
    Split,
    /// The task cannot proceed.
    Block,
    /// A blocked task is released.
    Unblock,
    /// A worker reports the work finished (`bernstein_complete`).
    Complete,
    /// An operator signs off finished work (`bernstein_approve`).
    Approve,
    /// An operator rejects finished work held for sign-off (`bernstein_approve` with
    /// `decision: reject`): it goes back to the queue to be reworked.
    Reject,
    /// The last subtask of a waiting parent ended.
    SubtasksDone,
    /// The work ended without delivering.
    Fail,
    /// Someone stopped the task (`bernstein_cancel`, plan rejection).
    Cancel,
    /// The task's worker vanished.
    Orphan,
    /// Crash recovery found the work of an orphaned task finished.
    Recover,
    /// Finished work is verified and closed.
    Close,
    /// An operator reopens finished or failed work under the same id.
    Reopen,
}

/// One legal edge of the lifecycle.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Transition {
    pub from: TaskStatus,
    pub to: TaskStatus,
    pub trigger: Trigger,
}

const fn edge(from: TaskStatus, to: TaskStatus, trigger: Trigger) -> Transition {
    Transition { from, to, trigger }
}

use TaskStatus as S;
use Trigger as T;

/// THE table of legal transitions. A (from, to) pair appears at most once.
pub const TRANSITIONS: &[Transition] = &[
    // Plan mode: a plan is decided as a whole.
    edge(S::Planned, S::Open, T::Promote),
    edge(S::Planned, S::Cancelled, T::Cancel),
    edge(S::Planned, S::Failed, T::Fail),
    // Queued work.
    edge(S::Open, S::Claimed, T::Claim),
    edge(S::Open, S::WaitingForSubtasks, T::Split),
    edge(S::Open, S::Done, T::Complete),
    edge(S::Open, S::PendingApproval, T::Complete),
    edge(S::Open, S::Cancelled, T::Cancel),
    edge(S::Open, S::Failed, T::Fail),
    // Claimed work.
    edge(S::Claimed, S::InProgress, T::Start),
    edge(S::Claimed, S::Open, T::Requeue),
    edge(S::Claimed, S::WaitingForSubtasks, T::Split),
    edge(S::Claimed, S::Blocked, T::Block),
    edge(S::Claimed, S::Done, T::Complete),
    edge(S::Claimed, S::PendingApproval, T::Complete),
    edge(S::Claimed, S::Cancelled, T::Cancel),
    edge(S::Claimed, S::Failed, T::Fail),
    // Work in progress.
    edge(S::InProgress, S::Open, T::Requeue),
    edge(S::InProgress, S::WaitingForSubtasks, T::Split),
    edge(S::InProgress, S::Blocked, T::Block),
    edge(S::InProgress, S::Done, T::Complete),
    edge(S::InProgress, S::PendingApproval, T::Complete),
    edge(S::InProgress, S::Cancelled, T::Cancel),
    edge(S::InProgress, S::Failed, T::Fail),
    edge(S::InProgress, S::Orphaned, T::Orphan),
    // A parent waiting for its subtasks.
    edge(S::WaitingForSubtasks, S::Done, T::SubtasksDone),
    edge(S::WaitingForSubtasks, S::PendingApproval, T::SubtasksDone),
    edge(S::WaitingForSubtasks, S::Blocked, T::Block),
    edge(S::WaitingForSubtasks, S::Cancelled, T::Cancel),
    edge(S::WaitingForSubtasks, S::Failed, T::Fail),
    // Blocked work.
    edge(S::Blocked, S::Open, T::Unblock),
    edge(S::Blocked, S::Cancelled, T::Cancel),
    edge(S::Blocked, S::Failed, T::Fail),
    // Crash recovery.
    edge(S::Orphaned, S::Open, T::Requeue),
    edge(S::Orphaned, S::Done, T::Recover),
    edge(S::Orphaned, S::Failed, T::Fail),
    // Sign-off.
    edge(S::PendingApproval, S::Done, T::Approve),
    edge(S::PendingApproval, S::Open, T::Reject),
    // Finished work: only verification or an operator's reopen moves it.
    edge(S::Done, S::Closed, T::Close),
    edge(S::Done, S::Open, T::Reopen),
    edge(S::Failed, S::Open, T::Reopen),
];

/// A status change the table does not allow.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("illegal task transition: {from} -> {to}")]
pub struct IllegalTransition {
    pub from: TaskStatus,
    pub to: TaskStatus,
}

/// Looks up the edge `from -> to`: its trigger, or why it is illegal.
pub fn transition(from: TaskStatus, to: TaskStatus) -> Result<Trigger, IllegalTransition> {
    TRANSITIONS
        .iter()
        .find(|t| t.from == from && t.to == to)
        .map(|t| t.trigger)
        .ok_or(IllegalTransition { from, to })
}

/// Moves `status` to `to` if the table allows it; leaves it untouched otherwise. The only
/// place a held status value is overwritten.
pub fn advance(status: &mut TaskStatus, to: TaskStatus) -> Result<Trigger, IllegalTransition> {
    let trigger = transition(*status, to)?;
    *status = to;
    Ok(trigger)
}

/// The status a new task starts in: `planned` inside a plan, `open` otherwise.
pub fn initial_status(in_plan: bool) -> TaskStatus {
    if in_plan {
        TaskStatus::Planned
    } else {
        TaskStatus::Open
    }
}

/// Statuses with an outgoing edge tagged `trigger`, in declaration order.
pub fn sources_of(trigger: Trigger) -> Vec<TaskStatus> {
    TaskStatus::ALL
        .into_iter()
        .filter(|s| {
            TRANSITIONS
                .iter()
                .any(|t| t.from == *s && t.trigger == trigger)
        })
        .collect()
}

/// Statuses a task may be cancelled from (edges into `cancelled`).
pub fn cancellable() -> Vec<TaskStatus> {
    TaskStatus::ALL
        .into_iter()
        .filter(|s| transition(*s, TaskStatus::Cancelled).is_ok())
        .collect()
}

/// Statuses an operator may approve (`bernstein_approve`).
pub fn approvable() -> Vec<TaskStatus> {
    sources_of(Trigger::Approve)
}

/// Statuses whose finished work an operator may reject back to rework (`bernstein_approve`
/// with `decision: reject`).
pub fn rejectable() -> Vec<TaskStatus> {
    sources_of(Trigger::Reject)
}

/// Statuses a worker may complete (`bernstein_complete`).
pub fn worker_completable() -> Vec<TaskStatus> {
    sources_of(Trigger::Complete)
}

/// Statuses that move to `waiting_for_subtasks` when a subtask is created under them.
pub fn splittable() -> Vec<TaskStatus> {
    sources_of(Trigger::Split)
}

/// Finished statuses: those whose only way out is closing verified work or an operator's
/// reopen. Nothing a worker or a host does moves a terminal task.
pub fn terminal() -> &'static [TaskStatus] {
    // Derived from the table by `terminal_set_agrees_with_the_table` below; kept as a constant
    // so hot paths need not scan the table.
    &[
        TaskStatus::Done,
        TaskStatus::Closed,
        TaskStatus::Failed,
        TaskStatus::Cancelled,
    ]
}

/// Renders statuses as their wire names (for refusal payloads).
pub fn names(statuses: &[TaskStatus]) -> Vec<&'static str> {
    statuses.iter().map(|s| s.as_str()).collect()
}

/// [`names`] in alphabetical order: how refusals list the statuses a call would accept, so
/// every refusal names them the same way.
pub fn sorted_names(statuses: &[TaskStatus]) -> Vec<&'static str> {
    let mut names = names(statuses);
    names.sort_unstable();
    names
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    fn derived_terminal() -> Vec<TaskStatus> {
        TaskStatus::ALL
            .into_iter()
            .filter(|s| {
                TRANSITIONS
                    .iter()
                    .filter(|t| t.from == *s)
                    .all(|t| matches!(t.trigger, Trigger::Close | Trigger::Reopen))
            })
            .collect()
    }

    #[test]
    fn derived_sets_are_the_documented_ones() {
        use TaskStatus::*;
        assert_eq!(approvable(), vec![PendingApproval]);
        assert_eq!(rejectable(), vec![PendingApproval]);
        assert_eq!(transition(PendingApproval, Open), Ok(Trigger::Reject));
        assert_eq!(worker_completable(), vec![Open, Claimed, InProgress]);
        assert_eq!(
            cancellable(),
            vec![
                Planned,
                Open,
                Claimed,
                InProgress,
                Blocked,
                WaitingForSubtasks
            ]
        );
        assert_eq!(terminal(), &[Done, Closed, Failed, Cancelled]);
        assert_eq!(splittable(), vec![Open, Claimed, InProgress]);
    }

    #[test]
    fn terminal_set_agrees_with_the_table() {
        assert_eq!(derived_terminal(), terminal().to_vec());
        for s in TaskStatus::ALL {
            assert_eq!(s.is_terminal(), derived_terminal().contains(&s), "{s}");
        }
    }

    #[test]
    fn every_pair_appears_once_and_no_self_loops() {
        let mut seen = HashSet::new();
        for t in TRANSITIONS {
            assert_ne!(t.from, t.to, "self loop {t:?}");
            assert!(seen.insert((t.from, t.to)), "duplicate edge {t:?}");
        }
    }

    #[test]
    fn every_status_is_reachable_from_a_start() {
        let mut reached: HashSet<TaskStatus> = [initial_status(false), initial_status(true)].into();
        loop {
            let before = reached.len();
            for t in TRANSITIONS {
                if reached.contains(&t.from) {
                    reached.insert(t.to);
                }
            }
            if reached.len() == before {
                break;
            }
        }
        for s in TaskStatus::ALL {
            assert!(reached.contains(&s), "{s} unreachable");
        }
    }

    #[test]
    fn transition_and_advance_follow_the_table() {
        for from in TaskStatus::ALL {
            for to in TaskStatus::ALL {
                let legal = TRANSITIONS.iter().any(|t| t.from == from && t.to == to);
                assert_eq!(transition(from, to).is_ok(), legal, "{from}->{to}");
                let mut held = from;
                let res = advance(&mut held, to);
                assert_eq!(res.is_ok(), legal);
                assert_eq!(held, if legal { to } else { from });
                if let Err(e) = res {
                    assert_eq!(
                        e.to_string(),
                        format!("illegal task transition: {from} -> {to}")
                    );
                }
            }
        }
    }

    #[test]
    fn the_documented_table_is_this_table() {
        let doc = include_str!("../../docs/RECORDS.md");
        let rows: Vec<(String, String, String)> = doc
            .lines()
            .skip_while(|l| !l.starts_with("| from | to | trigger |"))
            .skip(2)
            .take_while(|l| l.starts_with('|'))
            .map(|l| {
                let c: Vec<&str> = l.split('|').map(str::trim).collect();
                (c[1].to_string(), c[2].to_string(), c[3].to_string())
            })
            .collect();
        let table: Vec<(String, String, String)> = TRANSITIONS
            .iter()
            .map(|t| {
                let trig = serde_json::to_value(t.trigger).unwrap();
                (
                    t.from.to_string(),
                    t.to.to_string(),
                    trig.as_str().unwrap().to_string(),
                )
            })
            .collect();
        assert_eq!(rows, table);
    }

    #[test]
    fn wire_names_round_trip() {
        for s in TaskStatus::ALL {
            assert_eq!(TaskStatus::parse(s.as_str()), Some(s));
            assert_eq!(serde_json::to_value(s).unwrap(), s.as_str());
        }
        assert_eq!(TaskStatus::parse("Open"), None);
        assert_eq!(TaskStatus::parse("suspended"), None);
    }
}
