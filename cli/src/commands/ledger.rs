//! `bernstein ledger export|import`: moves a PostgreSQL ledger to and from the file store's
//! format (`DIR/.sdd/ledger/ledger.jsonl`, byte for byte), so every offline verifier works on
//! an exported ledger and a file-store project can move to PostgreSQL.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use bernstein_store_postgres::pool::Pool;
use bernstein_store_postgres::{PoolOptions, schema, transfer};
use clap::Subcommand;

use crate::settings;

#[derive(Debug, Subcommand)]
pub enum LedgerCommand {
    /// Re-tag a ledger written in format 1 (only audit and mailbox records tagged) or 2 (every
    /// record tagged over its pre-image) in format 3 (every record tags its hash) in place.
    /// Record hashes do not change, so every handle, receipt and capsule issued before still
    /// verifies. Refuses a ledger that does not verify by its own format's rules first.
    Upgrade {
        /// The `.sdd` directory (default: <workdir>/.sdd).
        #[arg(long, value_name = "DIR")]
        dir: Option<PathBuf>,
        /// Also seal untagged records that no tagged record of their transaction covers (a
        /// keyless forger could have added them): only for a ledger you know was not altered.
        #[arg(long)]
        trust_unsealed: bool,
    },
    /// Write the database's ledger to OUT/.sdd/ledger/ledger.jsonl (verified as it is copied).
    Export {
        /// The database (else BERNSTEIN_STORE_URL).
        #[arg(long, value_name = "URL")]
        store: Option<String>,
        /// Directory to write into; its .sdd/ledger/ledger.jsonl must not exist yet.
        #[arg(long, value_name = "DIR")]
        out: PathBuf,
        /// Also copy the workdir's keys (audit HMAC key, signing seed) into OUT/.sdd/keys/, so
        /// `bernstein audit verify --workdir OUT` checks the HMAC tags too and
        /// `backlog verify-claim` pins the signer. Fails, writing nothing, when the workdir
        /// has no audit key to copy.
        #[arg(long)]
        with_keys: bool,
    },
    /// Copy FROM/.sdd/ledger/ledger.jsonl into the database (verified first; the database must
    /// be empty or hold a prefix of that ledger).
    Import {
        /// The database (else BERNSTEIN_STORE_URL).
        #[arg(long, value_name = "URL")]
        store: Option<String>,
        /// The project directory whose ledger is imported.
        #[arg(long, value_name = "DIR")]
        from: PathBuf,
    },
}

fn pool(store: Option<&str>) -> Result<Pool, String> {
    let url = settings::store_url(store)?
        .ok_or("this command needs --store postgres://… (or BERNSTEIN_STORE_URL)")?;
    let pool = Pool::new(&url, PoolOptions::default()).map_err(|e| e.to_string())?;
    let mut lease = pool.get().map_err(|e| e.to_string())?;
    schema::check(lease.client()).map_err(|e| e.to_string())?;
    drop(lease);
    Ok(pool)
}

/// The workdir's audit key, if it has one (never created here: a new key could not verify
/// anything).
fn audit_key(workdir: &Path) -> Result<Option<Vec<u8>>, String> {
    bernstein_store_file::keys::load_audit_key(&workdir.join(".sdd"))
        .map_err(|e| format!("audit key: {e}"))
}

pub fn run(workdir: &Path, command: LedgerCommand, json: bool) -> Result<ExitCode, String> {
    // Each outcome as words, or (`--json`) as one object.
    let tell = |value: serde_json::Value, words: String| -> Result<(), String> {
        if json {
            super::task::print_json(&value)
        } else {
            say!("{words}");
            Ok(())
        }
    };
    match command {
        LedgerCommand::Upgrade {
            dir,
            trust_unsealed,
        } => {
            use bernstein_store_file::upgrade_cmd::{UpgradeOutcome, upgrade_ledger};
            let dir = dir.unwrap_or_else(|| workdir.join(".sdd"));
            let sdd = bernstein_store_file::verify_cmd::resolve_sdd(&dir);
            super::require_ledger(&sdd, None, super::Hints::VERIFIER)?;
            match upgrade_ledger(&dir, trust_unsealed) {
                Ok(UpgradeOutcome::AlreadyCurrent) => {
                    tell(
                        serde_json::json!({"ok": true, "upgraded": false}),
                        "the ledger is already format 3 and verifies; nothing changed".into(),
                    )?;
                    Ok(ExitCode::SUCCESS)
                }
                Ok(UpgradeOutcome::Upgraded(up)) => {
                    let words = format!(
                        "upgraded to format 3: {} tags replaced, {} untagged records sealed{} ({})",
                        up.retagged,
                        up.sealed,
                        if up.trusted.is_empty() {
                            String::new()
                        } else {
                            format!(", {} of them trusted uncovered", up.trusted.len())
                        },
                        up.report.summary()
                    );
                    let value = serde_json::json!({"ok": true, "upgraded": true,
                        "retagged": up.retagged, "sealed": up.sealed,
                        "trusted": up.trusted.len(), "summary": up.report.summary()});
                    tell(value, words)?;
                    Ok(ExitCode::SUCCESS)
                }
                Err(e) => {
                    let failure = e.to_string();
                    tell(
                        serde_json::json!({"ok": false, "failure": failure}),
                        format!("FAILED: {failure}"),
                    )?;
                    Ok(ExitCode::from(1))
                }
            }
        }
        LedgerCommand::Export {
            store,
            out,
            with_keys,
        } => {
            // Before anything is written: an export meant to carry its keys that would carry
            // none could not have its tags checked.
            if with_keys {
                keys_to_export(workdir)?;
            }
            let pool = pool(store.as_deref())?;
            let key = audit_key(workdir)?;
            if key.is_none() {
                bernstein_os::log_line!(
                    "bernstein: no .sdd/keys/audit.key in {}: HMAC tags are not checked",
                    workdir.display()
                );
            }
            let done = transfer::export(&pool, key.as_deref(), &out)?;
            if with_keys {
                for name in ["audit.key", bernstein_store_file::keys::SIGNING_KEY_FILE] {
                    copy_key(workdir, &out, name)?;
                }
            }
            let value = serde_json::json!({"records": done.copied,
                "file": done.file.display().to_string(), "summary": done.report.summary()});
            let words = format!(
                "exported {} records to {} ({})",
                done.copied,
                done.file.display(),
                done.report.summary()
            );
            tell(value, words)?;
            Ok(ExitCode::SUCCESS)
        }
        LedgerCommand::Import { store, from } => {
            let pool = pool(store.as_deref())?;
            let key = audit_key(workdir)?.ok_or_else(|| {
                format!(
                    "no .sdd/keys/audit.key in {}: import needs the audit key the servers use (--workdir)",
                    workdir.display()
                )
            })?;
            let done = transfer::import(&pool, &key, &from)?;
            let value = serde_json::json!({"records": done.copied,
                "file": done.file.display().to_string(), "summary": done.report.summary()});
            let words = format!(
                "imported {} records from {} ({})",
                done.copied,
                done.file.display(),
                done.report.summary()
            );
            tell(value, words)?;
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// Refuses `--with-keys` when `workdir` holds no audit key (run outside the project, or a
/// project whose keys are elsewhere); notes a missing signing seed, which only pins signers.
fn keys_to_export(workdir: &Path) -> Result<(), String> {
    let sdd = workdir.join(".sdd");
    if audit_key(workdir)?.is_none() {
        return Err(format!(
            "--with-keys: there is no audit key to export: {} does not exist; run the export with --workdir set to the project directory whose .sdd/keys/ the instances use (or export without --with-keys and copy .sdd/keys/ yourself); nothing was written",
            bernstein_store_file::layout::Layout::at(&sdd)
                .audit_key_file()
                .display()
        ));
    }
    let signing = bernstein_store_file::keys::signing_key_file(&sdd);
    if !signing.exists() {
        bernstein_os::log_line!(
            "bernstein: no {} to export: claim receipts in the export are checked without pinning the signer",
            signing.display()
        );
    }
    Ok(())
}

/// Copies the key file `.sdd/keys/<name>` of `workdir` to `out` when it exists (mode 0600,
/// never over another key).
fn copy_key(workdir: &Path, out: &Path, name: &str) -> Result<(), String> {
    use std::io::Write as _;
    use std::os::unix::fs::OpenOptionsExt as _;
    let from = workdir.join(".sdd/keys").join(name);
    let to = out.join(".sdd/keys").join(name);
    let bytes = match std::fs::read(&from) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(format!("read {}: {e}", from.display())),
    };
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&to)
        .map_err(|e| format!("create {}: {e}", to.display()))?;
    f.write_all(&bytes)
        .and_then(|()| f.sync_all())
        .map_err(|e| format!("write {}: {e}", to.display()))
}
