//! The audit record of one `tools/call` or templated `resources/read` ([`CALL_KIND`] on the
//! audit stream), typed once: the protocol writes its body and every reader parses it with this
//! type (the offline verifier, the stores' re-sealing of reads, the metrics' tallies, the
//! projection's per-minute call counts and run chain heads). docs/RECORDS.md describes each field.
//!
//! Reading is lenient: a field a body lacks reads as its default (an empty string, `false`,
//! `0`, absent), so a reader of an odd body gets what is there instead of nothing; writing
//! leaves out the optional fields that are absent. Strings borrow from what is parsed when
//! they can.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Kind of the audit record every `tools/call` appends.
pub const CALL_KIND: &str = "mcp.stateless_call";

/// The `tool` of a call whose name is no tool of the catalogue (nor a deprecated alias).
pub const UNKNOWN_TOOL: &str = "unknown";

/// The `tool` of a `resources/read` of a templated resource, audited like a call: its
/// [`CallAudit::resource`] names the template, `args_digest` covers `{"uri": …}`.
pub const RESOURCE_READ: &str = "resources/read";

/// The body of a call's audit record.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct CallAudit<'a> {
    /// The tool name the call used (a catalogue name or a deprecated alias), or
    /// [`UNKNOWN_TOOL`] for a name that is neither: a client's bytes are never recorded, only
    /// their digest and length ([`CallAudit::name_digest`], [`CallAudit::name_len`]).
    #[serde(borrow)]
    pub tool: Cow<'a, str>,
    /// Content-derived ids of the call, its trace and its span.
    #[serde(borrow)]
    pub call_id: Cow<'a, str>,
    #[serde(borrow)]
    pub trace_id: Cow<'a, str>,
    #[serde(borrow)]
    pub span_id: Cow<'a, str>,
    /// Whether the call succeeded.
    pub ok: bool,
    /// SHA-256 of the canonical arguments.
    #[serde(borrow)]
    pub args_digest: Cow<'a, str>,
    /// The protocol revision it was served under.
    #[serde(borrow)]
    pub spec_revision: Cow<'a, str>,
    /// Wall-clock ms when it was served.
    pub ts: u64,
    /// The refusal code of a call that did not succeed.
    #[serde(borrow, skip_serializing_if = "Option::is_none")]
    pub error: Option<Cow<'a, str>>,
    /// The tool a deprecated alias stands for.
    #[serde(borrow, skip_serializing_if = "Option::is_none")]
    pub alias_of: Option<Cow<'a, str>>,
    /// The run whose journal the call wrote or read, and that journal's head after the call's
    /// transaction, or for a read, in the snapshot it was served from (both or neither).
    #[serde(borrow, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<Cow<'a, str>>,
    #[serde(borrow, skip_serializing_if = "Option::is_none")]
    pub journal_head: Option<Cow<'a, str>>,
    /// The position (seq) of the snapshot a read was served from, when its record was placed
    /// later than right after it (`crate::rebase`); absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub read_at: Option<u64>,
    /// For [`UNKNOWN_TOOL`]: SHA-256 of the name the client sent, and its length in bytes.
    #[serde(borrow, skip_serializing_if = "Option::is_none")]
    pub name_digest: Option<Cow<'a, str>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name_len: Option<u64>,
    /// For [`RESOURCE_READ`]: the URI template the read URI matched.
    #[serde(borrow, skip_serializing_if = "Option::is_none")]
    pub resource: Option<Cow<'a, str>>,
    /// Who an OAuth access token said the call was for (its issuer and subject; never the
    /// token). Absent for calls made without one.
    #[serde(borrow, skip_serializing_if = "Option::is_none")]
    pub principal: Option<AuditPrincipal<'a>>,
}

/// The principal of an OAuth-authenticated call.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct AuditPrincipal<'a> {
    #[serde(borrow)]
    pub iss: Cow<'a, str>,
    #[serde(borrow)]
    pub sub: Cow<'a, str>,
}

impl<'a> CallAudit<'a> {
    /// The body `value` holds, read leniently (see the module docs).
    pub fn read(value: &'a Value) -> CallAudit<'a> {
        CallAudit::deserialize(value).unwrap_or_default()
    }

    /// The body of a stored line's `body` bytes, read leniently.
    pub fn read_bytes(bytes: &'a [u8]) -> CallAudit<'a> {
        serde_json::from_slice(bytes).unwrap_or_default()
    }

    /// The body as the value a draft carries.
    pub fn to_value(&self) -> Value {
        // Strings, booleans and integers under string keys: it serializes.
        serde_json::to_value(self).unwrap_or(Value::Null)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn written_bodies_leave_absent_fields_out_and_read_back() {
        let a = CallAudit {
            tool: "t".into(),
            call_id: "call_1".into(),
            trace_id: "tr".into(),
            span_id: "sp".into(),
            ok: true,
            args_digest: "sha256:00".into(),
            spec_revision: "2025-11-25".into(),
            ts: 5,
            run_id: Some("T-1".into()),
            journal_head: Some("sha256:11".into()),
            ..CallAudit::default()
        };
        let v = a.to_value();
        assert_eq!(
            v,
            json!({"tool": "t", "call_id": "call_1", "trace_id": "tr", "span_id": "sp",
                "ok": true, "args_digest": "sha256:00", "spec_revision": "2025-11-25", "ts": 5,
                "run_id": "T-1", "journal_head": "sha256:11"})
        );
        assert_eq!(CallAudit::read(&v), a);
        let text = serde_json::to_vec(&v).unwrap();
        assert_eq!(CallAudit::read_bytes(&text), a);
    }

    #[test]
    fn odd_bodies_read_as_far_as_they_go() {
        let v = json!({"tool": "t", "ok": "yes", "extra": 1});
        assert_eq!(
            CallAudit::read(&v),
            CallAudit::default(),
            "a wrong type reads nothing"
        );
        let v = json!({"tool": "t", "error": "unknown_tool"});
        let a = CallAudit::read(&v);
        assert_eq!((a.tool.as_ref(), a.ok), ("t", false));
        assert_eq!(a.error.as_deref(), Some("unknown_tool"));
        assert!(matches!(CallAudit::read(&v).tool, Cow::Borrowed(_)));
    }
}
