//! What every result of an era carries: in the stateless era `resultType`, `_meta` serverInfo
//! and cache hints; handshake-era results unchanged. Used by every method's answer, so it
//! depends on no method module.

use serde_json::{Map, Value};

use super::Server;
use super::era::{META_SERVER_INFO, Revision};
use super::model::Method;
use super::model::results::{Implementation, to_value};
use crate::ledger::Fold;

/// Freshness hint of cacheable stateless results: five minutes. Lists change only when the
/// server restarts with another configuration.
pub const LIST_TTL_MS: u64 = 300_000;
/// Freshness hint of `resources/read` when the reader gives none: the capability card reflects
/// live configuration.
pub const READ_TTL_MS: u64 = 60_000;

/// The server's `Implementation` object for `revision`.
pub fn server_info<F: Fold>(server: &Server<F>, _revision: Revision) -> Implementation<'_> {
    Implementation {
        name: &server.config.server_name,
        version: &server.config.server_version,
    }
}

/// How long and how widely a stateless result may be cached, by method.
fn cache_hint(method: Method) -> Option<(u64, &'static str)> {
    match method {
        Method::ServerDiscover
        | Method::ToolsList
        | Method::PromptsList
        | Method::ResourcesList
        | Method::ResourcesTemplatesList => Some((LIST_TTL_MS, "public")),
        Method::ResourcesRead => Some((READ_TTL_MS, "private")),
        _ => None,
    }
}

/// Adds what every result of `revision` carries: in the stateless era `resultType`,
/// `_meta["io.modelcontextprotocol/serverInfo"]` and, for cacheable methods, `ttlMs` and
/// `cacheScope`. Handshake-era results are returned unchanged.
pub fn decorate<F: Fold>(
    server: &Server<F>,
    revision: Revision,
    method: Method,
    result: Value,
) -> Value {
    if !revision.is_modern() {
        return result;
    }
    let Value::Object(mut obj) = result else {
        return result;
    };
    obj.insert("resultType".into(), Value::String("complete".into()));
    let meta = obj
        .entry("_meta")
        .or_insert_with(|| Value::Object(Map::new()));
    if let Value::Object(meta) = meta {
        meta.insert(
            META_SERVER_INFO.into(),
            to_value(&server_info(server, revision)),
        );
    }
    if let Some((ttl, scope)) = cache_hint(method) {
        // A reader that knows better (a finished run's resource) set its own `ttlMs`.
        obj.entry("ttlMs").or_insert_with(|| Value::from(ttl));
        obj.insert("cacheScope".into(), Value::String(scope.into()));
    }
    Value::Object(obj)
}
