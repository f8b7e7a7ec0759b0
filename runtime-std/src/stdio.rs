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
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use bernstein_core::domain::bound::Server;
use bernstein_core::transport::Line;
use bernstein_serve::driver::Env;
use bernstein_serve::inflight::Inflight;
use bernstein_serve::stdio::{Deferred, StdioConnection, deferred_stop, serve_deferred};

/// Serves stdin/stdout until end of input.
pub fn serve_stdio(server: &Arc<Server>, env: &Env<'_>) -> io::Result<()> {
    let eof = AtomicBool::new(false);
    let stdout = io::stdout();
    // Deferred requests by id, for the `notifications/cancelled` that names one.
    let waiting = Inflight::default();
    std::thread::scope(|scope| {
        let deferred = |d: Deferred| {
            let (eof, stdout) = (&eof, &stdout);
            let entry = waiting.enter_message(d.bytes());
            scope.spawn(move || {
                let stop = || deferred_stop(entry.as_ref(), eof);
                let notify = |n: &[u8]| {
                    if let Err(e) = write_lines(stdout, &[n.to_vec()]) {
                        bernstein_store_file::log_line!(
                            "bernstein: could not write a progress notification: {e}"
                        );
                    }
                };
                let out = serve_deferred(server, env, d, &stop, &notify);
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
    server: &Arc<Server>,
    env: &Env<'_>,
    stdout: &io::Stdout,
    deferred: impl Fn(Deferred),
    cancel: impl Fn(&[u8]),
) -> io::Result<()> {
    let mut conn = StdioConnection::open(server, env);
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
                Err(mut d) => {
                    write_lines(stdout, &std::mem::take(&mut d.lines))?;
                    deferred(d);
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
