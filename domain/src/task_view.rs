//! MCP tasks of Bernstein tasks, projected from the run journals and the backlog: the catalogue's
//! [`TaskHooks`] ([`hooks`]), what `tasks/get`, `tasks/list`, `tasks/result`, `tasks/cancel` and
//! the progress ticks of `bernstein_run_status` report. An MCP task id IS a Bernstein task id
//! (the one `bernstein_run` returned), so any server instance over the same ledger answers
//! identically.
//!
//! - A run's root task reports its run's status (the rule in [`super::runs`]); a subtask reports
//!   its own status through the same phase mapping.
//! - `createdAt` is the task's creation time, `lastUpdatedAt` the latest `updated_at` of the
//!   task (and, for a run, of every member). Both come from record bodies, never from a clock.
//! - Progress ticks: `progress` = members that reached a terminal status, `total` = members.
//!   A tick actually sent is recorded as a `run.progress_tick` record on stream
//!   `progress:<run_id>/<progress>`, so whether a tick at or beyond a value was already sent is a
//!   pure question about stream heads, answered identically by every instance.
//!
//! This module only reads the projection and drafts records; it must never write anything
//! itself nor read a clock.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::Snapshot;
use crate::bound::TaskHooks;
use bernstein_core::digest::Digest;
use bernstein_core::ledger::Draft;
use bernstein_core::protocol::registry::{self, Task};
use bernstein_core::time::Timestamp;

use super::ids::check_task_id;
use super::lifecycle::TaskStatus;
use super::projection::{Projection, TaskRow};
use super::questions;
use super::runs::{RunView, phase_of};
use super::tools::run::{POLL_AFTER_MS, RunAnswer};
use super::tools::{cancel, run, run_status};

/// Stream prefix of the progress-tick records.
pub const PROGRESS_STREAM_PREFIX: &str = "progress:";
/// Kind of a progress-tick record.
pub const PROGRESS_TICK: &str = "run.progress_tick";

/// Bernstein's MCP tasks: runs start through `bernstein_run`, are cancelled through
/// `bernstein_cancel`'s gate, and `bernstein_run_status` ticks.
pub fn hooks() -> TaskHooks {
    TaskHooks {
        start_tool: run::NAME,
        view: |s, id| task_view(&s.domain, id).map(|v| v.task),
        list: |s, after, limit| list_runs(&s.domain, after, limit),
        is_task_id: |id| check_task_id(id).is_ok(),
        answer: |s, id| run_answer(&s.domain, id),
        cancel_tool: cancel::NAME,
        cancel_args: |id| json!({ "task_id": id }),
        ticking_tool: run_status::NAME,
        tick: due_tick,
        asks: |s, id| questions::asks(&s.domain, id),
        reply_tool: questions::REPLY_TOOL,
        reply_args: questions::reply_args,
    }
}

/// One MCP task as the ledger describes it, with the run that holds it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TaskView {
    pub task: Task,
    pub run_id: String,
}

/// The MCP task `id`: a run (by its root task id) or any other task; `None` when unknown.
pub fn task_view(p: &Projection, id: &str) -> Option<TaskView> {
    let row = p.task(id)?;
    match p.run(id) {
        Some(run) if run.root_task_id == id => Some(TaskView {
            task: run_task(p, run, row),
            run_id: run.run_id.to_string(),
        }),
        _ => Some(TaskView {
            task: asking(
                p,
                Task {
                    task_id: row.id.to_string(),
                    status: phase_of(row.status),
                    status_message: format!("task is {}; run {} holds it", row.status, row.run_id),
                    created_at: Timestamp(row.created_at),
                    last_updated_at: Timestamp(row.updated_at.max(row.created_at)),
                },
            ),
            run_id: row.run_id.to_string(),
        }),
    }
}

/// `task` as `input_required` while a worker's question waits for an answer
/// ([`crate::questions`]); a finished task stays as it is.
fn asking(p: &Projection, task: Task) -> Task {
    if task.is_terminal() {
        return task;
    }
    match questions::status_message(p, &task.task_id) {
        Some(status_message) => Task {
            status: registry::TaskStatus::InputRequired,
            status_message,
            ..task
        },
        None => task,
    }
}

fn run_task(p: &Projection, run: &RunView, root: &TaskRow) -> Task {
    let last = run
        .members
        .keys()
        .filter_map(|m| p.task(m))
        .map(|t| t.updated_at)
        .chain([run.created_at, root.updated_at])
        .max()
        .unwrap_or(run.created_at);
    let progress = progress_of(run);
    let task = Task {
        task_id: root.id.to_string(),
        status: run.status(),
        status_message: progress.message,
        created_at: Timestamp(run.created_at),
        last_updated_at: Timestamp(last),
    };
    asking(p, task)
}

/// Runs (as MCP tasks) in run-id order after `after`, at most `limit` of them, and whether
/// more follow.
pub fn list_runs(p: &Projection, after: Option<&str>, limit: usize) -> (Vec<Task>, bool) {
    let mut out = Vec::new();
    let mut more = false;
    for run in p.runs_after(after) {
        if out.len() == limit {
            more = true;
            break;
        }
        if let Some(root) = p.task(&run.root_task_id) {
            out.push(run_task(p, run, root));
        }
    }
    (out, more)
}

/// How far a run has come: rendered from the fold only.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Progress {
    /// Member tasks that reached a terminal status.
    pub earned: u64,
    /// Member tasks the run holds.
    pub total: u64,
    pub message: String,
}

/// The progress of `run`.
pub fn progress_of(run: &RunView) -> Progress {
    let earned: u64 = TaskStatus::ALL
        .into_iter()
        .filter(|s| s.is_terminal())
        .map(|s| run.count(s))
        .sum();
    let total = run.members.len() as u64;
    let message = format!(
        "{earned} of {total} tasks finished ({} done, {} failed, {} cancelled); run is {}",
        run.count(TaskStatus::Done) + run.count(TaskStatus::Closed),
        run.count(TaskStatus::Failed),
        run.count(TaskStatus::Cancelled),
        run.status().as_str()
    );
    Progress {
        earned,
        total,
        message,
    }
}

/// Body of a `run.progress_tick` record.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProgressTick {
    pub run_id: String,
    pub progress: u64,
    pub total: u64,
}

/// The stream recording that a tick of `progress` was sent for `run_id`.
pub fn tick_stream(run_id: &str, progress: u64) -> String {
    format!("{PROGRESS_STREAM_PREFIX}{run_id}/{progress}")
}

/// Whether a tick of `progress` would strictly advance every tick already sent for the run:
/// no tick at `progress` or beyond (up to `total`, which never shrinks) was recorded.
pub fn tick_advances(snapshot: &Snapshot, run_id: &str, progress: &Progress) -> bool {
    (progress.earned..=progress.total.max(progress.earned))
        .all(|n| snapshot.stream_head(&tick_stream(run_id, n)) == Digest::ZERO)
}

/// The tick due for `run_id` ([`TaskHooks::tick`]): its step and record, when it advances every
/// tick already sent for the run.
pub fn due_tick(snapshot: &Snapshot, run_id: &str) -> Option<(registry::Progress, Draft)> {
    let progress = progress_of(snapshot.domain.run(run_id)?);
    if !tick_advances(snapshot, run_id, &progress) {
        return None;
    }
    let draft = tick_draft(run_id, &progress);
    let step = registry::Progress {
        progress: progress.earned,
        total: Some(progress.total),
        message: Some(progress.message),
    };
    Some((step, draft))
}

/// The record of a sent tick.
pub fn tick_draft(run_id: &str, progress: &Progress) -> Draft {
    let body = ProgressTick {
        run_id: run_id.to_string(),
        progress: progress.earned,
        total: progress.total,
    };
    Draft::new(
        tick_stream(run_id, progress.earned),
        PROGRESS_TICK,
        serde_json::to_value(body).expect("a progress tick always serializes"),
    )
}

/// The payload `bernstein_run` would answer for task `id` as it stands now (the result of a
/// task-augmented `bernstein_run` once the task is terminal).
pub fn run_answer(p: &Projection, id: &str) -> Option<Value> {
    let row = p.task(id)?;
    let answer = RunAnswer {
        task_id: row.id.to_string(),
        title: row.title.to_string(),
        status: row.status,
        run_id: row.run_id.to_string(),
        poll_after_ms: POLL_AFTER_MS,
        parent_task_id: row.rare.parent_id.clone(),
        plan_id: None,
        plan_hash: None,
        redactions: row.rare.redactions.clone(),
        redacted_kinds: row.rare.redacted_kinds.clone(),
    };
    Some(serde_json::to_value(answer).expect("a run answer always serializes"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runs::RunStatus;
    use crate::testkit::Bench;
    use serde_json::json;

    #[test]
    fn a_run_is_a_task_whose_status_follows_the_journal() {
        let mut b = Bench::new();
        let started = b.now;
        let run = b.start("build it");
        let v = task_view(&b.snapshot.domain, &run).unwrap();
        assert_eq!(v.task.status, RunStatus::Working);
        assert_eq!(v.task.created_at, started);
        assert_eq!(v.run_id, run);
        assert!(v.task.status_message.contains("0 of 1 tasks finished"));
        let cancelled_at = b.now;
        b.ok("bernstein_cancel", json!({"task_id": run}));
        let v = task_view(&b.snapshot.domain, &run).unwrap().task;
        assert_eq!(v.status, RunStatus::Cancelled);
        assert!(v.is_terminal());
        assert_eq!(v.last_updated_at, cancelled_at);
        assert_eq!(v.created_at, started);
        assert!(task_view(&b.snapshot.domain, "T-0123456789abcdef").is_none());
    }

    #[test]
    fn subtasks_are_tasks_and_runs_list_in_id_order() {
        let mut b = Bench::new();
        let a = b.start("a");
        let c = b.start("c");
        let child = b.subtask(&a, "child");
        let v = task_view(&b.snapshot.domain, &child).unwrap();
        assert_eq!(v.run_id, a);
        assert_eq!(v.task.status, RunStatus::Working);
        let (all, more) = list_runs(&b.snapshot.domain, None, 10);
        assert!(!more);
        let mut ids = vec![a.clone(), c.clone()];
        ids.sort();
        assert_eq!(
            all.iter().map(|t| t.task_id.clone()).collect::<Vec<_>>(),
            ids
        );
        let (first, more) = list_runs(&b.snapshot.domain, None, 1);
        assert!(more);
        let (second, more) = list_runs(&b.snapshot.domain, Some(&first[0].task_id), 1);
        assert!(!more);
        assert_eq!(second[0].task_id, ids[1]);
    }

    #[test]
    fn ticks_are_suppressed_once_sent() {
        let mut b = Bench::new();
        let run = b.start("x");
        let view = b.snapshot.domain.run(&run).unwrap().clone();
        let p = progress_of(&view);
        assert_eq!((p.earned, p.total), (0, 1));
        assert!(tick_advances(&b.snapshot, &run, &p));
        b.commit(vec![tick_draft(&run, &p)]);
        assert!(!tick_advances(&b.snapshot, &run, &p));
        let answer = run_answer(&b.snapshot.domain, &run).unwrap();
        assert_eq!(answer["task_id"], run.as_str());
    }
}
