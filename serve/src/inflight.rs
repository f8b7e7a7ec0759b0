//! Requests in flight by JSON-RPC id, so that a `notifications/cancelled` (on the same stdio
//! stream, or on another HTTP connection) can end the wait of the request it names. Every
//! transport of both runtimes uses this one registry.
//!
//! The server keeps no sessions, so the only name a cancellation carries is the request id:
//! every in-flight request with that id is cancelled. Entries live exactly as long as their
//! request is being served ([`Entry`] removes itself); nothing here outlives a request.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use bernstein_core::protocol::tasks::{cancelled_request, request_id};

type Flags = HashMap<String, Vec<Arc<AtomicBool>>>;

/// The registry of cancellable requests; clones share it.
#[derive(Clone, Debug, Default)]
pub struct Inflight {
    by_id: Arc<Mutex<Flags>>,
}

/// One registered request; dropping it unregisters the request.
#[derive(Debug)]
pub struct Entry {
    registry: Inflight,
    id: String,
    flag: Arc<AtomicBool>,
}

impl Inflight {
    /// Registers a request by the JSON text of its id.
    pub fn enter(&self, id: String) -> Entry {
        let flag = Arc::new(AtomicBool::new(false));
        self.lock()
            .entry(id.clone())
            .or_default()
            .push(flag.clone());
        Entry {
            registry: self.clone(),
            id,
            flag,
        }
    }

    /// Registers the request `body` carries, if it is one with an id.
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
        if let Some(flags) = self.lock().get(id) {
            for f in flags {
                f.store(true, Ordering::SeqCst);
            }
        }
    }

    /// How many requests are registered (for tests and diagnostics).
    pub fn len(&self) -> usize {
        self.lock().values().map(Vec::len).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Flags> {
        self.by_id.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Entry {
    pub fn cancelled(&self) -> bool {
        self.flag.load(Ordering::SeqCst)
    }
}

impl Drop for Entry {
    fn drop(&mut self) {
        let mut map = self.registry.lock();
        if let Some(flags) = map.get_mut(&self.id) {
            flags.retain(|f| !Arc::ptr_eq(f, &self.flag));
            if flags.is_empty() {
                map.remove(&self.id);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cancel_reaches_every_request_with_the_id_and_entries_clean_up() {
        let r = Inflight::default();
        let a = r.enter("1".into());
        let b = r.enter("1".into());
        let c = r.enter("\"x\"".into());
        r.cancel("2");
        assert!(!a.cancelled());
        r.cancel("1");
        assert!(a.cancelled() && b.cancelled() && !c.cancelled());
        drop((a, b));
        assert_eq!(r.len(), 1);
        drop(c);
        assert!(r.is_empty());
    }
}
