//! The dashboards' live feeds (`GET /api/events`): every open feed gets one `head` event when
//! it opens and one each time the ledger head moves, whoever moved it (this process, another
//! process on the same `.sdd/`, another instance on the same database). One watcher thread per
//! server looks at the head about four times a second (or as soon as a store that hears of new
//! heads says so) while at least one feed is open, and exits when none is; so any number of
//! open dashboards cost one look at the store, not requests per second.

use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread;
use std::time::{Duration, Instant};

use bernstein_core::Projection;
use bernstein_core::ledger::{LedgerPosition, Store};
use bernstein_core::transport::http::operator::head_event;
use bernstein_core::transport::http::sse;

use super::service::EventSink;

/// How often the watcher looks at the head.
const LOOK_EVERY: Duration = Duration::from_millis(250);
/// How often an idle feed gets a keep-alive comment.
const KEEPALIVE_EVERY: Duration = Duration::from_secs(15);

struct Feed {
    id: u64,
    sink: Arc<dyn EventSink>,
    /// The position this feed was last told (`None`: not told anything yet).
    told: Option<LedgerPosition>,
}

#[derive(Default)]
struct State {
    feeds: Vec<Feed>,
    next_id: u64,
    watching: bool,
}

/// The open feeds of one server.
pub struct Feeds {
    max: usize,
    state: Arc<(Mutex<State>, Condvar)>,
}

impl std::fmt::Debug for Feeds {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Feeds").field("open", &self.len()).finish()
    }
}

fn lock(m: &Mutex<State>) -> MutexGuard<'_, State> {
    // Every update is a push, a retain or a flag: a panic cannot leave the state torn.
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Feeds {
    /// At most `max` feeds open at once.
    pub fn new(max: usize) -> Feeds {
        Feeds {
            max,
            state: Arc::default(),
        }
    }

    /// Feeds open now.
    pub fn len(&self) -> usize {
        lock(&self.state.0).feeds.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether another feed may open now (checked before its head is written).
    pub fn has_room(&self) -> bool {
        self.len() < self.max
    }

    /// Adds a feed whose stream head was written to `sink`; it gets the current head within a
    /// look. `false` when at capacity (the caller answers 503). Starts the watcher if needed.
    pub fn open(&self, store: &Arc<dyn Store<Projection>>, sink: Arc<dyn EventSink>) -> bool {
        let mut st = lock(&self.state.0);
        if st.feeds.len() >= self.max {
            return false;
        }
        st.next_id += 1;
        let id = st.next_id;
        st.feeds.push(Feed {
            id,
            sink,
            told: None,
        });
        self.state.1.notify_all();
        if !st.watching {
            let (state, store) = (self.state.clone(), store.clone());
            let spawned = thread::Builder::new()
                .name("bernstein-feeds".into())
                .spawn(move || watch(&state, &*store));
            match spawned {
                Ok(_) => st.watching = true,
                Err(e) => bernstein_store_file::log_line!(
                    "bernstein http: cannot start the feed watcher: {e}"
                ),
            }
        }
        true
    }

    /// Closes every feed (server shutdown); the watcher then exits.
    pub fn clear(&self) {
        let mut st = lock(&self.state.0);
        for f in st.feeds.drain(..) {
            f.sink.close(b"");
        }
        self.state.1.notify_all();
    }
}

/// The watcher: until no feed is open, look at the head and tell every feed that has not seen
/// it yet; keep idle feeds alive; drop feeds whose peer left.
fn watch(state: &(Mutex<State>, Condvar), store: &dyn Store<Projection>) {
    let mut last: Option<LedgerPosition> = None;
    let mut alive_at = Instant::now();
    loop {
        let sinks: Vec<(u64, Arc<dyn EventSink>, Option<LedgerPosition>)> = {
            let mut st = lock(&state.0);
            if st.feeds.is_empty() {
                st.watching = false;
                return;
            }
            st.feeds
                .iter()
                .map(|f| (f.id, f.sink.clone(), f.told))
                .collect()
        };
        let now = match store.snapshot() {
            Ok(s) => Some(s.position),
            Err(e) => {
                bernstein_store_file::log_line!("bernstein http: feed watcher: {e}");
                None
            }
        };
        let keepalive = alive_at.elapsed() >= KEEPALIVE_EVERY;
        if keepalive {
            alive_at = Instant::now();
        }
        let mut told = std::collections::HashMap::with_capacity(sinks.len());
        for (id, sink, seen) in &sinks {
            let sent = match now {
                Some(p) if *seen != Some(p) => sink
                    .send(&head_event(p.seq, &p.head.to_string()))
                    .map(|()| Some(p)),
                _ if keepalive => sink.send(sse::KEEPALIVE).map(|()| *seen),
                _ => Ok(*seen),
            };
            told.insert(*id, sent.ok());
        }
        {
            let mut st = lock(&state.0);
            // Feeds opened meanwhile were not looked at; those whose peer left are dropped.
            st.feeds.retain_mut(|f| {
                let keep = match told.get(&f.id) {
                    Some(None) => false,
                    Some(Some(p)) => {
                        f.told = *p;
                        true
                    }
                    None => true,
                };
                keep && f.sink.is_open()
            });
        }
        let after = now.or(last).unwrap_or(LedgerPosition::GENESIS);
        last = now.or(last);
        if !store.wait_for_change(&after, LOOK_EVERY) {
            let st = lock(&state.0);
            let new_feed = st.feeds.iter().any(|f| f.told.is_none());
            if !new_feed {
                let _ = state
                    .1
                    .wait_timeout(st, LOOK_EVERY)
                    .unwrap_or_else(PoisonError::into_inner);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::io;
    use std::sync::mpsc;

    use bernstein_core::ledger::{Append, Draft, seal};
    use serde_json::json;

    use super::*;
    use bernstein_store_file::FileStore;
    use bernstein_store_file::test_dir::TestDir;

    /// A feed's socket: what was sent arrives on a channel; closing it makes sends fail.
    struct Sink {
        tx: Mutex<Option<mpsc::Sender<Vec<u8>>>>,
    }

    impl EventSink for Sink {
        fn send(&self, events: &[u8]) -> io::Result<()> {
            let tx = self.tx.lock().unwrap();
            let tx = tx.as_ref().ok_or(io::ErrorKind::BrokenPipe)?;
            tx.send(events.to_vec())
                .map_err(|_| io::ErrorKind::BrokenPipe.into())
        }
        fn is_open(&self) -> bool {
            self.tx.lock().unwrap().is_some()
        }
        fn close(&self, _: &[u8]) {
            self.tx.lock().unwrap().take();
        }
    }

    fn sink() -> (Arc<Sink>, mpsc::Receiver<Vec<u8>>) {
        let (tx, rx) = mpsc::channel();
        (
            Arc::new(Sink {
                tx: Mutex::new(Some(tx)),
            }),
            rx,
        )
    }

    fn next_head(rx: &mpsc::Receiver<Vec<u8>>) -> String {
        loop {
            let ev = rx.recv_timeout(Duration::from_secs(10)).expect("an event");
            let text = String::from_utf8(ev).unwrap();
            if text.contains("event: head") {
                return text;
            }
        }
    }

    fn append_note(store: &FileStore<Projection>, key: &[u8], n: u64) {
        let snap = store.snapshot().unwrap();
        let drafts = vec![Draft::new("notes", "test.note", json!({"n": n}))];
        let records = seal(&snap.position, |s| snap.stream_head(s), drafts, key);
        store
            .compare_and_append(&Append {
                expected: snap.position,
                records,
            })
            .unwrap();
    }

    #[test]
    fn feeds_hear_every_head_move_and_the_watcher_stops_with_the_last_feed() {
        let dir = TestDir::in_memory("feeds");
        let key = vec![3u8; 32];
        let file_store = Arc::new(FileStore::open(dir.path(), key.clone()).unwrap());
        let store: Arc<dyn Store<Projection>> = file_store.clone();
        let feeds = Feeds::new(2);
        let (a, a_rx) = sink();
        assert!(feeds.open(&store, a.clone()));
        assert!(next_head(&a_rx).contains("\"records\":0"));
        append_note(&file_store, &key, 1);
        assert!(next_head(&a_rx).contains("id: 1\n"));
        // A feed opened later hears the current head at once, not the history.
        let (b, b_rx) = sink();
        assert!(feeds.open(&store, b.clone()));
        assert!(next_head(&b_rx).contains("id: 1\n"));
        let (c, _c_rx) = sink();
        assert!(!feeds.has_room());
        assert!(!feeds.open(&store, c), "over the cap");
        append_note(&file_store, &key, 2);
        assert!(next_head(&a_rx).contains("id: 2\n"));
        assert!(next_head(&b_rx).contains("id: 2\n"));
        // Peers that leave are dropped; with none left the watcher ends.
        a.close(b"");
        b.close(b"");
        let deadline = Instant::now() + Duration::from_secs(10);
        while lock(&feeds.state.0).watching {
            assert!(Instant::now() < deadline, "the watcher did not stop");
            thread::sleep(Duration::from_millis(10));
        }
        assert!(feeds.is_empty());
    }
}
