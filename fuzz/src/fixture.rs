//! The fixed world the request-path targets run in: the recorded journal
//! `tests/fixtures/worker-loop-2025-11-25` (its ledger folded into a snapshot: tasks in many
//! states, claims, a mailbox, a plan; its audit key; its recorded replies), a server of tier
//! `all` with a fixed signing seed, and a fixed clock.
//!
//! The fixture is compiled into the target, so a target never touches the file system for it.

use std::sync::OnceLock;

use bernstein_core::config::{Config, Tier};
use bernstein_core::ledger::Record;
use bernstein_domain::Snapshot;
use bernstein_core::protocol::{TransportFacts, TransportKind};
use bernstein_domain::bound::Server;
use bernstein_core::time::Timestamp;

/// The recorded ledger the fixed snapshot is folded from.
pub const LEDGER: &[u8] =
    include_bytes!("../../tests/fixtures/worker-loop-2025-11-25/ledger.jsonl");
/// The replies the server gave while the ledger was recorded (one JSON-RPC message a line).
pub const RESPONSES: &[u8] =
    include_bytes!("../../tests/fixtures/worker-loop-2025-11-25/responses.jsonl");
/// Its audit key, as stored (`64 hex digits + \n`).
pub const AUDIT_KEY_HEX: &str =
    include_str!("../../tests/fixtures/worker-loop-2025-11-25/keys/audit.key");
/// The fixed clock: 2026-01-01T00:00:00Z.
pub const NOW: Timestamp = Timestamp(1_767_225_600_000);
/// Seed of the fixed Ed25519 signing identity (claims, mailbox entries).
pub const SIGNING_SEED: [u8; 32] = [7; 32];

/// Protocol revisions a target may pretend a client negotiated.
pub const REVISIONS: [&str; 6] = [
    "2024-11-05",
    "2025-03-26",
    "2025-06-18",
    "2025-11-25",
    "2026-07-28",
    "1999-01-01",
];

/// The audit key bytes.
pub fn audit_key() -> Vec<u8> {
    let hex = AUDIT_KEY_HEX.trim();
    (0..hex.len() / 2)
        .map(|i| u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).expect("the fixture key is hex"))
        .collect()
}

/// The ledger's lines, without their `\n`.
pub fn ledger_lines() -> Vec<&'static [u8]> {
    let body = LEDGER
        .strip_suffix(b"\n")
        .expect("the fixture ledger ends with a newline");
    body.split(|&b| b == b'\n').collect()
}

/// The byte offsets just after each complete transaction of the fixture ledger (0 first).
pub fn transaction_ends() -> &'static [usize] {
    static ENDS: OnceLock<Vec<usize>> = OnceLock::new();
    ENDS.get_or_init(|| {
        let mut ends = vec![0];
        let mut offset = 0;
        for line in ledger_lines() {
            offset += line.len() + 1;
            let rec = Record::parse_line(line, None).expect("fixture records parse");
            if rec.txn[0] == rec.txn[1] {
                ends.push(offset);
            }
        }
        ends
    })
}

/// The snapshot of the whole fixture ledger.
pub fn snapshot() -> &'static Snapshot {
    static SNAPSHOT: OnceLock<Snapshot> = OnceLock::new();
    SNAPSHOT.get_or_init(|| {
        let key = audit_key();
        let mut snap = Snapshot::genesis();
        for line in ledger_lines() {
            let rec = Record::parse_line(line, Some(&key)).expect("fixture records verify");
            snap.apply(&rec).expect("fixture records chain");
        }
        snap
    })
}

/// The server every request-path target talks to.
pub fn server() -> &'static Server {
    static SERVER: OnceLock<Server> = OnceLock::new();
    SERVER.get_or_init(|| {
        let mut config = Config::new(audit_key()).with_signing_seed(&SIGNING_SEED);
        config.tier = Tier::All;
        Server::new(config)
    })
}

/// Transport facts chosen by one fuzz byte: stdio before or after `initialize` at some
/// revision, or streamable HTTP with some `MCP-Protocol-Version` header (or none).
pub fn facts(selector: u8) -> TransportFacts {
    let revision = match selector % 7 {
        0 => None,
        n => Some(REVISIONS[usize::from(n - 1)].to_string()),
    };
    let kind = match (selector / 7) % 3 {
        0 => TransportKind::Stdio,
        1 => TransportKind::StreamableHttp,
        _ => TransportKind::LegacySse,
    };
    TransportFacts {
        kind,
        protocol_version: revision,
        loopback: selector & 0x80 == 0,
        log_level: None,
        principal: None,
    }
}

/// Task ids the fixture knows (so structured targets can name real tasks).
pub fn task_ids() -> &'static [String] {
    static IDS: OnceLock<Vec<String>> = OnceLock::new();
    IDS.get_or_init(|| {
        let mut ids = Vec::new();
        for line in ledger_lines() {
            let rec = Record::parse_line(line, None).expect("fixture records parse");
            if rec.kind == "task.created"
                && let Some(id) = rec.body.get("task_id").and_then(|v| v.as_str())
            {
                ids.push(id.to_string());
            }
        }
        ids
    })
}

/// The claim receipts among the recorded replies (the tool payloads that carry `claimerId`).
pub fn claim_receipts() -> &'static [serde_json::Value] {
    static RECEIPTS: OnceLock<Vec<serde_json::Value>> = OnceLock::new();
    RECEIPTS.get_or_init(|| {
        RESPONSES
            .split(|&b| b == b'\n')
            .filter_map(|l| serde_json::from_slice::<serde_json::Value>(l).ok())
            .filter_map(|v| v.pointer("/result/structuredContent").cloned())
            .map(|sc| {
                if sc.get("_meter").is_some() {
                    sc["result"].clone()
                } else {
                    sc
                }
            })
            .filter(|p| p.get("claimerId").is_some())
            .collect()
    })
}
