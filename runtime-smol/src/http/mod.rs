//! The HTTP transports on smol: streamable HTTP (`POST /mcp`), the legacy HTTP+SSE transport
//! (`GET /sse`, `POST /messages?stream=…`) and the operator's routes on one port.
//!
//! One task owns each of the server's [`Engine`]s (one by default, `HttpOptions::engines` in
//! all) and everything it asks for: it takes what its connection tasks read, its performer's
//! results and its own timeouts, and sends each connection task what to write and when to
//! close. A connection task (`conn.rs`) owns its socket: it reads a chunk, hands it over and
//! waits until the engine wants the next (a message framed behind the one being served
//! waits, as TCP makes it), and writes what it is sent, dropping the connection when a write
//! makes no progress for the write timeout; on an HTTPS server it also runs the connection's
//! [`TlsSession`] (what it reads is decrypted before it is handed over, what it writes is
//! encrypted). The two share a count of the bytes sent to the task that it has not written
//! yet: the engine's task reads it to tell the engine ([`Input::Drained`]) once a connection
//! it waits on is back under its bound, and the connection task wakes it when the count falls
//! back to the bound. Each engine task runs on an executor thread of its own with the
//! connection tasks started there and an accept task over its clone of the listener; what
//! crosses between them (connections placed by load, hand-offs to engine 0, notices) is
//! `crossing.rs`. The store, host and operator outputs go to each engine's [`Performer`].

mod conn;
mod crossing;

use std::collections::{BTreeSet, HashMap};
use std::io;
use std::net::{SocketAddr, TcpStream};
use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::Instant;

use bernstein_core::engine::shared::{HOME, Notice};
use bernstein_core::engine::{ConnId, Drain, Engine, Handed, Input, Moment, Output, Peer};
use bernstein_core::ledger::Fold;
use bernstein_core::protocol::Server;
use bernstein_core::time::Clock;
use bernstein_core::transport::http::HttpOptions;
use bernstein_effects::Stopper;
use bernstein_effects::engines as setup;
use bernstein_effects::engines::Listening;
pub use bernstein_effects::http::HttpServerHandle;
use bernstein_effects::perform::{Backend, Performer, moment};
use bernstein_os::tls::{ServerTls, TlsSession};
use smol::channel::{Receiver, Sender};
use smol::{Async, LocalExecutor, Timer, future};

use self::conn::{Link, Live, Owner, ToConn, Writes, connection};
use self::crossing::{Hubs, Tie, accept};

/// What reaches an engine's task.
#[derive(Debug)]
pub(crate) enum Event {
    /// A connection accepted for this engine (its id, unique across the server).
    Incoming(u64, Async<TcpStream>, SocketAddr, Option<Box<TlsSession>>),
    Bytes(u64, Vec<u8>),
    Closed(u64),
    /// A connection's TLS failed (the peer, why): logged within the budget of such lines.
    TlsFailed(SocketAddr, String),
    /// What a connection has not written yet fell back to the bound (the engine's task looks
    /// at every connection the engine waits on).
    Drained,
    /// The performer has results.
    Woken,
    /// A connection task on this thread ended.
    Ended,
    /// A connection another engine handed to this one (`Output::HandOff`); its task now
    /// reports here.
    Adopt(u64, Link, Box<Handed>),
    /// What another engine told the others.
    Told(Notice),
    Stop,
}

/// Binds and starts serving on threads running a smol executor each.
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
        ref options,
        engines,
        ..
    } = listening;
    let (doors, inboxes): (Vec<_>, Vec<_>) = (0..engines)
        .map(|_| smol::channel::unbounded::<Event>())
        .unzip();
    let hubs = Hubs::new(doors);
    let writes = Writes {
        timeout: options.limits.write_timeout,
        bound: options.limits.max_unsent_bytes,
        linger: (options.limits.linger, options.limits.linger_bytes),
    };
    let origin = Instant::now();
    let (wakes, wokens): (Vec<_>, Vec<_>) = (0..engines)
        .map(|index| waker(hubs.door(index).clone()))
        .unzip();
    let now = moment(origin, &*backend.clock);
    let all = setup::set_up(&server, &backend, &listening, wakes, now)?;
    let mut threads = Vec::with_capacity(engines);
    let each = inboxes.into_iter().zip(wokens).zip(all);
    for (index, ((rx, woken), (performer, engine))) in each.enumerate() {
        let listener = Async::new(listener.try_clone()?)?;
        let (hubs, clock, tls) = (hubs.clone(), backend.clock.clone(), tls.clone());
        let name = setup::thread_name("bernstein-smol-http", index);
        let thread = thread::Builder::new().name(name).spawn(move || {
            // This engine's task, its accept task and the connection tasks placed here.
            let ex = Rc::new(LocalExecutor::new());
            let accepting = ex.spawn(accept(hubs.clone(), index, listener, tls));
            let hub = Hub {
                index,
                hubs,
                ex: ex.clone(),
                writes,
                engine,
                performer,
                woken,
                conns: HashMap::new(),
                paused: BTreeSet::new(),
                clock,
                origin,
                accepting: Some(accepting),
                stopping: false,
            };
            smol::block_on(ex.run(hub.run(rx)))
        })?;
        threads.push(thread);
    }
    let stopper: Stopper = Arc::new(move || hubs.stop());
    Ok(listening.serving(threads, stopper, "a smol HTTP thread"))
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
    let runtime = setup::runtime_label("smol", options.engines);
    bind_tls(server, backend, options, tls)?.serve(&runtime, on_bound)
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

/// An engine's task: everything the engine asks for is performed from here.
struct Hub<F: Fold> {
    /// Which of the server's engines this is, and how to reach the others.
    index: usize,
    hubs: Arc<Hubs>,
    /// This thread's executor, where the connections placed here run.
    ex: Rc<LocalExecutor<'static>>,
    writes: Writes,
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
                    // this task (`Event::Ended`), and the engine's grace bounds the wait. A
                    // task handed to engine 0 ends when that engine closes it.
                    for (_, link) in self.conns.drain() {
                        let _ = link.tx.try_send(ToConn::Close { finish: false });
                    }
                    if self.hubs.load(self.index) == 0 {
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
            Event::Incoming(id, stream, peer, session) => {
                let (tx, rx) = smol::channel::unbounded::<ToConn>();
                let tie = Tie::new(self.index);
                let owner = Owner {
                    hubs: self.hubs.clone(),
                    tie: tie.clone(),
                    bound: self.writes.bound,
                };
                // Counted on this thread since the accept task placed it here.
                let live = Live {
                    hubs: self.hubs.clone(),
                    thread: self.index,
                };
                let writes = self.writes;
                self.ex
                    .spawn(async move {
                        connection(id, stream, session, rx, writes, owner).await;
                        drop(live);
                    })
                    .detach();
                // Unbounded, but the engine sends a connection nothing more once it is over
                // its bound.
                self.conns.insert(id, Link { tx, tie });
                let conn = ConnId(id);
                let peer = Peer::Http(peer);
                self.engine.handle_input(now, Input::Opened { conn, peer });
            }
            Event::Adopt(id, link, handed) => {
                let ended = link.tie.ended.load(Ordering::Acquire);
                self.conns.insert(id, link);
                let conn = ConnId(id);
                self.engine
                    .handle_input(now, Input::Adopted { conn, handed });
                if ended {
                    // Its peer left (or it failed) before it got here.
                    self.engine.handle_input(now, Input::Closed { conn });
                } else {
                    // Its task waits to be asked for its next chunk.
                    self.paused.insert(id);
                }
            }
            Event::Told(notice) => self.engine.handle_input(now, Input::Told(notice)),
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
            Event::TlsFailed(peer, why) => self
                .engine
                .handle_input(now, Input::TlsFailed { peer, why: &why }),
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
                            link.tie.unsent.fetch_add(n, Ordering::AcqRel);
                            if link.tx.try_send(ToConn::Send(bytes)).is_err() {
                                link.tie.unsent.fetch_sub(n, Ordering::AcqRel);
                            }
                        }
                    }
                    Output::Close { conn, finish } => {
                        self.paused.remove(&conn.0);
                        if let Some(link) = self.conns.remove(&conn.0) {
                            let _ = link.tx.try_send(ToConn::Close { finish });
                        }
                    }
                    Output::HandOff { conn, handed } => self.hand_off(conn.0, handed),
                    Output::Tell(notice) => self.hubs.tell_others(self.index, &notice),
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

    /// Gives a connection the engine handed over to engine [`HOME`]'s task: its task reports
    /// there from now on (it is not running: it runs on this thread), and that engine adopts
    /// it. It stays on this thread, moving its bytes.
    fn hand_off(&mut self, id: u64, handed: Box<Handed>) {
        self.paused.remove(&id);
        let Some(link) = self.conns.remove(&id) else {
            return;
        };
        link.tie.owner.store(HOME, Ordering::Release);
        // If engine 0's task has ended (a shutdown), the connection closes with the link.
        let _ = self.hubs.post(HOME, Event::Adopt(id, link, handed));
    }

    /// Tells the engine the backlog of each connection it waits on that is back under its
    /// bound (every output taken is sent to its task by now); whether there was any.
    fn report_drained(&mut self) -> bool {
        let now = self.now();
        let conns = &self.conns;
        self.engine.report_drained(now, |conn| {
            Some(conns.get(&conn.0)?.tie.unsent.load(Ordering::Acquire))
        })
    }
}
