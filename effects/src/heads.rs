//! Heads another instance committed, heard of as they come: for a store that hears them
//! (PostgreSQL's LISTEN/NOTIFY, `Store::hears_heads`), one thread waits on the store and tells
//! the engine each time the ledger moved past what it last heard (`Input::HeadMoved`), at most
//! once per [`COALESCE`], so long polls and subscriptions look at once rather than at their
//! next look. A store that hears nothing gets no thread. A hint: the engine reads the head.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::Duration;

use bernstein_core::ledger::{Fold, Store};

/// How long one wait on the store lasts before the thread looks at its stop flag.
const WAIT: Duration = Duration::from_millis(200);
/// The least time between two wake-ups: a burst of commits is heard of once.
pub const COALESCE: Duration = Duration::from_millis(5);

/// The running thread; dropping it stops the thread and waits for it.
pub(crate) struct HeadWatch {
    stop: Arc<AtomicBool>,
    thread: Option<thread::JoinHandle<()>>,
}

impl HeadWatch {
    /// Starts watching `store` when it hears heads; `moved` is called for each one heard.
    pub(crate) fn start<F: Fold>(
        store: Arc<dyn Store<F>>,
        moved: impl Fn() + Send + 'static,
    ) -> std::io::Result<Option<HeadWatch>> {
        if !store.hears_heads() {
            return Ok(None);
        }
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = thread::Builder::new()
            .name("bernstein-heads".into())
            .spawn(move || {
                let mut after = store.snapshot_unsettled().map_or(0, |s| s.position.seq);
                while !flag.load(Ordering::Relaxed) {
                    if let Some(seen) = store.heard_past(after, WAIT) {
                        after = seen;
                        moved();
                        thread::sleep(COALESCE);
                    }
                }
            })?;
        Ok(Some(HeadWatch {
            stop,
            thread: Some(thread),
        }))
    }
}

impl Drop for HeadWatch {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
