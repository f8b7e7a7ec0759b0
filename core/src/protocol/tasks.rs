//! Tasks: task-augmented `tools/call` and the `tasks/*` methods, in both eras.
//!
//! - Revision 2025-11-25: a `tools/call` whose params carry `task` returns a `CreateTaskResult`
//!   (`{task: Task}`) for a tool whose `execution.taskSupport` is not `forbidden` (else
//!   `-32601`); `tasks/get`, `tasks/result`, `tasks/list` and `tasks/cancel` drive it. Other
//!   handshake revisions declare no task capability and ignore `task` (the spec's rule for
//!   receivers without the capability).
//! - Revision 2026-07-28 (extension `io.modelcontextprotocol/tasks`): the response shape follows
//!   the call, not the declared capability: a plain `tools/call` always answers the tool's own
//!   result (for `bernstein_run` the immediate run JSON, never a `resultType: "task"`), so no
//!   host is held for the length of a run. A host with the extension reads the run through
//!   `tasks/get` with the run (task) id: the detailed task (its result when completed, its
//!   error when failed); `tasks/update` and `tasks/cancel` acknowledge. `tasks/result` and
//!   `tasks/list` are not methods of the extension.
//!
//! A tool's refusal of a task-augmented 2025-11-25 call creates no task and is a `-32602`
//! carrying the structured refusal as `data`; a forbidden tool's is `-32601`. Both still append
//! the call's audit record. `tasks/list` lists runs (root tasks) in run-id order; any Bernstein
//! task id, a subtask's included, is a valid `taskId` for the other methods.
//!
//! What a task is comes from the catalogue's [`TaskHooks`]: the task a call created (named by
//! the `task_id` of its payload), its view, the page of `tasks/list`, a finished task's answer,
//! the tool `tasks/cancel` goes through. They are pure in the snapshot, so any instance answers
//! identically; a catalogue without hooks knows no task. Every task has `ttl` 86,400,000 ms.
//! Errors: unknown or malformed task id, bad cursor, cancelling a terminal task → `-32602` (in
//! 2026-07-28 the extension acknowledges that cancel alike, changing nothing). `tasks/result`
//! of a running task answers at once with a retryable `-32000` and sets
//! [`Outcome::pending`](super::Outcome::pending) so that a runtime
//! can wait for the ledger to move and ask again: the core never blocks.
//!
//! This module must never keep state between requests nor read a clock.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::{Map, Value, json};

use super::call::{CallInput, CallReply, call_registered, call_tool, refuse_call};
use super::decorate::decorate;
use super::era::Revision;
use super::input::{InputNeeded, InputRequest};
use super::jsonrpc::{METHOD_NOT_FOUND, RpcError, shorten};
use super::model::results::{
    CallToolResult, CreateTaskResult, HandshakeTask, ListTasksResult, ModernTask, TaskError,
    TaskFields, to_value,
};
use super::model::{CallParams, Method, TaskListParams, TaskParams, TaskUpdateParams};
use super::refusal::Common;
use super::registry::{Task, TaskHooks, TaskStatus, TaskSupport, ToolLookup};
use super::{MeterSlot, Phase, Server, Wait};
use crate::ledger::Fold;
use crate::ledger::{Record, Snapshot};

/// Identifier of the stateless-era tasks extension.
pub const TASKS_EXTENSION: &str = "io.modelcontextprotocol/tasks";
pub use super::era::META_RELATED_TASK;
/// `_meta` key of the text a host may hand its model while the task runs.
pub const META_IMMEDIATE_RESPONSE: &str = "io.modelcontextprotocol/model-immediate-response";
/// Tasks per `tasks/list` page.
pub const LIST_PAGE_SIZE: usize = 50;
/// Error code of a `tasks/result` that stopped waiting before the task finished, and of a
/// failed task's `error` (server-defined range).
pub const TASK_NOT_READY: i64 = -32000;
/// Retention of every MCP task: 24 hours, in milliseconds.
pub const TASK_TTL_MS: u64 = 86_400_000;
/// Suggested interval between `tasks/get` polls, in milliseconds.
pub const POLL_INTERVAL_MS: u64 = 5_000;

/// Whether this `tools/call` asks for a task: only a 2025-11-25 call whose `params.task` is an
/// object does. A 2026-07-28 client that declares the tasks extension still gets the plain
/// result of a plain call (the shape follows the call).
pub fn augmented(revision: Revision, params: Option<&Value>) -> bool {
    revision.has_tool_execution()
        && CallParams::read(params)
            .ok()
            .and_then(|p| p.task)
            .is_some_and(Value::is_object)
}

/// Serves a task-augmented (2025-11-25) `tools/call`.
pub fn call_as_task<F: Fold>(server: &Server<F>, input: &CallInput<'_, F>) -> CallReply {
    let name = CallParams::read(input.params).ok().map(|p| p.name);
    let support = name.and_then(|n| match server.catalog.lookup_tool(n, &server.config) {
        ToolLookup::Tool(t) | ToolLookup::Alias { tool: t, .. } => Some(t.task_support),
        _ => None,
    });
    match support {
        // Unknown names and out-of-tier tools get the usual answer.
        None => return call_tool(server, input),
        Some(TaskSupport::Forbidden) => {
            let name = shorten(name.unwrap_or_default(), 100);
            let error = RpcError::new(
                METHOD_NOT_FOUND,
                format!(
                    "tool {name} does not support task-augmented calls (execution.taskSupport is \"forbidden\"); \
                     call it without params.task"
                ),
            )
            .with_data(json!({ "tool": name }));
            return refuse_call(server, input, error, Common::TaskNotSupported);
        }
        _ => {}
    }
    let reply = call_tool(server, input);
    if reply.host.is_some() || reply.input.is_some() {
        return reply;
    }
    let refused = match &reply.result {
        Ok(v) => v.get("isError") == Some(&Value::Bool(true)),
        Err(_) => true,
    };
    if refused {
        // No task was created. A 2025-11-25 client awaits a CreateTaskResult, so the tool's
        // refusal travels as a JSON-RPC error carrying the structured refusal.
        return CallReply {
            result: reply.result.and_then(refusal_error),
            meter: None,
            ..reply
        };
    }
    let (Some(hooks), Some(task_id)) = (&server.catalog.tasks, reply.task_id.clone()) else {
        return reply;
    };
    let after = applied(input.snapshot, &reply.records);
    let Some(view) = (hooks.view)(&after, &task_id) else {
        return reply;
    };
    let mut meta = Map::new();
    meta.insert(
        META_IMMEDIATE_RESPONSE.into(),
        Value::String(format!(
            "Started task {task_id}; it runs for minutes to hours. Its status arrives through tasks/get."
        )),
    );
    let result = CreateTaskResult {
        task: handshake_task(&view),
        meta,
    };
    CallReply {
        result: Ok(to_value(&result)),
        meter: None,
        ..reply
    }
}

/// The JSON text of the request id that `bytes` cancels, when `bytes` is a
/// `notifications/cancelled` message: [`ClientMessage::cancelled_request`] for a caller holding
/// bytes (a runtime holds the message it read, and asks it).
///
/// [`ClientMessage::cancelled_request`]: super::ClientMessage::cancelled_request
pub fn cancelled_request(bytes: &[u8]) -> Option<String> {
    super::ClientMessage::read(bytes, &crate::config::Limits::default()).cancelled_request()
}

/// The JSON text of the id of message `bytes`, a single JSON object (matches
/// [`cancelled_request`]): [`ClientMessage::request_id`] for a caller holding bytes.
///
/// [`ClientMessage::request_id`]: super::ClientMessage::request_id
pub fn request_id(bytes: &[u8]) -> Option<String> {
    super::ClientMessage::read(bytes, &crate::config::Limits::default()).request_id()
}

/// The `-32602` that carries a tool's refusal (`isError` result) of a task-augmented call.
fn refusal_error(result: Value) -> Result<Value, RpcError> {
    let text = result["content"][0]["text"].as_str().unwrap_or_default();
    let doc: Value = serde_json::from_str(text).unwrap_or(Value::Null);
    let refusal = match doc.get("_meter") {
        Some(_) => doc["result"].clone(),
        None => doc,
    };
    let message = refusal["message"]
        .as_str()
        .unwrap_or("the tool refused the call")
        .to_string();
    Err(RpcError::invalid_params(format!(
        "the task was not created: {}",
        shorten(&message, 400)
    ))
    .with_data(refusal))
}

/// What serving one `tasks/*` request produced.
#[derive(Debug)]
pub struct TaskReply {
    pub result: Result<Value, RpcError>,
    pub meter: Option<MeterSlot>,
    pub records: Vec<Record>,
    pub pending: Option<Wait>,
    /// Set by a handshake-era `tasks/result` of a task that asks its requestor: put these to
    /// the client and serve the request again with its answers (`result` is then unused).
    pub ask: Option<InputNeeded>,
}

impl TaskReply {
    pub(crate) fn of(result: Result<Value, RpcError>) -> TaskReply {
        TaskReply {
            result,
            meter: None,
            records: Vec::new(),
            pending: None,
            ask: None,
        }
    }
}

/// Whether `method` is a tasks method this module serves in `revision`.
pub fn serves(method: Method, revision: Revision) -> bool {
    match method {
        Method::TasksGet | Method::TasksCancel => {
            revision.has_tool_execution() || revision.is_modern()
        }
        Method::TasksResult | Method::TasksList => revision.has_tool_execution(),
        Method::TasksUpdate => revision.is_modern(),
        _ => false,
    }
}

/// Serves `tasks/get`, `tasks/result`, `tasks/list`, `tasks/cancel` or `tasks/update`
/// (callers check [`serves`] first).
pub fn serve<F: Fold>(server: &Server<F>, method: Method, input: &CallInput<'_, F>) -> TaskReply {
    let modern = input.revision.is_modern();
    let hooks = server.catalog.tasks.as_ref();
    if method == Method::TasksList {
        return TaskReply::of(list(hooks, input));
    }
    let found = task_param(input.params).and_then(|id| {
        hooks
            .and_then(|h| Some((h, (h.view)(input.snapshot, id)?)))
            .ok_or_else(|| unknown_task(id))
    });
    let (hooks, view) = match found {
        Ok(found) => found,
        Err(e) => return TaskReply::of(Err(e)),
    };
    match method {
        Method::TasksGet if modern => {
            let detailed = detailed_task(server, hooks, input, &view);
            TaskReply::of(Ok(decorate(server, input.revision, method, detailed)))
        }
        Method::TasksGet => TaskReply::of(Ok(to_value(&handshake_task(&view)))),
        Method::TasksUpdate => update(server, hooks, input, &view),
        Method::TasksCancel => cancel(server, hooks, input, &view),
        _ => result(server, hooks, input, &view),
    }
}

/// `tasks/result`: the task's final answer, or a retryable error plus a wait.
fn result<F: Fold>(
    server: &Server<F>,
    hooks: &TaskHooks<F>,
    input: &CallInput<'_, F>,
    view: &Task,
) -> TaskReply {
    if !view.is_terminal() && input.phase == Phase::Cancelled {
        let (mut result, meter) = cancelled_result(server, hooks, input, view);
        result.meta = Some(related_task(view));
        return TaskReply {
            meter,
            ..TaskReply::of(Ok(result.into_value()))
        };
    }
    // What the task asks, put to a client that can answer it; its answer recorded, the wait
    // goes on as for any running task.
    let mut answered = Vec::new();
    if !view.is_terminal() && input.phase == Phase::Live {
        let asks = (hooks.asks)(input.snapshot, &view.task_id);
        if !asks.is_empty()
            && asks
                .iter()
                .all(|(_, r)| input.input.caps.allows(r.capability()))
        {
            match ask_or_record(server, hooks, input, view, asks) {
                Ok(records) => answered = records,
                Err(reply) => return *reply,
            }
        }
    }
    if !view.is_terminal() {
        let (why, data) = if input.phase == Phase::Refused {
            (
                "the server already holds as many waiting answers as it allows, so this one \
                 cannot wait; call tasks/result again in a moment, or poll tasks/get",
                json!({"taskId": view.task_id, "status": view.status.as_str(), "reason": Common::TooManyWaits.as_str()}),
            )
        } else {
            (
                "call tasks/result again, or poll tasks/get",
                json!({"taskId": view.task_id, "status": view.status.as_str()}),
            )
        };
        let err = RpcError::new(
            TASK_NOT_READY,
            format!(
                "task {} is still {}; {why} every {} ms",
                view.task_id,
                view.status.as_str(),
                POLL_INTERVAL_MS
            ),
        )
        .with_data(data);
        return TaskReply {
            records: answered,
            pending: Some(Wait {
                after: input.snapshot.position,
                max_wait_ms: None,
                watch: None,
            }),
            ..TaskReply::of(Err(err))
        };
    }
    let (mut result, meter) = call_tool_result(server, hooks, input, view);
    result.meta = Some(related_task(view));
    TaskReply {
        meter,
        ..TaskReply::of(Ok(result.into_value()))
    }
}

/// The `_meta` naming the task a result belongs to.
fn related_task(view: &Task) -> Map<String, Value> {
    let mut meta = Map::new();
    meta.insert(META_RELATED_TASK.into(), json!({ "taskId": view.task_id }));
    meta
}

/// The `CallToolResult` a finished task answers: what the start tool answers for the task as
/// it stands now, metered like a tool call when the meter is on.
fn call_tool_result<F: Fold>(
    server: &Server<F>,
    hooks: &TaskHooks<F>,
    input: &CallInput<'_, F>,
    view: &Task,
) -> (CallToolResult, Option<MeterSlot>) {
    let payload = (hooks.answer)(input.snapshot, &view.task_id).unwrap_or(Value::Null);
    let ok = view.status == TaskStatus::Completed;
    let (text, meter) = metered(server, hooks, input, payload, ok);
    let result = CallToolResult {
        content: vec![CallToolResult::text(text.to_string())],
        structured_content: Some(text),
        is_error: Some(!ok),
        ..CallToolResult::default()
    };
    (result, meter)
}

/// `payload` as the text of the start tool's result: in the `_meter` envelope when the meter
/// is on (the runtime fills in the latency through the returned slot).
fn metered<F: Fold>(
    server: &Server<F>,
    hooks: &TaskHooks<F>,
    input: &CallInput<'_, F>,
    payload: Value,
    ok: bool,
) -> (Value, Option<MeterSlot>) {
    if !server.config.cost_meter {
        return (payload, None);
    }
    let slot = MeterSlot {
        tool: hooks.start_tool.to_string(),
        call_id: input.ids.call_id.clone(),
        ok,
        ts: input.now,
        payload,
    };
    // The envelope is written at render time, with the latency; this is its place.
    (Value::Null, Some(slot))
}

/// What a `tasks/result` cancelled while its task still runs answers: not an error, the task
/// as it stood in `partial`, metered like the tool call it stands for.
fn cancelled_result<F: Fold>(
    server: &Server<F>,
    hooks: &TaskHooks<F>,
    input: &CallInput<'_, F>,
    view: &Task,
) -> (CallToolResult, Option<MeterSlot>) {
    let partial = json!([to_value(&handshake_task(view))]);
    let payload = json!({
        "cancelled": true,
        "message": format!(
            "tasks/result cancelled while task {} is still {}; the task itself goes on (tasks/cancel stops it)",
            view.task_id,
            view.status.as_str()
        ),
        "partial": partial,
    });
    let (text, meter) = metered(server, hooks, input, payload, false);
    let result = CallToolResult {
        content: vec![CallToolResult::text(text.to_string())],
        partial: Some(partial),
        ..CallToolResult::default()
    };
    (result, meter)
}

/// A handshake-era `tasks/result` of a task that asks its requestor (the client can answer):
/// the records of the client's answer, once it gave one, or else the reply that asks it (or
/// refuses an answer that does not fit).
fn ask_or_record<F: Fold>(
    server: &Server<F>,
    hooks: &TaskHooks<F>,
    input: &CallInput<'_, F>,
    view: &Task,
    asks: Vec<(String, InputRequest)>,
) -> Result<Vec<Record>, Box<TaskReply>> {
    let answered = asks
        .iter()
        .find_map(|(key, request)| Some((key, request, input.input.response(key)?)));
    let Some((key, request, response)) = answered else {
        return Err(Box::new(TaskReply {
            ask: Some(InputNeeded {
                requests: asks,
                state: None,
                related_task: Some(view.task_id.clone()),
            }),
            ..TaskReply::of(Ok(Value::Null))
        }));
    };
    reply(server, hooks, input, view, key, request, response).map_err(|(e, records)| {
        Box::new(TaskReply {
            records,
            ..TaskReply::of(Err(e))
        })
    })
}

/// `tasks/update` (2026-07-28): records the answer to what the task asks now (others are
/// ignored) through the catalogue's reply tool, and acknowledges.
fn update<F: Fold>(
    server: &Server<F>,
    hooks: &TaskHooks<F>,
    input: &CallInput<'_, F>,
    view: &Task,
) -> TaskReply {
    let update = match TaskUpdateParams::read(input.params) {
        Ok(update) => update,
        Err(e) => return TaskReply::of(Err(e)),
    };
    let asks = if view.is_terminal() {
        Vec::new()
    } else {
        (hooks.asks)(input.snapshot, &view.task_id)
    };
    let answered = asks
        .iter()
        .find_map(|(key, request)| Some((key, request, update.input_responses.get(key.as_str())?)));
    let records = match answered {
        None => Vec::new(),
        Some((key, request, response)) => {
            match reply(server, hooks, input, view, key, request, response) {
                Ok(records) => records,
                Err((e, records)) => {
                    return TaskReply {
                        records,
                        ..TaskReply::of(Err(e))
                    };
                }
            }
        }
    };
    TaskReply {
        records,
        ..TaskReply::of(Ok(empty_ack(server, input)))
    }
}

/// Records `response` to the question `key` through the catalogue's reply tool: its records,
/// or the `-32602` of a response that does not fit or that the tool refused (with the records
/// of the refused call: its audit entry).
fn reply<F: Fold>(
    server: &Server<F>,
    hooks: &TaskHooks<F>,
    input: &CallInput<'_, F>,
    view: &Task,
    key: &str,
    request: &InputRequest,
    response: &Value,
) -> Result<Vec<Record>, (RpcError, Vec<Record>)> {
    let path = super::validate::child_path("params.inputResponses", key);
    if let Some(why) = request.misfit(response) {
        let err =
            RpcError::invalid_params(format!("{path}: {why}")).with_data(json!({"field": path}));
        return Err((err, Vec::new()));
    }
    let Some(args) = (hooks.reply_args)(key, response) else {
        return Ok(Vec::new());
    };
    let Some(tool) = server.catalog.tool(hooks.reply_tool) else {
        return Err((
            RpcError::internal("the task's reply tool is not in the catalogue"),
            Vec::new(),
        ));
    };
    let called = call_registered(server, input, tool, &args);
    match refused(&called) {
        None => Ok(called.records),
        Some(why) => Err((
            RpcError::invalid_params(format!(
                "{path}: the answer to task {} was not recorded: {}",
                view.task_id,
                shorten(&why, 400)
            ))
            .with_data(json!({"taskId": view.task_id, "field": path})),
            called.records,
        )),
    }
}

/// Why a gate call refused, if it did: its structured refusal's text or its error.
fn refused(reply: &CallReply) -> Option<String> {
    match &reply.result {
        Ok(v) if v.get("isError") == Some(&Value::Bool(true)) => Some(
            v["content"][0]["text"]
                .as_str()
                .unwrap_or("the gate refused")
                .to_string(),
        ),
        Ok(_) => None,
        Err(e) => Some(e.message.clone()),
    }
}

fn detailed_task<F: Fold>(
    server: &Server<F>,
    hooks: &TaskHooks<F>,
    input: &CallInput<'_, F>,
    view: &Task,
) -> Value {
    let mut task = ModernTask {
        fields: task_fields(view),
        ttl_ms: TASK_TTL_MS,
        poll_interval_ms: POLL_INTERVAL_MS,
        result: None,
        error: None,
        input_requests: None,
    };
    match view.status {
        TaskStatus::Completed => {
            let (result, meter) = call_tool_result(server, hooks, input, view);
            let result = result.into_value();
            // Embedded in the task, this result is not the one rendering fills with the
            // measured latency: its envelope is filled in here, at 0.
            task.result = Some(match meter {
                Some(slot) => super::render::filled_result(&result, &slot, 0),
                None => result,
            });
        }
        TaskStatus::Failed => {
            task.error = Some(TaskError {
                code: TASK_NOT_READY,
                message: &view.status_message,
            });
        }
        TaskStatus::InputRequired => {
            // What the task asks its requestor now (nothing when the input it waits for is an
            // operator's, e.g. a plan's decision).
            let requests: Map<String, Value> = (hooks.asks)(input.snapshot, &view.task_id)
                .iter()
                .map(|(key, request)| (key.clone(), request.to_value()))
                .collect();
            task.input_requests = Some(Value::Object(requests));
        }
        TaskStatus::Working | TaskStatus::Cancelled => {}
    }
    to_value(&task)
}

/// `tasks/cancel` through the gate of the catalogue's cancel tool.
fn cancel<F: Fold>(
    server: &Server<F>,
    hooks: &TaskHooks<F>,
    input: &CallInput<'_, F>,
    view: &Task,
) -> TaskReply {
    if view.is_terminal() && input.revision.is_modern() {
        // The extension acknowledges a cancel of a finished task alike, and it changes nothing.
        return TaskReply::of(Ok(empty_ack(server, input)));
    }
    if view.is_terminal() {
        return TaskReply::of(Err(RpcError::invalid_params(format!(
            "Cannot cancel task {}: already in terminal status {}",
            view.task_id,
            view.status.as_str()
        ))
        .with_data(json!({"taskId": view.task_id, "status": view.status.as_str()}))));
    }
    let Some(tool) = server.catalog.tool(hooks.cancel_tool) else {
        return TaskReply::of(Err(RpcError::method_not_found(
            Method::TasksCancel.as_str(),
            "",
        )));
    };
    let reply = call_registered(server, input, tool, &(hooks.cancel_args)(&view.task_id));
    if let Some(why) = refused(&reply) {
        let err = RpcError::invalid_params(format!(
            "Cannot cancel task {} in status {}: {}",
            view.task_id,
            view.status.as_str(),
            shorten(&why, 400)
        ))
        .with_data(json!({"taskId": view.task_id, "status": view.status.as_str()}));
        return TaskReply {
            records: reply.records,
            ..TaskReply::of(Err(err))
        };
    }
    let after = applied(input.snapshot, &reply.records);
    let result = if input.revision.is_modern() {
        empty_ack(server, input)
    } else {
        let view = (hooks.view)(&after, &view.task_id).unwrap_or_else(|| view.clone());
        to_value(&handshake_task(&view))
    };
    TaskReply {
        records: reply.records,
        ..TaskReply::of(Ok(result))
    }
}

/// The 2026-07-28 `tasks/cancel` acknowledgement: an empty result.
fn empty_ack<F: Fold>(server: &Server<F>, input: &CallInput<'_, F>) -> Value {
    decorate(
        server,
        input.revision,
        Method::TasksCancel,
        Value::Object(Map::new()),
    )
}

/// `tasks/list`: the catalogue's root tasks in id order, [`LIST_PAGE_SIZE`] per page; the
/// cursor is the base64url of the last task id of the previous page.
fn list<F: Fold>(
    hooks: Option<&TaskHooks<F>>,
    input: &CallInput<'_, F>,
) -> Result<Value, RpcError> {
    let after = match TaskListParams::read(input.params)?.cursor {
        None => None,
        Some(c) => Some(decode_cursor(hooks, c)?),
    };
    let (page, more) = match hooks {
        Some(h) => (h.list)(input.snapshot, after.as_deref(), LIST_PAGE_SIZE),
        None => (Vec::new(), false),
    };
    let next_cursor = page
        .last()
        .filter(|_| more)
        .map(|last| URL_SAFE_NO_PAD.encode(last.task_id.as_bytes()));
    Ok(to_value(&ListTasksResult {
        tasks: page.iter().map(handshake_task).collect(),
        next_cursor,
    }))
}

/// A cursor's task id; without hooks no task id exists, so no cursor is valid.
fn decode_cursor<F: Fold>(hooks: Option<&TaskHooks<F>>, cursor: &str) -> Result<String, RpcError> {
    let bad = || {
        RpcError::invalid_params(format!(
            "Invalid cursor {:?}: pass back a nextCursor from tasks/list unchanged",
            shorten(cursor, 64)
        ))
    };
    let bytes = URL_SAFE_NO_PAD.decode(cursor).map_err(|_| bad())?;
    let id = String::from_utf8(bytes).map_err(|_| bad())?;
    if !hooks.is_some_and(|h| (h.is_task_id)(&id)) {
        return Err(bad());
    }
    Ok(id)
}

fn task_param(params: Option<&Value>) -> Result<&str, RpcError> {
    TaskParams::read(params).map(|p| p.task_id)
}

fn unknown_task(id: &str) -> RpcError {
    let shown = shorten(id, 100);
    RpcError::invalid_params(format!(
        "Invalid taskId {shown:?}: no such task in this project's ledger"
    ))
    .with_data(json!({"taskId": shown}))
}

/// The 2025-11-25 `Task` object.
fn handshake_task(view: &Task) -> HandshakeTask<'_> {
    HandshakeTask {
        fields: task_fields(view),
        ttl: TASK_TTL_MS,
        poll_interval: POLL_INTERVAL_MS,
    }
}

/// What both eras' `Task` objects say of `view`.
fn task_fields(view: &Task) -> TaskFields<'_> {
    TaskFields {
        task_id: &view.task_id,
        status: view.status.as_str(),
        status_message: &view.status_message,
        created_at: view.created_at.to_rfc3339(),
        last_updated_at: view.last_updated_at.to_rfc3339(),
    }
}

/// `snapshot` with `records` folded in.
fn applied<F: Fold>(snapshot: &Snapshot<F>, records: &[Record]) -> Snapshot<F> {
    let mut after = snapshot.clone();
    for r in records {
        // Records sealed against this very snapshot always extend it.
        if after.apply(r).is_err() {
            return snapshot.clone();
        }
    }
    after
}
