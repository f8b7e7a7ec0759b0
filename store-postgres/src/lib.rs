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
//! - [`scrub`]: the background re-verification of the ledger table under a running server
//!   (`bernstein_os::scrub`, as the file store's).
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
pub mod scrub;
pub mod store;
pub mod transfer;

pub use pool::PoolOptions;
pub use store::{PgOptions, PgStore};

/// Whether `s` names a PostgreSQL database (`postgres://` or `postgresql://`).
pub fn is_postgres_url(s: &str) -> bool {
    let lower = s.trim_start().to_ascii_lowercase();
    lower.starts_with("postgres://") || lower.starts_with("postgresql://")
}

/// The database `url` names, for a log line: its host(s), port, database and user, and never
/// its password or any other parameter (`PostgreSQL database bernstein at db:5432 as user
/// app`). What the URL leaves out is said as the connection defaults it (port 5432, the
/// database named after the user, the user of the process). A URL that does not parse is
/// described as such, without repeating any of it.
pub fn describe_url(url: &str) -> String {
    use std::str::FromStr as _;
    let Ok(config) = postgres::Config::from_str(url) else {
        return "a PostgreSQL database (its URL does not parse)".to_string();
    };
    let mut hosts: Vec<String> = config
        .get_hosts()
        .iter()
        .map(|h| match h {
            postgres::config::Host::Tcp(name) if name.contains(':') => format!("[{name}]"),
            postgres::config::Host::Tcp(name) => printable(name),
            postgres::config::Host::Unix(path) => printable(&path.display().to_string()),
        })
        .collect();
    if hosts.is_empty() {
        hosts = config
            .get_hostaddrs()
            .iter()
            .map(|a| match a {
                std::net::IpAddr::V6(v6) => format!("[{v6}]"),
                std::net::IpAddr::V4(v4) => v4.to_string(),
            })
            .collect();
    }
    let ports = config.get_ports();
    let at = if hosts.is_empty() {
        "no host given".to_string()
    } else {
        hosts
            .iter()
            .enumerate()
            .map(|(i, h)| {
                let port = ports.get(i).or(ports.first()).copied().unwrap_or(5432);
                format!("{h}:{port}")
            })
            .collect::<Vec<_>>()
            .join(", ")
    };
    let user = config.get_user().map(printable);
    let dbname = match (config.get_dbname(), &user) {
        (Some(db), _) => printable(db),
        (None, Some(u)) => u.clone(),
        (None, None) => "named after the user".to_string(),
    };
    let user = user.map_or_else(
        || "the user of this process".to_string(),
        |u| format!("user {u}"),
    );
    format!("PostgreSQL database {dbname} at {at} as {user}")
}

/// `s` with its control characters (a percent-decoded newline, say) shown as `?`, so that a
/// name from a URL stays on its log line.
fn printable(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_control() { '?' } else { c })
        .collect()
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

#[cfg(test)]
mod tests {
    use super::describe_url;

    #[test]
    fn a_url_is_described_by_host_port_database_and_user_only() {
        let cases = [
            (
                "postgres://app:s3cret-PW@db.example:6543/ledger?connect_timeout=3",
                "PostgreSQL database ledger at db.example:6543 as user app",
            ),
            (
                "postgresql://app@db",
                "PostgreSQL database app at db:5432 as user app",
            ),
            (
                "postgres://[::1]:5433/x",
                "PostgreSQL database x at [::1]:5433 as the user of this process",
            ),
            (
                "postgres:///x?host=/run/postgresql&user=u&password=s3cret-PW",
                "PostgreSQL database x at /run/postgresql:5432 as user u",
            ),
            (
                "postgres://a,b:5433/x",
                "PostgreSQL database x at a:5432, b:5433 as the user of this process",
            ),
            (
                "postgres://u:pw@h/d%0Aforged",
                "PostgreSQL database d?forged at h:5432 as user u",
            ),
        ];
        for (url, want) in cases {
            assert_eq!(describe_url(url), want, "{url}");
        }
    }

    #[test]
    fn a_url_that_does_not_parse_is_not_repeated() {
        let said = describe_url("postgres://u:s3cret-PW@h:notaport/d");
        assert!(!said.contains("s3cret"), "{said}");
        assert!(said.contains("does not parse"), "{said}");
    }
}
