//! What a client sends beside a request's body: the `Mcp-Param-*` headers of a stateless-era
//! `tools/call` (`ParamHeaders::of` over a fixed tool whose schema annotates two strings, a
//! nested boolean and a doubly nested integer with `x-mcp-header`, some arguments explicitly
//! null; `scan` of arbitrary schemas)
//! and the W3C trace context in `params._meta` (`TraceRef::from_meta`, `valid_tracestate`,
//! `valid_baggage`).
//! Invariants: no panic; a refusal is always HeaderMismatch; headers that encode the arguments
//! faithfully (literal, or the Base64 sentinel when the value is not a plain visible-ASCII
//! token) pass; with one header replaced, the check passes only if the header still stands for
//! the same value (strings and booleans exactly, integers as the same integer); a header never
//! passes for an absent argument nor goes missing for a present one; `scan` accepts only
//! unique token names on string/integer/boolean properties reachable through `properties`;
//! whatever `from_meta` accepts re-validates to the same context and has well-formed ids;
//! trace state and baggage built from their grammar are accepted exactly within their bounds.
#![no_main]

use std::sync::OnceLock;

use arbitrary::Arbitrary;
use base64::Engine;
use bernstein_core::config::{Config, Tier};
use bernstein_domain::trace::{
    MAX_BAGGAGE_BYTES, MAX_BAGGAGE_MEMBERS, MAX_TRACESTATE_BYTES, MAX_TRACESTATE_MEMBERS, TraceRef,
    valid_baggage, valid_tracestate,
};
use bernstein_domain::bound::Server;
use bernstein_domain::dlp::redact;
use bernstein_core::protocol::registry::{Arguments, Effects, TaskSupport, ToolOutput};
use bernstein_domain::bound::{ToolContext, ToolSpec};
use bernstein_core::transport::http::ParamHeaders;
use bernstein_core::transport::http::headers::{BodyFacts, decode_sentinel};
use bernstein_core::transport::http::param_headers::{ParamKind, X_MCP_HEADER, scan};
use bernstein_core::transport::http::request::{Header, Request};
use bernstein_fuzz::fixture;
use libfuzzer_sys::fuzz_target;
use serde_json::{Value, json};

/// HeaderMismatch.
const HEADER_MISMATCH: i64 = -32020;

/// (header, argument path, kind) of the fixed tool.
const PARAMS: [(&str, &[&str], ParamKind); 4] = [
    ("Mcp-Param-Region", &["region"], ParamKind::String),
    (
        "Mcp-Param-Max",
        &["options", "limits", "max"],
        ParamKind::Integer,
    ),
    ("Mcp-Param-Dry-Run", &["options", "dry"], ParamKind::Boolean),
    ("Mcp-Param-Tenant-Id", &["tenant"], ParamKind::String),
];

/// The fixed tool's input schema: header-bound arguments at depths 1 to 3, among unbound ones.
fn schema() -> Value {
    let bound = |ty: &str, header: &str| json!({"type": ty, "x-mcp-header": header});
    json!({
        "type": "object",
        "properties": {
            "region": bound("string", "Region"),
            "tenant": bound("string", "Tenant-Id"),
            "sql": {"type": "string"},
            "options": {"type": "object", "properties": {
                "dry": bound("boolean", "Dry-Run"),
                "limits": {"type": "object", "properties": {
                    "max": bound("integer", "Max"),
                    "min": {"type": "integer"}
                }}
            }}
        }
    })
}

fn answer(_: &ToolContext<'_>, args: Value) -> ToolOutput {
    ToolOutput::ok(args)
}

/// The header table of a server whose only tool is the fixed one.
fn table() -> &'static ParamHeaders {
    static T: OnceLock<ParamHeaders> = OnceLock::new();
    T.get_or_init(|| {
        let mut catalog = fixture::server().catalog.clone();
        catalog.tools = vec![ToolSpec {
            name: "routed",
            title: "Routed",
            description: "Reads no files, writes no files, spawns no processes, no network.",
            tier: Tier::Core,
            input_schema: schema,
            output_schema: None,
            effects: Effects::default(),
            task_support: TaskSupport::Forbidden,
            arguments: Arguments::Schema,
            call: answer,
        }];
        let t = ParamHeaders::of(&Server::with_catalog(Config::new(b"k".to_vec()), catalog));
        assert!(!t.is_empty(), "the fixed tool has header parameters");
        t
    })
}

#[derive(Arbitrary, Debug)]
struct Args {
    region: Option<String>,
    max: Option<i64>,
    dry: Option<bool>,
    tenant: Option<String>,
    /// An unbound argument beside them.
    min: Option<i64>,
}

#[derive(Arbitrary, Debug)]
struct Input {
    args: Args,
    /// Header (index into PARAMS) replaced by a fuzz value.
    replaced: (u8, String),
    /// Extra raw headers (name index, value) for the raw check.
    raw_headers: Vec<(u8, Vec<u8>)>,
    raw_args: Vec<u8>,
    raw_schema: Vec<u8>,
    raw_meta: Vec<u8>,
    ids: ([u8; 16], [u8; 8], u8),
    state: Vec<(String, String)>,
    baggage: Vec<(String, String, Option<String>)>,
}

fn request(headers: Vec<(String, Vec<u8>)>) -> Request {
    Request {
        method: "POST".into(),
        target: "/mcp".into(),
        version: 1,
        headers: headers
            .into_iter()
            .map(|(name, value)| Header {
                name: name.to_ascii_lowercase(),
                value,
            })
            .collect(),
        body: Vec::new(),
    }
}

fn call(arguments: &Value) -> BodyFacts {
    BodyFacts::of(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "routed", "arguments": arguments}}))
}

/// A header value standing for `v`: literal when it survives as one, else the sentinel.
fn encode(v: &Value) -> String {
    match v {
        Value::String(s) => {
            let plain = s.bytes().all(|b| (0x20..0x7f).contains(&b))
                && s.trim() == s
                && !(s.starts_with("=?base64?") && s.ends_with("?="));
            if plain {
                s.clone()
            } else {
                let b64 = base64::engine::general_purpose::STANDARD.encode(s.as_bytes());
                format!("=?base64?{b64}?=")
            }
        }
        other => other.to_string(),
    }
}

/// Whether the decoded header `h` exactly stands for the body value `v`.
fn stands_for(v: &Value, h: &str) -> bool {
    match v {
        Value::String(s) => s == h,
        Value::Bool(b) => h == if *b { "true" } else { "false" },
        Value::Number(n) => {
            let n = i128::from(n.as_i64().expect("fuzz integers are i64"));
            // A plain integer must be exactly the body's; other decimals (`42.0`, `4.2e1`) at
            // least the same number as far as f64 can tell.
            match (h.parse::<i128>(), h.parse::<f64>()) {
                (Ok(x), _) => x == n,
                (_, Ok(f)) => f.fract() == 0.0 && f == n as f64,
                _ => false,
            }
        }
        _ => false,
    }
}

fn lookup<'a>(args: &'a Value, path: &[&str]) -> Option<&'a Value> {
    path.iter()
        .try_fold(args, |v, k| v.get(*k))
        .filter(|v| !v.is_null())
}

fn param_headers(input: &Input) {
    let t = table();
    let a = &input.args;
    let mut args = json!({"region": a.region, "tenant": a.tenant, "sql": "select 1"});
    if a.dry.is_some() || a.max.is_some() || a.min.is_some() {
        args["options"] = json!({"dry": a.dry, "limits": {"max": a.max, "min": a.min}});
    }
    let body = call(&args);
    let faithful: Vec<(String, Vec<u8>)> = PARAMS
        .iter()
        .filter_map(|(h, path, _)| {
            lookup(&args, path).map(|v| (h.to_string(), encode(v).into_bytes()))
        })
        .collect();
    let ok = t.check(&request(faithful.clone()), &body);
    assert_eq!(ok, Ok(()), "faithful headers {faithful:?} for {args}");

    // One header replaced (or added where the argument is absent).
    let (slot, value) = &input.replaced;
    let (name, path, _) = PARAMS[usize::from(*slot) % PARAMS.len()];
    let mut headers: Vec<_> = faithful.into_iter().filter(|(h, _)| h != name).collect();
    headers.push((name.to_string(), value.clone().into_bytes()));
    let got = t.check(&request(headers.clone()), &body);
    match (&got, lookup(&args, path)) {
        (Ok(()), None) => panic!("{name} passed without its argument: {headers:?}"),
        (Ok(()), Some(v)) => {
            let decoded = decode_sentinel(value.trim(), name).expect("a passing header decodes");
            assert!(
                stands_for(v, &decoded),
                "{name}: {value:?} passed for the body value {v}"
            );
        }
        (Err(e), _) => assert_eq!(e.code, HEADER_MISMATCH, "{e:?}"),
    }
    // A header missing for a present argument.
    if let Some(present) = PARAMS.iter().find(|(_, p, _)| lookup(&args, p).is_some()) {
        let rest: Vec<_> = headers
            .into_iter()
            .filter(|(h, _)| h != present.0)
            .collect();
        assert!(
            t.check(&request(rest), &body).is_err(),
            "{} missing",
            present.0
        );
    }

    // Raw: any arguments, any header values.
    let raw_args: Value = serde_json::from_slice(&input.raw_args).unwrap_or(Value::Null);
    let raw: Vec<(String, Vec<u8>)> = input
        .raw_headers
        .iter()
        .map(|(i, v)| {
            let name = PARAMS
                .get(usize::from(*i))
                .map_or("Mcp-Param-Other", |p| p.0);
            (name.to_string(), v.clone())
        })
        .collect();
    if let Err(e) = t.check(&request(raw), &call(&raw_args)) {
        assert_eq!(e.code, HEADER_MISMATCH, "{e:?}");
    }
}

fn schemas(input: &Input) {
    let Ok(schema) = serde_json::from_slice::<Value>(&input.raw_schema) else {
        return;
    };
    let Ok(found) = scan(&schema) else { return };
    for (i, p) in found.iter().enumerate() {
        let name = p
            .header
            .strip_prefix("Mcp-Param-")
            .expect("the header prefix");
        assert!(!name.is_empty() && name.bytes().all(|b| b.is_ascii_graphic()));
        assert!(
            !found[..i]
                .iter()
                .any(|q| q.header.eq_ignore_ascii_case(&p.header))
        );
        let prop = p
            .path
            .iter()
            .try_fold(&schema, |s, k| s.get("properties")?.get(k))
            .expect("the path is reachable through properties");
        assert_eq!(prop[X_MCP_HEADER], name);
        let ty = match p.kind {
            ParamKind::String => "string",
            ParamKind::Integer => "integer",
            ParamKind::Boolean => "boolean",
        };
        assert_eq!(prop["type"], ty);
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn assert_trace(meta: &Value, t: &TraceRef) {
    let lower_hex = |s: &str, n: usize| {
        s.len() == n
            && s.bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
            && s.bytes().any(|b| b != b'0')
    };
    assert!(
        lower_hex(&t.trace_id, 32) && lower_hex(&t.parent_span, 16),
        "{t:?}"
    );
    if let Some(s) = &t.tracestate {
        assert!(valid_tracestate(s) && s.len() <= MAX_TRACESTATE_BYTES);
        assert_eq!(meta["tracestate"], s.as_str());
    }
    if let Some(b) = &t.baggage {
        assert!(valid_baggage(b) && b.len() <= MAX_BAGGAGE_BYTES);
        assert_eq!(meta["baggage"], b.as_str());
    }
    let again = json!({
        "traceparent": meta["traceparent"],
        "tracestate": t.tracestate,
        "baggage": t.baggage,
    });
    assert_eq!(TraceRef::from_meta(Some(&again)).as_ref(), Some(t));
    let v = serde_json::to_value(t).expect("a trace serializes");
    assert_eq!(serde_json::from_value::<TraceRef>(v).ok().as_ref(), Some(t));
}

fn trace(input: &Input) {
    if let Ok(meta) = serde_json::from_slice::<Value>(&input.raw_meta) {
        if let Some(t) = TraceRef::from_meta(Some(&meta)) {
            assert_trace(&meta, &t);
        }
        for s in [&meta["tracestate"], &meta["baggage"]] {
            if let Some(s) = s.as_str() {
                let _ = (valid_tracestate(s), valid_baggage(s));
            }
        }
    }
    if let Ok(s) = std::str::from_utf8(&input.raw_meta) {
        if valid_tracestate(s) {
            assert!(s.len() <= MAX_TRACESTATE_BYTES);
        }
        if valid_baggage(s) {
            assert!(s.len() <= MAX_BAGGAGE_BYTES && !s.bytes().any(|b| b.is_ascii_control()));
        }
    }

    // Built from the grammar.
    let key_char = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit() || "_-*/".contains(c);
    let mut keys = std::collections::BTreeSet::new();
    let members: Vec<String> = input
        .state
        .iter()
        .map(|(k, v)| {
            let key: String = format!(
                "k{}",
                k.chars().filter(|&c| key_char(c)).collect::<String>()
            )
            .chars()
            .take(256)
            .collect();
            keys.insert(key.clone());
            let value: String = v
                .chars()
                .filter(|&c| (' '..='~').contains(&c) && c != ',' && c != '=')
                .take(255)
                .collect();
            format!("{key}={}x", value.trim_end())
        })
        .collect();
    let state = members.join(",");
    let expect = keys.len() == members.len()
        && members.len() <= MAX_TRACESTATE_MEMBERS
        && state.len() <= MAX_TRACESTATE_BYTES;
    assert_eq!(valid_tracestate(&state), expect, "tracestate {state:?}");

    let token = |c: char| c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c);
    let octet = |c: char| ('!'..='~').contains(&c) && !"\",;\\".contains(c);
    let baggage: Vec<String> = input
        .baggage
        .iter()
        .map(|(k, v, prop)| {
            let k: String = k.chars().filter(|&c| token(c)).collect();
            let v: String = v.chars().filter(|&c| octet(c)).collect();
            let prop = prop
                .as_ref()
                .map(|p| format!(";p{}", p.chars().filter(|&c| token(c)).collect::<String>()));
            format!("k{k} = {v}{}", prop.unwrap_or_default())
        })
        .collect();
    let joined = baggage.join(", ");
    let expect = !baggage.is_empty()
        && baggage.len() <= MAX_BAGGAGE_MEMBERS
        && joined.len() <= MAX_BAGGAGE_BYTES;
    assert_eq!(valid_baggage(&joined), expect, "baggage {joined:?}");

    let (trace_id, span, flags) = &input.ids;
    let meta = json!({
        "traceparent": format!("00-{}-{}-{flags:02x}", hex(trace_id), hex(span)),
        "tracestate": state,
        "baggage": joined,
    });
    let zero = trace_id.iter().all(|&b| b == 0) || span.iter().all(|&b| b == 0);
    match TraceRef::from_meta(Some(&meta)) {
        Some(t) => {
            assert!(!zero);
            // A valid value a DLP pattern matches is dropped, never recorded.
            let kept = valid_tracestate(&state) && redact(&state).count == 0;
            assert_eq!(t.tracestate.is_some(), kept);
            let baggage_kept = valid_baggage(&joined) && redact(&joined).count == 0;
            assert_eq!(t.baggage.is_some(), baggage_kept);
            assert_trace(&meta, &t);
        }
        None => assert!(zero, "a valid traceparent was dropped: {meta}"),
    }
}

fuzz_target!(|input: Input| {
    param_headers(&input);
    schemas(&input);
    trace(&input);
});
