//! Typed results, one type per method answer, each field's wire name written here once.
//!
//! Handlers build these and turn them into JSON with [`to_value`]; era decoration
//! ([`super::super::decorate`]) adds the stateless era's fields afterwards. Objects in serde_json
//! are sorted maps, so field order here never changes the bytes on the wire. The tool-call
//! result is on the hot path and moves its payload into JSON instead of copying it, so it
//! converts by hand ([`CallToolResult::into_value`]).

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::{Map, Value};

/// The JSON of a result type. Results hold only string-keyed maps, so this cannot fail.
pub fn to_value<T: Serialize>(result: &T) -> Value {
    serde_json::to_value(result).unwrap_or(Value::Null)
}

/// An object with no fields (`{}`): a capability that is on and has no options.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct Empty {}

/// `Implementation`: who answers.
#[derive(Debug, Serialize)]
pub struct Implementation<'a> {
    pub name: &'a str,
    pub version: &'a str,
}

/// A capability with only `listChanged`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ListChanged {
    pub list_changed: bool,
}

/// The `resources` capability.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourcesCapability {
    pub subscribe: bool,
    pub list_changed: bool,
}

/// The 2025-11-25 `tasks` capability: list, cancel, and tasks for `tools/call`.
#[derive(Debug, Default, Serialize)]
pub struct TasksCapability {
    pub list: Empty,
    pub cancel: Empty,
    pub requests: TaskRequests,
}

/// Which requests may run as tasks.
#[derive(Debug, Default, Serialize)]
pub struct TaskRequests {
    pub tools: ToolTaskRequests,
}

/// `tools/call` may run as a task.
#[derive(Debug, Default, Serialize)]
pub struct ToolTaskRequests {
    pub call: Empty,
}

/// `ServerCapabilities`: what this server offers in one era.
#[derive(Debug, Serialize)]
pub struct ServerCapabilities {
    pub tools: ListChanged,
    pub prompts: ListChanged,
    pub resources: ResourcesCapability,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub completions: Option<Empty>,
    /// `notifications/message` at a level the client asks for.
    pub logging: Empty,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tasks: Option<TasksCapability>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub extensions: Option<BTreeMap<&'static str, Empty>>,
}

/// What `initialize` and `server/discover` both tell about the server beyond capabilities.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Description {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub capability_card: Option<Value>,
}

/// `InitializeResult` (handshake era).
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct InitializeResult<'a> {
    pub protocol_version: &'a str,
    pub capabilities: ServerCapabilities,
    pub server_info: Implementation<'a>,
    #[serde(flatten)]
    pub description: Description,
}

/// `DiscoverResult` (stateless era).
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DiscoverResult<'a> {
    pub supported_versions: Vec<&'a str>,
    pub capabilities: ServerCapabilities,
    #[serde(flatten)]
    pub description: Description,
}

/// A tool's `annotations`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolAnnotations<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<&'a str>,
    pub open_world_hint: bool,
}

/// A tool's `execution`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolExecution<'a> {
    pub task_support: &'a str,
}

/// One `Tool` of `tools/list`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Tool<'a> {
    pub name: &'a str,
    pub description: String,
    pub input_schema: Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub annotations: Option<ToolAnnotations<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub execution: Option<ToolExecution<'a>>,
}

/// `ListToolsResult`.
#[derive(Debug, Serialize)]
pub struct ListToolsResult<'a> {
    pub tools: Vec<Tool<'a>>,
}

/// One argument of a `Prompt`.
#[derive(Debug, Serialize)]
pub struct PromptArgument<'a> {
    pub name: &'a str,
    pub description: &'a str,
    pub required: bool,
}

/// One `Prompt` of `prompts/list`.
#[derive(Debug, Serialize)]
pub struct Prompt<'a> {
    pub name: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<&'a str>,
    pub description: &'a str,
    pub arguments: Vec<PromptArgument<'a>>,
}

/// `ListPromptsResult`.
#[derive(Debug, Serialize)]
pub struct ListPromptsResult<'a> {
    pub prompts: Vec<Prompt<'a>>,
}

/// `GetPromptResult`: the rendered messages.
#[derive(Debug, Serialize)]
pub struct GetPromptResult<'a> {
    pub description: &'a str,
    pub messages: Vec<Value>,
}

/// Where a resource entry points: one URI, or a URI template.
#[derive(Debug, Serialize)]
pub enum Address<'a> {
    #[serde(rename = "uri")]
    Uri(&'a str),
    #[serde(rename = "uriTemplate")]
    Template(&'a str),
}

/// One `Resource` of `resources/list` or `ResourceTemplate` of `resources/templates/list`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceEntry<'a> {
    #[serde(flatten)]
    pub address: Address<'a>,
    pub name: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<&'a str>,
    pub description: &'a str,
    pub mime_type: &'a str,
}

/// `ListResourcesResult`.
#[derive(Debug, Serialize)]
pub struct ListResourcesResult<'a> {
    pub resources: Vec<ResourceEntry<'a>>,
}

/// `ListResourceTemplatesResult`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ListResourceTemplatesResult<'a> {
    pub resource_templates: Vec<ResourceEntry<'a>>,
}

/// `ReadResourceResult`: the contents the catalogue's reader produced.
#[derive(Debug, Serialize)]
pub struct ReadResourceResult {
    pub contents: Vec<Value>,
}

/// The `completion` of a `CompleteResult`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Completion {
    pub values: Vec<String>,
    pub total: usize,
    pub has_more: bool,
}

/// `CompleteResult`.
#[derive(Debug, Serialize)]
pub struct CompleteResult {
    pub completion: Completion,
}

/// The task fields both eras share; each era names its timing fields its own way.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskFields<'a> {
    pub task_id: &'a str,
    pub status: &'a str,
    pub status_message: &'a str,
    pub created_at: String,
    pub last_updated_at: String,
}

/// The 2025-11-25 `Task`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HandshakeTask<'a> {
    #[serde(flatten)]
    pub fields: TaskFields<'a>,
    pub ttl: u64,
    pub poll_interval: u64,
}

/// Why a task failed, in the tasks extension's `Task`.
#[derive(Debug, Serialize)]
pub struct TaskError<'a> {
    pub code: i64,
    pub message: &'a str,
}

/// The tasks extension's `Task` (`tasks/get` in the stateless era), with the final result,
/// the error, or the pending input requests where its status has one.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ModernTask<'a> {
    #[serde(flatten)]
    pub fields: TaskFields<'a>,
    pub ttl_ms: u64,
    pub poll_interval_ms: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<TaskError<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub input_requests: Option<Value>,
}

/// `CreateTaskResult`: the task a `tools/call` started.
#[derive(Debug, Serialize)]
pub struct CreateTaskResult<'a> {
    pub task: HandshakeTask<'a>,
    #[serde(rename = "_meta")]
    pub meta: Map<String, Value>,
}

/// `ListTasksResult`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ListTasksResult<'a> {
    pub tasks: Vec<HandshakeTask<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

/// `CallToolResult`. A cancelled call has `partial` and no `isError`; `structuredContent`
/// is the success payload the tool's `outputSchema` describes.
#[derive(Debug, Default)]
pub struct CallToolResult {
    pub content: Vec<Value>,
    pub structured_content: Option<Value>,
    pub is_error: Option<bool>,
    /// The answer as it stood when the call was cancelled (`cancelled: true` with it).
    pub partial: Option<Value>,
    pub meta: Option<Map<String, Value>>,
}

impl CallToolResult {
    /// A `TextContent` block.
    pub fn text(text: String) -> Value {
        let mut block = Map::new();
        block.insert("type".into(), Value::String("text".into()));
        block.insert("text".into(), Value::String(text));
        Value::Object(block)
    }

    /// The JSON of this result, moving its parts rather than copying them.
    pub fn into_value(self) -> Value {
        let mut out = Map::new();
        out.insert("content".into(), Value::Array(self.content));
        if let Some(partial) = self.partial {
            out.insert("cancelled".into(), Value::Bool(true));
            out.insert("partial".into(), partial);
        }
        if let Some(structured) = self.structured_content {
            out.insert("structuredContent".into(), structured);
        }
        if let Some(is_error) = self.is_error {
            out.insert("isError".into(), Value::Bool(is_error));
        }
        if let Some(meta) = self.meta {
            out.insert("_meta".into(), Value::Object(meta));
        }
        Value::Object(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn flattened_and_optional_fields_serialize_as_the_schema_names_them() {
        let entry = ResourceEntry {
            address: Address::Template("bernstein://runs/{id}"),
            name: "run",
            title: None,
            description: "A run.",
            mime_type: "application/json",
        };
        assert_eq!(
            to_value(&entry),
            json!({"uriTemplate": "bernstein://runs/{id}", "name": "run",
                   "description": "A run.", "mimeType": "application/json"})
        );
        let caps = ServerCapabilities {
            tools: ListChanged {
                list_changed: false,
            },
            prompts: ListChanged {
                list_changed: false,
            },
            resources: ResourcesCapability {
                subscribe: false,
                list_changed: false,
            },
            completions: Some(Empty {}),
            logging: Empty {},
            tasks: Some(TasksCapability::default()),
            extensions: None,
        };
        assert_eq!(
            to_value(&caps),
            json!({"tools": {"listChanged": false}, "prompts": {"listChanged": false},
                   "resources": {"subscribe": false, "listChanged": false}, "completions": {},
                   "logging": {}, "tasks": {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}})
        );
    }

    #[test]
    fn a_cancelled_call_has_partial_and_no_is_error() {
        let r = CallToolResult {
            content: vec![CallToolResult::text("t".into())],
            partial: Some(json!([1])),
            ..CallToolResult::default()
        };
        assert_eq!(
            r.into_value(),
            json!({"content": [{"type": "text", "text": "t"}], "cancelled": true, "partial": [1]})
        );
    }
}
