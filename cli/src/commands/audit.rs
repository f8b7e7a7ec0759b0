//! `bernstein audit verify`: offline check of the ledger's hash chains and HMAC tags, of the
//! `.sdd/` file or (`--store`) of a PostgreSQL ledger. Exit 0 on a clean ledger, 1 when it is
//! not (the first line names the first bad entry: file, line, seq; the lines after it every
//! bad line and what it affects), 2 when the ledger cannot be read, or its audit key is
//! missing and `--no-keys` was not given.

use std::convert::Infallible;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use bernstein_core::ledger::verify::{
    Affected, FindingsReport, FindingsVerifier, LedgerVerifier, VerifyFailure, VerifyReport,
};
use bernstein_domain::witness::{Witness, witness_from_json};
use bernstein_store_file::verify_cmd::{AuditError, AuditOptions, KeyUse};
use clap::Subcommand;
use serde_json::{Value, json};

/// Where an operator reads what to do about a ledger that does not verify.
const RECOVERY: &str = "docs/OPERATIONS.md, \"When the ledger does not verify\"";

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
        /// Print one JSON object (the verdict, every finding, the ids they affect) instead of
        /// lines; exit codes as without it.
        #[arg(long)]
        json: bool,
        /// Check the hash chains only, without the audit key (the HMAC tags are not checked,
        /// and the output says so). Without this flag a missing `keys/audit.key` is an error.
        #[arg(long)]
        no_keys: bool,
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
        /// Print the verdict as JSON.
        #[arg(long)]
        json: bool,
    },
}

pub fn run(workdir: &Path, command: AuditCommand) -> Result<ExitCode, String> {
    match command {
        AuditCommand::VerifyHandle { file, dir, json } => {
            let sdd = bernstein_store_file::verify_cmd::resolve_sdd(
                &dir.unwrap_or_else(|| workdir.join(".sdd")),
            );
            super::handles::verify_handle(&sdd, &file, json)
        }
        AuditCommand::Verify {
            dir,
            verbose,
            witness,
            store,
            json,
            no_keys,
        } => verify(
            workdir,
            Verify {
                dir,
                verbose,
                witness,
                store,
                json,
                keys: if no_keys {
                    KeyUse::Ignore
                } else {
                    KeyUse::Required
                },
            },
        ),
    }
}

/// `audit verify`'s arguments.
struct Verify {
    dir: Option<PathBuf>,
    verbose: bool,
    witness: Vec<PathBuf>,
    store: Option<String>,
    json: bool,
    keys: KeyUse,
}

fn verify(workdir: &Path, args: Verify) -> Result<ExitCode, String> {
    let dir = args.dir.unwrap_or_else(|| workdir.join(".sdd"));
    let sdd = bernstein_store_file::verify_cmd::resolve_sdd(&dir);
    let url = crate::settings::store_url(args.store.as_deref())?;
    super::require_ledger(&sdd, url.as_deref(), super::Hints::VERIFIER_STORE)?;
    let signer = project_signer_pem(&sdd)?;
    let mut witnesses = Vec::new();
    for file in &args.witness {
        let text = std::fs::read_to_string(file).map_err(|e| format!("{}: {e}", file.display()))?;
        let value: Value = serde_json::from_str(&text)
            .map_err(|e| format!("{}: not JSON: {e}", file.display()))?;
        let name = file.display().to_string();
        match witness_from_json(&name, &value, signer.as_deref()) {
            Ok(w) => witnesses.push(w),
            Err(e) => {
                if args.json {
                    say!("{}", json!({"ok": false, "failure": e, "findings": []}));
                } else {
                    say!("FAILED: {e}");
                }
                return Ok(ExitCode::from(1));
            }
        }
    }
    let watch: Vec<_> = witnesses.iter().flat_map(Witness::hashes).collect();
    let options = AuditOptions {
        calls: args.verbose,
        watch: watch.clone(),
        keys: args.keys,
    };
    let verified = match &url {
        Some(url) => verify_database(&sdd, url, options),
        None => bernstein_store_file::verify_cmd::audit_verify_with(&dir, options),
    };
    let chains_only = args.keys == KeyUse::Ignore;
    match verified {
        Ok(report) => {
            // A witness the ledger no longer extends fails the check like a bad record.
            let checked: Vec<(&Witness, Result<(), String>)> =
                witnesses.iter().map(|w| (w, w.check(&report))).collect();
            let failed = checked.iter().find_map(|(_, r)| r.as_ref().err());
            if args.json {
                say!(
                    "{}",
                    clean_json(&report, &checked, args.verbose, chains_only)
                );
            } else if let Some(e) = failed {
                say!("FAILED: {e}");
            } else {
                print_clean(&report, &args.witness, args.verbose, chains_only);
            }
            Ok(if failed.is_some() {
                ExitCode::from(1)
            } else {
                ExitCode::SUCCESS
            })
        }
        Err(AuditError::Failure(failure)) => {
            let options = AuditOptions {
                calls: false,
                watch,
                keys: args.keys,
            };
            // Read again, on past the first bad line. Should that fail (the file went away
            // meanwhile), the first failure is still the verdict.
            let findings = match &url {
                Some(url) => database_findings(&sdd, url, options),
                None => bernstein_store_file::verify_cmd::audit_findings(&dir, options),
            }
            .ok();
            let checked: Vec<(&Witness, Result<(), String>)> = match &findings {
                Some(f) => witnesses.iter().map(|w| (w, w.check(&f.tally))).collect(),
                None => Vec::new(),
            };
            if args.json {
                say!("{}", failed_json(&failure, findings.as_ref(), &checked));
            } else {
                print_failed(&failure, findings.as_ref(), &checked);
            }
            Ok(ExitCode::from(1))
        }
        Err(e) => Err(e.to_string()),
    }
}

/// What a clean ledger's check prints: the call list with `--verbose`, the summary, the
/// witnesses it extends.
fn print_clean(report: &VerifyReport, witness: &[PathBuf], verbose: bool, chains_only: bool) {
    if verbose {
        for call in &report.calls {
            let by = call
                .principal
                .as_deref()
                .map(|p| format!("  by {p}"))
                .unwrap_or_default();
            say!(
                "{:>8}  {:<32} {}  {}{by}",
                call.seq,
                call.tool,
                call.call_id,
                if call.ok { "ok" } else { "refused" }
            );
        }
    }
    say!("{}", report.summary());
    if chains_only {
        say!(
            "note: --no-keys: the hash chains verify, the HMAC tags were not checked (a record rewritten with its hash recomputed would pass)"
        );
    }
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
}

/// The witnesses' verdicts, for `--json`.
fn witnesses_json(checked: &[(&Witness, Result<(), String>)]) -> Vec<Value> {
    checked
        .iter()
        .map(|(w, r)| match r {
            Ok(()) => json!({"file": w.source, "kind": w.kind, "ok": true}),
            Err(e) => json!({"file": w.source, "kind": w.kind, "ok": false, "error": e}),
        })
        .collect()
}

fn clean_json(
    report: &VerifyReport,
    checked: &[(&Witness, Result<(), String>)],
    verbose: bool,
    chains_only: bool,
) -> Value {
    let failure = checked.iter().find_map(|(_, r)| r.as_ref().err());
    let mut out = json!({
        "ok": failure.is_none(),
        "file": report.file,
        "summary": report.summary(),
        "records": report.records,
        "transactions": report.transactions,
        "calls": report.call_count,
        "head": report.head,
        "macs_checked": report.macs_checked,
        "chains_only": chains_only,
        "anchor": report.anchor,
        "findings": [],
        "counts": {},
        "witnesses": witnesses_json(checked),
    });
    if let Some(e) = failure {
        out["failure"] = json!(e);
    }
    if verbose {
        out["call_list"] = json!(report.calls);
    }
    out
}

fn failed_json(
    failure: &VerifyFailure,
    findings: Option<&FindingsReport>,
    checked: &[(&Witness, Result<(), String>)],
) -> Value {
    let mut out = json!({
        "ok": false,
        "failure": failure.to_string(),
        "first": failure,
        "witnesses": witnesses_json(checked),
        "recovery": RECOVERY,
    });
    match findings {
        Some(f) => {
            let from = f.from_seq.unwrap_or(failure.seq);
            for (k, v) in [
                ("file", json!(f.file)),
                ("lines", json!(f.lines)),
                ("macs_checked", json!(f.macs_checked)),
                ("findings", json!(f.findings)),
                ("unlisted", json!(f.unlisted)),
                ("counts", json!(f.counts)),
                ("from_seq", json!(from)),
                ("claim_receipts_since", json!(f.claim_receipts_since)),
                ("affected", json!(f.affected)),
                ("consequence", json!(consequence(from))),
            ] {
                out[k] = v;
            }
        }
        None => {
            out["file"] = json!(failure.file);
            out["findings"] = json!([]);
        }
    }
    out
}

fn consequence(seq: u64) -> String {
    format!("handles, receipts and witnesses over heads at or after seq {seq} no longer verify")
}

/// `runs A, B; tasks C; claim receipts D` (the sorts that name something).
fn affected_text(a: &Affected) -> String {
    let mut parts = Vec::new();
    for (what, ids) in [
        ("runs", &a.runs),
        ("tasks", &a.tasks),
        ("claim receipts", &a.claim_receipts),
    ] {
        if !ids.is_empty() {
            parts.push(format!(
                "{what} {}",
                ids.iter()
                    .map(String::as_str)
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
    }
    parts.join("; ")
}

/// What a failed check prints: the first bad entry on the first line (as it always was), then
/// every finding, what follows from them, and where to read what to do.
fn print_failed(
    failure: &VerifyFailure,
    findings: Option<&FindingsReport>,
    checked: &[(&Witness, Result<(), String>)],
) {
    say!("FAILED: {failure}");
    let Some(report) = findings else {
        return;
    };
    if report.is_clean() {
        say!(
            "the ledger's own lines show nothing wrong: the failure above is {}'s",
            failure.file
        );
    } else {
        let counts: Vec<String> = report
            .counts
            .iter()
            .map(|(k, n)| format!("{n} {}", k.title()))
            .collect();
        say!(
            "{} finding{} in {} lines ({}); HMAC tags {}",
            report.total(),
            if report.total() == 1 { "" } else { "s" },
            report.lines,
            counts.join(", "),
            if report.macs_checked {
                "checked"
            } else {
                "NOT checked (--no-keys)"
            }
        );
    }
    for f in &report.findings {
        say!(
            "- line {} (seq {}) [{}]: {}",
            f.line,
            f.seq,
            f.kind.title(),
            f.reason
        );
        if let Some(r) = &f.record {
            say!(
                "    the line says: {} on {}, seq {}, record {} of {} of its transaction",
                r.kind,
                r.stream,
                r.seq,
                r.txn[0],
                r.txn[1]
            );
        }
        for p in &f.also {
            say!("    also: {}", p.reason);
        }
        for n in &f.notes {
            say!("    note: {n}");
        }
        if !f.affected.is_empty() {
            say!("    affects: {}", affected_text(&f.affected));
        }
    }
    if report.unlisted > 0 {
        say!(
            "… and {} more findings not listed (see --json counts)",
            report.unlisted
        );
    }
    let from = report.from_seq.unwrap_or(failure.seq);
    say!(
        "consequence: the ledger cannot be trusted from seq {from} on; {} ({} claim receipt{} recorded since)",
        consequence(from),
        report.claim_receipts_since,
        if report.claim_receipts_since == 1 {
            " was"
        } else {
            "s were"
        }
    );
    if !report.affected.is_empty() {
        say!("affected: {}", affected_text(&report.affected));
    }
    for (w, r) in checked {
        match r {
            Ok(()) => say!(
                "witness {}: every record it binds is still where it saw it (the lines above whose content does not match their hash are not what it saw)",
                w.source
            ),
            Err(e) => say!("witness {}: {e}", w.source),
        }
    }
    say!("what to do: {RECOVERY}");
}

/// The audit key for checking a database's rows, as `keys` asks for it.
fn database_key(sdd: &Path, keys: KeyUse) -> Result<Option<Vec<u8>>, AuditError> {
    bernstein_store_file::verify_cmd::audit_key(sdd, keys)
}

/// [`AuditError::Io`] for the database.
fn database_error(e: String) -> AuditError {
    AuditError::Io {
        path: PathBuf::from(bernstein_store_postgres::fold::TABLE_NAME),
        source: std::io::Error::other(e),
    }
}

/// The file verifier's checks on the PostgreSQL ledger's rows (one consistent snapshot), with
/// the HMAC key of `sdd` when present. The database keeps no checkpoint file, so the
/// truncation anchor is the witnesses given.
fn verify_database(
    sdd: &Path,
    url: &str,
    options: AuditOptions,
) -> Result<VerifyReport, AuditError> {
    let key = database_key(sdd, options.keys)?;
    let lines = super::lines::LedgerLines::open(sdd, Some(url)).map_err(database_error)?;
    let mut verifier = LedgerVerifier::new(lines.name(), key.as_deref())
        .collect_calls(options.calls)
        .watch(options.watch);
    lines
        .for_each_line(|line| verifier.push_line(line))
        .map_err(database_error)??;
    Ok(verifier.finish(&[])?)
}

/// Every finding of the PostgreSQL ledger's rows (see [`verify_database`]).
fn database_findings(
    sdd: &Path,
    url: &str,
    options: AuditOptions,
) -> Result<FindingsReport, AuditError> {
    let key = database_key(sdd, options.keys)?;
    let lines = super::lines::LedgerLines::open(sdd, Some(url)).map_err(database_error)?;
    let mut verifier = FindingsVerifier::new(lines.name(), key.as_deref()).watch(options.watch);
    let tail = lines
        .for_each_line(|line| {
            verifier.push_line(line);
            Ok::<(), Infallible>(())
        })
        .map_err(database_error)?;
    let tail = match tail {
        Ok(tail) => tail,
        Err(never) => match never {},
    };
    Ok(verifier.finish(&tail))
}
