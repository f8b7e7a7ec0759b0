//! Witnesses: objects a host saved earlier (signed heads, run handles, claim receipts,
//! capsules), used to prove that a ledger still extends what they saw
//! (`bernstein audit verify --witness FILE`).
//!
//! Each witness binds record hashes: a signed head its `ledgerHead` at its `seq` and its
//! `chainHead` on the audit stream; a run handle its `journalHead` on the run's journal and its
//! `chainHead`; a claim receipt its `chainHead` and `backlogHead`; a capsule its `heads`. A
//! ledger cut back (and perhaps re-extended) or rewritten no longer holds those records where
//! they were, and every witness issued after the cut says so. Each witness is first checked on
//! its own (signature, receipt hash) so a made-up file cannot accuse a sound ledger.
//! Pure: the caller reads files and runs the ledger verifier with [`Witness::hashes`] watched.

use serde_json::Value;

use bernstein_core::digest::Digest;
use bernstein_core::ledger::verify::VerifyReport;
use bernstein_core::ledger::{AUDIT_STREAM, BACKLOG_STREAM, run_stream};

use super::handle::{handle_fields, verify_run_handle};
use super::signed_head::{SIGNED_HEAD_TYPE, SignedHead, check_signed_head};

/// Which stream a bound record must be on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OnStream {
    Exactly(String),
    Any,
}

/// One record a witness says the ledger holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Binding {
    /// The field of the witness that names it (`chainHead`, ...).
    pub field: &'static str,
    pub hash: Digest,
    pub stream: OnStream,
    /// The seq it must stand at, when the witness says (signed heads).
    pub seq: Option<u64>,
}

/// A saved object, recognised and checked on its own.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Witness {
    /// Where it came from (the file name), for messages.
    pub source: String,
    /// `signed head`, `run handle`, `claim receipt`, `capsule`.
    pub kind: &'static str,
    pub bindings: Vec<Binding>,
}

impl Witness {
    /// The record hashes the ledger verifier must watch for.
    pub fn hashes(&self) -> impl Iterator<Item = Digest> + '_ {
        self.bindings.iter().map(|b| b.hash)
    }

    /// Recognises `value` (the object itself, or anything holding it: a tools/call result, a
    /// JSON-RPC response, a JSON text block) and checks it on its own. With `signer`, a signed
    /// head must carry that public key.
    pub fn from_value(
        source: &str,
        value: &Value,
        signer: Option<&str>,
    ) -> Result<Witness, String> {
        let found = find(value, 0).ok_or_else(|| {
            format!("{source}: no signed head, run handle, claim receipt or capsule in it")
        })?;
        let fail = |e: String| format!("{source}: not a valid witness: {e}");
        let (kind, bindings) = match found {
            Found::SignedHead(v) => {
                let head: SignedHead =
                    serde_json::from_value(v.clone()).map_err(|e| fail(e.to_string()))?;
                check_signed_head(&head).map_err(fail)?;
                if let Some(pem) = signer
                    && pem != head.signer_public_key_pem
                {
                    return Err(fail("signed by another key than this project's".into()));
                }
                let seq = Some(head.seq);
                (
                    "signed head",
                    vec![
                        bind("ledgerHead", &head.ledger_head, OnStream::Any, seq)?,
                        bind("chainHead", &head.chain_head, audit(), None)?,
                    ],
                )
            }
            Found::RunHandle(v) => {
                verify_run_handle(v).map_err(fail)?;
                let h = handle_fields(v).map_err(fail)?;
                let journal = OnStream::Exactly(run_stream(&h.run_id));
                (
                    "run handle",
                    vec![
                        bind("journalHead", &h.journal_head, journal, None)?,
                        bind("chainHead", &h.chain_head, audit(), None)?,
                    ],
                )
            }
            Found::Receipt(v) => {
                let r = serde_json::from_value(v.clone()).map_err(|e| fail(e.to_string()))?;
                super::claims::check_receipt(&r).map_err(|e| fail(format!("{e:?}")))?;
                let text = |k: &str| v.get(k).and_then(Value::as_str).unwrap_or_default();
                let backlog = OnStream::Exactly(BACKLOG_STREAM.to_string());
                (
                    "claim receipt",
                    vec![
                        bind("chainHead", text("chainHead"), audit(), None)?,
                        bind("backlogHead", text("backlogHead"), backlog, None)?,
                    ],
                )
            }
            Found::Capsule(heads) => {
                let mut out = Vec::new();
                for (field, name) in [("audit", "heads.audit"), ("journal", "heads.journal")] {
                    let d = heads.get(field).and_then(Value::as_str).unwrap_or_default();
                    let on = if field == "audit" {
                        audit()
                    } else {
                        OnStream::Any
                    };
                    out.push(bind(name, d, on, None)?);
                }
                ("capsule", out)
            }
        };
        Ok(Witness {
            source: source.to_string(),
            kind,
            bindings,
        })
    }

    /// Checks that the verified ledger (verified with [`Witness::hashes`] watched) holds every
    /// record this witness binds, where it binds it.
    pub fn check(&self, report: &VerifyReport) -> Result<(), String> {
        let mut agreed = 0;
        let mut missing = None;
        for b in &self.bindings {
            if b.hash == Digest::ZERO {
                continue;
            }
            let problem = match report.found.get(&b.hash) {
                None => Some(format!(
                    "no record of the ledger has its {} {}",
                    b.field, b.hash
                )),
                Some(f) if b.seq.is_some_and(|s| s != f.seq) => Some(format!(
                    "its {} {} stands at seq {}, not {}",
                    b.field,
                    b.hash,
                    f.seq,
                    b.seq.unwrap_or_default()
                )),
                Some(f) if matches!(&b.stream, OnStream::Exactly(s) if *s != f.stream) => Some(
                    format!("its {} {} is on stream {:?}", b.field, b.hash, f.stream),
                ),
                Some(f) => {
                    agreed = agreed.max(f.seq);
                    None
                }
            };
            missing = missing.or(problem);
        }
        if let Some(problem) = missing {
            let after = agreed.min(report.head.seq);
            return Err(format!(
                "ledger rewritten or truncated after seq {after} (witnessed by {}: a {}; {problem}; the ledger ends at seq {})",
                self.source, self.kind, report.head.seq
            ));
        }
        Ok(())
    }
}

fn audit() -> OnStream {
    OnStream::Exactly(AUDIT_STREAM.to_string())
}

fn bind(
    field: &'static str,
    digest: &str,
    stream: OnStream,
    seq: Option<u64>,
) -> Result<Binding, String> {
    let hash =
        Digest::parse(digest).ok_or_else(|| format!("{field} is not sha256:<64 lowercase hex>"))?;
    Ok(Binding {
        field,
        hash,
        stream,
        seq,
    })
}

enum Found<'a> {
    SignedHead(&'a Value),
    RunHandle(&'a Value),
    Receipt(&'a Value),
    Capsule(&'a Value),
}

/// The first witness object in `v`, depth first.
fn find(v: &Value, depth: usize) -> Option<Found<'_>> {
    if depth > 16 {
        return None;
    }
    match v {
        Value::Object(m) => {
            if m.get("type").and_then(Value::as_str) == Some(SIGNED_HEAD_TYPE) {
                return Some(Found::SignedHead(v));
            }
            if m.contains_key("receiptHash") && m.contains_key("backlogHead") {
                return Some(Found::Receipt(v));
            }
            if m.contains_key("journalHead") && m.contains_key("runId") {
                return Some(Found::RunHandle(v));
            }
            if let Some(heads @ Value::Object(h)) = m.get("heads")
                && h.contains_key("audit")
            {
                return Some(Found::Capsule(heads));
            }
            m.values().find_map(|x| find(x, depth + 1))
        }
        Value::Array(items) => items.iter().find_map(|x| find(x, depth + 1)),
        _ => None,
    }
}

/// Like [`Witness::from_value`], also looking inside JSON text blocks (which [`find`] cannot
/// return by reference): the text is parsed and searched as a value of its own.
pub fn witness_from_json(
    source: &str,
    value: &Value,
    signer: Option<&str>,
) -> Result<Witness, String> {
    match Witness::from_value(source, value, signer) {
        Ok(w) => Ok(w),
        Err(e) => {
            for text in json_texts(value, 0) {
                if let Ok(inner) = serde_json::from_str::<Value>(&text)
                    && find(&inner, 0).is_some()
                {
                    return Witness::from_value(source, &inner, signer);
                }
            }
            Err(e)
        }
    }
}

fn json_texts(v: &Value, depth: usize) -> Vec<String> {
    match v {
        _ if depth > 16 => Vec::new(),
        Value::String(s) if s.trim_start().starts_with('{') => vec![s.clone()],
        Value::Object(m) => m.values().flat_map(|x| json_texts(x, depth + 1)).collect(),
        Value::Array(items) => items
            .iter()
            .flat_map(|x| json_texts(x, depth + 1))
            .collect(),
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests;
