//! The glue between a framed HTTP request and the request driver, shared by both runtimes:
//! route with the core's [`HttpPolicy`], serve MCP bodies with a [`Drive`] (an answer that waits
//! for the ledger comes back as [`Action::Wait`], for the waiting room), and turn the result
//! into the response the core's exchange functions describe. Also the registry of open
//! legacy SSE streams (an opaque token → the live stream, the revision it negotiated and the
//! core's [`StreamClock`] of its keep-alive and idle timers): connection plumbing, never session
//! state — a token whose connection is gone, or that stayed idle too long, is forgotten. Both
//! runtimes fire its timers through [`LegacyStreams::tick`], so the timer rules exist once.
//!
//! Every call here may block (the ledger does file IO and fsync); the smol runtime runs them on
//! its blocking pool. No HTTP or protocol rule lives here: those are the core's.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::io;
use std::net::IpAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use bernstein_core::Projection;
use bernstein_core::domain::Snapshot;
use bernstein_core::domain::bound::Server;
use bernstein_core::engine::OwnedMessage;
use bernstein_core::protocol::TransportFacts;
use bernstein_core::protocol::dispatch::request_span_id;
use bernstein_core::transport::http::exchange::{
    LegacyMessage, LegacyOpen, McpExchange, ServedParts, StreamedReply, body_span_id,
};
use bernstein_core::transport::http::response::route_span_id;
use bernstein_core::transport::http::sse::EventIds;
use bernstein_core::transport::http::{
    Decision, HttpLimits, HttpOptions, HttpPolicy, HttpResponse, ParamHeaders, Request, Status,
    StreamClock, StreamTick, sse,
};

use super::feeds::Feeds;
use super::room::WaitRoom;
use crate::driver::{Backend, DEFAULT_WAIT, Drive, Env, Look, Served, Step, Stop};
use crate::inflight::{Entry, Inflight};

/// What the connection must do next.
#[derive(Debug)]
pub enum Action {
    /// Write this response (then close if it says so).
    Write(HttpResponse),
    /// Turn this connection into a legacy SSE stream.
    OpenLegacy(LegacyOpen),
    /// The response was streamed as it was produced (an SSE answer whose body ends with the
    /// connection): close the connection.
    Streamed,
    /// Turn this connection into a dashboard feed (`GET /api/events`; the span id of its
    /// head): write [`feed_head`](bernstein_core::transport::http::operator::feed_head), then
    /// hand the sink to [`HttpService::open_feed`].
    OpenFeed(String),
    /// The answer waits for the ledger: keep the connection aside (no thread needed) and
    /// [`HttpService::resume`] it when [`Waiting::look`] says so.
    Wait(Box<Waiting>),
}

/// Where the bytes of a response streamed while it is served go (the connection's socket);
/// an `Err` means the peer is gone.
pub type Early<'a> = &'a dyn Fn(&[u8]) -> io::Result<()>;

/// Where the events of one legacy SSE stream go.
pub trait EventSink: Send + Sync {
    /// Writes whole events; an `Err` means the stream is gone.
    fn send(&self, events: &[u8]) -> io::Result<()>;
    /// Whether the peer still holds the stream open (best effort).
    fn is_open(&self) -> bool;
    /// Writes a keep-alive comment without blocking the caller for long; an `Err` means the
    /// stream is gone.
    fn keep_alive(&self) -> io::Result<()> {
        self.send(sse::KEEPALIVE)
    }
    /// Writes `farewell` (best effort) and closes the stream.
    fn close(&self, farewell: &[u8]);
}

struct StreamEntry {
    sink: Arc<dyn EventSink>,
    /// The revision `initialize` negotiated on this stream (a transport fact, like stdio's).
    version: Option<String>,
    clock: StreamClock,
    /// The ids of the stream's events (unique within it and across streams).
    ids: EventIds,
}

/// Open legacy SSE streams by token.
pub struct LegacyStreams {
    max: usize,
    keepalive: Duration,
    idle: Duration,
    streams: Mutex<HashMap<String, StreamEntry>>,
}

impl std::fmt::Debug for LegacyStreams {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LegacyStreams")
            .field("max", &self.max)
            .field("open", &self.len())
            .finish()
    }
}

impl LegacyStreams {
    /// A registry of at most `limits.max_legacy_streams` streams, with the limits' keep-alive
    /// interval and idle timeout.
    pub fn new(limits: &HttpLimits) -> LegacyStreams {
        LegacyStreams {
            max: limits.max_legacy_streams,
            keepalive: limits.sse_keepalive,
            idle: limits.sse_idle,
            streams: Mutex::new(HashMap::new()),
        }
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<String, StreamEntry>> {
        // A panic while holding this lock cannot leave the map inconsistent (single inserts
        // and removes), so a poisoned lock is still usable.
        self.streams.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Registers a stream opened at `now` (monotonic, see [`HttpService::clock`]) under a fresh
    /// unguessable token; `None` when at capacity.
    pub fn register(&self, sink: Arc<dyn EventSink>, now: Duration) -> io::Result<Option<String>> {
        let token = new_token()?;
        let mut map = self.lock();
        if map.len() >= self.max {
            return Ok(None);
        }
        map.insert(
            token.clone(),
            StreamEntry {
                sink,
                version: None,
                clock: StreamClock::new(now, self.keepalive, self.idle),
                ids: EventIds::legacy(&token),
            },
        );
        Ok(Some(token))
    }

    pub fn remove(&self, token: &str) {
        self.lock().remove(token);
    }

    pub fn len(&self) -> usize {
        self.lock().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn get(&self, token: &str) -> Option<(Arc<dyn EventSink>, Option<String>)> {
        self.lock()
            .get(token)
            .map(|e| (e.sink.clone(), e.version.clone()))
    }

    /// The events of `served` for message `m`, numbered in the stream of `m`'s token; `None`
    /// when that stream is gone.
    fn events(&self, m: &LegacyMessage, served: ServedParts<'_>) -> Option<Vec<u8>> {
        let mut map = self.lock();
        let entry = map.get_mut(&m.token)?;
        Some(m.events(&mut entry.ids, served))
    }

    fn set_version(&self, token: &str, version: String) {
        if let Some(e) = self.lock().get_mut(token) {
            e.version = Some(version);
        }
    }

    /// Fires the streams' due timers at `now`: writes keep-alives (forgetting the streams whose
    /// peer is gone) and closes the idle ones. Returns when the next timer is due.
    pub fn tick(&self, now: Duration) -> Option<Duration> {
        let mut due = Vec::new();
        let mut next: Option<Duration> = None;
        {
            let mut map = self.lock();
            for (token, entry) in map.iter_mut() {
                if let Some(tick) = entry.clock.handle_timeout(now) {
                    due.push((token.clone(), entry.sink.clone(), tick));
                }
                let at = entry.clock.poll_timeout();
                next = Some(next.map_or(at, |n| n.min(at)));
            }
            for (token, _, tick) in &due {
                if *tick == StreamTick::Close {
                    map.remove(token);
                }
            }
        }
        for (token, sink, tick) in due {
            match tick {
                StreamTick::KeepAlive => {
                    if !sink.is_open() || sink.keep_alive().is_err() {
                        self.remove(&token);
                    }
                }
                StreamTick::Close => {
                    bernstein_store_file::log_line!(
                        "bernstein http: closed a legacy SSE stream: no message for {:?}",
                        self.idle
                    );
                    sink.close(sse::IDLE_CLOSE);
                }
            }
        }
        next
    }

    fn message_started(&self, token: &str, now: Duration) {
        if let Some(e) = self.lock().get_mut(token) {
            e.clock.message_started(now);
        }
    }

    fn message_finished(&self, token: &str, now: Duration) {
        if let Some(e) = self.lock().get_mut(token) {
            e.clock.message_finished(now);
        }
    }

    /// Forgets every stream (shutdown); dropping the sinks closes their connections.
    pub fn clear(&self) {
        self.lock().clear();
    }
}

/// 128 bits from the OS, hex: a stream token nobody can guess.
fn new_token() -> io::Result<String> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).map_err(|e| io::Error::other(format!("OS randomness: {e}")))?;
    Ok(hex::encode(bytes))
}

/// Everything a connection needs to serve requests.
pub struct HttpService {
    pub server: Arc<Server>,
    pub backend: Backend,
    pub policy: HttpPolicy,
    pub options: HttpOptions,
    pub legacy: LegacyStreams,
    /// Requests in flight, for `notifications/cancelled` from another connection.
    pub inflight: Inflight,
    /// The dashboards' live feeds.
    pub feeds: Feeds,
    /// Requests whose answer waits for the ledger, put aside by their connections.
    pub waits: WaitRoom,
    /// Origin of the monotonic time the stream timers run on.
    started: Instant,
}

impl std::fmt::Debug for HttpService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpService")
            .field("policy", &self.policy)
            .field("legacy", &self.legacy)
            .finish()
    }
}

impl HttpService {
    pub fn new(
        server: Arc<Server>,
        backend: Backend,
        policy: HttpPolicy,
        options: HttpOptions,
    ) -> HttpService {
        // A waiting answer holds no thread (see `WaitRoom`), only its connection and memory.
        let limits = &options.limits;
        backend
            .admission
            .limit_waits(limits.max_waits, limits.max_waits_per_peer);
        let legacy = LegacyStreams::new(&options.limits);
        let waits = WaitRoom::new(backend.clone());
        let feeds = Feeds::new(options.limits.max_legacy_streams);
        // The tools' `Mcp-Param-*` bindings (SEP-2243), read once from their input schemas.
        let policy = policy.with_param_headers(ParamHeaders::of(&server));
        HttpService {
            server,
            backend,
            policy,
            options,
            legacy,
            inflight: Inflight::default(),
            feeds,
            waits,
            started: Instant::now(),
        }
    }

    /// Registers a feed whose head was written to `sink`; `false` when at capacity.
    pub fn open_feed(&self, sink: Arc<dyn EventSink>) -> bool {
        self.feeds.open(&self.backend.store, sink)
    }

    /// Monotonic time since the service started: the `now` of the stream timers.
    pub fn clock(&self) -> Duration {
        self.started.elapsed()
    }

    /// Fires the legacy streams' due timers; returns how long the runtime may sleep before the
    /// next call (at most `max`, so streams opened meanwhile are not overlooked).
    pub fn tick_streams(&self, max: Duration) -> Duration {
        let now = self.clock();
        let next = self
            .legacy
            .tick(now)
            .map_or(max, |at| at.saturating_sub(now));
        next.clamp(Duration::from_millis(1), max)
    }

    /// Routes a request (pure and cheap: safe on an async executor).
    pub fn route(&self, request: Request, peer_loopback: bool) -> Decision {
        self.policy
            .route(request, peer_loopback, self.backend.clock.now())
    }

    /// Routes and serves a request from `peer` (may block on the ledger). `gone` tells
    /// whether the peer closed its connection meanwhile (which cancels a waiting request);
    /// `early` writes the bytes of a response streamed while it is served.
    pub fn handle(
        &self,
        request: Request,
        peer: IpAddr,
        gone: &dyn Fn() -> bool,
        early: Early<'_>,
    ) -> Action {
        let loopback = peer.to_canonical().is_loopback();
        self.act(self.route(request, loopback), peer, gone, early)
    }

    /// Carries out a routing decision for a request from `peer` (may block on the ledger).
    pub fn act(
        &self,
        decision: Decision,
        peer: IpAddr,
        gone: &dyn Fn() -> bool,
        early: Early<'_>,
    ) -> Action {
        match decision {
            Decision::Respond(r) => Action::Write(r),
            Decision::Mcp(x) => self.serve_mcp(x, peer, gone, early),
            Decision::OpenLegacyStream(open) => Action::OpenLegacy(open),
            Decision::LegacyMessage(m) => self.serve_legacy(m, peer),
            Decision::Operator(req) => self.serve_operator(req),
            other => {
                bernstein_store_file::log_line!(
                    "bernstein http: unhandled routing decision {other:?}"
                );
                let span = route_span_id("500", "unhandled");
                Action::Write(HttpResponse::problem(
                    Status::INTERNAL_SERVER_ERROR,
                    &span,
                    "internal",
                    "unhandled request",
                ))
            }
        }
    }

    /// `POST /mcp`: serve the body. A client that accepts SSE gets its answer streamed: the
    /// head and each notification as soon as it is due (a long poll's progress ticks while it
    /// still waits), the reply last ([`Action::Streamed`]); otherwise the core shapes the
    /// whole HTTP response at the end. An answer that must wait comes back as
    /// [`Action::Wait`].
    pub fn serve_mcp(
        &self,
        x: McpExchange,
        peer: IpAddr,
        gone: &dyn Fn() -> bool,
        early: Early<'_>,
    ) -> Action {
        let (body, facts) = (x.body.clone(), x.facts.clone());
        let answer = Answer::Mcp {
            x,
            stream: RefCell::new(None),
        };
        self.resume(self.start(body, facts, peer, answer), gone, early)
    }

    /// `POST /messages?stream=…`: serve the body and put its notifications (as they happen)
    /// and its reply on the stream; the POST is answered once the reply is on it.
    pub fn serve_legacy(&self, m: LegacyMessage, peer: IpAddr) -> Action {
        let Some((sink, version)) = self.legacy.get(&m.token).filter(|(s, _)| s.is_open()) else {
            self.legacy.remove(&m.token);
            return Action::Write(m.stream_gone());
        };
        let mut facts = m.facts.clone();
        if facts.protocol_version.is_none() {
            facts.protocol_version = version;
        }
        let span = m.span(request_span_id(&m.body).as_deref());
        self.legacy.message_started(&m.token, self.clock());
        let body = m.body.clone();
        let answer = Answer::Legacy { m, sink, span };
        self.resume(
            self.start(body, facts, peer, answer),
            &|| false,
            &|_| Ok(()),
        )
    }

    /// Registers the request for cancellation (a `notifications/cancelled` first cancels the
    /// request it names) and starts serving it; its wait counts against `peer`'s share.
    fn start(
        &self,
        body: Vec<u8>,
        facts: TransportFacts,
        peer: IpAddr,
        answer: Answer,
    ) -> Box<Waiting> {
        self.inflight.cancel_named(&body);
        let entry = self.inflight.enter_message(&body);
        let job = OwnedMessage {
            server: self.server.clone(),
            bytes: body,
            facts,
        };
        Box::new(Waiting {
            drive: Drive::new(&self.backend.env(), job, &DEFAULT_WAIT)
                .for_peer(peer.to_canonical()),
            entry,
            answer,
            broken: Cell::new(false),
        })
    }

    /// Serves a request until its answer, or until it waits for the ledger again
    /// ([`Action::Wait`]: park it, and resume it when [`Waiting::look`] says so). `gone` tells
    /// whether the peer closed its connection (which cancels a waiting request); `early`
    /// writes the bytes of a response streamed while it is served.
    pub fn resume(&self, mut w: Box<Waiting>, gone: &dyn Fn() -> bool, early: Early<'_>) -> Action {
        let env = self.backend.env();
        let step = {
            let Waiting {
                drive,
                entry,
                answer,
                broken,
            } = &mut *w;
            let stop = || stop_rule(entry.as_ref(), answer, broken, gone);
            let notify = |n: &[u8]| self.notify(answer, broken, n, early);
            drive.run(&env, &stop, &notify)
        };
        let served = match step {
            Step::Asleep => return Action::Wait(w),
            Step::Done(Ok(finished)) => finished.served,
            Step::Done(Err(e)) => {
                bernstein_store_file::log_line!("bernstein http: ledger error: {e}");
                Served {
                    response: Some(
                        self.server
                            .storage_failure_reply(w.answer.body(), &e.to_string()),
                    ),
                    ..Served::default()
                }
            }
        };
        let Waiting { answer, broken, .. } = *w;
        match answer {
            Answer::Mcp { x, stream } => match stream.into_inner() {
                None => Action::Write(x.reply(parts(&served))),
                Some(mut s) => {
                    if let Some(reply) = &served.response
                        && !broken.get()
                    {
                        let _ = early(&s.event(reply));
                    }
                    Action::Streamed
                }
            },
            Answer::Legacy { m, sink, .. } => {
                self.legacy.message_finished(&m.token, self.clock());
                if let Some(v) = &served.negotiated_version {
                    self.legacy.set_version(&m.token, v.clone());
                }
                if !broken.get() {
                    self.put_legacy(&m, &sink, &broken, parts(&served));
                }
                if broken.get() {
                    self.legacy.remove(&m.token);
                    return Action::Write(m.stream_gone());
                }
                Action::Write(m.accepted(served.span_id.as_deref()))
            }
        }
    }

    /// Sends a notification of a request being served: on the answer's SSE stream (opened by
    /// the first one; a client that takes JSON only cannot receive notifications), or on its
    /// legacy stream.
    fn notify(&self, answer: &Answer, broken: &Cell<bool>, n: &[u8], early: Early<'_>) {
        match answer {
            Answer::Mcp { x, stream } => {
                let mut open = stream.borrow_mut();
                if open.is_none() {
                    let span = request_span_id(&x.body).unwrap_or_else(|| body_span_id(&x.body));
                    let Some(s) = StreamedReply::open(x, &span) else {
                        return;
                    };
                    broken.set(early(&s.head()).is_err());
                    *open = Some(s);
                }
                if let Some(s) = open.as_mut() {
                    let event = s.event(n);
                    if !broken.get() && early(&event).is_err() {
                        broken.set(true);
                    }
                }
            }
            Answer::Legacy { m, sink, span } => {
                let served = ServedParts {
                    notifications: &[n.to_vec()],
                    response: None,
                    span_id: Some(span),
                };
                self.put_legacy(m, sink, broken, served);
            }
        }
    }

    fn put_legacy(
        &self,
        m: &LegacyMessage,
        sink: &Arc<dyn EventSink>,
        broken: &Cell<bool>,
        served: ServedParts<'_>,
    ) {
        let sent = self
            .legacy
            .events(m, served)
            .is_some_and(|events| events.is_empty() || sink.send(&events).is_ok());
        if !sent {
            broken.set(true);
        }
    }
}

/// A request whose answer waits for the ledger, put aside by its connection
/// ([`Action::Wait`]): it holds no thread while it waits.
pub struct Waiting {
    drive: Drive<OwnedMessage<Projection>>,
    entry: Option<Entry>,
    answer: Answer,
    /// Whether the stream the answer goes to broke (the peer left).
    broken: Cell<bool>,
}

impl std::fmt::Debug for Waiting {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Waiting")
            .field("drive", &self.drive)
            .finish_non_exhaustive()
    }
}

impl Waiting {
    /// When the request's nap ends: [`Waiting::look`] is due then.
    pub fn wakes_at(&self) -> Option<Instant> {
        self.drive.wakes_at()
    }

    /// At the end of the nap, with the ledger as last read: whether the request sleeps
    /// on, or must be resumed ([`HttpService::resume`]) on a thread that may block. `gone`
    /// tells whether the peer left; `settle` answers now (shutdown).
    pub fn look(
        &mut self,
        env: &Env<'_>,
        head: &Snapshot,
        gone: &dyn Fn() -> bool,
        settle: bool,
    ) -> Look {
        let Waiting {
            drive,
            entry,
            answer,
            broken,
        } = self;
        let stop = || {
            if settle {
                return Some(Stop::Settle);
            }
            stop_rule(entry.as_ref(), answer, broken, gone)
        };
        drive.look(env, head, &stop)
    }
}

/// Where a waiting request's answer goes.
enum Answer {
    /// The response to a `POST /mcp` (streamed once a notification opened the stream).
    Mcp {
        x: McpExchange,
        stream: RefCell<Option<StreamedReply>>,
    },
    /// A legacy stream (`POST /messages?stream=…`).
    Legacy {
        m: LegacyMessage,
        sink: Arc<dyn EventSink>,
        span: String,
    },
}

impl Answer {
    fn body(&self) -> &[u8] {
        match self {
            Answer::Mcp { x, .. } => &x.body,
            Answer::Legacy { m, .. } => &m.body,
        }
    }
}

/// A waiting request ends as cancelled when a cancellation names it, or the peer its answer
/// goes to left (the stream broke, the connection or the legacy stream closed).
fn stop_rule(
    entry: Option<&Entry>,
    answer: &Answer,
    broken: &Cell<bool>,
    gone: &dyn Fn() -> bool,
) -> Option<Stop> {
    // A legacy answer goes to its stream, not to the POST that carried the message.
    let left = match answer {
        Answer::Mcp { .. } => gone(),
        Answer::Legacy { sink, .. } => !sink.is_open(),
    };
    let cancelled = entry.is_some_and(Entry::cancelled) || broken.get() || left;
    cancelled.then_some(Stop::Cancel)
}

fn parts(served: &Served) -> ServedParts<'_> {
    ServedParts {
        notifications: &served.notifications,
        response: served.response.as_deref(),
        span_id: served.span_id.as_deref(),
    }
}

#[cfg(test)]
mod tests;
