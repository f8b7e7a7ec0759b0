//! A running HTTP server of either runtime: its address, its startup announcement, the
//! threads serving it and what stops them.

use std::io;
use std::net::SocketAddr;
use std::thread::JoinHandle;

use super::Announcement;
use crate::Stopper;

/// A running server; dropped, it stops the server and waits for its threads.
pub struct HttpServerHandle {
    local_addr: SocketAddr,
    announcement: Announcement,
    threads: Vec<JoinHandle<io::Result<()>>>,
    stopper: Stopper,
    /// What its threads are, for the error when one panicked.
    threads_are: &'static str,
}

impl std::fmt::Debug for HttpServerHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpServerHandle")
            .field("local_addr", &self.local_addr)
            .field("threads", &self.threads.len())
            .finish_non_exhaustive()
    }
}

impl HttpServerHandle {
    /// The server bound at `local_addr` and served by `threads` (`threads_are` names them
    /// in errors), which `stopper` asks to stop.
    pub fn new(
        local_addr: SocketAddr,
        announcement: Announcement,
        threads: Vec<JoinHandle<io::Result<()>>>,
        stopper: Stopper,
        threads_are: &'static str,
    ) -> HttpServerHandle {
        HttpServerHandle {
            local_addr,
            announcement,
            threads,
            stopper,
            threads_are,
        }
    }

    /// The address actually bound (port 0 resolved).
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// Announces the endpoint on stderr (`runtime` describes the runtime), hands `on_bound`
    /// what stops the server, and blocks until it stops.
    pub fn serve(
        self,
        runtime: &str,
        on_bound: impl FnOnce(Stopper) -> io::Result<()>,
    ) -> io::Result<()> {
        self.announcement.announce(self.local_addr, runtime);
        on_bound(self.stopper())?;
        self.wait()
    }

    /// Blocks until the server stops (it runs until [`Self::shutdown`] or process exit).
    pub fn wait(mut self) -> io::Result<()> {
        self.join()
    }

    /// Stops accepting, answers waiting requests as they stand, closes the legacy streams and
    /// feeds, and returns once the requests in flight are answered.
    pub fn shutdown(mut self) {
        self.stop();
    }

    /// What asks this server to stop from another thread.
    pub fn stopper(&self) -> Stopper {
        self.stopper.clone()
    }

    fn stop(&mut self) {
        (self.stopper)();
        let _ = self.join();
    }

    fn join(&mut self) -> io::Result<()> {
        let mut result = Ok(());
        for t in self.threads.drain(..) {
            let ended = t
                .join()
                .map_err(|_| io::Error::other(format!("{} panicked", self.threads_are)))
                .and_then(|r| r);
            if result.is_ok() {
                result = ended;
            }
        }
        result
    }
}

impl Drop for HttpServerHandle {
    fn drop(&mut self) {
        if !self.threads.is_empty() {
            self.stop();
        }
    }
}
