//! The MCP protocol engine: JSON-RPC codec, protocol eras, dispatch, argument validation and
//! the catalogue interface. Tools, prompts, resources and tasks reach it through
//! [`registry::Catalog`] (tasks and progress ticks through its [`registry::TaskHooks`]); it
//! never names the domain.
//!
//! Entry point: [`Server::handle`], a pure function of ([`Input`]) to [`Outcome`]; the runtime
//! then commits `Outcome::append`, measures latency and writes [`Response::render`], with the
//! answer's [`AnswerKind`] beside the bytes. A request that may run more than once reads its
//! message once ([`ClientMessage`]) and serves it with [`dispatch::serve`] on every run.
//!
//! - [`jsonrpc`]: JSON-RPC 2.0 classification, ids, error objects; [`model`]: the methods, typed
//!   params and typed results.
//! - [`message`]: a client message read once ([`ClientMessage`]), which travels with its
//!   request; [`prescan`]: depth limit and raw ids; [`strict_json`]: the one parse of incoming
//!   bytes (a duplicate key is a parse error).
//! - [`era`]: protocol revisions and the per-request choice of era.
//! - [`dispatch`]: size limits, batches, method routing.
//! - [`lifecycle`]: `initialize`, `ping`, `server/discover`, stateless result decoration.
//! - [`listing`]: `tools/list`, prompts and resources; [`resource_templates`]: templated
//!   resources; [`completion`]: `completion/complete`.
//! - [`logging`]: log levels asked per request or connection, `notifications/message`.
//! - [`input`]: a tool or prompt asking the client for input mid-request (elicitation,
//!   sampling, roots) and run again with the answers; [`input_round`]: one round of such a
//!   request; [`request_state`]: the authenticated `requestState` of a 2026-07-28
//!   `InputRequiredResult`.
//! - [`call`]: `tools/call` with validation, meter envelope and audit record; [`refusal`]:
//!   refusal codes, each declared once in an enum.
//! - [`validate`]: argument limits and the JSON Schema subset validator.
//! - [`ids`]: content-derived span, trace and call ids.
//! - [`meter`], [`render`]: the `_meter` envelope and response bytes.
//! - [`tally`]: what a runtime may count about an outcome (its metrics).
//! - [`tasks`]: task-augmented `tools/call` and `tasks/*` (2025-11-25 and the 2026-07-28
//!   `io.modelcontextprotocol/tasks` extension) of a catalogue's [`registry::TaskHooks`];
//!   [`tool_tasks`]: the engine's own tasks for task-capable tools of catalogues without hooks,
//!   recorded as [`task_records`]; [`progress`]: `notifications/progress` ticks.
//!
//! Nothing here keeps state between messages: every answer is a function of the message, the
//! snapshot, `now` and the configuration.

pub mod call;
pub mod completion;
pub mod decorate;
pub mod dispatch;
pub mod era;
pub mod host;
pub mod ids;
pub mod input;
pub mod input_round;
pub mod jsonrpc;
pub mod lifecycle;
pub mod listing;
pub mod logging;
pub mod message;
pub mod meter;
pub mod model;
pub mod prescan;
pub mod principal;
pub mod progress;
pub mod refusal;
pub mod registry;
pub mod render;
pub mod request_state;
pub mod resource_read;
pub mod resource_templates;
pub mod strict_json;
pub mod subscriptions;
pub mod tally;
pub mod task_records;
pub mod tasks;
pub mod tool_tasks;
#[cfg(test)]
pub(crate) mod unit_fold;
pub mod validate;

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use era::Revision;

use serde_json::Value;

use crate::config::Config;
use crate::ledger::{Append, Fold, LedgerPosition, Snapshot};
use crate::time::Timestamp;
use registry::ToolSpec;

pub use dispatch::StorageFailure;
pub use message::{ClientMessage, MessageView};
pub use registry::Catalog;
pub use render::{AnswerKind, ErrorReply};

/// Which transport delivered a message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum TransportKind {
    Stdio,
    StreamableHttp,
    LegacySse,
}

/// Facts about a message that the runtime observed and the core may use.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TransportFacts {
    pub kind: TransportKind,
    /// The protocol revision the transport knows this client speaks: the `MCP-Protocol-Version`
    /// header over HTTP, the revision negotiated by `initialize` on a stdio connection.
    pub protocol_version: Option<String>,
    /// Whether the peer is on a loopback address (stdio counts as loopback).
    pub loopback: bool,
    /// The log level `logging/setLevel` set on the connection (handshake era), if any.
    pub log_level: Option<logging::LogLevel>,
    /// Who an OAuth access token says the request is for (HTTP with OAuth only).
    pub principal: Option<principal::Principal>,
}

impl TransportFacts {
    pub fn stdio(protocol_version: Option<String>) -> TransportFacts {
        TransportFacts {
            kind: TransportKind::Stdio,
            protocol_version,
            loopback: true,
            log_level: None,
            principal: None,
        }
    }
}

/// One message to handle.
#[derive(Debug)]
pub struct Input<'a, F> {
    pub bytes: &'a [u8],
    pub snapshot: &'a Snapshot<F>,
    pub now: Timestamp,
    pub transport: &'a TransportFacts,
}

impl<F> Clone for Input<'_, F> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<F> Copy for Input<'_, F> {}

/// One message read before ([`ClientMessage`]) and what it is served against: what a request
/// hands the core on each of its runs, so that no run parses the message again.
#[derive(Debug)]
pub struct MessageInput<'a, F> {
    pub message: MessageView<'a>,
    pub snapshot: &'a Snapshot<F>,
    pub now: Timestamp,
    pub transport: &'a TransportFacts,
    /// What the connection knows of a handshake-era client (its declared capabilities) and the
    /// answers to this request's questions so far (see [`input`]).
    pub client: input::ClientSide<'a>,
}

impl<F> Clone for MessageInput<'_, F> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<F> Copy for MessageInput<'_, F> {}

/// A response whose `_meter` timing is filled in by the runtime once measured.
#[derive(Clone, Debug, PartialEq)]
pub struct Response {
    /// The JSON-RPC response object; for a metered tool result the envelope is rendered into
    /// it by [`Response::render`] (it holds placeholders where the envelope goes); without
    /// its `result` when that was rendered before (`raw_result`). For a batch, the array of the
    /// parts' whole messages. What is sent is [`Response::render`]'s bytes.
    pub message: Value,
    /// Set when `message` is a metered tool result: where the envelope goes.
    pub meter: Option<MeterSlot>,
    /// Content-derived span id of the request (the `X-Bernstein-Span-Id` header).
    pub span_id: String,
    /// The exact digits of an integer request id beyond 64 bits (`message.id` then holds them
    /// as a string); `render` writes them as the number they are.
    pub exact_id: Option<String>,
    /// A batch reply (revision 2025-03-26 only): the replies in request order, rendered as one
    /// JSON array.
    pub batch: Option<Vec<Response>>,
    /// A result rendered before (a cached `tools/list`): `message` then holds only `jsonrpc`
    /// and `id`, and `render` writes these bytes as its `result`.
    pub raw_result: Option<Arc<[u8]>>,
    /// What the answer is (result, error and which, batch), decided when it was made: it
    /// travels beside the rendered bytes ([`Response::kind`]).
    pub kind: AnswerKind,
}

/// The parts of a `_meter` envelope known before the runtime measures latency.
#[derive(Clone, Debug, PartialEq)]
pub struct MeterSlot {
    pub tool: String,
    pub call_id: String,
    pub ok: bool,
    pub ts: Timestamp,
    /// The bare tool payload wrapped as `{result, _meter}`.
    pub payload: Value,
}

/// What handling one message produced.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Outcome {
    /// The reply; `None` for notifications and client responses.
    pub response: Option<Response>,
    /// Serialized notifications to send before the reply (progress ticks).
    pub notifications: Vec<Vec<u8>>,
    /// Records to commit before the reply may be released.
    pub append: Option<Append>,
    /// Set by `initialize`: the revision the connection now speaks (stdio runtimes remember it
    /// as a transport fact; HTTP clients send it as a header).
    pub negotiated_version: Option<String>,
    /// Set by `logging/setLevel`: the level the connection asks for from now on (the engine
    /// keeps it with the connection and hands it back in [`TransportFacts::log_level`]).
    pub log_level: Option<logging::LogLevel>,
    /// Set when the answer is not final yet (`tasks/result` of a task still running): the
    /// runtime may hold `response` back and handle the same message again once the ledger head
    /// moves past [`Wait::after`]. A runtime that does not wait (or stops waiting) sends
    /// `response`, which is then a valid, retryable answer. The core itself never blocks.
    pub pending: Option<Wait>,
    /// Set when a tool needs the host first (see [`host`]): `response` is `None` and nothing
    /// is to be appended; the runtime performs the request and calls
    /// [`Server::handle_round`] again with every reply so far.
    pub host: Option<host::HostRequest>,
    /// Set when a handler needs its handshake-era client's input first (see [`input`]):
    /// `response` is `None` and nothing is to be appended; the runtime puts each request to the
    /// client on the request's stream and serves the message again with the answers
    /// ([`MessageInput::client`]).
    pub ask: Option<input::InputNeeded>,
    /// Set by `initialize`: what the client declared it can be asked (the connection keeps it
    /// and hands it back in [`MessageInput::client`]).
    pub declared_caps: Option<input::ClientCaps>,
    /// The requests this outcome answers and the tool calls its records audit, for the
    /// runtime's metrics (bounded labels only).
    pub tally: tally::Tally,
    /// Set by `resources/subscribe`, `resources/unsubscribe` and `subscriptions/listen`: what
    /// the engine must do with the connection's subscriptions before it answers.
    pub subscription: Option<subscriptions::Order>,
}

/// "Not ready: ask me again when the ledger moves."
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Wait {
    /// The ledger position the answer was computed at; re-running the message against the
    /// same position gives the same answer.
    pub after: LedgerPosition,
    /// The longest the request itself asked to be held (a tool's long poll); the runtime's
    /// own limit applies too.
    pub max_wait_ms: Option<u64>,
    /// The one stream the answer depends on, when it depends on one (a long poll of a run
    /// depends on the run's stream only): other streams' records leave it as it is, so they
    /// need not wake it. `None`: any record may change it.
    pub watch: Option<Watch>,
}

/// A stream and its head when a pending answer was computed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Watch {
    pub stream: String,
    pub head: crate::digest::Digest,
}

impl Wait {
    /// Whether the answer may differ against `snapshot`: the watched stream, or else the
    /// ledger, moved since it was computed.
    pub fn moved<F: Fold>(&self, snapshot: &Snapshot<F>) -> bool {
        match &self.watch {
            Some(w) => snapshot.stream_head(&w.stream) != w.head,
            None => snapshot.position != self.after,
        }
    }
}

/// Where a request that may wait stands. A runtime serves a message in [`Phase::Live`]; when
/// the answer is pending and the wait ends without the ledger moving far enough, it serves
/// the same message once more in [`Phase::Settle`] (answer as things stand) or, when the
/// client cancelled it (`notifications/cancelled`, a closed response stream), in
/// [`Phase::Cancelled`]: a pending `tools/call` or `tasks/result` then answers
/// `{content, cancelled: true, partial: [...]}` without `isError`; when the server holds as
/// many waiting answers as it allows (in all, or for the client's address), in
/// [`Phase::Refused`]: a pending `tools/call` then fails with `too_many_waits` and a pending
/// `tasks/result` with its retryable not-ready error saying so. A request whose answer is
/// already final answers the same in every phase (cancelling a settled request is a no-op).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Phase {
    #[default]
    Live,
    Settle,
    Cancelled,
    Refused,
}

/// The protocol server: immutable configuration plus a catalogue.
#[derive(Clone, Debug)]
pub struct Server<F> {
    pub config: Config,
    pub catalog: Catalog<F>,
    /// Each tool's advertised schemas, generated once from its types: they are a pure function
    /// of the catalogue and the configuration, so every request reuses them.
    schemas: HashMap<&'static str, ToolSchemas>,
    /// The `tools/list` result of each revision, rendered once (see
    /// [`listing::tools_list_bytes`]): the configuration and the catalogue fix it.
    tool_listings: [OnceLock<Arc<[u8]>>; Revision::SUPPORTED.len()],
}

/// A tool's input schema and, when it declares one, its advertised output schema (wrapped in
/// the `_meter` envelope when the meter is on).
#[derive(Clone, Debug)]
struct ToolSchemas {
    input: Value,
    output: Option<Value>,
}

impl<D: registry::Domain> Server<D> {
    /// A server of the domain's own catalogue, filtered by the configured tier.
    pub fn new(config: Config) -> Server<D> {
        Server::with_catalog(config, D::catalog())
    }
}

impl<F: Fold> Server<F> {
    /// A server over `catalog`.
    pub fn with_catalog(config: Config, catalog: Catalog<F>) -> Server<F> {
        let schemas = catalog
            .tools
            .iter()
            .map(|t| {
                let output = t.output_schema.map(|f| {
                    let schema = f();
                    if config.cost_meter {
                        meter::wrap_output_schema(schema)
                    } else {
                        schema
                    }
                });
                (
                    t.name,
                    ToolSchemas {
                        input: (t.input_schema)(),
                        output,
                    },
                )
            })
            .collect();
        Server {
            config,
            catalog,
            schemas,
            tool_listings: Default::default(),
        }
    }

    /// The rendered `tools/list` result under `revision`, made by `render` on first use.
    pub(crate) fn tool_listing(
        &self,
        revision: Revision,
        render: impl FnOnce() -> Vec<u8>,
    ) -> Arc<[u8]> {
        let i = Revision::SUPPORTED
            .iter()
            .position(|r| *r == revision)
            .unwrap_or(0);
        self.tool_listings[i]
            .get_or_init(|| Arc::from(render()))
            .clone()
    }

    /// The input schema of a catalogue tool, generated once.
    pub fn input_schema(&self, tool: &ToolSpec<F>) -> Value {
        self.schemas
            .get(tool.name)
            .map_or_else(|| (tool.input_schema)(), |s| s.input.clone())
    }

    /// The advertised output schema of a catalogue tool (meter-wrapped when the meter is on).
    pub fn output_schema(&self, tool: &ToolSpec<F>) -> Option<Value> {
        match self.schemas.get(tool.name) {
            Some(s) => s.output.clone(),
            None => tool.output_schema.map(|f| {
                let schema = f();
                if self.config.cost_meter {
                    meter::wrap_output_schema(schema)
                } else {
                    schema
                }
            }),
        }
    }

    /// Validates arguments against a tool's cached input schema.
    pub(crate) fn validate_arguments(
        &self,
        tool: &ToolSpec<F>,
        args: &Value,
    ) -> Result<Vec<validate::Violation>, validate::SchemaFault> {
        match self.schemas.get(tool.name) {
            Some(s) => validate::validate(&s.input, args, "arguments"),
            None => validate::validate(&(tool.input_schema)(), args, "arguments"),
        }
    }

    /// Handles one message (a line of stdio, the body of an HTTP POST): a pure function of the
    /// input. Peer faults become error responses; nothing here panics on any input.
    pub fn handle(&self, input: &Input<'_, F>) -> Outcome {
        dispatch::handle(self, input, &[], Phase::Live)
    }

    /// [`Server::handle`] for a later round of the same message: `host` holds the runtime's
    /// replies to the host requests the tool made so far (in order), and `phase` says whether
    /// the answer may still wait, must settle, or was cancelled.
    pub fn handle_round(
        &self,
        input: &Input<'_, F>,
        host: &[host::HostReply],
        phase: Phase,
    ) -> Outcome {
        dispatch::handle(self, input, host, phase)
    }

    /// Reads `bytes` as a client message under this server's limits.
    pub fn read_message(&self, bytes: impl Into<Vec<u8>>) -> ClientMessage {
        ClientMessage::read(bytes, &self.config.limits)
    }

    /// The rendered `-32600` reply for a message the runtime refused before reading it whole
    /// because it is `size` bytes long, over `config.limits.max_message_bytes`.
    pub fn oversize_reply(&self, size: usize) -> Vec<u8> {
        dispatch::oversize_response(
            size,
            self.config.limits.max_message_bytes,
            ids::RequestIds::of_bytes(b""),
        )
        .render(0)
    }

    /// The rendered `-32603` reply for `request` when the ledger could not commit its records:
    /// `failure` says why, whether the client may retry, and whether the records were written
    /// (then the reply says they may or may not be found, not that nothing was changed).
    pub fn storage_failure_reply(&self, request: &[u8], failure: &StorageFailure<'_>) -> Vec<u8> {
        dispatch::storage_failure_response(self, request, failure).render(0)
    }

    /// The `-32603` answer to `message` when the ledger could not commit its records (see
    /// [`Server::storage_failure_reply`]), before it is rendered.
    pub fn storage_failure(
        &self,
        message: &ClientMessage,
        failure: &StorageFailure<'_>,
    ) -> Response {
        dispatch::storage_failure_response_to(message, failure)
    }
}
