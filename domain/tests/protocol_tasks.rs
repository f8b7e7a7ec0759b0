//! Tasks and progress through the whole engine with Bernstein's real catalogue: task-augmented
//! `tools/call` and `tasks/*` in revision 2025-11-25 and in the 2026-07-28 tasks extension, and
//! `notifications/progress` ticks of `bernstein_run_status`. Every reply and notification is
//! validated against the official schemas (`tests/mcp-schema`, including `ext-tasks`).

// Test harness: it reads the official schemas. The purity rules bind the core's source only.
#![allow(clippy::disallowed_methods)]

mod protocol_support;

use bernstein_core::config::{Config, Tier};
use bernstein_core::protocol::Outcome;
use bernstein_domain::bound::Server;
use protocol_support::{LATENCY_MS, SchemaBook, Session, modern_meta};
use serde_json::{Value, json};

const HANDSHAKE: &str = "2025-11-25";
const MODERN: &str = "2026-07-28";
const EXT: &str = "ext-tasks";

fn server(meter: bool) -> Server {
    let mut config = Config::new(b"tasks-audit-key".to_vec()).with_signing_seed(&[9; 32]);
    config.tier = Tier::Standard;
    config.cost_meter = meter;
    config.server_version = "0.0.0-test".into();
    Server::new(config)
}

struct Client {
    session: Session,
    book: SchemaBook,
    next: u64,
}

impl Client {
    fn new(meter: bool) -> Client {
        Client {
            session: Session::new(server(meter)),
            book: SchemaBook::default(),
            next: 0,
        }
    }

    /// Sends a request; returns the outcome and the rendered reply.
    fn raw(&mut self, method: &str, params: Value) -> (Outcome, Value) {
        self.next += 1;
        let msg = json!({"jsonrpc": "2.0", "id": self.next, "method": method, "params": params});
        let out = self.session.send(msg.to_string().as_bytes());
        let reply: Value = serde_json::from_slice(
            &out.response
                .as_ref()
                .expect("a request is answered")
                .render(LATENCY_MS),
        )
        .expect("replies are JSON");
        (out, reply)
    }

    /// A handshake-era request whose reply is validated as `def` (or as an error).
    fn hs(&mut self, method: &str, params: Value, def: &str) -> Value {
        let (_, reply) = self.raw(method, params);
        self.check(HANDSHAKE, &reply, def);
        reply
    }

    /// A 2026-07-28 request (the extension declared when `ext`), validated as `def` of the
    /// tasks extension schema (or of 2026-07-28 when `def` starts with `core:`).
    fn modern(&mut self, method: &str, mut params: Value, ext: bool, def: &str) -> Value {
        let mut meta = modern_meta();
        if ext {
            meta["io.modelcontextprotocol/clientCapabilities"] =
                json!({"extensions": {"io.modelcontextprotocol/tasks": {}}});
        }
        params["_meta"] = meta;
        let (_, reply) = self.raw(method, params);
        match def.strip_prefix("core:") {
            Some(d) => self.check(MODERN, &reply, d),
            None => self.check(EXT, &reply, def),
        }
        reply
    }

    fn check(&mut self, revision: &str, reply: &Value, def: &str) {
        let book = &mut self.book;
        if let Some(result) = reply.get("result") {
            book.check(revision, def, result)
                .unwrap_or_else(|e| panic!("{e}\n{reply}"));
        } else {
            let rev = if revision == EXT { MODERN } else { revision };
            book.check_reply(rev, None, reply)
                .unwrap_or_else(|e| panic!("{e}\n{reply}"));
        }
    }

    fn start(&mut self, goal: &str) -> String {
        let r = self.hs(
            "tools/call",
            json!({"name": "bernstein_run", "arguments": {"goal": goal}, "task": {"ttl": 1000}}),
            "CreateTaskResult",
        );
        r["result"]["task"]["taskId"].as_str().unwrap().to_string()
    }

    fn tool(&mut self, name: &str, args: Value) -> Value {
        let r = self.hs(
            "tools/call",
            json!({"name": name, "arguments": args}),
            "CallToolResult",
        );
        assert_eq!(r["result"]["isError"], false, "{r}");
        // The text block: only the polled tools carry structuredContent.
        let text = r["result"]["content"][0]["text"]
            .as_str()
            .expect("a text block");
        serde_json::from_str(text).expect("the text block is JSON")
    }

    /// Claims the next open task and completes it (the pull-worker verbs).
    fn work_one(&mut self) {
        let claimed = self.tool("bernstein_claim", json!({"claimer_id": "worker-1"}));
        let task = claimed["result"]["taskId"]
            .as_str()
            .unwrap_or_else(|| panic!("claim answered no task: {claimed}"))
            .to_string();
        self.tool(
            "bernstein_complete",
            json!({"task_id": task, "result_summary": "done"}),
        );
    }
}

fn error_code(reply: &Value) -> i64 {
    reply["error"]["code"]
        .as_i64()
        .unwrap_or_else(|| panic!("not an error: {reply}"))
}

#[test]
fn handshake_capabilities_and_task_support_are_advertised() {
    let mut c = Client::new(true);
    let init = c.hs(
        "initialize",
        json!({"protocolVersion": HANDSHAKE, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}),
        "InitializeResult",
    );
    assert_eq!(
        init["result"]["capabilities"]["tasks"],
        json!({"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}})
    );
    let tools = c.hs("tools/list", json!({}), "ListToolsResult");
    let support = |name: &str| {
        tools["result"]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == name)
            // An absent `execution` is the default, "forbidden".
            .map(|t| {
                t.pointer("/execution/taskSupport")
                    .cloned()
                    .unwrap_or(json!("forbidden"))
            })
            .unwrap()
    };
    assert_eq!(support("bernstein_run"), "optional");
    assert_eq!(support("bernstein_run_status"), "forbidden");
    let older = c.hs(
        "initialize",
        json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}),
        "InitializeResult",
    );
    assert!(older["result"]["capabilities"].get("tasks").is_none());
}

#[test]
fn a_task_augmented_run_is_driven_to_completion() {
    let mut c = Client::new(true);
    let id = c.start("ship the feature");
    let got = c.hs("tasks/get", json!({"taskId": id}), "GetTaskResult");
    assert_eq!(got["result"]["status"], "working");
    assert_eq!(got["result"]["ttl"], 86_400_000);
    // Not finished: answered at once with a retryable error, and the runtime is told to wait.
    let (out, early) = c.raw("tasks/result", json!({"taskId": id}));
    assert_eq!(error_code(&early), -32000, "{early}");
    assert!(out.pending.is_some());
    assert!(out.append.is_none());
    c.work_one();
    let done = c.hs("tasks/get", json!({"taskId": id}), "GetTaskResult");
    assert_eq!(done["result"]["status"], "completed");
    assert!(done["result"]["lastUpdatedAt"].as_str() >= got["result"]["lastUpdatedAt"].as_str());
    let (out, result) = c.raw("tasks/result", json!({"taskId": id}));
    assert!(out.pending.is_none());
    c.check(HANDSHAKE, &result, "CallToolResult");
    c.check(HANDSHAKE, &result, "GetTaskPayloadResult");
    let r = &result["result"];
    assert_eq!(r["isError"], false);
    assert_eq!(
        r["_meta"]["io.modelcontextprotocol/related-task"]["taskId"],
        id.as_str()
    );
    assert_eq!(r["structuredContent"]["result"]["task_id"], id.as_str());
    assert_eq!(r["structuredContent"]["result"]["status"], "done");
    assert_eq!(r["structuredContent"]["_meter"]["tool"], "bernstein_run");
    // The text block is the structured content, byte for byte.
    let text: Value = serde_json::from_str(r["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(text, r["structuredContent"]);
}

#[test]
fn plain_calls_stay_plain_and_forbidden_tools_refuse_tasks() {
    let mut c = Client::new(false);
    let plain = c.tool("bernstein_run", json!({"goal": "plain"}));
    assert!(plain["task_id"].is_string());
    let r = c.hs(
        "tools/call",
        json!({"name": "bernstein_run_status", "arguments": {"run_id": plain["task_id"]}, "task": {}}),
        "CallToolResult",
    );
    assert_eq!(error_code(&r), -32601, "{r}");
    // Refused calls create no task but are audited.
    let (out, refused) = c.raw(
        "tools/call",
        json!({"name": "bernstein_run", "arguments": {"goal": " "}, "task": {}}),
    );
    c.check(HANDSHAKE, &refused, "-");
    assert_eq!(error_code(&refused), -32602, "{refused}");
    assert_eq!(refused["error"]["data"]["error"], "invalid_arguments");
    assert_eq!(out.append.unwrap().records.len(), 1);
    let (out, _) = c.raw(
        "tools/call",
        json!({"name": "bernstein_run_status", "arguments": {"run_id": plain["task_id"]}, "task": {}}),
    );
    assert_eq!(
        out.append.unwrap().records[0].body["error"],
        "task_not_supported"
    );
    // A revision without tasks ignores `task`.
    c.session.facts.protocol_version = Some("2025-06-18".into());
    let (_, old) = c.raw(
        "tools/call",
        json!({"name": "bernstein_run", "arguments": {"goal": "old"}, "task": {}}),
    );
    assert!(old["result"]["content"].is_array(), "{old}");
    let (_, gone) = c.raw("tasks/list", json!({}));
    assert_eq!(error_code(&gone), -32601);
}

#[test]
fn errors_follow_the_revision() {
    let mut c = Client::new(true);
    let id = c.start("x");
    for method in ["tasks/get", "tasks/result", "tasks/cancel"] {
        for bad in [
            json!({"taskId": "T-0123456789abcdef"}),
            json!({"taskId": "../x"}),
            json!({"taskId": 5}),
            json!({}),
        ] {
            let r = c.hs(method, bad.clone(), "-");
            assert_eq!(error_code(&r), -32602, "{method} {bad}: {r}");
        }
    }
    for cursor in [json!("!!!"), json!("eA"), json!(7)] {
        let r = c.hs("tasks/list", json!({"cursor": cursor}), "-");
        assert_eq!(error_code(&r), -32602, "{cursor}: {r}");
    }
    let cancelled = c.hs("tasks/cancel", json!({"taskId": id}), "CancelTaskResult");
    assert_eq!(cancelled["result"]["status"], "cancelled");
    assert_eq!(cancelled["result"]["ttl"], 86_400_000);
    let again = c.hs("tasks/cancel", json!({"taskId": id}), "-");
    assert_eq!(error_code(&again), -32602, "{again}");
    let result = c.hs("tasks/result", json!({"taskId": id}), "CallToolResult");
    assert_eq!(result["result"]["isError"], true);
    assert_eq!(
        result["result"]["structuredContent"]["result"]["status"],
        "cancelled"
    );
}

#[test]
fn tasks_list_pages_deterministically() {
    let mut c = Client::new(false);
    let mut ids: Vec<String> = (0..55).map(|i| c.start(&format!("goal {i}"))).collect();
    ids.sort();
    let first = c.hs("tasks/list", json!({}), "ListTasksResult");
    let page1: Vec<String> = first["result"]["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["taskId"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(page1.len(), 50);
    let cursor = first["result"]["nextCursor"].clone();
    assert!(cursor.is_string());
    let second = c.hs("tasks/list", json!({"cursor": cursor}), "ListTasksResult");
    assert!(second["result"].get("nextCursor").is_none());
    let page2: Vec<String> = second["result"]["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["taskId"].as_str().unwrap().to_string())
        .collect();
    assert_eq!([page1, page2].concat(), ids);
    // Another instance over the same ledger answers the same bytes.
    let mut other = Session::new(server(false));
    other.snapshot = c.session.snapshot.clone();
    let msg = json!({"jsonrpc": "2.0", "id": 1, "method": "tasks/list", "params": {}});
    let a = c
        .session
        .send(msg.to_string().as_bytes())
        .response
        .unwrap()
        .render(0);
    let b = other
        .send(msg.to_string().as_bytes())
        .response
        .unwrap()
        .render(0);
    assert_eq!(a, b);
}

#[test]
fn a_plain_call_answers_the_run_json_and_tasks_get_reads_the_run_by_its_id() {
    let mut c = Client::new(true);
    let discover = c.modern("server/discover", json!({}), false, "core:DiscoverResult");
    assert_eq!(
        discover["result"]["capabilities"]["extensions"]["io.modelcontextprotocol/tasks"],
        json!({})
    );
    // The response shape follows the call: with or without the extension declared, a plain
    // bernstein_run answers the immediate run JSON and never a task the host would wait on.
    for declared in [false, true] {
        let plain = c.modern(
            "tools/call",
            json!({"name": "bernstein_run", "arguments": {"goal": format!("p{declared}")}}),
            declared,
            "core:CallToolResult",
        );
        let r = &plain["result"];
        assert_eq!(r["resultType"], "complete", "{plain}");
        assert_eq!(r["isError"], false);
        assert!(
            r.get("taskId").is_none() && r.get("status").is_none(),
            "{plain}"
        );
        let run = &r["structuredContent"]["result"];
        assert!(
            run["task_id"].is_string() && run["run_id"].is_string(),
            "{plain}"
        );
        assert!(run["poll_after_ms"].is_u64(), "{plain}");
    }
    let started = c.modern(
        "tools/call",
        json!({"name": "bernstein_run", "arguments": {"goal": "t"}}),
        true,
        "core:CallToolResult",
    );
    let id = started["result"]["structuredContent"]["result"]["run_id"]
        .as_str()
        .unwrap()
        .to_string();
    // A poll answers as usual when the extension is declared.
    let status = c.modern(
        "tools/call",
        json!({"name": "bernstein_run_status", "arguments": {"run_id": id}}),
        true,
        "core:CallToolResult",
    );
    assert_eq!(status["result"]["isError"], false);
    let working = c.modern("tasks/get", json!({"taskId": id}), true, "GetTaskResult");
    assert_eq!(working["result"]["status"], "working");
    assert_eq!(working["result"]["ttlMs"], 86_400_000);
    let ack = c.modern(
        "tasks/update",
        json!({"taskId": id, "inputResponses": {}}),
        true,
        "UpdateTaskResult",
    );
    assert_eq!(ack["result"]["resultType"], "complete");
    // Complete the three runs' tasks through the worker verbs (claimed in creation order).
    c.work_one();
    c.work_one();
    c.work_one();
    let done = c.modern("tasks/get", json!({"taskId": id}), true, "GetTaskResult");
    assert_eq!(done["result"]["status"], "completed");
    assert_eq!(done["result"]["result"]["isError"], false);
    assert_eq!(
        done["result"]["result"]["structuredContent"]["result"]["task_id"],
        id.as_str()
    );
    // Cancelling a finished task is acknowledged (the extension's idempotent cancel) and
    // leaves it completed.
    let late = c.modern(
        "tasks/cancel",
        json!({"taskId": id}),
        true,
        "CancelTaskResult",
    );
    assert_eq!(late["result"]["resultType"], "complete");
    let still = c.modern("tasks/get", json!({"taskId": id}), true, "GetTaskResult");
    assert_eq!(still["result"]["status"], "completed");
    let other = c.modern(
        "tools/call",
        json!({"name": "bernstein_run", "arguments": {"goal": "c"}}),
        true,
        "core:CallToolResult",
    );
    let other = other["result"]["structuredContent"]["result"]["run_id"]
        .as_str()
        .unwrap()
        .to_string();
    let ack = c.modern(
        "tasks/cancel",
        json!({"taskId": other}),
        true,
        "CancelTaskResult",
    );
    assert_eq!(ack["result"]["resultType"], "complete");
    let gone = c.modern("tasks/get", json!({"taskId": other}), true, "GetTaskResult");
    assert_eq!(gone["result"]["status"], "cancelled");
    for method in ["tasks/list", "tasks/result"] {
        let r = c.modern(method, json!({"taskId": other}), true, "-");
        assert_eq!(error_code(&r), -32601, "{method}");
    }
    let unknown = c.modern(
        "tasks/get",
        json!({"taskId": "T-0123456789abcdef"}),
        true,
        "-",
    );
    assert_eq!(error_code(&unknown), -32602);
}

/// Sends `bernstein_run_status` with a progress token; returns the notifications.
#[test]
fn a_workers_question_is_asked_through_the_extension_and_answered_by_tasks_update() {
    let mut c = Client::new(false);
    let started = c.modern(
        "tools/call",
        json!({"name": "bernstein_run", "arguments": {"goal": "ask me"}}),
        true,
        "core:CallToolResult",
    );
    let id = started["result"]["structuredContent"]["run_id"]
        .as_str()
        .unwrap()
        .to_string();
    let claimed = c.tool("bernstein_claim", json!({"claimer_id": "worker-1"}));
    assert_eq!(claimed["taskId"], id.as_str());
    c.tool(
        "bernstein_post_message",
        json!({"task_id": id, "kind": "question", "body": "Which region?", "sender": "worker-1"}),
    );
    let asking = c.modern("tasks/get", json!({"taskId": id}), true, "GetTaskResult");
    let task = &asking["result"];
    assert_eq!(task["status"], "input_required", "{asking}");
    let requests = task["inputRequests"].as_object().unwrap();
    assert_eq!(requests.len(), 1, "{asking}");
    let (key, request) = requests.iter().next().unwrap();
    assert_eq!(request["method"], "elicitation/create");
    assert!(
        request["params"]["message"]
            .as_str()
            .unwrap()
            .contains("Which region?")
    );

    // A response that is not an ElicitResult is refused and records nothing.
    let before = c.session.snapshot.position;
    let bad = c.modern(
        "tasks/update",
        json!({"taskId": id, "inputResponses": {key.as_str(): {"action": "maybe"}}}),
        true,
        "-",
    );
    assert_eq!(error_code(&bad), -32602);
    assert_eq!(c.session.snapshot.position, before);
    // An answer to another key changes nothing.
    let other = c.modern(
        "tasks/update",
        json!({"taskId": id, "inputResponses": {"question:T-0:1": {"action": "decline"}}}),
        true,
        "UpdateTaskResult",
    );
    assert_eq!(other["result"]["resultType"], "complete");
    assert_eq!(c.session.snapshot.position, before);

    let ack = c.modern(
        "tasks/update",
        json!({"taskId": id, "inputResponses": {key.as_str(): {"action": "accept", "content": {"answer": "eu-west-1"}}}}),
        true,
        "UpdateTaskResult",
    );
    assert_eq!(ack["result"]["resultType"], "complete");
    let working = c.modern("tasks/get", json!({"taskId": id}), true, "GetTaskResult");
    assert_eq!(working["result"]["status"], "working", "{working}");
    assert!(working["result"].get("inputRequests").is_none());
    // The answer is in the task's mailbox, from the host, signed like any post.
    let mailbox = c.hs(
        "resources/read",
        json!({"uri": format!("bernstein://tasks/{id}/mailbox")}),
        "ReadResourceResult",
    );
    let text = mailbox["result"]["contents"][0]["text"].as_str().unwrap();
    assert!(
        text.contains("eu-west-1") && text.contains("\"answer\""),
        "{text}"
    );
    // Answering again changes nothing: nothing is asked now.
    let again_at = c.session.snapshot.position;
    c.modern(
        "tasks/update",
        json!({"taskId": id, "inputResponses": {key.as_str(): {"action": "accept", "content": {"answer": "x"}}}}),
        true,
        "UpdateTaskResult",
    );
    assert_eq!(c.session.snapshot.position, again_at);
}

fn poll(session: &mut Session, run: &str, token: Value) -> Vec<Vec<u8>> {
    let mut params = json!({"name": "bernstein_run_status", "arguments": {"run_id": run}});
    if !token.is_null() {
        params["_meta"] = json!({ "progressToken": token });
    }
    let msg = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params});
    let out = session.send(msg.to_string().as_bytes());
    let reply: Value = serde_json::from_slice(&out.response.unwrap().render(0)).unwrap();
    assert!(reply["result"]["content"].is_array(), "{reply}");
    out.notifications
}

#[test]
fn progress_ticks_advance_strictly_and_are_suppressed_across_instances() {
    let mut c = Client::new(true);
    let run = c.start("progress");
    let mut book = SchemaBook::default();
    // No token, no tick; a float token is no token.
    assert!(poll(&mut c.session, &run, Value::Null).is_empty());
    assert!(poll(&mut c.session, &run, json!(1.5)).is_empty());
    // Two instances over the same ledger emit byte-identical ticks.
    let mut twin = Session::new(server(true));
    twin.snapshot = c.session.snapshot.clone();
    let first = poll(&mut c.session, &run, json!("tok"));
    let twin_first = poll(&mut twin, &run, json!("tok"));
    assert_eq!(first.len(), 1);
    assert_eq!(first, twin_first);
    let tick: Value = serde_json::from_slice(&first[0]).unwrap();
    assert_eq!(tick["method"], "notifications/progress");
    assert_eq!(tick["params"]["progress"], 0);
    assert_eq!(tick["params"]["total"], 1);
    assert!(
        tick["params"]["message"]
            .as_str()
            .unwrap()
            .contains("0 of 1")
    );
    book.check(HANDSHAKE, "ProgressNotification", &tick)
        .unwrap();
    // Recorded: the same instance, and another one reading the ledger, suppress it.
    assert!(poll(&mut c.session, &run, json!("tok")).is_empty());
    let mut third = Session::new(server(true));
    third.snapshot = c.session.snapshot.clone();
    assert!(poll(&mut third, &run, json!(2)).is_empty());
    // The run moves: one new tick, then silence again; a refused poll never ticks.
    c.work_one();
    let next = poll(&mut c.session, &run, json!(3));
    assert_eq!(next.len(), 1);
    let tick: Value = serde_json::from_slice(&next[0]).unwrap();
    assert_eq!(tick["params"]["progress"], 1);
    assert_eq!(tick["params"]["progressToken"], 3);
    assert!(poll(&mut c.session, &run, json!(4)).is_empty());
    assert!(poll(&mut c.session, "T-0123456789abcdef", json!(5)).is_empty());
}

#[test]
fn a_request_id_matches_the_cancellation_that_names_it() {
    use bernstein_core::protocol::tasks::{cancelled_request, request_id};
    for (request, cancel) in [
        (
            r#"{"jsonrpc":"2.0","id":"a\u0041","method":"tasks/result"}"#,
            r#""aA""#,
        ),
        (
            r#" { "method":"tools/call", "id" : 7 , "params":{"id":9}}"#,
            "7",
        ),
    ] {
        let note = format!(
            r#"{{"jsonrpc":"2.0","method":"notifications/cancelled","params":{{"requestId":{cancel}}}}}"#
        );
        assert!(request_id(request.as_bytes()).is_some(), "{request}");
        assert_eq!(
            request_id(request.as_bytes()),
            cancelled_request(note.as_bytes())
        );
    }
    assert_eq!(
        request_id(br#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#),
        None
    );
    assert_eq!(request_id(br#"{"jsonrpc":"2.0","method":"ping"}"#), None);
    assert_eq!(request_id(b"not json"), None);
}
