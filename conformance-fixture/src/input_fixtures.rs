//! The suite's fixtures that ask the client for input mid-request (SEP-2322 multi round-trip
//! requests): tools and a prompt written against the engine's one input API
//! (`bernstein_core::protocol::input`). Each answers "ask this first" with
//! `ToolOutput::need_input` / `PromptTurn::NeedInput` and completes when run again with the
//! client's answers; the engine builds the `InputRequiredResult` and authenticates the
//! `requestState` (2026-07-28), or puts the questions to a handshake-era client as JSON-RPC
//! requests, and refuses a client without the capability. No state is kept here.

use bernstein_core::protocol::input::{Capability, Elicited, InputNeeded, InputRequest, Inputs};
use bernstein_core::protocol::registry::{PromptSpec, PromptTurn, ToolOutput};
use bernstein_domain::bound::{ToolContext, ToolSpec};
use serde_json::{Map, Value, json};

use crate::kit::{NO_EFFECTS, empty_schema, fixture_tool, user_text};

fn name_form(message: &str) -> InputRequest {
    InputRequest::form(message, json!({"name": {"type": "string"}}), &["name"])
}

fn confirm_form() -> InputRequest {
    InputRequest::form(
        "Please confirm",
        json!({"ok": {"type": "boolean"}}),
        &["ok"],
    )
}

/// The text a client answered in the field `field` of the elicitation under `key`: `Some` when
/// it answered at all (empty when it declined or left the field out).
fn field(inputs: &Inputs, key: &str, field: &str) -> Option<String> {
    Some(match inputs.elicited(key)? {
        Elicited::Accepted(content) => match content.get(field) {
            Some(Value::String(s)) => s.clone(),
            Some(other) => other.to_string(),
            None => String::new(),
        },
        Elicited::Declined | Elicited::Cancelled => String::new(),
    })
}

/// The text of a sampling answer (`CreateMessageResult.content`, a block or blocks).
fn sampled_text(response: &Value) -> String {
    let content = &response["content"];
    let blocks = match content {
        Value::Array(blocks) => blocks.iter().collect(),
        block => vec![block],
    };
    blocks
        .iter()
        .filter_map(|b| b["text"].as_str())
        .collect::<Vec<_>>()
        .join(" ")
}

fn root_uris(response: &Value) -> Vec<String> {
    response["roots"]
        .as_array()
        .map(|roots| {
            roots
                .iter()
                .filter_map(|r| r["uri"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

fn elicitation(ctx: &ToolContext<'_>, _: Value) -> ToolOutput {
    match field(ctx.input, "user_name", "name") {
        Some(name) => ToolOutput::ok(json!(format!("Hello, {name}!"))),
        None => ToolOutput::need_input(InputNeeded::one(
            "user_name",
            name_form("What is your name?"),
        )),
    }
}

fn sampling(ctx: &ToolContext<'_>, _: Value) -> ToolOutput {
    match ctx.input.response("capital_question") {
        Some(answer) => ToolOutput::ok(json!(format!("The model said: {}", sampled_text(answer)))),
        None => ToolOutput::need_input(InputNeeded::one(
            "capital_question",
            InputRequest::ask_model("What is the capital of France?", 100),
        )),
    }
}

fn list_roots(ctx: &ToolContext<'_>, _: Value) -> ToolOutput {
    match ctx.input.response("client_roots") {
        Some(answer) => ToolOutput::ok(json!({"roots": root_uris(answer)})),
        None => ToolOutput::need_input(InputNeeded::one("client_roots", InputRequest::ListRoots)),
    }
}

/// Asks for a confirmation with state `{"asked": "confirm"}` and completes, naming the state it
/// got back, once confirmed. The engine refuses a state it did not issue before this runs.
fn confirm_with_state(ctx: &ToolContext<'_>, _: Value) -> ToolOutput {
    let state = ctx.input.state.as_ref();
    match (field(ctx.input, "confirm", "ok"), state) {
        (Some(ok), Some(s)) if s["asked"] == "confirm" => {
            ToolOutput::ok(json!(format!("state-ok: confirmed ok={ok}")))
        }
        _ => ToolOutput::need_input(
            InputNeeded::one("confirm", confirm_form()).with_state(json!({"asked": "confirm"})),
        ),
    }
}

/// Elicitation, sampling and roots in one round; asks again for whatever is still missing.
fn multiple_inputs(ctx: &ToolContext<'_>, _: Value) -> ToolOutput {
    let inputs = ctx.input;
    let mut kept = match &inputs.state {
        Some(Value::Object(kept)) => kept.clone(),
        _ => Map::new(),
    };
    if let Some(name) = field(inputs, "user_name", "name") {
        kept.insert("name".into(), json!(name));
    }
    if let Some(answer) = inputs.response("greeting") {
        kept.insert("greeting".into(), json!(sampled_text(answer)));
    }
    if let Some(answer) = inputs.response("client_roots") {
        kept.insert("roots".into(), json!(root_uris(answer)));
    }
    let mut missing = Vec::new();
    if !kept.contains_key("name") {
        missing.push(("user_name".to_string(), name_form("What is your name?")));
    }
    if !kept.contains_key("greeting") {
        let ask = InputRequest::ask_model("Generate a greeting", 50);
        missing.push(("greeting".to_string(), ask));
    }
    if !kept.contains_key("roots") {
        missing.push(("client_roots".to_string(), InputRequest::ListRoots));
    }
    if missing.is_empty() {
        return ToolOutput::ok(Value::Object(kept));
    }
    ToolOutput::need_input(InputNeeded {
        requests: missing,
        state: Some(Value::Object(kept)),
        related_task: None,
    })
}

/// Three rounds: a name, then a colour (the name travels in the state), then the result.
fn multi_round(ctx: &ToolContext<'_>, _: Value) -> ToolOutput {
    let inputs = ctx.input;
    let kept_name = inputs.state.as_ref().and_then(|s| s["name"].as_str());
    match (kept_name, field(inputs, "step1", "name")) {
        (Some(name), _) => match field(inputs, "step2", "color") {
            Some(color) => ToolOutput::ok(json!(format!("{name}'s favourite colour is {color}"))),
            None => ask_colour(name),
        },
        (None, Some(name)) => ask_colour(&name),
        (None, None) => ToolOutput::need_input(
            InputNeeded::one("step1", name_form("Step 1: What is your name?"))
                .with_state(json!({"round": 1})),
        ),
    }
}

fn ask_colour(name: &str) -> ToolOutput {
    let colour = InputRequest::form(
        "Step 2: What is your favorite color?",
        json!({"color": {"type": "string"}}),
        &["color"],
    );
    ToolOutput::need_input(
        InputNeeded::one("step2", colour).with_state(json!({"round": 2, "name": name})),
    )
}

/// Asks only for what the client declared (elicitation, sampling, roots, in that order).
fn capabilities(ctx: &ToolContext<'_>, _: Value) -> ToolOutput {
    let inputs = ctx.input;
    if !inputs.responses.is_empty() {
        let keys: Vec<&str> = inputs.responses.iter().map(|(k, _)| k.as_str()).collect();
        return ToolOutput::ok(json!({"answered": keys}));
    }
    let mut asks = Vec::new();
    if inputs.can(Capability::Elicitation) {
        asks.push(("user_name".to_string(), name_form("What is your name?")));
    }
    if inputs.can(Capability::Sampling) {
        let ask = InputRequest::ask_model("Generate a greeting", 50);
        asks.push(("greeting".to_string(), ask));
    }
    if inputs.can(Capability::Roots) {
        asks.push(("client_roots".to_string(), InputRequest::ListRoots));
    }
    if asks.is_empty() {
        return ToolOutput::ok(json!("The client declared nothing it can be asked."));
    }
    ToolOutput::need_input(InputNeeded {
        requests: asks,
        state: None,
        related_task: None,
    })
}

/// Needs sampling whatever the client declared: the engine refuses a client without it
/// (`-32021`).
fn missing_capability(ctx: &ToolContext<'_>, _: Value) -> ToolOutput {
    match ctx.input.response("summary") {
        Some(answer) => ToolOutput::ok(json!(sampled_text(answer))),
        None => ToolOutput::need_input(InputNeeded::one(
            "summary",
            InputRequest::ask_model("Summarise the conformance run", 50),
        )),
    }
}

/// The one string argument `name` of the handshake-era scenarios' tools.
fn string_argument(name: &str) -> Value {
    json!({
        "type": "object",
        "properties": {name: {"type": "string"}},
        "required": [name],
        "additionalProperties": false,
    })
}

/// What the client answered to the elicitation under `key`, as the scenarios print it.
fn answered(inputs: &Inputs, key: &str) -> Option<String> {
    let r = inputs.response(key)?;
    Some(format!(
        "action={}, content={}",
        r["action"].as_str().unwrap_or_default(),
        r.get("content").cloned().unwrap_or(json!({}))
    ))
}

/// `test_sampling`: asks the client's model the `prompt` argument.
fn handshake_sampling(ctx: &ToolContext<'_>, args: Value) -> ToolOutput {
    match ctx.input.response("answer") {
        Some(answer) => ToolOutput::ok(json!(format!("LLM response: {}", sampled_text(answer)))),
        None => {
            let prompt = args["prompt"].as_str().unwrap_or_default();
            ToolOutput::need_input(InputNeeded::one(
                "answer",
                InputRequest::ask_model(prompt, 100),
            ))
        }
    }
}

/// `test_elicitation`: asks the person for a username and an email with the `message`.
fn handshake_elicitation(ctx: &ToolContext<'_>, args: Value) -> ToolOutput {
    if let Some(said) = answered(ctx.input, "user") {
        return ToolOutput::ok(json!(format!("User response: {said}")));
    }
    let fields = json!({
        "username": {"type": "string", "description": "User's response"},
        "email": {"type": "string", "description": "User's email address"},
    });
    let message = args["message"].as_str().unwrap_or_default();
    let form = InputRequest::form(message, fields, &["username", "email"]);
    ToolOutput::need_input(InputNeeded::one("user", form))
}

/// Asks `schema`'s form and reports the answer as the SEP-1034 and SEP-1330 scenarios expect.
fn ask_form(ctx: &ToolContext<'_>, message: &str, schema: Value) -> ToolOutput {
    if let Some(said) = answered(ctx.input, "form") {
        return ToolOutput::ok(json!(format!("Elicitation completed: {said}")));
    }
    let form = InputRequest::Elicit {
        message: message.into(),
        requested_schema: schema,
    };
    ToolOutput::need_input(InputNeeded::one("form", form))
}

/// `test_elicitation_sep1034_defaults`: a default for every primitive type.
fn defaults(ctx: &ToolContext<'_>, _: Value) -> ToolOutput {
    let schema = json!({"type": "object", "properties": {
        "name": {"type": "string", "default": "John Doe"},
        "age": {"type": "integer", "default": 30},
        "score": {"type": "number", "default": 95.5},
        "status": {"type": "string", "enum": ["active", "inactive", "pending"], "default": "active"},
        "verified": {"type": "boolean", "default": true},
    }});
    ask_form(ctx, "Please review your details", schema)
}

/// `test_elicitation_sep1330_enums`: the five enum shapes.
fn enums(ctx: &ToolContext<'_>, _: Value) -> ToolOutput {
    let schema = json!({"type": "object", "properties": {
        "untitledSingle": {"type": "string", "enum": ["option1", "option2", "option3"]},
        "titledSingle": {"type": "string", "oneOf": [
            {"const": "value1", "title": "First Option"},
            {"const": "value2", "title": "Second Option"},
            {"const": "value3", "title": "Third Option"},
        ]},
        "legacyEnum": {"type": "string", "enum": ["opt1", "opt2", "opt3"],
            "enumNames": ["Option One", "Option Two", "Option Three"]},
        "untitledMulti": {"type": "array", "items": {"type": "string", "enum": ["option1", "option2", "option3"]}},
        "titledMulti": {"type": "array", "items": {"anyOf": [
            {"const": "value1", "title": "First Choice"},
            {"const": "value2", "title": "Second Choice"},
            {"const": "value3", "title": "Third Choice"},
        ]}},
    }});
    ask_form(ctx, "Please pick your options", schema)
}

pub fn tools() -> Vec<ToolSpec> {
    let tool = |name, title, call| fixture_tool(name, title, NO_EFFECTS, empty_schema, call);
    vec![
        tool(
            "test_input_required_result_elicitation",
            "Input required: elicitation",
            elicitation,
        ),
        tool(
            "test_input_required_result_sampling",
            "Input required: sampling",
            sampling,
        ),
        tool(
            "test_input_required_result_list_roots",
            "Input required: roots",
            list_roots,
        ),
        tool(
            "test_input_required_result_request_state",
            "Input required: request state",
            confirm_with_state,
        ),
        tool(
            "test_input_required_result_tampered_state",
            "Input required: tampered state",
            confirm_with_state,
        ),
        tool(
            "test_input_required_result_multiple_inputs",
            "Input required: several inputs",
            multiple_inputs,
        ),
        tool(
            "test_input_required_result_multi_round",
            "Input required: several rounds",
            multi_round,
        ),
        tool(
            "test_input_required_result_capabilities",
            "Input required: declared capabilities",
            capabilities,
        ),
        tool(
            "test_missing_capability",
            "Needs sampling",
            missing_capability,
        ),
        tool(
            "test_streaming_elicitation",
            "Elicitation on the response",
            elicitation,
        ),
        // The handshake-era (2025-11-25) scenarios: the same API, asked as JSON-RPC requests.
        fixture_tool(
            "test_sampling",
            "Sampling",
            NO_EFFECTS,
            || string_argument("prompt"),
            handshake_sampling,
        ),
        fixture_tool(
            "test_elicitation",
            "Elicitation",
            NO_EFFECTS,
            || string_argument("message"),
            handshake_elicitation,
        ),
        tool(
            "test_elicitation_sep1034_defaults",
            "Elicitation with defaults",
            defaults,
        ),
        tool(
            "test_elicitation_sep1330_enums",
            "Elicitation with enums",
            enums,
        ),
    ]
}

/// `test_input_required_result_prompt`: asks for a context, then renders with it.
pub fn prompts() -> Vec<PromptSpec> {
    vec![PromptSpec {
        name: "test_input_required_result_prompt",
        title: "Prompt needing input",
        description: "A prompt that asks the client for its context before it renders",
        arguments: Vec::new(),
        render: |_, inputs| {
            Ok(match field(inputs, "user_context", "context") {
                Some(context) => {
                    PromptTurn::Messages(vec![user_text(format!("Context: {context}"))])
                }
                None => PromptTurn::NeedInput(InputNeeded::one(
                    "user_context",
                    InputRequest::form(
                        "What context should the prompt use?",
                        json!({"context": {"type": "string"}}),
                        &["context"],
                    ),
                )),
            })
        },
    }]
}
