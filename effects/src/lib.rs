//! What every runtime performs for the engine the same way, and the engine of blocking
//! callers: it does the IO (file reads and writes, fsync, the store's network calls, host
//! requests) and moves no bytes: the runtimes (`runtime-std`, `runtime-smol`) read and write
//! sockets and pipes, drive the core's [`Engine`](bernstein_core::engine::Engine) and call in
//! here. It holds no protocol or domain logic, and is generic over the fold
//! ([`Fold`](bernstein_core::ledger::Fold)) and the store
//! ([`Store`](bernstein_core::ledger::Store)) it is given.
//!
//! - [`perform`]: the engine's store, host and operator outputs ([`perform::Performer`]: the
//!   store on the runtime's thread or a pool, group commit on a syncer thread), and the
//!   [`perform::Backend`] a server is built on.
//! - [`local`]: one engine shared by callers that block (the command line's operator
//!   commands, an in-process worker, benchmarks), each submitting its job and driving the
//!   engine on its own thread until the job ends.
//! - [`host`]: file listings, reads and the shutdown signal the core asks for.
//! - [`trace`]: request spans (`tracing`) with the store calls as children, when the process
//!   traces.
//! - [`idp`]: the OAuth issuer's signing keys, fetched off the runtime's thread.
//! - [`http`]: binding, the startup announcement and the operator's routes (what only the
//!   fold's owner answers comes from its `bernstein_core::transport::http::views::Views`).

pub mod engines;
mod heads;
pub mod host;
pub mod http;
pub mod idp;
pub mod introspect;
pub mod local;
pub mod perform;
pub mod trace;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// Asks a running server to stop, without waiting, from any thread (such as one that watches
/// for SIGTERM): an HTTP server as its handle's `shutdown` does (stop accepting, answer what
/// waits, close streams, end once the requests in flight are answered), stdio as end of input.
pub type Stopper = Arc<dyn Fn() + Send + Sync>;

/// The flag a serving loop checks after each wake-up, and the [`Stopper`] that raises it and
/// then calls `wake`, the loop's own wake-up, so that the loop sees it.
pub fn stop_flag(wake: perform::Wake) -> (Arc<AtomicBool>, Stopper) {
    let stop = Arc::new(AtomicBool::new(false));
    let raised = stop.clone();
    let stopper = Arc::new(move || {
        raised.store(true, Ordering::SeqCst);
        wake();
    });
    (stop, stopper)
}
