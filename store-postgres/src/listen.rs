//! The LISTEN side of commit notifications: one background connection that runs
//! `LISTEN bernstein_ledger` and records the highest seq announced, so that the engine's waits
//! (long polls, subscriptions, `tasks/result`) look at the head as soon as any instance
//! commits (the store's `heard_past`).
//!
//! Notifications are a hint, never a source of truth: a waiter always re-reads the ledger, and
//! when the connection is down waits simply time out (a bounded poll). The thread reconnects
//! with a backoff and ends when the [`Listener`] is dropped.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use postgres::fallible_iterator::FallibleIterator;
use postgres::{Config, NoTls};

use crate::insert::CHANNEL;

/// How often the thread looks at its stop flag.
const TICK: Duration = Duration::from_millis(500);

#[derive(Debug, Default)]
struct Shared {
    /// Highest seq announced so far.
    seen: Mutex<u64>,
    moved: Condvar,
    stop: AtomicBool,
}

/// A running LISTEN connection.
#[derive(Debug)]
pub struct Listener {
    shared: Arc<Shared>,
}

impl Listener {
    /// Starts the background connection.
    pub fn start(config: Config) -> Listener {
        let shared = Arc::new(Shared::default());
        let bg = shared.clone();
        let spawned = std::thread::Builder::new()
            .name("bernstein-pg-listen".into())
            .spawn(move || run(&config, &bg));
        if let Err(e) = spawned {
            bernstein_os::log_line!(
                "bernstein: no LISTEN thread ({e}); waits fall back to polling"
            );
        }
        Listener { shared }
    }

    /// Waits until a seq past `after` was announced or `timeout` passed; the newest seq
    /// announced when one was.
    pub fn wait_past(&self, after: u64, timeout: Duration) -> Option<u64> {
        let deadline = Instant::now() + timeout;
        let mut seen = self.shared.seen.lock().unwrap_or_else(|p| p.into_inner());
        loop {
            if *seen > after {
                return Some(*seen);
            }
            let now = Instant::now();
            if now >= deadline {
                return None;
            }
            seen = self
                .shared
                .moved
                .wait_timeout(seen, deadline - now)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Relaxed);
    }
}

fn announce(shared: &Shared, seq: u64) {
    let mut seen = shared.seen.lock().unwrap_or_else(|p| p.into_inner());
    if seq > *seen {
        *seen = seq;
    }
    drop(seen);
    shared.moved.notify_all();
}

fn run(config: &Config, shared: &Shared) {
    let mut backoff = Duration::from_millis(100);
    while !shared.stop.load(Ordering::Relaxed) {
        match listen_once(config, shared) {
            Ok(()) => return,
            Err(e) => {
                bernstein_os::log_line!(
                    "bernstein: PostgreSQL LISTEN connection lost ({e}); retrying in {backoff:?}"
                );
                std::thread::sleep(backoff);
                backoff = (backoff * 2).min(Duration::from_secs(5));
            }
        }
    }
}

/// One connection's life: returns Ok when asked to stop, Err when the connection failed.
fn listen_once(config: &Config, shared: &Shared) -> Result<(), postgres::Error> {
    let mut client = config.connect(NoTls)?;
    client.batch_execute(&format!("LISTEN {CHANNEL}"))?;
    while !shared.stop.load(Ordering::Relaxed) {
        {
            let mut notes = client.notifications();
            let mut iter = notes.timeout_iter(TICK);
            while let Some(n) = iter.next()? {
                if let Ok(seq) = n.payload().parse::<u64>() {
                    announce(shared, seq);
                }
            }
        }
        if client.is_closed() {
            return client.batch_execute("SELECT 1");
        }
    }
    Ok(())
}
