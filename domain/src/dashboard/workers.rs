//! The workers panel of `/api/overview`: every claimer the task rows name, with the task it
//! holds, when it claimed it, its lease, and when it was last active.
//!
//! The projection keeps no table of claimers; a task row keeps the claimer that holds (or last
//! held) it, the time of its last status change and its lease. So the panel is read from the
//! rows, within bounds that keep the answer's cost independent of the ledger's size: the
//! [`MAX_HELD_SCAN`] newest held tasks (`claimed` or `in_progress`), then the claimers of the
//! [`MAX_RECENT_SCAN`] newest tasks that hold nothing now (a claimer whose only tasks are older
//! is not listed). At most [`MAX_WORKERS`] rows are returned, the most recently active first;
//! `total` and `truncated` say how many more there were.
//!
//! What each time means, exactly:
//! * `claimed_at`: when the claimer took the task it holds, known while that task is still
//!   `claimed` (the claim's status change is the row's last one); `null` once it moved on to
//!   `in_progress` (the claim's time is then only in the audit records) or when it holds none.
//! * `last_active_at`: the newest time its tasks record: a claim, a status change or a lease
//!   renewal (the start of the current lease: `expires_at - lease_ms`).
//!
//! * `last_claim_at`: the newest claim decision of the project, granted or refused (the
//!   projection's [`Projection::last_claim_at`], which a run's `waiting` notice reads too).
//!
//! A claimer id is caller-supplied text: it passes through the domain's DLP ([`crate::dlp`])
//! before it leaves, like every other text the dashboard shows.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use crate::dlp;
use crate::lifecycle::TaskStatus;
use crate::projection::{Projection, TaskRow};

/// Most rows the panel lists.
pub const MAX_WORKERS: usize = 100;
/// Most held tasks (`claimed`, `in_progress`) it looks at, newest first.
pub const MAX_HELD_SCAN: usize = 10_000;
/// Most of the newest tasks it looks at for claimers that hold nothing now.
pub const MAX_RECENT_SCAN: usize = 1_000;

/// One claimer, as the rows describe it.
struct Worker<'p> {
    /// Tasks it holds now.
    held: u64,
    /// The task it holds that it was last active on, or (holding none) the newest it held.
    task: &'p TaskRow,
    last_active_at: u64,
}

/// Whether `row` is held by its claimer.
fn held(row: &TaskRow) -> bool {
    matches!(row.status, TaskStatus::Claimed | TaskStatus::InProgress)
}

/// The newest time `row` records: its last status change or its lease's start.
fn active_at(row: &TaskRow) -> u64 {
    let lease_start = match (row.rare.lease_expires_at, row.rare.lease_ms) {
        (Some(end), Some(ms)) => end.saturating_sub(ms),
        _ => 0,
    };
    row.updated_at.max(lease_start)
}

/// The `workers` object of `/api/overview` at wall-clock `now` (ms).
pub fn workers(p: &Projection, now: u64) -> Value {
    let mut by_claimer: BTreeMap<&str, Worker<'_>> = BTreeMap::new();
    let holding = p
        .tasks_newest_first(Some(TaskStatus::Claimed))
        .chain(p.tasks_newest_first(Some(TaskStatus::InProgress)))
        .take(MAX_HELD_SCAN);
    for row in holding {
        let Some(claimer) = row.claimer.as_deref() else {
            continue;
        };
        let at = active_at(row);
        let w = by_claimer.entry(claimer).or_insert(Worker {
            held: 0,
            task: row,
            last_active_at: at,
        });
        w.held += 1;
        if at > w.last_active_at || (at == w.last_active_at && row.created_seq > w.task.created_seq)
        {
            w.task = row;
            w.last_active_at = at;
        }
    }
    for row in p.tasks_newest_first(None).take(MAX_RECENT_SCAN) {
        let Some(claimer) = row.claimer.as_deref() else {
            continue;
        };
        if held(row) {
            continue; // counted above (or beyond the held bound)
        }
        let at = active_at(row);
        let w = by_claimer.entry(claimer).or_insert(Worker {
            held: 0,
            task: row,
            last_active_at: at,
        });
        if w.held == 0 && at > w.last_active_at {
            w.task = row;
        }
        w.last_active_at = w.last_active_at.max(at);
    }
    let total = by_claimer.len();
    let mut rows: Vec<(&str, Worker<'_>)> = by_claimer.into_iter().collect();
    rows.sort_by(|(a, x), (b, y)| {
        y.last_active_at
            .cmp(&x.last_active_at)
            .then_with(|| a.cmp(b))
    });
    let rows: Vec<Value> = rows
        .into_iter()
        .take(MAX_WORKERS)
        .map(|(claimer, w)| row_json(claimer, &w, now))
        .collect();
    json!({
        "rows": rows,
        "total": total,
        "truncated": total > MAX_WORKERS,
        "max_rows": MAX_WORKERS,
        // Claims refused for want of work too: whether any worker is claiming at all.
        "last_claim_at": p.last_claim_at(),
    })
}

fn row_json(claimer: &str, w: &Worker<'_>, now: u64) -> Value {
    let t = w.task;
    let holds = held(t);
    let lease = if holds { t.rare.lease_expires_at } else { None };
    json!({
        "claimer": dlp::redact(claimer).text,
        "held": w.held,
        "task": {
            "id": t.id,
            "run_id": t.run_id,
            "title": t.title,
            "status": t.status.as_str(),
        },
        "holds_task": holds,
        "claimed_at": (t.status == TaskStatus::Claimed).then_some(t.updated_at),
        "last_active_at": w.last_active_at,
        "lease_expires_at": lease,
        "lease_expired": lease.is_some_and(|end| end < now),
    })
}
