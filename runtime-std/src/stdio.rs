//! The stdio transport on std: newline-delimited JSON-RPC on stdin/stdout, one message at a
//! time, logs only on stderr. The connection remembers nothing but the protocol revision that
//! `initialize` negotiated (a transport fact, like the HTTP `MCP-Protocol-Version` header).
//!
//! A message whose answer must wait for the ledger (`tasks/result` of a running task, a long
//! poll of `bernstein_run_status`) is served on a background thread so that later lines keep
//! flowing; the notifications it produces meanwhile (a long poll's progress ticks: the current
//! one at once, then one each time the ledger moves) are written as they happen, the answer
//! last. At end of input such waits end and send the answer they have, and a
//! `notifications/cancelled` naming one ends it with the core's cancelled answer
//! (`{cancelled: true, partial}`).

use std::io::{self, Read, Write};
use std::sync::atomic::{AtomicBool, Ordering};

use bernstein_core::protocol::{Server, TransportFacts};
use bernstein_core::transport::{Line, LineFramer};

use crate::driver::{
    DEFAULT_WAIT, Env, Stop, serve_message, serve_message_streaming, serve_message_with,
};
use crate::inflight::{Entry, Inflight};

/// A message whose answer waits: the lines to write now (progress ticks already due), and the
/// message to serve with [`serve_deferred`].
#[derive(Debug)]
pub struct Deferred {
    pub lines: Vec<Vec<u8>>,
    pub bytes: Vec<u8>,
}

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
    pub fn serve_line(&mut self, server: &Server, env: &Env<'_>, line: Line) -> Vec<Vec<u8>> {
        let bytes = match line {
            Line::Message(b) if b.iter().all(u8::is_ascii_whitespace) => return Vec::new(),
            Line::Message(b) => b,
            Line::Oversize(n) => {
                bernstein_store_file::log_line!(
                    "bernstein: refused a {n}-byte message (limit {} bytes)",
                    server.config.limits.max_message_bytes
                );
                return vec![server.oversize_reply(n)];
            }
        };
        let served = serve_message(server, env, &bytes, &self.facts);
        self.lines(server, &bytes, served)
    }

    /// Like [`StdioConnection::serve_line`], but never waits: a message whose answer is still
    /// pending comes back as [`Deferred`], to be served with [`serve_deferred`].
    pub fn serve_line_now(
        &mut self,
        server: &Server,
        env: &Env<'_>,
        line: Line,
    ) -> Result<Vec<Vec<u8>>, Deferred> {
        let bytes = match line {
            Line::Message(b) if !b.iter().all(u8::is_ascii_whitespace) => b,
            other => return Ok(self.serve_line(server, env, other)),
        };
        let served = serve_message_with(server, env, &bytes, &self.facts, &DEFAULT_WAIT, &|| {
            Some(Stop::Defer)
        });
        match served {
            Ok(s) if s.pending => Err(Deferred {
                lines: s.notifications,
                bytes,
            }),
            other => Ok(self.lines(server, &bytes, other)),
        }
    }

    fn lines(
        &mut self,
        server: &Server,
        bytes: &[u8],
        served: Result<crate::driver::Served, bernstein_core::ledger::StoreError>,
    ) -> Vec<Vec<u8>> {
        match served {
            Ok(served) => {
                if let Some(v) = served.negotiated_version {
                    self.facts.protocol_version = Some(v);
                }
                let mut out = served.notifications;
                out.extend(served.response);
                out
            }
            Err(e) => {
                bernstein_store_file::log_line!("bernstein: ledger error: {e}");
                vec![server.storage_failure_reply(bytes, &e.to_string())]
            }
        }
    }
}

/// Serves a message whose answer waits for the ledger, until it is final or `stop` says so;
/// `notify` gets each notification as it happens, the answer is returned.
pub fn serve_deferred(
    server: &Server,
    env: &Env<'_>,
    bytes: &[u8],
    facts: &TransportFacts,
    stop: &dyn Fn() -> Option<Stop>,
    notify: &dyn Fn(&[u8]),
) -> Vec<Vec<u8>> {
    match serve_message_streaming(server, env, bytes, facts, &DEFAULT_WAIT, stop, notify) {
        Ok(served) => served.response.into_iter().collect(),
        Err(e) => {
            bernstein_store_file::log_line!("bernstein: ledger error: {e}");
            vec![server.storage_failure_reply(bytes, &e.to_string())]
        }
    }
}

/// When a deferred stdio answer stops waiting: cancelled by a `notifications/cancelled` naming
/// its `entry`, or settled at end of input.
pub fn deferred_stop(entry: Option<&Entry>, eof: &AtomicBool) -> Option<Stop> {
    if entry.is_some_and(Entry::cancelled) {
        Some(Stop::Cancel)
    } else {
        eof.load(Ordering::SeqCst).then_some(Stop::Settle)
    }
}

/// Serves stdin/stdout until end of input.
pub fn serve_stdio(server: &Server, env: &Env<'_>) -> io::Result<()> {
    let eof = AtomicBool::new(false);
    let stdout = io::stdout();
    // Deferred requests by id, for the `notifications/cancelled` that names one.
    let waiting = Inflight::default();
    std::thread::scope(|scope| {
        let deferred = |bytes: Vec<u8>, facts: TransportFacts| {
            let (eof, stdout) = (&eof, &stdout);
            let entry = waiting.enter_message(&bytes);
            scope.spawn(move || {
                let stop = || deferred_stop(entry.as_ref(), eof);
                let notify = |n: &[u8]| {
                    if let Err(e) = write_lines(stdout, &[n.to_vec()]) {
                        bernstein_store_file::log_line!(
                            "bernstein: could not write a progress notification: {e}"
                        );
                    }
                };
                let out = serve_deferred(server, env, &bytes, &facts, &stop, &notify);
                drop(entry);
                if let Err(e) = write_lines(stdout, &out) {
                    bernstein_store_file::log_line!(
                        "bernstein: could not write a deferred answer: {e}"
                    );
                }
            });
        };
        let cancel = |bytes: &[u8]| waiting.cancel_named(bytes);
        let read = read_loop(server, env, &stdout, deferred, cancel);
        // End of input (or a broken pipe): waiting answers stop waiting and are sent.
        eof.store(true, Ordering::SeqCst);
        read
    })
}

fn read_loop(
    server: &Server,
    env: &Env<'_>,
    stdout: &io::Stdout,
    deferred: impl Fn(Vec<u8>, TransportFacts),
    cancel: impl Fn(&[u8]),
) -> io::Result<()> {
    let mut conn = StdioConnection::new(server);
    let mut stdin = io::stdin().lock();
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
            if let Line::Message(bytes) = &line {
                cancel(bytes);
            }
            match conn.serve_line_now(server, env, line) {
                Ok(out) => write_lines(stdout, &out)?,
                Err(d) => {
                    write_lines(stdout, &d.lines)?;
                    deferred(d.bytes, conn.facts.clone());
                }
            }
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
