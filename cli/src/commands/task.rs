//! `bernstein task cancel TASK_ID`: the `bernstein_cancel` gate from the command line, and the
//! commit loop every operator command shares: run the command on a fresh snapshot, seal its
//! drafts, compare-and-append them against that snapshot's position, and on a conflict run it
//! again on the newer ledger — so an operator decision is never applied to a state it was not
//! taken on. Exit 0 done (or already finished), 1 refused, 2 usage or IO error.

use std::path::Path;
use std::process::ExitCode;

use bernstein_core::Config;
use bernstein_core::domain::operator::{self, OperatorOutcome};
use bernstein_core::ledger::{Append, AppendResult, Snapshot, Store, seal};
use bernstein_core::time::Clock;
use bernstein_core::time::Timestamp;
use bernstein_runtime_std::driver::MAX_ATTEMPTS;
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

/// Runs `command` on a fresh snapshot and commits its drafts with compare-and-append, again
/// from a fresh snapshot on conflict. `Ok(Err(refusal))` when the command refused (nothing
/// written); `Err` on a store failure.
pub(crate) fn commit_operator<E>(
    store: &dyn Store,
    key: &[u8],
    mut command: impl FnMut(&Snapshot, Timestamp) -> Result<OperatorOutcome, E>,
) -> Result<Result<OperatorOutcome, E>, String> {
    for _ in 0..MAX_ATTEMPTS {
        let snap = store.snapshot().map_err(|e| e.to_string())?;
        let out = match command(&snap, SystemClock.now()) {
            Ok(out) => out,
            Err(refusal) => return Ok(Err(refusal)),
        };
        if out.drafts.is_empty() {
            return Ok(Ok(out));
        }
        let records = seal(
            &snap.position,
            |s| snap.stream_head(s),
            out.drafts.clone(),
            key,
        );
        let append = Append {
            expected: snap.position,
            records,
        };
        drop(snap);
        match store
            .compare_and_append(&append)
            .map_err(|e| e.to_string())?
        {
            AppendResult::Committed(_) => return Ok(Ok(out)),
            AppendResult::Conflict { .. } => continue,
        }
    }
    Err(format!(
        "the ledger head moved {MAX_ATTEMPTS} times while deciding; gave up (nothing was changed)"
    ))
}
