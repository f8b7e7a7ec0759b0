//! The PostgreSQL ledger backend: many stateless server instances, one shared ledger
//! (issue 8, docs/POSTGRES.md).
//!
//! - [`store`]: [`PgStore`], the core's `Store` over PostgreSQL (compare-and-append as one
//!   transaction refused by constraints when stale; incremental per-instance folding).
//! - [`group`]: group commit of the audit records of reads (calls that wrote nothing).
//! - `insert`: a compare-and-append's rows as columns, inserted and notified in one statement.
//! - [`fold`]: verifying and folding rows into a snapshot (the file store's rules).
//! - [`checkpoint`]: projection checkpoints in the database.
//! - [`listen`]: LISTEN/NOTIFY wake-ups for blocking waits.
//! - [`schema`]: embedded, versioned migrations and the schema check servers run at start.
//! - [`transfer`]: export to and import from the file store's `ledger.jsonl`, byte for byte.
//! - [`pool`]: a bounded connection pool with timeouts.
//!
//! The records are the file store's bytes: the same digests, receipts and handles come out of
//! either store. This crate is a database client only; it never changes the core, and never
//! stores a key in the database.

pub mod checkpoint;
pub mod fold;
pub mod group;
mod insert;
pub mod listen;
pub mod pool;
pub mod schema;
pub mod store;
pub mod transfer;

pub use pool::PoolOptions;
pub use store::{PgOptions, PgStore};

/// Whether `s` names a PostgreSQL database (`postgres://` or `postgresql://`).
pub fn is_postgres_url(s: &str) -> bool {
    let lower = s.trim_start().to_ascii_lowercase();
    lower.starts_with("postgres://") || lower.starts_with("postgresql://")
}

/// Whether the ledger at `url` holds any record (false while its schema is not there yet).
pub fn has_records(url: &str) -> Result<bool, String> {
    let pool = pool::Pool::new(url, PoolOptions::default()).map_err(|e| e.to_string())?;
    let mut lease = pool.get().map_err(|e| e.to_string())?;
    let row = lease
        .client()
        .query_one("SELECT to_regclass('bernstein_ledger') IS NOT NULL", &[])
        .map_err(|e| pool::describe(&e))?;
    if !row.get::<_, bool>(0) {
        return Ok(false);
    }
    let row = lease
        .client()
        .query_one("SELECT EXISTS (SELECT 1 FROM bernstein_ledger)", &[])
        .map_err(|e| pool::describe(&e))?;
    Ok(row.get(0))
}

/// Applies the missing schema migrations at `url`; returns the versions applied.
pub fn migrate(url: &str) -> Result<Vec<i32>, String> {
    let pool = pool::Pool::new(url, PoolOptions::default()).map_err(|e| e.to_string())?;
    let mut lease = pool.get().map_err(|e| e.to_string())?;
    schema::migrate(lease.client()).map_err(|e| e.to_string())
}
