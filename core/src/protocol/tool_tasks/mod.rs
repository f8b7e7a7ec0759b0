//! The engine's own tasks (extension `io.modelcontextprotocol/tasks`, revision 2026-07-28) for
//! the task-capable tools of a catalogue without task hooks: one generic implementation, pure
//! and stateless.
//!
//! - Creation: a `tools/call` of a tool whose `task_support` is optional or required, from a
//!   request that declares the extension in `_meta["io.modelcontextprotocol/clientCapabilities"]`,
//!   runs the handler with a [`TaskClock`] (`started: false`). A handler answering
//!   [`ToolOutput::working`] creates the task: the call appends `mcp.task.created`
//!   ([`super::task_records`]) with its audit record and answers a flat `CreateTaskResult`
//!   only once that transaction is durable. Any other answer (a result, a refusal, an input request) is the
//!   call's answer as usual. Without the extension a required tool is refused with `-32021`
//!   (`requiredCapabilities`) before its handler runs; an optional one runs as a plain call.
//! - Reading: `tasks/get` runs the handler again on the recorded arguments and answers, with the
//!   task's elapsed time (`now` minus `created_at`, `started: true`), and reports its answer:
//!   working, `input_required` with `inputRequests`, `completed` with the result inlined (a
//!   tool error is `completed` with `isError: true`), `failed` with the inlined JSON-RPC error
//!   of [`ToolOutput::task_failed`]. A cancelled task is `cancelled`; a task older than its
//!   `ttlMs` is unknown.
//! - `tasks/update` records the answers to what the task asks now (`mcp.task.answered`);
//!   `tasks/cancel` records `mcp.task.cancelled` unless the task is terminal. Both acknowledge
//!   with an empty result.
//!
//! - Every `tasks/*` request of 2026-07-28, whoever's task it names, must declare the
//!   extension (`-32021` otherwise) ([`serve`]).
//!
//! No thread, no timer, no clock read: `now` is handed in, and any instance answers alike from
//! the same snapshot.

use serde_json::{Map, Value, json};

use super::call::{CallInput, CallReply, TaskStart, call_tool, refuse_call};
use super::decorate::decorate;
use super::era::{META_CLIENT_CAPABILITIES, Revision};
use super::ids::RequestIds;
use super::input::{ClientCaps, InputNeeded, Inputs};
use super::input_round::MISSING_CAPABILITY;
use super::jsonrpc::{RpcError, shorten};
use super::model::results::CallToolResult;
use super::model::{CallParams, Meta, Method, TaskParams, TaskUpdateParams};
use super::refusal::Common;
use super::registry::{
    TaskClock, TaskStatus, TaskStep, TaskSupport, ToolContext, ToolError, ToolLookup, ToolOutput,
    ToolSpec,
};
use super::tasks::{POLL_INTERVAL_MS, TASK_TTL_MS, TASKS_EXTENSION, TaskReply};
use super::{Server, validate};
use crate::digest::Digest;
use crate::ledger::{Draft, Fold, Record, Snapshot, seal};
use crate::time::Timestamp;

use super::task_records::{self as records, TaskCreated};
pub use super::task_records::{ToolTask, ToolTasks};

/// Whether the request declares the tasks extension in its `_meta` client capabilities.
pub fn extension_declared(params: Option<&Value>) -> bool {
    Meta::of(params)
        .get(META_CLIENT_CAPABILITIES)
        .and_then(|c| c.get("extensions"))
        .and_then(|e| e.get(TASKS_EXTENSION))
        .is_some_and(Value::is_object)
}

/// `-32021` naming the tasks extension as the capability `what` needs.
pub fn missing_extension(what: &str) -> RpcError {
    RpcError::new(
        MISSING_CAPABILITY,
        format!(
            "{what} needs the client capability extensions[\"{TASKS_EXTENSION}\"], which this \
             request did not declare: declare it in params._meta[\"{META_CLIENT_CAPABILITIES}\"]"
        ),
    )
    .with_data(json!({"requiredCapabilities": {"extensions": {TASKS_EXTENSION: {}}}}))
}

/// Serves a 2026-07-28 `tools/call` of a task-capable tool of a catalogue with tool tasks;
/// `None`: not such a call (the caller serves it as a plain call).
pub fn call<F: Fold>(server: &Server<F>, input: &CallInput<'_, F>) -> Option<CallReply> {
    if !input.revision.is_modern() || server.catalog.tool_tasks.is_none() {
        return None;
    }
    let name = CallParams::read(input.params).ok()?.name;
    let tool = match server.catalog.lookup_tool(name, &server.config) {
        ToolLookup::Tool(t) | ToolLookup::Alias { tool: t, .. } => t,
        _ => return None,
    };
    match (tool.task_support, extension_declared(input.params)) {
        (TaskSupport::Forbidden, _) | (TaskSupport::Optional, false) => None,
        (TaskSupport::Required, false) => {
            let what = format!("tool {} (it runs only as a task)", shorten(name, 100));
            Some(refuse_call(
                server,
                input,
                missing_extension(&what),
                Common::TaskNotSupported,
            ))
        }
        (_, true) => {
            let id = task_id(&input.ids.digest, &input.snapshot.position.head);
            let created = created_draft(input, &id, tool.name);
            let start = TaskStart {
                clock: TaskClock {
                    elapsed_ms: 0,
                    started: false,
                },
                created: &created,
            };
            let with_task = CallInput {
                task: Some(start),
                ..*input
            };
            let mut reply = call_tool(server, &with_task);
            if let Some(message) = reply.working.take() {
                reply.result = Ok(create_result(server, input, &id, &message));
            }
            Some(reply)
        }
    }
}

/// The id of the task a call creates: derived from the request and the ledger head it was
/// answered at, so a retried request at the same head names the same task.
fn task_id(request: &Digest, at: &Digest) -> String {
    let both = format!("{}{}", request.hex(), at.hex());
    format!("task-{}", &Digest::of(both.as_bytes()).hex()[..24])
}

/// The `mcp.task.created` record of task `id`, created by this call of `tool`.
fn created_draft<F>(input: &CallInput<'_, F>, id: &str, tool: &str) -> Draft {
    let caps = input.input.caps;
    let caps = [
        ("elicitation", caps.elicitation),
        ("sampling", caps.sampling),
        ("roots", caps.roots),
    ]
    .into_iter()
    .filter(|(_, on)| *on)
    .map(|(k, _)| k.to_string())
    .collect();
    let arguments = CallParams::read(input.params)
        .ok()
        .and_then(|p| p.arguments.cloned())
        .unwrap_or_else(|| Value::Object(Map::new()));
    let body = TaskCreated {
        task_id: id.to_string(),
        tool: tool.to_string(),
        arguments,
        created_at: input.now.0,
        ttl_ms: TASK_TTL_MS,
        caps,
        responses: input.input.responses.iter().cloned().collect(),
        state: input.input.state.clone(),
    };
    let body = serde_json::to_value(&body).unwrap_or(Value::Null);
    Draft::new(records::stream(id), records::CREATED, body)
}

/// The flat `CreateTaskResult` of task `id`, `working` with `message`.
fn create_result<F: Fold>(
    server: &Server<F>,
    input: &CallInput<'_, F>,
    id: &str,
    message: &str,
) -> Value {
    let at = input.now.to_rfc3339();
    let mut result = decorate(
        server,
        input.revision,
        Method::ToolsCall,
        json!({
            "taskId": id,
            "status": TaskStatus::Working.as_str(),
            "statusMessage": message,
            "createdAt": at,
            "lastUpdatedAt": at,
            "ttlMs": TASK_TTL_MS,
            "pollIntervalMs": POLL_INTERVAL_MS,
        }),
    );
    if let Value::Object(obj) = &mut result {
        obj.insert("resultType".into(), Value::String("task".into()));
    }
    result
}

/// A task as it stands at `now`.
#[derive(Clone, Debug, PartialEq)]
pub struct Evaluated {
    pub task_id: String,
    pub status: TaskStatus,
    pub status_message: String,
    pub created_at: Timestamp,
    pub last_updated_at: Timestamp,
    /// The inlined `CallToolResult` of a completed task.
    pub result: Option<Value>,
    /// The JSON-RPC error of a failed task.
    pub error: Option<(i64, String)>,
    /// What an `input_required` task asks.
    pub needed: Option<InputNeeded>,
}

/// Task `id` at `now`, from the snapshot alone; `None` when unknown or past its `ttlMs`.
pub fn evaluate<F: Fold>(
    server: &Server<F>,
    snapshot: &Snapshot<F>,
    now: Timestamp,
    revision: Revision,
    id: &str,
) -> Option<Evaluated> {
    let task = (server.catalog.tool_tasks?)(&snapshot.domain).get(id)?;
    if now.0 >= task.created.created_at.saturating_add(task.created.ttl_ms) {
        return None;
    }
    let mut out = Evaluated {
        task_id: id.to_string(),
        status: TaskStatus::Working,
        status_message: String::new(),
        created_at: Timestamp(task.created.created_at),
        last_updated_at: Timestamp(task.updated_at),
        result: None,
        error: None,
        needed: None,
    };
    if task.cancelled {
        out.status = TaskStatus::Cancelled;
        out.status_message = "cancelled by tasks/cancel".into();
        return Some(out);
    }
    let Some(tool) = server.catalog.tool(&task.created.tool) else {
        return Some(failed(
            out,
            format!("tool {} is no longer offered", task.created.tool),
        ));
    };
    let output = run(server, snapshot, now, revision, (id, task), tool);
    Some(settle(out, tool, revision, output, caps_of(task)))
}

fn caps_of(task: &ToolTask) -> ClientCaps {
    let has = |k: &str| task.created.caps.iter().any(|c| c == k);
    ClientCaps {
        elicitation: has("elicitation"),
        sampling: has("sampling"),
        roots: has("roots"),
    }
}

/// The handler's answer for the task at `now`.
fn run<F: Fold>(
    server: &Server<F>,
    snapshot: &Snapshot<F>,
    now: Timestamp,
    revision: Revision,
    (id, task): (&str, &ToolTask),
    tool: &ToolSpec<F>,
) -> ToolOutput {
    let ids = RequestIds::of_value(&json!({ "task": id }));
    let inputs = Inputs {
        responses: task.responses().into_iter().collect(),
        state: task.created.state.clone(),
        caps: caps_of(task),
    };
    let ctx = ToolContext {
        snapshot,
        config: &server.config,
        now,
        call_id: &ids.call_id,
        trace_id: &ids.trace_id,
        span_id: &ids.span_id,
        spec_revision: revision.as_str(),
        host: &[],
        meta: None,
        input: &inputs,
        task: Some(TaskClock {
            elapsed_ms: now.0.saturating_sub(task.created.created_at),
            started: true,
        }),
    };
    (tool.call)(&ctx, task.created.arguments.clone())
}

fn failed(mut out: Evaluated, message: String) -> Evaluated {
    out.status = TaskStatus::Failed;
    out.status_message = message.clone();
    out.error = Some((super::jsonrpc::INTERNAL_ERROR, message));
    out
}

/// The task status the handler's `output` means.
fn settle<F: Fold>(
    mut out: Evaluated,
    tool: &ToolSpec<F>,
    revision: Revision,
    output: ToolOutput,
    caps: ClientCaps,
) -> Evaluated {
    if let Some(needed) = output.input {
        if let Some(missing) = needed.missing(caps) {
            let why = format!(
                "the task needs the client capability {:?}, which the request that created it did not declare",
                missing.key()
            );
            return failed(out, why);
        }
        if needed.requests.is_empty() {
            return failed(out, "the task needed input but asked for nothing".into());
        }
        out.status = TaskStatus::InputRequired;
        out.status_message = "waiting for the client's input (tasks/update)".into();
        out.needed = Some(needed);
        return out;
    }
    if output.host.is_some() {
        return failed(
            out,
            format!("tool {} asked the host, which a task cannot", tool.name),
        );
    }
    match output.task {
        Some(TaskStep::Working(message)) => {
            out.status_message = message;
            out
        }
        Some(TaskStep::Failed { code, message }) => {
            out.status = TaskStatus::Failed;
            out.status_message = message.clone();
            out.error = Some((code, message));
            out
        }
        None => {
            out.status = TaskStatus::Completed;
            out.result = Some(rendered(tool, revision, output.result, output.content));
            out
        }
    }
}

/// The `CallToolResult` of a finished handler, as `tools/call` renders one without the meter.
fn rendered<F>(
    tool: &ToolSpec<F>,
    revision: Revision,
    result: Result<Value, ToolError>,
    content: Option<Vec<Value>>,
) -> Value {
    let is_error = result.is_err();
    let payload = result.unwrap_or_else(|e| e.to_value());
    let content = content
        .filter(|_| !is_error)
        .unwrap_or_else(|| vec![CallToolResult::text(payload.to_string())]);
    let structured =
        !is_error && tool.output_schema.is_some() && revision.has_titles_and_structured_output();
    CallToolResult {
        content,
        structured_content: structured.then_some(payload),
        is_error: Some(is_error),
        partial: None,
        meta: None,
    }
    .into_value()
}

/// The `DetailedTask` of `tasks/get`.
pub fn detailed(task: &Evaluated) -> Value {
    let mut out = json!({
        "taskId": task.task_id,
        "status": task.status.as_str(),
        "createdAt": task.created_at.to_rfc3339(),
        "lastUpdatedAt": task.last_updated_at.to_rfc3339(),
        "ttlMs": TASK_TTL_MS,
        "pollIntervalMs": POLL_INTERVAL_MS,
    });
    let Value::Object(obj) = &mut out else {
        return out;
    };
    if !task.status_message.is_empty() {
        obj.insert("statusMessage".into(), task.status_message.clone().into());
    }
    if let Some(result) = &task.result {
        obj.insert("result".into(), result.clone());
    }
    if let Some((code, message)) = &task.error {
        obj.insert("error".into(), json!({"code": code, "message": message}));
    }
    if let Some(needed) = &task.needed {
        let requests: Map<String, Value> = needed
            .requests
            .iter()
            .map(|(k, r)| (k.clone(), r.to_value()))
            .collect();
        obj.insert("inputRequests".into(), Value::Object(requests));
    }
    out
}

/// Serves a `tasks/*` request of 2026-07-28 that this module answers: any, when the request
/// does not declare the extension (`-32021`, for every catalogue's tasks), else `tasks/get`,
/// `tasks/update` or `tasks/cancel` of an engine task. `None`: the caller answers from the
/// catalogue's hooks (or as an unknown task).
pub fn serve<F: Fold>(
    server: &Server<F>,
    method: Method,
    input: &CallInput<'_, F>,
) -> Option<TaskReply> {
    if !input.revision.is_modern() {
        return None;
    }
    if !extension_declared(input.params) {
        return Some(TaskReply {
            result: Err(missing_extension(method.as_str())),
            meter: None,
            records: Vec::new(),
            pending: None,
            ask: None,
        });
    }
    let id = TaskParams::read(input.params).ok()?.task_id;
    let task = evaluate(server, input.snapshot, input.now, input.revision, id)?;
    let ack = || decorate(server, input.revision, method, Value::Object(Map::new()));
    let (result, records) = match method {
        Method::TasksGet => (
            Ok(decorate(server, input.revision, method, detailed(&task))),
            Vec::new(),
        ),
        Method::TasksUpdate => match answers(input.params, &task) {
            Err(e) => (Err(e), Vec::new()),
            Ok(None) => (Ok(ack()), Vec::new()),
            Ok(Some(kept)) => {
                let body = json!({"task_id": id, "responses": kept, "at": input.now.0});
                (
                    Ok(ack()),
                    appended(server, input, id, records::ANSWERED, body),
                )
            }
        },
        // Cancelling a terminal task changes nothing and is acknowledged alike.
        Method::TasksCancel if task.status.is_final() => (Ok(ack()), Vec::new()),
        Method::TasksCancel => {
            let body = json!({"task_id": id, "at": input.now.0});
            (
                Ok(ack()),
                appended(server, input, id, records::CANCELLED, body),
            )
        }
        _ => return None,
    };
    Some(TaskReply {
        result,
        meter: None,
        records,
        pending: None,
        ask: None,
    })
}

/// The answers of a `tasks/update` to what the task asks now (others are ignored), or the
/// `-32602` of a malformed update or answer; `None`: nothing to record.
fn answers(
    params: Option<&Value>,
    task: &Evaluated,
) -> Result<Option<Map<String, Value>>, RpcError> {
    let update = TaskUpdateParams::read(params)?;
    let Some(needed) = &task.needed else {
        return Ok(None);
    };
    let mut kept = Map::new();
    for (key, request) in &needed.requests {
        let Some(response) = update.input_responses.get(key) else {
            continue;
        };
        if let Some(why) = request.misfit(response) {
            let path = validate::child_path("params.inputResponses", key);
            return Err(RpcError::invalid_params(format!("{path}: {why}"))
                .with_data(json!({"field": path})));
        }
        kept.insert(key.clone(), response.clone());
    }
    if super::call::holds_float(&Value::Object(kept.clone())) {
        return Err(RpcError::invalid_params(
            "params.inputResponses: answers holding a fractional number cannot be recorded; send integers or strings",
        ));
    }
    Ok((!kept.is_empty()).then_some(kept))
}

/// One task record sealed onto the snapshot.
fn appended<F: Fold>(
    server: &Server<F>,
    input: &CallInput<'_, F>,
    id: &str,
    kind: &str,
    body: Value,
) -> Vec<Record> {
    let snapshot = input.snapshot;
    let draft = Draft::new(records::stream(id), kind, body);
    seal(
        &snapshot.position,
        |s| snapshot.stream_head(s),
        vec![draft],
        &server.config.audit_key,
    )
}

#[cfg(test)]
mod tests;
