//! A small bounded pool of blocking PostgreSQL connections.
//!
//! At most [`PoolOptions::max_size`] connections are open at once; a checkout waits at most
//! [`PoolOptions::checkout_timeout`] for one to come back, then fails with
//! [`StoreError::Unavailable`]. Connections are made on demand, so after the database went
//! away and came back the next checkout simply connects again: a connection that saw an error
//! is closed rather than returned. It never retries a statement: whether to retry is the
//! caller's decision (a commit whose answer was lost must not be replayed blindly).

use std::collections::HashMap;
use std::str::FromStr;
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use bernstein_ledger::StoreError;
use postgres::{Client, Config, NoTls, Statement};

/// Limits of a [`Pool`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PoolOptions {
    /// Most connections open at once.
    pub max_size: usize,
    /// Longest a checkout waits for a free connection.
    pub checkout_timeout: Duration,
    /// Longest a new connection may take to establish.
    pub connect_timeout: Duration,
    /// Server-side limit of one statement (`statement_timeout`).
    pub statement_timeout: Duration,
}

impl Default for PoolOptions {
    fn default() -> Self {
        PoolOptions {
            max_size: 16,
            checkout_timeout: Duration::from_secs(10),
            connect_timeout: Duration::from_secs(5),
            statement_timeout: Duration::from_secs(30),
        }
    }
}

/// The pool.
pub struct Pool {
    config: Config,
    options: PoolOptions,
    state: Mutex<Slots>,
    returned: Condvar,
}

impl std::fmt::Debug for Pool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pool")
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

/// A connection and the statements prepared on it.
struct Conn {
    client: Client,
    prepared: HashMap<&'static str, Statement>,
}

struct Slots {
    idle: Vec<Conn>,
    /// Connections handed out or being opened.
    busy: usize,
}

/// A checked-out connection; it goes back to the pool on drop unless it saw an error.
pub struct Lease<'p> {
    pool: &'p Pool,
    conn: Option<Conn>,
    broken: bool,
}

impl std::fmt::Debug for Lease<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lease")
            .field("broken", &self.broken)
            .finish()
    }
}

impl Pool {
    /// A pool for the connection URL `url` (`postgres://user@host:port/db?...`). Connects
    /// nothing yet.
    pub fn new(url: &str, options: PoolOptions) -> Result<Pool, StoreError> {
        let mut config = Config::from_str(url)
            .map_err(|e| StoreError::Unavailable(format!("bad PostgreSQL URL: {e}")))?;
        config.connect_timeout(options.connect_timeout);
        config.keepalives(true);
        config.keepalives_idle(Duration::from_secs(30));
        if config.get_application_name().is_none() {
            config.application_name("bernstein");
        }
        let stmt_ms = options.statement_timeout.as_millis();
        let mut extra = config.get_options().unwrap_or("").to_string();
        if !extra.contains("statement_timeout") {
            extra.push_str(&format!(" -c statement_timeout={stmt_ms}"));
        }
        config.options(extra.trim());
        Ok(Pool {
            config,
            options,
            state: Mutex::new(Slots {
                idle: Vec::new(),
                busy: 0,
            }),
            returned: Condvar::new(),
        })
    }

    /// The connection configuration (for connections outside the pool, such as the listener).
    pub fn config(&self) -> &Config {
        &self.config
    }

    fn slots(&self) -> MutexGuard<'_, Slots> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A connection, waiting for a free slot at most the checkout timeout.
    pub fn get(&self) -> Result<Lease<'_>, StoreError> {
        let deadline = Instant::now() + self.options.checkout_timeout;
        let mut slots = self.slots();
        loop {
            while let Some(conn) = slots.idle.pop() {
                if conn.client.is_closed() {
                    continue;
                }
                slots.busy += 1;
                return Ok(Lease {
                    pool: self,
                    conn: Some(conn),
                    broken: false,
                });
            }
            if slots.busy < self.options.max_size {
                slots.busy += 1;
                drop(slots);
                return match self.connect() {
                    Ok(client) => Ok(Lease {
                        pool: self,
                        conn: Some(Conn {
                            client,
                            prepared: HashMap::new(),
                        }),
                        broken: false,
                    }),
                    Err(e) => {
                        self.release(None);
                        Err(e)
                    }
                };
            }
            let now = Instant::now();
            if now >= deadline {
                return Err(StoreError::Unavailable(format!(
                    "no free PostgreSQL connection within {:?} (pool of {})",
                    self.options.checkout_timeout, self.options.max_size
                )));
            }
            slots = self
                .returned
                .wait_timeout(slots, deadline - now)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
    }

    /// Opens a connection outside the pool's accounting.
    pub fn connect(&self) -> Result<Client, StoreError> {
        self.config.connect(NoTls).map_err(unavailable)
    }

    fn release(&self, conn: Option<Conn>) {
        let mut slots = self.slots();
        slots.busy -= 1;
        if let Some(c) = conn {
            slots.idle.push(c);
        }
        drop(slots);
        self.returned.notify_one();
    }
}

impl Lease<'_> {
    /// The connection.
    pub fn client(&mut self) -> &mut Client {
        &mut self.conn_mut().client
    }

    fn conn_mut(&mut self) -> &mut Conn {
        self.conn
            .as_mut()
            .expect("a lease holds its connection until dropped")
    }

    /// `sql` prepared on this connection (once per connection), so that running it costs one
    /// round trip.
    pub fn prepared(&mut self, sql: &'static str) -> Result<Statement, postgres::Error> {
        let conn = self.conn_mut();
        if let Some(s) = conn.prepared.get(sql) {
            return Ok(s.clone());
        }
        let stmt = conn.client.prepare(sql)?;
        conn.prepared.insert(sql, stmt.clone());
        Ok(stmt)
    }

    /// Closes the connection instead of returning it (after an error of unknown effect).
    pub fn discard(&mut self) {
        self.broken = true;
    }
}

impl Drop for Lease<'_> {
    fn drop(&mut self) {
        let conn = self.conn.take();
        let keep = conn.filter(|c| !self.broken && !c.client.is_closed());
        self.pool.release(keep);
    }
}

/// A PostgreSQL failure as the store reports it.
pub fn unavailable(e: postgres::Error) -> StoreError {
    StoreError::Unavailable(format!("PostgreSQL: {}", describe(&e)))
}

/// The error's message with the server's detail when there is one.
pub fn describe(e: &postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => format!("{} ({})", db.message(), db.code().code()),
        None => {
            let mut msg = e.to_string();
            let mut source = std::error::Error::source(e);
            while let Some(s) = source {
                msg.push_str(&format!(": {s}"));
                source = s.source();
            }
            msg
        }
    }
}
