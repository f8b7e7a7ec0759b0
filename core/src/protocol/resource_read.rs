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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;
    use crate::ledger::audit::{CallAudit, RESOURCE_READ};
    use crate::protocol::Phase;
    use crate::protocol::ids::RequestIds;
    use crate::protocol::registry::{ResourceTemplateSpec, TemplatedRead};
    use crate::protocol::unit_fold::{Catalog, ResourceSpec, Server, Snapshot};
    use crate::time::Timestamp;

    fn server() -> Server {
        let catalog = Catalog {
            resources: vec![ResourceSpec {
                uri: "test://static",
                name: "static",
                title: "Static",
                description: "A static resource.",
                mime_type: "text/plain",
                read: |_, _| vec![json!({"uri": "test://static", "text": "s"})],
            }],
            resource_templates: vec![ResourceTemplateSpec {
                uri_template: "test://runs/{id}",
                name: "run",
                title: "Run",
                description: "A run.",
                mime_type: "application/json",
                read: |_, uri, vars| match vars["id"].as_str() {
                    Some("missing") => Err("no run has this id".into()),
                    id => Ok(TemplatedRead {
                        contents: vec![json!({"uri": uri, "text": id})],
                        ttl_ms: Some(7),
                        run_id: id.map(str::to_string),
                        watch: None,
                    }),
                },
                complete: None,
            }],
            ..Catalog::empty()
        };
        Server::with_catalog(Config::new(b"k".to_vec()), catalog)
    }

    fn read(s: &Server, revision: Revision, uri: &str) -> ReadReply {
        let params = json!({ "uri": uri });
        let ids = RequestIds::of_request("resources/read", Some(&params));
        let snapshot = Snapshot::default();
        let input = CallInput {
            params: Some(&params),
            revision,
            ids: &ids,
            snapshot: &snapshot,
            now: Timestamp(5),
            host: None,
            phase: Phase::Settle,
            principal: None,
            input: &crate::protocol::input::NO_INPUT,
            task: None,
        };
        read_resource(s, &input)
    }

    fn audit(reply: &ReadReply) -> CallAudit<'_> {
        let [record] = reply.records.as_slice() else {
            panic!("one audit record, got {:?}", reply.records);
        };
        CallAudit::read(&record.body)
    }

    #[test]
    fn a_templated_read_is_audited_with_its_template_and_run() {
        let s = server();
        let reply = read(&s, Revision::LATEST_HANDSHAKE, "test://runs/T-1");
        let result = reply.result.as_ref().unwrap();
        assert_eq!(result["contents"][0]["text"], "T-1");
        assert!(
            result.get("ttlMs").is_none(),
            "no cache hints before 2026-07-28"
        );
        let a = audit(&reply);
        assert_eq!(
            (
                a.tool.as_ref(),
                a.ok,
                a.resource.as_deref(),
                a.run_id.as_deref()
            ),
            (RESOURCE_READ, true, Some("test://runs/{id}"), Some("T-1"))
        );
        assert!(a.journal_head.is_some() && a.name_digest.is_none());
        let modern = read(&s, Revision::MODERN, "test://runs/T-1");
        assert_eq!(modern.result.unwrap()["ttlMs"], 7);
    }

    #[test]
    fn a_read_of_nothing_is_refused_and_audited_and_others_append_nothing() {
        let s = server();
        let reply = read(&s, Revision::LATEST_HANDSHAKE, "test://runs/missing");
        assert_eq!(reply.result.as_ref().unwrap_err().code, -32002);
        let a = audit(&reply);
        assert_eq!(
            (a.ok, a.error.as_deref()),
            (false, Some("resource_not_found"))
        );
        let modern = read(&s, Revision::MODERN, "test://runs/missing");
        assert_eq!(modern.result.unwrap_err().code, -32602);
        let fixed = read(&s, Revision::LATEST_HANDSHAKE, "test://static");
        assert!(fixed.result.is_ok() && fixed.records.is_empty());
        let unknown = read(&s, Revision::LATEST_HANDSHAKE, "test://nothing");
        assert!(unknown.result.is_err() && unknown.records.is_empty());
    }
}
