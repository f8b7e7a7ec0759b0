//! An in-memory ledger driven through the pure core: what the store would hold, without IO.

use bernstein_core::protocol::{Outcome, TransportFacts};
use bernstein_core::{Config, Timestamp};
use bernstein_domain::Server;
use bernstein_domain::Snapshot;
use bernstein_domain::bound::Input;
use serde_json::{Value, json};

pub fn request(id: u64, method: &str, params: Value) -> Vec<u8> {
    serde_json::to_vec(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
        .expect("json")
}

pub fn call(id: u64, tool: &str, arguments: Value) -> Vec<u8> {
    request(
        id,
        "tools/call",
        json!({"name": tool, "arguments": arguments}),
    )
}

/// The Ed25519 seed the in-memory server signs with.
pub const SIGNING_SEED: [u8; 32] = [9u8; 32];

pub struct MemLedger {
    pub server: Server,
    pub snapshot: Snapshot,
    pub lines: Vec<u8>,
    pub key: Vec<u8>,
    facts: TransportFacts,
    n: u64,
}

impl MemLedger {
    pub fn new() -> MemLedger {
        let key = vec![42u8; 32];
        MemLedger {
            // A signing identity, so that `bernstein_claim` answers signed receipts.
            server: Server::new(Config::new(key.clone()).with_signing_seed(&SIGNING_SEED)),
            snapshot: Snapshot::genesis(),
            lines: Vec::new(),
            key,
            facts: TransportFacts::stdio(Some("2025-11-25".into())),
            n: 0,
        }
    }

    /// Handles one message against the current snapshot without committing it.
    pub fn handle(&self, bytes: &[u8]) -> Outcome {
        self.server.handle(&Input {
            bytes,
            snapshot: &self.snapshot,
            now: Timestamp(1_790_000_000_000),
            transport: &self.facts,
        })
    }

    /// Handles and commits one message.
    pub fn commit(&mut self, bytes: &[u8]) -> Outcome {
        let out = self.handle(bytes);
        if let Some(a) = &out.append {
            for r in &a.records {
                self.snapshot
                    .apply(r)
                    .expect("the core extends its own snapshot");
                self.lines.extend_from_slice(&r.to_line());
            }
        }
        out
    }

    /// Appends runs and polls until the ledger holds at least `records`; returns a run id.
    pub fn grow_to(&mut self, records: u64) -> String {
        let mut last_run = String::new();
        while self.snapshot.position.seq < records || last_run.is_empty() {
            self.n += 1;
            let out = self.commit(&call(
                self.n,
                "bernstein_run",
                json!({"goal": format!("goal number {}", self.n)}),
            ));
            let resp = out.response.expect("a call has a response").render(0);
            let v: Value = serde_json::from_slice(&resp).expect("json");
            let text = v["result"]["content"][0]["text"]
                .as_str()
                .expect("text content")
                .to_string();
            let payload: Value = serde_json::from_str(&text).expect("json payload");
            last_run = payload["result"]["run_id"]
                .as_str()
                .expect("run_id")
                .to_string();
            self.commit(&call(
                self.n,
                "bernstein_run_status",
                json!({"run_id": last_run}),
            ));
        }
        last_run
    }
}
