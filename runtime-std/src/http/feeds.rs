//! The dashboards' live feeds (`GET /api/events`): every open feed gets one `head` event when
//! it opens and one each time the ledger head moves, whoever moved it (this process, another
//! process on the same `.sdd/`, another instance on the same database). One watcher thread per
//! server looks at the head about four times a second (or as soon as a store that hears of new
//! heads says so) while at least one feed is open, and exits when none is; so any number of
//! open dashboards cost one look at the store, not requests per second.

use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread;
use std::time::{Duration, Instant};

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
    pub fn open(&self, store: &Arc<dyn Store>, sink: Arc<dyn EventSink>) -> bool {
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
                Err(e) => crate::log_line!("bernstein http: cannot start the feed watcher: {e}"),
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
fn watch(state: &(Mutex<State>, Condvar), store: &dyn Store) {
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
                crate::log_line!("bernstein http: feed watcher: {e}");
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
