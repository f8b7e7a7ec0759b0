//! The JSON-RPC 2.0 codec: classifying one parsed message (request, notification, client
//! response or invalid) and building result and error messages.
//!
//! Ids are strings or integers and are echoed exactly; `null` appears only in an error reply
//! whose request id could not be read. Integers beyond 64 bits are kept as their digits
//! ([`Id::Big`]) and written back verbatim by `Response::render`.
//!
//! This module must never decide what a method means, and never panic on any value.

use serde_json::{Map, Number, Value};

/// Invalid JSON was received.
pub const PARSE_ERROR: i64 = -32700;
/// The JSON is not a valid request object.
pub const INVALID_REQUEST: i64 = -32600;
/// The method does not exist or is not available in the request's revision.
pub const METHOD_NOT_FOUND: i64 = -32601;
/// Invalid method parameters.
pub const INVALID_PARAMS: i64 = -32602;
/// Internal error.
pub const INTERNAL_ERROR: i64 = -32603;

/// `error.data.reason` of the `-32603` answering a request whose records the ledger could not
/// commit (`dispatch::storage_failure_response`): HTTP answers it with 503.
pub const LEDGER_UNAVAILABLE: &str = "ledger_unavailable";

/// A JSON-RPC request id.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Id {
    Str(String),
    /// An integer that fits in 64 bits (signed or unsigned).
    Int(Number),
    /// An integer beyond 64 bits, as its exact decimal digits.
    Big(String),
}

impl Id {
    /// The id as a JSON value; a [`Id::Big`] id becomes the string of its digits (the exact
    /// number is restored when the response is rendered).
    pub fn to_value(&self) -> Value {
        match self {
            Id::Str(s) | Id::Big(s) => Value::String(s.clone()),
            Id::Int(n) => Value::Number(n.clone()),
        }
    }

    /// The digits to write in place of the id's JSON value, when serde_json cannot hold it.
    pub fn exact_digits(&self) -> Option<&str> {
        match self {
            Id::Big(d) => Some(d),
            _ => None,
        }
    }
}

/// A JSON-RPC error object: what a peer fault becomes.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("JSON-RPC error {code}: {message}")]
pub struct RpcError {
    pub code: i64,
    pub message: String,
    pub data: Option<Value>,
}

impl RpcError {
    pub fn new(code: i64, message: impl Into<String>) -> RpcError {
        RpcError {
            code,
            message: message.into(),
            data: None,
        }
    }

    pub fn with_data(mut self, data: Value) -> RpcError {
        self.data = Some(data);
        self
    }

    pub fn parse_error(detail: impl std::fmt::Display) -> RpcError {
        RpcError::new(PARSE_ERROR, format!("Parse error: {detail}"))
    }

    pub fn invalid_request(detail: impl std::fmt::Display) -> RpcError {
        RpcError::new(INVALID_REQUEST, format!("Invalid request: {detail}"))
    }

    pub fn method_not_found(method: &str, why: &str) -> RpcError {
        RpcError::new(
            METHOD_NOT_FOUND,
            format!("Method not found: {}{why}", shorten(method, 100)),
        )
    }

    pub fn invalid_params(detail: impl Into<String>) -> RpcError {
        RpcError::new(INVALID_PARAMS, detail)
    }

    pub fn internal(detail: impl std::fmt::Display) -> RpcError {
        RpcError::new(INTERNAL_ERROR, format!("Internal error: {detail}"))
    }

    /// The error object `{code, message, data?}`.
    pub fn to_value(&self) -> Value {
        let mut obj = Map::new();
        obj.insert("code".into(), Value::from(self.code));
        obj.insert("message".into(), Value::String(self.message.clone()));
        if let Some(d) = &self.data {
            obj.insert("data".into(), d.clone());
        }
        Value::Object(obj)
    }
}

/// What one JSON value is, as a JSON-RPC message.
#[derive(Debug, PartialEq)]
pub enum Incoming<'a> {
    Request {
        id: Id,
        method: &'a str,
        params: Option<&'a Value>,
    },
    Notification {
        method: &'a str,
    },
    /// A response from the client (to a server request we never send): accepted silently.
    ClientResponse,
    /// Not a valid message: answer `error` with `id` (or null).
    Invalid {
        id: Option<Id>,
        error: RpcError,
    },
}

/// Classifies `value`. `exact_id` is the raw text of the message's `id` member, when the
/// caller extracted it (needed only for integers beyond 64 bits).
pub fn classify<'a>(value: &'a Value, exact_id: Option<&str>) -> Incoming<'a> {
    let Value::Object(obj) = value else {
        return Incoming::Invalid {
            id: None,
            error: RpcError::invalid_request(format!(
                "a message must be a JSON object, got {}",
                kind_of(value)
            )),
        };
    };
    let has_method = obj.contains_key("method");
    if !has_method && (obj.contains_key("result") || obj.contains_key("error")) {
        return Incoming::ClientResponse;
    }
    let id = match obj.get("id") {
        None => None,
        Some(raw) => match parse_id(raw, exact_id) {
            Ok(id) => Some(id),
            Err(error) => return Incoming::Invalid { id: None, error },
        },
    };
    match obj.get("jsonrpc") {
        Some(Value::String(v)) if v == "2.0" => {}
        Some(other) => {
            return Incoming::Invalid {
                id,
                error: RpcError::invalid_request(format!(
                    "\"jsonrpc\" must be the string \"2.0\", got {}",
                    brief(other)
                )),
            };
        }
        None => {
            return Incoming::Invalid {
                id,
                error: RpcError::invalid_request("missing \"jsonrpc\": \"2.0\""),
            };
        }
    }
    let method = match obj.get("method") {
        Some(Value::String(m)) => m.as_str(),
        Some(other) => {
            return Incoming::Invalid {
                id,
                error: RpcError::invalid_request(format!(
                    "\"method\" must be a string, got {}",
                    kind_of(other)
                )),
            };
        }
        None => {
            return Incoming::Invalid {
                id,
                error: RpcError::invalid_request("missing \"method\""),
            };
        }
    };
    let params = obj.get("params");
    let Some(id) = id else {
        // A notification never gets a reply, whatever its params.
        return Incoming::Notification { method };
    };
    match params {
        None | Some(Value::Object(_)) => Incoming::Request { id, method, params },
        Some(Value::Array(_)) => Incoming::Invalid {
            id: Some(id),
            error: RpcError::invalid_params(
                "\"params\" must be an object: MCP passes parameters by name",
            ),
        },
        Some(other) => Incoming::Invalid {
            id: Some(id),
            error: RpcError::invalid_request(format!(
                "\"params\" must be an object, got {}",
                kind_of(other)
            )),
        },
    }
}

fn parse_id(raw: &Value, exact: Option<&str>) -> Result<Id, RpcError> {
    match raw {
        Value::String(s) => Ok(Id::Str(s.clone())),
        Value::Number(n) if n.is_i64() || n.is_u64() => Ok(Id::Int(n.clone())),
        Value::Number(n) => match exact.filter(|d| is_integer_literal(d)) {
            Some(digits) => Ok(Id::Big(digits.to_string())),
            None => Err(RpcError::invalid_request(format!(
                "\"id\" must be a string or an integer, got the number {n}"
            ))),
        },
        Value::Null => Err(RpcError::invalid_request(
            "\"id\" must be a string or an integer; null is not allowed",
        )),
        other => Err(RpcError::invalid_request(format!(
            "\"id\" must be a string or an integer, got {}",
            kind_of(other)
        ))),
    }
}

/// Whether `s` is a JSON integer literal (`-?(0|[1-9][0-9]*)`).
pub fn is_integer_literal(s: &str) -> bool {
    let digits = s.strip_prefix('-').unwrap_or(s);
    !digits.is_empty()
        && digits.bytes().all(|b| b.is_ascii_digit())
        && (digits == "0" || !digits.starts_with('0'))
}

/// A successful response message.
pub fn result_message(id: &Id, result: Value) -> Value {
    let mut obj = Map::new();
    obj.insert("jsonrpc".into(), Value::String("2.0".into()));
    obj.insert("id".into(), id.to_value());
    obj.insert("result".into(), result);
    Value::Object(obj)
}

/// An error response message; `id` is `null` when the request's id could not be read.
pub fn error_message(id: Option<&Id>, error: &RpcError) -> Value {
    let mut obj = Map::new();
    obj.insert("jsonrpc".into(), Value::String("2.0".into()));
    obj.insert("id".into(), id.map_or(Value::Null, Id::to_value));
    obj.insert("error".into(), error.to_value());
    Value::Object(obj)
}

/// The JSON type of `v`, for error messages.
pub fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "an integer",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// A short rendering of a scalar, or its kind for containers.
pub fn brief(v: &Value) -> String {
    match v {
        Value::String(s) => format!("{:?}", shorten(s, 40)),
        Value::Array(_) | Value::Object(_) => kind_of(v).to_string(),
        other => other.to_string(),
    }
}

/// `v`, the string parameter at `path`; refused as `{path} must be a string, got …` or, when
/// absent, `{path} is required` followed by `why` (say `": the prompt to render"`).
pub fn string_param<'a>(v: Option<&'a Value>, path: &str, why: &str) -> Result<&'a str, RpcError> {
    match v {
        Some(Value::String(s)) => Ok(s),
        Some(other) => Err(RpcError::invalid_params(format!(
            "{path} must be a string, got {}",
            kind_of(other)
        ))),
        None => Err(RpcError::invalid_params(format!("{path} is required{why}"))),
    }
}

/// The names an error offers instead (`a, b`), or `none`.
pub fn names_or_none(names: &[&str]) -> String {
    if names.is_empty() {
        "none".to_string()
    } else {
        names.join(", ")
    }
}

/// `s` cut to at most `max` characters, with an ellipsis when cut.
pub fn shorten(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn invalid(v: &Value) -> (Option<Id>, RpcError) {
        match classify(v, None) {
            Incoming::Invalid { id, error } => (id, error),
            other => panic!("expected invalid, got {other:?}"),
        }
    }

    #[test]
    fn requests_notifications_and_responses() {
        let req = json!({"jsonrpc": "2.0", "id": 7, "method": "ping"});
        assert!(matches!(
            classify(&req, None),
            Incoming::Request {
                method: "ping",
                params: None,
                ..
            }
        ));
        let note = json!({"jsonrpc": "2.0", "method": "notifications/x", "params": 5});
        assert_eq!(
            classify(&note, None),
            Incoming::Notification {
                method: "notifications/x"
            }
        );
        let resp = json!({"jsonrpc": "2.0", "id": 1, "result": {}});
        assert_eq!(classify(&resp, None), Incoming::ClientResponse);
    }

    #[test]
    fn invalid_shapes_are_named() {
        let (id, e) = invalid(&json!([1]));
        assert_eq!((id, e.code), (None, INVALID_REQUEST));
        assert!(e.message.contains("an array"));
        let (id, e) = invalid(&json!({"jsonrpc": "1.0", "id": "a", "method": "x"}));
        assert_eq!(id, Some(Id::Str("a".into())));
        assert!(e.message.contains("\"1.0\""), "{}", e.message);
        let (_, e) = invalid(&json!({"jsonrpc": "2.0", "id": 1, "method": 3}));
        assert!(e.message.contains("\"method\" must be a string"));
        let (id, e) = invalid(&json!({"jsonrpc": "2.0", "id": null, "method": "x"}));
        assert_eq!(id, None);
        assert!(e.message.contains("null is not allowed"));
        let (_, e) = invalid(&json!({"jsonrpc": "2.0", "id": 1.5, "method": "x"}));
        assert!(e.message.contains("1.5"));
        let (_, e) = invalid(&json!({"jsonrpc": "2.0", "id": true, "method": "x"}));
        assert_eq!(e.code, INVALID_REQUEST);
        let (_, e) = invalid(&json!({"jsonrpc": "2.0", "id": 1, "method": "x", "params": [1]}));
        assert_eq!(e.code, INVALID_PARAMS);
        let (_, e) = invalid(&json!({"jsonrpc": "2.0", "method": 1}));
        assert_eq!(e.code, INVALID_REQUEST);
    }

    #[test]
    fn ids_are_kept_exactly() {
        let v: Value =
            serde_json::from_str(r#"{"jsonrpc":"2.0","id":18446744073709551615,"method":"ping"}"#)
                .unwrap();
        let Incoming::Request { id, .. } = classify(&v, None) else {
            panic!()
        };
        assert_eq!(id.to_value().to_string(), "18446744073709551615");
        let v: Value =
            serde_json::from_str(r#"{"jsonrpc":"2.0","id":-9223372036854775808,"method":"ping"}"#)
                .unwrap();
        let Incoming::Request { id, .. } = classify(&v, None) else {
            panic!()
        };
        assert_eq!(id.to_value().to_string(), "-9223372036854775808");
        let big = "123456789012345678901234567890";
        let v: Value = serde_json::from_str(&format!(
            r#"{{"jsonrpc":"2.0","id":{big},"method":"ping"}}"#
        ))
        .unwrap();
        let Incoming::Request { id, .. } = classify(&v, Some(big)) else {
            panic!()
        };
        assert_eq!(id, Id::Big(big.into()));
        assert_eq!(id.exact_digits(), Some(big));
    }

    #[test]
    fn integer_literals() {
        assert!(is_integer_literal("0"));
        assert!(is_integer_literal("-12"));
        assert!(!is_integer_literal("012"));
        assert!(!is_integer_literal("1e5"));
        assert!(!is_integer_literal("-"));
        assert!(!is_integer_literal("1.0"));
    }

    #[test]
    fn messages_have_the_jsonrpc_shape() {
        let e = error_message(None, &RpcError::parse_error("bad"));
        assert_eq!(
            e.to_string(),
            r#"{"error":{"code":-32700,"message":"Parse error: bad"},"id":null,"jsonrpc":"2.0"}"#
        );
        let r = result_message(&Id::Str("é".into()), json!({}));
        assert_eq!(r.to_string(), r#"{"id":"é","jsonrpc":"2.0","result":{}}"#);
        assert_eq!(shorten("abcdef", 3), "abc…");
        assert_eq!(shorten("abc", 3), "abc");
    }
}
