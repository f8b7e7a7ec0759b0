//! The things every impure crate of the server takes from the operating system the same way, so
//! that a runtime needs no store to have them: the wall clock ([`clock::SystemClock`], the
//! [`Clock`](bernstein_ledger::time::Clock) a server hands the engine) and [`log_line!`]; and
//! the background [`scrub`] both stores run (a thread, a clock and a log line around the
//! ledger's verifier); [`tls`], what both runtimes serve HTTPS with, and [`https`], the client
//! agent outgoing HTTPS requests use.

pub mod clock;
pub mod https;
pub mod scrub;
pub mod tls;

/// Writes one log line to stderr and never panics: `eprintln!` panics when the write fails, and
/// a full or closed log device must not take the server down with it.
#[macro_export]
macro_rules! log_line {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}
