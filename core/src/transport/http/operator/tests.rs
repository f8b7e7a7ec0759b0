use super::*;
use crate::transport::http::Frame;
use crate::transport::http::request::{ParserLimits, RequestParser};

fn request(raw: &str) -> Request {
    let mut p = RequestParser::new(ParserLimits::default());
    p.handle_bytes(raw.as_bytes());
    match p.poll_frame() {
        Some(Frame::Request(r)) => r,
        other => panic!("no request: {other:?}"),
    }
}

fn get(target: &str) -> Parsed {
    parse(&mut request(&format!(
        "GET {target} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
    )))
}

#[test]
fn assets_are_public_and_get_only() {
    assert!(matches!(get("/"), Parsed::Asset(Asset::Page)));
    assert!(matches!(get("/dashboard.js"), Parsed::Asset(Asset::Script)));
    assert!(matches!(
        get("/dashboard-view.js"),
        Parsed::Asset(Asset::View)
    ));
    let mut post = request("POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\n\r\n");
    assert!(matches!(parse(&mut post), Parsed::Method("GET")));
    let page = asset(Asset::Page, "s");
    assert_eq!(
        page.header("content-type"),
        Some("text/html; charset=utf-8")
    );
    assert!(
        page.header("content-security-policy")
            .unwrap()
            .contains("default-src 'none'")
    );
    assert!(embedded_bytes() <= 100 * 1024, "{} bytes", embedded_bytes());
}

#[test]
fn routes_parse_their_queries() {
    assert!(matches!(
        get("/healthz"),
        Parsed::Route(OperatorRoute::Healthz)
    ));
    assert!(matches!(get("/mcp"), Parsed::None));
    assert!(matches!(
        get("/api/overview"),
        Parsed::Route(OperatorRoute::Overview {
            window_s: DEFAULT_WINDOW_S
        })
    ));
    assert!(matches!(
        get("/api/overview?window=900"),
        Parsed::Route(OperatorRoute::Overview { window_s: 900 })
    ));
    for bad in [
        "/api/overview?window=5",
        "/api/overview?window=x",
        "/api/overview?window=999999",
    ] {
        assert!(matches!(get(bad), Parsed::Bad(_)), "{bad}");
    }
    match get("/api/task?id=task_a%2Db+c") {
        Parsed::Route(OperatorRoute::Task { id }) => assert_eq!(id, "task_a-b c"),
        other => panic!("{other:?}"),
    }
    assert!(matches!(get("/api/task"), Parsed::Bad(_)));
    assert!(matches!(get("/api/task?id=%zz"), Parsed::Bad(_)));
    assert!(matches!(get("/api/verify"), Parsed::Method("POST")));
    let mut post =
        request("POST /api/verify HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 2\r\n\r\n{}");
    match parse(&mut post) {
        Parsed::Route(OperatorRoute::Verify { pasted }) => assert_eq!(pasted, b"{}"),
        other => panic!("{other:?}"),
    }
}
