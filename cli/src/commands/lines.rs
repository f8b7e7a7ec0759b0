//! The ledger lines an offline verifier reads (`audit verify`, `mailbox verify`, `backlog
//! verify-claim`): the file store's `ledger.jsonl` (up to a length read under its shared lock),
//! or, with `--store URL`, the PostgreSQL ledger's rows in one consistent read-only snapshot.
//! The rows are the file's lines byte for byte, so the same core verifiers check either.

use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;

use bernstein_store_file::layout::Layout;
use bernstein_store_file::lock::LedgerLock;

use bernstein_store_postgres::pool::Pool;
use bernstein_store_postgres::{PoolOptions, schema, transfer};

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

/// The ledger file, read up to the length it had while no writer was mid-append.
pub(crate) struct StableLedger {
    pub name: String,
    file: File,
    len: u64,
}

impl StableLedger {
    pub fn open(sdd: &Path) -> Result<StableLedger, String> {
        let layout = Layout::at(sdd);
        let path = layout.ledger_file();
        let name = path.display().to_string();
        let io = |e: std::io::Error| format!("{name}: {e}");
        let file = File::open(&path).map_err(io)?;
        let lock = LedgerLock::open_existing(&layout.lock_file()).map_err(io)?;
        let guard = lock
            .as_ref()
            .map(LedgerLock::shared)
            .transpose()
            .map_err(io)?;
        let len = file.metadata().map_err(io)?.len();
        drop(guard);
        Ok(StableLedger { name, file, len })
    }

    /// Feeds every complete line (without `\n`) to `f`; returns the bytes after the last
    /// `\n` (empty for a well-formed file), or the first error `f` returned.
    pub fn for_each_line<E>(
        self,
        mut f: impl FnMut(&[u8]) -> Result<(), E>,
    ) -> Result<Result<Vec<u8>, E>, String> {
        let name = self.name.clone();
        let mut reader = BufReader::with_capacity(1 << 20, self.file.take(self.len));
        let mut line = Vec::new();
        loop {
            line.clear();
            let n = reader
                .read_until(b'\n', &mut line)
                .map_err(|e| format!("{name}: {e}"))?;
            if n == 0 {
                return Ok(Ok(Vec::new()));
            }
            match line.strip_suffix(b"\n") {
                Some(body) => {
                    if let Err(e) = f(body) {
                        return Ok(Err(e));
                    }
                }
                None => return Ok(Ok(line)),
            }
        }
    }
}
