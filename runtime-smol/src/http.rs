//! The HTTP transports on smol: streamable HTTP (`POST /mcp`) and the legacy HTTP+SSE transport
//! (`GET /sse`, `POST /messages?stream=…`) on one port, one async task per connection.
//!
//! Tasks only move bytes and keep time (keep-alive, read timeouts, the connection cap; the
//! legacy streams' keep-alive and idle timers are the core's, fired by one timer task);
//! framing, routing and every HTTP decision are the core's, and serving an MCP body (ledger IO,
//! fsync) runs on a fixed pool of threads ([`pool`], sized by `limits.workers`) through
//! the shared [`HttpService`](bernstein_serve::http::HttpService), never on the
//! executor. (A dedicated pool, not `smol::unblock`: it bounds concurrent ledger work and
//! measured about half the hand-off latency on a loaded two-core machine.) A legacy
//! SSE stream is a task that owns its connection and drains a bounded channel; the registry maps
//! its token to the channel's sender, so a POST for a stream whose task ended gets 404.

use std::io;
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use bernstein_core::domain::bound::Server;
use bernstein_core::transport::http::exchange::LegacyOpen;
use bernstein_core::transport::http::operator::feed_head;
use bernstein_core::transport::http::read_clock::{Expired, ReadClock};
use bernstein_core::transport::http::response::{over_capacity, request_timeout, route_span_id};
use bernstein_core::transport::http::{
    CONTINUE, Decision, Frame, HttpOptions, HttpResponse, RequestParser, Status, sse,
};
use bernstein_serve::driver::Backend;
use bernstein_serve::http::peer::peer_closed_nonblocking;
use bernstein_serve::http::service::Early;
use bernstein_serve::http::{
    Action, ConnectionSlot, EventSink, HttpService, Parked, Waiting, is_loopback, log,
    open_listener,
};
use smol::channel::{Receiver, Sender};
use smol::io::{AsyncReadExt, AsyncWriteExt};
use smol::{Async, Executor, Timer, future};

mod pool;

use pool::BlockingPool;

/// A running server.
#[derive(Debug)]
pub struct HttpServerHandle {
    local_addr: SocketAddr,
    stop: Sender<()>,
    service: Arc<HttpService>,
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

    /// Stops accepting, drops every connection task and closes the legacy streams.
    pub fn shutdown(mut self) {
        self.stop.close();
        let _ = self.join();
    }

    fn join(&mut self) -> io::Result<()> {
        let Some(t) = self.thread.take() else {
            return Ok(());
        };
        let result = t
            .join()
            .map_err(|_| io::Error::other("the smol HTTP thread panicked"))?;
        self.service.waits.shutdown();
        self.service.legacy.clear();
        self.service.feeds.clear();
        result
    }
}

impl Drop for HttpServerHandle {
    fn drop(&mut self) {
        self.stop.close();
        let _ = self.join();
    }
}

/// Binds and starts serving on a background thread running a smol executor.
pub fn bind(
    server: Arc<Server>,
    backend: Backend,
    options: HttpOptions,
) -> io::Result<HttpServerHandle> {
    let (listener, policy) = open_listener(&server.config, &options)?;
    let local_addr = listener.local_addr()?;
    let listener = Async::new(listener)?;
    let service = Arc::new(HttpService::new(server, backend, policy, options));
    let (stop, stopped) = smol::channel::bounded::<()>(1);
    let svc = service.clone();
    let pool = Arc::new(BlockingPool::new(service.options.limits.workers)?);
    let thread = thread::Builder::new()
        .name("bernstein-smol-http".into())
        .spawn(move || {
            let ex = Arc::new(Executor::new());
            ex.spawn(stream_timers(svc.clone())).detach();
            let accepting = accept_loop(ex.clone(), listener, svc, pool.clone(), stopped);
            let result = smol::block_on(ex.run(accepting));
            pool.close();
            result
        })?;
    Ok(HttpServerHandle {
        local_addr,
        stop,
        service,
        thread: Some(thread),
    })
}

/// Fires the legacy streams' timers (keep-alives, idle closes) when the core says they are
/// due; it ends with the executor.
async fn stream_timers(svc: Arc<HttpService>) {
    loop {
        Timer::after(svc.tick_streams(Duration::from_millis(50))).await;
    }
}

/// Binds, announces the endpoint on stderr and serves until the process ends.
pub fn serve_http(server: Arc<Server>, backend: Backend, options: HttpOptions) -> io::Result<()> {
    let handle = bind(server, backend, options)?;
    bernstein_serve::http::announce(&handle.service, handle.local_addr(), "runtime smol");
    handle.wait()
}

async fn accept_loop(
    ex: Arc<Executor<'static>>,
    listener: Async<TcpListener>,
    svc: Arc<HttpService>,
    pool: Arc<BlockingPool>,
    stopped: Receiver<()>,
) -> io::Result<()> {
    let counter = svc.connection_counter();
    loop {
        let accepted = future::or(async { Some(listener.accept().await) }, async {
            let _ = stopped.recv().await;
            None
        })
        .await;
        let (stream, peer) = match accepted {
            None => return Ok(()),
            Some(Ok(x)) => x,
            Some(Err(e)) => {
                // Out of file descriptors and the like: back off instead of spinning.
                bernstein_store_file::log_line!("bernstein http: accept failed: {e}");
                Timer::after(Duration::from_millis(20)).await;
                continue;
            }
        };
        let _ = stream.get_ref().set_nodelay(true);
        match counter.try_acquire() {
            Some(slot) => ex
                .spawn(connection(svc.clone(), pool.clone(), stream, peer, slot))
                .detach(),
            None => {
                log(
                    &peer,
                    format_args!(
                        "503: over the connection cap ({})",
                        svc.options.limits.max_connections
                    ),
                );
                ex.spawn(async move {
                    let mut stream = stream;
                    let _ = write_timed(
                        &mut stream,
                        &over_capacity().to_bytes(),
                        Duration::from_secs(1),
                    )
                    .await;
                })
                .detach();
            }
        }
    }
}

/// Serves one connection: keep-alive, pipelining, read timeouts.
async fn connection(
    svc: Arc<HttpService>,
    pool: Arc<BlockingPool>,
    mut stream: Async<TcpStream>,
    peer: SocketAddr,
    slot: ConnectionSlot,
) {
    let limits = svc.options.limits.clone();
    let peer_loopback = is_loopback(&peer);
    let mut parser = RequestParser::new(limits.parser());
    let mut buf = vec![0u8; 16 * 1024];
    let origin = Instant::now();
    let mut clock = ReadClock::new(Duration::ZERO, limits.read_timeout);
    loop {
        while let Some(frame) = parser.poll_frame() {
            match frame {
                Frame::Continue => {
                    if write_timed(&mut stream, CONTINUE, limits.read_timeout)
                        .await
                        .is_err()
                    {
                        return;
                    }
                }
                Frame::Error(e) => {
                    log(&peer, format_args!("{}: {e}", e.status().code()));
                    let _ = write_timed(&mut stream, &e.response().to_bytes(), limits.read_timeout)
                        .await;
                    return finish(stream).await;
                }
                Frame::Request(request) => {
                    clock.request_served();
                    let action = match svc.route(request, peer_loopback) {
                        Decision::Respond(r) => Action::Write(r),
                        Decision::OpenLegacyStream(open) => Action::OpenLegacy(open),
                        other => match serve(&svc, &pool, &mut stream, peer, other).await {
                            Some(action) => action,
                            // The room dropped a waiting request (shutdown).
                            None => return,
                        },
                    };
                    match action {
                        Action::Streamed => return finish(stream).await,
                        Action::Write(response) => {
                            note_refusal(&peer, &response);
                            if write_timed(&mut stream, &response.to_bytes(), limits.read_timeout)
                                .await
                                .is_err()
                            {
                                return;
                            }
                            if response.close {
                                return finish(stream).await;
                            }
                        }
                        Action::OpenLegacy(open) => {
                            return legacy_stream(svc, stream, peer, slot, open).await;
                        }
                        Action::OpenFeed(span) => {
                            return feed_stream(svc, stream, peer, slot, span).await;
                        }
                        Action::Wait(_) => return,
                    }
                }
            }
        }
        if parser.is_idle() {
            clock.parser_idle();
        }
        let deadline = origin + clock.deadline();
        let read = future::or(async { Some(stream.read(&mut buf).await) }, async {
            Timer::at(deadline).await;
            None
        })
        .await;
        let expired = match read {
            Some(Ok(0)) | Some(Err(_)) => return,
            // Bytes that arrive after the deadline do not save an overdue request.
            Some(Ok(n)) => match clock.expired(origin.elapsed()) {
                Some(Expired::Overdue) => Expired::Overdue,
                _ => {
                    parser.handle_bytes(&buf[..n]);
                    clock.bytes_arrived(origin.elapsed(), parser.is_idle());
                    continue;
                }
            },
            None => clock.expiry(),
        };
        if let Some(line) = expired.log_line(clock.timeout()) {
            log(&peer, format_args!("{line}"));
        }
        if expired == Expired::Overdue {
            let _ = write_timed(
                &mut stream,
                &request_timeout().to_bytes(),
                limits.read_timeout,
            )
            .await;
            let _ = stream.get_ref().shutdown(Shutdown::Write);
        }
        return;
    }
}

/// Carries out a routing decision on the blocking pool. An answer that waits for the ledger
/// is put in the service's waiting room meanwhile, so it holds no pool thread: this task
/// awaits the room's hand-back, then resumes it on the pool; `None` if the room dropped it.
async fn serve(
    svc: &Arc<HttpService>,
    pool: &BlockingPool,
    stream: &mut Async<TcpStream>,
    peer: SocketAddr,
    decision: Decision,
) -> Option<Action> {
    let mut action = on_pool(svc, pool, stream, move |s, gone, early| {
        s.act(decision, peer.ip(), gone, early)
    })
    .await;
    while let Action::Wait(waiting) = action {
        let (tx, rx) = smol::channel::bounded(1);
        let probe = stream.get_ref().try_clone().ok();
        svc.waits.park(waiting, Box::new(ParkedTask { probe, tx }));
        let waiting = rx.recv().await.ok()?;
        action = on_pool(svc, pool, stream, move |s, gone, early| {
            s.resume(waiting, gone, early)
        })
        .await;
    }
    Some(action)
}

/// Runs `work` on the blocking pool. A clone of the socket (non-blocking, like the original)
/// lets it notice that the peer left; what it streams (an SSE answer as it is produced) comes
/// back over a channel and is written here meanwhile.
async fn on_pool(
    svc: &Arc<HttpService>,
    pool: &BlockingPool,
    stream: &mut Async<TcpStream>,
    work: impl FnOnce(&HttpService, &dyn Fn() -> bool, Early<'_>) -> Action + Send + 'static,
) -> Action {
    let s = svc.clone();
    let limit = svc.options.limits.read_timeout;
    let probe = stream.get_ref().try_clone().ok();
    let gone = move || probe.as_ref().is_some_and(peer_closed_nonblocking);
    let (tx, rx) = smol::channel::bounded::<Vec<u8>>(16);
    let work = pool.run(move || {
        let early = |bytes: &[u8]| {
            tx.send_blocking(bytes.to_vec())
                .map_err(|_| io::ErrorKind::BrokenPipe.into())
        };
        work(&s, &gone, &early)
    });
    let drain = async {
        while let Ok(bytes) = rx.recv().await {
            if write_timed(stream, &bytes, limit).await.is_err() {
                rx.close();
            }
        }
    };
    future::zip(work, drain).await.0
}

/// A connection task's end of a waiting request: the room hands the request back over a
/// channel the task awaits.
struct ParkedTask {
    probe: Option<TcpStream>,
    tx: Sender<Box<Waiting>>,
}

impl Parked for ParkedTask {
    fn gone(&self) -> bool {
        self.probe.as_ref().is_some_and(peer_closed_nonblocking)
    }

    fn wake(self: Box<Self>, waiting: Box<Waiting>) {
        let _ = self.tx.try_send(waiting);
    }
}

fn note_refusal(peer: &SocketAddr, response: &HttpResponse) {
    let code = response.status.code();
    if matches!(code, 401 | 403 | 413 | 421 | 431 | 503) {
        log(peer, format_args!("{code} {}", response.status.reason()));
    }
}

async fn write_timed(
    stream: &mut Async<TcpStream>,
    bytes: &[u8],
    limit: Duration,
) -> io::Result<()> {
    future::or(stream.write_all(bytes), async {
        Timer::after(limit).await;
        Err(io::ErrorKind::TimedOut.into())
    })
    .await
}

/// Ends a connection after its last response: half-close, then read and drop what the peer
/// is still sending (briefly, boundedly), so closing does not reset the connection before the
/// peer has read the response.
async fn finish(mut stream: Async<TcpStream>) {
    let _ = stream.get_ref().shutdown(Shutdown::Write);
    let deadline = Instant::now() + Duration::from_millis(500);
    let mut scratch = [0u8; 8192];
    let mut budget: usize = 1 << 20;
    while budget > 0 {
        let read = future::or(async { Some(stream.read(&mut scratch).await) }, async {
            Timer::at(deadline.min(Instant::now() + Duration::from_millis(100))).await;
            None
        })
        .await;
        match read {
            Some(Ok(n)) if n > 0 => budget = budget.saturating_sub(n),
            _ => return,
        }
    }
}

/// A legacy stream's end of the registry: a bounded channel to the task that owns the socket.
struct ChannelSink(Sender<Vec<u8>>);

impl EventSink for ChannelSink {
    /// Called on the blocking pool only (from `HttpService::serve_legacy`).
    fn send(&self, events: &[u8]) -> io::Result<()> {
        self.0
            .send_blocking(events.to_vec())
            .map_err(|_| io::ErrorKind::BrokenPipe.into())
    }

    fn is_open(&self) -> bool {
        !self.0.is_closed()
    }

    /// Called on the executor (the timer task): never waits. A full channel means the stream
    /// has events queued anyway, so the comment is not needed.
    fn keep_alive(&self) -> io::Result<()> {
        match self.0.try_send(sse::KEEPALIVE.to_vec()) {
            Err(smol::channel::TrySendError::Closed(_)) => Err(io::ErrorKind::BrokenPipe.into()),
            _ => Ok(()),
        }
    }

    /// The stream task writes what is queued, then ends and closes the socket.
    fn close(&self, farewell: &[u8]) {
        let _ = self.0.try_send(farewell.to_vec());
        self.0.close();
    }
}

enum StreamEvent {
    Send(Vec<u8>),
    Ignore,
    Closed,
}

/// Turns a connection into a legacy SSE stream until either side closes it.
async fn legacy_stream(
    svc: Arc<HttpService>,
    mut stream: Async<TcpStream>,
    peer: SocketAddr,
    slot: ConnectionSlot,
    open: LegacyOpen,
) {
    let limits = svc.options.limits.clone();
    let (tx, rx) = smol::channel::bounded::<Vec<u8>>(64);
    let token = match svc.legacy.register(Arc::new(ChannelSink(tx)), svc.clock()) {
        Ok(Some(token)) => token,
        Ok(None) => {
            log(
                &peer,
                format_args!(
                    "503: over the legacy SSE stream cap ({})",
                    limits.max_legacy_streams
                ),
            );
            let _ = write_timed(
                &mut stream,
                &over_capacity().to_bytes(),
                limits.read_timeout,
            )
            .await;
            return;
        }
        Err(e) => {
            log(&peer, format_args!("500: cannot open a legacy stream: {e}"));
            let span = route_span_id("500", "legacy");
            let r = HttpResponse::problem(
                Status::INTERNAL_SERVER_ERROR,
                &span,
                "internal",
                "no stream token",
            )
            .closing();
            let _ = write_timed(&mut stream, &r.to_bytes(), limits.read_timeout).await;
            return;
        }
    };
    let mut first = open.head();
    first.extend(open.endpoint_event(&token));
    pump(&mut stream, &first, &rx, limits.read_timeout).await;
    rx.close();
    svc.legacy.remove(&token);
    drop(slot);
}

/// Writes `first`, then what arrives on `rx`, until either side closes (the peer hanging up
/// is seen by a read that returns).
async fn pump(
    stream: &mut Async<TcpStream>,
    first: &[u8],
    rx: &smol::channel::Receiver<Vec<u8>>,
    limit: Duration,
) {
    if write_timed(stream, first, limit).await.is_err() {
        return;
    }
    let mut probe = [0u8; 512];
    loop {
        let next = future::or(
            async {
                rx.recv()
                    .await
                    .map_or(StreamEvent::Closed, StreamEvent::Send)
            },
            async {
                match stream.read(&mut probe).await {
                    Ok(0) | Err(_) => StreamEvent::Closed,
                    Ok(_) => StreamEvent::Ignore,
                }
            },
        )
        .await;
        let bytes: &[u8] = match &next {
            StreamEvent::Send(events) => events,
            StreamEvent::Ignore => continue,
            StreamEvent::Closed => return,
        };
        if write_timed(stream, bytes, limit).await.is_err() {
            return;
        }
    }
}

/// A dashboard feed's end of the service's feed registry: a bounded channel to the task that
/// owns the socket. It never blocks the watcher: a feed too slow to take its events is dropped
/// (the page reconnects and gets the current head at once).
struct FeedSink(Sender<Vec<u8>>);

impl EventSink for FeedSink {
    fn send(&self, events: &[u8]) -> io::Result<()> {
        self.0
            .try_send(events.to_vec())
            .map_err(|_| io::ErrorKind::BrokenPipe.into())
    }

    fn is_open(&self) -> bool {
        !self.0.is_closed()
    }

    fn close(&self, farewell: &[u8]) {
        let _ = self.0.try_send(farewell.to_vec());
        self.0.close();
    }
}

/// Turns a connection into a dashboard feed until either side closes it.
async fn feed_stream(
    svc: Arc<HttpService>,
    mut stream: Async<TcpStream>,
    peer: SocketAddr,
    slot: ConnectionSlot,
    span: String,
) {
    let limits = svc.options.limits.clone();
    if !svc.feeds.has_room() {
        log(&peer, format_args!("503: over the dashboard feed cap"));
        let _ = write_timed(
            &mut stream,
            &over_capacity().to_bytes(),
            limits.read_timeout,
        )
        .await;
        return;
    }
    let (tx, rx) = smol::channel::bounded::<Vec<u8>>(64);
    // The head is queued first, so nothing the watcher sends can precede it.
    let head = feed_head(&span);
    let sink = Arc::new(FeedSink(tx));
    svc.open_feed(sink.clone());
    pump(&mut stream, &head, &rx, limits.read_timeout).await;
    rx.close();
    drop(slot);
}
