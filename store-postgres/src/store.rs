//! [`PgStore`]: the core's [`Store`] over a PostgreSQL database shared by many instances.
//!
//! - compare-and-append is one database transaction that inserts the request's records at
//!   `expected.seq + 1 ..`; when another writer got there first the primary key (or the hash
//!   chain's foreign key) refuses it, nothing is written and the caller gets
//!   [`AppendResult::Conflict`] with the fresh head. The records are checked against the
//!   folded snapshot first, exactly like the file store, and `Committed` is returned only after
//!   PostgreSQL acknowledged the COMMIT (durable: `synchronous_commit` is left on).
//! - snapshots are folded incrementally per instance from the last seq seen: one indexed query
//!   for the rows after it, so a request costs the same at any ledger size. Every snapshot asks
//!   the database (a client that wrote through instance A and reads through B sees its write).
//! - projection checkpoints in `bernstein_checkpoint` let a new instance skip the folded prefix;
//!   those that fall due are written off the request path, by a writer thread that rests
//!   between writes (`bernstein_store_file::checkpointer`).
//! - the commit sends `NOTIFY bernstein_ledger` in the same transaction, which [`Listener`]
//!   turns into wake-ups for blocking waits.
//! - the audit record of a read (a call that succeeded and wrote nothing) is not
//!   compare-and-appended: it joins this instance's group commit ([`crate::group`]), sealed
//!   again after whatever head the leader reads, so reads never refuse each other across
//!   instances.
//!
//! It must never acknowledge an append before COMMIT returned, never merge, and never hand out
//! a snapshot built from records it did not verify.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use bernstein_ledger::rebase::{self, lone_call_audit, reseal};
use bernstein_ledger::sequence;
use bernstein_ledger::verify::check_extends;
use bernstein_ledger::{
    Append, AppendResult, Draft, Fold, LedgerPosition, Record, Snapshot, Store, StoreError,
    StoreFacts,
};

use bernstein_os::scrub::Finding;
use bernstein_store_file::Checkpointed;
use bernstein_store_file::checkpointer::Checkpointer;
use postgres::NoTls;

use crate::fold::{self, Row, fold_rows};
use crate::group::{Group, Outcome};
use crate::insert::Columns;
use crate::listen::Listener;
use crate::pool::{Lease, Pool, PoolOptions, describe, unavailable};
use crate::{checkpoint, schema};

/// Rows read per query while folding.
const BATCH: i64 = 5000;
/// How often a group commit may lose the head to other instances before its calls fail.
const MAX_RACES: u32 = 100;

/// Tunables of a [`PgStore`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PgOptions {
    pub pool: PoolOptions,
    /// Write a checkpoint once this many records (or a tenth of the ledger, if more) were
    /// folded since the last one (0: never), on a thread of its own.
    pub checkpoint_every: u64,
    /// After writing a checkpoint that took `d`, its writer rests `d × checkpoint_rest` (as the
    /// file store's: `bernstein_store_file::checkpointer`).
    pub checkpoint_rest: u32,
    /// Run a LISTEN connection so blocking waits wake on commits.
    pub listen: bool,
}

impl Default for PgOptions {
    fn default() -> Self {
        PgOptions {
            pool: PoolOptions::default(),
            checkpoint_every: 5000,
            checkpoint_rest: 4,
            listen: true,
        }
    }
}

/// The PostgreSQL ledger store.
pub struct PgStore<F: Checkpointed> {
    pool: Pool,
    key: Vec<u8>,
    options: PgOptions,
    state: Mutex<State<F>>,
    /// Serializes this instance's appends: concurrent requests of one instance queue here
    /// instead of racing each other into the database (where all but one would be refused
    /// after waiting for the winner's commit). Instances still race each other, safely.
    writer: Mutex<()>,
    /// The queue of call audits waiting for one transaction (see [`crate::group`]).
    group: Group<(Draft, u64)>,
    listener: Option<Listener>,
    /// Writes the checkpoints that fall due, off the request path, on a connection of its own.
    checkpointer: Checkpointer<Arc<Snapshot<F>>>,
    /// What the scrub found, if it found the ledger changed under the server (`crate::scrub`):
    /// nothing more is served.
    finding: Finding,
    /// The ledger table's size on disk and when it was read (see [`PgStore::table_bytes`]).
    table_size: Mutex<Option<(Instant, Option<u64>)>>,
}

/// The ledger table's size on disk: its rows, TOAST and indexes.
const TABLE_BYTES: &str = "SELECT pg_total_relation_size('bernstein_ledger'::regclass)";

/// How long a read of the table's size is reused: the dashboard polls every few seconds, and
/// each read is a query of its own.
const TABLE_BYTES_FRESH: Duration = Duration::from_secs(5);

impl<F: Checkpointed> std::fmt::Debug for PgStore<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgStore")
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

#[derive(Debug)]
struct State<F: Checkpointed> {
    snapshot: Arc<Snapshot<F>>,
    since_checkpoint: u64,
}

/// The fold's read: the rows after a seq.
const READ_ROWS: &str =
    "SELECT seq, hash, line FROM bernstein_ledger WHERE seq > $1 ORDER BY seq LIMIT $2";

impl<F: Checkpointed> PgStore<F> {
    /// Connects to `url`, refuses a schema this software does not serve (see
    /// [`schema::check`]), and folds the ledger (from the checkpoint when there is a usable one).
    pub fn open(
        url: &str,
        audit_key: Vec<u8>,
        options: PgOptions,
    ) -> Result<PgStore<F>, StoreError> {
        let pool = Pool::new(url, options.pool.clone())?;
        let initial = {
            let mut lease = pool.get()?;
            schema::check(lease.client()).map_err(|e| StoreError::Unavailable(e.to_string()))?;
            let cp = checkpoint::load(lease.client(), &audit_key).map_err(|reason| {
                fold::corrupt(0, format!("the checkpoint cannot be trusted: {reason}"))
            })?;
            if let Some(cp) = &cp {
                // Every record up to the checkpoint verifies and ends exactly at it.
                verify_prefix(&mut lease, &audit_key, cp)?;
            }
            cp
        };
        let listener = if options.listen {
            Some(Listener::start(pool.config().clone()))
        } else {
            None
        };
        let checkpointer = {
            let (config, key) = (pool.config().clone(), audit_key.clone());
            let mut client: Option<postgres::Client> = None;
            let failed =
                |e: &dyn std::fmt::Display| format!("cannot write the PostgreSQL checkpoint: {e}");
            Checkpointer::start(
                options.checkpoint_rest,
                Box::new(move |snapshot: &Arc<Snapshot<F>>| {
                    let c = match &mut client {
                        Some(c) => c,
                        None => client.insert(config.connect(NoTls).map_err(|e| failed(&e))?),
                    };
                    let written = checkpoint::write(c, &key, snapshot);
                    if written.is_err() {
                        // Connect afresh next time: the connection may be what failed.
                        client = None;
                    }
                    written
                        .map(|()| snapshot.position.seq)
                        .map_err(|e| failed(&e))
                }),
            )
            .map_err(|e| StoreError::Io(format!("start the checkpoint writer: {e}")))?
        };
        let store = PgStore {
            pool,
            key: audit_key,
            options,
            state: Mutex::new(State {
                snapshot: initial.unwrap_or_else(|| Arc::new(Snapshot::genesis())),
                since_checkpoint: 0,
            }),
            writer: Mutex::new(()),
            group: Group::default(),
            listener,
            checkpointer,
            finding: Finding::new(),
            table_size: Mutex::new(None),
        };
        store.catch_up()?;
        Ok(store)
    }

    /// The pool (for export, import and tools that query the database directly).
    pub fn pool(&self) -> &Pool {
        &self.pool
    }

    /// The audit key records are verified with.
    pub fn key(&self) -> &[u8] {
        &self.key
    }

    /// Waits until a commit past `after` was announced or `timeout` passed; true when one was.
    /// Without a listener (or while it is disconnected) it sleeps `timeout`: callers re-read
    /// the snapshot either way, so a lost notification only delays them.
    pub fn wait_for_commit(&self, after: &LedgerPosition, timeout: Duration) -> bool {
        match &self.listener {
            Some(l) => l.wait_past(after.seq, timeout).is_some(),
            None => {
                std::thread::sleep(timeout);
                false
            }
        }
    }

    /// Blocks until the checkpoints handed to the writer thread are written (tests, tools).
    pub fn flush_checkpoints(&self) {
        self.checkpointer.flush();
    }

    /// Writes a checkpoint of the current projection now.
    pub fn checkpoint(&self) -> Result<(), StoreError> {
        // An older state the writer thread is writing must not replace this one afterwards.
        self.checkpointer.quiesce();
        let snapshot = self.state().snapshot.clone();
        let mut lease = self.pool.get()?;
        checkpoint::write(lease.client(), &self.key, &snapshot)
            .map_err(|e| StoreError::Unavailable(format!("PostgreSQL: {e}")))?;
        self.state().since_checkpoint = 0;
        Ok(())
    }

    /// The head folded so far.
    pub(crate) fn position(&self) -> LedgerPosition {
        self.state().snapshot.position
    }

    pub(crate) fn finding_cell(&self) -> &Finding {
        &self.finding
    }

    /// Refuses once the scrub found the ledger changed.
    fn check_served(&self) -> Result<(), StoreError> {
        match self.finding.get() {
            Some(reason) => Err(StoreError::NotServed(reason.clone())),
            None => Ok(()),
        }
    }

    fn state(&self) -> MutexGuard<'_, State<F>> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Folds the rows committed after the snapshot's position; returns the new snapshot.
    /// The database is read without holding the state lock, so concurrent callers overlap.
    fn catch_up(&self) -> Result<Arc<Snapshot<F>>, StoreError> {
        self.catch_up_on(&mut self.pool.get()?)
    }

    /// [`PgStore::catch_up`] on a connection the caller holds.
    fn catch_up_on(&self, lease: &mut Lease<'_>) -> Result<Arc<Snapshot<F>>, StoreError> {
        loop {
            let from = self.state().snapshot.position.seq;
            let rows = read_rows(lease, from, BATCH)?;
            let full = rows.len() as i64 == BATCH;
            let mut state = self.state();
            let folded = fold_rows(&mut state.snapshot, &rows, &self.key, !full)?;
            state.since_checkpoint += folded;
            if !full {
                let snapshot = state.snapshot.clone();
                // The cost of a checkpoint grows with the projection, so on a large ledger
                // they are spaced out (every tenth of the ledger at most): constant cost per
                // record, amortized.
                let every = self
                    .options
                    .checkpoint_every
                    .max(snapshot.position.seq / 10);
                if self.options.checkpoint_every > 0
                    && state.since_checkpoint >= every
                    && self.checkpointer.ready()
                {
                    // Written on the writer's thread; an optimisation only: the records are
                    // durable without it.
                    state.since_checkpoint = 0;
                    self.checkpointer.hand_over(snapshot.clone());
                }
                return Ok(snapshot);
            }
        }
    }

    /// Folds records this instance just committed after `expected`, unless another thread
    /// folded past it meanwhile (then they are folded from the table like any other).
    fn fold_own(&self, expected: &LedgerPosition, records: &[Record]) {
        let mut state = self.state();
        if state.snapshot.position == *expected {
            let snap = Arc::make_mut(&mut state.snapshot);
            for rec in records {
                snap.apply(rec)
                    .expect("check_extends accepted these records, so they extend the snapshot");
            }
            state.since_checkpoint += records.len() as u64;
        }
    }

    /// Commits a call's lone audit record through the group commit: durable on `Committed`,
    /// at the position it was sealed at (after the head the leader read).
    fn commit_call_audit(&self, draft: Draft, served_at: u64) -> Result<AppendResult, StoreError> {
        match self
            .group
            .submit((draft, served_at), |batch| self.commit_batch(batch))
        {
            Outcome::Committed(at) => Ok(AppendResult::Committed(at)),
            Outcome::Stale(current) => Ok(AppendResult::Conflict { current }),
            Outcome::Failed(why) => Err(StoreError::Unavailable(why)),
        }
    }

    /// The group commit's leader: seals `batch` after the head, one transaction per record, and
    /// inserts them all in one database transaction, reading the head again when another
    /// instance took it first.
    fn commit_batch(&self, batch: Vec<(u64, (Draft, u64))>) -> Vec<(u64, Outcome)> {
        let _writer = self.writer.lock().unwrap_or_else(|p| p.into_inner());
        let fail = |why: String| -> Vec<(u64, Outcome)> {
            let each = |(t, _): &(u64, (Draft, u64))| (*t, Outcome::Failed(why.clone()));
            batch.iter().map(each).collect()
        };
        let mut lease = match self.pool.get() {
            Ok(l) => l,
            Err(e) => return fail(e.to_string()),
        };
        for race in 0..MAX_RACES {
            match self.lead(&mut lease, &batch) {
                Ok(Some(outcomes)) => return outcomes,
                Ok(None) => pause_after_losing(race),
                Err(why) => {
                    lease.discard();
                    return fail(why);
                }
            }
        }
        fail(format!(
            "the ledger head moved {MAX_RACES} times while committing {} call audit records",
            batch.len()
        ))
    }

    /// One try of the leader: `None` when another instance took the head first.
    fn lead(
        &self,
        lease: &mut Lease<'_>,
        batch: &[(u64, (Draft, u64))],
    ) -> Result<Option<Vec<(u64, Outcome)>>, String> {
        let snapshot = self.catch_up_on(lease).map_err(|e| e.to_string())?;
        let mut outcomes = Vec::with_capacity(batch.len());
        let mut sealed: Vec<(u64, Record)> = Vec::with_capacity(batch.len());
        let mut at = snapshot.position;
        for (ticket, (draft, served_at)) in batch {
            let head = |stream: &str| {
                let mine = sealed.iter().rev().find(|(_, r)| r.stream == stream);
                mine.map_or_else(|| snapshot.stream_head(stream), |(_, r)| r.hash)
            };
            match reseal(draft.clone(), *served_at, &at, head, &self.key) {
                Some(rec) => {
                    at = LedgerPosition {
                        seq: rec.seq,
                        head: rec.hash,
                    };
                    sealed.push((*ticket, rec));
                }
                None => outcomes.push((*ticket, Outcome::Stale(snapshot.position))),
            }
        }
        if sealed.is_empty() {
            return Ok(Some(outcomes));
        }
        let records: Vec<Record> = sealed.iter().map(|(_, r)| r.clone()).collect();
        let cols = self
            .checked_columns(&snapshot, &records)
            .map_err(|e| e.to_string())?;
        match cols.insert_committed(lease) {
            Ok(()) => {}
            Err(e) if is_conflict(&e) => return Ok(None),
            // The outcome of a COMMIT whose answer was lost is unknown: none is acknowledged.
            Err(e) => {
                return Err(format!(
                    "PostgreSQL: the append was not acknowledged: {}",
                    describe(&e)
                ));
            }
        }
        self.fold_own(&snapshot.position, &records);
        outcomes.extend(sealed.into_iter().map(|(t, r)| {
            let at = LedgerPosition {
                seq: r.seq,
                head: r.hash,
            };
            (t, Outcome::Committed(at))
        }));
        Ok(Some(outcomes))
    }

    /// The records' columns, after checking they extend `snapshot` as whole transactions and
    /// read back as valid records under this store's key.
    fn checked_columns(
        &self,
        snapshot: &Snapshot<F>,
        records: &[Record],
    ) -> Result<Columns, StoreError> {
        let refuse = |reason: String| {
            StoreError::Unavailable(format!("refused a malformed append: {reason}"))
        };
        check_extends(snapshot, records)
            .map_err(|(i, reason)| refuse(format!("record {}: {reason}", i + 1)))?;
        let mut cols = Columns::default();
        for rec in records {
            let mut line = rec.to_line();
            line.pop();
            Record::parse_line(&line, Some(&self.key))
                .map_err(|e| refuse(format!("record {} would not read back: {e}", rec.seq)))?;
            cols.push(rec, line);
        }
        Ok(cols)
    }
}

/// Verifies the rows up to `cp`'s seq with the offline verifier's rules and checks they end at
/// its position and stream heads.
fn verify_prefix<F: Fold>(
    lease: &mut Lease<'_>,
    key: &[u8],
    cp: &Snapshot<F>,
) -> Result<(), StoreError> {
    use bernstein_ledger::verify::{LedgerVerifier, prefix_matches, whole_ledger_error};
    let mut verifier = LedgerVerifier::new(fold::TABLE_NAME, Some(key)).collect_calls(false);
    let fail = |f: bernstein_ledger::verify::VerifyFailure| {
        if let Some(e) = whole_ledger_error(&f) {
            return e;
        }
        fold::corrupt(f.seq, f.reason)
    };
    let mut from = 0;
    while from < cp.position.seq {
        let limit = BATCH.min((cp.position.seq - from) as i64);
        let rows = read_rows(lease, from, limit)?;
        if rows.is_empty() {
            break;
        }
        for row in &rows {
            if row.seq != from as i64 + 1 {
                return Err(fold::corrupt(
                    from + 1,
                    format!("row {} is missing", from + 1),
                ));
            }
            verifier.push_line(&row.line).map_err(fail)?;
            fold::check_columns(row, verifier.head())?;
            from += 1;
        }
    }
    let report = verifier.finish(&[]).map_err(fail)?;
    if !prefix_matches(&report, cp) {
        return Err(fold::corrupt(
            cp.position.seq,
            format!(
                "the checkpoint records seq {} head {}, but the ledger up to it ends at seq {} head {}: the ledger before the checkpoint was rewritten",
                cp.position.seq, cp.position.head, report.head.seq, report.head.head
            ),
        ));
    }
    Ok(())
}

impl<F: Checkpointed> PgStore<F> {
    /// The ledger table's size on disk, read at most every [`TABLE_BYTES_FRESH`] (`None` when
    /// the database cannot tell now).
    fn table_bytes(&self) -> Option<u64> {
        let mut cached = self
            .table_size
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some((at, bytes)) = *cached
            && at.elapsed() < TABLE_BYTES_FRESH
        {
            return bytes;
        }
        let bytes = self.pool.get().ok().and_then(|mut lease| {
            let row = lease
                .prepared(TABLE_BYTES)
                .and_then(|stmt| lease.client().query_one(&stmt, &[]));
            match row {
                Ok(row) => row
                    .get::<_, Option<i64>>(0)
                    .and_then(|n| u64::try_from(n).ok()),
                Err(_) => {
                    lease.discard();
                    None
                }
            }
        });
        *cached = Some((Instant::now(), bytes));
        bytes
    }
}

/// Rows after `from`, at most `limit`, in order.
pub(crate) fn read_rows(
    lease: &mut Lease<'_>,
    from: u64,
    limit: i64,
) -> Result<Vec<Row>, StoreError> {
    let rows = lease
        .prepared(READ_ROWS)
        .and_then(|stmt| lease.client().query(&stmt, &[&(from as i64), &limit]))
        .map_err(|e| {
            lease.discard();
            unavailable(e)
        })?;
    Ok(rows.iter().map(Row::of).collect())
}

/// After losing the head to another instance twice in a row, a short pause that grows with the
/// losses and is jittered, so that leaders of several instances stop colliding in lockstep.
fn pause_after_losing(race: u32) {
    if race < 2 {
        return;
    }
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let micros = 100 * u64::from(race.min(20)) + u64::from(nanos % 200);
    std::thread::sleep(Duration::from_micros(micros));
}

/// Whether the error is the database refusing a stale append (a seq already taken, or a
/// `prev` that is no longer the hash before it).
fn is_conflict(e: &postgres::Error) -> bool {
    use postgres::error::SqlState;
    e.code()
        .is_some_and(|c| *c == SqlState::UNIQUE_VIOLATION || *c == SqlState::FOREIGN_KEY_VIOLATION)
}

impl<F: Checkpointed> Store<F> for PgStore<F> {
    fn snapshot(&self) -> Result<Arc<Snapshot<F>>, StoreError> {
        self.check_served()?;
        self.catch_up()
    }

    fn check_writable(&self) -> Result<(), StoreError> {
        self.check_served()
    }

    fn facts(&self) -> StoreFacts {
        StoreFacts {
            kind: "postgres",
            ledger_bytes: self.table_bytes(),
            ..StoreFacts::default()
        }
    }

    fn scan_lines(&self, each: &mut dyn FnMut(&[u8]) -> bool) -> Result<(), StoreError> {
        self.check_served()?;
        // `each` saying stop is an early end, not an error.
        let read =
            crate::transfer::for_each_line(
                &self.pool,
                |line| {
                    if each(line) { Ok(()) } else { Err(()) }
                },
            );
        read.map(drop).map_err(StoreError::Unavailable)
    }

    fn hears_heads(&self) -> bool {
        self.listener.is_some()
    }

    fn heard_past(&self, after: u64, timeout: Duration) -> Option<u64> {
        self.listener.as_ref()?.wait_past(after, timeout)
    }

    fn compare_and_append(&self, append: &Append) -> Result<AppendResult, StoreError> {
        self.check_served()?;
        if let Some(draft) = lone_call_audit(append, &self.key) {
            return self.commit_call_audit(draft, append.expected.seq);
        }
        let _writer = self.writer.lock().unwrap_or_else(|p| p.into_inner());
        let mut snapshot = self.state().snapshot.clone();
        if snapshot.position != append.expected {
            // This instance already folded past it (another request of it, or a fold) and what
            // it read moved, or it named nothing: stale for sure, without asking the database.
            let stale = snapshot.position.seq > append.expected.seq
                && !rebase::reads_stand(append, |s| snapshot.stream_head(s));
            if stale {
                return Ok(AppendResult::Conflict {
                    current: snapshot.position,
                });
            }
            snapshot = self.catch_up()?;
        }
        if append.records.is_empty() {
            return Ok(if snapshot.position == append.expected {
                AppendResult::Committed(append.expected)
            } else {
                AppendResult::Conflict {
                    current: snapshot.position,
                }
            });
        }
        for race in 0..MAX_RACES {
            // After another writer, only an append that named what it read may move, and only
            // while that stands (`sequence`, `rebase`); it then races for the head here, not
            // re-run.
            let heads = |s: &str| snapshot.stream_head(s);
            let at = snapshot.position;
            let Some(placed) = sequence::place_one(append, at, heads, &self.key) else {
                return Ok(AppendResult::Conflict { current: at });
            };
            let cols = self.checked_columns(&snapshot, &placed.records)?;
            let mut lease = self.pool.get()?;
            match cols.insert_committed(&mut lease) {
                Ok(()) => {
                    drop(lease);
                    // Durable now. Fold our own records (checked above) unless another thread
                    // moved on.
                    self.fold_own(&placed.expected, &placed.records);
                    return Ok(AppendResult::Committed(placed.new_position()));
                }
                Err(e) if is_conflict(&e) => {
                    drop(lease);
                    snapshot = self.catch_up()?;
                    if !rebase::reads_stand(append, |s| snapshot.stream_head(s)) {
                        return Ok(AppendResult::Conflict {
                            current: snapshot.position,
                        });
                    }
                    pause_after_losing(race);
                }
                Err(e) => {
                    // The outcome of a COMMIT whose answer was lost is unknown: nothing is
                    // acknowledged, and the next snapshot shows whether it landed.
                    lease.discard();
                    return Err(StoreError::Unavailable(format!(
                        "PostgreSQL: the append was not acknowledged: {}",
                        describe(&e)
                    )));
                }
            }
        }
        let current = self.catch_up()?.position;
        Ok(AppendResult::Conflict { current })
    }
}
