//! Group commit, decided here: when to ask the runtime for the one fsync ([`Output::Sync`])
//! that makes every waiting request's records durable, and which requests it covers.
//!
//! A request waits until what it read (its snapshot's position) and what it appended (its
//! commit's position) is durable. What a sync covers is known by position: every record the
//! engine had seen (in a snapshot or a commit) when the sync was asked for is durable once it
//! completes, whichever process wrote it (an fsync of the file covers every byte written to it
//! before it began). So a request already covered answers at once, one covered by the sync in
//! flight waits for it, and the others wait for the next.
//!
//! The next sync is asked for as soon as the last one completed, no request is between its
//! snapshot and its wait (it would wait for the next sync too: a burst of requests read
//! together shares one sync), and as many requests wait as can be expected: those that waited
//! meanwhile and those the last sync answered, whose clients are likely to send their next
//! request within a round trip. If they do not come, it starts anyway after half the last
//! sync's duration (at most [`MAX_HOLD`]). Asking at
//! once instead splits closed-loop clients into two groups that alternate, each waiting for
//! two fsyncs per request; holding briefly lets one fsync cover them all.
//!
//! [`Output::Sync`]: super::Output::Sync

use core::time::Duration;

use super::ReqId;

/// The longest a sync is held back for requests expected to come.
pub(super) const MAX_HOLD: Duration = Duration::from_millis(1);

#[derive(Debug, Default)]
pub(super) struct Syncs {
    /// Requests waiting for the next sync, with the position each needs durable.
    waiting: Vec<(ReqId, u64)>,
    /// The sync in flight: when it was asked for, the position it covers, the requests it
    /// answers.
    in_flight: Option<(Duration, u64, Vec<ReqId>)>,
    /// The highest position seen so far (the next sync covers it).
    seen: u64,
    /// Every record up to this position is durable.
    durable: u64,
    /// How many requests the next sync waits for before it is asked.
    expect: usize,
    /// When the next sync is asked for even if fewer wait.
    hold_until: Option<Duration>,
    /// When the oldest waiting request began to wait: the next sync is asked for
    /// [`MAX_HOLD`] after it whatever else is on its way.
    first_wait: Option<Duration>,
    /// How long the last sync took.
    last_took: Duration,
    /// The timer entry of the hold.
    pub(super) armed: Option<Duration>,
}

/// What to do about a request that must be durable before it answers.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Durable {
    /// Already durable: answer now.
    Now,
    /// Covered by the sync in flight, or the next one.
    Wait,
}

impl Syncs {
    /// Notes a position the engine saw (a snapshot read, a commit).
    pub(super) fn saw(&mut self, seq: u64) {
        self.seen = self.seen.max(seq);
    }

    /// The highest position known durable.
    #[cfg(test)]
    fn durable(&self) -> u64 {
        self.durable
    }

    /// A request needs everything up to `need` durable.
    pub(super) fn ask(&mut self, req: ReqId, need: u64, now: Duration) -> Durable {
        if need <= self.durable {
            return Durable::Now;
        }
        match &mut self.in_flight {
            Some((_, covers, reqs)) if need <= *covers => reqs.push(req),
            _ => {
                if self.waiting.is_empty() {
                    self.first_wait = Some(now);
                    if self.hold_until.is_none() {
                        self.hold_until = Some(now + self.hold());
                    }
                }
                self.waiting.push((req, need));
            }
        }
        Durable::Wait
    }

    /// Whether the next sync should be asked for now, `working` requests being between their
    /// snapshot and their wait (they will wait for it too, within this burst of work); when
    /// not, the instant it will be at the latest (if anything waits).
    pub(super) fn due(&self, now: Duration, working: usize) -> Result<(), Option<Duration>> {
        if self.in_flight.is_some() || self.waiting.is_empty() {
            return Err(None);
        }
        let latest = self.first_wait.map_or(now, |t| t + MAX_HOLD);
        let expected =
            self.waiting.len() >= self.expect || self.hold_until.is_none_or(|t| t <= now);
        if (expected && working == 0) || latest <= now {
            return Ok(());
        }
        Err(Some(match self.hold_until {
            Some(at) if working == 0 => at.min(latest),
            _ => latest,
        }))
    }

    /// The sync is asked for now: how many requests wait for it, and the position it must make
    /// durable.
    pub(super) fn start(&mut self, now: Duration) -> (usize, u64) {
        let reqs: Vec<ReqId> = self.waiting.drain(..).map(|(r, _)| r).collect();
        let n = reqs.len();
        self.in_flight = Some((now, self.seen, reqs));
        self.hold_until = None;
        self.first_wait = None;
        (n, self.seen)
    }

    /// The sync in flight completed, every record up to `durable` durable (at least what it
    /// covers; more when its fsync began after later records were written): the requests it
    /// answers, with those waiting for the next whose records it covered after all.
    pub(super) fn finished(&mut self, now: Duration, durable: u64) -> Vec<ReqId> {
        let Some((began, covers, mut reqs)) = self.in_flight.take() else {
            return Vec::new();
        };
        self.durable = self.durable.max(covers).max(durable);
        let before = reqs.len() + self.waiting.len();
        let now_durable = self.durable;
        self.waiting.retain(|&(r, need)| {
            let covered = need <= now_durable;
            if covered {
                reqs.push(r);
            }
            !covered
        });
        if self.waiting.is_empty() {
            self.first_wait = None;
        }
        self.last_took = now.saturating_sub(began);
        self.expect = before;
        self.hold_until = (!self.waiting.is_empty()).then(|| now + self.hold());
        reqs
    }

    /// The sync in flight failed: the requests it was to answer, and those waiting (no later
    /// sync can prove their records durable either).
    pub(super) fn failed(&mut self) -> Vec<ReqId> {
        let mut all = self.in_flight.take().map(|(_, _, r)| r).unwrap_or_default();
        all.extend(self.waiting.drain(..).map(|(r, _)| r));
        self.hold_until = None;
        self.first_wait = None;
        all
    }

    /// Forgets a request that ended otherwise.
    pub(super) fn forget(&mut self, req: ReqId) {
        self.waiting.retain(|(r, _)| *r != req);
        if self.waiting.is_empty() {
            self.first_wait = None;
        }
        if let Some((_, _, reqs)) = &mut self.in_flight {
            reqs.retain(|r| *r != req);
        }
    }

    fn hold(&self) -> Duration {
        (self.last_took / 2).min(MAX_HOLD)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn us(n: u64) -> Duration {
        Duration::from_micros(n)
    }

    #[test]
    fn covered_requests_answer_at_once_and_others_wait_for_the_sync_that_covers_them() {
        let mut s = Syncs::default();
        s.saw(3);
        assert_eq!(s.ask(ReqId(1), 3, us(0)), Durable::Wait);
        assert_eq!(
            s.due(us(0), 1),
            Err(Some(MAX_HOLD)),
            "another request is on its way"
        );
        assert_eq!(s.due(us(0), 0), Ok(()), "nothing expected: ask at once");
        s.start(us(0));
        // Seen before the sync began: covered by it.
        assert_eq!(s.ask(ReqId(2), 2, us(10)), Durable::Wait);
        // Written after it began: the next one.
        s.saw(4);
        assert_eq!(s.ask(ReqId(3), 4, us(20)), Durable::Wait);
        assert_eq!(s.due(us(20), 0), Err(None), "one sync at a time");
        assert_eq!(s.finished(us(400), 0), vec![ReqId(1), ReqId(2)]);
        assert_eq!(s.durable(), 3);
        assert_eq!(s.ask(ReqId(4), 3, us(401)), Durable::Now);
    }

    #[test]
    fn a_sync_that_covered_more_than_it_was_asked_for_answers_those_requests_too() {
        let mut s = Syncs::default();
        s.saw(3);
        s.ask(ReqId(1), 3, us(0));
        assert_eq!(s.start(us(0)), (1, 3));
        // Written after the sync was asked for, but before its fsync began (it queued behind
        // another engine's): the store reports them durable too.
        s.saw(5);
        s.ask(ReqId(2), 4, us(10));
        s.ask(ReqId(3), 5, us(20));
        s.saw(6);
        s.ask(ReqId(4), 6, us(30));
        assert_eq!(s.finished(us(300), 5), vec![ReqId(1), ReqId(2), ReqId(3)]);
        assert_eq!(s.durable(), 5);
        assert_eq!(s.ask(ReqId(5), 5, us(301)), Durable::Now);
        // Only the one past it waits for the next sync, which covers up to 6 (asked for at
        // the latest a hold after the oldest of them began to wait).
        assert_eq!(s.due(us(400), 0), Err(Some(us(450))));
        assert_eq!(s.due(us(450), 0), Ok(()));
        assert_eq!(s.start(us(450)), (1, 6));
    }

    #[test]
    fn the_next_sync_waits_briefly_for_the_clients_the_last_one_answered() {
        let mut s = Syncs::default();
        // Sixteen clients in two groups: 8 covered by a sync in flight, 8 waiting behind it.
        for r in 0..8 {
            s.saw(r + 1);
            s.ask(ReqId(r), r + 1, us(0));
        }
        s.start(us(0));
        for r in 8..16 {
            s.saw(r + 1);
            s.ask(ReqId(r), r + 1, us(100));
        }
        assert_eq!(s.finished(us(800), 0).len(), 8);
        // Eight wait, sixteen are expected: held for half the last sync's 800 µs, but no longer
        // than a millisecond after the first of the eight began to wait.
        assert_eq!(s.due(us(801), 0), Err(Some(us(1100))));
        for r in 0..8 {
            s.saw(100 + r);
            s.ask(ReqId(100 + r), 100 + r, us(850));
        }
        assert_eq!(
            s.due(us(850), 0),
            Ok(()),
            "all sixteen are in: one sync for all"
        );
        s.start(us(850));
        assert_eq!(s.finished(us(1650), 0).len(), 16);
        // A client that does not come back costs one hold (from the first of the others), then
        // the expectation follows.
        for r in 0..15 {
            s.saw(200 + r);
            s.ask(ReqId(200 + r), 200 + r, us(1700));
        }
        assert_eq!(s.due(us(1700), 0), Err(Some(us(2100))));
        assert_eq!(s.due(us(2100), 0), Ok(()));
        s.start(us(2100));
        assert_eq!(s.finished(us(2900), 0).len(), 15);
        assert_eq!(s.expect, 15);
    }

    #[test]
    fn the_hold_is_capped_and_a_failed_sync_fails_everyone_waiting() {
        let mut s = Syncs::default();
        s.saw(1);
        s.ask(ReqId(1), 1, us(0));
        s.start(us(0));
        s.saw(2);
        s.ask(ReqId(2), 2, us(1));
        s.finished(Duration::from_millis(40), 0);
        assert_eq!(s.hold(), MAX_HOLD);
        s.ask(ReqId(3), 2, us(40_001));
        s.forget(ReqId(3));
        s.start(Duration::from_millis(41));
        s.saw(3);
        s.ask(ReqId(4), 3, Duration::from_millis(42));
        assert_eq!(s.failed(), vec![ReqId(2), ReqId(4)]);
        assert_eq!(s.due(Duration::from_millis(50), 0), Err(None));
    }
}
