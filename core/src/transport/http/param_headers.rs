//! Custom headers from tool parameters (2026-07-28, SEP-2243): a tool declares that an
//! argument is mirrored into an `Mcp-Param-{Name}` header by annotating the property in its
//! `inputSchema` with `"x-mcp-header": "Name"`. Over streamable HTTP in the stateless era the
//! server checks, before the engine runs, that each annotated argument present in the body
//! (and not null) arrives as its header, that the header's value (Base64 sentinel decoded) is
//! the argument's (integers compared as numbers, booleans as `true`/`false`), and that no such
//! header arrives for an absent argument. Any failure is `400` with `-32020` HeaderMismatch.
//!
//! [`ParamHeaders::of`] reads the annotations of a server's tools once, at startup;
//! [`scan`] refuses an annotation the revision forbids (not a token, not unique, on a
//! `number`, object or array property, or not reachable through `properties` alone). A tool
//! whose annotations are invalid is never checked here (clients drop such tools); catalogue
//! tests keep that from happening. Pure: no IO, no state beyond the startup table.

use std::collections::BTreeMap;

use serde_json::Value;

use super::headers::{BodyFacts, HeaderRejection, decode_sentinel, header_text};
use super::request::Request;
use crate::ledger::Fold;
use crate::protocol::Server;
use crate::protocol::jsonrpc::shorten;
use crate::protocol::model::Method;

/// The schema keyword that binds a parameter to a header.
pub const X_MCP_HEADER: &str = "x-mcp-header";

/// The JSON type of an annotated parameter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ParamKind {
    String,
    Integer,
    Boolean,
}

/// One argument mirrored into a header.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HeaderParam {
    /// The chain of `properties` keys leading to the argument.
    pub path: Vec<String>,
    /// The header's name as sent, `Mcp-Param-{Name}`.
    pub header: String,
    pub kind: ParamKind,
}

/// The header-bound parameters of every tool that has any, by tool name.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ParamHeaders {
    by_tool: BTreeMap<String, Vec<HeaderParam>>,
}

/// The header-bound parameters an input schema declares, or why its annotations are invalid.
pub fn scan(schema: &Value) -> Result<Vec<HeaderParam>, String> {
    let mut found = Vec::new();
    walk(schema, &mut Vec::new(), &mut found)?;
    let reachable = found.len();
    if count_annotations(schema) != reachable {
        return Err(format!(
            "{X_MCP_HEADER} may only annotate properties reachable through `properties` keys alone"
        ));
    }
    for (i, p) in found.iter().enumerate() {
        if found[..i]
            .iter()
            .any(|q| q.header.eq_ignore_ascii_case(&p.header))
        {
            return Err(format!("{} is declared twice", p.header));
        }
    }
    Ok(found)
}

fn walk(
    schema: &Value,
    path: &mut Vec<String>,
    found: &mut Vec<HeaderParam>,
) -> Result<(), String> {
    let Some(props) = schema.get("properties").and_then(Value::as_object) else {
        return Ok(());
    };
    for (key, prop) in props {
        path.push(key.clone());
        if let Some(name) = prop.get(X_MCP_HEADER) {
            let at = path.join(".");
            let name = name
                .as_str()
                .filter(|n| !n.is_empty() && n.bytes().all(is_tchar))
                .ok_or_else(|| format!("{X_MCP_HEADER} of {at} must be a non-empty HTTP token"))?;
            let kind = match prop.get("type").and_then(Value::as_str) {
                Some("string") => ParamKind::String,
                Some("integer") => ParamKind::Integer,
                Some("boolean") => ParamKind::Boolean,
                _ => {
                    return Err(format!(
                        "{X_MCP_HEADER} of {at} needs a property of type string, integer or boolean"
                    ));
                }
            };
            found.push(HeaderParam {
                path: path.clone(),
                header: format!("Mcp-Param-{name}"),
                kind,
            });
        }
        walk(prop, path, found)?;
        path.pop();
    }
    Ok(())
}

fn count_annotations(v: &Value) -> usize {
    match v {
        Value::Object(map) => {
            usize::from(map.contains_key(X_MCP_HEADER))
                + map.values().map(count_annotations).sum::<usize>()
        }
        Value::Array(items) => items.iter().map(count_annotations).sum(),
        _ => 0,
    }
}

/// RFC 9110 `tchar`.
fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

impl ParamHeaders {
    /// The annotations of `server`'s tools (their advertised input schemas).
    pub fn of<F: Fold>(server: &Server<F>) -> ParamHeaders {
        let by_tool = server
            .catalog
            .tools
            .iter()
            .filter_map(|t| {
                let params = scan(&server.input_schema(t)).ok()?;
                (!params.is_empty()).then(|| (t.name.to_string(), params))
            })
            .collect();
        ParamHeaders { by_tool }
    }

    /// Whether no tool has a header-bound parameter.
    pub fn is_empty(&self) -> bool {
        self.by_tool.is_empty()
    }

    /// Checks the `Mcp-Param-*` headers of a stateless-era `tools/call` against its body.
    pub fn check(&self, request: &Request, body: &BodyFacts) -> Result<(), HeaderRejection> {
        if body.known_method() != Some(Method::ToolsCall) {
            return Ok(());
        }
        let Some(params) = body.name.as_deref().and_then(|n| self.by_tool.get(n)) else {
            return Ok(());
        };
        for p in params {
            let value = body
                .arguments
                .as_ref()
                .and_then(|a| p.path.iter().try_fold(a, |v, k| v.get(k)))
                .filter(|v| !v.is_null());
            let header = match request.header(&p.header) {
                Some(raw) => Some(decode_sentinel(header_text(raw, &p.header)?, &p.header)?),
                None => None,
            };
            let at = format!("arguments.{}", p.path.join("."));
            match (value, header) {
                (None, None) => {}
                (Some(_), None) => {
                    return Err(HeaderRejection::mismatch(format!(
                        "Header mismatch: required header {} is missing ({at} is in the body)",
                        p.header
                    )));
                }
                (None, Some(_)) => {
                    return Err(HeaderRejection::mismatch(format!(
                        "Header mismatch: {} header sent but {at} is not in the body",
                        p.header
                    )));
                }
                (Some(v), Some(h)) if !agrees(v, &h) => {
                    return Err(HeaderRejection::mismatch(format!(
                        "Header mismatch: {} header value '{}' does not match body value {}",
                        p.header,
                        h.escape_default(),
                        shorten(&v.to_string(), 200)
                    )));
                }
                (Some(_), Some(_)) => {}
            }
        }
        Ok(())
    }
}

/// Whether a decoded header value stands for the body value: strings as they are, numbers
/// numerically (`42.0` is `42`), booleans as `true` / `false`. Integers are compared exactly,
/// never through `f64` (which would let a neighbouring integer above 2^53 pass).
fn agrees(body: &Value, header: &str) -> bool {
    match body {
        Value::String(s) => s == header,
        Value::Bool(b) => header == if *b { "true" } else { "false" },
        Value::Number(n) => match (n.as_i64(), n.as_u64()) {
            (Some(i), _) => same_integer(i128::from(i), header),
            (None, Some(u)) => same_integer(i128::from(u), header),
            _ => match (n.as_f64(), header.parse::<f64>()) {
                (Some(b), Ok(h)) => b == h,
                _ => false,
            },
        },
        _ => false,
    }
}

/// Whether the decimal `text` (`[+-]digits[.digits][e[+-]digits]`) is exactly `n`.
fn same_integer(n: i128, text: &str) -> bool {
    let (negative, unsigned) = match text.as_bytes().first() {
        Some(b'-') => (true, &text[1..]),
        Some(b'+') => (false, &text[1..]),
        _ => (false, text),
    };
    let (mantissa, exponent) = match unsigned.split_once(['e', 'E']) {
        Some((m, e)) => match e.parse::<i64>() {
            Ok(e) => (m, e),
            Err(_) => return false,
        },
        None => (unsigned, 0),
    };
    let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    if int.len() + frac.len() == 0 || !int.bytes().chain(frac.bytes()).all(|b| b.is_ascii_digit()) {
        return false;
    }
    // digits × 10^scale, with no leading or trailing zeros in digits.
    let all = format!("{int}{frac}");
    let digits = all.trim_start_matches('0');
    let trimmed = digits.trim_end_matches('0');
    let Some(scale) = i64::try_from(digits.len() - trimmed.len())
        .ok()
        .and_then(|z| {
            exponent
                .checked_sub(i64::try_from(frac.len()).ok()?)?
                .checked_add(z)
        })
    else {
        return false;
    };
    if trimmed.is_empty() {
        return n == 0;
    }
    let want = n.unsigned_abs().to_string();
    scale >= 0
        && (n < 0) == negative
        && usize::try_from(scale).is_ok_and(|z| z.checked_add(trimmed.len()) == Some(want.len()))
        && want.starts_with(trimmed)
        && want[trimmed.len()..].bytes().all(|b| b == b'0')
}

#[cfg(test)]
mod tests;
