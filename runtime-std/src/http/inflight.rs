//! Requests in flight over HTTP, by JSON-RPC id, so that a `notifications/cancelled` arriving
//! on another connection can end the wait of the request it names. Also the probe that tells
//! whether a peer closed its connection (closing the response stream cancels, too).
//!
//! The server keeps no sessions, so the only name a cancellation carries is the request id:
//! every in-flight request with that id is cancelled. Entries live exactly as long as their
//! request is being served ([`Entry`] removes itself); nothing here outlives a request.

use std::collections::HashMap;
use std::io;
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

/// The registry of cancellable requests.
#[derive(Debug, Default)]
pub struct Inflight {
    by_id: Mutex<HashMap<String, Vec<Arc<AtomicBool>>>>,
}

/// One registered request; dropping it unregisters the request.
#[derive(Debug)]
pub struct Entry<'a> {
    registry: &'a Inflight,
    id: String,
    flag: Arc<AtomicBool>,
}

impl Inflight {
    /// Registers a request by the JSON text of its id.
    pub fn enter(&self, id: String) -> Entry<'_> {
        let flag = Arc::new(AtomicBool::new(false));
        self.lock()
            .entry(id.clone())
            .or_default()
            .push(flag.clone());
        Entry {
            registry: self,
            id,
            flag,
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

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Vec<Arc<AtomicBool>>>> {
        self.by_id.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Entry<'_> {
    pub fn cancelled(&self) -> bool {
        self.flag.load(Ordering::SeqCst)
    }
}

impl Drop for Entry<'_> {
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

/// Whether the peer of a non-blocking socket has closed it (or reset it). Data waiting to be
/// read (a pipelined request) means it is still there.
pub fn peer_closed_nonblocking(stream: &TcpStream) -> bool {
    let mut byte = [0u8; 1];
    match stream.peek(&mut byte) {
        Ok(0) => true,
        Ok(_) => false,
        Err(e) => !matches!(
            e.kind(),
            io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted
        ),
    }
}

/// [`peer_closed_nonblocking`] for a blocking socket: switched to non-blocking for the look.
pub fn peer_closed(stream: &TcpStream) -> bool {
    if stream.set_nonblocking(true).is_err() {
        return false;
    }
    let closed = peer_closed_nonblocking(stream);
    let _ = stream.set_nonblocking(false);
    closed
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::net::TcpListener;

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

    #[test]
    fn a_closed_peer_is_seen_and_an_open_one_is_not() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let mut client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (server, _) = listener.accept().unwrap();
        assert!(!peer_closed(&server));
        client.write_all(b"x").unwrap();
        assert!(!peer_closed(&server), "pending data is not a close");
        drop(client);
        // The FIN may take a moment on loopback.
        let mut closed = false;
        for _ in 0..100 {
            let mut b = [0u8; 8];
            // Drain the byte, then look again.
            let _ = server.set_nonblocking(true);
            let _ = std::io::Read::read(&mut &server, &mut b);
            let _ = server.set_nonblocking(false);
            if peer_closed(&server) {
                closed = true;
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        assert!(closed);
    }
}
