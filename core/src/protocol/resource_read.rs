//! `resources/read`: a static resource of the catalogue, else a templated one.

use serde_json::{Value, json};

use super::Server;
use super::era::Revision;
use super::jsonrpc::{RpcError, names_or_none, shorten};
use super::model::ReadResourceParams;
use super::model::results::{ReadResourceResult, to_value};
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
    let uri = ReadResourceParams::read(params)?.uri;
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
                names_or_none(&known)
            ),
        )
        .with_data(json!({ "uri": uri })));
    };
    let contents = (resource.read)(&server.config, snapshot);
    Ok(to_value(&ReadResourceResult { contents }))
}
