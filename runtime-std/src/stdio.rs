//! The stdio transport on std: newline-delimited JSON-RPC on stdin/stdout, one message at a
//! time, logs only on stderr. The connection remembers nothing but the protocol revision that
//! `initialize` negotiated (a transport fact, like the HTTP `MCP-Protocol-Version` header).

use std::io::{self, Read, Write};

use bernstein_core::ledger::Store;
use bernstein_core::protocol::{Server, TransportFacts};
use bernstein_core::transport::{Line, LineFramer};

use crate::driver::{Clock, serve_message};

/// Per-connection state of a stdio peer: the framer and the negotiated revision.
#[derive(Debug)]
pub struct StdioConnection {
    pub framer: LineFramer,
    pub facts: TransportFacts,
}

impl StdioConnection {
    pub fn new(server: &Server) -> StdioConnection {
        StdioConnection {
            framer: LineFramer::new(server.config.limits.max_message_bytes),
            facts: TransportFacts::stdio(None),
        }
    }

    /// Serves one frame and returns the lines to write (notifications, then the reply).
    /// Store failures are logged and answered with an internal error; they never end the loop.
    pub fn serve_line(
        &mut self,
        server: &Server,
        store: &dyn Store,
        clock: &dyn Clock,
        line: Line,
    ) -> Vec<Vec<u8>> {
        let bytes = match line {
            Line::Message(b) if b.iter().all(u8::is_ascii_whitespace) => return Vec::new(),
            Line::Message(b) => b,
            Line::Oversize(n) => {
                eprintln!(
                    "bernstein: refused a {n}-byte message (limit {} bytes)",
                    server.config.limits.max_message_bytes
                );
                return vec![server.oversize_reply(n)];
            }
        };
        match serve_message(server, store, clock, &bytes, &self.facts) {
            Ok(served) => {
                if let Some(v) = served.negotiated_version {
                    self.facts.protocol_version = Some(v);
                }
                let mut out = served.notifications;
                out.extend(served.response);
                out
            }
            Err(e) => {
                eprintln!("bernstein: ledger error: {e}");
                vec![server.storage_failure_reply(&bytes, &e.to_string())]
            }
        }
    }
}

/// Serves stdin/stdout until end of input.
pub fn serve_stdio(server: &Server, store: &dyn Store, clock: &dyn Clock) -> io::Result<()> {
    let mut conn = StdioConnection::new(server);
    let mut stdin = io::stdin().lock();
    let stdout = io::stdout();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = match stdin.read(&mut buf) {
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if n == 0 {
            conn.framer.handle_eof();
        } else {
            conn.framer.handle_bytes(&buf[..n]);
        }
        while let Some(line) = conn.framer.poll_line() {
            let out = conn.serve_line(server, store, clock, line);
            write_lines(&stdout, &out)?;
        }
        if n == 0 {
            return Ok(());
        }
    }
}

fn write_lines(stdout: &io::Stdout, messages: &[Vec<u8>]) -> io::Result<()> {
    if messages.is_empty() {
        return Ok(());
    }
    let mut out = stdout.lock();
    for m in messages {
        out.write_all(m)?;
        out.write_all(b"\n")?;
    }
    out.flush()
}
