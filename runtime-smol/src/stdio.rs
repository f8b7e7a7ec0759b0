//! The stdio transport on smol: async reads from stdin and writes to stdout, driven by the
//! server's [`Engine`] like the HTTP server. Stdin is read a chunk at a time, and only while
//! the engine wants more (a line being served holds the ones behind it, as a pipe would); the
//! store and host outputs go to the shared [`Performer`]. Every rule (one line at a time,
//! answers that wait for the ledger letting later lines through, end of input settling them,
//! `notifications/cancelled`) is the engine's. A stop asked from another thread (the CLI's
//! SIGTERM watcher) is taken as end of input.

use std::io;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Instant;

use bernstein_core::engine::{Engine, Input, Output, STDIO};
use bernstein_core::ledger::Fold;
use bernstein_core::protocol::Server;
use bernstein_effects::perform::{Backend, Performer, moment, seed};
use bernstein_effects::{Stopper, stop_flag};
use smol::io::{AsyncReadExt, AsyncWriteExt};
use smol::{Timer, future};

use crate::http::{Event, waker};

/// What woke the loop.
enum Step {
    Read(io::Result<usize>),
    Woken,
    Timeout,
}

/// Serves stdin/stdout until end of input, or until the [`Stopper`] handed to `on_started` is
/// called (taken as end of input), and every answer is written, on a smol executor.
pub fn serve_stdio<F: Fold>(
    server: Arc<Server<F>>,
    backend: Backend<F>,
    on_started: impl FnOnce(Stopper) -> io::Result<()>,
) -> io::Result<()> {
    smol::block_on(serve(server, backend, on_started))
}

async fn serve<F: Fold>(
    server: Arc<Server<F>>,
    backend: Backend<F>,
    on_started: impl FnOnce(Stopper) -> io::Result<()>,
) -> io::Result<()> {
    let mut input = smol::Unblock::new(io::stdin());
    let mut output = smol::Unblock::new(io::stdout());
    let (tx, rx) = smol::channel::unbounded::<Event>();
    let (wake, woken) = waker(tx);
    let (stop, stopper) = stop_flag(wake.clone());
    on_started(stopper)?;
    let performer = Performer::new(
        backend.store.clone(),
        backend.host.clone(),
        None,
        1,
        usize::MAX,
        wake,
    )?;
    let origin = Instant::now();
    let clock = backend.clock.clone();
    let now = || moment(origin, &*clock);
    let mut engine = Engine::stdio(server, seed()?, now());
    let mut buf = vec![0u8; 64 * 1024];
    let mut reading = true;
    let mut failure: Option<io::Error> = None;
    let mut wire: Vec<Output> = Vec::new();
    loop {
        let wanted = reading && engine.wants_bytes(STDIO);
        let at = engine.poll_timeout().map(|d| origin + d);
        let timer = async {
            match at {
                Some(at) => {
                    Timer::at(at).await;
                }
                None => future::pending::<()>().await,
            }
            Step::Timeout
        };
        let woke = async {
            let _ = rx.recv().await;
            Step::Woken
        };
        let step = if wanted {
            let read = async { Step::Read(input.read(&mut buf).await) };
            future::or(read, future::or(woke, timer)).await
        } else {
            future::or(woke, timer).await
        };
        match step {
            Step::Read(Ok(0)) => {
                reading = false;
                engine.handle_input(now(), Input::Closed { conn: STDIO });
            }
            Step::Read(Ok(n)) => engine.handle_input(
                now(),
                Input::Received {
                    conn: STDIO,
                    bytes: &buf[..n],
                },
            ),
            Step::Read(Err(e)) if e.kind() == io::ErrorKind::Interrupted => {}
            Step::Read(Err(e)) => {
                reading = false;
                failure = Some(e);
                engine.handle_input(now(), Input::Closed { conn: STDIO });
            }
            Step::Woken | Step::Timeout => {}
        }
        // A swap, not a store: it reads the flag a stopper's wake set, so the stop is seen.
        woken.swap(false, Ordering::AcqRel);
        if reading && stop.load(Ordering::SeqCst) {
            reading = false;
            engine.handle_input(now(), Input::Closed { conn: STDIO });
        }
        if engine.poll_timeout().is_some_and(|t| t <= now().mono) {
            engine.handle_input(now(), Input::Tick);
        }
        let mut closed = false;
        loop {
            performer.pump(&mut engine, &now, &mut wire);
            for sent in wire.drain(..) {
                match sent {
                    Output::Send { bytes, .. } => output.write_all(&bytes).await?,
                    Output::Close { .. } => closed = true,
                    other => {
                        bernstein_os::log_line!("bernstein: an output nobody performs: {other:?}")
                    }
                }
            }
            // Each answer goes out as soon as it is ready.
            output.flush().await?;
            if !engine.has_output() {
                break;
            }
        }
        output.flush().await?;
        if closed {
            return failure.map_or(Ok(()), Err);
        }
    }
}
