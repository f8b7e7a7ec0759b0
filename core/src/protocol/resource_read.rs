//! `resources/read`: a static resource of the catalogue, else a templated one. A templated read
//! is audited like a tool call (`call::audit_read`): one `mcp.stateless_call` record, also
//! when the URI names nothing.

use serde_json::{Value, json};

use super::Server;
use super::call::{CallInput, audit_read};
use super::era::Revision;
use super::jsonrpc::{RpcError, names_or_none, shorten};
use super::model::ReadResourceParams;
use super::model::results::{ReadResourceResult, to_value};
use super::refusal::Common;
use super::registry::ResourceContext;
use super::resource_templates::read_templated;
use crate::ledger::{Fold, Record};

/// What serving one `resources/read` produced.
#[derive(Debug)]
pub struct ReadReply {
    pub result: Result<Value, RpcError>,
    /// The read's audit record (a templated read only).
    pub records: Vec<Record>,
}

/// `resources/read`: the contents of one resource; an unknown URI gets the revision's
/// resource-not-found error.
pub fn read_resource<F: Fold>(server: &Server<F>, input: &CallInput<'_, F>) -> ReadReply {
    let revision = input.revision;
    let uri = match ReadResourceParams::read(input.params) {
        Ok(p) => p.uri,
        Err(e) => return unaudited(Err(e)),
    };
    if let Some(resource) = server.catalog.resource(uri) {
        let contents = (resource.read)(&server.config, input.snapshot);
        return unaudited(Ok(to_value(&ReadResourceResult { contents })));
    }
    let ctx = ResourceContext {
        snapshot: input.snapshot,
        config: &server.config,
        now: input.now,
        spec_revision: revision.as_str(),
    };
    match read_templated(server, &ctx, uri) {
        Some((template, Ok(read))) => {
            let mut result = to_value(&ReadResourceResult {
                contents: read.contents,
            });
            // The reader's own freshness hint (a finished run keeps longer than a live one);
            // the stateless era's decoration fills in the default otherwise.
            if let (true, Some(ttl), Value::Object(obj)) =
                (revision.is_modern(), read.ttl_ms, &mut result)
            {
                obj.insert("ttlMs".into(), Value::from(ttl));
            }
            let at = (template.uri_template, uri);
            let records = audit_read(server, input, at, None, read.run_id.as_deref());
            ReadReply {
                result: Ok(result),
                records,
            }
        }
        Some((template, Err(why))) => {
            let at = (template.uri_template, uri);
            ReadReply {
                result: Err(not_found(revision, uri, &why)),
                records: audit_read(server, input, at, Some(Common::ResourceNotFound), None),
            }
        }
        None => {
            let known: Vec<&str> = server.catalog.resources.iter().map(|r| r.uri).collect();
            let why = format!("available: {}", names_or_none(&known));
            unaudited(Err(not_found(revision, uri, &why)))
        }
    }
}

/// The revision's resource-not-found error for `uri`, saying why.
fn not_found(revision: Revision, uri: &str, why: &str) -> RpcError {
    RpcError::new(
        revision.resource_not_found_code(),
        format!("Resource not found: {} ({why})", shorten(uri, 200)),
    )
    .with_data(json!({ "uri": uri }))
}

fn unaudited(result: Result<Value, RpcError>) -> ReadReply {
    ReadReply {
        result,
        records: Vec::new(),
    }
}
