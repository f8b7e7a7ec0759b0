//! The dashboard's verify box: a pasted run handle, claim receipt or task capsule (bare or as
//! a host saved it) checked against this ledger, with the same verifiers as `bernstein audit
//! verify-handle`, `bernstein backlog verify-claim` and `bernstein capsule verify`. A handle
//! or receipt needs the ledger replayed line by line ([`PastedCheck::push_line`]); a capsule
//! is checked against the projection.

use serde_json::{Value, json};

use crate::capsule::{self, extract_capsule};
use crate::claim_verify::{ClaimFailure, ClaimVerifier};
use crate::claims::ClaimReceipt;
use crate::handle_verify::{HandleFailure, HandleVerifier, extract_handle, find_saved};
use crate::projection::Projection;

/// A check under way.
#[derive(Debug)]
pub enum PastedCheck {
    Handle(Box<HandleVerifier>),
    Receipt(Box<ClaimVerifier>),
    /// Decided: the verdict (a capsule, something that failed on its own or while the ledger
    /// was replayed).
    Decided(Value),
}

impl PastedCheck {
    /// Starts checking `pasted` (JSON text; `Err` when it is not JSON) against the ledger
    /// `file`, HMAC tags under `key`, signatures expected from `signer` when given.
    pub fn new(
        pasted: &[u8],
        p: &Projection,
        file: &str,
        key: Option<&[u8]>,
        signer: Option<&str>,
    ) -> Result<PastedCheck, String> {
        let v: Value = serde_json::from_slice(pasted)
            .map_err(|e| format!("the pasted text is not JSON: {e}"))?;
        let receipt = find_saved(&v, |x| {
            x.get("claimerId").is_some() && x.get("receiptHash").is_some()
        });
        if let Some(r) = receipt {
            return Ok(match serde_json::from_value::<ClaimReceipt>(r) {
                Err(e) => done("claim_receipt", false, format!("not a claim receipt: {e}")),
                Ok(r) => match ClaimVerifier::new(r, file, key, signer) {
                    Ok(c) => PastedCheck::Receipt(Box::new(c)),
                    Err(f) => claim_failed(&f),
                },
            });
        }
        if let Some(c) = extract_capsule(&v) {
            let checked = capsule::verify_on(p, &c, signer);
            let summary = if checked.valid {
                format!(
                    "capsule of task {} is on this ledger and its signature verifies",
                    checked.task_id.as_deref().unwrap_or("?")
                )
            } else {
                checked.problems.join("; ")
            };
            let problems = json!(checked.problems);
            return Ok(PastedCheck::Decided(verdict(
                "capsule",
                checked.valid,
                summary,
                problems,
            )));
        }
        if let Some(h) = extract_handle(&v) {
            return Ok(match HandleVerifier::new(&h, file, key) {
                Ok(h) => PastedCheck::Handle(Box::new(h)),
                Err(f) => handle_failed(&f),
            });
        }
        Ok(done(
            "unknown",
            false,
            "this is not a run handle, a claim receipt or a task capsule (nor a saved answer holding one)".into(),
        ))
    }

    /// Whether [`PastedCheck::push_line`] still wants ledger lines.
    pub fn wants_lines(&self) -> bool {
        matches!(self, PastedCheck::Handle(_) | PastedCheck::Receipt(_))
    }

    /// Checks the next ledger line (without its `\n`).
    pub fn push_line(&mut self, line: &[u8]) {
        let failed = match self {
            PastedCheck::Handle(h) => h.push_line(line).err().map(|f| handle_failed(&f)),
            PastedCheck::Receipt(r) => r.push_line(line).err().map(|f| claim_failed(&f)),
            _ => None,
        };
        if let Some(f) = failed {
            *self = f;
        }
    }

    /// The verdict: `{kind, valid, summary, detail}`.
    pub fn finish(self) -> Value {
        match self {
            PastedCheck::Decided(v) => v,
            PastedCheck::Handle(h) => match h.finish(&[]) {
                Ok(report) => verdict(
                    "run_handle",
                    true,
                    report.summary(),
                    json!({"matched_seq": report.matched_seq, "current": report.current}),
                ),
                Err(f) => handle_failed(&f).finish(),
            },
            PastedCheck::Receipt(r) => match r.finish(&[]) {
                Ok(report) => verdict(
                    "claim_receipt",
                    true,
                    report.summary(),
                    json!({"entry_seq": report.entry_seq, "granted": report.granted}),
                ),
                Err(f) => claim_failed(&f).finish(),
            },
        }
    }
}

/// The answer's shape: `{kind, valid, summary, detail}`.
fn verdict(kind: &str, valid: bool, summary: String, detail: Value) -> Value {
    json!({"kind": kind, "valid": valid, "summary": summary, "detail": detail})
}

fn done(kind: &str, valid: bool, summary: String) -> PastedCheck {
    PastedCheck::Decided(verdict(kind, valid, summary, json!([])))
}

/// A check that failed: which one, and why.
fn failed(kind: &str, check: &str, detail: &str) -> PastedCheck {
    PastedCheck::Decided(verdict(
        kind,
        false,
        format!("{check}: {detail}"),
        json!({ "check": check }),
    ))
}

fn handle_failed(f: &HandleFailure) -> PastedCheck {
    failed("run_handle", f.check.as_str(), &f.detail)
}

fn claim_failed(f: &ClaimFailure) -> PastedCheck {
    failed("claim_receipt", f.check.as_str(), &f.detail)
}
