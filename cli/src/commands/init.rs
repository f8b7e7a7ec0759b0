//! `bernstein init [DIR]`: create a project explicitly: the directory if it is missing, and its
//! `.sdd/` (ledger, runtime folders, the audit key and the signing key). It is the one command
//! that creates a directory; run again it changes nothing and says the project was there.

use std::path::Path;
use std::process::ExitCode;

pub fn run(dir: &Path, json: bool) -> Result<ExitCode, String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("create {}: {e}", dir.display()))?;
    let sdd = dir.join(".sdd");
    let existed = sdd.is_dir();
    drop(super::open_store(dir)?);
    super::load_signer(dir)?;
    if json {
        super::task::print_json(
            &serde_json::json!({"sdd": sdd.display().to_string(), "created": !existed}),
        )?;
    } else if existed {
        say!(
            "{} already existed: kept its ledger and keys (missing parts were added)",
            sdd.display()
        );
    } else {
        say!(
            "initialised {} (ledger, audit key, signing key)",
            sdd.display()
        );
    }
    Ok(ExitCode::SUCCESS)
}
