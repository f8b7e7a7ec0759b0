//! What passes between the engine tasks of one server (one per engine, `HttpOptions::engines`,
//! each on its own executor thread; `bernstein_core::engine::shared` says what the engines
//! share): the connections each thread's accept task takes, posted to the thread running the
//! fewest connection tasks; a connection an engine handed to engine 0 (`Output::HandOff`);
//! and what an engine tells the others (`Output::Tell`). Every engine task has one channel of
//! [`Event`]s; this is the table of them.
//!
//! A connection task stays on the thread that started it. A hand-off moves only whom it talks
//! to: the engine task it reports to is [`Tie::owner`], which the handing engine task sets
//! before it posts the connection to engine 0, while the connection task is not running (it
//! runs on that same thread).

use std::net::TcpListener;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use bernstein_core::engine::shared::Notice;
use bernstein_effects::engines::Loads;
use bernstein_os::tls::ServerTls;
use smol::channel::Sender;
use smol::{Async, Timer};

use super::Event;

/// Every engine task of a server.
#[derive(Debug)]
pub(crate) struct Hubs {
    doors: Vec<Sender<Event>>,
    /// Connection tasks on each engine task's thread: counted when a connection is posted
    /// there, until its task ends.
    loads: Loads,
    /// Connection ids are unique across the server: a handed connection keeps its id.
    next: AtomicU64,
}

impl Hubs {
    pub(crate) fn new(doors: Vec<Sender<Event>>) -> Arc<Hubs> {
        let loads = Loads::new(doors.len());
        Arc::new(Hubs {
            doors,
            loads,
            next: AtomicU64::new(1),
        })
    }

    /// Engine task `i`'s channel.
    pub(crate) fn door(&self, i: usize) -> &Sender<Event> {
        &self.doors[i]
    }

    /// Posts to engine task `to`; the event comes back if that task has ended.
    pub(crate) fn post(&self, to: usize, event: Event) -> Result<(), Event> {
        self.doors[to].try_send(event).map_err(|e| e.into_inner())
    }

    /// Tells every engine task but `me`.
    pub(crate) fn tell_others(&self, me: usize, notice: &Notice) {
        for to in (0..self.doors.len()).filter(|i| *i != me) {
            let _ = self.post(to, Event::Told(notice.clone()));
        }
    }

    /// Asks every engine task to stop.
    pub(crate) fn stop(&self) {
        for door in &self.doors {
            let _ = door.try_send(Event::Stop);
        }
    }

    /// Connection tasks running (or on their way) on engine task `i`'s thread.
    pub(crate) fn load(&self, i: usize) -> usize {
        self.loads.get(i)
    }

    /// A connection task on thread `i` ended.
    pub(crate) fn ended(&self, i: usize) {
        self.loads.down(i);
    }

    /// The thread running the fewest connection tasks, `me` on a tie; counts one more there.
    fn take_least_loaded(&self, me: usize) -> usize {
        let to = self.loads.least(me);
        self.loads.up(to);
        to
    }
}

/// What a connection task and the engine task it reports to share.
#[derive(Debug)]
pub(crate) struct Tie {
    /// The bytes sent to the connection task that it has not written yet (it counts them down
    /// as it writes).
    pub(crate) unsent: AtomicUsize,
    /// The engine task it reports to.
    pub(crate) owner: AtomicUsize,
    /// Its peer is gone or the task ended: an engine that adopts it after that hears
    /// [`Input::Closed`](bernstein_core::engine::Input::Closed) at once.
    pub(crate) ended: AtomicBool,
}

impl Tie {
    pub(crate) fn new(owner: usize) -> Arc<Tie> {
        Arc::new(Tie {
            unsent: AtomicUsize::new(0),
            owner: AtomicUsize::new(owner),
            ended: AtomicBool::new(false),
        })
    }
}

/// Engine task `me`'s accept task: accepts connections (starting each one's TLS on an HTTPS
/// server) and posts each to the engine task whose thread runs the fewest connection tasks.
pub(crate) async fn accept(
    hubs: Arc<Hubs>,
    me: usize,
    listener: Async<TcpListener>,
    tls: Option<Arc<ServerTls>>,
) {
    loop {
        let (stream, peer) = match listener.accept().await {
            Ok(x) => x,
            Err(e) => {
                // Out of file descriptors and the like: back off instead of spinning.
                bernstein_os::log_line!("bernstein http: accept failed: {e}");
                Timer::after(Duration::from_millis(20)).await;
                continue;
            }
        };
        let _ = stream.get_ref().set_nodelay(true);
        let session = match &tls {
            None => None,
            Some(tls) => match tls.session(stream.get_ref().local_addr().ok()) {
                // Boxed: a connection task stays small while it waits.
                Ok(session) => Some(Box::new(session)),
                Err(e) => {
                    bernstein_os::log_line!("bernstein https: {e}");
                    continue;
                }
            },
        };
        let id = hubs.next.fetch_add(1, Ordering::Relaxed);
        let to = hubs.take_least_loaded(me);
        if hubs
            .post(to, Event::Incoming(id, stream, peer, session))
            .is_err()
        {
            // That engine task has ended (a shutdown): the connection closes.
            hubs.ended(to);
        }
    }
}
