//! Group commit: concurrent requests of one process share the fsyncs of the ledger file.
//!
//! A writer appends its bytes under the store's locks (so compare-and-append keeps its order),
//! releases them, and then waits in [`GroupCommit::wait_durable`] until the file is durable up
//! to the end of its bytes. Whoever finds no fsync in flight becomes the leader: it takes the
//! highest offset written so far, fsyncs the file once for everybody, and wakes the others
//! (followers); a follower whose bytes were written after that fsync began waits for the next
//! one. Readers wait the same way for the offset of the snapshot they answer from
//! (`Store::snapshot` waits before handing it out; the engine's unsettled snapshot waits in
//! `Store::settle` before an answer that appended nothing), so no answer leaves before the
//! records it reflects are durable, whichever thread or process wrote them (an fsync through
//! any descriptor of the file flushes every byte written to it). A writer's snapshot does not
//! wait: its own append extends what it read, and it waits for that.
//!
//! A failed fsync fails every waiter and poisons the store for the life of the process: after
//! a failed fsync, Linux may drop the dirty pages and report success on the next one, so no
//! later fsync can prove the earlier bytes durable. A restart re-reads what really is on disk.
//!
//! A caller may also wait by ledger position ([`GroupCommit::settle_to`]): each noted end is
//! noted with the position its records reach, so a caller that needs only the records it saw
//! waits for the fsync that covers them, not for one that also covers what another thread
//! wrote since (with several engines, each engine's sync would otherwise wait for the others'
//! newer bytes and cost a second fsync).
//!
//! This module must never report an offset durable unless an fsync that began after the bytes
//! before it were written has since succeeded.

use std::collections::VecDeque;
use std::io;
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::Instant;

use bernstein_ledger::SyncFacts;
use bernstein_ledger::histogram::{self, Histogram};

/// The fsync of the ledger file, as the leader performs it.
pub trait Fsync: Send + Sync {
    fn sync(&self) -> io::Result<()>;
}

impl Fsync for std::fs::File {
    fn sync(&self) -> io::Result<()> {
        self.sync_data()
    }
}

/// Counters of what group commit did (for benchmarks and tests; the timings are in
/// [`GroupCommit::facts`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SyncStats {
    /// Waits that found their offset not yet durable.
    pub waits: u64,
    /// Fsyncs performed by leaders.
    pub syncs: u64,
}

/// The durable offset of one ledger file and the fsync leader election.
#[derive(Debug)]
pub struct GroupCommit<S> {
    file: S,
    state: Mutex<State>,
    synced: Condvar,
}

#[derive(Debug)]
struct State {
    /// The file holds verified bytes up to here (written by us or folded from the file).
    written: u64,
    /// Appends of this process noted since the last fsync began (the next one covers them).
    unsynced_appends: u64,
    /// Every byte before this offset is known durable.
    durable: u64,
    /// Noted positions not yet durable, with the offset their records end at; both rise from
    /// front to back.
    marks: VecDeque<(u64, u64)>,
    /// Every record up to this position is known durable.
    durable_position: u64,
    /// A leader is in fsync.
    syncing: bool,
    /// Threads waiting for the fsync another leads (woken when it ends; with none, the
    /// leader wakes nobody).
    waiting: usize,
    /// The error of a failed fsync: the store is poisoned.
    failed: Option<String>,
    stats: SyncStats,
    /// What the fsyncs cost and covered.
    facts: SyncFacts,
}

impl State {
    fn note(&mut self, position: u64, end: u64) {
        self.written = self.written.max(end);
        if end <= self.durable {
            self.durable_position = self.durable_position.max(position);
            return;
        }
        // A mark older than the newest is dropped: a later one covers its records (it waits a
        // little longer than it must, never less).
        if self
            .marks
            .back()
            .is_none_or(|&(p, e)| position > p && end >= e)
        {
            self.marks.push_back((position, end));
        }
    }

    /// The offset every record up to `position` ends at or before.
    fn end_of(&self, position: u64) -> u64 {
        if position <= self.durable_position {
            return self.durable;
        }
        match self.marks.iter().find(|&&(p, _)| p >= position) {
            Some(&(_, end)) => end,
            None => self.written,
        }
    }

    fn made_durable(&mut self, target: u64) {
        self.durable = self.durable.max(target);
        while let Some(&(p, e)) = self.marks.front()
            && e <= self.durable
        {
            self.durable_position = self.durable_position.max(p);
            self.marks.pop_front();
        }
    }
}

impl<S: Fsync> GroupCommit<S> {
    /// Group commit over `file`, nothing yet known durable.
    pub fn new(file: S) -> GroupCommit<S> {
        GroupCommit {
            file,
            state: Mutex::new(State {
                written: 0,
                unsynced_appends: 0,
                durable: 0,
                marks: VecDeque::new(),
                durable_position: 0,
                syncing: false,
                waiting: 0,
                failed: None,
                stats: SyncStats::default(),
                facts: SyncFacts {
                    fsync_seconds: Histogram::new(histogram::SECONDS),
                    appends_per_fsync: Histogram::new(histogram::POWERS_OF_TWO),
                    durable_bytes: 0,
                },
            }),
            synced: Condvar::new(),
        }
    }

    fn state(&self) -> MutexGuard<'_, State> {
        // Every update of the state is a single assignment; a panic cannot leave it torn.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// `Err` with the failed fsync's error once the store is poisoned.
    pub fn check(&self) -> Result<(), String> {
        match &self.state().failed {
            Some(e) => Err(e.clone()),
            None => Ok(()),
        }
    }

    /// Notes that the file holds the records up to `position`, ending at byte `end`, which a
    /// later fsync must cover.
    pub fn wrote(&self, position: u64, end: u64) {
        self.state().note(position, end);
    }

    /// Notes an append of this process whose records reach `position` and whose bytes end at
    /// `end`, for a later fsync to cover (counted in [`SyncFacts::appends_per_fsync`]).
    pub fn appended(&self, position: u64, end: u64) {
        let mut s = self.state();
        s.note(position, end);
        s.unsynced_appends += 1;
    }

    /// Blocks until every record up to `position` that was noted ([`Self::wrote`],
    /// [`Self::appended`]) is durable; a position beyond every noted one waits for every byte
    /// noted so far (so `u64::MAX` settles everything). Returns the highest noted position now
    /// durable, which may be past `position`: the fsync that covered it covered everything
    /// noted before it began. `Err` if an fsync failed.
    pub fn settle_to(&self, position: u64) -> Result<u64, String> {
        let end = self.state().end_of(position);
        self.wait_durable(end)?;
        Ok(self.state().durable_position)
    }

    /// Blocks until every byte before `end` is durable (those bytes are in the file already),
    /// performing the fsync itself when no other thread is. `Err` if an fsync failed.
    pub fn wait_durable(&self, end: u64) -> Result<(), String> {
        let mut s = self.state();
        s.written = s.written.max(end);
        if s.durable < end {
            s.stats.waits += 1;
        }
        loop {
            if let Some(e) = &s.failed {
                return Err(e.clone());
            }
            if s.durable >= end {
                return Ok(());
            }
            if s.syncing {
                s.waiting += 1;
                s = self.synced.wait(s).unwrap_or_else(|p| p.into_inner());
                s.waiting -= 1;
                continue;
            }
            // Lead: everything written before this point is covered by the fsync below.
            s.syncing = true;
            let target = s.written;
            let appends = std::mem::take(&mut s.unsynced_appends);
            drop(s);
            let began = Instant::now();
            let result = self.file.sync();
            let took = began.elapsed();
            s = self.state();
            s.syncing = false;
            s.stats.syncs += 1;
            s.facts.fsync_seconds.observe(took.as_secs_f64());
            if appends > 0 {
                s.facts.appends_per_fsync.observe(appends as f64);
            }
            match result {
                Ok(()) => s.made_durable(target),
                Err(e) => s.failed = Some(e.to_string()),
            }
            if s.waiting > 0 {
                self.synced.notify_all();
            }
        }
    }

    /// What group commit did so far.
    pub fn stats(&self) -> SyncStats {
        self.state().stats
    }

    /// The fsyncs' durations and how many appends each covered, so far.
    pub fn facts(&self) -> SyncFacts {
        let s = self.state();
        SyncFacts {
            durable_bytes: s.durable,
            ..s.facts.clone()
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::mpsc::{Receiver, Sender, channel};
    use std::time::Duration;

    use super::*;

    /// An fsync that reports each call and then blocks until the test releases it with the
    /// result to return: the test decides when every fsync ends.
    struct Gate {
        started: Mutex<Sender<()>>,
        release: Mutex<Receiver<io::Result<()>>>,
    }

    impl Fsync for Gate {
        fn sync(&self) -> io::Result<()> {
            self.started.lock().unwrap().send(()).unwrap();
            self.release.lock().unwrap().recv().unwrap()
        }
    }

    struct Rig {
        gc: Arc<GroupCommit<Gate>>,
        started: Receiver<()>,
        release: Sender<io::Result<()>>,
    }

    fn rig() -> Rig {
        let (started_tx, started) = channel();
        let (release, release_rx) = channel();
        Rig {
            gc: Arc::new(GroupCommit::new(Gate {
                started: Mutex::new(started_tx),
                release: Mutex::new(release_rx),
            })),
            started,
            release,
        }
    }

    impl Rig {
        fn waiter(&self, end: u64) -> Receiver<Result<(), String>> {
            let (tx, rx) = channel();
            let gc = self.gc.clone();
            std::thread::spawn(move || tx.send(gc.wait_durable(end)).unwrap());
            rx
        }

        /// Waits until a waiter sits on the condition variable behind a leader (the count
        /// of waits rises before anyone blocks; give the thread time to block).
        fn until_waits(&self, n: u64) {
            while self.gc.stats().waits < n {
                std::thread::yield_now();
            }
        }
    }

    fn not_yet<T>(rx: &Receiver<Result<T, String>>) {
        assert!(
            rx.recv_timeout(Duration::from_millis(50)).is_err(),
            "a waiter returned before its bytes were durable"
        );
    }

    #[test]
    fn one_fsync_serves_every_waiter_written_before_it_began() {
        let r = rig();
        r.gc.wrote(1, 100);
        r.gc.wrote(3, 300);
        let a = r.waiter(100);
        r.started.recv().unwrap();
        let b = r.waiter(300);
        let c = r.waiter(200);
        r.until_waits(3);
        not_yet(&a);
        not_yet(&b);
        r.release.send(Ok(())).unwrap();
        for rx in [a, b, c] {
            assert_eq!(rx.recv().unwrap(), Ok(()));
        }
        assert_eq!(r.gc.stats().syncs, 1);
        // Already durable: no fsync, no wait.
        assert_eq!(r.gc.wait_durable(300), Ok(()));
        assert_eq!(r.gc.stats(), SyncStats { waits: 3, syncs: 1 });
    }

    #[test]
    fn bytes_written_after_an_fsync_began_wait_for_the_next_one() {
        let r = rig();
        let a = r.waiter(100);
        r.started.recv().unwrap();
        // Written while the first fsync runs: it may not cover them.
        let b = r.waiter(250);
        r.until_waits(2);
        r.release.send(Ok(())).unwrap();
        assert_eq!(a.recv().unwrap(), Ok(()));
        r.started.recv().unwrap();
        not_yet(&b);
        r.release.send(Ok(())).unwrap();
        assert_eq!(b.recv().unwrap(), Ok(()));
        assert_eq!(r.gc.stats().syncs, 2);
    }

    #[test]
    fn each_fsync_is_timed_and_counts_the_appends_it_covered() {
        let r = rig();
        r.gc.appended(1, 100);
        r.gc.appended(2, 200);
        let a = r.waiter(200);
        r.started.recv().unwrap();
        // Noted while the first fsync runs: the next one covers it.
        r.gc.appended(3, 300);
        let b = r.waiter(300);
        r.until_waits(2);
        r.release.send(Ok(())).unwrap();
        assert_eq!(a.recv().unwrap(), Ok(()));
        r.started.recv().unwrap();
        r.release.send(Ok(())).unwrap();
        assert_eq!(b.recv().unwrap(), Ok(()));
        // A reader's fsync of bytes folded from the file covers no append of this process.
        r.gc.wrote(4, 400);
        let c = r.waiter(400);
        r.started.recv().unwrap();
        r.release.send(Ok(())).unwrap();
        assert_eq!(c.recv().unwrap(), Ok(()));
        let f = r.gc.facts();
        assert_eq!(f.fsync_seconds.count(), 3);
        assert!(f.fsync_seconds.sum() > 0.0);
        let batches: Vec<(f64, u64)> = f.appends_per_fsync.cumulative().take(2).collect();
        assert_eq!(batches, vec![(1.0, 1), (2.0, 2)]);
        assert_eq!(f.appends_per_fsync.count(), 2);
        assert_eq!(f.appends_per_fsync.sum(), 3.0);
    }

    #[test]
    fn a_wait_by_position_is_not_held_by_bytes_written_after_its_own() {
        let r = rig();
        r.gc.appended(1, 100);
        let a = r.waiter(100);
        r.started.recv().unwrap();
        // Another writer appends while the fsync runs: a settle of what was seen before it
        // waits for the fsync in flight only; a settle of the new records, for the next one.
        r.gc.appended(2, 250);
        let (to1, to2) = (r.gc.clone(), r.gc.clone());
        let (tx1, one) = channel();
        let (tx2, two) = channel();
        std::thread::spawn(move || tx1.send(to1.settle_to(1)).unwrap());
        std::thread::spawn(move || tx2.send(to2.settle_to(2)).unwrap());
        r.until_waits(3);
        r.release.send(Ok(())).unwrap();
        assert_eq!(a.recv().unwrap(), Ok(()));
        // The fsync covered position 1 only: 2 was written after it began.
        assert_eq!(one.recv().unwrap(), Ok(1));
        r.started.recv().unwrap();
        not_yet(&two);
        r.release.send(Ok(())).unwrap();
        assert_eq!(two.recv().unwrap(), Ok(2));
        // Durable positions answer at once; past every noted one means all noted bytes.
        assert_eq!(r.gc.settle_to(1), Ok(2));
        assert_eq!(r.gc.settle_to(u64::MAX), Ok(2));
        assert_eq!(r.gc.stats().syncs, 2);
        // Noted before the next fsync begins, a position is reported durable with the one asked
        // for, though nobody asked for it.
        r.gc.appended(3, 300);
        let three = r.waiter(300);
        r.started.recv().unwrap();
        r.release.send(Ok(())).unwrap();
        assert_eq!(three.recv().unwrap(), Ok(()));
        assert_eq!(r.gc.settle_to(3), Ok(3));
    }

    #[test]
    fn a_failed_fsync_fails_its_waiters_and_poisons_the_store() {
        let r = rig();
        let a = r.waiter(100);
        r.started.recv().unwrap();
        let b = r.waiter(100);
        r.until_waits(2);
        r.release.send(Err(io::Error::other("EIO"))).unwrap();
        assert_eq!(a.recv().unwrap(), Err("EIO".to_string()));
        assert_eq!(b.recv().unwrap(), Err("EIO".to_string()));
        // Nothing later is reported durable, not even with a fresh write.
        assert_eq!(r.gc.check(), Err("EIO".to_string()));
        assert_eq!(r.gc.wait_durable(50), Err("EIO".to_string()));
        assert_eq!(r.gc.stats().syncs, 1);
    }
}
