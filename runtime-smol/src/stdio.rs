//! The stdio transport on smol: async reads from stdin, one message at a time, each served on
//! the blocking pool (the ledger store does file IO and fsync). Framing and per-connection
//! state are the shared [`StdioConnection`]'s. A message whose answer waits for
//! the ledger (`tasks/result` of a running task) is served in a background task so that later
//! lines keep flowing; at end of input such waits end and their answers are sent before exit,
//! and a `notifications/cancelled` naming one ends it with the core's cancelled answer.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use bernstein_core::domain::bound::Server;
use bernstein_core::transport::Line;
use bernstein_serve::driver::Backend;
use bernstein_serve::inflight::Inflight;
use bernstein_serve::stdio::{StdioConnection, deferred_stop, serve_deferred};
use smol::io::{AsyncReadExt, AsyncWriteExt};

/// Serves stdin/stdout until end of input, on a smol executor.
pub fn serve_stdio(server: Arc<Server>, backend: Backend) -> std::io::Result<()> {
    smol::block_on(serve(server, backend))
}

async fn serve(server: Arc<Server>, backend: Backend) -> std::io::Result<()> {
    let mut input = smol::Unblock::new(std::io::stdin());
    let output = Arc::new(smol::lock::Mutex::new(
        smol::Unblock::new(std::io::stdout()),
    ));
    let eof = Arc::new(AtomicBool::new(false));
    let mut waiting = Vec::new();
    // Deferred requests by id, for the `notifications/cancelled` that names one.
    let cancels = Inflight::default();
    let conn = Arc::new(Mutex::new(StdioConnection::open(&server, &backend.env())));
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = input.read(&mut buf).await?;
        {
            let mut c = conn
                .lock()
                .expect("the connection lock is never poisoned: serve_line does not panic");
            if n == 0 {
                c.framer.handle_eof();
            } else {
                c.framer.handle_bytes(&buf[..n]);
            }
        }
        loop {
            let (srv, be, cn, cs) = (
                server.clone(),
                backend.clone(),
                conn.clone(),
                cancels.clone(),
            );
            let out = smol::unblock(move || {
                let mut c = cn
                    .lock()
                    .expect("the connection lock is never poisoned: serve_line does not panic");
                let line = c.framer.poll_line()?;
                if let Line::Message(bytes) = &line {
                    cs.cancel_named(bytes);
                }
                Some(c.serve_line_now(&srv, &be.env(), line))
            })
            .await;
            match out {
                None => break,
                Some(Ok(lines)) => write_lines(&output, &lines).await?,
                Some(Err(mut deferred)) => {
                    // The ticks already due go out before the wait starts.
                    write_lines(&output, &std::mem::take(&mut deferred.lines)).await?;
                    let (srv, be, eof, output) =
                        (server.clone(), backend.clone(), eof.clone(), output.clone());
                    let entry = cancels.enter_message(deferred.bytes());
                    waiting.push(smol::spawn(async move {
                        let out = output.clone();
                        let lines = smol::unblock(move || {
                            // Called on this blocking thread: each tick is written as it happens.
                            let notify = |n: &[u8]| {
                                if let Err(e) = smol::block_on(write_lines(&out, &[n.to_vec()])) {
                                    bernstein_store_file::log_line!(
                                        "bernstein: could not write a progress notification: {e}"
                                    );
                                }
                            };
                            let stop = || deferred_stop(entry.as_ref(), &eof);
                            let lines = serve_deferred(&srv, &be.env(), deferred, &stop, &notify);
                            drop(entry);
                            lines
                        })
                        .await;
                        if let Err(e) = write_lines(&output, &lines).await {
                            bernstein_store_file::log_line!(
                                "bernstein: could not write a deferred answer: {e}"
                            );
                        }
                    }));
                }
            }
        }
        if n == 0 {
            // Waiting answers stop waiting and are sent before the loop ends.
            eof.store(true, Ordering::SeqCst);
            for task in waiting {
                task.await;
            }
            return Ok(());
        }
    }
}

async fn write_lines(
    output: &smol::lock::Mutex<smol::Unblock<std::io::Stdout>>,
    lines: &[Vec<u8>],
) -> std::io::Result<()> {
    if lines.is_empty() {
        return Ok(());
    }
    let mut out = output.lock().await;
    for m in lines {
        out.write_all(m).await?;
        out.write_all(b"\n").await?;
    }
    out.flush().await
}
