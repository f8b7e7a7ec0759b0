//! Offline verification of a run handle against a ledger (`bernstein audit verify-handle`): the
//! handle checks itself ([`super::handle::verify_run_handle`]: shape, `receiptHash`,
//! `pollToken`), and then the ledger, replayed record by record, must at some transaction
//! boundary hold the run with exactly that journal head, that chain anchor, that root task and
//! that status. A handle whose `chainHead` is not the audit record anchoring its `journalHead`
//! (a forged or spliced status) fails and says which link is missing.
//!
//! [`extract_handle`] finds the handle inside what a host saved: the handle itself, a meter
//! envelope, a `CallToolResult` (structured content or JSON text block) or a JSON-RPC response.
//! This module is pure: the caller reads the files and feeds lines.

use serde_json::Value;

use crate::Snapshot;
use bernstein_core::digest::Digest;
use bernstein_core::ledger::AUDIT_STREAM;
use bernstein_core::ledger::verify::{LedgerVerifier, VerifyReport};

use super::handle::{RunHandle, handle_fields, run_handle_at, verify_run_handle};
use super::ids::run_stream;

/// The checks of `bernstein audit verify-handle`, in the order they run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum HandleCheck {
    /// The handle's shape, `receiptHash` and `pollToken`.
    Handle,
    /// The ledger's chains, framing and HMAC tags.
    Ledger,
    /// The run exists in the ledger.
    Run,
    /// `journalHead` is a record of the run's journal.
    JournalHead,
    /// `chainHead` is an audit record.
    ChainHead,
    /// `chainHead` anchors `journalHead`, and the status and root task are the ledger's.
    Anchor,
}

impl HandleCheck {
    pub fn as_str(self) -> &'static str {
        match self {
            HandleCheck::Handle => "handle",
            HandleCheck::Ledger => "ledger",
            HandleCheck::Run => "run",
            HandleCheck::JournalHead => "journalHead",
            HandleCheck::ChainHead => "chainHead",
            HandleCheck::Anchor => "chain anchor",
        }
    }
}

/// Why a handle does not verify.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{} check failed: {detail}", check.as_str())]
pub struct HandleFailure {
    pub check: HandleCheck,
    pub detail: String,
}

fn fail(check: HandleCheck, detail: impl Into<String>) -> HandleFailure {
    HandleFailure {
        check,
        detail: detail.into(),
    }
}

/// What a verified handle was found to be.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HandleReport {
    pub handle: RunHandle,
    /// Ledger seq at which the run was in exactly the handle's state.
    pub matched_seq: u64,
    /// Whether that state is still the run's state at the end of the ledger.
    pub current: bool,
    pub ledger: VerifyReport,
}

impl HandleReport {
    pub fn summary(&self) -> String {
        format!(
            "OK: run {} handle ({}) verified: receiptHash matches its fields; journalHead and chainHead are the run's state at ledger seq {}{}; ledger {} records, {}",
            self.handle.run_id,
            self.handle.status.as_str(),
            self.matched_seq,
            if self.current {
                " (still current)"
            } else {
                " (superseded since)"
            },
            self.ledger.records,
            if self.ledger.macs_checked {
                "HMAC tags verified"
            } else {
                "HMAC tags NOT verified (no key)"
            }
        )
    }
}

/// Incremental verifier: feed it the ledger's lines in order.
#[derive(Debug)]
pub struct HandleVerifier {
    handle: RunHandle,
    ledger: LedgerVerifier,
    snapshot: Snapshot,
    stream: String,
    journal_seen: bool,
    chain_seen: bool,
    matched_seq: Option<u64>,
    /// The run's handle at the last boundary where its journal head was the handle's.
    near_miss: Option<RunHandle>,
}

impl HandleVerifier {
    /// Checks the handle on its own, then prepares the ledger walk (HMAC tags iff `key`).
    pub fn new(handle: &Value, file: &str, key: Option<&[u8]>) -> Result<Self, HandleFailure> {
        verify_run_handle(handle).map_err(|d| fail(HandleCheck::Handle, d))?;
        let handle = handle_fields(handle).map_err(|e| fail(HandleCheck::Handle, e))?;
        Ok(HandleVerifier {
            stream: run_stream(&handle.run_id),
            chain_seen: handle.chain_head == Digest::ZERO.to_string(),
            handle,
            ledger: LedgerVerifier::new(file, key),
            snapshot: Snapshot::genesis(),
            journal_seen: false,
            matched_seq: None,
            near_miss: None,
        })
    }

    /// Checks the next line, given without its `\n`.
    pub fn push_line(&mut self, line: &[u8]) -> Result<(), HandleFailure> {
        let rec = self
            .ledger
            .push_record(line)
            .map_err(|f| fail(HandleCheck::Ledger, f.to_string()))?;
        self.snapshot
            .apply(&rec)
            .map_err(|e| fail(HandleCheck::Ledger, e.to_string()))?;
        let hash = rec.hash.to_string();
        if rec.stream == self.stream && hash == self.handle.journal_head {
            self.journal_seen = true;
        }
        if rec.stream == AUDIT_STREAM && hash == self.handle.chain_head {
            self.chain_seen = true;
        }
        if self.matched_seq.is_none()
            && self.snapshot.at_txn_boundary()
            && self.snapshot.stream_head(&self.stream).to_string() == self.handle.journal_head
            && let Some(now) = run_handle_at(
                &self.snapshot,
                &self.handle.run_id,
                &self.handle.spec_revision,
            )
        {
            if now == self.handle {
                self.matched_seq = Some(rec.seq);
            } else {
                self.near_miss = Some(now);
            }
        }
        Ok(())
    }

    /// Ends verification (`unterminated`: bytes after the last `\n`).
    pub fn finish(self, unterminated: &[u8]) -> Result<HandleReport, HandleFailure> {
        let unmatched = self.matched_seq.is_none().then(|| self.explain());
        let ledger = self
            .ledger
            .finish(unterminated)
            .map_err(|f| fail(HandleCheck::Ledger, f.to_string()))?;
        let h = &self.handle;
        let (Some(matched_seq), None) = (self.matched_seq, unmatched.clone()) else {
            return Err(unmatched.unwrap_or_else(|| fail(HandleCheck::Anchor, "no match")));
        };
        let current =
            run_handle_at(&self.snapshot, &h.run_id, &h.spec_revision).as_ref() == Some(h);
        Ok(HandleReport {
            handle: self.handle,
            matched_seq,
            current,
            ledger,
        })
    }

    fn explain(&self) -> HandleFailure {
        let h = &self.handle;
        if self.snapshot.domain.run(&h.run_id).is_none() {
            return fail(
                HandleCheck::Run,
                format!("run {} is not in this ledger", h.run_id),
            );
        }
        if !self.journal_seen {
            return fail(
                HandleCheck::JournalHead,
                format!(
                    "journalHead {} is not a record of run {}'s journal",
                    h.journal_head, h.run_id
                ),
            );
        }
        if !self.chain_seen {
            return fail(
                HandleCheck::ChainHead,
                format!(
                    "chainHead {} is not a record of this ledger's audit chain",
                    h.chain_head
                ),
            );
        }
        let detail = match &self.near_miss {
            Some(real) if real.chain_head != h.chain_head => format!(
                "chainHead {} is on the audit chain but does not anchor journalHead {} (the ledger's anchor is {}): the handle was forged or spliced",
                h.chain_head, h.journal_head, real.chain_head
            ),
            Some(real) if real.status != h.status => format!(
                "at journalHead {} run {} was {}, not {}",
                h.journal_head,
                h.run_id,
                real.status.as_str(),
                h.status.as_str()
            ),
            Some(real) => format!("the run's root task is {}, not {}", real.task_id, h.task_id),
            None => "the ledger never held the run at this journal head".into(),
        };
        fail(HandleCheck::Anchor, detail)
    }
}

/// Verifies `handle` against a whole ledger held in memory (see [`HandleVerifier`]).
pub fn verify_handle_on_ledger(
    handle: &Value,
    ledger: &[u8],
    file: &str,
    key: Option<&[u8]>,
) -> Result<HandleReport, HandleFailure> {
    let mut v = HandleVerifier::new(handle, file, key)?;
    let mut rest = ledger;
    while let Some(nl) = rest.iter().position(|&b| b == b'\n') {
        v.push_line(&rest[..nl])?;
        rest = &rest[nl + 1..];
    }
    v.finish(rest)
}

/// Finds a run handle in what a host saved: the handle, a `{result, _meter}` envelope, a
/// `CallToolResult` (its `structuredContent`, or a text block holding JSON), or a JSON-RPC
/// response whose `result` is one of those. `None` when nothing there looks like a handle.
pub fn extract_handle(v: &Value) -> Option<Value> {
    find_saved(v, |x| {
        x.get("receiptHash").is_some() && x.get("chainHead").is_some()
    })
}

/// The first object `is_it` accepts in what a host saved: `v` itself, or (recursively, a few
/// levels deep) its `structuredContent`, its `result`, or the JSON in its text blocks.
pub fn find_saved(v: &Value, is_it: fn(&Value) -> bool) -> Option<Value> {
    find_depth(v, is_it, 0)
}

fn find_depth(v: &Value, is_it: fn(&Value) -> bool, depth: u8) -> Option<Value> {
    if depth > 6 || !v.is_object() {
        return None;
    }
    if is_it(v) {
        return Some(v.clone());
    }
    for k in ["structuredContent", "result"] {
        if let Some(found) = v.get(k).and_then(|x| find_depth(x, is_it, depth + 1)) {
            return Some(found);
        }
    }
    v.get("content")?
        .as_array()?
        .iter()
        .filter_map(|b| b.get("text").and_then(Value::as_str))
        .filter_map(|t| serde_json::from_str::<Value>(t).ok())
        .find_map(|x| find_depth(&x, is_it, depth + 1))
}

#[cfg(test)]
mod tests;
