//! The stdio transport on smol: async reads from stdin, one message at a time, each served on
//! the blocking pool (the ledger store does file IO and fsync). Framing and per-connection
//! state are shared with runtime-std's [`StdioConnection`].

use std::sync::{Arc, Mutex};

use bernstein_core::ledger::Store;
use bernstein_core::protocol::Server;
use bernstein_runtime_std::driver::Clock;
use bernstein_runtime_std::stdio::StdioConnection;
use smol::io::{AsyncReadExt, AsyncWriteExt};

/// Serves stdin/stdout until end of input, on a smol executor.
pub fn serve_stdio(server: Arc<Server>, store: Arc<dyn Store>, clock: Arc<dyn Clock>) -> std::io::Result<()> {
    smol::block_on(serve(server, store, clock))
}

async fn serve(server: Arc<Server>, store: Arc<dyn Store>, clock: Arc<dyn Clock>) -> std::io::Result<()> {
    let mut input = smol::Unblock::new(std::io::stdin());
    let mut output = smol::Unblock::new(std::io::stdout());
    let conn = Arc::new(Mutex::new(StdioConnection::new(&server)));
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = input.read(&mut buf).await?;
        {
            let mut c = conn.lock().expect("the connection lock is never poisoned: serve_line does not panic");
            if n == 0 {
                c.framer.handle_eof();
            } else {
                c.framer.handle_bytes(&buf[..n]);
            }
        }
        loop {
            let (srv, st, ck, cn) = (server.clone(), store.clone(), clock.clone(), conn.clone());
            let out = smol::unblock(move || {
                let mut c = cn.lock().expect("the connection lock is never poisoned: serve_line does not panic");
                let line = c.framer.poll_line()?;
                Some(c.serve_line(&srv, &*st, &*ck, line))
            })
            .await;
            let Some(out) = out else { break };
            for m in &out {
                output.write_all(m).await?;
                output.write_all(b"\n").await?;
            }
            output.flush().await?;
        }
        if n == 0 {
            return Ok(());
        }
    }
}
