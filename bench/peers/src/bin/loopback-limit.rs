//! `loopback-limit [PORT]`: the ceiling row of `bernstein-bench wrk`. A raw HTTP/1.1
//! keep-alive server on tokio, no framework and no MCP: it reads each request's head and
//! `Content-Length` body and answers every one with the same 200 `application/json` response,
//! whose body is a JSON-RPC tool result as long as our `bernstein_status` answer. What wrk and
//! the loopback manage on this machine, so the other rows can be read against it. Binds
//! 127.0.0.1:PORT (0 by default) and prints `http://ADDR/mcp` on stdout.

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// Bytes of one `tools/call bernstein_status` answer body from `bernstein mcp`.
const ANSWER_BYTES: usize = 958;

fn response() -> Vec<u8> {
    let head = r#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":""#;
    let tail = r#""}],"isError":false}}"#;
    let pad = ANSWER_BYTES.saturating_sub(head.len() + tail.len());
    let body = format!("{head}{}{tail}", "x".repeat(pad));
    let mut out = format!(
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        body.len()
    )
    .into_bytes();
    out.extend_from_slice(body.as_bytes());
    out
}

/// The request length at the start of `buf` (head and body), once all of it is there.
fn complete_request(buf: &[u8]) -> Option<usize> {
    let head_end = buf.windows(4).position(|w| w == b"\r\n\r\n")? + 4;
    let head = std::str::from_utf8(&buf[..head_end]).ok()?;
    let body = head
        .lines()
        .find_map(|l| {
            let (name, value) = l.split_once(':')?;
            name.eq_ignore_ascii_case("content-length")
                .then(|| value.trim().parse::<usize>().ok())?
        })
        .unwrap_or(0);
    (buf.len() >= head_end + body).then_some(head_end + body)
}

async fn serve(mut stream: TcpStream, answer: &'static [u8]) -> std::io::Result<()> {
    stream.set_nodelay(true)?;
    let mut buf = Vec::with_capacity(8192);
    let mut chunk = [0u8; 16384];
    loop {
        let n = stream.read(&mut chunk).await?;
        if n == 0 {
            return Ok(());
        }
        buf.extend_from_slice(&chunk[..n]);
        // Answer every complete request in the buffer (pipelined ones too) with one write.
        let mut out = Vec::new();
        while let Some(len) = complete_request(&buf) {
            buf.drain(..len);
            out.extend_from_slice(answer);
        }
        if !out.is_empty() {
            stream.write_all(&out).await?;
        }
    }
}

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let port: u16 = match std::env::args().nth(1) {
        Some(p) => p.parse().map_err(std::io::Error::other)?,
        None => 0,
    };
    let answer: &'static [u8] = response().leak();
    let listener = TcpListener::bind(("127.0.0.1", port)).await?;
    println!(
        "loopback-limit: answering at http://{}/mcp",
        listener.local_addr()?
    );
    loop {
        let (stream, _) = listener.accept().await?;
        tokio::spawn(serve(stream, answer));
    }
}
