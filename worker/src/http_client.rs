//! `--url`: the worker's streamable-HTTP transport, on the `ureq` agent of
//! [`bernstein_os::https::agent`] (rustls; `https://` verified against the system's roots,
//! `SSL_CERT_FILE` honoured, plus `--ca`; plain `http://` for a server on loopback or behind a
//! proxy).
//!
//! One connection per request, so a dead server costs one refused connect and nothing lingers.
//! Every POST carries `Content-Type: application/json`, `Accept: application/json,
//! text/event-stream`, the 2026-07-28 era headers (`MCP-Protocol-Version`, `Mcp-Method`, and
//! `Mcp-Name: <tool>` on a `tools/call`) and the bearer token of its [`Credential`]
//! (`BERNSTEIN_MCP_TOKEN`, or one obtained from the IdP with client credentials; a fetched
//! token the server refuses with 401 is fetched again, once). The answer (chunked or not, at most
//! [`MAX_RESPONSE_BYTES`]) is read as JSON or as an SSE stream (the last `data:` event that is
//! a JSON-RPC response wins). A request may take [`REQUEST_TIMEOUT`] plus how long the server
//! may hold it on purpose (a claim's wait).
//!
//! This module moves bytes; it never interprets a tool result (see [`crate::transport`]).

use std::path::Path;
use std::time::Duration;

use serde_json::Value;

use crate::credential::Credential;
use crate::transport::{Mcp, PROTOCOL_VERSION, TransportError};

/// Longest a request may take (connect, send, answer), on top of a hold.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(60);
/// Largest answer read.
pub const MAX_RESPONSE_BYTES: usize = 16 * 1024 * 1024;

/// A streamable-HTTP MCP endpoint.
#[derive(Debug)]
pub struct HttpMcp {
    url: String,
    credential: Credential,
    agent: ureq::Agent,
}

impl HttpMcp {
    /// Checks `http[s]://host[:port][/path]` (default path `/mcp`) and builds the agent
    /// (`ca`: a CA file trusted besides the system's roots); `token`, when set and not empty,
    /// is sent as the bearer token.
    pub fn new(url: &str, token: Option<String>, ca: Option<&Path>) -> Result<HttpMcp, String> {
        let credential = match token.filter(|t| !t.is_empty()) {
            Some(t) => Credential::Fixed(t),
            None => Credential::None,
        };
        let rest = url
            .strip_prefix("http://")
            .or_else(|| url.strip_prefix("https://"))
            .ok_or_else(|| format!("{url}: only http:// and https:// URLs are supported"))?;
        let authority = rest.split('/').next().unwrap_or("");
        let host = match authority.rsplit_once(':') {
            Some((h, p)) if !h.ends_with(']') || h.starts_with('[') => {
                p.parse::<u16>()
                    .map_err(|_| format!("{url}: bad port {p:?}"))?;
                h
            }
            _ => authority,
        };
        if host.is_empty() || host == "[]" {
            return Err(format!("{url}: no host"));
        }
        let url = if rest.contains('/') {
            url.to_string()
        } else {
            format!("{url}/mcp")
        };
        url.parse::<ureq::http::Uri>()
            .map_err(|e| format!("{url}: {e}"))?;
        let agent = bernstein_os::https::agent(ca, REQUEST_TIMEOUT)?;
        Ok(HttpMcp {
            url,
            credential,
            agent,
        })
    }

    /// The `/mcp` URL requests go to (what a client credentials token is asked for).
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The same endpoint, sending `credential`'s bearer token.
    pub fn with_credential(self, credential: Credential) -> HttpMcp {
        HttpMcp { credential, ..self }
    }

    /// POSTs `body` as `method` (`name`: the tool a `tools/call` calls) and reads the whole
    /// answer; the server may hold it `hold` on top of the usual time. A fetched token the
    /// server refuses (401) is fetched again and the request sent once more.
    fn post(
        &self,
        method: &str,
        name: Option<&str>,
        body: &[u8],
        hold: Duration,
    ) -> Result<HttpAnswer, TransportError> {
        let answer = self.post_once(method, name, body, hold)?;
        if answer.status == 401 && self.credential.refused() {
            return self.post_once(method, name, body, hold);
        }
        Ok(answer)
    }

    fn post_once(
        &self,
        method: &str,
        name: Option<&str>,
        body: &[u8],
        hold: Duration,
    ) -> Result<HttpAnswer, TransportError> {
        let mut request = self
            .agent
            .post(&self.url)
            .config()
            .timeout_global(Some(REQUEST_TIMEOUT + hold))
            .build()
            .header("Content-Type", "application/json")
            .header("Accept", "application/json, text/event-stream")
            .header("MCP-Protocol-Version", PROTOCOL_VERSION)
            .header("Mcp-Method", method);
        if let Some(name) = name {
            request = request.header("Mcp-Name", name);
        }
        if let Some(t) = self.credential.bearer(&self.agent)? {
            request = request.header("Authorization", format!("Bearer {t}"));
        }
        let mut response = request.send(body).map_err(|e| self.failed(e))?;
        let status = response.status().as_u16();
        let event_stream = response
            .headers()
            .get("content-type")
            .and_then(|c| c.to_str().ok())
            .is_some_and(|c| c.to_ascii_lowercase().contains("text/event-stream"));
        let body = response
            .body_mut()
            .with_config()
            .limit(MAX_RESPONSE_BYTES as u64)
            .read_to_vec()
            .map_err(|e| self.failed(e))?;
        Ok(HttpAnswer {
            status,
            event_stream,
            body,
        })
    }

    /// What a failed request says, with what to do when the server's certificate is the cause.
    fn failed(&self, e: ureq::Error) -> TransportError {
        let text = e.to_string();
        let hint = if text.contains("certificate") || matches!(e, ureq::Error::Rustls(_)) {
            " (the server's TLS certificate is not trusted: name its CA with --ca FILE or SSL_CERT_FILE)"
        } else {
            ""
        };
        TransportError::Io(format!("{}: {text}{hint}", self.url))
    }
}

impl Mcp for HttpMcp {
    fn exchange(
        &self,
        tool: &str,
        request: &[u8],
        hold: Duration,
    ) -> Result<Value, TransportError> {
        let response = self.post("tools/call", Some(tool), request, hold)?;
        if response.status != 200 {
            // JSON-RPC errors ride on 4xx with a JSON body; surface them as such. Anything
            // else (a 401's problem document, a proxy's page) is an HTTP failure.
            if let Ok(v) = serde_json::from_slice::<Value>(&response.body)
                && v.get("jsonrpc").and_then(Value::as_str) == Some("2.0")
                && v.get("error").is_some_and(Value::is_object)
            {
                return Ok(v);
            }
            return Err(TransportError::Http {
                status: response.status,
                body: String::from_utf8_lossy(&response.body).into_owned(),
            });
        }
        if response.event_stream {
            return last_sse_response(&response.body);
        }
        serde_json::from_slice(&response.body)
            .map_err(|e| TransportError::Malformed(format!("answer is not JSON: {e}")))
    }

    /// A notification is accepted with 202 and no body.
    fn notify(&self, method: &str, notification: &[u8]) -> Result<(), TransportError> {
        let response = self.post(method, None, notification, Duration::ZERO)?;
        match response.status {
            200..=299 => Ok(()),
            status => Err(TransportError::Http {
                status,
                body: String::from_utf8_lossy(&response.body).into_owned(),
            }),
        }
    }
}

/// A response read whole.
#[derive(Debug)]
struct HttpAnswer {
    status: u16,
    event_stream: bool,
    body: Vec<u8>,
}

/// The last JSON-RPC response (a message with `result` or `error`) among an SSE body's events.
pub fn last_sse_response(body: &[u8]) -> Result<Value, TransportError> {
    let text = String::from_utf8_lossy(body).replace("\r\n", "\n");
    let mut found = None;
    for event in text.split("\n\n") {
        let data: Vec<&str> = event
            .lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .map(|d| d.strip_prefix(' ').unwrap_or(d))
            .collect();
        if data.is_empty() {
            continue;
        }
        if let Ok(v) = serde_json::from_str::<Value>(&data.join("\n"))
            && (v.get("result").is_some() || v.get("error").is_some())
        {
            found = Some(v);
        }
    }
    found.ok_or_else(|| TransportError::Malformed("the event stream held no response".into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_parse_with_defaults() {
        let h = HttpMcp::new("http://127.0.0.1:8053/mcp", None, None).unwrap();
        assert_eq!(h.url, "http://127.0.0.1:8053/mcp");
        let h = HttpMcp::new("http://localhost", Some(String::new()), None).unwrap();
        assert_eq!(h.url.as_str(), "http://localhost/mcp");
        assert!(matches!(h.credential, Credential::None));
        let h = HttpMcp::new("https://[::1]:9000/x", None, None).unwrap();
        assert_eq!(h.url, "https://[::1]:9000/x");
        assert!(HttpMcp::new("ftp://x", None, None).is_err());
        assert!(HttpMcp::new("http://:80/mcp", None, None).is_err());
        assert!(HttpMcp::new("http://h:port/mcp", None, None).is_err());
    }

    #[test]
    fn a_bad_ca_file_is_named() {
        let e = HttpMcp::new(
            "https://h/mcp",
            None,
            Some(Path::new("/nonexistent/ca.pem")),
        )
        .unwrap_err();
        assert!(e.contains("/nonexistent/ca.pem"), "{e}");
    }

    #[test]
    fn the_last_response_of_an_event_stream_wins() {
        let body = b"data: {\"method\":\"n\"}\n\nid: 2\n\ndata: {\"id\":1,\"result\":{}}\r\n\r\n";
        assert_eq!(last_sse_response(body).unwrap()["id"], 1);
        assert!(last_sse_response(b"data: {\"method\":\"n\"}\n\n").is_err());
    }
}
