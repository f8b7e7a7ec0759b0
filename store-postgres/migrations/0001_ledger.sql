-- Version 1 of the PostgreSQL ledger schema (docs/POSTGRES.md).
--
-- bernstein_ledger holds every record exactly as the file store writes it: `line` is the
-- canonical JSON of the sealed record without its trailing newline, so an export is the file
-- store's ledger.jsonl byte for byte. `seq` is the total order; the other columns are copies of
-- fields of `line`, kept for the constraints and for lookups.
CREATE TABLE bernstein_ledger (
    seq      BIGINT PRIMARY KEY CHECK (seq > 0),
    -- The previous record's seq (NULL before the first) and hash: with the foreign key below
    -- the database itself refuses a record that does not continue the hash chain.
    prev_seq BIGINT GENERATED ALWAYS AS (NULLIF(seq - 1, 0)) STORED,
    prev     BYTEA  NOT NULL CHECK (octet_length(prev) = 32),
    hash     BYTEA  NOT NULL CHECK (octet_length(hash) = 32),
    stream   TEXT   NOT NULL,
    line     BYTEA  NOT NULL,
    UNIQUE (seq, hash),
    FOREIGN KEY (prev_seq, prev) REFERENCES bernstein_ledger (seq, hash)
);

-- Projection checkpoints: a serialized snapshot per software version, HMAC-tagged under the
-- audit key, so that a new instance folds only the records after `seq`. A memo, never a
-- source of truth: it is used only if its tag verifies and the ledger's record `seq` has
-- hash `head`.
CREATE TABLE bernstein_checkpoint (
    software TEXT   PRIMARY KEY,
    seq      BIGINT NOT NULL,
    head     BYTEA  NOT NULL,
    body     BYTEA  NOT NULL,
    mac      TEXT   NOT NULL,
    written  TIMESTAMPTZ NOT NULL DEFAULT now()
);
