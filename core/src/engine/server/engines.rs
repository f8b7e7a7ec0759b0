//! What crosses between the engines of one process (`engine/shared.rs` says what they share):
//! the notices one tells the others, and the connections handed to engine
//! [`HOME`](crate::engine::shared::HOME) because their request carries state it keeps.

use core::net::SocketAddr;
use std::sync::MutexGuard;

use super::{Conn, ConnId, Engine, Output};
use crate::engine::counters::Counters;
use crate::engine::shared::{HOME, Notice, Sharing};
use crate::ledger::Fold;
use crate::transport::http::operator::OperatorRoute;
use crate::transport::http::router::Decision;

/// A connection on its way to another engine: its peer, the request its first engine routed,
/// and the bytes it had buffered behind that request.
#[derive(Debug)]
pub struct Handed {
    pub peer: SocketAddr,
    decision: Decision,
    rest: Vec<u8>,
}

impl<F: Fold> Engine<F> {
    /// This engine's counters, to update.
    pub(super) fn counters_mut(&self) -> MutexGuard<'_, Counters> {
        self.sharing.shared.counters(self.sharing.index)
    }

    /// Whether other engines share this process.
    pub(super) fn has_peers(&self) -> bool {
        self.sharing.shared.engines() > 1
    }

    /// Tells the other engines, if there are any; that this engine's commits are durable,
    /// only if another listens for it.
    pub(super) fn tell(&mut self, notice: Notice) {
        let Sharing { index, shared } = &self.sharing;
        let heard = match notice {
            Notice::Committed => shared.others_listen(*index),
            _ => self.has_peers(),
        };
        if heard {
            self.push(Output::Tell(notice));
        }
    }

    /// Publishes whether this engine has something a commit elsewhere may wake (`napping`: a
    /// wait parked on the head); see [`Shared::listen`](crate::engine::shared::Shared::listen).
    /// Starting to listen, it looks at the head: a commit made before was not told.
    pub(super) fn listen(&mut self, napping: bool) {
        if !self.has_peers() {
            return;
        }
        let listening = napping || !self.feeds.is_empty() || !self.subs.is_empty();
        let Sharing { index, shared } = &self.sharing;
        if shared.listen(*index, listening) {
            self.heard_move |= napping;
            self.ask_look();
        }
    }

    pub(super) fn told(&mut self, notice: Notice) {
        match notice {
            Notice::Committed => self.head_moved(),
            Notice::Cancelled { id, from } => {
                self.cancel(&id);
                if from.is_some() {
                    self.cancel_listens(None, from, &id);
                }
            }
            Notice::SessionLevel { session, level } => self.session_levels.set(session, level),
            Notice::Answered {
                question,
                answer,
                from,
            } => self.client_answered(&question, answer, from.as_ref()),
            Notice::Keys(result) => self.told_keys(result),
            Notice::Introspected { digest, result } => self.told_introspected(digest, result),
        }
    }

    /// Whether a request routed here must be served by engine [`HOME`]: it belongs to the
    /// legacy SSE transport, whose streams that engine holds by token, or opens a dashboard
    /// feed. Both kinds of stream are capped with the one idle longest closed for a new one,
    /// which only one engine holding them all can do.
    pub(super) fn belongs_home(&self, decision: &Decision) -> bool {
        self.sharing.index != HOME
            && match decision {
                Decision::OpenLegacyStream(_) | Decision::LegacyMessage(_) => true,
                Decision::Operator(r) => r.route == OperatorRoute::Events,
                _ => false,
            }
    }

    /// Hands `conn` and its routed request to engine [`HOME`] and forgets it here (it stays
    /// open: the connection count is unchanged).
    pub(super) fn hand_off(&mut self, conn: ConnId, peer: SocketAddr, decision: Decision) {
        let Some(Conn::Http(mut h)) = self.conns.remove(&conn) else {
            return;
        };
        self.blocked.remove(&conn);
        let rest = h.parser.take_buffered();
        let handed = Box::new(Handed {
            peer,
            decision,
            rest,
        });
        self.push(Output::HandOff { conn, handed });
    }

    /// A connection another engine handed over: it is served here from now on.
    pub(super) fn adopted(&mut self, conn: ConnId, handed: Handed) {
        let Handed {
            peer,
            decision,
            rest,
        } = handed;
        if !self.open_http(conn, peer) {
            // Shutting down: the connection was counted open by the engine that accepted it.
            self.sharing.shared.close_connection();
            return;
        }
        if let Some(Conn::Http(h)) = self.conns.get_mut(&conn) {
            h.parser.handle_bytes(&rest);
        }
        self.act(conn, peer, decision);
    }
}
