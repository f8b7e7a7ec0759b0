//! `bernstein task cancel TASK_ID`: the `bernstein_cancel` gate from the command line, and the
//! job every operator command commits through the engine's transaction path: run the command
//! on a fresh snapshot, seal its drafts against that snapshot's position, and on a conflict run
//! it again on the newer ledger — so an operator decision is never applied to a state it was
//! not taken on. Exit 0 done (or already finished), 1 refused, 2 usage or IO error.

use std::path::Path;
use std::process::ExitCode;

use bernstein_core::Config;
use bernstein_core::Projection;
use bernstein_core::domain::Snapshot;
use bernstein_core::domain::operator::{self, OperatorOutcome};
use bernstein_core::engine::{Job, Round};
use bernstein_core::ledger::{Append, Store, seal};
use bernstein_core::protocol::Outcome;
use bernstein_core::time::Timestamp;
use bernstein_serve::driver::{Admission, Env, commit_job};
use bernstein_serve::host::NoHost;
use bernstein_store_file::clock::SystemClock;
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
    },
}

pub fn run(workdir: &Path, store: Option<&str>, command: TaskCommand) -> Result<ExitCode, String> {
    let TaskCommand::Cancel { task_id, reason } = command;
    let (store, key) = super::open_operator_store(workdir, store)?;
    let config = Config::new(key.clone());
    let outcome = commit_operator(&*store, &key, |snap, now| {
        operator::cancel_task(snap, &config, now, &task_id, reason.as_deref())
    })?;
    match outcome {
        Ok(out) => {
            print_json(&out.answer)?;
            Ok(ExitCode::SUCCESS)
        }
        Err(e) => {
            // Once, on stdout like the success answer (exit 1 says it was refused).
            print_json(&e.to_value())?;
            Ok(ExitCode::from(1))
        }
    }
}

pub(crate) fn print_json(v: &serde_json::Value) -> Result<(), String> {
    say!(
        "{}",
        serde_json::to_string_pretty(v).map_err(|e| e.to_string())?
    );
    Ok(())
}

/// Runs `command` on a fresh snapshot and commits its drafts through the engine's one
/// transaction path (`driver::commit_job`): sealed against that snapshot's position, decided
/// again on the newer ledger after a lost race, durable before this returns. `Ok(Err(refusal))`
/// when the command refused (nothing written); `Err` on a store failure.
pub(crate) fn commit_operator<E>(
    store: &dyn Store<Projection>,
    key: &[u8],
    command: impl FnMut(&Snapshot, Timestamp) -> Result<OperatorOutcome, E>,
) -> Result<Result<OperatorOutcome, E>, String> {
    let admission = std::sync::Arc::new(Admission::new());
    let env = Env {
        store,
        clock: &SystemClock,
        host: &NoHost,
        admission: &admission,
    };
    let mut job = OperatorJob {
        key,
        command,
        decided: None,
    };
    commit_job(&env, &mut job).map_err(|e| e.to_string())?;
    job.decided
        .ok_or_else(|| "the operator command was never run".to_string())
}

/// An operator command as an engine job: its last decision is kept for the caller.
struct OperatorJob<'k, F, E> {
    key: &'k [u8],
    command: F,
    decided: Option<Result<OperatorOutcome, E>>,
}

impl<F, E> Job for OperatorJob<'_, F, E>
where
    F: FnMut(&Snapshot, Timestamp) -> Result<OperatorOutcome, E>,
{
    type Fold = Projection;
    fn run(&mut self, round: Round<'_, Projection>) -> Outcome {
        let snap = round.snapshot;
        let decided = (self.command)(snap, round.now);
        let append = match &decided {
            Ok(out) if !out.drafts.is_empty() => Some(Append {
                expected: snap.position,
                records: seal(
                    &snap.position,
                    |s| snap.stream_head(s),
                    out.drafts.clone(),
                    self.key,
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
