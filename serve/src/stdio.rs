//! What both runtimes' stdio loops share: the per-connection state of a stdio peer (the line
//! framer and the revision `initialize` negotiated, a transport fact like the HTTP
//! `MCP-Protocol-Version` header), serving a line until it is answered or waits for the ledger
//! (`tasks/result` of a running task, a long poll), finishing such a wait on a thread of its
//! own (the same request, resumed: it is never served again), and when such a wait stops (a
//! `notifications/cancelled` naming it, end of input).

use std::cell::RefCell;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use bernstein_core::Projection;
use bernstein_core::domain::bound::Server;
use bernstein_core::engine::OwnedMessage;
use bernstein_core::ledger::StoreError;
use bernstein_core::protocol::TransportFacts;
use bernstein_core::transport::{Line, LineFramer};

use crate::driver::{DEFAULT_WAIT, Drive, Env, Served, Step, Stop, serve_message};
use crate::inflight::Entry;

/// Most answers a stdio connection lets wait at once, each on a thread (or task) of its own;
/// beyond, a wait is refused with the engine's `too_many_waits`, so a runaway client cannot
/// make the server start threads without bound.
pub const MAX_WAITS: usize = 64;

/// A message whose answer waits: the lines to write now (progress ticks already due) and its
/// request, put aside at its first wait, to finish with [`serve_deferred`].
#[derive(Debug)]
pub struct Deferred {
    pub lines: Vec<Vec<u8>>,
    /// Boxed: a request's state is large, and most lines are answered at once.
    request: Box<Drive<OwnedMessage<Projection>>>,
}

impl Deferred {
    /// The message (its id names the request a `notifications/cancelled` may cancel).
    pub fn bytes(&self) -> &[u8] {
        &self.request.job().bytes
    }
}

/// Per-connection state of a stdio peer: the framer and the negotiated revision.
#[derive(Debug)]
pub struct StdioConnection {
    pub framer: LineFramer,
    pub facts: TransportFacts,
}

impl StdioConnection {
    /// The state of a new stdio peer of `server`; its waits count against `env`'s admission,
    /// at most [`MAX_WAITS`] at once.
    pub fn open(server: &Server, env: &Env<'_>) -> StdioConnection {
        env.admission.limit_waits(MAX_WAITS, MAX_WAITS);
        StdioConnection::new(server)
    }

    pub fn new(server: &Server) -> StdioConnection {
        StdioConnection {
            framer: LineFramer::new(server.config.limits.max_message_bytes),
            facts: TransportFacts::stdio(None),
        }
    }

    /// Serves one frame and returns the lines to write (notifications, then the reply).
    /// Store failures are logged and answered with an internal error; they never end the loop.
    pub fn serve_line(&mut self, server: &Server, env: &Env<'_>, line: Line) -> Vec<Vec<u8>> {
        let bytes = match line {
            Line::Message(b) if b.iter().all(u8::is_ascii_whitespace) => return Vec::new(),
            Line::Message(b) => b,
            Line::Oversize(n) => {
                bernstein_store_file::log_line!(
                    "bernstein: refused a {n}-byte message (limit {} bytes)",
                    server.config.limits.max_message_bytes
                );
                return vec![server.oversize_reply(n)];
            }
        };
        let served = serve_message(server, env, &bytes, &self.facts);
        self.lines(server, &bytes, served)
    }

    /// Like [`StdioConnection::serve_line`], but never waits: a message whose answer waits
    /// for the ledger comes back as [`Deferred`] at its first wait, to be finished with
    /// [`serve_deferred`].
    pub fn serve_line_now(
        &mut self,
        server: &Arc<Server>,
        env: &Env<'_>,
        line: Line,
    ) -> Result<Vec<Vec<u8>>, Deferred> {
        let bytes = match line {
            Line::Message(b) if !b.iter().all(u8::is_ascii_whitespace) => b,
            other => return Ok(self.serve_line(server, env, other)),
        };
        let job = OwnedMessage {
            server: server.clone(),
            bytes,
            facts: self.facts.clone(),
        };
        let mut request = Drive::new(env, job, &DEFAULT_WAIT);
        let notes = RefCell::new(Vec::new());
        let step = request.run(env, &|| None, &|n| notes.borrow_mut().push(n.to_vec()));
        let lines = notes.into_inner();
        match step {
            Step::Asleep => Err(Deferred {
                lines,
                request: Box::new(request),
            }),
            Step::Done(finished) => {
                let served = finished.map(|f| Served {
                    notifications: lines,
                    ..f.served
                });
                Ok(self.lines(server, &request.job().bytes, served))
            }
        }
    }

    fn lines(
        &mut self,
        server: &Server,
        bytes: &[u8],
        served: Result<Served, StoreError>,
    ) -> Vec<Vec<u8>> {
        match served {
            Ok(served) => {
                if let Some(v) = served.negotiated_version {
                    self.facts.protocol_version = Some(v);
                }
                let mut out = served.notifications;
                out.extend(served.response);
                out
            }
            Err(e) => {
                bernstein_store_file::log_line!("bernstein: ledger error: {e}");
                vec![server.storage_failure_reply(bytes, &e.to_string())]
            }
        }
    }
}

/// Finishes a request whose answer waits for the ledger, until it is final or `stop` says so;
/// `notify` gets each notification as it happens, the answer is returned.
pub fn serve_deferred(
    server: &Server,
    env: &Env<'_>,
    mut deferred: Deferred,
    stop: &dyn Fn() -> Option<Stop>,
    notify: &dyn Fn(&[u8]),
) -> Vec<Vec<u8>> {
    match deferred.request.finish(env, stop, notify) {
        Ok(finished) => finished.served.response.into_iter().collect(),
        Err(e) => {
            bernstein_store_file::log_line!("bernstein: ledger error: {e}");
            vec![server.storage_failure_reply(deferred.bytes(), &e.to_string())]
        }
    }
}

/// When a deferred stdio answer stops waiting: cancelled by a `notifications/cancelled` naming
/// its `entry`, or settled at end of input.
pub fn deferred_stop(entry: Option<&Entry>, eof: &AtomicBool) -> Option<Stop> {
    if entry.is_some_and(Entry::cancelled) {
        Some(Stop::Cancel)
    } else {
        eof.load(Ordering::SeqCst).then_some(Stop::Settle)
    }
}
