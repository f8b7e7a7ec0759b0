//! Versioned schema migrations, embedded in the crate (`migrations/NNNN_*.sql`).
//!
//! The table `bernstein_schema_version` lists every version applied. [`migrate`] applies the
//! missing ones in order, each in its own transaction under an advisory lock, so several
//! instances started with `--migrate` at once apply each version exactly once. [`check`] is
//! what a server runs before serving: it refuses a database without the schema, with an older
//! one (run the migration) or with a newer one (this software does not know it). Migrations
//! only ever run when asked for; nothing here changes a schema implicitly.

use postgres::Client;

use crate::pool::describe;

/// One embedded migration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Migration {
    pub version: i32,
    pub name: &'static str,
    pub sql: &'static str,
}

/// Every migration this software knows, in order.
pub const MIGRATIONS: &[Migration] = &[Migration {
    version: 1,
    name: "0001_ledger",
    sql: include_str!("../migrations/0001_ledger.sql"),
}];

/// The schema version this software serves.
pub fn latest() -> i32 {
    MIGRATIONS.last().map_or(0, |m| m.version)
}

/// Key of the advisory lock that serializes migrations (an arbitrary constant: "bernstei").
const MIGRATION_LOCK: i64 = 0x6265_726e_7374_6569;

/// Why the schema cannot be used or migrated.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SchemaError {
    #[error(
        "the database has no Bernstein schema: run `bernstein store migrate --store URL` (or start the server with --migrate)"
    )]
    Missing,
    #[error(
        "the database schema is at version {found}, this server needs {needed}: run `bernstein store migrate --store URL` (or start with --migrate)"
    )]
    Older { found: i32, needed: i32 },
    #[error(
        "the database schema is at version {found}, newer than this server knows ({known}): upgrade the server; it will not serve a schema it does not know"
    )]
    Newer { found: i32, known: i32 },
    #[error("PostgreSQL: {0}")]
    Db(String),
}

fn db(e: postgres::Error) -> SchemaError {
    SchemaError::Db(describe(&e))
}

/// The applied schema version, `None` when the version table does not exist.
pub fn current(client: &mut Client) -> Result<Option<i32>, SchemaError> {
    let exists: bool = client
        .query_one(
            "SELECT to_regclass('bernstein_schema_version') IS NOT NULL",
            &[],
        )
        .map_err(db)?
        .get(0);
    if !exists {
        return Ok(None);
    }
    let v: Option<i32> = client
        .query_one("SELECT max(version) FROM bernstein_schema_version", &[])
        .map_err(db)?
        .get(0);
    Ok(Some(v.unwrap_or(0)))
}

/// Refuses a schema this software cannot serve.
pub fn check(client: &mut Client) -> Result<i32, SchemaError> {
    let needed = latest();
    match current(client)? {
        None => Err(SchemaError::Missing),
        Some(found) if found > needed => Err(SchemaError::Newer {
            found,
            known: needed,
        }),
        Some(found) if found < needed => Err(SchemaError::Older { found, needed }),
        Some(found) => Ok(found),
    }
}

/// Applies the missing migrations; returns the versions applied now (empty when up to date).
/// Refuses a database whose schema is newer than this software.
pub fn migrate(client: &mut Client) -> Result<Vec<i32>, SchemaError> {
    let mut applied = Vec::new();
    for m in MIGRATIONS {
        let mut tx = client.transaction().map_err(db)?;
        tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])
            .map_err(db)?;
        tx.batch_execute(
            "CREATE TABLE IF NOT EXISTS bernstein_schema_version (
                 version  INTEGER PRIMARY KEY,
                 name     TEXT NOT NULL,
                 applied  TIMESTAMPTZ NOT NULL DEFAULT now()
             )",
        )
        .map_err(db)?;
        let found: i32 = tx
            .query_one(
                "SELECT coalesce(max(version), 0) FROM bernstein_schema_version",
                &[],
            )
            .map_err(db)?
            .get(0);
        if found > latest() {
            return Err(SchemaError::Newer {
                found,
                known: latest(),
            });
        }
        if found >= m.version {
            tx.commit().map_err(db)?;
            continue;
        }
        tx.batch_execute(m.sql).map_err(db)?;
        tx.execute(
            "INSERT INTO bernstein_schema_version (version, name) VALUES ($1, $2)",
            &[&m.version, &m.name],
        )
        .map_err(db)?;
        tx.commit().map_err(db)?;
        applied.push(m.version);
    }
    Ok(applied)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn migrations_are_numbered_in_order() {
        for (i, m) in MIGRATIONS.iter().enumerate() {
            assert_eq!(m.version, i as i32 + 1);
            assert!(m.name.starts_with(&format!("{:04}_", m.version)));
            assert!(!m.sql.trim().is_empty());
        }
        assert_eq!(latest(), MIGRATIONS.len() as i32);
    }
}
