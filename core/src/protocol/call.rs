//! `tools/call`: resolve the tool (tier, deprecated aliases), check the arguments once (against
//! the schema before the handler runs, or by a typed handler as it parses them), run the
//! handler, shape the `CallToolResult` (meter envelope, structured content, `isError`), and
//! seal the call's records with its audit entry.
//!
//! Audit policy: every `tools/call` whose `params.name` is a string appends exactly one
//! `mcp.stateless_call` record to the `audit` stream, after the handler's drafts and in the same
//! transaction: successful calls, refusals (`isError`), argument-validation failures and unknown
//! tools alike (`ok: false` with an `error` code naming why). A call without a usable name
//! appends nothing. A refused call appends only its audit record, whatever drafts the handler
//! returned.
//!
//! This module must never panic on a peer's input and never let a handler's records reach the
//! ledger without the call's audit record.

use std::collections::BTreeSet;

use serde_json::{Map, Value, json};

use super::decorate::decorate;
use super::era::Revision;
use super::host::{HostReply, HostRequest, MAX_HOST_ROUNDS};
use super::ids::{RequestIds, digest_of_value};
use super::input::{InputNeeded, Inputs};
use super::jsonrpc::{RpcError, kind_of, shorten};
use super::logging::LogMessage;
use super::model::results::CallToolResult;
use super::model::{CallParams, Meta, Method};
use super::refusal::Common;
use super::registry::{
    Arguments, Progress, TaskStep, ToolContext, ToolError, ToolLookup, ToolOutput, ToolSpec,
};
use super::validate::{Violation, check_limits};
use super::{MeterSlot, Phase, Server};
use crate::digest::Digest;
use crate::ledger::Fold;
use crate::ledger::{AUDIT_STREAM, Draft, Record, Snapshot, run_stream, seal};
use crate::time::Timestamp;

/// The release that removes the deprecated tool aliases.
pub const ALIAS_REMOVAL_RELEASE: &str = "v3.12.0";
/// Kind of the audit record every tool call appends (defined once, by the ledger's verifier).
pub use crate::ledger::audit::CALL_KIND as AUDIT_KIND;
use crate::ledger::audit::{AuditPrincipal, CallAudit, RESOURCE_READ, UNKNOWN_TOOL};

/// What serving one `tools/call` produced.
#[derive(Debug)]
pub struct CallReply {
    pub result: Result<Value, RpcError>,
    pub meter: Option<MeterSlot>,
    /// The sealed records: the handler's drafts (on success) and the audit record.
    pub records: Vec<Record>,
    /// The heads of the streams a successful call read, when its handler named them
    /// ([`ToolOutput::reads`]): the [`crate::ledger::Append::read_heads`] of its records.
    pub read_heads: Option<Vec<(String, Digest)>>,
    /// On success: the `task_id` the payload names, if any (the MCP task a task-augmented call
    /// creates).
    pub task_id: Option<String>,
    /// On success: the run the handler wrote or read.
    pub run_id: Option<String>,
    /// Set when the handler needs the host first: nothing else in the reply counts.
    pub host: Option<HostRequest>,
    /// Set when the handler needs the client's input first: nothing else in the reply counts,
    /// and nothing is recorded.
    pub input: Option<InputNeeded>,
    /// The handler's progress steps (see [`ToolOutput::progress`]), for the dispatcher to send
    /// as `notifications/progress` when the request carries a progress token.
    pub progress: Vec<Progress>,
    /// The handler's log messages (see [`ToolOutput::logs`]), also of a round that waits.
    pub logs: Vec<LogMessage>,
    /// Set when the answer is not final and the call may wait (see [`ToolOutput::wait_ms`]):
    /// nothing else in the reply counts.
    pub wait_ms: Option<u64>,
    /// The stream the wait depends on (see [`ToolOutput::watch`]).
    pub watch: Option<String>,
    /// Set when the handler answered "still working" to a call that creates a task: `records`
    /// create it (see [`TaskStart`]) and the caller answers the task; the status message.
    pub working: Option<String>,
}

/// Everything a tool call reads.
#[derive(Debug)]
pub struct CallInput<'a, F> {
    pub params: Option<&'a Value>,
    pub revision: Revision,
    pub ids: &'a RequestIds,
    pub snapshot: &'a Snapshot<F>,
    pub now: Timestamp,
    /// The runtime's replies to this call's host requests so far; `None` where host requests
    /// cannot be served (inside a batch).
    pub host: Option<&'a [HostReply]>,
    /// Whether the request may still wait, must settle, or was cancelled.
    pub phase: Phase,
    /// Who an OAuth access token says the call is for (recorded in its audit record).
    pub principal: Option<&'a super::principal::Principal>,
    /// The client's answers and the handler's state this round (see [`super::input`]).
    pub input: &'a Inputs,
    /// Set when this call may create a task (see [`super::tool_tasks`]).
    pub task: Option<TaskStart<'a>>,
}

/// What a call that may create a task brings: the handler's clock, and the record that creates
/// the task when the handler answers [`ToolOutput::working`].
#[derive(Clone, Copy, Debug)]
pub struct TaskStart<'a> {
    pub clock: super::registry::TaskClock,
    pub created: &'a Draft,
}

impl<F> Clone for CallInput<'_, F> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<F> Copy for CallInput<'_, F> {}

/// Serves `tools/call`.
pub fn call_tool<F: Fold>(server: &Server<F>, input: &CallInput<'_, F>) -> CallReply {
    let params = match CallParams::read(input.params) {
        Ok(p) => p,
        // A call without a usable name is refused without an audit record.
        Err(e) => return unaudited(e),
    };
    let name = params.name;
    let empty = Value::Object(Map::new());
    let raw_args = params.arguments.unwrap_or(&empty);
    let resolved = resolve(server, name);
    // The call's audit entry, built once: every answer below seals it.
    let alias_of = match &resolved {
        Ok((tool, Some(_))) => Some(tool.name),
        _ => None,
    };
    let audit = Audit::of(server, input, name, raw_args, alias_of);
    let (tool, alias) = match resolved {
        Ok(found) => found,
        Err(e) => return audit.refuse(e, Common::UnknownTool),
    };
    // Invalid arguments: a JSON-RPC -32602 before 2025-11-25, a tool execution error the model
    // can read and correct from then on (SEP-1303). Either way the handler never runs.
    let invalid = |message: String, violations: &[Violation]| -> CallReply {
        if input.revision.reports_argument_errors_in_result() {
            let refusal = ToolError::invalid_arguments(tool.name, message, violations);
            finish(
                server,
                input,
                &audit,
                tool,
                alias,
                ToolOutput::refused(refusal),
            )
        } else {
            let listed = Violation::listed(violations);
            let e = RpcError::invalid_params(message).with_data(json!({ "violations": listed }));
            audit.refuse(e, Common::InvalidArguments)
        }
    };
    if !raw_args.is_object() {
        let message = format!(
            "Invalid arguments for tool {name}: arguments must be an object, got {}",
            kind_of(raw_args)
        );
        return invalid(message, &[Violation::new("arguments", "must be an object")]);
    }
    if let Err(v) = check_limits(raw_args, &server.config.limits, "arguments") {
        let v = [v];
        return invalid(Violation::message(name, &v), &v);
    }
    // Arguments are checked once: against the schema here, or by the typed handler as it
    // parses them (its refusal comes back as `invalid_arguments`).
    if tool.arguments == Arguments::Schema {
        match server.validate_arguments(tool, raw_args) {
            Ok(violations) if violations.is_empty() => {}
            Ok(violations) => return invalid(Violation::message(name, &violations), &violations),
            Err(fault) => {
                return audit.refuse(
                    RpcError::internal(format!("tool {name}: {fault}")),
                    Common::InternalError,
                );
            }
        }
    }
    let output = run_handler(server, input, tool, raw_args);
    if let Some(violations) = output
        .invalid_arguments
        .as_deref()
        .filter(|v| !v.is_empty())
    {
        return invalid(Violation::message(name, violations), violations);
    }
    finish(server, input, &audit, tool, alias, output)
}

/// The tool `name` calls (and the deprecated alias it was called by), or the `-32602` that
/// refuses it: outside the tier, an alias not served, or no tool at all.
#[allow(clippy::type_complexity)]
fn resolve<'s, F: Fold>(
    server: &'s Server<F>,
    name: &str,
) -> Result<(&'s ToolSpec<F>, Option<&'static str>), RpcError> {
    match server.catalog.lookup_tool(name, &server.config) {
        ToolLookup::Tool(t) => Ok((t, None)),
        ToolLookup::Alias { alias, tool } => Ok((tool, Some(alias))),
        ToolLookup::OutsideTier(t) => {
            let why = format!(
                "Unknown tool: {name} (not available in tool tier \"{}\"; it needs tier \"{}\" or above)",
                server.config.tier.as_str(),
                t.tier.as_str()
            );
            Err(RpcError::invalid_params(why).with_data(json!({"tool": name})))
        }
        ToolLookup::AliasUnavailable { alias, replacement } => {
            let why = format!(
                "Unknown tool: {alias} (a deprecated alias that is not served here; call {replacement} instead)"
            );
            Err(RpcError::invalid_params(why).with_data(json!({"tool": alias})))
        }
        ToolLookup::Unknown => {
            let quoted = quote_unknown(server, name);
            let why = if quoted == name {
                format!("Unknown tool: {quoted}")
            } else {
                format!("Unknown tool: {quoted} (a name of {} bytes)", name.len())
            };
            Err(RpcError::invalid_params(why).with_data(json!({"tool": quoted})))
        }
    }
}

/// Refuses a named `tools/call` before any handler runs (e.g. a task-augmented call of a tool
/// that forbids tasks), with the call's audit record like every other refusal.
pub(crate) fn refuse_call<F: Fold>(
    server: &Server<F>,
    input: &CallInput<'_, F>,
    error: RpcError,
    code: Common,
) -> CallReply {
    let params = CallParams::read(input.params).ok();
    let name = params.map_or("", |p| p.name);
    let empty = Value::Object(Map::new());
    let args = params.and_then(|p| p.arguments).unwrap_or(&empty);
    Audit::of(server, input, name, args, None).refuse(error, code)
}

/// Runs `tool` with `args` on behalf of a protocol method (e.g. `tasks/cancel` through the
/// cancel gate): no tier or alias resolution, no argument validation beyond the handler's own,
/// but the same result shaping and the same audit record as a `tools/call`.
pub(crate) fn call_registered<F: Fold>(
    server: &Server<F>,
    input: &CallInput<'_, F>,
    tool: &ToolSpec<F>,
    args: &Value,
) -> CallReply {
    let audit = Audit::of(server, input, tool.name, args, None);
    let output = run_handler(server, input, tool, args);
    finish(server, input, &audit, tool, None, output)
}

/// Runs `tool`'s handler on `args` with the context of this call.
fn run_handler<F: Fold>(
    server: &Server<F>,
    input: &CallInput<'_, F>,
    tool: &ToolSpec<F>,
    args: &Value,
) -> ToolOutput {
    let ctx = ToolContext {
        snapshot: input.snapshot,
        config: &server.config,
        now: input.now,
        call_id: &input.ids.call_id,
        trace_id: &input.ids.trace_id,
        span_id: &input.ids.span_id,
        spec_revision: input.revision.as_str(),
        host: input.host.unwrap_or_default(),
        meta: Meta::of(input.params).value(),
        input: input.input,
        task: input.task.map(|t| t.clock),
    };
    (tool.call)(&ctx, args.clone())
}

/// Shapes the result of a handler that ran and seals its records.
fn finish<F: Fold>(
    server: &Server<F>,
    input: &CallInput<'_, F>,
    audit: &Audit<'_, F>,
    tool: &ToolSpec<F>,
    alias: Option<&'static str>,
    output: ToolOutput,
) -> CallReply {
    let ToolOutput {
        result,
        drafts,
        run_id,
        content,
        host,
        input: needed,
        links,
        logs,
        progress,
        wait_ms,
        watch,
        // Outside `tools/call` (`call_registered`), `result` is the refusal already.
        invalid_arguments: _,
        task: step,
        reads,
    } = output;
    if let Some(needed) = needed {
        return CallReply {
            input: Some(needed),
            ..CallReply::needs_nothing()
        };
    }
    if let Some(step) = step {
        return task_step(input, audit, tool, step);
    }
    let result = match (host, input.host) {
        (Some(request), Some(replies)) if replies.len() < MAX_HOST_ROUNDS => {
            return CallReply::needs_host(request);
        }
        (Some(_), Some(_)) => Err(ToolError::new(
            Common::HostRoundsExceeded,
            format!(
                "{} asked the host for more than {MAX_HOST_ROUNDS} things in one call",
                tool.name
            ),
            "This is a bug in the server; the ledger was not changed.",
        )),
        (Some(_), None) => Err(ToolError::new(
            Common::HostUnavailable,
            format!(
                "{} needs the host's files, which a batched call cannot reach",
                tool.name
            ),
            "Send this call on its own, not inside a JSON-RPC batch.",
        )),
        (None, _) => result,
    };
    // No wait slot was free: the call fails, saying why, and changes nothing.
    let result = match (wait_ms, input.phase) {
        (Some(_), Phase::Refused) if result.is_ok() => Err(ToolError::new(
            Common::TooManyWaits,
            format!(
                "{} cannot wait: the server already holds as many waiting answers as it allows",
                tool.name
            ),
            "Call again in a moment, or without wait_ms to get the state now; the limits are \
             BERNSTEIN_MCP_MAX_WAITS and BERNSTEIN_MCP_MAX_WAITS_PER_PEER.",
        )),
        _ => result,
    };
    let cancelled = match (wait_ms, input.phase) {
        (Some(ms), Phase::Live) if result.is_ok() => {
            // The run it waits on: a long poll ticks while it waits.
            return CallReply {
                run_id,
                watch,
                logs,
                ..CallReply::pending(ms)
            };
        }
        (Some(_), Phase::Cancelled) => result.is_ok(),
        _ => false,
    };
    let (result, drafts) = if cancelled {
        (result.map(cancelled_payload), Vec::new())
    } else {
        (result, drafts)
    };
    // A tool's own content blocks stand for a successful payload; a refusal is always text.
    let content = content.filter(|_| result.is_ok() && !cancelled);
    let ok = result.is_ok() && !cancelled;
    let error_code = match &result {
        Err(e) => Some(e.error),
        Ok(_) if cancelled => Some(Common::Cancelled.as_str()),
        Ok(_) => None,
    };
    let task_id = result
        .as_ref()
        .ok()
        .and_then(|p| p.get("task_id"))
        .and_then(Value::as_str)
        .map(str::to_string);
    // A refusal changes nothing: its drafts are dropped (the registry contract says it has none).
    let drafts = if ok { drafts } else { Vec::new() };
    if let Some(d) = drafts.iter().find(|d| holds_float(&d.body)) {
        let e = RpcError::internal(format!(
            "tool {} produced a {} record holding a float",
            tool.name, d.kind
        ));
        return audit.refuse(e, Common::InternalError);
    }
    let is_error = result.is_err();
    let payload = match (result, alias) {
        (Ok(p), None) => p,
        (Err(e), None) => e.to_value(),
        (Ok(p), Some(a)) => json!({
            "deprecated": true,
            "tool": a,
            "replacement": tool.name,
            "removal_release": ALIAS_REMOVAL_RELEASE,
            "notice": alias_notice(a, tool.name),
            "result": p,
        }),
        (Err(e), Some(a)) => {
            let mut v = e.to_value();
            if let Value::Object(obj) = &mut v {
                obj.insert("deprecated".into(), Value::Bool(true));
                obj.insert("replacement".into(), Value::String(tool.name.into()));
                obj.insert("notice".into(), Value::String(alias_notice(a, tool.name)));
            }
            v
        }
    };
    let partial = cancelled
        .then(|| {
            payload
                .get("partial")
                .or_else(|| payload["result"].get("partial"))
                .cloned()
        })
        .flatten();
    let called = alias.unwrap_or(tool.name);
    let (text_value, meter) = if server.config.cost_meter {
        let slot = MeterSlot {
            tool: called.to_string(),
            call_id: input.ids.call_id.clone(),
            ok,
            ts: input.now,
            payload,
        };
        // The envelope is written at render time, with the latency; these are its places.
        (Value::Null, Some(slot))
    } else {
        (payload, None)
    };
    let text = || match meter {
        Some(_) => CallToolResult::text(String::new()),
        None => CallToolResult::text(text_value.to_string()),
    };
    let content = match content {
        // The tool's own blocks, then the meter envelope (when on) as a last text block.
        Some(mut blocks) => {
            if meter.is_some() {
                blocks.push(text());
            }
            blocks
        }
        None => vec![text()],
    };
    // Links to the resources the result names follow the payload (the meter fills the last
    // text block, wherever the links put it).
    let content = if ok && input.revision.has_resource_links() {
        let mut content = content;
        content.extend(links.iter().map(|l| l.to_block()));
        content
    } else {
        content
    };
    // Structured output is the success payload the outputSchema describes; a refusal is
    // reported in the text block only, so strict clients never see it fail that schema.
    let structured = ok
        && tool.output_schema.is_some()
        && alias.is_none()
        && input.revision.has_titles_and_structured_output();
    let result = CallToolResult {
        content,
        structured_content: structured.then_some(text_value),
        // A cancelled call is no error and no result: `cancelled` and `partial` say what it is.
        is_error: (!cancelled).then_some(is_error),
        partial,
        meta: None,
    };
    let read_heads = reads
        .filter(|_| ok)
        .map(|named| read_heads(input.snapshot, named, &drafts));
    let records = audit.seal(drafts, ok, error_code, run_id.as_deref());
    CallReply {
        task_id,
        run_id: if ok { run_id } else { None },
        read_heads,
        result: Ok(decorate(
            server,
            input.revision,
            Method::ToolsCall,
            result.into_value(),
        )),
        meter,
        records,
        host: None,
        input: None,
        progress,
        logs,
        wait_ms: None,
        watch: None,
        working: None,
    }
}

/// The heads, in `snapshot`, of the streams a call read: those its handler named and every
/// stream its drafts write but the audit chain (each once, in order).
fn read_heads<F: Fold>(
    snapshot: &Snapshot<F>,
    named: Vec<String>,
    drafts: &[Draft],
) -> Vec<(String, Digest)> {
    let written = drafts.iter().map(|d| d.stream.clone());
    let streams: BTreeSet<String> = named
        .into_iter()
        .chain(written)
        .filter(|s| s != AUDIT_STREAM)
        .collect();
    let with_head = |s: String| {
        let head = snapshot.stream_head(&s);
        (s, head)
    };
    streams.into_iter().map(with_head).collect()
}

/// What a task-capable tool's "working" or protocol failure answers: on the call that may
/// create a task, the task's record sealed with the audit record (the caller answers the
/// task, see [`super::tool_tasks`]); on any other call, the JSON-RPC error it stands for.
fn task_step<F: Fold>(
    input: &CallInput<'_, F>,
    audit: &Audit<'_, F>,
    tool: &ToolSpec<F>,
    step: TaskStep,
) -> CallReply {
    let message = match step {
        TaskStep::Failed { code, message } => {
            return audit.refuse(RpcError::new(code, message), Common::InternalError);
        }
        TaskStep::Working(message) => message,
    };
    let Some(start) = input.task.filter(|t| !t.clock.started) else {
        let e = RpcError::internal(format!(
            "tool {} answered \"still working\" to a call that creates no task",
            tool.name
        ));
        return audit.refuse(e, Common::InternalError);
    };
    if holds_float(&start.created.body) {
        let e = RpcError::invalid_params(format!(
            "tool {}: arguments or answers holding a fractional number cannot be recorded with \
             a task; send integers or strings",
            tool.name
        ));
        return audit.refuse(e, Common::InvalidArguments);
    }
    CallReply {
        working: Some(message),
        records: audit.seal(vec![start.created.clone()], true, None, None),
        ..CallReply::needs_nothing()
    }
}

/// The records of a `resources/read` of a URI that `template` matched, audited like a tool
/// call (docs/RECORDS.md): one `mcp.stateless_call` record with `tool: "resources/read"`,
/// `resource: template`, the digest of `{"uri": uri}`, and, for a read that answered from a
/// run, that run and its journal head. `refused` is the refusal code of a read that found
/// nothing.
pub(crate) fn audit_read<F: Fold>(
    server: &Server<F>,
    input: &CallInput<'_, F>,
    (template, uri): (&'static str, &str),
    refused: Option<Common>,
    run_id: Option<&str>,
) -> Vec<Record> {
    let args = json!({ "uri": uri });
    let audit = Audit {
        resource: Some(template),
        ..Audit::of(server, input, RESOURCE_READ, &args, None)
    };
    audit.seal(
        Vec::new(),
        refused.is_none(),
        refused.map(Common::as_str),
        run_id,
    )
}

/// What a cancelled long poll answers instead of its payload: the answer as it stood.
fn cancelled_payload(answer: Value) -> Value {
    json!({
        "cancelled": true,
        "message": "cancelled by the client before the answer was final; partial holds the answer as it stood",
        "partial": [answer],
    })
}

impl CallReply {
    /// The reply of a call holding its answer until the ledger moves: nothing to send or
    /// append yet.
    fn pending(max_wait_ms: u64) -> CallReply {
        CallReply {
            wait_ms: Some(max_wait_ms),
            ..CallReply::needs_nothing()
        }
    }

    fn needs_nothing() -> CallReply {
        CallReply {
            result: Ok(Value::Null),
            meter: None,
            records: Vec::new(),
            read_heads: None,
            task_id: None,
            run_id: None,
            host: None,
            input: None,
            progress: Vec::new(),
            logs: Vec::new(),
            wait_ms: None,
            watch: None,
            working: None,
        }
    }

    /// The reply of a call waiting for the host: no result yet, nothing to append.
    fn needs_host(request: HostRequest) -> CallReply {
        CallReply {
            host: Some(request),
            ..CallReply::needs_nothing()
        }
    }
}

/// The most characters of an unknown tool name an error message quotes.
pub const QUOTED_NAME_CHARS: usize = 32;

/// What an error message may say of a name that is no tool: a short prefix of it after the
/// catalogue's redaction (the whole name is redacted first, so a secret that starts in the
/// prefix is a placeholder there), control characters escaped.
fn quote_unknown<F>(server: &Server<F>, name: &str) -> String {
    let redacted = (server.catalog.redact)(name);
    let short = shorten(&redacted, QUOTED_NAME_CHARS);
    short.escape_default().to_string()
}

fn alias_notice(alias: &str, replacement: &str) -> String {
    format!(
        "{alias} is deprecated and will be removed in {ALIAS_REMOVAL_RELEASE}; call {replacement} instead."
    )
}

fn unaudited(error: RpcError) -> CallReply {
    CallReply {
        result: Err(error),
        ..CallReply::needs_nothing()
    }
}

/// Whether a record body holds a float (which has no canonical form).
pub(crate) fn holds_float(v: &Value) -> bool {
    let mut stack = vec![v];
    while let Some(v) = stack.pop() {
        match v {
            Value::Number(n) if !(n.is_i64() || n.is_u64()) => return true,
            Value::Array(items) => stack.extend(items),
            Value::Object(map) => stack.extend(map.values()),
            _ => {}
        }
    }
    false
}

/// The audit entry of one call.
struct Audit<'a, F> {
    name: &'a str,
    args: &'a Value,
    alias_of: Option<&'static str>,
    /// The URI template of an audited `resources/read` (then `name` is [`RESOURCE_READ`]).
    resource: Option<&'static str>,
    input: &'a CallInput<'a, F>,
    server: &'a Server<F>,
}

impl<'a, F: Fold> Audit<'a, F> {
    /// The audit entry of the call of `name` (standing for `alias_of`, when that is a
    /// deprecated alias) with `args`.
    fn of(
        server: &'a Server<F>,
        input: &'a CallInput<'a, F>,
        name: &'a str,
        args: &'a Value,
        alias_of: Option<&'static str>,
    ) -> Audit<'a, F> {
        Audit {
            name,
            args,
            alias_of,
            resource: None,
            input,
            server,
        }
    }

    /// A call refused before or instead of its handler: the error reply plus the audit record.
    fn refuse(&self, error: RpcError, code: Common) -> CallReply {
        CallReply {
            result: Err(error),
            records: self.seal(Vec::new(), false, Some(code.as_str()), None),
            ..CallReply::needs_nothing()
        }
    }

    /// Seals `drafts` followed by this call's audit record.
    fn seal(
        &self,
        mut drafts: Vec<Draft>,
        ok: bool,
        error: Option<&str>,
        run_id: Option<&str>,
    ) -> Vec<Record> {
        let input = self.input;
        let snapshot = input.snapshot;
        let key = &self.server.config.audit_key;
        // A name that is no tool is recorded as a fixed marker with its digest and length:
        // the client's bytes reach neither the ledger nor the tallies folded from it.
        let known = self.resource.is_some() || self.server.catalog.knows_tool(self.name);
        let mut audit = CallAudit {
            tool: if known { self.name } else { UNKNOWN_TOOL }.into(),
            call_id: input.ids.call_id.as_str().into(),
            trace_id: input.ids.trace_id.as_str().into(),
            span_id: input.ids.span_id.as_str().into(),
            ok,
            args_digest: digest_of_value(self.args).to_string().into(),
            spec_revision: input.revision.as_str().into(),
            ts: input.now.0,
            error: error.map(Into::into),
            alias_of: self.alias_of.map(Into::into),
            run_id: None,
            journal_head: None,
            read_at: None,
            name_digest: (!known).then(|| Digest::of(self.name.as_bytes()).to_string().into()),
            name_len: (!known).then_some(self.name.len() as u64),
            resource: self.resource.map(Into::into),
            principal: input.principal.map(|p| AuditPrincipal {
                iss: p.iss.as_str().into(),
                sub: p.sub.as_str().into(),
            }),
        };
        if let Some(run) = run_id {
            let stream = run_stream(run);
            audit.run_id = Some(run.into());
            if drafts.iter().any(|d| d.stream == stream) {
                // The run journal moves in this very transaction: seal with a placeholder audit
                // record (its body changes no hash before it) to learn the journal's new head,
                // then give the audit record its body.
                drafts.push(Draft::new(AUDIT_STREAM, AUDIT_KIND, Value::Null));
                let mut sealed = seal(&snapshot.position, |s| snapshot.stream_head(s), drafts, key);
                let head = sealed
                    .iter()
                    .rev()
                    .find(|r| r.stream == stream)
                    .map_or(Digest::ZERO, |r| r.hash);
                audit.journal_head = Some(head.to_string().into());
                if let Some(last) = sealed.last_mut() {
                    last.reseal(audit.to_value(), key);
                }
                return sealed;
            }
            audit.journal_head = Some(snapshot.stream_head(&stream).to_string().into());
        }
        drafts.push(Draft::new(AUDIT_STREAM, AUDIT_KIND, audit.to_value()));
        seal(&snapshot.position, |s| snapshot.stream_head(s), drafts, key)
    }
}

#[cfg(test)]
mod tests;
