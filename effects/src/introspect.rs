//! Introspects an opaque access token for the engine ([`Output::Introspect`], RFC 7662): a POST
//! of `token=…&token_type_hint=access_token` (`application/x-www-form-urlencoded`) to the
//! configured endpoint, or to the `introspection_endpoint` of the issuer's metadata (looked up
//! once and kept), authenticated as this server's client with HTTP Basic (RFC 7662 §2.1,
//! RFC 6749 §2.3.1). Over HTTPS verified against the system roots; plain HTTP only to a loopback
//! host. Every call gives up after [`TIMEOUT`]; an answer that is not `200` with a JSON object
//! is an error, which the engine turns into a `503`. Neither the token nor the secret is ever
//! in an error or a log line.
//!
//! [`Output::Introspect`]: bernstein_core::engine::Output::Introspect

use std::sync::Mutex;

use bernstein_core::transport::http::introspection::IntrospectRequest;
use serde_json::Value;

use crate::idp::{TIMEOUT, allowed_url, discover, form_encode, post_form_as_client};

/// Largest answer read.
const MAX_ANSWER_BYTES: u64 = 64 * 1024;

/// The endpoint found in the issuer's metadata, once found.
#[derive(Debug, Default)]
pub struct Endpoint(Mutex<Option<String>>);

/// The introspection endpoint's JSON answer for `ask`'s token, or why there is none (a
/// sentence naming the URL, never the token or the secret).
pub fn introspect(ask: &IntrospectRequest, endpoint: &Endpoint) -> Result<Value, String> {
    let agent = bernstein_os::https::agent(None, TIMEOUT)?;
    let url = match &ask.url {
        Some(u) => u.clone(),
        None => {
            let mut found = endpoint.0.lock().unwrap_or_else(|p| p.into_inner());
            match found.as_ref() {
                Some(u) => u.clone(),
                None => {
                    let setting = "BERNSTEIN_MCP_OAUTH_INTROSPECTION_URL";
                    let u = discover(&agent, &ask.issuer, "introspection_endpoint", setting)?;
                    *found = Some(u.clone());
                    u
                }
            }
        }
    };
    allowed_url(&url)?;
    let token = String::from_utf8_lossy(ask.token.expose());
    let form = format!("token={}&token_type_hint=access_token", form_encode(&token));
    let failed = |why: String| format!("POST {url}: {why}");
    let client = (ask.client_id.as_str(), ask.client_secret.expose());
    let (status, body) =
        post_form_as_client(&agent, &url, client, &form, MAX_ANSWER_BYTES).map_err(failed)?;
    if status != 200 {
        return Err(failed(format!("HTTP {status}")));
    }
    let doc: Value =
        serde_json::from_slice(&body).map_err(|_| failed("the answer is not JSON".into()))?;
    if !doc.is_object() {
        return Err(failed("the answer is not a JSON object".into()));
    }
    Ok(doc)
}

#[cfg(test)]
mod tests {
    use super::*;
    use bernstein_core::config::{ClientSecret, Introspection};
    use bernstein_core::transport::http::introspection::OpaqueToken;

    fn ask(url: Option<&str>, issuer: &str) -> IntrospectRequest {
        let config = Introspection {
            url: url.map(String::from),
            client_id: "rs".into(),
            client_secret: ClientSecret::new("s3cret"),
            cache_secs: 60,
        };
        IntrospectRequest::new(issuer, &config, OpaqueToken::new(b"opaque-123"))
    }

    /// A one-shot HTTP server on loopback: answers one request with `status` and `body`, and
    /// hands back the request it read.
    fn one_answer(status: u16, body: &'static str) -> (String, std::thread::JoinHandle<String>) {
        use std::io::{Read as _, Write as _};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/introspect", listener.local_addr().unwrap());
        let served = std::thread::spawn(move || {
            let (mut conn, _) = listener.accept().unwrap();
            let mut got = Vec::new();
            let mut buf = [0u8; 4096];
            loop {
                let n = conn.read(&mut buf).unwrap();
                got.extend_from_slice(&buf[..n]);
                let text = String::from_utf8_lossy(&got).to_string();
                if let Some(end) = text.find("\r\n\r\n") {
                    let len = text[..end]
                        .lines()
                        .find_map(|l| {
                            l.to_ascii_lowercase()
                                .strip_prefix("content-length:")
                                .map(|v| v.trim().parse::<usize>().unwrap())
                        })
                        .unwrap_or(0);
                    if got.len() >= end + 4 + len || n == 0 {
                        break;
                    }
                }
            }
            let reply = format!(
                "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
            conn.write_all(reply.as_bytes()).unwrap();
            String::from_utf8(got).unwrap()
        });
        (url, served)
    }

    #[test]
    fn the_post_is_a_form_with_basic_client_authentication() {
        let (url, served) = one_answer(200, r#"{"active":true,"sub":"alice"}"#);
        let mut a = ask(Some(&url), "http://127.0.0.1:1");
        a.client_id = "rs:1".into();
        a.client_secret = ClientSecret::new("p&ss word");
        a.token = OpaqueToken::new(b"tok+/=");
        let doc = introspect(&a, &Endpoint::default()).unwrap();
        assert_eq!(doc["sub"], "alice");
        let request = served.join().unwrap();
        assert!(
            request.starts_with("POST /introspect HTTP/1.1\r\n"),
            "{request}"
        );
        let lower = request.to_ascii_lowercase();
        assert!(
            lower.contains("content-type: application/x-www-form-urlencoded\r\n"),
            "{request}"
        );
        // RFC 6749 §2.3.1: the id and secret are form-encoded before Basic.
        use base64::Engine as _;
        let basic = base64::engine::general_purpose::STANDARD.encode("rs%3A1:p%26ss+word");
        assert!(request.contains(&format!("Basic {basic}\r\n")), "{request}");
        assert!(
            request.ends_with("\r\n\r\ntoken=tok%2B%2F%3D&token_type_hint=access_token"),
            "{request}"
        );
    }

    #[test]
    fn a_refusal_or_an_answer_that_is_not_json_is_an_error() {
        for (status, body, why) in [
            (401, r#"{"error":"invalid_client"}"#, "HTTP 401"),
            (200, "<html>", "not JSON"),
            (200, "[true]", "not a JSON object"),
        ] {
            let (url, served) = one_answer(status, body);
            let err = introspect(&ask(Some(&url), "http://127.0.0.1:1"), &Endpoint::default())
                .unwrap_err();
            served.join().unwrap();
            assert!(
                err.contains(why) && err.starts_with("POST http://"),
                "{err}"
            );
        }
    }

    #[test]
    fn an_idp_that_is_down_is_a_clear_error_naming_no_secret() {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let issuer = format!("http://127.0.0.1:{port}");
        let endpoint = Endpoint::default();
        let err = introspect(&ask(None, &issuer), &endpoint).unwrap_err();
        assert!(
            err.contains("no authorization server metadata found"),
            "{err}"
        );
        assert!(
            err.contains("BERNSTEIN_MCP_OAUTH_INTROSPECTION_URL"),
            "{err}"
        );
        let url = format!("{issuer}/introspect");
        let err = introspect(&ask(Some(&url), &issuer), &endpoint).unwrap_err();
        assert!(err.starts_with(&format!("POST {url}")), "{err}");
        for secret in ["opaque-123", "s3cret"] {
            assert!(!err.contains(secret), "{err}");
        }
        let remote = ask(Some("http://idp.example/introspect"), &issuer);
        assert!(
            introspect(&remote, &endpoint)
                .unwrap_err()
                .contains("not HTTPS")
        );
        assert!(!format!("{:?}", ask(None, &issuer)).contains("opaque-123"));
        assert!(!format!("{:?}", ask(None, &issuer)).contains("s3cret"));
    }
}
