//! `resources/read`: a static resource of the catalogue, else a templated one.

use serde_json::{Value, json};

use super::Server;
use super::era::Revision;
use super::jsonrpc::{RpcError, kind_of, shorten};
use super::resource_templates::read_templated;
use crate::ledger::{Fold, Snapshot};

/// `resources/read`: the contents of one resource; an unknown URI gets the revision's
/// resource-not-found error.
pub fn read_resource<F: Fold>(
    server: &Server<F>,
    revision: Revision,
    params: Option<&Value>,
    snapshot: &Snapshot<F>,
) -> Result<Value, RpcError> {
    let uri = match params.and_then(|p| p.get("uri")) {
        Some(Value::String(u)) => u,
        Some(other) => {
            return Err(RpcError::invalid_params(format!(
                "params.uri must be a string, got {}",
                kind_of(other)
            )));
        }
        None => {
            return Err(RpcError::invalid_params(
                "params.uri is required: the resource to read",
            ));
        }
    };
    let Some(resource) = server.catalog.resource(uri) else {
        if let Some(read) = read_templated(server, revision, uri) {
            return read;
        }
        let known: Vec<&str> = server.catalog.resources.iter().map(|r| r.uri).collect();
        return Err(RpcError::new(
            revision.resource_not_found_code(),
            format!(
                "Resource not found: {} (available: {})",
                shorten(uri, 200),
                if known.is_empty() {
                    "none".to_string()
                } else {
                    known.join(", ")
                }
            ),
        )
        .with_data(json!({ "uri": uri })));
    };
    Ok(json!({ "contents": (resource.read)(&server.config, snapshot) }))
}
