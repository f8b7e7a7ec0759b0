//! The sans-IO HTTP/1.1 layer shared by both runtimes: streamable HTTP on `POST /mcp` and the
//! legacy HTTP+SSE transport (`GET /sse` + `POST /messages?stream=…`) on one port.
//!
//! A runtime only moves bytes. Per connection it:
//! 1. feeds what it reads into a [`RequestParser`] and drains [`Frame`]s (writing
//!    [`CONTINUE`] on [`Frame::Continue`], and [`FrameError::response`] then closing on an
//!    error);
//! 2. hands each [`Request`] to [`HttpPolicy::route`] with the facts it observed (is the peer
//!    loopback?) and `now`;
//! 3. acts on the [`Decision`]: writes a response, or serves an MCP body through the request
//!    machine and writes [`McpExchange::reply`], or opens / feeds a legacy SSE stream.
//!
//! Everything protocol-related — limits, routing, header rules, authentication, `Host`
//! pinning, `Origin` checks, OAuth discovery metadata, SSE framing, JSON-RPC error → HTTP status — is decided
//! here, so the two runtimes cannot drift apart. Nothing in this module touches a socket, a
//! clock or the environment, and nothing here remembers anything between requests: a
//! handshake-era `Mcp-Session-Id` is a sealed token that carries what `initialize` declared
//! ([`session`]), never a key into server state.

pub mod exchange;
pub mod guard;
pub mod headers;
pub mod host;
pub mod introspection;
pub mod jwt;
pub mod oauth;
pub mod operator;
pub mod options;
pub mod param_headers;
pub mod prometheus;
pub mod read_clock;
pub mod request;
pub mod response;
pub mod router;
pub mod session;
pub mod sse;
pub mod stream_clock;
pub mod tool_scopes;
pub mod views;

pub use exchange::{Accept, LegacyMessage, LegacyOpen, McpExchange, ServedParts, StreamedReply};
pub use guard::{BindRefused, is_loopback_host};
pub use headers::Era;
pub use host::{HostPolicy, HostRefusal};
pub use operator::{OperatorRequest, OperatorRoute};
pub use options::{HttpLimits, HttpOptions};
pub use param_headers::ParamHeaders;
pub use request::{Frame, FrameError, ParserLimits, Request, RequestParser};
pub use response::{CONTINUE, HttpResponse, SPAN_HEADER, Status};
pub use router::{Decision, HttpPolicy, Known};
pub use stream_clock::{StreamClock, StreamTick};
