use serde_json::json;

use super::*;
use crate::config::Config;
use crate::protocol::era::Revision;
use crate::protocol::ids::RequestIds;
use crate::protocol::jsonrpc::RpcError;
use crate::protocol::registry::{
    Completer, PromptArgument, PromptSpec, PromptTurn, ResourceContext, ResourceTemplateSpec,
};
use crate::protocol::unit_fold::{Catalog, ResourceSpec, Server, Snapshot};
use crate::time::Timestamp;

/// `completion/complete` with `params` on an empty ledger.
fn complete(s: &Server, params: Option<&Value>) -> Result<Value, RpcError> {
    let ids = RequestIds::of_request("completion/complete", params);
    let snapshot = Snapshot::default();
    let input = CallInput {
        params,
        revision: Revision::V2025_11_25,
        ids: &ids,
        snapshot: &snapshot,
        now: Timestamp(5),
        host: None,
        phase: crate::protocol::Phase::Settle,
        principal: None,
        input: &crate::protocol::input::NO_INPUT,
        task: None,
    };
    super::complete(s, &input)
}

fn colours(typed: &str, context: &Map<String, Value>) -> Vec<String> {
    // The context narrows the candidates: a "warm" mood offers warm colours only.
    let all: &[&str] = match context.get("mood").and_then(Value::as_str) {
        Some("warm") => &["red", "orange"],
        _ => &["red", "green", "blue", "orange"],
    };
    starting_with(all, typed)
}

fn many(_: &str, _: &Map<String, Value>) -> Vec<String> {
    (0..150).map(|i| format!("v{i:03}")).collect()
}

fn ids(
    _: &ResourceContext<'_, ()>,
    variable: &str,
    typed: &str,
    _: &Map<String, Value>,
) -> Candidates {
    match variable {
        "id" => Candidates::all(starting_with(&["100", "123", "200"], typed)),
        _ => Candidates::default(),
    }
}

fn catalog(with_completers: bool) -> Catalog {
    let arg = |name, complete| PromptArgument {
        name,
        description: "an argument",
        required: false,
        complete: if with_completers { complete } else { None },
    };
    Catalog {
        tools: Vec::new(),
        prompts: vec![PromptSpec {
            name: "paint",
            title: "Paint",
            description: "Paints.",
            arguments: vec![
                arg("colour", Some(colours as Completer)),
                arg("mood", None),
                arg("many", Some(many as Completer)),
            ],
            render: |_, _| Ok(PromptTurn::Messages(Vec::new())),
        }],
        resources: vec![ResourceSpec {
            uri: "test://static",
            name: "static",
            title: "Static",
            description: "A static resource.",
            mime_type: "text/plain",
            read: |_, _| Vec::new(),
        }],
        resource_templates: vec![ResourceTemplateSpec {
            uri_template: "test://items/{id}/{part}",
            name: "item",
            title: "Item",
            description: "An item part.",
            mime_type: "text/plain",
            read: |_, _, _| Ok(Default::default()),
            complete: if with_completers { Some(ids) } else { None },
        }],
        aliases: Vec::new(),
        instructions: |_| String::new(),
        capability_card: |_| Value::Null,
        tasks: None,
        tool_tasks: None,
        effects_in_descriptions: false,
        redact: crate::protocol::registry::no_redaction,
    }
}

fn server(with_completers: bool) -> Server {
    Server::with_catalog(Config::new(b"k".to_vec()), catalog(with_completers))
}

fn values(result: &Value) -> Vec<&str> {
    result["completion"]["values"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect()
}

fn prompt_ref(argument: &str, value: &str) -> Value {
    json!({"ref": {"type": "ref/prompt", "name": "paint"},
           "argument": {"name": argument, "value": value}})
}

#[test]
fn prompt_arguments_complete_with_context() {
    let s = server(true);
    assert!(s.catalog.has_completions());
    let r = complete(&s, Some(&prompt_ref("colour", "r"))).unwrap();
    assert_eq!(
        r,
        json!({"completion": {"values": ["red"], "total": 1, "hasMore": false}})
    );
    assert_eq!(
        values(&complete(&s, Some(&prompt_ref("colour", ""))).unwrap()),
        ["red", "green", "blue", "orange"]
    );
    let mut with_context = prompt_ref("colour", "");
    with_context["context"] = json!({"arguments": {"mood": "warm"}});
    assert_eq!(
        values(&complete(&s, Some(&with_context)).unwrap()),
        ["red", "orange"]
    );
    // An argument without a completer offers nothing.
    assert!(values(&complete(&s, Some(&prompt_ref("mood", "w"))).unwrap()).is_empty());
}

#[test]
fn replies_hold_at_most_a_hundred_values() {
    let r = complete(&server(true), Some(&prompt_ref("many", ""))).unwrap();
    assert_eq!(values(&r).len(), MAX_VALUES);
    assert_eq!(r["completion"]["total"], 150);
    assert_eq!(r["completion"]["hasMore"], true);
}

#[test]
fn template_variables_complete_and_static_resources_offer_nothing() {
    let s = server(true);
    let r = complete(
        &s,
        Some(
            &json!({"ref": {"type": "ref/resource", "uri": "test://items/{id}/{part}"},
                      "argument": {"name": "id", "value": "1"}}),
        ),
    )
    .unwrap();
    assert_eq!(values(&r), ["100", "123"]);
    let r = complete(
        &s,
        Some(
            &json!({"ref": {"type": "ref/resource", "uri": "test://static"},
                      "argument": {"name": "x", "value": ""}}),
        ),
    )
    .unwrap();
    assert!(values(&r).is_empty());
}

#[test]
fn unknown_references_and_malformed_params_are_invalid_params() {
    let s = server(true);
    let bad = [
        json!({"ref": {"type": "ref/prompt", "name": "nope"}, "argument": {"name": "a", "value": ""}}),
        json!({"ref": {"type": "ref/prompt", "name": "paint"}, "argument": {"name": "nope", "value": ""}}),
        json!({"ref": {"type": "ref/resource", "uri": "test://nope"}, "argument": {"name": "id", "value": ""}}),
        json!({"ref": {"type": "ref/resource", "uri": "test://items/{id}/{part}"},
               "argument": {"name": "nope", "value": ""}}),
        json!({"ref": {"type": "ref/tool", "name": "paint"}, "argument": {"name": "a", "value": ""}}),
        json!({"ref": {"type": "ref/prompt", "name": "paint"}}),
        json!({"ref": {"type": "ref/prompt", "name": "paint"}, "argument": {"name": "colour"}}),
        json!({"ref": {"type": "ref/prompt", "name": "paint"}, "argument": {"name": "colour", "value": 3}}),
        json!({"ref": "paint", "argument": {"name": "colour", "value": ""}}),
        json!({"ref": {"type": "ref/prompt", "name": "paint"}, "argument": {"name": "colour", "value": ""},
               "context": {"arguments": {"mood": 1}}}),
    ];
    for params in bad {
        assert_eq!(
            complete(&s, Some(&params)).unwrap_err().code,
            -32602,
            "{params}"
        );
    }
    assert_eq!(complete(&s, None).unwrap_err().code, -32602);
}

#[test]
fn the_capability_follows_the_completers() {
    assert!(!server(false).catalog.has_completions());
    assert!(server(true).catalog.has_completions());
}
