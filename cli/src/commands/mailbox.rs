//! `bernstein mailbox verify`: offline verification of the task mailboxes against the ledger
//! (sequence, chained entry hashes, body hashes, Ed25519 signatures, audit mirrors, and the
//! ledger's own chains and HMAC tags). Exit 0 when everything verifies, 1 naming the failed
//! check and entry, 2 on a usage or IO error. The checks are the core's (`domain::mailbox`).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use bernstein_domain::ids::check_task_id;
use bernstein_domain::mailbox::MailboxVerifier;
use bernstein_store_file::verify_cmd::resolve_sdd;
use clap::Subcommand;
use serde_json::json;

use super::backlog::ProjectKeys;
use super::lines::LedgerLines;
use super::verdict;

#[derive(Debug, Subcommand)]
pub enum MailboxCommand {
    /// Verify every task mailbox (or one task's) offline against the ledger.
    Verify {
        /// Only this task's mailbox.
        #[arg(long, value_name = "TASK_ID")]
        task: Option<String>,
        /// The `.sdd` directory (default: <workdir>/.sdd).
        #[arg(long, value_name = "DIR")]
        dir: Option<PathBuf>,
        /// Read the PostgreSQL ledger at this URL (else BERNSTEIN_STORE_URL, else the
        /// directory's ledger file); the keys still come from the `.sdd` directory.
        #[arg(long, value_name = "URL")]
        store: Option<String>,
        /// Print the verdict as JSON (entries by task, the ledger read, or the failure).
        #[arg(long)]
        json: bool,
    },
}

pub fn run(workdir: &Path, command: MailboxCommand) -> Result<ExitCode, String> {
    let MailboxCommand::Verify {
        task,
        dir,
        store,
        json,
    } = command;
    if let Some(t) = &task {
        check_task_id(t).map_err(|e| format!("--task {t:?}: {e}"))?;
    }
    let sdd = resolve_sdd(&dir.unwrap_or_else(|| workdir.join(".sdd")));
    let url = crate::settings::store_url(store.as_deref())?;
    super::require_ledger(&sdd, url.as_deref(), super::Hints::VERIFIER_STORE)?;
    let keys = ProjectKeys::load(&sdd)?;
    let ledger = LedgerLines::open(&sdd, url.as_deref())?;
    let mut verifier = MailboxVerifier::new(
        ledger.name(),
        keys.audit.as_deref(),
        task.as_deref(),
        keys.public_pem.as_deref(),
    );
    let outcome = ledger.for_each_line(|line| verifier.push_line(line))?;
    let result = match outcome {
        Ok(rest) => verifier.finish(&rest),
        Err(f) => Err(f),
    };
    match result {
        Ok(report) => {
            let mut lines: Vec<String> = report
                .entries
                .iter()
                .map(|(task, n)| format!("{task}  {n} entries"))
                .collect();
            lines.push(report.summary());
            let fields = json!({
                "entries": report.entries,
                "ledger": verdict::ledger_json(&report.ledger),
            });
            verdict::ok(json, &lines, fields)
        }
        Err(f) => verdict::failed(
            json,
            &[f.to_string()],
            json!({
                "check": f.check.as_str(),
                "file": f.file,
                "line": f.line,
                "seq": f.seq,
                "detail": f.detail,
            }),
        ),
    }
}
