//! The engine's connections: framing what arrives (stdio lines, HTTP/1.1 requests routed by
//! the [`HttpPolicy`](crate::transport::http::HttpPolicy)), one message at a time per
//! connection, their clocks (read timeouts, legacy streams' keep-alives and idle closes,
//! feeds' keep-alives and idle closes), their backlogs (what the runtime has not written
//! yet), the legacy streams by token and the dashboards' feeds, with their caps.
//!
//! Backpressure: each HTTP connection counts the bytes sent on it since its runtime last said
//! how many it had not written yet ([`Input::Drained`](super::Input::Drained)). Over
//! [`HttpLimits::max_unsent_bytes`](crate::transport::http::HttpLimits::max_unsent_bytes) the
//! connection is blocked: it is not read, no request starts on it (not even one already framed
//! behind), a message POSTed for a blocked legacy stream waits for it ([`Parked`]), a blocked
//! feed is told no head until it drains (then the newest), and a legacy stream or a feed
//! still blocked after the write timeout is closed. The runtime reports a blocked
//! connection's real backlog as soon as it is back under the bound; a client that reads
//! costs one such report per bound's worth of answers.

use core::net::SocketAddr;
use core::time::Duration;

use super::timers::{self, Due};
use super::{
    Answer, Backlog, Busy, Conn, ConnId, Engine, FEED_KEEPALIVE, FEED_LOOK, FeedConn, HttpConn,
    LegacyConn, Output, Parked, Peer, StdioConn,
};
use crate::engine::job::Work;
use crate::engine::log_budget::{Admit, LogBudget};
use crate::ledger::{Fold, LedgerPosition};
use crate::protocol::TransportFacts;
use crate::protocol::input::ClientCaps;
use crate::transport::http::exchange::{LegacyMessage, LegacyOpen};
use crate::transport::http::operator::{feed_head, head_event};
use crate::transport::http::read_clock::{Expired, ReadClock};
use crate::transport::http::response::{over_capacity, over_stream_cap, request_timeout};
use crate::transport::http::sse::{self, EventIds};
use crate::transport::http::{
    CONTINUE, Decision, Frame, HttpResponse, Known, OperatorRequest, OperatorRoute, RequestParser,
    StreamClock,
};
use crate::transport::{Line, LineFramer};

impl<F: Fold> Engine<F> {
    pub(super) fn opened(&mut self, conn: ConnId, peer: Peer) {
        let addr = match peer {
            Peer::Stdio => {
                let limit = self.server.config.limits.max_message_bytes;
                let stdio = StdioConn {
                    framer: LineFramer::new(limit),
                    facts: TransportFacts::stdio(None),
                    foreground: None,
                    open: 0,
                    eof: false,
                    caps: ClientCaps::NONE,
                };
                self.conns.insert(conn, Conn::Stdio(stdio));
                return;
            }
            Peer::Http(addr) => addr,
        };
        let Some(http) = &self.http else {
            self.log(format!(
                "bernstein: an HTTP connection from {addr} on a stdio server"
            ));
            return self.push(Output::Close {
                conn,
                finish: false,
            });
        };
        let limits = &http.options.limits;
        if self.shutting_down {
            return self.push(Output::Close {
                conn,
                finish: false,
            });
        }
        if !self.sharing.shared.open_connection(limits.max_connections) {
            let max = limits.max_connections;
            self.log_peer(&addr, format_args!("503: over the connection cap ({max})"));
            self.send(conn, over_capacity().to_bytes());
            return self.push(Output::Close {
                conn,
                finish: false,
            });
        }
        self.open_http(conn, addr);
    }

    /// Starts serving an HTTP connection counted open; whether it is served (not once a
    /// shutdown began).
    pub(super) fn open_http(&mut self, conn: ConnId, addr: SocketAddr) -> bool {
        let Some(http) = &self.http else {
            return false;
        };
        if self.shutting_down {
            self.push(Output::Close {
                conn,
                finish: false,
            });
            return false;
        }
        let limits = &http.options.limits;
        let h = HttpConn {
            peer: addr,
            parser: RequestParser::new(limits.parser()),
            clock: ReadClock::new(self.now.mono, limits.read_timeout),
            busy: None,
            eof: false,
            backlog: Backlog::default(),
            armed: None,
            log_level: None,
            caps: ClientCaps::NONE,
        };
        self.conns.insert(conn, Conn::Http(h));
        self.arm_conn(conn);
        true
    }

    /// Whether the runtime should read more from `conn` now: not while a connection's next
    /// message is already framed behind the one being served (the peer waits, as TCP makes it),
    /// nor while its client leaves its answers unread ([`Engine::blocked_on_output`]).
    pub fn wants_bytes(&self, conn: ConnId) -> bool {
        match self.conns.get(&conn) {
            Some(Conn::Http(h)) => !h.backlog.blocked() && (h.busy.is_none() || h.parser.is_idle()),
            Some(Conn::Stdio(s)) => s.foreground.is_none() || !s.framer.has_line(),
            Some(Conn::Legacy(_) | Conn::Feed(_)) => true,
            None => false,
        }
    }

    /// Whether `conn` is blocked on its output: more of it unsent than [`Engine::max_unsent`]
    /// as far as the engine knows. It is not read and nothing new starts on it until the
    /// runtime reports it back under the bound ([`Input::Drained`](super::Input::Drained)).
    pub fn blocked_on_output(&self, conn: ConnId) -> bool {
        self.blocked.contains(&conn)
    }

    /// The connections [`Engine::blocked_on_output`] names, in order (none, in the common
    /// case of clients that read their answers).
    pub fn conns_blocked_on_output(&self) -> impl Iterator<Item = ConnId> + '_ {
        self.blocked.iter().copied()
    }

    /// Reports, as [`Input::Drained`](super::Input::Drained), each connection blocked on its
    /// output whose unsent bytes (`unsent`: the runtime's count, `None` for a connection it no
    /// longer has) are back within the bound; whether there was any. In the common case no
    /// connection is blocked: one look at an empty set.
    pub fn report_drained(
        &mut self,
        now: super::super::Moment,
        unsent: impl Fn(ConnId) -> Option<usize>,
    ) -> bool {
        let bound = self.max_unsent;
        let drained: Vec<(ConnId, usize)> = self
            .blocked
            .iter()
            .filter_map(|&conn| unsent(conn).filter(|n| *n <= bound).map(|n| (conn, n)))
            .collect();
        for &(conn, unsent) in &drained {
            self.handle_input(now, super::Input::Drained { conn, unsent });
        }
        !drained.is_empty()
    }

    /// Most bytes a connection may have unsent before it is blocked on its output
    /// ([`HttpLimits::max_unsent_bytes`](crate::transport::http::HttpLimits::max_unsent_bytes);
    /// `usize::MAX` on stdio, whose writes block).
    pub fn max_unsent(&self) -> usize {
        self.max_unsent
    }

    /// Counts bytes sent on `conn`: over the bound, it is blocked on its output.
    pub(super) fn count_sent(&mut self, conn: ConnId, n: usize) {
        let (bound, now) = (self.max_unsent, self.now.mono);
        let Some(c) = self.conns.get_mut(&conn) else {
            return;
        };
        let stream = matches!(c, Conn::Legacy(_) | Conn::Feed(_));
        if c.backlog_mut().is_some_and(|b| b.add(n, bound, now)) {
            self.blocked.insert(conn);
            if stream {
                // Its write timeout runs from now.
                self.arm_conn(conn);
            }
        }
    }

    /// The runtime has `unsent` bytes of `conn` still to write: at or under the bound, a
    /// blocked connection goes on (reads, serves what is framed, hears the newest head, serves
    /// the messages waiting for it).
    pub(super) fn drained(&mut self, conn: ConnId, unsent: usize) {
        let (bound, now) = (self.max_unsent, self.now.mono);
        let Some(b) = self.conns.get_mut(&conn).and_then(Conn::backlog_mut) else {
            return;
        };
        b.unsent = unsent;
        if unsent > bound || b.since.take().is_none() {
            return;
        }
        self.blocked.remove(&conn);
        match self.conns.get_mut(&conn) {
            Some(Conn::Http(h)) if h.busy.is_none() => {
                // Nothing was read while it was blocked: its read clock starts again (a
                // request begun before counts from now).
                h.clock.parser_idle();
                h.clock.bytes_arrived(now, h.parser.is_idle());
                self.received(conn, None);
            }
            Some(Conn::Legacy(_)) => {
                self.arm_conn(conn);
                self.resume_parked(conn);
            }
            Some(Conn::Feed(_)) => {
                self.arm_conn(conn);
                if let Some(p) = self.durable {
                    self.tell_feeds(p);
                }
            }
            _ => {}
        }
    }

    pub(super) fn closed(&mut self, conn: ConnId) {
        match self.conns.get_mut(&conn) {
            Some(Conn::Stdio(s)) => {
                s.eof = true;
                s.framer.handle_eof();
                self.wake_requests_of(conn);
                self.advance_stdio(conn);
            }
            Some(Conn::Http(h)) => {
                h.eof = true;
                match h.busy {
                    // A waiting request whose peer left ends as cancelled.
                    Some(Busy::Request(req)) => self.wake(req),
                    Some(Busy::Operator | Busy::Parked | Busy::Keys | Busy::Introspection) => {}
                    // A listen stream whose client left is dropped with its subscription.
                    Some(Busy::Listen) => self.close(conn, false),
                    None => self.received(conn, None),
                }
            }
            Some(Conn::Legacy(_) | Conn::Feed(_)) => {
                self.close(conn, false);
                // Requests answering to a stream that is gone end as cancelled.
                self.wake_requests_of(conn);
            }
            None => {}
        }
    }

    /// Forgets a connection (the caller asks the runtime to close it).
    fn forget(&mut self, conn: ConnId) {
        self.blocked.remove(&conn);
        self.drop_subscriptions(conn);
        match self.conns.remove(&conn) {
            Some(Conn::Legacy(l)) => {
                self.legacy.remove(&l.token);
                self.sharing.shared.close_connection();
            }
            Some(Conn::Feed(_)) => {
                self.feeds.remove(&conn);
                self.sharing.shared.close_connection();
            }
            Some(Conn::Http(_)) => self.sharing.shared.close_connection(),
            Some(Conn::Stdio(_)) | None => {}
        }
    }

    /// Asks the runtime to close `conn` and forgets it; the messages waiting for it, if it is
    /// a legacy stream, are answered that it is gone.
    pub(super) fn close(&mut self, conn: ConnId, finish: bool) {
        let Some(c) = self.conns.get(&conn) else {
            return;
        };
        let stream = matches!(c, Conn::Legacy(_));
        self.forget(conn);
        self.push(Output::Close { conn, finish });
        if stream {
            self.resume_parked(conn);
        }
    }

    /// Serves again the messages that waited for the legacy stream `stream` to drain (or
    /// answers them that it is gone).
    fn resume_parked(&mut self, stream: ConnId) {
        if self.parked.is_empty() {
            return;
        }
        let (due, rest): (Vec<Parked>, Vec<Parked>) = std::mem::take(&mut self.parked)
            .into_iter()
            .partition(|p| p.stream == stream);
        self.parked = rest;
        for p in due {
            match self.conns.get_mut(&p.conn) {
                Some(Conn::Http(h)) if h.busy == Some(Busy::Parked) => h.busy = None,
                _ => continue,
            }
            self.legacy_message(p.conn, p.peer, p.m);
            if matches!(self.conns.get(&p.conn), Some(Conn::Http(h)) if h.busy.is_none()) {
                // Answered at once (the stream is gone): the requests behind it go on.
                self.set_busy(p.conn, None);
            }
        }
    }

    /// The write timeout, and how long a feed may go without a new head.
    fn stream_limits(&self) -> (Duration, Duration) {
        self.http_limits()
            .map_or((Duration::MAX, Duration::MAX), |l| {
                (l.write_timeout, l.feed_idle)
            })
    }

    /// Closes a legacy stream or a feed whose client left more than the bound unread for the
    /// write timeout.
    fn close_stalled(&mut self, conn: ConnId, what: &str) {
        let ((timeout, _), bound) = (self.stream_limits(), self.max_unsent);
        let (peer, unsent) = match self.conns.get(&conn) {
            Some(Conn::Legacy(l)) => (l.peer, l.backlog.unsent),
            Some(Conn::Feed(f)) => (f.peer, f.backlog.unsent),
            _ => return,
        };
        self.log_peer(
            &peer,
            format_args!(
                "closed {what}: its client left {unsent} bytes unread for {timeout:?} (over the bound of {bound})"
            ),
        );
        self.close(conn, false);
        self.wake_requests_of(conn);
    }

    pub(super) fn conn_timer(&mut self, conn: ConnId, at: core::time::Duration) {
        let now = self.now.mono;
        let (write_timeout, feed_idle) = self.stream_limits();
        let stalled = |b: &Backlog| {
            b.since
                .is_some_and(|s| now >= s.saturating_add(write_timeout))
        };
        match self.conns.get_mut(&conn) {
            Some(Conn::Http(h)) => {
                timers::fired(&mut h.armed, at);
                if h.busy.is_none()
                    && !h.backlog.blocked()
                    && let Some(expired) = h.clock.expired(now)
                {
                    return self.expire(conn, expired);
                }
            }
            Some(Conn::Legacy(l)) => {
                timers::fired(&mut l.armed, at);
                if stalled(&l.backlog) {
                    return self.close_stalled(conn, "a legacy SSE stream");
                }
                let blocked = l.backlog.blocked();
                match l.clock.handle_timeout(now) {
                    // A blocked stream's client has enough to read already.
                    Some(crate::transport::http::StreamTick::KeepAlive) if !blocked => {
                        self.send(conn, sse::KEEPALIVE.to_vec());
                    }
                    Some(crate::transport::http::StreamTick::Close) => {
                        let idle = self.http_limits().map(|l| l.sse_idle).unwrap_or_default();
                        self.log(format!(
                            "bernstein http: closed a legacy SSE stream: no message for {idle:?}"
                        ));
                        self.send(conn, sse::IDLE_CLOSE.to_vec());
                        self.close(conn, false);
                        return self.wake_requests_of(conn);
                    }
                    Some(crate::transport::http::StreamTick::KeepAlive) | None => {}
                }
            }
            Some(Conn::Feed(f)) => {
                timers::fired(&mut f.armed, at);
                if stalled(&f.backlog) {
                    return self.close_stalled(conn, "a dashboard feed");
                }
                if now >= f.last_event.saturating_add(feed_idle) {
                    // No new head for that long: closed (its page reconnects), so that feeds
                    // nobody needs do not hold the cap.
                    self.send(conn, sse::IDLE_CLOSE.to_vec());
                    return self.close(conn, false);
                }
                if now >= f.keepalive_at {
                    f.keepalive_at = now + FEED_KEEPALIVE;
                    if !f.backlog.blocked() {
                        self.send(conn, sse::KEEPALIVE.to_vec());
                    }
                }
            }
            Some(Conn::Stdio(_)) | None => return,
        }
        self.arm_conn(conn);
    }

    /// Arms the timer of a connection's clock (a legacy stream's or a feed's: its write
    /// timeout too while it is blocked).
    fn arm_conn(&mut self, conn: ConnId) {
        let (write_timeout, feed_idle) = self.stream_limits();
        let stall = |b: &Backlog| b.since.map(|s| s.saturating_add(write_timeout));
        let (at, armed) = match self.conns.get_mut(&conn) {
            Some(Conn::Http(h)) if h.busy.is_none() && !h.backlog.blocked() => {
                (h.clock.deadline(), &mut h.armed)
            }
            Some(Conn::Legacy(l)) => {
                let at = l.clock.poll_timeout();
                (stall(&l.backlog).map_or(at, |s| s.min(at)), &mut l.armed)
            }
            Some(Conn::Feed(f)) => {
                let at = f.keepalive_at.min(f.last_event.saturating_add(feed_idle));
                (stall(&f.backlog).map_or(at, |s| s.min(at)), &mut f.armed)
            }
            _ => return,
        };
        self.timers.arm(armed, at, Due::Conn(conn));
    }

    /// Closes a connection whose request is overdue (`408`) or that idled past the read
    /// timeout.
    fn expire(&mut self, conn: ConnId, expired: Expired) {
        let Some(Conn::Http(h)) = self.conns.get(&conn) else {
            return;
        };
        let peer = h.peer;
        if let Some(line) = expired.log_line(h.clock.timeout()) {
            self.log_peer(&peer, format_args!("{line}"));
        }
        if expired == Expired::Overdue {
            self.send(conn, request_timeout().to_bytes());
            self.close(conn, true);
        } else {
            self.close(conn, false);
        }
    }

    /// Takes the `bytes` that arrived on `conn` (`None`: none did, but an HTTP connection may
    /// frame again: it became free or unblocked, or its end was read) and serves what it has
    /// framed, one request at a time, while it is free.
    pub(super) fn received(&mut self, conn: ConnId, bytes: Option<&[u8]>) {
        let now = self.now.mono;
        match (self.conns.get_mut(&conn), bytes) {
            (Some(Conn::Stdio(s)), Some(bytes)) => {
                s.framer.handle_bytes(bytes);
                return self.advance_stdio(conn);
            }
            (Some(Conn::Http(h)), Some(bytes)) if h.busy.is_some() => {
                return h.parser.handle_bytes(bytes);
            }
            (Some(Conn::Http(h)), Some(bytes)) => {
                // Bytes that arrive after the deadline do not save an overdue request.
                if h.clock.expired(now) == Some(Expired::Overdue) {
                    return self.expire(conn, Expired::Overdue);
                }
                h.parser.handle_bytes(bytes);
                h.clock.bytes_arrived(now, h.parser.is_idle());
            }
            (Some(Conn::Http(_)), None) => {}
            // What a stream's or a feed's peer sends is not read.
            _ => return,
        }
        loop {
            let shutting_down = self.shutting_down;
            let Some(Conn::Http(h)) = self.conns.get_mut(&conn) else {
                return;
            };
            if h.busy.is_some() {
                return;
            }
            // Its client leaves its answers unread: what is framed behind waits. Unless its
            // end was read: a runtime reads no more of a blocked connection, so that end means
            // its socket broke (a write failed or timed out: no drain will be reported) or no
            // whole request was framed behind; either way it is closed once what was sent is
            // written.
            if h.backlog.blocked() {
                if h.eof {
                    self.close(conn, false);
                }
                return;
            }
            let frame = if shutting_down {
                None
            } else {
                h.parser.poll_frame()
            };
            let Some(frame) = frame else {
                if h.parser.is_idle() {
                    h.clock.parser_idle();
                }
                if h.eof || shutting_down {
                    return self.close(conn, false);
                }
                return self.arm_conn(conn);
            };
            let peer = h.peer;
            match frame {
                Frame::Continue => self.send(conn, CONTINUE.to_vec()),
                Frame::Error(e) => {
                    self.log_peer(&peer, format_args!("{}: {e}", e.status().code()));
                    self.send(conn, e.response().to_bytes());
                    return self.close(conn, true);
                }
                Frame::Request(request) => {
                    h.clock.request_served();
                    let Some(http) = &self.http else { return };
                    let loopback = peer.ip().to_canonical().is_loopback();
                    let known = Known {
                        keys: self.keys.set(),
                        answers: self.introspection.answers(),
                        mono: self.now.mono,
                    };
                    let decision = http
                        .policy
                        .route_with(request, loopback, self.now.wall, &known);
                    self.act(conn, peer, decision);
                }
            }
        }
    }

    /// Carries out a routing decision for a request on `conn`.
    pub(super) fn act(&mut self, conn: ConnId, peer: SocketAddr, decision: Decision) {
        if self.belongs_home(&decision) {
            return self.hand_off(conn, peer, decision);
        }
        match decision {
            Decision::Respond(r) => self.respond(conn, r),
            Decision::Mcp(x) => {
                let (message, mut facts) = (x.message.clone(), x.facts.clone());
                if let Some(Conn::Http(h)) = self.conns.get(&conn) {
                    facts.log_level = h.log_level;
                }
                // A session's level, whichever connection set it.
                if let Some(level) = x.session.and_then(|s| self.session_levels.get(s.id)) {
                    facts.log_level = Some(level);
                }
                let traceparent = x.traceparent.clone();
                let answer = Answer::Mcp { x, stream: None };
                let job = Work::message(&self.server, message, facts);
                let req =
                    self.start_request(job, Some(conn), answer, Some(peer), traceparent.as_deref());
                self.set_busy(conn, Some(Busy::Request(req)));
            }
            Decision::OpenLegacyStream(open) => self.open_legacy(conn, peer, &open),
            Decision::LegacyMessage(m) => self.legacy_message(conn, peer, m),
            Decision::Operator(request) => self.operator(conn, peer, request),
            Decision::NeedKeys(request) => self.need_keys(conn, peer, request),
            Decision::Introspect(request) => self.need_introspection(conn, peer, request),
        }
    }

    /// Writes a response on `conn`; closes it if the response says so, else serves on.
    pub(super) fn respond(&mut self, conn: ConnId, response: HttpResponse) {
        let Some(Conn::Http(h)) = self.conns.get(&conn) else {
            return;
        };
        let peer = h.peer;
        let code = response.status.code();
        if matches!(code, 401 | 403 | 413 | 421 | 431 | 503) {
            let reason = response.status.reason();
            self.log_peer(&peer, format_args!("{code} {reason}"));
        }
        self.send(conn, response.to_bytes());
        if response.close {
            self.close(conn, true);
        }
    }

    /// Marks what `conn` is busy with; freeing it restarts its read clock (a kept-alive
    /// connection idles from its last answer) and serves the frames behind.
    pub(super) fn set_busy(&mut self, conn: ConnId, busy: Option<Busy>) {
        let now = self.now.mono;
        let Some(Conn::Http(h)) = self.conns.get_mut(&conn) else {
            return;
        };
        h.busy = busy;
        if busy.is_none() {
            h.clock.bytes_arrived(now, h.parser.is_idle());
            self.received(conn, None);
        }
    }

    /// `GET /sse`: the connection becomes a legacy stream under a fresh token.
    fn open_legacy(&mut self, conn: ConnId, peer: SocketAddr, open: &LegacyOpen) {
        let Some(limits) = self.http_limits().cloned() else {
            return;
        };
        if !self.admit(Stream::Legacy, conn, peer) {
            return;
        }
        let token = self.entropy.token();
        let mut first = open.head();
        first.extend(open.endpoint_event(&token));
        self.send(conn, first);
        self.legacy.insert(token.clone(), conn);
        let now = self.now.mono;
        let stream = LegacyConn {
            clock: StreamClock::new(now, limits.sse_keepalive, limits.sse_idle),
            ids: EventIds::legacy(&token),
            token,
            peer,
            version: None,
            log_level: None,
            caps: ClientCaps::NONE,
            last_event: now,
            backlog: self.take_backlog(conn),
            armed: None,
        };
        self.conns.insert(conn, Conn::Legacy(stream));
        self.arm_conn(conn);
    }

    /// What an HTTP connection becoming a stream or a feed has not written yet (it carries on).
    fn take_backlog(&mut self, conn: ConnId) -> Backlog {
        match self.conns.get_mut(&conn) {
            Some(Conn::Http(h)) => std::mem::take(&mut h.backlog),
            _ => Backlog::default(),
        }
    }

    /// Whether a new legacy stream or feed may open on `conn` for `peer`. At the per-peer cap
    /// that peer's stream (or feed) idle longest is closed to make room, at the total cap the
    /// one idle longest of anyone's; idle: no message being served (a feed always is), and
    /// longest without an event but keep-alives (blocked ones first: their clients do not
    /// read). With none idle, `503` naming the cap, and `false`.
    fn admit(&mut self, kind: Stream, conn: ConnId, peer: SocketAddr) -> bool {
        let Some(limits) = self.http_limits() else {
            return false;
        };
        let (total, per_peer) = (limits.max_legacy_streams, limits.max_streams_per_peer);
        let ip = peer.ip().to_canonical();
        // (conn, its peer, whether it may be closed, blocked, last event)
        let open: Vec<(ConnId, SocketAddr, bool, bool, Duration)> = match kind {
            Stream::Feed => self
                .feeds
                .iter()
                .filter_map(|c| match self.conns.get(c) {
                    Some(Conn::Feed(f)) => {
                        Some((*c, f.peer, true, f.backlog.blocked(), f.last_event))
                    }
                    _ => None,
                })
                .collect(),
            Stream::Legacy => self
                .legacy
                .values()
                .filter_map(|c| match self.conns.get(c) {
                    Some(Conn::Legacy(l)) => Some((
                        *c,
                        l.peer,
                        !l.clock.is_busy(),
                        l.backlog.blocked(),
                        l.last_event,
                    )),
                    _ => None,
                })
                .collect(),
        };
        let theirs = |p: &SocketAddr| p.ip().to_canonical() == ip;
        let of_peer = open.iter().filter(|o| theirs(&o.1)).count();
        let noun = kind.noun();
        let cap = if of_peer >= per_peer {
            format!(
                "the cap of {per_peer} {noun}s per peer address (BERNSTEIN_MCP_SSE_MAX_STREAMS_PER_PEER)"
            )
        } else if open.len() >= total {
            format!("the cap of {total} {noun}s (BERNSTEIN_MCP_SSE_MAX_STREAMS)")
        } else {
            return true;
        };
        let scope_peer = of_peer >= per_peer;
        let victim = open
            .iter()
            .filter(|o| o.2 && (!scope_peer || theirs(&o.1)))
            .min_by_key(|o| (!o.3, o.4));
        let now = self.now.mono;
        if let Some(&(victim, owner, _, _, last)) = victim {
            let idle = now.saturating_sub(last).as_secs();
            self.log_peer(
                &peer,
                format_args!(
                    "closed the {noun} of {owner} idle longest ({idle} s without an event) to open a new one: {cap} is reached"
                ),
            );
            self.send(victim, sse::EVICTED.to_vec());
            self.close(victim, false);
            self.wake_requests_of(victim);
            return true;
        }
        let busy = match kind {
            Stream::Legacy => "every one of them serving a message",
            Stream::Feed => "none to close",
        };
        self.log_peer(&peer, format_args!("503: {cap} is reached, {busy}"));
        let message = format!("{cap} is reached, {busy}; retry later");
        self.send(conn, over_stream_cap(&message).to_bytes());
        self.close(conn, false);
        false
    }

    /// `POST /messages?stream=…`: serves the body with its answer on the stream, or `404`
    /// when no live stream has the token.
    fn legacy_message(&mut self, conn: ConnId, peer: SocketAddr, m: LegacyMessage) {
        let now = self.now.mono;
        let stream = self.legacy.get(&m.token).copied();
        let Some(Conn::Legacy(l)) = stream.and_then(|s| self.conns.get_mut(&s)) else {
            return self.respond(conn, m.stream_gone());
        };
        if l.backlog.blocked() {
            // Its client is not reading what the stream has: the message waits (its poster
            // too), until the stream drains or closes.
            let stream = stream.unwrap_or(conn);
            self.parked.push(Parked {
                stream,
                conn,
                peer,
                m,
            });
            return self.set_busy(conn, Some(Busy::Parked));
        }
        let mut facts = m.facts.clone();
        if facts.protocol_version.is_none() {
            facts.protocol_version = l.version.clone();
        }
        facts.log_level = l.log_level;
        l.clock.message_started(now);
        let stream = stream.unwrap_or(conn);
        let span = m.span(m.message.request_span_id());
        let message = m.message.clone();
        let answer = Answer::Legacy {
            m,
            stream,
            span,
            released: false,
        };
        let job = Work::message(&self.server, message, facts);
        let req = self.start_request(job, Some(conn), answer, Some(peer), None);
        self.set_busy(conn, Some(Busy::Request(req)));
    }

    /// An operator route: the dashboards' feed is the engine's; every other route is
    /// answered by the runtime ([`Output::Operator`]).
    fn operator(&mut self, conn: ConnId, peer: SocketAddr, request: OperatorRequest) {
        if request.route != OperatorRoute::Events {
            self.set_busy(conn, Some(Busy::Operator));
            return self.push(Output::Operator { conn, request });
        }
        if !self.admit(Stream::Feed, conn, peer) {
            return;
        }
        self.send(conn, feed_head(&request.span_id));
        let now = self.now.mono;
        let feed = FeedConn {
            peer,
            told: None,
            keepalive_at: now + FEED_KEEPALIVE,
            last_event: now,
            backlog: self.take_backlog(conn),
            armed: None,
        };
        self.conns.insert(conn, Conn::Feed(feed));
        self.feeds.insert(conn);
        self.arm_conn(conn);
        // The new feed gets the head within a look.
        match self.durable {
            Some(p) => self.tell_feeds(p),
            None => self.ask_look(),
        }
        self.arm_feeds();
    }

    pub(super) fn operator_answered(&mut self, conn: ConnId, response: HttpResponse) {
        match self.conns.get(&conn) {
            Some(Conn::Http(h)) if h.busy == Some(Busy::Operator) => {}
            _ => return,
        }
        let close = response.close;
        self.respond(conn, response);
        if !close {
            self.set_busy(conn, None);
        }
    }

    /// The feeds look at the head while any is open.
    /// The subscriptions too: a write of another process is seen at the next look.
    pub(super) fn feeds_timer(&mut self) {
        if !self.feeds.is_empty() || !self.subs.is_empty() {
            self.ask_look();
            self.arm_feeds();
        }
    }

    pub(super) fn arm_feeds(&mut self) {
        let at = self.now.mono + FEED_LOOK;
        self.timers.arm(&mut self.feeds_armed, at, Due::Feeds);
    }

    /// Tells every feed that has not seen it the head `p` (durable); a blocked feed hears the
    /// newest head once it drains.
    pub(super) fn tell_feeds(&mut self, p: LedgerPosition) {
        if self.durable.is_none_or(|d| p.seq >= d.seq) {
            self.durable = Some(p);
        }
        let Some(p) = self.durable else { return };
        let now = self.now.mono;
        let mut due = Vec::new();
        for id in &self.feeds {
            if let Some(Conn::Feed(f)) = self.conns.get_mut(id)
                && f.told != Some(p)
                && !f.backlog.blocked()
            {
                f.told = Some(p);
                f.last_event = now;
                due.push(*id);
            }
        }
        for conn in due {
            self.send(conn, head_event(p.seq, &p.head.to_string()));
        }
    }

    /// Serves what a stdio connection has framed, one line at a time: a line whose answer
    /// waits for the ledger lets the next ones through.
    pub(super) fn advance_stdio(&mut self, conn: ConnId) {
        loop {
            let Some(Conn::Stdio(s)) = self.conns.get_mut(&conn) else {
                return;
            };
            if s.foreground.is_some() {
                return;
            }
            let Some(line) = s.framer.poll_line() else {
                if s.eof && s.open == 0 {
                    self.close(conn, false);
                }
                return;
            };
            let bytes = match line {
                Line::Message(b) if b.iter().all(u8::is_ascii_whitespace) => continue,
                Line::Message(b) => b,
                Line::Oversize(n) => {
                    let limit = self.server.config.limits.max_message_bytes;
                    self.log(format!(
                        "bernstein: refused a {n}-byte message (limit {limit} bytes)"
                    ));
                    let mut reply = self.server.oversize_reply(n);
                    reply.push(b'\n');
                    self.send(conn, reply);
                    continue;
                }
            };
            let facts = s.facts.clone();
            s.open += 1;
            // The framing is the first layer that sees the line: it is read here, once.
            let message = self.server.read_message(bytes);
            let job = Work::message(&self.server, message, facts);
            let req = self.start_request(job, Some(conn), Answer::Stdio, None, None);
            if let Some(Conn::Stdio(s)) = self.conns.get_mut(&conn) {
                s.foreground = Some(req);
            }
        }
    }

    /// Shutdown: waiting answers are sent as they stand, streams and feeds close, idle
    /// connections close and busy ones after their answer.
    pub(super) fn shutdown(&mut self) {
        self.shutting_down = true;
        self.end_listens();
        self.keys_shutdown();
        self.introspection_shutdown();
        if self.grace_ends.is_none()
            && let Some(grace) = self.http_limits().map(|l| l.shutdown_grace)
        {
            let at = self.now.mono + grace;
            self.grace_ends = Some(at);
            self.timers.arm(&mut None, at, Due::Grace);
        }
        let waiting: Vec<_> = self.reqs.keys().copied().collect();
        for req in waiting {
            self.wake(req);
        }
        let conns: Vec<ConnId> = self.conns.keys().copied().collect();
        for conn in conns {
            match self.conns.get(&conn) {
                Some(Conn::Legacy(_) | Conn::Feed(_)) => self.close(conn, false),
                Some(Conn::Http(h)) if h.busy.is_none() => self.close(conn, false),
                _ => {}
            }
        }
    }

    pub(super) fn http_limits(&self) -> Option<&crate::transport::http::HttpLimits> {
        self.http.as_ref().map(|h| &h.options.limits)
    }

    /// A line about one peer, within the process's budget of such lines ([`LogBudget`]).
    pub(super) fn log_peer(&mut self, peer: &SocketAddr, message: core::fmt::Arguments<'_>) {
        self.log_peer_line(false, peer, message);
    }

    /// [`Self::log_peer`], or with `tls` a line about a failed TLS handshake (`bernstein
    /// https:`), which has a budget of its own.
    pub(super) fn log_peer_line(
        &mut self,
        tls: bool,
        peer: &SocketAddr,
        message: core::fmt::Arguments<'_>,
    ) {
        let admit = self.sharing.shared.admit_peer_line(tls, self.now.mono);
        if let Admit::Write { left_out } = admit {
            let prefix = if tls {
                "bernstein https: "
            } else {
                "bernstein http: "
            };
            if left_out > 0 {
                self.log(LogBudget::summary(prefix, left_out));
            }
            self.log(format!("{prefix}{peer}: {message}"));
        }
    }
}

/// The two kinds of long-lived streams, capped alike (each kind counted on its own).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stream {
    Legacy,
    Feed,
}

impl Stream {
    fn noun(self) -> &'static str {
        match self {
            Stream::Legacy => "legacy SSE stream",
            Stream::Feed => "dashboard feed",
        }
    }
}
