//! The stdio transport on std: newline-delimited JSON-RPC on stdin/stdout, logs only on
//! stderr, driven by the server's [`Engine`] like the HTTP loop.
//!
//! A reader thread reads stdin one chunk at a time and hands each to the loop, which reads on
//! only while the engine wants more (a line being served holds the ones behind it, as a
//! pipe would); the loop writes what the engine sends to stdout, performs the store and host
//! outputs through the shared [`Performer`] and wakes the engine at its timeouts. Every rule
//! (one line at a time, answers that wait for the ledger letting later lines through, end of
//! input settling them, `notifications/cancelled`) is the engine's.

use std::io::{self, Read, Write};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use bernstein_core::domain::bound::Server;
use bernstein_core::engine::{Engine, Input, Output, STDIO};
use bernstein_serve::driver::Backend;
use bernstein_serve::perform::{Performer, moment, seed};

/// What reaches the loop.
enum Event {
    Bytes(Vec<u8>),
    End(Option<io::Error>),
    /// The performer has results.
    Woken,
}

/// Serves stdin/stdout until end of input (and every answer is written).
pub fn serve_stdio(server: Arc<Server>, backend: &Backend) -> io::Result<()> {
    let (tx, rx) = mpsc::channel::<Event>();
    // The reader takes one chunk, then waits until the loop asks for the next.
    let (more_tx, more_rx) = mpsc::sync_channel::<()>(1);
    let reader_tx = tx.clone();
    thread::Builder::new()
        .name("bernstein-stdin".into())
        .spawn(move || read_stdin(&reader_tx, &more_rx))?;
    let woken = Mutex::new(tx);
    let performer = Performer::new(
        backend.store.clone(),
        backend.host.clone(),
        None,
        1,
        Arc::new(move || {
            let _ = woken
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .send(Event::Woken);
        }),
    )?;
    let origin = Instant::now();
    let clock = backend.clock.clone();
    let now = || moment(origin, &*clock);
    let mut engine = Engine::stdio(server, seed()?, now());
    let mut out = io::BufWriter::new(io::stdout().lock());
    let mut reading = true;
    let mut asked = true;
    let mut failure: Option<io::Error> = None;
    let mut wire: Vec<Output> = Vec::new();
    loop {
        let event = next_event(&rx, engine.poll_timeout(), origin);
        for event in event.into_iter().chain(rx.try_iter()) {
            match event {
                Event::Bytes(bytes) => {
                    asked = false;
                    engine.handle_input(
                        now(),
                        Input::Received {
                            conn: STDIO,
                            bytes: &bytes,
                        },
                    );
                }
                Event::End(error) => {
                    reading = false;
                    failure = error;
                    engine.handle_input(now(), Input::Closed { conn: STDIO });
                }
                Event::Woken => {}
            }
        }
        if engine.poll_timeout().is_some_and(|at| at <= now().mono) {
            engine.handle_input(now(), Input::Tick);
        }
        let mut closed = false;
        performer.pump(&mut engine, &now, &mut wire);
        for output in wire.drain(..) {
            match output {
                Output::Send { bytes, .. } => out.write_all(&bytes)?,
                _ => closed = true,
            }
        }
        out.flush()?;
        if closed {
            return failure.map_or(Ok(()), Err);
        }
        if reading && !asked && engine.wants_bytes(STDIO) {
            asked = more_tx.try_send(()).is_ok();
        }
    }
}

/// The next event, waiting at most until the engine's next timeout.
fn next_event(rx: &Receiver<Event>, timeout: Option<Duration>, origin: Instant) -> Option<Event> {
    match timeout {
        None => rx.recv().ok(),
        Some(at) => {
            let wait = (origin + at).saturating_duration_since(Instant::now());
            rx.recv_timeout(wait).ok()
        }
    }
}

/// Reads stdin a chunk at a time, each after the loop asked for it (the first at once).
fn read_stdin(tx: &Sender<Event>, more: &Receiver<()>) {
    let mut stdin = io::stdin().lock();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let event = match stdin.read(&mut buf) {
            Ok(0) => Event::End(None),
            Ok(n) => Event::Bytes(buf[..n].to_vec()),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => Event::End(Some(e)),
        };
        let end = matches!(event, Event::End(_));
        if tx.send(event).is_err() || end || more.recv().is_err() {
            return;
        }
    }
}
