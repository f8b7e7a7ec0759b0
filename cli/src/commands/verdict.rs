//! What an offline verifier prints: its human lines by default, or with `--json` one JSON
//! object (`ok`, what was verified or what failed, and `summary`, the line it prints
//! otherwise), with the same exit status either way.

use std::process::ExitCode;

use bernstein_core::ledger::verify::VerifyReport;
use serde_json::{Value, json};

/// The ledger a verification read, as the JSON verdicts give it: where, how many records and
/// transactions, the head, and whether the HMAC tags were checked.
pub fn ledger_json(report: &VerifyReport) -> Value {
    json!({
        "file": report.file,
        "records": report.records,
        "transactions": report.transactions,
        "head": report.head,
        "macs_checked": report.macs_checked,
        "keyed_records": report.keyed_records,
    })
}

/// Prints a clean verification (`fields` go into the JSON object) and exits 0.
pub fn ok(json: bool, lines: &[String], mut fields: Value) -> Result<ExitCode, String> {
    if json {
        fields["ok"] = Value::Bool(true);
        fields["summary"] = Value::String(lines.last().cloned().unwrap_or_default());
        super::task::print_json(&fields)?;
    } else {
        for line in lines {
            say!("{line}");
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Prints a failed verification (`FAILED: …` per problem; `fields` go into the JSON object)
/// and exits 1.
pub fn failed(json: bool, problems: &[String], mut fields: Value) -> Result<ExitCode, String> {
    if json {
        fields["ok"] = Value::Bool(false);
        fields["problems"] = json!(problems);
        super::task::print_json(&fields)?;
    } else {
        for p in problems {
            say!("FAILED: {p}");
        }
    }
    Ok(ExitCode::from(1))
}
