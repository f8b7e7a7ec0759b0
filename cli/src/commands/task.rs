//! `bernstein task cancel TASK_ID`: the `bernstein_cancel` gate from the command line, and the
//! job every operator command commits through the engine's transaction path: run the command
//! on a fresh snapshot, seal its drafts against that snapshot's position, and on a conflict run
//! it again on the newer ledger — so an operator decision is never applied to a state it was
//! not taken on. Exit 0 done (or already finished), 1 refused, 2 usage or IO error. It says
//! what it did in a line or two (`--json`: the answer, or the refusal, as the tool gives it).

use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

use bernstein_core::Config;
use bernstein_core::engine::{Job, Round};
use bernstein_core::ledger::{Append, Store, seal};
use bernstein_core::protocol::Outcome;
use bernstein_core::time::Timestamp;
use bernstein_domain::Projection;
use bernstein_domain::Snapshot;
use bernstein_domain::operator::{self, OperatorOutcome};
use bernstein_effects::host::NoHost;
use bernstein_effects::local::Local;
use bernstein_effects::perform::Backend;
use bernstein_os::clock::SystemClock;
use clap::Subcommand;

#[derive(Debug, Subcommand)]
pub enum TaskCommand {
    /// Cancel a task and its subtask tree (the same gate as the bernstein_cancel tool).
    Cancel {
        /// The task to cancel.
        task_id: String,
        /// Why, recorded in the ledger.
        #[arg(long)]
        reason: Option<String>,
        /// Print the answer (or the refusal) as JSON, as the bernstein_cancel tool gives it.
        #[arg(long)]
        json: bool,
    },
}

pub fn run(workdir: &Path, store: Option<&str>, command: TaskCommand) -> Result<ExitCode, String> {
    let TaskCommand::Cancel {
        task_id,
        reason,
        json,
    } = command;
    let (store, key) = super::open_operator_store(workdir, store)?;
    let config = Config::new(key.clone());
    let outcome = commit_operator(store, &key, move |snap, now| {
        operator::cancel_task(snap, &config, now, &task_id, reason.as_deref())
    })?;
    match outcome {
        Ok(out) if json => {
            print_json(&out.answer)?;
            Ok(ExitCode::SUCCESS)
        }
        Ok(out) => {
            for line in cancel_lines(&out.answer) {
                say!("{line}");
            }
            Ok(ExitCode::SUCCESS)
        }
        Err(e) if json => {
            // Once, on stdout like the success answer (exit 1 says it was refused).
            print_json(&e.to_value())?;
            Ok(ExitCode::from(1))
        }
        Err(e) => {
            bernstein_os::log_line!("bernstein: {}", refusal_text(&e.message, &e.hint));
            Ok(ExitCode::from(1))
        }
    }
}

/// What a cancel did, for a person: the task and how many tasks changed, then what the
/// lifecycle kept from being cancelled, if anything.
fn cancel_lines(answer: &serde_json::Value) -> Vec<String> {
    let text = |k: &str| answer[k].as_str().unwrap_or("?").to_string();
    let count = |k: &str| answer[k].as_u64().unwrap_or(0);
    let (task, previous) = (text("task_id"), text("previous_status"));
    if answer["already_terminal"].as_bool() == Some(true) {
        return vec![format!(
            "task {task} was already {previous}: nothing changed"
        )];
    }
    let descendants = count("cancelled_descendants");
    let mut first = format!("cancelled task {task} (was {previous})");
    if descendants > 0 {
        first.push_str(&format!(" and {descendants} of its subtasks"));
    }
    first.push_str(&format!(": {}", tasks_changed(descendants + 1)));
    if answer["run_cancelled"].as_bool() == Some(true) {
        first.push_str(&format!("; run {} cancelled", text("run_id")));
    }
    let mut lines = vec![first];
    let kept = count("not_cancelled_count");
    if kept > 0 {
        let listed: Vec<String> = answer["not_cancelled"]
            .as_array()
            .map(|rows| {
                rows.iter()
                    .map(|r| {
                        format!(
                            "{} ({})",
                            r["task_id"].as_str().unwrap_or("?"),
                            r["status"].as_str().unwrap_or("?")
                        )
                    })
                    .collect()
            })
            .unwrap_or_default();
        let more = if kept > listed.len() as u64 {
            format!(", and {} more", kept - listed.len() as u64)
        } else {
            String::new()
        };
        let subtasks = if kept == 1 { "subtask" } else { "subtasks" };
        lines.push(format!(
            "{kept} unfinished {subtasks} could not be cancelled: {}{more}",
            listed.join(", ")
        ));
    }
    lines
}

/// A refusal for a person: its message, then its hint when it has one.
fn refusal_text(message: &str, hint: &str) -> String {
    if hint.trim().is_empty() {
        message.to_string()
    } else {
        format!("{message}. {hint}")
    }
}

/// `1 task changed`, `3 tasks changed`.
pub(crate) fn tasks_changed(n: u64) -> String {
    format!("{n} task{} changed", if n == 1 { "" } else { "s" })
}

/// Prints `v` as pretty JSON on stdout.
pub(crate) fn print_json(v: &serde_json::Value) -> Result<(), String> {
    say!(
        "{}",
        serde_json::to_string_pretty(v).map_err(|e| e.to_string())?
    );
    Ok(())
}

/// Runs `command` on a fresh snapshot and commits its drafts through the engine's one
/// transaction path (a job submitted to a local engine, `Local::commit`): sealed against that
/// snapshot's position, decided again on the newer ledger after a lost race, durable before
/// this returns. `Ok(Err(refusal))` when the command refused (nothing written); `Err` on a
/// store failure.
pub(crate) fn commit_operator<C, E>(
    store: Arc<dyn Store<Projection>>,
    key: &[u8],
    command: C,
) -> Result<Result<OperatorOutcome, E>, String>
where
    C: FnMut(&Snapshot, Timestamp) -> Result<OperatorOutcome, E> + Send + 'static,
    E: Send + 'static,
{
    let backend = Backend::new(store, Arc::new(SystemClock), Arc::new(NoHost));
    let local = Local::for_jobs(&backend).map_err(|e| format!("cannot start the engine: {e}"))?;
    let job = OperatorJob {
        key: key.to_vec(),
        command,
        decided: None,
    };
    let (job, _) = local.commit(job).map_err(|e| e.to_string())?;
    job.decided
        .ok_or_else(|| "the operator command was never run".to_string())
}

/// An operator command as an engine job: its last decision is kept for the caller.
struct OperatorJob<C, E> {
    key: Vec<u8>,
    command: C,
    decided: Option<Result<OperatorOutcome, E>>,
}

impl<C, E> Job for OperatorJob<C, E>
where
    C: FnMut(&Snapshot, Timestamp) -> Result<OperatorOutcome, E>,
{
    type Fold = Projection;
    fn run(&mut self, round: Round<'_, Projection>) -> Outcome {
        let snap = round.snapshot;
        let decided = (self.command)(snap, round.now);
        let append = match &decided {
            Ok(out) if !out.drafts.is_empty() => Some(Append {
                expected: snap.position,
                read_heads: None,
                records: seal(
                    &snap.position,
                    |s| snap.stream_head(s),
                    out.drafts.clone(),
                    &self.key,
                ),
            }),
            _ => None,
        };
        self.decided = Some(decided);
        Outcome {
            append,
            ..Outcome::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::cancel_lines;

    #[test]
    fn a_cancel_says_what_changed_in_a_line_or_two() {
        let answer = json!({
            "task_id": "T-1", "status": "cancelled", "previous_status": "open",
            "already_terminal": false, "cancelled_descendants": 2, "run_id": "T-1",
            "run_cancelled": true, "not_cancelled_count": 1,
            "not_cancelled": [{"task_id": "T-3", "status": "pending_approval"}],
        });
        assert_eq!(
            cancel_lines(&answer),
            [
                "cancelled task T-1 (was open) and 2 of its subtasks: 3 tasks changed; run T-1 cancelled",
                "1 unfinished subtask could not be cancelled: T-3 (pending_approval)",
            ]
        );
        let leaf = json!({
            "task_id": "T-2", "previous_status": "claimed", "already_terminal": false,
            "cancelled_descendants": 0, "run_id": "T-1", "run_cancelled": false,
            "not_cancelled_count": 0, "not_cancelled": [],
        });
        assert_eq!(
            cancel_lines(&leaf),
            ["cancelled task T-2 (was claimed): 1 task changed"]
        );
        let done = json!({"task_id": "T-2", "previous_status": "done", "already_terminal": true});
        assert_eq!(
            cancel_lines(&done),
            ["task T-2 was already done: nothing changed"]
        );
    }
}
