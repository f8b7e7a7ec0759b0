//! Recorded journals replay byte for byte through the pure core.
//!
//! Each fixture in `tests/fixtures/` was recorded by driving the real `bernstein mcp` binary
//! (tests/fixtures/record.py). Here, without any IO but reading those files:
//! - the recorded ledger verifies (`verify_ledger`, with its key) and folds with
//!   `Snapshot::apply` without a skipped record; the report equals the recorded `audit verify`;
//! - re-serving the recorded requests through `Server::handle` against a snapshot folded from
//!   nothing, at the recorded clock values, reproduces every record and every reply byte for
//!   byte, and the replayed projection equals the fold of the recorded ledger;
//! - every run handle and claim receipt the recording answered verifies offline, and polling
//!   every recorded run on the final snapshot answers a handle that verifies and is anchored in
//!   the ledger.

mod replay_support;

use bernstein_core::digest::Digest;
use bernstein_core::ledger::verify::verify_ledger;
use bernstein_domain::claim_verify::verify_claim_receipt;
use bernstein_domain::claims::parse_receipt;
use bernstein_domain::handle::run_handle;
use bernstein_domain::verify_run_handle;
use replay_support::{Fixture, all, replay, snapshot_value};
use serde_json::Value;

/// The tool payloads of the recorded replies (inside the `_meter` envelope when metered).
fn recorded_payloads(fx: &Fixture) -> Vec<Value> {
    let mut out = Vec::new();
    for line in &fx.responses {
        let Ok(v) = serde_json::from_slice::<Value>(line) else {
            continue;
        };
        let parts = match v {
            Value::Array(parts) => parts,
            one => vec![one],
        };
        for part in parts {
            // Only the polled tools carry structuredContent; the others answer the same JSON
            // in their text block.
            let text = part
                .pointer("/result/content/0/text")
                .and_then(Value::as_str)
                .and_then(|t| serde_json::from_str::<Value>(t).ok());
            let Some(sc) = part.pointer("/result/structuredContent").cloned().or(text) else {
                continue;
            };
            let payload = match sc.get("_meter") {
                Some(_) => sc["result"].clone(),
                None => sc.clone(),
            };
            out.push(payload);
        }
    }
    out
}

#[test]
fn recorded_ledgers_verify_and_fold_cleanly() {
    for fx in all() {
        let report = verify_ledger(&fx.ledger, "ledger.jsonl", Some(&fx.audit_key))
            .unwrap_or_else(|f| panic!("{}: {f}", fx.name));
        assert_eq!(
            report.records as usize,
            fx.ledger_lines().len(),
            "{}",
            fx.name
        );
        assert!(
            report.macs_checked && report.keyed_records > 0,
            "{}",
            fx.name
        );
        let recorded_summary = fx.verify_txt.lines().last().unwrap_or_default();
        assert_eq!(
            report.summary(),
            recorded_summary,
            "{}: audit verify summary",
            fx.name
        );
        let snap = fx.fold();
        assert_eq!(snap.position, report.head, "{}", fx.name);
        assert_eq!(
            snap.domain.ignored_records(),
            0,
            "{}: the fold skipped records",
            fx.name
        );
        assert!(snap.at_txn_boundary(), "{}", fx.name);
        for (stream, summary) in &report.streams {
            assert_eq!(
                snap.stream_head(stream),
                summary.head,
                "{}: head of {stream}",
                fx.name
            );
        }
    }
}

#[test]
fn recorded_requests_replay_to_identical_records_and_replies() {
    for fx in all() {
        let replayed = replay(&fx).unwrap_or_else(|e| panic!("{}: {e}", fx.name));
        assert_eq!(replayed.ledger, fx.ledger, "{}: ledger bytes", fx.name);
        assert_eq!(replayed.lines, fx.responses, "{}: server lines", fx.name);
        assert_eq!(
            snapshot_value(&replayed.snapshot),
            snapshot_value(&fx.fold()),
            "{}: the replayed projection differs from the fold of the recorded ledger",
            fx.name
        );
    }
}

#[test]
fn a_replay_notices_a_changed_request() {
    // The replay must be able to fail: change one goal and the records move.
    let fx = all()
        .into_iter()
        .find(|f| f.requests.windows(6).any(|w| w == b"\"goal\""))
        .expect("a fixture starts a run");
    let mut changed = Fixture::load(&fx.dir);
    let at = changed
        .requests
        .windows(8)
        .position(|w| w == b"\"goal\":\"")
        .expect("a goal string")
        + 8;
    changed.requests[at] ^= 0x20;
    let err = replay(&changed).expect_err("a changed request replayed identically");
    assert!(err.contains("differs") || err.contains("produced"), "{err}");
}

#[test]
fn recorded_handles_and_receipts_verify_offline() {
    let (mut handles, mut claims) = (0, 0);
    for fx in all() {
        for payload in recorded_payloads(&fx) {
            if payload.get("receiptHash").is_none() {
                continue;
            }
            if payload.get("runId").is_some() {
                verify_run_handle(&payload)
                    .unwrap_or_else(|e| panic!("{}: handle {payload}: {e}", fx.name));
                handles += 1;
            } else if payload.get("claimerId").is_some() {
                let receipt =
                    parse_receipt(payload.to_string().as_bytes()).expect("a claim receipt parses");
                verify_claim_receipt(
                    receipt,
                    &fx.ledger,
                    "ledger.jsonl",
                    Some(&fx.audit_key),
                    None,
                )
                .unwrap_or_else(|f| panic!("{}: claim receipt {payload}: {f:?}", fx.name));
                claims += 1;
            }
        }
    }
    assert!(handles > 0, "the fixtures hold no run handle");
    assert!(claims > 0, "the fixtures hold no claim receipt");
}

/// The chain anchor of a run whose latest journal record is `records[j]`, by the rule of
/// docs/RECORDS.md §5, computed here independently of the projection: the call record of that
/// transaction naming the run, else the last audit record before it (zero before the first).
fn expected_anchor(records: &[bernstein_core::ledger::Record], j: usize, run: &str) -> Digest {
    let start = j + 1 - records[j].txn[0] as usize;
    let end = start + records[j].txn[1] as usize;
    let named = records[start..end].iter().find(|r| {
        r.stream == "audit"
            && r.kind == "mcp.stateless_call"
            && r.body.get("run_id").and_then(Value::as_str) == Some(run)
    });
    match named {
        Some(r) => r.hash,
        None => records[..j]
            .iter()
            .rev()
            .find(|r| r.stream == "audit")
            .map_or(Digest::ZERO, |r| r.hash),
    }
}

#[test]
fn final_polls_answer_anchored_handles() {
    for fx in all() {
        let snap = fx.fold();
        let records = fx.records();
        let runs = fx.runs();
        assert!(!runs.is_empty(), "{}: fixture.json lists no runs", fx.name);
        for run in runs {
            let handle =
                run_handle(&snap, &run).unwrap_or_else(|| panic!("{}: no run {run}", fx.name));
            verify_run_handle(&serde_json::to_value(&handle).expect("serializes"))
                .expect("a fresh handle verifies");
            let journal = Digest::parse(&handle.journal_head).expect("a digest");
            let anchor = Digest::parse(&handle.chain_head).expect("a digest");
            let last_journal = records
                .iter()
                .rposition(|r| r.stream == format!("run:{run}"))
                .expect("a journal");
            assert_eq!(
                records[last_journal].hash, journal,
                "{}: journalHead of {run}",
                fx.name
            );
            assert_eq!(
                anchor,
                expected_anchor(&records, last_journal, &run),
                "{}: chainHead of {run}",
                fx.name
            );
            // Polling twice answers the same bytes (no clock, no global head in a handle).
            assert_eq!(run_handle(&snap, &run), Some(handle));
        }
    }
}
