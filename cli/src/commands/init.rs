//! `bernstein init`: create `.sdd/` (ledger, keys, runtime folders) explicitly.

use std::path::Path;
use std::process::ExitCode;

pub fn run(workdir: &Path) -> Result<ExitCode, String> {
    let sdd = bernstein_runtime_std::init(workdir).map_err(|e| e.to_string())?;
    say!("initialised {}", sdd.display());
    Ok(ExitCode::SUCCESS)
}
