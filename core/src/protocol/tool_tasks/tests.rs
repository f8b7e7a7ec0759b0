//! The engine's own tasks through `Server::handle`: created, working, input_required,
//! completed, failed, cancelled and expired; gating on the extension; `-32021`; the same answer
//! from two engines on the same snapshot.

use super::*;
use crate::config::{Config, Tier};
use crate::ledger::Fold;
use crate::protocol::input::InputRequest;
use crate::protocol::registry::{Arguments, Catalog, Effects};
use crate::protocol::{Input, TransportFacts};

/// A fold that keeps the engine's tasks and nothing else.
#[derive(Clone, Debug, Default)]
struct TaskFold(ToolTasks);

impl Fold for TaskFold {
    fn apply(&mut self, rec: &crate::ledger::Record) {
        self.0.apply(rec);
    }
    fn at_txn_boundary(&self) -> bool {
        true
    }
}

type S = Snapshot<TaskFold>;

crate::refusal_codes! {
    /// This fixture's refusals.
    enum Fixture {
        Broke = "broke",
    }
}

/// `{"ms": N, "outcome": "ok" | "tool_error" | "fault" | "ask"}`: works N ms, then answers.
fn timed(ctx: &ToolContext<'_, TaskFold>, args: Value) -> ToolOutput {
    let ms = args["ms"].as_u64().unwrap_or(0);
    if let Some(clock) = ctx.task
        && clock.elapsed_ms < ms
    {
        return ToolOutput::working(format!("{} ms to go", ms - clock.elapsed_ms));
    }
    match args["outcome"].as_str().unwrap_or("ok") {
        "tool_error" => ToolOutput::refused(ToolError::new(Fixture::Broke, "broke", "none")),
        "fault" => ToolOutput::task_failed(-32603, "Internal error: it broke"),
        "ask" => match ctx.input.elicited("ok") {
            Some(_) => ToolOutput::ok(json!("answered")),
            None => ToolOutput::need_input(InputNeeded::one(
                "ok",
                InputRequest::form("OK?", json!({"ok": {"type": "boolean"}}), &["ok"]),
            )),
        },
        _ => ToolOutput::ok(json!(format!("done after {ms}"))),
    }
}

fn tool(name: &'static str, support: TaskSupport) -> ToolSpec<TaskFold> {
    ToolSpec {
        name,
        title: name,
        description: "test task tool",
        tier: Tier::Core,
        input_schema: || json!({"type": "object"}),
        output_schema: None,
        effects: Effects::default(),
        task_support: support,
        arguments: Arguments::Schema,
        call: timed,
    }
}

fn server() -> Server<TaskFold> {
    let catalog = Catalog {
        tools: vec![
            tool("optional", TaskSupport::Optional),
            tool("required", TaskSupport::Required),
            tool("plain", TaskSupport::Forbidden),
        ],
        tool_tasks: Some(|f: &TaskFold| &f.0),
        ..Catalog::empty()
    };
    Server::with_catalog(Config::new(b"k".to_vec()), catalog)
}

/// A 2026-07-28 request's bytes, declaring the tasks extension when `ext`.
fn request(method: &str, mut params: Value, ext: bool) -> Vec<u8> {
    let caps = if ext {
        json!({"elicitation": {}, "extensions": {TASKS_EXTENSION: {}}})
    } else {
        json!({})
    };
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": caps,
    });
    serde_json::to_vec(&json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}))
        .unwrap()
}

/// Serves `bytes` at `now` and folds what it appended into `snapshot`; the response body.
fn send(server: &Server<TaskFold>, snapshot: &mut S, now: u64, bytes: &[u8]) -> Value {
    let facts = TransportFacts::stdio(None);
    let outcome = server.handle(&Input {
        bytes,
        snapshot,
        now: Timestamp(now),
        transport: &facts,
    });
    if let Some(append) = &outcome.append {
        for r in &append.records {
            snapshot.apply(r).unwrap();
        }
    }
    serde_json::from_slice(&outcome.response.expect("a response").render(0)).unwrap()
}

fn create(server: &Server<TaskFold>, snapshot: &mut S, now: u64, args: Value) -> String {
    let reply = send(
        server,
        snapshot,
        now,
        &request(
            "tools/call",
            json!({"name": "optional", "arguments": args}),
            true,
        ),
    );
    let result = &reply["result"];
    assert_eq!(result["resultType"], "task", "{reply}");
    assert_eq!(result["status"], "working");
    assert_eq!(result["ttlMs"], TASK_TTL_MS);
    assert!(result.get("task").is_none() && result.get("requestState").is_none());
    result["taskId"].as_str().unwrap().to_string()
}

fn get(server: &Server<TaskFold>, snapshot: &mut S, now: u64, id: &str) -> Value {
    send(
        server,
        snapshot,
        now,
        &request("tasks/get", json!({"taskId": id}), true),
    )
}

#[test]
fn a_task_works_until_its_time_then_completes_with_the_result_inlined() {
    let (server, mut snapshot) = (server(), S::genesis());
    let id = create(&server, &mut snapshot, 1_000, json!({"ms": 2_000}));
    // Durable before acknowledged: the creating call's records are folded already.
    assert!(snapshot.domain.0.get(&id).is_some());
    let working = get(&server, &mut snapshot, 2_000, &id)["result"].clone();
    assert_eq!(working["status"], "working");
    assert_eq!(working["resultType"], "complete");
    assert!(working.get("result").is_none() && working.get("error").is_none());
    let done = get(&server, &mut snapshot, 3_000, &id)["result"].clone();
    assert_eq!(done["status"], "completed");
    assert_eq!(done["result"]["isError"], false);
    assert_eq!(done["result"]["content"][0]["text"], "\"done after 2000\"");
    assert_eq!(done["createdAt"], Timestamp(1_000).to_rfc3339());
}

#[test]
fn a_tool_error_completes_and_a_protocol_failure_fails() {
    let (server, mut snapshot) = (server(), S::genesis());
    let tool_error = create(
        &server,
        &mut snapshot,
        0,
        json!({"ms": 10, "outcome": "tool_error"}),
    );
    let fault = create(
        &server,
        &mut snapshot,
        0,
        json!({"ms": 10, "outcome": "fault"}),
    );
    let t = get(&server, &mut snapshot, 10, &tool_error)["result"].clone();
    assert_eq!(
        (t["status"].as_str(), t["result"]["isError"].as_bool()),
        (Some("completed"), Some(true))
    );
    let f = get(&server, &mut snapshot, 10, &fault)["result"].clone();
    assert_eq!(f["status"], "failed");
    assert_eq!(f["error"]["code"], -32603);
    assert!(f.get("result").is_none());
}

#[test]
fn input_required_until_tasks_update_answers() {
    let (server, mut snapshot) = (server(), S::genesis());
    let id = create(
        &server,
        &mut snapshot,
        0,
        json!({"ms": 5, "outcome": "ask"}),
    );
    let asking = get(&server, &mut snapshot, 5, &id)["result"].clone();
    assert_eq!(asking["status"], "input_required");
    assert_eq!(
        asking["inputRequests"]["ok"]["method"],
        "elicitation/create"
    );
    // A malformed answer is refused and records nothing.
    let at = snapshot.position;
    let bad = json!({"taskId": id, "inputResponses": {"ok": {"action": "maybe"}}});
    let refused = send(
        &server,
        &mut snapshot,
        6,
        &request("tasks/update", bad, true),
    );
    assert_eq!(refused["error"]["code"], -32602);
    assert_eq!(snapshot.position, at);
    // An answer to nothing asked is acknowledged and records nothing.
    let stray = json!({"taskId": id, "inputResponses": {"other": {"action": "accept"}}});
    let ack = send(
        &server,
        &mut snapshot,
        6,
        &request("tasks/update", stray, true),
    );
    assert_eq!(ack["result"]["resultType"], "complete");
    assert_eq!(snapshot.position, at);
    let answer = json!({"taskId": id, "inputResponses": {"ok": {"action": "accept", "content": {"ok": true}}}});
    let ack = send(
        &server,
        &mut snapshot,
        7,
        &request("tasks/update", answer, true),
    );
    assert!(ack["result"].get("status").is_none());
    assert_eq!(snapshot.position.seq, at.seq + 1);
    let done = get(&server, &mut snapshot, 8, &id)["result"].clone();
    assert_eq!(done["status"], "completed");
    assert_eq!(done["lastUpdatedAt"], Timestamp(7).to_rfc3339());
}

#[test]
fn cancel_settles_to_cancelled_and_is_an_idempotent_ack() {
    let (server, mut snapshot) = (server(), S::genesis());
    let id = create(&server, &mut snapshot, 0, json!({"ms": 60_000}));
    let cancel = request("tasks/cancel", json!({"taskId": id}), true);
    let ack = send(&server, &mut snapshot, 1, &cancel);
    assert_eq!(ack["result"]["resultType"], "complete");
    assert!(ack["result"].get("taskId").is_none());
    let seq = snapshot.position.seq;
    assert_eq!(
        get(&server, &mut snapshot, 120_000, &id)["result"]["status"],
        "cancelled"
    );
    // Terminal: the same ack, nothing recorded.
    let again = send(&server, &mut snapshot, 2, &cancel);
    assert_eq!(again["result"]["resultType"], "complete");
    assert_eq!(snapshot.position.seq, seq);
}

#[test]
fn a_task_past_its_ttl_is_unknown() {
    let (server, mut snapshot) = (server(), S::genesis());
    let id = create(&server, &mut snapshot, 0, json!({"ms": 1}));
    let last = TASK_TTL_MS - 1;
    assert_eq!(
        get(&server, &mut snapshot, last, &id)["result"]["status"],
        "completed"
    );
    let gone = get(&server, &mut snapshot, TASK_TTL_MS, &id);
    assert_eq!(gone["error"]["code"], -32602);
}

#[test]
fn tasks_methods_and_required_tools_need_the_extension() {
    let (server, mut snapshot) = (server(), S::genesis());
    let id = create(&server, &mut snapshot, 0, json!({"ms": 10}));
    for method in ["tasks/get", "tasks/cancel"] {
        let reply = send(
            &server,
            &mut snapshot,
            1,
            &request(method, json!({"taskId": id}), false),
        );
        assert_eq!(reply["error"]["code"], -32021, "{method}");
    }
    let call = json!({"name": "required", "arguments": {"ms": 10}});
    let at = snapshot.position.seq;
    let refused = send(
        &server,
        &mut snapshot,
        1,
        &request("tools/call", call, false),
    );
    assert_eq!(refused["error"]["code"], -32021);
    assert!(
        refused["error"]["data"]["requiredCapabilities"]["extensions"][TASKS_EXTENSION].is_object()
    );
    // Only the call's audit record: no task.
    assert_eq!(snapshot.position.seq, at + 1);
    assert_eq!(snapshot.domain.0.len(), 1);
    // An optional tool without the extension runs as a plain call; a forbidden one always does.
    let plain = json!({"name": "optional", "arguments": {"ms": 0}});
    let reply = send(
        &server,
        &mut snapshot,
        1,
        &request("tools/call", plain, false),
    );
    assert_eq!(reply["result"]["resultType"], "complete");
    let plain = json!({"name": "plain", "arguments": {"ms": 0}});
    let reply = send(
        &server,
        &mut snapshot,
        1,
        &request("tools/call", plain, true),
    );
    assert_eq!(reply["result"]["resultType"], "complete");
}

#[test]
fn an_immediate_result_creates_no_task() {
    let (server, mut snapshot) = (server(), S::genesis());
    let call = json!({"name": "optional", "arguments": {"ms": 0}});
    let reply = send(
        &server,
        &mut snapshot,
        0,
        &request("tools/call", call, true),
    );
    assert_eq!(reply["result"]["resultType"], "complete");
    assert!(snapshot.domain.0.is_empty());
}

#[test]
fn two_engines_answer_alike_from_one_snapshot() {
    let (a, b) = (server(), server());
    let mut snapshot = S::genesis();
    let id = create(&a, &mut snapshot, 0, json!({"ms": 100, "outcome": "ask"}));
    for now in [50, 100, 200] {
        let (mut s1, mut s2) = (snapshot.clone(), snapshot.clone());
        assert_eq!(get(&a, &mut s1, now, &id), get(&b, &mut s2, now, &id));
    }
}

#[test]
fn the_fold_refuses_records_that_do_not_fit() {
    let mut tasks = ToolTasks::default();
    let rec = |kind: &str, body: Value| crate::ledger::Record {
        seq: 1,
        prev: Digest::ZERO,
        txn: [1, 1],
        stream: records::stream("task-x"),
        sprev: Digest::ZERO,
        kind: kind.into(),
        body,
        hash: Digest::ZERO,
        mac: None,
    };
    assert!(!tasks.apply(&rec(
        records::CANCELLED,
        json!({"task_id": "task-x", "at": 1})
    )));
    let created = json!({"task_id": "task-x", "tool": "t", "arguments": {}, "created_at": 1,
        "ttl_ms": 10, "caps": [], "responses": {}});
    let mut stray = created.clone();
    stray["extra"] = json!(1);
    assert!(!tasks.apply(&rec(records::CREATED, stray)));
    assert!(tasks.apply(&rec(records::CREATED, created.clone())));
    assert!(!tasks.apply(&rec(records::CREATED, created)));
    assert!(!tasks.apply(&rec(
        records::CANCELLED,
        json!({"task_id": "task-y", "at": 1})
    )));
    assert!(tasks.apply(&rec(
        records::CANCELLED,
        json!({"task_id": "task-x", "at": 3})
    )));
    let task = tasks.get("task-x").unwrap();
    assert!(task.cancelled);
    assert_eq!(task.updated_at, 3);
}
