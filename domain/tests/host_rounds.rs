//! The host-request protocol through the whole engine: a tool that needs a file asks for it,
//! gets no response and no records until the runtime answers, then answers from the reply;
//! batches cannot reach the host, and a tool that never stops asking is cut off.

use bernstein_core::config::{Config, Tier};
use bernstein_core::ledger::Draft;
use bernstein_core::protocol::host::{HostFailure, HostReply, HostRequest, MAX_HOST_ROUNDS};
use bernstein_core::protocol::registry::{Arguments, Effects, TaskSupport, ToolOutput};
use bernstein_core::protocol::{Outcome, Phase, TransportFacts};
use bernstein_core::time::Timestamp;
use bernstein_domain::Snapshot;
use bernstein_domain::bound::{Catalog, ToolContext, ToolSpec};
use bernstein_domain::bound::{Input, Server};
use serde_json::{Value, json};

/// Reads `notes.txt`, then answers with its text and one journal record.
fn read_notes(ctx: &ToolContext<'_>, _: Value) -> ToolOutput {
    match ctx.host.first() {
        None => ToolOutput::ask(HostRequest::Read {
            path: "notes.txt".into(),
            max_bytes: 100,
            within: None,
        }),
        Some(HostReply::File { text }) => {
            let mut out = ToolOutput::ok(json!({ "text": text }));
            out.drafts
                .push(Draft::new("run:R", "t.read", json!({ "len": text.len() })));
            out.run_id = Some("R".into());
            out
        }
        Some(other) => ToolOutput::ok(json!({ "failed": format!("{other:?}") })),
    }
}

/// Never satisfied.
fn insatiable(_: &ToolContext<'_>, _: Value) -> ToolOutput {
    ToolOutput::ask(HostRequest::List {
        path: "x".into(),
        within: None,
    })
}

fn spec(name: &'static str, call: fn(&ToolContext<'_>, Value) -> ToolOutput) -> ToolSpec {
    ToolSpec {
        name,
        title: name,
        description: "test tool",
        tier: Tier::Core,
        input_schema: || json!({"type": "object"}),
        output_schema: None,
        effects: Effects::default(),
        task_support: TaskSupport::Forbidden,
        arguments: Arguments::Schema,
        call,
    }
}

fn server() -> Server {
    let mut config = Config::new(b"k".to_vec());
    config.cost_meter = false;
    let mut catalog = bernstein_domain::catalog();
    catalog.tools = vec![
        spec("insatiable", insatiable),
        spec("read_notes", read_notes),
    ];
    catalog.aliases = Vec::new();
    Server::with_catalog(config, Catalog { ..catalog })
}

fn serve(server: &Server, body: &str, host: &[HostReply]) -> Outcome {
    let snapshot = Snapshot::genesis();
    let facts = TransportFacts::stdio(Some("2025-11-25".into()));
    server.handle_round(
        &Input {
            bytes: body.as_bytes(),
            snapshot: &snapshot,
            now: Timestamp(1_790_000_000_000),
            transport: &facts,
        },
        host,
        Phase::Live,
    )
}

fn call(name: &str) -> String {
    json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": name, "arguments": {}}})
    .to_string()
}

fn text_of(out: &Outcome) -> Value {
    let msg = &out.response.as_ref().expect("a response").message;
    serde_json::from_str(msg["result"]["content"][0]["text"].as_str().unwrap()).unwrap()
}

#[test]
fn a_tool_asks_the_host_then_answers_from_the_reply() {
    let s = server();
    let first = serve(&s, &call("read_notes"), &[]);
    assert_eq!(
        first.host,
        Some(HostRequest::Read {
            path: "notes.txt".into(),
            max_bytes: 100,
            within: None,
        })
    );
    assert!(
        first.response.is_none(),
        "no answer before the host replied"
    );
    assert!(
        first.append.is_none(),
        "nothing recorded before the host replied"
    );

    let replies = [HostReply::File {
        text: "hello".into(),
    }];
    let second = serve(&s, &call("read_notes"), &replies);
    assert!(second.host.is_none());
    assert_eq!(text_of(&second), json!({"text": "hello"}));
    let kinds: Vec<&str> = second
        .append
        .as_ref()
        .unwrap()
        .records
        .iter()
        .map(|r| r.kind.as_str())
        .collect();
    assert_eq!(kinds, ["t.read", "mcp.stateless_call"]);

    // Same message, same replies: the same answer (a replay is deterministic).
    assert_eq!(serve(&s, &call("read_notes"), &replies), second);

    let failed = [HostReply::Failed(HostFailure::NotFound)];
    assert_eq!(
        text_of(&serve(&s, &call("read_notes"), &failed))["failed"],
        "Failed(NotFound)"
    );
}

#[test]
fn a_batch_cannot_reach_the_host() {
    let s = server();
    let snapshot = Snapshot::genesis();
    let facts = TransportFacts::stdio(Some("2025-03-26".into()));
    let body = format!("[{}]", call("read_notes"));
    let out = s.handle(&Input {
        bytes: body.as_bytes(),
        snapshot: &snapshot,
        now: Timestamp(1_790_000_000_000),
        transport: &facts,
    });
    assert!(out.host.is_none());
    let msg = out.response.unwrap().message;
    let text = msg[0]["result"]["content"][0]["text"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(text.contains("host_unavailable"), "{text}");
    assert_eq!(msg[0]["result"]["isError"], true);
}

#[test]
fn a_tool_that_never_stops_asking_is_refused() {
    let s = server();
    let mut replies = Vec::new();
    for _ in 0..MAX_HOST_ROUNDS {
        let out = serve(&s, &call("insatiable"), &replies);
        assert!(out.host.is_some());
        replies.push(HostReply::Listing { entries: vec![] });
    }
    let out = serve(&s, &call("insatiable"), &replies);
    assert!(out.host.is_none());
    assert_eq!(text_of(&out)["error"], "host_rounds_exceeded");
    // The refusal is audited like every other.
    assert_eq!(out.append.unwrap().records.len(), 1);
}
