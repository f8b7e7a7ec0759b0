//! What `bernstein_run_status` and the dashboard say beside a run's handle: the outcome of a
//! run that ended (each task with its result summary or the reason it failed or was cancelled,
//! as the ledger recorded them) and the notice that a run waits for a worker. Both are pure
//! functions of the projection (and, for the notice, of the call's clock); neither is covered
//! by the handle's `receiptHash`. Both are bounded: an answer never grows with the run's size
//! or with the length of what a worker wrote.
//!
//! The texts were recorded after the domain's DLP ([`crate::dlp`]) replaced secrets in them; no
//! other text leaves here.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::lifecycle::TaskStatus;
use crate::projection::{Projection, TaskRow};
use crate::runs::{RunStatus, RunView};

/// Most tasks an outcome lists (in creation order); `more` counts the rest.
pub const MAX_OUTCOME_TASKS: usize = 50;
/// Longest summary or reason an outcome quotes, in characters; a longer one is cut on a
/// character boundary and its task marked `truncated`.
pub const MAX_OUTCOME_TEXT_CHARS: usize = 500;

/// How long a project may go without a claim (granted or refused) before a run whose tasks
/// wait in the queue is said to wait for a worker: at least three claim waits of `bernstein
/// worker` (120 s each), so a worker that is running but idle is never mistaken for none.
pub const WORKER_SILENCE: Duration = Duration::from_secs(6 * 60);

/// The hint of the notice (constant, so polls of an unchanged run stay byte-identical).
pub const WORKER_HINT: &str = "No worker has claimed from this project for 6 minutes: start \
`bernstein worker` in the project directory.";

/// The outcome of a run that ended.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Outcome {
    /// The run's tasks, root first, in creation order (at most [`MAX_OUTCOME_TASKS`]).
    pub tasks: Vec<TaskOutcome>,
    /// How many tasks of the run are not listed.
    pub more: u64,
}

/// One task of an outcome.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TaskOutcome {
    pub task_id: String,
    pub status: TaskStatus,
    /// The result summary its completion (or approval) recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
    /// Why it failed or was cancelled, as recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The summary or reason was cut to [`MAX_OUTCOME_TEXT_CHARS`] characters.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub truncated: bool,
}

/// The notice that a run waits for a worker.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Waiting {
    /// What the run waits for: `worker`.
    #[serde(rename = "for")]
    pub waits_for: String,
    /// Wall-clock ms of the project's newest claim, granted or refused (`null`: none yet).
    pub last_claim_at: Option<u64>,
    pub hint: String,
}

/// Whether a run in `status` has ended.
pub fn ended(status: RunStatus) -> bool {
    matches!(
        status,
        RunStatus::Completed | RunStatus::Failed | RunStatus::Cancelled
    )
}

/// The outcome of `run`, or `None` while it has not ended.
pub fn outcome(p: &Projection, run: &RunView) -> Option<Outcome> {
    if !ended(run.status()) {
        return None;
    }
    let mut rows: Vec<&TaskRow> = run.members.keys().filter_map(|id| p.task(id)).collect();
    rows.sort_unstable_by_key(|t| t.created_seq);
    let more = rows.len().saturating_sub(MAX_OUTCOME_TASKS) as u64;
    let tasks = rows
        .into_iter()
        .take(MAX_OUTCOME_TASKS)
        .map(task_outcome)
        .collect();
    Some(Outcome { tasks, more })
}

fn task_outcome(t: &TaskRow) -> TaskOutcome {
    let failed = matches!(t.status, TaskStatus::Failed | TaskStatus::Cancelled);
    let text = if failed {
        t.rare.end_reason.as_deref()
    } else {
        t.rare.result_summary.as_deref()
    };
    let (text, truncated) = match text {
        Some(s) => {
            let (cut, truncated) = cut(s, MAX_OUTCOME_TEXT_CHARS);
            (Some(cut.to_string()), truncated)
        }
        None => (None, false),
    };
    let (summary, reason) = if failed { (None, text) } else { (text, None) };
    TaskOutcome {
        task_id: t.id.to_string(),
        status: t.status,
        summary,
        reason,
        truncated,
    }
}

/// `s` cut to at most `max` characters, and whether it was cut.
fn cut(s: &str, max: usize) -> (&str, bool) {
    match s.char_indices().nth(max) {
        Some((end, _)) => (&s[..end], true),
        None => (s, false),
    }
}

/// The notice for `run` at wall-clock `now` (ms): `Some` when it has not ended, tasks of it
/// wait in the queue and none is held, and no claim was recorded in the project for
/// [`WORKER_SILENCE`] (counted from the run's creation when that is later).
pub fn waiting(p: &Projection, run: &RunView, now: u64) -> Option<Waiting> {
    if ended(run.status())
        || run.count(TaskStatus::Open) == 0
        || run.count(TaskStatus::Claimed) > 0
        || run.count(TaskStatus::InProgress) > 0
    {
        return None;
    }
    let last = p.last_claim_at();
    let since = last.unwrap_or(0).max(run.created_at);
    let silence = u64::try_from(WORKER_SILENCE.as_millis()).unwrap_or(u64::MAX);
    (now.saturating_sub(since) >= silence).then(|| Waiting {
        waits_for: "worker".into(),
        last_claim_at: last,
        hint: WORKER_HINT.into(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_cut_on_a_character_boundary() {
        assert_eq!(cut("abc", 3), ("abc", false));
        assert_eq!(cut("abcd", 3), ("abc", true));
        assert_eq!(cut("ééé", 2), ("éé", true));
        assert_eq!(cut("", 0), ("", false));
    }
}
