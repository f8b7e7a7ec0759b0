//! The timers of one legacy SSE stream, sans-IO: when to write a keep-alive comment and when
//! to close the stream because no message was POSTed for it within the idle timeout. The
//! runtime asks [`StreamClock::poll_timeout`] when to wake, calls
//! [`StreamClock::handle_timeout`] then and carries out the [`StreamTick`]; it reports each
//! message with [`StreamClock::message_started`] / [`StreamClock::message_finished`].
//!
//! Time is monotonic and a plain value: a [`Duration`] since any origin the runtime picks.
//! A stream serving a message is never idle (a long-poll may outlast the timeout); idleness
//! counts from the end of the last message, or from the open.

use core::time::Duration;

/// What a stream must do now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StreamTick {
    /// Write [`super::sse::KEEPALIVE`]; a failed write means the peer is gone: release it.
    KeepAlive,
    /// Write [`super::sse::IDLE_CLOSE`] (best effort) and close the stream.
    Close,
}

/// The keep-alive and idle timers of one stream.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StreamClock {
    keepalive: Duration,
    idle: Duration,
    next_keepalive: Duration,
    last_activity: Duration,
    busy: u32,
}

impl StreamClock {
    /// A stream opened at `now` (zero intervals are taken as one millisecond).
    pub fn new(now: Duration, keepalive: Duration, idle: Duration) -> StreamClock {
        let keepalive = keepalive.max(Duration::from_millis(1));
        StreamClock {
            keepalive,
            idle: idle.max(Duration::from_millis(1)),
            next_keepalive: now.saturating_add(keepalive),
            last_activity: now,
            busy: 0,
        }
    }

    /// A message POSTed for this stream is being served.
    pub fn message_started(&mut self, now: Duration) {
        self.busy = self.busy.saturating_add(1);
        self.last_activity = self.last_activity.max(now);
    }

    /// That message was served (its reply written or dropped).
    pub fn message_finished(&mut self, now: Duration) {
        self.busy = self.busy.saturating_sub(1);
        self.last_activity = self.last_activity.max(now);
    }

    /// Whether a message POSTed for this stream is being served.
    pub fn is_busy(&self) -> bool {
        self.busy > 0
    }

    /// When the idle timeout ends, while no message is being served.
    fn idle_deadline(&self) -> Option<Duration> {
        (self.busy == 0).then(|| self.last_activity.saturating_add(self.idle))
    }

    /// The next instant [`Self::handle_timeout`] has something to do.
    pub fn poll_timeout(&self) -> Duration {
        match self.idle_deadline() {
            Some(idle) => idle.min(self.next_keepalive),
            None => self.next_keepalive,
        }
    }

    /// What is due at `now`, if anything; a keep-alive is scheduled one interval later.
    pub fn handle_timeout(&mut self, now: Duration) -> Option<StreamTick> {
        if self.idle_deadline().is_some_and(|d| now >= d) {
            return Some(StreamTick::Close);
        }
        if now >= self.next_keepalive {
            self.next_keepalive = now.saturating_add(self.keepalive);
            return Some(StreamTick::KeepAlive);
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(n: u64) -> Duration {
        Duration::from_secs(n)
    }

    #[test]
    fn keepalives_until_the_idle_timeout_then_close() {
        let mut c = StreamClock::new(s(100), s(15), s(60));
        assert_eq!(c.poll_timeout(), s(115));
        assert_eq!(c.handle_timeout(s(114)), None);
        let mut ticks = Vec::new();
        let mut now = s(100);
        while ticks.last() != Some(&StreamTick::Close) {
            now = c.poll_timeout();
            ticks.extend(c.handle_timeout(now));
            assert!(now <= s(160), "closed by the idle deadline");
        }
        assert_eq!(now, s(160));
        assert_eq!(
            ticks,
            [
                StreamTick::KeepAlive,
                StreamTick::KeepAlive,
                StreamTick::KeepAlive,
                StreamTick::Close
            ]
        );
        assert_eq!(
            c.handle_timeout(s(10_000)),
            Some(StreamTick::Close),
            "stays due"
        );
    }

    #[test]
    fn a_message_restarts_the_idle_timeout_and_a_busy_stream_is_never_idle() {
        let mut c = StreamClock::new(s(0), s(15), s(60));
        c.message_started(s(50));
        assert_eq!(c.poll_timeout(), s(15));
        c.handle_timeout(s(15));
        assert_eq!(
            c.handle_timeout(s(200)),
            Some(StreamTick::KeepAlive),
            "busy: no close"
        );
        c.message_finished(s(201));
        assert_eq!(c.poll_timeout(), s(215));
        assert_eq!(c.handle_timeout(s(260)), Some(StreamTick::KeepAlive));
        assert_eq!(c.handle_timeout(s(261)), Some(StreamTick::Close));
        // Out-of-order reports never move the deadline back.
        let mut c = StreamClock::new(s(10), s(15), s(60));
        c.message_started(s(40));
        c.message_finished(s(5));
        assert_eq!(c.handle_timeout(s(99)), Some(StreamTick::KeepAlive));
        assert_eq!(c.handle_timeout(s(100)), Some(StreamTick::Close));
    }

    #[test]
    fn idle_shorter_than_keepalive_and_zero_intervals() {
        let mut c = StreamClock::new(s(0), s(15), s(2));
        assert_eq!(c.poll_timeout(), s(2));
        assert_eq!(c.handle_timeout(s(2)), Some(StreamTick::Close));
        let mut c = StreamClock::new(s(0), Duration::ZERO, Duration::ZERO);
        assert_eq!(c.poll_timeout(), Duration::from_millis(1));
        assert_eq!(
            c.handle_timeout(Duration::from_millis(1)),
            Some(StreamTick::Close)
        );
    }
}
