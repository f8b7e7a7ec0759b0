//! Resource subscriptions, both eras: what `resources/subscribe` / `resources/unsubscribe`
//! (handshake era) and `subscriptions/listen` (2026-07-28) ask of the engine, and the messages
//! a subscription carries. The core keeps no subscription: it checks the request, renders each
//! resource once (its digest and the stream it depends on, [`render`]) and hands the engine an
//! [`Order`]; the engine holds the subscriptions and, when the ledger head moves, renders
//! again only the resources whose stream moved and sends [`updated`] when a digest changed.

use serde_json::{Map, Value, json};

use super::Server;
use super::era::Revision;
use super::jsonrpc::{RpcError, shorten};
use super::registry::ResourceContext;
use super::resource_templates::read_templated;
use crate::digest::Digest;
use crate::ledger::{Fold, Snapshot};
use crate::time::Timestamp;

/// `_meta` key that tags every message of a `subscriptions/listen` stream with the listen
/// request's id.
pub const META_SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";

/// Most resource URIs one `subscriptions/listen` may name.
pub const MAX_URIS_PER_LISTEN: usize = 256;

/// A resource as a subscription last saw it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Watched {
    pub uri: String,
    /// The digest of its contents as rendered.
    pub digest: Digest,
    /// The one ledger stream its rendering depends on; `None`: any record may change it.
    pub stream: Option<String>,
}

/// What a served request asks the engine to do with its connection's subscriptions.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Order {
    /// `resources/subscribe`: hold this resource for the connection (handshake era).
    Subscribe(Watched),
    /// `resources/unsubscribe`: drop it.
    Unsubscribe { uri: String },
    /// `subscriptions/listen`: a stream tagged with the request's id (its JSON text), holding
    /// these resources; `ack` is its first message, sent once the engine holds it.
    Listen {
        id: String,
        watched: Vec<Watched>,
        ack: Vec<u8>,
    },
}

/// The contents of `uri` at `snapshot` as a digest, and the stream they depend on; `None`
/// when no resource has this URI (or its reader says there is none).
pub fn render<F: Fold>(
    server: &Server<F>,
    snapshot: &Snapshot<F>,
    now: Timestamp,
    uri: &str,
) -> Option<Watched> {
    if let Some(resource) = server.catalog.resource(uri) {
        let contents = (resource.read)(&server.config, snapshot);
        return Some(watched(uri, &contents, None));
    }
    let ctx = ResourceContext {
        snapshot,
        config: &server.config,
        now,
        spec_revision: Revision::LATEST_HANDSHAKE.as_str(),
    };
    let (_, read) = read_templated(server, &ctx, uri)?;
    let read = read.ok()?;
    Some(watched(uri, &read.contents, read.watch))
}

fn watched(uri: &str, contents: &[Value], stream: Option<String>) -> Watched {
    let bytes = serde_json::to_vec(contents).unwrap_or_default();
    Watched {
        uri: uri.to_string(),
        digest: Digest::of(&bytes),
        stream,
    }
}

/// `resources/subscribe` (handshake era): the resource must exist; the answer is `{}`.
pub fn subscribe<F: Fold>(
    server: &Server<F>,
    revision: Revision,
    params: Option<&Value>,
    snapshot: &Snapshot<F>,
    now: Timestamp,
) -> Result<Order, RpcError> {
    let uri = uri_param(params)?;
    match render(server, snapshot, now, uri) {
        Some(w) => Ok(Order::Subscribe(w)),
        None => Err(not_found(revision, uri)),
    }
}

/// `resources/unsubscribe` (handshake era): always `{}`, held or not.
pub fn unsubscribe(params: Option<&Value>) -> Result<Order, RpcError> {
    Ok(Order::Unsubscribe {
        uri: uri_param(params)?.to_string(),
    })
}

/// `subscriptions/listen` (2026-07-28): the filter is checked, the resources it names that
/// exist are rendered, and the acknowledgement lists what is honoured: `resourceSubscriptions`
/// (those that exist) only, since this server's lists never change while it runs.
pub fn listen<F: Fold>(
    server: &Server<F>,
    params: Option<&Value>,
    id: &Value,
    snapshot: &Snapshot<F>,
    now: Timestamp,
) -> Result<Order, RpcError> {
    let filter = match params.and_then(|p| p.get("notifications")) {
        Some(Value::Object(f)) => f,
        Some(_) => {
            return Err(RpcError::invalid_params(
                "params.notifications must be an object",
            ));
        }
        None => {
            return Err(RpcError::invalid_params(
                "params.notifications is required: the notification types to receive",
            ));
        }
    };
    for key in [
        "toolsListChanged",
        "promptsListChanged",
        "resourcesListChanged",
    ] {
        if filter.get(key).is_some_and(|v| !v.is_boolean()) {
            return Err(RpcError::invalid_params(format!(
                "params.notifications.{key} must be a boolean"
            )));
        }
    }
    let uris: Vec<&str> = match filter.get("resourceSubscriptions") {
        None => Vec::new(),
        Some(Value::Array(items)) => {
            let uris: Option<Vec<&str>> = items.iter().map(Value::as_str).collect();
            uris.ok_or_else(|| {
                RpcError::invalid_params(
                    "params.notifications.resourceSubscriptions must be an array of URI strings",
                )
            })?
        }
        Some(_) => {
            return Err(RpcError::invalid_params(
                "params.notifications.resourceSubscriptions must be an array of URI strings",
            ));
        }
    };
    if uris.len() > MAX_URIS_PER_LISTEN {
        return Err(RpcError::invalid_params(format!(
            "params.notifications.resourceSubscriptions names {} resources; at most {MAX_URIS_PER_LISTEN} per stream",
            uris.len()
        )));
    }
    let mut watched: Vec<Watched> = Vec::new();
    for uri in uris {
        if watched.iter().any(|w| w.uri == uri) {
            continue;
        }
        if let Some(w) = render(server, snapshot, now, uri) {
            watched.push(w);
        }
    }
    let mut honoured = Map::new();
    if filter.contains_key("resourceSubscriptions") {
        let uris: Vec<Value> = watched
            .iter()
            .map(|w| Value::from(w.uri.as_str()))
            .collect();
        honoured.insert("resourceSubscriptions".into(), Value::Array(uris));
    }
    let ack = notification(
        "notifications/subscriptions/acknowledged",
        json!({"notifications": honoured}),
        Some(id),
    );
    let id = serde_json::to_string(id).unwrap_or_default();
    Ok(Order::Listen { id, watched, ack })
}

/// `notifications/resources/updated` for `uri`, tagged with the listen request's id when it
/// belongs to a `subscriptions/listen` stream.
pub fn updated(uri: &str, tag: Option<&Value>) -> Vec<u8> {
    notification("notifications/resources/updated", json!({"uri": uri}), tag)
}

/// The response that ends a `subscriptions/listen` stream gracefully (the server shuts down).
pub fn listen_ended(id: &Value) -> Vec<u8> {
    let response = json!({
        "jsonrpc": "2.0",
        "id": id,
        "result": {"resultType": "complete", "_meta": {META_SUBSCRIPTION_ID: id}},
    });
    serde_json::to_vec(&response).unwrap_or_default()
}

fn notification(method: &str, mut params: Value, tag: Option<&Value>) -> Vec<u8> {
    if let (Some(tag), Value::Object(p)) = (tag, &mut params) {
        p.insert("_meta".into(), json!({META_SUBSCRIPTION_ID: tag}));
    }
    let note = json!({"jsonrpc": "2.0", "method": method, "params": params});
    serde_json::to_vec(&note).unwrap_or_default()
}

fn uri_param(params: Option<&Value>) -> Result<&str, RpcError> {
    match params.and_then(|p| p.get("uri")) {
        Some(Value::String(uri)) => Ok(uri),
        Some(_) => Err(RpcError::invalid_params("params.uri must be a string")),
        None => Err(RpcError::invalid_params(
            "params.uri is required: the resource to subscribe to",
        )),
    }
}

fn not_found(revision: Revision, uri: &str) -> RpcError {
    RpcError::new(
        revision.resource_not_found_code(),
        format!(
            "Resource not found: {} (subscribe to a resource resources/list or resources/templates/list offers)",
            shorten(uri, 200)
        ),
    )
    .with_data(json!({ "uri": uri }))
}

#[cfg(test)]
mod tests;
