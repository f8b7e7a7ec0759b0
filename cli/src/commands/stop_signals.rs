//! SIGTERM and SIGINT as a graceful stop of a server, on every transport: the first asks the
//! server to stop (HTTP: answer what waits and what is in flight, then close; stdio: as end of
//! input), after which the store writes its checkpoint as it closes; a second exits at once.

use bernstein_effects::Stopper;
use bernstein_os::log_line;

/// Watches SIGTERM and SIGINT on a thread of its own: the first calls `stop`, a second exits
/// at once (status 128 + the signal).
pub fn stop_on_signals(stop: Stopper) -> std::io::Result<()> {
    use signal_hook::consts::{SIGINT, SIGTERM};
    let mut signals = signal_hook::iterator::Signals::new([SIGTERM, SIGINT])?;
    std::thread::Builder::new()
        .name("bernstein-signals".into())
        .spawn(move || {
            let mut received = signals.forever();
            let Some(first) = received.next() else {
                return;
            };
            log_line!(
                "bernstein: {}: stopping (answering the requests in flight); send it again to exit at once",
                signal_name(first)
            );
            stop();
            if let Some(second) = received.next() {
                log_line!("bernstein: {}: exiting at once", signal_name(second));
                std::process::exit(128 + second);
            }
        })?;
    Ok(())
}

fn signal_name(signal: i32) -> &'static str {
    match signal {
        signal_hook::consts::SIGTERM => "SIGTERM",
        _ => "SIGINT",
    }
}
