//! `bernstein audit verify`: offline check of the ledger's hash chains and HMAC tags, of the
//! `.sdd/` file or (`--store`) of a PostgreSQL ledger. Exit 0 on a clean ledger, 1 naming the
//! first bad entry (file, line, seq), 2 when the ledger cannot be read.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use bernstein_core::domain::witness::{Witness, witness_from_json};
use bernstein_store_file::verify_cmd::AuditError;
use clap::Subcommand;

/// The project's public signing key, when its seed is readable (witnesses must carry it).
fn project_signer_pem(sdd: &Path) -> Result<Option<String>, String> {
    let seed = bernstein_store_file::keys::load_signing_key(sdd)
        .map_err(|e| format!("signing key: {e}"))?;
    Ok(seed.map(|s| {
        bernstein_core::signing::Signer::from_seed(&s)
            .public_key_pem()
            .to_string()
    }))
}

#[derive(Debug, Subcommand)]
pub enum AuditCommand {
    /// Verify the whole ledger and print the call order it records.
    Verify {
        /// The `.sdd` directory (default: <workdir>/.sdd).
        #[arg(long, value_name = "DIR")]
        dir: Option<PathBuf>,
        /// Print every recorded call in order.
        #[arg(long)]
        verbose: bool,
        /// A saved signed head (resource bernstein://ledger/head), run handle, claim receipt or
        /// capsule (or a saved tools/call result holding one): the ledger must still extend
        /// it. Repeatable. Fails with "ledger rewritten or truncated after seq N".
        #[arg(long, value_name = "FILE")]
        witness: Vec<PathBuf>,
        /// Verify the PostgreSQL ledger at this URL (else BERNSTEIN_STORE_URL, else the
        /// directory's ledger file); the keys still come from the `.sdd` directory.
        #[arg(long, value_name = "URL")]
        store: Option<String>,
    },
    /// Verify a run handle (bernstein_run_status's answer, or a saved tools/call result
    /// holding it) offline: its receiptHash, and that its chainHead anchors its journalHead in
    /// this ledger.
    VerifyHandle {
        /// The JSON file holding the handle.
        file: PathBuf,
        /// The `.sdd` directory (default: <workdir>/.sdd).
        #[arg(long, value_name = "DIR")]
        dir: Option<PathBuf>,
    },
}

pub fn run(workdir: &Path, command: AuditCommand) -> Result<ExitCode, String> {
    match command {
        AuditCommand::VerifyHandle { file, dir } => {
            let sdd = bernstein_store_file::verify_cmd::resolve_sdd(
                &dir.unwrap_or_else(|| workdir.join(".sdd")),
            );
            super::handles::verify_handle(&sdd, &file)
        }
        AuditCommand::Verify {
            dir,
            verbose,
            witness,
            store,
        } => {
            let dir = dir.unwrap_or_else(|| workdir.join(".sdd"));
            let sdd = bernstein_store_file::verify_cmd::resolve_sdd(&dir);
            let url = crate::settings::store_url(store.as_deref())?;
            let signer = project_signer_pem(&sdd)?;
            let mut witnesses = Vec::new();
            for file in &witness {
                let text = std::fs::read_to_string(file)
                    .map_err(|e| format!("{}: {e}", file.display()))?;
                let value: serde_json::Value = serde_json::from_str(&text)
                    .map_err(|e| format!("{}: not JSON: {e}", file.display()))?;
                let name = file.display().to_string();
                match witness_from_json(&name, &value, signer.as_deref()) {
                    Ok(w) => witnesses.push(w),
                    Err(e) => {
                        say!("FAILED: {e}");
                        return Ok(ExitCode::from(1));
                    }
                }
            }
            let options = bernstein_store_file::verify_cmd::AuditOptions {
                calls: verbose,
                watch: witnesses.iter().flat_map(Witness::hashes).collect(),
            };
            let verified = match &url {
                Some(url) => verify_database(&sdd, url, options),
                None => bernstein_store_file::verify_cmd::audit_verify_with(&dir, options),
            };
            match verified {
                Err(AuditError::Io { path, source }) => {
                    Err(format!("{}: {source}", path.display()))
                }
                Err(AuditError::Key(e)) => Err(format!("audit key: {e}")),
                Ok(report) => {
                    // A witness the ledger no longer extends fails the check like a bad record.
                    if let Some(e) = witnesses.iter().find_map(|w| w.check(&report).err()) {
                        say!("FAILED: {e}");
                        return Ok(ExitCode::from(1));
                    }
                    if verbose {
                        for call in &report.calls {
                            say!(
                                "{:>8}  {:<32} {}  {}",
                                call.seq,
                                call.tool,
                                call.call_id,
                                if call.ok { "ok" } else { "refused" }
                            );
                        }
                    }
                    say!("{}", report.summary());
                    if !witness.is_empty() {
                        say!(
                            "OK: the ledger extends every witness ({})",
                            witness
                                .iter()
                                .map(|p| p.display().to_string())
                                .collect::<Vec<_>>()
                                .join(", ")
                        );
                    }
                    Ok(ExitCode::SUCCESS)
                }
                Err(failure) => {
                    say!("FAILED: {failure}");
                    Ok(ExitCode::from(1))
                }
            }
        }
    }
}

/// The file verifier's checks on the PostgreSQL ledger's rows (one consistent snapshot), with
/// the HMAC key of `sdd` when present. The database keeps no checkpoint file, so the
/// truncation anchor is the witnesses given.
fn verify_database(
    sdd: &Path,
    url: &str,
    options: bernstein_store_file::verify_cmd::AuditOptions,
) -> Result<bernstein_core::ledger::verify::VerifyReport, AuditError> {
    let key = bernstein_store_file::keys::load_audit_key(sdd)?;
    let io = |e: String| AuditError::Io {
        path: PathBuf::from(bernstein_store_postgres::fold::TABLE_NAME),
        source: std::io::Error::other(e),
    };
    let lines = super::lines::LedgerLines::open(sdd, Some(url)).map_err(io)?;
    let mut verifier =
        bernstein_core::ledger::verify::LedgerVerifier::new(lines.name(), key.as_deref())
            .collect_calls(options.calls)
            .watch(options.watch);
    lines
        .for_each_line(|line| verifier.push_line(line))
        .map_err(io)??;
    Ok(verifier.finish(&[])?)
}
