//! What passes between the event loops of one server when it runs several engines
//! (`HttpOptions::engines`; `bernstein_core::engine::shared` says what the engines share):
//! a connection accepted by one loop for the loop that holds the fewest sockets, a
//! connection an engine handed to engine 0 (`Output::HandOff`), and what an engine tells the
//! others (`Output::Tell`). Each loop has an inbox and the waker of its poll; a sender posts
//! and wakes, the loop takes its inbox when its waker fires.

use std::net::SocketAddr;
use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Arc, Mutex};

use bernstein_core::engine::Handed;
use bernstein_core::engine::shared::Notice;
use bernstein_effects::engines::Loads;
use mio::Waker;

use super::sock::Sock;

/// One item of a loop's inbox.
pub(super) enum Crossing {
    /// A connection another loop accepted for this one.
    Accepted(Box<Sock>, SocketAddr),
    /// A connection another loop's engine handed to this one's (`None`: its socket broke
    /// before it could be moved; it is adopted and closed).
    Adopt(Option<Box<Sock>>, Box<Handed>),
    /// What another loop's engine told the others.
    Told(Notice),
}

/// One loop as the others reach it.
struct Door {
    inbox: Mutex<Sender<Crossing>>,
    waker: Arc<Waker>,
}

/// Every loop of a server.
pub(super) struct Crossings {
    doors: Vec<Door>,
    /// Sockets each loop holds.
    loads: Loads,
}

impl Crossings {
    /// The doors of loops woken by `wakers`, and each loop's inbox, in order.
    pub(super) fn new(wakers: &[Arc<Waker>]) -> (Arc<Crossings>, Vec<Receiver<Crossing>>) {
        let (doors, inboxes) = wakers
            .iter()
            .map(|waker| {
                let (tx, rx) = channel();
                let door = Door {
                    inbox: Mutex::new(tx),
                    waker: waker.clone(),
                };
                (door, rx)
            })
            .unzip();
        let loads = Loads::new(wakers.len());
        (Arc::new(Crossings { doors, loads }), inboxes)
    }

    /// The loop that holds the fewest sockets, `me` on a tie.
    pub(super) fn least_loaded(&self, me: usize) -> usize {
        self.loads.least(me)
    }

    /// Loop `me` holds one socket more (`up`) or one less.
    pub(super) fn count(&self, me: usize, up: bool) {
        if up {
            self.loads.up(me);
        } else {
            self.loads.down(me);
        }
    }

    /// Posts to loop `to` and wakes it; what was posted is dropped (a socket closed) if that
    /// loop has ended.
    pub(super) fn post(&self, to: usize, crossing: Crossing) {
        let door = &self.doors[to];
        let sent = door
            .inbox
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .send(crossing);
        if sent.is_ok() {
            let _ = door.waker.wake();
        }
    }

    /// Tells every loop but `me`.
    pub(super) fn tell_others(&self, me: usize, notice: &Notice) {
        for to in (0..self.doors.len()).filter(|i| *i != me) {
            self.post(to, Crossing::Told(notice.clone()));
        }
    }
}
