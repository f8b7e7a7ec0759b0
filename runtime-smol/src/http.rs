//! The HTTP transports on smol: streamable HTTP (`POST /mcp`), the legacy HTTP+SSE transport
//! (`GET /sse`, `POST /messages?stream=…`) and the operator's routes on one port.
//!
//! One task owns the server's [`Engine`] and everything it asks for: it takes what the
//! connection tasks read, the performer's results and its own timeouts, and sends each
//! connection task what to write and when to close. A connection task owns its socket: it
//! reads a chunk, hands it over and waits until the engine wants the next (a message framed
//! behind the one being served waits, as TCP makes it), and writes what it is sent, dropping
//! the connection when a write makes no progress for the write timeout; on an HTTPS server it
//! also runs the connection's [`TlsSession`] (what it reads is decrypted before it is handed
//! over, what it writes is encrypted). The two share a count
//! of the bytes sent to the task that it has not written yet: the engine's task reads it to
//! tell the engine ([`Input::Drained`]) once a connection it waits on is back under its bound,
//! and the connection task wakes it when the count falls back to the bound. Everything runs on
//! one executor thread; the store, host and operator outputs go to the shared [`Performer`].

use std::collections::{BTreeSet, HashMap};
use std::io::{self, Read};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use bernstein_core::engine::log_budget::{Admit, LogBudget};
use bernstein_core::engine::{ConnId, Drain, Engine, EngineConfig, Input, Moment, Output, Peer};
use bernstein_core::ledger::Fold;
use bernstein_core::protocol::Server;
use bernstein_core::time::Clock;
use bernstein_core::transport::http::HttpOptions;
use bernstein_effects::Stopper;
use bernstein_effects::http::operator::Operator;
use bernstein_effects::http::{Announcement, open_listener};
use bernstein_effects::perform::{Backend, Performer, moment, seed};
use bernstein_os::tls::{Received, ServerTls, TlsSession};
use smol::channel::{Receiver, Sender};
use smol::io::{AsyncReadExt, AsyncWriteExt};
use smol::{Async, LocalExecutor, Timer, future};

/// A running server.
#[derive(Debug)]
pub struct HttpServerHandle {
    local_addr: SocketAddr,
    stop: Sender<Event>,
    announcement: Announcement,
    thread: Option<JoinHandle<io::Result<()>>>,
}

impl HttpServerHandle {
    /// The address actually bound (port 0 resolved).
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// Blocks until the server stops (it runs until [`Self::shutdown`] or process exit).
    pub fn wait(mut self) -> io::Result<()> {
        self.join()
    }

    /// Stops accepting, answers waiting requests as they stand, closes the legacy streams and
    /// feeds, and returns once the requests in flight are answered.
    pub fn shutdown(mut self) {
        let _ = self.stop.try_send(Event::Stop);
        let _ = self.join();
    }

    /// What asks this server to stop from another thread.
    pub fn stopper(&self) -> Stopper {
        let stop = self.stop.clone();
        Arc::new(move || {
            let _ = stop.try_send(Event::Stop);
        })
    }

    fn join(&mut self) -> io::Result<()> {
        match self.thread.take() {
            Some(t) => t
                .join()
                .map_err(|_| io::Error::other("the smol HTTP thread panicked"))?,
            None => Ok(()),
        }
    }
}

impl Drop for HttpServerHandle {
    fn drop(&mut self) {
        if self.thread.is_some() {
            let _ = self.stop.try_send(Event::Stop);
            let _ = self.join();
        }
    }
}

/// What reaches the engine's task.
#[derive(Debug)]
pub(crate) enum Event {
    Accepted(u64, SocketAddr, Link),
    Bytes(u64, Vec<u8>),
    Closed(u64),
    /// A connection's TLS failed (the peer, why): logged within the budget of such lines.
    TlsFailed(SocketAddr, String),
    /// What a connection has not written yet fell back to the bound (the engine's task looks
    /// at every connection the engine waits on).
    Drained,
    /// The performer has results.
    Woken,
    /// A connection task ended.
    Ended,
    Stop,
}

/// A connection task as the engine's task sees it: where to send what to write, and how many
/// of the bytes sent there the task has not written yet (it counts them down as it writes).
#[derive(Debug)]
pub(crate) struct Link {
    tx: Sender<ToConn>,
    unsent: Arc<AtomicUsize>,
}

/// What the engine's task tells a connection task.
#[derive(Debug)]
pub(crate) enum ToConn {
    Send(Vec<u8>),
    /// Read the next chunk.
    More,
    Close {
        finish: bool,
    },
}

/// Binds and starts serving on a thread running a smol executor.
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
    let mut options = options;
    options.tls = tls.is_some();
    let (listener, policy) = open_listener(&server.config, &options)?;
    let local_addr = listener.local_addr()?;
    let announcement = Announcement::new(&policy, &options);
    let (tx, rx) = smol::channel::unbounded::<Event>();
    let operator = Operator::new(
        backend.store.clone(),
        backend.clock.clone(),
        backend.views.clone(),
        !options.mcp,
    );
    let (wake, woken) = waker(tx.clone());
    let performer = Performer::new(
        backend.store.clone(),
        backend.host.clone(),
        Some(operator),
        options.limits.workers,
        1,
        wake,
    )?;
    let writes = Writes {
        timeout: options.limits.write_timeout,
        bound: options.limits.max_unsent_bytes,
        linger: (options.limits.linger, options.limits.linger_bytes),
    };
    let origin = Instant::now();
    let config = EngineConfig::http(policy, options, seed()?);
    let engine = Engine::new(server, config, moment(origin, &*backend.clock));
    let listener = Async::new(listener)?;
    let events = tx.clone();
    let clock = backend.clock.clone();
    let thread = thread::Builder::new()
        .name("bernstein-smol-http".into())
        .spawn(move || {
            // One thread: the engine's task and every connection task run here.
            let ex = Rc::new(LocalExecutor::new());
            let live = Arc::new(AtomicUsize::new(0));
            let accepting = ex.spawn(accept(
                ex.clone(),
                listener,
                events,
                writes,
                live.clone(),
                tls,
            ));
            let hub = Hub {
                engine,
                performer,
                woken,
                conns: HashMap::new(),
                paused: BTreeSet::new(),
                clock,
                origin,
                accepting: Some(accepting),
                stopping: false,
                live,
                tls_log: LogBudget::new(),
            };
            smol::block_on(ex.run(hub.run(rx)))
        })?;
    Ok(HttpServerHandle {
        local_addr,
        stop: tx,
        announcement,
        thread: Some(thread),
    })
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
    let handle = bind_tls(server, backend, options, tls)?;
    handle
        .announcement
        .announce(handle.local_addr(), "runtime smol");
    on_bound(handle.stopper())?;
    handle.wait()
}

/// The performer's wake-up: one [`Event::Woken`] per batch of results (the flag is cleared by
/// whoever drains them).
pub(crate) fn waker(tx: Sender<Event>) -> (Arc<dyn Fn() + Send + Sync>, Arc<AtomicBool>) {
    let woken = Arc::new(AtomicBool::new(false));
    let flag = woken.clone();
    let wake = Arc::new(move || {
        if !flag.swap(true, Ordering::AcqRel) {
            let _ = tx.try_send(Event::Woken);
        }
    });
    (wake, woken)
}

/// How connection tasks write: the write timeout, and the bound on what a connection may have
/// unsent (the engine's; crossing back under it wakes the engine's task).
#[derive(Clone, Copy, Debug)]
struct Writes {
    timeout: Duration,
    bound: usize,
    /// How long, and for how many bytes, a finished connection lingers.
    linger: (Duration, usize),
}

/// Accepts connections and starts a task for each.
async fn accept(
    ex: Rc<LocalExecutor<'static>>,
    listener: Async<TcpListener>,
    events: Sender<Event>,
    writes: Writes,
    live: Arc<AtomicUsize>,
    tls: Option<Arc<ServerTls>>,
) {
    let mut next: u64 = 1;
    loop {
        let (stream, peer) = match listener.accept().await {
            Ok(x) => x,
            Err(e) => {
                // Out of file descriptors and the like: back off instead of spinning.
                bernstein_os::log_line!("bernstein http: accept failed: {e}");
                Timer::after(Duration::from_millis(20)).await;
                continue;
            }
        };
        let _ = stream.get_ref().set_nodelay(true);
        let session = match &tls {
            None => None,
            Some(tls) => match tls.session(stream.get_ref().local_addr().ok()) {
                // Boxed: a connection task stays small while it waits.
                Ok(session) => Some(Box::new(session)),
                Err(e) => {
                    bernstein_os::log_line!("bernstein https: {e}");
                    continue;
                }
            },
        };
        let id = next;
        next += 1;
        // Unbounded, but the engine sends a connection nothing more once it is over its bound.
        let (tx, rx) = smol::channel::unbounded::<ToConn>();
        let unsent = Arc::new(AtomicUsize::new(0));
        let link = Link {
            tx,
            unsent: unsent.clone(),
        };
        if events.send(Event::Accepted(id, peer, link)).await.is_err() {
            return;
        }
        let unsent = Unsent {
            count: unsent,
            bound: writes.bound,
            events: events.clone(),
        };
        let live = Live::count(&live, &events);
        ex.spawn(async move {
            connection(id, stream, session, rx, writes, unsent).await;
            drop(live);
        })
        .detach();
    }
}

/// One running connection task, counted while it lives; its end tells the engine's task (a
/// shutdown waits for them to write their last bytes).
struct Live(Arc<AtomicUsize>, Sender<Event>);

impl Live {
    fn count(n: &Arc<AtomicUsize>, events: &Sender<Event>) -> Live {
        n.fetch_add(1, Ordering::AcqRel);
        Live(n.clone(), events.clone())
    }
}

impl Drop for Live {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
        let _ = self.1.try_send(Event::Ended);
    }
}

/// What a connection task does next.
enum Step {
    Told(Option<ToConn>),
    Read(io::Result<Vec<u8>>),
}

/// Most bytes one read takes.
const CHUNK: usize = 16 * 1024;

/// Reads the next chunk once the socket is readable (empty at end of stream). The buffer lives
/// only between readiness and the read, never across an await: a connection waiting on a long
/// poll holds no buffer, and its task stays small.
async fn read_chunk(stream: &Async<TcpStream>) -> io::Result<Vec<u8>> {
    loop {
        stream.readable().await?;
        let mut buf = [0u8; CHUNK];
        match stream.get_ref().read(&mut buf) {
            Ok(n) => return Ok(buf[..n].to_vec()),
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted
                ) => {}
            Err(e) => return Err(e),
        }
    }
}

/// What a connection task has not written of what it was sent, counted down as it writes.
struct Unsent {
    count: Arc<AtomicUsize>,
    bound: usize,
    events: Sender<Event>,
}

impl Unsent {
    /// `n` bytes were written: falling back to the bound wakes the engine's task, which may
    /// wait for that.
    fn written(&self, n: usize) {
        let before = self.count.fetch_sub(n, Ordering::AcqRel);
        if before > self.bound && before - n <= self.bound {
            let _ = self.events.try_send(Event::Drained);
        }
    }
}

/// One connection: reads a chunk when the engine asks for it, writes what it is sent, ends
/// when told to close (or when a read or write fails).
async fn connection(
    id: u64,
    mut stream: Async<TcpStream>,
    mut tls: Option<Box<TlsSession>>,
    rx: Receiver<ToConn>,
    writes: Writes,
    unsent: Unsent,
) {
    let events = &unsent.events;
    // The first chunk is wanted at once; each later one when the engine says so.
    let mut wanted = true;
    let mut eof = false;
    loop {
        let step = if wanted && !eof {
            future::or(async { Step::Told(rx.recv().await.ok()) }, async {
                Step::Read(read_chunk(&stream).await)
            })
            .await
        } else {
            Step::Told(rx.recv().await.ok())
        };
        match step {
            Step::Told(None) => return,
            Step::Told(Some(ToConn::More)) => wanted = true,
            Step::Told(Some(ToConn::Send(bytes))) => {
                let written = match tls.as_mut() {
                    None => write_timed(&mut stream, &bytes, writes.timeout, Some(&unsent)).await,
                    Some(tls) => {
                        let mut sealed = Vec::with_capacity(bytes.len() + 64);
                        tls.send(&bytes, &mut sealed);
                        let w = write_timed(&mut stream, &sealed, writes.timeout, None).await;
                        unsent.written(bytes.len());
                        w
                    }
                };
                if written.is_err() {
                    let _ = events.send(Event::Closed(id)).await;
                    return;
                }
            }
            Step::Told(Some(ToConn::Close { finish })) => {
                if let Some(tls) = tls.as_mut() {
                    let mut notify = Vec::new();
                    tls.close(&mut notify);
                    let _ = write_timed(&mut stream, &notify, writes.timeout, None).await;
                }
                if finish {
                    finish_stream(stream, writes.linger).await;
                }
                return;
            }
            Step::Read(Ok(bytes)) if bytes.is_empty() => {
                eof = true;
                let _ = events.send(Event::Closed(id)).await;
            }
            Step::Read(Ok(raw)) if tls.is_some() => {
                let Some(session) = tls.as_mut() else {
                    return;
                };
                let (mut plain, mut out) = (Vec::new(), Vec::new());
                let received = session.receive(&raw, &mut plain, &mut out);
                let wrote = write_timed(&mut stream, &out, writes.timeout, None).await;
                if !plain.is_empty() {
                    wanted = false;
                    if events.send(Event::Bytes(id, plain)).await.is_err() {
                        return;
                    }
                }
                match received {
                    Received::Open if wrote.is_ok() => {}
                    Received::PeerClosed if wrote.is_ok() => {
                        eof = true;
                        let _ = events.send(Event::Closed(id)).await;
                    }
                    received => {
                        if let Received::Failed(why) = &received
                            && let Ok(peer) = stream.get_ref().peer_addr()
                        {
                            let _ = events.send(Event::TlsFailed(peer, why.clone())).await;
                        }
                        let _ = events.send(Event::Closed(id)).await;
                        if received == Received::PlainHttp && wrote.is_ok() {
                            finish_stream(stream, writes.linger).await;
                        }
                        return;
                    }
                }
            }
            Step::Read(Ok(bytes)) => {
                wanted = false;
                if events.send(Event::Bytes(id, bytes)).await.is_err() {
                    return;
                }
            }
            Step::Read(Err(_)) => {
                let _ = events.send(Event::Closed(id)).await;
                return;
            }
        }
    }
}

/// Writes `bytes`, failing when a write makes no progress for `limit` (a peer that reads slowly
/// but steadily is not dropped), and counts down what is left to write as it goes.
async fn write_timed(
    stream: &mut Async<TcpStream>,
    bytes: &[u8],
    limit: Duration,
    unsent: Option<&Unsent>,
) -> io::Result<()> {
    let mut done = 0;
    while done < bytes.len() {
        let n = future::or(stream.write(&bytes[done..]), async {
            Timer::after(limit).await;
            Err(io::ErrorKind::TimedOut.into())
        })
        .await?;
        if n == 0 {
            return Err(io::ErrorKind::WriteZero.into());
        }
        done += n;
        if let Some(unsent) = unsent {
            unsent.written(n);
        }
    }
    Ok(())
}

/// Ends a connection after its last response: half-close, then read and drop what the peer
/// is still sending (briefly, boundedly), so closing does not reset the connection before the
/// peer has read the response.
async fn finish_stream(mut stream: Async<TcpStream>, linger: (Duration, usize)) {
    let _ = stream.get_ref().shutdown(Shutdown::Write);
    let deadline = Instant::now() + linger.0;
    // On the heap: an array here would sit in every connection task's future.
    let mut scratch = vec![0u8; 8192];
    let mut budget: usize = linger.1;
    while budget > 0 {
        let read = future::or(async { Some(stream.read(&mut scratch).await) }, async {
            Timer::at(deadline).await;
            None
        })
        .await;
        match read {
            Some(Ok(n)) if n > 0 => budget = budget.saturating_sub(n),
            _ => return,
        }
    }
}

/// The engine's task: everything the engine asks for is performed from here.
struct Hub<F: Fold> {
    engine: Engine<F>,
    performer: Performer<F>,
    /// Set while a wake-up from the performer is pending.
    woken: Arc<AtomicBool>,
    conns: HashMap<u64, Link>,
    /// Connections whose next chunk waits until the engine wants it.
    paused: BTreeSet<u64>,
    clock: Arc<dyn Clock>,
    origin: Instant,
    accepting: Option<smol::Task<()>>,
    stopping: bool,
    /// Connection tasks still running.
    live: Arc<AtomicUsize>,
    /// The budget of lines about failed handshakes (a flood of them writes a few).
    tls_log: LogBudget,
}

impl<F: Fold> Hub<F> {
    fn now(&self) -> Moment {
        moment(self.origin, &*self.clock)
    }

    async fn run(mut self, rx: Receiver<Event>) -> io::Result<()> {
        loop {
            let at = self.engine.poll_timeout().map(|d| self.origin + d);
            let first = match at {
                None => rx.recv().await.ok(),
                Some(at) => {
                    future::or(async { rx.recv().await.ok() }, async {
                        Timer::at(at).await;
                        None
                    })
                    .await
                }
            };
            for event in first
                .into_iter()
                .chain(std::iter::from_fn(|| rx.try_recv().ok()))
            {
                self.event(event);
            }
            self.woken.store(false, Ordering::Release);
            let now = self.now();
            if self.engine.poll_timeout().is_some_and(|t| t <= now.mono) {
                self.engine.handle_input(now, Input::Tick);
            }
            self.pump();
            match self.engine.drain() {
                Some(Drain::Overdue) => return Ok(()),
                Some(Drain::Answered) => {
                    // The connection tasks write what they were sent, then end; each end wakes
                    // this task (`Event::Ended`), and the engine's grace bounds the wait.
                    for (_, link) in self.conns.drain() {
                        let _ = link.tx.try_send(ToConn::Close { finish: false });
                    }
                    if self.live.load(Ordering::Acquire) == 0 {
                        return Ok(());
                    }
                }
                Some(Drain::Answering) | None => {}
            }
        }
    }

    fn event(&mut self, event: Event) {
        let now = self.now();
        match event {
            Event::Accepted(id, peer, link) => {
                self.conns.insert(id, link);
                let conn = ConnId(id);
                let peer = Peer::Http(peer);
                self.engine.handle_input(now, Input::Opened { conn, peer });
            }
            Event::Bytes(id, bytes) => {
                let conn = ConnId(id);
                self.engine.handle_input(
                    now,
                    Input::Received {
                        conn,
                        bytes: &bytes,
                    },
                );
                self.paused.insert(id);
            }
            Event::TlsFailed(peer, why) => {
                if let Admit::Write { left_out } = self.tls_log.admit(now.mono) {
                    if left_out > 0 {
                        let line = LogBudget::summary("bernstein https: ", left_out);
                        bernstein_os::log_line!("{line}");
                    }
                    bernstein_os::log_line!("bernstein https: {peer}: TLS failed: {why}");
                }
            }
            Event::Closed(id) => {
                self.engine
                    .handle_input(now, Input::Closed { conn: ConnId(id) });
            }
            // The engine may wait for it: `pump` looks.
            Event::Drained | Event::Woken => {}
            // A shutdown waits for the last connection task: `run` looks.
            Event::Ended => {}
            Event::Stop => {
                if !self.stopping {
                    self.stopping = true;
                    // Dropping the accept task stops accepting.
                    self.accepting = None;
                    self.engine.handle_input(now, Input::Shutdown);
                }
            }
        }
    }

    /// Performs the engine's outputs until it has none, telling it meanwhile which connection
    /// it waits on is back under its bound; then asks the connections whose bytes the engine
    /// wants again for their next chunk.
    fn pump(&mut self) {
        let (origin, clock) = (self.origin, self.clock.clone());
        let now = || moment(origin, &*clock);
        let mut io = Vec::new();
        loop {
            self.performer.pump(&mut self.engine, &now, &mut io);
            if io.is_empty() {
                if self.report_drained() {
                    continue;
                }
                break;
            }
            for output in io.drain(..) {
                match output {
                    Output::Send { conn, bytes } => {
                        if let Some(link) = self.conns.get(&conn.0) {
                            let n = bytes.len();
                            link.unsent.fetch_add(n, Ordering::AcqRel);
                            if link.tx.try_send(ToConn::Send(bytes)).is_err() {
                                link.unsent.fetch_sub(n, Ordering::AcqRel);
                            }
                        }
                    }
                    Output::Close { conn, finish } => {
                        self.paused.remove(&conn.0);
                        if let Some(link) = self.conns.remove(&conn.0) {
                            let _ = link.tx.try_send(ToConn::Close { finish });
                        }
                    }
                    other => bernstein_os::log_line!(
                        "bernstein http: an output nobody performs: {other:?}"
                    ),
                }
            }
        }
        let resumed: Vec<u64> = self
            .paused
            .iter()
            .copied()
            .filter(|id| self.engine.wants_bytes(ConnId(*id)))
            .collect();
        for id in resumed {
            self.paused.remove(&id);
            if let Some(link) = self.conns.get(&id) {
                let _ = link.tx.try_send(ToConn::More);
            }
        }
    }

    /// Tells the engine the backlog of each connection it waits on that is back under its
    /// bound (every output taken is sent to its task by now); whether there was any.
    fn report_drained(&mut self) -> bool {
        let now = self.now();
        let conns = &self.conns;
        self.engine.report_drained(now, |conn| {
            Some(conns.get(&conn.0)?.unsent.load(Ordering::Acquire))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A held long poll costs its connection task: that task must not carry a read buffer or
    /// a scratch array (it was ≈ 24 KiB a connection, 237 MiB at 10,000 polls).
    #[test]
    fn a_connection_task_holds_no_buffer() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let stream = Async::new(client).unwrap();
        let (events, _events_rx) = smol::channel::unbounded();
        let (_tx, rx) = smol::channel::unbounded();
        let unsent = Unsent {
            count: Arc::default(),
            bound: 64 * 1024,
            events,
        };
        let writes = Writes {
            timeout: Duration::from_secs(1),
            bound: 64 * 1024,
            linger: (Duration::from_millis(500), 1 << 20),
        };
        let task = connection(1, stream, None, rx, writes, unsent);
        let size = std::mem::size_of_val(&task);
        assert!(size < 1024, "a connection task's future is {size} bytes");
    }
}
