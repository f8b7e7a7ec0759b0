//! The issuer's keys (OAuth resource-server mode): the set the engine holds, when it last
//! asked the runtime for them, and the requests parked until they come. A request whose
//! access token names a key the engine lacks parks (in memory: the request, its connection and
//! peer) and the engine asks for the keys ([`Output::FetchKeys`]) unless it asked less than
//! [`REFETCH_AFTER`] ago: then the token is refused at once, so that a flood of unknown `kid`s
//! costs the issuer one fetch per interval. The answer ([`Input::Keys`](super::Input::Keys))
//! replaces the set (rotation needs no restart) and routes each parked request again; a failed
//! fetch answers them `503`, and so does a shutdown.

use core::net::SocketAddr;
use core::time::Duration;

use serde_json::Value;

use super::{Busy, Conn, ConnId, Engine, Output};
use crate::ledger::Fold;
use crate::transport::http::jwt::KeySet;
use crate::transport::http::{Decision, HttpResponse, Known, Request};

/// Shortest time between two fetches of the issuer's keys.
pub const REFETCH_AFTER: Duration = Duration::from_secs(5);

/// What the engine holds of the issuer's keys.
#[derive(Debug, Default)]
pub(super) struct Keys {
    set: KeySet,
    /// When the last fetch was asked for (engine clock).
    asked_at: Option<Duration>,
    fetching: bool,
    parked: Vec<ParkedAuth>,
}

impl Keys {
    pub(super) fn set(&self) -> &KeySet {
        &self.set
    }
}

/// A request waiting for the issuer (its keys, or its token's introspection).
#[derive(Debug)]
pub(super) struct ParkedAuth {
    pub(super) conn: ConnId,
    pub(super) peer: SocketAddr,
    pub(super) request: Request,
}

impl<F: Fold> Engine<F> {
    /// `request`'s token names a key the engine lacks: park it and fetch, or refuse it when a
    /// fetch was asked for too recently.
    pub(super) fn need_keys(&mut self, conn: ConnId, peer: SocketAddr, request: Request) {
        let Some(http) = &self.http else { return };
        let Some(oauth) = http.policy.oauth() else {
            return;
        };
        let now = self.now.mono;
        if !self.keys.fetching {
            let recent = self
                .keys
                .asked_at
                .is_some_and(|at| now.saturating_sub(at) < REFETCH_AFTER);
            if recent {
                let response = http.policy.unknown_key(&request);
                return self.respond(conn, response);
            }
            let fetch = Output::FetchKeys {
                issuer: oauth.issuer.clone(),
                jwks_url: oauth.jwks_url.clone(),
            };
            self.keys.fetching = true;
            self.keys.asked_at = Some(now);
            // Unless another engine of the process fetches already: it tells this one.
            if self.sharing.shared.fetch_keys() {
                self.push(fetch);
            }
        }
        self.keys.parked.push(ParkedAuth {
            conn,
            peer,
            request,
        });
        self.set_busy(conn, Some(Busy::Keys));
    }

    /// Shutdown: the requests waiting for the keys are answered `503` at once (they would
    /// otherwise hold their connections past the last request).
    pub(super) fn keys_shutdown(&mut self) {
        let Some(http) = &self.http else { return };
        let answers: Vec<_> = std::mem::take(&mut self.keys.parked)
            .into_iter()
            .map(|p| {
                let why = "the server is shutting down";
                (p.conn, http.policy.keys_unavailable(&p.request, why))
            })
            .collect();
        self.answer_parked(answers, Busy::Keys);
    }

    /// Answers parked requests whose connections still wait for `busy`, each with a closing
    /// response (the connection is closed once it is written).
    pub(super) fn answer_parked(&mut self, answers: Vec<(ConnId, HttpResponse)>, busy: Busy) {
        for (conn, response) in answers {
            if matches!(self.conns.get(&conn), Some(Conn::Http(h)) if h.busy == Some(busy)) {
                self.respond(conn, response.closing());
            }
        }
    }

    /// What another engine's fetch of the keys brought: the requests parked here go on with
    /// it, and the keys route here too, so that they are fetched once per process.
    pub(super) fn told_keys(&mut self, result: Result<Value, String>) {
        if self.keys.fetching {
            return self.keys_fetched(result);
        }
        if let Ok(set) = result.and_then(|doc| KeySet::from_jwks(&doc)) {
            self.keys.set = set;
        }
    }

    /// The runtime's answer to [`Output::FetchKeys`]: the issuer's JWKS, or why it could not
    /// be fetched.
    pub(super) fn keys_fetched(&mut self, result: Result<Value, String>) {
        self.keys.fetching = false;
        let result = result.and_then(|doc| KeySet::from_jwks(&doc));
        match &result {
            Ok(set) => {
                let n = set.len();
                self.log(format!(
                    "bernstein http: fetched the issuer's keys ({n} usable)"
                ));
                self.keys.set = set.clone();
            }
            Err(why) => self.log(format!(
                "bernstein http: the issuer's keys could not be fetched: {why}"
            )),
        }
        for p in std::mem::take(&mut self.keys.parked) {
            match self.conns.get_mut(&p.conn) {
                Some(Conn::Http(h)) if h.busy == Some(Busy::Keys) => h.busy = None,
                _ => continue,
            }
            let Some(http) = &self.http else { return };
            match &result {
                Ok(_) => {
                    let loopback = p.peer.ip().to_canonical().is_loopback();
                    let known = Known {
                        keys: &self.keys.set,
                        answers: self.introspection.answers(),
                        mono: self.now.mono,
                    };
                    let decision =
                        http.policy
                            .route_with(p.request, loopback, self.now.wall, &known);
                    match decision {
                        Decision::NeedKeys(request) => {
                            let response = http.policy.unknown_key(&request);
                            self.respond(p.conn, response);
                        }
                        decision => self.act(p.conn, p.peer, decision),
                    }
                }
                Err(why) => {
                    let response = http.policy.keys_unavailable(&p.request, why);
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
