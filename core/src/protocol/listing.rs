//! The read-only catalogue methods: `tools/list`, `prompts/list`, `prompts/get`,
//! `resources/list` and `resources/read` (templated URIs through [`super::resource_templates`]),
//! shaped per revision.
//!
//! Lists are complete in one page, in a deterministic order (tools by name, prompts by name,
//! resources by URI); a request naming any cursor is refused with -32602 because this server
//! never issues one. This module never appends records and never sees tool handlers.

use serde_json::{Map, Value};

use super::Server;
use super::era::Revision;
use super::input::{InputNeeded, Inputs};
use super::jsonrpc::{RpcError, brief, names_or_none, shorten};
use super::model::results::{
    Address, GetPromptResult, ListPromptsResult, ListResourcesResult, ListToolsResult, Prompt,
    PromptArgument, ResourceEntry, Tool, ToolAnnotations, ToolExecution, to_value,
};
use super::model::{GetPromptParams, ListParams};
use super::registry::{PromptSpec, PromptTurn, TaskSupport, ToolSpec};
use super::validate::check_limits;
use crate::ledger::Fold;

/// `tools/list`: the active tier's tools, sorted by name.
pub fn list_tools<F: Fold>(
    server: &Server<F>,
    revision: Revision,
    params: Option<&Value>,
) -> Result<Value, RpcError> {
    ListParams::read(params)?;
    Ok(to_value(&tools_result(server, revision)))
}

/// `tools/list` for an OAuth token with `scopes`: only the tools it may call (`None`: every
/// tool of the tier).
pub fn list_tools_for<F: Fold>(
    server: &Server<F>,
    revision: Revision,
    params: Option<&Value>,
    scopes: Option<super::principal::Scopes>,
) -> Result<Value, RpcError> {
    ListParams::read(params)?;
    let mut result = tools_result(server, revision);
    if let Some(scopes) = scopes {
        let allowed = |name: &str| {
            server
                .catalog
                .tool(name)
                .is_some_and(|t| scopes.allow(t.effects))
        };
        result.tools.retain(|t| allowed(t.name));
    }
    Ok(to_value(&result))
}

/// The typed `tools/list` result of `revision`.
fn tools_result<F: Fold>(server: &Server<F>, revision: Revision) -> ListToolsResult<'_> {
    let tools = server.catalog.tools_in_tier(server.config.tier);
    ListToolsResult {
        tools: tools
            .into_iter()
            .map(|t| tool_entry(server, t, revision))
            .collect(),
    }
}

/// The `tools/list` result of `revision` as compact JSON bytes (decorated for its era),
/// rendered once per server: the same bytes as rendering [`list_tools`]'s value.
pub fn tools_list_bytes<F: Fold>(server: &Server<F>, revision: Revision) -> std::sync::Arc<[u8]> {
    server.tool_listing(revision, || {
        let listed = to_value(&tools_result(server, revision));
        let decorated =
            super::decorate::decorate(server, revision, super::model::Method::ToolsList, listed);
        serde_json::to_vec(&decorated).unwrap_or_default()
    })
}

/// The context cost of `server`'s tier: the bytes of its `tools/list` `tools` array as compact
/// JSON, under 2025-11-25 (the revision with the most fields per tool).
pub fn listing_bytes<F: Fold>(server: &Server<F>) -> usize {
    let tools = tools_result(server, Revision::V2025_11_25).tools;
    serde_json::to_vec(&tools).map_or(0, |v| v.len())
}

/// One `Tool` object as `revision` defines it.
fn tool_entry<'a, F: Fold>(
    server: &'a Server<F>,
    tool: &'a ToolSpec<F>,
    revision: Revision,
) -> Tool<'a> {
    let description = if server.catalog.effects_in_descriptions {
        format!("{} {}", tool.description, tool.effects.sentence())
    } else {
        tool.description.to_string()
    };
    let titled = revision.has_titles_and_structured_output();
    let e = tool.effects;
    Tool {
        name: tool.name,
        description,
        input_schema: server.input_schema(tool),
        title: titled.then_some(tool.title),
        output_schema: titled.then(|| server.output_schema(tool)).flatten(),
        annotations: revision.has_tool_annotations().then(|| ToolAnnotations {
            // The one place a revision without `Tool.title` carries the title.
            title: (!titled).then_some(tool.title),
            // A tool that starts processes or uses the network reaches beyond this server
            // (the hint defaults to true, so it is always stated).
            open_world_hint: e.network || e.spawns_processes,
        }),
        // `taskSupport` defaults to "forbidden": stated only for a tool that accepts tasks.
        execution: (revision.has_tool_execution() && tool.task_support != TaskSupport::Forbidden)
            .then(|| ToolExecution {
                task_support: tool.task_support.as_str(),
            }),
    }
}

/// `prompts/list`: every prompt, sorted by name.
pub fn list_prompts<F: Fold>(
    server: &Server<F>,
    revision: Revision,
    params: Option<&Value>,
) -> Result<Value, RpcError> {
    ListParams::read(params)?;
    let mut prompts: Vec<&PromptSpec> = server.catalog.prompts.iter().collect();
    prompts.sort_by(|a, b| a.name.cmp(b.name));
    let prompts = prompts
        .into_iter()
        .map(|p| Prompt {
            name: p.name,
            title: revision
                .has_titles_and_structured_output()
                .then_some(p.title),
            description: p.description,
            arguments: p
                .arguments
                .iter()
                .map(|a| PromptArgument {
                    name: a.name,
                    description: a.description,
                    required: a.required,
                })
                .collect(),
        })
        .collect();
    Ok(to_value(&ListPromptsResult { prompts }))
}

/// What `prompts/get` answers: the `GetPromptResult`, or what the prompt needs from the client
/// first.
#[derive(Debug)]
pub enum PromptGot {
    Result(Value),
    NeedInput(InputNeeded),
}

/// `prompts/get`: the prompt rendered from its arguments and the client's answers so far.
pub fn get_prompt<F: Fold>(
    server: &Server<F>,
    params: Option<&Value>,
    inputs: &Inputs,
) -> Result<PromptGot, RpcError> {
    let params = GetPromptParams::read(params)?;
    let name = params.name;
    let Some(prompt) = server.catalog.prompt(name) else {
        let known: Vec<&str> = server.catalog.prompts.iter().map(|p| p.name).collect();
        return Err(RpcError::invalid_params(format!(
            "Unknown prompt: {} (available: {})",
            shorten(name, 100),
            names_or_none(&known)
        )));
    };
    let empty = Map::new();
    let args = params.arguments()?.unwrap_or(&empty);
    for (k, v) in args {
        let path = super::validate::child_path("params.arguments", k);
        if !prompt.arguments.iter().any(|a| a.name == k) {
            let known: Vec<&str> = prompt.arguments.iter().map(|a| a.name).collect();
            return Err(RpcError::invalid_params(format!(
                "{path}: prompt {} takes no such argument (expected one of: {})",
                prompt.name,
                known.join(", ")
            )));
        }
        if !v.is_string() {
            return Err(RpcError::invalid_params(format!(
                "{path}: must be a string, got {}",
                brief(v)
            )));
        }
    }
    check_limits(
        &Value::Object(args.clone()),
        &server.config.limits,
        "params.arguments",
    )
    .map_err(|v| RpcError::invalid_params(v.to_string()))?;
    if let Some(missing) = prompt
        .arguments
        .iter()
        .find(|a| a.required && !args.contains_key(a.name))
    {
        return Err(RpcError::invalid_params(format!(
            "Missing required argument {:?} for prompt {}: {}",
            missing.name, prompt.name, missing.description
        )));
    }
    let turn = (prompt.render)(args, inputs).map_err(|why| {
        RpcError::invalid_params(format!(
            "Invalid arguments for prompt {}: {why}",
            prompt.name
        ))
    })?;
    Ok(match turn {
        PromptTurn::Messages(messages) => PromptGot::Result(to_value(&GetPromptResult {
            description: prompt.description,
            messages,
        })),
        PromptTurn::NeedInput(needed) => PromptGot::NeedInput(needed),
    })
}

/// `resources/list`: every resource, sorted by URI.
pub fn list_resources<F: Fold>(
    server: &Server<F>,
    revision: Revision,
    params: Option<&Value>,
) -> Result<Value, RpcError> {
    ListParams::read(params)?;
    let mut resources: Vec<_> = server.catalog.resources.iter().collect();
    resources.sort_by(|a, b| a.uri.cmp(b.uri));
    let resources = resources
        .into_iter()
        .map(|r| {
            let names = [r.name, r.title, r.description, r.mime_type];
            resource_entry(revision, Address::Uri(r.uri), names)
        })
        .collect();
    Ok(to_value(&ListResourcesResult { resources }))
}

/// A `Resource` or `ResourceTemplate` object: its address, then
/// `[name, title, description, mimeType]` (`title` only where `revision` has titles).
pub(crate) fn resource_entry<'a>(
    revision: Revision,
    address: Address<'a>,
    [name, title, description, mime_type]: [&'a str; 4],
) -> ResourceEntry<'a> {
    ResourceEntry {
        address,
        name,
        title: revision.has_titles_and_structured_output().then_some(title),
        description,
        mime_type,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_catalogue_may_have_descriptions_end_with_the_sentence_of_the_effects() {
        let mut tool = crate::protocol::unit_fold::plain_tool("t");
        tool.description = "Does a thing.";
        tool.effects.writes_files = true;
        tool.effects.network = true;
        let mut server = crate::protocol::unit_fold::server_of(vec![tool]);
        let described = |s: &crate::protocol::unit_fold::Server| {
            list_tools(s, Revision::LATEST_HANDSHAKE, None).unwrap()["tools"][0]["description"]
                .clone()
        };
        assert_eq!(described(&server), "Does a thing.");
        server.catalog.effects_in_descriptions = true;
        assert_eq!(
            described(&server),
            "Does a thing. Effects: writes files, makes network requests only."
        );
        let sentence = |reads_files, writes_files, spawns_processes, network| {
            super::super::registry::Effects {
                reads_files,
                writes_files,
                spawns_processes,
                network,
            }
            .sentence()
        };
        assert_eq!(sentence(false, false, false, false), "Effects: none.");
        assert_eq!(
            sentence(true, false, false, false),
            "Effects: reads files only."
        );
        assert_eq!(
            sentence(true, true, true, false),
            "Effects: reads and writes files, spawns processes only."
        );
    }

    #[test]
    fn cursors_are_refused_clearly() {
        assert!(ListParams::read(None).is_ok());
        assert!(ListParams::read(Some(&json!({"cursor": null}))).is_ok());
        let e = ListParams::read(Some(&json!({"cursor": "abc"}))).unwrap_err();
        assert_eq!(e.code, -32602);
        assert!(e.message.starts_with("Invalid cursor"));
        assert_eq!(
            ListParams::read(Some(&json!({"cursor": 3})))
                .unwrap_err()
                .code,
            -32602
        );
    }
}
