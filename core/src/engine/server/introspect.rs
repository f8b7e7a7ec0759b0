//! Opaque access tokens (OAuth resource-server mode with RFC 7662 introspection): the answers
//! the engine keeps ([`AnswerCache`]), the introspections in flight and the requests parked on
//! them. A request whose opaque token has no fresh answer parks (in memory: the request, its
//! connection and peer) and the engine asks the runtime to introspect the token
//! ([`Output::Introspect`]); every request with the same token that comes meanwhile parks on
//! the same introspection. At most [`MAX_IN_FLIGHT`] distinct tokens are introspected at once:
//! a request beyond is answered `503` with `Retry-After` at once. The answer
//! ([`Input::Introspected`](super::Input::Introspected)) is kept and routes each parked request
//! again; a failed introspection (IdP down, slow, a non-200 or non-JSON answer) answers them
//! `503` and is not kept, and so does a shutdown.

use core::net::SocketAddr;
use core::time::Duration;
use std::collections::BTreeMap;

use serde_json::Value;

use super::keys::ParkedAuth;
use super::{Busy, Conn, ConnId, Engine, Output};
use crate::ledger::Fold;
use crate::transport::http::introspection::{Answer, AnswerCache, IntrospectRequest, TokenDigest};
use crate::transport::http::{Decision, Known, Request};

/// Most distinct tokens introspected at once.
pub const MAX_IN_FLIGHT: usize = 16;
/// What a request refused for the bound is told to wait, in seconds.
const BUSY_RETRY_SECS: u32 = 1;
/// What a request whose introspection failed is told to wait, in seconds.
const FAILED_RETRY_SECS: u32 = 5;

/// The answers kept and the introspections in flight.
#[derive(Debug, Default)]
pub(super) struct Introspections {
    answers: AnswerCache,
    in_flight: BTreeMap<TokenDigest, Vec<ParkedAuth>>,
}

impl Introspections {
    pub(super) fn answers(&self) -> &AnswerCache {
        &self.answers
    }
}

impl<F: Fold> Engine<F> {
    /// `request`'s opaque token has no fresh answer: park it on the token's introspection
    /// (asking for one unless it is in flight), or refuse it over the bound.
    pub(super) fn need_introspection(&mut self, conn: ConnId, peer: SocketAddr, request: Request) {
        let Some(http) = &self.http else { return };
        let (Some(oauth), Some(token)) = (http.policy.oauth(), http.policy.opaque_token(&request))
        else {
            return;
        };
        let Some(config) = &oauth.introspection else {
            return;
        };
        let digest = token.digest();
        if !self.introspection.in_flight.contains_key(&digest) {
            if self.introspection.in_flight.len() >= MAX_IN_FLIGHT {
                let why = format!("{MAX_IN_FLIGHT} introspections are in flight already");
                let response =
                    http.policy
                        .introspection_unavailable(&request, &why, BUSY_RETRY_SECS);
                return self.respond(conn, response);
            }
            self.introspection.in_flight.insert(digest, Vec::new());
            // Unless another engine of the process asks already: it tells this one the answer.
            if self.sharing.shared.introspect(digest) {
                let ask = IntrospectRequest::new(&oauth.issuer, config, token);
                self.push(Output::Introspect(Box::new(ask)));
            }
        }
        if let Some(parked) = self.introspection.in_flight.get_mut(&digest) {
            parked.push(ParkedAuth {
                conn,
                peer,
                request,
            });
        }
        self.set_busy(conn, Some(Busy::Introspection));
    }

    /// Shutdown: the requests waiting for an introspection are answered `503` at once.
    pub(super) fn introspection_shutdown(&mut self) {
        let Some(http) = &self.http else { return };
        let answers: Vec<_> = std::mem::take(&mut self.introspection.in_flight)
            .into_values()
            .flatten()
            .map(|p| {
                let why = "the server is shutting down";
                let response =
                    http.policy
                        .introspection_unavailable(&p.request, why, FAILED_RETRY_SECS);
                (p.conn, response)
            })
            .collect();
        self.answer_parked(answers, Busy::Introspection);
    }

    /// The runtime's answer to [`Output::Introspect`] for the token of `digest`.
    /// Keeps an introspection answer for the configured lifetime.
    fn cache_introspection(&mut self, digest: TokenDigest, answer: Answer) {
        let ttl = self
            .http
            .as_ref()
            .and_then(|h| h.policy.oauth())
            .and_then(|o| o.introspection.as_ref())
            .map_or(Duration::ZERO, |c| Duration::from_secs(c.cache_secs));
        let now_secs = self.now.wall.0 / 1000;
        let answers = &mut self.introspection.answers;
        answers.insert(digest, answer, self.now.mono, now_secs, ttl);
    }

    /// Another engine's introspection answer: the requests parked here on that token go on
    /// with it, and it is kept here too, so that a token costs one introspection per process.
    pub(super) fn told_introspected(&mut self, digest: TokenDigest, result: Result<Value, String>) {
        if self.introspection.in_flight.contains_key(&digest) {
            return self.introspected(digest, result);
        }
        if let Ok(answer) = result.and_then(|doc| Answer::read(&doc)) {
            self.cache_introspection(digest, answer);
        }
    }

    pub(super) fn introspected(&mut self, digest: TokenDigest, result: Result<Value, String>) {
        // Not asked for, or asked before a shutdown answered its requests.
        let Some(parked) = self.introspection.in_flight.remove(&digest) else {
            return;
        };
        let result = result.and_then(|doc| Answer::read(&doc));
        match &result {
            Ok(answer) => self.cache_introspection(digest, answer.clone()),
            Err(why) => {
                if let Some(p) = parked.first() {
                    let peer = p.peer;
                    self.log_peer(
                        &peer,
                        format_args!("the introspection of token {digest} failed: {why}"),
                    );
                }
            }
        }
        for p in parked {
            match self.conns.get_mut(&p.conn) {
                Some(Conn::Http(h)) if h.busy == Some(Busy::Introspection) => h.busy = None,
                _ => continue,
            }
            let Some(http) = &self.http else { return };
            match &result {
                Ok(_) => {
                    let loopback = p.peer.ip().to_canonical().is_loopback();
                    let known = Known {
                        keys: self.keys.set(),
                        answers: &self.introspection.answers,
                        mono: self.now.mono,
                    };
                    match http
                        .policy
                        .route_with(p.request, loopback, self.now.wall, &known)
                    {
                        // The answer was not kept (a zero lifetime): refuse, never loop.
                        Decision::Introspect(request) => {
                            let response = http.policy.introspection_refused(&request);
                            self.respond(p.conn, response);
                        }
                        decision => self.act(p.conn, p.peer, decision),
                    }
                }
                Err(why) => {
                    let response =
                        http.policy
                            .introspection_unavailable(&p.request, why, FAILED_RETRY_SECS);
                    self.respond(p.conn, response);
                }
            }
            if matches!(self.conns.get(&p.conn), Some(Conn::Http(h)) if h.busy.is_none()) {
                // Answered at once: the requests behind it go on.
                self.set_busy(p.conn, None);
            }
        }
    }
}
