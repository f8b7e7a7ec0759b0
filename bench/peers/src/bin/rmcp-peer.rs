//! `rmcp-peer [PORT]`: the peer `bernstein-bench wrk` compares our server with. A minimal MCP
//! server on rmcp 3.11's streamable HTTP transport (axum on tokio, stateless, JSON answers),
//! with one tool, `bernstein_status`, that returns a fixed text padded so that the whole
//! `tools/call` answer is as long as ours ([`ANSWER_BYTES`]). No ledger, no audit, no auth:
//! what the framework costs for the same exchange. Binds 127.0.0.1:PORT (0 by default) and
//! prints `http://ADDR/mcp` on stdout.

use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, RoleServer, ServerHandler};

/// Bytes of one `tools/call bernstein_status` answer body from `bernstein mcp` (id 1, empty
/// ledger), measured on our server; the harness prints both sizes side by side.
const ANSWER_BYTES: usize = 958;

#[derive(Clone)]
struct Peer {
    answer: Arc<CallToolResult>,
}

impl Peer {
    fn new() -> Peer {
        // The answer as rmcp writes it for protocol 2025-11-25, around an empty text.
        let empty = r#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":""}],"isError":false}}"#;
        let pad = ANSWER_BYTES.saturating_sub(empty.len());
        Peer {
            answer: Arc::new(CallToolResult::success(vec![ContentBlock::text(
                "x".repeat(pad),
            )])),
        }
    }
}

impl ServerHandler for Peer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let schema = serde_json::json!({"type": "object", "properties": {}});
        let serde_json::Value::Object(schema) = schema else {
            unreachable!("an object literal")
        };
        Ok(ListToolsResult::with_all_items(vec![Tool::new(
            "bernstein_status",
            "A fixed answer as long as bernstein's",
            schema,
        )]))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        if request.name != "bernstein_status" {
            return Err(ErrorData::invalid_params("no such tool", None));
        }
        Ok(CallToolResult::clone(&self.answer).into())
    }
}

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let port: u16 = match std::env::args().nth(1) {
        Some(p) => p.parse().map_err(std::io::Error::other)?,
        None => 0,
    };
    let peer = Peer::new();
    let config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(false)
        .with_json_response(true)
        .with_sse_keep_alive(None);
    let service: StreamableHttpService<Peer, LocalSessionManager> =
        StreamableHttpService::new(move || Ok(peer.clone()), Default::default(), config);
    let router = axum::Router::new().nest_service("/mcp", service);
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
    println!(
        "rmcp-peer: serving MCP over HTTP at http://{}/mcp",
        listener.local_addr()?
    );
    axum::serve(listener, router).await
}
