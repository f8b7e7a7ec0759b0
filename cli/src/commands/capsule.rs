//! `bernstein capsule verify FILE`: offline verification of a task capsule (what
//! `bernstein_task_capsule` answered, or a saved `tools/call` result holding it) against the
//! project's ledger: its hash, its Ed25519 signature (by this project's key when it is
//! present), its issuance record on the audit chain, and its journal, mailbox and lineage heads.
//! Exit 0 when valid, 1 listing the problems, 2 on a usage or IO error. The checks are the
//! core's (`domain::capsule`).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use bernstein_core::ledger::verify::LedgerVerifier;
use bernstein_domain::capsule::{CapsuleLedgerCheck, extract_capsule};
use bernstein_store_file::verify_cmd::resolve_sdd;
use clap::Subcommand;
use serde_json::json;

use super::backlog::ProjectKeys;
use super::handles::read_json;
use super::lines::StableLedger;
use super::verdict;

#[derive(Debug, Subcommand)]
pub enum CapsuleCommand {
    /// Verify a task capsule offline against the ledger.
    Verify {
        /// The capsule JSON file.
        file: PathBuf,
        /// The `.sdd` directory (default: <workdir>/.sdd).
        #[arg(long, value_name = "DIR")]
        dir: Option<PathBuf>,
        /// Print the verdict as JSON (`valid`, the capsule hash and task, the problems).
        #[arg(long)]
        json: bool,
    },
}

pub fn run(workdir: &Path, command: CapsuleCommand) -> Result<ExitCode, String> {
    let CapsuleCommand::Verify { file, dir, json } = command;
    let sdd = resolve_sdd(&dir.unwrap_or_else(|| workdir.join(".sdd")));
    super::require_ledger(&sdd, None, super::Hints::VERIFIER)?;
    let saved = read_json(&file)?;
    let capsule = extract_capsule(&saved).unwrap_or(saved);
    let keys = ProjectKeys::load(&sdd)?;
    let ledger = StableLedger::open(&sdd)?;
    let mut chain = LedgerVerifier::new(&ledger.name, keys.audit.as_deref());
    let mut check = CapsuleLedgerCheck::new(&capsule, keys.public_pem.as_deref());
    let outcome =
        ledger.for_each_line(|line| chain.push_record(line).map(|rec| check.push(&rec)))?;
    let ledger_ok = match outcome {
        Ok(rest) => chain.finish(&rest),
        Err(f) => Err(f),
    };
    if let Err(f) = ledger_ok {
        let problem = format!("ledger: {f}");
        return verdict::failed(json, &[problem], json!({"valid": false}));
    }
    let found = check.finish();
    let fields = serde_json::to_value(&found).map_err(|e| e.to_string())?;
    if found.valid {
        let line = format!(
            "OK: capsule {} of task {} verified: hash, Ed25519 signature, issuance on the audit chain, journal/mailbox/lineage heads",
            found.capsule_hash.as_deref().unwrap_or_default(),
            found.task_id.as_deref().unwrap_or_default()
        );
        verdict::ok(json, &[line], fields)
    } else {
        verdict::failed(json, &found.problems, fields)
    }
}
