//! The engine's timers: one heap of `(instant, what)` entries, read by
//! [`Engine::poll_timeout`](super::Engine::poll_timeout). Entries are never removed early: an
//! owner whose deadline moved later keeps its earlier entry, which fires, finds nothing due and
//! arms the owner again at its real deadline; an owner whose deadline moved earlier adds an
//! entry. So each owner has at most one live entry no later than its deadline, and a stale
//! one costs a look.

use core::cmp::Reverse;
use core::time::Duration;
use std::collections::BinaryHeap;

use super::{ConnId, ReqId};

/// What a timer entry is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Due {
    /// A connection's clock (HTTP read timeout, legacy stream keep-alive or idle close, feed
    /// keep-alive).
    Conn(ConnId),
    /// A request's pause or nap ends.
    Req(ReqId),
    /// A request's questions to its client expire.
    Ask(ReqId),
    /// The open feeds' next look at the head.
    Feeds,
    /// The held sync is due (group commit).
    Sync,
    /// A shutdown's grace ends: the server stops whatever is still in flight.
    Grace,
}

#[derive(Debug, Default)]
pub(super) struct Timers {
    heap: BinaryHeap<Reverse<(Duration, Due)>>,
}

impl Timers {
    /// Arms `due` at `at` unless its owner (whose earliest live entry is `armed`) already has
    /// an entry no later than that.
    pub(super) fn arm(&mut self, armed: &mut Option<Duration>, at: Duration, due: Due) {
        if armed.is_none_or(|a| at < a) {
            self.heap.push(Reverse((at, due)));
            *armed = Some(at);
        }
    }

    /// The earliest entry's instant.
    pub(super) fn next(&self) -> Option<Duration> {
        self.heap.peek().map(|Reverse((at, _))| *at)
    }

    /// Takes the earliest entry if it is due at `now`.
    pub(super) fn pop_due(&mut self, now: Duration) -> Option<(Duration, Due)> {
        if self.next()? > now {
            return None;
        }
        self.heap.pop().map(|Reverse(e)| e)
    }
}

/// Notes that the entry at `at` of an owner whose earliest entry is `armed` fired.
pub(super) fn fired(armed: &mut Option<Duration>, at: Duration) {
    if *armed == Some(at) {
        *armed = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn an_owner_keeps_one_entry_no_later_than_its_deadline() {
        let mut t = Timers::default();
        let mut armed = None;
        t.arm(&mut armed, ms(50), Due::Feeds);
        // Later: the earlier entry stands.
        t.arm(&mut armed, ms(80), Due::Feeds);
        assert_eq!(t.heap.len(), 1);
        // Earlier: a second entry.
        t.arm(&mut armed, ms(20), Due::Feeds);
        assert_eq!((t.next(), armed), (Some(ms(20)), Some(ms(20))));
        assert_eq!(t.pop_due(ms(10)), None);
        let (at, due) = t.pop_due(ms(20)).unwrap();
        assert_eq!(due, Due::Feeds);
        fired(&mut armed, at);
        assert_eq!(armed, None);
        // The stale entry at 50 fires later; it no longer matches the owner's.
        let (at, _) = t.pop_due(ms(60)).unwrap();
        let mut other = Some(ms(90));
        fired(&mut other, at);
        assert_eq!(other, Some(ms(90)));
    }
}
