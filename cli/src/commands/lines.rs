//! The ledger lines an offline verifier reads (`audit verify`, `mailbox verify`, `backlog
//! verify-claim`): the file store's `ledger.jsonl` (up to a length read under its shared lock),
//! or, with `--store URL`, the PostgreSQL ledger's rows in one consistent read-only snapshot.
//! The rows are the file's lines byte for byte, so the same core verifiers check either.

use std::path::Path;

use bernstein_store_postgres::pool::{Pool, describe};
use bernstein_store_postgres::{PoolOptions, schema};
use postgres::IsolationLevel;
use postgres::fallible_iterator::FallibleIterator;

use super::backlog::StableLedger;

/// Where the lines come from.
pub(crate) enum LedgerLines {
    File(StableLedger),
    Postgres { url: String, name: String },
}

impl LedgerLines {
    /// The ledger of the `.sdd` directory `sdd`, or the database `url` names (its schema must
    /// be one this software serves).
    pub fn open(sdd: &Path, url: Option<&str>) -> Result<LedgerLines, String> {
        match url {
            None => Ok(LedgerLines::File(StableLedger::open(sdd)?)),
            Some(url) => Ok(LedgerLines::Postgres {
                url: url.to_string(),
                name: bernstein_store_postgres::fold::TABLE_NAME.to_string(),
            }),
        }
    }

    /// The name failures cite (the file's path, or the table's name).
    pub fn name(&self) -> &str {
        match self {
            LedgerLines::File(f) => &f.name,
            LedgerLines::Postgres { name, .. } => name,
        }
    }

    /// Feeds every line (without `\n`) to `f`; returns the bytes after the last `\n` (always
    /// empty for the database), or the first error `f` returned.
    pub fn for_each_line<E>(
        self,
        mut f: impl FnMut(&[u8]) -> Result<(), E>,
    ) -> Result<Result<Vec<u8>, E>, String> {
        let url = match self {
            LedgerLines::File(file) => return file.for_each_line(f),
            LedgerLines::Postgres { url, .. } => url,
        };
        let pg = |e: postgres::Error| format!("PostgreSQL: {}", describe(&e));
        let pool = Pool::new(&url, PoolOptions::default()).map_err(|e| e.to_string())?;
        let mut lease = pool.get().map_err(|e| e.to_string())?;
        schema::check(lease.client()).map_err(|e| e.to_string())?;
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
            let line: &[u8] = row.get(0);
            if let Err(e) = f(line) {
                return Ok(Err(e));
            }
        }
        Ok(Ok(Vec::new()))
    }
}
