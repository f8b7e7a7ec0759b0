//! The HTTP transports on one event loop: streamable HTTP (`POST /mcp`), the legacy HTTP+SSE
//! transport (`GET /sse`, `POST /messages?stream=…`) and the operator's routes on one port.
//!
//! One thread (one per engine, `HttpOptions::engines`) runs a `mio` poll over the listener and
//! its connections and drives its [`Engine`]: it accepts (keeping a connection, or passing it
//! to the loop that holds the fewest: `crossing.rs`), reads what arrives and hands it in (on an HTTPS server, what its
//! connection's [`TlsSession`] decrypts of it), writes what the engine asks to
//! send (what the kernel does not take at once waits with the socket; a write that makes no
//! progress for the write timeout drops it), tells the engine how much a connection it waits
//! on still has to write once that is back under its bound ([`Input::Drained`]), closes, wakes
//! the engine at its timeouts, and hands the store, host and operator outputs to the shared
//! [`Performer`] (whose threads wake the loop when their results are in). Framing, routing,
//! timeouts, backpressure, waits, cancellation and every HTTP decision are the engine's: this
//! module moves bytes and keeps time.

mod crossing;
mod sock;

use std::collections::{BTreeSet, HashMap};
use std::io::{self, Read};
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::Receiver;
use std::thread;
use std::time::{Duration, Instant};

use bernstein_core::engine::{ConnId, Drain, Engine, Handed, Input, Moment, Output, Peer};
use bernstein_core::ledger::Fold;
use bernstein_core::protocol::Server;
use bernstein_core::time::Clock;
use bernstein_core::transport::http::HttpOptions;
use bernstein_effects::Stopper;
use bernstein_effects::engines as setup;
use bernstein_effects::engines::Listening;
pub use bernstein_effects::http::HttpServerHandle;
use bernstein_effects::perform::{Backend, Performer, Wake, moment};
use bernstein_os::tls::{Received, ServerTls, TlsSession};
use mio::net::TcpStream;
use mio::{Events, Interest, Poll, Registry, Token, Waker};

use self::crossing::{Crossing, Crossings};
use self::sock::{Fate, Sock};

const LISTENER: Token = Token(0);
const WAKER: Token = Token(1);
/// Connection ids start above the loop's own tokens (an id is its token).
const FIRST_CONN: u64 = 2;

/// Binds and starts serving `server`'s catalogue over `backend` on a thread of its own.
pub fn bind<F: Fold>(
    server: Arc<Server<F>>,
    backend: Backend<F>,
    options: HttpOptions,
) -> io::Result<HttpServerHandle> {
    bind_tls(server, backend, options, None)
}

/// [`bind`], speaking HTTPS with `tls` when given.
pub fn bind_tls<F: Fold>(
    server: Arc<Server<F>>,
    backend: Backend<F>,
    options: HttpOptions,
    tls: Option<Arc<ServerTls>>,
) -> io::Result<HttpServerHandle> {
    let listening = Listening::bind(&server, options, tls.is_some())?;
    let Listening {
        ref listener,
        engines,
        ..
    } = listening;
    listener.set_nonblocking(true)?;
    let stop = Arc::new(AtomicBool::new(false));
    let origin = Instant::now();
    let mut polls = Vec::with_capacity(engines);
    for _ in 0..engines {
        let poll = Poll::new()?;
        let waker = Arc::new(Waker::new(poll.registry(), WAKER)?);
        polls.push((poll, waker));
    }
    let wakers: Vec<Arc<Waker>> = polls.iter().map(|(_, w)| w.clone()).collect();
    let (crossings, inboxes) = Crossings::new(&wakers);
    let mut threads = Vec::with_capacity(engines);
    let wakes: Vec<Wake> = wakers
        .iter()
        .map(|waker| {
            let waker = waker.clone();
            Arc::new(move || {
                let _ = waker.wake();
            }) as Wake
        })
        .collect();
    let now = moment(origin, &*backend.clock);
    let all = setup::set_up(&server, &backend, &listening, wakes, now)?;
    let options = &listening.options;
    let each = polls.into_iter().zip(inboxes).zip(all);
    for (index, (((poll, _), inbox), (performer, engine))) in each.enumerate() {
        let listener = mio::net::TcpListener::from_std(listener.try_clone()?);
        let mut event_loop = Loop {
            poll,
            listener: Some(listener),
            socks: HashMap::new(),
            paused: BTreeSet::new(),
            timed: BTreeSet::new(),
            engine,
            performer,
            clock: backend.clock.clone(),
            origin,
            next_conn: FIRST_CONN,
            stop: stop.clone(),
            stopping: false,
            write_timeout: options.limits.write_timeout,
            linger: (options.limits.linger, options.limits.linger_bytes),
            tls: tls.clone(),
            index,
            crossings: crossings.clone(),
            inbox,
        };
        threads.push(
            thread::Builder::new()
                .name(setup::thread_name("bernstein-http", index))
                .spawn(move || event_loop.run())?,
        );
    }
    let stopper: Stopper = Arc::new(move || {
        stop.store(true, Ordering::SeqCst);
        for waker in &wakers {
            let _ = waker.wake();
        }
    });
    Ok(listening.serving(threads, stopper, "an HTTP loop thread"))
}

/// Binds, announces the endpoint on stderr, hands `on_bound` what stops the server, and
/// serves (HTTPS with `tls`) until it is stopped (or the process ends).
pub fn serve_http<F: Fold>(
    server: Arc<Server<F>>,
    backend: Backend<F>,
    options: HttpOptions,
    tls: Option<Arc<ServerTls>>,
    on_bound: impl FnOnce(Stopper) -> io::Result<()>,
) -> io::Result<()> {
    let runtime = setup::runtime_label("std", options.engines);
    bind_tls(server, backend, options, tls)?.serve(&runtime, on_bound)
}

struct Loop<F: Fold> {
    poll: Poll,
    listener: Option<mio::net::TcpListener>,
    socks: HashMap<u64, Sock>,
    /// Sockets whose reading waits until the engine wants their bytes.
    paused: BTreeSet<u64>,
    /// Sockets with a deadline (a stalled write, a drain).
    timed: BTreeSet<u64>,
    engine: Engine<F>,
    performer: Performer<F>,
    clock: Arc<dyn Clock>,
    origin: Instant,
    next_conn: u64,
    stop: Arc<AtomicBool>,
    /// Whether a shutdown began.
    stopping: bool,
    write_timeout: Duration,
    /// How long, and for how many bytes, a finished connection lingers.
    linger: (Duration, usize),
    /// The certificate each new connection's TLS uses, when the server speaks HTTPS.
    tls: Option<Arc<ServerTls>>,
    /// Which of the server's loops (and engines) this is, how to reach the others, and what
    /// they post to it.
    index: usize,
    crossings: Arc<Crossings>,
    inbox: Receiver<Crossing>,
}

impl<F: Fold> Loop<F> {
    fn run(&mut self) -> io::Result<()> {
        if let Some(l) = self.listener.as_mut() {
            self.poll
                .registry()
                .register(l, LISTENER, Interest::READABLE)?;
        }
        let mut events = Events::with_capacity(1024);
        loop {
            let timeout = self.timeout();
            if let Err(e) = self.poll.poll(&mut events, timeout) {
                if e.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                return Err(e);
            }
            // Before any socket's bytes: a notice another engine posted before its client's
            // next request was sent (a session's level, an answer) is heard first.
            self.take_inbox();
            for event in events.iter() {
                match event.token() {
                    LISTENER => self.accept(),
                    WAKER => {}
                    Token(t) => {
                        let id = t as u64;
                        if event.is_writable() {
                            self.flush(id);
                        }
                        if event.is_readable() || event.is_read_closed() || event.is_error() {
                            if let Some(sock) = self.socks.get_mut(&id) {
                                sock.drained = false;
                                sock.hung_up |= event.is_read_closed() || event.is_error();
                            }
                            self.read(id);
                        }
                    }
                }
            }
            if self.stop.load(Ordering::SeqCst) && !self.stopping {
                self.begin_shutdown();
            }
            self.expire();
            self.settle_outputs();
            // Done once every request is answered and every answer written, or the grace is over.
            match self.engine.drain() {
                Some(Drain::Overdue) => return Ok(()),
                Some(Drain::Answered) if self.socks.values().all(|s| !s.has_pending()) => {
                    return Ok(());
                }
                _ => {}
            }
        }
    }

    fn now(&self) -> Moment {
        moment(self.origin, &*self.clock)
    }

    /// How long the poll may sleep: until the engine's next timer or a socket's deadline.
    fn timeout(&self) -> Option<Duration> {
        let engine = self.engine.poll_timeout().map(|d| self.origin + d);
        let socks = self
            .timed
            .iter()
            .filter_map(|id| self.socks.get(id)?.deadline(self.write_timeout))
            .min();
        let at = match (engine, socks) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        at.map(|at| at.saturating_duration_since(Instant::now()))
    }

    fn accept(&mut self) {
        loop {
            let Some(listener) = self.listener.as_ref() else {
                return;
            };
            let (stream, peer) = match listener.accept() {
                Ok(accepted) => accepted,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    // Out of file descriptors and the like: the next connection retries.
                    bernstein_os::log_line!("bernstein http: accept failed: {e}");
                    return;
                }
            };
            let _ = stream.set_nodelay(true);
            let tls = match self.session(&stream) {
                Ok(tls) => tls,
                Err(()) => continue,
            };
            let sock = Sock::new(stream, tls, self.linger);
            let to = self.crossings.least_loaded(self.index);
            if to == self.index {
                self.opened(sock, peer);
            } else {
                self.crossings
                    .post(to, Crossing::Accepted(Box::new(sock), peer));
            }
        }
    }

    /// Serves a connection accepted here or by another loop.
    fn opened(&mut self, sock: Sock, peer: SocketAddr) {
        let Some(id) = self.keep(sock) else {
            return;
        };
        let now = self.now();
        let (conn, peer) = (ConnId(id), Peer::Http(peer));
        self.engine.handle_input(now, Input::Opened { conn, peer });
        self.settle_outputs();
    }

    /// Registers a socket under a fresh id; `None` if it cannot be (it is dropped).
    fn keep(&mut self, mut sock: Sock) -> Option<u64> {
        let id = self.next_conn;
        self.next_conn += 1;
        sock.wants_write = sock.has_pending();
        let registry = self.poll.registry();
        register(registry, &mut sock.stream, id, sock.wants_write).ok()?;
        sock.paused = false;
        sock.drained = false;
        self.socks.insert(id, sock);
        self.crossings.count(self.index, true);
        self.after(id, Fate::Alive);
        Some(id)
    }

    /// Takes what the other loops posted: connections and notices.
    fn take_inbox(&mut self) {
        while let Ok(crossing) = self.inbox.try_recv() {
            match crossing {
                Crossing::Accepted(sock, peer) => self.opened(*sock, peer),
                Crossing::Adopt(sock, handed) => self.adopt(sock.map(|s| *s), handed),
                Crossing::Told(notice) => {
                    let now = self.now();
                    self.engine.handle_input(now, Input::Told(notice));
                }
            }
        }
    }

    /// A connection another loop's engine handed to this one's (`None`: its socket broke
    /// before it could be moved).
    fn adopt(&mut self, sock: Option<Sock>, handed: Box<Handed>) {
        let id = sock.and_then(|sock| self.keep(sock));
        let now = self.now();
        // Even one whose socket is gone or cannot be registered is adopted, then closed: the
        // engine that handed it counted it open, and this one's close counts it closed.
        let conn = ConnId(id.unwrap_or_else(|| {
            let id = self.next_conn;
            self.next_conn += 1;
            id
        }));
        self.engine
            .handle_input(now, Input::Adopted { conn, handed });
        match id {
            Some(id) => self.read(id),
            None => self.engine.handle_input(now, Input::Closed { conn }),
        }
    }

    /// Moves a socket to the home loop with what its engine handed over (the socket may have
    /// broken since the engine handed it, when a write before it failed: the home engine then
    /// adopts and closes it, so that the connection is counted closed).
    fn hand_off(&mut self, id: u64, handed: Box<Handed>) {
        let sock = self.socks.remove(&id).map(|mut sock| {
            let _ = self.poll.registry().deregister(&mut sock.stream);
            self.paused.remove(&id);
            self.timed.remove(&id);
            self.crossings.count(self.index, false);
            Box::new(sock)
        });
        let home = bernstein_core::engine::shared::HOME;
        self.crossings.post(home, Crossing::Adopt(sock, handed));
    }

    /// Reads what a socket has, handing it to the engine, until the kernel has no more or the
    /// engine wants no more for now.
    fn read(&mut self, id: u64) {
        let mut buf = [0u8; 16 * 1024];
        loop {
            let Some(sock) = self.socks.get_mut(&id) else {
                return;
            };
            if matches!(sock.ending, sock::Ending::Draining { .. }) {
                if sock.drain(Instant::now()) == Fate::Gone {
                    self.drop_sock(id);
                }
                return;
            }
            if sock.eof || sock.ending != sock::Ending::Open {
                return;
            }
            if !self.engine.wants_bytes(ConnId(id)) {
                sock.paused = true;
                self.paused.insert(id);
                return;
            }
            if sock.drained {
                return;
            }
            let read = sock.stream.read(&mut buf);
            sock.eof = matches!(read, Ok(0));
            // A short read emptied the kernel's buffer: nothing more until the poll says so.
            sock.drained = match &read {
                Ok(n) => *n < buf.len() && !sock.hung_up,
                Err(e) => e.kind() == io::ErrorKind::WouldBlock,
            };
            let tls = sock.tls.is_some();
            let now = self.now();
            match read {
                Ok(0) => {
                    let conn = ConnId(id);
                    return self.engine.handle_input(now, Input::Closed { conn });
                }
                Ok(n) if tls => {
                    if !self.decrypt(id, &buf[..n]) {
                        return;
                    }
                }
                Ok(n) => {
                    let (conn, bytes) = (ConnId(id), &buf[..n]);
                    self.engine
                        .handle_input(now, Input::Received { conn, bytes });
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => return self.broken(id),
            }
        }
    }

    /// A new connection's TLS on an HTTPS server (`Err`: it cannot have one; drop it).
    fn session(&self, stream: &TcpStream) -> Result<Option<TlsSession>, ()> {
        let Some(tls) = &self.tls else {
            return Ok(None);
        };
        tls.session(stream.local_addr().ok())
            .map(Some)
            .map_err(|e| {
                bernstein_os::log_line!("bernstein https: {e}");
            })
    }

    /// Hands the engine what a TLS socket's `raw` bytes decrypt to, writes what the session
    /// answers (handshake, alerts, a plain-HTTP client's refusal) and ends the connection when
    /// the session says so; whether to go on reading it.
    fn decrypt(&mut self, id: u64, raw: &[u8]) -> bool {
        let Some(sock) = self.socks.get_mut(&id) else {
            return false;
        };
        let Some(tls) = sock.tls.as_mut() else {
            return false;
        };
        let (mut plain, mut out) = (Vec::new(), Vec::new());
        let received = tls.receive(raw, &mut plain, &mut out);
        let now = self.now();
        let conn = ConnId(id);
        if !plain.is_empty() {
            let bytes = &plain;
            self.engine
                .handle_input(now, Input::Received { conn, bytes });
        }
        let Some(sock) = self.socks.get_mut(&id) else {
            return false;
        };
        let ending = match &received {
            Received::Open => None,
            Received::PeerClosed => Some(false),
            Received::PlainHttp => Some(true),
            Received::Failed(why) => {
                if let Ok(peer) = sock.stream.peer_addr() {
                    self.engine
                        .handle_input(now, Input::TlsFailed { peer, why });
                }
                Some(false)
            }
        };
        let instant = Instant::now();
        let mut fate = if out.is_empty() {
            Fate::Alive
        } else {
            sock.send_raw(&out, instant)
        };
        if let Some(finish) = ending {
            if !matches!(received, Received::PeerClosed) {
                // The session is over: nothing more is encrypted, not even a close_notify.
                sock.tls = None;
                if fate == Fate::Alive {
                    fate = sock.close(finish, instant);
                }
            }
            sock.eof = true;
            // The engine's own close of it then finds it closing (and a second `Closed`, from
            // a write that fails, one it forgot).
            self.engine.handle_input(now, Input::Closed { conn });
            self.after(id, fate);
            return false;
        }
        self.after(id, fate);
        true
    }

    /// Writes what waits on a socket that became writable.
    fn flush(&mut self, id: u64) {
        let Some(sock) = self.socks.get_mut(&id) else {
            return;
        };
        let fate = sock.flush(Instant::now());
        self.after(id, fate);
    }

    /// Performs the engine's outputs until it has none, then reads from the sockets it wants
    /// bytes from again, until neither gives anything more to do.
    fn settle_outputs(&mut self) {
        let mut io = Vec::new();
        loop {
            let (origin, clock) = (self.origin, self.clock.clone());
            let now = || moment(origin, &*clock);
            self.performer.pump(&mut self.engine, &now, &mut io);
            for output in io.drain(..) {
                match output {
                    Output::Send { conn, bytes } => self.send(conn.0, &bytes),
                    Output::Close { conn, finish } => self.close(conn.0, finish),
                    Output::HandOff { conn, handed } => self.hand_off(conn.0, handed),
                    Output::Tell(notice) => self.crossings.tell_others(self.index, &notice),
                    other => bernstein_os::log_line!(
                        "bernstein http: an output nobody performs: {other:?}"
                    ),
                }
            }
            if self.engine.has_output() || self.report_drained() {
                continue;
            }
            let resumed: Vec<u64> = self
                .paused
                .iter()
                .copied()
                .filter(|id| self.engine.wants_bytes(ConnId(*id)))
                .collect();
            if resumed.is_empty() {
                return;
            }
            for id in resumed {
                self.paused.remove(&id);
                if let Some(s) = self.socks.get_mut(&id) {
                    s.paused = false;
                }
                self.read(id);
            }
        }
    }

    /// Tells the engine the backlog of each connection it waits on that is back under its
    /// bound; whether there was any.
    fn report_drained(&mut self) -> bool {
        let now = self.now();
        let socks = &self.socks;
        self.engine
            .report_drained(now, |conn| Some(socks.get(&conn.0)?.unsent()))
    }

    fn send(&mut self, id: u64, bytes: &[u8]) {
        let Some(sock) = self.socks.get_mut(&id) else {
            return;
        };
        let fate = sock.send(bytes, Instant::now());
        self.after(id, fate);
    }

    fn close(&mut self, id: u64, finish: bool) {
        let Some(sock) = self.socks.get_mut(&id) else {
            return;
        };
        let fate = sock.close(finish, Instant::now());
        self.after(id, fate);
    }

    /// Keeps the registration in step with what the socket waits for, or drops it.
    fn after(&mut self, id: u64, fate: Fate) {
        let Some(sock) = self.socks.get_mut(&id) else {
            return;
        };
        match fate {
            Fate::Gone if sock.has_pending() || sock.ending == sock::Ending::Open => {
                self.broken(id)
            }
            Fate::Gone => self.drop_sock(id),
            Fate::Alive => {
                if sock.has_pending() || sock.ending != sock::Ending::Open {
                    self.timed.insert(id);
                } else {
                    self.timed.remove(&id);
                }
                let wants_write = sock.has_pending();
                if wants_write != sock.wants_write {
                    sock.wants_write = wants_write;
                    let _ = reregister(self.poll.registry(), &mut sock.stream, id, wants_write);
                }
            }
        }
    }

    /// A socket failed: drop it and tell the engine its peer is gone.
    fn broken(&mut self, id: u64) {
        self.drop_sock(id);
        let now = self.now();
        self.engine
            .handle_input(now, Input::Closed { conn: ConnId(id) });
    }

    fn drop_sock(&mut self, id: u64) {
        if let Some(mut sock) = self.socks.remove(&id) {
            let _ = self.poll.registry().deregister(&mut sock.stream);
            self.crossings.count(self.index, false);
        }
        self.paused.remove(&id);
        self.timed.remove(&id);
    }

    /// Fires the engine's due timers and the sockets' deadlines (writes that made no progress
    /// for the write timeout, drains).
    fn expire(&mut self) {
        let now = self.now();
        if self.engine.poll_timeout().is_some_and(|at| at <= now.mono) {
            self.engine.handle_input(now, Input::Tick);
        }
        let instant = Instant::now();
        let due: Vec<u64> = self
            .timed
            .iter()
            .copied()
            .filter(|id| {
                self.socks
                    .get(id)
                    .and_then(|s| s.deadline(self.write_timeout))
                    .is_some_and(|d| d <= instant)
            })
            .collect();
        for id in due {
            let draining = self
                .socks
                .get(&id)
                .is_some_and(|s| matches!(s.ending, sock::Ending::Draining { .. }));
            if draining {
                self.drop_sock(id);
            } else {
                // A peer that took nothing for the write timeout is dropped.
                self.broken(id);
            }
        }
    }

    /// Stops accepting and tells the engine; it answers what waits and closes what is idle.
    fn begin_shutdown(&mut self) {
        self.stopping = true;
        if let Some(mut l) = self.listener.take() {
            let _ = self.poll.registry().deregister(&mut l);
        }
        let now = self.now();
        self.engine.handle_input(now, Input::Shutdown);
    }
}

fn register(registry: &Registry, stream: &mut TcpStream, id: u64, write: bool) -> io::Result<()> {
    registry.register(stream, Token(id as usize), interest(write))
}

fn reregister(registry: &Registry, stream: &mut TcpStream, id: u64, write: bool) -> io::Result<()> {
    registry.reregister(stream, Token(id as usize), interest(write))
}

fn interest(write: bool) -> Interest {
    if write {
        Interest::READABLE | Interest::WRITABLE
    } else {
        Interest::READABLE
    }
}
