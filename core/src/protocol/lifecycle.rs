//! Lifecycle methods: `initialize` (handshake era), `ping`, `server/discover` (stateless era)
//! and the server's capabilities (what every result of an era carries is [`super::decorate`]).
//!
//! No session is kept here: `initialize` only answers the negotiated revision and what the
//! client declared, which the engine remembers as transport facts (over streamable HTTP, sealed
//! into a session id, `transport::http::session`). This module must never keep state.

use serde_json::Value;

use super::Server;
use super::TransportKind;
use super::decorate::server_info;
use super::era::Revision;
use super::jsonrpc::RpcError;
use super::model::InitializeParams;
use super::model::results::{
    Description, DiscoverResult, Empty, InitializeResult, ListChanged, ResourcesCapability,
    ServerCapabilities, TasksCapability, to_value,
};
use crate::ledger::Fold;

/// `initialize`: negotiates a handshake revision (the newest when `protocolVersion` is
/// absent) and describes the server. `resources.subscribe` is advertised on the transports
/// with a standing stream to carry the updates (stdio, a legacy SSE stream), never over
/// streamable HTTP (whose session id carries capabilities, not a stream).
pub fn initialize<F: Fold>(
    server: &Server<F>,
    params: Option<&Value>,
    transport: TransportKind,
) -> Result<(Value, Revision), RpcError> {
    // A client that names no revision gets the newest handshake revision.
    let requested = InitializeParams::read(params)?
        .protocol_version
        .unwrap_or(Revision::LATEST_HANDSHAKE.as_str());
    let revision = Revision::negotiate(requested);
    let mut capabilities = capabilities_of(server, transport != TransportKind::StreamableHttp);
    if revision.has_tool_execution() {
        capabilities.tasks = Some(TasksCapability::default());
    }
    let result = InitializeResult {
        protocol_version: revision.as_str(),
        capabilities,
        server_info: server_info(server, revision),
        description: description(server),
    };
    Ok((to_value(&result), revision))
}

/// `server/discover`: everything a stateless client needs before its first call.
/// Its `resources.subscribe` says `subscriptions/listen` carries resource updates.
pub fn discover<F: Fold>(server: &Server<F>) -> Value {
    let mut capabilities = capabilities_of(server, true);
    capabilities.extensions = Some([(super::tasks::TASKS_EXTENSION, Empty {})].into());
    to_value(&DiscoverResult {
        supported_versions: Revision::SUPPORTED.iter().map(|r| r.as_str()).collect(),
        capabilities,
        description: description(server),
    })
}

/// The catalogue's instructions and capability card, each only when it has one.
fn description<F: Fold>(server: &Server<F>) -> Description {
    let instructions = (server.catalog.instructions)(&server.config);
    let card = (server.catalog.capability_card)(&server.config);
    Description {
        instructions: (!instructions.is_empty()).then_some(instructions),
        capability_card: (!card.is_null()).then_some(card),
    }
}

/// What this server offers: no list-change notifications (its lists never change while it
/// runs); resource subscriptions where they are delivered (`subscribe`); logging (messages
/// only at a level the client asked for); `completions` when a prompt argument or a resource
/// template of the catalogue has a completer.
pub fn capabilities_of<F: Fold>(server: &Server<F>, subscribe: bool) -> ServerCapabilities {
    let unchanging = || ListChanged {
        list_changed: false,
    };
    ServerCapabilities {
        tools: unchanging(),
        prompts: unchanging(),
        resources: ResourcesCapability {
            subscribe,
            list_changed: false,
        },
        completions: server.catalog.has_completions().then_some(Empty {}),
        logging: Empty {},
        tasks: None,
        extensions: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;
    use crate::protocol::Catalog;
    use crate::protocol::decorate::{LIST_TTL_MS, decorate};
    use crate::protocol::era::META_SERVER_INFO;
    use serde_json::json;

    /// A catalogue of nothing over the empty fold: the handshake needs no domain.
    fn server() -> Server<()> {
        let catalog = Catalog {
            instructions: |_| "Use the tools.".into(),
            capability_card: |c| json!({"tier": c.tier.as_str()}),
            ..Catalog::empty()
        };
        Server::with_catalog(Config::new(b"k".to_vec()), catalog)
    }

    #[test]
    fn initialize_negotiates_and_describes() {
        let s = server();
        let (r, rev) = initialize(
            &s,
            Some(&json!({"protocolVersion": "2025-06-18"})),
            TransportKind::StreamableHttp,
        )
        .unwrap();
        assert_eq!(rev, Revision::V2025_06_18);
        assert_eq!(r["protocolVersion"], "2025-06-18");
        assert_eq!(r["instructions"], "Use the tools.");
        assert_eq!(r["capabilityCard"]["tier"], "standard");
        assert_eq!(r["capabilities"]["resources"]["subscribe"], false);
        let (r, _) = initialize(
            &s,
            Some(&json!({"protocolVersion": "2099-01-01"})),
            TransportKind::Stdio,
        )
        .unwrap();
        assert_eq!(r["capabilities"]["resources"]["subscribe"], true);
        assert_eq!(r["protocolVersion"], "2025-11-25");
        for absent in [None, Some(json!({})), Some(json!({"capabilities": {}}))] {
            let (r, rev) = initialize(&s, absent.as_ref(), TransportKind::Stdio).unwrap();
            assert_eq!(rev, Revision::LATEST_HANDSHAKE);
            assert_eq!(r["protocolVersion"], "2025-11-25");
            assert_eq!(r["capabilityCard"]["tier"], "standard");
        }
        assert_eq!(
            initialize(
                &s,
                Some(&json!({"protocolVersion": 5})),
                TransportKind::Stdio
            )
            .unwrap_err()
            .code,
            -32602
        );
    }

    #[test]
    fn stateless_results_are_decorated() {
        let s = server();
        let r = decorate(
            &s,
            Revision::V2026_07_28,
            crate::protocol::model::Method::ToolsList,
            json!({"tools": []}),
        );
        assert_eq!(r["resultType"], "complete");
        assert_eq!(r["ttlMs"], LIST_TTL_MS);
        assert_eq!(r["cacheScope"], "public");
        assert_eq!(r["_meta"][META_SERVER_INFO]["name"], "bernstein");
        let r = decorate(
            &s,
            Revision::V2026_07_28,
            crate::protocol::model::Method::ToolsCall,
            json!({"content": []}),
        );
        assert!(r.get("ttlMs").is_none());
        let r = decorate(
            &s,
            Revision::V2025_11_25,
            crate::protocol::model::Method::ToolsList,
            json!({"tools": []}),
        );
        assert_eq!(r, json!({"tools": []}));
    }
}
