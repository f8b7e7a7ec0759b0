//! `bernstein audit verify-handle FILE`: offline verification of a run handle (what
//! `bernstein_run_status` answered, or a whole saved `tools/call` result holding it) against the
//! project's ledger. Exit 0 when it verifies, 1 naming the failed check (a forged or spliced
//! status), 2 on a usage or IO error. The checks are the core's (`domain::handle_verify`); this
//! module only reads files.

use std::path::Path;
use std::process::ExitCode;

use bernstein_domain::handle_verify::{HandleVerifier, extract_handle};
use serde_json::Value;

use super::backlog::ProjectKeys;
use super::lines::StableLedger;

/// Reads a JSON file (for a handle or a capsule).
pub(crate) fn read_json(path: &Path) -> Result<Value, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    serde_json::from_slice(&bytes).map_err(|e| format!("{}: not JSON: {e}", path.display()))
}

pub fn verify_handle(sdd: &Path, file: &Path, json: bool) -> Result<ExitCode, String> {
    super::require_ledger(sdd, None, super::Hints::VERIFIER)?;
    // The verdict as words, or (`--json`) as `{ok, summary}` / `{ok, failure}`.
    let verdict = |outcome: Result<String, String>| -> Result<ExitCode, String> {
        let (code, value, words) = match outcome {
            Ok(summary) => (
                ExitCode::SUCCESS,
                serde_json::json!({"ok": true, "summary": summary}),
                summary,
            ),
            Err(failure) => (
                ExitCode::from(1),
                serde_json::json!({"ok": false, "failure": failure}),
                format!("FAILED: {failure}"),
            ),
        };
        if json {
            super::task::print_json(&value)?;
        } else {
            say!("{words}");
        }
        Ok(code)
    };
    let saved = read_json(file)?;
    let Some(handle) = extract_handle(&saved) else {
        return verdict(Err(format!(
            "{} holds no run handle (expected bernstein_run_status's answer or a tools/call result holding it)",
            file.display()
        )));
    };
    let keys = ProjectKeys::load(sdd)?;
    let ledger = StableLedger::open(sdd)?;
    let mut verifier = match HandleVerifier::new(&handle, &ledger.name, keys.audit.as_deref()) {
        Ok(v) => v,
        Err(f) => return verdict(Err(f.to_string())),
    };
    let outcome = ledger.for_each_line(|line| verifier.push_line(line))?;
    let result = match outcome {
        Ok(rest) => verifier.finish(&rest),
        Err(f) => Err(f),
    };
    verdict(
        result
            .map(|report| report.summary())
            .map_err(|f| f.to_string()),
    )
}
