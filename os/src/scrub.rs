//! The scrub: a server re-verifies its whole ledger in the background, pass after pass, so that
//! an old record edited in place while it runs is noticed (the open verifies the ledger once;
//! appends only read what was added since). Each pass reads every record up to a head the store
//! knows durable, checks its hash, chain and HMAC tag (the offline verifier's checks), and checks
//! that the prefix it saw before still ends in the same hash: the head the store opened on, then
//! the head of its previous pass. So an edit that keeps the chain consistent (made with the
//! audit key) is caught as well, and so is a ledger cut short in place.
//!
//! A finding is final: the store refuses every request from then on with the finding's reason
//! (`/readyz` says it, appends are refused) and it is logged once. The scrub reads at most
//! [`ScrubPolicy::bytes_per_sec`] and rests [`ScrubPolicy::every`] between passes, on a thread
//! of its own that ends with the store.
//!
//! Both stores scrub through this module: the file store (`store-file/src/scrub.rs`) and the
//! PostgreSQL store (`store-postgres/src/scrub.rs`) only say how their records are read
//! ([`Scrubbed`]).

use std::sync::{Arc, OnceLock, Weak};
use std::time::{Duration, Instant};

use bernstein_ledger::LedgerPosition;
use bernstein_ledger::verify::LedgerVerifier;

/// How a server scrubs its ledger.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ScrubPolicy {
    /// The rest between the end of a pass and the start of the next.
    pub every: Duration,
    /// Most ledger bytes read per second.
    pub bytes_per_sec: u64,
}

impl Default for ScrubPolicy {
    fn default() -> Self {
        ScrubPolicy {
            every: Duration::from_secs(30),
            bytes_per_sec: 32 << 20,
        }
    }
}

/// What a pass found wrong, once; the store refuses everything from then on.
pub type Finding = OnceLock<String>;

/// Why a pass ended early.
#[derive(Debug, PartialEq, Eq)]
pub enum Problem {
    /// The ledger is not what the server served: final.
    Found(String),
    /// The store could not be read this time.
    Unreadable(String),
}

/// A store the scrub can pass over.
pub trait Scrubbed: Send + Sync + 'static {
    /// The ledger's name in findings (its file, the database table).
    fn ledger_name(&self) -> String;
    /// What the operator runs to see everything wrong with the ledger (in findings).
    fn verify_command(&self) -> &'static str {
        "`bernstein audit verify`"
    }
    /// The key the records' HMAC tags are checked under.
    fn scrub_key(&self) -> &[u8];
    /// The head the store verified so far (the first pass's anchor; `None` before anything).
    fn verified_head(&self) -> Option<LedgerPosition>;
    /// Feeds every ledger line (without its newline) up to a head the store knows durable,
    /// oldest first, to `each`, which says the head its verifier reached with it, or `None` to
    /// stop (it found something). `Err(Problem::Found)` is a finding of the store's own (rows
    /// missing, a column that disagrees with its record).
    fn scrub_lines(
        &self,
        each: &mut dyn FnMut(&[u8]) -> Option<LedgerPosition>,
    ) -> Result<(), Problem>;
    /// The store's finding, kept once.
    fn finding(&self) -> &Finding;
}

/// Starts scrubbing `store` under `policy` on a thread of its own; the thread ends when the
/// store is dropped.
pub fn start<S: Scrubbed>(store: &Arc<S>, policy: ScrubPolicy) -> std::io::Result<()> {
    let anchor = store.verified_head();
    let weak = Arc::downgrade(store);
    std::thread::Builder::new()
        .name("bernstein-scrub".into())
        .spawn(move || scrub_forever(&weak, policy, anchor))
        .map(drop)
}

fn scrub_forever<S: Scrubbed>(
    store: &Weak<S>,
    policy: ScrubPolicy,
    mut anchor: Option<LedgerPosition>,
) {
    loop {
        std::thread::sleep(policy.every);
        let Some(store) = store.upgrade() else {
            return;
        };
        if store.finding().get().is_some() {
            return;
        }
        match pass(&*store, policy, anchor.as_ref()) {
            Ok(head) => anchor = Some(head),
            Err(Problem::Found(reason)) => {
                if store.finding().set(reason.clone()).is_ok() {
                    crate::log_line!("bernstein: scrub: {reason}");
                }
                return;
            }
            // The store cannot be read now (it said why to whoever asked); try the next pass.
            Err(Problem::Unreadable(_)) => {}
        }
    }
}

/// One pass over `store`'s ledger, paced to `policy`: the head it verified up to, or what it
/// found. `anchor` is a head an earlier look verified (the open, the previous pass).
pub fn pass<S: Scrubbed + ?Sized>(
    store: &S,
    policy: ScrubPolicy,
    anchor: Option<&LedgerPosition>,
) -> Result<LedgerPosition, Problem> {
    let name = store.ledger_name();
    let verify = store.verify_command();
    let mut verifier = LedgerVerifier::new(&name, Some(store.scrub_key())).collect_calls(false);
    let mut problem = None;
    let mut pace = Pace::new(policy.bytes_per_sec);
    let scanned = store.scrub_lines(&mut |line| {
        if let Err(e) = verifier.push_line(line) {
            problem = Some(format!(
                "{name} line {} (record {}) no longer verifies: {}; it changed while the server ran: stop it and run {verify}",
                e.line, e.seq, e.reason
            ));
            return None;
        }
        let head = verifier.head();
        if let Some(a) = anchor
            && head.seq == a.seq
            && head.head != a.head
        {
            problem = Some(format!(
                "{name}: the records up to {} no longer end in the hash this server verified ({}); the ledger was rewritten while the server ran: stop it and run {verify}",
                a.seq, a.head
            ));
            return None;
        }
        pace.read(line.len() as u64 + 1);
        Some(head)
    });
    if let Some(reason) = problem {
        return Err(Problem::Found(reason));
    }
    scanned?;
    let head = verifier.head();
    if let Some(a) = anchor
        && head.seq < a.seq
    {
        return Err(Problem::Found(format!(
            "{name} holds {} records, fewer than the {} this server verified; the ledger was cut short while the server ran: stop it and run {verify}",
            head.seq, a.seq
        )));
    }
    Ok(head)
}

/// Keeps a reader under a byte rate: after each read it sleeps until the bytes read so far are
/// due at the rate.
struct Pace {
    began: Instant,
    bytes: u64,
    per_sec: u64,
}

impl Pace {
    fn new(per_sec: u64) -> Pace {
        Pace {
            began: Instant::now(),
            bytes: 0,
            per_sec: per_sec.max(1),
        }
    }

    fn read(&mut self, n: u64) {
        self.bytes += n;
        // Checked every 256 KiB, so that a pass of small records is not a sleep per record.
        if self.bytes % (256 << 10) >= n {
            return;
        }
        let due = Duration::from_secs_f64(self.bytes as f64 / self.per_sec as f64);
        if let Some(ahead) = due.checked_sub(self.began.elapsed()) {
            std::thread::sleep(ahead);
        }
    }
}
