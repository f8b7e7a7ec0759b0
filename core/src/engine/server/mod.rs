//! One engine per server: every connection and every request of it, as one value driven by
//! [`Engine::handle_input`] and drained with [`Engine::poll_output`] and
//! [`Engine::poll_timeout`] (the shape of quinn-proto's `Endpoint` and str0m's `Rtc`).
//!
//! [`Input`] is the whole list of what the world can tell it: a connection opened, bytes
//! arrived on it, its peer is done, what the runtime has not written of it yet; a snapshot was read, an append committed or conflicted,
//! what was written is durable, a host request was answered, the head was looked at; an
//! operator route was answered; the OAuth issuer's keys came; an opaque token's introspection
//! came; the caller of a submitted job
//! stops waiting; time passed; the server is shutting down. [`Output`] is the whole list of
//! what it can ask for: send bytes on a connection, close it, read a snapshot,
//! compare-and-append, wait until durable, perform a host request, look at the head, answer an
//! operator route, fetch the issuer's keys ([`keys`]), introspect an opaque access token
//! ([`introspect`]), log a line, hand a submitted job's answer
//! to its caller; and [`Engine::poll_timeout`] says when to wake it. Besides
//! connections, a caller may submit a job ([`Engine::submit`]: an operator's command, an
//! in-process client's message), served by the same request state machine.
//!
//! What lives here, as explicit state: per connection its framing (stdio lines, HTTP/1.1), its
//! read and stream clocks, the revision a stdio peer negotiated and the output it may not have
//! written yet (its backlog: over [`HttpLimits::max_unsent_bytes`](crate::transport::http::HttpLimits::max_unsent_bytes) nothing new starts on it);
//! per request its state
//! machine ([`Request`]: rounds, re-runs on conflict, host rounds, the wait and its deadline),
//! where its answer goes (a stdio line, a JSON or SSE answer, a legacy stream), its turn, its
//! wait slot and its cancellation entry; per server the turn ([`Turns`]), the requests a
//! `notifications/cancelled` reaches ([`Cancels`]), the legacy streams by token, the
//! dashboards' feeds and the timers; with the process's other engines
//! ([`Shared`](super::shared::Shared), `engines.rs`) the connection and wait caps and the
//! [`Counters`]. Time only ever arrives as an argument; the engine never blocks and performs
//! no IO.

mod asks;
mod conns;
mod engines;
mod entropy;
mod introspect;
mod keys;
mod requests;
mod subs;
mod syncs;
mod timers;

#[cfg(test)]
mod tests;

use core::net::{IpAddr, SocketAddr};
use core::time::Duration;
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::Arc;

use self::entropy::Entropy;
use self::timers::{Due, Timers};
use super::counters::Counters;
use super::job::Work;
use super::request::{Finished, Request};
use super::shared::{Notice, Shared, Sharing};
use super::span::RequestSpan;
use super::subscriptions::{SubId, SubscriptionLimits, Subscriptions};
use super::turns::{Ticket, Turns};
use super::{Cancels, Moment, Stop, WaitPolicy};
use crate::ledger::{Append, AppendResult, Fold, LedgerPosition, Snapshot, StoreError};
use crate::protocol::host::{HostReply, HostRequest};
use crate::protocol::input::ClientCaps;
use crate::protocol::{Server, TransportFacts, Wait};
use crate::transport::LineFramer;
use crate::transport::http::exchange::{LegacyMessage, McpExchange, StreamedReply};
use crate::transport::http::introspection::{IntrospectRequest, TokenDigest};
use crate::transport::http::read_clock::ReadClock;
use crate::transport::http::sse::EventIds;
use crate::transport::http::tool_scopes::ToolScopes;
use crate::transport::http::{
    HttpOptions, HttpPolicy, HttpResponse, OperatorRequest, ParamHeaders, RequestParser,
    StreamClock,
};

/// A connection, named by the runtime. An id is never reused while the engine knows it: the
/// engine forgets a connection when it asks to close it or is told it is gone.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ConnId(pub u64);

pub use self::engines::Handed;

/// The connection of a stdio server's one peer ([`Engine::stdio`]).
pub const STDIO: ConnId = ConnId(0);

/// A request being served, named by the engine.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ReqId(u64);

/// A job a caller submitted ([`Engine::submit`]), named by the engine; its answer comes as
/// [`Output::Finished`] with the same id.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct JobId(u64);

/// Who is at the other end of a new connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Peer {
    /// The stdio peer: newline-delimited JSON-RPC.
    Stdio,
    /// An HTTP client at this address.
    Http(SocketAddr),
}

/// What the world tells the engine. Each answer names the request or connection it answers.
#[derive(Debug)]
pub enum Input<'a, F> {
    /// A connection was opened (the runtime accepted it).
    Opened { conn: ConnId, peer: Peer },
    /// Bytes arrived on a connection.
    Received { conn: ConnId, bytes: &'a [u8] },
    /// A TLS handshake with `peer` failed (the runtime closed that socket; it was never a
    /// connection of the engine's): a line about it, within the budget of such lines.
    TlsFailed { peer: SocketAddr, why: &'a str },
    /// The peer will send nothing more: end of input (stdio), a closed or broken connection
    /// (HTTP: the runtime no longer writes to it either once a write failed or timed out; a
    /// connection [`Engine::blocked_on_output`] names is closed once it serves nothing).
    Closed { conn: ConnId },
    /// How many bytes the engine asked to send on an HTTP connection the runtime has not
    /// written to its socket yet. Reported for each connection [`Engine::blocked_on_output`]
    /// names, as soon as this is at or under [`Engine::max_unsent`] and every
    /// [`Output::Send`] taken so far is performed (stdio writes block: nothing to report).
    Drained { conn: ConnId, unsent: usize },
    /// [`Output::ReadSnapshot`]: the store's projection now (records not yet durable may be
    /// in it: the request settles before it answers).
    Snapshot {
        req: ReqId,
        snapshot: &'a Snapshot<F>,
    },
    /// [`Output::Append`]: committed (durable only after a settle) or lost to another writer.
    Appended { req: ReqId, result: AppendResult },
    /// [`Output::Sync`]: every record up to seq `durable` is durable (at least the sync's
    /// `upto`; more when the fsync also covered records written after it was asked for).
    Synced { durable: u64 },
    /// [`Output::Sync`] failed: nothing since the last sync can be proven durable.
    SyncFailed(StoreError),
    /// [`Output::Host`]: what the host did.
    Host { req: ReqId, reply: HostReply },
    /// Any store output of a request failed: it is answered with the failure.
    Failed { req: ReqId, error: StoreError },
    /// [`Output::Look`]: the head as it stands, every record in it durable.
    Head(&'a Snapshot<F>),
    /// [`Output::Look`] failed: the waits look again at their next nap.
    HeadFailed(StoreError),
    /// [`Output::Operator`]: the response to write.
    Operator {
        conn: ConnId,
        response: HttpResponse,
    },
    /// [`Output::FetchKeys`]: the issuer's JWKS document, or why it could not be fetched
    /// (naming no token).
    Keys(Result<serde_json::Value, String>),
    /// [`Output::Introspect`]: the introspection endpoint's JSON answer for the token of this
    /// digest, or why there is none (naming no token).
    Introspected {
        digest: TokenDigest,
        result: Result<serde_json::Value, String>,
    },
    /// The caller of a submitted job stops waiting for the ledger: a pending answer of it is
    /// given at once, as it stands ([`Stop::Settle`]) or cancelled ([`Stop::Cancel`]). A job
    /// that never waits (an operator's command) is told this right after it is submitted.
    StopJob { job: JobId, why: Stop },
    /// The store heard that the ledger moved past what this engine knows (another instance's
    /// commit: `Store::heard_past`): the waits and subscriptions look at the head now instead
    /// of at their next look.
    HeadMoved,
    /// What another engine of this process told the others ([`Output::Tell`]).
    Told(Notice),
    /// Another engine of this process handed this connection over ([`Output::HandOff`]): serve
    /// it from now on, starting with the request it routed.
    Adopted { conn: ConnId, handed: Box<Handed> },
    /// Time passed: whatever [`Engine::poll_timeout`] named may be due.
    Tick,
    /// Stop: waiting answers are sent as they stand, streams and feeds close, and no
    /// connection is served after its current request.
    Shutdown,
}

/// What the engine asks of the world, in order.
#[derive(Debug)]
pub enum Output {
    /// Write these bytes on the connection (after what was asked before).
    Send { conn: ConnId, bytes: Vec<u8> },
    /// Close the connection once what was sent is written; `finish`: half-close first and
    /// read what the peer still sends for a moment, so that closing does not reset a
    /// connection whose response the peer has not read yet. The engine has forgotten it.
    Close { conn: ConnId, finish: bool },
    /// Read the store's snapshot (records not yet durable included) →
    /// [`Input::Snapshot`].
    ReadSnapshot { req: ReqId },
    /// Compare-and-append → [`Input::Appended`].
    Append { req: ReqId, append: Append },
    /// Make every record up to seq `upto` durable, the highest this engine has seen (one fsync
    /// for every request waiting: group commit, see `syncs.rs`) → [`Input::Synced`]. At most
    /// one is asked at a time; `waiting` is how many requests wait for it (a runtime may
    /// perform a sync that one request waits for on its own thread, and hand a larger one to
    /// another so that it serves meanwhile).
    Sync { waiting: usize, upto: u64 },
    /// Perform a host request → [`Input::Host`].
    Host { req: ReqId, request: HostRequest },
    /// Read the head as it is durable → [`Input::Head`].
    Look,
    /// Answer an operator route (dashboard, metrics, probes) → [`Input::Operator`].
    Operator {
        conn: ConnId,
        request: OperatorRequest,
    },
    /// Fetch the OAuth issuer's signing keys (its JWKS, at `jwks_url` or where the issuer's
    /// metadata says) → [`Input::Keys`]. At most one is asked at a time, and at most one per
    /// [`keys::REFETCH_AFTER`].
    FetchKeys {
        issuer: String,
        jwks_url: Option<String>,
    },
    /// Introspect an opaque access token (RFC 7662) → [`Input::Introspected`] with its digest.
    /// One per token at a time, at most [`introspect::MAX_IN_FLIGHT`] at once.
    Introspect(Box<IntrospectRequest>),
    /// A line for the server's log.
    Log(String),
    /// A submitted job ended ([`Engine::submit`]): its answer, whose records are durable
    /// (notifications in [`Served::notifications`], in order, before the response), or the
    /// store failure that ended it (nothing it ran was acknowledged; a failure of the sync
    /// after its append leaves its records written but not known durable).
    ///
    /// [`Served::notifications`]: super::Served::notifications
    Finished {
        job: JobId,
        result: Result<Box<Finished>, StoreError>,
    },
    /// A request began: what names its span (only while [`Engine::trace_requests`] is on;
    /// before the request's first store output).
    Began { req: ReqId, span: Box<RequestSpan> },
    /// A request began with [`Output::Began`] ended: answered (`error`: the JSON-RPC error
    /// code it was answered with) or ended by a store failure (`failed`).
    Ended {
        req: ReqId,
        error: Option<i64>,
        failed: bool,
    },
    /// Tell every other engine of this process ([`Input::Told`]); never asked of an engine
    /// alone.
    Tell(Notice),
    /// Move this connection to engine [`HOME`](super::shared::HOME) and give it [`Input::Adopted`] with
    /// `handed`: its request carries state that engine keeps. The socket goes as it is (what
    /// was sent on it and not yet written included); this engine has forgotten it.
    HandOff { conn: ConnId, handed: Box<Handed> },
}

/// How a server's engine is configured.
#[derive(Clone, Debug)]
pub struct EngineConfig {
    /// How long and how often pending answers wait.
    pub wait: WaitPolicy,
    /// Most answers waiting at once, and for one peer address (stdio: one peer).
    pub max_waits: usize,
    pub max_waits_per_peer: usize,
    /// The HTTP side: its routing policy and options (limits, whether MCP is served).
    pub http: Option<HttpConfig>,
    /// Secret randomness from the OS: stream tokens and jitter are drawn from it.
    pub seed: [u8; 32],
    /// Most resources subscribed to per connection and in all.
    pub subscriptions: SubscriptionLimits,
    /// Which of its process's engines this is, and what they share.
    pub sharing: Sharing,
}

/// What an HTTP server's engine needs besides the catalogue.
#[derive(Clone, Debug)]
pub struct HttpConfig {
    pub policy: HttpPolicy,
    pub options: HttpOptions,
}

/// Most answers a stdio connection lets wait at once; beyond, a wait is refused with the
/// engine's `too_many_waits`.
pub const STDIO_MAX_WAITS: usize = 64;

impl EngineConfig {
    /// A stdio server's engine.
    pub fn stdio(seed: [u8; 32]) -> EngineConfig {
        EngineConfig {
            wait: super::DEFAULT_WAIT,
            max_waits: STDIO_MAX_WAITS,
            max_waits_per_peer: STDIO_MAX_WAITS,
            http: None,
            seed,
            subscriptions: SubscriptionLimits::default(),
            sharing: Shared::alone(),
        }
    }

    /// The engine of submitted jobs only ([`Engine::submit`]; no connection): waits are not
    /// capped (each waiting job holds its caller, not a connection).
    pub fn jobs(wait: WaitPolicy, seed: [u8; 32]) -> EngineConfig {
        EngineConfig {
            wait,
            max_waits: usize::MAX,
            max_waits_per_peer: usize::MAX,
            http: None,
            seed,
            subscriptions: SubscriptionLimits::default(),
            sharing: Shared::alone(),
        }
    }

    /// An HTTP server's engine.
    pub fn http(policy: HttpPolicy, options: HttpOptions, seed: [u8; 32]) -> EngineConfig {
        EngineConfig {
            wait: super::DEFAULT_WAIT,
            max_waits: options.limits.max_waits,
            max_waits_per_peer: options.limits.max_waits_per_peer,
            subscriptions: SubscriptionLimits {
                per_connection: options.limits.max_subscriptions_per_connection,
                total: options.limits.max_subscriptions,
            },
            http: Some(HttpConfig { policy, options }),
            seed,
            sharing: Shared::alone(),
        }
    }
}

/// A server's connections and requests (see the module docs).
pub struct Engine<F: Fold> {
    server: Arc<Server<F>>,
    wait: WaitPolicy,
    http: Option<HttpConfig>,
    now: Moment,
    conns: BTreeMap<ConnId, Conn>,
    reqs: BTreeMap<ReqId, Req<F>>,
    issued: u64,
    turns: Turns,
    /// Requests queued for the turn, by ticket.
    queued: BTreeMap<Ticket, ReqId>,
    cancels: Cancels,
    /// Open legacy SSE streams by token.
    legacy: BTreeMap<String, ConnId>,
    /// The dashboards' feeds among `conns`: telling them the head costs a look at each of
    /// them, not at every connection (thousands may be held by long polls).
    feeds: BTreeSet<ConnId>,
    /// Most bytes a connection may have unsent ([`HttpLimits::max_unsent_bytes`](crate::transport::http::HttpLimits::max_unsent_bytes); no bound
    /// on stdio, whose writes block).
    max_unsent: usize,
    /// The connections over it: nothing new starts on them until the runtime reports them
    /// drained ([`Input::Drained`]).
    blocked: BTreeSet<ConnId>,
    /// Messages POSTed for a legacy stream over the bound, waiting for it to drain.
    parked: Vec<Parked>,
    /// Napping requests by the stream their answer watches.
    watching: BTreeMap<String, BTreeSet<ReqId>>,
    /// Requests whose nap ended, waiting for the head ([`Output::Look`]).
    looking: Vec<ReqId>,
    look_asked: bool,
    /// Set by [`Input::HeadMoved`]: the next look also ends every nap whose wait it answers.
    heard_move: bool,
    /// The newest head known durable, and when the feeds look next.
    durable: Option<LedgerPosition>,
    feeds_armed: Option<Duration>,
    timers: Timers,
    /// Group commit: the requests waiting for the next fsync, and when to ask for it.
    syncs: syncs::Syncs,
    /// Requests with outputs to take.
    ready: VecDeque<ReqId>,
    /// Whether the request being pumped goes on after an input (see `ask_store`).
    continuing: bool,
    /// Requests with a store output (snapshot, append, host) out: they are working towards
    /// their wait for the next sync.
    working: usize,
    out: VecDeque<Output>,
    /// Which engine of the process this is; the caps and counters it shares.
    sharing: Sharing,
    entropy: Entropy,
    /// The OAuth issuer's keys and the requests waiting for them.
    keys: keys::Keys,
    /// Introspection answers and the requests waiting for one.
    introspection: introspect::Introspections,
    /// Questions out to handshake-era clients ([`asks`]).
    asks: asks::Asks,
    /// The log levels of handshake-era sessions over streamable HTTP.
    session_levels: crate::engine::session_levels::SessionLevels,
    shutting_down: bool,
    /// When the shutdown's grace ends (the engine's clock), once one began.
    grace_ends: Option<Duration>,
    /// Whether requests are announced and ended for a runtime that traces them.
    traced: bool,
    /// The resource subscriptions held (`subs.rs`), and the SSE answers that became
    /// `subscriptions/listen` streams.
    subs: Subscriptions<ConnId>,
    listen_streams: BTreeMap<SubId, StreamedReply>,
    /// Requests whose append wrote a stream a subscription renders from: the head is looked
    /// at once their records are durable.
    subs_due: BTreeSet<ReqId>,
}

impl<F: Fold> std::fmt::Debug for Engine<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine")
            .field("conns", &self.conns.len())
            .field("requests", &self.reqs.len())
            .field("shutting_down", &self.shutting_down)
            .finish_non_exhaustive()
    }
}

/// Where a shutdown stands ([`Engine::drain`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Drain {
    /// Requests are still being answered, within the grace.
    Answering,
    /// Every request was answered: stop once the answers are written.
    Answered,
    /// The grace ended with requests unanswered: stop now.
    Overdue,
}

/// How often the feeds look at the head while any is open (another process may move it).
const FEED_LOOK: Duration = Duration::from_millis(250);
/// How often an idle feed gets a keep-alive comment.
const FEED_KEEPALIVE: Duration = Duration::from_secs(15);

impl<F: Fold> Engine<F> {
    /// The engine of a server of `server`'s catalogue, started at `now`.
    pub fn new(server: Arc<Server<F>>, config: EngineConfig, now: Moment) -> Engine<F> {
        let sharing = config.sharing;
        let shared = &sharing.shared;
        shared
            .waits()
            .limit(config.max_waits, config.max_waits_per_peer);
        shared.counters(sharing.index).started_at = now.wall;
        let subscribed = shared.subscriptions();
        // The tools' `Mcp-Param-*` bindings (SEP-2243), read once from their input schemas.
        let max_unsent = config
            .http
            .as_ref()
            .map_or(usize::MAX, |h| h.options.limits.max_unsent_bytes);
        let http = config.http.map(|h| HttpConfig {
            policy: h
                .policy
                .with_param_headers(ParamHeaders::of(&server))
                .with_tool_scopes(ToolScopes::of(&server)),
            options: h.options,
        });
        Engine {
            server,
            wait: config.wait,
            http,
            now,
            conns: BTreeMap::new(),
            reqs: BTreeMap::new(),
            issued: 0,
            turns: Turns::new(),
            queued: BTreeMap::new(),
            cancels: Cancels::new(),
            feeds: BTreeSet::new(),
            max_unsent,
            blocked: BTreeSet::new(),
            parked: Vec::new(),
            legacy: BTreeMap::new(),
            watching: BTreeMap::new(),
            looking: Vec::new(),
            look_asked: false,
            heard_move: false,
            durable: None,
            feeds_armed: None,
            timers: Timers::default(),
            syncs: syncs::Syncs::default(),
            ready: VecDeque::new(),
            continuing: false,
            working: 0,
            out: VecDeque::new(),
            sharing,
            entropy: Entropy::new(config.seed),
            keys: keys::Keys::default(),
            introspection: introspect::Introspections::default(),
            asks: asks::Asks::default(),
            session_levels: crate::engine::session_levels::SessionLevels::default(),
            shutting_down: false,
            grace_ends: None,
            traced: false,
            subs: Subscriptions::counted_in(config.subscriptions, subscribed),
            listen_streams: BTreeMap::new(),
            subs_due: BTreeSet::new(),
        }
    }

    /// Whether each request is announced ([`Output::Began`]) and ended ([`Output::Ended`]) for
    /// a runtime that traces; off by default (then neither is ever output).
    pub fn trace_requests(&mut self, on: bool) {
        self.traced = on;
    }

    /// See [`Engine::trace_requests`].
    pub fn traces_requests(&self) -> bool {
        self.traced
    }

    /// The engine of a stdio server, its one peer connected as [`STDIO`].
    pub fn stdio(server: Arc<Server<F>>, seed: [u8; 32], now: Moment) -> Engine<F> {
        let mut engine = Engine::new(server, EngineConfig::stdio(seed), now);
        engine.handle_input(
            now,
            Input::Opened {
                conn: STDIO,
                peer: Peer::Stdio,
            },
        );
        engine
    }

    /// An engine that serves submitted jobs only ([`Engine::submit`]): it frames no message,
    /// so it holds an empty catalogue.
    pub fn for_jobs(config: EngineConfig, now: Moment) -> Engine<F> {
        let catalog = crate::protocol::registry::Catalog::empty();
        let config_of_none = crate::config::Config::new(Vec::new());
        let server = Arc::new(Server::with_catalog(config_of_none, catalog));
        Engine::new(server, config, now)
    }

    /// The catalogue this engine serves.
    pub fn server(&self) -> &Arc<Server<F>> {
        &self.server
    }

    /// The HTTP side's configuration, if this engine serves HTTP.
    pub fn http(&self) -> Option<&HttpConfig> {
        self.http.as_ref()
    }

    /// What the engine counted so far (with its gauges as of now).
    pub fn counters(&self) -> Counters {
        self.sharing.shared.merged()
    }

    /// Whether nothing is left to do: no request in flight and no connection open.
    pub fn is_idle(&self) -> bool {
        self.reqs.is_empty() && self.conns.is_empty() && self.out.is_empty()
    }

    /// Requests being served now (waits included).
    pub fn requests_in_flight(&self) -> usize {
        self.reqs.len()
    }

    /// Where a shutdown stands (`None` before [`Input::Shutdown`]): every request in flight
    /// answered, or the grace (`HttpLimits::shutdown_grace`) over with some still unanswered.
    /// On [`Drain::Answered`] the runtime stops once what it was sent is written; on
    /// [`Drain::Overdue`] it stops at once.
    pub fn drain(&self) -> Option<Drain> {
        if !self.shutting_down {
            None
        } else if self.reqs.is_empty() {
            Some(Drain::Answered)
        } else if self.grace_ends.is_some_and(|at| at <= self.now.mono) {
            Some(Drain::Overdue)
        } else {
            Some(Drain::Answering)
        }
    }

    /// The next thing the engine asks for; `None` until an input gives it more to do.
    pub fn poll_output(&mut self) -> Option<Output> {
        self.out.pop_front()
    }

    /// Whether [`Engine::poll_output`] has something.
    pub fn has_output(&self) -> bool {
        !self.out.is_empty()
    }

    /// When the engine must be woken with [`Input::Tick`] at the latest.
    pub fn poll_timeout(&self) -> Option<Duration> {
        self.timers.next()
    }

    /// Feeds what happened at `now` (a monotonic reading of any origin, the same for every
    /// input, and the wall clock).
    pub fn handle_input(&mut self, now: Moment, input: Input<'_, F>) {
        self.now = now;
        if let Input::Snapshot { req, .. }
        | Input::Appended { req, .. }
        | Input::Host { req, .. }
        | Input::Failed { req, .. } = &input
            && self.reqs.contains_key(req)
        {
            self.working = self.working.saturating_sub(1);
        }
        match input {
            Input::Opened { conn, peer } => self.opened(conn, peer),
            Input::Received { conn, bytes } => self.received(conn, Some(bytes)),
            Input::Closed { conn } => self.closed(conn),
            Input::Drained { conn, unsent } => self.drained(conn, unsent),
            Input::TlsFailed { peer, why } => {
                self.log_peer_line(true, &peer, format_args!("TLS failed: {why}"));
            }
            Input::Snapshot { req, snapshot } => {
                let seq = snapshot.position.seq;
                self.syncs.saw(seq);
                if let Some(r) = self.reqs.get_mut(&req) {
                    r.read = seq;
                }
                self.pump(req, Some(super::request::Input::Snapshot(snapshot)))
            }
            Input::Appended { req, result } => self.appended(req, result),
            Input::Synced { durable } => self.synced(durable),
            Input::SyncFailed(error) => self.sync_failed(error),
            Input::Host { req, reply } => self.pump(req, Some(super::request::Input::Host(reply))),
            Input::Failed { req, error } => self.failed(req, error),
            Input::Head(snapshot) => self.head(Ok(snapshot)),
            Input::HeadFailed(error) => self.head(Err(error)),
            Input::Operator { conn, response } => self.operator_answered(conn, response),
            Input::Keys(result) => {
                self.sharing.shared.keys_fetched();
                self.tell(Notice::Keys(result.clone()));
                self.keys_fetched(result);
            }
            Input::Introspected { digest, result } => {
                self.sharing.shared.introspected(digest);
                let told = result.clone();
                self.tell(Notice::Introspected {
                    digest,
                    result: told,
                });
                self.introspected(digest, result);
            }
            Input::StopJob { job, why } => self.stop_job(job, why),
            Input::HeadMoved => self.head_moved(),
            Input::Told(notice) => self.told(notice),
            Input::Adopted { conn, handed } => self.adopted(conn, *handed),
            Input::Tick => self.tick(),
            Input::Shutdown => self.shutdown(),
        }
        self.after_input();
    }

    /// Runs what the last input made ready and asks for a sync if one is due.
    fn after_input(&mut self) {
        self.run_ready();
        self.maybe_sync();
        if !self.feeds.is_empty() || !self.subs.is_empty() {
            self.listen(true);
        }
        let Sharing { index, shared } = &self.sharing;
        shared.set_in_flight(*index, self.reqs.len());
    }

    /// Fires every timer due now.
    fn tick(&mut self) {
        while let Some((at, due)) = self.timers.pop_due(self.now.mono) {
            match due {
                Due::Conn(conn) => self.conn_timer(conn, at),
                Due::Req(req) => self.req_timer(req, at),
                Due::Ask(req) => self.ask_timer(req, at),
                Due::Feeds => {
                    timers::fired(&mut self.feeds_armed, at);
                    self.feeds_timer();
                }
                Due::Grace => {}
                Due::Sync => {
                    timers::fired(&mut self.syncs.armed, at);
                    self.maybe_sync();
                }
            }
        }
    }

    fn next_req_id(&mut self) -> ReqId {
        self.issued += 1;
        ReqId(self.issued)
    }

    fn push(&mut self, output: Output) {
        self.out.push_back(output);
    }

    fn send(&mut self, conn: ConnId, bytes: Vec<u8>) {
        if !bytes.is_empty() {
            self.count_sent(conn, bytes.len());
            self.push(Output::Send { conn, bytes });
        }
    }

    fn log(&mut self, line: String) {
        self.push(Output::Log(line));
    }
}

/// One connection, by what it carries.
#[derive(Debug)]
enum Conn {
    Stdio(StdioConn),
    Http(HttpConn),
    Legacy(LegacyConn),
    Feed(FeedConn),
}

impl Conn {
    /// What it sent that its runtime may not have written yet (HTTP connections).
    fn backlog_mut(&mut self) -> Option<&mut Backlog> {
        match self {
            Conn::Http(h) => Some(&mut h.backlog),
            Conn::Legacy(l) => Some(&mut l.backlog),
            Conn::Feed(f) => Some(&mut f.backlog),
            Conn::Stdio(_) => None,
        }
    }
}

/// The output of an HTTP connection its runtime may not have written yet: what it reported
/// unsent last ([`Input::Drained`]) plus everything sent since. Counting costs an addition a
/// send; the runtime is asked about it only once it is over the bound.
#[derive(Clone, Copy, Debug, Default)]
struct Backlog {
    unsent: usize,
    /// Since when it is over the bound (nothing new starts on the connection meanwhile).
    since: Option<Duration>,
}

impl Backlog {
    /// Counts `n` bytes more; whether that put it over `bound`.
    fn add(&mut self, n: usize, bound: usize, now: Duration) -> bool {
        self.unsent = self.unsent.saturating_add(n);
        if self.unsent > bound && self.since.is_none() {
            self.since = Some(now);
            return true;
        }
        false
    }

    fn blocked(&self) -> bool {
        self.since.is_some()
    }
}

/// A message POSTed for a legacy stream whose client is not reading what it has: served once
/// the stream drains (answered `404` if it closes first).
#[derive(Debug)]
struct Parked {
    stream: ConnId,
    conn: ConnId,
    peer: SocketAddr,
    m: LegacyMessage,
}
/// One request being served: its state machine and what the engine keeps around it.
#[derive(Debug)]
struct Req<F: Fold> {
    machine: Request<Work<F>>,
    /// The connection whose message this is (`None`: a submitted job).
    conn: Option<ConnId>,
    answer: Answer,
    /// The peer address its wait counts against (HTTP).
    peer: Option<IpAddr>,
    ticket: Option<Ticket>,
    /// Whether its ticket counts as contended.
    counted: bool,
    /// Its entry in the cancellation table (a request with an id).
    entered: Option<super::cancels::Entered>,
    /// Whether it holds a wait slot.
    slot: bool,
    /// Whether it counts in the waits gauge (it started waiting).
    waited: bool,
    /// The streams its pending append writes, and where its last append committed (told to
    /// the feeds once durable).
    appending: Vec<String>,
    committed: Option<LedgerPosition>,
    /// The position of the last snapshot it read.
    read: u64,
    /// Where it stands while no output of it is being performed.
    park: Park,
    armed: Option<Duration>,
}

/// What a request waits for inside the engine.
#[derive(Clone, Debug)]
enum Park {
    /// Its outputs are taken (it waits for an input the runtime gives, or is ready).
    Running,
    /// Queued for the turn.
    Turn,
    /// Paused until this instant (jitter after lost races).
    Pause(Duration),
    /// Its answer waits for the ledger until the nap ends.
    Nap(Nap),
    /// Its nap ended: it waits for the head ([`Output::Look`]).
    Look(Wait),
}

/// Where the answer of a request goes.
#[derive(Debug)]
enum Answer {
    /// A line on the stdio connection that sent it.
    Stdio,
    /// The response to a `POST /mcp` (streamed once a notification opened the stream).
    Mcp {
        x: McpExchange,
        stream: Option<StreamedReply>,
    },
    /// A legacy stream (`POST /messages?stream=…`): events on `stream`, then `202` on the
    /// connection that posted.
    Legacy {
        m: LegacyMessage,
        stream: ConnId,
        span: String,
        /// The post was answered `202` early (its request asks the client, whose answer is
        /// posted next: a client that posts one message at a time must not wait behind it).
        released: bool,
    },
    /// The caller that submitted the job ([`Output::Finished`]): its notifications are kept
    /// for the answer; `stop` is what it said about waiting ([`Input::StopJob`]).
    Job {
        notes: Vec<Vec<u8>>,
        stop: Option<Stop>,
    },
}

/// The pieces of an HTTP connection's state that requests read.
#[derive(Debug)]
struct HttpConn {
    peer: SocketAddr,
    parser: RequestParser,
    clock: ReadClock,
    /// What the connection is busy with: frames behind it wait.
    busy: Option<Busy>,
    /// The peer sent everything it will.
    eof: bool,
    backlog: Backlog,
    armed: Option<Duration>,
    /// The log level `logging/setLevel` set on this connection without a session id (handshake
    /// era; a request with one uses its session's level), as long as the connection.
    log_level: Option<crate::protocol::logging::LogLevel>,
    /// What an `initialize` on this connection declared the client can be asked (as long as
    /// the connection, like the log level), for requests without a session id.
    caps: ClientCaps,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Busy {
    Request(ReqId),
    Operator,
    /// Its legacy message waits for its stream to drain ([`Parked`]).
    Parked,
    /// Its request waits for the issuer's keys ([`keys`]).
    Keys,
    /// Its request waits for its token's introspection ([`introspect`]).
    Introspection,
    /// It carries a `subscriptions/listen` stream (its SSE answer) until it closes.
    Listen,
}

/// A stdio peer: its framer, the revision `initialize` negotiated (a transport fact, like the
/// HTTP `MCP-Protocol-Version` header) and the line being served.
#[derive(Debug)]
struct StdioConn {
    framer: LineFramer,
    facts: TransportFacts,
    /// The request whose line is being served; later lines wait until it is answered or
    /// waits for the ledger.
    foreground: Option<ReqId>,
    /// Requests of this connection in flight.
    open: usize,
    eof: bool,
    /// What the client declared in `initialize` it can be asked.
    caps: ClientCaps,
}

/// A legacy SSE stream: its token, clocks, event ids and the revision it negotiated.
#[derive(Debug)]
struct LegacyConn {
    token: String,
    peer: SocketAddr,
    clock: StreamClock,
    ids: EventIds,
    version: Option<String>,
    /// The log level `logging/setLevel` set for messages posted to this stream.
    log_level: Option<crate::protocol::logging::LogLevel>,
    /// What an `initialize` posted to this stream declared the client can be asked.
    caps: ClientCaps,
    /// When it was last sent an event other than a keep-alive (its open included).
    last_event: Duration,
    backlog: Backlog,
    armed: Option<Duration>,
}

/// A dashboard feed: the head it was last told.
#[derive(Debug)]
struct FeedConn {
    peer: SocketAddr,
    told: Option<LedgerPosition>,
    keepalive_at: Duration,
    /// When it was last told a head (or opened).
    last_event: Duration,
    backlog: Backlog,
    armed: Option<Duration>,
}

/// The wait a napping request is in.
#[derive(Clone, Debug)]
struct Nap {
    until: Wait,
    wake: Duration,
}

fn peer_ip(peer: Option<SocketAddr>) -> Option<IpAddr> {
    peer.map(|p| p.ip().to_canonical())
}
