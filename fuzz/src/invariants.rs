//! What must hold for every input, asserted by the targets (a failed assertion is a crash the
//! fuzzer reports):
//! - a reply is one line of JSON: a JSON-RPC 2.0 response object (or, for a batch, a non-empty
//!   array of them) with `result` xor `error`, an id that is a string, an integer or `null`
//!   (only for errors), and an error code and non-empty message on errors;
//! - no reply only for valid notifications and client responses;
//! - handling is deterministic: the same input gives the same outcome;
//! - records an outcome appends extend the snapshot as whole transactions, read back as valid
//!   records under the audit key, and fold without being skipped by the projection.

use bernstein_core::ledger::verify::check_extends;
use bernstein_core::ledger::{Append, Record};
use bernstein_domain::Snapshot;
use bernstein_core::protocol::host::HostReply;
use bernstein_core::protocol::{Outcome, Phase, TransportFacts};
use bernstein_domain::bound::{Input, Server};
use bernstein_core::protocol::jsonrpc::is_integer_literal;
use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;

/// Latency written into metered replies (any value: the core must not care).
pub const LATENCY_MS: u64 = 3;

/// Deepest JSON the server accepts (its default limit).
const MAX_DEPTH: usize = 32;

/// A reply's id as its literal: an integer id beyond 64 bits is echoed digit for digit, which
/// a parsed [`Value`] cannot show (it holds it as a float).
#[derive(Deserialize)]
struct IdLiteral<'a> {
    #[serde(borrow, default)]
    id: Option<&'a RawValue>,
}

/// Asserts that `reply` is one well-formed JSON-RPC reply; returns it parsed.
pub fn assert_reply(reply: &[u8]) -> Value {
    assert!(!reply.contains(&b'\n'), "a reply must be one line");
    let v: Value = serde_json::from_slice(reply).expect("a reply must be JSON");
    match &v {
        Value::Array(parts) => {
            assert!(!parts.is_empty(), "an empty batch reply");
            let ids: Vec<IdLiteral<'_>> = serde_json::from_slice(reply).expect("a batch reply");
            for (part, id) in parts.iter().zip(ids) {
                assert_response_object(part, id.id);
            }
        }
        other => {
            let id: IdLiteral<'_> = serde_json::from_slice(reply).expect("a reply object");
            assert_response_object(other, id.id);
        }
    }
    v
}

fn assert_response_object(v: &Value, id_literal: Option<&RawValue>) {
    let obj = v.as_object().expect("a reply must be an object");
    assert_eq!(obj.get("jsonrpc"), Some(&Value::from("2.0")), "{v}");
    assert!(
        obj.contains_key("result") ^ obj.contains_key("error"),
        "result xor error: {v}"
    );
    match obj.get("id") {
        Some(Value::String(_)) => {}
        Some(Value::Number(n)) => assert!(
            n.is_i64() || n.is_u64() || id_literal.is_some_and(|l| is_integer_literal(l.get())),
            "integer ids only: {v}"
        ),
        Some(Value::Null) | None => assert!(obj.contains_key("error"), "no id on a result: {v}"),
        Some(other) => panic!("id {other} in {v}"),
    }
    if let Some(e) = obj.get("error") {
        assert!(e.get("code").is_some_and(Value::is_i64), "{v}");
        let message = e.get("message").and_then(Value::as_str);
        assert!(message.is_some_and(|m| !m.is_empty()), "{v}");
    }
}

/// Whether `bytes` may legitimately get no reply: a valid notification or client response, or
/// an array of only those.
pub fn may_be_silent(bytes: &[u8]) -> bool {
    let Ok(v) = serde_json::from_slice::<Value>(bytes) else {
        return false;
    };
    if depth(&v) > MAX_DEPTH {
        return false;
    }
    match &v {
        Value::Array(items) => !items.is_empty() && items.iter().all(silent_object),
        other => silent_object(other),
    }
}

fn silent_object(v: &Value) -> bool {
    let Some(obj) = v.as_object() else {
        return false;
    };
    let notification = obj.get("method").is_some_and(Value::is_string) && !obj.contains_key("id");
    let response =
        !obj.contains_key("method") && (obj.contains_key("result") || obj.contains_key("error"));
    notification || response
}

fn depth(v: &Value) -> usize {
    match v {
        Value::Array(a) => 1 + a.iter().map(depth).max().unwrap_or(0),
        Value::Object(o) => 1 + o.values().map(depth).max().unwrap_or(0),
        _ => 0,
    }
}

/// Handles `input` (twice when `twice`: determinism), checks the reply, returns the outcome.
pub fn handle_checked(server: &Server, input: &Input<'_>, twice: bool) -> Outcome {
    handle_round_checked(server, input, &[], Phase::Live, twice)
}

/// [`handle_checked`] for a later round of the same message: with the host's replies so far
/// and in an explicit phase.
pub fn handle_round_checked(
    server: &Server,
    input: &Input<'_>,
    host: &[HostReply],
    phase: Phase,
    twice: bool,
) -> Outcome {
    let outcome = server.handle_round(input, host, phase);
    if twice {
        assert_eq!(
            outcome,
            server.handle_round(input, host, phase),
            "handling must be deterministic"
        );
    }
    match &outcome.response {
        Some(r) => {
            let bytes = r.render(LATENCY_MS);
            assert_reply(&bytes);
        }
        // Not answered yet: a tool asked the host for something, or holds its answer until
        // the ledger moves (a long poll). Either way nothing may be recorded yet.
        None if outcome.host.is_some() || outcome.pending.is_some() => assert!(
            outcome.append.is_none(),
            "an unanswered outcome must not append: {:?}",
            String::from_utf8_lossy(input.bytes)
        ),
        None => assert!(
            may_be_silent(input.bytes),
            "no reply to {:?}",
            String::from_utf8_lossy(input.bytes)
        ),
    }
    for n in &outcome.notifications {
        let v: Value = serde_json::from_slice(n).expect("a notification is JSON");
        assert_eq!(v.get("jsonrpc"), Some(&Value::from("2.0")));
        assert!(v.get("method").is_some_and(Value::is_string));
        assert!(v.get("id").is_none());
    }
    outcome
}

/// Checks that `append` extends `snapshot` and folds cleanly; folds it.
pub fn apply_checked(snapshot: &mut Snapshot, append: &Append, key: &[u8]) {
    assert_eq!(
        append.expected, snapshot.position,
        "an append names the head it was computed at"
    );
    if let Err((i, why)) = check_extends(snapshot, &append.records) {
        panic!("record {i} of the append does not extend the snapshot: {why}");
    }
    let ignored = snapshot.domain.ignored_records();
    for rec in &append.records {
        let line = rec.to_line();
        let back = Record::parse_line(&line[..line.len() - 1], Some(key))
            .unwrap_or_else(|e| panic!("record {} does not read back: {e}", rec.seq));
        assert_eq!(&back, rec);
        snapshot.apply(rec).expect("checked above");
    }
    assert_eq!(
        snapshot.domain.ignored_records(),
        ignored,
        "the core wrote a record its own projection skips"
    );
    assert!(snapshot.at_txn_boundary());
}

/// Serves `messages` in order against `snapshot` (advanced by each outcome's records), as one
/// connection whose facts follow `initialize`. The first message is handled twice
/// (determinism); the rest once, to keep the targets fast.
pub fn serve_sequence<'m>(
    server: &Server,
    snapshot: &mut Snapshot,
    facts: &mut TransportFacts,
    now: bernstein_core::time::Timestamp,
    messages: impl IntoIterator<Item = &'m [u8]>,
) {
    let key = server.config.audit_key.clone();
    for (i, bytes) in messages.into_iter().enumerate() {
        let outcome = handle_checked(
            server,
            &Input {
                bytes,
                snapshot,
                now,
                transport: facts,
            },
            i == 0,
        );
        if let Some(v) = outcome.negotiated_version {
            facts.protocol_version = Some(v);
        }
        if let Some(append) = &outcome.append {
            apply_checked(snapshot, append, &key);
        }
    }
}
