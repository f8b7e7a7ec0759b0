//! The official MCP conformance suite's fixtures (`test_simple_text`, `test://static-text`,
//! `test_simple_prompt`, ...) expressed as an ordinary [`Catalog`], the same interface the
//! Bernstein domain uses. The engine (`bernstein_core::protocol`) serves them unchanged: this
//! module never builds a JSON-RPC message, never touches the wire, and holds no state.
//!
//! Progress steps (`ToolOutput::progress`), resource templates, completers and header-bound
//! tool parameters (`x-mcp-header`) are ordinary catalogue declarations too. What a stateless
//! server cannot do (server-initiated requests, log pushes) is registered anyway where a name is
//! involved, so the suite reports the precise missing behaviour instead of "not found";
//! tests/conformance/expected-failures.txt lists those scenarios with the reason. The fixtures
//! that ask the client for input are in [`crate::input_fixtures`], the tasks extension's in
//! [`crate::task_fixtures`] (served by the engine's own task support, `Catalog::tool_tasks`).

use bernstein_core::Config;
use bernstein_core::protocol::completion::starting_with;
use bernstein_core::protocol::logging::{LogLevel, LogMessage};
use bernstein_core::protocol::registry::{
    Candidates, Progress, PromptArgument, PromptSpec, PromptTurn, TemplatedRead, ToolError,
    ToolOutput,
};
use bernstein_domain::bound::{Catalog, ResourceSpec, ResourceTemplateSpec, ToolContext, ToolSpec};

use crate::kit::{NO_EFFECTS, empty_schema, fixture_tool, user_text};
use serde_json::{Map, Value, json};

/// A 1x1 transparent PNG, base64.
pub const PNG_1X1: &str =
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=";
/// A 44-byte WAV header with no samples, base64.
pub const WAV_EMPTY: &str = "UklGRiQAAABXQVZFZm10IBAAAAABAAEAQB8AAIA+AAACABAAZGF0YQAAAAA=";

bernstein_core::refusal_codes! {
    /// The fixtures' one refusal.
    enum Fixture {
        TestError = "test_error",
    }
}

/// The JSON Schema 2020-12 input schema of `json_schema_2020_12_tool`, as the suite expects
/// it back from `tools/list` (keywords preserved).
pub fn json_schema_2020_12() -> Value {
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "$defs": {
            "address": {
                "$anchor": "addressDef",
                "type": "object",
                "properties": {"street": {"type": "string"}, "city": {"type": "string"}}
            }
        },
        "properties": {
            "name": {"type": "string"},
            "address": {"$ref": "#/$defs/address"},
            "contactMethod": {"type": "string", "enum": ["phone", "email"]},
            "phone": {"type": "string"},
            "email": {"type": "string"}
        },
        "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
        "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
        "then": {"required": ["phone"]},
        "else": {"required": ["email"]},
        "additionalProperties": false
    })
}

/// The input schema of `test_header_params`: two arguments mirrored into `Mcp-Param-*` headers
/// (SEP-2243) and one that is not.
pub fn header_params_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "region": {"type": "string", "description": "Routing region", "x-mcp-header": "Region"},
            "priority": {"type": "integer", "description": "Routing priority", "x-mcp-header": "Priority"},
            "note": {"type": "string", "description": "Free text, not mirrored"}
        },
        "additionalProperties": false
    })
}

/// `test_tool_with_progress`: three steps, 0/100, 50/100 and 100/100, before its result.
fn with_progress(_: &ToolContext<'_>, _: Value) -> ToolOutput {
    let mut out = ToolOutput::ok(json!("Progress test completed: 3 steps reported."));
    out.progress = [0, 50, 100]
        .into_iter()
        .map(|progress| Progress {
            progress,
            total: Some(100),
            message: Some(format!("step {progress}/100")),
        })
        .collect();
    out
}

/// `test_tool_with_logging` and `test_logging_tool`: three `info` messages before the result,
/// which the engine sends only at a level the client asked for.
fn with_logging(_: &ToolContext<'_>, _: Value) -> ToolOutput {
    let mut out = ToolOutput::ok(json!("Logging test completed: 3 messages logged."));
    out.logs = [
        "Tool execution started",
        "Tool processing data",
        "Tool execution completed",
    ]
    .into_iter()
    .map(|text| LogMessage {
        level: LogLevel::Info,
        logger: "conformance-fixture",
        data: json!(text),
    })
    .collect();
    out
}

fn tools() -> Vec<ToolSpec> {
    let mut tools = crate::input_fixtures::tools();
    tools.extend(crate::task_fixtures::tools());
    tools.extend([
        fixture_tool(
            "test_simple_text",
            "Simple text",
            NO_EFFECTS,
            empty_schema,
            |_, _| ToolOutput::ok(json!("This is a simple text response for testing.")),
        ),
        fixture_tool(
            "test_error_handling",
            "Error handling",
            NO_EFFECTS,
            empty_schema,
            |_, _| {
                ToolOutput::refused(ToolError::new(
                    Fixture::TestError,
                    "This tool intentionally returns an error for testing",
                    "nothing to fix: the conformance suite expects this refusal",
                ))
            },
        ),
        // The next four return content blocks of their own (ToolOutput::content).
        fixture_tool(
            "test_image_content",
            "Image content",
            NO_EFFECTS,
            empty_schema,
            |_, _| blocks(vec![image()]),
        ),
        fixture_tool(
            "test_audio_content",
            "Audio content",
            NO_EFFECTS,
            empty_schema,
            |_, _| {
                blocks(vec![
                    json!({"type": "audio", "mimeType": "audio/wav", "data": WAV_EMPTY}),
                ])
            },
        ),
        fixture_tool(
            "test_embedded_resource",
            "Embedded resource",
            NO_EFFECTS,
            empty_schema,
            |_, _| blocks(vec![embedded_resource()]),
        ),
        fixture_tool(
            "test_multiple_content_types",
            "Mixed content",
            NO_EFFECTS,
            empty_schema,
            |_, _| {
                blocks(vec![
                    json!({"type": "text", "text": "Multiple content types test:"}),
                    image(),
                    embedded_resource(),
                ])
            },
        ),
        fixture_tool(
            "test_tool_with_progress",
            "With progress",
            NO_EFFECTS,
            empty_schema,
            with_progress,
        ),
        fixture_tool(
            "test_tool_with_logging",
            "With logging",
            NO_EFFECTS,
            empty_schema,
            with_logging,
        ),
        // The stateless suite's diagnostic name for the same tool (SEP-2575: no message
        // without a level asked).
        fixture_tool(
            "test_logging_tool",
            "Logging diagnostic",
            NO_EFFECTS,
            empty_schema,
            with_logging,
        ),
        fixture_tool(
            "test_header_params",
            "Header-bound parameters",
            NO_EFFECTS,
            header_params_schema,
            |_, args| ToolOutput::ok(json!({"received": args})),
        ),
        fixture_tool(
            "json_schema_2020_12_tool",
            "JSON Schema 2020-12",
            NO_EFFECTS,
            json_schema_2020_12,
            |_, args| ToolOutput::ok(json!({"received": args})),
        ),
    ]);
    tools
}

/// A successful result made of `content` blocks; the payload names their types.
fn blocks(content: Vec<Value>) -> ToolOutput {
    let types: Vec<Value> = content.iter().map(|b| b["type"].clone()).collect();
    let mut out = ToolOutput::ok(json!({ "content_types": types }));
    out.content = Some(content);
    out
}

fn image() -> Value {
    json!({"type": "image", "mimeType": "image/png", "data": PNG_1X1})
}

fn embedded_resource() -> Value {
    json!({
        "type": "resource",
        "resource": {
            "uri": "test://embedded-resource",
            "mimeType": "text/plain",
            "text": "This is an embedded resource content."
        }
    })
}

fn arg<'a>(args: &'a Map<String, Value>, name: &str) -> Result<&'a str, String> {
    args.get(name)
        .and_then(Value::as_str)
        .ok_or_else(|| format!("argument {name} is required"))
}

fn prompts() -> Vec<PromptSpec> {
    let mut prompts = crate::input_fixtures::prompts();
    prompts.extend([
        PromptSpec {
            name: "test_simple_prompt",
            title: "Simple prompt",
            description: "A simple prompt without arguments",
            arguments: Vec::new(),
            render: |_, _| {
                Ok(PromptTurn::Messages(vec![user_text(
                    "This is a simple prompt for testing.".into(),
                )]))
            },
        },
        PromptSpec {
            name: "test_prompt_with_arguments",
            title: "Prompt with arguments",
            description: "A prompt with required arguments",
            arguments: vec![
                PromptArgument {
                    name: "arg1",
                    description: "First test argument",
                    required: true,
                    complete: Some(|typed, _| {
                        starting_with(&["test", "testing", "test-value", "other"], typed)
                    }),
                },
                PromptArgument {
                    name: "arg2",
                    description: "Second test argument",
                    required: true,
                    complete: None,
                },
            ],
            render: |args, _| {
                let (a, b) = (arg(args, "arg1")?, arg(args, "arg2")?);
                Ok(PromptTurn::Messages(vec![user_text(format!(
                    "Prompt with arguments: arg1='{a}', arg2='{b}'"
                ))]))
            },
        },
        PromptSpec {
            name: "test_prompt_with_embedded_resource",
            title: "Prompt with embedded resource",
            description: "A prompt that includes an embedded resource",
            arguments: vec![PromptArgument {
                name: "resourceUri",
                description: "URI of the resource to embed",
                required: true,
                complete: None,
            }],
            render: |args, _| {
                let uri = arg(args, "resourceUri")?;
                Ok(PromptTurn::Messages(vec![
                    json!({"role": "user", "content": {"type": "resource", "resource": {
                        "uri": uri, "mimeType": "text/plain", "text": "Embedded resource content for testing."
                    }}}),
                    user_text("Please process the embedded resource above.".into()),
                ]))
            },
        },
        PromptSpec {
            name: "test_prompt_with_image",
            title: "Prompt with image",
            description: "A prompt that includes image content",
            arguments: Vec::new(),
            render: |_, _| {
                Ok(PromptTurn::Messages(vec![
                    json!({"role": "user", "content": {"type": "image", "mimeType": "image/png", "data": PNG_1X1}}),
                    user_text("Please analyze the image above.".into()),
                ]))
            },
        },
    ]);
    prompts
}

fn resources() -> Vec<ResourceSpec> {
    vec![
        ResourceSpec {
            uri: "test://static-text",
            name: "static-text",
            title: "Static text",
            description: "A static text resource for testing",
            mime_type: "text/plain",
            read: |_, _| {
                vec![
                    json!({"uri": "test://static-text", "mimeType": "text/plain",
                            "text": "This is the content of the static text resource."}),
                ]
            },
        },
        ResourceSpec {
            uri: "test://static-binary",
            name: "static-binary",
            title: "Static binary",
            description: "A static binary resource (image) for testing",
            mime_type: "image/png",
            read: |_, _| {
                vec![
                    json!({"uri": "test://static-binary", "mimeType": "image/png", "blob": PNG_1X1}),
                ]
            },
        },
        ResourceSpec {
            uri: "test://watched-resource",
            name: "watched-resource",
            title: "Watched resource",
            description: "A resource for subscription tests (this stateless server never pushes updates)",
            mime_type: "text/plain",
            read: |_, _| {
                vec![
                    json!({"uri": "test://watched-resource", "mimeType": "text/plain",
                            "text": "Watched resource content."}),
                ]
            },
        },
    ]
}

/// `test://template/{id}/data`: a JSON document naming its id.
fn templates() -> Vec<ResourceTemplateSpec> {
    vec![ResourceTemplateSpec {
        uri_template: "test://template/{id}/data",
        name: "template-data",
        title: "Template data",
        description: "A resource template with an id parameter",
        mime_type: "application/json",
        read: |_, uri, vars| {
            let id = vars.get("id").and_then(Value::as_str).ok_or("no id")?;
            let text =
                json!({"id": id, "templateTest": true, "data": format!("Data for ID: {id}")});
            Ok(TemplatedRead {
                contents: vec![
                    json!({"uri": uri, "mimeType": "application/json", "text": text.to_string()}),
                ],
                ..TemplatedRead::default()
            })
        },
        complete: Some(|_, variable, typed, _| match variable {
            "id" => Candidates::all(starting_with(&["123", "456", "789"], typed)),
            _ => Candidates::default(),
        }),
    }]
}

/// The fixture catalogue served by the conformance fixture server.
pub fn catalog() -> Catalog {
    Catalog {
        tools: tools(),
        prompts: prompts(),
        resources: resources(),
        resource_templates: templates(),
        aliases: Vec::new(),
        instructions: |_: &Config| {
            "Conformance fixture server for the official MCP conformance suite; test-only.".into()
        },
        capability_card: |c: &Config| json!({"fixture": "mcp-conformance", "tier": c.tier.as_str()}),
        tasks: None,
        // The engine's own tasks for the task-capable fixtures (`crate::task_fixtures`).
        tool_tasks: Some(bernstein_domain::Projection::tool_tasks),
        effects_in_descriptions: false,
        redact: bernstein_core::protocol::registry::no_redaction,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_fixtures_present() {
        let c = catalog();
        let mut names: Vec<&str> = c.tools.iter().map(|t| t.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), c.tools.len());
        assert!(c.tool("test_simple_text").is_some());
        assert!(c.prompt("test_simple_prompt").is_some());
        assert!(c.tool("test_input_required_result_multi_round").is_some());
        assert!(c.prompt("test_input_required_result_prompt").is_some());
        assert!(c.resource("test://static-text").is_some());
        assert!(c.has_completions());
    }

    #[test]
    fn the_progress_tool_sends_three_increasing_steps_before_its_result() {
        use bernstein_core::{Timestamp, TransportFacts};
        use bernstein_domain::{Input, Server, Snapshot};
        let server = Server::with_catalog(Config::new(b"k".to_vec()), catalog());
        let snapshot = Snapshot::genesis();
        let facts = TransportFacts::stdio(Some("2025-11-25".into()));
        let serve = |meta: Value| {
            let message = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                "params": {"name": "test_tool_with_progress", "arguments": {}, "_meta": meta}});
            let bytes = message.to_string();
            server.handle(&Input {
                bytes: bytes.as_bytes(),
                snapshot: &snapshot,
                now: Timestamp(1),
                transport: &facts,
            })
        };
        let out = serve(json!({"progressToken": "p"}));
        let steps: Vec<Value> = out
            .notifications
            .iter()
            .map(|n| serde_json::from_slice::<Value>(n).unwrap()["params"].clone())
            .collect();
        let progress: Vec<&Value> = steps.iter().map(|p| &p["progress"]).collect();
        assert_eq!(progress, [&json!(0), &json!(50), &json!(100)]);
        assert!(
            steps
                .iter()
                .all(|p| p["total"] == 100 && p["progressToken"] == "p")
        );
        assert!(out.response.is_some());
        assert!(serve(json!({})).notifications.is_empty());
    }

    #[test]
    fn header_bound_parameters_are_valid_annotations() {
        use bernstein_core::transport::http::param_headers::scan;
        let params = scan(&header_params_schema()).unwrap();
        let headers: Vec<&str> = params.iter().map(|p| p.header.as_str()).collect();
        assert_eq!(headers, ["Mcp-Param-Priority", "Mcp-Param-Region"]);
        for tool in catalog().tools {
            assert!(scan(&(tool.input_schema)()).is_ok(), "{}", tool.name);
        }
    }

    #[test]
    fn the_template_reads_its_id_back() {
        let c = catalog();
        let t = &c.resource_templates[0];
        let uri = "test://template/123/data";
        let vars =
            bernstein_core::protocol::resource_templates::match_uri(t.uri_template, uri).unwrap();
        let config = Config::new(b"k".to_vec());
        let snapshot = bernstein_domain::Snapshot::default();
        let ctx = bernstein_domain::bound::ResourceContext {
            snapshot: &snapshot,
            config: &config,
            now: bernstein_core::time::Timestamp(0),
            spec_revision: "2025-11-25",
        };
        let contents = (t.read)(&ctx, uri, &vars).unwrap().contents;
        assert_eq!(contents[0]["uri"], uri);
        assert!(contents[0]["text"].as_str().unwrap().contains("123"));
    }

    #[test]
    fn prompts_render_with_their_arguments() {
        let c = catalog();
        let p = c.prompt("test_prompt_with_arguments").unwrap();
        let mut args = Map::new();
        args.insert("arg1".into(), json!("a"));
        let none = &bernstein_core::protocol::input::NO_INPUT;
        assert!((p.render)(&args, none).is_err());
        args.insert("arg2".into(), json!("b"));
        let Ok(PromptTurn::Messages(msgs)) = (p.render)(&args, none) else {
            panic!("the prompt renders")
        };
        assert!(
            msgs[0]["content"]["text"]
                .as_str()
                .unwrap()
                .contains("arg2='b'")
        );
    }
}
