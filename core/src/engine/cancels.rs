//! Requests in flight by JSON-RPC id, so that a `notifications/cancelled` (on the same stdio
//! stream, or on another HTTP connection) ends the wait of the request it names. A session id
//! names no one, so the only name a cancellation carries is the request id: every request
//! in flight with that id is cancelled; an id nobody uses cancels nothing.
//!
//! The engine keeps one `Cancels`: it enters a request (by the id
//! `protocol::ClientMessage::request_id` reads) when it starts serving it, cancels the id a
//! `notifications/cancelled` names (`ClientMessage::cancelled_request`), gives the engine's
//! [`super::Output::AskStop`] the answer [`Cancels::is_cancelled`] gives, and leaves when the
//! request ends. Entries live exactly as long as their request; nothing here outlives one.

use std::collections::{BTreeMap, BTreeSet};

/// One entered request, handed out by [`Cancels::enter`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Entered(u64);

/// The requests in flight, by the JSON text of their id.
#[derive(Debug, Default)]
pub struct Cancels {
    by_id: BTreeMap<String, BTreeSet<Entered>>,
    /// Each entered request's id, and whether it was cancelled.
    entries: BTreeMap<Entered, (String, bool)>,
    issued: u64,
}

impl Cancels {
    pub const fn new() -> Cancels {
        Cancels {
            by_id: BTreeMap::new(),
            entries: BTreeMap::new(),
            issued: 0,
        }
    }

    /// Enters a request by the JSON text of its id.
    pub fn enter(&mut self, id: String) -> Entered {
        self.issued += 1;
        let e = Entered(self.issued);
        self.by_id.entry(id.clone()).or_default().insert(e);
        self.entries.insert(e, (id, false));
        e
    }

    /// Cancels every request in flight with this id; how many.
    pub fn cancel(&mut self, id: &str) -> usize {
        let Some(named) = self.by_id.get(id) else {
            return 0;
        };
        for e in named {
            if let Some(entry) = self.entries.get_mut(e) {
                entry.1 = true;
            }
        }
        named.len()
    }

    /// Whether a `notifications/cancelled` named the request since it was entered.
    pub fn is_cancelled(&self, e: Entered) -> bool {
        self.entries.get(&e).is_some_and(|(_, c)| *c)
    }

    /// The request ended: forget it.
    pub fn leave(&mut self, e: Entered) {
        let Some((id, _)) = self.entries.remove(&e) else {
            return;
        };
        if let Some(named) = self.by_id.get_mut(&id) {
            named.remove(&e);
            if named.is_empty() {
                self.by_id.remove(&id);
            }
        }
    }

    /// How many requests are entered.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cancellation_reaches_every_request_with_its_id_and_entries_are_forgotten() {
        let mut c = Cancels::new();
        let a = c.enter("1".into());
        let b = c.enter("1".into());
        let x = c.enter("\"x\"".into());
        assert_eq!(c.cancel("2"), 0);
        assert!(!c.is_cancelled(a));
        assert_eq!(c.cancel("1"), 2);
        assert!(c.is_cancelled(a) && c.is_cancelled(b) && !c.is_cancelled(x));
        c.leave(a);
        c.leave(b);
        assert_eq!(c.len(), 1);
        // A later request reusing the id starts uncancelled.
        let again = c.enter("1".into());
        assert!(!c.is_cancelled(again));
        c.leave(again);
        c.leave(x);
        c.leave(x);
        assert!(c.is_empty());
        assert!(c.by_id.is_empty());
    }
}
