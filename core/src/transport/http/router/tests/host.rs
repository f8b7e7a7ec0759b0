//! Host pinning and origin checks on every route, before discovery, auth and the engine.

use super::*;

const ROUTES: [(&str, &str); 7] = [
    ("POST", "/mcp"),
    ("GET", "/mcp"),
    ("GET", "/sse"),
    ("POST", "/messages?stream=00112233445566778899aabbccddeeff"),
    ("GET", "/.well-known/oauth-protected-resource"),
    ("GET", "/.well-known/oauth-protected-resource/mcp"),
    ("GET", "/anything/else"),
];

fn on(method: &str, target: &str, headers: &[(&str, &str)]) -> Request {
    req(method, target, &[&[JSON][..], headers].concat(), LIST)
}

#[test]
fn a_foreign_host_is_misdirected_on_every_route() {
    for p in [local(), policy(bearer(), true, true)] {
        for (method, target) in ROUTES {
            for host in ["rebind.attacker.example:8053", "127.0.0.1:9", "localhost"] {
                let r = response(p.route(on(method, target, &[("Host", host)]), true, now()));
                assert_eq!(r.status.code(), 421, "{method} {target} {host}");
                assert!(r.close, "a misdirected connection is not reused");
                let body = body_json(&r);
                assert_eq!(body["error"]["code"], -32600, "{body}");
                assert_eq!(body["id"], Value::Null);
                assert!(!String::from_utf8_lossy(&r.body).contains("attacker"));
                assert!(r.header("www-authenticate").is_none());
            }
        }
    }
}

#[test]
fn missing_or_repeated_host_is_a_bad_request_on_every_route() {
    let p = local();
    for (method, target) in ROUTES {
        let mut missing = on(method, target, &[]);
        missing.headers.retain(|h| h.name != "host");
        let r = response(p.route(missing.clone(), true, now()));
        assert_eq!(r.status.code(), 400, "{method} {target}");
        assert!(
            body_json(&r)["error"]["message"]
                .as_str()
                .unwrap()
                .contains("Host")
        );
        let mut twice = on(method, target, &[]);
        twice.headers.push(Header {
            name: "host".into(),
            value: b"127.0.0.1:8053".to_vec(),
        });
        assert_eq!(
            status(p.route(twice, true, now())),
            400,
            "{method} {target}"
        );
        let r = response(p.route(
            on(method, target, &[("Host", "localhost@evil")]),
            true,
            now(),
        ));
        assert_eq!(r.status.code(), 400, "{method} {target}");
    }
}

#[test]
fn http_1_0_without_host_is_aimed_at_the_bind_address() {
    let p = policy(bearer(), true, false);
    let mut r = on("GET", "/.well-known/oauth-protected-resource/mcp", &[]);
    r.headers.retain(|h| h.name != "host");
    r.version = 0;
    let r = response(p.route(r, true, now()));
    assert_eq!(r.status.code(), 200);
    assert_eq!(body_json(&r)["resource"], "http://127.0.0.1:8053/mcp");
    // A wildcard bind names loopback, never 0.0.0.0.
    let p = policy(bearer(), true, true);
    let mut r = on("POST", "/mcp", &[]);
    r.headers.retain(|h| h.name != "host");
    r.version = 0;
    let r = response(p.route(r, true, now()));
    assert_eq!(r.status.code(), 401);
    assert_eq!(
        r.header("www-authenticate"),
        Some(
            "Bearer resource_metadata=\"http://127.0.0.1:8053/.well-known/oauth-protected-resource/mcp\""
        )
    );
}

#[test]
fn urls_name_the_allowed_host_as_sent() {
    let p = policy(bearer(), true, true);
    for (host, want) in [
        ("localhost:8053", "http://localhost:8053/mcp"),
        ("MCP.example.com:444", "http://mcp.example.com:444/mcp"),
        ("[::1]:8053", "http://[::1]:8053/mcp"),
    ] {
        let r = response(p.route(
            on(
                "GET",
                "/.well-known/oauth-protected-resource/mcp",
                &[("Host", host)],
            ),
            false,
            now(),
        ));
        assert_eq!(r.status.code(), 200, "{host}");
        assert_eq!(body_json(&r)["resource"], want);
    }
}

#[test]
fn a_foreign_origin_is_refused_on_every_route() {
    for p in [local(), policy(bearer(), true, true)] {
        for (method, target) in ROUTES {
            for origin in [
                "https://evil.example",
                "null",
                "http://localhost.evil.example",
            ] {
                let r = response(p.route(on(method, target, &[("Origin", origin)]), true, now()));
                assert_eq!(r.status.code(), 403, "{method} {target} {origin}");
                assert_eq!(body_json(&r)["error"]["code"], -32600);
            }
        }
    }
    // The Host rule comes first: a foreign Host with a loopback Origin is still misdirected.
    let r = local().route(
        on(
            "GET",
            "/sse",
            &[("Host", "evil.example"), ("Origin", "http://localhost")],
        ),
        true,
        now(),
    );
    assert_eq!(status(r), 421);
}

#[test]
fn a_bad_allowed_host_entry_refuses_to_start() {
    let opts = HttpOptions {
        allowed_hosts: vec!["ok.example".into(), "user@evil".into()],
        ..HttpOptions::default()
    };
    let err = HttpPolicy::new(
        &config(AuthMode::None, false),
        &opts,
        "127.0.0.1:8053",
        true,
    )
    .unwrap_err();
    assert!(err.to_string().contains("user@evil"), "{err}");
    assert!(
        err.to_string().contains("BERNSTEIN_MCP_ALLOWED_HOSTS"),
        "{err}"
    );
}
