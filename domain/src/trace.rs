//! W3C trace context carried in a request's `params._meta` (`traceparent`, `tracestate`,
//! `baggage`), screened and turned into the provenance that records of a run carry.
//!
//! - `traceparent`: W3C Trace Context level 1, `00-<32 hex>-<16 hex>-<2 hex>`, lowercase, neither
//!   id all zeros (the same check that lets it supply the call's trace id,
//!   [`bernstein_core::protocol::ids::traceparent_trace_id`]). A valid one is kept whole; it is the
//!   `step_id` of the lineage entries of what the call posts ([`super::lineage`]).
//! - `tracestate`: at most [`MAX_TRACESTATE_MEMBERS`] comma-separated `key=value` members (blank
//!   members allowed and dropped), keys unique, at most [`MAX_TRACESTATE_BYTES`] bytes; a key is
//!   `lcalpha *(lcalpha / digit / _-*/)` up to 256 characters, or `tenant@system` (tenant up to
//!   241, system up to 14); a value is 1 to 256 printable ASCII characters other than `,` and `=`,
//!   not ending in a space.
//! - `baggage`: W3C Baggage, at most [`MAX_BAGGAGE_MEMBERS`] members and [`MAX_BAGGAGE_BYTES`]
//!   bytes; a member is `key = value *(; property)` with an RFC 7230 token key and a value of
//!   baggage octets (printable ASCII other than `"`, `,`, `;`, `\` and space).
//!
//! An invalid value is ignored, never an error and never recorded: an invalid `traceparent`
//! drops the whole context (`tracestate` and `baggage` mean nothing without it), an invalid
//! `tracestate` or `baggage` drops only that field. So does a `tracestate` or `baggage` that a
//! DLP pattern matches (`baggage: api_key=…` is a common way to leak one): the records keep a
//! trace context as sent or not at all, never a secret. This module only screens values; it never
//! decides what a record holds beyond the [`TraceRef`] it returns.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use bernstein_core::ledger::Draft;
use bernstein_core::protocol::ids::traceparent_trace_id;

use super::dlp::redact;
use super::records;

/// Most list members a `tracestate` may hold (W3C Trace Context level 1).
pub const MAX_TRACESTATE_MEMBERS: usize = 32;
/// Longest `tracestate` recorded, in bytes.
pub const MAX_TRACESTATE_BYTES: usize = 1024;
/// Most list members a `baggage` may hold.
pub const MAX_BAGGAGE_MEMBERS: usize = 64;
/// Longest `baggage` recorded, in bytes (W3C Baggage's limit).
pub const MAX_BAGGAGE_BYTES: usize = 8192;

/// The host's trace context as a record carries it: the trace the call belongs to and the
/// host's span that made it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TraceRef {
    /// The W3C trace id (32 lowercase hex digits) of the host's trace.
    pub trace_id: String,
    /// The host's span id (16 lowercase hex digits) that issued the call.
    pub parent_span: String,
    /// The validated `traceparent`, kept whole (version, trace id, parent id, flags). Absent
    /// in records written before it was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub traceparent: Option<String>,
    /// The validated `tracestate`, as sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tracestate: Option<String>,
    /// The validated `baggage`, as sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub baggage: Option<String>,
}

impl TraceRef {
    /// The trace context of a request's `_meta`, or `None` when it carries no valid
    /// `traceparent`.
    pub fn from_meta(meta: Option<&Value>) -> Option<TraceRef> {
        let meta = meta?;
        let field = |name: &str| meta.get(name).and_then(Value::as_str);
        let traceparent = field("traceparent")?;
        let trace_id = traceparent_trace_id(traceparent)?;
        // A valid traceparent has exactly four dash-separated parts; the third is the span.
        let parent_span = traceparent.split('-').nth(2)?;
        Some(TraceRef {
            trace_id: trace_id.to_string(),
            parent_span: parent_span.to_string(),
            traceparent: Some(traceparent.to_string()),
            tracestate: field("tracestate")
                .filter(|s| valid_tracestate(s) && redact(s).count == 0)
                .map(str::to_string),
            baggage: field("baggage")
                .filter(|s| valid_baggage(s) && redact(s).count == 0)
                .map(str::to_string),
        })
    }
}

/// Adds the request's trace context (when valid) as the optional `trace` field of the new
/// task's `task.created` and `run.task_added` drafts (`bernstein_run`).
pub fn stamp_task_records(drafts: &mut [Draft], meta: Option<&Value>) {
    let Some(trace) = TraceRef::from_meta(meta) else {
        return;
    };
    let value = serde_json::to_value(&trace).expect("a trace context always serializes");
    for d in drafts
        .iter_mut()
        .filter(|d| d.kind == records::TASK_CREATED || d.kind == records::RUN_TASK_ADDED)
    {
        if let Value::Object(body) = &mut d.body {
            body.insert("trace".into(), value.clone());
        }
    }
}

fn is_ows(b: u8) -> bool {
    b == b' ' || b == b'\t'
}

fn trim_ows(s: &str) -> &str {
    s.trim_matches(|c: char| c == ' ' || c == '\t')
}

fn lcalpha(b: u8) -> bool {
    b.is_ascii_lowercase()
}

fn key_char(b: u8) -> bool {
    lcalpha(b) || b.is_ascii_digit() || matches!(b, b'_' | b'-' | b'*' | b'/')
}

fn tracestate_key(key: &str) -> bool {
    let b = key.as_bytes();
    match key.split_once('@') {
        None => {
            !b.is_empty() && b.len() <= 256 && lcalpha(b[0]) && b[1..].iter().all(|&c| key_char(c))
        }
        Some((tenant, system)) => {
            let (t, s) = (tenant.as_bytes(), system.as_bytes());
            !t.is_empty()
                && t.len() <= 241
                && (lcalpha(t[0]) || t[0].is_ascii_digit())
                && t[1..].iter().all(|&c| key_char(c))
                && !s.is_empty()
                && s.len() <= 14
                && lcalpha(s[0])
                && s[1..].iter().all(|&c| key_char(c))
        }
    }
}

fn tracestate_value(value: &str) -> bool {
    let b = value.as_bytes();
    let nblk = |c: u8| (0x21..=0x7e).contains(&c) && c != b',' && c != b'=';
    !b.is_empty()
        && b.len() <= 256
        && b.iter().all(|&c| c == b' ' || nblk(c))
        && nblk(b[b.len() - 1])
}

/// Whether `s` is a W3C Trace Context level 1 `tracestate` within the bounds above.
pub fn valid_tracestate(s: &str) -> bool {
    if s.len() > MAX_TRACESTATE_BYTES {
        return false;
    }
    let mut keys = std::collections::BTreeSet::new();
    for member in s.split(',').map(trim_ows).filter(|m| !m.is_empty()) {
        let Some((key, value)) = member.split_once('=') else {
            return false;
        };
        if !tracestate_key(key) || !tracestate_value(value) || !keys.insert(key) {
            return false;
        }
        if keys.len() > MAX_TRACESTATE_MEMBERS {
            return false;
        }
    }
    true
}

fn token_char(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

fn baggage_octet(b: u8) -> bool {
    matches!(b, 0x21 | 0x23..=0x2b | 0x2d..=0x3a | 0x3c..=0x5b | 0x5d..=0x7e)
}

fn baggage_pair(s: &str, value_required: bool) -> bool {
    let (key, value) = match s.split_once('=') {
        Some((k, v)) => (trim_ows(k), Some(trim_ows(v))),
        None if !value_required => (trim_ows(s), None),
        None => return false,
    };
    !key.is_empty()
        && key.bytes().all(token_char)
        && value.is_none_or(|v| v.bytes().all(baggage_octet))
}

/// Whether `s` is a W3C Baggage header value within the bounds above.
pub fn valid_baggage(s: &str) -> bool {
    if s.is_empty() || s.len() > MAX_BAGGAGE_BYTES || s.bytes().any(|b| b.is_ascii_control()) {
        return false;
    }
    let members: Vec<&str> = s.split(',').collect();
    members.len() <= MAX_BAGGAGE_MEMBERS
        && members.iter().all(|m| {
            let mut parts = m.split(';');
            let first = parts.next().unwrap_or_default();
            !trim_ows(first).is_empty()
                && baggage_pair(first, true)
                && parts.all(|p| baggage_pair(p, false))
        })
        && !s.bytes().all(is_ows)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const TP: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    #[test]
    fn a_valid_context_is_kept_with_its_optional_fields() {
        let meta = json!({
            "traceparent": TP,
            "tracestate": "rojo=00f067aa0ba902b7, congo=t61rcWkgMzE,vendor@sys=a b",
            "baggage": "userId=alice, serverNode=DF%2028;p=1;flag, isProduction=false",
            "progressToken": 3,
        });
        let t = TraceRef::from_meta(Some(&meta)).unwrap();
        assert_eq!(t.trace_id, "4bf92f3577b34da6a3ce929d0e0e4736");
        assert_eq!(t.parent_span, "00f067aa0ba902b7");
        assert_eq!(t.traceparent.as_deref(), Some(TP), "kept whole");
        assert_eq!(t.tracestate.as_deref(), meta["tracestate"].as_str());
        assert_eq!(t.baggage.as_deref(), meta["baggage"].as_str());
        let v = serde_json::to_value(&t).unwrap();
        assert_eq!(serde_json::from_value::<TraceRef>(v).unwrap(), t);
    }

    #[test]
    fn bernstein_run_records_the_trace_on_the_new_task_only() {
        let mut b = crate::testkit::Bench::new();
        let root = b.start("root");
        b.meta = Some(json!({"traceparent": TP, "baggage": "k=v"}));
        let child = b.subtask(&root, "child");
        let traced: Vec<&bernstein_core::ledger::Record> = b
            .log
            .iter()
            .filter(|r| r.body.get("trace").is_some())
            .collect();
        let kinds: Vec<&str> = traced.iter().map(|r| r.kind.as_str()).collect();
        assert_eq!(kinds, ["task.created", "run.task_added"]);
        for r in traced {
            assert_eq!(r.body["task_id"], child.as_str());
            assert_eq!(
                r.body["trace"]["trace_id"],
                "4bf92f3577b34da6a3ce929d0e0e4736"
            );
            assert_eq!(r.body["trace"]["parent_span"], "00f067aa0ba902b7");
            assert_eq!(r.body["trace"]["traceparent"], TP);
            assert_eq!(r.body["trace"]["baggage"], "k=v");
        }
        assert_eq!(
            b.snapshot
                .domain
                .task(&child)
                .unwrap()
                .rare
                .parent_id
                .as_deref(),
            Some(root.as_str())
        );
        assert_eq!(
            b.snapshot.domain.ignored_records(),
            0,
            "old readers ignore the field"
        );
    }

    #[test]
    fn an_invalid_traceparent_drops_everything() {
        for bad in [
            json!({"traceparent": "00-00000000000000000000000000000000-00f067aa0ba902b7-01"}),
            json!({"traceparent": "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01"}),
            json!({"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01"}),
            json!({"traceparent": "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}),
            json!({"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01"}),
            json!({"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-1"}),
            json!({"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-ff"}),
            json!({"traceparent": "00_4bf92f3577b34da6a3ce929d0e0e4736_00f067aa0ba902b7_01"}),
            json!({"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902bz-01"}),
            json!({"traceparent": ""}),
            json!({"traceparent": 7, "tracestate": "a=b"}),
            json!({"tracestate": "a=b", "baggage": "k=v"}),
            json!("not an object"),
        ] {
            assert_eq!(TraceRef::from_meta(Some(&bad)), None, "{bad}");
        }
        assert_eq!(TraceRef::from_meta(None), None);
    }

    #[test]
    fn a_tracestate_or_baggage_holding_a_secret_is_dropped() {
        let token = "ghp_0123456789abcdefghijklmnopqrstuvwxyzAB";
        for (tracestate, baggage) in [
            (format!("vendor={token}"), "k=v".to_string()),
            ("a=b".to_string(), format!("api_key={token}")),
            ("a=b".to_string(), "password=hunter2x".to_string()),
        ] {
            assert!(valid_tracestate(&tracestate) && valid_baggage(&baggage));
            let meta = json!({"traceparent": TP, "tracestate": tracestate, "baggage": baggage});
            let t = TraceRef::from_meta(Some(&meta)).unwrap();
            let kept = serde_json::to_string(&t).unwrap();
            assert!(
                !kept.contains(token) && !kept.contains("hunter2x"),
                "{kept}"
            );
            assert_eq!(t.traceparent.as_deref(), Some(TP));
            // The other field, holding none, is kept as sent.
            assert!(t.tracestate.is_some() || t.baggage.is_some(), "{kept}");
        }
    }

    #[test]
    fn invalid_tracestate_or_baggage_drop_only_that_field() {
        let long_members: Vec<String> = (0..33).map(|i| format!("k{i}=v")).collect();
        for bad in [
            "Upper=x".to_string(),
            "a=b,a=c".into(),
            "a=b=c".into(),
            "a".into(),
            "a=".into(),
            "a=x y=z".into(),
            "9a=b".into(),
            "t@UPPER=b".into(),
            long_members.join(","),
            format!("a={}", "x".repeat(257)),
        ] {
            assert!(!valid_tracestate(&bad), "{bad}");
            let meta = json!({"traceparent": TP, "tracestate": bad, "baggage": "k=v"});
            let t = TraceRef::from_meta(Some(&meta)).unwrap();
            assert_eq!(t.tracestate, None);
            assert_eq!(t.baggage.as_deref(), Some("k=v"));
        }
        assert!(valid_tracestate(&long_members[..32].join(",")));
        assert!(valid_tracestate("a=b,,  ,c=d"));
        let many: Vec<String> = (0..65).map(|i| format!("k{i}=v")).collect();
        for bad in [
            "".to_string(),
            " ".into(),
            "k".into(),
            "k=v,".into(),
            "k=\"v\"".into(),
            "k=v w".into(),
            "(k)=v".into(),
            "k=v\n".into(),
            many.join(","),
            format!("k={}", "x".repeat(MAX_BAGGAGE_BYTES)),
        ] {
            assert!(!valid_baggage(&bad), "{bad:?}");
        }
        assert!(valid_baggage(&many[..64].join(",")));
        assert!(valid_baggage("k = v ; p ; q=r"));
    }
}
