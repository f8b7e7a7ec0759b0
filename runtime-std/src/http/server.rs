//! The blocking HTTP/1.1 server: one acceptor thread, a fixed pool of worker threads, one
//! poller thread for idle connections and one timer thread for legacy SSE streams.
//!
//! A worker owns a connection only while it is busy: it serves every request that arrives
//! promptly (keep-alive and pipelining included) and, once the peer has been silent for a
//! short linger, or after one request while other connections wait for a worker, parks the
//! connection with the poller, which hands it back to the pool when bytes arrive and closes it
//! when the read timeout passes. So connections that send nothing
//! (slowloris) cost a socket, never a worker; a request that trickles in is answered `408`
//! once it has taken longer than the read timeout; connections over the cap get `503`.
//!
//! This module moves bytes and enforces time; every HTTP decision is the core's.

use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use bernstein_core::domain::bound::Server;
use bernstein_core::transport::http::exchange::LegacyOpen;
use bernstein_core::transport::http::operator::feed_head;
use bernstein_core::transport::http::read_clock::{Expired, ReadClock};
use bernstein_core::transport::http::response::{over_capacity, request_timeout};
use bernstein_core::transport::http::{
    CONTINUE, Frame, HttpLimits, HttpOptions, HttpResponse, RequestParser, Status,
};
use bernstein_serve::driver::Backend;

use bernstein_serve::http::room::Parked;
use bernstein_serve::http::service::{Action, Early, EventSink, HttpService, Waiting};
use bernstein_serve::http::{ConnectionCounter, ConnectionSlot, log, open_listener, reachable};

/// How long a worker waits for the next bytes before parking a connection.
const LINGER: Duration = Duration::from_millis(20);

/// A running server.
#[derive(Debug)]
pub struct HttpServerHandle {
    local_addr: SocketAddr,
    shared: Arc<Shared>,
    acceptor: Option<JoinHandle<()>>,
    helpers: Vec<JoinHandle<()>>,
}

impl HttpServerHandle {
    /// The address actually bound (port 0 resolved).
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// Blocks until the server stops (it runs until [`Self::shutdown`] or process exit).
    pub fn wait(mut self) -> io::Result<()> {
        if let Some(a) = self.acceptor.take() {
            a.join()
                .map_err(|_| io::Error::other("the HTTP acceptor thread panicked"))?;
        }
        Ok(())
    }

    /// Stops accepting, closes the legacy streams and joins every thread. Requests being
    /// served finish first.
    pub fn shutdown(mut self) {
        self.stop();
    }

    fn stop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        // Wake the acceptor out of accept().
        let _ = TcpStream::connect_timeout(&reachable(self.local_addr), Duration::from_secs(1));
        if let Some(a) = self.acceptor.take() {
            let _ = a.join();
        }
        // Waiting requests are answered as things stand and handed to the workers, which
        // drain their queue before they exit.
        self.shared.service.waits.shutdown();
        self.shared.resumer.close();
        self.shared.service.legacy.clear();
        self.shared.service.feeds.clear();
        for h in self.helpers.drain(..) {
            let _ = h.join();
        }
    }
}

impl Drop for HttpServerHandle {
    fn drop(&mut self) {
        if self.acceptor.is_some() {
            self.stop();
        }
    }
}

#[derive(Debug)]
struct Shared {
    service: HttpService,
    limits: HttpLimits,
    stop: AtomicBool,
    /// Where the waiting room hands connections back to the workers.
    resumer: Arc<Resumer>,
    /// The origin of the connections' read clocks.
    origin: Instant,
}

/// The workers' queue as the waiting room sees it; closed at shutdown, after the room has
/// handed back every waiting request, so that the workers can drain the queue and exit.
#[derive(Debug)]
struct Resumer {
    jobs: Mutex<Option<Sender<Job>>>,
    /// Jobs waiting in the worker queue.
    queued: AtomicUsize,
}

impl Resumer {
    fn send(&self, job: Job) -> bool {
        let jobs = self.jobs.lock().unwrap_or_else(|p| p.into_inner());
        let Some(jobs) = jobs.as_ref() else {
            return false;
        };
        self.queued.fetch_add(1, Ordering::SeqCst);
        jobs.send(job).is_ok()
    }

    fn close(&self) {
        self.jobs.lock().unwrap_or_else(|p| p.into_inner()).take();
    }
}

/// What a worker is handed: a connection with bytes to read, or one whose waiting request
/// has IO to do.
enum Job {
    Serve(Conn),
    Resume(Conn, Box<Waiting>),
}

/// A connection put aside with its waiting request: the room watches it, a worker resumes it.
struct ParkedConn {
    conn: Conn,
    resumer: Arc<Resumer>,
}

impl Parked for ParkedConn {
    fn gone(&self) -> bool {
        bernstein_serve::http::peer::peer_closed_nonblocking(&self.conn.stream)
    }

    fn wake(self: Box<Self>, waiting: Box<Waiting>) {
        let ParkedConn { conn, resumer } = *self;
        resumer.send(Job::Resume(conn, waiting));
    }
}

impl Shared {
    fn now(&self) -> Duration {
        self.origin.elapsed()
    }
}

/// One client connection and its framing state.
struct Conn {
    stream: TcpStream,
    peer: SocketAddr,
    parser: RequestParser,
    clock: ReadClock,
    _slot: ConnectionSlot,
}

enum Next {
    Park(Box<Conn>),
    /// The request's answer waits for the ledger: put it in the waiting room.
    Wait(Box<Conn>, Box<Waiting>),
    Done,
}

/// Binds and starts serving in background threads.
pub fn bind(
    server: Arc<Server>,
    backend: Backend,
    options: HttpOptions,
) -> io::Result<HttpServerHandle> {
    let (listener, policy) = open_listener(&server.config, &options)?;
    let local_addr = listener.local_addr()?;
    let limits = options.limits.clone();
    let service = HttpService::new(server, backend, policy, options);
    let (job_tx, job_rx) = mpsc::channel::<Job>();
    let shared = Arc::new(Shared {
        service,
        limits: limits.clone(),
        stop: AtomicBool::new(false),
        resumer: Arc::new(Resumer {
            jobs: Mutex::new(Some(job_tx.clone())),
            queued: AtomicUsize::new(0),
        }),
        origin: Instant::now(),
    });
    let (park_tx, park_rx) = mpsc::channel::<Conn>();
    let job_rx = Arc::new(Mutex::new(job_rx));
    let mut helpers = Vec::new();
    for i in 0..limits.workers.max(1) {
        let (s, rx, park) = (shared.clone(), job_rx.clone(), park_tx.clone());
        helpers.push(
            thread::Builder::new()
                .name(format!("bernstein-http-{i}"))
                .spawn(move || worker(&s, &rx, &park))?,
        );
    }
    drop(park_tx);
    let (s, jobs) = (shared.clone(), job_tx.clone());
    helpers.push(
        thread::Builder::new()
            .name("bernstein-http-poll".into())
            .spawn(move || poller(&s, &park_rx, &jobs))?,
    );
    let s = shared.clone();
    helpers.push(
        thread::Builder::new()
            .name("bernstein-http-sse".into())
            .spawn(move || keepalive(&s))?,
    );
    let s = shared.clone();
    let counter = shared.service.connection_counter();
    let acceptor = thread::Builder::new()
        .name("bernstein-http-accept".into())
        .spawn(move || accept(&s, &listener, &counter, &job_tx))?;
    Ok(HttpServerHandle {
        local_addr,
        shared,
        acceptor: Some(acceptor),
        helpers,
    })
}

/// Binds, announces the endpoint on stderr and serves until the process ends.
pub fn serve_http(server: Arc<Server>, backend: Backend, options: HttpOptions) -> io::Result<()> {
    let workers = options.limits.workers;
    let handle = bind(server, backend, options)?;
    bernstein_serve::http::announce(
        &handle.shared.service,
        handle.local_addr(),
        &format!("runtime std, {workers} workers"),
    );
    handle.wait()
}

fn accept(
    shared: &Shared,
    listener: &TcpListener,
    counter: &ConnectionCounter,
    jobs: &Sender<Job>,
) {
    for incoming in listener.incoming() {
        if shared.stop.load(Ordering::SeqCst) {
            return;
        }
        let stream = match incoming {
            Ok(s) => s,
            Err(e) => {
                // Out of file descriptors and the like: back off instead of spinning.
                bernstein_store_file::log_line!("bernstein http: accept failed: {e}");
                thread::sleep(Duration::from_millis(20));
                continue;
            }
        };
        let Ok(peer) = stream.peer_addr() else {
            continue;
        };
        let _ = stream.set_nodelay(true);
        let _ = stream.set_write_timeout(Some(shared.limits.read_timeout));
        let Some(slot) = counter.try_acquire() else {
            log(
                &peer,
                format_args!(
                    "503: over the connection cap ({})",
                    shared.limits.max_connections
                ),
            );
            let mut s = stream;
            let _ = s.set_write_timeout(Some(Duration::from_secs(1)));
            let _ = s.write_all(&over_capacity().to_bytes());
            continue;
        };
        let conn = Conn {
            stream,
            peer,
            parser: RequestParser::new(shared.limits.parser()),
            clock: ReadClock::new(shared.now(), shared.limits.read_timeout),
            _slot: slot,
        };
        shared.resumer.queued.fetch_add(1, Ordering::SeqCst);
        if jobs.send(Job::Serve(conn)).is_err() {
            return;
        }
    }
}

fn worker(shared: &Shared, jobs: &Mutex<Receiver<Job>>, park: &Sender<Conn>) {
    loop {
        let job = jobs.lock().unwrap_or_else(|p| p.into_inner()).recv();
        let Ok(job) = job else { return };
        shared.resumer.queued.fetch_sub(1, Ordering::SeqCst);
        let next = match job {
            Job::Serve(conn) => drive(shared, conn),
            Job::Resume(conn, waiting) => resume(shared, conn, waiting),
        };
        match next {
            Next::Park(conn) => {
                if conn.stream.set_nonblocking(true).is_ok() {
                    let _ = park.send(*conn);
                }
            }
            Next::Wait(conn, waiting) => {
                if conn.stream.set_nonblocking(true).is_ok() {
                    let parked = ParkedConn {
                        conn: *conn,
                        resumer: shared.resumer.clone(),
                    };
                    shared.service.waits.park(waiting, Box::new(parked));
                }
            }
            Next::Done => {}
        }
    }
}

/// Resumes a connection's waiting request; once it is answered, serves the connection on.
fn resume(shared: &Shared, conn: Conn, waiting: Box<Waiting>) -> Next {
    if conn.stream.set_nonblocking(false).is_err() {
        return Next::Done;
    }
    let action = with_peer(&conn.stream, |gone, early| {
        shared.service.resume(waiting, gone, early)
    });
    match after(shared, conn, action) {
        Ok(conn) => drive(shared, conn),
        Err(next) => next,
    }
}

/// Calls `serve` with what the service asks of a connection while it serves: whether the peer
/// left, and a writer for the bytes of a response streamed meanwhile.
fn with_peer<T>(stream: &TcpStream, serve: impl FnOnce(&dyn Fn() -> bool, Early<'_>) -> T) -> T {
    let gone = || bernstein_serve::http::peer::peer_closed(stream);
    let early = |bytes: &[u8]| {
        let mut w = stream;
        w.write_all(bytes).and_then(|()| w.flush())
    };
    serve(&gone, &early)
}

/// Carries out what serving a request left the connection to do; `Ok` when it serves on.
fn after(shared: &Shared, mut conn: Conn, action: Action) -> Result<Conn, Next> {
    match action {
        Action::Streamed => Err(finish(conn)),
        Action::Write(response) => {
            note_refusal(&conn.peer, &response);
            if conn.stream.write_all(&response.to_bytes()).is_err() || response.close {
                return Err(finish(conn));
            }
            Ok(conn)
        }
        Action::OpenLegacy(open) => {
            open_legacy(shared, conn, &open);
            Err(Next::Done)
        }
        Action::OpenFeed(span) => {
            open_feed(shared, conn, &span);
            Err(Next::Done)
        }
        Action::Wait(waiting) => Err(Next::Wait(Box::new(conn), waiting)),
    }
}

/// Serves a connection while it keeps the worker busy.
fn drive(shared: &Shared, mut conn: Conn) -> Next {
    let limits = &shared.limits;
    if conn.stream.set_nonblocking(false).is_err()
        || conn
            .stream
            .set_read_timeout(Some(LINGER.min(limits.read_timeout)))
            .is_err()
    {
        return Next::Done;
    }
    let served_before = conn.clock.served();
    let mut buf = [0u8; 16 * 1024];
    loop {
        while let Some(frame) = conn.parser.poll_frame() {
            match frame {
                Frame::Continue => {
                    if conn.stream.write_all(CONTINUE).is_err() {
                        return Next::Done;
                    }
                }
                Frame::Error(e) => {
                    log(&conn.peer, format_args!("{}: {e}", e.status().code()));
                    let _ = conn.stream.write_all(&e.response().to_bytes());
                    return finish(conn);
                }
                Frame::Request(request) => {
                    conn.clock.request_served();
                    let peer = conn.peer.ip();
                    let action = with_peer(&conn.stream, |gone, early| {
                        shared.service.handle(request, peer, gone, early)
                    });
                    conn = match after(shared, conn, action) {
                        Ok(conn) => conn,
                        Err(next) => return next,
                    };
                }
            }
        }
        if conn.parser.is_idle() {
            conn.clock.parser_idle();
        }
        // One request per turn while other connections wait for a worker: parked, a
        // connection whose next request has arrived goes straight back to the end of the
        // queue (the poller wakes on it), so fewer workers than connections take turns
        // request by request. Kept for a 100 ms slice, it made the others wait whole slices
        // (p99 305 ms at 64 connections on 16 workers, BENCHMARKS.md).
        if conn.clock.served() > served_before && shared.resumer.queued.load(Ordering::SeqCst) > 0 {
            return Next::Park(Box::new(conn));
        }
        match conn.stream.read(&mut buf) {
            Ok(0) => return Next::Done,
            Ok(n) => {
                conn.parser.handle_bytes(&buf[..n]);
                conn.clock
                    .bytes_arrived(shared.now(), conn.parser.is_idle());
                if let Some(next) = expire_if_due(shared, &mut conn) {
                    return next;
                }
            }
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) =>
            {
                return expire_if_due(shared, &mut conn)
                    .unwrap_or_else(|| Next::Park(Box::new(conn)));
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => return Next::Done,
        }
    }
}

/// Closes a connection whose request is overdue (`408`) or that idled past the read timeout.
fn expire_if_due(shared: &Shared, conn: &mut Conn) -> Option<Next> {
    let expired = conn.clock.expired(shared.now())?;
    if let Some(line) = expired.log_line(conn.clock.timeout()) {
        log(&conn.peer, format_args!("{line}"));
    }
    if expired == Expired::Overdue {
        let _ = conn.stream.set_nonblocking(false);
        let _ = conn.stream.write_all(&request_timeout().to_bytes());
        let _ = conn.stream.shutdown(Shutdown::Write);
    }
    Some(Next::Done)
}

/// Ends a connection after its last response: half-close, then read and drop what the peer
/// is still sending (briefly, boundedly), so closing does not reset the connection before
/// the peer has read the response.
fn finish(mut conn: Conn) -> Next {
    let _ = conn.stream.shutdown(Shutdown::Write);
    let _ = conn
        .stream
        .set_read_timeout(Some(Duration::from_millis(100)));
    let deadline = Instant::now() + Duration::from_millis(500);
    let mut scratch = [0u8; 8192];
    let mut budget: usize = 1 << 20;
    while budget > 0 && Instant::now() < deadline {
        match conn.stream.read(&mut scratch) {
            Ok(0) | Err(_) => break,
            Ok(n) => budget = budget.saturating_sub(n),
        }
    }
    Next::Done
}

fn note_refusal(peer: &SocketAddr, response: &HttpResponse) {
    let code = response.status.code();
    if matches!(code, 401 | 403 | 413 | 421 | 431 | 503) {
        log(peer, format_args!("{code} {}", response.status.reason()));
    }
}

/// Watches parked connections: ready ones go back to the pool, silent ones expire.
fn poller(shared: &Shared, parked_rx: &Receiver<Conn>, jobs: &Sender<Job>) {
    let mut parked: Vec<Conn> = Vec::new();
    let mut probe = [0u8; 1];
    loop {
        if shared.stop.load(Ordering::SeqCst) {
            return;
        }
        // Sweep less often as the parked set grows, so a crowd of idle sockets stays cheap.
        let wait = if parked.is_empty() {
            Duration::from_millis(100)
        } else {
            Duration::from_millis((parked.len() as u64 / 100).clamp(2, 20))
        };
        match parked_rx.recv_timeout(wait) {
            Ok(c) => {
                parked.push(c);
                parked.extend(parked_rx.try_iter());
            }
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => return,
        }
        let mut i = 0;
        while i < parked.len() {
            let ready = match parked[i].stream.peek(&mut probe) {
                Ok(0) => Some(false),
                Ok(_) => Some(true),
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted
                    ) =>
                {
                    None
                }
                Err(_) => Some(false),
            };
            match ready {
                Some(true) => {
                    let conn = parked.swap_remove(i);
                    shared.resumer.queued.fetch_add(1, Ordering::SeqCst);
                    if jobs.send(Job::Serve(conn)).is_err() {
                        return;
                    }
                }
                Some(false) => drop(parked.swap_remove(i)),
                None => {
                    if expire_if_due(shared, &mut parked[i]).is_some() {
                        drop(parked.swap_remove(i));
                    } else {
                        i += 1;
                    }
                }
            }
        }
    }
}

/// A legacy SSE stream over a std socket.
struct TcpSink {
    stream: Mutex<TcpStream>,
    _slot: ConnectionSlot,
}

impl EventSink for TcpSink {
    fn send(&self, events: &[u8]) -> io::Result<()> {
        let mut s = self.stream.lock().unwrap_or_else(|p| p.into_inner());
        s.write_all(events)?;
        s.flush()
    }

    fn is_open(&self) -> bool {
        let s = self.stream.lock().unwrap_or_else(|p| p.into_inner());
        if s.set_nonblocking(true).is_err() {
            return false;
        }
        let mut probe = [0u8; 1];
        let open = match s.peek(&mut probe) {
            Ok(0) => false,
            Ok(_) => true,
            Err(e) => e.kind() == io::ErrorKind::WouldBlock,
        };
        s.set_nonblocking(false).is_ok() && open
    }

    fn close(&self, farewell: &[u8]) {
        let mut s = self.stream.lock().unwrap_or_else(|p| p.into_inner());
        let _ = s.write_all(farewell);
        // Closes the socket now, even while a message being served still holds this sink.
        let _ = s.shutdown(Shutdown::Both);
    }
}

fn open_legacy(shared: &Shared, conn: Conn, open: &LegacyOpen) {
    let Conn {
        stream,
        peer,
        _slot,
        ..
    } = conn;
    let _ = stream.set_read_timeout(None);
    let sink = Arc::new(TcpSink {
        stream: Mutex::new(stream),
        _slot,
    });
    match shared
        .service
        .legacy
        .register(sink.clone(), shared.service.clock())
    {
        Ok(Some(token)) => {
            let mut first = open.head();
            first.extend(open.endpoint_event(&token));
            if sink.send(&first).is_err() {
                shared.service.legacy.remove(&token);
            }
        }
        Ok(None) => {
            log(
                &peer,
                format_args!(
                    "503: over the legacy SSE stream cap ({})",
                    shared.limits.max_legacy_streams
                ),
            );
            let _ = sink.send(&over_capacity().to_bytes());
        }
        Err(e) => {
            log(&peer, format_args!("500: cannot open a legacy stream: {e}"));
            let span = bernstein_core::transport::http::response::route_span_id("500", "legacy");
            let _ = sink.send(
                &HttpResponse::problem(
                    Status::INTERNAL_SERVER_ERROR,
                    &span,
                    "internal",
                    "no stream token",
                )
                .closing()
                .to_bytes(),
            );
        }
    }
}

/// Turns the connection into a dashboard feed: the stream's head, then events from the
/// service's feed watcher until the peer leaves.
fn open_feed(shared: &Shared, conn: Conn, span: &str) {
    let Conn {
        mut stream,
        peer,
        _slot,
        ..
    } = conn;
    if !shared.service.feeds.has_room() {
        log(&peer, format_args!("503: over the dashboard feed cap"));
        let _ = stream.write_all(&over_capacity().to_bytes());
        return;
    }
    let _ = stream.set_read_timeout(None);
    if stream.write_all(&feed_head(span)).is_err() {
        return;
    }
    let sink = Arc::new(TcpSink {
        stream: Mutex::new(stream),
        _slot,
    });
    shared.service.open_feed(sink);
}

/// Fires the legacy streams' timers (keep-alives, idle closes) when the core says they are due.
fn keepalive(shared: &Shared) {
    while !shared.stop.load(Ordering::SeqCst) {
        thread::sleep(shared.service.tick_streams(Duration::from_millis(50)));
    }
}
