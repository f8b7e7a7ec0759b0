//! The worker's HTTP transport against a scripted server on loopback: the headers every POST
//! carries (era, method, tool, bearer token), a chunked SSE answer, a JSON-RPC error on a 4xx,
//! a cancellation's notification, and the answer size cap.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::mpsc;
use std::thread;

use bernstein_worker::http_client::MAX_RESPONSE_BYTES;
use bernstein_worker::{Client, HttpMcp, ToolReply, TransportError};
use serde_json::json;

/// One request as the server read it: its head (lower-cased names) and body.
struct Seen {
    head: String,
    body: Vec<u8>,
}

/// Serves one connection per answer in `answers`, in order, reporting what each request was.
fn serve(answers: Vec<Vec<u8>>) -> (String, mpsc::Receiver<Seen>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        for answer in answers {
            let (stream, _) = listener.accept().unwrap();
            let seen = read_request(&stream);
            let _ = tx.send(seen);
            let mut stream = stream;
            let _ = stream.write_all(&answer);
        }
    });
    (url, rx)
}

fn read_request(stream: &TcpStream) -> Seen {
    let mut reader = BufReader::new(stream);
    let mut head = String::new();
    loop {
        let mut line = String::new();
        reader.read_line(&mut line).unwrap();
        if line == "\r\n" || line.is_empty() {
            break;
        }
        head.push_str(&line);
    }
    let len = head
        .lines()
        .find_map(|l| {
            let (n, v) = l.split_once(':')?;
            n.eq_ignore_ascii_case("content-length")
                .then(|| v.trim().parse::<usize>().unwrap())
        })
        .unwrap_or(0);
    let mut body = vec![0; len];
    reader.read_exact(&mut body).unwrap();
    Seen { head, body }
}

fn header<'a>(head: &'a str, name: &str) -> Option<&'a str> {
    head.lines().find_map(|l| {
        let (n, v) = l.split_once(':')?;
        n.eq_ignore_ascii_case(name).then(|| v.trim())
    })
}

const RESULT: &str = r#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"{}"}],"structuredContent":{"taskId":"T-1"},"isError":false}}"#;

#[test]
fn a_call_carries_the_era_headers_and_the_token_and_reads_a_chunked_event_stream() {
    let event = format!("data: {{\"jsonrpc\":\"2.0\",\"method\":\"n\"}}\n\ndata: {RESULT}\n\n");
    let (a, b) = event.split_at(20);
    let answer = format!(
        "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n\
         {:x}\r\n{a}\r\n{:x}\r\n{b}\r\n0\r\n\r\n",
        a.len(),
        b.len()
    );
    let accepted = "HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n".to_string();
    let (url, seen) = serve(vec![answer.into_bytes(), accepted.into_bytes()]);
    let mcp = HttpMcp::new(&url, Some("s3cret".into()), None).unwrap();
    let client = Client::new(Box::new(mcp));
    let reply = client
        .call_tool("bernstein_claim", json!({"claimer_id": "w"}))
        .unwrap();
    assert_eq!(reply, ToolReply::Ok(json!({"taskId": "T-1"})));
    let call = seen.recv().unwrap();
    assert!(
        call.head.starts_with("POST /mcp HTTP/1.1\r\n"),
        "{}",
        call.head
    );
    for (name, value) in [
        ("content-type", "application/json"),
        ("accept", "application/json, text/event-stream"),
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", "tools/call"),
        ("mcp-name", "bernstein_claim"),
        ("authorization", "Bearer s3cret"),
    ] {
        assert_eq!(header(&call.head, name), Some(value), "{}", call.head);
    }
    let body: serde_json::Value = serde_json::from_slice(&call.body).unwrap();
    assert_eq!(body["params"]["name"], "bernstein_claim");

    client.cancel(7, "stop").unwrap();
    let note = seen.recv().unwrap();
    assert_eq!(
        header(&note.head, "mcp-method"),
        Some("notifications/cancelled")
    );
    assert_eq!(header(&note.head, "mcp-name"), None);
    let body: serde_json::Value = serde_json::from_slice(&note.body).unwrap();
    assert_eq!(body["params"]["requestId"], 7);
}

#[test]
fn a_json_rpc_error_on_a_4xx_is_read_and_other_statuses_are_http_errors() {
    let error = r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"bad"}}"#;
    let answers = vec![
        format!(
            "HTTP/1.1 400 Bad Request\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{error}",
            error.len()
        )
        .into_bytes(),
        b"HTTP/1.1 401 Unauthorized\r\nContent-Length: 6\r\n\r\nno way".to_vec(),
    ];
    let (url, _seen) = serve(answers);
    let client = Client::new(Box::new(HttpMcp::new(&url, None, None).unwrap()));
    assert!(matches!(
        client.call_tool("bernstein_status", json!({})),
        Err(TransportError::Rpc { code: -32602, .. })
    ));
    match client.call_tool("bernstein_status", json!({})) {
        Err(TransportError::Http { status: 401, body }) => assert_eq!(body, "no way"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn an_answer_over_the_cap_is_refused() {
    let len = MAX_RESPONSE_BYTES + 1;
    let mut answer = format!(
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {len}\r\n\r\n"
    )
    .into_bytes();
    answer.resize(answer.len() + len, b' ');
    let (url, _seen) = serve(vec![answer]);
    let client = Client::new(Box::new(HttpMcp::new(&url, None, None).unwrap()));
    let e = client.call_tool("bernstein_status", json!({})).unwrap_err();
    assert!(matches!(e, TransportError::Io(_)), "{e:?}");
}

#[test]
fn a_closed_port_is_an_io_error_naming_the_url() {
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("http://127.0.0.1:{port}/mcp");
    let client = Client::new(Box::new(HttpMcp::new(&url, None, None).unwrap()));
    let e = client.call_tool("bernstein_status", json!({})).unwrap_err();
    assert!(e.to_string().contains(&url), "{e}");
}
