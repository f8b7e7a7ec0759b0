//! `bernstein audit verify`: offline check of the ledger's hash chains and HMAC tags. Exit 0
//! on a clean ledger, 1 naming the first bad entry (file, line, seq).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use bernstein_core::domain::witness::witness_from_json;
use bernstein_runtime_std::verify_cmd::AuditError;
use clap::Subcommand;

/// The project's public signing key, when its seed is readable (witnesses must carry it).
fn project_signer_pem(sdd: &Path) -> Result<Option<String>, String> {
    let seed = bernstein_runtime_std::keys::load_signing_key(sdd)
        .map_err(|e| format!("signing key: {e}"))?;
    Ok(seed.map(|s| {
        bernstein_core::domain::signing::Signer::from_seed(&s)
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
            let sdd = bernstein_runtime_std::verify_cmd::resolve_sdd(
                &dir.unwrap_or_else(|| workdir.join(".sdd")),
            );
            super::handles::verify_handle(&sdd, &file)
        }
        AuditCommand::Verify {
            dir,
            verbose,
            witness,
        } => {
            let dir = dir.unwrap_or_else(|| workdir.join(".sdd"));
            let sdd = bernstein_runtime_std::verify_cmd::resolve_sdd(&dir);
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
            let options = bernstein_runtime_std::verify_cmd::AuditOptions {
                calls: verbose,
                witnesses,
            };
            match bernstein_runtime_std::verify_cmd::audit_verify_with(&dir, options) {
                Err(AuditError::Io { path, source }) => {
                    Err(format!("{}: {source}", path.display()))
                }
                Err(AuditError::Key(e)) => Err(format!("audit key: {e}")),
                Ok(report) => {
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
