//! The worker's MCP client: builds `tools/call` requests, sends them through a transport and
//! reads the answer as a tool result or a refusal.
//!
//! Era: every request is a 2026-07-28 (stateless) request — no `initialize`, the revision and
//! the client's capabilities in `params._meta`, and over HTTP the `MCP-Protocol-Version`,
//! `Mcp-Method` and `Mcp-Name` headers. The in-process transport submits the very same bytes
//! to a local engine (`bernstein_effects::local`), so `--workdir` exercises the verbs a remote
//! worker uses.
//!
//! This module never decides what a refusal means for the task; the task runner does.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use bernstein_core::engine::{DEFAULT_WAIT, Served};
use bernstein_core::protocol::TransportFacts;

use bernstein_domain::Projection;
use bernstein_domain::bound::Server;
use bernstein_effects::local::Local;
use bernstein_effects::perform::Backend;
use serde_json::{Value, json};

/// The protocol revision the worker speaks.
pub const PROTOCOL_VERSION: &str = "2026-07-28";

/// Why a call got no tool result.
#[derive(Debug, thiserror::Error)]
pub enum TransportError {
    #[error("cannot reach the server: {0}")]
    Io(String),
    #[error("HTTP {status}: {body}")]
    Http { status: u16, body: String },
    #[error("JSON-RPC error {code}: {message}")]
    Rpc { code: i64, message: String },
    #[error("malformed answer: {0}")]
    Malformed(String),
}

/// One transport: sends a JSON-RPC request, answers its JSON-RPC response.
pub trait Mcp: Send + Sync {
    /// `tool` is the tool name (for transports that carry it in a header); `hold` is how long
    /// the server may hold the answer on purpose (a long poll), on top of the usual time.
    fn exchange(&self, tool: &str, request: &[u8], hold: Duration)
    -> Result<Value, TransportError>;

    /// Sends a JSON-RPC notification named `method` (no answer is read).
    fn notify(&self, method: &str, notification: &[u8]) -> Result<(), TransportError>;
}

/// What a tool call answered.
#[derive(Clone, Debug, PartialEq)]
pub enum ToolReply {
    /// The success payload (the `_meter` envelope removed).
    Ok(Value),
    /// A refusal: the structured error `{error, message, hint, ...}`.
    Refused(Value),
}

impl ToolReply {
    /// The refusal's `error` code, if this is one.
    pub fn error_code(&self) -> Option<&str> {
        match self {
            ToolReply::Refused(v) => v.get("error").and_then(Value::as_str),
            ToolReply::Ok(_) => None,
        }
    }
}

/// A tool-call client over one transport.
pub struct Client {
    mcp: Box<dyn Mcp>,
    next_id: AtomicU64,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client").finish_non_exhaustive()
    }
}

impl Client {
    pub fn new(mcp: Box<dyn Mcp>) -> Client {
        Client {
            mcp,
            next_id: AtomicU64::new(1),
        }
    }

    /// Calls `tool` with `arguments`.
    pub fn call_tool(&self, tool: &str, arguments: Value) -> Result<ToolReply, TransportError> {
        self.call_tool_as(self.next_id(), tool, arguments, Duration::ZERO)
    }

    /// A request id no other call of this client uses (to name a call [`Client::cancel`]
    /// may cancel).
    pub fn next_id(&self) -> u64 {
        self.next_id.fetch_add(1, Ordering::Relaxed)
    }

    /// Calls `tool` as request `id`; the server may hold the answer up to `hold` (a call
    /// with `wait_ms`).
    pub fn call_tool_as(
        &self,
        id: u64,
        tool: &str,
        arguments: Value,
        hold: Duration,
    ) -> Result<ToolReply, TransportError> {
        let request = tool_call_request(id, tool, arguments);
        let response = self
            .mcp
            .exchange(tool, request.to_string().as_bytes(), hold)?;
        read_tool_result(&response)
    }

    /// Asks the server to end request `id` now (`notifications/cancelled`): a waiting call
    /// answers at once, as cancelled.
    pub fn cancel(&self, id: u64, reason: &str) -> Result<(), TransportError> {
        let note = json!({
            "jsonrpc": "2.0",
            "method": CANCELLED,
            "params": {"requestId": id, "reason": reason, "_meta": era_meta()},
        });
        self.mcp.notify(CANCELLED, note.to_string().as_bytes())
    }
}

/// The notification that cancels a request.
const CANCELLED: &str = "notifications/cancelled";

/// The `_meta` every message of the stateless era carries.
fn era_meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": PROTOCOL_VERSION,
        "io.modelcontextprotocol/clientCapabilities": {},
    })
}

/// The JSON-RPC `tools/call` request the worker sends.
pub fn tool_call_request(id: u64, tool: &str, arguments: Value) -> Value {
    json!({
        "jsonrpc": "2.0",
        "id": id,
        "method": "tools/call",
        "params": {
            "name": tool,
            "arguments": arguments,
            "_meta": era_meta(),
        },
    })
}

/// Reads a JSON-RPC response to `tools/call` as a [`ToolReply`].
pub fn read_tool_result(response: &Value) -> Result<ToolReply, TransportError> {
    if let Some(err) = response.get("error") {
        return Err(TransportError::Rpc {
            code: err.get("code").and_then(Value::as_i64).unwrap_or(0),
            message: err
                .get("message")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string(),
        });
    }
    let result = response
        .get("result")
        .ok_or_else(|| TransportError::Malformed(format!("no result in {response}")))?;
    let is_error = result.get("isError").and_then(Value::as_bool) == Some(true);
    let payload = match result.get("structuredContent") {
        Some(v) if !is_error => v.clone(),
        _ => last_text_json(result)?,
    };
    let payload = unwrap_meter(payload);
    Ok(if is_error {
        ToolReply::Refused(payload)
    } else {
        ToolReply::Ok(payload)
    })
}

/// The JSON of the last text block of a tool result.
fn last_text_json(result: &Value) -> Result<Value, TransportError> {
    let text = result
        .get("content")
        .and_then(Value::as_array)
        .and_then(|blocks| {
            blocks
                .iter()
                .rev()
                .find_map(|b| b.get("text").and_then(Value::as_str))
        })
        .ok_or_else(|| TransportError::Malformed(format!("no text content in {result}")))?;
    serde_json::from_str(text)
        .map_err(|e| TransportError::Malformed(format!("tool text is not JSON ({e}): {text}")))
}

/// Removes the cost meter's `{result, _meter}` envelope when present.
fn unwrap_meter(v: Value) -> Value {
    match v {
        Value::Object(mut obj) if obj.contains_key("_meter") && obj.contains_key("result") => {
            obj.remove("result").unwrap_or(Value::Null)
        }
        other => other,
    }
}

/// `--workdir`: a local engine over the project's store, in this process (the worker's
/// threads share it: its turn, its fsyncs).
pub struct InProcess {
    local: Local<Projection>,
}

impl InProcess {
    /// Serves `server`'s catalogue over `backend`.
    pub fn new(server: Arc<Server>, backend: &Backend<Projection>) -> std::io::Result<InProcess> {
        Ok(InProcess {
            local: Local::new(server, backend, DEFAULT_WAIT)?,
        })
    }
}

impl InProcess {
    fn serve(&self, message: &[u8]) -> Result<Served, TransportError> {
        let facts = TransportFacts::stdio(Some(PROTOCOL_VERSION.to_string()));
        self.local
            .serve_message(message, &facts)
            .map_err(|e| TransportError::Io(format!("ledger: {e}")))
    }
}

impl Mcp for InProcess {
    /// A held answer waits in the local engine, under its wait policy.
    fn exchange(
        &self,
        _tool: &str,
        request: &[u8],
        _hold: Duration,
    ) -> Result<Value, TransportError> {
        let bytes = self
            .serve(request)?
            .response
            .ok_or_else(|| TransportError::Malformed("no response to a request".into()))?;
        serde_json::from_slice(&bytes)
            .map_err(|e| TransportError::Malformed(format!("response is not JSON: {e}")))
    }

    /// The same engine serves it: a cancellation reaches the request it names there.
    fn notify(&self, _method: &str, notification: &[u8]) -> Result<(), TransportError> {
        self.serve(notification).map(drop)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_refusals_and_meter_envelopes_are_read() {
        let ok = json!({"jsonrpc": "2.0", "id": 1, "result": {
            "content": [{"type": "text", "text": "{}"}],
            "structuredContent": {"result": {"taskId": "T-1"}, "_meter": {"ok": true}},
            "isError": false}});
        assert_eq!(
            read_tool_result(&ok).unwrap(),
            ToolReply::Ok(json!({"taskId": "T-1"}))
        );
        let refused = json!({"jsonrpc": "2.0", "id": 2, "result": {
            "content": [{"type": "text", "text": "{\"error\":\"stale_claim\",\"message\":\"m\"}"}],
            "isError": true}});
        let r = read_tool_result(&refused).unwrap();
        assert_eq!(r.error_code(), Some("stale_claim"));
        let rpc = json!({"jsonrpc": "2.0", "id": 3, "error": {"code": -32602, "message": "bad"}});
        assert!(matches!(
            read_tool_result(&rpc),
            Err(TransportError::Rpc { code: -32602, .. })
        ));
        assert!(read_tool_result(&json!({"id": 4})).is_err());
    }

    #[test]
    fn requests_carry_the_stateless_era_meta() {
        let r = tool_call_request(7, "bernstein_claim", json!({"claimer_id": "w"}));
        assert_eq!(r["method"], "tools/call");
        assert_eq!(
            r["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"],
            PROTOCOL_VERSION
        );
    }
}
