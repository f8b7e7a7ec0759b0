use super::*;
use crate::config::{Config, Tier};
use crate::ledger::Draft;
use crate::protocol::registry::{Arguments, Effects, TaskSupport, ToolError};
use crate::protocol::unit_fold::{Server, Snapshot, ToolContext, ToolSpec, tools_only};

fn object_schema() -> Value {
    json!({"type": "object", "properties": {"run": {"type": "string", "minLength": 1}}, "required": ["run"], "additionalProperties": false})
}

fn broken_schema() -> Value {
    json!({"type": "object", "properties": {"x": {"$ref": "#/$defs/Missing"}}})
}

fn write_run(ctx: &ToolContext<'_>, args: Value) -> ToolOutput {
    let run = args["run"].as_str().unwrap_or_default().to_string();
    let mut out =
        ToolOutput::ok(json!({"run": run, "span": ctx.span_id, "rev": ctx.spec_revision}));
    out.drafts
        .push(Draft::new(format!("run:{run}"), "t.step", json!({"n": 1})));
    out.drafts
        .push(Draft::new("backlog", "t.other", json!({"n": 2})));
    out.run_id = Some(run);
    out
}

/// `write_run`, naming a stream it read besides those it writes.
fn write_run_naming_reads(ctx: &ToolContext<'_>, args: Value) -> ToolOutput {
    ToolOutput {
        reads: Some(vec!["mailbox:T".into(), "backlog".into()]),
        ..write_run(ctx, args)
    }
}

fn read_run(_: &ToolContext<'_>, args: Value) -> ToolOutput {
    let mut out = ToolOutput::ok(json!({}));
    out.run_id = args["run"].as_str().map(str::to_string);
    out
}

crate::refusal_codes! {
    /// This fixture's refusals.
    enum Fixture {
        Nope = "nope",
    }
}

fn refuse_with_drafts(_: &ToolContext<'_>, _: Value) -> ToolOutput {
    let mut out = ToolOutput::refused(ToolError::new(Fixture::Nope, "refused", "don't"));
    out.drafts.push(Draft::new("backlog", "t.leak", json!({})));
    out
}

fn float_draft(_: &ToolContext<'_>, _: Value) -> ToolOutput {
    let mut out = ToolOutput::ok(json!({}));
    out.drafts
        .push(Draft::new("backlog", "t.float", json!({"x": 0.5})));
    out
}

fn spec(
    name: &'static str,
    input: fn() -> Value,
    call: fn(&ToolContext<'_>, Value) -> ToolOutput,
) -> ToolSpec {
    ToolSpec {
        name,
        title: name,
        description: "test tool",
        tier: Tier::Core,
        input_schema: input,
        output_schema: Some(object_schema),
        effects: Effects::default(),
        task_support: TaskSupport::Forbidden,
        arguments: Arguments::Schema,
        call,
    }
}

fn server(meter: bool) -> Server {
    let catalog = tools_only(vec![
        spec("broken", broken_schema, write_run),
        spec("float", object_schema, float_draft),
        spec("read", object_schema, read_run),
        spec("refuse", object_schema, refuse_with_drafts),
        spec("write", object_schema, write_run),
        spec("write-naming", object_schema, write_run_naming_reads),
    ]);
    let mut config = Config::new(b"k".to_vec());
    config.cost_meter = meter;
    Server::with_catalog(config, catalog)
}

fn call(server: &Server, snapshot: &Snapshot, params: Value) -> CallReply {
    let ids = RequestIds::of_request("tools/call", Some(&params));
    let input = CallInput {
        params: Some(&params),
        revision: Revision::V2025_11_25,
        ids: &ids,
        snapshot,
        now: Timestamp(5),
        host: Some(&[]),
        phase: crate::protocol::Phase::Live,
        principal: None,
        input: &crate::protocol::input::NO_INPUT,
        task: None,
    };
    let mut reply = call_tool(server, &input);
    // The result as a client reads it: the meter envelope filled in where the core left its
    // places, as rendering does (at latency 0).
    if let (Ok(result), Some(slot)) = (&mut reply.result, &reply.meter) {
        let id = crate::protocol::jsonrpc::Id::Int(1.into());
        let response = crate::protocol::Response {
            meter: Some(slot.clone()),
            ..crate::protocol::Response::result(&id, result.clone(), "s")
        };
        let sent: Value = serde_json::from_slice(&response.render(0)).unwrap();
        *result = sent["result"].clone();
    }
    reply
}

fn audit_body(reply: &CallReply) -> &Map<String, Value> {
    let last = reply.records.last().expect("an audit record");
    assert_eq!(
        (last.stream.as_str(), last.kind.as_str()),
        (AUDIT_STREAM, AUDIT_KIND)
    );
    last.body.as_object().unwrap()
}

#[test]
fn a_call_that_writes_its_run_binds_the_new_journal_head() {
    let snapshot = Snapshot::genesis();
    let params = json!({"name": "write", "arguments": {"run": "R"}});
    let reply = call(&server(true), &snapshot, params.clone());
    assert_eq!(reply.records.len(), 3);
    assert_eq!(
        reply.records.iter().map(|r| r.txn).collect::<Vec<_>>(),
        vec![[1, 3], [2, 3], [3, 3]]
    );
    let body = audit_body(&reply);
    assert_eq!(body["journal_head"], reply.records[0].hash.to_string());
    assert_eq!(body["run_id"], "R");
    assert_eq!(body["ok"], true);
    assert_eq!(body["ts"], 5);
    assert_eq!(body["spec_revision"], "2025-11-25");
    let ids = RequestIds::of_request("tools/call", Some(&params));
    assert_eq!(body["call_id"], ids.call_id);
    assert_eq!(body["span_id"], ids.span_id);
    assert_eq!(body["trace_id"], ids.trace_id);
    assert_eq!(
        body["args_digest"],
        digest_of_value(&json!({"run": "R"})).to_string()
    );
    // The records chain from the snapshot and apply cleanly.
    let mut s = snapshot.clone();
    for r in &reply.records {
        s.apply(r).unwrap();
    }
    assert_eq!(s.stream_head("run:R"), reply.records[0].hash);
}

#[test]
fn a_write_that_names_what_it_read_carries_those_heads_and_every_stream_it_writes() {
    let mut snapshot = Snapshot::genesis();
    let at = snapshot.position;
    let earlier = seal(
        &at,
        |_| Digest::ZERO,
        vec![Draft::new("backlog", "t.other", json!({"n": 0}))],
        b"k",
    );
    snapshot.apply(&earlier[0]).unwrap();
    let named = call(
        &server(false),
        &snapshot,
        json!({"name": "write-naming", "arguments": {"run": "R"}}),
    );
    // The named streams and the run it writes, each once, at their heads in the snapshot
    // (the zero digest for one that does not exist yet); never the audit chain.
    assert_eq!(
        named.read_heads,
        Some(vec![
            ("backlog".to_string(), earlier[0].hash),
            ("mailbox:T".to_string(), Digest::ZERO),
            ("run:R".to_string(), Digest::ZERO),
        ])
    );
    // A tool that names nothing read the whole ledger; a refusal stays where it was decided.
    let whole = call(
        &server(false),
        &snapshot,
        json!({"name": "write", "arguments": {"run": "R"}}),
    );
    assert_eq!(whole.read_heads, None);
    let refused = call(
        &server(false),
        &snapshot,
        json!({"name": "write-naming", "arguments": {}}),
    );
    assert_eq!((refused.records.len(), refused.read_heads), (1, None));
}

#[test]
fn a_call_that_only_reads_its_run_binds_the_snapshot_head() {
    let mut snapshot = Snapshot::genesis();
    for r in call(
        &server(true),
        &snapshot,
        json!({"name": "write", "arguments": {"run": "R"}}),
    )
    .records
    {
        snapshot.apply(&r).unwrap();
    }
    let reply = call(
        &server(true),
        &snapshot,
        json!({"name": "read", "arguments": {"run": "R"}}),
    );
    assert_eq!(reply.records.len(), 1);
    assert_eq!(reply.records[0].seq, snapshot.position.seq + 1);
    assert_eq!(reply.records[0].prev, snapshot.position.head);
    assert_eq!(
        audit_body(&reply)["journal_head"],
        snapshot.stream_head("run:R").to_string()
    );
    assert_ne!(snapshot.stream_head("run:R"), Digest::ZERO);
}

#[test]
fn refusals_append_only_their_audit_record() {
    let reply = call(
        &server(true),
        &Snapshot::genesis(),
        json!({"name": "refuse", "arguments": {"run": "R"}}),
    );
    assert_eq!(reply.records.len(), 1);
    assert_eq!(audit_body(&reply)["ok"], false);
    assert_eq!(audit_body(&reply)["error"], "nope");
    let result = reply.result.unwrap();
    assert_eq!(result["isError"], true);
    assert_eq!(reply.meter.as_ref().map(|m| m.ok), Some(false));
    let text: Value = serde_json::from_str(result["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(text["result"]["error"], "nope");
    assert_eq!(text["_meter"]["ok"], false);
    // Structured output carries successes only: a refusal would not match the outputSchema.
    assert!(result.get("structuredContent").is_none());
}

#[test]
fn without_the_meter_the_text_is_the_bare_payload() {
    let reply = call(
        &server(false),
        &Snapshot::genesis(),
        json!({"name": "write", "arguments": {"run": "R"}}),
    );
    assert!(reply.meter.is_none());
    let result = reply.result.unwrap();
    let text: Value = serde_json::from_str(result["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(text["run"], "R");
    assert_eq!(result["structuredContent"], text);
}

#[test]
fn handler_and_schema_bugs_are_internal_errors_that_still_audit() {
    let reply = call(
        &server(true),
        &Snapshot::genesis(),
        json!({"name": "float", "arguments": {"run": "R"}}),
    );
    assert_eq!(reply.result.as_ref().unwrap_err().code, -32603);
    assert_eq!(reply.records.len(), 1);
    assert_eq!(audit_body(&reply)["error"], "internal_error");
    let reply = call(
        &server(true),
        &Snapshot::genesis(),
        json!({"name": "broken", "arguments": {"x": 1}}),
    );
    let err = reply.result.unwrap_err();
    assert_eq!(err.code, -32603);
    assert!(err.message.contains("does not resolve"), "{}", err.message);
}

#[test]
fn floats_in_arguments_are_digested_not_refused() {
    let reply = call(
        &server(true),
        &Snapshot::genesis(),
        json!({"name": "write", "arguments": {"run": "R", "x": 1.5}}),
    );
    // additionalProperties: false refuses `x` (an isError result from 2025-11-25 on), but the
    // audit record is still sealed.
    let result = reply.result.as_ref().unwrap();
    assert_eq!(result["isError"], true);
    assert!(
        result["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("invalid_arguments")
    );
    assert_eq!(
        audit_body(&reply)["args_digest"],
        digest_of_value(&json!({"run": "R", "x": "1.5"})).to_string()
    );
}
