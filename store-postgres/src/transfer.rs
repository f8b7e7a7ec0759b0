//! Export to and import from the file store's format, `<dir>/.sdd/ledger/ledger.jsonl`.
//!
//! The rows' `line` bytes are the file store's lines without their `\n`, so an export is the
//! ledger a file store would have written for the same requests, byte for byte: `bernstein
//! audit verify`, `backlog verify-claim` and every other offline verifier read it unchanged.
//! Both directions verify every record (chains, framing, and MACs under the audit key) before
//! anything is written; an export is written to a temporary file, synced and renamed into
//! place, and an import is one database transaction. Neither ever overwrites a ledger.

use std::fs::OpenOptions;
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use bernstein_ledger::verify::{LedgerVerifier, VerifyReport};
use bernstein_store_file::layout::{Layout, sync_dir};
use postgres::fallible_iterator::FallibleIterator;
use postgres::{IsolationLevel, Row};

use crate::fold::TABLE_NAME;
use crate::insert::Columns;
use crate::pool::{Pool, describe};

/// Rows inserted per statement by an import.
const IMPORT_BATCH: usize = 2000;

/// What an export or import did.
#[derive(Debug)]
pub struct Transferred {
    /// The ledger file written or read.
    pub file: PathBuf,
    /// Records copied (an import skips those the database already holds).
    pub copied: u64,
    /// The verification report of the whole ledger.
    pub report: VerifyReport,
}

fn pg(e: postgres::Error) -> String {
    format!("PostgreSQL: {}", describe(&e))
}

/// Feeds every ledger line of the database (in `seq` order) to `f`, from one consistent
/// read-only snapshot: only whole committed transactions, never a half-written one. Stops at
/// the first error `f` returns (the inner `Err`); the outer `Err` is the database's.
pub fn for_each_line<E>(
    pool: &Pool,
    mut f: impl FnMut(&[u8]) -> Result<(), E>,
) -> Result<Result<(), E>, String> {
    let mut lease = pool.get().map_err(|e| e.to_string())?;
    let mut tx = lease
        .client()
        .build_transaction()
        .isolation_level(IsolationLevel::RepeatableRead)
        .read_only(true)
        .start()
        .map_err(pg)?;
    let mut rows = tx
        .query_raw(
            "SELECT line FROM bernstein_ledger ORDER BY seq",
            std::iter::empty::<i32>(),
        )
        .map_err(pg)?;
    while let Some(row) = rows.next().map_err(pg)? {
        let row: Row = row;
        if let Err(e) = f(row.get(0)) {
            return Ok(Err(e));
        }
    }
    drop(rows);
    tx.commit().map_err(pg)?;
    Ok(Ok(()))
}

/// Writes the database's ledger to `<dir>/.sdd/ledger/ledger.jsonl`, which must not exist or
/// be empty. Records are verified under `key` (MACs unchecked without it) as they are copied.
pub fn export(pool: &Pool, key: Option<&[u8]>, dir: &Path) -> Result<Transferred, String> {
    let layout = Layout::in_project(dir);
    layout
        .create_dirs()
        .map_err(|e| format!("create {}: {e}", layout.sdd.display()))?;
    let file = layout.ledger_file();
    if std::fs::metadata(&file).is_ok_and(|m| m.len() > 0) {
        return Err(format!(
            "{} already holds a ledger; export into a new directory",
            file.display()
        ));
    }
    let tmp = layout.ledger_dir().join("ledger.jsonl.export-tmp");
    let written = write_export(pool, key, &tmp);
    let (copied, report) = match written {
        Ok(done) => done,
        Err(e) => {
            let _ = std::fs::remove_file(&tmp);
            return Err(e);
        }
    };
    std::fs::rename(&tmp, &file).map_err(|e| format!("rename to {}: {e}", file.display()))?;
    sync_dir(&layout.ledger_dir()).map_err(|e| format!("sync: {e}"))?;
    Ok(Transferred {
        file,
        copied,
        report,
    })
}

fn write_export(
    pool: &Pool,
    key: Option<&[u8]>,
    tmp: &Path,
) -> Result<(u64, VerifyReport), String> {
    let out = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(tmp)
        .map_err(|e| format!("create {}: {e}", tmp.display()))?;
    let mut out = BufWriter::with_capacity(1 << 20, out);
    let mut verifier = LedgerVerifier::new(TABLE_NAME, key);
    let mut copied = 0u64;
    let fed = for_each_line(pool, |line| -> Result<(), String> {
        verifier
            .push_line(line)
            .map_err(|f| format!("the database's ledger does not verify: {f}"))?;
        out.write_all(line)
            .and_then(|()| out.write_all(b"\n"))
            .map_err(|e| format!("write {}: {e}", tmp.display()))?;
        copied += 1;
        Ok(())
    })?;
    fed?;
    let report = verifier
        .finish(b"")
        .map_err(|f| format!("the database's ledger does not verify: {f}"))?;
    let out = out
        .into_inner()
        .map_err(|e| format!("write {}: {e}", tmp.display()))?;
    out.sync_all()
        .map_err(|e| format!("sync {}: {e}", tmp.display()))?;
    Ok((copied, report))
}

/// Copies `<dir>/.sdd/ledger/ledger.jsonl` into the database, after verifying all of it under
/// `key` (the key the servers will use: a ledger whose MACs do not verify under it is refused).
/// The database must be empty or hold a prefix of that very ledger (then only the rest is
/// copied, so an interrupted import can be run again).
pub fn import(pool: &Pool, key: &[u8], dir: &Path) -> Result<Transferred, String> {
    let file = Layout::in_project(dir).ledger_file();
    let open = || {
        std::fs::File::open(&file)
            .map(|f| BufReader::with_capacity(1 << 20, f))
            .map_err(|e| format!("open {}: {e}", file.display()))
    };
    // First pass: verify everything before touching the database.
    let name = file.display().to_string();
    let mut verifier = LedgerVerifier::new(&name, Some(key));
    let mut reader = open()?;
    let mut buf = Vec::new();
    loop {
        buf.clear();
        let n = reader
            .read_until(b'\n', &mut buf)
            .map_err(|e| format!("read {name}: {e}"))?;
        if n == 0 {
            break;
        }
        let Some(line) = buf.strip_suffix(b"\n") else {
            let why = match verifier.finish(&buf) {
                Err(f) => f.to_string(),
                Ok(_) => "the last line has no newline".to_string(),
            };
            return Err(torn_hint(&why));
        };
        verifier
            .push_line(line)
            .map_err(|f| torn_hint(&f.to_string()))?;
    }
    let report = verifier
        .finish(b"")
        .map_err(|f| torn_hint(&f.to_string()))?;

    let mut lease = pool.get().map_err(|e| e.to_string())?;
    let mut tx = lease.client().transaction().map_err(pg)?;
    tx.execute("LOCK TABLE bernstein_ledger IN EXCLUSIVE MODE", &[])
        .map_err(pg)?;
    let head: Option<(i64, Vec<u8>)> = tx
        .query_opt(
            "SELECT seq, hash FROM bernstein_ledger ORDER BY seq DESC LIMIT 1",
            &[],
        )
        .map_err(pg)?
        .map(|r| (r.get(0), r.get(1)));
    let skip = head.as_ref().map_or(0, |(seq, _)| *seq as u64);
    // Second pass: copy the records after what the database holds.
    let mut reader = open()?;
    let mut cols = Columns::default();
    let mut copied = 0u64;
    let mut seq = 0u64;
    loop {
        buf.clear();
        if reader
            .read_until(b'\n', &mut buf)
            .map_err(|e| format!("read {name}: {e}"))?
            == 0
        {
            break;
        }
        seq += 1;
        let line = buf.strip_suffix(b"\n").unwrap_or(&buf);
        let rec = bernstein_ledger::Record::parse_line(line, Some(key))
            .map_err(|e| format!("{name}: line {seq}: {e}"))?;
        if seq < skip {
            continue;
        }
        if seq == skip {
            if head
                .as_ref()
                .is_some_and(|(_, h)| h.as_slice() != rec.hash.0)
            {
                return Err(format!(
                    "the database already holds a different ledger (its record {skip} differs from {name}); import into an empty database"
                ));
            }
            continue;
        }
        cols.push(&rec, line.to_vec());
        if cols.seq.len() == IMPORT_BATCH {
            copied += cols.seq.len() as u64;
            std::mem::take(&mut cols).insert(&mut tx).map_err(pg)?;
        }
    }
    if skip > seq {
        return Err(format!(
            "the database holds {skip} records, more than the {seq} of {name}; import into an empty database"
        ));
    }
    if !cols.seq.is_empty() {
        copied += cols.seq.len() as u64;
        cols.insert(&mut tx).map_err(pg)?;
    }
    tx.commit().map_err(pg)?;
    Ok(Transferred {
        file,
        copied,
        report,
    })
}

fn torn_hint(failure: &str) -> String {
    format!(
        "the ledger does not verify, nothing was imported: {failure} (a torn tail from a crash is cut by opening the directory with bernstein once, e.g. `bernstein status --workdir DIR`)"
    )
}
