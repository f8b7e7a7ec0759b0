//! The system under test of the lifecycle test: Bernstein's server (tier `all`, meter off, a
//! fixed signing seed) called with one JSON-RPC `tools/call` line at a time, its records
//! serialized to a byte ledger and read back into the snapshot the next call is served
//! against; operator plan decisions through `domain::operator::decide_plan`, sealed likewise.

use bernstein_core::config::{Config, Tier};
use bernstein_core::ledger::{Draft, Record, seal};
use bernstein_core::protocol::TransportFacts;
use bernstein_core::time::Timestamp;
use bernstein_domain::Snapshot;
use bernstein_domain::bound::{Input, Server};
use bernstein_domain::operator::decide_plan;
use bernstein_domain::plans::PlanDecision;
use serde_json::{Value, json};

/// The audit key of the test's ledgers.
pub const KEY: &[u8] = b"lifecycle-model-audit-key";

pub struct Engine {
    pub server: Server,
    pub snapshot: Snapshot,
    pub ledger: Vec<u8>,
    pub facts: TransportFacts,
    pub now: u64,
    pub next_id: u64,
}

/// What one call answered and appended.
pub struct Answer {
    /// The payload, or the refusal's error object.
    pub result: Result<Value, Value>,
    pub records: Vec<Record>,
}

impl Engine {
    pub fn new() -> Engine {
        let mut config = Config::new(KEY.to_vec()).with_signing_seed(&[9; 32]);
        config.tier = Tier::All;
        config.cost_meter = false;
        Engine {
            server: Server::new(config),
            snapshot: Snapshot::genesis(),
            ledger: Vec::new(),
            facts: TransportFacts::stdio(Some("2025-11-25".into())),
            now: 1_767_225_600_000,
            next_id: 1,
        }
    }

    /// Seals and folds an operator command's drafts the way the CLI's runtime commits them.
    pub fn commit(&mut self, drafts: Vec<Draft>) -> Vec<Record> {
        let snap = &self.snapshot;
        let sealed = seal(&snap.position, |s| snap.stream_head(s), drafts, KEY);
        let mut records = Vec::new();
        for rec in sealed {
            let line = rec.to_line();
            self.ledger.extend_from_slice(&line);
            let back = Record::parse_line(&line[..line.len() - 1], Some(KEY)).expect("reads back");
            self.snapshot.apply(&back).expect("extends the snapshot");
            records.push(back);
        }
        records
    }

    /// `bernstein plan approve|reject PLAN --hash H` as the library call it is.
    pub fn decide_plan(&mut self, plan_id: &str, seen_hash: &str, approve: bool) -> Answer {
        self.now += 1000;
        let decision = if approve {
            PlanDecision::Approve
        } else {
            PlanDecision::Reject
        };
        match decide_plan(
            &self.snapshot,
            Timestamp(self.now),
            plan_id,
            seen_hash,
            decision,
            None,
        ) {
            Ok(out) => {
                let answer = out.answer.clone();
                let records = self.commit(out.drafts);
                let audit = records
                    .last()
                    .expect("a decision writes its operator.command record");
                assert_eq!(
                    (audit.stream.as_str(), audit.kind.as_str()),
                    ("audit", "operator.command")
                );
                Answer {
                    result: Ok(answer),
                    records,
                }
            }
            Err(e) => {
                let code = if e.is_conflict() {
                    "plan_conflict"
                } else {
                    "plan_refused"
                };
                Answer {
                    result: Err(json!({"error": code, "message": e.to_string()})),
                    records: vec![],
                }
            }
        }
    }

    pub fn call(&mut self, tool: &str, arguments: Value) -> Answer {
        self.next_id += 1;
        self.now += 1000;
        let msg = json!({"jsonrpc": "2.0", "id": self.next_id, "method": "tools/call",
                         "params": {"name": tool, "arguments": arguments}});
        let bytes = serde_json::to_vec(&msg).unwrap();
        let outcome = self.server.handle(&Input {
            bytes: &bytes,
            snapshot: &self.snapshot,
            now: Timestamp(self.now),
            transport: &self.facts,
        });
        let reply: Value =
            serde_json::from_slice(&outcome.response.expect("a reply").render(0)).unwrap();
        let result = &reply["result"];
        assert!(result.is_object(), "{tool}: not a tool result: {reply}");
        let text = result["content"][0]["text"].as_str().expect("a text block");
        let payload: Value = serde_json::from_str(text).expect("the text block is JSON");
        let result = if result["isError"] == json!(true) {
            Err(payload)
        } else {
            Ok(payload)
        };
        // Through bytes and back, as a store would hand the records to the next request.
        let mut records = Vec::new();
        if let Some(append) = outcome.append {
            assert_eq!(append.expected, self.snapshot.position);
            for rec in &append.records {
                let line = rec.to_line();
                self.ledger.extend_from_slice(&line);
                let back =
                    Record::parse_line(&line[..line.len() - 1], Some(KEY)).expect("reads back");
                self.snapshot.apply(&back).expect("extends the snapshot");
                records.push(back);
            }
        }
        let call = records
            .last()
            .expect("every tools/call appends its audit record");
        assert_eq!(
            (call.stream.as_str(), call.kind.as_str()),
            ("audit", "mcp.stateless_call")
        );
        assert_eq!(call.body["ok"], json!(result.is_ok()));
        Answer { result, records }
    }
}

pub fn ok(a: &Answer, what: &str) -> Value {
    match &a.result {
        Ok(v) => v.clone(),
        Err(e) => panic!("{what}: refused, the model accepts: {e}"),
    }
}

pub fn refused(a: &Answer, code: &str, what: &str) {
    match &a.result {
        Ok(v) => panic!("{what}: accepted, the model refuses with {code}: {v}"),
        Err(e) => {
            assert_eq!(e["error"], json!(code), "{what}: {e}");
            let expected = usize::from(!code.starts_with("plan_"));
            assert_eq!(
                a.records.len(),
                expected,
                "{what}: a refusal appends only its audit record (an operator's nothing)"
            );
        }
    }
}
