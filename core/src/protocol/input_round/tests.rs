//! A 2026-07-28 request that asks for input, end to end through the dispatcher: the
//! `InputRequiredResult`, the retry that completes, every `requestState` refusal (with nothing
//! recorded) and the capability rule.

use serde_json::{Value, json};

use crate::config::Config;
use crate::ledger::Draft;
use crate::protocol::input::{Capability, Elicited, InputNeeded, InputRequest};
use crate::protocol::principal::{Principal, Scopes};
use crate::protocol::registry::{PromptSpec, PromptTurn, ToolOutput};
use crate::protocol::unit_fold::{Catalog, Input, Server, Snapshot, ToolContext, plain_tool};
use crate::protocol::{Outcome, TransportFacts, TransportKind};
use crate::time::Timestamp;

/// Asks for a confirmation (with state), records a decision once answered.
fn decide(ctx: &ToolContext<'_>, _: Value) -> ToolOutput {
    let kept = ctx.input.state.as_ref().map(|s| s["asked"].clone());
    match (ctx.input.elicited("confirm"), kept) {
        (Some(Elicited::Accepted(c)), Some(asked)) if asked == "confirm" => {
            let ok = c.get("ok").cloned();
            let mut out = ToolOutput::ok(json!({ "ok": ok }));
            out.drafts
                .push(Draft::new("decisions", "decided", json!({ "ok": ok })));
            out
        }
        (Some(_), Some(_)) => ToolOutput::ok(json!({"ok": false})),
        _ if !ctx.input.can(Capability::Elicitation) => ToolOutput::ok(json!("no elicitation")),
        _ => ToolOutput::need_input(
            InputNeeded::one(
                "confirm",
                InputRequest::form("Sure?", json!({"ok": {"type": "boolean"}}), &["ok"]),
            )
            .with_state(json!({"asked": "confirm"})),
        ),
    }
}

/// Needs sampling whatever the client declared.
fn sample(ctx: &ToolContext<'_>, _: Value) -> ToolOutput {
    match ctx.input.response("s") {
        Some(_) => ToolOutput::ok(json!("sampled")),
        None => ToolOutput::need_input(InputNeeded::one("s", InputRequest::ask_model("hi", 5))),
    }
}

fn server() -> Server {
    let mut tools = vec![plain_tool("decide"), plain_tool("sample")];
    tools[0].call = decide;
    tools[1].call = sample;
    let prompt = PromptSpec {
        name: "ctx",
        title: "Context",
        description: "asks for the client's roots",
        arguments: Vec::new(),
        render: |_, inputs| {
            Ok(match inputs.response("c") {
                Some(_) => PromptTurn::Messages(vec![
                    json!({"role": "user", "content": {"type": "text", "text": "ok"}}),
                ]),
                None => PromptTurn::NeedInput(InputNeeded::one("c", InputRequest::ListRoots)),
            })
        },
    };
    let mut config = Config::new(b"k".to_vec());
    config.input_expiry_ms = 1_000;
    Server::with_catalog(
        config,
        Catalog {
            tools,
            prompts: vec![prompt],
            ..Catalog::empty()
        },
    )
}

fn caps_all() -> Value {
    json!({"elicitation": {}, "sampling": {}, "roots": {}})
}

fn message(method: &str, mut params: Value, caps: &Value) -> Vec<u8> {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": caps,
    });
    json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": params})
        .to_string()
        .into_bytes()
}

fn serve(s: &Server, bytes: &[u8], now: u64, principal: Option<Principal>) -> Outcome {
    let snapshot = Snapshot::genesis();
    let facts = TransportFacts {
        kind: TransportKind::StreamableHttp,
        protocol_version: Some("2026-07-28".into()),
        loopback: true,
        log_level: None,
        principal,
    };
    s.handle(&Input {
        bytes,
        snapshot: &snapshot,
        now: Timestamp(now),
        transport: &facts,
    })
}

fn body(out: &Outcome) -> Value {
    let bytes = out.response.as_ref().expect("a response").render(0);
    serde_json::from_slice(&bytes).unwrap()
}

fn call(args: Value) -> Value {
    json!({"name": "decide", "arguments": args})
}

/// Round one of `decide`: its `requestState`.
fn first_round(s: &Server, principal: Option<Principal>) -> String {
    let bytes = message("tools/call", call(json!({})), &caps_all());
    let out = serve(s, &bytes, 10, principal);
    assert!(out.append.is_none(), "asking records nothing");
    let r = body(&out)["result"].clone();
    assert_eq!(r["resultType"], "input_required");
    assert_eq!(
        r["inputRequests"]["confirm"]["method"],
        "elicitation/create"
    );
    assert_eq!(r["inputRequests"]["confirm"]["params"]["mode"], "form");
    r["requestState"].as_str().unwrap().to_string()
}

fn retry(state: &str, args: Value) -> Value {
    let mut p = call(args);
    p["inputResponses"] = json!({"confirm": {"action": "accept", "content": {"ok": true}}});
    p["requestState"] = json!(state);
    p
}

/// The code and `data.reason` of a refused request, which must have recorded nothing.
fn refusal(out: &Outcome) -> (i64, String) {
    assert!(out.append.is_none(), "a refused retry records nothing");
    let e = body(out)["error"].clone();
    (
        e["code"].as_i64().unwrap(),
        e["data"]["reason"].as_str().unwrap_or_default().to_string(),
    )
}

#[test]
fn a_retry_with_the_answer_and_the_state_completes_and_records() {
    let s = server();
    let state = first_round(&s, None);
    let bytes = message("tools/call", retry(&state, json!({})), &caps_all());
    let out = serve(&s, &bytes, 20, None);
    let r = body(&out)["result"].clone();
    assert_eq!(r["resultType"], "complete", "{r}");
    assert_eq!(r["isError"], false);
    let records = &out.append.as_ref().expect("the answer is recorded").records;
    assert!(records.iter().any(|rec| rec.kind == "decided"));
}

#[test]
fn tampered_expired_and_replayed_states_are_refused_with_nothing_written() {
    let s = server();
    let state = first_round(&s, None);
    let at = |p: Value, now: u64| {
        refusal(&serve(
            &s,
            &message("tools/call", p, &caps_all()),
            now,
            None,
        ))
    };
    let forged = (-32602, "request_state_forged".to_string());
    let tampered = format!("{state}-TAMPERED");
    assert_eq!(at(retry(&tampered, json!({})), 20), forged);
    assert_eq!(at(retry("v1.e30.00", json!({})), 20), forged);
    assert_eq!(
        at(retry("nonsense", json!({})), 20),
        (-32602, "request_state_malformed".into())
    );
    // Issued at 10 with an expiry of 1 s.
    assert_eq!(
        at(retry(&state, json!({})), 1_010),
        (-32602, "request_state_expired".into())
    );
    // Replayed for other arguments, and for another tool.
    let other_request = (-32602, "request_state_other_request".to_string());
    assert_eq!(at(retry(&state, json!({"x": 1})), 20), other_request);
    let mut other = retry(&state, json!({}));
    other["name"] = json!("sample");
    assert_eq!(at(other, 20), other_request);
    // Not a string.
    let mut p = retry(&state, json!({}));
    p["requestState"] = json!(5);
    assert_eq!(at(p, 20).0, -32602);
}

#[test]
fn a_state_issued_to_one_principal_is_refused_for_another() {
    let s = server();
    let who = |sub: &str| Principal {
        iss: "https://idp".into(),
        sub: sub.into(),
        scopes: Scopes {
            read: true,
            write: true,
        },
    };
    let state = first_round(&s, Some(who("alice")));
    let bytes = message("tools/call", retry(&state, json!({})), &caps_all());
    let other_principal = (-32602, "request_state_other_principal".to_string());
    assert_eq!(
        refusal(&serve(&s, &bytes, 20, Some(who("bob")))),
        other_principal
    );
    assert_eq!(refusal(&serve(&s, &bytes, 20, None)), other_principal);
    let out = serve(&s, &bytes, 20, Some(who("alice")));
    assert_eq!(body(&out)["result"]["resultType"], "complete");
}

#[test]
fn answers_count_only_with_their_state_and_must_be_results() {
    let s = server();
    // Without a requestState the answers are ignored: the tool asks again.
    let mut p = call(json!({}));
    p["inputResponses"] = json!({"confirm": {"action": "accept", "content": {"ok": true}}});
    let out = serve(&s, &message("tools/call", p, &caps_all()), 20, None);
    assert_eq!(body(&out)["result"]["resultType"], "input_required");
    // Not an object, or a value that is no result: refused.
    for responses in [json!(null), json!([1]), json!({"confirm": 12345})] {
        let mut p = call(json!({}));
        p["inputResponses"] = responses;
        let out = serve(&s, &message("tools/call", p, &caps_all()), 20, None);
        assert_eq!(refusal(&out).0, -32602);
    }
    // An answer that does not fit its request: refused, naming the field.
    let state = first_round(&s, None);
    let mut p = retry(&state, json!({}));
    p["inputResponses"]["confirm"] = json!({"action": "maybe"});
    let out = serve(&s, &message("tools/call", p, &caps_all()), 20, None);
    assert!(out.append.is_none());
    let e = body(&out)["error"].clone();
    assert_eq!(e["code"], -32602);
    assert_eq!(e["data"]["field"], "params.inputResponses.confirm");
    // Keys the state did not ask for are ignored.
    let mut p = retry(&state, json!({}));
    p["inputResponses"]["extra"] = json!({"action": "accept"});
    let out = serve(&s, &message("tools/call", p, &caps_all()), 20, None);
    assert_eq!(body(&out)["result"]["resultType"], "complete");
}

#[test]
fn an_undeclared_capability_is_never_asked_for() {
    let s = server();
    // The handler sees the client cannot elicit and falls back.
    let bytes = message("tools/call", call(json!({})), &json!({"sampling": {}}));
    let r = body(&serve(&s, &bytes, 1, None))["result"].clone();
    assert_eq!(r["resultType"], "complete");
    let text = r["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("no elicitation"), "{text}");
    // A handler that asks anyway: -32021 naming the capability, nothing recorded.
    let sample = json!({"name": "sample", "arguments": {}});
    let bytes = message("tools/call", sample.clone(), &json!({"elicitation": {}}));
    let out = serve(&s, &bytes, 1, None);
    assert!(out.append.is_none());
    let e = body(&out)["error"].clone();
    assert_eq!(e["code"], -32021);
    assert_eq!(e["data"]["requiredCapabilities"], json!({"sampling": {}}));
    let bytes = message("tools/call", sample, &json!({"sampling": {}}));
    let r = body(&serve(&s, &bytes, 1, None))["result"].clone();
    assert_eq!(r["inputRequests"]["s"]["method"], "sampling/createMessage");
}

#[test]
fn a_handshake_era_client_that_declared_nothing_is_never_asked() {
    let s = server();
    let bytes = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "sample", "arguments": {}}})
    .to_string();
    let snapshot = Snapshot::genesis();
    let facts = TransportFacts::stdio(Some("2025-11-25".into()));
    let out = s.handle(&Input {
        bytes: bytes.as_bytes(),
        snapshot: &snapshot,
        now: Timestamp(1),
        transport: &facts,
    });
    assert_eq!(body(&out)["error"]["code"], -32021);
}

#[test]
fn a_handshake_era_call_hands_its_questions_to_the_engine_and_resumes_with_the_answers() {
    use crate::protocol::input::{Answers, ClientCaps, ClientSide, Inputs, Unanswered};
    use crate::protocol::{MessageInput, Phase};
    let s = server();
    let message = s.read_message(
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "decide", "arguments": {}}})
        .to_string(),
    );
    let snapshot = Snapshot::genesis();
    let facts = TransportFacts::stdio(Some("2025-11-25".into()));
    let caps = ClientCaps::of_declared(Some(&json!({"elicitation": {}})));
    let serve = |answers: Option<&Answers>| {
        crate::protocol::dispatch::serve(
            &s,
            &MessageInput {
                message: message.view(),
                snapshot: &snapshot,
                now: Timestamp(1),
                transport: &facts,
                client: ClientSide { caps, answers },
            },
            Some(&[]),
            Phase::Live,
            None,
        )
    };
    let asked = serve(None);
    assert!(asked.response.is_none() && asked.append.is_none());
    let needed = asked.ask.expect("questions for the engine");
    assert_eq!(needed.requests[0].0, "confirm");
    let given = Answers::Given(Inputs {
        responses: vec![(
            "confirm".into(),
            json!({"action": "accept", "content": {"ok": true}}),
        )],
        state: needed.state.clone(),
        ..Inputs::default()
    });
    let done = serve(Some(&given));
    assert_eq!(body(&done)["result"]["isError"], false);
    assert!(done.append.is_some());
    let expired = serve(Some(&Answers::Unanswered(Unanswered::Expired)));
    assert!(expired.append.is_none());
    assert_eq!(body(&expired)["error"]["data"]["reason"], "input_expired");
}

#[test]
fn a_prompt_asks_and_renders_with_the_answer() {
    let s = server();
    let get = json!({"name": "ctx"});
    let out = serve(
        &s,
        &message("prompts/get", get.clone(), &caps_all()),
        1,
        None,
    );
    let asked = body(&out)["result"].clone();
    assert_eq!(asked["resultType"], "input_required");
    assert_eq!(asked["inputRequests"]["c"]["method"], "roots/list");
    let mut p = get.clone();
    p["inputResponses"] = json!({"c": {"roots": [{"uri": "file:///w"}]}});
    p["requestState"] = asked["requestState"].clone();
    let out = serve(&s, &message("prompts/get", p, &caps_all()), 2, None);
    let r = body(&out)["result"].clone();
    assert_eq!(r["resultType"], "complete");
    assert_eq!(r["messages"][0]["content"]["text"], "ok");
    // The prompt's state replayed on a tool call is another request's.
    let state = asked["requestState"].as_str().unwrap();
    let bytes = message("tools/call", retry(state, json!({})), &caps_all());
    assert_eq!(
        refusal(&serve(&s, &bytes, 2, None)),
        (-32602, "request_state_other_request".into())
    );
}
