//! Claim leases: how long a claimer holds a task without a word, and what happens when the
//! lease runs out.
//!
//! A granted claim carries a lease (`lease_seconds`, bounded by [`MIN_LEASE_SECONDS`] and
//! [`MAX_LEASE_SECONDS`], default [`DEFAULT_LEASE_SECONDS`]): a `task.lease` record on the
//! backlog naming the claimer and the wall-clock ms the lease ends at. Every message the claimer
//! posts to the task renews it (a new `task.lease`, same length, from the posting call's time).
//! Once `now` is past `expires_at`, the task is offered to the next claim as if it were open: that
//! claim records `task.reclaimed` (previous claimer, expiry), moves the task back to open and on
//! to claimed for the new claimer in one transaction, and writes the new claimer's lease. The old
//! claimer's later verbs on the task are refused as a stale claim. A reclaim happens at most once
//! per expiry: the new lease is not expired, and the compare-and-append lets one claimer win.
//!
//! This module holds the record bodies and the rules on them; it never reads a clock (`now`
//! arrives from the tool context) and never decides a tool call on its own.

use serde::{Deserialize, Serialize};

use bernstein_core::ledger::{BACKLOG_STREAM, Draft};

use super::lifecycle::TaskStatus;
use super::records::draft;
use super::task_row::TaskRow;

/// Backlog: a claimer's lease on a task, granted with a claim or renewed by a message.
pub const TASK_LEASE: &str = "task.lease";
/// Backlog: a task whose lease expired was taken over by another claimer.
pub const TASK_RECLAIMED: &str = "task.reclaimed";

/// Lease of a claim that names none.
pub const DEFAULT_LEASE_SECONDS: u64 = 300;
/// Shortest lease a claim may ask for.
pub const MIN_LEASE_SECONDS: u64 = 1;
/// Longest lease a claim may ask for (a day).
pub const MAX_LEASE_SECONDS: u64 = 86_400;

/// `task.lease` (stream `backlog`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TaskLease {
    pub task_id: String,
    pub run_id: String,
    pub claimer_id: String,
    /// Length of the lease in ms; a renewal keeps it.
    pub lease_ms: u64,
    /// Wall-clock ms after which another claimer may take the task.
    pub expires_at: u64,
    /// Wall-clock ms of the granting or renewing call.
    pub at: u64,
}

/// `task.reclaimed` (stream `backlog`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TaskReclaimed {
    pub task_id: String,
    pub run_id: String,
    /// The claimer taking the task over.
    pub claimer_id: String,
    /// The claimer whose lease expired.
    pub previous_claimer_id: String,
    /// When that lease ended (wall-clock ms).
    pub expired_at: u64,
    pub at: u64,
}

/// Whether `row` is held by a claimer whose lease ended before `now`.
pub fn lease_expired(row: &TaskRow, now: u64) -> bool {
    matches!(row.status, TaskStatus::Claimed | TaskStatus::InProgress)
        && row.claimer.is_some()
        && row.rare.lease_expires_at.is_some_and(|end| end < now)
}

/// The `task.lease` draft giving `claimer_id` the task for `lease_ms` from `now`.
pub fn lease_draft(row: &TaskRow, claimer_id: &str, lease_ms: u64, now: u64) -> Draft {
    draft(
        BACKLOG_STREAM,
        TASK_LEASE,
        &TaskLease {
            task_id: row.id.to_string(),
            run_id: row.run_id.to_string(),
            claimer_id: claimer_id.to_string(),
            lease_ms,
            expires_at: now.saturating_add(lease_ms),
            at: now,
        },
    )
}

/// The `task.reclaimed` draft for `claimer_id` taking over `row` (whose lease expired).
pub fn reclaim_draft(row: &TaskRow, claimer_id: &str, now: u64) -> Draft {
    draft(
        BACKLOG_STREAM,
        TASK_RECLAIMED,
        &TaskReclaimed {
            task_id: row.id.to_string(),
            run_id: row.run_id.to_string(),
            claimer_id: claimer_id.to_string(),
            previous_claimer_id: row
                .claimer
                .as_deref()
                .map(str::to_string)
                .unwrap_or_default(),
            expired_at: row.rare.lease_expires_at.unwrap_or_default(),
            at: now,
        },
    )
}

/// Whether `sender` lost the task to a reclaim and no longer holds it: its verbs are stale.
pub fn is_stale_claimer(row: &TaskRow, sender: &str) -> bool {
    row.claimer.as_deref() != Some(sender) && row.rare.reclaimed_from.iter().any(|c| c == sender)
}
