//! What a runtime may count about an [`Outcome`](super::Outcome) (its metrics): the method of
//! each request answered and the tool calls audited in its records. Every value is from a
//! bounded set: a method this server serves (else [`OTHER_METHOD`]), a catalogue tool name
//! (`resources/read` for an audited resource read, else [`UNKNOWN_TOOL`]), a protocol
//! revision, a refusal code this server's code chose. A peer's string never becomes a label.
//!
//! The calls are read back from the audit records themselves (`mcp.stateless_call`, see
//! [`super::call`]), so what a runtime counts is exactly what the audit log holds: a
//! `tools/call` without a usable tool name appends no audit record and is counted only as a
//! request, and the cancel gate behind `tasks/cancel` counts as the tool call it is.

use serde_json::Value;

use super::Server;
use super::call::AUDIT_KIND;
use super::era::Revision;
use super::model::Method;
use crate::ledger::Fold;
use crate::ledger::audit::{CallAudit, RESOURCE_READ};
use crate::ledger::{AUDIT_STREAM, Record};

/// The `method` of a request whose method this server does not serve (or that had none).
pub const OTHER_METHOD: &str = "other";
/// The `tool` of a call naming no tool of the catalogue.
pub const UNKNOWN_TOOL: &str = "unknown";
/// The `outcome` of a call that succeeded.
pub const OK: &str = "ok";
/// The `era` of an audit record whose revision this server does not know, and the `outcome`
/// of one whose error code is not a plain identifier.
pub const UNKNOWN: &str = "unknown";

/// The methods this server serves (in some revision), as labels.
pub const METHODS: [&str; Method::ALL.len()] = {
    let mut out = [""; Method::ALL.len()];
    let mut i = 0;
    while i < out.len() {
        out[i] = Method::ALL[i].as_str();
        i += 1;
    }
    out
};

/// What one outcome answered and audited.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Tally {
    /// The method label of each request answered (batch elements one by one; a message
    /// refused before its method could be read counts as [`OTHER_METHOD`]).
    pub methods: Vec<&'static str>,
    /// Each tool call audited in the outcome's records, in order.
    pub calls: Vec<CallFacts>,
}

/// One audited tool call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CallFacts {
    /// The catalogue name the call used (a tool or a deprecated alias), or [`UNKNOWN_TOOL`].
    pub tool: &'static str,
    /// The revision it was served under.
    pub era: &'static str,
    /// [`OK`], or the audit record's `error` code (`invalid_arguments`, `unknown_tool`, …).
    pub outcome: String,
}

/// The label of `method`.
pub fn method_label(method: &str) -> &'static str {
    Method::parse(method).map_or(OTHER_METHOD, Method::as_str)
}

/// The tool calls audited in `records`.
pub fn audited_calls<F: Fold>(server: &Server<F>, records: &[Record]) -> Vec<CallFacts> {
    records
        .iter()
        .filter(|r| r.stream == AUDIT_STREAM && r.kind == AUDIT_KIND)
        .map(|r| call_facts(server, &r.body))
        .collect()
}

fn call_facts<F: Fold>(server: &Server<F>, body: &Value) -> CallFacts {
    let audit = CallAudit::read(body);
    let name = audit.tool.as_ref();
    let catalog = &server.catalog;
    let tool = catalog
        .tools
        .iter()
        .map(|t| t.name)
        .chain(catalog.aliases.iter().map(|(alias, _)| *alias))
        .chain([RESOURCE_READ])
        .find(|n| *n == name)
        .unwrap_or(UNKNOWN_TOOL);
    let era = Revision::parse(&audit.spec_revision).map_or(UNKNOWN, Revision::as_str);
    let outcome = match audit.error.as_deref() {
        _ if audit.ok => OK.to_string(),
        Some(code) if is_code(code) => code.to_string(),
        _ => UNKNOWN.to_string(),
    };
    CallFacts { tool, era, outcome }
}

/// Whether `s` looks like a refusal code: a short lower-case identifier.
fn is_code(s: &str) -> bool {
    (1..=64).contains(&s.len())
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ledger::{Draft, LedgerPosition, seal};
    use crate::protocol::unit_fold::{plain_tool, server_of};
    use serde_json::json;

    fn audit(body: Value) -> Vec<Record> {
        let drafts = vec![
            Draft::new("run:x", "demo", json!({})),
            Draft::new(AUDIT_STREAM, AUDIT_KIND, body),
        ];
        seal(
            &LedgerPosition::default(),
            |_| crate::digest::Digest::ZERO,
            drafts,
            b"k",
        )
    }

    #[test]
    fn methods_outside_the_served_set_are_other() {
        assert_eq!(method_label("tools/call"), "tools/call");
        assert_eq!(method_label("tasks/update"), "tasks/update");
        assert_eq!(method_label("tools/call2"), OTHER_METHOD);
        assert_eq!(method_label(&"x".repeat(500)), OTHER_METHOD);
    }

    #[test]
    fn calls_are_read_from_the_audit_records_with_bounded_labels() {
        let server = server_of(vec![plain_tool("t")]);
        let tool = server.catalog.tools[0].name;
        let ok = audit(json!({"tool": tool, "ok": true, "spec_revision": "2025-11-25"}));
        assert_eq!(
            audited_calls(&server, &ok),
            vec![CallFacts {
                tool,
                era: "2025-11-25",
                outcome: OK.into()
            }]
        );
        let refused = audit(json!({"tool": "no such tool\n{}", "ok": false,
            "error": "unknown_tool", "spec_revision": "2026-07-28"}));
        assert_eq!(
            audited_calls(&server, &refused),
            vec![CallFacts {
                tool: UNKNOWN_TOOL,
                era: "2026-07-28",
                outcome: "unknown_tool".into()
            }]
        );
        let read =
            audit(json!({"tool": "resources/read", "ok": true, "spec_revision": "2025-11-25"}));
        assert_eq!(audited_calls(&server, &read)[0].tool, RESOURCE_READ);
        let odd = audit(json!({"tool": tool, "ok": false, "error": "Not A Code",
            "spec_revision": "1999-01-01"}));
        let facts = audited_calls(&server, &odd);
        assert_eq!(
            (facts[0].era, facts[0].outcome.as_str()),
            (UNKNOWN, UNKNOWN)
        );
    }
}
