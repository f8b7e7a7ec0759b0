//! Run handles against a ledger (`bernstein audit verify-handle`): `verify_handle_on_ledger`
//! with arbitrary handle JSON and arbitrary ledger bytes (the input split at its first `\0`),
//! and with handles built from the states the fixture ledger held (one field changed to a fuzz
//! value or spliced from another held state, `receiptHash` and `pollToken` recomputed so the
//! handle passes its own check), over a prefix of the fixture ledger cut at a transaction
//! boundary, intact or with one byte changed.
//! Invariants: no panic; over an intact prefix (with or without its audit key) a
//! handle verifies exactly when it passes its own check and its task, run, status, journal head
//! and chain head are those of a state the prefix held at a transaction boundary; with any one
//! byte of the ledger changed, no handle verifies under the key; a report's matched position
//! lies inside the ledger.
#![no_main]

use std::sync::OnceLock;

use arbitrary::Arbitrary;
use bernstein_domain::handle::{RunHandle, poll_token, receipt_hash, run_handle};
use bernstein_domain::handle_verify::verify_handle_on_ledger;
use bernstein_domain::{RunStatus, verify_run_handle};
use bernstein_core::ledger::Record;
use bernstein_domain::Snapshot;
use bernstein_fuzz::fixture;
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

/// (task, run, status, journal head, chain head) of a run state.
type State = (String, String, RunStatus, String, String);

fn state(h: &RunHandle) -> State {
    (
        h.task_id.clone(),
        h.run_id.clone(),
        h.status,
        h.journal_head.clone(),
        h.chain_head.clone(),
    )
}

/// Every state of every run the fixture ledger held at a transaction boundary, in order, with
/// the length of the ledger prefix that first holds it.
fn held() -> &'static [(State, usize)] {
    static H: OnceLock<Vec<(State, usize)>> = OnceLock::new();
    H.get_or_init(|| {
        let mut snap = Snapshot::genesis();
        let mut list: Vec<(State, usize)> = Vec::new();
        let mut offset = 0;
        for line in fixture::ledger_lines() {
            offset += line.len() + 1;
            let rec = Record::parse_line(line, None).expect("fixture records parse");
            snap.apply(&rec).expect("fixture records chain");
            if !snap.at_txn_boundary() {
                continue;
            }
            let runs: Vec<String> = snap
                .domain
                .runs_after(None)
                .map(|r| r.run_id.to_string())
                .collect();
            for id in runs {
                let h = run_handle(&snap, &id).expect("a listed run");
                if !list.iter().any(|(s, _)| *s == state(&h)) {
                    list.push((state(&h), offset));
                }
            }
        }
        assert!(!list.is_empty(), "the fixture ledger holds runs");
        list
    })
}

#[derive(Arbitrary, Debug)]
enum Change {
    None,
    /// Field (0..5) set to this text (the status: to `RunStatus::ALL[len % 5]`).
    Text(u8, String),
    /// Field (0..5) taken from another held state.
    Splice(u8, u16),
}

#[derive(Arbitrary, Debug)]
struct Input {
    pick: u16,
    /// Transaction boundary the fixture ledger is cut at.
    cut: u16,
    change: Change,
    revision: String,
    /// Ledger byte to change (index modulo the length) and its XOR mask (0: intact).
    flip: (u32, u8),
    raw: Vec<u8>,
}

fn handle_of(s: &State, revision: &str) -> Value {
    let (task, run, status, journal, chain) = s;
    serde_json::json!({
        "taskId": task,
        "runId": run,
        "status": status,
        "journalHead": journal,
        "chainHead": chain,
        "specRevision": revision,
        "receiptHash": receipt_hash(task, run, *status, journal, chain, revision),
        "pollToken": poll_token(run),
    })
}

fn set_field(s: &mut State, field: u8, text: &str, status: RunStatus) {
    match field % 5 {
        0 => s.0 = text.to_string(),
        1 => s.1 = text.to_string(),
        2 => s.2 = status,
        3 => s.3 = text.to_string(),
        _ => s.4 = text.to_string(),
    }
}

fuzz_target!(|input: Input| {
    let list = held();
    let key = fixture::audit_key();

    // Raw mode: handle JSON, then `\0`, then ledger bytes.
    let (handle_bytes, ledger) = match input.raw.iter().position(|&b| b == 0) {
        Some(i) => (&input.raw[..i], &input.raw[i + 1..]),
        None => (input.raw.as_slice(), &b""[..]),
    };
    if let Ok(h) = serde_json::from_slice::<Value>(handle_bytes) {
        let k = (input.pick & 1 == 1).then_some(key.as_slice());
        if let Ok(report) = verify_handle_on_ledger(&h, ledger, "ledger.jsonl", k) {
            assert!(report.matched_seq <= report.ledger.head.seq);
            assert!(verify_run_handle(&h).is_ok());
        }
    }

    // Structured mode: a held state, maybe changed, against a prefix of the fixture ledger
    // that ends at a transaction boundary.
    let mut s = list[usize::from(input.pick) % list.len()].0.clone();
    let ends = fixture::transaction_ends();
    let end = ends[1 + usize::from(input.cut) % (ends.len() - 1)];
    let ledger = &fixture::LEDGER[..end];
    match &input.change {
        Change::None => {}
        Change::Text(field, text) => {
            let status = RunStatus::ALL[text.len() % RunStatus::ALL.len()];
            set_field(&mut s, *field, text, status);
        }
        Change::Splice(field, other) => {
            let o = list[usize::from(*other) % list.len()].0.clone();
            let text = match field % 5 {
                0 => o.0,
                1 => o.1,
                3 => o.3,
                _ => o.4,
            };
            set_field(&mut s, *field, &text, o.2);
        }
    }
    let handle = handle_of(&s, &input.revision);
    let self_ok = verify_run_handle(&handle).is_ok();
    let expected = self_ok && list.iter().any(|(h, at)| *h == s && *at <= end);
    // With the key, and (for odd picks) without it too.
    let keys = [Some(key.as_slice()), None];
    for &k in &keys[..1 + usize::from(input.pick & 1)] {
        let got = verify_handle_on_ledger(&handle, ledger, "ledger.jsonl", k);
        assert_eq!(
            got.is_ok(),
            expected,
            "handle {handle} over the first {end} ledger bytes: {got:?}"
        );
    }

    // One byte of the ledger changed: nothing verifies under the key.
    let (at, mask) = input.flip;
    if mask != 0 && self_ok {
        let mut bytes = ledger.to_vec();
        let i = at as usize % bytes.len();
        bytes[i] ^= mask;
        let got = verify_handle_on_ledger(&handle, &bytes, "ledger.jsonl", Some(&key));
        assert!(
            got.is_err(),
            "byte {i} of the ledger changed and the handle still verified"
        );
    }
});
