//! The engine's resource subscriptions ([`Subscriptions`]): held when a subscription method is
//! answered, told when the head moves, dropped with their connection, a cancellation or
//! shutdown.
//!
//! Where updates go: a stdio connection (lines), a legacy SSE stream (events), or the SSE
//! answer of a `subscriptions/listen` POST, which stays open (the connection carries nothing
//! else until it closes). Streamable HTTP has no standing stream in the handshake era (no
//! sessions): `resources/subscribe` there is answered but holds nothing, and the capability is
//! not advertised (docs/ARCHITECTURE.md, "Subscriptions").
//!
//! The head is looked at once a commit of this server that wrote a watched stream is durable,
//! and every [`super::FEED_LOOK`] while any subscription is held (other processes' writes).

use core::net::IpAddr;
use std::collections::BTreeMap;

use serde_json::Value;

use super::{Answer, Busy, Conn, ConnId, Engine, Req};
use crate::digest::Digest;
use crate::engine::Served;
use crate::engine::job::Work;
use crate::engine::subscriptions::{Full, SubId};
use crate::ledger::{Fold, Snapshot};
use crate::protocol::jsonrpc::RpcError;
use crate::protocol::subscriptions::{self, Order};
use crate::protocol::{ClientMessage, Response};
use crate::transport::http::exchange::{StreamedReply, body_span_id};
use crate::transport::http::sse;

/// JSON-RPC code of a subscription refused at a cap (a server error: retry after
/// unsubscribing, or later).
const TOO_MANY_SUBSCRIPTIONS: i64 = -32000;

impl<F: Fold> Engine<F> {
    /// Holds what a served subscription method asks (`order`), before its answer is written;
    /// a refusal replaces the answer. `true` when the connection became a listen stream (its
    /// head and acknowledgement are sent: nothing else to write).
    pub(super) fn hold(
        &mut self,
        r: &mut Req<F>,
        conn: ConnId,
        order: Order,
        served: &mut Served,
    ) -> bool {
        // The standing stream of the handshake era, if the transport has one.
        let standing = match &r.answer {
            Answer::Stdio => Some(conn),
            Answer::Legacy { stream, .. } => Some(*stream),
            Answer::Mcp { .. } | Answer::Job { .. } => None,
        };
        let refusal = match order {
            Order::Subscribe(w) => match standing {
                Some(c) => self.subs.subscribe(c, w).err().map(full),
                None => None,
            },
            Order::Unsubscribe { uri } => {
                if let Some(c) = standing {
                    self.subs.unsubscribe(c, &uri);
                }
                None
            }
            Order::Listen { id, watched, ack } => match &mut r.answer {
                Answer::Stdio => match self.subs.listen(conn, id, watched) {
                    Ok(_) => {
                        served.notifications.push(ack);
                        None
                    }
                    Err(e) => Some(full(e)),
                },
                Answer::Mcp { x, stream } => {
                    let span = x
                        .message
                        .request_span_id()
                        .map_or_else(|| body_span_id(x.message.bytes()), String::from);
                    let opened = stream.is_none();
                    match stream.clone().or_else(|| StreamedReply::open(x, &span)) {
                        None => Some(RpcError::new(
                            -32600,
                            "subscriptions/listen answers with a stream: send Accept: text/event-stream",
                        )),
                        Some(reply) => match self.subs.listen(conn, id, watched) {
                            Ok(sub) => {
                                *stream = None;
                                self.open_listen(conn, sub, reply, opened, &ack);
                                return true;
                            }
                            Err(e) => Some(full(e)),
                        },
                    }
                }
                Answer::Legacy { .. } | Answer::Job { .. } => Some(RpcError::new(
                    -32600,
                    "subscriptions/listen is served on stdio and at /mcp",
                )),
            },
        };
        match refusal {
            Some(err) => {
                if let Work::Message(m) = r.machine.job() {
                    let response = refused(&m.message, &err);
                    served.kind = response.kind();
                    served.response = Some(response.render(0));
                }
            }
            None if !self.subs.is_empty() => self.arm_feeds(),
            None => {}
        }
        false
    }

    /// The POST's answer becomes the listen stream: its head (unless a notification opened
    /// it already), the acknowledgement, then nothing but the subscription's messages.
    fn open_listen(
        &mut self,
        conn: ConnId,
        sub: SubId,
        mut reply: StreamedReply,
        opened: bool,
        ack: &[u8],
    ) {
        let mut bytes = if opened { reply.head() } else { Vec::new() };
        bytes.extend(reply.event(ack));
        self.send(conn, bytes);
        self.listen_streams.insert(sub, reply);
        if let Some(Conn::Http(h)) = self.conns.get_mut(&conn) {
            h.busy = Some(Busy::Listen);
        }
        self.arm_feeds();
    }

    /// Forgets every subscription of a connection that closed.
    pub(super) fn drop_subscriptions(&mut self, conn: ConnId) {
        for (sub, _) in self.subs.end_conn(conn) {
            self.listen_streams.remove(&sub);
        }
    }

    /// A `notifications/cancelled` arriving on `from` (or told by another engine: `None`) from
    /// the peer address `origin` and naming a listen stream's id ends it: on stdio the
    /// connection's own, over HTTP those opened from the same peer address (no sessions;
    /// closing the stream is the other way to end it).
    pub(super) fn cancel_listens(
        &mut self,
        from: Option<ConnId>,
        origin: Option<IpAddr>,
        named: &str,
    ) {
        let ip = |conns: &BTreeMap<ConnId, Conn>, c: &ConnId| match conns.get(c) {
            Some(Conn::Http(h)) => Some(h.peer.ip().to_canonical()),
            _ => None,
        };
        let origin = origin.map(|ip| ip.to_canonical());
        for (sub, conn) in self.subs.tagged(named) {
            if Some(conn) != from && (origin.is_none() || ip(&self.conns, &conn) != origin) {
                continue;
            }
            self.subs.end(sub);
            if self.listen_streams.remove(&sub).is_some() {
                self.close(conn, true);
            }
        }
    }

    /// Shutdown: each listen stream gets the response that ends it gracefully.
    pub(super) fn end_listens(&mut self) {
        for (sub, conn, tag) in self.subs.listens() {
            let id: Value = serde_json::from_str(&tag).unwrap_or(Value::Null);
            let ended = subscriptions::listen_ended(&id);
            self.subs.end(sub);
            match self.listen_streams.remove(&sub) {
                Some(mut reply) => {
                    let event = reply.event(&ended);
                    self.send(conn, event);
                    self.close(conn, true);
                }
                None => self.send_line(conn, ended),
            }
        }
    }

    /// The head moved: each resource rendered from a stream that moved is rendered again, and
    /// its subscribers hear `notifications/resources/updated` if its rendering changed.
    pub(super) fn tell_subscribers(&mut self, head: &Snapshot<F>) {
        let now = self.now.wall;
        // Each resource is rendered once, however many subscribe to it.
        let mut rendered: BTreeMap<String, Option<Digest>> = BTreeMap::new();
        for (sub, uri) in self.subs.due(head) {
            let digest = *rendered.entry(uri.clone()).or_insert_with(|| {
                subscriptions::render(&self.server, head, now, &uri).map(|w| w.digest)
            });
            // A resource that is gone keeps its last rendering (runs and tasks never go).
            if digest.is_some_and(|d| self.subs.changed(sub, &uri, d)) {
                self.send_update(sub, &uri);
            }
        }
    }

    fn send_update(&mut self, sub: SubId, uri: &str) {
        let Some((conn, tag)) = self.subs.sink(sub) else {
            return;
        };
        let tag: Option<Value> = tag.and_then(|t| serde_json::from_str(t).ok());
        let note = subscriptions::updated(uri, tag.as_ref());
        let now = self.now.mono;
        match self.conns.get_mut(&conn) {
            Some(Conn::Stdio(_)) => self.send_line(conn, note),
            Some(Conn::Legacy(l)) => {
                l.last_event = now;
                let span = &Digest::of(&note).hex()[..16];
                let mut event = Vec::new();
                sse::push_event(&mut event, &l.ids.next(span), "message", &note);
                self.send(conn, event);
            }
            Some(Conn::Http(h)) => {
                let peer = h.peer;
                if self.blocked.contains(&conn) {
                    // Its client does not read what it has: the stream ends rather than grow.
                    self.log_peer(
                        &peer,
                        format_args!(
                            "closed a subscriptions/listen stream its client does not read"
                        ),
                    );
                    return self.close(conn, false);
                }
                if let Some(reply) = self.listen_streams.get_mut(&sub) {
                    let event = reply.event(&note);
                    self.send(conn, event);
                }
            }
            Some(Conn::Feed(_)) | None => {}
        }
    }

    fn send_line(&mut self, conn: ConnId, mut bytes: Vec<u8>) {
        bytes.push(b'\n');
        self.send(conn, bytes);
    }
}

fn full(e: Full) -> RpcError {
    RpcError::new(TOO_MANY_SUBSCRIPTIONS, e.message()).with_data(serde_json::json!({
        "reason": "too_many_subscriptions",
        "retryable": true,
    }))
}

/// The error answer to `message`.
fn refused(message: &ClientMessage, err: &RpcError) -> Response {
    let span = crate::protocol::ids::RequestIds::of_bytes(message.bytes()).span_id;
    Response::error(message.view().scanned_id().as_ref(), err, span)
}
