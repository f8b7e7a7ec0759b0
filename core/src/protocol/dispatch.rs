//! From a message read once ([`ClientMessage`], which decided the size, UTF-8, depth and syntax
//! checks) to an [`Outcome`]: batches (revision 2025-03-26 only), the choice of era and the
//! routing of each method.
//!
//! Order of checks for one message: size (`-32600`), UTF-8 (`-32700`), nesting depth
//! (`-32600`), JSON syntax and duplicate keys (`-32700`, [`super::strict_json`]), all decided
//! when the message was read; then JSON-RPC shape (`-32600`; notifications and client
//! responses never get a reply), era and envelope (`-32602`, `-32022`, `-32020`), method
//! (`-32601`), params (`-32602`). A batch in any revision but 2025-03-26 gets one `-32600`.
//!
//! Batch elements are served in order against a working copy of the snapshot that each
//! element's records advance, so a batch commits as one append of consecutive transactions.
//! This module must never panic on input and never keep state between calls.

use std::borrow::Cow;

use serde_json::{Value, json};

use super::call::{CallInput, call_tool};
use super::completion::complete;
use super::decorate::decorate;
use super::era::{self, META_PROTOCOL_VERSION, Revision};
use super::host::{HostReply, HostRequest};
use super::ids::RequestIds;
use super::input::{ClientCaps, ClientSide, InputNeeded, Inputs};
use super::input_round::{self as round, Asked, RoundOf};
use super::jsonrpc::{Id, Incoming, RpcError, classify};
use super::lifecycle::{discover, initialize};
use super::listing::{
    PromptGot, get_prompt, list_prompts, list_resources, list_tools_for, tools_list_bytes,
};
use super::logging::{self, LogLevel};
use super::message::{ClientMessage, MessageView, Reading, id_from_raw, oversize_error, slot_ids};
use super::model::{ListParams, Meta, Method};
use super::prescan::prescan;
use super::progress;
use super::resource_read::read_resource;
use super::resource_templates::list_resource_templates;
use super::subscriptions;
use super::tally::{self, OTHER_METHOD, Tally};
use super::tasks;
use super::tool_tasks;
use super::{Input, MessageInput, MeterSlot, Outcome, Phase, Response, Server, Wait, Watch};
use crate::digest::Digest;
use crate::ledger::Fold;
use crate::ledger::{Append, Record, run_stream};

/// Handles one message given as bytes (see the module docs): reads it, then serves it.
pub fn handle<F: Fold>(
    server: &Server<F>,
    input: &Input<'_, F>,
    host: &[HostReply],
    phase: Phase,
) -> Outcome {
    // Read in place: a caller holding bytes has them copied nowhere.
    let reading = Reading::of(input.bytes, &server.config.limits);
    let input = MessageInput {
        message: MessageView::new(input.bytes, &reading),
        snapshot: input.snapshot,
        now: input.now,
        transport: input.transport,
        client: ClientSide::default(),
    };
    serve(server, &input, Some(host), phase, None)
}

/// Serves one message read before (see the module docs), what [`handle`] does after reading
/// it: a refused message, a batch, or one request, notification or client's response; for a
/// request its era (and envelope), its lifecycle and its method, routed to its handler; then
/// the response and the [`Append`] of its records. Each element of a batch is served here
/// again (`element`: its index and value; `input` holds the batch's working snapshot) with no
/// `host`: an element never asks the host, nor waits.
pub fn serve<F: Fold>(
    server: &Server<F>,
    input: &MessageInput<'_, F>,
    host: Option<&[HostReply]>,
    phase: Phase,
    element: Option<(usize, &Value)>,
) -> Outcome {
    let (slot, value) = match element {
        Some(element) => element,
        None => {
            let message = input.message;
            let value = match (message.refusal(), message.value()) {
                (None, Ok(value)) => value,
                (Some((id, err)), _) => {
                    let span = RequestIds::of_bytes(message.bytes()).span_id;
                    return reply(Response::error(id, err, span));
                }
                // Every unreadable message is refused above; this only keeps the match total.
                (None, Err(_)) => {
                    let err = RpcError::parse_error("the message could not be read");
                    let span = RequestIds::of_bytes(message.bytes()).span_id;
                    return reply(Response::error(None, &err, span));
                }
            };
            if let Value::Array(items) = value {
                return handle_batch(server, input, items);
            }
            (0, value)
        }
    };
    let snapshot = input.snapshot;
    let raw_id = input.message.raw_id(slot);
    // Computed once, when the message was read.
    let computed;
    let ids = match input.message.ids(slot) {
        Some(ids) => ids,
        None => {
            computed = slot_ids(value, raw_id);
            &computed
        }
    };
    let (id, method, params) = match classify(value, raw_id) {
        Incoming::Notification { .. } | Incoming::ClientResponse => return Outcome::default(),
        Incoming::Invalid { id, error } => {
            return reply(Response::error(id.as_ref(), &error, ids.span_id.clone()));
        }
        Incoming::Request { id, method, params } => (id, method, params),
    };
    let known = Method::parse(method);
    // The request routed: its era (and envelope), its lifecycle, its method and handler.
    let routed = route(
        server,
        input,
        (method, known, &id),
        params,
        ids,
        (host, phase),
    );
    let calls = tally::audited_calls(server, &routed.records);
    let append = |read_heads| {
        (!routed.records.is_empty()).then_some(Append {
            expected: snapshot.position,
            read_heads,
            records: routed.records,
        })
    };
    if routed.host.is_some() || routed.withheld || routed.ask.is_some() {
        // Not answered yet: the runtime performs the host request, asks the client, or waits,
        // and asks again (a waiting long poll may still send a progress tick now).
        return Outcome {
            host: routed.host,
            ask: routed.ask,
            pending: routed.pending,
            notifications: routed.notifications,
            subscription: routed.subscription,
            tally: Tally {
                methods: Vec::new(),
                calls,
            },
            append: append(None),
            ..Outcome::default()
        };
    }
    let response = match (routed.result, routed.rendered) {
        (Ok(_), Some(raw)) => Response::rendered(&id, raw, ids.span_id.clone()),
        (Ok(result), None) => Response {
            meter: routed.meter,
            ..Response::result(&id, result, ids.span_id.clone())
        },
        (Err(e), _) => Response::error(Some(&id), &e, ids.span_id.clone()),
    };
    Outcome {
        response: Some(response),
        notifications: routed.notifications,
        append: append(routed.read_heads),
        negotiated_version: routed.negotiated.map(|r| r.as_str().to_string()),
        log_level: routed.log_level,
        pending: routed.pending,
        host: None,
        ask: None,
        declared_caps: routed.declared_caps,
        tally: Tally {
            methods: vec![known.map_or(OTHER_METHOD, Method::as_str)],
            calls,
        },
        subscription: routed.subscription,
    }
}

/// A request routed: its era (and envelope), its lifecycle, its method and handler, on
/// `input`'s snapshot; `host` and `phase` as [`serve`] has them.
fn route<F: Fold>(
    server: &Server<F>,
    input: &MessageInput<'_, F>,
    (name, method, id): (&str, Option<Method>, &Id),
    params: Option<&Value>,
    ids: &RequestIds,
    (host, phase): (Option<&[HostReply]>, Phase),
) -> Routed {
    let snapshot = input.snapshot;
    let has_envelope = Meta::of(params).get(META_PROTOCOL_VERSION).is_some();
    // `initialize` always belongs to the handshake era unless its envelope says otherwise.
    let revision = if method == Some(Method::Initialize) && !has_envelope {
        Revision::LATEST_HANDSHAKE
    } else {
        match era::select(method, params, input.transport) {
            Ok(r) => r,
            Err(e) => return Routed::of(Err(e)),
        }
    };
    // The era is chosen (and its envelope checked) before the method is: an unknown method
    // under a malformed envelope is the envelope's error.
    let Some(method) = method else {
        return Routed::of(Err(RpcError::method_not_found(name, "")));
    };
    if method == Method::Initialize && !revision.is_modern() {
        return match initialize(server, params, input.transport.kind) {
            Ok((result, negotiated)) => Routed {
                negotiated: Some(negotiated),
                declared_caps: Some(ClientCaps::of_declared(
                    params.and_then(|p| p.get("capabilities")),
                )),
                ..Routed::of(Ok(result))
            },
            Err(e) => Routed::of(Err(e)),
        };
    }
    // The level of the messages the request may carry: none unless asked
    // (`protocol::logging`).
    let level = match logging::asked(revision, params, input.transport) {
        Ok(level) => level,
        Err(e) => return Routed::of(Err(e)),
    };
    let finish =
        |r: Result<Value, RpcError>| Routed::of(r.map(|v| decorate(server, revision, method, v)));
    // The client's answers to what an earlier round asked: checked before any handler runs.
    let round = RoundOf {
        method,
        params,
        revision,
        principal: input.transport.principal.as_ref(),
        now: input.now,
        client: input.client,
    };
    let handshake_result = method == Method::TasksResult && !revision.is_modern();
    let inputs = match method {
        Method::ToolsCall | Method::PromptsGet => {
            match round::read(&server.config.request_state_key, &round) {
                Ok(inputs) => inputs,
                Err(e) => return Routed::of(Err(e)),
            }
        }
        // A handshake-era `tasks/result` may put its task's questions to the client.
        Method::TasksResult if handshake_result => {
            match round::read(&server.config.request_state_key, &round) {
                Ok(inputs) => inputs,
                Err(e) => return Routed::of(Err(e)),
            }
        }
        _ => Inputs::default(),
    };
    let call = CallInput {
        params,
        revision,
        ids,
        snapshot,
        now: input.now,
        host,
        phase,
        principal: input.transport.principal.as_ref(),
        input: &inputs,
        task: None,
    };
    match method {
        Method::ToolsCall => {
            let mut reply = if tasks::augmented(revision, params) {
                tasks::call_as_task(server, &call)
            } else if let Some(reply) = tool_tasks::call(server, &call) {
                reply
            } else {
                call_tool(server, &call)
            };
            if reply.host.is_some() {
                return Routed {
                    host: reply.host,
                    ..Routed::of(Ok(Value::Null))
                };
            }
            if let Some(needed) = reply.input.take() {
                return Routed::asked(round::ask(server, &round, needed));
            }
            if let Some(max_wait_ms) = reply.wait_ms {
                // Nothing to answer yet, but what the round saw goes out now: its log
                // messages, and the run's current tick (once).
                let mut notifications = logging::notifications(level, &reply.logs);
                let records = match progress::waiting_tick(server, &call, &reply) {
                    Some((note, records)) => {
                        notifications.push(note);
                        records
                    }
                    None => Vec::new(),
                };
                return Routed {
                    pending: Some(Wait {
                        after: snapshot.position,
                        max_wait_ms: Some(max_wait_ms),
                        watch: reply
                            .watch
                            .clone()
                            .or_else(|| reply.run_id.as_deref().map(run_stream))
                            .map(|stream| Watch {
                                head: snapshot.stream_head(&stream),
                                stream,
                            }),
                    }),
                    withheld: true,
                    notifications,
                    records,
                    ..Routed::of(Ok(Value::Null))
                };
            }
            let mut notifications = logging::notifications(level, &reply.logs);
            notifications.extend(progress::tool_steps(params, &reply.progress));
            notifications.extend(progress::tick(server, &call, &mut reply));
            Routed {
                result: reply.result,
                meter: reply.meter,
                records: reply.records,
                read_heads: reply.read_heads,
                notifications,
                ..Routed::of(Ok(Value::Null))
            }
        }
        m if tasks::serves(m, revision) => {
            // Tasks methods never ask the host.
            let call = CallInput { host: None, ..call };
            // The engine's own tasks first (and the extension's gate), then the catalogue's.
            let reply = tool_tasks::serve(server, m, &call)
                .unwrap_or_else(|| tasks::serve(server, m, &call));
            if let Some(needed) = reply.ask {
                return Routed::asked(round::ask(server, &round, needed));
            }
            Routed {
                meter: reply.meter,
                records: reply.records,
                pending: reply.pending,
                ..Routed::of(reply.result)
            }
        }
        Method::ToolsList => match ListParams::read(params) {
            Ok(_) if input.transport.principal.is_some() => {
                let scopes = input.transport.principal.as_ref().map(|p| p.scopes);
                finish(list_tools_for(server, revision, params, scopes))
            }
            Ok(_) => Routed {
                rendered: Some(tools_list_bytes(server, revision)),
                ..Routed::of(Ok(Value::Null))
            },
            Err(e) => Routed::of(Err(e)),
        },
        Method::PromptsList => finish(list_prompts(server, revision, params)),
        Method::PromptsGet => match get_prompt(server, params, &inputs) {
            Ok(PromptGot::Result(result)) => finish(Ok(result)),
            Ok(PromptGot::NeedInput(needed)) => Routed::asked(round::ask(server, &round, needed)),
            Err(e) => Routed::of(Err(e)),
        },
        Method::ResourcesList => finish(list_resources(server, revision, params)),
        Method::ResourcesRead => {
            let reply = read_resource(server, &call);
            Routed {
                records: reply.records,
                ..finish(reply.result)
            }
        }
        Method::ResourcesTemplatesList => finish(list_resource_templates(server, revision, params)),
        // A batch is answered as a whole, with nothing held for the connection afterwards.
        Method::ResourcesSubscribe | Method::ResourcesUnsubscribe if host.is_none() => {
            Routed::of(Err(RpcError::invalid_request(format!(
                "{method} cannot be part of a batch: send it as a message of its own"
            ))))
        }
        Method::ResourcesSubscribe | Method::ResourcesUnsubscribe if !revision.is_modern() => {
            let order = if method == Method::ResourcesSubscribe {
                subscriptions::subscribe(server, revision, params, snapshot, input.now)
            } else {
                subscriptions::unsubscribe(params)
            };
            match order {
                Ok(order) => Routed {
                    subscription: Some(order),
                    ..finish(Ok(Value::Object(Default::default())))
                },
                Err(e) => Routed::of(Err(e)),
            }
        }
        Method::SubscriptionsListen if revision.is_modern() => {
            match subscriptions::listen(server, params, &id.to_value(), snapshot, input.now) {
                // No response: the stream stays open until it is cancelled, closed or the
                // server shuts down; the engine sends the acknowledgement once it holds it.
                Ok(order) => Routed {
                    subscription: Some(order),
                    withheld: true,
                    ..Routed::of(Ok(Value::Null))
                },
                Err(e) => Routed::of(Err(e)),
            }
        }
        Method::CompletionComplete if server.catalog.has_completions() => {
            finish(complete(server, &call))
        }
        // Served whatever revision the envelope names: it is how a client learns them.
        Method::ServerDiscover => Routed::of(Ok(decorate(
            server,
            Revision::MODERN,
            method,
            discover(server),
        ))),
        Method::Ping if !revision.is_modern() => Routed::of(Ok(Value::Object(Default::default()))),
        Method::LoggingSetLevel if !revision.is_modern() => match logging::set_level(params) {
            Ok((result, level)) => Routed {
                log_level: Some(level),
                ..Routed::of(Ok(result))
            },
            Err(e) => Routed::of(Err(e)),
        },
        Method::LoggingSetLevel => Routed::of(Err(RpcError::method_not_found(
            method.as_str(),
            " (not a method of stateless revision 2026-07-28: a request asks for its log level in \
             params._meta[\"io.modelcontextprotocol/logLevel\"])",
        ))),
        Method::Initialize | Method::Ping => Routed::of(Err(RpcError::method_not_found(
            method.as_str(),
            " (not a method of stateless revision 2026-07-28: call server/discover, or send requests directly \
             with params._meta)",
        ))),
        _ => Routed::of(Err(RpcError::method_not_found(method.as_str(), ""))),
    }
}

/// The answer to a message refused as a whole (before its method could be read).
fn reply(response: Response) -> Outcome {
    Outcome {
        response: Some(response),
        tally: Tally {
            methods: vec![OTHER_METHOD],
            calls: Vec::new(),
        },
        ..Outcome::default()
    }
}

/// The reply to a message over the size limit.
pub fn oversize_response(size: usize, limit: usize, ids: RequestIds) -> Response {
    Response::error(None, &oversize_error(size, limit), ids.span_id)
}

/// Most characters of a store's reason quoted in [`storage_failure_response`]: enough for the
/// longest the stores give (a corrupt ledger's place and what to run), which a client's user may
/// only ever see there.
const MAX_STORE_REASON_CHARS: usize = 600;

/// `error.data.reason` of [`storage_failure_response`]: HTTP answers it with 503.
pub use super::jsonrpc::LEDGER_UNAVAILABLE;

/// Why a request's records could not be committed, as its reply tells it.
#[derive(Clone, Copy, Debug)]
pub struct StorageFailure<'a> {
    /// The store's reason.
    pub reason: &'a str,
    /// Whether the same request may succeed later without anyone acting
    /// (`error.data.retryable`).
    pub retryable: bool,
    /// The records were written but could not be proven durable (the fsync meant for them
    /// failed, or the file was displaced before it): they may or may not be found later.
    pub written: bool,
}

/// The reply to `request` when its records could not be committed.
pub fn storage_failure_response<F: Fold>(
    server: &Server<F>,
    request: &[u8],
    failure: &StorageFailure<'_>,
) -> Response {
    let scan = prescan(request, server.config.limits.max_json_depth);
    let id = scan.id_text(request, 0).and_then(id_from_raw);
    storage_failure(id, RequestIds::of_bytes(request).span_id, failure)
}

/// [`storage_failure_response`] for a message read before: its id as the prescan found it.
pub fn storage_failure_response_to(
    message: &ClientMessage,
    failure: &StorageFailure<'_>,
) -> Response {
    let span = RequestIds::of_bytes(message.bytes()).span_id;
    storage_failure(message.view().scanned_id(), span, failure)
}

fn storage_failure(id: Option<Id>, span: String, failure: &StorageFailure<'_>) -> Response {
    let StorageFailure {
        reason,
        retryable,
        written,
    } = *failure;
    let then = if retryable {
        "retry later"
    } else {
        "retrying will not help until the server's operator acts"
    };
    let reason = super::jsonrpc::shorten(reason, MAX_STORE_REASON_CHARS);
    let err = RpcError::internal(if written {
        format!(
            "the ledger could not make this request's records durable ({reason}); they may or \
             may not be in the ledger after a restart, {then}"
        )
    } else {
        format!("the ledger could not record this request ({reason}); nothing was changed, {then}")
    })
    .with_data(json!({"reason": LEDGER_UNAVAILABLE, "retryable": retryable}));
    Response::error(id.as_ref(), &err, span)
}

fn handle_batch<F: Fold>(
    server: &Server<F>,
    input: &MessageInput<'_, F>,
    items: &[Value],
) -> Outcome {
    let revision = era::batch_revision(input.transport);
    let span = match input.message.batch_ids() {
        Some(ids) => ids.span_id.clone(),
        None => RequestIds::of_value(&Value::Array(items.to_vec())).span_id,
    };
    if !revision.allows_batches() {
        let err = RpcError::invalid_request(format!(
            "JSON-RPC batches are not supported in protocol revision {revision} (only 2025-03-26 allowed them); send \
             one message at a time"
        ));
        return reply(Response::error(None, &err, span));
    }
    if items.is_empty() {
        return reply(Response::error(
            None,
            &RpcError::invalid_request("the batch is empty"),
            span,
        ));
    }
    let mut snapshot = Cow::Borrowed(input.snapshot);
    let mut parts = Vec::new();
    let mut records: Vec<Record> = Vec::new();
    let mut notifications = Vec::new();
    let mut negotiated = None;
    let mut log_level = None;
    let mut methods = Vec::new();
    for (i, item) in items.iter().enumerate() {
        // A batch is answered at once: nothing in it waits.
        let element = MessageInput {
            snapshot: &snapshot,
            ..*input
        };
        let served = serve(server, &element, None, Phase::Settle, Some((i, item)));
        let served_records = served.append.map(|a| a.records).unwrap_or_default();
        for rec in &served_records {
            // Records sealed against this very snapshot always extend it.
            snapshot
                .to_mut()
                .apply(rec)
                .expect("records sealed at the snapshot's head extend it");
        }
        records.extend(served_records);
        methods.extend(served.tally.methods);
        notifications.extend(served.notifications);
        parts.extend(served.response);
        negotiated = served.negotiated_version.or(negotiated);
        log_level = served.log_level.or(log_level);
    }
    let tally = Tally {
        methods,
        calls: tally::audited_calls(server, &records),
    };
    let append = (!records.is_empty()).then_some(Append {
        expected: input.snapshot.position,
        read_heads: None,
        records,
    });
    // A batch is answered at once: a pending element keeps its retryable answer.
    Outcome {
        response: (!parts.is_empty()).then(|| Response::batch(parts, span)),
        notifications,
        append,
        negotiated_version: negotiated,
        log_level,
        pending: None,
        host: None,
        ask: None,
        declared_caps: None,
        tally,
        subscription: None,
    }
}

/// The answer to one request, before it becomes a message.
struct Routed {
    result: Result<Value, RpcError>,
    meter: Option<MeterSlot>,
    records: Vec<Record>,
    read_heads: Option<Vec<(String, Digest)>>,
    negotiated: Option<Revision>,
    log_level: Option<LogLevel>,
    notifications: Vec<Vec<u8>>,
    pending: Option<Wait>,
    host: Option<HostRequest>,
    /// Questions for a handshake-era client: nothing to send yet.
    ask: Option<InputNeeded>,
    /// Set by `initialize`: what the client declared it can be asked.
    declared_caps: Option<ClientCaps>,
    /// A pending answer with nothing to send yet (a tool's long poll).
    withheld: bool,
    /// The result, rendered before (`tools/list`); `result` is then `Ok(Null)`.
    rendered: Option<std::sync::Arc<[u8]>>,
    subscription: Option<subscriptions::Order>,
}

impl Routed {
    fn of(result: Result<Value, RpcError>) -> Routed {
        Routed {
            result,
            meter: None,
            records: Vec::new(),
            read_heads: None,
            negotiated: None,
            log_level: None,
            notifications: Vec::new(),
            pending: None,
            host: None,
            ask: None,
            declared_caps: None,
            withheld: false,
            rendered: None,
            subscription: None,
        }
    }

    /// What a handler's questions become: the stateless era's `InputRequiredResult`, or
    /// questions for the engine to put to a handshake-era client.
    fn asked(asked: Result<Asked, RpcError>) -> Routed {
        match asked {
            Ok(Asked::Result(result)) => Routed::of(Ok(result)),
            Ok(Asked::Client(needed)) => Routed {
                ask: Some(needed),
                ..Routed::of(Ok(Value::Null))
            },
            Err(e) => Routed::of(Err(e)),
        }
    }
}

#[cfg(test)]
mod tests;
