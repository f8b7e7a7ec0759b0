//! `bernstein audit verify`: offline check of the ledger's hash chains and HMAC tags. Exit 0
//! on a clean ledger, 1 naming the first bad entry (file, line, seq).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Subcommand;

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
        AuditCommand::Verify { dir, verbose } => {
            let dir = dir.unwrap_or_else(|| workdir.join(".sdd"));
            match bernstein_runtime_std::verify_cmd::audit_verify(&dir) {
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
