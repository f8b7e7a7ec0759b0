//! Performs what the engine asks of the store, the host and the operator's routes, for any
//! runtime: [`Performer::pump`] takes each [`Output`] that is not about a socket, performs it,
//! and feeds back what comes out ([`Done`]) — at once for what was performed on its thread, or
//! later from [`Performer::drain`] after the performer woke the runtime.
//!
//! Where each output runs:
//! - a store that is [`local`](Store::local) (the file store) is read and appended to on the
//!   runtime's thread: a snapshot is a lock and an `fstat`, an append a positional write under
//!   the file lock. Only what waits for the disk goes to the syncer thread: every
//!   [`Output::Settle`] and [`Output::Look`] queued while one fsync runs is answered by the
//!   next, so one fsync covers every request that appended meanwhile (group commit), and the
//!   runtime's thread never waits for one;
//! - any other store (PostgreSQL) is called on a pool of threads;
//! - host requests (reads under the project root) run on the runtime's thread;
//! - operator routes (dashboard, metrics, probes: whole-ledger reads, durable snapshots) run on
//!   a thread of their own.
//!
//! Nothing here decides anything: the engine does. It must never answer a settle before a
//! store settle that began after the request asked.

use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread;

use bernstein_core::engine::{ConnId, Counters, Engine, Input, Moment, Output, ReqId};
use bernstein_core::ledger::{AppendResult, Fold, Snapshot, Store, StoreError};
use bernstein_core::protocol::host::HostReply;
use bernstein_core::time::Clock;
use bernstein_core::transport::http::{HttpResponse, OperatorRequest};

use bernstein_core::transport::http::introspection::{IntrospectRequest, TokenDigest};

use crate::heads::HeadWatch;
use crate::host::HostIo;
use crate::http::operator::Operator;
use crate::introspect::Endpoint;
use crate::trace::{Requests, entered};
use bernstein_core::transport::http::views::{NoViews, Views};

/// What a server or a [`Local`](crate::local::Local) engine is built on: the ledger, the wall
/// clock, the host, and what the operator's routes read from the fold (HTTP servers).
pub struct Backend<F: Fold> {
    pub store: Arc<dyn Store<F>>,
    pub clock: Arc<dyn Clock>,
    pub host: Arc<dyn HostIo>,
    /// The dashboard's answers and the fold's metrics ([`NoViews`] until
    /// [`Backend::with_views`]).
    pub views: Arc<dyn Views<F>>,
}

impl<F: Fold> Backend<F> {
    pub fn new(
        store: Arc<dyn Store<F>>,
        clock: Arc<dyn Clock>,
        host: Arc<dyn HostIo>,
    ) -> Backend<F> {
        Backend {
            store,
            clock,
            host,
            views: Arc::new(NoViews),
        }
    }

    /// The same backend whose operator routes answer from `views`.
    pub fn with_views(mut self, views: Arc<dyn Views<F>>) -> Backend<F> {
        self.views = views;
        self
    }
}

impl<F: Fold> Clone for Backend<F> {
    fn clone(&self) -> Self {
        Backend {
            store: self.store.clone(),
            clock: self.clock.clone(),
            host: self.host.clone(),
            views: self.views.clone(),
        }
    }
}

impl<F: Fold> std::fmt::Debug for Backend<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Backend")
    }
}

/// What a performed output came to: the input to feed the engine.
#[derive(Debug)]
pub enum Done<F> {
    Snapshot {
        req: ReqId,
        snapshot: Arc<Snapshot<F>>,
    },
    Appended {
        req: ReqId,
        result: AppendResult,
    },
    /// Every record up to this seq is durable.
    Synced(u64),
    SyncFailed(StoreError),
    /// The store heard of a head past this engine's ([`crate::heads`]).
    HeadMoved,
    Host {
        req: ReqId,
        reply: HostReply,
    },
    Failed {
        req: ReqId,
        error: StoreError,
    },
    Head(Arc<Snapshot<F>>),
    HeadFailed(StoreError),
    Operator {
        conn: ConnId,
        response: HttpResponse,
    },
    Keys(Result<serde_json::Value, String>),
    Introspected {
        digest: TokenDigest,
        result: Result<serde_json::Value, String>,
    },
}

impl<F: Fold> Done<F> {
    /// Feeds this result to `engine` at `now`.
    pub fn feed(self, engine: &mut Engine<F>, now: Moment) {
        let input = match self {
            Done::Snapshot { req, snapshot } => {
                let snapshot = &*snapshot;
                return engine.handle_input(now, Input::Snapshot { req, snapshot });
            }
            Done::Head(snapshot) => return engine.handle_input(now, Input::Head(&snapshot)),
            Done::Appended { req, result } => Input::Appended { req, result },
            Done::Synced(durable) => Input::Synced { durable },
            Done::SyncFailed(error) => Input::SyncFailed(error),
            Done::HeadMoved => Input::HeadMoved,
            Done::Host { req, reply } => Input::Host { req, reply },
            Done::Failed { req, error } => Input::Failed { req, error },
            Done::HeadFailed(error) => Input::HeadFailed(error),
            Done::Operator { conn, response } => Input::Operator { conn, response },
            Done::Keys(result) => Input::Keys(result),
            Done::Introspected { digest, result } => Input::Introspected { digest, result },
        };
        engine.handle_input(now, input);
    }
}

/// Wakes the runtime's loop (results are waiting in [`Performer::drain`]).
pub type Wake = Arc<dyn Fn() + Send + Sync>;

/// Results of outputs performed off the runtime's thread, and how to wake it.
struct Mailbox<F> {
    done: Mutex<Vec<Done<F>>>,
    wake: Wake,
}

impl<F> Mailbox<F> {
    fn post(&self, done: Done<F>) {
        self.post_all(vec![done]);
    }

    fn post_all(&self, done: Vec<Done<F>>) {
        if done.is_empty() {
            return;
        }
        lock(&self.done).extend(done);
        (self.wake)();
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // Every update is a push or a whole take: a panic cannot leave the contents torn.
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Performs the engine's outputs that are not about a socket (see the module docs).
pub struct Performer<F: Fold> {
    store: Arc<dyn Store<F>>,
    host: Arc<dyn HostIo>,
    mailbox: Arc<Mailbox<F>>,
    /// Where syncs that more than `inline_syncs` requests wait for run (`None`: all here);
    /// shared by the performers of a process's engines ([`Performer::beside`]).
    syncer: Option<Arc<Syncer<F>>>,
    inline_syncs: usize,
    pool: Option<Pool>,
    operator: Option<OperatorQueue>,
    operator_thread: Option<thread::JoinHandle<()>>,
    /// The request spans, when the process traces ([`crate::trace::enable`]); shared with
    /// the pool's threads, which open the spans of the appends they perform.
    trace: Option<Arc<Requests>>,
    /// The issuer's introspection endpoint, once discovered.
    introspection: Arc<Endpoint>,
    /// Heads another instance committed, heard of as they come (stores that hear them).
    heads: Option<HeadWatch>,
}

impl<F: Fold> Drop for Performer<F> {
    /// Returns once every thread of the performer (and its hold on the store) is gone, so that
    /// the store is dropped (and checkpointed) by the runtime that stops, not after it.
    fn drop(&mut self) {
        self.heads = None;
        self.operator = None;
        if let Some(t) = self.operator_thread.take() {
            let _ = t.join();
        }
    }
}

impl<F: Fold> std::fmt::Debug for Performer<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Performer")
            .field("pooled", &self.pool.is_some())
            .finish_non_exhaustive()
    }
}

impl<F: Fold> Performer<F> {
    /// A performer over `store` and `host`; `operator` answers operator routes (HTTP servers),
    /// `workers` threads call a store that is not local. A sync that at most `inline_syncs`
    /// requests wait for runs on the runtime's thread (a thread hand-off there and back costs
    /// more than the fsync's wait when nothing else is to be served meanwhile); a larger one on
    /// the syncer thread, so that the runtime serves on while it runs (`usize::MAX`: no
    /// syncer thread, every sync here; a stdio peer's). `wake` is called whenever results wait
    /// in [`Performer::drain`].
    pub fn new(
        store: Arc<dyn Store<F>>,
        host: Arc<dyn HostIo>,
        operator: Option<Operator<F>>,
        workers: usize,
        inline_syncs: usize,
        wake: Wake,
    ) -> std::io::Result<Performer<F>> {
        let syncer = if inline_syncs == usize::MAX {
            None
        } else {
            Some(Arc::new(Syncer::start(store.clone())?))
        };
        Performer::with_syncer(store, host, operator, workers, inline_syncs, wake, syncer)
    }

    /// The performer of another engine of this process over the same store and host, with
    /// `operator`, `workers` and `wake` of its own, sharing this one's syncer thread: one
    /// fsync round answers every engine's waiting requests, with one thread to wake.
    pub fn beside(
        &self,
        operator: Option<Operator<F>>,
        workers: usize,
        wake: Wake,
    ) -> std::io::Result<Performer<F>> {
        let (store, host) = (self.store.clone(), self.host.clone());
        let (inline, syncer) = (self.inline_syncs, self.syncer.clone());
        Performer::with_syncer(store, host, operator, workers, inline, wake, syncer)
    }

    fn with_syncer(
        store: Arc<dyn Store<F>>,
        host: Arc<dyn HostIo>,
        operator: Option<Operator<F>>,
        workers: usize,
        inline_syncs: usize,
        wake: Wake,
        syncer: Option<Arc<Syncer<F>>>,
    ) -> std::io::Result<Performer<F>> {
        let mailbox = Arc::new(Mailbox {
            done: Mutex::new(Vec::new()),
            wake,
        });
        let trace = crate::trace::enabled().then(|| Arc::new(Requests::default()));
        let pool = if store.local() {
            None
        } else {
            // The pool's threads perform what they are handed as a performer without a pool,
            // a syncer or threads of its own would: here, on the thread that runs it.
            let here = Performer {
                store: store.clone(),
                host: host.clone(),
                mailbox: mailbox.clone(),
                syncer: None,
                inline_syncs: usize::MAX,
                pool: None,
                operator: None,
                operator_thread: None,
                trace: trace.clone(),
                introspection: Arc::default(),
                heads: None,
            };
            Some(Pool::start(Arc::new(here), workers)?)
        };
        let heard = mailbox.clone();
        let heads = HeadWatch::start(store.clone(), move || heard.post(Done::HeadMoved))?;
        let (operator, operator_thread) = match operator {
            Some(op) => {
                let (tx, t) = start_operator(op, mailbox.clone())?;
                (Some(tx), Some(t))
            }
            None => (None, None),
        };
        Ok(Performer {
            store,
            host,
            mailbox,
            syncer,
            inline_syncs,
            pool,
            operator,
            operator_thread,
            trace,
            introspection: Arc::default(),
            heads,
        })
    }

    /// Performs a store or host `output`, the one place each is performed wherever it runs:
    /// `Some` when it was performed here and now (feed it to the engine at once), `None` when
    /// its result comes later through [`Performer::drain`] (a store that is not local is
    /// called on the pool's threads, each performing it here through this function; a sync
    /// that many requests wait for runs on the syncer). Every other output comes back as it
    /// went: the socket outputs (`Send`, `Close`), `Log` and `Finished` are the runtime's, and
    /// [`Performer::pump`] performs the operator's and the OAuth ones.
    pub fn perform_store(&self, output: Output) -> Result<Option<Done<F>>, Output> {
        if let Some(pool) = &self.pool
            && matches!(
                output,
                Output::ReadSnapshot { .. } | Output::Append { .. } | Output::Look
            )
        {
            return Ok(pool.queue(output));
        }
        let store = &*self.store;
        Ok(Some(match output {
            Output::ReadSnapshot { req } => match store.snapshot_unsettled() {
                Ok(snapshot) => Done::Snapshot { req, snapshot },
                Err(error) => Done::Failed { req, error },
            },
            Output::Append { req, append } => {
                let span = self.trace.as_ref().map(|t| t.append(req));
                let _entered = span.as_ref().map(tracing::Span::enter);
                match store.compare_and_append_unsettled(&append) {
                    Ok(result) => Done::Appended { req, result },
                    Err(error) => Done::Failed { req, error },
                }
            }
            Output::Sync { waiting, upto } => {
                let spans = self.trace.as_ref().map(|t| t.fsync()).unwrap_or_default();
                if let Some(syncer) = &self.syncer
                    && waiting > self.inline_syncs
                {
                    return Ok(syncer.queue(&self.mailbox, Wanted::Sync(upto, spans)));
                }
                // Here, whoever else waits: the pool only reads and appends.
                let _entered = entered(&spans);
                match store.settle(upto) {
                    Ok(durable) => Done::Synced(durable),
                    Err(error) => Done::SyncFailed(error),
                }
            }
            Output::Began { req, span } => {
                if let Some(t) = &self.trace {
                    t.begin(req, &span);
                }
                return Ok(None);
            }
            Output::Ended { req, error, failed } => {
                if let Some(t) = &self.trace {
                    t.end(req, error, failed);
                }
                return Ok(None);
            }
            Output::Look => match &self.syncer {
                Some(syncer) => match store.snapshot_unsettled() {
                    Ok(snapshot) => return Ok(syncer.queue(&self.mailbox, Wanted::Head(snapshot))),
                    Err(error) => Done::HeadFailed(error),
                },
                None => match store.snapshot() {
                    Ok(s) => Done::Head(s),
                    Err(e) => Done::HeadFailed(e),
                },
            },
            Output::Host { req, request } => Done::Host {
                req,
                reply: self.host.perform(&request),
            },
            other @ (Output::Send { .. }
            | Output::Close { .. }
            | Output::Log(_)
            | Output::Operator { .. }
            | Output::FetchKeys { .. }
            | Output::Introspect(_)
            | Output::Finished { .. }
            | Output::Tell(_)
            | Output::HandOff { .. }) => return Err(other),
        }))
    }

    /// Hands an operator route to its thread (`503` when there is none).
    fn operator(
        &self,
        conn: ConnId,
        request: OperatorRequest,
        counters: &Counters,
    ) -> Option<Done<F>> {
        {
            let sent = self
                .operator
                .as_ref()
                .is_some_and(|tx| tx.send((conn, request.clone(), counters.clone())).is_ok());
            if sent {
                return None;
            }
            let span = request.span_id.clone();
            Some(Done::Operator {
                conn,
                response: bernstein_core::transport::http::views::unavailable(&span),
            })
        }
    }

    /// Asks `engine` to announce its requests when this performer traces them (once: cheap
    /// to call before every pump).
    pub fn attach(&self, engine: &mut Engine<F>) {
        if self.trace.is_some() && !engine.traces_requests() {
            engine.trace_requests(true);
        }
    }

    /// Fetches the OAuth issuer's keys on a thread of its own (the engine asks for one fetch
    /// at a time, at most one per few seconds); the answer comes through [`Performer::drain`].
    fn fetch_keys(&self, issuer: String, jwks_url: Option<String>) -> Option<Done<F>> {
        let mailbox = self.mailbox.clone();
        let spawned = thread::Builder::new()
            .name("bernstein-idp".into())
            .spawn(move || {
                let result = crate::idp::fetch_keys(&issuer, jwks_url.as_deref());
                mailbox.post(Done::Keys(result));
            });
        match spawned {
            Ok(_) => None,
            Err(e) => Some(Done::Keys(Err(format!(
                "cannot start a thread to fetch them: {e}"
            )))),
        }
    }

    /// Introspects an opaque token on a thread of its own (the engine asks for one per token
    /// at a time, and a bounded number at once); the answer comes through [`Performer::drain`].
    fn introspect(&self, ask: IntrospectRequest) -> Option<Done<F>> {
        let (mailbox, endpoint) = (self.mailbox.clone(), self.introspection.clone());
        let digest = ask.digest;
        let spawned = thread::Builder::new()
            .name("bernstein-introspect".into())
            .spawn(move || {
                let result = crate::introspect::introspect(&ask, &endpoint);
                mailbox.post(Done::Introspected { digest, result });
            });
        match spawned {
            Ok(_) => None,
            Err(e) => Some(Done::Introspected {
                digest,
                result: Err(format!("cannot start a thread to introspect: {e}")),
            }),
        }
    }

    /// What was performed off the runtime's thread since the last call.
    pub fn drain(&self) -> Vec<Done<F>> {
        std::mem::take(&mut *lock(&self.mailbox.done))
    }

    /// Feeds `engine` what was performed off the runtime's thread, then takes its outputs
    /// until it has none, or until one is about a socket: performs the store, host and
    /// operator ones (feeding back at once what was performed here) and writes `Log` lines on
    /// stderr; a socket output (`Send`, `Close`) is left in `io` and returned at once, so that
    /// the runtime writes each answer as soon as it is ready (call again while
    /// [`Engine::has_output`]).
    pub fn pump(&self, engine: &mut Engine<F>, now: &dyn Fn() -> Moment, io: &mut Vec<Output>) {
        self.attach(engine);
        for done in self.drain() {
            done.feed(engine, now());
        }
        while let Some(output) = engine.poll_output() {
            let done = match output {
                Output::Operator { conn, request } => {
                    Ok(self.operator(conn, request, &engine.counters()))
                }
                Output::FetchKeys { issuer, jwks_url } => Ok(self.fetch_keys(issuer, jwks_url)),
                Output::Introspect(ask) => Ok(self.introspect(*ask)),
                other => self.perform_store(other),
            };
            match done {
                Ok(Some(done)) => done.feed(engine, now()),
                Ok(None) => {}
                Err(Output::Log(line)) => bernstein_os::log_line!("{line}"),
                Err(socket) => {
                    io.push(socket);
                    return;
                }
            }
        }
    }
}

/// 32 bytes from the OS, for an engine to draw its stream tokens and jitter from.
pub fn seed() -> std::io::Result<[u8; 32]> {
    let mut seed = [0u8; 32];
    getrandom::fill(&mut seed).map_err(|e| std::io::Error::other(format!("OS randomness: {e}")))?;
    Ok(seed)
}

/// The engine's `now`: monotonic time since `origin` and the wall clock.
pub fn moment(origin: std::time::Instant, clock: &dyn bernstein_core::time::Clock) -> Moment {
    Moment {
        mono: origin.elapsed(),
        wall: clock.now(),
    }
}

/// What the syncer answers once the records it names are durable.
enum Wanted<F> {
    /// Every record up to a seq, with the `store.fsync` spans of the requests it makes durable.
    Sync(u64, Vec<tracing::Span>),
    /// The head as this snapshot holds it.
    Head(Arc<Snapshot<F>>),
}

impl<F: Fold> Wanted<F> {
    /// The seq up to which records must be durable before this is answered.
    fn upto(&self) -> u64 {
        match self {
            Wanted::Sync(upto, _) => *upto,
            Wanted::Head(snapshot) => snapshot.position.seq,
        }
    }
}

/// The thread that waits for the disk: each round takes everything queued and performs one
/// store settle for all of it.
struct Syncer<F> {
    state: Arc<(Mutex<SyncQueue<F>>, Condvar)>,
    thread: Option<thread::JoinHandle<()>>,
}

struct SyncQueue<F> {
    /// What each engine's performer wants, and where it wants the answer.
    wanted: Vec<(Arc<Mailbox<F>>, Wanted<F>)>,
    closed: bool,
}

impl<F: Fold> Syncer<F> {
    fn start(store: Arc<dyn Store<F>>) -> std::io::Result<Syncer<F>> {
        let queue = SyncQueue {
            wanted: Vec::new(),
            closed: false,
        };
        let state = Arc::new((Mutex::new(queue), Condvar::new()));
        let s = state.clone();
        let thread = thread::Builder::new()
            .name("bernstein-sync".into())
            .spawn(move || sync_loop(&s, &*store))?;
        Ok(Syncer {
            state,
            thread: Some(thread),
        })
    }

    fn queue(&self, mailbox: &Arc<Mailbox<F>>, wanted: Wanted<F>) -> Option<Done<F>> {
        lock(&self.state.0).wanted.push((mailbox.clone(), wanted));
        self.state.1.notify_one();
        None
    }
}

impl<F> Drop for Syncer<F> {
    /// Answers what is queued, then stops; returns once the thread (and its hold on the
    /// store) is gone.
    fn drop(&mut self) {
        lock(&self.state.0).closed = true;
        self.state.1.notify_one();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// What one engine's performer is told after a sync round.
type Post<F> = (Arc<Mailbox<F>>, Vec<Done<F>>);

fn sync_loop<F: Fold>(state: &(Mutex<SyncQueue<F>>, Condvar), store: &dyn Store<F>) {
    loop {
        let batch = {
            let mut q = lock(&state.0);
            while q.wanted.is_empty() && !q.closed {
                q = state.1.wait(q).unwrap_or_else(PoisonError::into_inner);
            }
            if q.wanted.is_empty() {
                return;
            }
            std::mem::take(&mut q.wanted)
        };
        // Began after every request in the batch asked: it covers what each wrote or read.
        let spans: Vec<tracing::Span> = batch
            .iter()
            .flat_map(|(_, w)| match w {
                Wanted::Sync(_, spans) => spans.clone(),
                Wanted::Head(_) => Vec::new(),
            })
            .collect();
        let upto = batch.iter().map(|(_, w)| w.upto()).max().unwrap_or(0);
        let settled = {
            let _entered = entered(&spans);
            store.settle(upto)
        };
        drop(spans);
        // Each engine's answers in one post (one wake-up of its loop).
        let mut posts: Vec<Post<F>> = Vec::new();
        for (mailbox, w) in batch {
            let done = match (w, &settled) {
                (Wanted::Sync(..), Ok(durable)) => Done::Synced(*durable),
                (Wanted::Sync(..), Err(e)) => Done::SyncFailed(e.clone()),
                (Wanted::Head(s), Ok(_)) => Done::Head(s),
                (Wanted::Head(_), Err(e)) => Done::HeadFailed(e.clone()),
            };
            match posts.iter_mut().find(|(m, _)| Arc::ptr_eq(m, &mailbox)) {
                Some((_, all)) => all.push(done),
                None => posts.push((mailbox, vec![done])),
            }
        }
        for (mailbox, done) in posts {
            mailbox.post_all(done);
        }
    }
}

/// Threads that call a store which may wait on the network (PostgreSQL), so the runtime's
/// thread never does.
struct Pool {
    calls: Option<Mutex<Sender<Output>>>,
    threads: Vec<thread::JoinHandle<()>>,
}

impl Pool {
    /// `workers` threads, each performing what it is handed with `here` (a performer with
    /// no pool: it performs on the thread that calls it).
    fn start<F: Fold>(here: Arc<Performer<F>>, workers: usize) -> std::io::Result<Pool> {
        let (tx, rx) = mpsc::channel::<Output>();
        let rx = Arc::new(Mutex::new(rx));
        let mut threads = Vec::new();
        for i in 0..workers.max(1) {
            let (here, rx) = (here.clone(), rx.clone());
            threads.push(
                thread::Builder::new()
                    .name(format!("bernstein-store-{i}"))
                    .spawn(move || pool_loop(&rx, &here))?,
            );
        }
        Ok(Pool {
            calls: Some(Mutex::new(tx)),
            threads,
        })
    }

    fn queue<F>(&self, output: Output) -> Option<Done<F>> {
        if let Some(calls) = &self.calls {
            let _ = lock(calls).send(output);
        }
        None
    }
}

impl Drop for Pool {
    /// The workers drain the queue and exit; returns once they have.
    fn drop(&mut self) {
        self.calls = None;
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

fn pool_loop<F: Fold>(rx: &Mutex<Receiver<Output>>, here: &Performer<F>) {
    loop {
        let next = lock(rx).recv();
        let Ok(next) = next else { return };
        // A store output only: performed here, it is `Some`.
        if let Ok(Some(done)) = here.perform_store(next) {
            here.mailbox.post(done);
        }
    }
}

/// The thread that answers operator routes, one at a time.
type OperatorQueue = Sender<(ConnId, OperatorRequest, Counters)>;

fn start_operator<F: Fold>(
    op: Operator<F>,
    mailbox: Arc<Mailbox<F>>,
) -> std::io::Result<(OperatorQueue, thread::JoinHandle<()>)> {
    let (tx, rx) = mpsc::channel::<(ConnId, OperatorRequest, Counters)>();
    let t = thread::Builder::new()
        .name("bernstein-operator".into())
        .spawn(move || {
            for (conn, request, counters) in rx {
                let response = op.answer(request, &counters);
                mailbox.post(Done::Operator { conn, response });
            }
        })?;
    Ok((tx, t))
}
