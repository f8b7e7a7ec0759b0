//! Requests that ask the client for input (2026-07-28 `InputRequiredResult`), served through
//! the engine and checked against the official schema: every reply of a round trip (elicitation,
//! sampling, roots, a prompt), the retry that completes, a tampered `requestState` and a client
//! without the capability (`MissingRequiredClientCapabilityError`).

// Test harness: the purity rules bind the core's source only.
#![allow(clippy::disallowed_methods)]

mod protocol_support;

use bernstein_core::config::Tier;
use bernstein_core::protocol::input::{InputNeeded, InputRequest};
use bernstein_core::protocol::registry::{Arguments, PromptSpec, PromptTurn, ToolOutput};
use bernstein_domain::bound::{Server, ToolContext};
use protocol_support::{SchemaBook, Session, fixture_catalog, fixture_server, modern_meta};
use serde_json::{Value, json};

const REVISION: &str = "2026-07-28";

/// Asks for a form, a model reply and the roots in one round; answers with what it got.
fn ask_all(ctx: &ToolContext<'_>, _: Value) -> ToolOutput {
    if ctx.input.responses.len() == 3 {
        let keys: Vec<&str> = ctx
            .input
            .responses
            .iter()
            .map(|(k, _)| k.as_str())
            .collect();
        return ToolOutput::ok(json!({ "answered": keys }));
    }
    let form = InputRequest::form("Name?", json!({"name": {"type": "string"}}), &["name"]);
    ToolOutput::need_input(InputNeeded {
        requests: vec![
            ("name".into(), form),
            ("model".into(), InputRequest::ask_model("Hello?", 10)),
            ("roots".into(), InputRequest::ListRoots),
        ],
        state: Some(json!({"round": 1})),
        related_task: None,
    })
}

fn server() -> Server {
    let mut catalog = fixture_catalog();
    let mut tool = catalog.tool("echo").cloned().unwrap();
    tool.name = "ask_all";
    tool.output_schema = None;
    tool.input_schema = || json!({"type": "object"});
    tool.arguments = Arguments::Schema;
    tool.call = ask_all;
    catalog.tools.push(tool);
    catalog.prompts.push(PromptSpec {
        name: "needs_roots",
        title: "Needs roots",
        description: "Renders once the client's roots are known.",
        arguments: Vec::new(),
        render: |_, inputs| {
            Ok(match inputs.response("roots") {
                Some(r) => PromptTurn::Messages(vec![json!({"role": "user",
                    "content": {"type": "text", "text": format!("roots: {}", r["roots"])}})]),
                None => PromptTurn::NeedInput(InputNeeded::one("roots", InputRequest::ListRoots)),
            })
        },
    });
    let base = fixture_server(Tier::All, false, false);
    Server::with_catalog(base.config.clone(), catalog)
}

struct Probe {
    session: Session,
    book: SchemaBook,
}

impl Probe {
    fn new() -> Probe {
        Probe {
            session: Session::new(server()),
            book: SchemaBook::default(),
        }
    }

    /// Sends `method` with `params` declaring `caps`; the reply, checked against the schema.
    fn send(&mut self, method: &str, mut params: Value, caps: Value) -> Value {
        params["_meta"] = modern_meta();
        params["_meta"]["io.modelcontextprotocol/clientCapabilities"] = caps;
        let message = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
        self.book
            .check(REVISION, "JSONRPCRequest", &message)
            .expect("the test's own request is valid");
        let reply = self.session.send_json(&message).expect("a reply");
        self.book
            .check_reply(REVISION, Some(method), &reply)
            .unwrap_or_else(|e| panic!("{method}: {e}\n{reply}"));
        reply
    }
}

fn all_caps() -> Value {
    json!({"elicitation": {}, "sampling": {}, "roots": {"listChanged": true}})
}

#[test]
fn a_round_trip_of_every_kind_of_input_is_valid_on_the_wire() {
    let mut p = Probe::new();
    let call = json!({"name": "ask_all", "arguments": {}});
    let asked = p.send("tools/call", call.clone(), all_caps())["result"].clone();
    assert_eq!(asked["resultType"], "input_required");
    let methods: Vec<&str> = ["name", "model", "roots"]
        .iter()
        .map(|k| asked["inputRequests"][k]["method"].as_str().unwrap())
        .collect();
    assert_eq!(
        methods,
        ["elicitation/create", "sampling/createMessage", "roots/list"]
    );
    let mut retry = call.clone();
    retry["inputResponses"] = json!({
        "name": {"action": "accept", "content": {"name": "Ada"}},
        "model": {"role": "assistant", "content": {"type": "text", "text": "Hi"}, "model": "m"},
        "roots": {"roots": [{"uri": "file:///work", "name": "work"}]},
    });
    retry["requestState"] = asked["requestState"].clone();
    let done = p.send("tools/call", retry.clone(), all_caps())["result"].clone();
    assert_eq!(done["resultType"], "complete");
    assert_eq!(done["isError"], false);

    // Tampered: -32602, and the ledger did not move.
    let position = p.session.snapshot.position;
    let mut tampered = retry;
    tampered["requestState"] = json!(format!("{}x", asked["requestState"].as_str().unwrap()));
    let refused = p.send("tools/call", tampered, all_caps());
    assert_eq!(refused["error"]["code"], -32602);
    assert_eq!(refused["error"]["data"]["reason"], "request_state_forged");
    assert_eq!(p.session.snapshot.position, position);
}

#[test]
fn a_prompt_that_needs_input_is_valid_on_the_wire() {
    let mut p = Probe::new();
    let get = json!({"name": "needs_roots"});
    let asked = p.send("prompts/get", get.clone(), all_caps())["result"].clone();
    assert_eq!(asked["resultType"], "input_required");
    let mut retry = get;
    retry["inputResponses"] = json!({"roots": {"roots": [{"uri": "file:///w"}]}});
    retry["requestState"] = asked["requestState"].clone();
    let done = p.send("prompts/get", retry, all_caps())["result"].clone();
    assert_eq!(done["resultType"], "complete");
    assert!(
        done["messages"][0]["content"]["text"]
            .as_str()
            .unwrap()
            .contains("file:///w")
    );
}

#[test]
fn the_questions_put_to_a_handshake_era_client_are_valid_requests() {
    let mut book = SchemaBook::default();
    let questions = [
        (
            InputRequest::form("Name?", json!({"name": {"type": "string"}}), &["name"]),
            "ElicitRequest",
        ),
        (
            InputRequest::ask_model("Hello?", 10),
            "CreateMessageRequest",
        ),
        (InputRequest::ListRoots, "ListRootsRequest"),
    ];
    for revision in ["2025-06-18", "2025-11-25"] {
        for (question, def) in &questions {
            let plain = question.to_request("bernstein-ask-0123456789abcdef", None);
            // Asked for a task (a handshake-era tasks/result), it names the task in `_meta`.
            let tagged = question.to_request("bernstein-ask-0123456789abcdef", Some("T-1"));
            assert_eq!(
                tagged["params"]["_meta"]["io.modelcontextprotocol/related-task"]["taskId"],
                "T-1"
            );
            for message in [plain, tagged] {
                for name in ["JSONRPCRequest", def] {
                    book.check(revision, name, &message)
                        .unwrap_or_else(|e| panic!("{revision} {name}: {e}"));
                }
            }
        }
    }
}

#[test]
fn a_client_without_the_capability_gets_the_schemas_error() {
    let mut p = Probe::new();
    let call = json!({"name": "ask_all", "arguments": {}});
    let reply = p.send("tools/call", call, json!({"roots": {}}));
    assert_eq!(reply["error"]["code"], -32021);
    assert_eq!(
        reply["error"]["data"]["requiredCapabilities"],
        json!({"elicitation": {}})
    );
}

/// The payload of a Bernstein tool result (the text block's JSON, its `result` when metered).
fn payload(result: &Value) -> Value {
    let v: Value = serde_json::from_str(result["content"][0]["text"].as_str().unwrap()).unwrap();
    v.get("result").cloned().unwrap_or(v)
}

#[test]
fn bernsteins_approval_form_is_valid_on_the_wire_and_decides_the_plan_once() {
    let mut config = bernstein_core::config::Config::new(b"approval-audit-key".to_vec());
    config.tier = Tier::Standard;
    let mut p = Probe {
        session: Session::new(Server::new(config)),
        book: SchemaBook::default(),
    };
    let started = p.send(
        "tools/call",
        json!({"name": "bernstein_run", "arguments": {"goal": "the plan", "plan": true}}),
        json!({}),
    );
    let plan = payload(&started["result"]);
    let plan_id = plan["task_id"].as_str().unwrap().to_string();
    let call = json!({"name": "bernstein_approve", "arguments": {"task_id": plan_id}});
    let asked = p.send("tools/call", call.clone(), json!({"elicitation": {}}))["result"].clone();
    assert_eq!(asked["resultType"], "input_required");
    let question = &asked["inputRequests"]["approval"];
    assert_eq!(question["method"], "elicitation/create");
    let message = question["params"]["message"].as_str().unwrap();
    assert!(
        message.contains(plan["plan_hash"].as_str().unwrap()),
        "{message}"
    );
    // The same question, put to a handshake-era client, is a valid ElicitRequest.
    let request = json!({"jsonrpc": "2.0", "id": "q", "method": question["method"],
        "params": {"message": message, "requestedSchema": question["params"]["requestedSchema"]}});
    for revision in ["2025-06-18", "2025-11-25"] {
        p.book
            .check(revision, "ElicitRequest", &request)
            .unwrap_or_else(|e| panic!("{revision}: {e}"));
    }
    let mut retry = call.clone();
    retry["inputResponses"] =
        json!({"approval": {"action": "accept", "content": {"decision": "approve"}}});
    retry["requestState"] = asked["requestState"].clone();
    let done = p.send("tools/call", retry.clone(), json!({"elicitation": {}}))["result"].clone();
    assert_eq!(done["resultType"], "complete");
    assert_eq!(done["isError"], false, "{done}");
    let decided = payload(&done);
    assert_eq!(decided["decision"], "approve");
    assert_eq!(decided["plan_hash"], plan["plan_hash"]);
    // The same answer replayed: the plan moved on, so it is refused as stale and decides
    // nothing (the refused call's audit record is the only record).
    let position = p.session.snapshot.position.seq;
    let replayed = p.send("tools/call", retry, json!({"elicitation": {}}))["result"].clone();
    assert_eq!(replayed["isError"], true);
    assert_eq!(payload(&replayed)["error"], "approval_stale");
    assert_eq!(p.session.snapshot.position.seq, position + 1);
}
