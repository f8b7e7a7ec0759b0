//! The stdio transport on std: newline-delimited JSON-RPC on stdin/stdout, logs only on
//! stderr, driven by the server's [`Engine`] like the HTTP loop.
//!
//! One thread does everything: it `poll`s stdin (only while the engine wants more bytes: a
//! line being served holds the ones behind it, as a pipe would) and a wake-up pipe, until the
//! engine's next timeout; reads what is there straight from the file descriptor; writes what
//! the engine sends to stdout; and performs the store and host outputs through the shared
//! [`Performer`] on this thread, fsyncs included (one peer: nothing is to be served while an
//! fsync runs that would pay for a thread hand-off). Only a store that may wait on the network
//! is called on other threads, which wake the loop through the pipe. Every rule (one line at
//! a time, answers that wait for the ledger letting later lines through, end of input settling
//! them, `notifications/cancelled`) is the engine's. A stop asked from another thread (the CLI's
//! SIGTERM watcher) is taken as end of input.

use std::io::{self, Write};
use std::os::fd::AsFd;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Instant;

use bernstein_core::engine::{Engine, Input, Output, STDIO};
use bernstein_core::ledger::Fold;
use bernstein_core::protocol::Server;
use bernstein_effects::perform::{Backend, Performer, Wake, moment, seed};
use bernstein_effects::{Stopper, stop_flag};
use rustix::event::{PollFd, PollFlags, Timespec, poll};

/// Serves stdin/stdout until end of input, or until the [`Stopper`] handed to `on_started` is
/// called (taken as end of input), and every answer is written.
pub fn serve_stdio<F: Fold>(
    server: Arc<Server<F>>,
    backend: &Backend<F>,
    on_started: impl FnOnce(Stopper) -> io::Result<()>,
) -> io::Result<()> {
    let (wake_rx, wake_tx) = rustix::pipe::pipe()?;
    rustix::fs::fcntl_setfl(&wake_rx, rustix::fs::OFlags::NONBLOCK)?;
    let wake: Wake = Arc::new(move || {
        let _ = rustix::io::write(&wake_tx, &[1]);
    });
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
    let stdin = io::stdin();
    let stdin = stdin.as_fd();
    let mut out = io::BufWriter::new(io::stdout().lock());
    let mut buf = vec![0u8; 64 * 1024];
    let mut reading = true;
    let mut failure: Option<io::Error> = None;
    let mut wire: Vec<Output> = Vec::new();
    loop {
        let wanted = reading && engine.wants_bytes(STDIO);
        let timeout = engine.poll_timeout().map(|at| {
            let wait = (origin + at).saturating_duration_since(Instant::now());
            Timespec::try_from(wait).unwrap_or(Timespec {
                tv_sec: i64::MAX,
                tv_nsec: 0,
            })
        });
        let mut fds = vec![PollFd::new(&wake_rx, PollFlags::IN)];
        if wanted {
            fds.push(PollFd::new(&stdin, PollFlags::IN));
        }
        match poll(&mut fds, timeout.as_ref()) {
            Ok(_) => {}
            Err(rustix::io::Errno::INTR) => continue,
            Err(e) => return Err(e.into()),
        }
        let stdin_ready = fds.get(1).is_some_and(|f| !f.revents().is_empty());
        if !fds[0].revents().is_empty() {
            let mut drain = [0u8; 64];
            while matches!(rustix::io::read(&wake_rx, &mut drain), Ok(n) if n > 0) {}
        }
        if stdin_ready {
            match rustix::io::read(stdin, &mut buf) {
                Ok(0) => {
                    reading = false;
                    engine.handle_input(now(), Input::Closed { conn: STDIO });
                }
                Ok(n) => engine.handle_input(
                    now(),
                    Input::Received {
                        conn: STDIO,
                        bytes: &buf[..n],
                    },
                ),
                Err(rustix::io::Errno::INTR | rustix::io::Errno::AGAIN) => {}
                Err(e) => {
                    reading = false;
                    failure = Some(e.into());
                    engine.handle_input(now(), Input::Closed { conn: STDIO });
                }
            }
        }
        if reading && stop.load(Ordering::SeqCst) {
            reading = false;
            engine.handle_input(now(), Input::Closed { conn: STDIO });
        }
        if engine.poll_timeout().is_some_and(|at| at <= now().mono) {
            engine.handle_input(now(), Input::Tick);
        }
        let mut closed = false;
        loop {
            performer.pump(&mut engine, &now, &mut wire);
            for output in wire.drain(..) {
                match output {
                    Output::Send { bytes, .. } => out.write_all(&bytes)?,
                    Output::Close { .. } => closed = true,
                    other => {
                        bernstein_os::log_line!("bernstein: an output nobody performs: {other:?}")
                    }
                }
            }
            // Each answer goes out as soon as it is ready.
            out.flush()?;
            if !engine.has_output() {
                break;
            }
        }
        out.flush()?;
        if closed {
            return failure.map_or(Ok(()), Err);
        }
    }
}
