//! The rows of one compare-and-append as columns, and the one statement that inserts them
//! and notifies the other instances (on [`CHANNEL`]).

use bernstein_ledger::Record;

use crate::pool::Lease;

/// The channel commits notify.
pub const CHANNEL: &str = "bernstein_ledger";

/// The insert of compare-and-append: all records in one statement, and the notification.
const INSERT: &str = "WITH ins AS (
        INSERT INTO bernstein_ledger (seq, prev, hash, stream, line)
        SELECT * FROM unnest($1::bigint[], $2::bytea[], $3::bytea[], $4::text[], $5::bytea[])
        RETURNING seq
    )
    SELECT pg_notify('bernstein_ledger', max(seq)::text) FROM ins";

/// The columns of the rows one append inserts.
#[derive(Debug, Default)]
pub(crate) struct Columns {
    pub seq: Vec<i64>,
    pub prev: Vec<Vec<u8>>,
    pub hash: Vec<Vec<u8>>,
    pub stream: Vec<String>,
    pub line: Vec<Vec<u8>>,
}

impl Columns {
    /// Adds `rec`, whose stored line (without `\n`) is `line`.
    pub fn push(&mut self, rec: &Record, line: Vec<u8>) {
        self.seq.push(rec.seq as i64);
        self.prev.push(rec.prev.0.to_vec());
        self.hash.push(rec.hash.0.to_vec());
        self.stream.push(rec.stream.clone());
        self.line.push(line);
    }

    /// Inserts the rows (and notifies) on `client`, inside the caller's transaction.
    pub fn insert(&self, client: &mut impl postgres::GenericClient) -> Result<(), postgres::Error> {
        client.query_one(
            INSERT,
            &[&self.seq, &self.prev, &self.hash, &self.stream, &self.line],
        )?;
        Ok(())
    }

    /// Inserts the rows (and notifies) as one statement in its own implicit transaction: one
    /// round trip, and the answer arrives only after the COMMIT (ReadyForQuery).
    pub fn insert_committed(&self, lease: &mut Lease<'_>) -> Result<(), postgres::Error> {
        let stmt = lease.prepared(INSERT)?;
        lease.client().query_one(
            &stmt,
            &[&self.seq, &self.prev, &self.hash, &self.stream, &self.line],
        )?;
        Ok(())
    }
}
