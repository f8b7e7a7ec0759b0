//! A world to drive an [`Engine`] in, for simulations (the `sim` feature, and this crate's own
//! tests): a fake clock, one in-memory ledger, a store whose fsyncs the test releases, scripted
//! peers (bytes on connections, a host, an operator, writers of another process), clients
//! that read what they are sent at once or not at all ([`World::stall`]), and everything the
//! engine sent, by connection. No thread, socket or sleep: a test runs whole
//! lifecycles (waits, conflicts, timeouts, peers leaving) in microseconds and deterministically.

use core::time::Duration;
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::Arc;

use super::request::{Input as RequestInput, Output as RequestOutput};
use super::server::{ConnId, Engine, EngineConfig, Handed, Input, JobId, Output, Peer};
use super::shared::{Notice, Shared, Sharing};
use super::{DEFAULT_WAIT, Finished, Message, Moment, Request, Submitted};
use crate::ledger::{Append, AppendResult, Fold, Snapshot, StoreError};
use crate::protocol::host::{HostFailure, HostReply};
use crate::protocol::{Server, TransportFacts};
use crate::time::Timestamp;
use crate::transport::http::introspection::{IntrospectRequest, TokenDigest};
use crate::transport::http::{HttpOptions, HttpPolicy, HttpResponse, OperatorRequest};

/// The wall clock of every simulation.
pub const WALL: Timestamp = Timestamp(1_780_000_000_000);

/// The authority a simulated HTTP server is bound at.
pub const BOUND: &str = "127.0.0.1:8053";

/// An engine and the world around it.
pub struct World<F: Fold> {
    pub engine: Engine<F>,
    /// The one ledger: every committed append (this engine's and other writers').
    pub ledger: Snapshot<F>,
    pub mono: Duration,
    sent: BTreeMap<ConnId, Vec<u8>>,
    /// Connections whose client reads nothing (see [`World::stall`]), and what the engine
    /// sent them since (the runtime's unsent bytes). Every other client reads at once: the
    /// world reports a blocked connection drained as soon as the engine has no output.
    stalled: BTreeSet<ConnId>,
    pub unread: BTreeMap<ConnId, usize>,
    /// How many times the world reported a connection drained.
    pub drains: usize,
    /// Connections the engine asked to close, with `finish`.
    pub closed: BTreeMap<ConnId, bool>,
    pub logs: Vec<String>,
    /// Operator routes asked for, to answer with [`World::answer_operator`].
    pub operator: Vec<(ConnId, OperatorRequest)>,
    /// The head when the engine asked for the sync not answered yet (see [`World::sync`]):
    /// its fsync begins then, so it covers the records up to there.
    sync_asked: Option<u64>,
    /// Answer syncs at once (an fsync that takes no time).
    pub auto_sync: bool,
    /// What the host answers, in order (then `Unsupported`).
    pub host: VecDeque<HostReply>,
    /// Messages other writers serve on this ledger right before the engine's next appends,
    /// one per append (the engine loses that race).
    pub racers: VecDeque<Vec<u8>>,
    /// The next store call fails with this error.
    pub fail_next: Option<StoreError>,
    /// Outputs performed: appends, conflicts, looks, settles (what the store saw).
    pub appends: usize,
    pub conflicts: usize,
    pub looks: usize,
    pub fsyncs: usize,
    /// The submitted jobs that ended ([`Output::Finished`]), in order.
    pub finished: Vec<(JobId, Result<Box<Finished>, StoreError>)>,
    /// [`Output::Began`] and [`Output::Ended`], in order (with [`Engine::trace_requests`]).
    pub spans: Vec<Output>,
    /// How many times the engine asked for the OAuth issuer's keys ([`Output::FetchKeys`]);
    /// the test answers with [`World::answer_keys`].
    pub keys_asked: usize,
    /// The introspections the engine asked for ([`Output::Introspect`]), in order; the test
    /// answers with [`World::answer_introspection`].
    pub introspections: Vec<IntrospectRequest>,
    /// What the engine told its process's other engines ([`Output::Tell`]), in order.
    pub told: Vec<Notice>,
    /// The connections it handed to engine 0 ([`Output::HandOff`]), in order.
    pub handed: Vec<(ConnId, Box<Handed>)>,
}

impl<F: Fold> World<F> {
    pub fn new(server: Arc<Server<F>>, config: EngineConfig) -> World<F> {
        let now = Moment {
            mono: Duration::ZERO,
            wall: WALL,
        };
        World {
            engine: Engine::new(server, config, now),
            ledger: Snapshot::genesis(),
            mono: Duration::ZERO,
            sent: BTreeMap::new(),
            stalled: BTreeSet::new(),
            unread: BTreeMap::new(),
            drains: 0,
            closed: BTreeMap::new(),
            logs: Vec::new(),
            operator: Vec::new(),
            sync_asked: None,
            auto_sync: true,
            host: VecDeque::new(),
            racers: VecDeque::new(),
            fail_next: None,
            appends: 0,
            conflicts: 0,
            looks: 0,
            fsyncs: 0,
            finished: Vec::new(),
            spans: Vec::new(),
            keys_asked: 0,
            introspections: Vec::new(),
            told: Vec::new(),
            handed: Vec::new(),
        }
    }

    /// A world whose engine serves HTTP at [`BOUND`] with `options`.
    pub fn http(server: Arc<Server<F>>, options: HttpOptions) -> World<F> {
        World::http_sharing(server, options, Shared::alone())
    }

    /// [`World::http`] for one of several engines of a process (`sharing`; each world has its
    /// own ledger: a test of what crosses engines moves it by hand).
    pub fn http_sharing(
        server: Arc<Server<F>>,
        options: HttpOptions,
        sharing: Sharing,
    ) -> World<F> {
        let policy = HttpPolicy::new(&server.config, &options, BOUND, true)
            .expect("a loopback bind needs no token");
        let seed = [9 + sharing.index as u8; 32];
        let mut config = EngineConfig::http(policy, options, seed);
        config.sharing = sharing;
        World::new(server, config)
    }

    /// A world whose engine serves one stdio peer (connection 0, opened).
    pub fn stdio(server: Arc<Server<F>>) -> World<F> {
        let mut w = World::new(server.clone(), EngineConfig::stdio([9; 32]));
        w.engine = Engine::stdio(server, [9; 32], w.now());
        w.run();
        w
    }

    pub fn now(&self) -> Moment {
        Moment {
            mono: self.mono,
            wall: WALL,
        }
    }

    /// A caller submits `job`, then the world performs what follows.
    pub fn submit(&mut self, job: Submitted<F>) -> JobId {
        let now = self.now();
        let id = self.engine.submit(now, job);
        self.run();
        id
    }

    /// Feeds one input, then performs what follows until the engine waits for the world.
    pub fn input(&mut self, input: Input<'_, F>) {
        let now = self.now();
        self.engine.handle_input(now, input);
        self.run();
    }

    /// An HTTP client connects from `peer` (`ip:port`).
    pub fn connect(&mut self, conn: u64, peer: &str) {
        let peer = Peer::Http(peer.parse().expect("a socket address"));
        self.input(Input::Opened {
            conn: ConnId(conn),
            peer,
        });
    }

    /// Bytes arrive on `conn`.
    pub fn bytes(&mut self, conn: u64, bytes: &[u8]) {
        self.input(Input::Received {
            conn: ConnId(conn),
            bytes,
        });
    }

    /// The peer of `conn` is done (end of input, a closed connection).
    pub fn hang_up(&mut self, conn: u64) {
        self.input(Input::Closed { conn: ConnId(conn) });
    }

    /// The client of `conn` stops reading: what the engine sends it stays unsent.
    pub fn stall(&mut self, conn: u64) {
        self.stalled.insert(ConnId(conn));
    }

    /// The client of `conn` reads until `left` bytes are unsent (and reads nothing more
    /// afterwards: it stays stalled); the world reports it if the engine waits for that.
    pub fn read_until(&mut self, conn: u64, left: usize) {
        let conn = ConnId(conn);
        let unread = self.unread.entry(conn).or_default();
        *unread = (*unread).min(left);
        let unsent = *unread;
        if self.engine.blocked_on_output(conn) && unsent <= self.engine.max_unsent() {
            self.drains += 1;
            self.input(Input::Drained { conn, unsent });
        }
    }

    /// The client of `conn` reads everything, and from now on reads at once again.
    pub fn read_all(&mut self, conn: u64) {
        let conn = ConnId(conn);
        self.stalled.remove(&conn);
        self.unread.remove(&conn);
        if self.engine.blocked_on_output(conn) {
            self.drains += 1;
            self.input(Input::Drained { conn, unsent: 0 });
        }
    }

    /// Moves the clock to `mono + d`, firing every timer due on the way, in order.
    pub fn advance(&mut self, d: Duration) {
        let until = self.mono + d;
        while let Some(at) = self.engine.poll_timeout().filter(|at| *at <= until) {
            self.mono = self.mono.max(at);
            self.input(Input::Tick);
        }
        self.mono = until;
    }

    /// The fsync the engine asked for ends, having covered the ledger as it was when asked.
    pub fn sync(&mut self) {
        if let Some(durable) = self.sync_asked.take() {
            self.fsyncs += 1;
            self.input(Input::Synced { durable });
        }
    }

    /// The fsync the engine asked for fails with `error`.
    pub fn sync_fails(&mut self, error: StoreError) {
        if self.sync_asked.take().is_some() {
            self.input(Input::SyncFailed(error));
        }
    }

    /// Whether the engine asked for a sync that [`World::sync`] has not answered yet.
    pub fn sync_asked(&self) -> bool {
        self.sync_asked.is_some()
    }

    /// What the engine sent on `conn` since the last take.
    pub fn take(&mut self, conn: u64) -> Vec<u8> {
        self.sent.remove(&ConnId(conn)).unwrap_or_default()
    }

    /// [`World::take`] as text.
    pub fn take_text(&mut self, conn: u64) -> String {
        String::from_utf8(self.take(conn)).expect("the engine sends UTF-8 here")
    }

    /// Answers the engine's last [`Output::FetchKeys`] with the issuer's JWKS, or why it could
    /// not be fetched.
    pub fn answer_keys(&mut self, result: Result<serde_json::Value, String>) {
        self.input(Input::Keys(result));
    }

    /// Answers the introspection of the token of `digest` with the endpoint's JSON, or why
    /// there is none.
    pub fn answer_introspection(
        &mut self,
        digest: TokenDigest,
        result: Result<serde_json::Value, String>,
    ) {
        self.input(Input::Introspected { digest, result });
    }

    /// Answers the oldest operator route asked for.
    pub fn answer_operator(&mut self, response: HttpResponse) {
        let (conn, _) = self.operator.remove(0);
        self.input(Input::Operator { conn, response });
    }

    /// Performs the engine's outputs until it has none, reporting the connections the engine
    /// blocked on their output drained, as a runtime does, when their client reads.
    pub fn run(&mut self) {
        loop {
            self.perform();
            let drained: Vec<ConnId> = self
                .engine
                .conns_blocked_on_output()
                .filter(|c| !self.stalled.contains(c))
                .collect();
            if drained.is_empty() {
                return;
            }
            for conn in drained {
                self.drains += 1;
                let now = self.now();
                let input = Input::Drained { conn, unsent: 0 };
                self.engine.handle_input(now, input);
            }
        }
    }

    fn perform(&mut self) {
        while let Some(output) = self.engine.poll_output() {
            let now = self.now();
            match output {
                Output::ReadSnapshot { req } => {
                    if let Some(error) = self.fail_next.take() {
                        self.engine.handle_input(now, Input::Failed { req, error });
                        continue;
                    }
                    let snapshot = self.ledger.clone();
                    self.engine.handle_input(
                        now,
                        Input::Snapshot {
                            req,
                            snapshot: &snapshot,
                        },
                    );
                }
                Output::Append { req, append } => {
                    if let Some(racer) = self.racers.pop_front() {
                        let server = self.engine.server().clone();
                        self.other_writer(&server, &racer);
                    }
                    let result = self.append(&append);
                    self.engine
                        .handle_input(now, Input::Appended { req, result });
                }
                Output::Sync { upto, .. } => {
                    assert!(self.sync_asked.is_none(), "one sync at a time");
                    assert!(upto <= self.ledger.position.seq, "a sync past the head");
                    self.sync_asked = Some(self.ledger.position.seq);
                    if self.auto_sync {
                        self.sync();
                    }
                }
                Output::Host { req, .. } => {
                    let reply = self
                        .host
                        .pop_front()
                        .unwrap_or(HostReply::Failed(HostFailure::Unsupported));
                    self.engine.handle_input(now, Input::Host { req, reply });
                }
                Output::Look => {
                    self.looks += 1;
                    let head = self.ledger.clone();
                    self.engine.handle_input(now, Input::Head(&head));
                }
                Output::Operator { conn, request } => self.operator.push((conn, request)),
                Output::FetchKeys { .. } => self.keys_asked += 1,
                Output::Introspect(ask) => self.introspections.push(*ask),
                Output::Send { conn, bytes } => {
                    if self.stalled.contains(&conn) {
                        *self.unread.entry(conn).or_default() += bytes.len();
                    }
                    self.sent.entry(conn).or_default().extend(bytes);
                }
                Output::Close { conn, finish } => {
                    self.closed.insert(conn, finish);
                    self.stalled.remove(&conn);
                    self.unread.remove(&conn);
                }
                Output::Log(line) => self.logs.push(line),
                Output::Finished { job, result } => self.finished.push((job, result)),
                Output::Tell(notice) => self.told.push(notice),
                Output::HandOff { conn, handed } => self.handed.push((conn, handed)),
                span @ (Output::Began { .. } | Output::Ended { .. }) => self.spans.push(span),
            }
        }
    }

    fn append(&mut self, append: &Append) -> AppendResult {
        // Placed as the stores place it: after a later head only what may move there
        // (`ledger::sequence`: a read, or a write whose streams stand).
        let key = &self.engine.server().config.audit_key;
        let heads = |s: &str| self.ledger.stream_head(s);
        let at = self.ledger.position;
        let Some(append) = crate::ledger::sequence::place_one(append, at, heads, key) else {
            self.conflicts += 1;
            return AppendResult::Conflict { current: at };
        };
        self.appends += 1;
        for r in &append.records {
            self.ledger
                .apply(r)
                .expect("the engine's records extend the head");
        }
        AppendResult::Committed(self.ledger.position)
    }

    /// A writer of another process serves `bytes` on this ledger, to its end, right now.
    pub fn other_writer(&mut self, server: &Server<F>, bytes: &[u8]) {
        let facts = TransportFacts::stdio(None);
        let message = server.read_message(bytes);
        let job = Message {
            server,
            message: &message,
            facts: &facts,
            caps: Default::default(),
        };
        let mut request = Request::new(job, DEFAULT_WAIT, 1);
        request.start(self.now());
        loop {
            let now = self.now();
            let Some(output) = request.poll_output() else {
                panic!("the other writer's request stalled");
            };
            let input = match output {
                RequestOutput::ReadSnapshot => {
                    let snapshot = self.ledger.clone();
                    request.handle_input(now, RequestInput::Snapshot(&snapshot));
                    continue;
                }
                RequestOutput::Append(append) => {
                    let result = self.append(&append);
                    self.appends -= 1;
                    RequestInput::Appended(result)
                }
                RequestOutput::TakeTurn { .. } => RequestInput::Turn { held: false },
                RequestOutput::Settle => RequestInput::Settled,
                RequestOutput::AskStop => RequestInput::Stop(Some(super::Stop::Settle)),
                RequestOutput::Done(_) => return,
                RequestOutput::Failed(e) => panic!("the other writer failed: {e}"),
                RequestOutput::LeaveTurn { .. }
                | RequestOutput::Notify(_)
                | RequestOutput::ReleaseWaitSlot => continue,
                other => panic!("the other writer asked for {other:?}"),
            };
            request.handle_input(now, input);
        }
    }
}

/// An HTTP/1.1 `POST` of `body` to `path` on [`BOUND`], with `headers` (`Name: value` lines).
pub fn post(path: &str, body: &[u8], headers: &[&str]) -> Vec<u8> {
    let mut out = format!(
        "POST {path} HTTP/1.1\r\nHost: {BOUND}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n",
        body.len()
    );
    for h in headers {
        out.push_str(h);
        out.push_str("\r\n");
    }
    out.push_str("\r\n");
    let mut bytes = out.into_bytes();
    bytes.extend_from_slice(body);
    bytes
}

/// An HTTP/1.1 `GET` of `path` on [`BOUND`].
pub fn get(path: &str, headers: &[&str]) -> Vec<u8> {
    let mut out = format!("GET {path} HTTP/1.1\r\nHost: {BOUND}\r\n");
    for h in headers {
        out.push_str(h);
        out.push_str("\r\n");
    }
    out.push_str("\r\n");
    out.into_bytes()
}

/// The responses in `bytes` that carry a `Content-Length` (status, body), in order.
pub fn responses(bytes: &[u8]) -> Vec<(u16, Vec<u8>)> {
    let mut out = Vec::new();
    let mut rest = bytes;
    while let Some(end) = rest.windows(4).position(|w| w == b"\r\n\r\n") {
        let head = String::from_utf8_lossy(&rest[..end]).to_string();
        let status = head
            .split(' ')
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
        let len = head
            .lines()
            .find_map(|l| {
                let (name, value) = l.split_once(':')?;
                name.eq_ignore_ascii_case("content-length")
                    .then(|| value.trim().parse::<usize>().ok())?
            })
            .unwrap_or(0);
        let body_start = end + 4;
        let body_end = (body_start + len).min(rest.len());
        out.push((status, rest[body_start..body_end].to_vec()));
        rest = &rest[body_end..];
    }
    out
}
