//! The store of an HTTP server that binds its port before its ledger has finished opening.
//!
//! Opening verifies every byte of the ledger (from the checkpoint on, or from the start), which
//! takes seconds at a million records. The server waits a moment for it ([`OpeningStore::wait`];
//! a small ledger is open by then and served directly, a failure is reported before binding)
//! and otherwise binds its port meanwhile: `/healthz` answers, and
//! every request that needs the ledger (MCP, `/readyz`, the dashboard's data) gets `503` with
//! `Retry-After` and a reason saying the ledger is still being opened, instead of a refused
//! connection. Once the opener returns, every call goes to the store it returned (the real one,
//! or a [`super::FailedStore`] when the ledger does not verify).
//!
//! It must never serve anything before the opener has returned: nothing is read from or
//! written to the ledger through it until then.

use std::sync::{Arc, Condvar, Mutex, OnceLock, PoisonError};
use std::time::{Duration, Instant};

use bernstein_ledger::{Append, AppendResult, Fold, Snapshot, Store, StoreError, StoreFacts};

/// What the opener returns: the store to serve (the real one, or a [`super::FailedStore`]), or
/// why the server cannot run at all.
pub type Opened<F> = Result<Arc<dyn Store<F>>, String>;

/// A store still being opened on another thread, then the store it opened.
pub struct OpeningStore<F: Fold> {
    opened: OnceLock<Arc<dyn Store<F>>>,
    stage: Mutex<Stage>,
    changed: Condvar,
    began: Instant,
}

#[derive(Debug)]
enum Stage {
    /// `detached`: the caller stopped waiting and serves without the ledger meanwhile.
    Opening {
        detached: bool,
    },
    Open,
    Failed(String),
}

impl<F: Fold> std::fmt::Debug for OpeningStore<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpeningStore")
            .field("ready", &self.opened.get().is_some())
            .finish()
    }
}

impl<F: Fold> OpeningStore<F> {
    /// Runs `open` on a thread of its own and returns at once. If `open` fails after the
    /// caller stopped waiting in [`Self::wait`], the server cannot go on: the reason is said on
    /// stderr and the process exits with status 2 (what a failure before binding does too).
    pub fn start(
        open: impl FnOnce() -> Opened<F> + Send + 'static,
    ) -> std::io::Result<Arc<OpeningStore<F>>> {
        let store = Arc::new(OpeningStore {
            opened: OnceLock::new(),
            stage: Mutex::new(Stage::Opening { detached: false }),
            changed: Condvar::new(),
            began: Instant::now(),
        });
        let s = store.clone();
        std::thread::Builder::new()
            .name("bernstein-open-ledger".into())
            .spawn(move || s.finish(open()))?;
        Ok(store)
    }

    fn finish(&self, opened: Opened<F>) {
        let mut stage = self.stage.lock().unwrap_or_else(PoisonError::into_inner);
        let detached = matches!(*stage, Stage::Opening { detached: true });
        match opened {
            Ok(store) => {
                let _ = self.opened.set(store);
                *stage = Stage::Open;
            }
            Err(e) if detached => {
                bernstein_os::log_line!("bernstein: {e}");
                std::process::exit(2);
            }
            Err(e) => *stage = Stage::Failed(e),
        }
        self.changed.notify_all();
    }

    /// Waits at most `timeout` for the opener: `Some(Ok)` once the store is open, `Some(Err)`
    /// with the reason the server cannot run, `None` if it is still opening (then a later
    /// failure ends the process, see [`Self::start`]).
    pub fn wait(&self, timeout: Duration) -> Option<Result<(), String>> {
        let stage = self.stage.lock().unwrap_or_else(PoisonError::into_inner);
        let (mut stage, _) = self
            .changed
            .wait_timeout_while(stage, timeout, |s| matches!(s, Stage::Opening { .. }))
            .unwrap_or_else(PoisonError::into_inner);
        match &mut *stage {
            Stage::Open => Some(Ok(())),
            Stage::Failed(e) => Some(Err(e.clone())),
            Stage::Opening { detached } => {
                *detached = true;
                None
            }
        }
    }

    /// The store the opener returned, once it has.
    pub fn opened(&self) -> Option<Arc<dyn Store<F>>> {
        self.opened.get().cloned()
    }

    fn store(&self) -> Result<&Arc<dyn Store<F>>, StoreError> {
        self.opened.get().ok_or_else(|| {
            StoreError::Unavailable(format!(
                "the ledger is still being opened and verified ({:.1} s so far); retry shortly",
                self.began.elapsed().as_secs_f64()
            ))
        })
    }
}

impl<F: Fold> Store<F> for OpeningStore<F> {
    fn snapshot(&self) -> Result<Arc<Snapshot<F>>, StoreError> {
        self.store()?.snapshot()
    }

    fn compare_and_append(&self, append: &Append) -> Result<AppendResult, StoreError> {
        self.store()?.compare_and_append(append)
    }

    fn snapshot_unsettled(&self) -> Result<Arc<Snapshot<F>>, StoreError> {
        self.store()?.snapshot_unsettled()
    }

    fn settle(&self, upto: u64) -> Result<u64, StoreError> {
        self.store()?.settle(upto)
    }

    fn compare_and_append_unsettled(&self, append: &Append) -> Result<AppendResult, StoreError> {
        self.store()?.compare_and_append_unsettled(append)
    }

    /// Local while opening (every call fails at once), then whatever the opened store is.
    fn local(&self) -> bool {
        self.opened.get().is_none_or(|s| s.local())
    }

    fn facts(&self) -> StoreFacts {
        match self.opened.get() {
            Some(s) => s.facts(),
            None => StoreFacts {
                kind: "opening",
                ..StoreFacts::default()
            },
        }
    }

    fn check_writable(&self) -> Result<(), StoreError> {
        self.store()?.check_writable()
    }

    fn scan_lines(&self, each: &mut dyn FnMut(&[u8]) -> bool) -> Result<(), StoreError> {
        self.store()?.scan_lines(each)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::mpsc::channel;

    use super::*;
    use crate::FailedStore;
    use bernstein_ledger::LedgerPosition;

    #[test]
    fn refuses_until_the_opener_returns_then_serves_what_it_opened() {
        let (release, gate) = channel::<()>();
        let store = OpeningStore::start(move || {
            gate.recv().unwrap();
            Ok(Arc::new(FailedStore::new("seq 3: HMAC tag missing")) as Arc<dyn Store<()>>)
        })
        .unwrap();
        assert_eq!(store.wait(Duration::from_millis(20)), None);
        assert!(store.opened().is_none());
        let why = store.snapshot().unwrap_err().to_string();
        assert!(why.contains("still being opened"), "{why}");
        let append = Append {
            expected: LedgerPosition::GENESIS,
            read_heads: None,
            records: Vec::new(),
        };
        assert!(store.compare_and_append_unsettled(&append).is_err());
        assert!(store.settle(u64::MAX).is_err());
        assert_eq!(store.heard_past(0, Duration::ZERO), None);
        assert_eq!(store.facts().kind, "opening");
        release.send(()).unwrap();
        assert_eq!(store.wait(Duration::from_secs(60)), Some(Ok(())));
        assert!(store.opened().is_some());
        // Now every call is the opened store's own answer.
        let why = store.snapshot().unwrap_err().to_string();
        assert!(why.contains("HMAC tag missing"), "{why}");
        assert_eq!(store.facts().kind, "failed");
    }

    #[test]
    fn a_failure_before_the_caller_stops_waiting_is_returned_to_it() {
        let store =
            OpeningStore::<()>::start(|| Err("cannot lock .sdd/ledger/lock".into())).unwrap();
        assert_eq!(
            store.wait(Duration::from_secs(60)),
            Some(Err("cannot lock .sdd/ledger/lock".into()))
        );
        assert!(store.snapshot().is_err());
    }
}
