//! `bernstein backlog verify-claim`: offline verification of a claim receipt against the
//! project's ledger, with no server and no network. Exit 0 when it verifies, 1 naming the
//! failed check, 2 on a usage or IO error. The project is named by `--dir`, `--audit-dir` or
//! `--backlog` ([`paths`]).
//!
//! The checks are the core's (`domain::claim_verify`); this module only reads files: the
//! receipt, the ledger (up to a length read under the store's shared lock, so a concurrent
//! append is never half-read), the audit key if present (HMAC tags), and the signing key if
//! present (to insist the receipt carries this project's public key).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use bernstein_core::signing::Signer;
use bernstein_domain::claim_verify::{ClaimCheck, ClaimFailure, ClaimVerifier};
use bernstein_domain::claims::parse_receipt;
use bernstein_store_file::keys::{load_audit_key, load_signing_key};
use clap::Subcommand;
use serde_json::json;

use super::verdict;

mod paths;

#[derive(Debug, Subcommand)]
pub enum BacklogCommand {
    /// Verify a claim receipt (as bernstein_claim returned it) offline against the ledger.
    VerifyClaim {
        /// The receipt JSON file (the receipt object, or a `{result, _meter}` envelope).
        #[arg(long, value_name = "FILE")]
        receipt: PathBuf,
        /// The `.sdd` directory, or the project holding it (default: <workdir>/.sdd).
        #[arg(long, value_name = "DIR")]
        dir: Option<PathBuf>,
        /// Read the PostgreSQL ledger at this URL (else BERNSTEIN_STORE_URL, else the
        /// directory's ledger file); the keys still come from the `.sdd` directory.
        #[arg(long, value_name = "URL")]
        store: Option<String>,
        /// The project's `.sdd/audit` path: names the `.sdd` directory it is in (the audit
        /// chain is part of that ledger).
        #[arg(long, value_name = "DIR")]
        audit_dir: Option<PathBuf>,
        /// The project's `.sdd/runtime/task-backlog.json` path: names the `.sdd` directory it
        /// is in (the backlog is part of that ledger).
        #[arg(long, value_name = "FILE")]
        backlog: Option<PathBuf>,
        /// Print the verdict as JSON (the receipt and the ledger entry it is anchored to, or
        /// the failed check).
        #[arg(long)]
        json: bool,
    },
}

pub fn run(workdir: &Path, command: BacklogCommand) -> Result<ExitCode, String> {
    match command {
        BacklogCommand::VerifyClaim {
            receipt,
            dir,
            store,
            audit_dir,
            backlog,
            json,
        } => {
            let flags = paths::SddFlags {
                dir,
                audit_dir,
                backlog,
            };
            let sdd = paths::sdd_of(workdir, flags)?;
            let url = crate::settings::store_url(store.as_deref())?;
            super::require_ledger(&sdd, url.as_deref(), super::Hints::VERIFIER_STORE)?;
            verify_claim(&sdd, &receipt, url.as_deref(), json)
        }
    }
}

fn verify_claim(
    sdd: &Path,
    receipt_path: &Path,
    url: Option<&str>,
    json: bool,
) -> Result<ExitCode, String> {
    let bytes =
        std::fs::read(receipt_path).map_err(|e| format!("{}: {e}", receipt_path.display()))?;
    let keys = ProjectKeys::load(sdd)?;
    let receipt = match parse_receipt(&bytes) {
        Ok(r) => r,
        Err(detail) => {
            let f = ClaimFailure {
                check: ClaimCheck::ReceiptShape,
                detail,
            };
            return failed(json, &f);
        }
    };
    let ledger = super::lines::LedgerLines::open(sdd, url)?;
    let mut verifier = match ClaimVerifier::new(
        receipt,
        ledger.name(),
        keys.audit.as_deref(),
        keys.public_pem.as_deref(),
    ) {
        Ok(v) => v,
        Err(f) => return failed(json, &f),
    };
    let outcome = ledger.for_each_line(|line| verifier.push_line(line))?;
    let result = match outcome {
        Ok(rest) => verifier.finish(&rest),
        Err(f) => Err(f),
    };
    match result {
        Ok(report) => {
            let fields = json!({
                "receipt_hash": report.receipt_hash,
                "task_id": report.task_id,
                "granted": report.granted,
                "entry_line": report.entry_line,
                "entry_seq": report.entry_seq,
                "ledger": verdict::ledger_json(&report.ledger),
            });
            verdict::ok(json, &[report.summary()], fields)
        }
        Err(f) => failed(json, &f),
    }
}

fn failed(json: bool, f: &ClaimFailure) -> Result<ExitCode, String> {
    let fields = json!({"check": f.check.as_str(), "detail": f.detail});
    verdict::failed(json, &[f.to_string()], fields)
}

/// The keys a verifier may use: the audit key (HMAC tags) and the public half of the signing
/// key, each only if present.
pub(crate) struct ProjectKeys {
    pub audit: Option<Vec<u8>>,
    pub public_pem: Option<String>,
}

impl ProjectKeys {
    pub fn load(sdd: &Path) -> Result<ProjectKeys, String> {
        let audit = load_audit_key(sdd).map_err(|e| format!("audit key: {e}"))?;
        if audit.is_none() {
            bernstein_os::log_line!(
                "bernstein: no audit key in {}: HMAC tags are not checked",
                sdd.display()
            );
        }
        let public_pem = match load_signing_key(sdd) {
            Ok(seed) => seed.map(|s| Signer::from_seed(&s).public_key_pem().to_string()),
            Err(e) => {
                bernstein_os::log_line!(
                    "bernstein: not using the project's signing key to check signers: {e}"
                );
                None
            }
        };
        Ok(ProjectKeys { audit, public_pem })
    }
}
