use super::*;
use std::sync::atomic::{AtomicBool, Ordering};

#[derive(Default)]
struct Probe {
    gone: AtomicBool,
    closed: AtomicBool,
    got: Mutex<Vec<u8>>,
}

impl EventSink for Probe {
    fn send(&self, events: &[u8]) -> io::Result<()> {
        if self.gone.load(Ordering::SeqCst) {
            return Err(io::ErrorKind::BrokenPipe.into());
        }
        self.got.lock().unwrap().extend_from_slice(events);
        Ok(())
    }
    fn is_open(&self) -> bool {
        !self.gone.load(Ordering::SeqCst)
    }
    fn close(&self, farewell: &[u8]) {
        let _ = self.send(farewell);
        self.closed.store(true, Ordering::SeqCst);
    }
}

fn limits(max: usize) -> HttpLimits {
    HttpLimits {
        max_legacy_streams: max,
        sse_keepalive: Duration::from_secs(15),
        sse_idle: Duration::from_secs(60),
        ..HttpLimits::default()
    }
}

fn secs(n: u64) -> Duration {
    Duration::from_secs(n)
}

#[test]
fn registry_caps_tokens_and_forgets_dead_streams_at_the_next_keepalive() {
    let streams = LegacyStreams::new(&limits(2));
    let live = Arc::new(Probe::default());
    let dead = Arc::new(Probe::default());
    let a = streams.register(live.clone(), secs(0)).unwrap().unwrap();
    let b = streams.register(dead.clone(), secs(0)).unwrap().unwrap();
    assert_ne!(a, b);
    assert_eq!(a.len(), 32);
    assert_eq!(
        streams.register(live.clone(), secs(0)).unwrap(),
        None,
        "at capacity"
    );
    dead.gone.store(true, Ordering::SeqCst);
    assert_eq!(streams.tick(secs(1)), Some(secs(15)), "nothing due yet");
    assert_eq!(streams.len(), 2);
    assert_eq!(streams.tick(secs(15)), Some(secs(30)));
    assert_eq!(streams.len(), 1);
    assert!(streams.get(&b).is_none());
    assert_eq!(live.got.lock().unwrap().as_slice(), sse::KEEPALIVE);
    streams.set_version(&a, "2024-11-05".into());
    assert_eq!(streams.get(&a).unwrap().1.as_deref(), Some("2024-11-05"));
    streams.clear();
    assert!(streams.is_empty());
    assert_eq!(streams.tick(secs(99)), None);
}

#[test]
fn idle_streams_are_closed_and_free_their_place() {
    let streams = LegacyStreams::new(&limits(1));
    let idle = Arc::new(Probe::default());
    let token = streams.register(idle.clone(), secs(0)).unwrap().unwrap();
    streams.message_started(&token, secs(10));
    assert!(streams.tick(secs(100)).is_some());
    assert!(!idle.closed.load(Ordering::SeqCst), "busy streams stay");
    streams.message_finished(&token, secs(100));
    streams.tick(secs(159));
    assert!(!idle.closed.load(Ordering::SeqCst));
    streams.tick(secs(160));
    assert!(idle.closed.load(Ordering::SeqCst));
    assert!(idle.got.lock().unwrap().ends_with(sse::IDLE_CLOSE));
    assert!(streams.is_empty());
    let next = Arc::new(Probe::default());
    assert!(streams.register(next, secs(160)).unwrap().is_some());
}
