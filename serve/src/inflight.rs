//! The engine's table of requests in flight ([`Cancels`]: who a `notifications/cancelled`
//! reaches), shared by a server's threads behind a lock. Every transport of both runtimes uses
//! this one registry. Entries live exactly as long as their request is being served
//! ([`Entry`] leaves the table when dropped).

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use bernstein_core::engine::Cancels;
use bernstein_core::engine::cancels::Entered;
use bernstein_core::protocol::tasks::{cancelled_request, request_id};

/// The registry of cancellable requests; clones share it.
#[derive(Clone, Debug, Default)]
pub struct Inflight {
    cancels: Arc<Mutex<Cancels>>,
}

/// One registered request; dropping it unregisters the request.
#[derive(Debug)]
pub struct Entry {
    registry: Inflight,
    entered: Entered,
}

impl Inflight {
    /// Registers a request by the JSON text of its id.
    pub fn enter(&self, id: String) -> Entry {
        let entered = self.lock().enter(id);
        self.entry(entered)
    }

    /// Registers the request `body` carries, if it is one with an id (read outside the lock:
    /// every HTTP message passes here).
    pub fn enter_message(&self, body: &[u8]) -> Option<Entry> {
        request_id(body).map(|id| self.enter(id))
    }

    /// If `body` is a `notifications/cancelled`, cancels the request it names.
    pub fn cancel_named(&self, body: &[u8]) {
        if let Some(id) = cancelled_request(body) {
            self.cancel(&id);
        }
    }

    /// Cancels every request in flight with this id; an unknown id is a no-op.
    pub fn cancel(&self, id: &str) {
        self.lock().cancel(id);
    }

    /// How many requests are registered (for tests and diagnostics).
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn entry(&self, entered: Entered) -> Entry {
        Entry {
            registry: self.clone(),
            entered,
        }
    }

    fn lock(&self) -> MutexGuard<'_, Cancels> {
        // Every update is one call on the table, which leaves it whole: keep serving.
        self.cancels.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Entry {
    pub fn cancelled(&self) -> bool {
        self.registry.lock().is_cancelled(self.entered)
    }
}

impl Drop for Entry {
    fn drop(&mut self) {
        self.registry.lock().leave(self.entered);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Who a cancellation reaches is the engine's table's (tested there); here: clones share
    /// it, and a dropped entry leaves it.
    #[test]
    fn clones_share_the_table_and_dropped_entries_leave_it() {
        let r = Inflight::default();
        let a = r.enter("1".into());
        let b = r.clone().enter("\"x\"".into());
        r.clone().cancel("1");
        assert!(a.cancelled() && !b.cancelled());
        drop(a);
        assert_eq!(r.len(), 1);
        drop(b);
        assert!(r.is_empty());
    }

    #[test]
    fn messages_are_entered_and_cancelled_by_the_ids_they_carry() {
        let r = Inflight::default();
        let call = br#"{"jsonrpc":"2.0","id":"job-7","method":"tools/call","params":{}}"#;
        let e = r.enter_message(call).expect("a request with an id");
        assert!(
            r.enter_message(br#"{"jsonrpc":"2.0","method":"ping"}"#)
                .is_none()
        );
        r.cancel_named(
            br#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7}}"#,
        );
        assert!(!e.cancelled(), "7 is not \"job-7\"");
        r.cancel_named(call);
        assert!(!e.cancelled(), "a request is no cancellation");
        r.cancel_named(br#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"job-7"}}"#);
        assert!(e.cancelled());
    }
}
