//! Waiting, settling and cancelling through the whole engine: a long poll of
//! `bernstein_run_status` is pending (nothing sent, nothing recorded) while it may wait,
//! answers the handle as it stands when it settles, and `{cancelled: true, partial}` without
//! `isError` when cancelled — audited once either way. A poll whose answer is final answers
//! the same in every phase. `tasks/result` of a running task cancels the same way. A claim
//! that finds nothing waits on the backlog alone, cut at the next lease end.

use bernstein_core::config::{Config, Tier};
use bernstein_core::protocol::{Outcome, Phase, TransportFacts};
use bernstein_core::signing::Signer;
use bernstein_core::time::Timestamp;
use bernstein_domain::Snapshot;
use bernstein_domain::bound::{Input, Server};
use serde_json::{Value, json};

struct Engine {
    server: Server,
    snapshot: Snapshot,
    facts: TransportFacts,
    now: Timestamp,
}

impl Engine {
    fn new() -> Engine {
        Engine::metered(false)
    }

    fn metered(cost_meter: bool) -> Engine {
        let mut config = Config::new(b"k".to_vec());
        config.cost_meter = cost_meter;
        // The worker's tools too (`bernstein_claim`, which signs).
        config.tier = Tier::Standard;
        config.signing_key = Some(Signer::from_seed(&[7; 32]));
        Engine {
            server: Server::new(config),
            snapshot: Snapshot::genesis(),
            facts: TransportFacts::stdio(Some("2025-11-25".into())),
            now: Timestamp(1_790_000_000_000),
        }
    }

    fn serve(&self, msg: &Value, phase: Phase) -> Outcome {
        let bytes = msg.to_string();
        self.server.handle_round(
            &Input {
                bytes: bytes.as_bytes(),
                snapshot: &self.snapshot,
                now: self.now,
                transport: &self.facts,
            },
            &[],
            phase,
        )
    }

    fn commit(&mut self, out: &Outcome) {
        for r in out.append.iter().flat_map(|a| &a.records) {
            self.snapshot.apply(r).unwrap();
        }
    }

    fn call(&mut self, name: &str, args: Value) -> Value {
        let out = self.serve(&tool(name, args), Phase::Live);
        self.commit(&out);
        text(&out)
    }
}

fn tool(name: &str, args: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call",
        "params": {"name": name, "arguments": args}})
}

fn text(out: &Outcome) -> Value {
    // What is sent: a metered result's envelope is written when the response is rendered.
    let msg: Value =
        serde_json::from_slice(&out.response.as_ref().expect("a response").render(0)).unwrap();
    serde_json::from_str(msg["result"]["content"][0]["text"].as_str().unwrap()).unwrap()
}

fn audit_error(out: &Outcome) -> Option<Value> {
    let records = &out.append.as_ref().expect("the call is audited").records;
    let audit = records.last().unwrap();
    assert_eq!(audit.kind, "mcp.stateless_call");
    audit.body.get("error").cloned()
}

#[test]
fn a_long_poll_waits_then_settles_or_is_cancelled() {
    let mut e = Engine::new();
    let run = e.call("bernstein_run", json!({"goal": "g"}))["run_id"]
        .as_str()
        .unwrap()
        .to_string();
    let poll = tool(
        "bernstein_run_status",
        json!({"run_id": run, "wait_ms": 5000}),
    );

    let live = e.serve(&poll, Phase::Live);
    let wait = live
        .pending
        .as_ref()
        .expect("a working run keeps the poll waiting");
    assert_eq!(wait.max_wait_ms, Some(5000));
    assert_eq!(wait.after, e.snapshot.position);
    assert!(live.response.is_none() && live.append.is_none());

    let settled = e.serve(&poll, Phase::Settle);
    assert!(settled.pending.is_none());
    assert_eq!(text(&settled)["status"], "working");
    assert_eq!(audit_error(&settled), None);
    let result = &settled.response.as_ref().unwrap().message["result"];
    assert_eq!(result["isError"], false);
    assert!(result.get("cancelled").is_none());

    let cancelled = e.serve(&poll, Phase::Cancelled);
    let result = &cancelled.response.as_ref().unwrap().message["result"];
    assert_eq!(result["cancelled"], true);
    assert!(
        result.get("isError").is_none(),
        "a cancelled call has no isError: {result}"
    );
    assert!(result.get("structuredContent").is_none());
    assert_eq!(result["partial"][0], text(&settled));
    assert_eq!(text(&cancelled)["partial"], result["partial"]);
    assert_eq!(audit_error(&cancelled), Some(json!("cancelled")));
}

#[test]
fn a_poll_whose_answer_is_final_answers_alike_in_every_phase() {
    let mut e = Engine::new();
    let answer = e.call("bernstein_run", json!({"goal": "g"}));
    let (run, task) = (answer["run_id"].clone(), answer["task_id"].clone());
    e.call("bernstein_cancel", json!({"task_id": task}));
    let poll = tool(
        "bernstein_run_status",
        json!({"run_id": run, "wait_ms": 5000}),
    );
    let live = e.serve(&poll, Phase::Live);
    assert!(
        live.pending.is_none(),
        "a cancelled run ends the poll at once"
    );
    assert_eq!(text(&live)["status"], "cancelled");
    assert_eq!(e.serve(&poll, Phase::Cancelled), live);

    // `since` a head the journal has already left: answered at once as well.
    let moved = tool(
        "bernstein_run_status",
        json!({"run_id": run, "wait_ms": 5000, "since": "sha256:00"}),
    );
    assert!(e.serve(&moved, Phase::Live).pending.is_none());
}

#[test]
fn a_cancelled_tasks_result_answers_the_task_as_it_stood() {
    let mut e = Engine::new();
    let created = e.serve(
        &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "bernstein_run", "arguments": {"goal": "g"}, "task": {}}}),
        Phase::Live,
    );
    e.commit(&created);
    let task_id = created.response.unwrap().message["result"]["task"]["taskId"].clone();
    let wait = json!({"jsonrpc": "2.0", "id": 2, "method": "tasks/result",
        "params": {"taskId": task_id}});
    let live = e.serve(&wait, Phase::Live);
    assert!(live.pending.is_some());
    assert_eq!(
        live.response.as_ref().unwrap().message["error"]["code"],
        -32000
    );
    let cancelled = e.serve(&wait, Phase::Cancelled);
    assert!(cancelled.pending.is_none());
    let result = &cancelled.response.unwrap().message["result"];
    assert_eq!(result["cancelled"], true);
    assert!(
        result.get("isError").is_none(),
        "a cancelled call has no isError: {result}"
    );
    assert_eq!(result["partial"][0]["taskId"], task_id);
    assert_eq!(result["partial"][0]["status"], "working");
}

#[test]
fn a_cancelled_metered_poll_answers_the_documented_shape() {
    let mut e = Engine::metered(true);
    let run = e.call("bernstein_run", json!({"goal": "g"}))["result"]["run_id"].clone();
    let poll = tool(
        "bernstein_run_status",
        json!({"run_id": run, "wait_ms": 5000}),
    );
    let cancelled = e.serve(&poll, Phase::Cancelled);
    let result = &cancelled.response.as_ref().unwrap().message["result"];
    let keys: Vec<&String> = result.as_object().unwrap().keys().collect();
    assert_eq!(keys, ["cancelled", "content", "partial"], "{result}");
    assert_eq!(result["partial"][0]["runId"], run);
    let env = text(&cancelled);
    assert_eq!(env["result"]["cancelled"], true);
    assert_eq!(env["result"]["partial"], result["partial"]);
    let meter = &env["_meter"];
    assert_eq!(meter["tool"], "bernstein_run_status");
    assert_eq!(meter["ok"], false);
    assert_eq!(meter["cost_usd"], 0);
    assert!(meter["call_id"].is_string() && meter["ts"].is_string());
}

fn kinds(out: &Outcome) -> Vec<String> {
    let records = out.append.iter().flat_map(|a| &a.records);
    records.map(|r| r.kind.clone()).collect()
}

#[test]
fn a_claim_that_finds_nothing_waits_on_the_backlog_and_records_only_its_answer() {
    let mut e = Engine::new();
    let claim = tool(
        "bernstein_claim",
        json!({"claimer_id": "w1", "wait_ms": 60000}),
    );
    let live = e.serve(&claim, Phase::Live);
    let wait = live
        .pending
        .as_ref()
        .expect("nothing open: the claim waits");
    assert_eq!(wait.max_wait_ms, Some(60000));
    assert_eq!(wait.watch.as_ref().unwrap().stream, "backlog");
    assert!(live.response.is_none() && live.append.is_none());

    // The wait ends with nothing found: one refusal receipt and the call's audit record.
    let settled = e.serve(&claim, Phase::Settle);
    assert_eq!(text(&settled)["granted"], false);
    assert_eq!(
        kinds(&settled),
        ["task.claim_receipt", "mcp.stateless_call"]
    );
    // A worker stopping mid-wait: only the audit record, saying it was cancelled.
    let cancelled = e.serve(&claim, Phase::Cancelled);
    assert_eq!(kinds(&cancelled), ["mcp.stateless_call"]);
    assert_eq!(audit_error(&cancelled), Some(json!("cancelled")));

    // A new run moves the backlog: decided again, the claim is granted at once.
    e.call("bernstein_run", json!({"goal": "g"}));
    let woken = e.serve(&claim, Phase::Live);
    assert!(woken.pending.is_none());
    assert_eq!(text(&woken)["granted"], true);
    assert_eq!(kinds(&woken)[0], "task.status");

    // Without wait_ms nothing waits (the granted task is no longer open).
    e.commit(&woken);
    let plain = e.serve(
        &tool("bernstein_claim", json!({"claimer_id": "w2"})),
        Phase::Live,
    );
    assert!(plain.pending.is_none());
    assert_eq!(text(&plain)["granted"], false);
}

#[test]
fn a_waiting_claim_wakes_when_a_held_lease_ends_and_takes_the_task_over() {
    let mut e = Engine::new();
    e.call("bernstein_run", json!({"goal": "g"}));
    let first = e.call(
        "bernstein_claim",
        json!({"claimer_id": "w1", "lease_seconds": 10}),
    );
    assert_eq!(first["granted"], true);
    e.now = Timestamp(e.now.0 + 4_000);
    let claim = tool(
        "bernstein_claim",
        json!({"claimer_id": "w2", "wait_ms": 60000}),
    );
    let live = e.serve(&claim, Phase::Live);
    let wait = live.pending.as_ref().expect("the only task is held");
    // The lease ends 6 s from now; the wait is cut just past it.
    assert_eq!(wait.max_wait_ms, Some(6_005));
    e.now = Timestamp(e.now.0 + 6_005);
    let settled = e.serve(&claim, Phase::Settle);
    assert_eq!(text(&settled)["granted"], true);
    assert_eq!(text(&settled)["taskId"], first["taskId"]);
    assert_eq!(kinds(&settled)[0], "task.reclaimed");
}
