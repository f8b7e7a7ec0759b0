//! The glue between a framed HTTP request and the request driver, shared by both runtimes:
//! route with the core's [`HttpPolicy`], serve MCP bodies with [`serve_message`], and turn the
//! result into the response the core's exchange functions describe. Also the registry of open
//! legacy SSE streams (an opaque token → the live stream and the revision it negotiated):
//! connection plumbing, never session state — a token whose connection is gone is forgotten.
//!
//! Every call here may block (the ledger does file IO and fsync); the smol runtime runs them on
//! its blocking pool. No HTTP or protocol rule lives here: those are the core's.

use std::collections::HashMap;
use std::io;
use std::sync::{Arc, Mutex, MutexGuard};

use bernstein_core::protocol::Server;
use bernstein_core::transport::http::exchange::{
    LegacyMessage, LegacyOpen, McpExchange, ServedParts,
};
use bernstein_core::transport::http::response::route_span_id;
use bernstein_core::transport::http::{
    Decision, HttpOptions, HttpPolicy, HttpResponse, ParamHeaders, Request, Status,
};

use super::inflight::Inflight;
use crate::driver::Backend;
use crate::driver::{DEFAULT_WAIT, Served, Stop, serve_message_with};
use bernstein_core::protocol::tasks::{cancelled_request, request_id};

/// What the connection must do next.
#[derive(Debug)]
pub enum Action {
    /// Write this response (then close if it says so).
    Write(HttpResponse),
    /// Turn this connection into a legacy SSE stream.
    OpenLegacy(LegacyOpen),
}

/// Where the events of one legacy SSE stream go.
pub trait EventSink: Send + Sync {
    /// Writes whole events; an `Err` means the stream is gone.
    fn send(&self, events: &[u8]) -> io::Result<()>;
    /// Whether the peer still holds the stream open (best effort).
    fn is_open(&self) -> bool;
}

struct StreamEntry {
    sink: Arc<dyn EventSink>,
    /// The revision `initialize` negotiated on this stream (a transport fact, like stdio's).
    version: Option<String>,
}

/// Open legacy SSE streams by token.
pub struct LegacyStreams {
    max: usize,
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
    pub fn new(max: usize) -> LegacyStreams {
        LegacyStreams {
            max,
            streams: Mutex::new(HashMap::new()),
        }
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<String, StreamEntry>> {
        // A panic while holding this lock cannot leave the map inconsistent (single inserts
        // and removes), so a poisoned lock is still usable.
        self.streams.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Registers a stream under a fresh unguessable token; `None` when at capacity.
    pub fn register(&self, sink: Arc<dyn EventSink>) -> io::Result<Option<String>> {
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

    fn set_version(&self, token: &str, version: String) {
        if let Some(e) = self.lock().get_mut(token) {
            e.version = Some(version);
        }
    }

    /// Writes `events` to every stream (keep-alive comments) and forgets the ones that fail.
    pub fn broadcast(&self, events: &[u8]) {
        let sinks: Vec<(String, Arc<dyn EventSink>)> = self
            .lock()
            .iter()
            .map(|(t, e)| (t.clone(), e.sink.clone()))
            .collect();
        for (token, sink) in sinks {
            if !sink.is_open() || sink.send(events).is_err() {
                self.remove(&token);
            }
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
        let legacy = LegacyStreams::new(options.limits.max_legacy_streams);
        // The tools' `Mcp-Param-*` bindings (SEP-2243), read once from their input schemas.
        let policy = policy.with_param_headers(ParamHeaders::of(&server));
        HttpService {
            server,
            backend,
            policy,
            options,
            legacy,
            inflight: Inflight::default(),
        }
    }

    /// Routes a request (pure and cheap: safe on an async executor).
    pub fn route(&self, request: Request, peer_loopback: bool) -> Decision {
        self.policy
            .route(request, peer_loopback, self.backend.clock.now())
    }

    /// Routes and serves a request (may block on the ledger). `gone` tells whether the peer
    /// closed its connection meanwhile (which cancels a waiting request).
    pub fn handle(&self, request: Request, peer_loopback: bool, gone: &dyn Fn() -> bool) -> Action {
        self.act(self.route(request, peer_loopback), gone)
    }

    /// Carries out a routing decision (may block on the ledger).
    pub fn act(&self, decision: Decision, gone: &dyn Fn() -> bool) -> Action {
        match decision {
            Decision::Respond(r) => Action::Write(r),
            Decision::Mcp(x) => Action::Write(self.serve_mcp(&x, gone)),
            Decision::OpenLegacyStream(open) => Action::OpenLegacy(open),
            Decision::LegacyMessage(m) => Action::Write(self.serve_legacy(&m)),
            other => {
                crate::log_line!("bernstein http: unhandled routing decision {other:?}");
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

    /// `POST /mcp`: serve the body, then the core shapes the HTTP response.
    pub fn serve_mcp(&self, x: &McpExchange, gone: &dyn Fn() -> bool) -> HttpResponse {
        let served = self.serve(&x.body, &x.facts, gone);
        x.reply(parts(&served))
    }

    /// `POST /messages?stream=…`: serve the body and put the reply on the stream.
    pub fn serve_legacy(&self, m: &LegacyMessage) -> HttpResponse {
        let Some((sink, version)) = self.legacy.get(&m.token).filter(|(s, _)| s.is_open()) else {
            self.legacy.remove(&m.token);
            return m.stream_gone();
        };
        let mut facts = m.facts.clone();
        if facts.protocol_version.is_none() {
            facts.protocol_version = version;
        }
        let served = self.serve(&m.body, &facts, &|| !sink.is_open());
        if let Some(v) = &served.negotiated_version {
            self.legacy.set_version(&m.token, v.clone());
        }
        let events = m.events(parts(&served));
        if !events.is_empty() && sink.send(&events).is_err() {
            self.legacy.remove(&m.token);
            return m.stream_gone();
        }
        m.accepted(served.span_id.as_deref())
    }

    /// Serves one body. A `notifications/cancelled` first cancels the request it names; a
    /// request is registered while it is served, and its wait ends as cancelled when a
    /// cancellation names it or `gone` says the peer left.
    fn serve(
        &self,
        body: &[u8],
        facts: &bernstein_core::protocol::TransportFacts,
        gone: &dyn Fn() -> bool,
    ) -> Served {
        if let Some(id) = cancelled_request(body) {
            self.inflight.cancel(&id);
        }
        let entry = request_id(body).map(|id| self.inflight.enter(id));
        let stop = || {
            let cancelled = entry.as_ref().is_some_and(|e| e.cancelled()) || gone();
            cancelled.then_some(Stop::Cancel)
        };
        let env = self.backend.env();
        match serve_message_with(&self.server, &env, body, facts, &DEFAULT_WAIT, &stop) {
            Ok(served) => served,
            Err(e) => {
                crate::log_line!("bernstein http: ledger error: {e}");
                Served {
                    response: Some(self.server.storage_failure_reply(body, &e.to_string())),
                    ..Served::default()
                }
            }
        }
    }
}

fn parts(served: &Served) -> ServedParts<'_> {
    ServedParts {
        notifications: &served.notifications,
        response: served.response.as_deref(),
        span_id: served.span_id.as_deref(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, Ordering};

    struct Probe {
        open: AtomicBool,
        got: Mutex<Vec<u8>>,
    }

    impl EventSink for Probe {
        fn send(&self, events: &[u8]) -> io::Result<()> {
            if !self.open.load(Ordering::SeqCst) {
                return Err(io::ErrorKind::BrokenPipe.into());
            }
            self.got.lock().unwrap().extend_from_slice(events);
            Ok(())
        }
        fn is_open(&self) -> bool {
            self.open.load(Ordering::SeqCst)
        }
    }

    #[test]
    fn registry_caps_tokens_and_forgets_dead_streams() {
        let streams = LegacyStreams::new(2);
        let live = Arc::new(Probe {
            open: AtomicBool::new(true),
            got: Mutex::new(Vec::new()),
        });
        let dead = Arc::new(Probe {
            open: AtomicBool::new(true),
            got: Mutex::new(Vec::new()),
        });
        let a = streams.register(live.clone()).unwrap().unwrap();
        let b = streams.register(dead.clone()).unwrap().unwrap();
        assert_ne!(a, b);
        assert_eq!(a.len(), 32);
        assert_eq!(streams.register(live.clone()).unwrap(), None, "at capacity");
        dead.open.store(false, Ordering::SeqCst);
        streams.broadcast(b": ping\n\n");
        assert_eq!(streams.len(), 1);
        assert!(streams.get(&b).is_none());
        assert_eq!(live.got.lock().unwrap().as_slice(), b": ping\n\n");
        streams.set_version(&a, "2024-11-05".into());
        assert_eq!(streams.get(&a).unwrap().1.as_deref(), Some("2024-11-05"));
        streams.clear();
        assert!(streams.is_empty());
    }
}
