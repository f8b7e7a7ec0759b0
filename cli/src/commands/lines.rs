//! The ledger lines an offline verifier reads (`audit verify`, `mailbox verify`, `backlog
//! verify-claim`): the file store's `ledger.jsonl` (up to a length read under its shared lock),
//! or, with `--store URL`, the PostgreSQL ledger's rows in one consistent read-only snapshot.
//! The rows are the file's lines byte for byte, so the same core verifiers check either.

use std::path::Path;

use bernstein_store_postgres::pool::Pool;
use bernstein_store_postgres::{PoolOptions, schema, transfer};

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
        f: impl FnMut(&[u8]) -> Result<(), E>,
    ) -> Result<Result<Vec<u8>, E>, String> {
        let url = match self {
            LedgerLines::File(file) => return file.for_each_line(f),
            LedgerLines::Postgres { url, .. } => url,
        };
        let pool = Pool::new(&url, PoolOptions::default()).map_err(|e| e.to_string())?;
        let mut lease = pool.get().map_err(|e| e.to_string())?;
        schema::check(lease.client()).map_err(|e| e.to_string())?;
        drop(lease);
        Ok(transfer::for_each_line(&pool, f)?.map(|()| Vec::new()))
    }
}
