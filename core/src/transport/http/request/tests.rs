//! Request framing: limits, pipelining, partial reads, chunked bodies, `100-continue`, and
//! arbitrary bytes.

use super::*;

fn limits() -> ParserLimits {
    ParserLimits {
        max_header_bytes: 256,
        max_headers: 8,
        max_body_bytes: 64,
    }
}

fn frames_of(chunks: &[&[u8]], limits: ParserLimits) -> Vec<Frame> {
    let mut p = RequestParser::new(limits);
    let mut out = Vec::new();
    for c in chunks {
        p.handle_bytes(c);
        out.extend(std::iter::from_fn(|| p.poll_frame()));
    }
    out
}

fn request(frame: &Frame) -> &Request {
    match frame {
        Frame::Request(r) => r,
        other => panic!("expected a request, got {other:?}"),
    }
}

const POST: &[u8] = b"POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 7\r\n\r\n{\"a\":1}";

#[test]
fn parses_a_request_with_a_sized_body() {
    let got = frames_of(&[POST], limits());
    assert_eq!(got.len(), 1);
    let r = request(&got[0]);
    assert_eq!(
        (r.method.as_str(), r.path(), r.version),
        ("POST", "/mcp", 1)
    );
    assert_eq!(r.header_str("HOST"), Some("localhost"));
    assert_eq!(r.body, b"{\"a\":1}");
    assert!(r.keep_alive());
}

#[test]
fn byte_by_byte_gives_the_same_requests_as_one_read() {
    let two = [POST, POST].concat();
    let whole = frames_of(&[&two], limits());
    let bytes: Vec<&[u8]> = two.chunks(1).collect();
    assert_eq!(frames_of(&bytes, limits()), whole);
    assert_eq!(
        whole.len(),
        2,
        "pipelined requests come out one after the other"
    );
}

#[test]
fn pipelined_requests_and_a_partial_third() {
    let data = [
        POST,
        b"GET /sse?x=1 HTTP/1.1\r\nHost: a\r\n\r\n",
        b"POST /mcp HTTP/1.1\r\nContent-Le",
    ]
    .concat();
    let mut p = RequestParser::new(limits());
    p.handle_bytes(&data);
    assert_eq!(request(&p.poll_frame().unwrap()).body.len(), 7);
    let get = p.poll_frame().unwrap();
    assert_eq!(
        (request(&get).path(), request(&get).query()),
        ("/sse", Some("x=1"))
    );
    assert_eq!(p.poll_frame(), None);
    assert!(!p.is_idle());
    p.handle_bytes(b"ngth: 2\r\n\r\n{}");
    assert_eq!(request(&p.poll_frame().unwrap()).body, b"{}");
    assert!(p.is_idle());
}

#[test]
fn header_block_limit_gives_431_even_without_an_end() {
    let mut long = b"GET / HTTP/1.1\r\nX: ".to_vec();
    long.extend(vec![b'a'; 300]);
    let got = frames_of(&[&long], limits());
    assert_eq!(
        got,
        vec![Frame::Error(FrameError::HeadersTooLarge { limit: 256 })]
    );
    assert_eq!(
        FrameError::HeadersTooLarge { limit: 1 }.status().code(),
        431
    );
}

#[test]
fn header_count_limit_gives_431() {
    let mut head = b"GET / HTTP/1.1\r\n".to_vec();
    for i in 0..9 {
        head.extend(format!("X-{i}: v\r\n").as_bytes());
    }
    head.extend(b"\r\n");
    assert_eq!(
        frames_of(&[&head], limits()),
        vec![Frame::Error(FrameError::TooManyHeaders { limit: 8 })]
    );
}

#[test]
fn oversize_body_is_refused_before_it_arrives() {
    let head = b"POST /mcp HTTP/1.1\r\nContent-Length: 65\r\n\r\n";
    let got = frames_of(&[head], limits());
    assert_eq!(
        got,
        vec![Frame::Error(FrameError::BodyTooLarge { limit: 64 })]
    );
    assert_eq!(
        FrameError::BodyTooLarge { limit: 64 }
            .response()
            .status
            .code(),
        413
    );
}

#[test]
fn nothing_after_a_fatal_error() {
    let mut p = RequestParser::new(limits());
    p.handle_bytes(b"BAD\x01 / HTTP/1.1\r\n\r\n");
    assert!(matches!(
        p.poll_frame(),
        Some(Frame::Error(FrameError::Malformed(_)))
    ));
    p.handle_bytes(POST);
    assert_eq!(p.poll_frame(), None);
    assert!(p.is_failed());
}

#[test]
fn framing_conflicts_and_bad_lengths_are_malformed() {
    for head in [
        &b"POST / HTTP/1.1\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n"[..],
        b"POST / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
        b"POST / HTTP/1.1\r\nContent-Length: -1\r\n\r\n",
        b"POST / HTTP/1.1\r\nContent-Length: 1x\r\n\r\n",
    ] {
        assert!(
            matches!(
                frames_of(&[head], limits())[..],
                [Frame::Error(FrameError::Malformed(_))]
            ),
            "{head:?}"
        );
    }
    let same = b"POST / HTTP/1.1\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\n{}";
    assert_eq!(request(&frames_of(&[same], limits())[0]).body, b"{}");
    let gzip = b"POST / HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n";
    assert_eq!(
        frames_of(&[gzip], limits()),
        vec![Frame::Error(FrameError::UnsupportedTransferCoding)]
    );
    let http2 = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
    assert!(matches!(
        frames_of(&[http2], limits())[..],
        [Frame::Error(_)]
    ));
}

#[test]
fn chunked_bodies_are_decoded_in_any_split() {
    let data = b"POST /mcp HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n4;ext=1\r\n{\"a\"\r\n3\r\n:1}\r\n0\r\nX-Trailer: t\r\n\r\n";
    let whole = frames_of(&[data], limits());
    assert_eq!(request(&whole[0]).body, b"{\"a\":1}");
    for cut in 0..data.len() {
        assert_eq!(
            frames_of(&[&data[..cut], &data[cut..]], limits()),
            whole,
            "cut at {cut}"
        );
    }
    let bytes: Vec<&[u8]> = data.chunks(1).collect();
    assert_eq!(frames_of(&bytes, limits()), whole);
}

#[test]
fn chunked_bodies_obey_the_body_limit_and_framing() {
    let big = b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n40\r\n";
    assert_eq!(
        request(&frames_of(&[big, &[b'x'; 64], b"\r\n0\r\n\r\n"], limits())[0])
            .body
            .len(),
        64
    );
    let over = b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nx\r\n40\r\n";
    assert_eq!(
        frames_of(&[over], limits()),
        vec![Frame::Error(FrameError::BodyTooLarge { limit: 64 })]
    );
    let bad = b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n";
    assert!(matches!(
        frames_of(&[bad], limits())[..],
        [Frame::Error(FrameError::Malformed(_))]
    ));
    let unterminated = b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nabc";
    assert!(matches!(
        frames_of(&[unterminated], limits())[..],
        [Frame::Error(FrameError::Malformed(_))]
    ));
}

#[test]
fn expect_continue_is_cued_once_before_the_body() {
    let head = b"POST /mcp HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n";
    let mut p = RequestParser::new(limits());
    p.handle_bytes(head);
    assert_eq!(p.poll_frame(), Some(Frame::Continue));
    assert_eq!(p.poll_frame(), None);
    p.handle_bytes(b"{}");
    assert_eq!(request(&p.poll_frame().unwrap()).body, b"{}");
    // Body already sent along with the head: no cue.
    let got = frames_of(&[&[&head[..], b"{}"].concat()], limits());
    assert!(matches!(got[..], [Frame::Request(_)]));
    let odd = b"POST /mcp HTTP/1.1\r\nExpect: teapot\r\nContent-Length: 2\r\n\r\n";
    assert_eq!(
        frames_of(&[odd], limits()),
        vec![Frame::Error(FrameError::ExpectationFailed)]
    );
}

#[test]
fn keep_alive_follows_version_and_connection() {
    let parse = |raw: &[u8]| request(&frames_of(&[raw], limits())[0]).keep_alive();
    assert!(parse(b"GET / HTTP/1.1\r\n\r\n"));
    assert!(!parse(
        b"GET / HTTP/1.1\r\nConnection: Upgrade, close\r\n\r\n"
    ));
    assert!(!parse(b"GET / HTTP/1.0\r\n\r\n"));
    assert!(parse(b"GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"));
}

proptest::proptest! {
    #[test]
    fn arbitrary_bytes_never_panic(data in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..600), cut in 0usize..600) {
        let cut = cut.min(data.len());
        let _ = frames_of(&[&data[..cut], &data[cut..]], limits());
    }

    #[test]
    fn arbitrary_bytes_after_a_valid_head_never_panic(data in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..300)) {
        let head = b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n";
        let _ = frames_of(&[head, &data], limits());
    }

    #[test]
    fn splitting_never_changes_frames(cut in 0usize..200) {
        let data = [POST, POST, b"GET / HTTP/1.1\r\n\r\n"].concat();
        let cut = cut.min(data.len());
        proptest::prop_assert_eq!(frames_of(&[&data[..cut], &data[cut..]], limits()), frames_of(&[&data], limits()));
    }
}
