//! The read timeout of one HTTP connection, sans-IO, for both runtimes: a request that has
//! begun to arrive must be complete within the timeout (else `408` and close), and a kept-alive
//! connection that sends nothing for that long is closed. The runtime reports what it reads
//! ([`ReadClock::bytes_arrived`]) and each request it serves ([`ReadClock::request_served`]),
//! wakes at [`ReadClock::deadline`] at the latest, and asks [`ReadClock::expired`].
//!
//! Time is monotonic and a plain value: a [`Duration`] since any origin the runtime picks.

use core::time::Duration;

/// Why a connection's wait for bytes ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Expired {
    /// A request began to arrive and is not complete: answer `408`, then close.
    Overdue,
    /// Nothing arrived: close quietly. `first` when the connection never sent a request (worth
    /// a log line: a client that connected and said nothing).
    Idle { first: bool },
}

impl Expired {
    /// The log line for this expiry, if it deserves one.
    pub fn log_line(self, timeout: Duration) -> Option<String> {
        match self {
            Expired::Overdue => Some(format!(
                "408: request not complete within the read timeout ({timeout:?})"
            )),
            Expired::Idle { first: true } => Some(format!(
                "closed: no request within the read timeout ({timeout:?})"
            )),
            Expired::Idle { first: false } => None,
        }
    }
}

/// The read timer of one connection.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReadClock {
    timeout: Duration,
    last_activity: Duration,
    /// When the pending, incomplete request began to arrive.
    started: Option<Duration>,
    served: u64,
}

impl ReadClock {
    /// A connection accepted at `now`.
    pub fn new(now: Duration, timeout: Duration) -> ReadClock {
        ReadClock {
            timeout,
            last_activity: now,
            started: None,
            served: 0,
        }
    }

    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// Requests served on this connection so far.
    pub fn served(&self) -> u64 {
        self.served
    }

    /// Bytes arrived at `now`; `parser_idle` is whether the parser holds no partial request
    /// after them.
    pub fn bytes_arrived(&mut self, now: Duration, parser_idle: bool) {
        self.last_activity = now;
        if self.started.is_none() && !parser_idle {
            self.started = Some(now);
        }
    }

    /// A complete request was taken from the parser.
    pub fn request_served(&mut self) {
        self.started = None;
        self.served += 1;
    }

    /// The parser holds nothing of a next request (between keep-alive requests).
    pub fn parser_idle(&mut self) {
        self.started = None;
    }

    /// The latest instant to look at the connection again.
    pub fn deadline(&self) -> Duration {
        self.started
            .unwrap_or(self.last_activity)
            .saturating_add(self.timeout)
    }

    /// Whether the connection's wait has run out at `now`.
    pub fn expired(&self, now: Duration) -> Option<Expired> {
        (now >= self.deadline()).then(|| self.expiry())
    }

    /// What running out now would mean (a runtime whose timer fired at [`Self::deadline`]).
    pub fn expiry(&self) -> Expired {
        match self.started {
            Some(_) => Expired::Overdue,
            None => Expired::Idle {
                first: self.served == 0,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: Duration = Duration::from_secs(10);

    fn s(n: u64) -> Duration {
        Duration::from_secs(n)
    }

    #[test]
    fn a_silent_connection_expires_idle_after_the_timeout() {
        let clock = ReadClock::new(s(5), T);
        assert_eq!(clock.deadline(), s(15));
        assert_eq!(clock.expired(s(14)), None);
        assert_eq!(clock.expired(s(15)), Some(Expired::Idle { first: true }));
        assert!(Expired::Idle { first: true }.log_line(T).is_some());
    }

    #[test]
    fn a_partial_request_is_overdue_from_its_first_byte_whatever_trickles_in() {
        let mut clock = ReadClock::new(s(0), T);
        clock.bytes_arrived(s(2), false);
        clock.bytes_arrived(s(9), false);
        assert_eq!(clock.deadline(), s(12), "counted from the first byte");
        assert_eq!(clock.expired(s(12)), Some(Expired::Overdue));
        assert!(Expired::Overdue.log_line(T).unwrap().starts_with("408"));
    }

    #[test]
    fn keep_alive_counts_from_the_last_activity_and_stays_quiet() {
        let mut clock = ReadClock::new(s(0), T);
        clock.bytes_arrived(s(1), false);
        clock.request_served();
        clock.bytes_arrived(s(3), true);
        assert_eq!(clock.served(), 1);
        assert_eq!(clock.deadline(), s(13));
        let e = clock.expired(s(13)).unwrap();
        assert_eq!(e, Expired::Idle { first: false });
        assert_eq!(e.log_line(T), None);
    }

    #[test]
    fn an_idle_parser_ends_a_pending_start() {
        let mut clock = ReadClock::new(s(0), T);
        clock.bytes_arrived(s(1), false);
        clock.parser_idle();
        assert_eq!(clock.expiry(), Expired::Idle { first: true });
    }
}
