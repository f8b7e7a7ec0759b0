//! Where [`log_line!`](crate::log_line) writes: stderr as plain text (the default, each line
//! exactly as formatted), or, once [`structured`] was called, as an INFO event of the
//! process's `tracing` subscriber (which writes it as a JSON line carrying the trace id of
//! the request it was written in).

use std::io::Write as _;
use std::sync::atomic::{AtomicBool, Ordering};

static STRUCTURED: AtomicBool = AtomicBool::new(false);

/// From now on, log lines are `tracing` events (the caller installed a subscriber that writes
/// them).
pub fn structured() {
    STRUCTURED.store(true, Ordering::Relaxed);
}

/// Writes a line that goes elsewhere in plain form (the worker's event lines, on stdout) as a
/// structured log line too, when logs are structured; nothing otherwise.
pub fn mirror(args: std::fmt::Arguments<'_>) {
    if STRUCTURED.load(Ordering::Relaxed) {
        tracing::info!(target: "bernstein", "{args}");
    }
}

/// Writes one log line (see the module docs); never panics.
pub fn line(args: std::fmt::Arguments<'_>) {
    if STRUCTURED.load(Ordering::Relaxed) {
        tracing::info!(target: "bernstein", "{args}");
    } else {
        let _ = writeln!(std::io::stderr(), "{args}");
    }
}
